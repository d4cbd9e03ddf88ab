#!/bin/bash
# SPDX-License-Identifier: MIT
# Conformance: Intel's libipt decoder test corpus (tests/conformance/libipt,
# libipt v2.0.5) and our own cases in its spirit (tests/conformance/own).
# Each case is wrapped into a capture (mt-ptt-wrap), converted by
# mt-convert --no-stitch, and its call tree compared (mt-ptt-check) with
# what Intel's reference decoder ptxed printed for it (NAME-ptxed.exp), or
# with an own case's NAME.exp; perf script's decoding of the same capture
# is a third opinion, reported, not judged.  One line per case:
#
#   agree NAME                  the call trees say the same
#   differ NAME: what           they do not (the first difference)
#   known NAME: reason          they do not, as known-differences.txt says
#   open NAME: defect           they do not: a defect of ours, listed in
#                               open-defects.txt until fixed
#   decoded NAME (...)          converted; nothing to compare with (a
#                               ptdump-only case, or ptxed printed only
#                               statistics)
#   error NAME: message         mt-convert refused the capture
#
# then the totals and PASS or FAIL: FAIL when a case differs and is not
# listed as known or open, when a listed case agrees (the lists must stay
# honest),
# when mt-convert crashes, hangs (10 s), leaves a half-written output or
# fails on a case that has an expectation.
#
# Arguments: case names to run only those.  MT_PTT_KEEP=DIR keeps every
# capture, tree and perf output in DIR.
B=${MT_BUILD:?}/bin
C=${MT_ROOT:?}/tests/conformance
KNOWN=$C/known-differences.txt
OPEN=$C/open-defects.txt
if [ -n "$MT_PTT_KEEP" ]; then
	W=$MT_PTT_KEEP
	mkdir -p "$W" || exit 1
else
	W=$(mktemp -d /tmp/mt-e2e-ptt.XXXXXX)
	trap 'rm -rf "$W"' EXIT
fi
for t in mt-convert mt-ptt-wrap mt-ptt-check; do
	if [ ! -x "$B/$t" ]; then
		echo "SKIP libipt_corpus ($B/$t not built)"
		exit 0
	fi
done
have_perf=
command -v perf >/dev/null 2>&1 && have_perf=1

# The reason a case is listed as known, or nothing.
known_reason() {
	awk -v n="$1" '$1 == n { $1 = ""; sub(/^ +/, ""); print; exit }' "$KNOWN"
}

# The defect a case is listed with in open-defects.txt, or nothing.
open_defect() {
	awk -v n="$1" '$1 == n { $1 = ""; sub(/^ +/, ""); print; exit }' "$OPEN"
}

# What is wrong with mt-convert's run on case $1 (exit status $2), or
# nothing: a crash, a hang, a sanitizer report, an output missing or cut.
run_problem() {
	local n=$1 rc=$2 f
	if [ "$rc" -eq 124 ]; then
		echo "hung (killed after 10 s)"
	elif [ "$rc" -ge 128 ]; then
		echo "crashed (signal $((rc - 128)))"
	elif grep -q 'Sanitizer\|runtime error' "$W/$n.conv"; then
		echo "sanitizer: $(grep -m1 'Sanitizer\|runtime error' "$W/$n.conv")"
	elif [ "$rc" -ne 0 ]; then
		echo "exit status $rc: $(head -1 "$W/$n.conv")"
	elif ls "$W/$n".*.tmp.* >/dev/null 2>&1; then
		echo "left a temporary file: $(ls "$W/$n".*.tmp.* | head -1)"
	elif [ ! -f "$W/$n.pftrace" ] || [ ! -s "$W/$n.sqlite" ]; then
		# (a trace without slices is an empty file)
		echo "no trace or database written"
	elif [ "$(head -1 "$W/$n.tsv")" != "$(printf 'tid\tdepth\tname\tstart_ns\tend_ns\tflags')" ]; then
		echo "the slice tree has no header"
	elif f=$(awk -F'\t' 'NF != 6 { print NR; exit }' "$W/$n.tsv") && [ -n "$f" ]; then
		echo "the slice tree is cut at line $f"
	fi
}

cases=()
for f in "$C"/libipt/*.ptt; do
	cases+=("libipt/$(basename "$f" .ptt)")
done
for f in "$C"/own/*.S; do
	[ -f "$f" ] && cases+=("own/$(basename "$f" .S)")
done
if [ $# -gt 0 ]; then
	want=" $* "
	sel=()
	for c in "${cases[@]}"; do
		[[ $want == *" ${c#*/} "* ]] && sel+=("$c")
	done
	cases=("${sel[@]}")
fi

agree=0 differ=0 known=0 open=0 decoded=0 error=0 stale=0 broken=0
p_agree=0 p_ptxed=0 p_ours=0 p_neither=0 p_none=0
failed=()
report() { # the line, also to stderr when it fails the suite
	echo "$1"
	[ -n "$2" ] && echo "$1" >&2
}
for c in "${cases[@]}"; do
	n=${c#*/}
	src=$C/$c
	if ! timeout 10 "$B/mt-ptt-wrap" "$src" "$W" >"$W/$n.wrap" 2>&1; then
		report "error $n: mt-ptt-wrap failed: $(head -1 "$W/$n.wrap")" 1
		error=$((error + 1)) broken=$((broken + 1))
		failed+=("$n")
		continue
	fi
	timeout 10 "$B/mt-convert" "$W/$n.data" -o "$W/$n.pftrace" \
		--no-stitch --text "$W/$n.tsv" -q >"$W/$n.conv" 2>&1
	rc=$?
	problem=$(run_problem "$n" $rc)
	has_exp=
	[ -f "$src-ptxed.exp" ] || [ -f "$src.exp" ] && has_exp=1
	if [ -n "$problem" ]; then
		# A clean refusal of a case with nothing to compare is an
		# answer; anything else fails the suite.
		if [ $rc -ne 0 ] && [ $rc -lt 124 ] && [ -z "$has_exp" ] &&
			[[ $problem != sanitizer* ]]; then
			report "error $n: $(head -1 "$W/$n.conv")"
		else
			report "error $n: $problem" 1
			broken=$((broken + 1))
			failed+=("$n")
		fi
		error=$((error + 1))
		continue
	fi
	if [ -z "$has_exp" ]; then
		report "decoded $n ($(($(wc -l <"$W/$n.tsv") - 1)) slices)"
		decoded=$((decoded + 1))
		continue
	fi
	perf_opt=()
	if [ -n "$have_perf" ]; then
		timeout 10 perf script -i "$W/$n.data" --itrace=cre \
			-F ip,sym,flags,addr >"$W/$n.perf" 2>"$W/$n.perf.err"
		perf_opt=(--perf "$W/$n.perf")
	fi
	if [ -f "$src.exp" ]; then
		exp_opt=(--exp "$src.exp")
	else
		exp_opt=(--ptxed "$src-ptxed.exp" --lst "$src.lst" --bin "$src.bin")
	fi
	"$B/mt-ptt-check" --ours "$W/$n.tsv" "${exp_opt[@]}" "${perf_opt[@]}" \
		--name "$n" >"$W/$n.check" 2>&1
	rc=$?
	verdict=$(grep -m1 -E '^(agree|differ|noflow) ' "$W/$n.check")
	perf=$(sed -n 's/^perf [^ ]*: //p' "$W/$n.check")
	case "$perf" in
	"") perf="not run" p_none=$((p_none + 1)) ;;
	"agrees") p_agree=$((p_agree + 1)) ;;
	"agrees with the expectation, not ours") p_ptxed=$((p_ptxed + 1)) ;;
	"agrees with ours"*) p_ours=$((p_ours + 1)) ;;
	"no output") p_none=$((p_none + 1)) ;;
	*) p_neither=$((p_neither + 1)) ;;
	esac
	reason=$(known_reason "$n")
	defect=$(open_defect "$n")
	if [ $rc -eq 0 ] && [ -n "$defect" ]; then
		report "agree $n, but it is listed in open-defects.txt: remove it [perf: $perf]" 1
		agree=$((agree + 1)) stale=$((stale + 1))
		failed+=("$n")
	elif [ $rc -eq 1 ] && [ -n "$defect" ]; then
		report "open $n: $defect [perf: $perf]"
		open=$((open + 1))
	elif [ $rc -eq 0 ] && [ -n "$reason" ]; then
		report "agree $n, but it is listed in known-differences.txt: remove it [perf: $perf]" 1
		agree=$((agree + 1)) stale=$((stale + 1))
		failed+=("$n")
	elif [ $rc -eq 0 ]; then
		report "agree $n [perf: $perf]"
		agree=$((agree + 1))
	elif [ $rc -eq 1 ] && [ -n "$reason" ]; then
		report "known $n: $reason [perf: $perf]"
		known=$((known + 1))
	elif [ $rc -eq 1 ]; then
		report "$verdict [perf: $perf]" 1
		differ=$((differ + 1))
		failed+=("$n")
	elif [ $rc -eq 3 ]; then
		report "decoded $n (ptxed printed statistics only) [perf: $perf]"
		decoded=$((decoded + 1))
	else
		report "error $n: mt-ptt-check: $(head -1 "$W/$n.check")" 1
		error=$((error + 1)) broken=$((broken + 1))
		failed+=("$n")
	fi
done

echo "${#cases[@]} cases: $agree agree, $differ differ, $known known," \
	"$open open defects, $decoded decoded, $error error"
[ -n "$have_perf" ] &&
	echo "perf: $p_agree agree with both, $p_ptxed with the expectation" \
		"only, $p_ours with ours only, $p_neither with neither," \
		"$p_none no output"
if [ ${#failed[@]} -eq 0 ]; then
	echo "PASS libipt_corpus ($agree agree, $known known, $open open" \
		"defects, $decoded decoded, $error error)"
else
	echo "FAIL libipt_corpus: $differ differ, $stale listed as known or" \
		"open but agree, $broken broken: ${failed[*]}"
fi
