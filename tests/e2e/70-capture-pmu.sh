#!/bin/bash
# SPDX-License-Identifier: MIT
# mt-capture's hardware path up to the PMU: a fake sysfs tree stands in
# for /sys/bus/event_source/devices/intel_pt.
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-pmu.XXXXXX)
trap 'rm -rf "$W"' EXIT

fake() { # dir psb_cyc mtc
	mkdir -p "$1/format" "$1/caps"
	echo 8 >"$1/type"; echo 24 >"$1/max_nonturbo_ratio"
	for f in pt:0 cyc:1 mtc:9 tsc:10 noretcomp:11 branch:13 \
		mtc_period:14-17 cyc_thresh:19-22 psb_period:24-27; do
		echo "config:${f#*:}" >"$1/format/${f%%:*}"
	done
	echo "$2" >"$1/caps/psb_cyc"; echo "$3" >"$1/caps/mtc"
	echo 249 >"$1/caps/mtc_periods"; echo 3fff >"$1/caps/cycle_thresholds"
	echo 3f >"$1/caps/psb_periods"
}

fake "$W/skl" 1 1
if out=$(MT_INTEL_PT_SYSFS="$W/skl" "$B/mt-capture" --check --timing normal) &&
	grep -q 'config for --timing normal: 0x8e603' <<<"$out"; then
	echo "PASS capture_pmu_check"
else
	echo "FAIL capture_pmu_check: $out"
fi
fake "$W/atom" 0 0
if ! MT_INTEL_PT_SYSFS="$W/atom" "$B/mt-capture" --check 2>"$W/err" &&
	[ "$(cat "$W/err")" = "mt-capture: this CPU's Intel PT cannot count cycles (caps/psb_cyc is 0): use --timing low" ]; then
	echo "PASS capture_pmu_refusal"
else
	echo "FAIL capture_pmu_refusal: $(cat "$W/err")"
fi
if ! MT_INTEL_PT_SYSFS="$W/none" "$B/mt-capture" -- true 2>"$W/err" &&
	grep -q 'no intel_pt PMU.*use --emulate' "$W/err" && [ "$(wc -l <"$W/err")" = 1 ]; then
	echo "PASS capture_pmu_missing"
else
	echo "FAIL capture_pmu_missing: $(cat "$W/err")"
fi
