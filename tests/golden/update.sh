#!/bin/bash
# Rewrite the expected slice trees of the golden captures from the current
# mt-convert (make golden-update).  With --recapture, make the captures
# anew with mt-synth first.  Review the diff like code.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${MT_BUILD:-$ROOT/build}/bin
G=$ROOT/tests/golden
grep -v '^#' "$G/cases" | while IFS='|' read -r name opts; do
	[ -n "$name" ] || continue
	d=$G/$name
	if [ "$1" = --recapture ] || [ ! -f "$d/raw.bin" ]; then
		t=$(mktemp -d)
		"$B/mt-synth" $opts -o "$t" >/dev/null
		mkdir -p "$d"
		cp "$t/raw.bin" "$t/prog" "$d/"
		rm -rf "$t"
	fi
	"$B/mt-convert" "$d/raw.bin" --binaries "$d" --text "$d/expected.tsv" -q
	echo "golden $name: $(($(wc -l <"$d/expected.tsv") - 1)) slices"
done
