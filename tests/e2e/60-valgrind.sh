#!/bin/bash
# SPDX-License-Identifier: MIT
# valgrind on the release binaries (the sanitizer build cannot run under
# it): no invalid access, no leak, for a conversion and an emulated
# capture.
R=${MT_ROOT:?}
B=$R/build/bin
W=$(mktemp -d /tmp/mt-e2e-vg.XXXXXX)
trap 'rm -rf "$W"' EXIT
if ! command -v valgrind >/dev/null || [ ! -x "$B/mt-convert" ]; then
	echo "SKIP valgrind (no valgrind, or no release build in build/bin)"
	exit 0
fi
vg() { valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$@"; }

"$B/mt-synth" --seed 7 --branches 20000 --threads 2 --gap-every 4000 \
	--final-stack --start-depth 3 -o "$W/s" >/dev/null
if vg "$B/mt-convert" "$W/s/raw.bin" -o "$W/t.pftrace" --text "$W/t.tsv" -q \
	2>"$W/conv.err"; then
	echo "PASS valgrind_convert"
else
	echo "FAIL valgrind_convert"; tail -20 "$W/conv.err" | sed 's/^/    /'
fi
cc -O1 -o "$W/clock" "$R/tests/programs/clock.c"
if vg "$B/mt-capture" --emulate=ptrace -o "$W/c.bin" -- "$W/clock" >/dev/null \
	2>"$W/cap.err"; then
	echo "PASS valgrind_capture"
else
	echo "FAIL valgrind_capture"; tail -20 "$W/cap.err" | sed 's/^/    /'
fi
# A FILE:LINE trigger deep in a call chain: the line tables and the
# unwinder (libdw) run too.
cc -O1 -g -o "$W/deep" "$R/tests/programs/deep.c"
line=$(grep -n MARK_LINE "$R/tests/programs/deep.c" | cut -d: -f1)
if vg "$B/mt-capture" --emulate=ptrace --start-at work --trigger "deep.c:$line" \
	-o "$W/d.bin" -- "$W/deep" >/dev/null 2>"$W/unw.err" &&
	! grep -q 'unwinding failed' "$W/unw.err"; then
	echo "PASS valgrind_capture_unwind"
else
	echo "FAIL valgrind_capture_unwind"; tail -20 "$W/unw.err" | sed 's/^/    /'
fi
# The hardware backend's path on a machine without Intel PT (as in
# 71-capture-hw.sh: a software event stands in, no AUX area): events per
# thread for threads that come late, the trigger and its hits.
mkdir -p "$W/pmu/format" "$W/pmu/caps"
echo 1 >"$W/pmu/type"; echo 24 >"$W/pmu/max_nonturbo_ratio"
for f in pt:0 branch:3 tsc:0; do echo "config:${f#*:}" >"$W/pmu/format/${f%%:*}"; done
echo 0 >"$W/pmu/caps/psb_cyc"; echo 0 >"$W/pmu/caps/mtc"
cc -O1 -pthread -I"$R" -o "$W/spawn" "$R/tests/programs/spawn.c"
if MT_INTEL_PT_SYSFS="$W/pmu" MT_TEST_SIDEBAND_ONLY=1 vg "$B/mt-capture" \
	--timing low --multi-snapshot -o "$W/hw.bin" -- "$W/spawn" >/dev/null \
	2>"$W/hw.err"; then
	echo "PASS valgrind_capture_hw"
else
	echo "FAIL valgrind_capture_hw"; tail -20 "$W/hw.err" | sed 's/^/    /'
fi
