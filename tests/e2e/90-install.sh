#!/bin/bash
# SPDX-License-Identifier: MIT
# make install into a scratch DESTDIR, the installed tree moved elsewhere
# (it finds its helpers relative to itself): each command's --version and
# --help, a capture of examples/demo with the emulator from an empty
# folder and a minimal environment, its conversion, and what the files say
# made them; the manual pages render without a warning and agree with the
# README's option tables and the commands' --help; make uninstall leaves
# no file behind.  Also: every source says its license, and
# debian/changelog names the release the binaries report.
B=${MT_BUILD:?}
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-install.XXXXXX)
trap 'rm -rf "$W"' EXIT
CMDS="mt-capture mt-convert mt-report"
P=/opt/mt
case $B in
*/asan) MODE=asan ;;
*) MODE=release ;;
esac
mk() { make -C "$R" --no-print-directory MODE=$MODE BUILD="$B" "$@"; }

# --- install ----------------------------------------------------------
if ! mk install DESTDIR="$W/dest" PREFIX=$P >"$W/install.log" 2>&1; then
	echo "FAIL install: make install failed"
	tail -5 "$W/install.log" | sed 's/^/    /'
	exit 1
fi
want="bin/mt-capture bin/mt-convert include/magic_trace.h
      share/man/man1/mt-capture.1 share/man/man1/mt-convert.1
      share/doc/mt/README.md share/doc/mt/LICENSE share/doc/mt/docs/capture.md"
VG=0
if [ -x "$B/lib/valgrind/mtpt-amd64-linux" ]; then
	want="$want lib/mt/valgrind/mtpt-amd64-linux"
	VG=1
fi
missing=""
for f in $want; do
	[ -e "$W/dest$P/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then
	echo "PASS install_files"
else
	echo "FAIL install_files: missing:$missing"
fi

# Moved: nothing may depend on where it was installed.
mv "$W/dest$P" "$W/moved"
I=$W/moved

# --- --version, --help --------------------------------------------------
re='^(mt-[a-z]+) [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$'
for c in $CMDS; do
	v=$(env -i "$I/bin/$c" --version 2>"$W/err")
	rc=$?
	first=$(echo "$v" | head -1)
	built=$("$B/bin/$c" --version | head -1)
	if [ $rc -ne 0 ] || [ -s "$W/err" ]; then
		echo "FAIL version_$c: exit $rc: $(head -1 "$W/err")"
	elif ! [[ $first =~ $re ]] || [ "${BASH_REMATCH[1]}" != "$c" ]; then
		echo "FAIL version_$c: '$first'"
	elif [ "$first" != "$built" ]; then
		echo "FAIL version_$c: '$first', the build says '$built'"
	else
		echo "PASS version_$c"
	fi
	if env -i "$I/bin/$c" --help >"$W/help" 2>"$W/err" &&
		grep -q "^usage: $c" "$W/help" && [ ! -s "$W/err" ]; then
		echo "PASS help_$c"
	else
		echo "FAIL help_$c: $(head -1 "$W/help") $(head -1 "$W/err")"
	fi
done

# --- a capture and its conversion, from an empty folder -----------------
mkdir "$W/empty"
cc -O1 -g -I"$I" -o "$W/demo" "$R/examples/demo.c" 2>"$W/cc.err" || {
	echo "FAIL install_capture: examples/demo.c does not build with the installed header"
	sed 's/^/    /' "$W/cc.err" | head -5
}
if [ -x "$W/demo" ]; then
	(cd "$W/empty" && env -i PATH=/usr/bin:/bin "$I/bin/mt-capture" \
		--emulate=ptrace -o raw.bin -- "$W/demo" >/dev/null 2>"$W/cap.err" &&
		env -i PATH=/usr/bin:/bin "$I/bin/mt-convert" -q raw.bin \
			-o trace.pftrace 2>"$W/conv.err")
	rc=$?
	n=$(sqlite3 "$W/empty/trace.sqlite" \
		"SELECT count(*) FROM slice WHERE name = 'handle_request'" 2>/dev/null)
	if [ $rc -ne 0 ]; then
		echo "FAIL install_capture: exit $rc: $(tail -1 "$W/cap.err") $(tail -1 "$W/conv.err")"
	elif [ "${n:-0}" -lt 1 ]; then
		echo "FAIL install_capture: no handle_request slice in the database"
	else
		echo "PASS install_capture"
	fi
	capv=$("$I/bin/mt-capture" --version | head -1)
	convv=$("$I/bin/mt-convert" --version | head -1)
	rec=$("$I/bin/mt-convert" --info "$W/empty/raw.bin" 2>&1 |
		sed -n 's/^recorded   by \(.*\) on .*/\1/p')
	readby=$("$I/bin/mt-convert" --info "$W/empty/raw.bin" 2>&1 |
		sed -n 's/^read       by //p')
	meta=$(sqlite3 "$W/empty/trace.sqlite" \
		"SELECT str_value FROM metadata ORDER BY name" 2>/dev/null | tr '\n' '|')
	if [ "$rec" = "$capv" ] && [ "$readby" = "$convv" ] &&
		[ "$meta" = "$convv|$capv|" ]; then
		echo "PASS install_made_by"
	else
		echo "FAIL install_made_by: --info '$rec' / '$readby', metadata '$meta'"
	fi
	if [ $VG = 1 ] && command -v valgrind >/dev/null; then
		if (cd "$W/empty" && env -i PATH=/usr/bin:/bin "$I/bin/mt-capture" \
			--emulate=valgrind -o vg.bin -- "$W/demo" >/dev/null \
			2>"$W/vg.err") && [ -s "$W/empty/vg.bin" ]; then
			echo "PASS install_valgrind"
		else
			echo "FAIL install_valgrind: $(tail -1 "$W/vg.err")"
		fi
	fi
fi

# --- the manual pages -----------------------------------------------------
if ! command -v man >/dev/null; then
	echo "SKIP man_render (no man: apt-get install man-db)"
else
	for c in $CMDS; do
		page=$I/share/man/man1/$c.1
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" \
			>"$W/$c.txt" 2>"$W/$c.warn"
		rc=$?
		if [ $rc -ne 0 ] || [ -s "$W/$c.warn" ]; then
			echo "FAIL man_render_$c: exit $rc: $(head -3 "$W/$c.warn")"
		elif ! grep -q '^OPTIONS' "$W/$c.txt" || ! grep -q '^SYNOPSIS' "$W/$c.txt"; then
			echo "FAIL man_render_$c: no SYNOPSIS or OPTIONS"
		else
			echo "PASS man_render_$c"
		fi
	done
fi

# The options of CMD's table in the README (each option name of each
# row's first cell, without its value), one a line.
readme_opts() {
	awk -v s="## $1" '$0 == s {on = 1; next} on && /^## / {on = 0}
		on && /^\| `/' "$R/README.md" | sed 's/\\|/ /g' |
		awk -F'|' '{print $2}' | grep -oE '`-[^`]*`' |
		grep -oE '^`-{1,2}[a-z][a-z-]*' | tr -d '`' | sort -u
}
# The options --help lists (its option lines and its usage lines).
help_opts() {
	"$B/bin/$1" --help |
		awk '/^usage:/ || /^       mt-/ {print; next}
			/^  -/ {print $1, $2}' |
		grep -oE '(^|[ [])-{1,2}[a-z][a-z-]*' | tr -d ' [' | sort -u
}
for c in $CMDS; do
	readme_opts "$c" >"$W/$c.readme"
	help_opts "$c" >"$W/$c.help"
	# -h/--help are not listed in --help itself.
	printf -- '-h\n--help\n' >>"$W/$c.help"
	sort -u -o "$W/$c.help" "$W/$c.help"
	d=$(diff "$W/$c.readme" "$W/$c.help" | grep '^[<>]' | tr '\n' ' ')
	if [ ! -s "$W/$c.readme" ]; then
		echo "FAIL options_readme_$c: no options table under '## $c'"
	elif [ -n "$d" ]; then
		echo "FAIL options_readme_$c: README (<) and --help (>) differ: $d"
	else
		echo "PASS options_readme_$c"
	fi
	if [ -s "$W/$c.txt" ]; then
		miss=""
		for o in $(cat "$W/$c.readme"); do
			grep -qe "$o" "$W/$c.txt" || miss="$miss $o"
		done
		# The page is made from the README: it is the README's text.
		if cmp -s "$I/share/man/man1/$c.1" <(sh "$R/tools/man.sh" "$c") &&
			[ -z "$miss" ]; then
			echo "PASS options_page_$c"
		else
			echo "FAIL options_page_$c: the page is not the README's${miss:+ (missing:$miss)}"
		fi
	fi
done

# --- uninstall ------------------------------------------------------------
mv "$I" "$W/dest$P"
if ! mk uninstall DESTDIR="$W/dest" PREFIX=$P >"$W/uninstall.log" 2>&1; then
	echo "FAIL uninstall: make uninstall failed: $(tail -1 "$W/uninstall.log")"
else
	left=$(find "$W/dest" ! -type d | head -5)
	if [ -z "$left" ]; then
		echo "PASS uninstall"
	else
		echo "FAIL uninstall: left behind: $left"
	fi
fi

# --- licenses, the release ----------------------------------------------
if git -C "$R" rev-parse --show-toplevel >/dev/null 2>&1; then
	nolicense=$(cd "$R" && git ls-files -co --exclude-standard |
		grep -E '\.(c|h|cc|sh|mk)$' |
		grep -vE '^(tests/programs|examples|tests/conformance/libipt|tests/fuzz/binaries|tests/golden)/' |
		while read -r f; do
			[ -f "$f" ] || continue
			head -3 "$f" | grep -q 'SPDX-License-Identifier: ' || echo "$f"
		done | head -5)
	if [ -z "$nolicense" ] && grep -q '^MIT License' "$R/LICENSE" &&
		head -1 "$R/vgtool/mtpt.c" | grep -q 'GPL-2.0-or-later'; then
		echo "PASS spdx"
	else
		echo "FAIL spdx: no SPDX line:" $nolicense
	fi
else
	echo "SKIP spdx (not a git tree)"
fi
rel=$(sed -n 's/^#define MT_VERSION "\(.*\)"$/\1/p' "$R/util/version.h")
deb=$(head -1 "$R/debian/changelog" | sed -n 's/^mt (\([^)]*\)).*/\1/p')
if [ -n "$rel" ] && [ "$rel" = "$deb" ]; then
	echo "PASS version_changelog"
else
	echo "FAIL version_changelog: util/version.h says '$rel', debian/changelog '$deb'"
fi
