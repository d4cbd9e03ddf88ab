#!/bin/bash
# SPDX-License-Identifier: MIT
# Programs whose runtimes leave frames without a ret of their own, under
# the Valgrind backend: a Rust program whose panics unwind through
# _Unwind_RaiseException and the landing pads to catch_unwind (legacy
# and v0 symbol names, a debug and an optimised build), and an OCaml
# program whose exceptions return into a trap frame far up the stack
# (caml_raise_exn with -g, with and without backtraces; the raise
# inlined as a jump without -g; traced from a function whose raise
# lands in a caller never seen).  For each, perf's decode has the calls
# of the tool's log (--truth), by address, and the tree mt-convert
# builds equals the log call for call, with the frames the unwinding
# left ended where it left them; the functions are named as their
# language writes them.
# Debian's compilers are the ones held to this (rustc 1.63, ocamlopt
# 4.13): another rustc first on PATH is not used.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-rt.XXXXXX)
trap 'rm -rf "$W"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

if ! command -v valgrind >/dev/null || [ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	echo "SKIP runtimes (valgrind or its tool not built: apt-get install valgrind)"
	exit 0
fi
REALPROGS_LIB=1 . "$R/tools/realprogs.sh"

# runtime NAME PROG [mt-capture options]: capture PROG with the log;
# perf's calls equal the log's, mt-convert's tree equals the log, and the
# log has unwound frames (else the program did not unwind where the test
# needs it to).
runtime() {
	local name=$1 prog=$2 out unwound
	shift 2
	if ! "$B/mt-capture" --emulate=valgrind "$@" --truth "$W/$name.truth" \
		-o "$W/$name.bin" -- "$prog" >"$W/$name.out" 2>"$W/$name.err"; then
		echo "FAIL rt_$name: mt-capture failed"
		sed 's/^/    /' "$W/$name.err" | tail -5
		return 1
	fi
	unwound=$(awk -F'\t' 'NR > 1 && $6 ~ /unwound/' "$W/$name.truth" | wc -l)
	truth_calls "$W/$name.truth" >"$W/$name.tcalls"
	perf_calls "$W/$name.bin" | grep ' c$' >"$W/$name.pcalls"
	if perf script -i "$W/$name.bin" --itrace=cre 2>&1 | grep -q 'trace error'; then
		echo "FAIL rt_${name}_perf: perf reports errors"
	elif out=$(same_calls "$W/$name.tcalls" 2 "$W/$name.pcalls"); then
		echo "PASS rt_${name}_perf ($(wc -l <"$W/$name.tcalls") calls)"
	else
		echo "FAIL rt_${name}_perf: ${out//$'\n'/; }"
	fi
	if ! "$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" --no-sqlite \
		--text "$W/$name.tsv" -q 2>"$W/$name.cerr"; then
		echo "FAIL rt_$name: mt-convert failed"
		sed 's/^/    /' "$W/$name.cerr" | tail -5
		return 1
	fi
	if [ "$unwound" -lt 4 ]; then
		echo "FAIL rt_${name}_truth: the log has $unwound unwound frames"
	elif out=$("$B/mt-tree-check" "$W/$name.truth" "$W/$name.tsv" \
		--tol-ns 1000000 --callers 2>&1); then
		echo "PASS rt_${name}_truth ($unwound unwound; ${out//$'\n'/; })"
	else
		echo "FAIL rt_${name}_truth: ${out//$'\n'/; }"
	fi
}

# names NAME FUNCTION...: the tree names each function as its language
# writes it, every call of it (one per round of the program), and no
# name of the program's own is left mangled.
names() {
	local name=$1 f n bad=
	shift
	for f in "$@"; do
		n=$(awk -F'\t' -v f="$f" '$3 == f' "$W/$name.tsv" | wc -l)
		[ "$n" = "$rounds" ] || bad="$bad $f:$n"
	done
	n=$(cut -f3 "$W/$name.tsv" | grep -c -E '^(_ZN5panic|_RNv.*5panic|camlRaise__)')
	[ "$n" = 0 ] || bad="$bad mangled:$n"
	if [ -z "$bad" ]; then
		echo "PASS rt_${name}_names ($*)"
	else
		echo "FAIL rt_${name}_names: calls of each (want $rounds):$bad"
	fi
}

RUSTC=/usr/bin/rustc
if [ ! -x "$RUSTC" ]; then
	echo "SKIP rt_rust (no Debian rustc: apt-get install rustc)"
else
	for v in "debug|-C debuginfo=1" "opt|-O -C debuginfo=1" \
		"v0|-C debuginfo=1 -C symbol-mangling-version=v0"; do
		IFS='|' read -r n flags <<<"$v"
		# shellcheck disable=SC2086
		if ! "$RUSTC" $flags -o "$W/panic_$n" "$R/tests/programs/panic.rs" \
			>"$W/rustc_$n.err" 2>&1; then
			echo "FAIL rt_panic_$n: rustc failed"
			sed 's/^/    /' "$W/rustc_$n.err" | tail -3
			continue
		fi
		runtime "panic_$n" "$W/panic_$n" &&
			rounds=5 names "panic_$n" panic::round panic::level1 \
				panic::level2 panic::level3 panic::leaf
	done
fi

OCAMLOPT=/usr/bin/ocamlopt
if [ ! -x "$OCAMLOPT" ]; then
	echo "SKIP rt_ocaml (no Debian ocamlopt: apt-get install ocaml-nox)"
else
	cp "$R/tests/programs/raise.ml" "$W/raise.ml"
	for v in "g|-g" "nog|"; do
		IFS='|' read -r n flags <<<"$v"
		# shellcheck disable=SC2086
		if ! (cd "$W" && "$OCAMLOPT" $flags -o "$W/raise_$n" raise.ml) \
			>"$W/ocamlopt_$n.err" 2>&1; then
			echo "FAIL rt_raise_$n: ocamlopt failed"
			sed 's/^/    /' "$W/ocamlopt_$n.err" | tail -3
			continue
		fi
		runtime "raise_$n" "$W/raise_$n" &&
			rounds=6 names "raise_$n" Raise.round Raise.level1 \
			Raise.middle Raise.level3 Raise.leaf
	done
	# Backtraces on: caml_raise_exn calls caml_stash_backtrace first.
	if [ -x "$W/raise_g" ]; then
		OCAMLRUNPARAM=b runtime raise_bt "$W/raise_g"
	fi
	# From the first call of middle: the raise into round's handler
	# lands in a function the trace never saw, which it reveals.
	mid=$(nm "$W/raise_g" 2>/dev/null | awk '$3 ~ /^camlRaise__middle_[0-9]+$/ {print $3}')
	if [ -x "$W/raise_g" ] && [ -n "$mid" ]; then
		runtime raise_start "$W/raise_g" --start-at "$mid"
	fi
fi
