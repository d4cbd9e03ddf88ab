#!/bin/sh
# SPDX-License-Identifier: MIT
# make deb: builds the Debian package with Debian's own tools
# (dpkg-buildpackage, debhelper) from a copy of the tree in OUT, so that
# what dpkg-buildpackage writes beside the tree stays in OUT; prints the
# package's path.
#
#   tools/deb.sh OUT
set -e
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$out" ] || { echo "usage: tools/deb.sh OUT" >&2; exit 2; }
for t in dpkg-buildpackage dh; do
	command -v $t >/dev/null || {
		echo "make deb: $t is missing (apt-get install dpkg-dev debhelper)" >&2
		exit 1
	}
done
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
mkdir -p "$out"
out=$(cd "$out" && pwd)
src="$out/mt-$version"
rm -rf "$src" "$out"/mt_* "$out"/mt-dbgsym_* "$out/build.log"
mkdir -p "$src"
# The files of the tree as they are now, tracked or new (not build/).
if git -C "$root" rev-parse --show-toplevel >/dev/null 2>&1; then
	(cd "$root" && git ls-files -z -co --exclude-standard |
		xargs -0 tar cf - --ignore-failed-read 2>/dev/null) |
		tar xf - -C "$src"
else
	(cd "$root" && tar cf - --exclude=./build .) | tar xf - -C "$src"
fi
# The commit, which tools/version.sh cannot ask git for there.
sh "$root/tools/version.sh" |
	sed -n 's/^#define MT_COMMIT "\(.*\)"$/\1/p' >"$src/.commit"
cd "$src"
DEB_BUILD_OPTIONS="parallel=${MT_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	echo "make deb: dpkg-buildpackage failed (all of it: $out/build.log)" >&2
	exit 1
}
ls "$out"/mt_"$version"_*.deb
