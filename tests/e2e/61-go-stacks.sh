#!/bin/bash
# SPDX-License-Identifier: MIT
# Go programs' goroutines as stacks of their own: tests/programs/
# goroutines.go (eight goroutines over channels, a WaitGroup, a stack
# that grows) built with Debian's golang, captured under Valgrind with
# the goroutine items and the truth, converted with the items (exact)
# and without them (--no-goroutine-ids, as a hardware trace is).
#
# exact: the calls, thread by thread, equal the truth's by function and
# goroutine id; no slice spans two goroutines; one goroutine track each
# for the goroutines that ran.  heuristic: the same calls, no slice
# spanning two goroutines, and each of our goroutines is one of the
# truth's except where the slices say resume_guessed.  A program that is
# not Go has no goroutine anywhere.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-go.XXXXXX)
trap 'rm -rf "$W"' EXIT
tps=${MT_SHARED:-$R/../shared}/tools/perfetto/trace_processor_shell

if ! command -v go >/dev/null; then
	echo "SKIP go (no go compiler: apt-get install golang-go)"
	exit 0
fi
if ! (cd "$W" && GOCACHE="$W/gocache" \
	go build -o "$W/goroutines" "$R/tests/programs/goroutines.go") >"$W/build.err" 2>&1; then
	echo "FAIL go_build: $(tail -1 "$W/build.err")"
	exit 0
fi
# Without the runtime's preemption signals, whose moment varies from run
# to run: a handler that lands as a goroutine switches is the truth's on
# one side of the switch and ours on the other (54-go.sh says more).
if ! GODEBUG=asyncpreemptoff=1 "$B/mt-capture" --emulate=valgrind --start-at '' \
	--truth "$W/truth.tsv" -o "$W/raw.bin" -- "$W/goroutines" 4 300 \
	>"$W/cap.out" 2>"$W/cap.err"; then
	echo "FAIL go_capture: $(tail -1 "$W/cap.err")"
	exit 0
fi

# The calls of the truth and of a database, thread by thread
# (tools/realprogs.sh): function and goroutine id (the truth's eighth
# column; ours from the goroutine table, 0 for none or one we numbered).
# The runtime's signal trampoline, entered by the kernel, is a call for
# us and not for the truth.
REALPROGS_LIB=1 . "$R/tools/realprogs.sh"
go_truth_calls() {
	truth_calls "$1" '$1, $3 "/" $8' '^runtime\.sigtramp'
}
db_calls() { # DB COLUMN-EXPR
	convert_calls "$1" "s.name || '/' || $2" \
		"AND s.name NOT LIKE 'runtime.sigtramp%'"
}
same() {
	same_calls "$1" 2 "$2"
}
# spans DB: slices under a parent of another goroutine, and slices that
# overlap a segment of their thread run by another goroutine
spans() {
	sqlite3 "$1" "SELECT (SELECT count(*) FROM slice s JOIN slice p
		ON s.parent_id = p.id WHERE s.goroutine IS NOT p.goroutine)
		+ (SELECT count(*) FROM slice s JOIN thread_track t ON s.track_id = t.id
		JOIN thread th USING (utid) WHERE EXISTS (SELECT 1 FROM segment g
		WHERE g.tid = th.tid AND g.goroutine IS NOT s.goroutine
		AND g.ts < s.ts + s.dur AND g.ts + g.dur > s.ts))"
}

go_truth_calls "$W/truth.tsv" >"$W/t.calls"
ran=$(awk -F'\t' 'NR > 1 && $8 != 0 {print $8}' "$W/truth.tsv" | sort -u | wc -l)

# Exact.
if ! "$B/mt-convert" -q "$W/raw.bin" -o "$W/x.pftrace" 2>"$W/x.err"; then
	echo "FAIL go_exact: mt-convert failed: $(tail -1 "$W/x.err")"
	exit 0
fi
db_calls "$W/x.sqlite" "coalesce(g.goid, 0)" >"$W/x.calls"
if out=$(same "$W/t.calls" "$W/x.calls"); then
	echo "PASS go_exact_calls ($(wc -l <"$W/t.calls") calls, function and goroutine as the truth's)"
else
	echo "FAIL go_exact_calls: ${out//$'\n'/; }"
fi
n=$(spans "$W/x.sqlite")
gors=$(sqlite3 "$W/x.sqlite" "SELECT count(*) FROM goroutine WHERE goid IS NOT NULL")
anon=$(sqlite3 "$W/x.sqlite" "SELECT count(*) FROM goroutine WHERE goid IS NULL")
if [ "$n" = 0 ] && [ "$gors" = "$ran" ] && [ "$anon" = 0 ]; then
	echo "PASS go_exact_goroutines ($ran goroutines ran, no slice spans two)"
else
	echo "FAIL go_exact_goroutines: $n slices span two goroutines; $gors goroutines with ids, $anon without, $ran ran"
fi
if ! "$tps" --version >/dev/null 2>&1; then
	echo "SKIP go_exact_tracks (no runnable trace_processor_shell in ../shared/tools/perfetto)"
else
	tracks=$("$tps" query "$W/x.pftrace" "SELECT count(*) AS n FROM track
		WHERE name GLOB 'goroutine [0-9]* (*)'" 2>/dev/null | tail -1 | tr -dc 0-9)
	if [ "$tracks" = "$ran" ]; then
		echo "PASS go_exact_tracks ($tracks goroutine tracks)"
	else
		echo "FAIL go_exact_tracks: $tracks goroutine tracks, $ran goroutines ran"
	fi
fi

# Cut in pieces (-j 3, pieces of 4K), the Go capture's thread events reach
# the builders in runs, a thread's held back from the run in which it shows
# Go's scheduler on: the outputs are -j 1's, byte for byte.
if ! "$B/mt-convert" -q -j 1 "$W/raw.bin" -o "$W/j1.pftrace" --text "$W/j1.tsv" \
	2>"$W/j1.err" ||
	! "$B/mt-convert" -j 3 --piece-size 4K "$W/raw.bin" -o "$W/j3.pftrace" \
		--text "$W/j3.tsv" >/dev/null 2>"$W/j3.err"; then
	echo "FAIL go_parallel: mt-convert failed: $(tail -1 "$W/j1.err" "$W/j3.err")"
elif ! cmp -s "$W/j1.pftrace" "$W/j3.pftrace" || ! cmp -s "$W/j1.sqlite" "$W/j3.sqlite" ||
	! cmp -s "$W/j1.tsv" "$W/j3.tsv"; then
	echo "FAIL go_parallel: -j 3 in 4K pieces differs from -j 1"
else
	echo "PASS go_parallel (-j 3 identical to -j 1;$(sed -n 's/.*decoded in\( [0-9]* pieces\).* \([0-9]* of them joined\).*/\1, \2/p' "$W/j3.err"))"
fi

# A capture whose goroutine items of a thread go back in time (the first
# two swapped): one line naming the file, no output.
python3 - "$W/raw.bin" "$W/bad.bin" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
head = struct.pack('<II', 7, 40)
i = b.find(head)
j = b.find(head, i + 48)
b[i + 16:i + 24], b[j + 16:j + 24] = b[j + 16:j + 24], b[i + 16:i + 24]
open(sys.argv[2], 'wb').write(b)
PY
if "$B/mt-convert" "$W/bad.bin" -o "$W/bad.pftrace" 2>"$W/bad.err"; then
	echo "FAIL go_items_out_of_order: converted"
elif [ "$(wc -l <"$W/bad.err")" = 1 ] && [ ! -e "$W/bad.pftrace" ] &&
	grep -q "bad.bin: goroutine items of thread [0-9]* out of time order" "$W/bad.err"; then
	echo "PASS go_items_out_of_order"
else
	echo "FAIL go_items_out_of_order: $(head -2 "$W/bad.err")"
fi

# Heuristic: the goroutine of each call in our numbering and the truth's.
# heuristic DIR: the checks on DIR/raw.bin against DIR/t.calls; sets
# hcalls (empty: the calls agree) and n and bad (the goroutine checks).
heuristic() {
	local d=$1
	if ! "$B/mt-convert" -q --no-goroutine-ids "$d/raw.bin" -o "$d/h.pftrace" 2>"$d/h.err"; then
		hcalls="mt-convert failed: $(tail -1 "$d/h.err")"
		return
	fi
	db_calls "$d/h.sqlite" "coalesce(s.goroutine, 0) || '/' || s.resume_guessed" >"$d/h.calls"
	awk '{sub(/\/[^\/]*$/, "", $2); print $1, $2}' "$d/t.calls" >"$d/t.names"
	awk '{sub(/\/[^\/]*\/[^\/]*$/, "", $2); print $1, $2}' "$d/h.calls" >"$d/h.names"
	if hcalls=$(same "$d/t.names" "$d/h.names"); then
		hcalls=
	else
		hcalls=${hcalls:-the calls differ}
	fi
	n=$(spans "$d/h.sqlite")
	# each of ours is one goroutine of the truth's, and each of the
	# truth's one of ours, wherever no guess is flagged: the k-th call
	# of a thread against the k-th of the same thread (the two lists
	# need not give the threads in the same order: two that begin at
	# once come in either)
	# (the fields counted from the end: a Go function's name may hold
	# a slash)
	bad=$(awk 'FILENAME == ARGV[1] { m = split($2, f, "/"); tg[$1, nt0[$1]++] = f[m]; next }
		{
			m = split($2, h, "/")
			k = nh0[$1]++
			g = h[m - 1]
			if (!(($1, k) in tg) || h[m] == 1)
				next
			if (!((g, tg[$1, k]) in seen)) {
				seen[g, tg[$1, k]] = 1; nh[g]++; nt[tg[$1, k]]++
			}
		}
		END {
			for (k in seen) {
				split(k, p, SUBSEP)
				if (nh[p[1]] > 1 || nt[p[2]] > 1)
					bad++
			}
			print bad + 0
		}' "$d/t.calls" "$d/h.calls")
	guessed=$(sqlite3 "$d/h.sqlite" "SELECT count(*) FROM slice WHERE resume_guessed")
}
heuristic "$W"
if [ -z "$hcalls" ]; then
	echo "PASS go_heuristic_calls"
else
	echo "FAIL go_heuristic_calls: ${hcalls//$'\n'/; }"
fi
if [ -z "$hcalls" ] && [ "$n" = 0 ] && [ "$bad" = 0 ]; then
	echo "PASS go_heuristic_goroutines (no slice spans two; $guessed slices resume_guessed)"
elif [ -z "$hcalls" ]; then
	echo "FAIL go_heuristic_goroutines: $n slices span two goroutines, $bad pairings not one to one outside the guesses"
fi

# Not Go: nothing of goroutines.
printf '#include <stdio.h>\nvoid gogo(void) { puts("x"); }\nint main(void)\n{\n\tgogo();\n\treturn 0;\n}\n' >"$W/c.c"
cc -O1 -o "$W/c" "$W/c.c"
if "$B/mt-capture" --emulate=valgrind -q -o "$W/c.bin" -- "$W/c" >/dev/null 2>&1 &&
	"$B/mt-convert" -q "$W/c.bin" -o "$W/c.pftrace" 2>/dev/null &&
	[ "$(sqlite3 "$W/c.sqlite" "SELECT (SELECT count(*) FROM goroutine)
		+ (SELECT count(*) FROM slice WHERE goroutine IS NOT NULL OR resumed)")" = 0 ]; then
	echo "PASS go_not_go"
else
	echo "FAIL go_not_go: goroutines in a C program's conversion"
fi
