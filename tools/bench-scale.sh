#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-scale: mt-convert with -j 1, 2, 4, ... up to the cores
# present, on three captures: one stream (the bench capture, MB MiB of
# AUX, default 64), 16 streams of as many branches in all, and a 4 MiB
# one-thread snapshot.  For each -j: wall time, CPU (user + system),
# peak RSS, the CPU against -j 1's, and the wall time against the bare
# libipt loop spread over that many cores (the floor of a libipt-based
# converter on them).  The outputs of every -j are compared with -j 1's:
# they must be the same, byte for byte.  Last, the machine's own CPU
# growth with every core busy (the bare loop alone, then once on each
# core at once).  Timings are whatever this
# machine gives today: run it twice before believing a number.
set -e
MB=${1:-64}
S=${MT_BUILD:-build}/bench/snap4
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# The same captures as make bench, and the 16 streams beside them.
. "$(dirname "$0")/bench-lib.sh"
bench_capture "$MB"
if [ ! -f "$D/t16/raw.bin" ]; then
	echo "generating 16 streams of $((branches / 16)) branches each..."
	"$B/mt-synth" --seed 4244 --threads 16 --branches "$((branches / 16))" \
		-o "$D/t16" >/dev/null
fi
[ -f "$S/raw.bin" ] || "$B/mt-synth" --seed 4243 \
	--branches "$((4 * 1048576 * 100 / 95))" -o "$S" >/dev/null

cores=$(nproc)
js=1
j=2
while [ "$j" -lt "$cores" ]; do
	js="$js $j"
	j=$((j * 2))
done
[ "$cores" -gt 1 ] && js="$js $cores"

W=$(mktemp -d "${MT_BUILD:-build}/bench/scale.XXXXXX")
trap 'rm -rf "$W"' EXIT

# scale NAME CAPTURE: one line per -j.
scale() {
	local name=$1 cap=$2 bare slices r0 cpu1= r
	bare=$(field seconds "$("$B/mt-bench" decode "$cap")")
	"$B/mt-convert" "$cap" -o "$W/ref.pftrace" -j 1 2>"$W/ref.log" >/dev/null
	slices=$(sed -n 's/.*, \([0-9]*\) slices,.*/\1/p' "$W/ref.log")
	echo
	printf "%s: %s (%.1f MiB), %s slices; bare libipt loop %.2f s on one thread\n" \
		"$name" "$cap" "$(awk "BEGIN {print $(stat -c %s "$cap") / 1048576}")" \
		"$slices" "$bare"
	printf "  %4s %9s %9s %7s %9s %8s %11s %s\n" "-j" "wall s" "CPU s" "CPU%" \
		"RSS MiB" "B/slice" "CPU/-j 1" "wall / (loop / j)"
	for j in $js; do
		# The runs before leave their outputs to write back.
		sync
		rm -f "$W/out.pftrace" "$W/out.sqlite"
		r=$("$B/mt-bench" run "$B/mt-convert" "$cap" -o "$W/out.pftrace" \
			-j "$j" -q)
		[ -n "$cpu1" ] || cpu1=$(field cpu "$r")
		if ! cmp -s "$W/out.pftrace" "$W/ref.pftrace" ||
			! cmp -s "$W/out.sqlite" "$W/ref.sqlite"; then
			echo "  warning: -j $j wrote other outputs than -j 1" >&2
		fi
		awk -v j="$j" -v t="$(field seconds "$r")" -v c="$(field cpu "$r")" \
			-v rss="$(field rss_kb "$r")" -v n="$slices" -v c1="$cpu1" \
			-v bare="$bare" 'BEGIN {
			printf "  %4d %9.2f %9.2f %6.0f%% %9.1f %8.1f %10.2fx %8.2fx\n",
				j, t, c, c / t * 100, rss / 1024, rss * 1024 / n,
				c / c1, t / (bare / j) }'
	done
}

echo "cores: $cores; -j $js"
scale "one stream" "$D/raw.bin"
scale "16 streams" "$D/t16/raw.bin"
scale "4 MiB snapshot" "$S/raw.bin"

# How much of the CPU that grows with -j is the machine's own: the bare
# loop on the snapshot (three times over, to last a second or two) alone,
# then one copy of it on each core at once.  The copies share no work,
# so whatever CPU each gains is the machine's (SMT siblings sharing a
# core, the caches and memory bandwidth, a VM's neighbours), and bounds
# from below what a conversion on every core can keep to.
loops() {
	"$B/mt-bench" run sh -c "for i in 1 2 3; do '$B/mt-bench' decode '$S/raw.bin' >/dev/null; done"
}
one=$(field cpu "$(loops)")
for k in $(seq "$cores"); do
	loops >"$W/loop$k" &
done
wait
all=$(cat "$W"/loop* | sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' |
	awk '{s += $1} END {print s / NR}')
echo
awk -v one="$one" -v all="$all" -v cores="$cores" 'BEGIN {
	printf "the machine: the bare loop takes %.2f s of CPU alone, %.2f s each with %d at once: %.2fx (no work shared)\n",
		one, all, cores, all / one }'
