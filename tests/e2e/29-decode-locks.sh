#!/bin/bash
# SPDX-License-Identifier: MIT
# The threads of a parallel decode read the code from sections of their
# own (image/view.c): libipt locks a section at every instruction it
# reads outside its block cache, and threads sharing sections queue on
# those locks (on 16 cores: more time waking each other than decoding).
# A counter preloaded into mt-convert (tests/tools/lockshare.c) counts
# libipt's locks and those taken on a mutex another thread locked first:
# with -j 4 in small pieces, libipt must lock often (the path is taken)
# and next to never on another thread's mutex.
B=${MT_BUILD:?}/bin
ROOT=${MT_ROOT:-.}
W=$(mktemp -d /tmp/mt-e2e-locks29.XXXXXX)
trap 'rm -rf "$W"' EXIT

CC=${CC:-cc}
if ! command -v "$CC" >/dev/null; then
	echo "SKIP decode_locks: no C compiler to build the counter"
	exit 0
fi
if ! "$CC" -O2 -shared -fPIC -o "$W/liblockshare.so" \
	"$ROOT/tests/tools/lockshare.c" -ldl 2>"$W/cc.log"; then
	echo "FAIL decode_locks: the counter does not build"
	sed 's/^/    /' "$W/cc.log" | head -5
	exit 0
fi

# case NAME SYNTH-OPTIONS...
case_() {
	local name=$1 d="$W/$1" line total shared
	shift
	if ! "$B/mt-synth" "$@" -o "$d" >"$W/synth.log" 2>&1; then
		echo "FAIL decode_locks_$name: mt-synth $*"
		return
	fi
	# An ASan build wants its runtime first; the counter needs none.
	if ! MT_LOCKSHARE="$d/locks" LD_PRELOAD="$W/liblockshare.so" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$B/mt-convert" "$d/raw.bin" -o "$d/out.pftrace" -j 4 \
		--piece-size 4K -q 2>"$d/err"; then
		echo "FAIL decode_locks_$name: mt-convert failed"
		tail -2 "$d/err" | sed 's/^/    /'
		return
	fi
	line=$(cat "$d/locks" 2>/dev/null)
	total=$(sed -n 's/.*libipt_locks \([0-9]*\).*/\1/p' <<<"$line")
	shared=$(sed -n 's/.*shared_locks \([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$total" ] || [ -z "$shared" ]; then
		echo "FAIL decode_locks_$name: the counter wrote nothing ($line)"
	elif [ "$total" -lt 2000 ]; then
		echo "FAIL decode_locks_$name: libipt locked $total times" \
			"(the path the test is for was not taken)"
	elif [ $((shared * 100)) -gt "$total" ]; then
		echo "FAIL decode_locks_$name: $shared of libipt's $total locks" \
			"on a mutex another thread locked first"
	else
		echo "PASS decode_locks_$name ($shared of $total libipt locks" \
			"shared)"
	fi
}

case_ one --seed 7 --branches 150000
case_ threads --seed 8 --branches 200000 --threads 4
