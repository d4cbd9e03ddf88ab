#!/bin/bash
# SPDX-License-Identifier: MIT
# What each function cost: the tables function and caller, and
# mt-report.
#  - on the demo (examples/demo.c, captured with --emulate=ptrace), on a
#    4-thread synthetic capture and on a window of it cut by mt-convert
#    --time (inferred slices), every figure of function and caller
#    equals the same figure computed by plain SQL over slice;
#  - mt-report reads a database without those tables (one written
#    before them) to the same figures, and a --time region of a whole
#    trace to the figures of mt-convert --time's;
#  - --compare of the demo's request 7 against request 6 names fib,
#    the function that made 7 slow, first;
#  - --folded is "frame;frame;... N", its weights the self times;
#  - --function's histogram counts every whole call, --slowest gives
#    the longest calls with their stacks;
#  - bad input is one line and a non-zero exit.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-rep65.XXXXXX)
trap 'rm -rf "$W"' EXIT

if ! command -v sqlite3 >/dev/null; then
	echo "SKIP report (no sqlite3)"
	exit 0
fi

# The figures of function and caller, then the same by plain SQL: 0 rows
# each way when they agree.  A slice's self time is its dur less its
# children's; the percentiles (nearest rank) are of the slices with
# neither end inferred.
SQL_FN="WITH s AS (SELECT s.name, s.dso, s.inlined, s.dur,
	(s.inferred_start OR s.inferred_end) AS inf,
	s.dur - coalesce((SELECT sum(c.dur) FROM slice c
		WHERE c.parent_id = s.id), 0) AS self FROM slice s),
 w AS (SELECT name, dso, inlined, dur, row_number() OVER (PARTITION BY
	name, dso, inlined ORDER BY dur) AS rn, count(*) OVER (PARTITION BY
	name, dso, inlined) AS n FROM s WHERE NOT inf),
 p AS (SELECT name, dso, inlined,
	max(CASE WHEN rn = (50 * n + 99) / 100 THEN dur END) AS p50,
	max(CASE WHEN rn = (90 * n + 99) / 100 THEN dur END) AS p90,
	max(CASE WHEN rn = (99 * n + 99) / 100 THEN dur END) AS p99,
	max(dur) AS mx FROM w GROUP BY 1, 2, 3)
 SELECT s.name, s.dso, s.inlined, count(*), sum(inf), sum(dur), sum(self),
	sum(CASE WHEN inf THEN dur ELSE 0 END), p.p50, p.p90, p.p99, p.mx
 FROM s LEFT JOIN p ON p.name IS s.name AND p.dso IS s.dso
	AND p.inlined = s.inlined GROUP BY s.name, s.dso, s.inlined"
TAB_FN="SELECT name, dso, inlined, calls, inferred, total_dur, self_dur,
	inferred_dur, p50_dur, p90_dur, p99_dur, max_dur FROM function"
SQL_CALLER="WITH s AS (SELECT s.id, s.parent_id, s.name, s.dso, s.inlined,
	s.dur, (s.inferred_start OR s.inferred_end) AS inf,
	s.dur - coalesce((SELECT sum(c.dur) FROM slice c
		WHERE c.parent_id = s.id), 0) AS self FROM slice s),
 e AS (SELECT p.name AS pn, p.dso AS pd, p.inlined AS pi, s.* FROM s
	JOIN slice p ON p.id = s.parent_id),
 w AS (SELECT pn, pd, pi, name, dso, inlined, dur, row_number() OVER
	(PARTITION BY pn, pd, pi, name, dso, inlined ORDER BY dur) AS rn,
	count(*) OVER (PARTITION BY pn, pd, pi, name, dso, inlined) AS n
	FROM e WHERE NOT inf),
 p AS (SELECT pn, pd, pi, name, dso, inlined,
	max(CASE WHEN rn = (50 * n + 99) / 100 THEN dur END) AS p50,
	max(CASE WHEN rn = (90 * n + 99) / 100 THEN dur END) AS p90,
	max(CASE WHEN rn = (99 * n + 99) / 100 THEN dur END) AS p99,
	max(dur) AS mx FROM w GROUP BY 1, 2, 3, 4, 5, 6)
 SELECT e.pn, e.pd, e.pi, e.name, e.dso, e.inlined, count(*), sum(inf),
	sum(dur), sum(self), sum(CASE WHEN inf THEN dur ELSE 0 END), p.p50,
	p.p90, p.p99, p.mx
 FROM e LEFT JOIN p ON p.pn IS e.pn AND p.pd IS e.pd AND p.pi = e.pi
	AND p.name IS e.name AND p.dso IS e.dso AND p.inlined = e.inlined
 GROUP BY e.pn, e.pd, e.pi, e.name, e.dso, e.inlined"
TAB_CALLER="SELECT a.name, a.dso, a.inlined, b.name, b.dso, b.inlined,
	c.calls, c.inferred, c.total_dur, c.self_dur, c.inferred_dur,
	c.p50_dur, c.p90_dur, c.p99_dur, c.max_dur FROM caller c
	JOIN function a ON a.id = c.caller_id
	JOIN function b ON b.id = c.callee_id"

# sql_equal NAME DB: the tables against the queries.
sql_equal() {
	local name=$1 db=$2 out
	out=$(sqlite3 "$db" "SELECT
	 (SELECT count(*) FROM (SELECT * FROM ($SQL_FN)
		EXCEPT SELECT * FROM ($TAB_FN))),
	 (SELECT count(*) FROM (SELECT * FROM ($TAB_FN)
		EXCEPT SELECT * FROM ($SQL_FN))),
	 (SELECT count(*) FROM (SELECT * FROM ($SQL_CALLER)
		EXCEPT SELECT * FROM ($TAB_CALLER))),
	 (SELECT count(*) FROM (SELECT * FROM ($TAB_CALLER)
		EXCEPT SELECT * FROM ($SQL_CALLER))),
	 (SELECT count(*) FROM (SELECT function_id, sum(calls) AS c,
		sum(total_dur) AS t, sum(self_dur) AS s FROM call_path
		GROUP BY 1) x JOIN function f ON f.id = x.function_id
		WHERE x.c != f.calls OR x.t != f.total_dur
		OR x.s != f.self_dur),
	 (SELECT count(*) FROM call_path c JOIN call_path p
		ON p.id = c.parent_id WHERE p.id >= c.id),
	 (SELECT count(*) FROM function), (SELECT count(*) FROM caller),
	 (SELECT sum(inferred) FROM function)" 2>&1)
	case $out in
	0\|0\|0\|0\|0\|0\|*)
		IFS='|' read -r _ _ _ _ _ _ nf nc ni <<<"$out"
		if [ "$nf" -gt 0 ] && [ "$nc" -gt 0 ]; then
			echo "PASS report_sql_$name ($nf functions, $nc pairs," \
				"$ni inferred calls: equal to SQL over slice)"
			return
		fi ;;
	esac
	echo "FAIL report_sql_$name: rows that differ (function both ways," \
		"caller both ways, call_path against function, call_path" \
		"order, counts): $out"
}

# The demo, captured by single-stepping whatever the default backend.
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" ||
	{ echo "FAIL report: cc"; exit 0; }
if ! "$B/mt-capture" --emulate=ptrace -o "$W/demo.bin" -- "$W/demo" \
	>/dev/null 2>"$W/cap.err" ||
	! "$B/mt-convert" -q "$W/demo.bin" -o "$W/demo.pftrace" 2>"$W/conv.err"; then
	echo "FAIL report: capturing or converting the demo failed"
	tail -3 "$W/cap.err" "$W/conv.err" | sed 's/^/    /'
	exit 0
fi
demo=$W/demo.sqlite
sql_equal demo "$demo"

"$B/mt-synth" --seed 12 --branches 20000 --threads 4 -o "$W/s4" >/dev/null &&
	"$B/mt-convert" -q "$W/s4/raw.bin" -o "$W/s4.pftrace" &&
	"$B/mt-convert" -q "$W/s4/raw.bin" -o "$W/s4cut.pftrace" \
		--time 20us..60us ||
	{ echo "FAIL report: the synthetic capture"; exit 0; }
sql_equal threads "$W/s4.sqlite"
sql_equal clipped "$W/s4cut.sqlite"

# A database without the tables: mt-report sums slice_raw itself, to
# the same figures, histograms, folded stacks and slowest calls.
cp "$W/s4.sqlite" "$W/old.sqlite"
sqlite3 "$W/old.sqlite" "DROP TABLE caller; DROP TABLE function;
	DROP TABLE call_path; DROP TABLE slowest"
top=$(sqlite3 "$W/s4.sqlite" "SELECT name FROM function
	ORDER BY self_dur DESC LIMIT 1")
for q in "--csv" "--csv --function $top" "--folded" "--csv --slowest 20" \
	"--csv --slowest 5 --function $top"; do
	# shellcheck disable=SC2086
	a=$("$B/mt-report" $q "$W/s4.sqlite" 2>&1)
	# shellcheck disable=SC2086
	b=$("$B/mt-report" $q "$W/old.sqlite" 2>&1)
	if [ -z "$a" ] || [ "$a" != "$b" ] || [ "$(wc -l <<<"$a")" -lt 5 ]; then
		echo "FAIL report_old_database: mt-report $q:" \
			"$(diff <(echo "$a") <(echo "$b") | head -4)"
		a=
		break
	fi
done
[ -n "$a" ] && echo "PASS report_old_database (figures, $top's histogram," \
	"the folded stacks and the slowest calls the same without the tables)"

# A window of the whole trace: the figures of mt-convert --time's.
a=$("$B/mt-report" --csv --time 20us..60us "$W/s4.sqlite" 2>&1 | sort)
b=$("$B/mt-report" --csv "$W/s4cut.sqlite" 2>&1 | sort)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
	echo "PASS report_time_region (--time 20us..60us: the figures of" \
		"mt-convert --time)"
else
	echo "FAIL report_time_region: $(diff <(echo "$a") <(echo "$b") | head -6)"
fi

# Why was request 7 slow: its call of handle_request is the last one
# (the snapshot follows it), request 6's the one before.
last=$(sqlite3 "$demo" "SELECT arg FROM hit")
first=$("$B/mt-report" --compare --csv --between 'handle_request#-2' \
	--between 'handle_request#-1' "$demo" 2>&1 | sed -n 2p | cut -d, -f1)
if [ "$last" = 7 ] && [ "$first" = fib ]; then
	echo "PASS report_compare_request7 (request 7 against 6: fib first)"
else
	echo "FAIL report_compare_request7: hit $last, first row $first"
	"$B/mt-report" --compare --between 'handle_request#-2' \
		--between 'handle_request#-1' "$demo" 2>&1 | head -8 |
		sed 's/^/    /'
fi
# Two databases: the same question.
t6=$(sqlite3 "$demo" "SELECT ts - (SELECT min(ts) FROM slice) FROM slice
	WHERE name = 'handle_request' ORDER BY ts DESC LIMIT 1 OFFSET 1")
d6=$(sqlite3 "$demo" "SELECT dur FROM slice WHERE name = 'handle_request'
	ORDER BY ts DESC LIMIT 1 OFFSET 1")
t7=$(sqlite3 "$demo" "SELECT ts - (SELECT min(ts) FROM slice) FROM slice
	WHERE name = 'handle_request' ORDER BY ts DESC LIMIT 1")
d7=$(sqlite3 "$demo" "SELECT dur FROM slice WHERE name = 'handle_request'
	ORDER BY ts DESC LIMIT 1")
"$B/mt-convert" -q "$W/demo.bin" -o "$W/r6.pftrace" \
	--time "$t6..$((t6 + d6))" 2>/dev/null &&
	"$B/mt-convert" -q "$W/demo.bin" -o "$W/r7.pftrace" \
		--time "$t7..$((t7 + d7))" 2>/dev/null
first=$("$B/mt-report" --compare --csv "$W/r6.sqlite" "$W/r7.sqlite" 2>&1 |
	sed -n 2p | cut -d, -f1)
if [ "$first" = fib ]; then
	echo "PASS report_compare_databases (request 6's and 7's windows" \
		"converted apart: fib first)"
else
	echo "FAIL report_compare_databases: first row $first"
fi

# Folded stacks: every line "a;b;c N", the weights summing to the self
# times (none is negative in these traces).
"$B/mt-report" --folded "$demo" >"$W/demo.folded" 2>"$W/fold.err"
bad=$(grep -cvE '^[^;]+(;[^;]+)* [0-9]+$' "$W/demo.folded")
sum=$(awk '{s += $NF} END {printf "%.0f\n", s}' "$W/demo.folded")
want=$(sqlite3 "$demo" "SELECT sum(self_dur) FROM function")
if [ -s "$W/demo.folded" ] && [ "$bad" = 0 ] && [ "$sum" = "$want" ]; then
	echo "PASS report_folded ($(wc -l <"$W/demo.folded") stacks, $sum ns)"
else
	echo "FAIL report_folded: $bad bad lines, weights $sum, self $want"
fi
# A flame graph tool reads it: flamegraph.pl, or the flamegraph of npm's
# stackvis.
fg=$(command -v flamegraph.pl || command -v flamegraph)
if [ -n "$fg" ]; then
	if "$fg" <"$W/demo.folded" >"$W/demo.svg" 2>"$W/fg.err" &&
		grep -q '<svg' "$W/demo.svg" && grep -q 'fib (' "$W/demo.svg"; then
		echo "PASS report_flamegraph (${fg##*/} draws it)"
	else
		echo "FAIL report_flamegraph: ${fg##*/}: $(head -2 "$W/fg.err")"
	fi
else
	echo "SKIP report_flamegraph (no flamegraph.pl, nor npm's stackvis)"
fi

# One function: its whole calls all in the histogram, its callers.
csv=$("$B/mt-report" --csv --function fib "$demo" 2>&1)
hist=$(awk -F, '$1 == "histogram" {s += $5} END {printf "%.0f\n", s}' <<<"$csv")
whole=$(sqlite3 "$demo" "SELECT sum(calls - inferred) FROM function
	WHERE name = 'fib'")
callers=$(awk -F, '$1 == "caller" {print $2}' <<<"$csv" | sort | tr '\n' ' ')
if [ "$hist" = "$whole" ] && [ "$callers" = "fib lookup " ] &&
	"$B/mt-report" --function fib "$demo" | grep -q '^Callees (1):'; then
	echo "PASS report_function (fib: $hist calls in the histogram," \
		"called by fib and lookup)"
else
	echo "FAIL report_function: histogram $hist of $whole, callers $callers"
fi

# The slowest calls of lookup, each with its stack.
got=$("$B/mt-report" --csv --slowest 3 --function lookup "$demo" 2>&1 |
	tail -n +2 | cut -d, -f1 | tr '\n' ' ')
want=$(sqlite3 "$demo" "SELECT dur FROM slice WHERE name = 'lookup'
	ORDER BY dur DESC LIMIT 3" | tr '\n' ' ')
stack=$("$B/mt-report" --slowest 1 --function lookup "$demo" | tail -1)
if [ "$got" = "$want" ] && [[ $stack == *"main > handle_request > lookup" ]]; then
	echo "PASS report_slowest ($got ns, each with its stack)"
else
	echo "FAIL report_slowest: $got (want $want), stack: $stack"
fi

# Bad input: one line, exit 1 (2 for the command line), no crash.
echo "not a database" >"$W/junk.sqlite"
ok=1
for c in "1|$W/missing.sqlite" "1|$W/junk.sqlite" "1|$W/s4/raw.bin" \
	"1|--function no_such_fn $demo" "1|--between no_such_fn#1 $demo" \
	"1|--between handle_request#99 $demo" "2|--between x#0 $demo" \
	"2|--time 5..2 $demo" "2|--compare $demo" "2|--slowest 0 $demo" \
	"2|$demo $demo" "2|--bogus $demo" "2|"; do
	want=${c%%|*}
	# shellcheck disable=SC2086
	"$B/mt-report" ${c#*|} >"$W/o" 2>"$W/e"
	rc=$?
	if [ $rc != "$want" ] || [ "$(wc -l <"$W/e")" != 1 ]; then
		echo "FAIL report_errors: mt-report ${c#*|}: exit $rc (want $want)," \
			"$(head -2 "$W/e")"
		ok=0
	fi
done
[ $ok = 1 ] && echo "PASS report_errors (13 kinds of bad input: one line each)"

# Frame ids all negative (a database another tool edited) are refused as
# such, in one line, rather than read as a lack of memory.
cp "$demo" "$W/negframes.sqlite"
sqlite3 "$W/negframes.sqlite" "UPDATE frame SET id = -1000 - id"
"$B/mt-report" --time 0.. "$W/negframes.sqlite" >"$W/o" 2>"$W/e"
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <"$W/e")" = 1 ] &&
	grep -q 'frame ids out of range' "$W/e"; then
	echo "PASS report_negative_frame_ids"
else
	echo "FAIL report_negative_frame_ids: exit $rc, $(head -2 "$W/e")"
fi
exit 0
