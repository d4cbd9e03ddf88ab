#!/bin/bash
# SPDX-License-Identifier: MIT
# Out of memory at every allocation of mt-convert's own code, one at a
# time (tests/tools/failalloc.c, preloaded): each conversion either
# ends as if nothing had failed (a fallback: the same outputs, byte for
# byte) or fails with one line naming what failed, leaving no output
# and no temporary file; never a crash, a hang, a sanitizer report or a
# leak.  With -j 1 and -j 2 (threads: the order of the allocations,
# and so which one fails, changes from run to run), on a capture with
# gaps, three threads and CYC, writing the trace, the database and the
# text.
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

# run J OUTDIR [FAIL_AT]: one conversion with the shim.
run() {
	local j=$1 o=$2 at=${3:-}
	rm -rf "$o"
	mkdir -p "$o"
	# (env: the shim in mt-convert only, not in timeout)
	timeout 120 env MT_FAIL_AT="$at" MT_FAIL_COUNT="$W/count" \
		LD_PRELOAD="$W/libfailalloc.so" "$B/mt-convert" "$W/s/raw.bin" \
		-o "$o/t.pftrace" --text "$o/t.tsv" -j "$j" -q \
		>"$W/stdout" 2>"$W/stderr"
}

for j in 1 2; do
	name=convert_oom_j$j
	# (the outputs name themselves: the reference is made where the
	# others are)
	rm -rf "$W/ref"
	if ! run "$j" "$W/o" || ! mv "$W/o" "$W/ref"; then
		echo "FAIL $name: the conversion fails without a failed allocation:"
		sed 's/^/    /' "$W/stderr" | head -3
		continue
	fi
	n=$(cat "$W/count")
	if ! [ "$n" -gt 100 ] 2>/dev/null; then
		echo "FAIL $name: only '$n' allocations counted (the shim saw none)"
		continue
	fi
	bad='' nbad=0 fell_back=0 failed=0
	for ((i = 0; i < n && nbad < 5; i++)); do
		run "$j" "$W/o" "$i"
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
		echo "PASS $name ($n allocations failed one at a time: $failed" \
			"refused in one line, $fell_back with the same outputs)"
	fi
done
