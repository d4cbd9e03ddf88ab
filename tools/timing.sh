#!/bin/bash
# SPDX-License-Identifier: MIT
# make timing: how far the times mt-convert gives calls and returns are
# from the truth, per timing mode, beside perf's decoder on the same
# packets.  Synthetic captures (mt-synth) with system calls, threads,
# per-CPU streams and a start deep in the stack; for each, the median,
# 99th percentile and worst error of ours (every start and end the trace
# saw, tools/mt-tree-check.c) and of perf (every call, return and
# system call, tools/mt-synth-check.c).  Then a sweep over seeds and
# thread counts with CYC and with MTC, where an error that only some
# captures show (a PSB late in its MTC period, say) turns up: the worst
# capture of each, ours beside perf's.
set -e
B=${MT_BUILD:-build}/bin
W=$(mktemp -d /tmp/mt-timing.XXXXXX)
trap 'rm -rf "$W"' EXIT
BRANCHES=${BRANCHES:-200000}
SWEEP_SEEDS=${SWEEP_SEEDS:-1 2 3 4 5 6 7 8}
SWEEP_THREADS=${SWEEP_THREADS:-3 4}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

command -v perf >/dev/null || { echo "timing: perf is not installed" >&2; exit 1; }

# name | mt-synth options | tree-check options
captures=(
	"syscalls|--seed 31|"
	"threads|--seed 12 --threads 4|"
	"per-cpu|--seed 53 --threads 3 --per-cpu|"
	"start-depth|--seed 9 --start-depth 6|--unanchored"
)
stats() { sed -n 's/.*median \([0-9]*\) ns, p99 \([0-9]*\) ns, worst \([0-9]*\) ns.*/\1 \2 \3/p'; }

# One capture, measured into $W/ID.res: events, then ours' and perf's
# median, p99 and worst ("-" for what could not be measured).
measure() {
	local id=$1 mode=$2 opts=$3 chk=$4 d="$W/$1" ours theirs n
	# shellcheck disable=SC2086
	"$B/mt-synth" $opts --branches "$BRANCHES" --timing "$mode" \
		-o "$d" >/dev/null
	"$B/mt-convert" "$d/raw.bin" -o "$d/t.pftrace" --no-sqlite \
		--text "$d/ours.tsv" -q -j 1
	# shellcheck disable=SC2086
	ours=$("$B/mt-tree-check" "$d/truth.tsv" "$d/ours.tsv" \
		--tol-ns 1000000000 $chk 2>/dev/null | stats || true)
	perf script -i "$d/raw.bin" --itrace=cre --ns \
		-F tid,time,flags,ip,sym,symoff,addr >"$d/perf.txt" 2>/dev/null
	theirs=$("$B/mt-synth-check" "$d/truth.tsv" "$d/perf.txt" \
		"$d/gaps.tsv" | stats || true)
	n=$(($(wc -l <"$d/truth.tsv") - 1))
	echo "$n ${ours:-- - -} ${theirs:-- - -}" >"$W/$id.res"
	rm -rf "$d"
}

# Up to JOBS captures at a time.
spawn() {
	while (($(jobs -rp | wc -l) >= JOBS)); do
		wait -n || true
	done
	measure "$@" &
}

for mode in cyc mtc tsc; do
	for c in "${captures[@]}"; do
		IFS='|' read -r name opts chk <<<"$c"
		spawn "$mode-$name" "$mode" "$opts" "$chk"
	done
done
for mode in cyc mtc; do
	for seed in $SWEEP_SEEDS; do
		for th in $SWEEP_THREADS; do
			spawn "sweep-$mode-$seed-$th" "$mode" \
				"--seed $seed --threads $th" ""
		done
	done
done
wait

printf "%-5s %-12s %8s | %27s | %27s\n" "" "" "" "ours (ns)" "perf (ns)"
printf "%-5s %-12s %8s | %8s %8s %9s | %8s %8s %9s\n" mode capture events \
	median p99 worst median p99 worst
for mode in cyc mtc tsc; do
	for c in "${captures[@]}"; do
		IFS='|' read -r name _ _ <<<"$c"
		# shellcheck disable=SC2046
		printf "%-5s %-12s %8s | %8s %8s %9s | %8s %8s %9s\n" "$mode" \
			"$name" $(cat "$W/$mode-$name.res" 2>/dev/null ||
				echo "- - - - - - -")
	done
done

# The sweep: per mode, the worst capture of ours and of perf, and the
# captures where ours is off by more than perf's worst there.
echo
echo "sweep: seeds $SWEEP_SEEDS, threads $SWEEP_THREADS (worst error, ns)"
printf "%-5s %8s | %-22s | %-22s | %s\n" mode captures "ours: worst (seed/thr)" \
	"perf: worst (seed/thr)" "ours > perf's worst"
for mode in cyc mtc; do
	ow=-1 pw=-1 oat=- pat=- n=0 over=""
	for seed in $SWEEP_SEEDS; do
		for th in $SWEEP_THREADS; do
			r="$W/sweep-$mode-$seed-$th.res"
			read -r _ _ _ o _ _ p <"$r" 2>/dev/null || o=- p=-
			n=$((n + 1))
			if [ "$o" = - ] || [ "$p" = - ]; then
				over="$over $seed/$th(unmeasured)"
				continue
			fi
			((o > ow)) && ow=$o oat=$seed/$th
			((p > pw)) && pw=$p pat=$seed/$th
			((o > p)) && over="$over $seed/$th($o>$p)"
		done
	done
	((ow < 0)) && ow=-
	((pw < 0)) && pw=-
	printf "%-5s %8s | %9s %-12s | %9s %-12s |%s\n" "$mode" "$n" \
		"$ow" "($oat)" "$pw" "($pat)" "${over:- none}"
done
echo
echo "ours: every call's start and end the trace saw; perf: every call,"
echo "return and system call it reports.  MTC period here: 333 ns."
