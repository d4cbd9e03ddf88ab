#!/bin/bash
# mt_ptwrite() values: mt-capture --emulate --ptwrite records each call's
# value as a PTW packet (perf's decoder reads the same payloads), and
# mt-convert shows them as "ptwrite" instants on the thread's track and
# rows of the ptwrite table, each tied to the call of work() it was made
# in.  Without --ptwrite nothing is recorded.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-ptw.XXXXXX)
trap 'rm -rf "$W"' EXIT

cc -O1 -g -I"$R" -o "$W/ptw" "$R/tests/programs/ptwrite.c" || { echo "FAIL ptwrite: cc"; exit 0; }
want=$(for i in $(seq 0 19); do echo $((i * 1000 + 7)); done)

if ! "$B/mt-capture" --emulate --ptwrite -o "$W/raw.bin" -- "$W/ptw" 2>"$W/cap.err"; then
	echo "FAIL ptwrite_capture: $(tail -1 "$W/cap.err")"
	exit 0
fi
echo "PASS ptwrite_capture"

if command -v perf >/dev/null; then
	got=$(perf script -i "$W/raw.bin" --itrace=w -F synth 2>/dev/null |
		sed -n 's/.*payload: \(0x[0-9a-f]*\).*/\1/p' | while read -r v; do echo $((v)); done)
	if [ "$got" = "$want" ]; then
		echo "PASS ptwrite_perf_agrees"
	else
		echo "FAIL ptwrite_perf_agrees: perf read: $(echo $got | head -c 200)"
	fi
else
	echo "SKIP ptwrite_perf_agrees (no perf)"
fi

if ! "$B/mt-convert" "$W/raw.bin" -o "$W/t.pftrace" --no-compress 2>"$W/conv.err"; then
	echo "FAIL ptwrite_convert: $(tail -1 "$W/conv.err")"
	exit 0
fi
if command -v protoc >/dev/null; then
	got=$(protoc --decode=perfetto.protos.Trace -I "$R/tests/proto" \
		"$R/tests/proto/perfetto_subset.proto" <"$W/t.pftrace" 2>/dev/null |
		awk '/uint_value:/ { v = $2 } /name: "ptwrite"/ { print v }')
	if [ "$got" = "$want" ]; then
		echo "PASS ptwrite_perfetto"
	else
		echo "FAIL ptwrite_perfetto: $(echo $got | head -c 200)"
	fi
else
	echo "SKIP ptwrite_perfetto (no protoc)"
fi

# Without --ptwrite: no PTW packet, no instant.
"$B/mt-capture" --emulate -o "$W/plain.bin" -- "$W/ptw" 2>/dev/null &&
	"$B/mt-convert" "$W/plain.bin" -o "$W/plain.pftrace" --no-compress -q 2>/dev/null
if ! command -v protoc >/dev/null; then
	echo "SKIP ptwrite_off (no protoc)"
elif [ -s "$W/plain.pftrace" ] && ! protoc --decode=perfetto.protos.Trace \
	-I "$R/tests/proto" "$R/tests/proto/perfetto_subset.proto" \
	<"$W/plain.pftrace" 2>/dev/null | grep -q 'name: "ptwrite"'; then
	echo "PASS ptwrite_off"
else
	echo "FAIL ptwrite_off: a ptwrite instant without --ptwrite"
fi
