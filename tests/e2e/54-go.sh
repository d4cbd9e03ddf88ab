#!/bin/bash
# SPDX-License-Identifier: MIT
# Go programs under both emulators: tests/programs/goroutines.go (eight
# goroutines in a channel pipeline, a WaitGroup, a stack that grows),
# built with Debian's golang optimised and with -N -l, runs to its end
# from main.main under the Valgrind backend and the ptrace emulator (whose
# runtime threads start before main.main, whose first thread may exit
# while others run, and which preempts with SIGURG); the captures hold
# the goroutine switches (mt-convert --info counts them), the truth's goid
# column names every goroutine, perf's calls equal the truth's and
# mt-convert's equal perf's (tools/realprogs.sh); SIGTERM during a Go run
# ends mt-capture with a capture; a program that is not Go gets no
# goroutine items and goid 0.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-go.XXXXXX)
PIDS=
trap 'kill $PIDS 2>/dev/null; rm -rf "$W"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

if ! command -v go >/dev/null; then
	echo "SKIP go (no go compiler: apt-get install golang-go)"
	exit 0
fi
# gobuild OUT [FLAGS...]: goroutines.go, offline, everything in $W.
gobuild() {
	local out=$1
	shift
	(cd "$W" && HOME="$W" GOCACHE="$W/gocache" GOPATH="$W/gopath" \
		GO111MODULE=off GOFLAGS= go build "$@" -o "$out" \
		"$R/tests/programs/goroutines.go") >"$W/build.log" 2>&1
}
if ! gobuild "$W/g" || ! gobuild "$W/gn" -gcflags='all=-N -l'; then
	echo "FAIL go_build: $(tail -1 "$W/build.log")"
	exit 0
fi
REALPROGS_LIB=1 . "$R/tools/realprogs.sh"
have_vg=1
if ! command -v valgrind >/dev/null || [ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	have_vg=
	echo "SKIP go_valgrind (valgrind or its tool not built: apt-get install valgrind)"
fi

# The distinct goroutines (non-zero goid) of a truth, and the goroutine
# switches of a capture.
goids() { awk -F'\t' 'NR > 1 && $8 != "" && $8 != "0" {print $8}' "$1" | sort -u | wc -l; }
switches() {
	"$B/mt-convert" --info "$1" 2>/dev/null |
		sed -n 's/^ *goroutine switches \([0-9]*\),.*/\1/p'
}

# gorun NAME BACKEND MIN_GOIDS PROG ARGS...: from main.main (START=:
# mt-capture's default, main.main for a Go program) to the end,
# as realprog compares it; the program's output as natively, goroutine
# items, and at least MIN_GOIDS goroutines in the truth.
gorun() {
	local name=$1 be=$2 min=$3 res why= n
	shift 3
	"$@" >"$W/$name.want"
	res=$(REALPROG_EMULATE=$be REALPROG_TIMEOUT=300 \
		realprog "$W" "$name" ${START---start-at main.main} -- "$@" </dev/null)
	n=$(goids "$W/$name.truth" 2>/dev/null)
	if [ "${res##* }" != yes ]; then
		why=$(echo "$res" | tail -n +2 | tr -s ' \n' ' ')
	elif ! cmp -s "$W/$name.want" "$W/$name.out"; then
		why="output '$(head -c 80 "$W/$name.out")' (want '$(cat "$W/$name.want")')"
	elif [ "${n:-0}" -lt "$min" ]; then
		why="$n goroutines in the truth (want $min at least)"
	elif [ "$(switches "$W/$name.bin")" -lt 1 ]; then
		why="no goroutine switches in the capture"
	fi
	if [ -z "$why" ]; then
		echo "PASS go_$name ($(echo "$res" | head -1 | awk '{print $2 " instructions, " $3 " calls"}'), $n goroutines, $(switches "$W/$name.bin") switches)"
	else
		echo "FAIL go_$name: $why"
		sed 's/^/    /' "$W/$name.err" | tail -3
	fi
}

# main, 8 stages, the deep one, the feeder: 11 goroutines.  The runs held
# to perf go without the runtime's preemption signals, whose moment
# varies from run to run: mt-convert can place the handler of one that
# lands on a call's first instruction before that call, where perf has
# it after (about one run in three of the -N -l build).  The signals
# themselves are passed on: the SIGTERM runs below have them.
if [ -n "$have_vg" ]; then
	GODEBUG=asyncpreemptoff=1 gorun valgrind valgrind 9 "$W/g"
	GODEBUG=asyncpreemptoff=1 START= gorun valgrind_nl valgrind 9 "$W/gn"
fi
# A Go program's threads build together (goroutines move between them):
# its model is the same whether the threads' call trees are built on
# this thread (-j 1) or on threads of their own (-j 3).  The whole run,
# from the runtime's start, which starts threads of its own.
if [ -n "$have_vg" ]; then
	GODEBUG=asyncpreemptoff=1 "$B/mt-capture" --emulate=valgrind --start-at '' \
		-o "$W/pj.bin" -- "$W/g" 8 2000 400 >/dev/null 2>"$W/pj.cerr"
	"$B/mt-convert" -j 1 "$W/pj.bin" -o "$W/pj1.pftrace" >/dev/null 2>&1
	"$B/mt-convert" -j 3 "$W/pj.bin" -o "$W/pj3.pftrace" >/dev/null 2>"$W/pj3.err"
	nt=$(sed -n 's/^\([0-9]*\) threads*, .*/\1/p' "$W/pj3.err")
	if [ ! -s "$W/pj.bin" ]; then
		echo "FAIL go_parallel_build: no capture ($(tail -1 "$W/pj.cerr"))"
	elif [ "${nt:-0}" -lt 2 ]; then
		echo "SKIP go_parallel_build (the run traced ${nt:-no} thread: nothing to build together)"
	elif ! grep -q "call trees built on" "$W/pj3.err"; then
		echo "FAIL go_parallel_build: -j 3 built on one thread"
	elif ! cmp -s "$W/pj1.pftrace" "$W/pj3.pftrace" ||
		! cmp -s "$W/pj1.sqlite" "$W/pj3.sqlite"; then
		echo "FAIL go_parallel_build: -j 1 and -j 3 differ"
	else
		echo "PASS go_parallel_build ($nt threads)"
	fi
fi
# Single-stepped: a smaller run (main, 2 stages, deep, feeder), without
# the preemption signals too.
GODEBUG=asyncpreemptoff=1 gorun ptrace ptrace 4 "$W/g" 2 50

# sigterm NAME BACKEND: SIGTERM a while into a long Go run ends
# mt-capture (never a hang: the runtime's threads sit in futex waits)
# with a capture that converts; before main.main is reached it says
# nothing was traced (under Valgrind, before the tool said what it
# mapped, that no file has main.main), so it is tried again later.  The program, let go,
# ends on its own.
sigterm() {
	local name=$1 be=$2 rc why= d
	for d in 2 4 8; do
		rm -f "$W/$name.bin"
		timeout -s KILL 120 "$B/mt-capture" --emulate="$be" --start-at main.main \
			-o "$W/$name.bin" -- "$W/g" 8 2000 300000 >/dev/null 2>"$W/$name.err" &
		C=$!
		sleep "$d"
		kill -TERM "$C" 2>/dev/null
		wait "$C"
		rc=$?
		if [ $rc = 137 ]; then
			why="mt-capture hung after SIGTERM"
			break
		fi
		grep -qE 'nothing (was )?traced|no symbol .main.main.' "$W/$name.err" && continue
		if [ $rc != 0 ] || [ ! -s "$W/$name.bin" ]; then
			why="exit $rc, no capture"
		elif ! "$B/mt-convert" -q "$W/$name.bin" -o "$W/$name.pftrace" 2>"$W/$name.cerr"; then
			why="mt-convert: $(tail -1 "$W/$name.cerr")"
		fi
		break
	done
	if [ -z "$why" ] && [ -s "$W/$name.bin" ]; then
		echo "PASS go_${name}"
	else
		echo "FAIL go_${name}: ${why:-never traced}"
		sed 's/^/    /' "$W/$name.err" | tail -3
	fi
}
sigterm ptrace_sigterm ptrace
[ -n "$have_vg" ] && sigterm valgrind_sigterm valgrind

# Not Go: no goroutine items, goid 0 throughout.
if [ -n "$have_vg" ]; then
	"$B/mt-capture" --emulate=valgrind --start-at '' --truth "$W/c.truth" -o "$W/c.bin" \
		-- true >/dev/null 2>"$W/c.err"
	if [ -s "$W/c.bin" ] && [ -z "$(switches "$W/c.bin")" ] &&
		[ "$(goids "$W/c.truth")" = 0 ] &&
		awk -F'\t' 'NR > 1 && $8 != "0" {exit 1}' "$W/c.truth"; then
		echo "PASS go_not_go"
	else
		echo "FAIL go_not_go: $(tail -1 "$W/c.err")"
	fi
fi
exit 0
