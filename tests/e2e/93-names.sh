#!/bin/bash
# SPDX-License-Identifier: MIT
# Every name libmt.a defines for other objects (nm's T, D, B and R) starts
# with its module's prefix, so that a program linking the library, or two
# of its modules, cannot clash on a bare name such as merge or resolve.
B=${MT_BUILD:?}
lib=$B/libmt.a
if ! command -v nm >/dev/null; then
	echo "SKIP names (no nm: apt-get install binutils)"
	exit 0
fi
if [ ! -f "$lib" ]; then
	echo "FAIL names: no $lib (build first)"
	exit 1
fi

# The prefixes nm shows, each its module's (the folder or file that owns
# the names): a name outside them belongs to no module.
prefixes=(
	mt_                      # model/, util/, convert/: the shared types and chores
	pd_                      # perfdata/
	dec_ strm_               # decode/ (strm_: the stream decoder)
	ptenc_                   # ptenc/: the packet encoder
	sym_ symaddr_ symwatch_  # symbols/
	img_                     # image/
	seg_ go_ ocaml_ gcc_     # segments/ (go.c; unwind_quirks.c's OCaml and GCC quirks)
	stitch_                  # stitch/
	wr_ pf_ sq_ pb_ bt_      # writers/ (Perfetto, SQLite, protobuf, B-tree)
	rg_                      # regions/
	st_ report_              # stats/, report/
	cv_                      # convert/: the converter's steps
	capfile_ capture_ target_ pick_ line_trigger_ unwind_ # capture/
	emu_ hw_ vg_ pmu_ bp_ kcore_ ring_ sb_ # capture/: its back ends
)

bad=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBR]$/ { print $3 }' |
	sort -u | while read -r name; do
		ok=
		for p in "${prefixes[@]}"; do
			case $name in "$p"*) ok=1 && break ;; esac
		done
		[ -n "$ok" ] || echo "$name"
	done)
n=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $2 ~ /^[TDBR]$/' | grep -c .)
if [ "$n" -eq 0 ]; then
	echo "FAIL names: nm lists no defined name in $lib"
elif [ -z "$bad" ]; then
	echo "PASS names ($n names, every one prefixed)"
else
	echo "FAIL names: $(echo "$bad" | wc -l) names without a module prefix: $(echo $bad)"
fi
