#!/bin/bash
# SPDX-License-Identifier: MIT
# make accuracy: how much of the truth mt-convert gets right, with decode
# gaps injected, with stitching on and off (tools/mt-accuracy.c
# defines the figures).  Three tables: synthetic captures over fixed seeds
# (gaps at 0, 1 per 100k and 1 per 10k branches); synthetic captures with
# gaps placed where stitching is hardest; and the programs of
# tests/programs captured by the emulator, which drops packets the way an
# overflowing CPU does (--drop-every) and logs every call it saw.
set -e
B=${MT_BUILD:-build}/bin
R=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/mt-accuracy.XXXXXX)
trap 'rm -rf "$W"' EXIT
SEEDS=${SEEDS:-"41 42 43 44 45 46 47 48 49"}
ADV_SEEDS=${ADV_SEEDS:-"41 42 43 44 45 46"}
BRANCHES=${BRANCHES:-1000000}

# sum LABEL MODE LINES...: one row from mt-accuracy lines with "gaps=N":
# percentages averaged over the lines, counts added up; "pool%" is sure%
# over the claimed time of all the lines together, where a capture that
# claims little weighs little
sum() {
	awk -v label="$1" -v mode="$2" -v s="$3" 'BEGIN {
		n = split(s, f, /[ =]+/)
		for (i = 1; i < n; i += 2) { v[f[i]] += f[i + 1]; c[f[i]]++ }
		pool = v["claimed_ns"] > 0 ? 100 * v["claimed_ok_ns"] / v["claimed_ns"] : 100
		printf "%-24s %-4s %7.2f %7.2f %7.2f %7.2f %6.2f %6.2f %6.2f %6d %5d %11s %7d %6d\n",
			label, mode, v["calls"] / c["calls"],
			v["stack"] / c["stack"], v["root"] / c["root"],
			v["shape"] / c["shape"], v["marked"] / c["marked"],
			v["sure"] / c["sure"], pool, v["false"], v["recalled"],
			v["false_guessed"] "/" v["guessed"], v["joined"], v["gaps"]
	}'
}

header() {
	printf "%-24s %-4s %7s %7s %7s %7s %6s %6s %6s %6s %5s %11s %7s %6s\n" \
		"$1" "join" "calls%" "stack%" "root%" "shape%" "mark%" \
		"sure%" "pool%" "false" "recal" \
		"guess f/n" "joined" "gaps"
}

# synth DIR OPTS...: a capture with its truth, converted both ways
synth() {
	local d=$1
	shift
	"$B/mt-synth" "$@" -o "$d" >/dev/null
	"$B/mt-convert" "$d/raw.bin" --text "$d/on.tsv" -q --no-sqlite \
		-o "$d/on.pftrace"
	"$B/mt-convert" "$d/raw.bin" --text "$d/off.tsv" --no-stitch -q \
		--no-sqlite -o "$d/off.pftrace"
}

# judge DIR MODE: one mt-accuracy line
judge() {
	echo "$("$B/mt-accuracy" "$1/truth.tsv" "$1/$2.tsv" "$1/gaps.tsv")" \
		"gaps=$(($(wc -l <"$1/gaps.tsv") - 1))"
}

echo "Synthetic captures, seeds $SEEDS, $BRANCHES branches each:"
header "gaps"
for rate in 0 100000 10000; do
	for seed in $SEEDS; do
		opts="--seed $seed --branches $BRANCHES --no-deep"
		[ "$rate" = 0 ] || opts="$opts --gap-every $rate"
		synth "$W/$rate-$seed" $opts &
	done
	wait
	for mode in on off; do
		lines=$(for seed in $SEEDS; do judge "$W/$rate-$seed" $mode; done)
		sum "$([ "$rate" = 0 ] && echo none || echo "1/$rate")" "$mode" \
			"$(echo "$lines" | tr '\n' ' ')"
	done
	[ "$rate" = 0 ] && continue
	for k in stack marked sure; do
		printf "  %s%% per seed, joined:" "${k%ed}"
		for seed in $SEEDS; do
			judge "$W/$rate-$seed" on |
				sed "s/.* $k=\\([0-9.]*\\).*/ \\1/" | tr -d '\n'
		done
		echo
	done
done

# Gaps placed where they hurt (mt-synth --gap-at), with the deep
# recursion of one call site left in; and a trace that starts 8 frames
# deep, as when the ring lost what came before (the stack unwound at the
# end, --final-stack, gives the roots, as a capture's does).
echo
echo "Adversarial gaps, seeds $ADV_SEEDS, $BRANCHES branches each:"
header "gaps at"
for kind in syscall longjmp returns recursion,back2back ring-start; do
	for seed in $ADV_SEEDS; do
		if [ "$kind" = ring-start ]; then
			opts="--gap-every 10000 --start-depth 8 --final-stack"
		else
			opts="--gap-at $kind"
		fi
		synth "$W/adv-$kind-$seed" --seed "$seed" --branches "$BRANCHES" \
			$opts &
	done
	wait
	for mode in on off; do
		lines=$(for seed in $ADV_SEEDS; do
			judge "$W/adv-$kind-$seed" $mode
		done)
		sum "$kind" "$mode" "$(echo "$lines" | tr '\n' ' ')"
	done
	printf "  sure%% per seed, joined:"
	for seed in $ADV_SEEDS; do
		judge "$W/adv-$kind-$seed" on |
			sed "s/.* sure=\([0-9.]*\).*/ \1/" | tr -d '\n'
	done
	echo
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
# and as a user's build is: -O2 inlines, splits and tail-calls
cc -O2 -g -I"$R" -o "$W/demo-O2" "$R/examples/demo.c"
for p in longjmp signal threads recursion; do
	cc -O1 -g -pthread -o "$W/$p" "$R/tests/programs/$p.c"
done
c++ -O1 -g -o "$W/exception" "$R/tests/programs/exception.cc"
for p in demo demo-O2 longjmp signal threads exception recursion; do
	for every in 10000 1000; do
		d=$W/$p-$every
		"$B/mt-capture" --emulate=ptrace --drop-every "$every" --gaps "$d.gaps" \
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

# Go: goroutines.go's calls on the right goroutine, with the capture's
# goroutine ids and without (tools/accuracy-go.sh defines the figures).
echo
echo "Go (tests/programs/goroutines.go under --emulate=valgrind), packets dropped:"
MT_BUILD=${MT_BUILD:-build} bash "$R/tools/accuracy-go.sh"
