#!/bin/bash
# SPDX-License-Identifier: MIT
# mt-convert --time FROM..TO and --between F: on a synthetic capture with threads and
# gaps, every slice kept lies inside the window, a slice that ran past it
# is clipped and flagged, the slices wholly inside are those of the full
# conversion, the database agrees with the text, and a bad window is one
# line and exit 2 with no output written.
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-time.XXXXXX)
trap 'rm -rf "$W"' EXIT

"$B/mt-synth" --seed 12 --branches 40000 --threads 3 --gap-every 4000 \
	-o "$W/c" >/dev/null 2>&1 || { echo "FAIL convert_time: mt-synth failed"; exit 0; }
"$B/mt-convert" "$W/c/raw.bin" -o "$W/all.pftrace" --no-sqlite \
	--text "$W/all.tsv" -q || { echo "FAIL convert_time: full conversion failed"; exit 0; }
first=$(tail -n +2 "$W/all.tsv" | cut -f4 | sort -n | head -1)
lo=$((first + 200000)) hi=$((first + 350000))

if ! "$B/mt-convert" "$W/c/raw.bin" -o "$W/w.pftrace" --time 0.2ms..350us \
	--text "$W/w.tsv" 2>"$W/w.err"; then
	echo "FAIL convert_time: $(head -1 "$W/w.err")"
	exit 0
fi
out=$(awk -F'\t' -v lo="$lo" -v hi="$hi" 'NR > 1 {
	n++
	if ($4 < lo || $5 > hi) bad = bad " outside:" $3
} END { print n + 0, (bad == "" ? "ok" : bad) }' "$W/w.tsv")
read -r n inside <<<"$out"
# Slices wholly inside the window, as the full conversion has them.
awk -F'\t' -v lo="$lo" -v hi="$hi" 'NR > 1 && $4 > lo && $5 < hi' "$W/all.tsv" |
	cut -f1,3-6 | sort >"$W/inner.all"
awk -F'\t' -v lo="$lo" -v hi="$hi" 'NR > 1 && $4 > lo && $5 < hi' "$W/w.tsv" |
	cut -f1,3-6 | sort >"$W/inner.w"
if [ "$n" -gt 0 ] && [ "$inside" = ok ] && [ -s "$W/inner.w" ] &&
	cmp -s "$W/inner.all" "$W/inner.w" && grep -q "kept $n of" "$W/w.err"; then
	echo "PASS convert_time_window ($n slices kept, $(wc -l <"$W/inner.w") wholly inside)"
else
	echo "FAIL convert_time_window: n=$n inside=$inside"
	diff "$W/inner.all" "$W/inner.w" | head -5 | sed 's/^/    /'
fi
# A slice that ran past the window says so.
if grep -q clipped_start "$W/w.tsv" && grep -q clipped_end "$W/w.tsv"; then
	echo "PASS convert_time_clipped"
else
	echo "FAIL convert_time_clipped: no clipped slice"
fi
# Each slice the window cut says so, in every output: one that ends at the
# window's end is flagged inferred_end (clipped_end in the text) unless
# the full conversion has it ending there too, and one that starts at the
# window's start inferred_start.  The database and the Perfetto trace's
# args carry the same flags.
out=$(awk -F'\t' -v lo="$lo" -v hi="$hi" '
	FNR == 1 { next }
	NR == FNR {
		if ($5 == hi) ends[$1, $2, $3] = 1
		if ($4 == lo) starts[$1, $2, $3] = 1
		next
	}
	$5 == hi { ne++; if ($6 ~ /clipped_end/) fe++; else if (!ends[$1, $2, $3]) bad++ }
	$4 == lo { ns++; if ($6 ~ /clipped_start/) fs++; else if (!starts[$1, $2, $3]) bad++ }
	END { print ne + 0, fe + 0, ns + 0, fs + 0, bad + 0 }' "$W/all.tsv" "$W/w.tsv")
read -r ne fe ns fs bad <<<"$out"
sq=$(sqlite3 "$W/w.sqlite" "SELECT (SELECT count(*) FROM slice
	WHERE ts + dur = $hi AND inferred_end) || ' ' || (SELECT count(*)
	FROM slice WHERE ts = $lo AND inferred_start) || ' ' || (SELECT
	count(*) FROM slice WHERE inferred_end)")
read -r sqe sqs sqall <<<"$sq"
. "$MT_ROOT/tests/e2e/pf_decode.sh"
if ! command -v protoc >/dev/null; then
	pf=$sqall
elif "$B/mt-convert" "$W/c/raw.bin" -o "$W/wp.pftrace" --time 0.2ms..350us \
	--no-sqlite --no-compress -q 2>/dev/null; then
	# BEGIN events with the arg inferred_end true
	pf=$(pf_decode <"$W/wp.pftrace" | awk '
		/^    debug_annotation_names \{/ { dn = 1 }
		dn && /^      iid:/ { iid = $2 }
		dn && /^      name:/ { if ($2 == "\"inferred_end\"") ie = iid; dn = 0 }
		/^    debug_annotations \{/ { da = 1; nid = "" }
		da && /^      name_iid:/ { nid = $2 }
		da && /^      bool_value: true/ && nid == ie { n++ }
		/^    \}/ { da = 0 }
		END { print n + 0 }')
else
	pf=none
fi
if [ "$ne" -gt 0 ] && [ "$ns" -gt 0 ] && [ "$fe" -gt 0 ] && [ "$fs" -gt 0 ] &&
	[ "$bad" = 0 ] && [ "$sqe" = "$fe" ] && [ "$sqs" = "$fs" ] &&
	[ "$pf" = "$sqall" ]; then
	echo "PASS convert_time_clipped_flags ($fe cut at the end, $fs at the start, flagged in text, SQLite and Perfetto)"
else
	echo "FAIL convert_time_clipped_flags: at the end $ne slices ($fe flagged, SQLite $sqe), at the start $ns ($fs, SQLite $sqs), $bad cut but not flagged; inferred_end: SQLite $sqall, Perfetto $pf"
fi
# The database holds the same slices, each parent one of its thread's.
if [ "$(sqlite3 "$W/w.sqlite" 'SELECT count(*) FROM slice')" = "$n" ] &&
	[ "$(sqlite3 "$W/w.sqlite" 'SELECT count(*) FROM slice s
		LEFT JOIN slice p ON p.id = s.parent_id
		WHERE s.parent_id IS NOT NULL AND (p.id IS NULL OR
		p.track_id != s.track_id OR p.depth != s.depth - 1)')" = 0 ]; then
	echo "PASS convert_time_sqlite"
else
	echo "FAIL convert_time_sqlite: the database differs from the text"
fi

for bad in "5" "2ms..1ms" "1.5..2" "..x"; do
	rm -f "$W/bad.pftrace"
	"$B/mt-convert" "$W/c/raw.bin" -o "$W/bad.pftrace" --time "$bad" \
		2>"$W/bad.err" >/dev/null
	rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$W/bad.err")" = 1 ] &&
		grep -q -- "--time $bad" "$W/bad.err" && [ ! -e "$W/bad.pftrace" ]; then
		echo "PASS convert_time_bad_${bad//[^a-z0-9]/_}"
	else
		echo "FAIL convert_time_bad_${bad//[^a-z0-9]/_}: rc $rc: $(head -2 "$W/bad.err")"
	fi
done

# --between F: each outermost call of F in the full tree is in the cut
# tree whole (same thread, start and end, not clipped), and nothing
# kept lies outside those calls.
f=$(awk -F'\t' 'NR > 1 && $2 >= 3 && $5 > $4 { print $3; exit }' "$W/all.tsv")
if ! "$B/mt-convert" "$W/c/raw.bin" -o "$W/b.pftrace" --between "$f" \
	--text "$W/b.tsv" 2>"$W/b.err"; then
	echo "FAIL convert_between: $(head -1 "$W/b.err")"
else
	awk -F'\t' -v f="$f" 'NR > 1 {
		stack[$1, $2] = $3; inside = 0
		for (d = 0; d < $2; d++) if (stack[$1, d] == f) inside = 1
		if ($3 == f && !inside) print $1 "\t" $4 "\t" $5
	}' "$W/all.tsv" | sort -u >"$W/calls.all"
	awk -F'\t' -v f="$f" 'NR > 1 && $3 == f && $6 !~ /clipped/ {
		print $1 "\t" $4 "\t" $5 }' "$W/b.tsv" | sort -u >"$W/calls.b"
	outside=$(awk -F'\t' 'NR == FNR { lo[NR] = $2; hi[NR] = $3; t[NR] = $1; n = NR; next }
		FNR > 1 { ok = 0
			for (i = 1; i <= n; i++)
				if (t[i] == $1 && $4 >= lo[i] && $5 <= hi[i]) ok = 1
			if (!ok) bad++ }
		END { print bad + 0 }' "$W/calls.all" "$W/b.tsv")
	regions=$(sed -n 's/.*--between: kept [0-9]* of [0-9]* slices in \([0-9]*\) region.*/\1/p' "$W/b.err")
	if [ -s "$W/calls.all" ] && comm -23 "$W/calls.all" "$W/calls.b" | grep -q .; then
		echo "FAIL convert_between: a call of $f is missing or cut"
		comm -23 "$W/calls.all" "$W/calls.b" | head -3 | sed 's/^/    /'
	elif [ "$outside" != 0 ] || [ -z "$regions" ] || [ "$regions" = 0 ]; then
		echo "FAIL convert_between: $outside slices outside the calls of $f, regions '$regions'"
	else
		echo "PASS convert_between ($f: $(wc -l <"$W/calls.all") calls, $regions regions, $(($(wc -l <"$W/b.tsv") - 1)) slices)"
	fi
fi
"$B/mt-convert" "$W/c/raw.bin" -o "$W/n.pftrace" --between no_such_fn 2>"$W/n.err" >/dev/null
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$W/n.err")" = 1 ] && grep -q "no call of no_such_fn" "$W/n.err" &&
	[ ! -e "$W/n.pftrace" ]; then
	echo "PASS convert_between_unknown"
else
	echo "FAIL convert_between_unknown: rc $rc: $(head -2 "$W/n.err")"
fi
# A cut that keeps nothing says which name or window is at fault, in one
# line, and leaves the earlier output as it was: a STOP never called is
# not START's fault, and a window after the trace is no empty trace.
cp "$W/b.pftrace" "$W/keep.pftrace"
for case in until time; do
	if [ $case = until ]; then
		set -- --between "$f" --until no_such_stop
		want="--until no_such_stop: no call of no_such_stop"
	else
		set -- --time 100s..
		want="--time 100s..: the window starts after the trace ends"
	fi
	"$B/mt-convert" "$W/c/raw.bin" -o "$W/b.pftrace" --no-sqlite "$@" 2>"$W/n.err" >/dev/null
	rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$W/n.err")" = 1 ] && grep -q -- "$want" "$W/n.err" &&
		cmp -s "$W/b.pftrace" "$W/keep.pftrace"; then
		echo "PASS convert_cut_nothing_$case"
	else
		echo "FAIL convert_cut_nothing_$case: rc $rc: $(head -2 "$W/n.err")"
	fi
done
