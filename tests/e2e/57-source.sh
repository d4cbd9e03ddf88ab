#!/bin/bash
# SPDX-License-Identifier: MIT
# Source positions: examples/demo.c built with -g is captured (emulated)
# and converted.  Every slice of the program's own functions has, in
# SQLite, the source position of its function's entry as addr2line says
# it (source), and the line of the call that made it (call_site): each
# (callee, call_site) must be a direct call the disassembly has at that
# line, and the calls demo.c makes to fib from two lines are both there.
# The Perfetto trace carries both as args.  A binary without a line table
# has neither.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-src57.XXXXXX)
trap 'rm -rf "$W"' EXIT

if ! command -v addr2line >/dev/null || ! command -v objdump >/dev/null ||
	! command -v sqlite3 >/dev/null; then
	echo "SKIP source_positions (no addr2line, objdump or sqlite3)"
	exit 0
fi
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" ||
	{ echo "FAIL source_positions: cc"; exit 0; }
if ! "$B/mt-capture" --emulate=ptrace -o "$W/demo.bin" -- "$W/demo" \
	>/dev/null 2>"$W/cap.err" ||
	! "$B/mt-convert" "$W/demo.bin" -o "$W/demo.pftrace" --no-compress \
		-q 2>"$W/conv.err"; then
	echo "FAIL source_positions: capture or conversion failed"
	tail -3 "$W/cap.err" "$W/conv.err" | sed 's/^/    /'
	exit 0
fi
db=$W/demo.sqlite
# The load bias, from one function's runtime address and its symbol.
rt=$(sqlite3 "$db" "SELECT address FROM slice WHERE name = 'fib' LIMIT 1")
sym=$(nm "$W/demo" | awk '$3 == "fib" {print $1}')
if [ -z "$rt" ] || [ -z "$sym" ]; then
	echo "FAIL source_positions: no fib in the trace ($rt) or binary ($sym)"
	exit 0
fi
bias=$((rt - 0x$sym))

# source: each function of the program against addr2line at its address.
bad=0 n=0
while IFS='|' read -r name addr src; do
	n=$((n + 1))
	want=$(addr2line -e "$W/demo" "$(printf '0x%x' $((addr - bias)))" |
		sed 's/ (discriminator [0-9]*)//')
	if [ "$(basename "${want%:*}"):${want##*:}" != \
		"$(basename "${src%:*}"):${src##*:}" ]; then
		echo "    $name: source $src, addr2line $want"
		bad=$((bad + 1))
	fi
done < <(sqlite3 "$db" "SELECT DISTINCT name, address, source FROM slice
	WHERE dso = '$W/demo' AND source IS NOT NULL AND NOT unknown AND NOT inlined")
if [ $n -ge 4 ] && [ $bad -eq 0 ]; then
	echo "PASS source_positions_source ($n functions as addr2line says)"
else
	echo "FAIL source_positions_source: $bad of $n differ"
fi

# call_site: the direct calls of the disassembly, (callee, FILE:LINE).
# Only callees that are direct call targets are checked: a function
# reached by a jump (a PLT stub's, a tail call) keeps the call site of
# the call that led there.
objdump -d --no-show-raw-insn "$W/demo" |
	awk '$2 == "call" && $4 ~ /^<[^+]*>$/ {
		a = $1; sub(":", "", a); f = $4; gsub(/[<>]/, "", f)
		print "0x" a, f }' >"$W/calls"
while read -r a f; do
	l=$(addr2line -e "$W/demo" "$a" | sed 's/ (discriminator [0-9]*)//')
	echo "$f|$(basename "${l%:*}"):${l##*:}"
done <"$W/calls" | sort -u >"$W/static"
cut -d'|' -f1 "$W/static" | sort -u >"$W/callees"
sqlite3 "$db" "SELECT DISTINCT c.name, c.call_site FROM slice c
	JOIN slice p ON p.id = c.parent_id
	WHERE p.dso = '$W/demo' AND c.call_site IS NOT NULL" |
	while IFS='|' read -r f cs; do
		grep -qxF "$f" "$W/callees" &&
			echo "$f|$(basename "${cs%:*}"):${cs##*:}"
	done | sort -u >"$W/dynamic"
fib_lines=$(grep -n 'fib(' "$R/examples/demo.c" | grep -v 'static' |
	cut -d: -f1 | sed 's/^/fib|demo.c:/' | sort -u)
extra=$(comm -23 "$W/dynamic" "$W/static")
missing=$(comm -23 <(echo "$fib_lines") "$W/dynamic")
if [ -s "$W/dynamic" ] && [ -z "$extra" ] && [ -z "$missing" ]; then
	echo "PASS source_positions_call_site ($(wc -l <"$W/dynamic") call" \
		"sites, each a direct call at that line)"
else
	echo "FAIL source_positions_call_site: not in the code: ${extra//$'\n'/ }; missing: ${missing//$'\n'/ }"
fi

# Perfetto: both args, their values interned strings.
. "$MT_ROOT/tests/e2e/pf_decode.sh"
if ! command -v protoc >/dev/null; then
	echo "SKIP source_positions_perfetto (no protoc)"
elif pf_decode <"$W/demo.pftrace" >"$W/decoded.txt" 2>"$W/protoc.err" &&
	grep -q 'name: "source"' "$W/decoded.txt" &&
	grep -q 'name: "call_site"' "$W/decoded.txt" &&
	grep -q "demo.c:$(echo "$fib_lines" | head -1 | cut -d: -f2)\"" \
		"$W/decoded.txt"; then
	echo "PASS source_positions_perfetto"
else
	echo "FAIL source_positions_perfetto"
	head -3 "$W/protoc.err" | sed 's/^/    /'
fi

# Without -g: no source, no call site in it (a call from the C library,
# which has its debug file here, still has one), and the trace has
# neither arg when nothing has.
cc -O1 -I"$R" -o "$W/plain" "$R/examples/demo.c" &&
	"$B/mt-capture" --emulate=ptrace -o "$W/plain.bin" -- "$W/plain" \
		>/dev/null 2>&1 &&
	"$B/mt-convert" "$W/plain.bin" -o "$W/plain.pftrace" --no-compress \
		-q 2>/dev/null
got=$(sqlite3 "$W/plain.sqlite" "SELECT count(*) FROM slice c
	LEFT JOIN slice p ON p.id = c.parent_id
	WHERE (c.dso = '$W/plain' AND c.source IS NOT NULL) OR
	(p.dso = '$W/plain' AND c.call_site IS NOT NULL)" 2>&1)
fibs=$(sqlite3 "$W/plain.sqlite" "SELECT count(*) FROM slice
	WHERE name = 'fib'" 2>&1)
if [ "$got" = 0 ] && [ "${fibs:-0}" -gt 0 ]; then
	echo "PASS source_positions_none ($fibs fib slices, no positions)"
else
	echo "FAIL source_positions_none: $got slices with positions" \
		"($fibs fib)"
fi
