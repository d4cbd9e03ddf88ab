# SPDX-License-Identifier: MIT
# What the bench scripts share, sourced: bench_capture MB sets B (the
# binaries) and D (the folder of make bench's capture of MB MiB of AUX,
# made once: the same every time, seed 4242) and branches (how many it
# has).
bench_capture() {
	MB=$1
	B=${MT_BUILD:-build}/bin
	D=${MT_BUILD:-build}/bench/$MB
	mkdir -p "$D"
	# about 0.6 bytes of AUX per branch with MTC timing
	branches=$((MB * 1048576 * 10 / 6))
	if [ ! -f "$D/raw.bin" ]; then
		echo "generating a capture of ~$MB MiB of AUX ($branches branches)..."
		"$B/mt-synth" --seed 4242 --branches "$branches" -o "$D" >/dev/null
	fi
}
