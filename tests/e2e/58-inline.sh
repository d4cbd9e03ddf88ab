#!/bin/bash
# SPDX-License-Identifier: MIT
# Inlined calls: tests/programs/inline.c built with -O2 -g, where hot()
# inlines round_of(), which inlines step(), which inlines mix(), which
# calls note() (not inlined), is captured (emulated) and converted.
#  - every run of the loop shows round_of > step > mix under hot, each
#    flagged inlined, as many as the loop ran;
#  - their nesting and call sites are what addr2line -i says of the code
#    at the bottom of the three;
#  - note() sits under mix(), and the tree without the inlined calls is
#    the emulator's truth, call for call;
#  - no inlined slice sticks out of its parent;
#  - Perfetto has the "inlined" arg; --no-inline has no inlined slice and
#    the same real calls; -j 4 with pieces of four sizes gives the same
#    files;
#  - a trace that begins inside note() reveals hot() with the three
#    inlined calls around note().
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-inl58.XXXXXX)
trap 'rm -rf "$W"' EXIT
N=1500

if ! command -v addr2line >/dev/null || ! command -v objdump >/dev/null ||
	! command -v sqlite3 >/dev/null; then
	echo "SKIP inline (no addr2line, objdump or sqlite3)"
	exit 0
fi
cc -O2 -g -o "$W/inline" "$R/tests/programs/inline.c" ||
	{ echo "FAIL inline: cc"; exit 0; }
if ! "$B/mt-capture" --emulate=ptrace --truth "$W/truth" -o "$W/inl.bin" -- \
	"$W/inline" $N >/dev/null 2>"$W/cap.err" ||
	! "$B/mt-convert" "$W/inl.bin" -o "$W/inl.pftrace" --no-compress \
		--text "$W/inl.tsv" -q 2>"$W/conv.err"; then
	echo "FAIL inline: capture or conversion failed"
	tail -3 "$W/cap.err" "$W/conv.err" | sed 's/^/    /'
	exit 0
fi
db=$W/inl.sqlite
q() { sqlite3 "$db" "$1" 2>&1; }

# Each inlined call, as many times as the loop ran, nested as the source
# nests them.
got=$(q "SELECT c.name || '<' || p.name || ':' || count(*) FROM slice c
	JOIN slice p ON p.id = c.parent_id WHERE c.inlined
	AND c.source LIKE '%/inline.c:%' GROUP BY c.name, p.name
	ORDER BY c.name")
want="mix<step:$N
round_of<hot:$N
step<round_of:$N"
if [ "$got" = "$want" ]; then
	echo "PASS inline_nesting (round_of > step > mix, $N each)"
else
	echo "FAIL inline_nesting: ${got//$'\n'/ } (want ${want//$'\n'/ })"
fi

# The chain addr2line -i gives for an instruction of mix() inside hot():
# the functions, innermost first, each line after the first being the
# line of the call inlined there.
hot=$(nm "$W/inline" | awk '$3 == "hot" {print $1}')
chain=
for a in $(objdump -d --no-show-raw-insn "$W/inline" |
	awk '/<hot>:$/ {on = 1; next} on && /^$/ {exit}
	     on {a = $1; sub(":", "", a); print "0x" a}'); do
	c=$(addr2line -i -f -e "$W/inline" "$a" |
		sed 's/ (discriminator [0-9]*)//' | paste -sd' ')
	case $c in mix\ *step\ *round_of\ *hot\ *) chain=$c; break ;; esac
done
if [ -z "$hot" ] || [ -z "$chain" ]; then
	echo "FAIL inline_addr2line: no code of mix inlined three deep in hot"
else
	# "mix F:L step F:L1 round_of F:L2 hot F:L3": mix called at L1 ...
	set -- $chain
	want="mix|inline.c:${4##*:}
round_of|inline.c:${8##*:}
step|inline.c:${6##*:}"
	got=$(q "SELECT DISTINCT name, call_site FROM slice WHERE inlined
		AND source LIKE '%/inline.c:%' ORDER BY name" |
		sed 's|\|.*/|\||')
	if [ "$got" = "$want" ]; then
		echo "PASS inline_addr2line (call sites as addr2line -i says)"
	else
		echo "FAIL inline_addr2line: ${got//$'\n'/ } (addr2line: ${want//$'\n'/ })"
	fi
fi

# The real calls: note() under mix(), and the truth call for call.
got=$(q "SELECT count(*) FROM slice c JOIN slice p ON p.id = c.parent_id
	WHERE c.name = 'note' AND p.name = 'mix'")
all=$(q "SELECT count(*) FROM slice WHERE name = 'note'")
if [ "${all:-0}" -gt 0 ] && [ "$got" = "$all" ]; then
	echo "PASS inline_callee ($got calls of note, each under mix)"
else
	echo "FAIL inline_callee: $got of $all calls of note under mix"
fi
if out=$("$B/mt-tree-check" "$W/truth" "$W/inl.tsv" --tol-ns 200000000 \
	--callers 2>&1); then
	echo "PASS inline_truth (${out//$'\n'/; })"
else
	echo "FAIL inline_truth: ${out//$'\n'/; }"
fi

got=$(q "SELECT count(*) FROM slice c JOIN slice p ON p.id = c.parent_id
	WHERE c.ts < p.ts OR c.ts + c.dur > p.ts + p.dur
	OR c.depth != p.depth + 1")
if [ "$got" = 0 ]; then
	echo "PASS inline_inside (every slice within its parent)"
else
	echo "FAIL inline_inside: $got slices outside their parent"
fi

. "$MT_ROOT/tests/e2e/pf_decode.sh"
if ! command -v protoc >/dev/null; then
	echo "SKIP inline_perfetto (no protoc)"
elif pf_decode <"$W/inl.pftrace" >"$W/decoded.txt" 2>"$W/protoc.err" &&
	grep -q 'name: "inlined"' "$W/decoded.txt"; then
	echo "PASS inline_perfetto"
else
	echo "FAIL inline_perfetto"
	head -3 "$W/protoc.err" | sed 's/^/    /'
fi

# --no-inline: the real calls only, the same ones.
"$B/mt-convert" "$W/inl.bin" -o "$W/no.pftrace" --text "$W/no.tsv" \
	--no-inline -q 2>/dev/null
got=$(sqlite3 "$W/no.sqlite" "SELECT count(*) FROM slice WHERE inlined" 2>&1)
a=$(q "SELECT name, depth - (SELECT count(*) FROM slice i
	WHERE i.inlined AND i.track_id = s.track_id AND i.ts <= s.ts
	AND i.ts + i.dur >= s.ts + s.dur AND i.depth < s.depth), ts, dur
	FROM slice s WHERE NOT inlined ORDER BY id" | md5sum)
b=$(sqlite3 "$W/no.sqlite" "SELECT name, depth, ts, dur FROM slice
	ORDER BY id" | md5sum)
if [ "$got" = 0 ] && [ "$a" = "$b" ]; then
	echo "PASS inline_off (--no-inline: the same calls, none inlined)"
else
	echo "FAIL inline_off: $got inlined slices, same calls: $([ "$a" = "$b" ] && echo yes || echo no)"
fi

# Tracing that begins inside note(): the returns reveal hot() with the
# calls inlined where it called note, around it.
if "$B/mt-capture" --emulate=ptrace --start-at note -o "$W/sa.bin" -- \
	"$W/inline" $N >/dev/null 2>&1 &&
	"$B/mt-convert" "$W/sa.bin" -o "$W/sa.pftrace" --no-final-stack -q \
		2>/dev/null; then
	got=$(sqlite3 "$W/sa.sqlite" "SELECT group_concat(name, ' > ') FROM
		(SELECT name FROM slice WHERE ts = (SELECT min(ts) FROM slice)
		AND depth >= 2 ORDER BY depth)" 2>&1)
	if [ "$got" = "hot > round_of > step > mix > note" ]; then
		echo "PASS inline_revealed ($got)"
	else
		echo "FAIL inline_revealed: $got"
	fi
else
	echo "FAIL inline_revealed: capture or conversion failed"
fi

# The parallel decode carries the inlined calls open across its pieces,
# and where libipt cuts code into blocks (its block cache is shared by
# the threads, and cuts differently from run to run) changes nothing:
# several piece sizes, each the same files as -j 1.
"$B/mt-convert" "$W/inl.bin" -o "$W/j1.pftrace" --text "$W/j1.tsv" \
	-j 1 -q 2>/dev/null
bad="" joined=""
for ps in 4K 5K 6K 8K; do
	"$B/mt-convert" "$W/inl.bin" -o "$W/j4.pftrace" --text "$W/j4.tsv" \
		-j 4 --piece-size $ps 2>"$W/j4.err" >/dev/null
	cmp -s "$W/j1.pftrace" "$W/j4.pftrace" &&
		cmp -s "$W/j1.tsv" "$W/j4.tsv" &&
		cmp -s "$W/j1.sqlite" "$W/j4.sqlite" || bad="$bad $ps"
	joined="$joined$ps: $(grep -o '[0-9]* pieces.*joined' "$W/j4.err"); "
done
if [ -z "$bad" ]; then
	echo "PASS inline_parallel (${joined%; })"
else
	echo "FAIL inline_parallel: -j 4 differs from -j 1 with pieces of$bad"
fi

# The same on examples/demo.c with packets dropped: glibc's printf, whose
# inlined calls the compiler interleaved (with its debug file installed),
# in many segments.  Where this once differed from -j 1, it did so about
# one conversion in seven: twelve conversions.
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" &&
	"$B/mt-capture" --emulate=ptrace --drop-every 1000 -o "$W/demo.bin" -- \
		"$W/demo" >/dev/null 2>&1 &&
	"$B/mt-convert" "$W/demo.bin" -o "$W/d1.pftrace" --text "$W/d1.tsv" \
		-j 1 -q 2>/dev/null || echo "FAIL inline_parallel_demo: no capture"
bad=
for ps in 4K 6K 8K 4K 6K 8K 4K 6K 8K 4K 6K 8K; do
	"$B/mt-convert" "$W/demo.bin" -o "$W/d4.pftrace" --text "$W/d4.tsv" \
		-j 3 --piece-size $ps -q 2>/dev/null
	cmp -s "$W/d1.pftrace" "$W/d4.pftrace" &&
		cmp -s "$W/d1.tsv" "$W/d4.tsv" &&
		cmp -s "$W/d1.sqlite" "$W/d4.sqlite" || bad="$bad $ps"
done
if [ -z "$bad" ]; then
	echo "PASS inline_parallel_demo ($(grep -c inlined "$W/d1.tsv") inlined" \
		"slices, 12 conversions with -j 3 as -j 1's)"
else
	echo "FAIL inline_parallel_demo: -j 3 differs from -j 1 with pieces of$bad"
fi

# A stripped binary has no DWARF of its own and none on this machine:
# the conversion reads what is here and asks no debuginfod server,
# whatever DEBUGINFOD_URLS says (a query a stripped binary, each waiting
# up to 90 s for a server that cannot be reached).  A listener counts
# who connects to the server it names; the outputs are those of a
# conversion without it.
if ! command -v python3 >/dev/null; then
	echo "SKIP inline_no_debuginfod (no python3)"
elif ! cc -O2 -s -o "$W/stripped" "$R/tests/programs/inline.c" ||
	! "$B/mt-capture" --emulate=ptrace -o "$W/st.bin" -- "$W/stripped" 200 \
		>/dev/null 2>&1 ||
	! env -u DEBUGINFOD_URLS "$B/mt-convert" "$W/st.bin" \
		-o "$W/st0.pftrace" -q 2>/dev/null; then
	echo "FAIL inline_no_debuginfod: no capture of a stripped binary"
else
	python3 -c '
import os, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(60)
n = 0
try:
    while True:
        c, _ = s.accept(); n += 1; c.close()
        open(sys.argv[2], "w").write(str(n))
except OSError:
    pass
' "$W/port" "$W/conns" &
	lp=$!
	for _ in $(seq 200); do [ -s "$W/port" ] && break; sleep 0.05; done
	DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$W/port" 2>/dev/null)/" \
		DEBUGINFOD_CACHE_PATH="$W/dcache" "$B/mt-convert" "$W/st.bin" \
		-o "$W/st1.pftrace" -q 2>/dev/null
	rc=$?
	kill "$lp" 2>/dev/null
	wait "$lp" 2>/dev/null
	conns=$(cat "$W/conns" 2>/dev/null || echo 0)
	if [ ! -s "$W/port" ]; then
		echo "FAIL inline_no_debuginfod: the listener did not start"
	elif [ "$rc" -ne 0 ] || [ "$conns" -ne 0 ]; then
		echo "FAIL inline_no_debuginfod: exit $rc, $conns connections to" \
			"the debuginfod server"
	elif ! cmp -s "$W/st0.pftrace" "$W/st1.pftrace" ||
		! cmp -s "$W/st0.sqlite" "$W/st1.sqlite"; then
		echo "FAIL inline_no_debuginfod: other outputs with DEBUGINFOD_URLS"
	else
		echo "PASS inline_no_debuginfod (no connection, the same outputs)"
	fi
fi

# The inlined calls come from a separate debug file under --debug-root
# too, as the symbols do: the program's DWARF moved to DIR/.build-id/,
# the binary stripped of it, its capture converted with --debug-root DIR
# has the inlined calls (and source lines) of the unstripped one, and
# without --debug-root none.
bid=$(readelf -n "$W/inline" 2>/dev/null |
	sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
dd="$W/dbgroot/.build-id/${bid:0:2}"
if [ -z "$bid" ] || ! mkdir -p "$dd" ||
	! objcopy --only-keep-debug "$W/inline" "$dd/${bid:2}.debug" ||
	! objcopy --strip-debug "$W/inline" "$W/inline_nodbg" ||
	! "$B/mt-capture" --emulate=ptrace -o "$W/nodbg.bin" -- \
		"$W/inline_nodbg" 300 >/dev/null 2>&1 ||
	! "$B/mt-convert" "$W/nodbg.bin" -o "$W/root.pftrace" -q \
		--debug-root "$W/dbgroot" 2>/dev/null ||
	! "$B/mt-convert" "$W/nodbg.bin" -o "$W/noroot.pftrace" -q \
		2>/dev/null; then
	echo "FAIL inline_debug_root: no build id, debug file or capture"
else
	inl() { sqlite3 "$1" "SELECT count(*) FROM slice WHERE inlined AND
		source LIKE '%/inline.c:%'" 2>&1; }
	with=$(inl "$W/root.sqlite") without=$(inl "$W/noroot.sqlite")
	if [ "$with" = $((3 * 300)) ] && [ "$without" = 0 ]; then
		echo "PASS inline_debug_root ($with inlined slices with" \
			"--debug-root, none without)"
	else
		echo "FAIL inline_debug_root: $with inlined slices with" \
			"--debug-root (want $((3 * 300))), $without without (want 0)"
	fi
fi
