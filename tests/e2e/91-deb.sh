#!/bin/bash
# SPDX-License-Identifier: MIT
# make deb's package, built with dpkg-buildpackage from the tree (about a
# minute: a release build of its own): its control fields (the runtime
# libraries as dependencies, no -dev package), its files (the commands,
# the pages, the header, the Valgrind tool, all under /usr), and the
# commands it carries report this tree's release and commit.
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-deb.XXXXXX)
trap 'rm -rf "$W"' EXIT
for t in dpkg-buildpackage dh dpkg-deb; do
	if ! command -v $t >/dev/null; then
		echo "SKIP deb ($t missing: apt-get install dpkg-dev debhelper)"
		exit 0
	fi
done
if ! deb=$(MT_JOBS=2 sh "$R/tools/deb.sh" "$W/out" 2>"$W/err"); then
	echo "FAIL deb_build: $(tail -3 "$W/err" | tr '\n' ' ')"
	exit 1
fi
echo "PASS deb_build"
rel=$(sed -n 's/^#define MT_VERSION "\(.*\)"$/\1/p' "$R/util/version.h")

dpkg-deb -I "$deb" >"$W/info"
field() { dpkg-deb -f "$deb" "$1"; }
deps=$(field Depends)
bad=""
[ "$(field Package)" = mt ] || bad="$bad Package=$(field Package)"
[ "$(field Version)" = "$rel" ] || bad="$bad Version=$(field Version)"
[ "$(field Architecture)" = amd64 ] || bad="$bad Architecture=$(field Architecture)"
for lib in libc6 libipt2 libdw1 libelf1 libsqlite3-0 libcapstone4 libdeflate0; do
	echo "$deps" | grep -qw -- "$lib" || bad="$bad no-$lib"
done
echo "$deps" | grep -q -- '-dev' && bad="$bad a-dev-package"
if [ -x "${MT_BUILD:-$R/build}/lib/valgrind/mtpt-amd64-linux" ]; then
	field Recommends | grep -q '^valgrind (= ' || bad="$bad Recommends=$(field Recommends)"
fi
if [ -z "$bad" ]; then
	echo "PASS deb_control"
else
	echo "FAIL deb_control:$bad"
	sed 's/^/    /' "$W/info"
fi

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$W/files"
miss=""
for f in /usr/bin/mt-capture /usr/bin/mt-convert /usr/include/magic_trace.h \
	/usr/share/man/man1/mt-capture.1.gz /usr/share/man/man1/mt-convert.1.gz \
	/usr/share/doc/mt/copyright /usr/share/doc/mt/README.md.gz \
	/usr/lib/mt/valgrind/mtpt-amd64-linux; do
	grep -qx -- "$f" "$W/files" || miss="$miss $f"
done
outside=$(grep -v '^/usr/\|^/$' "$W/files" | head -3)
debug=$(grep '^/usr/lib/debug/' "$W/files" | head -1)
if [ -z "$miss$outside$debug" ]; then
	echo "PASS deb_files"
else
	echo "FAIL deb_files: missing:$miss; outside /usr: $outside; $debug"
fi

dpkg-deb -x "$deb" "$W/root"
commit=$(sh "$R/tools/version.sh" | sed -n 's/^#define MT_COMMIT "\(.*\)"$/\1/p')
ok=1
for c in mt-capture mt-convert; do
	v=$("$W/root/usr/bin/$c" --version 2>&1 | head -1)
	[ "$v" = "$c $rel (commit $commit)" ] || {
		ok=0
		echo "FAIL deb_version: $c says '$v', the tree is $rel at $commit"
	}
done
[ $ok = 1 ] && echo "PASS deb_version"
