#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-capture: real programs natively, under mt-capture
# --emulate=valgrind and (the small ones, on a small input) under
# --emulate=ptrace.  CPU is user+sys of the command and every process it
# waited for (mt-capture and Valgrind together); RSS is mt-capture's own
# peak (mt-bench run-own), Valgrind's apart.  The inputs are made in a
# temporary folder, the same every time.  Timings are whatever this
# machine gives today: the Valgrind rows are the best of three runs
# (REPS), and still move from one invocation to the next.
set -e
B=$(realpath "${MT_BUILD:-build}/bin")
SNAP=${SNAP:-4M}
SNAP_MB=$(numfmt --from=iec "$SNAP" | awk '{print $1 / 1048576}')
PY=/usr/bin/python3
# The same dictionaries, so the same instructions, every run.
export PYTHONHASHSEED=0
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

for p in gzip sort sqlite3 "$PY" xz valgrind; do
	command -v "$p" >/dev/null || { echo "bench-capture: $p is not installed" >&2; exit 1; }
done

# Inputs: text that compresses as text does, 1M lines out of order, SQL.
seq 1 3000000 | awk '{print $1 * 2654435761 % 4294967296, "line", $1}' |
	head -c 10000000 >"$D/in10"
head -c 5000000 "$D/in10" >"$D/in5"
head -c 4000 "$D/in10" >"$D/in4k"
awk '{print $1}' "$D/in10" | head -n 1000000 >"$D/lines1m"
head -n 50 "$D/lines1m" >"$D/lines50"
cat >"$D/rows.sql" <<'EOF'
create table t(a integer primary key, b integer, c text);
with recursive n(x) as (select 1 union all select x + 1 from n where x < 100000)
insert into t select x, x * 7919 % 1000, 'row ' || x from n;
create index tb on t(b);
select b, count(*), sum(a) from t group by b order by 2 desc, 1 limit 3;
select count(*) from t where c like '%99%';
select sum(a) from t where b between 100 and 200;
EOF
LOOP='x = 0
for i in range(1000000):
    x += i * 3 % 7
print(x)'

field() { sed -n "s/.*$1=\([0-9.-]*\).*/\1/p" <<<"$2"; }

# The best of three native runs (they are short, so noisy).
native() {
	local best= r
	for _ in 1 2 3; do
		r=$("$B/mt-bench" run-own "$@")
		if [ -z "$best" ] || awk -v a="$(field cpu "$r")" \
			-v b="$(field cpu "$best")" 'BEGIN {exit !(a < b)}'; then
			best=$r
		fi
	done
	field cpu "$best"
}

# row NAME NATIVE_CPU EMULATE ARGS...: the best of REPS runs under
# mt-capture (3 with Valgrind, whose runs move by a third here; 1 with
# ptrace), by CPU, its peak RSS the largest of them.
row() {
	local name=$1 nat=$2 how=$3 r log insns thr cpu= rss=0 c k reps=1
	shift 3
	[ "$how" = valgrind ] && reps=${REPS:-3}
	log="$D/capture.log"
	for ((k = 0; k < reps; k++)); do
		r=$("$B/mt-bench" run-own "$B/mt-capture" --emulate="$how" \
			--snapshot-size "$SNAP" -o "$D/raw.bin" -- "$@" 2>"$log") || {
			echo "bench-capture: $name under $how failed:" >&2
			cat "$log" >&2
			exit 1
		}
		c=$(field cpu "$r")
		if [ -z "$cpu" ] || awk -v a="$c" -v b="$cpu" 'BEGIN {exit !(a < b)}'; then
			cpu=$c
		fi
		c=$(field own_rss_kb "$r")
		[ "$c" -gt "$rss" ] && rss=$c
	done
	insns=$(sed -n 's/.*: \([0-9]*\) instructions,.*/\1/p' "$log")
	thr=$(sed -n 's/.*, \([0-9]*\) threads\{0,1\},.*/\1/p' "$log")
	awk -v n="$name" -v h="$how" -v nat="$nat" -v cpu="$cpu" -v i="$insns" \
		-v rss="$rss" -v thr="$thr" -v snap="$SNAP_MB" -v tgt="$TARGET" 'BEGIN {
		x = nat >= 0.01 ? sprintf("%.1fx", cpu / nat) : "-"
		m = i / (cpu > 0 ? cpu : 0.001) / 1e6
		lim = 2 * snap * thr + 64
		miss = ""
		if (tgt) {
			if (nat >= 0.01 && cpu / nat > 10) miss = miss " >10x"
			if (m < 200) miss = miss " <200M/s"
		}
		if (rss / 1024 > lim) miss = miss " RSS"
		printf "%-20s %-8s %7.2f %8.2f %9s %9.1f %8.2f %5.0f/%-4.0f%s\n",
			n, h, nat, cpu, x, i / 1e6, m, rss / 1024, lim, miss
	}'
}

echo "targets (--emulate=valgrind): at most 10x native CPU, at least 200M" \
	"instructions/s, mt-capture's RSS at most 2 x the rings" \
	"($SNAP a thread) + 64 MiB"
printf "%-20s %-8s %7s %8s %9s %9s %8s %10s\n" workload backend "native" \
	"capture" slowdown "M insns" "M/s" "RSS/limit"
printf "%-20s %-8s %7s %8s %9s %9s %8s %10s\n" "" "" "cpu s" "cpu s" "" "" \
	"" "MiB"
cd "$D"
TARGET=1
row "gzip -c 10 MB" "$(native gzip -c in10)" valgrind gzip -c in10
row "sort 1M lines" "$(native sort lines1m)" valgrind sort lines1m
row "sqlite3 100k rows" "$(native sqlite3 :memory: ".read rows.sql")" \
	valgrind sqlite3 :memory: ".read rows.sql"
row "python3 -c 1M loop" "$(native "$PY" -c "$LOOP")" valgrind "$PY" -c "$LOOP"
row "xz -c 5 MB" "$(native xz -c in5)" valgrind xz -c in5
# The ptrace single-stepper, on inputs small enough to finish in about a
# minute, beside the Valgrind backend on the same.
TARGET=
if [ "${PTRACE:-1}" != 0 ]; then
	nat=$(native gzip -c in4k)
	row "gzip -c 4 KB" "$nat" valgrind gzip -c in4k
	row "gzip -c 4 KB" "$nat" ptrace gzip -c in4k
	nat=$(native sort lines50)
	row "sort 50 lines" "$nat" valgrind sort lines50
	row "sort 50 lines" "$nat" ptrace sort lines50
	nat=$(native sqlite3 :memory: "select 1")
	row "sqlite3 select 1" "$nat" valgrind sqlite3 :memory: "select 1"
	row "sqlite3 select 1" "$nat" ptrace sqlite3 :memory: "select 1"
fi
