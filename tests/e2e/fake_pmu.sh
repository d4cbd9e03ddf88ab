# SPDX-License-Identifier: MIT
# Sourced by the hardware-backend tests: make_fake_pmu DIR writes a fake
# sysfs tree for intel_pt into DIR, under which a software event stands
# in for the PMU on a machine without Intel PT (MT_INTEL_PT_SYSFS=DIR).
# pt|branch = bit 0|bit 3 = 9 = PERF_COUNT_SW_DUMMY; tsc shares bit 0.
make_fake_pmu() {
	local d=$1 f
	mkdir -p "$d/format" "$d/caps"
	echo 1 >"$d/type"; echo 24 >"$d/max_nonturbo_ratio"
	for f in pt:0 branch:3 tsc:0 cyc:40 mtc:41 noretcomp:42 mtc_period:44-47 \
		cyc_thresh:48-51 psb_period:52-55; do
		echo "config:${f#*:}" >"$d/format/${f%%:*}"
	done
	echo 0 >"$d/caps/psb_cyc"; echo 0 >"$d/caps/mtc"
	echo 1 >"$d/caps/ip_filtering"; echo 2 >"$d/caps/num_address_ranges"
}
