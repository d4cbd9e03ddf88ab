#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes the manual page of CMD (mt-capture, mt-convert, mt-report) to standard
# output from the README's section "## CMD": its synopsis block, its
# paragraphs and its options table.  The README is the one place the
# options are written; the pages are made from it at each build, so the
# two cannot drift apart (tests/e2e/90-install.sh checks the pages
# against the commands' --help too).
#
#   tools/man.sh CMD [README]
set -e
cmd=$1
root=$(cd "$(dirname "$0")/.." && pwd)
readme=${2:-$root/README.md}
version=$(sed -n 's/^#define MT_VERSION "\(.*\)"$/\1/p' "$root/util/version.h")
case $cmd in
mt-capture) what="record a program's control flow with Intel PT or its emulator" ;;
mt-convert) what="turn an Intel PT capture into a Perfetto trace and a SQLite database" ;;
mt-report) what="what the functions of a trace cost, from its SQLite database" ;;
*) echo "man.sh: no page for '$cmd'" >&2; exit 2 ;;
esac
grep -q "^## $cmd\$" "$readme" || {
	echo "man.sh: $readme: no section '## $cmd'" >&2
	exit 1
}
upper=$(echo "$cmd" | tr a-z A-Z)

awk -v cmd="$cmd" -v upper="$upper" -v what="$what" -v version="$version" '
# Markdown inline text to roff: code spans bold (their dashes minus
# signs), **bold**, links to their text; a backslash is \e; a line that
# would start with a control character is guarded.
function inline(s,   out, i, c, code, bold) {
	gsub(/\\\|/, "|", s)
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		t = substr(s, RSTART + 1, RLENGTH - 2)
		sub(/\]\(.*$/, "", t)
		s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
	}
	out = ""; code = 0; bold = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "`") {
			out = out (code ? "\\fR" : "\\fB"); code = !code
		} else if (!code && substr(s, i, 2) == "**") {
			out = out (bold ? "\\fR" : "\\fB"); bold = !bold; i++
		} else if (c == "\\") {
			out = out "\\e"
		} else if (c == "-" && code) {
			out = out "\\-"
		} else {
			out = out c
		}
	}
	if (code || bold)
		out = out "\\fR"
	if (out ~ /^[.\047]/)
		out = "\\&" out
	return out
}
function verbatim(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	if (s ~ /^[.\047]/)
		s = "\\&" s
	return s
}
BEGIN {
	print ".\\\" Made by tools/man.sh from README.md: edit the README, not this."
	printf ".TH %s 1 \"\" \"mt %s\" \"User Commands\"\n", upper, version
	print ".SH NAME"
	printf "%s \\- %s\n", cmd, what
}
$0 == "## " cmd { on = 1; next }
on && /^## / { on = 0 }
!on { next }
/^```/ {
	if (!incode && !synopsis_done) {
		print ".SH SYNOPSIS"; print ".nf"; incode = 1; synopsis = 1
	} else if (!incode) {
		print ".PP"; print ".nf"; print ".RS 4"; incode = 1
	} else {
		if (!synopsis) print ".RE"
		print ".fi"; incode = 0
		if (synopsis) { synopsis = 0; synopsis_done = 1; desc = 0 }
	}
	next
}
incode { print verbatim($0); next }
/^\| *option *\|/ || /^\|[-|]*\|$/ {
	if (!options) { print ".SH OPTIONS"; options = 1 }
	next
}
/^\|/ {
	line = $0
	gsub(/\\\|/, "\001", line)
	n = split(line, cell, "|")
	name = cell[2]; text = cell[3]
	gsub(/\001/, "\\|", name); gsub(/\001/, "\\|", text)
	gsub(/^ +| +$/, "", name); gsub(/^ +| +$/, "", text)
	if (text == "" && name ~ /^\*\*.*\*\*$/) {
		gsub(/\*\*/, "", name)
		print ".SS " inline(name)
		next
	}
	print ".TP"
	print inline(name)
	print inline(text)
	next
}
/^$/ { para = 1; next }
{
	if (!desc) {
		print (options ? ".SH NOTES" : ".SH DESCRIPTION"); desc = 1; para = 0
		notes = options
	} else if (options && !notes) {
		print ".SH NOTES"; notes = 1; para = 0
	}
	if (para) { print ".PP"; para = 0 }
	print inline($0)
}
END {
	print ".SH SEE ALSO"
	if (cmd == "mt-capture")
		print "\\fBmt-convert\\fR(1), \\fBperf\\fR(1), \\fBvalgrind\\fR(1)"
	else
		print "\\fBmt-capture\\fR(1), \\fBperf\\fR(1), \\fBsqlite3\\fR(1)"
	print ".PP"
	print "README.md and docs/ in the documentation installed with mt"
	print "(share/doc/mt), and the stub API of include/magic_trace.h."
}
' "$readme"
