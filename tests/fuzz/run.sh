#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs both fuzz targets, each for SECONDS (default 60), from the source
# root, after `make -f tests/fuzz/fuzz.mk`:
#
#   bash tests/fuzz/run.sh [SECONDS]
#
# New interesting inputs go to $FUZZ_WORK/corpus/TARGET (FUZZ_WORK
# defaults to build/fuzz, kept between runs; never the committed corpus).
# A crash, sanitizer report, leak, hang (-timeout) or memory blow-up
# (-rss_limit_mb) leaves its input in build/fuzz/artifacts and fails the
# run.  Each target ends with a PASS or FAIL line carrying its exec/s and
# its edge coverage over both corpora (fuzz.mk says why that is measured
# on the cov-* build).
S=${1:-60}
FB=${FUZZ_BUILD:-build/fuzz}
WORK=${FUZZ_WORK:-$FB}
F=tests/fuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
FLAGS=(-timeout=10 -rss_limit_mb=2048 -dict=$F/perfdata_pt.dict)
failed=0

# coverage TARGET: "edges K of N (P%)" from a replay of both corpora.
coverage() {
	local t=$1 log=$WORK/cov-$1.log total cov
	"$FB/cov-$t" -runs=0 "${FLAGS[@]}" "$WORK/corpus/$t" "$F/corpus/$t" \
		</dev/null >"$log" 2>&1
	total=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline.*/\1/p' "$log")
	cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -1)
	if [ -z "$total" ] || [ -z "$cov" ]; then
		echo "no coverage figure (see $log)"
		return
	fi
	awk -v c="$cov" -v n="$total" \
		'BEGIN { printf "edges %d of %d (%.1f%%)\n", c, n, 100 * c / n }'
}

mkdir -p "$FB/artifacts"
for t in convert info; do
	mkdir -p "$WORK/corpus/$t"
	log=$WORK/fuzz-$t.log
	"$FB/fuzz-$t" -max_total_time="$S" -print_final_stats=1 "${FLAGS[@]}" \
		-artifact_prefix="$FB/artifacts/$t-" "$WORK/corpus/$t" \
		"$F/corpus/$t" </dev/null >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ $rc -ne 0 ]; then
		failed=1
		echo "FAIL fuzz_$t: exit $rc after ${S}s; log $log"
		grep -E '^==[0-9]+==ERROR|runtime error|ALARM|Test unit written' \
			"$log" | head -5 | sed 's/^/    /'
	else
		echo "PASS fuzz_$t (${S}s, $runs runs, $execs exec/s," \
			"$(coverage $t))"
	fi
done
exit $failed
