#!/bin/bash
# SPDX-License-Identifier: MIT
# Out of memory at every allocation of mt-convert's own code, one at a
# time (tests/tools/failalloc.c, preloaded): each conversion either
# ends as if nothing had failed (a fallback: the same outputs, byte for
# byte) or fails with one line naming what failed, leaving no output
# and no temporary file; never a crash, a hang, a sanitizer report or a
# leak.  With -j 1 and -j 2 (threads: the order of the allocations,
# and so which one fails, changes from run to run), on a capture with
# gaps, three threads and CYC, and on a program's capture whose binary
# has DWARF, writing the trace, the database and the text.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-oom44.XXXXXX)
trap 'rm -rf "$W"' EXIT

if ! cc -O2 -shared -fPIC -o "$W/libfailalloc.so" "$R/tests/tools/failalloc.c" \
	-ldl 2>"$W/cc.log"; then
	echo "FAIL convert_oom: the shim does not build"
	sed 's/^/    /' "$W/cc.log" | head -5
	exit 0
fi
if ! "$B/mt-synth" --seed 5 --branches 20000 --threads 3 --gap-every 5000 \
	--timing cyc -o "$W/s" >/dev/null 2>&1; then
	echo "FAIL convert_oom: mt-synth failed"
	exit 0
fi
# An ASan build wants its runtime first; the shim calls the sanitizer's
# allocator underneath, which sees every free.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# run J OUTDIR FAIL_AT CAPTURE [OPTION...]: one conversion with the shim
# ("" fails nothing).
run() {
	local j=$1 o=$2 at=$3 cap=$4
	shift 4
	rm -rf "$o"
	mkdir -p "$o"
	# (env: the shim in mt-convert only, not in timeout)
	timeout 120 env MT_FAIL_AT="$at" MT_FAIL_COUNT="$W/count" \
		LD_PRELOAD="$W/libfailalloc.so" "$B/mt-convert" "$cap" \
		-o "$o/t.pftrace" --text "$o/t.tsv" -j "$j" -q "$@" \
		>"$W/stdout" 2>"$W/stderr"
}

# sweep NAME CAPTURE J STEP [OPTION...]: every STEP-th allocation failed
# in turn.
sweep() {
	local name=convert_oom_$1 cap=$2 j=$3 step=$4 n bad nbad fell_back failed
	local i rc why f
	shift 4
	# (the outputs name themselves: the reference is made where the
	# others are)
	rm -rf "$W/ref"
	if ! run "$j" "$W/o" "" "$cap" "$@" || ! mv "$W/o" "$W/ref"; then
		echo "FAIL $name: the conversion fails without a failed allocation:"
		sed 's/^/    /' "$W/stderr" | head -3
		return
	fi
	n=$(cat "$W/count")
	if ! [ "$n" -gt 100 ] 2>/dev/null; then
		echo "FAIL $name: only '$n' allocations counted (the shim saw none)"
		return
	fi
	bad='' nbad=0 fell_back=0 failed=0
	for ((i = 0; i < n && nbad < 5; i += step)); do
		run "$j" "$W/o" "$i" "$cap" "$@"
		rc=$?
		why=''
		if grep -qE 'Sanitizer|runtime error' "$W/stderr"; then
			why="sanitizer: $(grep -m1 -E 'ERROR|runtime error' "$W/stderr")"
		elif [ $rc -eq 0 ]; then
			fell_back=$((fell_back + 1))
			for f in t.pftrace t.sqlite t.tsv; do
				cmp -s "$W/ref/$f" "$W/o/$f" || why="$why $f differs;"
			done
			[ -n "$why" ] && why="exit 0 but$why"
		elif [ $rc -ne 1 ]; then
			why="exit $rc: $(head -c 200 "$W/stderr")"
		elif [ "$(wc -l <"$W/stderr")" -ne 1 ] ||
			! grep -q '^mt-convert: ' "$W/stderr"; then
			why="not one line: $(head -3 "$W/stderr" | tr '\n' '|')"
		elif [ -n "$(ls -A "$W/o")" ]; then
			why="left $(ls -A "$W/o" | tr '\n' ' ')"
		else
			failed=$((failed + 1))
		fi
		if [ -n "$why" ]; then
			bad="$bad
    allocation $i: $why"
			nbad=$((nbad + 1))
		fi
	done
	if [ -n "$bad" ]; then
		echo "FAIL $name:$bad"
	else
		echo "PASS $name ($(( (n + step - 1) / step )) of $n allocations" \
			"failed one at a time: $failed refused in one line," \
			"$fell_back with the same outputs)"
	fi
}

sweep j1 "$W/s/raw.bin" 1 1
sweep j2 "$W/s/raw.bin" 2 1
# A window and a function's calls, which cut the stitched trace (the
# stitching's code walks decide differently there).
sweep time "$W/s/raw.bin" 1 2 --time 10us..150us
sweep between "$W/s/raw.bin" 2 2 --between fn_2_visit
# A program's own binary with DWARF (source lines, inlined calls): every
# other allocation, at -j 2.
if ! cc -O2 -g -o "$W/inline" "$R/tests/programs/inline.c" 2>"$W/cc.log"; then
	echo "FAIL convert_oom_dwarf: cc"
elif ! "$B/mt-capture" --emulate=ptrace -o "$W/inl.bin" -- "$W/inline" 2000 \
	>/dev/null 2>"$W/cap.err"; then
	echo "FAIL convert_oom_dwarf: mt-capture:"
	sed 's/^/    /' "$W/cap.err" | head -3
else
	sweep dwarf "$W/inl.bin" 2 2
fi
