#!/bin/bash
# SPDX-License-Identifier: MIT
# make accuracy's Go rows: tests/programs/goroutines.go under the
# Valgrind backend (its goroutine items and the truth's goid column),
# packets dropped as an overflowing CPU does, converted with the items
# ("ids") and without them ("pc": resumes picked by address, as from a
# hardware trace).  The truth's stacks are the thread's, goroutines one
# on another, so mt-accuracy's depths do not apply; the figures are per
# call, thread by thread, in the order of the calls (the longest common
# subsequence, as diff finds it):
#
#   calls%  the truth's calls found, by function;
#   gor%    of those, on the right goroutine: for ids, the same goid;
#           for pc, ours paired one to one with the truth's (each of
#           ours counted as the truth's goroutine it has most calls of
#           outside the guesses);
#   guess%  of those found, on a slice flagged resume_guessed;
#   wrong   calls found on the wrong goroutine and not flagged: must be 0
#           where no packets were lost;
#   gors    goroutines in the conversion / that ran in the truth.
#
#   MT_BUILD=build bash tools/accuracy-go.sh   (needs go, sqlite3)
set -e
B=${MT_BUILD:-build}/bin
R=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/mt-accuracy-go.XXXXXX)
trap 'rm -rf "$W"' EXIT

if ! command -v go >/dev/null; then
	echo "Go: no go compiler (apt-get install golang-go)"
	exit 0
fi
(cd "$W" && GOCACHE="$W/gocache" go build -o "$W/goroutines" \
	"$R/tests/programs/goroutines.go") >/dev/null 2>&1

REALPROGS_LIB=1 MT_BUILD=${MT_BUILD:-build} . "$R/tools/realprogs.sh"
# go_truth_calls FILE: "tid function goid" of the truth's calls
go_truth_calls() {
	truth_calls "$1" '$1, $3, $8' '^runtime\.sigtramp'
}
# db_calls DB: "tid function goid-or-ours guessed"
db_calls() {
	convert_calls "$1" "s.name, coalesce(g.goid, 'g' || s.goroutine, 0),
		s.resume_guessed" "AND s.name NOT LIKE 'runtime.sigtramp%'"
}
# pairs T D: the calls found (by function, in order, thread by thread:
# difflib's matching blocks), "truth-goid ours guessed"
pairs() {
	python3 - "$1" "$2" <<'PY'
import difflib, sys
def load(path):
    by = {}
    for line in open(path):
        f = line.split()
        by.setdefault(f[0], []).append(f[1:])
    return by
t, d = load(sys.argv[1]), load(sys.argv[2])
for tid in sorted(t):
    a, b = t[tid], d.get(tid, [])
    m = difflib.SequenceMatcher(None, [x[0] for x in a], [y[0] for y in b],
                                autojunk=False)
    for i, j, n in m.get_matching_blocks():
        for k in range(n):
            print(a[i + k][1], b[j + k][1], b[j + k][2])
PY
}

printf "%-22s %-4s %7s %7s %7s %6s %9s\n" "goroutines.go, drop" "mode" \
	"calls%" "gor%" "guess%" "wrong" "gors"
for every in 0 10000 1000; do
	d=$W/d$every
	drop=()
	[ "$every" = 0 ] || drop=(--drop-every "$every")
	"$B/mt-capture" --emulate=valgrind --start-at '' "${drop[@]}" \
		--truth "$d.truth" -o "$d.bin" -- "$W/goroutines" 4 300 >/dev/null 2>&1
	go_truth_calls "$d.truth" >"$d.t"
	ran=$(awk -F'\t' 'NR > 1 && $8 != 0 {print $8}' "$d.truth" | sort -u | wc -l)
	for mode in ids pc; do
		opt=()
		[ "$mode" = pc ] && opt=(--no-goroutine-ids)
		"$B/mt-convert" -q "${opt[@]}" "$d.bin" -o "$d.$mode.pftrace"
		db_calls "$d.$mode.sqlite" >"$d.$mode.c"
		pairs "$d.t" "$d.$mode.c" >"$d.$mode.p"
		gors=$(sqlite3 "$d.$mode.sqlite" "SELECT count(*) FROM goroutine")
		awk -v label="${every/#0/none}" -v mode="$mode" -v total="$(wc -l <"$d.t")" \
			-v gors="$gors/$ran" '
			{ n++; if ($3) g++
			  if (mode == "ids") ok[NR] = ($1 == $2)
			  if (!$3) cnt[$2, $1]++
			  tr[NR] = $1; us[NR] = $2
			  gs[NR] = $3 }
			END {
				# ours -> the truth goroutine it has most calls of outside
				# the guesses, and back
				for (k in cnt) {
					split(k, p, SUBSEP)
					if (cnt[k] > best[p[1]]) { best[p[1]] = cnt[k]; to[p[1]] = p[2] }
				}
				for (o in to) { if (cnt[o, to[o]] > bestb[to[o]]) { bestb[to[o]] = cnt[o, to[o]]; from[to[o]] = o } }
				for (i = 1; i <= n; i++) {
					if (mode == "pc")
						ok[i] = to[us[i]] == tr[i] && from[tr[i]] == us[i]
					right += ok[i]
					if (!ok[i] && !gs[i]) wrong++
				}
				printf "%-22s %-4s %7.2f %7.2f %7.2f %6d %9s\n", label, mode,
					total ? 100 * n / total : 100, n ? 100 * right / n : 100,
					n ? 100 * g / n : 0, wrong, gors
			}' "$d.$mode.p"
	done
done
