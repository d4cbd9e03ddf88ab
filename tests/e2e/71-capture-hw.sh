#!/bin/bash
# SPDX-License-Identifier: MIT
# The Intel PT backend on a machine without Intel PT: a fake sysfs tree
# describes the software PMU (type 1) with its config bits laid out so
# that the config is the dummy event, and MT_TEST_SIDEBAND_ONLY maps no
# AUX area.  Everything but the trace itself runs for real: launching
# and attaching, one event per thread (new threads found as they come)
# or per CPU, the sideband, the trigger on the stub with its hits (tid,
# argument), Ctrl-C, and every refusal in one line.
R=${MT_ROOT:?}
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-hw.XXXXXX)
trap 'kill $LOOP 2>/dev/null; rm -rf "$W"' EXIT
LOOP=

. "$R/tests/e2e/fake_pmu.sh"
make_fake_pmu "$W/pmu"
export MT_INTEL_PT_SYSFS="$W/pmu" MT_TEST_SIDEBAND_ONLY=1
cap() { "$B/mt-capture" --timing low "$@"; }
for p in stub spawn loop; do
	cc -O1 -g -pthread -I"$R" -o "$W/$p" "$R/tests/programs/$p.c" ||
		{ echo "FAIL capture_hw: cc $p"; exit 0; }
done
info() { "$B/mt-convert" --info "$1"; }
hits() { # capture -> "tid|arg" per hit, in time order
	"$B/mt-convert" "$1" -o "$1.pftrace" -q >/dev/null 2>&1 &&
		sqlite3 "${1}.sqlite" "SELECT tid, arg FROM hit ORDER BY ts" 2>/dev/null
}

# The stub: one hit, its argument, from the main thread; the program's
# own mappings and name came through the sideband.
if cap -o "$W/stub.bin" -- "$W/stub" >/dev/null 2>"$W/stub.err" &&
	h=$(hits "$W/stub.bin") && pid=${h%|*} && [ "${h#*|}" = 19 ] &&
	info "$W/stub.bin" | grep -q "pid $pid *tid $pid *stub (exec)" &&
	info "$W/stub.bin" | grep -Eq "pgoff .* $W/stub( build id [0-9a-f]+)?\$"; then
	echo "PASS capture_hw_stub_hit"
else
	echo "FAIL capture_hw_stub_hit: '$h'"; sed 's/^/    /' "$W/stub.err"
fi

# The stack at the hit, unwound from the sample's registers and stack
# copy: the stub, main and libc's start code at least.
if info "$W/stub.bin" | grep -Eq "stack +tid [0-9]+ +([3-9]|[1-9][0-9]+) frames"; then
	echo "PASS capture_hw_unwound_stack"
else
	echo "FAIL capture_hw_unwound_stack"; info "$W/stub.bin" | grep -A4 extras | sed 's/^/    /'
fi

# Build ids: the executable's, mapped at the start, and libc's, which the
# kernel's MMAP2 record announced afterwards.
if info "$W/stub.bin" | grep -q "$W/stub build id [0-9a-f]" &&
	info "$W/stub.bin" | grep -q "libc[.-].* build id [0-9a-f]"; then
	echo "PASS capture_hw_buildids"
else
	echo "FAIL capture_hw_buildids"; info "$W/stub.bin" | grep pgoff | sed 's/^/    /'
fi

# Threads created late: per thread they are found and get the trigger;
# per CPU they inherit it (a uprobe, where breakpoints never fire, is
# per thread either way).  Every hit keeps its own thread and argument.
for mode in per-thread per-cpu; do
	opt=; [ $mode = per-cpu ] && opt=--per-cpu
	if cap $opt --multi-snapshot -o "$W/sp.bin" -- "$W/spawn" >/dev/null \
		2>"$W/sp.err" && h=$(hits "$W/sp.bin") &&
		[ "$(cut -d'|' -f2 <<<"$h" | sort -n | tr '\n' ' ')" = "1 100 101 102 " ] &&
		[ "$(cut -d'|' -f1 <<<"$h" | sort -u | wc -l)" = 4 ]; then
		echo "PASS capture_hw_threads_$mode"
	else
		echo "FAIL capture_hw_threads_$mode: '$h'"; sed 's/^/    /' "$W/sp.err"
	fi
done
if cap --multi-snapshot -o "$W/sp.bin" -- "$W/spawn" 2>&1 >/dev/null |
	grep -q ': 4 threads,'; then
	echo "PASS capture_hw_thread_events (one event per thread, new ones too)"
else
	echo "FAIL capture_hw_thread_events"
fi

# Attach, Ctrl-C, let go: the program runs on; what happened before the
# attach (its name, its mappings) comes from /proc.
for mode in per-thread per-cpu; do
	opt=; [ $mode = per-cpu ] && opt=--per-cpu
	"$W/loop" & LOOP=$!
	sleep 0.2
	"$B/mt-capture" --timing low $opt -o "$W/at.bin" -p $LOOP >/dev/null \
		2>"$W/at.err" & C=$!
	# Ctrl-C once its events are open.
	for _ in $(seq 100); do
		ls -l /proc/$C/fd 2>/dev/null | grep -q perf_event && break
		sleep 0.05
	done
	sleep 0.2
	kill -INT $C; wait $C; rc=$?
	if [ $rc = 0 ] && kill -0 $LOOP 2>/dev/null &&
		info "$W/at.bin" | grep -q "tid $LOOP *loop" &&
		info "$W/at.bin" | grep -Eq "pgoff .* $W/loop( build id [0-9a-f]+)?\$" &&
		! info "$W/at.bin" | grep -q vsyscall; then
		echo "PASS capture_hw_attach_$mode"
	else
		echo "FAIL capture_hw_attach_$mode: rc $rc"; sed 's/^/    /' "$W/at.err"
	fi
	kill $LOOP; wait $LOOP 2>/dev/null; LOOP=
done

# --full: the non-snapshot loop runs and the capture says so.
if cap --full -o "$W/full.bin" -- "$W/stub" >/dev/null 2>"$W/full.err" &&
	info "$W/full.bin" | grep -q 'mode .*full'; then
	echo "PASS capture_hw_full"
else
	echo "FAIL capture_hw_full: $(info "$W/full.bin" | grep mode)"; sed 's/^/    /' "$W/full.err"
fi

# Refusals: one line each, a non-zero exit, no program left behind.
refuse() { # name expected-line args... (--timing low added unless the
	# args speak of timing)
	local name=$1 want=$2 t=(--timing low); shift 2
	[[ " $* " == *" --timing"* ]] && t=()
	if "$B/mt-capture" "${t[@]}" "$@" >/dev/null 2>"$W/r.err"; then
		echo "FAIL capture_hw_refuse_$name: accepted"
	elif [ "$(cat "$W/r.err")" = "$want" ]; then
		echo "PASS capture_hw_refuse_$name"
	else
		echo "FAIL capture_hw_refuse_$name: $(cat "$W/r.err")"
		echo "    wanted: $want"
	fi
}
refuse missing_prog "mt-capture: $W/nonexistent: No such file or directory" \
	-- "$W/nonexistent"
refuse no_pid "mt-capture: -p 999999999: no such process" -p 999999999
refuse bad_pid "mt-capture: -p wants a process id, not '12x'" -p 12x
refuse trigger "mt-capture: $W/stub: no symbol 'nosuch'" --trigger nosuch -- "$W/stub"
refuse stop_no_trigger "mt-capture: --stop-at-trigger: $W/loop has no mt_snapshot_point; name one with --trigger" \
	--stop-at-trigger -- "$W/loop"
refuse filter_syntax "mt-capture: --filter: 'main' is not START-STOP@FILE" --filter main -- "$W/stub"
refuse filter_ranges "mt-capture: 3 address ranges asked for, this CPU's Intel PT has 2 (caps/num_address_ranges)" \
	--filter "main@$W/stub,main@$W/stub,main@$W/stub" -- "$W/stub"
refuse filter_ranges_stop "mt-capture: 3 address ranges asked for, this CPU's Intel PT has 2 (caps/num_address_ranges)" \
	--stop-at-trigger --filter "main@$W/stub,main@$W/stub" -- "$W/stub"
refuse custom_field "mt-capture: --timing-custom: unknown field 'cycles' (tsc, mtc, cyc, noretcomp, mtc_period, cyc_thresh, psb_period)" \
	--timing-custom cycles=1 -- "$W/stub"
refuse custom_caps "mt-capture: this CPU's Intel PT cannot count cycles (caps/psb_cyc is 0): use --timing low" \
	--timing-custom tsc=1,cyc=1 -- "$W/stub"
refuse custom_and_timing "mt-capture: --timing and --timing-custom: one or the other" \
	--timing high --timing-custom tsc=1 -- "$W/stub"
echo 2 >"$W/paranoid"
if [ "$(id -u)" != 0 ]; then
	MT_PERF_EVENT_PARANOID="$W/paranoid" refuse kernel \
		"mt-capture: --include-kernel: $W/paranoid is 2 (kernel tracing needs 1 or less) and this process lacks CAP_PERFMON: run as root, or lower it" \
		--timing low --include-kernel -- "$W/stub"
elif command -v setpriv >/dev/null; then
	chmod -R a+rX "$W"
	if MT_PERF_EVENT_PARANOID="$W/paranoid" setpriv --reuid=65534 --regid=65534 \
		--clear-groups --inh-caps=-all --bounding-set=-all \
		"$B/mt-capture" --timing low --include-kernel -- /bin/true 2>"$W/k.err"; then
		echo "FAIL capture_hw_refuse_kernel: accepted"
	elif [ "$(cat "$W/k.err")" = "mt-capture: --include-kernel: $W/paranoid is 2 (kernel tracing needs 1 or less) and this process lacks CAP_PERFMON: run as root, or lower it" ]; then
		echo "PASS capture_hw_refuse_kernel"
	else
		echo "FAIL capture_hw_refuse_kernel: $(cat "$W/k.err")"
	fi
else
	echo "SKIP capture_hw_refuse_kernel (root, and no setpriv to drop it)"
fi
refuse emu_only "mt-capture: --truth needs --emulate" --truth x -- "$W/stub"
refuse hw_only "mt-capture: --per-cpu is for the Intel PT backend, not --emulate" \
	--emulate --per-cpu -- "$W/stub"
refuse full_multi "mt-capture: --full keeps everything already; --multi-snapshot is for the ring" \
	--full --multi-snapshot -- "$W/stub"
# The kernel refuses an address filter on this stand-in: said in one line.
if ! cap --filter "main@$W/stub" -o "$W/f.bin" -- "$W/stub" >/dev/null 2>"$W/f.err" &&
	[ "$(wc -l <"$W/f.err")" = 1 ] && grep -q "address filter 'filter 0x.*@$W/stub'" "$W/f.err" &&
	! pgrep -f "^$W/stub" >/dev/null; then
	echo "PASS capture_hw_filter_refused_by_kernel"
else
	echo "FAIL capture_hw_filter_refused_by_kernel: $(cat "$W/f.err")"
fi
# --check: the custom config and what the caps say.
if out=$("$B/mt-capture" --check --timing-custom tsc=1,noretcomp=1) &&
	grep -q 'config for --timing tsc=1,noretcomp=1: 0x40000000009' <<<"$out" &&
	grep -q 'address ranges 2' <<<"$out"; then
	echo "PASS capture_hw_check_custom"
else
	echo "FAIL capture_hw_check_custom: $out"
fi
