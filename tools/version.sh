#!/bin/sh
# SPDX-License-Identifier: MIT
# Prints the header util/version.c includes: the commit the tree is at,
# "-dirty" when tracked files differ from it.  Outside a git tree (a
# source package, a tarball) the file .commit at the root says it, else
# "unknown".
root=$(cd "$(dirname "$0")/.." && pwd)
if c=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null) &&
	[ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
	# No index lock taken: a build may run beside git commands.
	[ -z "$(GIT_OPTIONAL_LOCKS=0 git -C "$root" status --porcelain \
		--untracked-files=no 2>/dev/null)" ] || c="$c-dirty"
elif [ -s "$root/.commit" ]; then
	c=$(head -c 64 "$root/.commit" | tr -cd '0-9a-z-')
else
	c=unknown
fi
echo "/* Written by tools/version.sh. */"
echo "#define MT_COMMIT \"$c\""
