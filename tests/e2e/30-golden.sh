#!/bin/bash
# SPDX-License-Identifier: MIT
# Golden captures: committed captures and binaries whose slice trees must
# come out exactly as committed (tests/golden/*/expected.tsv).
B=${MT_BUILD:?}/bin
G=${MT_ROOT:?}/tests/golden
W=$(mktemp -d /tmp/mt-e2e-golden.XXXXXX)
trap 'rm -rf "$W"' EXIT
for d in "$G"/*/; do
	name=$(basename "$d")
	[ -f "$d/expected.tsv" ] || continue
	if ! "$B/mt-convert" "$d/raw.bin" --binaries "$d" --text "$W/$name.tsv" \
		-q 2>"$W/$name.err"; then
		echo "FAIL golden_$name: mt-convert failed"
		sed 's/^/    /' "$W/$name.err" | head -5
	elif diff -u "$d/expected.tsv" "$W/$name.tsv" >"$W/$name.diff"; then
		echo "PASS golden_$name"
	else
		echo "FAIL golden_$name: the slice tree changed (make golden-update rewrites it)"
		head -20 "$W/$name.diff" | sed 's/^/    /'
	fi
done
