#!/bin/bash
# SPDX-License-Identifier: MIT
# The parallel decode gives the serial decode's outputs, byte for byte:
# each capture converted with --jobs 1 and with --jobs 4 in pieces of 4K
# (so that a buffer has dozens of pieces and as many joins), the
# .pftrace, the database and the text compared whole.  Captures with
# gaps, CYC time, recursion, threads, return compression off, a kernel,
# per-CPU streams (threads sharing CPUs too: each CPU's buffer decodes
# whole, on a thread of its own) and TSC-only time (not cut); where
# pieces can join, some must have (else the test would pass on a
# parallel decode that always falls back to the serial one).
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-par27.XXXXXX)
trap 'rm -rf "$W"' EXIT

# case NAME MUST_JOIN SYNTH-OPTIONS...
case_() {
	local name=$1 must=$2 d="$W/$1"
	shift 2
	if ! "$B/mt-synth" "$@" -o "$d" >"$W/synth.log" 2>&1; then
		echo "FAIL parallel_$name: mt-synth $*"
		tail -2 "$W/synth.log" | sed 's/^/    /'
		return
	fi
	if ! "$B/mt-convert" "$d/raw.bin" -o "$d/a.pftrace" --text "$d/a.tsv" \
		-j 1 2>"$d/a.err" ||
		! "$B/mt-convert" "$d/raw.bin" -o "$d/b.pftrace" \
			--text "$d/b.tsv" -j 4 --piece-size 4K 2>"$d/b.err"; then
		echo "FAIL parallel_$name: mt-convert failed"
		tail -2 "$d/a.err" "$d/b.err" | sed 's/^/    /'
		return
	fi
	local line pieces joined
	line=$(grep 'decoded in' "$d/b.err")
	pieces=$(sed -n 's/.*decoded in \([0-9]*\) pieces.*/\1/p' <<<"$line")
	joined=$(sed -n 's/.* \([0-9]*\) of them joined.*/\1/p' <<<"$line")
	pieces=${pieces:-0} joined=${joined:-0}
	if grep -q 'decoded in' "$d/a.err"; then
		echo "FAIL parallel_$name: --jobs 1 decoded in pieces"
	elif ! cmp -s "$d/a.pftrace" "$d/b.pftrace" ||
		! cmp -s "$d/a.sqlite" "$d/b.sqlite" ||
		! cmp -s "$d/a.tsv" "$d/b.tsv"; then
		echo "FAIL parallel_$name: outputs differ ($pieces pieces," \
			"$joined joined)"
		diff "$d/a.tsv" "$d/b.tsv" | head -6 | sed 's/^/    /'
	elif [ "$must" = yes ] && [ "$joined" -eq 0 ]; then
		echo "FAIL parallel_$name: no piece joined ($pieces pieces)"
	else
		echo "PASS parallel_$name (identical; $pieces pieces," \
			"$joined joined)"
	fi
}

case_ mtc yes --seed 1 --branches 120000
case_ cyc yes --seed 2 --branches 120000 --timing cyc
case_ gaps_cyc yes --seed 5 --branches 200000 --gap-every 10000 \
	--timing cyc
case_ gaps_mtc no --seed 4 --branches 150000 --gap-every 10000
case_ threads yes --seed 6 --branches 150000 --threads 4
case_ recursion yes --seed 46 --branches 150000
case_ recursion_gaps yes --seed 44 --branches 150000 --gap-every 20000
case_ noretcomp yes --seed 7 --branches 120000 --noretcomp
case_ start_depth yes --seed 31 --start-depth 4 --branches 150000 \
	--timing cyc
case_ psb_mtc yes --seed 9 --branches 150000 --mtc-period 6 \
	--psb-period 2
case_ kernel yes --seed 10 --branches 120000 --kernel
case_ per_cpu no --seed 8 --branches 100000 --per-cpu --threads 3
case_ per_cpu_shared no --seed 67 --branches 150000 --per-cpu --cpus 2 \
	--threads 5 --gap-every 20000
case_ per_cpu_shared_cyc no --seed 68 --branches 150000 --per-cpu \
	--cpus 2 --threads 4 --gap-every 20000 --timing cyc
case_ per_cpu_task no --seed 69 --branches 100000 --per-cpu --cpus 2 \
	--threads 4 --task-switches
case_ tsc no --seed 3 --branches 100000 --timing tsc

# A real per-CPU capture (Skylake, kernel 4.14): its CPUs' buffers
# decode on different threads.
R=${MT_SHARED:?}/testdata/perf.data.intel_pt-4.14
if [ -f "$R" ]; then
	"$B/mt-convert" "$R" -o "$W/ra.pftrace" --text "$W/ra.tsv" -q -j 1 \
		2>/dev/null
	"$B/mt-convert" "$R" -o "$W/rb.pftrace" --text "$W/rb.tsv" -q -j 4 \
		--piece-size 4K 2>/dev/null
	if [ -s "$W/ra.tsv" ] && cmp -s "$W/ra.tsv" "$W/rb.tsv" &&
		cmp -s "$W/ra.pftrace" "$W/rb.pftrace" &&
		cmp -s "$W/ra.sqlite" "$W/rb.sqlite"; then
		echo "PASS parallel_real_per_cpu (identical)"
	else
		echo "FAIL parallel_real_per_cpu: outputs differ"
	fi
else
	echo "SKIP parallel_real_per_cpu (no $R)"
fi

# The stages after the decode run on -j threads too (the Perfetto
# batches compressed side by side, the database's trees and function
# figures built side by side): a capture of several threads converted
# with -j 1, 2, 3 and 8 gives the same outputs, byte for byte, and the
# database passes SQLite's own check.
d="$W/writers"
if "$B/mt-synth" --seed 71 --branches 60000 --threads 5 --gap-every 15000 \
	-o "$d" >"$W/synth.log" 2>&1; then
	bad=
	for j in 1 2 3 8; do
		if ! "$B/mt-convert" "$d/raw.bin" -o "$d/j$j.pftrace" \
			--text "$d/j$j.tsv" -j "$j" -q 2>"$d/j$j.err"; then
			bad="-j $j failed: $(head -1 "$d/j$j.err")"
			break
		fi
		if [ "$j" != 1 ] && { ! cmp -s "$d/j1.pftrace" "$d/j$j.pftrace" ||
			! cmp -s "$d/j1.sqlite" "$d/j$j.sqlite" ||
			! cmp -s "$d/j1.tsv" "$d/j$j.tsv"; }; then
			bad="-j $j wrote other outputs than -j 1"
			break
		fi
	done
	check=$(sqlite3 "$d/j8.sqlite" 'PRAGMA integrity_check' 2>&1)
	fns=$(sqlite3 "$d/j8.sqlite" 'SELECT count(*) FROM function' 2>&1)
	if [ -n "$bad" ]; then
		echo "FAIL parallel_writers: $bad"
	elif [ "$check" != ok ]; then
		echo "FAIL parallel_writers: integrity_check: $check"
	elif ! [ "$fns" -gt 0 ] 2>/dev/null; then
		echo "FAIL parallel_writers: no function figures ($fns)"
	else
		echo "PASS parallel_writers (-j 1, 2, 3, 8 identical; $fns functions)"
	fi
else
	echo "FAIL parallel_writers: mt-synth failed"
fi

# A thread's events reach the segment builders in runs, piece by piece:
# cut at many more places (-j 2, 3 and 8, pieces of 4K and 8K) in a
# capture that starts deep in recursion and loses its trace at syscalls,
# longjmps, returns and recursion, with the stack unwound at the end, the
# outputs are -j 1's, byte for byte.
# vs_j1 DIR NAME -j N --piece-size S: DIR's capture converted into
# DIR/NAME.* with those options (under a time limit: a run that never
# ended would hang), against DIR/j1.*; prints what is wrong, if anything.
vs_j1() {
	local d=$1 o="$1/$2"
	shift 2
	if ! timeout 600 "$B/mt-convert" "$d/raw.bin" -o "$o.pftrace" \
		--text "$o.tsv" "$@" 2>"$o.err" >/dev/null; then
		echo " $* failed or hung;"
	elif ! cmp -s "$d/j1.pftrace" "$o.pftrace" ||
		! cmp -s "$d/j1.sqlite" "$o.sqlite" ||
		! cmp -s "$d/j1.tsv" "$o.tsv"; then
		echo " $* differs;"
	fi
}

# verdict NAME BAD COUNT NONE PASSED: FAIL with what vs_j1 found, or
# with NONE where COUNT (what must have happened) is 0, else PASS.
verdict() {
	if [ -n "$2" ]; then
		echo "FAIL $1:$2"
	elif [ "$3" -eq 0 ]; then
		echo "FAIL $1: $4"
	else
		echo "PASS $1 ($5)"
	fi
}

d="$W/cuts"
if "$B/mt-synth" --seed 73 --branches 200000 --start-depth 6 --final-stack \
	--gap-every 12000 --gap-at all --timing cyc -o "$d" \
	>"$W/synth.log" 2>&1 &&
	"$B/mt-convert" "$d/raw.bin" -o "$d/j1.pftrace" --text "$d/j1.tsv" \
		-j 1 -q 2>"$d/j1.err"; then
	bad='' runs=0
	for j in 2 3 8; do
		for ps in 4K 8K; do
			bad="$bad$(vs_j1 "$d" "j$j-$ps" -j "$j" --piece-size $ps)"
			n=$(sed -n 's/.* \([0-9]*\) of them joined.*/\1/p' \
				"$d/j$j-$ps.err")
			runs=$((runs + ${n:-0}))
		done
	done
	verdict parallel_cuts "$bad" "$runs" "no piece joined" \
		"-j 2, 3, 8 in 4K and 8K pieces identical to -j 1; $runs joins"
else
	echo "FAIL parallel_cuts: mt-synth or mt-convert -j 1 failed"
fi

# Many more threads than the pieces' events may wait for: the runs ahead
# of the hand-over hold a bounded number of blocks, the furthest wait
# while the nearest go on.  With 48 and 64 threads on pieces of 4K and
# 8K (a few pieces' worth of blocks, where the window lets 50 and 66
# pieces run), runs must have waited, and the outputs are still -j 1's.
d="$W/room"
if "$B/mt-synth" --seed 79 --branches 1000000 --gap-every 60000 \
	--timing cyc -o "$d" >"$W/synth.log" 2>&1 &&
	"$B/mt-convert" "$d/raw.bin" -o "$d/j1.pftrace" --text "$d/j1.tsv" \
		-j 1 -q 2>"$d/j1.err"; then
	bad='' waits=0
	for jp in 48/4K 64/8K; do
		j=${jp%/*} ps=${jp#*/}
		bad="$bad$(vs_j1 "$d" "j$j" -j "$j" --piece-size "$ps")"
		n=$(sed -n 's/.*waited \([0-9]*\) times.*/\1/p' "$d/j$j.err")
		waits=$((waits + ${n:-0}))
	done
	verdict parallel_room "$bad" "$waits" \
		"no run waited for the hand-over" \
		"-j 48 and 64 identical to -j 1; runs waited $waits times"
else
	echo "FAIL parallel_room: mt-synth or mt-convert -j 1 failed"
fi

# The options say what is wrong with them, in one line, before anything
# is read.
for bad in "-j 0" "--jobs x" "--piece-size 1"; do
	# shellcheck disable=SC2086
	"$B/mt-convert" "$W/mtc/raw.bin" -o "$W/bad.pftrace" $bad \
		>/dev/null 2>"$W/bad.err"
	rc=$?
	if [ $rc -eq 0 ] || [ "$(wc -l <"$W/bad.err")" -ne 1 ] ||
		[ -e "$W/bad.pftrace" ]; then
		echo "FAIL parallel_bad_option: '$bad' exit $rc"
		sed 's/^/    /' "$W/bad.err"
		exit 0
	fi
done
echo "PASS parallel_bad_option"
