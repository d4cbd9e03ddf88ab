#!/bin/bash
# SPDX-License-Identifier: MIT
# A thread's call tree built in pieces at once (segments/pieces.c) is the
# one a single builder makes, byte for byte: each capture converted with
# --jobs 1 and with --jobs 3 in pieces of a few hundred events (so that
# a thread has dozens of seams, each joined on the real stack), the
# .pftrace, the database and the text compared whole.  Synthetic
# captures of every shape (gaps, recursion, threads, a kernel, per-CPU
# streams, no return compression) and real programs captured through
# Valgrind (recursion, longjmp, C++ exceptions, signals, inlined calls
# with their DWARF, two inlined functions of one name, cold parts and
# tail calls, threads, an exec, a fork), each cut three ways,
# and the real Intel PT capture.  Where a thread runs long enough, its
# pieces must have been joined with most events built at once (else the
# test would pass on a build that always starts over on one thread).
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-build28.XXXXXX)
trap 'rm -rf "$W"' EXIT

# same NAME CAPTURE MUST_SPECULATE [PIECE_EVENTS]: -j 1 against -j 3.
same() {
	local name=$1 cap=$2 must=$3 pe=${4:-300} line pieces rebuilt
	if ! "$B/mt-convert" "$cap" -o "$W/$name.a.pftrace" --text "$W/$name.a.tsv" \
		-j 1 2>"$W/$name.a.err" ||
		! "$B/mt-convert" "$cap" -o "$W/$name.b.pftrace" --text "$W/$name.b.tsv" \
			-j 3 --piece-events "$pe" 2>"$W/$name.b.err"; then
		echo "FAIL build_$name: mt-convert failed"
		tail -n 2 "$W/$name.a.err" "$W/$name.b.err" | sed 's/^/    /'
		return
	fi
	line=$(grep 'call trees built' "$W/$name.b.err")
	pieces=$(sed -n 's/.* in \([0-9]*\) pieces* .*/\1/p' <<<"$line")
	rebuilt=$(sed -n 's/.*joined, \([0-9]*\) built again.*/\1/p' <<<"$line")
	pieces=${pieces:-0} rebuilt=${rebuilt:-0}
	if ! cmp -s "$W/$name.a.pftrace" "$W/$name.b.pftrace" ||
		! cmp -s "$W/$name.a.sqlite" "$W/$name.b.sqlite" ||
		! cmp -s "$W/$name.a.tsv" "$W/$name.b.tsv"; then
		echo "FAIL build_$name: outputs differ (${line# *})"
		diff "$W/$name.a.tsv" "$W/$name.b.tsv" | head -6 | sed 's/^/    /'
	elif [ -z "$line" ]; then
		echo "FAIL build_$name: -j 3 did not build in pieces"
	elif [ "$must" = yes ] && { [ "$pieces" -lt 10 ] ||
		[ $((rebuilt * 2)) -gt "$(($(grep -c . "$W/$name.a.tsv") * 1))" ]; }; then
		echo "FAIL build_$name: the pieces were built again on one thread (${line# *})"
	else
		echo "PASS build_$name (identical; ${line#*in })"
	fi
}

# synth NAME MUST SYNTH-OPTIONS...
synth() {
	local name=$1 must=$2
	shift 2
	if ! "$B/mt-synth" "$@" -o "$W/$name" >"$W/synth.log" 2>&1; then
		echo "FAIL build_$name: mt-synth $*"
		tail -2 "$W/synth.log" | sed 's/^/    /'
		return
	fi
	same "$name" "$W/$name/raw.bin" "$must"
}

synth plain yes --seed 1 --branches 120000
synth cyc yes --seed 2 --branches 120000 --timing cyc
synth gaps no --seed 5 --branches 200000 --gap-every 3000 --timing cyc
synth threads yes --seed 6 --branches 150000 --threads 4
synth recursion yes --seed 46 --branches 150000
synth recursion_gaps no --seed 44 --branches 150000 --gap-every 20000
synth noretcomp yes --seed 7 --branches 120000 --noretcomp
synth start_depth yes --seed 31 --start-depth 4 --branches 150000
synth kernel no --seed 10 --branches 120000 --kernel
synth per_cpu no --seed 67 --branches 150000 --per-cpu --cpus 2 \
	--threads 5 --gap-every 20000
synth per_cpu_task no --seed 69 --branches 100000 --per-cpu --cpus 2 \
	--threads 4 --task-switches

# The real capture, its threads in pieces of 100 events.
P=${MT_SHARED:-$R/../shared}/testdata/perf.data.intel_pt-4.14
if [ -f "$P" ]; then
	same real_intel_pt "$P" no 100
else
	echo "SKIP build_real_intel_pt (no $P)"
fi

if ! command -v valgrind >/dev/null || [ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	echo "SKIP build_programs (valgrind or its tool not built: apt-get install valgrind)"
	exit 0
fi

# run NAME MUST PROGRAM ARGS...: captured whole (children too), and
# cut in pieces of three sizes (seams fall elsewhere in each).
run() {
	local name=$1 must=$2 pe
	shift 2
	if ! "$B/mt-capture" --emulate=valgrind --follow-children --start-at '' \
		-o "$W/$name.bin" -- "$@" >/dev/null 2>"$W/$name.err"; then
		echo "FAIL build_$name: mt-capture failed"
		tail -3 "$W/$name.err" | sed 's/^/    /'
		return
	fi
	for pe in 300 137 57; do
		same "${name}_$pe" "$W/$name.bin" "$must" "$pe"
	done
}

# prog NAME MUST COMPILER FLAGS...: built, then run.
prog() {
	local name=$1 must=$2 cc=$3
	shift 3
	if ! $cc "$@" -o "$W/$name" 2>"$W/$name.cc"; then
		echo "SKIP build_$name (does not build here: $(head -1 "$W/$name.cc"))"
		return
	fi
	run "$name" "$must" "$W/$name"
}

T=$R/tests/programs
prog recursion_c yes cc -O1 -g "$T/recursion.c"
prog longjmp no cc -O1 -g "$T/longjmp.c"
prog signal no cc -O1 -g "$T/signal.c"
prog inline yes cc -O2 -g "$T/inline.c"
prog coldpart yes cc -O2 -g "$T/coldpart.c"
prog tailnext no cc -O2 -g "$T/tailnext.c"
prog deep yes cc -O1 -g "$T/deep.c"
prog threads_c no cc -O1 -g -pthread "$T/threads.c"
prog exception no c++ -O1 -g "$T/exception.cc"
prog forker no cc -O1 -g "$T/forker.c"
# two inlined functions of one name share a frame: its source
prog samename yes cc -O1 -g "$T/samename.c" "$T/samename_a.c" "$T/samename_b.c"
run python_json yes /usr/bin/python3 -c \
	'import json; print(len(json.dumps([{"a": i, "b": [i] * 9} for i in range(3000)])))'
run shell_exec no /bin/sh -c '/bin/echo hi; /bin/ls -l / >/dev/null'
exit 0
