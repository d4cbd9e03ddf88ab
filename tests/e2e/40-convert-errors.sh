#!/bin/bash
# SPDX-License-Identifier: MIT
# Bad input: one clear line naming the file, a non-zero exit, no crash
# (the sanitizers are on), no hang and no output file left behind.
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-err.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$B/mt-synth" --seed 5 --branches 3000 -o "$W/s" >/dev/null || {
	echo "FAIL convert_errors: mt-synth failed"; exit 0; }

# expect_fail NAME PATTERN ARGS...: exit non-zero, one line matching
# PATTERN, and no trace or database left in $W/out.
expect_fail() {
	local name=$1 pat=$2; shift 2
	rm -rf "$W/out"; mkdir -p "$W/out"
	timeout 60 "$B/mt-convert" "$@" >"$W/stdout" 2>"$W/stderr"
	local rc=$?
	if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
		echo "FAIL convert_errors_$name: exit status $rc"
	elif [ "$(wc -l <"$W/stderr")" -ne 1 ] || ! grep -q -- "$pat" "$W/stderr"; then
		echo "FAIL convert_errors_$name: message:"; sed 's/^/    /' "$W/stderr" | head -5
	elif [ -n "$(ls -A "$W/out")" ]; then
		echo "FAIL convert_errors_$name: left $(ls "$W/out")"
	else
		echo "PASS convert_errors_$name"
	fi
}

head -c 4096 /dev/urandom >"$W/garbage"
: >"$W/empty"
expect_fail missing "$W/nope.bin" "$W/nope.bin" -o "$W/out/t.pftrace"
expect_fail garbage "$W/garbage" "$W/garbage" -o "$W/out/t.pftrace"
expect_fail empty "$W/empty" "$W/empty" -o "$W/out/t.pftrace"
expect_fail directory "$W/s" "$W/s" -o "$W/out/t.pftrace"
expect_fail no_output "no output" "$W/s/raw.bin"
expect_fail bad_option "unknown option" "$W/s/raw.bin" --frobnicate -o "$W/out/t.pftrace"
expect_fail unwritable "$W/out/nodir/t.pftrace" "$W/s/raw.bin" -o "$W/out/nodir/t.pftrace"

# Truncated captures: every cut either converts what is there or fails
# cleanly with one line; never a crash.
size=$(stat -c %s "$W/s/raw.bin")
bad=0
for cut in 0 7 8 100 104 500 1000 2000 $((size / 2)) $((size - 8)) $((size - 1)); do
	[ "$cut" -lt "$size" ] || continue
	head -c "$cut" "$W/s/raw.bin" >"$W/cut.bin"
	timeout 60 "$B/mt-convert" "$W/cut.bin" -o "$W/cut.pftrace" -q \
		>"$W/stdout" 2>"$W/stderr"
	rc=$?
	if [ $rc -ge 124 ] || { [ $rc -ne 0 ] && [ "$(wc -l <"$W/stderr")" -ne 1 ]; } ||
		grep -q 'ERROR: AddressSanitizer\|runtime error' "$W/stderr"; then
		echo "    cut at $cut: exit $rc"; sed 's/^/    /' "$W/stderr" | head -3
		bad=1
	fi
done
[ $bad -eq 0 ] && echo "PASS convert_errors_truncated" || echo "FAIL convert_errors_truncated"

# A binary cut short, or whose headers point past its end, is one that
# cannot be used: the conversion succeeds, says once what is wrong with
# it, and names its code as a missing binary's.  Cut at every kind of
# place: in the ELF header, in the program headers, before its code, in
# it, and headers that point past the end of the whole file.
cp "$W/s/prog" "$W/prog.orig"
size=$(stat -c %s "$W/prog.orig")
# put64 FILE OFFSET VALUE: a little-endian 64-bit field
put64() {
	printf "$(printf '%016x' "$3" | sed 's/\(..\)/\1 /g' |
		awk '{for (i = NF; i > 0; i--) printf "\\x%s", $i}')" |
		dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# the program header of the code
xhdr=$(readelf -lW "$W/prog.orig" | awk '/^  [A-Z]/ && $1 != "Type" { n++ }
	$1 == "LOAD" && $0 ~ / R E / { print n - 1; exit }')
bad=0
for cut in 40 64 100 300 1000 2000 4095 4096 5000 phoff code_offset code_size; do
	case $cut in
	phoff) cp "$W/prog.orig" "$W/s/prog"; put64 "$W/s/prog" 32 $((size + 4096)) ;;
	code_offset) cp "$W/prog.orig" "$W/s/prog"
		put64 "$W/s/prog" $((64 + 56 * xhdr + 8)) $((size + 4096)) ;;
	code_size) cp "$W/prog.orig" "$W/s/prog"
		put64 "$W/s/prog" $((64 + 56 * xhdr + 32)) $((1 << 62)) ;;
	*) head -c "$cut" "$W/prog.orig" >"$W/s/prog" ;;
	esac
	timeout 60 "$B/mt-convert" "$W/s/raw.bin" -o "$W/c.pftrace" --text "$W/c.tsv" \
		-q >"$W/stdout" 2>"$W/stderr"
	rc=$?
	if [ $rc -ne 0 ] || [ "$(wc -l <"$W/stderr")" -ne 1 ] ||
		! grep -q "binary $W/s/prog .*cannot be used: [a-z]" "$W/stderr" ||
		! grep -q 'unknown @' "$W/c.tsv"; then
		echo "    $cut: exit $rc"; sed 's/^/    /' "$W/stderr" | head -3
		bad=1
	fi
done
cp "$W/prog.orig" "$W/s/prog"
[ $bad -eq 0 ] && echo "PASS convert_errors_cut_binary" || echo "FAIL convert_errors_cut_binary"

# A binary that is missing: the conversion succeeds, says so once, and
# names the code it cannot decode.
mv "$W/s/prog" "$W/s/prog.away"
if "$B/mt-convert" "$W/s/raw.bin" -o "$W/m.pftrace" --text "$W/m.tsv" \
	>"$W/stdout" 2>"$W/stderr" &&
	[ "$(grep -c 'not found' "$W/stderr")" -eq 1 ] &&
	grep -q 'unknown @' "$W/m.tsv"; then
	echo "PASS convert_errors_missing_binary"
else
	echo "FAIL convert_errors_missing_binary"; sed 's/^/    /' "$W/stderr" | head -5
fi
# ... but a JIT map (perf-PID.map) can name its code.
nm "$W/s/prog.away" | awk '$2 ~ /[tT]/ {printf "%s 10 %s\n", $1, $3}' \
	>"$W/perf-4242.map"
if "$B/mt-convert" "$W/s/raw.bin" -o "$W/j.pftrace" --jit-dir "$W" \
	--text "$W/j.tsv" -q 2>/dev/null &&
	awk -F'\t' 'NR > 1 && $6 !~ /gap/' "$W/j.tsv" | grep -q . &&
	! awk -F'\t' 'NR > 1 && $6 !~ /gap/' "$W/j.tsv" | grep -q 'unknown @'; then
	echo "PASS convert_errors_jit_map"
else
	echo "FAIL convert_errors_jit_map"; head -3 "$W/j.tsv" | sed 's/^/    /'
fi
# ... and --binaries finds it elsewhere.
mkdir -p "$W/bins" && cp "$W/s/prog.away" "$W/bins/prog"
if "$B/mt-convert" "$W/s/raw.bin" -o "$W/b.pftrace" --binaries "$W/bins" \
	--text "$W/b.tsv" -q 2>"$W/stderr" && ! grep -q 'unknown @' "$W/b.tsv" &&
	[ ! -s "$W/stderr" ]; then
	echo "PASS convert_errors_binaries_dir"
else
	echo "FAIL convert_errors_binaries_dir"; sed 's/^/    /' "$W/stderr" | head -5
fi

# The real captures from real hardware, whose binaries are not here: they
# convert, each missing binary is named once.
for f in "${MT_SHARED:-/nonexistent}"/testdata/perf.data.intel_pt-4.14 \
	"${MT_SHARED:-/nonexistent}"/testdata/perf.data.piped.intel_pt-4.14; do
	name=real_$(basename "$f" | tr .- __)
	if [ ! -f "$f" ]; then
		echo "SKIP convert_errors_$name (no ../shared/testdata)"
		continue
	fi
	if "$B/mt-convert" "$f" -o "$W/r.pftrace" >"$W/stdout" 2>"$W/stderr" &&
		[ "$(grep 'not found\|no file' "$W/stderr" | sort | uniq -d | wc -l)" -eq 0 ]; then
		echo "PASS convert_errors_$name"
	else
		echo "FAIL convert_errors_$name"; sed 's/^/    /' "$W/stderr" | head -5
	fi
done

# Its thread 0 (the idle task, known from the switch records) has no
# trace: --tid 0 says so instead of writing an empty trace.
f="${MT_SHARED:-/nonexistent}"/testdata/perf.data.intel_pt-4.14
if [ ! -f "$f" ]; then
	echo "SKIP convert_errors_tid_no_trace (no ../shared/testdata)"
else
	rm -rf "$W/out"; mkdir -p "$W/out"
	"$B/mt-convert" "$f" -o "$W/out/t.pftrace" --tid 0 -q >"$W/stdout" 2>"$W/stderr"
	rc=$?
	if [ $rc -ne 0 ] && tail -1 "$W/stderr" | grep -q -- '--tid 0: the capture has no trace' &&
		[ -z "$(ls -A "$W/out")" ]; then
		echo "PASS convert_errors_tid_no_trace"
	else
		echo "FAIL convert_errors_tid_no_trace: exit $rc: $(tail -1 "$W/stderr")"
	fi
fi

# Its per-CPU trace, where the command shares CPU 3 with other tasks: perf
# names tid 1760 for stretches around context switches (the
# SWITCH_CPU_WIDE records' next task), and those stretches are 1760's in
# our conversion too (gaps, as the binaries are missing), each of perf's
# events inside one of them; no gap of the command spans 1760's time.
f="${MT_SHARED:-/nonexistent}"/testdata/perf.data.intel_pt-4.14
if [ ! -f "$f" ]; then
	echo "SKIP convert_real_percpu_switches (no ../shared/testdata)"
elif ! command -v perf >/dev/null; then
	echo "SKIP convert_real_percpu_switches (no perf)"
elif "$B/mt-convert" "$f" -o "$W/s.pftrace" --no-sqlite --text "$W/s.tsv" \
	-q 2>/dev/null && perf script -i "$f" --itrace=cre --ns \
	-F tid,time 2>/dev/null | awk '$1 == 1760 { sub(":", "", $2);
		split($2, p, "."); print p[1] p[2] }' >"$W/perf1760" &&
	out=$(awk -F'\t' 'NR == FNR { t[++n] = $1; next }
		$1 == 1760 { s[++m] = $4; e[m] = $5 }
		$1 == 3174 && $6 ~ /gap/ { cs[++k] = $4; ce[k] = $5 }
		END {
			for (i = 1; i <= n; i++) {
				ok = 0
				for (j = 1; j <= m; j++) if (t[i] >= s[j] && t[i] <= e[j]) ok = 1
				for (j = 1; j <= k; j++) if (t[i] > cs[j] && t[i] < ce[j]) ok = 0
				hit += ok
			}
			printf "%d of perf'"'"'s %d events of tid 1760 in our %d stretches of it", hit, n, m
			exit !(n > 0 && hit == n)
		}' "$W/perf1760" "$W/s.tsv"); then
	echo "PASS convert_real_percpu_switches ($out)"
else
	echo "FAIL convert_real_percpu_switches: ${out:-conversion or perf failed}"
fi

# A standard output that cannot take the text (a full disk): the text is
# flushed before its errors are checked, so the run fails in one line.
rm -rf "$W/out"; mkdir -p "$W/out"
(cd "$W/out" && timeout 60 "$B/mt-convert" "$W/s/raw.bin" --no-sqlite -q \
	--text - >/dev/full 2>"$W/stderr")
rc=$?
if [ $rc -ne 1 ]; then
	echo "FAIL convert_errors_text_stdout_full: exit status $rc"
elif [ "$(grep -c 'standard output: cannot write: No space left' \
	"$W/stderr")" -ne 1 ]; then
	echo "FAIL convert_errors_text_stdout_full: message:"
	sed 's/^/    /' "$W/stderr" | head -5
else
	echo "PASS convert_errors_text_stdout_full"
fi
