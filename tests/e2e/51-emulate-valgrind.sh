#!/bin/bash
# SPDX-License-Identifier: MIT
# The Valgrind backend (--emulate, --emulate=valgrind) on test programs
# and real ones: perf's decoder reads each capture without an error and
# reports the calls and returns of the tool's own log (--truth), and the
# call tree mt-convert builds equals that log; on Debian's programs and a
# Go program, perf's calls equal the log's and mt-convert's equal perf's,
# by address; --emulate picks this backend, and ptrace for -p.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-vg.XXXXXX)
trap 'rm -rf "$W"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

if ! command -v valgrind >/dev/null || [ ! -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	echo "SKIP emulate_valgrind (valgrind or its tool not built: apt-get install valgrind)"
	exit 0
fi

# aliases PROG OUT: addresses with several names (see 50-emulate.sh).
aliases() {
	local f g id
	for f in "$1" $(ldd "$1" 2>/dev/null | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'); do
		id=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ {print $3}')
		for g in "$f" "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"; do
			[ -f "$g" ] || continue
			nm -C --defined-only "$g" 2>/dev/null
			nm -C -D --defined-only "$g" 2>/dev/null
		done | awk -v f="$f" '$2 ~ /^[TtWwiI]$/ {a = $1; sub(/^[^ ]+ [^ ]+ /, ""); print f ":" a "\t" $0}'
	done | sort -u | awk -F'\t' '{n[$1]++; l[$1] = l[$1] $0 "\n"}
		END {for (k in n) if (n[k] > 1) printf "%s", l[k]}' >"$2"
}

capture() { # name program [mt-capture options...] [-- args]
	local name=$1 prog=$2 opts=() args=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	[ "$1" = -- ] && shift && args=("$@")
	if ! "$B/mt-capture" --emulate=valgrind "${opts[@]}" --truth "$W/$name.truth" \
		-o "$W/$name.bin" -- "$prog" "${args[@]}" \
		>"$W/$name.out" 2>"$W/$name.err"; then
		echo "FAIL vg_$name: mt-capture failed"
		sed 's/^/    /' "$W/$name.err" | tail -5
		return 1
	fi
	if ! perf script -v -i "$W/$name.bin" --itrace=cre --ns \
		-F tid,time,flags,ip,sym,symoff,addr >"$W/$name.perf" 2>"$W/$name.perr" ||
		grep -q 'instruction trace error' "$W/$name.perf"; then
		echo "FAIL vg_${name}_perf: perf reports errors"
		grep 'instruction trace error' "$W/$name.perf" | head -3 | sed 's/^/    /'
	else
		echo "PASS vg_${name}_perf"
	fi
	aliases "$prog" "$W/$name.aliases"
	if out=$("$B/mt-synth-check" "$W/$name.truth" "$W/$name.perf" \
		--aliases "$W/$name.aliases" 2>&1); then
		echo "PASS vg_${name}_perf_calls (${out//$'\n'/; })"
	else
		echo "FAIL vg_${name}_perf_calls: ${out//$'\n'/; }"
	fi
	if ! "$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" \
		--text "$W/$name.tsv" -q 2>"$W/$name.cerr"; then
		echo "FAIL vg_$name: mt-convert failed"
		sed 's/^/    /' "$W/$name.cerr" | tail -5
		return 1
	fi
	# The clock is the tool's: the converted times are the log's, up to
	# the spreading of a run of branches between its first and last.
	if out=$("$B/mt-tree-check" "$W/$name.truth" "$W/$name.tsv" \
		--tol-ns 1000000 --callers 2>&1); then
		echo "PASS vg_${name}_truth (${out//$'\n'/; })"
	else
		echo "FAIL vg_${name}_truth: ${out//$'\n'/; }"
	fi
}

for p in recursion longjmp signal; do
	cc -O1 -g -o "$W/$p" "$R/tests/programs/$p.c" && capture "$p" "$W/$p"
done
# Recursion through a cold part and through a tail call, as -O2 lays
# them out (when the compiler splits walk() at all).
if cc -O2 -g -o "$W/coldpart" "$R/tests/programs/coldpart.c" &&
	nm "$W/coldpart" | grep -q ' walk\.cold'; then
	capture coldpart "$W/coldpart"
else
	echo "SKIP vg_coldpart (the compiler split off no walk.cold)"
fi
cc -O1 -g -pthread -o "$W/threads" "$R/tests/programs/threads.c" && capture threads "$W/threads"
if command -v c++ >/dev/null; then
	c++ -O1 -g -o "$W/exception" "$R/tests/programs/exception.cc" && capture exception "$W/exception"
fi
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" && capture demo "$W/demo"
cc -O1 -g -I"$R" -o "$W/stub" "$R/tests/programs/stub.c" && capture stub "$W/stub"
# Without --truth the tool packs the taken bits itself and sends a pack
# with the transfer after it: perf decodes the same branches, one by
# one, as from the capture made branch by branch with --truth.
if "$B/mt-capture" --emulate=valgrind -o "$W/packed.bin" -- "$W/demo" \
	>/dev/null 2>"$W/packed.err" &&
	perf script -i "$W/packed.bin" --itrace=b -F flags,ip,addr >"$W/packed.b" 2>/dev/null &&
	perf script -i "$W/demo.bin" --itrace=b -F flags,ip,addr >"$W/demo.b" 2>/dev/null &&
	[ "$(wc -l <"$W/demo.b")" -gt 1000 ] && cmp -s "$W/packed.b" "$W/demo.b"; then
	echo "PASS vg_packed_same ($(wc -l <"$W/demo.b") branches)"
else
	echo "FAIL vg_packed_same: $(diff "$W/packed.b" "$W/demo.b" 2>&1 | head -3 | tr '\n' ' ')"
	sed 's/^/    /' "$W/packed.err" | tail -3
fi
if [ -s "$W/stub.tsv" ] && hit=$(sqlite3 "$W/stub.sqlite" "SELECT name, arg FROM hit" 2>&1) &&
	[ "$hit" = "mt_snapshot_point|19" ] &&
	[ "$(awk -F'\t' '$3 == "step"' "$W/stub.tsv" | wc -l)" = 20 ]; then
	echo "PASS vg_stub_trigger (20 calls of step, hit arg 19)"
else
	echo "FAIL vg_stub_trigger: hit '$hit'"
fi
# Triggers that are no function: a source line deep in a call chain
# (the line tables of the executable, as file offsets), and an address.
cc -O1 -g -o "$W/deep" "$R/tests/programs/deep.c" || { echo "FAIL vg: cc deep"; exit 0; }
line=$(grep -n MARK_LINE "$R/tests/programs/deep.c" | cut -d: -f1)
if capture deep "$W/deep" --start-at work --trigger "deep.c:$line"; then
	chain=$(awk -F'\t' 'NR > 1 && $3 == "work" {exit} NR > 1 {printf "%s ", $3}' "$W/deep.tsv")
	hit=$(sqlite3 "$W/deep.sqlite" "SELECT name FROM hit" 2>&1)
	marks=$(awk -F'\t' '$3 == "mark"' "$W/deep.tsv" | wc -l)
	if [[ "$chain" == *"main outer middle inner " ]] && [ "$hit" = "deep.c:$line" ] &&
		[ "$marks" = 3 ]; then
		echo "PASS vg_line_trigger (hit $hit in the 3rd mark, above work: $chain)"
	else
		echo "FAIL vg_line_trigger: above work '$chain', hit '$hit', $marks calls of mark"
	fi
fi
# (Not a PIE: Valgrind loads it where its ELF says, so nm's address is
# the runtime one.)
cc -O1 -g -no-pie -I"$R" -o "$W/stubnp" "$R/tests/programs/stub.c"
at=$(nm "$W/stubnp" | awk '$3 == "mt_snapshot_point" {print $1}')
if capture stubnp "$W/stubnp" --trigger "addr:0x$at" &&
	hit=$(sqlite3 "$W/stubnp.sqlite" "SELECT name || '|' || arg FROM hit" 2>&1) &&
	[ "$hit" = "addr:0x$at|19" ] &&
	[ "$(awk -F'\t' '$3 == "step"' "$W/stubnp.tsv" | wc -l)" = 20 ]; then
	echo "PASS vg_addr_trigger (the stub's address: 20 calls of step, hit arg 19)"
else
	echo "FAIL vg_addr_trigger: hit '$hit'"
fi
# --drop-every: each loss is one overflow for perf and for mt-convert, and
# the calls perf shows are the log's less those the gaps list.
aliases "$W/demo" "$W/drop.aliases"
if "$B/mt-capture" --emulate=valgrind --drop-every 1000 --gaps "$W/drop.gaps" \
	--truth "$W/drop.truth" -o "$W/drop.bin" -- "$W/demo" >/dev/null 2>"$W/drop.err" &&
	perf script -i "$W/drop.bin" --itrace=cre --ns -F tid,time,flags,ip,sym,symoff,addr \
		>"$W/drop.perf" 2>/dev/null &&
	"$B/mt-convert" "$W/drop.bin" --text "$W/drop.tsv" -q 2>>"$W/drop.err"; then
	gaps=$(($(wc -l <"$W/drop.gaps") - 1))
	ovf=$(grep -c 'Overflow packet' "$W/drop.perf")
	errs=$(grep -c 'trace error' "$W/drop.perf")
	conv=$(grep -c 'decode gap: overflow' "$W/drop.tsv")
	if [ "$gaps" -gt 0 ] && [ "$ovf" = "$gaps" ] && [ "$errs" = "$gaps" ] &&
		[ "$conv" = "$gaps" ] &&
		out=$("$B/mt-synth-check" "$W/drop.truth" "$W/drop.perf" "$W/drop.gaps" \
			--aliases "$W/drop.aliases" 2>&1); then
		echo "PASS vg_drop_every ($gaps gaps: ${out//$'\n'/; })"
	else
		echo "FAIL vg_drop_every: $gaps gaps, perf $ovf overflows ($errs errors), mt-convert $conv: ${out//$'\n'/; }"
	fi
else
	echo "FAIL vg_drop_every: capture or convert failed"
	sed 's/^/    /' "$W/drop.err" | tail -3
fi
# An exec: the program execs itself (by its path: under Valgrind
# /proc/self/exe is Valgrind's).  The trace goes on in the new program:
# perf decodes both without an error, the old program's frames end at the
# exec (its COMM record with the exec flag), and the new program begins
# at depth 0 with its entry, as with --emulate=ptrace (50-emulate.sh).
sed 's|run_exec("/proc/self/exe")|run_exec(argv[0])|' "$R/tests/programs/exec.c" >"$W/exec.c"
if ! cc -O1 -g -static -o "$W/exec" "$W/exec.c" 2>/dev/null; then
	echo "SKIP vg_exec (no static libc)"
elif ! "$B/mt-capture" --emulate=valgrind -o "$W/exec.bin" -- "$W/exec" \
	>/dev/null 2>"$W/exec.err" ||
	! "$B/mt-convert" "$W/exec.bin" -o "$W/exec.pftrace" --no-compress \
		-q 2>>"$W/exec.err"; then
	echo "FAIL vg_exec: capture or convert failed"
	sed 's/^/    /' "$W/exec.err" | tail -3
else
	db=$W/exec.sqlite
	perr=$(perf script -i "$W/exec.bin" --itrace=cre 2>&1 | grep -c 'trace error')
	execs=$(perf script -i "$W/exec.bin" --show-task-events --no-itrace 2>/dev/null |
		grep -c 'PERF_RECORD_COMM exec')
	at=$(sqlite3 "$db" "SELECT min(ts) FROM slice WHERE name = '_start'")
	at=${at:-0}
	first=$(sqlite3 "$db" "SELECT name || ':' || depth || ':' || inferred_start
		FROM slice WHERE ts >= $at ORDER BY ts, depth LIMIT 1")
	spanning=$(sqlite3 "$db" "SELECT count(*) FROM slice
		WHERE ts < $at AND ts + dur > $at")
	ended=$(sqlite3 "$db" "SELECT group_concat(name, ' ') FROM (SELECT name
		FROM slice WHERE ts < $at AND NOT inferred_end AND ts + dur =
		(SELECT ts + dur FROM segment WHERE end_reason = 'exec')
		AND name IN ('main', 'run_exec', 'execl') ORDER BY depth)")
	root=$(sqlite3 "$db" "SELECT r.name FROM slice w JOIN slice r
		ON r.track_id = w.track_id AND r.depth = 0 AND r.ts <= w.ts
		AND r.ts + r.dur >= w.ts + w.dur WHERE w.name = 'child_work'")
	if [ "$perr" = 0 ] && [ "$execs" = 2 ] && [ "$at" != 0 ] &&
		[ "$first" = "_start:0:0" ] && [ "$spanning" = 0 ] &&
		[ "$ended" = "main run_exec execl" ] && [ "$root" = _start ]; then
		echo "PASS vg_exec (traced on in the new program: _start a new root)"
	else
		echo "FAIL vg_exec: $perr perf errors, $execs exec COMMs, first after the exec '$first', $spanning slices span it, ended there '$ended', child_work under '$root'"
		sed 's/^/    /' "$W/exec.err" | tail -3
	fi
fi
# Children: without --follow-children only the program is traced; with
# it, the child it forks too (its FORK record, its own thread), and a
# child that execs another program is traced on in that program.
cc -O1 -g -o "$W/forker" "$R/tests/programs/forker.c"
printf '#include <sys/wait.h>\n#include <unistd.h>\nint main(void)\n{\n\tint st;\n\tpid_t c = fork();\n\tif (c == 0) {\n\t\texecl("/bin/true", "true", (char *)0);\n\t\t_exit(1);\n\t}\n\treturn waitpid(c, &st, 0) != c || st;\n}\n' >"$W/fe.c"
cc -O1 -g -o "$W/fe" "$W/fe.c"
children() { # name program [mt-capture options]: "threads tids-calling-late comms"
	local name=$1 prog=$2
	shift 2
	"$B/mt-capture" --emulate=valgrind "$@" -o "$W/$name.bin" -- "$prog" \
		>"$W/$name.out" 2>"$W/$name.err" &&
		! perf script -i "$W/$name.bin" --itrace=cre 2>&1 | grep -q 'trace error' &&
		"$B/mt-convert" "$W/$name.bin" --text "$W/$name.tsv" -q 2>>"$W/$name.err" &&
		echo "$(tail -n +2 "$W/$name.tsv" | cut -f1 | sort -u | wc -l)" \
			"$(awk -F'\t' '$3 == "late" {print $1}' "$W/$name.tsv" | sort -u | wc -l)" \
			"$(perf script -i "$W/$name.bin" --itrace=cr -F comm 2>/dev/null | sort -u | tr -d ' ' | tr '\n' ,)"
}
got=$(children nofollow "$W/forker")
if [ "$got" = "1 1 forker," ] && grep -q 'child ok' "$W/nofollow.out"; then
	echo "PASS vg_no_follow_children (the parent only; the child runs untraced)"
else
	echo "FAIL vg_no_follow_children: '$got'"; sed 's/^/    /' "$W/nofollow.err" | tail -3
fi
got=$(children follow "$W/forker" --follow-children)
forks=$(perf script -i "$W/follow.bin" --show-task-events --no-itrace 2>/dev/null | grep -c 'PERF_RECORD_FORK')
if [ "$got" = "2 2 forker," ] && [ "$forks" = 1 ] && grep -q 'child ok' "$W/follow.out"; then
	echo "PASS vg_follow_children (late() in parent and child, one FORK)"
else
	echo "FAIL vg_follow_children: '$got', $forks FORK records"; sed 's/^/    /' "$W/follow.err" | tail -3
fi
got=$(children forkexec "$W/fe" --follow-children)
if [ "$got" = "2 0 fe,true," ]; then
	echo "PASS vg_follow_children_exec (the child traced on in /bin/true)"
else
	echo "FAIL vg_follow_children_exec: '$got'"; sed 's/^/    /' "$W/forkexec.err" | tail -3
fi
# The shared ring: one of 128 KiB (MT_TEST_VG_RING), which the records
# of a parent and the child it forks amid them wrap round about fifteen
# times, records over its end included, and which the tool waits on when
# it is full, gives each process the same branches as the default ring.
printf '#include <sys/wait.h>\n#include <unistd.h>\nstatic volatile unsigned sink;\n__attribute__((noinline)) static unsigned f(unsigned n)\n{\n\treturn n ? f(n - 1) + (n & 3 ? 1 : 2) : 0;\n}\nstatic void work(unsigned n)\n{\n\tfor (unsigned i = 0; i < n; i++)\n\t\tsink += f(i %% 50);\n}\nint main(void)\n{\n\tint st;\n\twork(1500);\n\tpid_t c = fork();\n\tif (c == 0) {\n\t\twork(1000);\n\t\t_exit(0);\n\t}\n\twork(1500);\n\treturn waitpid(c, &st, 0) != c || st;\n}\n' >"$W/ringer.c"
cc -O1 -g -o "$W/ringer" "$W/ringer.c"
# branches NAME: each process's branches, the first process's first.
branches() {
	perf script -i "$W/$1.bin" --itrace=b -F pid,flags,ip,addr 2>/dev/null |
		awk '!($1 in r) {r[$1] = ++n} {$1 = r[$1]; print}' | sort -s -n -k1,1 | md5sum
}
if "$B/mt-capture" --emulate=valgrind --follow-children -o "$W/ring_big.bin" -- "$W/ringer" \
	>/dev/null 2>"$W/ring_big.err" &&
	MT_TEST_VG_RING=131072 "$B/mt-capture" --emulate=valgrind --follow-children \
		-o "$W/ring_small.bin" -- "$W/ringer" >/dev/null 2>"$W/ring_small.err" &&
	n=$(perf script -i "$W/ring_small.bin" --itrace=b -F pid 2>/dev/null | sort -u | wc -l) &&
	[ "$n" = 2 ] && [ "$(branches ring_big)" = "$(branches ring_small)" ] &&
	! perf script -i "$W/ring_small.bin" --itrace=b 2>&1 | grep -q 'trace error'; then
	echo "PASS vg_small_ring ($(grep -o '[0-9]* branches' "$W/ring_small.err"), the same in both processes)"
else
	echo "FAIL vg_small_ring: ${n:-?} processes, branches differ or a run failed"
	sed 's/^/    /' "$W/ring_small.err" | tail -3
fi
# The trigger ends the stream before the tool's count of instructions:
# the summary gives none rather than 0.
if grep -q '^mt-capture: .*/stub.bin: [0-9]* branches, 1 thread' "$W/stub.err"; then
	echo "PASS vg_hit_summary"
else
	echo "FAIL vg_hit_summary: $(tail -1 "$W/stub.err")"
fi
# A library loaded by dlopen() after the start: its mapping is in the
# capture and its code decodes.
printf '#include <dlfcn.h>\nint main(void)\n{\n\tvoid *h = dlopen("libz.so.1", RTLD_NOW);\n\tconst char *(*v)(void) = h ? (const char *(*)(void))dlsym(h, "zlibVersion") : 0;\n\treturn v ? v()[0] != 0x31 : 1;\n}\n' >"$W/dl.c"
# (Its tree is not held to the log yet: they name the code around
# dlopen() differently.)
if cc -O1 -g -o "$W/dl" "$W/dl.c" -ldl &&
	"$B/mt-capture" --emulate=valgrind -o "$W/dl.bin" -- "$W/dl" 2>"$W/dl.err" &&
	! perf script -i "$W/dl.bin" --itrace=cre 2>&1 | grep -q 'trace error' &&
	"$B/mt-convert" "$W/dl.bin" -o "$W/dl.pftrace" --text "$W/dl.tsv" -q &&
	grep -q 'zlibVersion' "$W/dl.tsv"; then
	echo "PASS vg_dlopen (zlibVersion traced, no decode error)"
else
	echo "FAIL vg_dlopen"
	sed 's/^/    /' "$W/dl.err" | tail -3
fi
# Two libraries loaded in turn at one address (dlopen, dlclose, the other,
# and again): a MMAP2 record for each load, as the kernel writes, so that
# perf decodes each with its own code.
printf 'int work(int n)\n{\n\tint s = 0;\n\tfor (int i = 0; i < n; i++)\n\t\ts += i %% 7 ? i : -i;\n\treturn s;\n}\n' >"$W/rla.c"
printf 'static int h(int i) { return i * 3; }\nint work(int n)\n{\n\tint s = 1;\n\tfor (int i = 0; i < n; i++)\n\t\ts = i & 1 ? s ^ h(i) : s + 2;\n\treturn s;\n}\n' >"$W/rlb.c"
printf '#include <dlfcn.h>\nint main(int argc, char **argv)\n{\n\tlong t = 0;\n\tfor (int k = 0; k < 6; k++) {\n\t\tvoid *h = dlopen(argv[1 + (k & 1)], RTLD_NOW);\n\t\tint (*w)(int) = h ? (int (*)(int))dlsym(h, "work") : 0;\n\t\tif (!w)\n\t\t\treturn 1;\n\t\tt += w(5000);\n\t\tdlclose(h);\n\t}\n\treturn t == 0;\n}\n' >"$W/rl.c"
if cc -O1 -shared -fPIC -o "$W/librla.so" "$W/rla.c" &&
	cc -O1 -shared -fPIC -o "$W/librlb.so" "$W/rlb.c" &&
	cc -O1 -o "$W/rl" "$W/rl.c" -ldl &&
	"$B/mt-capture" --emulate=valgrind -o "$W/rl.bin" -- "$W/rl" "$W/librla.so" \
		"$W/librlb.so" >/dev/null 2>"$W/rl.err"; then
	maps=$(perf script -i "$W/rl.bin" --show-mmap-events --no-itrace 2>/dev/null |
		grep -c 'librl[ab].so')
	perr=$(perf script -i "$W/rl.bin" --itrace=e 2>&1 | grep -c 'trace error')
	if [ "$maps" = 6 ] && [ "$perr" = 0 ]; then
		echo "PASS vg_reload (6 loads at one address, 6 MMAP2 records, perf decodes them)"
	else
		echo "FAIL vg_reload: $maps MMAP2 records of 6 loads, $perr perf errors"
	fi
	# mt-convert decodes each load with its own code too (its calls
	# against perf's: below, with tools/realprogs.sh's).
	if "$B/mt-convert" "$W/rl.bin" -o "$W/rl.pftrace" 2>"$W/rl.cerr" &&
		grep -q ' 0 decode gaps' "$W/rl.cerr" &&
		[ "$(sqlite3 "$W/rl.sqlite" "SELECT count(*) FROM slice WHERE name = 'work'")" = 6 ]; then
		echo "PASS vg_reload_convert (no decode gap, 6 calls of work)"
	else
		echo "FAIL vg_reload_convert: $(head -1 "$W/rl.cerr")"
	fi
else
	echo "FAIL vg_reload: build or capture failed"
	sed 's/^/    /' "$W/rl.err" | tail -3
fi
# Debian's programs, stripped, traced from exec: perf decodes them
# without an error and mt-convert converts them.  (Their trees are not
# held to the log: the dynamic loader's entry has two names, which the
# two choose differently.)
real() { # name program args...
	local name=$1
	shift
	if "$B/mt-capture" --emulate=valgrind --start-at '' -o "$W/$name.bin" -- "$@" \
		>/dev/null 2>"$W/$name.err" &&
		! perf script -i "$W/$name.bin" --itrace=cre 2>&1 | grep -q 'trace error' &&
		"$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" -q 2>>"$W/$name.err"; then
		echo "PASS vg_real_$name"
	else
		echo "FAIL vg_real_$name"
		sed 's/^/    /' "$W/$name.err" | tail -3
	fi
}
real seq seq 100
printf '#include <stdio.h>\nint main(void)\n{\n\treturn puts("1") < 0;\n}\n' >"$W/seq1.c"
cc -O1 -o "$W/seq1" "$W/seq1.c"
printf 'b\na\nc\n' >"$W/in.txt"
real sort sort "$W/in.txt"
real gzip gzip -c "$R/README.md"

# Without --truth the tool reports no direct call: it compresses the
# returns against the calls it keeps, and places the PSBs, after which
# none compresses (nor after a system call or a signal).  The branches
# perf decodes are the same as those of a capture that reports every
# call (--truth), where mt-capture does that, and so is mt-convert's
# tree, on deep calls whose returns cross PSBs, system calls and a
# signal, and on gzip.
printf '#include <signal.h>\n#include <unistd.h>\nstatic volatile unsigned sink;\nstatic void on_usr1(int s) { sink += s; }\n__attribute__((noinline)) static unsigned leaf(unsigned i) { return i * 3 + 1; }\n__attribute__((noinline)) static unsigned f(unsigned n)\n{\n\tunsigned s = 0;\n\tif (!n)\n\t\treturn 0;\n\tfor (unsigned i = 0; i < 40 * n; i++)\n\t\ts += leaf(i) & 1 ? 1 : 2;\n\tif (n %% 7 == 0)\n\t\ts += (unsigned)getppid() & 1;\n\tif (n == 33)\n\t\traise(SIGUSR1);\n\treturn s + f(n - 1);\n}\nint main(void)\n{\n\tsignal(SIGUSR1, on_usr1);\n\tfor (unsigned k = 0; k < 8; k++)\n\t\tsink += f(60);\n\treturn 0;\n}\n' >"$W/deep.c"
cc -O1 -g -o "$W/deep" "$W/deep.c"
same_branches() { # name program args...: "N branches" or why not
	local name=$1 m=() n=() e
	shift
	for how in calls tool; do
		e=()
		[ $how = calls ] && e=(--truth "$W/$name.$how.tsv")
		"$B/mt-capture" --emulate=valgrind --start-at '' --snapshot-size 256M \
			"${e[@]}" -o "$W/$name.$how.bin" -- "$@" >/dev/null 2>"$W/$name.$how.err" ||
			{ echo "mt-capture failed: $(tail -1 "$W/$name.$how.err")"; return 1; }
		perf script -i "$W/$name.$how.bin" --itrace=be -F flags,ip,addr >"$W/$name.$how.br" 2>&1
		grep -q 'trace error' "$W/$name.$how.br" &&
			{ echo "perf: $(grep -m1 'trace error' "$W/$name.$how.br")"; return 1; }
		"$B/mt-convert" "$W/$name.$how.bin" -o "$W/$name.$how.pftrace" -q \
			--text "$W/$name.$how.txt" 2>>"$W/$name.$how.err" ||
			{ echo "mt-convert failed: $(tail -1 "$W/$name.$how.err")"; return 1; }
		m+=("$(md5sum <"$W/$name.$how.br") $(cut -f2,3,6 "$W/$name.$how.txt" | md5sum)")
		n+=("$(wc -l <"$W/$name.$how.br") branches, $(($(wc -l <"$W/$name.$how.txt") - 1)) slices")
	done
	[ "${m[0]}" = "${m[1]}" ] && [ "${n[0]%% *}" -gt 1000 ] ||
		{ echo "they differ: ${n[0]} with every call, ${n[1]} without"; return 1; }
	echo "${n[0]}"
}
for p in deep gzip; do
	if [ $p = deep ]; then out=$(same_branches deep "$W/deep"); else out=$(same_branches gzip gzip -c "$R/README.md"); fi
	if [ $? = 0 ]; then
		echo "PASS vg_tool_keeps_calls_$p ($out, the same)"
	else
		echo "FAIL vg_tool_keeps_calls_$p: $out"
	fi
done
# --multi-snapshot without --truth: each hit's next part begins at a
# PSB the tool places (after each thread's next record, where it stops
# compressing), so a return to a call made between the hit and that
# record is not compressed against a stack the decoder emptied.
printf '#include <stdio.h>\nstatic volatile unsigned sink;\n__attribute__((noinline)) void mt_snapshot_point(void) { sink++; }\n__attribute__((noinline)) static void leaf(void) { sink += 2; }\nstatic void (*volatile fp)(void) = leaf;\n__attribute__((noinline)) static void h(unsigned i)\n{\n\tif (i %% 100 == 0)\n\t\tmt_snapshot_point();\n\tfp();\n}\nint main(void)\n{\n\tfor (unsigned i = 0; i < 20000; i++)\n\t\th(i);\n\treturn 0;\n}\n' >"$W/multi.c"
cc -O1 -g -o "$W/multi" "$W/multi.c"
errs=capture leafs=
if "$B/mt-capture" --emulate=valgrind --multi-snapshot -o "$W/multi.bin" -- "$W/multi" \
	>/dev/null 2>"$W/multi.err"; then
	errs=$(perf script -i "$W/multi.bin" --itrace=be 2>&1 | grep -c 'trace error')
	leafs=$(perf script -i "$W/multi.bin" --itrace=c -F ip,sym,addr 2>/dev/null | awk '$NF == "leaf"' | wc -l)
fi
if [ "$errs" = 0 ] && [ "${leafs:-0}" -gt 10000 ]; then
	echo "PASS vg_multi_snapshot_no_calls ($leafs calls of leaf, no decode error)"
else
	echo "FAIL vg_multi_snapshot_no_calls: ${errs:-?} perf errors, ${leafs:-?} calls of leaf"
	sed 's/^/    /' "$W/multi.err" | tail -2
fi
# The smallest snapshot holds PSBs to decode from, two at least, whatever
# the run's length (the tool places them every --snapshot-size / 32
# records, at most 20 bytes of packets each).
cat >"$W/branchy.c" <<'EOF2'
#include <stdlib.h>
static volatile unsigned sink;
int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000, x = 1;

	for (unsigned i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if (x >> 16 & 1)
			sink++;
	}
	return 0;
}
EOF2
cc -O1 -g -o "$W/branchy" "$W/branchy.c"
bad=
for n in 100000 100700 101400 102100 102800 103500; do
	"$B/mt-capture" --emulate=valgrind --snapshot-size 4K -o "$W/small.bin" -- "$W/branchy" $n \
		>/dev/null 2>"$W/small.err" || { bad="$bad $n:capture"; continue; }
	got=$(perf script -i "$W/small.bin" --itrace=b -F ip 2>/dev/null | wc -l)
	psbs=$(perf script -i "$W/small.bin" -D 2>/dev/null | grep -c ' PSB$')
	[ "$got" -gt 100 ] && [ "$psbs" -ge 2 ] || bad="$bad $n:$got/$psbs"
done
if [ -z "$bad" ]; then
	echo "PASS vg_snapshot_4k_psbs (6 run lengths, each decodes from 2 PSBs or more)"
else
	echo "FAIL vg_snapshot_4k_psbs: branches/PSBs by run length:$bad"
fi
# Stopped by Ctrl-C long after its ring wrapped, in its calls or in a
# system call: the callers whose calls the ring lost still name the
# tree's roots (main > mid > spin), from the stacks the tool sends when
# asked, or as each thread entered its system call.
printf '#include <stdio.h>\n#include <unistd.h>\nstatic volatile unsigned sink;\n__attribute__((noinline)) static void f(unsigned i) { sink += i; }\n__attribute__((noinline)) static void spin(int wait)\n{\n\tfor (unsigned i = 0; i < 3000000 || !wait; i++)\n\t\tf(i);\n\tputs("up");\n\tfflush(stdout);\n\tpause();\n}\n__attribute__((noinline)) static void mid(int wait) { spin(wait); sink++; }\nint main(int argc, char **argv)\n{\n\t(void)argv;\n\tif (argc == 1) {\n\t\tputs("up");\n\t\tfflush(stdout);\n\t}\n\tmid(argc > 1);\n\treturn (int)sink;\n}\n' >"$W/spin.c"
cc -O1 -g -o "$W/spin" "$W/spin.c"
for how in running blocked; do
	a=(); [ $how = blocked ] && a=(wait)
	"$B/mt-capture" --emulate=valgrind --snapshot-size 256K -o "$W/stop_$how.bin" -- "$W/spin" "${a[@]}" \
		>"$W/stop_$how.out" 2>"$W/stop_$how.err" & C=$!
	for _ in $(seq 600); do grep -qs up "$W/stop_$how.out" && break; sleep 0.1; done
	sleep 1
	kill -INT "$C"
	wait "$C"
	# The program runs on, untraced, under Valgrind (whose command line
	# names it).
	pkill -KILL -f -- "$W/spin" 2>/dev/null
	roots=$("$B/mt-convert" "$W/stop_$how.bin" -o "$W/stop_$how.pftrace" -q --text - 2>/dev/null |
		awk -F'\t' 'NR > 1 && $3 ~ /^(main|mid|spin)$/ && !s[$3]++ {printf "%s%s:%s", n++ ? " " : "", $3, $2}')
	if [ "$(echo "$roots" | tr ' ' '\n' | sed 's/:.*//' | sort | tr '\n' ' ')" = "main mid spin " ]; then
		echo "PASS vg_stacks_at_stop_$how ($roots)"
	else
		echo "FAIL vg_stacks_at_stop_$how: roots '$roots'"
		sed 's/^/    /' "$W/stop_$how.err" | tail -2
	fi
done

# Real programs, by the address of each call: perf's decode equals the
# tool's log and mt-convert's slices equal perf's (tools/realprogs.sh;
# make real-progs runs all of them).
REALPROGS_LIB=1 . "$R/tools/realprogs.sh"
if [ -s "$W/rl.sqlite" ] && perf_calls "$W/rl.bin" >"$W/rl.pentries" &&
	convert_calls "$W/rl.sqlite" >"$W/rl.ccalls" &&
	out=$(same_calls "$W/rl.ccalls" 2 "$W/rl.pentries"); then
	echo "PASS vg_reload_calls ($(wc -l <"$W/rl.ccalls") calls as perf's)"
else
	echo "FAIL vg_reload_calls: ${out:-no conversion}"
fi
for p in true seq md5sum grep bc sqlite3 sh ldso go; do
	if [ "$p" = go ] && ! command -v go >/dev/null; then
		echo "SKIP vg_agree_go (no go compiler: apt-get install golang-go)"
		continue
	fi
	if out=$("prog_$p" "$W" </dev/null); then
		echo "PASS vg_agree_$p ($out)"
	else
		echo "FAIL vg_agree_$p: ${out//$'\n'/; }"
	fi
done

# A snapshot of Debian's python3 decoding JSON: its stripped scanner
# recurses through a cold part, and the interpreter's deallocations
# through tail calls to unnamed functions.  Taken for jumps into an older
# activation, they cut the stack at every element: 10154 frames revealed
# above the window's first, 10160 levels deep.  The program's stack is
# some 25 levels deep.
if [ -x /usr/bin/python3 ] &&
	"$B/mt-capture" --emulate -o "$W/pyjson.bin" -- /usr/bin/python3 -S -c \
		'import json; d = [{"a": i, "b": [i, str(i)]} for i in range(5000)]; print(len(json.loads(json.dumps(d))))' \
		>/dev/null 2>"$W/pyjson.err" &&
	"$B/mt-convert" -q --no-inline "$W/pyjson.bin" -o "$W/pyjson.pftrace" 2>>"$W/pyjson.err"; then
	got=$(sqlite3 "$W/pyjson.sqlite" "SELECT max(depth), sum(inferred_start) FROM slice")
	if [ "${got%|*}" -lt 100 ] && [ "${got#*|}" -lt 100 ]; then
		echo "PASS vg_python_json_tree (depth, revealed: $got)"
	else
		echo "FAIL vg_python_json_tree: depth, revealed: $got"
	fi
elif [ -x /usr/bin/python3 ]; then
	echo "FAIL vg_python_json_tree: $(tail -1 "$W/pyjson.err")"
else
	echo "SKIP vg_python_json_tree (no /usr/bin/python3)"
fi
# The whole of `import json`, from main: the import machinery recurses
# through its cold part, into which a newer activation jumps while an
# older one runs it.  perf's calls and returns nest exactly (one return
# climbs above main: Py_BytesMain's, at the end); taken for jumps into
# the older activation, they climbed 432 times.
if [ -x /usr/bin/python3 ] &&
	"$B/mt-capture" --emulate --snapshot-size 256M -o "$W/pyimp.bin" -- \
		/usr/bin/python3 -S -c 'import json' >/dev/null 2>"$W/pyimp.err" &&
	"$B/mt-convert" -q --no-inline "$W/pyimp.bin" -o "$W/pyimp.pftrace" 2>>"$W/pyimp.err"; then
	got=$(sqlite3 "$W/pyimp.sqlite" "SELECT sum(inferred_start) FROM slice")
	if [ "$got" -le 3 ]; then
		echo "PASS vg_python_import_tree ($got callers revealed)"
	else
		echo "FAIL vg_python_import_tree: $got callers revealed"
	fi
elif [ -x /usr/bin/python3 ]; then
	echo "FAIL vg_python_import_tree: $(tail -1 "$W/pyimp.err")"
fi

# The backend --emulate picks says which it is, in one line: Valgrind to
# run a program, ptrace to attach (Valgrind cannot); -q says nothing.
"$B/mt-capture" --emulate -o "$W/def.bin" -- "$W/seq1" 2>"$W/def.err" >/dev/null
if grep -q '^mt-capture: emulating Intel PT under Valgrind (--emulate=valgrind): about 5-50x slower' "$W/def.err" &&
	[ "$(grep -c 'emulating Intel PT' "$W/def.err")" = 1 ] && [ -s "$W/def.bin" ]; then
	echo "PASS vg_default_backend"
else
	echo "FAIL vg_default_backend: $(head -2 "$W/def.err")"
fi
if "$B/mt-capture" --emulate -q -o "$W/quiet.bin" -- "$W/seq1" >/dev/null 2>"$W/quiet.err" &&
	[ ! -s "$W/quiet.err" ] && [ -s "$W/quiet.bin" ]; then
	echo "PASS vg_quiet"
else
	echo "FAIL vg_quiet: $(head -2 "$W/quiet.err")"
fi
sleep 30 &
sleeper=$!
timeout -s INT 3 "$B/mt-capture" --emulate -p "$sleeper" -o "$W/att.bin" >/dev/null 2>"$W/att.err"
kill "$sleeper"
wait "$sleeper" 2>/dev/null
if grep -q 'single-stepping (--emulate=ptrace, as Valgrind cannot attach to a running process)' "$W/att.err"; then
	echo "PASS vg_attach_picks_ptrace"
else
	echo "FAIL vg_attach_picks_ptrace: $(head -2 "$W/att.err")"
fi

# Bad use, one line each and no capture: what this backend does not do,
# a missing tool, a program that does not exist.
bad() { # name expected-text mt-capture-args...
	local name=$1 want=$2
	shift 2
	if ! "$@" >/dev/null 2>"$W/$name.err" && [ ! -e "$W/$name.bin" ] &&
		grep -q "$want" "$W/$name.err" && [ "$(grep -c . "$W/$name.err")" -le 3 ]; then
		echo "PASS vg_bad_$name"
	else
		echo "FAIL vg_bad_$name"
		sed 's/^/    /' "$W/$name.err" | tail -3
	fi
}
sleep 30 &
sleeper=$!
bad attach "needs --emulate=ptrace" "$B/mt-capture" --emulate=valgrind -p "$sleeper" -o "$W/attach.bin"
kill "$sleeper"
wait "$sleeper" 2>/dev/null
bad line "has no code.*nearest lines that do: [0-9]" "$B/mt-capture" \
	--emulate=valgrind --trigger stub.c:1 -o "$W/line.bin" -- "$W/stub"
bad follow_ptrace "needs --emulate=valgrind" "$B/mt-capture" --emulate=ptrace \
	--follow-children -o "$W/follow_ptrace.bin" -- "$W/stub"
bad addr "bad address in 'addr:zz'" "$B/mt-capture" --emulate=valgrind \
	--trigger addr:zz -o "$W/addr.bin" -- "$W/stub"
bad notool "the Valgrind tool is not built" env MT_VALGRIND_LIB="$W/none" \
	"$B/mt-capture" --emulate=valgrind -o "$W/notool.bin" -- "$W/stub"
bad noprog "could not run it" "$B/mt-capture" --emulate=valgrind --start-at '' \
	-o "$W/noprog.bin" -- "$W/nope"
# No main symbol, and a _start of its own that hands __libc_start_main
# nothing.
printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' >"$W/nomain.c"
cc -O1 -nostdlib -static -o "$W/nomain" "$W/nomain.c" && strip "$W/nomain"
bad nomain "no symbol 'main', and its entry point does not hand one" "$B/mt-capture" --emulate=valgrind -o "$W/nomain.bin" -- "$W/nomain"
