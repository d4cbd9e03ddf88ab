#!/bin/bash
# make accuracy: how much of the truth mt-convert gets right, with decode
# gaps injected, with stitching on and off (tests/tools/mt-accuracy.c
# defines the figures).  Two tables: synthetic captures over fixed seeds
# (gaps at 0, 1 per 100k and 1 per 10k branches), and the programs of
# tests/programs captured by the emulator, which drops packets the way an
# overflowing CPU does (--drop-every) and logs every call it saw.
set -e
B=${MT_BUILD:-build}/bin
R=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/mt-accuracy.XXXXXX)
trap 'rm -rf "$W"' EXIT
SEEDS=${SEEDS:-"41 42 43"}
BRANCHES=${BRANCHES:-1000000}

# sum LABEL MODE LINES...: one row from mt-accuracy lines with "gaps=N"
sum() {
	awk -v label="$1" -v mode="$2" -v s="$3" 'BEGIN {
		n = split(s, f, /[ =]+/)
		for (i = 1; i < n; i += 2) { v[f[i]] += f[i + 1]; c[f[i]]++ }
		printf "%-22s %-6s %8.2f %8.2f %8.2f %6d %7d %6d\n", label, mode,
			v["calls"] / c["calls"], v["stack"] / c["stack"],
			v["root"] / c["root"], v["false"], v["joined"], v["gaps"]
	}'
}

header() {
	printf "%-22s %-6s %8s %8s %8s %6s %7s %6s\n" "$1" "stitch" "calls%" \
		"stack%" "root%" "false" "joined" "gaps"
}

echo "Synthetic captures, seeds $SEEDS, $BRANCHES branches each:"
header "gaps"
for rate in 0 100000 10000; do
	for seed in $SEEDS; do
		d=$W/$rate-$seed
		opts="--seed $seed --branches $BRANCHES --no-deep"
		[ "$rate" = 0 ] || opts="$opts --gap-every $rate"
		"$B/mt-synth" $opts -o "$d" >/dev/null
		"$B/mt-convert" "$d/raw.bin" --text "$d/on.tsv" -q --no-sqlite \
			-o "$d/t.pftrace"
		"$B/mt-convert" "$d/raw.bin" --text "$d/off.tsv" --no-stitch -q \
			--no-sqlite -o "$d/t.pftrace"
	done
	for mode in on off; do
		lines=$(for seed in $SEEDS; do
			d=$W/$rate-$seed
			"$B/mt-accuracy" "$d/truth.tsv" "$d/$mode.tsv" "$d/gaps.tsv"
			echo " gaps=$(($(wc -l <"$d/gaps.tsv") - 1))"
		done | tr '\n' ' ')
		sum "$([ "$rate" = 0 ] && echo none || echo "1/$rate")" "$mode" "$lines"
	done
done

# The emulator single-steps: its clock runs a thousand times slow, so
# times are compared within 50 ms (the structure is what is measured).
# Its log begins where tracing began, at main; the stack unwound at a
# trigger knows main's callers too, which the log cannot: the roots are
# left to the trace (--no-final-stack).
echo
echo "Emulated programs (tests/programs, examples/demo.c), packets dropped:"
header "program, drop every"
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c"
for p in longjmp signal threads recursion; do
	cc -O1 -g -pthread -o "$W/$p" "$R/tests/programs/$p.c"
done
c++ -O1 -g -o "$W/exception" "$R/tests/programs/exception.cc"
for p in demo longjmp signal threads exception recursion; do
	for every in 10000 1000; do
		d=$W/$p-$every
		"$B/mt-capture" --emulate --drop-every "$every" --gaps "$d.gaps" \
			--truth "$d.truth" -o "$d.bin" -- "$W/$p" >/dev/null 2>&1
		"$B/mt-convert" "$d.bin" --text "$d.on.tsv" -q --no-sqlite \
			--no-final-stack -o "$d.pftrace"
		"$B/mt-convert" "$d.bin" --text "$d.off.tsv" --no-stitch -q \
			--no-sqlite --no-final-stack -o "$d.pftrace"
		for mode in on off; do
			line="$("$B/mt-accuracy" "$d.truth" "$d.$mode.tsv" "$d.gaps" \
				--tol-ns 50000000) gaps=$(($(wc -l <"$d.gaps") - 1))"
			sum "$p, $every" "$mode" "$line"
		done
	done
done
