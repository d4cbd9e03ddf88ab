#!/bin/bash
# SPDX-License-Identifier: MIT
# mt_ptwrite() values: mt-capture --emulate --ptwrite records each call's
# value as a PTW packet (perf's decoder reads the same payloads), and
# mt-convert shows them as "ptwrite" instants on the thread's track and
# rows of the ptwrite table, each tied to the call of mt_ptwrite() (by
# work()) it was made in.  Without --ptwrite nothing is recorded.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-ptw.XXXXXX)
trap 'rm -rf "$W"' EXIT

cc -O1 -g -I"$R" -o "$W/ptw" "$R/tests/programs/ptwrite.c" || { echo "FAIL ptwrite: cc"; exit 0; }
want=$(for i in $(seq 0 19); do echo $((i * 1000 + 7)); done)

if ! "$B/mt-capture" --emulate=ptrace --ptwrite -o "$W/raw.bin" -- "$W/ptw" 2>"$W/cap.err"; then
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
. "$MT_ROOT/tests/e2e/pf_decode.sh"
if command -v protoc >/dev/null; then
	got=$(pf_decode <"$W/t.pftrace" 2>/dev/null |
		awk '/uint_value:/ { v = $2 } /name: "ptwrite"/ { print v }')
	if [ "$got" = "$want" ]; then
		echo "PASS ptwrite_perfetto"
	else
		echo "FAIL ptwrite_perfetto: $(echo $got | head -c 200)"
	fi
else
	echo "SKIP ptwrite_perfetto (no protoc)"
fi

# The table: the values in order, each in the call of mt_ptwrite() made
# by work() or long_run().
got=$(sqlite3 "$W/t.sqlite" "SELECT value FROM ptwrite ORDER BY ts, id")
where=$(sqlite3 "$W/t.sqlite" "SELECT count(*) FROM ptwrite w
	JOIN slice s ON s.id = w.slice_id JOIN slice p ON p.id = s.parent_id
	WHERE s.name = 'mt_ptwrite' AND p.name IN ('work', 'long_run')
	AND w.ts BETWEEN s.ts AND s.ts + s.dur")
if [ "$got" = "$want" ] && [ "$where" = 20 ]; then
	echo "PASS ptwrite_sqlite"
else
	echo "FAIL ptwrite_sqlite: $where of 20 in the calls of work and long_run; values $(echo $got | head -c 200)"
fi

# Without --ptwrite: no PTW packet, no instant, and the same call tree
# (a PTWRITE at a function's first instruction keeps the call to it).
"$B/mt-capture" --emulate=ptrace -o "$W/plain.bin" -- "$W/ptw" 2>/dev/null &&
	"$B/mt-convert" "$W/plain.bin" -o "$W/plain.pftrace" --no-compress \
		--text "$W/plain.tsv" -q 2>/dev/null
"$B/mt-convert" "$W/raw.bin" -o "$W/t2.pftrace" --no-sqlite --text "$W/t.tsv" -q 2>/dev/null
if [ -s "$W/plain.tsv" ] && cmp -s <(cut -f2,3 "$W/plain.tsv") <(cut -f2,3 "$W/t.tsv"); then
	echo "PASS ptwrite_same_tree"
else
	echo "FAIL ptwrite_same_tree: the call tree differs with --ptwrite"
	diff <(cut -f2,3 "$W/plain.tsv") <(cut -f2,3 "$W/t.tsv") | head -5 | sed 's/^/    /'
fi
if ! command -v protoc >/dev/null; then
	echo "SKIP ptwrite_off (no protoc)"
elif [ -s "$W/plain.pftrace" ] &&
	! pf_decode <"$W/plain.pftrace" 2>/dev/null |
	grep -q 'name: "ptwrite"'; then
	echo "PASS ptwrite_off"
else
	echo "FAIL ptwrite_off: a ptwrite instant without --ptwrite"
fi
