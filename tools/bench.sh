#!/bin/bash
# make bench: one synthetic capture with MB MiB of AUX (default 64), and,
# side by side on it: mt-convert end to end, a bare libipt block-decode
# loop (the floor of a libipt-based converter) and `perf script
# --itrace=cr` (what magic-trace runs).  Prints throughput, peak RSS and
# output bytes per slice, and the ratios.  Timings are whatever this
# machine gives today: run it twice before believing a number.
set -e
MB=${1:-64}
B=${MT_BUILD:-build}/bin
D=${MT_BUILD:-build}/bench/$MB
mkdir -p "$D"
if [ ! -f "$D/raw.bin" ]; then
	# about 0.6 bytes of AUX per branch with MTC timing
	branches=$((MB * 1048576 * 10 / 6))
	echo "generating a capture of ~$MB MiB of AUX ($branches branches)..."
	"$B/mt-synth" --seed 4242 --branches "$branches" -o "$D" >/dev/null
fi
aux_bytes=$(stat -c %s "$D/raw.bin")
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

echo "capture: $D/raw.bin ($((aux_bytes / 1048576)) MiB)"
bare=$("$B/mt-bench" decode "$D/raw.bin")
conv=$("$B/mt-bench" run "$B/mt-convert" "$D/raw.bin" -o "$D/out.pftrace" \
	--sqlite "$D/out.sqlite" 2>"$D/convert.log")
slices=$(sed -n 's/.*, \([0-9]*\) slices,.*/\1/p' "$D/convert.log")
"$B/mt-convert" "$D/raw.bin" -o "$D/plain.pftrace" --no-compress --no-sqlite -q
perf_out=$("$B/mt-bench" run sh -c "perf script -i '$D/raw.bin' --itrace=cr >/dev/null 2>&1")
blocks=$(field blocks "$bare")
tb=$(field seconds "$bare"); tc=$(field seconds "$conv"); tp=$(field seconds "$perf_out")
cpu=$(field cpu "$conv")
rss=$(field rss_kb "$conv")
pf=$(stat -c %s "$D/out.pftrace"); pl=$(stat -c %s "$D/plain.pftrace")
sq=$(stat -c %s "$D/out.sqlite")
mb=$(awk "BEGIN {print $aux_bytes / 1048576}")
awk -v mb="$mb" -v tb="$tb" -v tc="$tc" -v tp="$tp" -v blocks="$blocks" -v cpu="$cpu" \
    -v slices="$slices" -v rss="$rss" -v pf="$pf" -v pl="$pl" -v sq="$sq" 'BEGIN {
	printf "%-28s %9s %10s %12s\n", "", "seconds", "MiB/s", "Mevents/s"
	printf "%-28s %9.2f %10.1f %12.2f\n", "bare libipt block loop", tb, mb / tb, blocks / tb / 1e6
	printf "%-28s %9.2f %10.1f %12.2f\n", "mt-convert (end to end)", tc, mb / tc, slices * 2 / tc / 1e6
	printf "%-28s %9.2f %10.1f\n", "perf script --itrace=cr", tp, mb / tp
	printf "\n%d slices; peak RSS %.1f MiB = %.1f B/slice\n", slices, rss / 1024, rss * 1024 / slices
	printf ".pftrace %.1f B/slice compressed, %.1f B/slice plain; sqlite %.1f B/slice\n", pf / slices, pl / slices, sq / slices
	printf "\nratios: mt-convert is %.1fx faster than perf script (target >= 10x)\n", tp / tc
	printf "        mt-convert takes %.2fx the bare loop (target <= 1.5x)\n", tc / tb
	printf "        mt-convert kept %.0f%% of a core busy (CPU %.2f s over %.2f s)\n", cpu / tc * 100, cpu, tc
}'

# Time against size: captures of 1/16 and 1/4 of the branches (the same
# generator and seed) beside the whole one, in seconds per MiB of AUX.
echo
echo "time against size (seconds per MiB of AUX; linear when they agree):"
for part in 16 4 1; do
	if [ "$part" = 1 ]; then
		p="$D"
	else
		p="$D/part$part"
		[ -f "$p/raw.bin" ] || "$B/mt-synth" --seed 4242 \
			--branches "$((MB * 1048576 * 10 / 6 / part))" -o "$p" >/dev/null
	fi
	pb=$(stat -c %s "$p/raw.bin")
	pt=$(field seconds "$("$B/mt-bench" run "$B/mt-convert" "$p/raw.bin" \
		-o "$p/lin.pftrace" --sqlite "$p/lin.sqlite" -q)")
	awk -v part="$part" -v b="$pb" -v t="$pt" 'BEGIN {
		printf "  1/%-3s %8.1f MiB  %7.2f s  %.3f s/MiB\n", part, b / 1048576, t, t / (b / 1048576) }'
	rm -f "$p/lin.pftrace" "$p/lin.sqlite"
done
