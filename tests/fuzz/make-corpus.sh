#!/bin/bash
# SPDX-License-Identifier: MIT
# Regenerates the committed seed corpus (corpus/convert, corpus/info) and
# the binaries its captures map (binaries/.build-id/xx/rest, found by
# build id whatever the path a capture recorded).  Run from the source
# root after `make`: bash tests/fuzz/make-corpus.sh
#
# Seeds stay small (a few KB; the two real captures are 180 KB) so that
# libFuzzer's mutations land on structure, not on bulk trace bytes.
set -e
B=${MT_BUILD:-build}/bin
F=tests/fuzz
SHARED=${MT_SHARED:-../shared}
W=$(mktemp -d /tmp/mt-fuzz-seeds.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p $F/corpus/convert $F/corpus/info $F/binaries

# keep NAME CAPTURE [BINARY...]: a seed for both targets, and its binaries
# under their build ids.
keep() {
	local name=$1 cap=$2; shift 2
	cp "$cap" "$F/corpus/convert/$name"
	cp "$cap" "$F/corpus/info/$name"
	for bin in "$@"; do
		local id
		id=$(readelf -n "$bin" | sed -n 's/.*Build ID: //p')
		[ -n "$id" ] || { echo "no build id in $bin" >&2; exit 1; }
		mkdir -p "$F/binaries/.build-id/${id:0:2}"
		cp "$bin" "$F/binaries/.build-id/${id:0:2}/${id:2}"
	done
}

synth() { # NAME ARGS...
	local name=$1; shift
	"$B/mt-synth" "$@" -o "$W/s-$name" >/dev/null
	keep "synth-$name" "$W/s-$name/raw.bin" "$W/s-$name/prog"
}

synth tsc --seed 1 --branches 3000 --timing tsc
synth mtc --seed 2 --branches 3000 --timing mtc
synth cyc --seed 3 --branches 3000 --timing cyc
synth noretcomp --seed 4 --branches 3000 --noretcomp
synth threads --seed 5 --branches 4000 --threads 3
synth percpu --seed 6 --branches 4000 --threads 2 --per-cpu
synth gaps --seed 7 --branches 6000 --gap-every 1000
synth gapat --seed 8 --branches 6000 --gap-at all
synth final --seed 9 --branches 3000 --final-stack --start-depth 4
synth periods --seed 10 --branches 4000 --psb-period 0 --mtc-period 0 \
	--timing cyc
synth nodeep --seed 11 --branches 3000 --no-deep --timing tsc --noretcomp
synth deep --seed 12 --branches 6000 --start-depth 3 --final-stack \
	--gap-every 2500 --threads 2 --per-cpu

# Real programs, emulated: libc and ld.so are found at their recorded
# paths when this machine's build ids match, and missing otherwise.
cc -O1 -g -I. -o "$W/stub" tests/programs/stub.c
cc -O1 -g -o "$W/longjmp" tests/programs/longjmp.c
cc -O1 -g -pthread -o "$W/threads" tests/programs/threads.c
"$B/mt-capture" --emulate=ptrace -o "$W/stub.bin" -- "$W/stub" >/dev/null 2>&1
"$B/mt-capture" --emulate=ptrace -o "$W/longjmp.bin" -- "$W/longjmp" >/dev/null 2>&1
"$B/mt-capture" --emulate=ptrace --drop-every 200 -o "$W/threads.bin" \
	-- "$W/threads" >/dev/null 2>&1
keep emulate-stub "$W/stub.bin" "$W/stub"
keep emulate-longjmp "$W/longjmp.bin" "$W/longjmp"
keep emulate-threads "$W/threads.bin" "$W/threads"

# Real hardware: its binaries are not available, so these exercise the
# reader on perf's own layouts and the missing-binary paths.
for f in perf.data.intel_pt-4.14 perf.data.piped.intel_pt-4.14; do
	[ -f "$SHARED/testdata/$f" ] && keep "real-$f" "$SHARED/testdata/$f"
done

# JIT symbols for the synthetic process (pid 4242), past its code.
printf '0x500000 40 jit_entry\n500040 0x20 jit_helper\n' \
	>$F/binaries/perf-4242.map
ls -la $F/corpus/convert
du -sh $F/binaries $F/corpus
