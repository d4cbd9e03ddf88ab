#!/bin/bash
# SPDX-License-Identifier: MIT
# The independent check: for synthetic captures covering every option,
# perf's own Intel PT decoder must report exactly the truth's calls and
# returns, and one overflow error at each injected gap, nothing else, at
# times within the resolution of the timing mode
# (tools/mt-synth-check.c says how they are compared), and
# `mt-convert --info` must read the capture.
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-synth.XXXXXX)
trap 'rm -rf "$W"' EXIT

# name | mt-synth options
cases=(
	"mtc_s1|--seed 1 --branches 30000"
	"mtc_s2|--seed 2 --branches 30000"
	"tsc_s3|--seed 3 --branches 30000 --timing tsc"
	"tsc_s4|--seed 4 --branches 30000 --timing tsc --noretcomp"
	"cyc_s5|--seed 5 --branches 30000 --timing cyc"
	"cyc_s6|--seed 6 --branches 30000 --timing cyc --mtc-period 0"
	"noretcomp_s7|--seed 7 --branches 30000 --noretcomp"
	"noretcomp_s8|--seed 8 --branches 30000 --noretcomp --timing cyc"
	"depth_s9|--seed 9 --branches 30000 --start-depth 5"
	"depth_s10|--seed 10 --branches 30000 --start-depth 20 --final-stack"
	"threads_s11|--seed 11 --branches 20000 --threads 3"
	"threads_s12|--seed 12 --branches 20000 --threads 4 --timing cyc"
	"threads_s13|--seed 13 --branches 20000 --threads 2 --timing tsc --start-depth 3"
	"psb0_s14|--seed 14 --branches 30000 --psb-period 0"
	"psb8_s15|--seed 15 --branches 30000 --psb-period 8"
	"deep_s16|--seed 16 --branches 80000"
	"nodeep_s17|--seed 17 --branches 30000 --no-deep"
	"mixed_s22|--seed 22 --branches 40000 --timing cyc --noretcomp --start-depth 9 --threads 2 --final-stack"
	"percpu_s51|--seed 51 --branches 20000 --threads 3 --per-cpu"
	"percpu_gap_s52|--seed 52 --branches 20000 --threads 2 --per-cpu --gap-every 3000 --timing cyc"
	"cpus_s61|--seed 61 --branches 20000 --threads 4 --per-cpu --cpus 2"
	"cpus_cyc_s62|--seed 62 --branches 20000 --threads 5 --per-cpu --cpus 2 --timing cyc"
	"cpus_depth_s64|--seed 64 --branches 20000 --threads 4 --per-cpu --cpus 3 --start-depth 5 --final-stack"
	"cpus_task_s69|--seed 69 --branches 20000 --threads 4 --per-cpu --cpus 3 --task-switches"
	"cpus_noret_s65|--seed 65 --branches 20000 --threads 6 --per-cpu --cpus 2 --noretcomp"
	"cpus_gap_cyc_s68|--seed 68 --branches 20000 --threads 3 --per-cpu --cpus 2 --gap-every 1500 --timing cyc"
	"gap_mtc_s18|--seed 18 --branches 20000 --gap-every 3000"
	"gap_tsc_s19|--seed 19 --branches 30000 --timing tsc --gap-every 2000"
	"gap_cyc_s20|--seed 20 --branches 30000 --timing cyc --gap-every 2500"
	"gap_threads_s21|--seed 21 --branches 20000 --threads 3 --gap-every 1500"
	"gap_noretcomp_s23|--seed 23 --branches 30000 --noretcomp --gap-every 2000"
	"gap_depth_s24|--seed 24 --branches 30000 --start-depth 7 --timing cyc --gap-every 1000"
	"gap_psb0_s25|--seed 25 --branches 30000 --psb-period 0 --gap-every 500"
	"gap_mixed_s26|--seed 26 --branches 40000 --threads 2 --timing tsc --noretcomp --gap-every 800"
	"gap_dense_s29|--seed 29 --branches 50000 --timing cyc --mtc-period 0 --threads 2 --gap-every 150"
	"gapat_syscall_s43|--seed 43 --branches 60000 --gap-at syscall"
	"gapat_longjmp_s41|--seed 41 --branches 40000 --gap-at longjmp --timing tsc"
	"gapat_returns_s46|--seed 46 --branches 60000 --gap-at returns,back2back"
	"gapat_recursion_s42|--seed 42 --branches 400000 --gap-at recursion,back2back --timing cyc"
	"gapat_all_s45|--seed 45 --branches 60000 --gap-at all --noretcomp"
)

for c in "${cases[@]}"; do
	name=${c%%|*}
	opts=${c#*|}
	d="$W/$name"
	timing=mtc mtc_period=3 # mt-synth's defaults
	[[ $opts =~ --timing\ ([a-z]+) ]] && timing=${BASH_REMATCH[1]}
	[[ $opts =~ --mtc-period\ ([0-9]+) ]] && mtc_period=${BASH_REMATCH[1]}
	if ! "$B/mt-synth" $opts -o "$d" >"$W/$name.synth" 2>&1; then
		echo "FAIL synth_perf_$name: mt-synth failed"
		sed 's/^/    /' "$W/$name.synth"
		continue
	fi
	if ! perf script -i "$d/raw.bin" --itrace=cre --ns \
		-F tid,time,flags,ip,sym,symoff,addr >"$d/perf.txt" 2>"$d/perf.err"; then
		echo "FAIL synth_perf_$name: perf script failed"
		sed 's/^/    /' "$d/perf.err" | head -5
		continue
	fi
	if out=$(ASAN_OPTIONS=detect_leaks=0 "$B/mt-synth-check" "$d/truth.tsv" \
		"$d/perf.txt" "$d/gaps.tsv" --timing "$timing" \
		--mtc-period "$mtc_period"); then
		echo "PASS synth_perf_$name (${out//$'\n'/; })"
	else
		echo "FAIL synth_perf_$name: $out"
	fi
	if "$B/mt-convert" --info "$d/raw.bin" >"$d/info.txt" 2>&1 &&
		grep -q prog "$d/info.txt"; then
		echo "PASS synth_info_$name"
	else
		echo "FAIL synth_info_$name"
		sed 's/^/    /' "$d/info.txt" | head -5
	fi
done
