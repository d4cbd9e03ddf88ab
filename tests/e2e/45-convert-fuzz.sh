#!/bin/bash
# SPDX-License-Identifier: MIT
# Corrupted captures: bytes flipped anywhere (headers, records, AUX data)
# in 40 copies of a capture.  mt-convert must convert what it can or fail
# with one line; never crash (the sanitizers are on) and never hang.
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-fuzz.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$B/mt-synth" --seed 9 --branches 20000 --threads 2 --final-stack \
	--start-depth 3 --gap-every 5000 -o "$W/s" >/dev/null ||
	{ echo "FAIL convert_fuzz: mt-synth failed"; exit 0; }
size=$(stat -c %s "$W/s/raw.bin")
RANDOM=42
bad=0
for i in $(seq 1 40); do
	cp "$W/s/raw.bin" "$W/m.bin"
	for k in $(seq 1 $((1 + RANDOM % 40))); do
		off=$(((RANDOM * 32768 + RANDOM) % size))
		printf "\\x$(printf %02x $((RANDOM % 256)))" |
			dd of="$W/m.bin" bs=1 seek="$off" conv=notrunc 2>/dev/null
	done
	timeout 120 "$B/mt-convert" "$W/m.bin" -o "$W/m.pftrace" -q \
		--binaries "$W/s" >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc -ge 124 ] || grep -q 'AddressSanitizer\|runtime error' "$W/err" ||
		{ [ $rc -ne 0 ] && [ "$(wc -l <"$W/err")" -ne 1 ]; }; then
		echo "    case $i: exit $rc"; head -3 "$W/err" | sed 's/^/    /'
		bad=$((bad + 1))
	fi
done
[ $bad -eq 0 ] && echo "PASS convert_fuzz (40 corrupted captures)" ||
	echo "FAIL convert_fuzz: $bad of 40"
