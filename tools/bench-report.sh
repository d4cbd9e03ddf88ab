#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-report: mt-report on the database of make bench's capture
# (MB MiB of AUX, default 64: about 24M slices), each question timed with
# its peak RSS.  The whole trace's figures come from the function and
# caller tables; --function, --slowest, --folded and a region scan
# slice_raw.  Timings are whatever this machine gives today.
set -e
. "$(dirname "$0")/bench-lib.sh"
bench_capture "${1:-64}"
db=$D/report.sqlite
if [ ! -f "$db" ] || [ "$B/mt-convert" -nt "$db" ]; then
	echo "converting..."
	"$B/mt-convert" -q "$D/raw.bin" -o "$D/report.pftrace" --sqlite "$db"
	rm -f "$D/report.pftrace"
fi
slices=$(sqlite3 "$db" "SELECT count(*) FROM slice_raw")
fn=$(sqlite3 "$db" "SELECT name FROM function ORDER BY self_dur DESC LIMIT 1")
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
echo "database: $db ($slices slices, $(($(stat -c %s "$db") / 1048576)) MiB)"
printf "%-44s %9s %10s\n" "mt-report" "seconds" "peak MiB"
run() {
	local r
	r=$("$B/mt-bench" run sh -c "'$B/mt-report' $* >/dev/null")
	printf "%-44s %9.2f %10.0f\n" "$*" "$(field seconds "$r")" \
		"$(awk -v k="$(field rss_kb "$r")" 'BEGIN {print k / 1024}')"
}
# The page cache warmed first: the figures are of the reading, not of
# the disk.
cat "$db" >/dev/null
run "'$db'"
run "--csv '$db'"
run "--compare '$db' '$db'"
run "--time 0..1ms '$db'"
run "--function '$fn' '$db'"
run "--slowest 10 '$db'"
run "--folded '$db'"
