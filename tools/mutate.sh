#!/bin/bash
# SPDX-License-Identifier: MIT
# The mutation run (make mutate): plants the bugs of tests/mutants.txt,
# one at a time, in a scratch copy of the tree, rebuilds the copy with
# ASan and UBSan, and runs the tests each bug names.  A bug is caught when
# one of them prints a FAIL line, exits non-zero or runs past the time
# limit this script sets; it survived when all of them pass.  A bug whose
# text is not in its file exactly once is stale, one that does not build
# is a bad mutant: both are reported and neither counts in the score.
#
#   tools/mutate.sh [ID...]          all mutants, or only those named
#   tools/mutate.sh --check [ID...]  only whether each still applies
#
# One line per mutant, then "mutation score: K of N caught (P%)".  Exit
# status: 0 when the score reaches MUTATE_THRESHOLD percent (default 90)
# and every mutant applied and built, 1 when the score is below it, 2
# when a mutant is stale or does not build, or a test fails before any
# bug is planted (then nothing it says about a mutant means anything).
#
# MUTATE_FILE      the mutants (default tests/mutants.txt)
# MUTATE_TIMEOUT   seconds one test may run under a mutant (default 300,
#                  or 5 times what it took unmutated when that is more);
#                  past it the test is killed and the mutant counts as
#                  caught, "by timeout"
# MUTATE_JOBS      make -j (default 2)
# MUTATE_ALL=1     run every test a mutant names, not only up to the first
#                  that catches it (to see which tests catch what)
# MUTATE_NO_BASELINE=1  skip running the tests on the unmutated copy
# MUTATE_KEEP=1    keep the scratch copy (its path is printed)
#
# The working tree is never written: the copy is made with tar (the
# working tree as it is, uncommitted changes included, without .git and
# build/), its build starts from a copy of build/asan when there is one,
# and each mutated file is put back before the next mutant.  For each
# mutant only the mutated object and what its tests run are rebuilt (the
# unit test programs it names; for an end-to-end script, make progs).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILE=${MUTATE_FILE:-$ROOT/tests/mutants.txt}
TIMEOUT=${MUTATE_TIMEOUT:-300}
THRESHOLD=${MUTATE_THRESHOLD:-90}
JOBS=${MUTATE_JOBS:-2}
case $FILE in /*) ;; *) FILE=$PWD/$FILE ;; esac

die() { echo "mutate: $*" >&2; exit 2; }
[ -f "$FILE" ] || die "$FILE: no such file"
command -v perl >/dev/null || die "perl is needed (to plant the bugs)"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"

start=$(date +%s)
S=$(mktemp -d /tmp/mt-mutate.XXXXXX) || die "cannot make a scratch directory"
C=$S/tree
# timeout passes a TERM on to the test's whole process group.
stop_test() {
	[ -z "${child:-}" ] || { kill -TERM "$child" && wait "$child"; } 2>/dev/null
}
if [ "${MUTATE_KEEP:-0}" = 1 ]; then
	trap 'stop_test; echo "mutate: the scratch copy is $S" >&2' EXIT
else
	trap 'stop_test; rm -rf "$S"' EXIT
fi
trap 'exit 130' INT TERM HUP

# ---- the mutants -------------------------------------------------------
# Records of "key: value" lines, separated by blank lines; "#" starts a
# comment line.  Keys: id, file, find, repl, tests (and why, free text).
# In find and repl, \n is a newline, \t a tab and \\ a backslash.
ids=() files=() finds=() repls=() tests=()
parse() {
	local line key="" val id="" file="" find="" repl="" tst="" have_repl=0 n=0
	flush() {
		if [ -n "$id$file$find$tst" ]; then
			[ -n "$id" ] && [ -n "$file" ] && [ -n "$find" ] &&
				[ "$have_repl" = 1 ] && [ -n "$tst" ] ||
				die "$FILE:$n: mutant '${id:-?}' lacks one of id, file, find, repl, tests"
			ids+=("$id") files+=("$file") finds+=("$find")
			repls+=("$repl") tests+=("$tst")
		fi
		id="" file="" find="" repl="" tst="" have_repl=0
	}
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in
		'#'*) continue ;;
		'' | *[![:space:]]*) ;;
		*) line="" ;;
		esac
		if [ -z "$line" ]; then
			flush
			continue
		fi
		case $line in
		[[:space:]]*)
			# A why goes on over indented lines.
			[ "$key" = why ] && continue
			die "$FILE:$n: an indented line after '$key:'" ;;
		esac
		key=${line%%:*}
		val=${line#*:}
		val=${val#"${val%%[![:space:]]*}"}
		case $key in
		id) id=$val ;;
		file) file=$val ;;
		find) find=$val ;;
		repl) repl=$val have_repl=1 ;;
		tests) tst=$val ;;
		why) ;;
		*) die "$FILE:$n: unknown key '$key'" ;;
		esac
	done <"$FILE"
	flush
}
parse
[ ${#ids[@]} -gt 0 ] || die "$FILE: no mutants"
declare -A seen=()
for id in "${ids[@]}"; do
	[ -z "${seen[$id]:-}" ] || die "$FILE: mutant '$id' twice"
	seen[$id]=1
done

# plant I PATH [write]: where mutant I's text is in PATH: its line, or
# "stale N" when it is there N times, not once; with write, and only when
# it is there once, the file is rewritten with the mutant planted.
plant() {
	FIND=${finds[$1]} REPL=${repls[$1]} perl -e '
		sub unesc {
			my $s = shift;
			$s =~ s/\\(\\|n|t)/$1 eq "n" ? "\n" : $1 eq "t" ? "\t" : "\\"/ge;
			return $s;
		}
		my ($find, $repl) = (unesc($ENV{FIND}), unesc($ENV{REPL}));
		my ($path, $write) = @ARGV;
		open(my $in, "<", $path) or die "$path: $!\n";
		local $/;
		my $text = <$in>;
		close($in);
		my ($n, $at) = (0, -1);
		for (my $p = index($text, $find); $p >= 0;
		     $p = index($text, $find, $p + 1)) {
			$n++;
			$at = $p if $at < 0;
		}
		if ($n != 1) {
			print "stale $n\n";
			exit 0;
		}
		print 1 + (substr($text, 0, $at) =~ tr/\n//), "\n";
		exit 0 unless $write;
		substr($text, $at, length($find)) = $repl;
		open(my $out, ">", $path) or die "$path: $!\n";
		print $out $text;
		close($out) or die "$path: $!\n";' "$2" "${3:-}"
}

check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi

# Only those named on the command line.
if [ $# -gt 0 ]; then
	for want in "$@"; do
		[ -n "${seen[$want]:-}" ] || die "no mutant '$want' in $FILE"
	done
	declare -A keep=()
	for want in "$@"; do keep[$want]=1; done
	sel=()
	for i in "${!ids[@]}"; do
		[ -n "${keep[${ids[$i]}]:-}" ] && sel+=("$i")
	done
else
	sel=("${!ids[@]}")
fi

# --check: only whether each mutant's text is in its file once.
if [ $check = 1 ]; then
	bad=0
	for i in "${sel[@]}"; do
		f=${files[$i]}
		if [ ! -f "$ROOT/$f" ]; then
			echo "${ids[$i]}  $f  STALE: no such file"
			bad=$((bad + 1))
			continue
		fi
		where=$(plant "$i" "$ROOT/$f")
		case $where in
		stale*) echo "${ids[$i]}  $f  STALE: found ${where#stale } times, not once"
			bad=$((bad + 1)) ;;
		esac
	done
	echo "${#sel[@]} mutants, $bad stale"
	[ $bad -eq 0 ] || exit 2
	exit 0
fi

# ---- the copy -----------------------------------------------------------
mkdir -p "$C" || die "cannot write $S"
(cd "$ROOT" && tar --exclude=./.git --exclude=./build -cf - .) |
	(cd "$C" && tar -xf -) || die "cannot copy $ROOT to $C"
if [ -d "$ROOT/build/asan" ]; then
	mkdir -p "$C/build"
	(cd "$ROOT/build" && tar -cf - asan) | (cd "$C/build" && tar -xf -) ||
		die "cannot copy $ROOT/build/asan"
fi
B=$C/build/asan
export MT_BUILD=$B MT_ROOT=$C
export MT_SHARED=${MT_SHARED:-$ROOT/../shared}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The fuzzing script replays its inputs only.
export MT_FUZZ_SECONDS=0

build() { # LOG TARGET...
	local log=$1
	shift
	(cd "$C" && nice make -j"$JOBS" --no-print-directory MODE=asan "$@") \
		>"$log" 2>&1
}

# What mutant I needs built: its own object (so that it must compile
# whatever its tests link) and the programs its tests run.
targets() {
	local t f=${files[$1]} out=""
	case $f in *.c) out="build/asan/obj/${f%.c}.o" ;; esac
	for t in ${tests[$1]}; do
		t=${t#e2e/}
		case $t in
		test_*) out="$out build/asan/tests/$t" ;;
		*) out="$out progs" ;;
		esac
	done
	echo "$out"
}

# A test's command: test_NAME is a unit test program, NN-name (or
# e2e/NN-name.sh) an end-to-end script.
test_cmd() {
	local t=${1#e2e/}
	t=${t%.sh}
	case $t in
	test_*) [ -x "$B/tests/$t" ] && echo "$B/tests/$t" ;;
	[0-9]*) [ -f "$C/tests/e2e/$t.sh" ] && echo "bash $C/tests/e2e/$t.sh" ;;
	esac
}

# How long test T may run: MUTATE_TIMEOUT, or 5 times what it took
# unmutated (a loaded machine may be that much slower).
declare -A base_s=()
limit_of() {
	local b=${base_s[$1]:-0}
	[ $((5 * b)) -gt "$TIMEOUT" ] && echo $((5 * b)) || echo "$TIMEOUT"
}

# run_test NAME LOG: 0 passed, 1 failed, 2 timed out; test_rc is its
# exit status.  In the background, so that a signal to this script is
# not held until the test ends (timeout runs it in a process group of
# its own, which the terminal's Ctrl-C does not reach).
child=""
run_test() {
	local cmd
	cmd=$(test_cmd "$1")
	(cd "$C" && exec timeout -k 10 "$(limit_of "$1")" nice $cmd) \
		>"$2" 2>&1 </dev/null &
	child=$!
	wait "$child"
	test_rc=$?
	child=""
	if [ $test_rc -eq 124 ] || [ $test_rc -eq 137 ]; then
		return 2
	fi
	if [ $test_rc -ne 0 ] || grep -q '^FAIL' "$2"; then
		return 1
	fi
	return 0
}

# Every test named must exist and pass before a bug is planted.
echo "mutate: building the copy in $C" >&2
build "$S/build.log" asan-build || {
	tail -20 "$S/build.log" >&2
	die "the unmutated tree does not build"
}
declare -A all_tests=()
for i in "${sel[@]}"; do
	for t in ${tests[$i]}; do
		[ -n "$(test_cmd "$t")" ] || die "mutant '${ids[$i]}': no test '$t'"
		all_tests[$t]=1
	done
done
if [ "${MUTATE_NO_BASELINE:-0}" != 1 ]; then
	for t in "${!all_tests[@]}"; do
		t0=$(date +%s)
		run_test "$t" "$S/base.log"
		rc=$?
		base_s[$t]=$(($(date +%s) - t0))
		case $rc in
		1) grep '^FAIL' "$S/base.log" | head -3 >&2
		   die "$t fails with no mutant planted" ;;
		2) die "$t ran past $(limit_of "$t")s with no mutant planted" ;;
		esac
	done
	echo "mutate: ${#all_tests[@]} tests pass unmutated" >&2
fi

# ---- the mutants, one at a time ------------------------------------------
caught=0 survived=0 stale=0 bad=0 survivors=()
for i in "${sel[@]}"; do
	id=${ids[$i]} f=${files[$i]} t0=$(date +%s)
	change="${finds[$i]} -> ${repls[$i]}"
	if [ ! -f "$C/$f" ]; then
		printf '%s  %s  STALE: no such file\n' "$id" "$f"
		stale=$((stale + 1))
		continue
	fi
	cp -p "$C/$f" "$S/orig"
	where=$(plant "$i" "$C/$f" write)
	case $where in
	stale*)
		printf '%s  %s  %s  STALE: found %s times, not once\n' \
			"$id" "$f" "$change" "${where#stale }"
		stale=$((stale + 1))
		continue ;;
	'' | *[!0-9]*)
		cp -p "$S/orig" "$C/$f"
		die "mutant '$id': cannot plant it in $f" ;;
	esac
	if ! build "$S/build.log" $(targets "$i"); then
		msg=$(grep -m1 -E 'error:|Error [0-9]' "$S/build.log")
		printf '%s  %s:%s  %s  DID NOT COMPILE: %s\n' "$id" "$f" "$where" \
			"$change" "$msg"
		bad=$((bad + 1))
	else
		by="" how="" ran=""
		for t in ${tests[$i]}; do
			ran="$ran $t"
			run_test "$t" "$S/test.log"
			case $? in
			1) first=$(grep -m1 '^FAIL' "$S/test.log")
			   by="$by $t" how=${how:-${first:-exit status $test_rc}} ;;
			2) by="$by $t"
			   how=${how:-"timeout: killed after $(limit_of "$t")s, ${base_s[$t]:-?}s unmutated"} ;;
			*) continue ;;
			esac
			[ "${MUTATE_ALL:-0}" = 1 ] || break
		done
		if [ -n "$by" ]; then
			printf '%s  %s:%s  %s  caught by%s (%s) [%ss]\n' "$id" "$f" \
				"$where" "$change" "$by" "$how" $(($(date +%s) - t0))
			caught=$((caught + 1))
		else
			printf '%s  %s:%s  %s  SURVIVED (ran%s) [%ss]\n' "$id" "$f" \
				"$where" "$change" "$ran" $(($(date +%s) - t0))
			survived=$((survived + 1))
			survivors+=("$id")
		fi
	fi
	# Back as it was; its new time makes the next build recompile it.
	cp "$S/orig" "$C/$f"
	touch "$C/$f"
done

n=$((caught + survived))
pct=0
[ $n -gt 0 ] && pct=$((100 * caught / n))
[ $stale -eq 0 ] || echo "$stale stale (their text is not in the file once: update $FILE)"
[ $bad -eq 0 ] || echo "$bad did not compile (bad mutants: fix them in $FILE)"
[ ${#survivors[@]} -eq 0 ] || echo "survivors: ${survivors[*]}"
echo "mutation run: $(($(date +%s) - start))s"
echo "mutation score: $caught of $n caught ($pct%)"
[ $stale -eq 0 ] && [ $bad -eq 0 ] || exit 2
[ $n -gt 0 ] && [ $((100 * caught)) -ge $((THRESHOLD * n)) ] || exit 1
exit 0
