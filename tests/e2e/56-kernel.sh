#!/bin/bash
# SPDX-License-Identifier: MIT
# Kernel code.  Decoding: mt-synth --kernel makes the walk's system calls
# run through a small kernel linked at 0xffffffff81000000, traced, with
# its code and kallsyms in the capture as --include-kernel keeps them;
# the converted tree must equal the truth, kernel frames under the user
# frame that made the call, named from kallsyms with the dso
# [kernel.kallsyms], and perf's decoder (given the same kernel as
# --vmlinux) must agree with the truth too.  The same traces without the
# kernel's code (--no-kernel-code) must convert to the user-only tree
# with each system call a [kernel] slice, one line saying what is
# missing and no decode error.  Capturing: with a fake intel_pt PMU and
# a fake procfs tree (MT_PROC_ROOT), --include-kernel keeps kallsyms,
# modules and the kernel's code from kcore, or says in one line what it
# lacks (no kcore, hidden addresses) and still writes the capture.
R=${MT_ROOT:?}
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-kernel.XXXXXX)
trap 'rm -rf "$W"' EXIT

# The truth as it is without the kernel's code: the entry's row becomes
# the [kernel] slice, the kernel's other frames go.
no_kernel_truth() {
	awk -F'\t' 'BEGIN { OFS = "\t" }
		$3 == "entry_SYSCALL_64" { $3 = "[kernel]"; $6 = "syscall"; print; next }
		$3 ~ /^(do_syscall_64|__x64_sys_|ksys_|copy_user_generic)/ { next }
		{ print }' "$1"
}

# name | mt-synth options | tolerance ns | checker options
cases=(
	"mtc_s1|--seed 1 --branches 30000|340|"
	"cyc_s5|--seed 5 --branches 30000 --timing cyc|100|"
	"noretcomp_s7|--seed 7 --branches 30000 --noretcomp|340|"
	"psb0_s2|--seed 2 --branches 30000 --psb-period 0|340|"
	"threads_s12|--seed 12 --branches 20000 --threads 4 --timing cyc|100|"
	"percpu_s53|--seed 53 --branches 20000 --threads 3 --per-cpu --timing cyc|100|"
	"depth_s11|--seed 11 --branches 30000 --start-depth 5|340|--unanchored"
	"final_s10|--seed 10 --branches 30000 --start-depth 20 --final-stack|340|"
	"nocode_s1|--seed 1 --branches 30000 --no-kernel-code|340|"
	"nocode_cyc_s5|--seed 5 --branches 30000 --timing cyc --no-kernel-code|100|"
	"nocode_psb0_s2|--seed 2 --branches 30000 --psb-period 0 --no-kernel-code|340|"
	"nocode_threads_s12|--seed 12 --branches 20000 --threads 3 --timing cyc --no-kernel-code|100|"
)

for c in "${cases[@]}"; do
	IFS='|' read -r name opts tol chk <<<"$c"
	d="$W/$name"
	if ! "$B/mt-synth" $opts --kernel -o "$d" >"$W/$name.synth" 2>&1; then
		echo "FAIL kernel_truth_$name: mt-synth failed"
		sed 's/^/    /' "$W/$name.synth"
		continue
	fi
	if ! "$B/mt-convert" "$d/raw.bin" -o "$d/trace.pftrace" -q \
		--text "$d/ours.tsv" 2>"$d/err"; then
		echo "FAIL kernel_truth_$name: mt-convert failed"
		sed 's/^/    /' "$d/err" | head -5
		continue
	fi
	truth="$d/truth.tsv"
	if [[ $opts == *--no-kernel-code* ]]; then
		no_kernel_truth "$d/truth.tsv" >"$d/truth-user.tsv"
		truth="$d/truth-user.tsv"
		if [ "$(wc -l <"$d/err")" = 1 ] &&
			grep -q "raw.bin: the kernel was traced but the capture has no kernel code: kernel time shows as \[kernel\]" "$d/err" &&
			[ "$(sqlite3 "$d/trace.sqlite" "SELECT count(*) FROM gap")" = 0 ] &&
			grep -q "	\[kernel\]	" "$d/ours.tsv"; then
			echo "PASS kernel_missing_line_$name"
		else
			echo "FAIL kernel_missing_line_$name"
			sed 's/^/    /' "$d/err" | head -3
		fi
	elif [ -s "$d/err" ]; then
		echo "FAIL kernel_truth_$name: mt-convert said something"
		sed 's/^/    /' "$d/err" | head -3
	fi
	if out=$(ASAN_OPTIONS=detect_leaks=0 "$B/mt-tree-check" "$truth" \
		"$d/ours.tsv" --tol-ns "$tol" $chk 2>&1); then
		echo "PASS kernel_truth_$name (${out//$'\n'/; })"
	else
		echo "FAIL kernel_truth_$name: ${out//$'\n'/; }"
	fi
	[[ $opts == *--no-kernel-code* ]] && continue
	# Kernel frames are the kernel's: their dso says so.
	dsos=$(sqlite3 "$d/trace.sqlite" "SELECT DISTINCT a.display_value
		FROM slice s JOIN args a USING (arg_set_id)
		WHERE a.key = 'debug.dso' AND (s.name IN ('entry_SYSCALL_64',
		'do_syscall_64', 'copy_user_generic') OR s.name LIKE 'ksys_%'
		OR s.name LIKE '__x64_sys_%')" 2>&1)
	if [ "$dsos" = "[kernel.kallsyms]" ]; then
		echo "PASS kernel_dso_$name"
	else
		echo "FAIL kernel_dso_$name: '$dsos'"
	fi
	# perf's decoder, given the same kernel, agrees with the truth.
	timing=mtc
	[[ $opts =~ --timing\ ([a-z]+) ]] && timing=${BASH_REMATCH[1]}
	if ! perf script -i "$d/raw.bin" --itrace=cre --ns --vmlinux "$d/vmlinux" \
		-F tid,time,flags,ip,sym,symoff,addr >"$d/perf.txt" 2>"$d/perf.err"; then
		echo "FAIL kernel_perf_$name: perf script failed"
		sed 's/^/    /' "$d/perf.err" | head -5
	elif out=$(ASAN_OPTIONS=detect_leaks=0 "$B/mt-synth-check" "$d/truth.tsv" \
		"$d/perf.txt" "$d/gaps.tsv" --timing "$timing" --mtc-period 3); then
		echo "PASS kernel_perf_$name (${out//$'\n'/; })"
	else
		echo "FAIL kernel_perf_$name: $out"
	fi
done

# Capturing.  A fake procfs: kallsyms, modules, and a kcore that is an
# ELF core file with one PT_LOAD segment, the kernel's text.
le() { # value bytes: little-endian
	local v=$1 n=$2 i
	for ((i = 0; i < n; i++)); do
		printf "\\x$(printf %02x $(((v >> (8 * i)) & 255)))"
	done
}
make_procfs() {
	local p=$1
	mkdir -p "$p"
	printf '%s\n' "ffffffff81000000 T _stext" \
		"ffffffff81000000 T entry_SYSCALL_64" \
		"ffffffff81000080 t do_syscall_64" \
		"ffffffff81000100 T _etext" \
		"ffffffffc0000000 t ext4_read	[ext4]" >"$p/kallsyms"
	echo "ext4 64 1 - Live 0xffffffffc0000000" >"$p/modules"
	{
		printf '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00'
		le 4 2; le 62 2; le 1 4; le 0 8; le 64 8; le 0 8; le 0 4
		le 64 2; le 56 2; le 2 2; le 0 2; le 0 2; le 0 2
		le 1 4; le 5 4; le 176 8; le 0xffffffff81000000 8; le 0 8
		le 256 8; le 256 8; le 0 8
		le 1 4; le 5 4; le 432 8; le 0xffffffffc0000000 8; le 0 8
		le 64 8; le 64 8; le 0 8
		for ((i = 0; i < 320; i++)); do printf '\xc3'; done
	} >"$p/kcore"
}

. "$R/tests/e2e/fake_pmu.sh"
make_fake_pmu "$W/pmu"
export MT_INTEL_PT_SYSFS="$W/pmu" MT_TEST_SIDEBAND_ONLY=1
if ! cc -O1 -g -pthread -I"$R" -o "$W/stub" "$R/tests/programs/stub.c"; then
	echo "FAIL kernel_capture: cc stub"
	exit 0
fi
cap() { # name procfs -> capture W/name.bin, stderr in W/name.err
	MT_PROC_ROOT=$2 "$B/mt-capture" --timing low --include-kernel \
		-o "$W/$1.bin" -- "$W/stub" >/dev/null 2>"$W/$1.err"
}

make_procfs "$W/proc"
if cap kcore "$W/proc" && ! grep -q "kernel code" "$W/kcore.err" &&
	"$B/mt-convert" --info "$W/kcore.bin" >"$W/kcore.info" 2>&1 &&
	grep -q "kcode   256 bytes at 0xffffffff81000000" "$W/kcore.info" &&
	grep -q "kcode   64 bytes at 0xffffffffc0000000" "$W/kcore.info" &&
	grep -q "kallsyms .* bytes of text" "$W/kcore.info" &&
	grep -q "modules .* bytes of text" "$W/kcore.info"; then
	echo "PASS kernel_capture_kcore"
else
	echo "FAIL kernel_capture_kcore"
	sed 's/^/    /' "$W/kcore.err" "$W/kcore.info" | tail -8
fi

# No kcore (as on this machine), hidden addresses: one line each, and the
# capture is written and converts.
mkdir -p "$W/nokcore" && cp "$W/proc/kallsyms" "$W/proc/modules" "$W/nokcore"
mkdir -p "$W/hidden" && cp "$W/proc/kcore" "$W/hidden" &&
	sed 's/^ffffffff[0-9a-f]*/0000000000000000/' "$W/proc/kallsyms" >"$W/hidden/kallsyms"
for c in "nokcore|$W/nokcore/kcore: No such file or directory: kernel code will show as \[kernel\]" \
	"hidden|$W/hidden/kallsyms: the kernel's addresses are hidden (all zero: kptr_restrict): kernel code will show as \[kernel\]"; do
	name=${c%%|*} want=${c#*|}
	if cap "$name" "$W/$name" && [ "$(grep -c "kernel code" "$W/$name.err")" = 1 ] &&
		grep -q "^mt-capture: $want\$" "$W/$name.err" &&
		"$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" -q 2>/dev/null &&
		! "$B/mt-convert" --info "$W/$name.bin" | grep -q kcode; then
		echo "PASS kernel_capture_$name"
	else
		echo "FAIL kernel_capture_$name"
		sed 's/^/    /' "$W/$name.err" | head -5
	fi
done
