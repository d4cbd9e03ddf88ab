#!/bin/bash
# SPDX-License-Identifier: MIT
# What must never happen to a user's files or time, whatever the input:
# a capture overwritten by its own conversion, a decode that never ends,
# outputs from two runs side by side, temporary files left by a signal,
# and a trace that loses its last call.
B=${MT_BUILD:?}/bin
R=${MT_ROOT:?}
W=$(mktemp -d /tmp/mt-e2e-faults.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$B/mt-synth" --seed 3 --branches 30000 --psb-period 0 -o "$W/s" >/dev/null ||
	{ echo "FAIL convert_faults: mt-synth failed"; exit 0; }
cp "$W/s/raw.bin" "$W/s/orig.bin"

# refuse NAME ARGS...: exit 2, one line, the capture untouched.
refuse() {
	local name=$1; shift
	(cd "$W/s" && timeout 60 "$B/mt-convert" "$@" >"$W/stdout" 2>"$W/stderr")
	local rc=$?
	if [ $rc -ne 2 ]; then
		echo "FAIL convert_same_file_$name: exit status $rc"
	elif [ "$(wc -l <"$W/stderr")" -ne 1 ]; then
		echo "FAIL convert_same_file_$name: message:"; sed 's/^/    /' "$W/stderr" | head -3
	elif ! cmp -s "$W/s/raw.bin" "$W/s/orig.bin"; then
		echo "FAIL convert_same_file_$name: the capture was changed"
	else
		echo "PASS convert_same_file_$name"
	fi
	cp "$W/s/orig.bin" "$W/s/raw.bin"
}
ln -s raw.bin "$W/s/link.bin"
ln "$W/s/raw.bin" "$W/s/hard.bin"
refuse output raw.bin -o raw.bin
refuse sqlite raw.bin -o t.pftrace --sqlite raw.bin
refuse text raw.bin -o t.pftrace --text ./raw.bin
refuse symlink raw.bin -o link.bin
refuse hardlink raw.bin --text hard.bin
refuse two_outputs raw.bin -o x.pftrace --sqlite ../s/x.pftrace
refuse text_and_trace raw.bin -o x.pftrace --text x.pftrace

# Inputs that are not regular files are never opened to wait on: a FIFO
# (nobody writing) as the capture is refused in one line, for --info too;
# one in a binary's place, found through --binaries or at the path the
# capture names, is a binary that cannot be used (said once, its code
# unknown); one in its debug file's place is no debug file; one at
# perf-PID.map is not read when no code needs JIT
# names, and is passed over with a line when some does.
mkfifo "$W/fifo.bin"
mkdir -p "$W/fo"
for info in "" --info; do
	name=convert_fifo_capture${info:+_info}
	if [ -n "$info" ]; then
		timeout 10 "$B/mt-convert" --info "$W/fifo.bin" >"$W/stdout" 2>"$W/stderr"
	else
		timeout 10 "$B/mt-convert" "$W/fifo.bin" -o "$W/fo/t.pftrace" >"$W/stdout" 2>"$W/stderr"
	fi
	rc=$?
	if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
		echo "FAIL $name: exit status $rc"
	elif [ "$(wc -l <"$W/stderr")" -ne 1 ] || ! grep -q "fifo.bin: not a regular file" "$W/stderr"; then
		echo "FAIL $name: message:"; sed 's/^/    /' "$W/stderr" | head -3
	elif [ -n "$(ls -A "$W/fo")" ]; then
		echo "FAIL $name: left $(ls "$W/fo")"
	else
		echo "PASS $name"
	fi
done
"$B/mt-synth" --seed 3 --branches 3000 -o "$W/ff" >/dev/null
mkdir -p "$W/ff/bins" "$W/ff/jit"
mkfifo "$W/ff/bins/prog" "$W/ff/jit/perf-4242.map"
# fifo_convert NAME ARGS...: the conversion of $W/ff's capture ends, with
# exit 0, its errors in $W/ff/err and its slices in $W/ff/t.tsv.
fifo_convert() {
	local name=$1; shift
	rm -f "$W/ff/t.tsv"
	timeout 10 "$B/mt-convert" "$W/ff/raw.bin" -o "$W/ff/t.pftrace" \
		--text "$W/ff/t.tsv" -q "$@" >/dev/null 2>"$W/ff/err"
	rc=$?
	[ $rc -eq 0 ] && return 0
	echo "FAIL $name: exit status $rc"; sed 's/^/    /' "$W/ff/err" | head -3
	return 1
}
if fifo_convert convert_fifo_binaries_dir --binaries "$W/ff/bins"; then
	# the file the capture names is there, and used
	if [ -s "$W/ff/err" ] || grep -q 'unknown @' "$W/ff/t.tsv"; then
		echo "FAIL convert_fifo_binaries_dir:"; sed 's/^/    /' "$W/ff/err" | head -3
	else
		echo "PASS convert_fifo_binaries_dir"
	fi
fi
if fifo_convert convert_fifo_jit_unneeded --jit-dir "$W/ff/jit"; then
	if [ -s "$W/ff/err" ] || grep -q 'unknown @' "$W/ff/t.tsv"; then
		echo "FAIL convert_fifo_jit_unneeded:"; sed 's/^/    /' "$W/ff/err" | head -3
	else
		echo "PASS convert_fifo_jit_unneeded"
	fi
fi
# ... but read when the binary is missing: a map it cannot read is said
# once on stderr, beside the missing binary, and the conversion goes on.
mv "$W/ff/prog" "$W/ff/prog.away"
if fifo_convert convert_fifo_jit_warns --jit-dir "$W/ff/jit"; then
	if [ "$(wc -l <"$W/ff/err")" -eq 2 ] &&
		grep -qx ".*/ff/raw.bin: .*/ff/jit/perf-4242.map: not a regular file: JIT symbols not used" "$W/ff/err" &&
		grep -q "binary .*/ff/prog (build id [0-9a-f]*) not found" "$W/ff/err"; then
		echo "PASS convert_fifo_jit_warns"
	else
		echo "FAIL convert_fifo_jit_warns:"; sed 's/^/    /' "$W/ff/err" | head -3
	fi
fi
mv "$W/ff/prog.away" "$W/ff/prog"
# (the debug file that .gnu_debuglink names, beside the binary, too: the
# binary's own symbols serve)
if ! command -v objcopy >/dev/null; then
	echo "SKIP convert_fifo_debuglink (no objcopy)"
else
	cp "$W/ff/prog" "$W/ff/prog.debug"
	objcopy --add-gnu-debuglink="$W/ff/prog.debug" "$W/ff/prog"
	rm "$W/ff/prog.debug"
	mkfifo "$W/ff/prog.debug"
	if fifo_convert convert_fifo_debuglink; then
		if [ -s "$W/ff/err" ] || grep -q 'unknown @' "$W/ff/t.tsv"; then
			echo "FAIL convert_fifo_debuglink:"; sed 's/^/    /' "$W/ff/err" | head -3
		else
			echo "PASS convert_fifo_debuglink"
		fi
	fi
fi
mv "$W/ff/prog" "$W/ff/prog.away"
mkfifo "$W/ff/prog"
if fifo_convert convert_fifo_binary; then
	if [ "$(wc -l <"$W/ff/err")" -ne 1 ] ||
		! grep -q "binary $W/ff/prog .*not a regular file" "$W/ff/err" ||
		! grep -q 'unknown @' "$W/ff/t.tsv"; then
		echo "FAIL convert_fifo_binary:"; sed 's/^/    /' "$W/ff/err" | head -3
	else
		echo "PASS convert_fifo_binary"
	fi
fi
if fifo_convert convert_fifo_jit_needed --jit-dir "$W/ff/jit"; then
	if [ "$(grep -c 'perf-4242.map: not a regular file' "$W/ff/err")" -ne 1 ] ||
		[ "$(wc -l <"$W/ff/err")" -ne 2 ] || ! grep -q 'unknown @' "$W/ff/t.tsv"; then
		echo "FAIL convert_fifo_jit_needed:"; sed 's/^/    /' "$W/ff/err" | head -3
	else
		echo "PASS convert_fifo_jit_needed"
	fi
fi

# A binary whose code is a jump cycle that needs no packets (jmp . and
# l1: call l1 everywhere): the decode stops each run after a bounded
# amount of work, says why in a gap, and goes on at the next PSB.
read -r offh sizeh < <(readelf -SW "$W/s/prog" |
	awk '{for (i = 1; i <= NF; i++) if ($i == ".text") print $(i + 3), $(i + 4)}')
off=$((16#$offh)) size=$((16#$sizeh))
for kind in jmp call; do
	mkdir -p "$W/$kind"
	cp "$W/s/prog" "$W/$kind/prog"
	if [ $kind = jmp ]; then pat=$'\xeb\xfe'; else pat=$'\xe8\xfb\xff\xff\xff'; fi
	yes "$pat" | tr -d '\n' | head -c $((size / ${#pat} * ${#pat})) |
		dd of="$W/$kind/prog" bs=1 seek="$off" conv=notrunc 2>/dev/null
	timeout 60 "$B/mt-convert" "$W/s/raw.bin" --binaries "$W/$kind" \
		-o "$W/$kind/t.pftrace" -q 2>"$W/$kind/err"
	rc=$?
	gaps=$(sqlite3 "$W/$kind/t.sqlite" "SELECT count(*) FROM slice
		WHERE name LIKE '[decode gap: decode error: never-ending loop%'" 2>/dev/null)
	# A PSB may resume decoding inside a two-byte `jmp .`, which reads
	# as an unknown instruction: a gap all the same.
	all=$(sqlite3 "$W/$kind/t.sqlite" "SELECT count(*) FROM slice
		WHERE name LIKE '[decode gap: decode error: %'" 2>/dev/null)
	slices=$(sqlite3 "$W/$kind/t.sqlite" "SELECT count(*) FROM slice" 2>/dev/null)
	if [ $rc -ne 0 ]; then
		echo "FAIL convert_no_progress_$kind: exit status $rc"; head -3 "$W/$kind/err"
	elif [ "${gaps:-0}" -lt 1 ] || [ "${all:-0}" -lt 2 ]; then
		echo "FAIL convert_no_progress_$kind: $gaps never-ending-loop gaps, $all decode-error gaps"
	elif [ "${slices:-0}" -gt 20000 ]; then
		echo "FAIL convert_no_progress_$kind: $slices slices from a $size-byte loop"
	elif grep -q 'inconsistent tree' "$W/$kind/err"; then
		# segments of one deep chain of the same call, each other's
		# callers at every depth: the joins must still make a tree
		echo "FAIL convert_no_progress_$kind: $(grep 'inconsistent tree' "$W/$kind/err")"
	else
		echo "PASS convert_no_progress_$kind ($gaps gaps, $slices slices)"
	fi
done

# Outputs go in place together: the database failing (a file size
# limit it outgrows) leaves the earlier trace and database as they were.
# (The earlier outputs are of another capture, so that any replacement
# shows.)
"$B/mt-synth" --seed 4 --branches 2000000 -o "$W/b" >/dev/null
"$B/mt-convert" "$W/s/raw.bin" -o "$W/b/t.pftrace" -q
(cd "$W/b" && md5sum t.pftrace t.sqlite >"$W/b/before.md5")
cp "$W/b/t.pftrace" "$W/b/keep.pftrace"
cp "$W/b/t.sqlite" "$W/b/keep.sqlite"
pf=$(stat -c %s "$W/b/t.pftrace") db=$(stat -c %s "$W/b/t.sqlite")
(trap '' XFSZ; ulimit -f $(((pf + db) / 2 / 1024))
 "$B/mt-convert" "$W/b/raw.bin" -o "$W/b/t.pftrace" -q 2>"$W/b/err")
rc=$?
if [ $rc -eq 0 ]; then
	echo "FAIL convert_outputs_together: the limited run succeeded ($pf, $db bytes)"
elif ! (cd "$W/b" && md5sum --quiet -c before.md5 >/dev/null 2>&1); then
	echo "FAIL convert_outputs_together: an earlier output was replaced"
elif ls "$W/b" | grep -q '\.tmp\.'; then
	echo "FAIL convert_outputs_together: left $(ls "$W/b" | grep '\.tmp\.')"
else
	echo "PASS convert_outputs_together"
fi

# A signal while converting takes the temporary files away and leaves
# the earlier outputs as they were: one at the start, one while the
# database is being written.  A signal that comes as the outputs are put
# in place waits until all of them are: then every output is the new one
# (ref/), whole, and none is left half-renamed.
mkdir -p "$W/ref"
"$B/mt-convert" "$W/b/raw.bin" -o "$W/ref/t.pftrace" -q 2>/dev/null
(cd "$W/ref" && md5sum t.pftrace t.sqlite >"$W/b/new.md5")
for sig in INT TERM HUP; do
	for when in start writing; do
		# (A background job starts with SIGINT ignored; perl puts
		# it back, as a terminal's Ctrl-C finds it.)
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' \
			"$B/mt-convert" "$W/b/raw.bin" -o "$W/b/t.pftrace" -q 2>/dev/null &
		pid=$!
		if [ $when = writing ]; then
			for _ in $(seq 1 600); do
				[ -n "$(find "$W/b" -name 't.sqlite.tmp.*' -size +0 2>/dev/null)" ] && break
				sleep 0.05
			done
		else
			sleep 0.1
		fi
		kill -$sig $pid 2>/dev/null
		wait $pid 2>/dev/null
		rc=$?
		left=$(ls "$W/b" | grep '\.tmp\.')
		if [ -n "$left" ]; then
			echo "FAIL convert_signal_${sig}_$when: left $left"
			rm -f "$W"/b/*.tmp.*
		elif (cd "$W/b" && md5sum --quiet -c before.md5 >/dev/null 2>&1); then
			echo "PASS convert_signal_${sig}_$when (exit $rc)"
		elif (cd "$W/b" && md5sum --quiet -c new.md5 >/dev/null 2>&1); then
			echo "PASS convert_signal_${sig}_$when (exit $rc, after every output was in place)"
			# The next run is held to the earlier outputs again.
			cp "$W/b/keep.pftrace" "$W/b/t.pftrace"
			cp "$W/b/keep.sqlite" "$W/b/t.sqlite"
		else
			echo "FAIL convert_signal_${sig}_$when: an output changed (exit $rc)"
		fi
	done
done

# clean NAME: no temporary file left in $W/b, and the earlier outputs
# as they were (0), or put back.
clean() {
	local left
	left=$(ls "$W/b" | grep '\.tmp\.')
	if [ -n "$left" ]; then
		echo "FAIL $1: left $left"
		rm -f "$W"/b/*.tmp.*
	elif ! (cd "$W/b" && md5sum --quiet -c before.md5 >/dev/null 2>&1); then
		echo "FAIL $1: an earlier output was replaced"
	else
		return 0
	fi
	cp "$W/b/keep.pftrace" "$W/b/t.pftrace"
	cp "$W/b/keep.sqlite" "$W/b/t.sqlite"
	return 1
}

# A file size limit, SIGXFSZ at its default: one line naming the output
# and the limit, not a death by the signal.
(ulimit -f $(((pf + db) / 2 / 1024))
 "$B/mt-convert" "$W/b/raw.bin" -o "$W/b/t.pftrace" -q 2>"$W/b/err")
rc=$?
if [ $rc -eq 0 ] || [ $rc -gt 128 ]; then
	echo "FAIL convert_file_limit: exit status $rc"
elif [ "$(wc -l <"$W/b/err")" -ne 1 ] ||
	! grep -q "t\.\(sqlite\|pftrace\).*file size limit" "$W/b/err"; then
	echo "FAIL convert_file_limit: message:"; sed 's/^/    /' "$W/b/err" | head -3
elif clean convert_file_limit; then
	echo "PASS convert_file_limit (exit $rc)"
fi

# The reader of --text - goes away (head): the conversion ends (quietly,
# by SIGPIPE, or saying so) with no temporary file left.
"$B/mt-convert" "$W/b/raw.bin" -o "$W/b/t.pftrace" --text - -q 2>"$W/b/err" |
	head -1 >/dev/null
rc=${PIPESTATUS[0]}
if [ $rc -eq 0 ]; then
	echo "FAIL convert_text_reader_gone: exit status 0"
elif clean convert_text_reader_gone; then
	echo "PASS convert_text_reader_gone (exit $rc)"
fi

# The capture truncated by another process while it is read (mapped):
# one line naming it, no crash, no temporary file.  The conversion is
# stopped once the capture is mapped, which is before its trace is
# decoded; a machine fast enough to finish first is given another try.
for try in 1 2 3; do
	cp "$W/b/raw.bin" "$W/b/cap.bin"
	"$B/mt-convert" "$W/b/cap.bin" -o "$W/b/t.pftrace" -q 2>"$W/b/err" &
	pid=$!
	for _ in $(seq 1 2000); do
		grep -qF "$W/b/cap.bin" "/proc/$pid/maps" 2>/dev/null && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	kill -STOP $pid 2>/dev/null
	: >"$W/b/cap.bin"
	kill -CONT $pid 2>/dev/null
	wait $pid
	rc=$?
	[ $rc -ne 0 ] && break
	clean convert_capture_shrank >/dev/null
done
if [ $rc -eq 0 ]; then
	echo "FAIL convert_capture_shrank: converted each time before it was cut"
elif [ $rc -gt 128 ]; then
	echo "FAIL convert_capture_shrank: exit status $rc"; sed 's/^/    /' "$W/b/err" | head -3
elif [ "$(wc -l <"$W/b/err")" -ne 1 ] || ! grep -q "cap\.bin: .*changed" "$W/b/err"; then
	echo "FAIL convert_capture_shrank: message:"; sed 's/^/    /' "$W/b/err" | head -3
elif clean convert_capture_shrank; then
	echo "PASS convert_capture_shrank (exit $rc, try $try)"
fi
rm -f "$W/b/cap.bin"

# A run killed outright (SIGKILL) leaves its temporary files; the next
# run for the same outputs removes them.
for try in 1 2 3; do
	"$B/mt-convert" "$W/b/raw.bin" -o "$W/b/t.pftrace" -q 2>/dev/null &
	pid=$!
	for _ in $(seq 1 600); do
		[ -n "$(find "$W/b" -name 't.sqlite.tmp.*' -size +0 2>/dev/null)" ] && break
		sleep 0.05
	done
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	left=$(ls "$W/b" | grep '\.tmp\.')
	[ -n "$left" ] && break
	clean convert_killed_leftovers >/dev/null
done
"$B/mt-convert" "$W/s/raw.bin" -o "$W/b/t.pftrace" -q 2>"$W/b/err"
rc=$?
cp "$W/b/keep.pftrace" "$W/b/t.pftrace"
cp "$W/b/keep.sqlite" "$W/b/t.sqlite"
if [ -z "$left" ]; then
	echo "FAIL convert_killed_leftovers: the killed run left nothing to remove"
elif [ $rc -ne 0 ]; then
	echo "FAIL convert_killed_leftovers: the next run: exit $rc"; sed 's/^/    /' "$W/b/err" | head -3
elif clean convert_killed_leftovers; then
	echo "PASS convert_killed_leftovers (removed $(echo $left))"
fi

# Special files are never replaced.  The trace, written in order, goes
# into a link to /dev/null, a FIFO, or a link to standard output (a pipe
# or a file) as a stream; the database, written with seeks, is refused
# in one line before any work, and so is a database named after a
# device.  The links stay links, the FIFO a FIFO, /dev/null a device.
P=$W/sp
mkdir -p "$P"
ln -s /dev/null "$P/null.pftrace"
mkfifo "$P/fifo.pftrace"
ln -s /proc/self/fd/1 "$P/stdout.pftrace"
"$B/mt-convert" "$W/s/raw.bin" -o "$P/ref.pftrace" --no-sqlite -q
# special NAME RC WANT ARGS...: mt-convert ARGS (stdout to $P/got)
# exits RC, with no message (WANT empty) or one line matching WANT, and
# leaves every special file as it was and nothing else behind.
special() {
	local name=$1 want_rc=$2 want=$3 rc
	shift 3
	(cd "$P" && timeout 60 "$B/mt-convert" "$W/s/raw.bin" "$@" -q >"$P/got" 2>"$P/err")
	rc=$?
	if [ $rc -ne "$want_rc" ]; then
		echo "FAIL convert_special_$name: exit status $rc"; sed 's/^/    /' "$P/err" | head -3
	elif { [ -z "$want" ] && [ -s "$P/err" ]; } ||
		{ [ -n "$want" ] && { [ "$(wc -l <"$P/err")" -ne 1 ] || ! grep -q -- "$want" "$P/err"; }; }; then
		echo "FAIL convert_special_$name: message:"; sed 's/^/    /' "$P/err" | head -3
	elif ! [ -c /dev/null ] || ! [ -L "$P/null.pftrace" ] || ! [ -p "$P/fifo.pftrace" ] ||
		! [ -L "$P/stdout.pftrace" ]; then
		echo "FAIL convert_special_$name: a special file was replaced"
	elif [ -n "$(ls "$P" | grep -v '^\(null\|fifo\|stdout\|ref\)\.pftrace$\|^got$\|^err$\|^fifo\.got$')" ]; then
		echo "FAIL convert_special_$name: left $(ls "$P" | tr '\n' ' ')"
	else
		return 0
	fi
	return 1
}
special null 0 "" -o null.pftrace --no-sqlite && echo "PASS convert_special_null"
special text_null 0 "" -o "$W/tn.pftrace" --no-sqlite --text null.pftrace &&
	echo "PASS convert_special_text_null"
special sqlite 2 "null.pftrace: is a character device" \
	-o t.pftrace --sqlite null.pftrace && echo "PASS convert_special_sqlite"
special sqlite_fifo 2 "fifo.pftrace: is a FIFO" \
	-o t.pftrace --sqlite fifo.pftrace && echo "PASS convert_special_sqlite_fifo"
special default_sqlite 2 "--no-sqlite" -o null.pftrace &&
	echo "PASS convert_special_default_sqlite"
timeout 60 cat "$P/fifo.pftrace" >"$P/fifo.got" &
cat_pid=$!
if special fifo 0 "" -o fifo.pftrace --no-sqlite; then
	wait $cat_pid
	if cmp -s "$P/fifo.got" "$P/ref.pftrace"; then
		echo "PASS convert_special_fifo"
	else
		echo "FAIL convert_special_fifo: the reader got $(stat -c %s "$P/fifo.got") bytes"
	fi
fi
kill $cat_pid 2>/dev/null
wait $cat_pid 2>/dev/null
rm -f "$P/fifo.got"
# Standard output a file, then a pipe.
special stdout_file 0 "" -o stdout.pftrace --no-sqlite &&
	{ cmp -s "$P/got" "$P/ref.pftrace" && echo "PASS convert_special_stdout_file" ||
		echo "FAIL convert_special_stdout_file: standard output got $(stat -c %s "$P/got") bytes"; }
(cd "$P" && "$B/mt-convert" "$W/s/raw.bin" -o stdout.pftrace --no-sqlite -q 2>"$P/err" |
	cat >"$P/got")
if [ -L "$P/stdout.pftrace" ] && cmp -s "$P/got" "$P/ref.pftrace" && ! [ -s "$P/err" ]; then
	echo "PASS convert_special_stdout_pipe"
else
	echo "FAIL convert_special_stdout_pipe: the pipe got $(stat -c %s "$P/got") bytes"
fi

# An output's name as long as a name may be (255 bytes, the database's
# 254): the temporary names are cut to fit.
n=$(printf 'n%.0s' $(seq 1 247))
mkdir -p "$W/long"
if ! "$B/mt-convert" "$W/s/raw.bin" -o "$W/long/$n.pftrace" -q 2>"$W/long.err"; then
	echo "FAIL convert_long_name:"; sed 's/^/    /' "$W/long.err" | head -3
elif [ "$(ls "$W/long" | sort | tr '\n' ' ')" != "$n.pftrace $n.sqlite " ]; then
	echo "FAIL convert_long_name: made $(ls "$W/long" | wc -l) files"
else
	echo "PASS convert_long_name"
fi

# A program that ends spinning in jmp .: its last call (spin, reached by
# a direct call no packet follows) is in the trace, at its time, with
# work returned before it: not before the last branch perf's decode of
# the same packets reports, and within 10 ms of it and of the emulator's
# truth (the bug this caught put it 2.7 s late).  Not within 1 ms: the
# emulator stamps its packets with the wall clock around each ptrace
# step, and on a loaded machine a stall of a scheduler slice puts them
# milliseconds off its own truth (perf's times in 50-emulate: up to
# 2.3 ms off; here once 3.2 ms).  The program, not the capture, is
# interrupted, so the trace ends with the stop at the signal's delivery,
# timed seconds after the call (the spin needs no packet, and nothing is
# timed in between): that stop is perf's "tr end", no branch, and the
# call keeps its own time (it took the stop's, seconds late, whenever
# a Ctrl-C reached the program before the capture).  With an argument
# the last work returns straight into the spin: that return keeps its
# time too, and work does not last until the stop.
cc -O1 -g -o "$W/spin" "$R/tests/programs/spin.c" || { echo "FAIL convert_spin_tail: cc"; exit 0; }
# spin_capture NAME ARGS...: NAME.bin, NAME.truth, NAME.tsv, and perf's
# last branch in $last, in ns ("5196.638330880:" -> 5196638330880)
spin_capture() {
	local name=$1 cap i
	shift
	"$B/mt-capture" --emulate=ptrace --truth "$W/$name.truth" -o "$W/$name.bin" \
		-- "$W/spin" "$@" >/dev/null 2>&1 &
	cap=$!
	sleep 4
	pkill -INT -P $cap -x spin
	for i in $(seq 50); do
		kill -0 $cap 2>/dev/null || break
		sleep 0.2
	done
	kill -INT $cap 2>/dev/null
	wait $cap
	"$B/mt-convert" "$W/$name.bin" -o "$W/$name.pftrace" --text "$W/$name.tsv" -q
	last=$(perf script -i "$W/$name.bin" --itrace=cr --ns -F time,flags 2>/dev/null |
		grep -v 'tr end' | tail -1 | awk '{print $1}' | tr -d ' :.')
}
# off A B: |A - B| <= 10 ms
off() { [ $(($1 - $2)) -le 10000000 ] && [ $(($2 - $1)) -le 10000000 ]; }
spin_capture spin
want=$(awk -F'\t' '$3 == "spin" {print $2, $4}' "$W/spin.truth" | head -1)
got=$(awk -F'\t' '$3 == "spin" {print $2, $4}' "$W/spin.tsv" | head -1)
works=$(awk -F'\t' '$3 == "work" && $6 !~ /clipped_end/' "$W/spin.tsv" | wc -l)
if [ -z "$want" ]; then
	echo "FAIL convert_spin_tail: the truth has no spin (the capture ended early)"
elif [ -z "$got" ]; then
	echo "FAIL convert_spin_tail: no spin slice in the trace"
elif [ -z "$last" ]; then
	echo "FAIL convert_spin_tail: perf script reports no branch"
elif [ "${want%% *}" != "${got%% *}" ] || [ $(( ${got#* } - last )) -lt 0 ] ||
	! off "${got#* }" "$last" || ! off "${got#* }" "${want#* }"; then
	echo "FAIL convert_spin_tail: spin at depth/time '$got', truth '$want', perf's last branch at $last"
elif [ "$works" -ne 20 ]; then
	echo "FAIL convert_spin_tail: $works of 20 work calls returned"
else
	echo "PASS convert_spin_tail (spin at depth ${got%% *}, $(( ${got#* } - last )) ns after perf's last branch, $(( ${got#* } - ${want#* } )) ns from the truth)"
fi
spin_capture spin-ret ret
want=$(awk -F'\t' '$3 == "work" {print $2, $5}' "$W/spin-ret.truth" | tail -1)
got=$(awk -F'\t' '$3 == "work" {print $2, $5}' "$W/spin-ret.tsv" | tail -1)
works=$(awk -F'\t' '$3 == "work" && $6 !~ /clipped_end/' "$W/spin-ret.tsv" | wc -l)
if [ -z "$want" ] || [ -z "$got" ] || [ -z "$last" ]; then
	echo "FAIL convert_spin_ret: truth '$want', ours '$got', perf's last branch '$last'"
elif [ "${want%% *}" != "${got%% *}" ] || [ "$works" -ne 21 ] ||
	! off "${got#* }" "$last" || ! off "${got#* }" "${want#* }"; then
	echo "FAIL convert_spin_ret: $works of 21 work calls returned, the last at depth/end '$got', truth '$want', perf's last branch (the return) at $last"
else
	echo "PASS convert_spin_ret (the last work ends $(( ${got#* } - last )) ns after perf's return, $(( ${got#* } - ${want#* } )) ns from the truth)"
fi

# A capture too big for the memory at hand is refused before decoding,
# with the way through (--tid) in the one line; --tid converts exactly
# that thread's part of the whole, per-thread and per-CPU.
"$B/mt-synth" --seed 2 --branches 2000000 -o "$W/m" >/dev/null
mkdir -p "$W/m/out"
# (--max-memory stands for a smaller machine: the sanitizers cannot run
# under ulimit -v.)
"$B/mt-convert" "$W/m/raw.bin" -o "$W/m/out/t.pftrace" -q --max-memory 100M 2>"$W/m/err"
rc=$?
if [ $rc -eq 0 ] || [ "$(wc -l <"$W/m/err")" -ne 1 ] || ! grep -q -- '--tid' "$W/m/err"; then
	echo "FAIL convert_memory_refused: exit $rc:"; sed 's/^/    /' "$W/m/err" | head -3
elif [ -n "$(ls -A "$W/m/out")" ]; then
	echo "FAIL convert_memory_refused: left $(ls "$W/m/out")"
else
	echo "PASS convert_memory_refused"
fi
for layout in threads per-cpu; do
	d="$W/tid-$layout"
	opt=""; [ $layout = per-cpu ] && opt=--per-cpu
	"$B/mt-synth" --seed 11 --branches 20000 --threads 3 $opt -o "$d" >/dev/null
	"$B/mt-convert" "$d/raw.bin" -o "$d/all.pftrace" --text "$d/all.tsv" -q
	tid=$(awk -F'\t' 'NR == 2 {print $1}' "$d/all.tsv")
	"$B/mt-convert" "$d/raw.bin" -o "$d/one.pftrace" --text "$d/one.tsv" -q --tid "$tid"
	if [ "$(awk -F'\t' 'NR > 1 {print $1}' "$d/one.tsv" | sort -u)" != "$tid" ]; then
		echo "FAIL convert_tid_$layout: other threads in the output"
	elif ! cmp -s <(awk -F'\t' -v t="$tid" '$1 == t' "$d/all.tsv") \
		<(awk -F'\t' -v t="$tid" '$1 == t' "$d/one.tsv"); then
		echo "FAIL convert_tid_$layout: thread $tid differs from the whole conversion"
	else
		echo "PASS convert_tid_$layout"
	fi
	# A thread the capture does not have is refused in one line that
	# names those it has; the earlier outputs stay.
	sum=$(cat "$d/all.pftrace" "$d/all.sqlite" "$d/all.tsv" | md5sum)
	"$B/mt-convert" "$d/raw.bin" -o "$d/all.pftrace" --text "$d/all.tsv" \
		-q --tid 77 2>"$d/err"
	rc=$?
	if [ $rc -eq 0 ] || [ "$(wc -l <"$d/err")" -ne 1 ] ||
		! grep -q -- "--tid 77: .* $tid\b" "$d/err"; then
		echo "FAIL convert_tid_unknown_$layout: exit $rc:"; sed 's/^/    /' "$d/err" | head -3
	elif [ "$(cat "$d/all.pftrace" "$d/all.sqlite" "$d/all.tsv" | md5sum)" != "$sum" ]; then
		echo "FAIL convert_tid_unknown_$layout: the outputs were replaced"
	else
		echo "PASS convert_tid_unknown_$layout"
	fi
done

# A box that gives no more threads (ulimit -u, a container's pids.max):
# pthread_create fails after the first K, from none on.  Each conversion
# goes on with the threads it has (or on its own thread) and writes what
# -j 1 writes, byte for byte; it used to stop with "out of memory while
# decoding" when the decode got no thread.
d="$W/nothr"
if ! cc -O2 -shared -fPIC -o "$W/libnothreads.so" "$R/tests/tools/nothreads.c" \
	-ldl 2>"$W/cc.log"; then
	echo "FAIL convert_thread_limit: the shim does not build"
elif ! "$B/mt-synth" --seed 72 --branches 150000 --threads 3 --gap-every 20000 \
	--timing cyc -o "$d" >/dev/null 2>&1 ||
	! "$B/mt-convert" "$d/raw.bin" -o "$d/j1.pftrace" --text "$d/j1.tsv" \
		-j 1 -q 2>"$d/j1.err"; then
	echo "FAIL convert_thread_limit: mt-synth or mt-convert -j 1 failed"
else
	bad=''
	for k in 0 1 2 3 5 8 13 40; do
		MT_NOTHREADS_AFTER=$k LD_PRELOAD="$W/libnothreads.so" \
			ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
			timeout 300 "$B/mt-convert" "$d/raw.bin" -o "$d/k.pftrace" \
			--text "$d/k.tsv" -j 8 --piece-size 4K -q 2>"$d/k.err"
		rc=$?
		if [ $rc -ne 0 ]; then
			bad="$bad; $k threads: exit $rc: $(head -1 "$d/k.err")"
		elif ! cmp -s "$d/j1.pftrace" "$d/k.pftrace" ||
			! cmp -s "$d/j1.sqlite" "$d/k.sqlite" ||
			! cmp -s "$d/j1.tsv" "$d/k.tsv"; then
			bad="$bad; $k threads: other outputs than -j 1"
		fi
	done
	if [ -n "$bad" ]; then
		echo "FAIL convert_thread_limit:${bad#;}"
	else
		echo "PASS convert_thread_limit (0 to 40 threads given, -j 8: the outputs of -j 1)"
	fi
fi
