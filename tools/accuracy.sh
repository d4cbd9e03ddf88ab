#!/bin/bash
# make accuracy: how much of the truth mt-convert gets right, with decode
# gaps injected at 0, 1 per 100k and 1 per 10k branches, with stitching
# on and off, over fixed seeds (tests/tools/mt-accuracy.c defines the
# figures).  Prints one table.
set -e
B=${MT_BUILD:-build}/bin
W=$(mktemp -d /tmp/mt-accuracy.XXXXXX)
trap 'rm -rf "$W"' EXIT
SEEDS=${SEEDS:-"41 42 43"}
BRANCHES=${BRANCHES:-1000000}

printf "%-10s %-8s %8s %8s %8s %6s %7s %6s\n" "gaps" "stitch" "calls%" \
	"stack%" "root%" "false" "joined" "gaps"
for rate in 0 100000 10000; do
	for seed in $SEEDS; do
		d=$W/$rate-$seed
		opts="--seed $seed --branches $BRANCHES --no-deep"
		[ "$rate" = 0 ] || opts="$opts --gap-every $rate"
		"$B/mt-synth" $opts -o "$d" >/dev/null
		"$B/mt-convert" "$d/raw.bin" --text "$d/on.tsv" -q
		"$B/mt-convert" "$d/raw.bin" --text "$d/off.tsv" --no-stitch -q
	done
	for mode in on off; do
		sum=$(for seed in $SEEDS; do
			d=$W/$rate-$seed
			"$B/mt-accuracy" "$d/truth.tsv" "$d/$mode.tsv" "$d/gaps.tsv"
			echo " gaps=$(($(wc -l <"$d/gaps.tsv") - 1))"
		done | tr '\n' ' ')
		label=$([ "$rate" = 0 ] && echo none || echo "1/$rate")
		awk -v label="$label" -v mode="$mode" -v s="$sum" 'BEGIN {
			n = split(s, f, /[ =]+/)
			for (i = 1; i < n; i += 2) { v[f[i]] += f[i + 1]; c[f[i]]++ }
			printf "%-10s %-8s %8.2f %8.2f %8.2f %6d %7d %6d\n", label, mode,
				v["calls"] / c["calls"], v["stack"] / c["stack"],
				v["root"] / c["root"], v["false"], v["joined"], v["gaps"]
		}'
	done
done
