#!/bin/bash
# SPDX-License-Identifier: MIT
# The emulation backend on real programs: mt-capture --emulate captures
# them, perf's decoder reads the capture without an error and reports the
# calls and returns of the emulator's own log, and the call tree mt-convert
# builds equals that log and has the calls the programs are known to make.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-emu.XXXXXX)
trap 'rm -rf "$W"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# aliases PROG OUT: "binary:address<TAB>name" for every address of PROG and
# of its libraries (and their debug files) that has several names; perf and
# our symbols may choose differently among them (ssignal, __bsd_signal).
aliases() {
	local f g id
	for f in "$1" $(ldd "$1" | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'); do
		id=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ {print $3}')
		for g in "$f" "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"; do
			[ -f "$g" ] || continue
			nm -C --defined-only "$g" 2>/dev/null
			nm -C -D --defined-only "$g" 2>/dev/null
		done | awk -v f="$f" '$2 ~ /^[TtWwiI]$/ {a = $1; sub(/^[^ ]+ [^ ]+ /, ""); print f ":" a "\t" $0}'
	done | sort -u | awk -F'\t' '{n[$1]++; l[$1] = l[$1] $0 "\n"}
		END {for (k in n) if (n[k] > 1) printf "%s", l[k]}' >"$2"
}

capture() { # name program [mt-capture options...]
	local name=$1 prog=$2
	shift 2
	if ! "$B/mt-capture" --emulate=ptrace "$@" --truth "$W/$name.truth" \
		-o "$W/$name.bin" -- "$prog" \
		>"$W/$name.out" 2>"$W/$name.err"; then
		echo "FAIL emulate_$name: mt-capture failed"
		sed 's/^/    /' "$W/$name.err" | tail -5
		return 1
	fi
	# -v: C++ names with their parameters, as the truth has them.
	if ! perf script -v -i "$W/$name.bin" --itrace=cre --ns \
		-F tid,time,flags,ip,sym,symoff,addr >"$W/$name.perf" 2>"$W/$name.perr" ||
		grep -q 'instruction trace error' "$W/$name.perf"; then
		echo "FAIL emulate_${name}_perf: perf reports errors"
		grep 'instruction trace error' "$W/$name.perf" | head -3 | sed 's/^/    /'
	else
		echo "PASS emulate_${name}_perf"
	fi
	# perf's decoder (no code shared with libipt) reports the calls and
	# returns of the emulator's log, one for one.  Tolerated, and said in
	# mt-synth-check: at a thread's end the direct call to _exit and the
	# exit_group that never returns leave no packet; names chosen
	# differently among aliases (--aliases) and for PLT entries.
	aliases "$prog" "$W/$name.aliases"
	if out=$("$B/mt-synth-check" "$W/$name.truth" "$W/$name.perf" \
		--aliases "$W/$name.aliases" 2>&1); then
		echo "PASS emulate_${name}_perf_calls (${out//$'\n'/; })"
	else
		echo "FAIL emulate_${name}_perf_calls: ${out//$'\n'/; }"
	fi
	if ! "$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" \
		--text "$W/$name.tsv" -q 2>"$W/$name.cerr"; then
		echo "FAIL emulate_$name: mt-convert failed"
		sed 's/^/    /' "$W/$name.cerr" | tail -5
		return 1
	fi
	# The emulator saw every instruction: its call log (--truth) is the
	# truth the converted tree must equal, call for call.  Times are
	# checked loosely: single-stepping stretches a few instructions
	# without a packet to milliseconds, and to tens of them on a loaded
	# machine (56 ms seen with make accuracy running beside): 200 ms.
	# The stack unwound at a trigger knows callers from before tracing
	# began, the log does not (--callers).
	if out=$("$B/mt-tree-check" "$W/$name.truth" "$W/$name.tsv" \
		--tol-ns 200000000 --callers 2>&1); then
		echo "PASS emulate_${name}_truth (${out//$'\n'/; })"
	else
		echo "FAIL emulate_${name}_truth: ${out//$'\n'/; }"
	fi
}

# unnamed_by_unwind NAME: code without symbols (libgcc's unwinder,
# libstdc++'s own functions) is named by where its function begins in the
# library's unwind tables, one name wherever the trace entered it: each
# "[unknown @ ADDR (lib)]" is the start of one of lib's FDEs as readelf
# lists them, or in none of them.  (The libraries' text loads at its file
# offsets: the address less the mapping's start plus its offset is the
# ELF's own.)
unnamed_by_unwind() {
	local name=$1 bad=0 n=0 addr base start len pgoff path vaddr lo hi ok in
	perf script -i "$W/$name.bin" --show-mmap-events 2>/dev/null |
		sed -n 's/.*MMAP2 [^[]*\[\(0x[0-9a-f]*\)(\(0x[0-9a-f]*\)) @ \(0x[0-9a-f]*\) .*r-xp \(\/.*\)$/\1 \2 \3 \4/p' \
		>"$W/$name.maps"
	while read -r addr base; do
		path=
		while read -r start len pgoff p; do
			if [ "${p##*/}" = "$base" ] && ((addr >= start && addr < start + len)); then
				path=$p
				break
			fi
		done <"$W/$name.maps"
		[ -n "$path" ] || continue
		[ -f "$W/$name.fde.$base" ] ||
			readelf --debug-dump=frames "$path" 2>/dev/null |
			sed -n 's/.* FDE .*pc=\([0-9a-f]*\)\.\.\([0-9a-f]*\)$/0x\1 0x\2/p' \
				>"$W/$name.fde.$base"
		vaddr=$((addr - start + pgoff))
		n=$((n + 1))
		ok=0 in=0
		while read -r lo hi; do
			((vaddr == lo)) && ok=1
			((vaddr > lo && vaddr < hi)) && in=1
		done <"$W/$name.fde.$base"
		if [ "$ok" = 0 ] && [ "$in" = 1 ]; then
			bad=$((bad + 1))
			echo "    $base: $addr (vaddr $(printf %#x "$vaddr")) inside a function"
		fi
	done < <(cut -f3 "$W/$name.tsv" | sort -u |
		sed -n 's/^\[unknown @ \(0x[0-9a-f]*\) (\(.*\))\]$/\1 \2/p')
	if [ "$n" = 0 ]; then
		# (the libraries' symbols are installed: nothing unnamed)
		echo "SKIP emulate_${name}_unnamed (no code without symbols)"
	elif [ "$bad" = 0 ]; then
		echo "PASS emulate_${name}_unnamed ($n functions without symbols, each named by its start)"
	else
		echo "FAIL emulate_${name}_unnamed: $bad of $n named inside a function"
	fi
}

# count FILE TID-or-any NAME: slices of that name
count() {
	awk -F'\t' -v t="$2" -v n="$3" '($1 == t || t == "any") && $3 == n' "$1" | wc -l
}

cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" || { echo "FAIL emulate: cc"; exit 0; }
if capture demo "$W/demo"; then
	# Requests 0..7 run before the snapshot the program asks for after the
	# slow 7th: fib(5) makes 15 calls, fib(12) 465, so 7 * 15 + 465 = 570;
	# perf must count the same.
	ours=$(count "$W/demo.tsv" any fib)
	theirs=$(grep -c 'call .*=> *[0-9a-f]* fib+0x0$' "$W/demo.perf")
	gaps=$(grep -c 'decode gap' "$W/demo.tsv")
	mainrow=$(awk -F'\t' '$3 == "main"' "$W/demo.tsv" | head -1)
	if [ "$ours" = 570 ] && [ "$theirs" = 570 ] && [ "$gaps" = 0 ] &&
		[ "$(count "$W/demo.tsv" any handle_request)$(count "$W/demo.tsv" any respond)" = 88 ] &&
		[[ "$mainrow" == *clipped_start* ]]; then
		echo "PASS emulate_demo_tree (fib 570 calls, perf 570, 8 requests, no gaps)"
	else
		echo "FAIL emulate_demo_tree: fib $ours (perf $theirs), gaps $gaps, main: $mainrow"
	fi
fi

cc -O1 -g -pthread -o "$W/threads" "$R/tests/programs/threads.c" ||
	{ echo "FAIL emulate: cc threads"; exit 0; }
if capture threads "$W/threads"; then
	# worker(0) in main: 3 leaf calls; worker(2) in the thread: 5.
	tids=$(cut -f1 "$W/threads.tsv" | tail -n +2 | sort -u | wc -l)
	main_tid=$(awk -F'\t' '$3 == "main" {print $1; exit}' "$W/threads.tsv")
	other=$(awk -F'\t' -v m="$main_tid" 'NR > 1 && $1 != m {print $1; exit}' "$W/threads.tsv")
	if [ "$tids" = 2 ] && [ "$(count "$W/threads.tsv" "$main_tid" leaf)" = 3 ] &&
		[ "$(count "$W/threads.tsv" "$other" leaf)" = 5 ] &&
		[ "$(count "$W/threads.tsv" "$other" thread_main)" = 1 ]; then
		echo "PASS emulate_threads_tree (2 threads, 3 and 5 leaf calls)"
	else
		echo "FAIL emulate_threads_tree: $tids threads, main $main_tid, other $other"
	fi
fi

# A tail call into the next function in the text: tail_from() ends with
# a direct jump to the first byte past its own end, where tail_to()
# begins.  That is a jump out of the function, not within it: each of the
# three calls shows tail_to() in tail_from()'s place.
cc -O1 -g -o "$W/tailnext" "$R/tests/programs/tailnext.c" ||
	{ echo "FAIL emulate: cc tailnext"; exit 0; }
if capture tailnext "$W/tailnext"; then
	tails=$(awk -F'\t' '$3 == "tail_to" && $2 == 2 && $6 ~ /tail/' "$W/tailnext.tsv" | wc -l)
	if [ "$(count "$W/tailnext.tsv" any tail_from)" = 3 ] && [ "$tails" = 3 ]; then
		echo "PASS emulate_tail_to_next (3 tail calls into the next function)"
	else
		echo "FAIL emulate_tail_to_next: $(count "$W/tailnext.tsv" any tail_from) calls of tail_from, $tails tail calls of tail_to"
	fi
fi

# An exec: the program execs itself.  The old program's frames end at the
# exec (its COMM record with the exec flag), not clipped, and the new
# program begins at depth 0 with its entry, in SQLite and in Perfetto: no
# slice spans the exec, and child_work() runs under the new _start.
if ! cc -O1 -g -static -o "$W/exec" "$R/tests/programs/exec.c" 2>/dev/null; then
	echo "SKIP emulate_exec (no static libc)"
elif ! "$B/mt-capture" --emulate=ptrace -o "$W/exec.bin" -- "$W/exec" \
	>/dev/null 2>"$W/exec.err" ||
	! "$B/mt-convert" "$W/exec.bin" -o "$W/exec.pftrace" --no-compress \
		-q 2>>"$W/exec.err"; then
	echo "FAIL emulate_exec: capture or convert failed"
	sed 's/^/    /' "$W/exec.err" | tail -3
else
	db=$W/exec.sqlite
	# the new program's entry (tracing began in the old one's main)
	at=$(sqlite3 "$db" "SELECT min(ts) FROM slice WHERE name = '_start'")
	at=${at:-0}
	first=$(sqlite3 "$db" "SELECT name || ':' || depth || ':' || inferred_start
		FROM slice WHERE ts >= $at ORDER BY ts, depth LIMIT 1")
	spanning=$(sqlite3 "$db" "SELECT count(*) FROM slice
		WHERE ts < $at AND ts + dur > $at")
	# ended together at the exec, which the segment table names
	ended=$(sqlite3 "$db" "SELECT group_concat(name, ' ') FROM (SELECT name
		FROM slice WHERE ts < $at AND NOT inferred_end AND ts + dur =
		(SELECT ts + dur FROM segment WHERE end_reason = 'exec')
		AND name IN ('main', 'run_exec', 'execl') ORDER BY depth)")
	root=$(sqlite3 "$db" "SELECT r.name FROM slice w JOIN slice r
		ON r.track_id = w.track_id AND r.depth = 0 AND r.ts <= w.ts
		AND r.ts + r.dur >= w.ts + w.dur WHERE w.name = 'child_work'")
	. "$MT_ROOT/tests/e2e/pf_decode.sh"
	if command -v protoc >/dev/null; then
		# the open slices when the first _start begins
		pf=$(pf_decode <"$W/exec.pftrace" | awk '
			/^packet \{/ { type = ""; nid = "" }
			/^    type: TYPE_SLICE_BEGIN/ { type = "B" }
			/^    type: TYPE_SLICE_END/ { type = "E" }
			/^    name_iid:/ { nid = $2 }
			/^    event_names \{/ { inev = 1 }
			inev && /^      iid:/ { iid = $2 }
			inev && /^      name:/ { names[iid] = $2; inev = 0 }
			/^\}/ {
				if (type == "B" && names[nid] == "\"_start\"" && !seen) {
					seen = 1; print open
				}
				open += type == "B" ? 1 : type == "E" ? -1 : 0
			}')
	else
		pf=0
	fi
	if [ "$at" != 0 ] && [ "$first" = "_start:0:0" ] && [ "$spanning" = 0 ] &&
		[ "$ended" = "main run_exec execl" ] && [ "$root" = _start ] &&
		[ "$pf" = 0 ]; then
		echo "PASS emulate_exec (the old frames end at the exec, _start a new root)"
	else
		echo "FAIL emulate_exec: exec at '$at', first after it '$first', $spanning slices span it, ended there '$ended', child_work under '$root', $pf open in Perfetto at _start"
	fi
fi

# setjmp/longjmp, a signal handler, mutual and 5000-deep recursion, a C++
# exception: each tree must equal the emulator's own log (capture checks).
for p in longjmp signal recursion; do
	cc -O1 -g -o "$W/$p" "$R/tests/programs/$p.c" && capture "$p" "$W/$p"
done
if command -v c++ >/dev/null; then
	c++ -O1 -g -o "$W/exception" "$R/tests/programs/exception.cc" &&
		capture exception "$W/exception" && unnamed_by_unwind exception
else
	echo "SKIP emulate_exception (no c++)"
fi

# The vDSO: the capture carries its bytes, so its code decodes.
cc -O1 -g -o "$W/clock" "$R/tests/programs/clock.c" ||
	{ echo "FAIL emulate: cc clock"; exit 0; }
if capture clock "$W/clock"; then
	n=$(awk -F'\t' '$3 ~ /^__vdso_clock_gettime$|^clock_gettime$/ && $3 !~ /plt/' "$W/clock.tsv" | wc -l)
	if [ "$(count "$W/clock.tsv" any __vdso_clock_gettime)" = 5 ] &&
		! grep -q 'decode gap' "$W/clock.tsv"; then
		echo "PASS emulate_vdso (5 calls into the vDSO, no gaps)"
	else
		echo "FAIL emulate_vdso: $n"; grep 'gap\|vdso' "$W/clock.tsv" | head -3 | sed 's/^/    /'
	fi
fi

# The stub API: the capture ends at mt_snapshot_point, reached from the
# 20th call of step(); the stack stored at that point agrees with the trace.
cc -O1 -g -I"$R" -o "$W/stub" "$R/tests/programs/stub.c" ||
	{ echo "FAIL emulate: cc stub"; exit 0; }
if capture stub "$W/stub"; then
	steps=$(count "$W/stub.tsv" any step)
	last=$(awk -F'\t' '$3 == "step"' "$W/stub.tsv" | tail -1)
	hit=$(sqlite3 "$W/stub.sqlite" "SELECT name, arg FROM hit" 2>&1)
	if [ "$steps" = 20 ] && [[ "$last" == *clipped_end* ]] &&
		[ "$hit" = "mt_snapshot_point|19" ]; then
		echo "PASS emulate_stub_trigger (20 calls of step, the last cut, hit arg 19)"
	else
		echo "FAIL emulate_stub_trigger: $steps calls of step; last: $last; hit: $hit"
	fi
fi

# The stack unwound at the trigger: tracing starts at work(), which main
# -> outer -> middle -> inner called before; a FILE:LINE trigger in mark()
# stops it.  Only the unwinder knows those callers: the converted trace's
# roots must be them, above the tree the emulator's log has.
cc -O1 -g -o "$W/deep" "$R/tests/programs/deep.c" ||
	{ echo "FAIL emulate: cc deep"; exit 0; }
line=$(grep -n MARK_LINE "$R/tests/programs/deep.c" | cut -d: -f1)
if capture deep "$W/deep" --start-at work --trigger "deep.c:$line"; then
	chain=$(awk -F'\t' 'NR > 1 && $3 == "work" {exit} NR > 1 {printf "%s ", $3}' "$W/deep.tsv")
	depth=$(awk -F'\t' '$3 == "work" {print $2; exit}' "$W/deep.tsv")
	hit=$(sqlite3 "$W/deep.sqlite" "SELECT name FROM hit" 2>&1)
	marks=$(count "$W/deep.tsv" any mark)
	if [[ "$chain" == *"main outer middle inner " ]] && [ "$depth" -ge 4 ] &&
		[ "$hit" = "deep.c:$line" ] && [ "$marks" = 3 ] &&
		! grep -q 'unwinding failed' "$W/deep.err"; then
		echo "PASS emulate_unwound_callers (above work: $chain)"
	else
		echo "FAIL emulate_unwound_callers: above work '$chain', hit '$hit', $marks calls of mark"
		sed 's/^/    /' "$W/deep.err" | tail -3
	fi
fi

# FILE:LINE triggers that cannot be: a line without code, a file that is
# not there, a name two files answer to; and a line of a shared library.
for bad in "deep.c:1|has no code.*nearest lines that do: [0-9]" \
	"nosuch.c:3|no source file 'nosuch.c'" \
	"same.c:2|names 2 source files"; do
	spec=${bad%%|*} want=${bad#*|}
	mkdir -p "$W/a" "$W/b"
	printf 'int fa(int x)\n{\n\treturn x + 1;\n}\n' >"$W/a/same.c"
	printf 'int fb(int x)\n{\n\treturn x + 2;\n}\n' >"$W/b/same.c"
	printf 'int fa(int), fb(int);\nint main(void)\n{\n\treturn fa(1) + fb(2) - 5;\n}\n' >"$W/two.c"
	cc -O1 -g -o "$W/two" "$W/two.c" "$W/a/same.c" "$W/b/same.c"
	prog=$W/deep
	[ "$spec" = same.c:2 ] && prog=$W/two
	if ! "$B/mt-capture" --emulate=ptrace --trigger "$spec" -o "$W/bad.bin" -- "$prog" \
		>/dev/null 2>"$W/bad.err" && [ "$(grep -c . "$W/bad.err")" -le 2 ] &&
		grep -q "$want" "$W/bad.err"; then
		echo "PASS emulate_line_trigger_error ($spec)"
	else
		echo "FAIL emulate_line_trigger_error ($spec)"; sed 's/^/    /' "$W/bad.err" | tail -3
	fi
done
printf '__attribute__((noinline)) int lib_add(int a, int b)\n{\n\treturn a + b;\n}\n' >"$W/tlib.c"
printf 'int lib_add(int, int);\nint main(void)\n{\n\treturn lib_add(2, 3) - 5;\n}\n' >"$W/tmain.c"
if cc -O1 -g -shared -fPIC -o "$W/libtlib.so" "$W/tlib.c" &&
	cc -O1 -g -o "$W/tmain" "$W/tmain.c" -L"$W" -ltlib -Wl,-rpath,"$W" &&
	"$B/mt-capture" --emulate=ptrace --trigger tlib.c:3 -o "$W/lib.bin" -- "$W/tmain" \
		>/dev/null 2>"$W/lib.err" &&
	"$B/mt-convert" "$W/lib.bin" -o "$W/lib.pftrace" --text "$W/lib.tsv" -q &&
	[ "$(sqlite3 "$W/lib.sqlite" "SELECT name FROM hit")" = tlib.c:3 ] &&
	awk -F'\t' '$3 == "lib_add" && $6 ~ /clipped_end/' "$W/lib.tsv" | grep -q .; then
	echo "PASS emulate_line_trigger_library"
else
	echo "FAIL emulate_line_trigger_library"; sed 's/^/    /' "$W/lib.err" | tail -3
fi

# --duration-thresh: the first request at least 100 ms after its
# mt_mark_start() snapshots (the waits grow 30 ms a round: the fourth,
# unless single-stepping on a loaded machine makes an earlier one that
# slow); the hit keeps the mark.
cc -O1 -I"$R" -o "$W/marked" "$R/tests/programs/marked.c" ||
	{ echo "FAIL emulate: cc marked"; exit 0; }
if capture marked "$W/marked" --duration-thresh 100ms &&
	hit=$(sqlite3 "$W/marked.sqlite" "SELECT arg, ts - mark_start >= 100000000,
		mark_start > 0 FROM hit") && [[ "$hit" =~ ^[0-9]+\|1\|1$ ]]; then
	echo "PASS emulate_duration_thresh (hit $hit)"
else
	echo "FAIL emulate_duration_thresh: '$hit'"; sed 's/^/    /' "$W/marked.err" | tail -3
fi

# --multi-snapshot: every qualifying hit (rounds 4..19, give or take one
# on a loaded machine) appends a snapshot
# and tracing goes on; each snapshot decodes (it starts at a PSB).
if "$B/mt-capture" --emulate=ptrace --multi-snapshot --duration-thresh 100ms \
	--snapshot-size 8K -o "$W/ms.bin" -- "$W/marked" >/dev/null 2>"$W/ms.err" &&
	"$B/mt-convert" "$W/ms.bin" -o "$W/ms.pftrace" --text "$W/ms.tsv" -q \
		2>>"$W/ms.err" &&
	hits=$(sqlite3 "$W/ms.sqlite" "SELECT count(*), min(arg) FROM hit") &&
	n=${hits%|*} && first=${hits#*|} && [ "$first" -ge 3 ] &&
	[ "$first" -le 6 ] && [ "$n" = $((20 - first)) ] &&
	[ "$(grep -c 'decode gap' "$W/ms.tsv")" -ge $((n - 1)) ] &&
	! perf script -i "$W/ms.bin" --itrace=cre 2>/dev/null | grep -q 'trace error'; then
	echo "PASS emulate_multi_snapshot ($n hits from round $first, a snapshot each)"
else
	echo "FAIL emulate_multi_snapshot: hits '$hits'"; sed 's/^/    /' "$W/ms.err" | tail -3
fi

# Snapshot mode: only the newest 4 KiB are kept; decoding starts at the
# first PSB in them and returns reveal the callers up to the root.
if "$B/mt-capture" --emulate=ptrace --snapshot-size 4K -o "$W/snap.bin" -- \
	"$W/demo" >/dev/null 2>"$W/snap.err" &&
	[ "$(stat -c %s "$W/snap.bin")" -lt 16384 ] &&
	"$B/mt-convert" "$W/snap.bin" -o "$W/snap.pftrace" --text "$W/snap.tsv" \
		-q 2>>"$W/snap.err" &&
	awk -F'\t' 'NR == 2 && $2 == 0 && $6 ~ /clipped_start/' "$W/snap.tsv" | grep -q . &&
	[ "$(count "$W/snap.tsv" any main)" = 1 ] &&
	[ "$(count "$W/snap.tsv" any fib)" -lt 570 ]; then
	echo "PASS emulate_snapshot_ring"
else
	echo "FAIL emulate_snapshot_ring"; sed 's/^/    /' "$W/snap.err" | head -3
fi

# Emulated overflows: packets lost as an overflowing CPU loses them; perf
# reports exactly one overflow per listed gap and mt-convert converts.
if "$B/mt-capture" --emulate=ptrace --drop-every 1000 --gaps "$W/drop.gaps" \
	-o "$W/drop.bin" -- "$W/demo" >/dev/null 2>"$W/drop.err" &&
	perf script -i "$W/drop.bin" --itrace=cre >"$W/drop.perf" 2>/dev/null &&
	gaps=$(($(wc -l <"$W/drop.gaps") - 1)) && [ "$gaps" -gt 0 ] &&
	[ "$(grep -c 'Overflow packet' "$W/drop.perf")" = "$gaps" ] &&
	[ "$(grep -c 'trace error' "$W/drop.perf")" = "$gaps" ] &&
	"$B/mt-convert" "$W/drop.bin" --text "$W/drop.tsv" -q &&
	[ "$(grep -c 'decode gap: overflow' "$W/drop.tsv")" = "$gaps" ]; then
	echo "PASS emulate_overflow ($gaps gaps)"
else
	echo "FAIL emulate_overflow"; sed 's/^/    /' "$W/drop.err" | tail -3
fi

# Attach to a running program, trace it a moment, Ctrl-C: the capture
# has its calls, and the program runs on, not stopped.
cc -O1 -o "$W/loop" "$R/tests/programs/loop.c" || { echo "FAIL emulate: cc loop"; exit 0; }
"$W/loop" &
target=$!
sleep 0.3
"$B/mt-capture" --emulate -p "$target" -o "$W/att.bin" --truth "$W/att.truth" \
	>/dev/null 2>"$W/att.err" &
cap=$!
sleep 1.5
kill -INT "$cap"
wait "$cap"
rc=$?
state=$(awk '/^State:/ {print $2}' "/proc/$target/status" 2>/dev/null)
kill "$target" 2>/dev/null
wait "$target" 2>/dev/null
if [ $rc -eq 0 ] && [ -n "$state" ] && [ "$state" != T ] && [ "$state" != t ] &&
	"$B/mt-convert" "$W/att.bin" -o "$W/att.pftrace" --text "$W/att.tsv" -q &&
	[ "$(count "$W/att.tsv" any work)" -gt 0 ] && [ "$(count "$W/att.tsv" any main)" = 1 ]; then
	echo "PASS emulate_attach (target left running, state $state)"
else
	echo "FAIL emulate_attach: rc $rc, target state '$state'"; sed 's/^/    /' "$W/att.err" | tail -3
fi
# perf agrees call for call here too; Ctrl-C ends each thread anywhere,
# which the tolerance at a thread's end covers.
aliases "$W/loop" "$W/att.aliases"
if perf script -v -i "$W/att.bin" --itrace=cre --ns -F tid,time,flags,ip,sym,symoff,addr \
	>"$W/att.perf" 2>/dev/null &&
	out=$("$B/mt-synth-check" "$W/att.truth" "$W/att.perf" --aliases "$W/att.aliases" 2>&1); then
	echo "PASS emulate_attach_perf_calls (${out//$'\n'/; })"
else
	echo "FAIL emulate_attach_perf_calls: ${out//$'\n'/; }"
fi

# The capture records build ids: a binary rebuilt after the capture is
# named as such, not decoded as if it were the same.
cp "$W/stub" "$W/stub2"
if "$B/mt-capture" --emulate=ptrace -o "$W/bid.bin" -- "$W/stub2" >/dev/null 2>&1 &&
	cc -O2 -I"$R" -o "$W/stub2" "$R/tests/programs/stub.c" &&
	"$B/mt-convert" "$W/bid.bin" -o "$W/bid.pftrace" -q 2>"$W/bid.err" &&
	[ "$(grep -c 'stub2.*another build id' "$W/bid.err")" = 1 ]; then
	echo "PASS emulate_build_id_mismatch"
else
	echo "FAIL emulate_build_id_mismatch"; sed 's/^/    /' "$W/bid.err" | head -3
fi

# Bad use: a program that does not exist, a symbol that does not exist.
if "$B/mt-capture" --emulate=ptrace -o "$W/x.bin" -- "$W/nope" 2>"$W/x.err"; then
	echo "FAIL emulate_missing_program: exit 0"
elif [ -e "$W/x.bin" ]; then
	echo "FAIL emulate_missing_program: left a capture"
else
	echo "PASS emulate_missing_program"
fi
if ! "$B/mt-capture" --emulate=ptrace --start-at no_such_symbol -o "$W/y.bin" -- \
	"$W/demo" >/dev/null 2>"$W/y.err" && grep -q "no symbol 'no_such_symbol'" "$W/y.err"; then
	echo "PASS emulate_missing_symbol"
else
	echo "FAIL emulate_missing_symbol"; sed 's/^/    /' "$W/y.err" | head -3
fi

# A stripped program starts at main all the same, on both emulate
# backends: what its _start hands to __libc_start_main.  It branches as
# the program with symbols does from main on, and perf decodes it.
cc -O1 -g -o "$W/rec" "$R/tests/programs/recursion.c" && strip -o "$W/rec-stripped" "$W/rec"
for be in ptrace valgrind; do
	if [ $be = valgrind ] && { ! command -v valgrind >/dev/null ||
		[ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; }; then
		echo "SKIP emulate_stripped_main_$be (valgrind or its tool not built)"
		continue
	fi
	for f in rec rec-stripped; do
		"$B/mt-capture" --emulate=$be -o "$W/$f.bin" -- "$W/$f" >/dev/null 2>"$W/$f.err"
	done
	a=$(grep -o '[0-9]* branches' "$W/rec.err")
	b=$(grep -o '[0-9]* branches' "$W/rec-stripped.err")
	if [ -n "$a" ] && [ "$a" = "$b" ] &&
		! perf script -i "$W/rec-stripped.bin" --itrace=cre 2>&1 | grep -q 'trace error'; then
		echo "PASS emulate_stripped_main_$be ($b from main)"
	else
		echo "FAIL emulate_stripped_main_$be: '$a' with symbols, '$b' stripped"
		sed 's/^/    /' "$W/rec-stripped.err" | tail -3
	fi
done
# No main symbol, and a _start of its own that hands __libc_start_main
# nothing: one line, no capture.
printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' >"$W/nomain.c"
cc -O1 -nostdlib -static -o "$W/nomain" "$W/nomain.c" && strip "$W/nomain"
if ! "$B/mt-capture" --emulate=ptrace -o "$W/nomain.bin" -- "$W/nomain" 2>"$W/nomain.err" &&
	[ ! -e "$W/nomain.bin" ] && [ "$(grep -vc single-stepping "$W/nomain.err")" = 1 ] &&
	grep -q "no symbol 'main', and its entry point does not hand one" "$W/nomain.err"; then
	echo "PASS emulate_stripped_nomain"
else
	echo "FAIL emulate_stripped_nomain"; sed 's/^/    /' "$W/nomain.err" | head -3
fi

# Functions of libraries, on both emulate backends: --trigger and
# --start-at name any function of any library the program loads, one
# loaded by dlopen() after the start included; a name no file has is
# said in one line, with the names like it.  Each library mapped while
# tracing is listed once, with its build id, at the time it was mapped.
printf 'int plug_fn(int x) { return x * 3 + 1; }\nint plug_other(int x) { return x; }\n' >"$W/plug.c"
printf '#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\nint main(int argc, char **argv)\n{\n\tchar *p = malloc(32);\n\tvoid *h = dlopen(argv[1], RTLD_NOW);\n\tint (*f)(int) = h ? (int (*)(int))dlsym(h, "plug_fn") : 0;\n\tint r = f ? f(argc) : 0;\n\n\tstrcpy(p, "x");\n\tfree(p);\n\tif (argc > 2) {\n\t\tFILE *o = fopen(argv[2], \"w\");\n\n\t\tfprintf(o, \"%%d\\n\", (int)getpid());\n\t\tfclose(o);\n\t\tfor (volatile unsigned long n = 0;; n++)\n\t\t\t;\n\t}\n\treturn r == 7 ? 0 : 1;\n}\n' >"$W/dlplug.c"
cc -O1 -g -shared -fPIC -o "$W/libplug.so" "$W/plug.c" &&
	cc -O1 -g -Wl,-z,now -o "$W/dlplug" "$W/dlplug.c" -ldl
for be in ptrace valgrind; do
	if [ $be = valgrind ] && { ! command -v valgrind >/dev/null ||
		[ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; }; then
		echo "SKIP emulate_lib_symbols_$be (valgrind or its tool not built)"
		continue
	fi
	why=
	hit() { # capture: the function its hit names
		"$B/mt-convert" --info "$1" 2>/dev/null | awk '$1 == "hit" {print $4}'
	}
	# A trigger in the library dlopen() loads, and in libc.
	for fn in plug_fn free; do
		rm -f "$W/lt.bin"
		"$B/mt-capture" --emulate=$be --trigger $fn -o "$W/lt.bin" -- \
			"$W/dlplug" "$W/libplug.so" >/dev/null 2>"$W/lt.err" ||
			why="$why --trigger $fn failed: $(tail -1 "$W/lt.err");"
		h=$(hit "$W/lt.bin")
		[ "$h" = $fn ] || why="$why --trigger $fn hit '$h';"
	done
	# Tracing from the first call of a library's function.
	rm -f "$W/ls.bin"
	"$B/mt-capture" --emulate=$be --start-at plug_fn -o "$W/ls.bin" -- \
		"$W/dlplug" "$W/libplug.so" >/dev/null 2>"$W/ls.err" ||
		why="$why --start-at plug_fn failed: $(tail -1 "$W/ls.err");"
	first=$(perf script -i "$W/ls.bin" --itrace=b -F ip,sym,addr 2>/dev/null |
		awk '{for (i = 1; i < NF; i++) if ($i == "=>") {print $(i + 2); exit}}')
	[ "$first" = plug_fn ] || why="$why --start-at plug_fn began in '$first';"
	# A start no file has: one line naming what there is, no capture.
	rm -f "$W/lx.bin"
	if "$B/mt-capture" --emulate=$be --start-at plug -o "$W/lx.bin" -- \
		"$W/dlplug" "$W/libplug.so" >/dev/null 2>"$W/lx.err" || [ -e "$W/lx.bin" ] ||
		[ "$(grep -vc '^mt-capture: emulating Intel PT' "$W/lx.err")" != 1 ] ||
		! grep -q "no symbol 'plug' in it or the libraries it loaded (did you mean .*plug_fn" "$W/lx.err"; then
		why="$why --start-at plug: $(tail -1 "$W/lx.err");"
	fi
	# A trigger no file has: traced to the end, and said.
	"$B/mt-capture" --emulate=$be --trigger plug -o "$W/ly.bin" -- \
		"$W/dlplug" "$W/libplug.so" >/dev/null 2>"$W/ly.err" &&
		grep -q "trigger: .*no symbol 'plug' in it or the libraries it loaded.*traced to the end" "$W/ly.err" ||
		why="$why --trigger plug: $(tail -1 "$W/ly.err");"
	if [ -z "$why" ]; then
		echo "PASS emulate_lib_symbols_$be"
	else
		echo "FAIL emulate_lib_symbols_$be:$why"
	fi

	# From exec: ld.so maps libc, dlopen() maps libplug.so; each is
	# listed once with its build id, its MMAP2 at the time it came.
	why=
	"$B/mt-capture" --emulate=$be --start-at '' -o "$W/lm.bin" -- \
		"$W/dlplug" "$W/libplug.so" >/dev/null 2>"$W/lm.err" ||
		why=" capture failed: $(tail -1 "$W/lm.err")"
	"$B/mt-convert" --info "$W/lm.bin" >"$W/lm.info" 2>&1
	for lib in libc.so.6 libplug.so; do
		n=$(grep -c "/$lib build id [0-9a-f]" "$W/lm.info")
		[ "$n" = 1 ] || why="$why $lib listed $n times with a build id ($(grep -c "/$lib" "$W/lm.info") in all);"
	done
	perf script -i "$W/lm.bin" --show-mmap-events --itrace= 2>/dev/null |
		awk -v d="$W" '{for (i = 1; i < NF; i++) if ($(i + 1) == "PERF_RECORD_MMAP2") {x = $i; sub(":", "", x); t[$NF] = x}}
			END {print t[d "/dlplug"], t[d "/libplug.so"]}' >"$W/lm.times"
	read -r t_exe t_plug <"$W/lm.times"
	if [ -z "$t_exe" ] || [ -z "$t_plug" ] ||
		! awk -v a="$t_exe" -v b="$t_plug" 'BEGIN {exit !(b > a)}'; then
		why="$why MMAP2 times: exe '$t_exe', libplug.so '$t_plug';"
	fi
	# ld.so calls libc's IFUNC resolvers while relocating it: each is
	# named as perf names it (__strnlen_ifunc, not strnlen).
	perf script -i "$W/lm.bin" --itrace=c -F ip,sym,addr 2>/dev/null |
		awk '$2 ~ /^_dl_relocate_object/ && $3 == "=>" {print $5}' | sed 's/@.*//' | sort -u >"$W/lm.perf"
	if "$B/mt-convert" "$W/lm.bin" -o "$W/lm.pftrace" --no-sqlite --text "$W/lm.txt" -q 2>/dev/null; then
		awk -F'\t' '$6 != "inlined" {print $3}' "$W/lm.txt" | sed 's/@.*//' | sort -u >"$W/lm.ours"
		missing=$(comm -23 "$W/lm.perf" "$W/lm.ours" | tr '\n' ' ')
		[ -s "$W/lm.perf" ] && [ -z "$missing" ] ||
			why="$why resolvers perf names that we do not: '$missing';"
	else
		why="$why mt-convert failed;"
	fi
	# Ended by a signal (SIGTERM, as Ctrl-C) while the program spins, its
	# libraries mapped: each is there with its build id all the same.
	rm -f "$W/ready"
	"$B/mt-capture" --emulate=$be --start-at '' -o "$W/lc.bin" -- \
		"$W/dlplug" "$W/libplug.so" "$W/ready" >/dev/null 2>"$W/lc.err" &
	cap=$!
	for _ in $(seq 600); do [ -s "$W/ready" ] && break; sleep 0.1; done
	kill -TERM $cap
	wait $cap
	# It runs on untraced, spinning: ours to end.
	[ -s "$W/ready" ] && kill -KILL "$(cat "$W/ready")" 2>/dev/null
	"$B/mt-convert" --info "$W/lc.bin" >"$W/lc.info" 2>&1
	for lib in libc.so.6 libplug.so; do
		n=$(grep -c "/$lib build id [0-9a-f]" "$W/lc.info")
		[ "$n" = 1 ] || why="$why after SIGTERM, $lib listed $n times with a build id;"
	done
	if [ -z "$why" ]; then
		echo "PASS emulate_late_maps_$be"
	else
		echo "FAIL emulate_late_maps_$be:$why"
	fi
done

# A thread created before --start-at is reached runs meanwhile (main waits
# for it) and is traced from the start on; the first thread then leaves
# by pthread_exit, a zombie while the other runs on: the capture goes on
# to the program's end, both backends.
cc -O1 -g -pthread -o "$W/early" "$R/tests/programs/early.c"
for be in ptrace valgrind; do
	if [ $be = valgrind ] && { ! command -v valgrind >/dev/null ||
		[ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; }; then
		echo "SKIP emulate_early_thread_$be (no valgrind)"
		continue
	fi
	timeout -k 5 60 "$B/mt-capture" --emulate=$be --start-at start_here \
		--truth "$W/early.truth" -o "$W/early.bin" -- "$W/early" \
		>"$W/early.out" 2>"$W/early.err"
	rc=$?
	n=$(awk -F'\t' '$3 == "late"' "$W/early.truth" 2>/dev/null | wc -l)
	if [ $rc = 0 ] && [ "$(grep -c late "$W/early.out")" = 3 ] && [ "$n" = 3 ] &&
		"$B/mt-convert" -q "$W/early.bin" -o "$W/early.pftrace" 2>/dev/null; then
		echo "PASS emulate_early_thread_$be"
	else
		echo "FAIL emulate_early_thread_$be: exit $rc, $n calls of late() traced"
		sed 's/^/    /' "$W/early.err" | tail -2
	fi
done
