#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench: one synthetic capture with MB MiB of AUX (default 64), and,
# side by side on it: mt-convert end to end, a bare libipt block-decode
# loop (the floor of a libipt-based converter) and `perf script
# --itrace=cr` (what magic-trace runs).  Prints throughput, peak RSS and
# output bytes per slice, and the ratios.  Timings are whatever this
# machine gives today: run it twice before believing a number.
set -e
. "$(dirname "$0")/bench-lib.sh"
bench_capture "${1:-64}"
aux_bytes=$(stat -c %s "$D/raw.bin")
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

echo "capture: $D/raw.bin ($((aux_bytes / 1048576)) MiB)"
bare=$("$B/mt-bench" decode "$D/raw.bin")
conv=$("$B/mt-bench" run "$B/mt-convert" "$D/raw.bin" -o "$D/out.pftrace" \
	--sqlite "$D/out.sqlite" 2>"$D/convert.log")
slices=$(sed -n 's/.*, \([0-9]*\) slices,.*/\1/p' "$D/convert.log")
"$B/mt-convert" "$D/raw.bin" -o "$D/plain.pftrace" --no-compress --no-sqlite -q
perf_out=$("$B/mt-bench" run sh -c "perf script -i '$D/raw.bin' --itrace=cr >/dev/null 2>&1")
# The same conversion decoding on one thread, and without the database:
# what the parallel decode gains, and what the database costs.
serial=$("$B/mt-bench" run "$B/mt-convert" "$D/raw.bin" -o "$D/serial.pftrace" \
	--sqlite "$D/serial.sqlite" -j 1 -q)
nosql=$("$B/mt-bench" run "$B/mt-convert" "$D/raw.bin" -o "$D/nosql.pftrace" \
	--no-sqlite -q)
cmp -s "$D/out.pftrace" "$D/serial.pftrace" && cmp -s "$D/out.sqlite" "$D/serial.sqlite" ||
	echo "warning: the parallel and the serial decode wrote different outputs" >&2
rm -f "$D/serial.pftrace" "$D/serial.sqlite" "$D/nosql.pftrace"
pieces=$(sed -n 's/.*decoded in \([0-9]*\) pieces on \([0-9]*\) threads, \([0-9]*\) of them.*/\1 pieces on \2 threads, \3 joined/p' "$D/convert.log")
# A typical snapshot: 4 MiB of AUX for one thread.
S=${MT_BUILD:-build}/bench/snap4
# (about 0.95 bytes of AUX a branch at this size)
[ -f "$S/raw.bin" ] || "$B/mt-synth" --seed 4243 --branches "$((4 * 1048576 * 100 / 95))" \
	-o "$S" >/dev/null
# The runs above leave gigabytes of dirty pages that the snapshot's own
# sync would wait for: written out first.  Best of three, as it is short.
sync
snap=
for _ in 1 2 3; do
	rm -f "$S/out.pftrace" "$S/out.sqlite"
	r=$("$B/mt-bench" run "$B/mt-convert" "$S/raw.bin" -o "$S/out.pftrace" -q)
	if [ -z "$snap" ] || awk -v a="$(field seconds "$r")" \
		-v b="$(field seconds "$snap")" 'BEGIN {exit !(a < b)}'; then
		snap=$r
	fi
done
snap_mb=$(awk "BEGIN {print $(stat -c %s "$S/raw.bin") / 1048576}")
rm -f "$S/out.pftrace" "$S/out.sqlite"
blocks=$(field blocks "$bare")
tb=$(field seconds "$bare"); tc=$(field seconds "$conv"); tp=$(field seconds "$perf_out")
cpu=$(field cpu "$conv")
ts=$(field seconds "$serial"); cns=$(field cpu "$nosql"); tsnap=$(field seconds "$snap")
rss=$(field rss_kb "$conv")
pf=$(stat -c %s "$D/out.pftrace"); pl=$(stat -c %s "$D/plain.pftrace")
sq=$(stat -c %s "$D/out.sqlite")
mb=$(awk "BEGIN {print $aux_bytes / 1048576}")
awk -v mb="$mb" -v tb="$tb" -v tc="$tc" -v tp="$tp" -v blocks="$blocks" -v cpu="$cpu" -v ts="$ts" \
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
	printf "        decoding on one thread (-j 1) it takes %.2f s: %.2fx\n", ts, ts / tc
}'
echo "parallel decode: ${pieces:-not cut}"
awk -v mb="$mb" -v tb="$tb" -v tc="$tc" -v tp="$tp" -v cpu="$cpu" -v cns="$cns" \
    -v slices="$slices" -v rss="$rss" -v pf="$pf" -v pl="$pl" -v sq="$sq" \
    -v tsnap="$tsnap" -v snap_mb="$snap_mb" 'BEGIN {
	printf "\n%-40s %-12s %s\n", "target", "wanted", "measured"
	printf "%-40s %-12s %.2fx\n", "end to end / bare libipt loop", "<= 1.5x", tc / tb
	printf "%-40s %-12s %.1fx\n", "faster than perf script --itrace=cr", ">= 10x", tp / tc
	printf "%-40s %-12s %.0f%%\n", "CPU use during the conversion", "> 180%", cpu / tc * 100
	printf "%-40s %-12s %.2f us\n", "SQLite CPU a slice (with - without)", "<= 0.3 us", (cpu - cns) / slices * 1e6
	printf "%-40s %-12s %.1f B\n", "peak RSS a slice", "<= 48 B", rss * 1024 / slices
	printf "%-40s %-12s %.1f B\n", ".pftrace a slice, plain", "<= 24 B", pl / slices
	printf "%-40s %-12s %.2f B\n", ".pftrace a slice, compressed", "<= 2.5 B", pf / slices
	printf "%-40s %-12s %.1f B\n", "database a slice", "<= 48 B", sq / slices
	printf "%-40s %-12s %.2f s (%.1f MiB)\n", "a 4 MiB one-thread snapshot, end to end", "< 0.5 s", tsnap, snap_mb
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
	# (the run before left its outputs to write back, as above)
	sync
	pt=$(field seconds "$("$B/mt-bench" run "$B/mt-convert" "$p/raw.bin" \
		-o "$p/lin.pftrace" --sqlite "$p/lin.sqlite" -q)")
	awk -v part="$part" -v b="$pb" -v t="$pt" 'BEGIN {
		printf "  1/%-3s %8.1f MiB  %7.2f s  %.3f s/MiB\n", part, b / 1048576, t, t / (b / 1048576) }'
	rm -f "$p/lin.pftrace" "$p/lin.sqlite"
done

# Inlined calls: tests/programs/inline.c (a hot loop inlining three deep,
# -O2 -g), captured once by the emulator, converted with and without its
# inlined calls.  The slices they add are written like any others; the
# rest is reading each binary's DWARF once and walking the ranges of the
# blocks of functions that inlined something.
I=${MT_BUILD:-build}/bench/inline
mkdir -p "$I"
if [ ! -f "$I/raw.bin" ]; then
	cc -O2 -g -o "$I/inline" tests/programs/inline.c
	echo "capturing tests/programs/inline.c (emulated, about a minute)..."
	"$B/mt-capture" --emulate=ptrace -o "$I/raw.bin" -- "$I/inline" 100000 >/dev/null 2>&1
fi
# best of three: a conversion of a few tenths of a second is noisy here
best() {
	local t m=
	for _ in 1 2 3; do
		t=$(field seconds "$("$B/mt-bench" run "$B/mt-convert" "$I/raw.bin" \
			-o "$I/$1.pftrace" -j 1 "${@:2}" 2>"$I/$1.log")")
		m=$(awk -v a="$t" -v b="${m:-$t}" 'BEGIN {print (a < b ? a : b)}')
	done
	echo "$m"
}
iw=$(best with)
io=$(best without --no-inline)
sw=$(sed -n 's/.*, \([0-9]*\) slices,.*/\1/p' "$I/with.log")
so=$(sed -n 's/.*, \([0-9]*\) slices,.*/\1/p' "$I/without.log")
rm -f "$I"/with.* "$I"/without.*
echo
awk -v tw="$iw" -v to="$io" -v sw="$sw" -v so="$so" -v tc="$tc" -v slices="$slices" \
    -v kb="$(($(stat -c %s "$I/raw.bin") / 1024))" 'BEGIN {
	printf "inlined calls (%d KiB of AUX, -j 1): %.2f s with them (%d slices), %.2f s with --no-inline (%d slices): +%.0f%%,\n",
		kb, tw, sw, to, so, (tw / to - 1) * 100
	printf "  %.2f us an inlined slice (the synthetic capture above: %.2f us a slice end to end)\n",
		(tw - to) / (sw - so) * 1e6, tc / slices * 1e6 }'

# Where the time goes: mt-convert --stages prints "stage NAME WALL CPU
# PEAK OWN" for each stage, OWN being the CPU of the thread that ran the
# stage, not of its workers: the decode's is the longer of its handing
# the events over and the joining of the call trees' pieces, Perfetto's the
# encoding its thread does itself and the hand-over of its encoders'
# batches, SQLite's what its thread does beside its pools.  That work is
# on one thread whatever the cores; the rest of a stage's CPU is spread
# over them.  The run is made with -j J (16 unless told: JOBS), so that
# every stage is cut as it would be on J cores, whatever this machine
# has (its wall times then mean little).  Perfetto and SQLite run side
# by side: as one stage, their one-thread part is the longer of their
# two threads', and the rest spreads over 16 threads at most (8 each,
# CV_WRITER_JOBS in convert/convert.c).  On K cores a stage then takes,
# as Amdahl's law has it, its one-thread part plus the rest over K (or
# over its threads).  The database's pages go out on one thread, in
# order, each write waiting for the disk: the writers take at least the
# database's size at what the disk writes here (direct writes of 4 MiB,
# as the database's are), however many the cores.  Predicted so on 4,
# 8, 16 and 64 cores, for both shapes of capture: the bench capture (one
# stream) and 16 streams (made as make bench-scale makes them), and for
# the 4 MiB snapshot (target: under 0.15 s on 16 cores), each
# from its own table cut at -j J (on 4 and 8 cores the cut would be
# coarser: fewer pieces, the same work).
if ! "$B/mt-convert" --help | grep -q -- '--stages'; then
	echo "stages: skipped (mt-convert has no --stages)"
	exit 0
fi
J=${JOBS:-16}
sync
# The disk, quiet after the sync: 512 MiB written the way the
# database's pages are, the faster of two tries (a disk shared with
# other machines varies).
disk_once() {
	dd if=/dev/zero of="$D/disk.tmp" bs=4M count=128 oflag=direct 2>&1 ||
		dd if=/dev/zero of="$D/disk.tmp" bs=4M count=128 conv=fsync 2>&1 || true
	rm -f "$D/disk.tmp"
}
disk_rate=$( { disk_once; disk_once; } |
	sed -n 's/^\([0-9]*\) bytes .* copied, \([0-9.]*\) s,.*/\1 \2/p' |
	awk '$2 > 0 && $1 / $2 > r { r = $1 / $2 } END { if (r) print r }')
# stages NAME CAPTURE: the stage table of CAPTURE converted with -j J,
# and what it predicts on 4 to 64 cores.
stages() {
	local name=$1 cap=$2 bare dbbytes
	bare=$(field seconds "$("$B/mt-bench" decode "$cap")")
	sync
	"$B/mt-convert" "$cap" -o "$D/stages.pftrace" --sqlite "$D/stages.sqlite" \
		--stages -q -j "$J" 2>&1 | grep '^stage ' >"$D/stages.txt" || true
	dbbytes=$(stat -c %s "$D/stages.sqlite" 2>/dev/null || echo 0)
	rm -f "$D/stages.pftrace" "$D/stages.sqlite"
	echo
	echo "$name: $cap (bare libipt loop $bare s on one thread)"
	awk -v J="$J" -v P="$(nproc)" -v tb="$bare" -v db="$dbbytes" \
		-v rate="${disk_rate:-0}" -v perf="$3" '
	{ name[NR] = $2; w[NR] = $3; c[NR] = $4; own[NR] = $6 + 0; wr[NR] = $7 + 0; n = NR }
	END {
		if (!n) { print "stages: mt-convert --stages printed none"; exit }
		printf "stages with -j %d (on %d cores here; one-thread: the CPU of the stage'"'"'s own thread):\n", J, P
		printf "  %-20s %8s %8s %10s %8s\n", "stage", "wall s", "CPU s", "1-thread s", "share"
		for (i = 1; i <= n; i++) {
			s = own[i] > c[i] ? c[i] : own[i]
			if (name[i] == "perfetto" || name[i] == "sqlite") {
				ws = ws > s ? ws : s; wc += c[i]
				wall = wall > w[i] ? wall : w[i]
			} else {
				S += s; PAR += c[i] - s
			}
			ser[i] = s; C += c[i]
		}
		S += ws; WPAR = wc - ws; T1 = S + PAR + WPAR
		for (i = 1; i <= n; i++)
			if (name[i] == "perfetto" || name[i] == "sqlite")
				printf "  %-20s %8.2f %8.2f %10.2f %8s\n", name[i], w[i], c[i], ser[i], "(below)"
			else
				printf "  %-20s %8.2f %8.2f %10.2f %7.1f%%\n", name[i], w[i], c[i], ser[i],
					T1 ? ser[i] / T1 * 100 : 0
		printf "  %-20s %8.2f %8.2f %10.2f %7.1f%%\n", "perfetto | sqlite", wall, wc, ws,
			T1 ? ws / T1 * 100 : 0
		printf "  %-20s %8s %8.2f %10.2f %7.1f%%\n", "all", "", C, S, T1 ? S / T1 * 100 : 0
		# the disk: the database at its rate, on one thread
		floor = rate > 0 ? db / rate : 0
		for (i = 1; i <= n; i++)
			if (name[i] == "sqlite")
				dbw = wr[i]
		if (floor > 0)
			printf "  the database'"'"'s %.2f GB at %.2f GB/s (this disk, direct writes of 4 MiB): %.2f s on one thread at best (its writes waited %.2f s here)\n",
				db / 1e9, rate / 1e9, floor, dbw
		for (k = 4; k <= 64; k *= 2) {
			if (k == 32)
				continue
			wt = ws + WPAR / (k < 16 ? k : 16)
			wt = wt > floor ? wt : floor
			t = S - ws + PAR / k + wt
			printf "  on %2d cores: %.2f s at best (%.2f s on one thread, %.2f s over %d, the writers %.2f s: %.2f s on one thread and %.2f s over %d, or the disk): its CPU time over %.1f, %.1fx the bare loop over %d cores (target <= 2x)",
				k, t, S - ws, PAR, k, wt, ws, WPAR, k < 16 ? k : 16, T1 / t, t / (tb / k), k
			if (perf > 0)
				printf "; %.1fx faster than perf script (target >= 40x on 16)", perf / t
			printf "\n"
		}
		# what no spreading beats: every CPU second over the cores,
		# none on one thread and no disk
		dec = 0
		for (i = 1; i <= n; i++)
			if (name[i] == "decode")
				dec = c[i]
		printf "  the floor on 16 cores, all %.2f s of CPU spread and none on one thread: %.2f s, %.1fx the bare loop over 16 (the decode alone %.1fx)",
			T1, T1 / 16, (T1 / 16) / (tb / 16), dec / tb
		if (perf > 0)
			printf "; %.1fx faster than perf script", perf / (T1 / 16)
		printf "\n"
	}' "$D/stages.txt"
}
# Both shapes of the issue: the bench capture (one stream) and 16
# streams of as many branches in all (make bench-scale's).
if [ ! -f "$D/t16/raw.bin" ]; then
	echo "generating 16 streams of $((branches / 16)) branches each..."
	"$B/mt-synth" --seed 4244 --threads 16 --branches "$((branches / 16))" \
		-o "$D/t16" >/dev/null
fi
stages "one stream" "$D/raw.bin" "$tp"
stages "16 streams" "$D/t16/raw.bin"
stages "4 MiB snapshot" "$S/raw.bin"
