#!/bin/bash
# SPDX-License-Identifier: MIT
# Fuzzing in the test suite.
#  1. Every regression input (tests/fuzz/regress) and every seed
#     (tests/fuzz/corpus) through mt-convert and mt-convert --info of the
#     sanitizer build: no crash, no sanitizer report, no hang.
#  2. With clang's libFuzzer: the same inputs through the fuzz targets,
#     then each target fuzzed for MT_FUZZ_SECONDS (default 60) seconds;
#     0 skips the fuzzing.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
F=$R/tests/fuzz
S=${MT_FUZZ_SECONDS:-60}
W=$(mktemp -d /tmp/mt-e2e-fuzz46.XXXXXX)
trap 'rm -rf "$W"' EXIT
bins=(--binaries "$F/binaries" --debug-root "$F/binaries" --jit-dir
	"$F/binaries")

# replay NAME FILES...: each file through mt-convert (--info for info).
replay() {
	local name=$1 bad=0 n=0 rc; shift
	for f in "$@"; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if [ "$name" = info ]; then
			timeout 60 "$B/mt-convert" --info "$f" \
				</dev/null >/dev/null 2>"$W/err"
		else
			timeout 60 "$B/mt-convert" "$f" -o "$W/t.pftrace" -q \
				"${bins[@]}" </dev/null >/dev/null 2>"$W/err"
		fi
		rc=$?
		if [ $rc -ge 124 ] ||
			grep -q 'Sanitizer\|runtime error' "$W/err"; then
			echo "    ${f#"$R"/}: exit $rc"
			grep -m3 'ERROR\|runtime error\|^mt-convert' "$W/err" |
				sed 's/^/      /'
			bad=$((bad + 1))
		fi
	done
	if [ $bad -eq 0 ]; then
		echo "PASS fuzz_replay_$name ($n inputs through mt-convert)"
	else
		echo "FAIL fuzz_replay_$name: $bad of $n inputs"
	fi
}

replay convert "$F"/regress/convert/* "$F"/corpus/convert/*
replay info "$F"/regress/info/* "$F"/corpus/info/*

# libFuzzer needs clang and its runtime (libclang-rt-14-dev on Debian).
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)\n{\n'\
'	(void)d;\n	(void)n;\n	return 0;\n}\n' >"$W/probe.c"
if ! command -v clang >/dev/null; then
	echo "SKIP fuzz_targets (no clang)"
	exit 0
fi
if ! clang -fsanitize=fuzzer,address,undefined "$W/probe.c" -o "$W/probe" \
	>/dev/null 2>&1; then
	echo "SKIP fuzz_targets (clang has no libFuzzer runtime:" \
		"install libclang-rt-14-dev)"
	exit 0
fi
cd "$R" || exit 1
if ! make -s -j2 -f tests/fuzz/fuzz.mk >"$W/build.log" 2>&1; then
	echo "FAIL fuzz_build:"
	tail -5 "$W/build.log" | sed 's/^/    /'
	exit 0
fi
echo "PASS fuzz_build"

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export MT_FUZZ_BINARIES=$F/binaries
# target_replay NAME: regressions and seeds through build/fuzz/fuzz-NAME,
# all in one process; a failure is then narrowed down to its inputs.
target_replay() {
	local t=$1 files bad=0
	files=("$F"/regress/$t/* "$F"/corpus/$t/*)
	if build/fuzz/fuzz-$t -timeout=30 "${files[@]}" </dev/null \
		>"$W/replay.log" 2>&1; then
		echo "PASS fuzz_target_replay_$t (${#files[@]} inputs)"
		return
	fi
	for f in "${files[@]}"; do
		if ! build/fuzz/fuzz-$t -timeout=30 "$f" </dev/null \
			>"$W/one.log" 2>&1; then
			echo "    ${f#"$R"/}:"
			grep -m3 'ERROR\|runtime error\|ALARM' "$W/one.log" |
				sed 's/^/      /'
			bad=$((bad + 1))
		fi
	done
	echo "FAIL fuzz_target_replay_$t: $bad of ${#files[@]} inputs"
}
target_replay convert
target_replay info

[ "$S" -gt 0 ] 2>/dev/null || exit 0
mkdir -p build/fuzz/artifacts
FUZZ_WORK=$W bash tests/fuzz/run.sh "$S"
exit 0
