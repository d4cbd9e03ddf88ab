#!/bin/bash
# SPDX-License-Identifier: MIT
# mt-capture --trigger ?: the executable's functions and source files are
# offered (a numbered list: no terminal here), the answer becomes the
# trigger, and the capture stops there; symbol:? offers functions only,
# line:? a file and then its lines with their text.  A bad answer is one
# line and exit 2 with no capture written.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-pick.XXXXXX)
trap 'rm -rf "$W"' EXIT

cc -O0 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" || { echo "FAIL capture_pick: cc"; exit 0; }

# The number of an item in a list that mt-capture printed.
num() { sed -n "s|^ *\([0-9][0-9]*\)  $1\$|\1|p" "$2" | head -1; }

# symbol:? -- list, then pick "respond" by its number.
printf '\n' | "$B/mt-capture" --emulate=ptrace --trigger 'symbol:?' -o "$W/none.bin" \
	-- "$W/demo" >/dev/null 2>"$W/list.err"
n=$(num respond "$W/list.err")
if [ -n "$n" ] && grep -q "^ *[0-9]*  fib$" "$W/list.err" &&
	! grep -q "@plt" "$W/list.err" && [ ! -e "$W/none.bin" ] &&
	grep -q "nothing chosen" "$W/list.err"; then
	echo "PASS capture_pick_symbol_list"
else
	echo "FAIL capture_pick_symbol_list: $(tail -2 "$W/list.err")"
fi
if [ -n "$n" ] && printf '%s\n' "$n" | "$B/mt-capture" --emulate=ptrace \
	--trigger 'symbol:?' -o "$W/sym.bin" -- "$W/demo" >/dev/null 2>"$W/sym.err" &&
	grep -q "^mt-capture: --trigger respond$" "$W/sym.err" &&
	"$B/mt-convert" --info "$W/sym.bin" 2>&1 | grep -q "respond"; then
	echo "PASS capture_pick_symbol"
else
	echo "FAIL capture_pick_symbol: $(grep -v '^request' "$W/sym.err" | tail -2)"
fi

# line:? -- the file, then the line of "r->id = id;" by its number.
printf '\n' | "$B/mt-capture" --emulate=ptrace --trigger 'line:?' -o "$W/none.bin" \
	-- "$W/demo" >/dev/null 2>"$W/files.err"
f=$(num '.*examples/demo.c' "$W/files.err")
want=$(grep -n 'r->id = id;' "$R/examples/demo.c" | cut -d: -f1)
printf '%s\n\n' "$f" | "$B/mt-capture" --emulate=ptrace --trigger 'line:?' \
	-o "$W/none.bin" -- "$W/demo" >/dev/null 2>"$W/lines.err"
l=$(sed -n "s/^ *\([0-9][0-9]*\)  $want  r->id = id;\$/\1/p" "$W/lines.err" | head -1)
if [ -n "$f" ] && [ -n "$l" ] && printf '%s\n%s\n' "$f" "$l" |
	"$B/mt-capture" --emulate=ptrace --trigger 'line:?' -o "$W/line.bin" \
		-- "$W/demo" >/dev/null 2>"$W/line.err" &&
	grep -q "^mt-capture: --trigger .*examples/demo.c:$want$" "$W/line.err" &&
	[ -s "$W/line.bin" ]; then
	echo "PASS capture_pick_line"
else
	echo "FAIL capture_pick_line: file '$f' line '$l': $(grep -v '^request' "$W/line.err" | tail -2)"
fi

# ? -- functions and files in one list.
printf '\n' | "$B/mt-capture" --emulate=ptrace --trigger '?' -o "$W/none.bin" \
	-- "$W/demo" >/dev/null 2>"$W/all.err"
if grep -q "^ *[0-9]*  fib$" "$W/all.err" && grep -q "^ *[0-9]*  file .*examples/demo.c$" "$W/all.err"; then
	echo "PASS capture_pick_all"
else
	echo "FAIL capture_pick_all: $(tail -2 "$W/all.err")"
fi

# A bad answer.
echo 99999 | "$B/mt-capture" --emulate=ptrace --trigger 'symbol:?' -o "$W/bad.bin" \
	-- "$W/demo" >/dev/null 2>"$W/bad.err"
rc=$?
if [ $rc = 2 ] && [ "$(grep -c '^mt-capture' "$W/bad.err")" = 1 ] &&
	grep -q "not a number from 1 to" "$W/bad.err" && [ ! -e "$W/bad.bin" ]; then
	echo "PASS capture_pick_bad_answer"
else
	echo "FAIL capture_pick_bad_answer: rc $rc: $(tail -1 "$W/bad.err")"
fi
