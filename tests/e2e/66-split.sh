#!/bin/bash
# SPDX-License-Identifier: MIT
# mt-convert --split N: the Perfetto trace in parts of at most N slices.
#  - on the demo and on a 4-thread synthetic capture, each part loads in
#    trace_processor on its own, holds at most N slices (the stacks
#    carried over included), and the parts' slices, the pieces of a
#    slice cut at a part's start joined again, are the unsplit trace's;
#  - a trace above the UI's limit says so in one line (MT_UI_SLICES
#    stands in for the limit), and bad values are refused.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-split66.XXXXXX)
trap 'rm -rf "$W"' EXIT
tps=${MT_SHARED:-$R/../shared}/tools/perfetto/trace_processor_shell

# Each thread's slices as trace_processor reads them: tid, ts, dur,
# depth, name and the inferred flags, one "|"-separated line each.  A
# slice deeper than Perfetto's 512 levels is on a track "NAME (depth
# 512+)" at a depth counted from there: its true depth is put back.
tp_rows() {
	"$tps" query "$1" "SELECT t.tid || '|' || s.ts || '|' || s.dur || '|'
		|| (s.depth + CASE WHEN tt.name LIKE '%(depth %+)'
			THEN CAST(substr(tt.name, instr(tt.name, '(depth ') + 7)
			AS INT) ELSE 0 END)
		|| '|' || s.name || '|'
		|| coalesce(extract_arg(s.arg_set_id, 'debug.inferred_start'), 0)
		|| '|'
		|| coalesce(extract_arg(s.arg_set_id, 'debug.inferred_end'), 0)
		AS r
		FROM slice s JOIN thread_track tt ON s.track_id = tt.id
		JOIN thread t USING (utid)" 2>"$1.tperr" | tail -n +2 | tr -d '"'
}

# split_equal NAME CAPTURE N
split_equal() {
	local name=$1 cap=$2 max=$3 d=$W/$1 k=0 over=0 bad=0 f
	if ! "$B/mt-convert" -q "$cap" -o "$d.pftrace" --no-sqlite 2>"$d.err" ||
		! "$B/mt-convert" -q "$cap" -o "$d-part.pftrace" --no-sqlite \
			--split "$max" 2>>"$d.err" ||
		[ -e "$d-part.pftrace" ]; then
		echo "FAIL split_$name: conversion failed, or the whole trace" \
			"was written besides the parts"
		tail -3 "$d.err" | sed 's/^/    /'
		return
	fi
	tp_rows "$d.pftrace" | sort >"$d.whole"
	: >"$d.parts"
	for f in "$d"-part.*.pftrace; do
		k=$((k + 1))
		[ -e "$d-part.$k.pftrace" ] || bad=1
		tp_rows "$d-part.$k.pftrace" >"$d.p$k" || bad=1
		[ -s "$d-part.$k.pftrace.tperr" ] &&
			grep -qi 'error' "$d-part.$k.pftrace.tperr" && bad=1
		[ "$(wc -l <"$d.p$k")" -gt "$max" ] && over=1
		sed "s/^/$k|/" "$d.p$k" >>"$d.parts"
	done
	# Join the pieces: one ending (inferred) where the next part begins
	# and one beginning (inferred) there, same thread, depth and name.
	awk -F'|' -v OFS='|' '
	NR == FNR { if (!($1 in cut) || $3 < cut[$1]) cut[$1] = $3; next }
	{ key = $2 "|" $5 "|" $6
	  if (have && key == pkey && $1 == pp + 1 && $3 == cut[$1] &&
	      pts + pdur == $3 && pie == 1 && $7 == 1) {
		pdur += $4; pp = $1; pie = $8; next }
	  if (have) out()
	  have = 1; pkey = key; pp = $1; ptid = $2; pts = $3; pdur = $4
	  pdepth = $5; pname = $6; pis = $7; pie = $8 }
	END { if (have) out() }
	# a sum past 2^31 in full, not as 2.2e+09
	function out() { printf "%s|%s|%.0f|%s|%s|%s|%s\n", ptid, pts, pdur,
		pdepth, pname, pis, pie }' \
		"$d.parts" <(sort -t'|' -k2,2n -k5,5n -k6,6 -k3,3n -k1,1n \
			"$d.parts") | sort >"$d.joined"
	if [ "$bad" = 0 ] && [ "$over" = 0 ] && [ "$k" -gt 2 ] &&
		[ -s "$d.whole" ] && cmp -s "$d.whole" "$d.joined"; then
		echo "PASS split_$name ($k parts of at most $max slices, each" \
			"loaded, together the $(wc -l <"$d.whole") slices of the" \
			"whole)"
	else
		echo "FAIL split_$name: $k parts, load errors $bad, over $max" \
			"$over, $(diff "$d.whole" "$d.joined" | grep -c '^[<>]')" \
			"lines differ"
		diff "$d.whole" "$d.joined" | head -6 | sed 's/^/    /'
	fi
}

if ! "$tps" --version >/dev/null 2>&1; then
	echo "SKIP split (no runnable trace_processor_shell in ../shared/tools/perfetto)"
else
	cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" &&
		"$B/mt-capture" --emulate=ptrace -o "$W/demo.bin" -- "$W/demo" \
			>/dev/null 2>&1 ||
		echo "FAIL split_demo: capture"
	[ -s "$W/demo.bin" ] && split_equal demo "$W/demo.bin" 1000
	"$B/mt-synth" --seed 12 --branches 20000 --threads 4 --no-deep \
		-o "$W/s4" >/dev/null 2>&1 || echo "FAIL split_threads: mt-synth"
	[ -s "$W/s4/raw.bin" ] && split_equal threads "$W/s4/raw.bin" 2500
fi

# The warning, and what --split refuses.
"$B/mt-synth" --seed 12 --branches 20000 -o "$W/s1" >/dev/null 2>&1
MT_UI_SLICES=100 "$B/mt-convert" -q "$W/s1/raw.bin" -o "$W/w.pftrace" \
	--no-sqlite 2>"$W/w.err"
if [ "$(wc -l <"$W/w.err")" = 1 ] && grep -q -- '--split 100' "$W/w.err" &&
	grep -q 'trace_processor --httpd' "$W/w.err" && [ -s "$W/w.pftrace" ]; then
	echo "PASS split_warning (one line: $(cut -c1-60 "$W/w.err")...)"
else
	echo "FAIL split_warning: $(head -3 "$W/w.err")"
fi
"$B/mt-convert" -q "$W/s1/raw.bin" -o "$W/w.pftrace" --no-sqlite 2>"$W/w.err"
[ -s "$W/w.err" ] && echo "FAIL split_no_warning: $(head -1 "$W/w.err")"
ok=1
for c in "2|--split 0" "2|--split x" "2|--split" "1|--split 3"; do
	want=${c%%|*}
	# shellcheck disable=SC2086
	"$B/mt-convert" -q "$W/s1/raw.bin" -o "$W/e.pftrace" --no-sqlite \
		${c#*|} >/dev/null 2>"$W/e.err"
	rc=$?
	if [ $rc != "$want" ] || [ "$(wc -l <"$W/e.err")" != 1 ] ||
		ls "$W"/e.* 2>/dev/null | grep -q pftrace; then
		echo "FAIL split_errors: ${c#*|}: exit $rc (want $want)," \
			"$(head -2 "$W/e.err")"
		ok=0
	fi
done
"$B/mt-convert" -q "$W/s1/raw.bin" --text "$W/x.txt" --split 5 2>"$W/e.err"
rc=$?
[ $rc = 2 ] || { echo "FAIL split_errors: --split without -o: exit $rc"; ok=0; }
[ $ok = 1 ] && echo "PASS split_errors (0, not a number, missing, too few" \
	"for the stack, no -o: one line each, nothing written)"
exit 0
