#!/bin/bash
# SPDX-License-Identifier: MIT
# Real programs under the Valgrind backend: each is captured with
# mt-capture --emulate=valgrind --truth, and three lists of calls, per
# thread and in order, are compared by the address each call went to:
# the tool's own log (--truth's target column), perf's decode of the
# capture (perf script --itrace=cr) and mt-convert's slices (their
# addresses, in the order they were entered).  perf's must equal the
# log's and mt-convert's must equal perf's; at a thread's end up to two
# calls may be missing from one side (the direct call to _exit and what
# it calls leave no packet after the last one, and a decoder may run on
# through direct calls past it).  And the tree's shape: mt-convert (with
# --no-final-stack) reveals no more callers than perf's calls and returns
# leave unexplained, besides each thread's first function: a return it
# could not match to its call, or a jump it took for one into an older
# activation, would reveal a caller where there is none.
#
#   tools/realprogs.sh [NAME...]   (default: every program below)
#
# Prints a table (program, instructions, calls, agree) and, for each
# disagreement, where the lists part; exits 1 if any disagrees.  Sourced
# with REALPROGS_LIB=1, it only defines realprog() and the list.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# truth_calls FILE [PRINT [SKIP]]: the calls of a --truth file, rows
# entered by a call (not by a jump, not the kernel's delivering a signal,
# not found already running, not a program's entry after an exec), as
# awk prints PRINT of each (default
# "$1, $7": thread and target); SKIP: an awk regex of functions left out.
truth_calls() {
	awk -F'\t' -v skip="${3:-^$}" 'NR > 1 && $7 != "" && $7 != "0" &&
		(skip == "^$" || $3 !~ skip) {
		n = split($6, f, ","); ok = 1
		for (i = 1; i <= n; i++)
			if (f[i] == "tail" || f[i] == "signal" || f[i] == "syscall" ||
			    f[i] == "clipped_start" || f[i] == "exec")
				ok = 0
		if (ok)
			print '"${2:-\$1, \$7}"'
	}' "$1"
}

# The calls perf decodes: thread, target, the start of the function the
# target is in (the target less its offset in perf's symbol), which is
# what mt-convert's slices hold (Go calls into the middle of
# runtime.duffzero), and "c"; then, marked "a", where tracing resumed at
# a function's start, not the thread's first: a signal handler the
# kernel entered, a slice for mt-convert and no call for perf (returns
# from system calls, and sigreturn, resume inside a function).
perf_calls() {
	perf script -i "$1" --itrace=cr -F tid,flags,ip,addr,sym,symoff 2>/dev/null |
		awk 'function num(s,  i, n) {
			n = 0
			for (i = 1; i <= length(s); i++)
				n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return n
		}
		function hex(n,  s, d) {
			if (n == 0)
				return "0"
			for (s = ""; n > 0; n = (n - d) / 16) {
				d = n % 16
				s = substr("0123456789abcdef", d + 1, 1) s
			}
			return "0x" s
		}
		$2 == "tr" && $3 == "strt" && seen[$1]++ && / => +[0-9a-f]+ .*\+0x0$/ {
			split(substr($0, index($0, "=>") + 2), to, " ")
			print $1, "0x" to[1], "0x" to[1], "a"
		}
		$2 == "call" && (k = index($0, "=>")) {
			split(substr($0, k + 2), to, " ")
			start = "0x" to[1]
			if (match($0, /\+0x[0-9a-f]+$/) && substr($0, RSTART) != "+0x0")
				start = hex(num(to[1]) - num(substr($0, RSTART + 3)))
			print $1, "0x" to[1], start, "c"
		}'
}

# perf_unmatched BIN: the returns in perf's decode that no call below
# them explains, each thread's calls kept as a stack (a return goes back
# to the call whose next instruction it lands on, 1 to 15 bytes on):
# where a thread's tree must reveal a caller (those of the function
# tracing began in, a signal handler's return to the kernel's
# trampoline).
perf_unmatched() {
	perf script -i "$1" --itrace=cr -F tid,flags,ip,addr 2>/dev/null |
		awk 'function num(s,  i, n) {
			n = 0
			for (i = 1; i <= length(s); i++)
				n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return n
		}
		$2 == "call" { t = $1; sp[t]++; at[t, sp[t]] = num($3); next }
		$2 == "return" && (k = index($0, "=>")) {
			t = $1
			split(substr($0, k + 2), to, " ")
			x = num(to[1])
			for (i = sp[t]; i > 0; i--)
				if (x > at[t, i] && x <= at[t, i] + 15)
					break
			if (!i)
				n++
			sp[t] = i ? i - 1 : 0
		}
		END { print n + 0 }'
}

# convert_calls DB [SELECT [WHERE]]: mt-convert's calls, slices entered
# by a call, in the order they were entered (their ids): the thread and
# SELECT of each (default: the address it was entered at; g is its
# goroutine's row), WHERE: more of the condition ("AND ...").
convert_calls() {
	sqlite3 -separator ' ' "$1" "SELECT th.tid, ${2:-printf('%#x', s.address)}
		FROM slice s JOIN thread_track t ON s.track_id = t.id
		JOIN thread th USING (utid) LEFT JOIN goroutine g ON g.id = s.goroutine
		WHERE NOT (s.tail OR s.inferred_start OR s.syscall OR s.inlined
		OR s.untraced OR s.is_gap OR s.resumed) $3 ORDER BY th.tid, s.id"
}

# same_calls A COL B: do A's calls (its 2nd column) and B's (column COL)
# agree, thread by thread, up to two calls at a thread's end?  Says where
# they part when not.
same_calls() {
	awk -v slack=2 -v col="$2" 'FILENAME == ARGV[1] {a[$1, na[$1]++] = $2; tids[$1] = 1}
		FILENAME == ARGV[2] {b[$1, nb[$1]++] = $col; tids[$1] = 1}
		END {
			bad = 0
			for (t in tids) {
				n = na[t] < nb[t] ? na[t] : nb[t]
				for (i = 0; i < n; i++)
					if (a[t, i] != b[t, i])
						break
				if (i < n || na[t] - nb[t] > slack || nb[t] - na[t] > slack) {
					printf "thread %s: call %d of %d/%d: %s against %s\n", t, i,
						na[t], nb[t], i < na[t] ? a[t, i] : "(none)",
						i < nb[t] ? b[t, i] : "(none)"
					bad = 1
				}
			}
			exit bad
		}' "$1" "$3"
}

# realprog W NAME [mt-capture options...] -- PROG ARGS...: capture and
# compare; prints "NAME INSNS CALLS yes|no" and, on no, why.  Standard
# input is the program's.  REALPROG_EMULATE: the backend (valgrind);
# REALPROG_TIMEOUT: seconds the capture may take (none).
realprog() {
	local w=$1 name=$2 opts=() insns calls why= lim=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	[ -n "$REALPROG_TIMEOUT" ] && lim=(timeout -k 10 "$REALPROG_TIMEOUT")
	if ! "${lim[@]}" "$B/mt-capture" --emulate="${REALPROG_EMULATE:-valgrind}" \
		"${opts[@]}" --truth "$w/$name.truth" \
		-o "$w/$name.bin" -- "$@" >"$w/$name.out" 2>"$w/$name.err"; then
		echo "$name - - no"
		sed 's/^/    /' "$w/$name.err" | tail -3
		return 1
	fi
	insns=$(sed -n 's/.*: \([0-9]*\) instructions, .*/\1/p' "$w/$name.err")
	truth_calls "$w/$name.truth" >"$w/$name.tcalls"
	perf_calls "$w/$name.bin" >"$w/$name.pentries"
	grep ' c$' "$w/$name.pentries" >"$w/$name.pcalls"
	calls=$(wc -l <"$w/$name.tcalls")
	if ! "$B/mt-convert" -q "$w/$name.bin" -o "$w/$name.pftrace" 2>"$w/$name.cerr"; then
		why="mt-convert failed: $(tail -1 "$w/$name.cerr")"
	else
		convert_calls "$w/$name.sqlite" >"$w/$name.ccalls"
		if ! out=$(same_calls "$w/$name.tcalls" 2 "$w/$name.pcalls"); then
			why="truth against perf: $out"
		elif ! out=$(same_calls "$w/$name.ccalls" 3 "$w/$name.pentries"); then
			why="mt-convert against perf: $out"
		elif [ "$calls" -lt 1 ]; then
			why="no calls"
		elif ! "$B/mt-convert" -q --no-inline --no-final-stack "$w/$name.bin" \
			-o "$w/$name.nest.pftrace" 2>"$w/$name.cerr"; then
			why="mt-convert --no-final-stack failed: $(tail -1 "$w/$name.cerr")"
		else
			# Its callers revealed: those perf's calls and returns
			# leave unexplained, and each thread's first function.
			local rev un thr
			rev=$(sqlite3 "$w/$name.nest.sqlite" "SELECT sum(inferred_start) FROM slice")
			thr=$(sqlite3 "$w/$name.nest.sqlite" "SELECT count(*) FROM thread")
			un=$(perf_unmatched "$w/$name.bin")
			if [ -z "$rev" ] || [ -z "$thr" ] || [ -z "$un" ]; then
				why="the tree's shape could not be read (sqlite3 or perf failed)"
			elif [ "$rev" -gt $((un + thr)) ]; then
				why="mt-convert revealed $rev callers where perf's calls and returns leave $un unexplained ($thr threads)"
			fi
		fi
	fi
	if [ -z "$why" ]; then
		echo "$name ${insns:--} $calls yes"
		return 0
	fi
	echo "$name ${insns:--} $calls no"
	echo "    ${why//$'\n'/; }"
	return 1
}

# The programs: Debian's, and a Go program built with Debian's golang.
# prog_NAME W: runs realprog for NAME.
prog_true() { realprog "$1" true -- true; }
prog_echo() { realprog "$1" echo -- echo hello world; }
prog_seq() { realprog "$1" seq -- seq 1000; }
prog_sort() {
	seq 2000 | awk '{print ($1 * 7919) % 2003}' >"$1/sort.in"
	realprog "$1" sort -- sort -n "$1/sort.in"
}
# A shell that runs a program in a child it forks, and then becomes the
# last one (exec): three programs in two processes, each after an exec
# in an address space of its own, where the one before had other code
# (libc, mapped elsewhere).
prog_sh() {
	realprog "$1" sh --follow-children --start-at '' -- \
		bash -c '/bin/echo one >/dev/null; /bin/echo two'
}
# The dynamic loader run as the program, as ldd runs it: exec'd by a
# child of the shell and by the shell itself, its code where the shell
# had none; its first instruction must find its own mapping.
prog_ldso() {
	realprog "$1" ldso --follow-children --start-at '' -- \
		bash -c '/lib64/ld-linux-x86-64.so.2 /bin/true; /lib64/ld-linux-x86-64.so.2 /bin/true'
}
prog_md5sum() { realprog "$1" md5sum -- md5sum "$R/README.md"; }
prog_gzip() { realprog "$1" gzip -- gzip -c "$R/README.md"; }
prog_grep() { realprog "$1" grep -- grep -c -E 'cap(ture)?|trace' "$R/README.md"; }
prog_sqlite3() {
	realprog "$1" sqlite3 -- sqlite3 :memory: \
		'CREATE TABLE t(a, b); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) INSERT INTO t SELECT x, x * x FROM c; SELECT count(*), sum(b) FROM t WHERE a % 3 = 0;'
}
prog_bc() { echo '2^200 % 12345; scale=20; 4*a(1)' | realprog "$1" bc -- bc -l -q; }
prog_jq() { realprog "$1" jq -- jq -n -c '[range(50) | {k: ., v: (. * .)}] | map(.v) | add'; }
prog_python3() { realprog "$1" python3 -- /usr/bin/python3 -S -c 'print(sum(i * i for i in range(1000)))'; }
prog_go() {
	if ! command -v go >/dev/null; then
		echo "go - - no"
		echo "    no go compiler (apt-get install golang-go)"
		return 1
	fi
	if ! (cd "$1" && HOME="$1" GOCACHE="$1/gocache" GO111MODULE=off \
		go build -o "$1/workers" "$R/tests/programs/workers.go") >"$1/go.build" 2>&1; then
		echo "go - - no"
		sed 's/^/    /' "$1/go.build" | tail -3
		return 1
	fi
	# No main symbol, and no __libc_start_main to find it by: from exec.
	realprog "$1" go --start-at '' -- "$1/workers"
}
ALL_PROGS="true echo seq sort md5sum gzip grep sqlite3 bc jq python3 go sh ldso"

[ -n "$REALPROGS_LIB" ] && return 0

W=$(mktemp -d /tmp/mt-realprogs.XXXXXX)
trap 'rm -rf "$W"' EXIT
bad=0
echo "program instructions calls agree"
for p in ${@:-$ALL_PROGS}; do
	if ! declare -f "prog_$p" >/dev/null; then
		echo "$p: no such program (of: $ALL_PROGS)" >&2
		exit 2
	fi
	"prog_$p" "$W" </dev/null || bad=1
done
exit $bad
