#!/bin/bash
# SPDX-License-Identifier: MIT
# make static's mt-capture: no shared library at all (ldd says so, no
# program interpreter), run alone from an empty folder with an empty
# environment, captures examples/demo with the emulator; mt-convert
# converts that capture; it says in one line what it cannot do (the
# Valgrind tool is not part of it).  Debian ships no libipt.a: the test
# needs LIBIPT_SRC (a libipt v2.0 source tree), else it is skipped.
B=${MT_BUILD:?}
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-static.XXXXXX)
trap 'rm -rf "$W"' EXIT
src=${LIBIPT_SRC:-$MT_LIBIPT_SRC}
if [ ! -e /usr/lib/x86_64-linux-gnu/libipt.a ] && [ ! -d "$src" ]; then
	echo "SKIP static (Debian ships no libipt.a: set LIBIPT_SRC to a libipt v2.0 source tree)"
	exit 0
fi
for a in libdw libelf libbz2 libzstd liblzma libz libcapstone libsqlite3 libdeflate libiberty; do
	if [ ! -e "/usr/lib/x86_64-linux-gnu/$a.a" ]; then
		echo "SKIP static (no $a.a: make static installs its packages, as root)"
		exit 0
	fi
done
if ! make -C "$R" --no-print-directory static ${src:+LIBIPT_SRC="$src"} \
	>"$W/make.log" 2>&1; then
	echo "FAIL static_build: $(tail -3 "$W/make.log" | tr '\n' ' ')"
	exit 1
fi
mkdir -p "$W/bin" "$W/empty"
cp "$R/build/static/mt-capture" "$W/bin/"
S=$W/bin/mt-capture
echo "PASS static_build ($(stat -c %s "$S") bytes)"

l=$(ldd "$S" 2>&1)
if echo "$l" | grep -q 'not a dynamic executable' &&
	! readelf -l "$S" | grep -q INTERP &&
	[ -z "$(readelf -d "$S" 2>/dev/null | grep NEEDED)" ]; then
	echo "PASS static_no_shared_libs"
else
	echo "FAIL static_no_shared_libs: ldd says: $l"
fi

v=$(env -i "$S" --version)
first=$(echo "$v" | head -1)
rel=$(sed -n 's/^#define MT_VERSION "\(.*\)"$/\1/p' "$R/util/version.h")
commit=$(sh "$R/tools/version.sh" | sed -n 's/^#define MT_COMMIT "\(.*\)"$/\1/p')
if [ "$first" = "mt-capture $rel (commit $commit)" ] &&
	[ "$(echo "$v" | wc -l)" = 2 ] &&
	echo "$v" | sed -n 2p | grep -q '^static build: --emulate=valgrind'; then
	echo "PASS static_version"
else
	echo "FAIL static_version: '$v'"
fi

cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c"
(cd "$W/empty" && env -i "$S" --emulate=ptrace -o raw.bin -- "$W/demo" \
	>/dev/null 2>"$W/cap.err")
rc=$?
if [ $rc -eq 0 ] && "$B/bin/mt-convert" -q "$W/empty/raw.bin" \
	-o "$W/t.pftrace" 2>"$W/conv.err" &&
	[ "$(sqlite3 "$W/t.sqlite" "SELECT count(*) FROM slice WHERE name = 'handle_request'")" -gt 0 ]; then
	echo "PASS static_capture"
else
	echo "FAIL static_capture: exit $rc: $(tail -1 "$W/cap.err") $(tail -1 "$W/conv.err" 2>/dev/null)"
fi

# What it cannot do, in one line, when asked to.
(cd "$W/empty" && env -i "$S" --emulate=valgrind -o vg.bin -- "$W/demo" \
	>/dev/null 2>"$W/vg.err")
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$W/vg.err")" = 1 ] &&
	grep -q 'static build' "$W/vg.err" && [ ! -e "$W/empty/vg.bin" ]; then
	echo "PASS static_no_valgrind"
else
	echo "FAIL static_no_valgrind: exit $rc: $(cat "$W/vg.err")"
fi
