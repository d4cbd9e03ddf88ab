#!/bin/bash
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
cc -O1 -g -pthread -o "$W/threads" "$R/tests/programs/threads.c" && capture threads "$W/threads"
if command -v c++ >/dev/null; then
	c++ -O1 -g -o "$W/exception" "$R/tests/programs/exception.cc" && capture exception "$W/exception"
fi
cc -O1 -g -I"$R" -o "$W/demo" "$R/examples/demo.c" && capture demo "$W/demo"
cc -O1 -g -I"$R" -o "$W/stub" "$R/tests/programs/stub.c" && capture stub "$W/stub"
if [ -s "$W/stub.tsv" ] && hit=$(sqlite3 "$W/stub.sqlite" "SELECT name, arg FROM hit" 2>&1) &&
	[ "$hit" = "mt_snapshot_point|19" ] &&
	[ "$(awk -F'\t' '$3 == "step"' "$W/stub.tsv" | wc -l)" = 20 ]; then
	echo "PASS vg_stub_trigger (20 calls of step, hit arg 19)"
else
	echo "FAIL vg_stub_trigger: hit '$hit'"
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

# Real programs, by the address of each call: perf's decode equals the
# tool's log and mt-convert's slices equal perf's (tools/realprogs.sh;
# make real-progs runs all of them).
REALPROGS_LIB=1 . "$R/tools/realprogs.sh"
for p in true seq md5sum grep bc sqlite3 go; do
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

# The backend --emulate picks says which it is, in one line: Valgrind to
# run a program, ptrace to attach (Valgrind cannot); -q says nothing.
"$B/mt-capture" --emulate -o "$W/def.bin" -- "$W/seq1" 2>"$W/def.err" >/dev/null
if grep -q '^mt-capture: emulating Intel PT under Valgrind (--emulate=valgrind): about 10-25x slower' "$W/def.err" &&
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
bad line "takes a function as --trigger" "$B/mt-capture" --emulate=valgrind \
	--trigger stub.c:3 -o "$W/line.bin" -- "$W/stub"
bad notool "the Valgrind tool is not built" env MT_VALGRIND_LIB="$W/none" \
	"$B/mt-capture" --emulate=valgrind -o "$W/notool.bin" -- "$W/stub"
bad noprog "could not run it" "$B/mt-capture" --emulate=valgrind --start-at '' \
	-o "$W/noprog.bin" -- "$W/nope"
# No main symbol, and a _start of its own that hands __libc_start_main
# nothing.
printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' >"$W/nomain.c"
cc -O1 -nostdlib -static -o "$W/nomain" "$W/nomain.c" && strip "$W/nomain"
bad nomain "no symbol 'main', and its entry point does not hand one" "$B/mt-capture" --emulate=valgrind -o "$W/nomain.bin" -- "$W/nomain"
