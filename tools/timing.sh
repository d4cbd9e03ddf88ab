#!/bin/bash
# make timing: how far the times mt-convert gives calls and returns are
# from the truth, per timing mode, beside perf's decoder on the same
# packets.  Synthetic captures (mt-synth) with system calls, threads,
# per-CPU streams and a start deep in the stack; for each, the median,
# 99th percentile and worst error of ours (every start and end the trace
# saw, tools/mt-tree-check.c) and of perf (every call, return and
# system call, tools/mt-synth-check.c).
set -e
B=${MT_BUILD:-build}/bin
W=$(mktemp -d /tmp/mt-timing.XXXXXX)
trap 'rm -rf "$W"' EXIT
BRANCHES=${BRANCHES:-200000}

command -v perf >/dev/null || { echo "timing: perf is not installed" >&2; exit 1; }

# name | mt-synth options | tree-check options
captures=(
	"syscalls|--seed 31|"
	"threads|--seed 12 --threads 4|"
	"per-cpu|--seed 53 --threads 3 --per-cpu|"
	"start-depth|--seed 9 --start-depth 6|--unanchored"
)
stats() { sed -n 's/.*median \([0-9]*\) ns, p99 \([0-9]*\) ns, worst \([0-9]*\) ns.*/\1 \2 \3/p'; }

printf "%-5s %-12s %8s | %27s | %27s\n" "" "" "" "ours (ns)" "perf (ns)"
printf "%-5s %-12s %8s | %8s %8s %9s | %8s %8s %9s\n" mode capture events \
	median p99 worst median p99 worst
for mode in cyc mtc tsc; do
	for c in "${captures[@]}"; do
		IFS='|' read -r name opts chk <<<"$c"
		d="$W/$mode-$name"
		# shellcheck disable=SC2086
		"$B/mt-synth" $opts --branches "$BRANCHES" --timing "$mode" \
			-o "$d" >/dev/null
		"$B/mt-convert" "$d/raw.bin" -o "$d/t.pftrace" --no-sqlite \
			--text "$d/ours.tsv" -q
		# shellcheck disable=SC2086
		ours=$("$B/mt-tree-check" "$d/truth.tsv" "$d/ours.tsv" \
			--tol-ns 1000000000 $chk 2>/dev/null | stats || true)
		perf script -i "$d/raw.bin" --itrace=cre --ns \
			-F tid,time,flags,ip,sym,symoff,addr >"$d/perf.txt" 2>/dev/null
		theirs=$("$B/mt-synth-check" "$d/truth.tsv" "$d/perf.txt" \
			"$d/gaps.tsv" | stats || true)
		n=$(($(wc -l <"$d/truth.tsv") - 1))
		# shellcheck disable=SC2086
		printf "%-5s %-12s %8s | %8s %8s %9s | %8s %8s %9s\n" "$mode" \
			"$name" "$n" ${ours:-- - -} ${theirs:-- - -}
	done
done
echo
echo "ours: every call's start and end the trace saw; perf: every call,"
echo "return and system call it reports.  MTC period here: 333 ns."
