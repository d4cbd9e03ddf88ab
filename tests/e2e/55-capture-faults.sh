#!/bin/bash
# SPDX-License-Identifier: MIT
# mt-capture when things go wrong: an output that is the traced program,
# SIGTERM and SIGHUP, absurd snapshot sizes, a program that dies of a
# signal, an output that cannot be written, an option's value that is an
# option, -p on mt-capture itself or on its ancestors, SIGKILL to
# mt-capture -p, a fork reaching --start-at first, SIGTERM during the
# launch, threads that end during -p's attach.  Bad use is refused in one
# line with exit 2 before anything runs; a stopped capture is written and
# the target runs on.
R=${MT_ROOT:?}
B=${MT_BUILD:?}/bin
W=$(mktemp -d /tmp/mt-e2e-cfault.XXXXXX)
PIDS=
trap 'kill $PIDS 2>/dev/null; rm -rf "$W"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
# The segfaulting program's core would only cost time.
ulimit -c 0

for p in ticker segv signal forker; do
	cc -O1 -g -o "$W/$p" "$R/tests/programs/$p.c" ||
		{ echo "FAIL capture_faults: cc $p"; exit 0; }
done
cc -O1 -g -pthread -o "$W/churn" "$R/tests/programs/churn.c" ||
	{ echo "FAIL capture_faults: cc churn"; exit 0; }
mkdir -p "$W/run"
# The hardware backend on a machine without Intel PT: a software event
# stands in for intel_pt, described by a fake sysfs tree (as in
# 71-capture-hw.sh).
. "$R/tests/e2e/fake_pmu.sh"
make_fake_pmu "$W/pmu"

# refuse NAME PATTERN ARGS...: run from $W/run, mt-capture ARGS exits 2
# with one line matching PATTERN, writes nothing into $W/run and runs no
# program (ticker, given $W/ran, would create it).
refuse() {
	local name=$1 pat=$2; shift 2
	rm -rf "$W/run" "$W/ran"; mkdir -p "$W/run"
	(cd "$W/run" && timeout 30 "$B/mt-capture" "$@") >/dev/null 2>"$W/r.err"
	local rc=$?
	if [ $rc -ne 2 ]; then
		echo "FAIL capture_faults_$name: exit status $rc"; sed 's/^/    /' "$W/r.err" | head -3
	elif [ "$(wc -l <"$W/r.err")" -ne 1 ] || ! grep -q -- "$pat" "$W/r.err"; then
		echo "FAIL capture_faults_$name: message:"; sed 's/^/    /' "$W/r.err" | head -3
	elif [ -n "$(ls -A "$W/run")" ]; then
		echo "FAIL capture_faults_$name: left $(ls -A "$W/run")"
	elif [ -e "$W/ran" ]; then
		echo "FAIL capture_faults_$name: the program ran"
	else
		echo "PASS capture_faults_$name"
	fi
}

# 1. The output is the program: refused before it is overwritten, under
# any name (relative, through a link, found along PATH), with both
# backends, and for -p the running process's executable.
# fresh: a new copy of the program, should a run have overwritten it.
fresh() { rm -f "$W/prog"; cp "$W/ticker" "$W/prog"; }
ln -s "$W/prog" "$W/prog.link"
fresh
refuse output_is_program "-o $W/prog is the program to trace ($W/prog)" \
	--emulate=ptrace -o "$W/prog" -- "$W/prog" 0 "$W/ran"
fresh
refuse output_is_program_relative "-o ../prog is the program to trace (../prog)" \
	--emulate=ptrace -o ../prog -- ../prog 0 "$W/ran"
fresh
refuse output_is_program_link "-o $W/prog.link is the program to trace" \
	--emulate=ptrace -o "$W/prog.link" -- "$W/prog" 0 "$W/ran"
fresh
PATH="$W:$PATH" refuse output_is_program_path "-o ../prog is the program to trace (prog)" \
	--emulate=ptrace -o ../prog -- prog 0 "$W/ran"
fresh
MT_INTEL_PT_SYSFS=$W/pmu refuse output_is_program_hw "-o $W/prog is the program to trace" \
	--timing low -o "$W/prog" -- "$W/prog" 0 "$W/ran"
fresh
"$W/prog" 30 & T=$!; PIDS="$PIDS $T"
refuse output_is_attached_exe "-o ../prog is the executable of process $T ($W/prog)" \
	--emulate -p "$T" -o ../prog
state=$(awk '/^State:/ {print $2}' "/proc/$T/status" 2>/dev/null)
kill "$T"; wait "$T" 2>/dev/null
# Alive and not held by a tracer: sleeping, or running work() (R) when
# the machine is busy; never T or t (stopped), Z or gone.
alive() { case $1 in S | R | D) return 0 ;; *) return 1 ;; esac; }
if cmp -s "$W/ticker" "$W/prog" && alive "$state"; then
	echo "PASS capture_faults_program_untouched"
else
	echo "FAIL capture_faults_program_untouched: target state '$state'"
fi

# 2. SIGTERM and SIGHUP do what Ctrl-C does: tracing stops, the target
# is let go and runs to its normal end, the capture is written and
# converts.
# converts CAPTURE: mt-convert reads it and finds ticker's work() in it.
converts() {
	"$B/mt-convert" "$1" -o "$1.pftrace" --text "$1.tsv" -q 2>"$1.cerr" &&
		grep -q 'work' "$1.tsv"
}
for sig in TERM HUP; do
	rm -f "$W/done"
	"$W/ticker" 4 "$W/done" & T=$!
	sleep 0.3
	"$B/mt-capture" --emulate -p "$T" -o "$W/att.bin" >/dev/null 2>"$W/att.err" & C=$!
	sleep 1.5
	kill -$sig "$C"; wait "$C"; rc=$?
	state=$(awk '/^State:/ {print $2}' "/proc/$T/status" 2>/dev/null)
	wait "$T"; trc=$?
	if [ $rc = 0 ] && alive "$state" && [ $trc = 0 ] && [ -s "$W/done" ] &&
		converts "$W/att.bin"; then
		echo "PASS capture_faults_sig${sig,,}_attach"
	else
		echo "FAIL capture_faults_sig${sig,,}_attach: rc $rc, target state '$state', target exit $trc"
		sed 's/^/    /' "$W/att.err" "$W/att.bin.cerr" 2>/dev/null | tail -3
	fi
	rm -f "$W/att.bin"
done
for sig in TERM HUP; do
	rm -f "$W/done"
	"$B/mt-capture" --emulate=ptrace -o "$W/run.bin" -- "$W/ticker" 3 "$W/done" \
		>/dev/null 2>"$W/run.err" & C=$!
	sleep 1.5
	kill -$sig "$C"; wait "$C"; rc=$?
	# The program, let go, ends on its own a moment later.
	for _ in $(seq 100); do [ -s "$W/done" ] && break; sleep 0.1; done
	if [ $rc = 0 ] && [ -s "$W/done" ] && converts "$W/run.bin"; then
		echo "PASS capture_faults_sig${sig,,}_run"
	else
		echo "FAIL capture_faults_sig${sig,,}_run: rc $rc, done '$(cat "$W/done" 2>/dev/null)'"
		sed 's/^/    /' "$W/run.err" "$W/run.bin.cerr" 2>/dev/null | tail -3
	fi
	rm -f "$W/run.bin"
done
# The hardware backend's loop: SIGTERM writes the capture too.
rm -f "$W/done"
"$W/ticker" 4 "$W/done" & T=$!
sleep 0.2
MT_INTEL_PT_SYSFS="$W/pmu" MT_TEST_SIDEBAND_ONLY=1 "$B/mt-capture" --timing low \
	-o "$W/hw.bin" -p "$T" >/dev/null 2>"$W/hw.err" & C=$!
for _ in $(seq 100); do
	ls -l "/proc/$C/fd" 2>/dev/null | grep -q perf_event && break
	sleep 0.05
done
sleep 0.2
kill -TERM "$C"; wait "$C"; rc=$?
wait "$T"; trc=$?
if [ $rc = 0 ] && [ $trc = 0 ] && "$B/mt-convert" --info "$W/hw.bin" 2>/dev/null | grep -q "tid $T *ticker"; then
	echo "PASS capture_faults_sigterm_hw"
else
	echo "FAIL capture_faults_sigterm_hw: rc $rc, target exit $trc"; sed 's/^/    /' "$W/hw.err" | tail -3
fi

# 3. --snapshot-size: below the minimum (which the message names), too
# large to hold, or overflowing the K/M/G shift.
refuse snapshot_size_tiny "at least 4K" \
	--emulate=ptrace --snapshot-size 1 -- "$W/ticker" 0 "$W/ran"
refuse snapshot_size_zero "at least 4K" \
	--emulate=ptrace --snapshot-size 0K -- "$W/ticker" 0 "$W/ran"
refuse snapshot_size_erange "at most 4G.*'99999999999999999999'" \
	--emulate=ptrace --snapshot-size 99999999999999999999 -- "$W/ticker" 0 "$W/ran"
# 2^44 + 1 mebibytes: the shift wraps around to 1M.
refuse snapshot_size_shift "at most 4G.*'17592186044417M'" \
	--emulate=ptrace --snapshot-size 17592186044417M -- "$W/ticker" 0 "$W/ran"
refuse snapshot_size_huge "at most 4G" \
	--emulate=ptrace --snapshot-size 5G -- "$W/ticker" 0 "$W/ran"
refuse snapshot_size_negative "wants a size" \
	--emulate=ptrace --snapshot-size ' -4K' -- "$W/ticker" 0 "$W/ran"

# 4. A program that dies of a signal: said in one line, by the signal's
# name, and its trace up to there is written.  A signal the program
# handles is no death.
"$B/mt-capture" --emulate=ptrace -o "$W/segv.bin" -- "$W/segv" >/dev/null 2>"$W/segv.err"
rc=$?
if grep -qx "mt-capture: $W/segv killed by SIGSEGV" "$W/segv.err" &&
	"$B/mt-convert" "$W/segv.bin" -o "$W/segv.pftrace" --text "$W/segv.tsv" -q &&
	grep -q 'crash' "$W/segv.tsv" &&
	"$B/mt-capture" --emulate=ptrace -o "$W/sig.bin" -- "$W/signal" >/dev/null 2>"$W/sig.err" &&
	! grep -q 'killed' "$W/sig.err"; then
	echo "PASS capture_faults_killed_by_signal (exit $rc)"
else
	echo "FAIL capture_faults_killed_by_signal: exit $rc"
	sed 's/^/    /' "$W/segv.err" "$W/sig.err" | tail -3
fi

# 5. Outputs that cannot be written are found before the program runs
# (root ignores permission bits: a missing directory, a path under a
# regular file, a directory as the output).
: >"$W/afile"
refuse output_missing_dir "-o $W/nodir/raw.bin: cannot write there" \
	--emulate=ptrace -o "$W/nodir/raw.bin" -- "$W/ticker" 0 "$W/ran"
refuse output_under_file "-o $W/afile/raw.bin: cannot write there" \
	--emulate=ptrace -o "$W/afile/raw.bin" -- "$W/ticker" 0 "$W/ran"
refuse output_directory "-o $W/pmu: is a directory" \
	--emulate=ptrace -o "$W/pmu" -- "$W/ticker" 0 "$W/ran"
refuse truth_unwritable "--truth $W/nodir/t.tsv: cannot write there" \
	--emulate=ptrace -o raw.bin --truth "$W/nodir/t.tsv" -- "$W/ticker" 0 "$W/ran"
MT_INTEL_PT_SYSFS=$W/pmu refuse output_missing_dir_hw "-o $W/nodir/raw.bin: cannot write there" \
	--timing low -o "$W/nodir/raw.bin" -- "$W/ticker" 0 "$W/ran"

# A special file is never replaced (the capture is written with seeks):
# a link to /dev/null and a FIFO are refused before the program runs,
# and stay as they were.
ln -s /dev/null "$W/null.bin"
mkfifo "$W/fifo.bin"
refuse output_dev_null "-o $W/null.bin: is a character device" \
	--emulate=ptrace -o "$W/null.bin" -- "$W/ticker" 0 "$W/ran"
refuse output_fifo "-o $W/fifo.bin: is a FIFO" \
	--emulate=ptrace -o "$W/fifo.bin" -- "$W/ticker" 0 "$W/ran"
refuse truth_dev_null "--truth $W/null.bin: is a character device" \
	--emulate=ptrace -o raw.bin --truth "$W/null.bin" -- "$W/ticker" 0 "$W/ran"
if [ -c /dev/null ] && [ -L "$W/null.bin" ] && [ -p "$W/fifo.bin" ] &&
	[ -z "$(ls "$W" | grep '\.tmp\.')" ]; then
	echo "PASS capture_faults_special_untouched"
else
	echo "FAIL capture_faults_special_untouched: $(ls -l /dev/null "$W/null.bin" "$W/fifo.bin" 2>&1 | tr '\n' ' ')"
fi
rm -f "$W/null.bin" "$W/fifo.bin"

# A capture over the file size limit (ulimit -f), SIGXFSZ at its
# default: said in one line naming it, the earlier capture kept, no
# temporary file left.
mkdir -p "$W/lim"
echo earlier >"$W/lim/cap.bin"
(ulimit -f 4; "$B/mt-capture" --emulate=ptrace -o "$W/lim/cap.bin" -- "$W/ticker" 0) \
	>/dev/null 2>"$W/lim.err"
rc=$?
if [ $rc -ne 1 ]; then
	echo "FAIL capture_faults_file_limit: exit status $rc"; sed 's/^/    /' "$W/lim.err" | tail -3
elif [ "$(grep -c -v 'emulating Intel PT' "$W/lim.err")" -ne 1 ] ||
	! grep -q "cap\.bin.*file size limit" "$W/lim.err"; then
	echo "FAIL capture_faults_file_limit: message:"; sed 's/^/    /' "$W/lim.err" | tail -3
elif [ "$(ls "$W/lim")" != cap.bin ] || [ "$(cat "$W/lim/cap.bin")" != earlier ]; then
	echo "FAIL capture_faults_file_limit: left $(ls "$W/lim" | tr '\n' ' ')"
else
	echo "PASS capture_faults_file_limit"
fi

# 6. An option's value that is an option: "-o --" would write a file
# named "--" and take the program for an option.
refuse output_dashdash "-o wants a file name, not '--'" \
	--emulate=ptrace -o -- "$W/ticker" 0 "$W/ran"
refuse output_dash "-o wants a file name, not '-x'" \
	--emulate=ptrace -o -x -- "$W/ticker" 0 "$W/ran"
refuse drop_every_garbage "--drop-every wants a number of branches, not 'often'" \
	--emulate=ptrace --drop-every often -- "$W/ticker" 0 "$W/ran"
refuse trigger_dash "--trigger wants a value, not '--'" \
	--emulate=ptrace --trigger -- "$W/ticker" 0 "$W/ran"

# 7. -p on mt-capture itself, on its parent shell, on its grandparent:
# refused at once instead of a wait for Ctrl-C.
self() { # name pattern shell-command (mt-capture is $MTC in it)
	local name=$1 pat=$2
	rm -rf "$W/run"; mkdir -p "$W/run"
	(cd "$W/run" && MTC="$B/mt-capture" timeout -s KILL 15 bash -c "$3") \
		>/dev/null 2>"$W/s.err"
	local rc=$?
	if [ $rc = 2 ] && [ "$(wc -l <"$W/s.err")" = 1 ] && grep -q -- "$pat" "$W/s.err" &&
		[ -z "$(ls -A "$W/run")" ]; then
		echo "PASS capture_faults_$name"
	else
		echo "FAIL capture_faults_$name: exit status $rc"; sed 's/^/    /' "$W/s.err" | head -3
	fi
}
self attach_self "is mt-capture itself" 'exec "$MTC" --emulate -p $$'
self attach_parent "-p [0-9]* is an ancestor of mt-capture" '"$MTC" --emulate -p $$; exit $?'
self attach_grandparent "-p [0-9]* is an ancestor of mt-capture" \
	'sh -c "\"\$MTC\" --emulate -p $$; exit \$?"; exit $?'
self attach_parent_hw "-p [0-9]* is an ancestor of mt-capture" \
	'MT_INTEL_PT_SYSFS='"$W"'/pmu MT_TEST_SIDEBAND_ONLY=1 "$MTC" --timing low -p $$; exit $?'

# caught PID: wait (bounded) until mt-capture PID catches SIGTERM, which
# it does once its options are read: the moments after are the launch's.
caught() {
	local m end=$((SECONDS + 60))
	while [ $SECONDS -lt $end ]; do
		# Until the exec, $! is a copy of this shell, which catches
		# SIGTERM too: only mt-capture's own handler counts.  The name
		# and the handlers come from one read of status: read apart,
		# the shell's handlers could pass for mt-capture's.
		m=$(awk '/^Name:/ {n = $2} /^SigCgt:/ {c = $2}
			END {if (n == "mt-capture") print c}' "/proc/$1/status" 2>/dev/null)
		[ -n "$m" ] && (( 0x$m & 0x4000 )) && return 0
		sleep 0.002
	done
	return 1
}

# 8. SIGKILL to mt-capture -p (kill -9, timeout -s KILL, the OOM killer)
# at any moment: before the attach, during it, mid-trace.  The process
# attached to runs on to its normal end; single-stepped threads whose
# tracer died would die of SIGTRAP.  Each moment is a separate try, on
# one thread (ticker) and on threads that come and go (churn).
bad=
for try in ticker:0 ticker:0.002 ticker:0.01 ticker:0.05 ticker:0.15 ticker:0.3 \
	churn:0.01 churn:0.2 timeout:0.2; do
	prog=${try%:*} d=${try#*:}
	rm -f "$W/done"
	"$W/${prog/timeout/ticker}" 0.8 "$W/done" & T=$!
	if [ "$prog" = timeout ]; then
		# (a subshell: the shell's "Killed" for timeout goes nowhere)
		(timeout -s KILL "$d" "$B/mt-capture" --emulate -p "$T" \
			-o "$W/k.bin" >/dev/null 2>&1; :) 2>/dev/null
	else
		"$B/mt-capture" --emulate -p "$T" -o "$W/k.bin" >/dev/null 2>&1 & C=$!
		caught "$C"
		sleep "$d"
		kill -KILL "$C"
		wait "$C" 2>/dev/null
	fi
	wait "$T" 2>/dev/null; trc=$?
	[ $trc = 0 ] && [ -s "$W/done" ] || bad="$bad $try(target exit $trc)"
done
if [ -z "$bad" ]; then
	echo "PASS capture_faults_sigkill_attach"
else
	echo "FAIL capture_faults_sigkill_attach: the target died:$bad"
fi

# 9. --start-at reached first by a fork()ed child: the child, which
# fork gave a copy of the start's breakpoint, runs on untraced; the
# parent's arrival starts the trace.
"$B/mt-capture" --emulate=ptrace --start-at late -o "$W/fork.bin" -- "$W/forker" \
	>"$W/fork.out" 2>"$W/fork.err"
rc=$?
if [ $rc = 0 ] && grep -qx "child ok" "$W/fork.out" &&
	"$B/mt-convert" "$W/fork.bin" -o "$W/fork.pftrace" --text "$W/fork.tsv" -q &&
	grep -q 'late' "$W/fork.tsv"; then
	echo "PASS capture_faults_start_in_forked_child"
else
	echo "FAIL capture_faults_start_in_forked_child: exit $rc, $(cat "$W/fork.out")"
	sed 's/^/    /' "$W/fork.err" | tail -2
fi

# 10. SIGTERM during the launch.  Before the program starts (here a
# SIGTERM waiting, blocked, since before mt-capture ran): one line, no
# program, no file.  While the program runs to --start-at (finish, at its
# end): one line, nothing traced, and the program runs on to its end.
# At any moment: a capture written and exit 0, or that line and exit 1;
# never a program left stopped or killed.
cat >"$W/pending.c" <<'EOC'
#include <signal.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	sigset_t s;

	(void)argc;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigprocmask(SIG_BLOCK, &s, NULL);
	kill(getpid(), SIGTERM);
	execv(argv[1], argv + 1);
	return 127;
}
EOC
cc -o "$W/pending" "$W/pending.c" || { echo "FAIL capture_faults: cc pending"; exit 0; }
rm -rf "$W/run" "$W/ran"; mkdir -p "$W/run"
(cd "$W/run" && timeout 30 "$W/pending" "$B/mt-capture" --emulate=ptrace -o t.bin -- \
	"$W/ticker" 0 "$W/ran") >/dev/null 2>"$W/t.err"
rc=$?
if [ $rc = 1 ] && grep -q "stopped before $W/ticker was started: nothing traced" "$W/t.err" &&
	[ "$(grep -vc emulating "$W/t.err")" = 1 ] && [ -z "$(ls -A "$W/run")" ] &&
	[ ! -e "$W/ran" ]; then
	echo "PASS capture_faults_sigterm_before_start"
else
	echo "FAIL capture_faults_sigterm_before_start: exit $rc, left '$(ls -A "$W/run")'"
	sed 's/^/    /' "$W/t.err" | tail -2
fi
rm -f "$W/done"
"$B/mt-capture" --emulate=ptrace --start-at finish -o "$W/late.bin" -- "$W/ticker" 1.5 "$W/done" \
	>/dev/null 2>"$W/late.err" & C=$!
caught "$C"
sleep 0.3
kill -TERM "$C"; wait "$C"; rc=$?
for _ in $(seq 150); do [ -s "$W/done" ] && break; sleep 0.02; done
if [ $rc = 1 ] && grep -q "stopped before .*ticker reached finish: nothing traced" "$W/late.err" &&
	[ ! -e "$W/late.bin" ] && [ -s "$W/done" ]; then
	echo "PASS capture_faults_sigterm_before_start_at"
else
	echo "FAIL capture_faults_sigterm_before_start_at: exit $rc, done '$(cat "$W/done" 2>/dev/null)'"
	sed 's/^/    /' "$W/late.err" | tail -2
fi
bad=
for d in 0 0 0.001 0.002 0.004 0.008 0.015 0.03; do
	rm -f "$W/done" "$W/l.bin"
	"$B/mt-capture" --emulate=ptrace -o "$W/l.bin" -- "$W/ticker" 0.1 "$W/done" \
		>/dev/null 2>"$W/l.err" & C=$!
	caught "$C" || bad="$bad $d(SIGTERM never caught)"
	sleep "$d"
	kill -TERM "$C"; wait "$C"; rc=$?
	if [ $rc = 0 ]; then
		for _ in $(seq 150); do [ -s "$W/done" ] && break; sleep 0.02; done
		[ -s "$W/l.bin" ] && [ -s "$W/done" ] || bad="$bad $d(exit 0, no capture or program)"
	elif [ $rc = 1 ] && grep -q "was started: nothing traced" "$W/l.err"; then
		[ ! -e "$W/l.bin" ] || bad="$bad $d(a capture)"
	elif [ $rc = 1 ] && grep -q "reached main: nothing traced" "$W/l.err"; then
		for _ in $(seq 150); do [ -s "$W/done" ] && break; sleep 0.02; done
		[ ! -e "$W/l.bin" ] && [ -s "$W/done" ] || bad="$bad $d(no program)"
	else
		bad="$bad $d(exit $rc: $(tail -1 "$W/l.err"))"
	fi
done
if [ -z "$bad" ]; then
	echo "PASS capture_faults_sigterm_launch"
else
	echo "FAIL capture_faults_sigterm_launch:$bad"
fi

# 11. -p on a process whose threads come and go: a thread that ends
# before it is attached is not traced, one created meanwhile is; each
# attach succeeds, and the process runs on through several.  SIGTERM
# during the attach lets every thread go too (one stopped by the attach
# can hold a step's SIGTRAP behind that stop), or comes before it.
rm -f "$W/done"
"$W/churn" 30 "$W/done" & T=$!
bad=
for d in 0.2 0 0.2 0.001 0.2 0.01 0.2 0; do
	"$B/mt-capture" --emulate -p "$T" -o "$W/ch.bin" >/dev/null 2>"$W/ch.err" & C=$!
	caught "$C"
	sleep "$d"
	kill -TERM "$C"; wait "$C"; rc=$?
	if [ $rc = 1 ] && grep -q "stopped before attaching" "$W/ch.err"; then
		:
	elif [ $rc != 0 ] || [ ! -s "$W/ch.bin" ]; then
		bad="$bad $d(exit $rc: $(tail -1 "$W/ch.err"))"
	fi
	kill -0 "$T" 2>/dev/null || { bad="$bad $d(target died)"; break; }
	rm -f "$W/ch.bin"
done
state=$(awk '/^State:/ {print $2}' "/proc/$T/status" 2>/dev/null)
kill "$T"; wait "$T" 2>/dev/null
if [ -z "$bad" ] && alive "$state"; then
	echo "PASS capture_faults_attach_threads_come_and_go"
else
	echo "FAIL capture_faults_attach_threads_come_and_go: target '$state';$bad"
fi

# 12. SIGTERM while the program sits in a system call that never returns
# by itself (pause(); a Go runtime's idle threads in futex waits): the
# ptrace emulator stops it with a SIGSTOP of its own, which it takes
# back, lets it go and writes the capture; the program stays paused,
# neither stopped nor killed.
printf '#include <stdio.h>\n#include <unistd.h>\nint main(void) { puts("paused"); fflush(stdout); pause(); return 0; }\n' >"$W/pause.c"
cc -O1 -g -o "$W/pause" "$W/pause.c" || { echo "FAIL capture_faults_sigterm_in_pause: cc"; exit 0; }
"$B/mt-capture" --emulate=ptrace -o "$W/pause.bin" -- "$W/pause" >"$W/pause.out" 2>"$W/pause.err" & C=$!
for _ in $(seq 300); do grep -q paused "$W/pause.out" && break; sleep 0.1; done
T=$(pgrep -P "$C" -x pause); PIDS="$PIDS $T"
sleep 0.5
kill -TERM "$C"
for _ in $(seq 300); do kill -0 "$C" 2>/dev/null || break; sleep 0.1; done
hung=
kill -0 "$C" 2>/dev/null && { hung=1; kill -KILL "$C"; }
wait "$C"; rc=$?
state=$(awk '/^State:/ {print $2}' "/proc/$T/status" 2>/dev/null)
if [ -z "$hung" ] && [ $rc = 0 ] && [ -s "$W/pause.bin" ] && [ "$state" = S ]; then
	echo "PASS capture_faults_sigterm_in_pause"
else
	echo "FAIL capture_faults_sigterm_in_pause: ${hung:+hung, }exit $rc, target '$state'"
	sed 's/^/    /' "$W/pause.err" | tail -2
fi
kill -KILL "$T" 2>/dev/null

# 13. The Valgrind backend: the tool's process killed (SIGKILL) as it
# writes records into its ring without a pause (a program that calls
# for ever): mt-capture sees its stream end, neither hangs nor crashes,
# and writes the capture of what the tool published, which perf reads.
if command -v valgrind >/dev/null && [ -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	printf '#include <stdio.h>\nstatic volatile unsigned sink;\n__attribute__((noinline)) static void f(unsigned i) { sink += i; }\nint main(void)\n{\n\tputs("up");\n\tfflush(stdout);\n\tfor (unsigned i = 0;; i++)\n\t\tf(i);\n}\n' >"$W/caller.c"
	cc -O1 -g -o "$W/caller" "$W/caller.c" || { echo "FAIL capture_faults_vg_tool_killed: cc"; exit 0; }
	"$B/mt-capture" --emulate=valgrind -o "$W/killed.bin" -- "$W/caller" >"$W/killed.out" 2>"$W/killed.err" & C=$!
	for _ in $(seq 300); do grep -qs up "$W/killed.out" && break; sleep 0.1; done
	T=$(pgrep -P "$C"); PIDS="$PIDS $T"
	# Some chunks of the ring are published first.
	sleep 1
	kill -KILL $T
	for _ in $(seq 300); do kill -0 "$C" 2>/dev/null || break; sleep 0.1; done
	hung=
	kill -0 "$C" 2>/dev/null && { hung=1; kill -KILL "$C"; }
	wait "$C"; rc=$?
	calls=$(perf script -i "$W/killed.bin" --itrace=c -F ip,sym,addr 2>/dev/null |
		head -5000 | awk '$NF == "f"' | wc -l)
	if [ -z "$hung" ] && [ $rc -lt 128 ] && [ -n "$T" ] && [ "${calls:-0}" -gt 1000 ]; then
		echo "PASS capture_faults_vg_tool_killed (calls of f before the kill; exit $rc)"
	else
		echo "FAIL capture_faults_vg_tool_killed: ${hung:+hung, }exit $rc, ${calls:-no} calls of f in the first 5000, tool '$T'"
		sed 's/^/    /' "$W/killed.err" | tail -2
	fi
else
	echo "SKIP capture_faults_vg_tool_killed (valgrind or its tool not built)"
fi

# 14. The Valgrind backend, SIGTERM to mt-capture while the tool writes
# without a pause into a small ring (MT_TEST_VG_RING), so that it waits
# on the ring when mt-capture stops reading: the capture is written, and
# the program runs on, untraced, neither stopped nor waiting (its CPU
# time grows).
if command -v valgrind >/dev/null && [ -x "$B/../lib/valgrind/mtpt-amd64-linux" ]; then
	MT_TEST_VG_RING=131072 "$B/mt-capture" --emulate=valgrind -o "$W/term.bin" -- "$W/caller" \
		>"$W/term.out" 2>"$W/term.err" & C=$!
	for _ in $(seq 300); do grep -qs up "$W/term.out" && break; sleep 0.1; done
	T=$(pgrep -P "$C"); PIDS="$PIDS $T"
	sleep 1
	kill -TERM "$C"
	for _ in $(seq 300); do kill -0 "$C" 2>/dev/null || break; sleep 0.1; done
	hung=
	kill -0 "$C" 2>/dev/null && { hung=1; kill -KILL "$C"; }
	wait "$C"; rc=$?
	cpu() { awk '{print $14 + $15}' "/proc/$T/stat" 2>/dev/null; }
	a=$(cpu) grew=
	for _ in $(seq 100); do
		b=$(cpu)
		[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] && { grew=1; break; }
		sleep 0.1
	done
	if [ -z "$hung" ] && [ $rc = 0 ] && [ -s "$W/term.bin" ] && [ -n "$grew" ]; then
		echo "PASS capture_faults_vg_sigterm (the program runs on)"
	else
		echo "FAIL capture_faults_vg_sigterm: ${hung:+hung, }exit $rc, CPU time '$a' then '$b'"
		sed 's/^/    /' "$W/term.err" | tail -2
	fi
	kill -KILL $T 2>/dev/null
fi
