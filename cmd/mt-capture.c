/* SPDX-License-Identifier: MIT */
/*
 * mt-capture: records a program's control flow.
 *
 *   mt-capture [-o FILE] [options] -- PROG ARGS...     (Intel PT)
 *   mt-capture --emulate[=valgrind|=ptrace] [-o FILE] [options] -- PROG ARGS...
 *
 * Without --emulate the CPU records (capture/hwpt.c); --emulate writes the
 * packets the hardware would have, the program run under Valgrind
 * (capture/vg_capture.c, tens of times slower) or, --emulate=ptrace and
 * for -p, single-stepped under ptrace (capture/emulate.c, about a
 * thousand times slower).  Options that only one backend has are refused
 * by the other in one line.
 */
#include "capture/capture.h"
#include "util/util.h"
#include "util/version.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT_SYSFS "/sys/bus/event_source/devices/intel_pt"

static const char usage[] =
	"usage: mt-capture [--emulate[=valgrind|=ptrace]] [-o FILE] [options] "
	"-- PROG [ARGS...]\n"
	"       mt-capture [--emulate[=ptrace]] [-o FILE] [options] -p [PID]\n"
	"       mt-capture --check [--timing ...]\n"
	"       mt-capture --version\n"
	"\n"
	"Records PROG's control flow as an Intel PT capture (perf.data) that\n"
	"mt-convert turns into a timeline.  Ctrl-C (or SIGTERM, SIGHUP) stops\n"
	"tracing, lets PROG run on untraced and writes the capture.\n"
	"\n"
	"Every backend:\n"
	"  -o FILE            the capture (default raw.bin)\n"
	"  -q                 no line naming the emulator, no summary\n"
	"  -p PID             attach to a running process (all its threads);\n"
	"                     -p alone on a terminal offers a list\n"
	"  --snapshot-size N  keep only the newest N bytes of trace per "
	"thread\n"
	"                     (per CPU with --per-cpu): 4K to 4G, default "
	"4M;\n"
	"                     the hardware rounds it up to a power of two "
	"of\n"
	"                     pages (emulating with --truth: everything)\n"
	"  --full             record everything instead of the newest\n"
	"  --trigger SYMBOL   take the snapshot when SYMBOL is reached (also\n"
	"                     addr:0x..., or FILE:LINE such as demo.c:42, "
	"from\n"
	"                     the DWARF line tables); default: "
	"mt_snapshot_point,\n"
	"                     the stub of include/magic_trace.h, when "
	"present;\n"
	"                     ? (symbol:?, line:?) offers the program's\n"
	"                     functions and source lines to choose from\n"
	"  --duration-thresh T  snapshot only when the hit comes T (5ms, "
	"200us)\n"
	"                     or more after the program's mt_mark_start()\n"
	"  --multi-snapshot   every hit adds a snapshot; tracing goes on\n"
	"  --ptwrite          record the values the program passes to\n"
	"                     mt_ptwrite() (PTWRITE; caps/ptwrite on Intel "
	"PT)\n"
	"\n"
	"Intel PT (the default):\n"
	"  --timing low|normal|high  TSC only; + MTC and CYC (default); + no\n"
	"                     compressed returns\n"
	"  --timing-custom F=V,...  the raw fields: tsc, mtc, cyc, noretcomp,\n"
	"                     mtc_period, cyc_thresh, psb_period\n"
	"  --per-cpu          one ring per CPU (default: one per thread)\n"
	"  --include-kernel   trace the kernel too (root or CAP_PERFMON)\n"
	"  --filter START-STOP@FILE[,...]  trace only these code ranges\n"
	"                     (functions or hex addresses of FILE)\n"
	"  --stop-at-trigger  the CPU stops tracing at the trigger itself\n"
	"  --check            show this machine's intel_pt PMU and the config\n"
	"\n"
	"Emulation, any x86-64 Linux (--emulate, =valgrind: under Valgrind,\n"
	"~5-50x slower, a virtual clock; --emulate=ptrace, and --emulate -p:\n"
	"single-stepped, ~1000x slower):\n"
	"  --start-at SYMBOL  begin tracing at SYMBOL (default main, Go's "
	"main.main;\n"
	"                     '' at exec)\n"
	"  --noretcomp        no compressed returns (a TIP for every ret)\n"
	"  --truth FILE       also write every call seen, as a truth.tsv\n"
	"  --drop-every N     lose the packets of 1..48 branches about every "
	"N\n"
	"                     branches, then OVF, as an overflowing CPU does\n"
	"  --gaps FILE        list those losses (gaps.tsv form)\n"
	"  --follow-children  trace the processes PROG forks too, in the same\n"
	"                     capture (--emulate=valgrind)\n";

/*
 * --snapshot-size bounds.  The hardware's smallest ring is one page, and
 * fewer bytes than the emulator's 4 KiB PSB period hold no PSB, the only
 * place a decoder can start: the capture would decode to nothing.  Above
 * 4 GiB per thread (or CPU) the ring, locked in memory for each, is more
 * than a machine gives; a size that large is a typo.
 */
#define SNAP_MIN (4ull << 10)
#define SNAP_MAX (4ull << 30)

/* "64K", "4M", "1G", "1048576", "0x10000": bytes, within the bounds. */
static int parse_size(const char *s, uint64_t *out)
{
	uint64_t v;
	int rc = mt_parse_size(s, &v);

	if (rc == -EINVAL) {
		fprintf(stderr,
			"mt-capture: --snapshot-size wants a size such as 4M, "
			"not '%s'\n",
			s);
		return -1;
	}
	if (rc || v > SNAP_MAX) {
		fprintf(stderr,
			"mt-capture: --snapshot-size is at most 4G (a ring "
			"per thread, in memory), not '%s'\n",
			s);
		return -1;
	}
	if (v < SNAP_MIN) {
		fprintf(stderr,
			"mt-capture: --snapshot-size is at least 4K (less "
			"holds no PSB to decode from), not '%s'\n",
			s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Set by Ctrl-C, SIGTERM or SIGHUP; read by the backends between steps. */
static volatile sig_atomic_t stop_requested;
/* --emulate -p: the tracer, a child (run_tracer_apart), which those
 * signals are passed on to. */
static volatile sig_atomic_t stop_forward_to;

static void on_stop_signal(int sig)
{
	int saved = errno;

	stop_requested = 1;
	if (stop_forward_to > 0)
		kill((pid_t)stop_forward_to, sig);
	errno = saved;
}

/* Set when a write went past the file size limit (ulimit -f).  Caught,
 * the signal makes the write fail with EFBIG, which the writer reports
 * and cleans up after, where its default would kill mt-capture with the
 * capture's temporary file left.  A handler rather than SIG_IGN: the
 * program traced starts with the default action again (execve). */
static volatile sig_atomic_t over_file_limit;

static void on_file_limit(int sig)
{
	(void)sig;
	over_file_limit = 1;
}

static void catch_file_limit(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_file_limit;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGXFSZ, &sa, NULL);
}

/*
 * SIGTERM and SIGHUP (kill, a closed terminal) end the capture as Ctrl-C
 * does: dying of them would leave an attached process single-stepping
 * with no tracer (the kernel then kills it with SIGTRAP) and lose the
 * trace.  restart: whether interrupted system calls resume; the emulator
 * wants its waitpid() to return at once instead, to see the flag while
 * the target sits in a long system call.
 */
static int catch_stop_signals(bool restart)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	for (size_t k = 0; k < sizeof(sigs) / sizeof(*sigs); k++) {
		if (sigaction(sigs[k], &sa, NULL)) {
			fprintf(stderr, "mt-capture: sigaction: %s\n",
				strerror(errno));
			return -1;
		}
		sigaddset(&set, sigs[k]);
	}
	/* Blocked by whoever started us (the mask survives exec), they
	 * would never stop the capture; one sent already is taken now. */
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	return 0;
}

/*
 * Would writing out replace the program being traced, prog (its path, or
 * /proc/PID/exe)?  The writer renames its file over out, so a link to the
 * program counts too (util's mt_same_file: device and inode, or the
 * resolved path of an output that does not exist yet).
 */
static bool is_program(const char *out, const char *prog)
{
	struct stat sp;

	return !stat(prog, &sp) && mt_same_file(out, prog);
}

/*
 * Can a file be written at out?  The writer creates a temporary file
 * beside it and renames it over out once the program has run; found out
 * only then, the run is lost.  So the same temporary file is made there
 * now, and removed.  Permission bits do not stop root: trying is the only
 * test.
 */
static int check_writable(const char *opt, const char *out)
{
	struct mt_outfile f;
	char err[PATH_MAX + 64];
	int rc = mt_outfile_begin(&f, out, err, sizeof(err));

	if (rc == -EISDIR) {
		fprintf(stderr, "mt-capture: %s %s: is a directory\n", opt,
			out);
		return -1;
	}
	/* A device, a FIFO or a socket: the capture is written with
	 * seeks, and is never put in a special file's place. */
	if (rc == -ESPIPE) {
		fprintf(stderr, "mt-capture: %s %s\n", opt, err);
		return -1;
	}
	if (rc) {
		fprintf(stderr, "mt-capture: %s %s: cannot write there: %s\n",
			opt, out, strerror(-rc));
		return -1;
	}
	mt_outfile_abort(&f);
	return 0;
}

/* The parent of process pid, or 0. */
static int parent_of(int pid)
{
	pid_t ppid = 0;

	return mt_proc_stat(pid, NULL, &ppid) ? 0 : (int)ppid;
}

/*
 * -p on mt-capture itself, or on a process it descends from: that one (a
 * shell running it) waits for mt-capture to end while mt-capture waits
 * for it, and nothing moves until Ctrl-C.
 */
static int check_target(int pid)
{
	int p = getppid();

	if (pid == getpid()) {
		fprintf(stderr, "mt-capture: -p %d is mt-capture itself\n",
			pid);
		return -1;
	}
	/* The bound guards against a loop in a /proc that changes as it is
	 * read. */
	for (int depth = 0; p > 0 && depth < 4096; depth++, p = parent_of(p))
		if (p == pid) {
			fprintf(stderr,
				"mt-capture: -p %d is an ancestor of "
				"mt-capture, which waits for it to end: "
				"trace it from elsewhere\n",
				pid);
			return -1;
		}
	return 0;
}

/*
 * What can be found wrong before anything runs: the target, the outputs
 * of o (each can be written, none is the program).  prog: the program to
 * start, or NULL with -p pid.
 */
/*
 * --trigger ?: the program (or the process's executable) is asked what it
 * can be stopped at, and the answer replaces the spec.  Returns 0, or -1
 * said on stderr (also when nothing was chosen: there is no capture to
 * make without the trigger the user meant to give).
 */
static int choose_trigger(struct capture_opts *cap, const char *prog,
			  char *trigger, size_t len)
{
	char exe[PATH_MAX], err[512];
	int rc;

	if (cap->pid) {
		int e = capture_exe(cap->pid, exe, sizeof(exe), NULL, 0);

		if (e) {
			fprintf(stderr,
				"mt-capture: --trigger %s: cannot read "
				"/proc/%d/exe: %s\n",
				cap->trigger, cap->pid, strerror(-e));
			return -1;
		}
	} else if (!prog || !capture_find_program(prog, exe, sizeof(exe))) {
		fprintf(stderr,
			"mt-capture: --trigger %s: no program to list the "
			"functions of\n",
			cap->trigger);
		return -1;
	}
	rc = pick_trigger(cap->trigger, exe, stdin, stderr, trigger, len, err,
			  sizeof(err));
	if (rc) {
		if (rc > 0)
			snprintf(err, sizeof(err), "nothing chosen");
		fprintf(stderr, "mt-capture: --trigger %s: %s\n", cap->trigger,
			err);
		return -1;
	}
	fprintf(stderr, "mt-capture: --trigger %s\n", trigger);
	cap->trigger = trigger;
	return 0;
}

static int preflight(const char *prog, int pid, const struct emu_opts *o)
{
	const char *const outs[][2] = {{"-o", o->cap.output},
				       {"--truth", o->truth},
				       {"--gaps", o->gaps}};
	const size_t nouts = sizeof(outs) / sizeof(*outs);
	char path[PATH_MAX], label[PATH_MAX + 64];

	if (pid) {
		char exe[PATH_MAX];
		ssize_t n;

		if (check_target(pid))
			return -1;
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		snprintf(label, sizeof(label),
			 "the executable of process %d%s%s%s", pid,
			 n > 0 ? " (" : "", exe, n > 0 ? ")" : "");
	} else if (prog && capture_find_program(prog, path, sizeof(path))) {
		snprintf(label, sizeof(label), "the program to trace (%s)",
			 prog);
	} else {
		path[0] = 0;
	}
	for (size_t k = 0; k < nouts; k++) {
		if (!outs[k][1])
			continue;
		if (path[0] && is_program(outs[k][1], path)) {
			fprintf(stderr,
				"mt-capture: %s %s is %s: it would be "
				"overwritten\n",
				outs[k][0], outs[k][1], label);
			return -1;
		}
		if (check_writable(outs[k][0], outs[k][1]))
			return -1;
	}
	return 0;
}

/* The backends, as the options name them. */
enum backend { BE_HW, BE_PTRACE, BE_VALGRIND, BE_EMULATE_ANY };

/* Which emulator records and what slowdown to expect, in one line: a user
 * who waits minutes knows why.  attach: --emulate picked ptrace for -p. */
static void say_backend(enum backend be, bool attach)
{
	if (be == BE_VALGRIND)
		fputs("mt-capture: emulating Intel PT under Valgrind "
		      "(--emulate=valgrind): about 5-50x slower than native, "
		      "a virtual clock\n",
		      stderr);
	else
		fprintf(stderr,
			"mt-capture: emulating Intel PT by single-stepping "
			"(--emulate=ptrace%s): about 1000x slower than "
			"hardware\n",
			attach ? ", as Valgrind cannot attach to a running "
				 "process"
			       : "");
}

/* Options one backend has and the other lacks: named to refuse them. */
static const char *const emu_only[] = {"--start-at", "--noretcomp",
				       "--truth",    "--drop-every",
				       "--gaps",     "--follow-children"};
static const char *const hw_only[] = {"--timing",  "--timing-custom",
				      "--per-cpu", "--include-kernel",
				      "--filter",  "--stop-at-trigger"};

static bool in(const char *a, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a, list[i]))
			return true;
	return false;
}

static int check_pmu(const struct pt_pmu *pmu, uint64_t config,
		     const char *timing_name)
{
	char err[512];
	int kernel = pmu_check_kernel("/proc/sys/kernel/perf_event_paranoid",
				      pmu_effective_caps(), err, sizeof(err));

	printf("intel_pt PMU type %u, max non-turbo ratio %u\n"
	       "caps: cyc %s, mtc %s (periods %x), cycle thresholds %x, psb "
	       "periods %x, address ranges %u%s\n"
	       "config for --timing %s: %#llx\n"
	       "kernel tracing: %s\n",
	       pmu->type, pmu->max_nonturbo_ratio, pmu->psb_cyc ? "yes" : "no",
	       pmu->mtc ? "yes" : "no", pmu->mtc_periods, pmu->cycle_thresholds,
	       pmu->psb_periods, pmu->num_address_ranges,
	       pmu->ip_filtering ? "" : " (no ip_filtering)", timing_name,
	       (unsigned long long)config, kernel ? err : "allowed");
	return 0;
}

/* "SIGSEGV": the names of the signals a program may die of. */
static const char *const signames[] = {
	[SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
	[SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM",
	[SIGPROF] = "SIGPROF", [SIGSYS] = "SIGSYS",   [SIGSTKFLT] = "SIGSTKFLT",
	[SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",
};

/* "SIGSEGV", or "signal 42". */
static void signal_name(int sig, char *name, size_t len)
{
	if (sig > 0 && (size_t)sig < sizeof(signames) / sizeof(*signames) &&
	    signames[sig])
		snprintf(name, len, "%s", signames[sig]);
	else
		snprintf(name, len, "signal %d", sig);
}

/* The program (prog, or process pid) died of signal sig: the capture
 * holds its trace up to there, but the user should know. */
static void report_killed(const char *prog, int pid, int sig)
{
	char name[32];

	signal_name(sig, name, sizeof(name));
	if (prog)
		fprintf(stderr, "mt-capture: %s killed by %s\n", prog, name);
	else
		fprintf(stderr, "mt-capture: process %d killed by %s\n", pid,
			name);
}

/*
 * What a backend's run leaves to say, whatever the backend: how the
 * program died, the error (then 1 is returned) or a warning.  prog: the
 * program started, or NULL for cap->pid.
 */
static int report_run(const struct capture_opts *cap, const char *prog, int rc,
		      int killed_by, const char *err, const char *warning)
{
	if (killed_by)
		report_killed(cap->pid ? NULL : prog, cap->pid, killed_by);
	if (rc) {
		/* (a failure deep in a backend that said nothing more) */
		fprintf(stderr, "mt-capture: %s%s\n",
			err[0] ? err : strerror(rc < 0 ? -rc : rc),
			over_file_limit
				? " (over the file size limit, ulimit -f)"
				: "");
		return 1;
	}
	if (warning[0])
		fprintf(stderr, "mt-capture: %s\n", warning);
	return 0;
}

static int run_hw(char *const argv[], const struct hw_opts *h, bool quiet)
{
	uint64_t want = h->cap.snapshot_size, size = hw_aux_size(want);
	struct hw_stats st;
	char err[1024];
	int rc;

	if (want && size != want)
		fprintf(stderr,
			"mt-capture: --snapshot-size rounded up to %llu bytes "
			"(a power of two of pages)\n",
			(unsigned long long)size);
	rc = hw_run(argv, h, &st, err, sizeof(err));
	if (!rc && st.kernel_note[0])
		fprintf(stderr, "mt-capture: %s\n", st.kernel_note);
	if (report_run(&h->cap, argv[0], rc, st.killed_by, err, st.warning))
		return 1;
	if (!quiet)
		fprintf(stderr,
			"mt-capture: %s: %llu thread%s, %.1f KiB of trace, "
			"%llu "
			"hit%s\n",
			h->cap.output, (unsigned long long)st.threads,
			st.threads == 1 ? "" : "s", (double)st.aux_bytes / 1024,
			(unsigned long long)st.hits, st.hits == 1 ? "" : "s");
	return 0;
}

/*
 * --emulate -p: the tracer is a child of mt-capture that outlives it.  A
 * single-stepped thread whose tracer dies dies too, of SIGTRAP: the
 * kernel lets go a thread stopped after a step with the step's SIGTRAP
 * to deliver, and one mid-step takes the step's trap untraced.  Nothing
 * done after the tracer's death can save it, so mt-capture's SIGKILL
 * (kill -9, timeout -s KILL, which kills its process group too, the OOM
 * killer should it pick mt-capture) must not reach the tracer, which
 * holds the trace and so remains exposed to the OOM killer itself:
 * it lives in a process group of
 * its own, learns of mt-capture's death (PR_SET_PDEATHSIG) and stops as
 * for SIGTERM, letting the process go and writing the capture.
 * mt-capture passes its stop signals on, waits and exits as the tracer
 * does.  Returns true in the tracer, which goes on to trace; false in
 * mt-capture once the tracer has ended, with its exit status in *status.
 */
static bool run_tracer_apart(int *status)
{
	pid_t parent = getpid(), child;
	char name[32];
	int ws;

	fflush(NULL);
	child = fork();
	if (child < 0) {
		fprintf(stderr, "mt-capture: fork: %s\n", strerror(errno));
		*status = 1;
		return false;
	}
	if (child == 0) {
		setpgid(0, 0);
		/* Its messages go to the terminal from outside the
		 * foreground group: with TOSTOP that would stop it. */
		signal(SIGTTOU, SIG_IGN);
		/* mt-capture may have died before the request was made. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
			stop_requested = 1;
		return true;
	}
	stop_forward_to = child;
	/* A signal between the fork and the line above was not passed on. */
	if (stop_requested)
		kill(child, SIGTERM);
	while (waitpid(child, &ws, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "mt-capture: waitpid: %s\n",
				strerror(errno));
			*status = 1;
			return false;
		}
	if (WIFEXITED(ws)) {
		*status = WEXITSTATUS(ws);
		return false;
	}
	signal_name(WTERMSIG(ws), name, sizeof(name));
	fprintf(stderr,
		"mt-capture: the tracer (process %d) was killed by %s\n",
		(int)child, name);
	*status = 1;
	return false;
}

int main(int argc, char **argv)
{
	struct capture_opts cap = {.output = "raw.bin",
				   .stop = &stop_requested};
	struct emu_opts o = {0};
	struct hw_opts h = {.paranoid = "/proc/sys/kernel/perf_event_paranoid"};
	struct emu_stats st;
	char err[1024], trigger[4352], insns[48];
	struct pt_request req = {.timing = PT_TIMING_NORMAL};
	const char *timing_name = "normal", *custom = NULL;
	const char *emu_opt = NULL, *hw_opt = NULL;
	enum backend emulate = BE_HW;
	bool quiet = false, attach_picked = false;
	int check = 0, timing_given = 0, i, rc;

	/* A capture over ulimit -f is an error said in one line, its
	 * temporary file removed. */
	catch_file_limit();
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (in(a, emu_only, sizeof(emu_only) / sizeof(*emu_only)))
			emu_opt = a;
		if (in(a, hw_only, sizeof(hw_only) / sizeof(*hw_only)))
			hw_opt = a;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			if (mt_build_limits())
				printf("\n%s\n", mt_build_limits());
			return 0;
		} else if (!strcmp(a, "--version")) {
			mt_version_print(stdout, "mt-capture");
			return 0;
		} else if (!strcmp(a, "--emulate")) {
			emulate = BE_EMULATE_ANY;
		} else if (!strcmp(a, "--emulate=ptrace")) {
			emulate = BE_PTRACE;
		} else if (!strcmp(a, "--emulate=valgrind")) {
			emulate = BE_VALGRIND;
		} else if (!strcmp(a, "-q")) {
			quiet = true;
		} else if (!strcmp(a, "--check")) {
			check = 1;
		} else if (!strcmp(a, "--timing") && i + 1 < argc) {
			/* In enum pt_timing's order. */
			static const char *const timings[] = {"low", "normal",
							      "high"};
			int k;

			timing_name = argv[++i];
			timing_given = 1;
			k = mt_parse_word(a, timing_name, timings, 3, err,
					  sizeof(err));
			if (k < 0) {
				fprintf(stderr, "mt-capture: %s\n", err);
				return 2;
			}
			req.timing = (enum pt_timing)k;
		} else if (!strcmp(a, "--timing-custom") && i + 1 < argc) {
			custom = argv[++i];
		} else if (!strcmp(a, "--noretcomp")) {
			o.noretcomp = true;
		} else if (!strcmp(a, "--follow-children")) {
			o.follow_children = true;
		} else if (!strcmp(a, "--ptwrite")) {
			o.ptwrite = true;
			req.ptwrite = true;
		} else if (!strcmp(a, "--multi-snapshot")) {
			cap.multi_snapshot = true;
		} else if (!strcmp(a, "--per-cpu")) {
			h.per_cpu = true;
		} else if (!strcmp(a, "--full")) {
			h.full = true;
		} else if (!strcmp(a, "--include-kernel")) {
			h.include_kernel = true;
		} else if (!strcmp(a, "--stop-at-trigger")) {
			h.stop_at_trigger = true;
		} else if (!strcmp(a, "-p")) {
			if (i + 1 < argc && argv[i + 1][0] >= '0' &&
			    argv[i + 1][0] <= '9') {
				uint64_t pid;

				if (mt_parse_u64(argv[++i], 10, INT_MAX,
						 &pid) ||
				    !pid) {
					fprintf(stderr,
						"mt-capture: -p wants a "
						"process id, not '%s'\n",
						argv[i]);
					return 2;
				}
				cap.pid = (int)pid;
			} else if (isatty(0) && isatty(2)) {
				cap.pid = pick_process();
				if (cap.pid < 0)
					return 2;
				if (!cap.pid) {
					fputs("mt-capture: no process chosen\n",
					      stderr);
					return 2;
				}
			} else {
				fputs("mt-capture: -p needs a pid\n", stderr);
				return 2;
			}
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--start-at") ||
			    !strcmp(a, "--trigger") || !strcmp(a, "--truth") ||
			    !strcmp(a, "--drop-every") ||
			    !strcmp(a, "--gaps") || !strcmp(a, "--filter") ||
			    !strcmp(a, "--duration-thresh") ||
			    !strcmp(a, "--snapshot-size")) &&
			   i + 1 < argc) {
			const char *v = argv[++i];
			bool file = !strcmp(a, "-o") || !strcmp(a, "--truth") ||
				    !strcmp(a, "--gaps");

			/* "-o -- ./prog" would write a file named "--" and
			 * run ./prog as an option; a name that starts with
			 * '-' can be written ./-name. */
			if (v[0] == '-' || (file && !v[0])) {
				fprintf(stderr,
					"mt-capture: %s wants a %s, not '%s'\n",
					a, file ? "file name" : "value", v);
				return 2;
			}
			if (!strcmp(a, "-o"))
				cap.output = v;
			else if (!strcmp(a, "--start-at"))
				o.start_at = v;
			else if (!strcmp(a, "--trigger"))
				cap.trigger = v;
			else if (!strcmp(a, "--truth"))
				o.truth = v;
			else if (!strcmp(a, "--gaps"))
				o.gaps = v;
			else if (!strcmp(a, "--filter"))
				h.filter = v;
			else if (!strcmp(a, "--duration-thresh")) {
				char *end;
				double d = strtod(v, &end);

				if (!strcmp(end, "ms"))
					d *= 1e6;
				else if (!strcmp(end, "us"))
					d *= 1e3;
				else if (!strcmp(end, "s"))
					d *= 1e9;
				else if (*end)
					end = (char *)v;
				/* strtod also takes spaces, "inf" and "nan",
				 * which no uint64_t holds. */
				if (end == v || !(d >= 0 && d < 0x1p64) ||
				    !strchr("0123456789.", v[0])) {
					fprintf(stderr,
						"mt-capture: --duration-thresh "
						"wants 5ms, 200us or 1s, not "
						"'%s'\n",
						v);
					return 2;
				}
				cap.duration_thresh = (uint64_t)d;
			} else if (!strcmp(a, "--drop-every")) {
				if (mt_parse_u64(v, 0, UINT64_MAX,
						 &o.drop_every)) {
					fprintf(stderr,
						"mt-capture: --drop-every "
						"wants a number of branches, "
						"not '%s'\n",
						v);
					return 2;
				}
			} else if (parse_size(v, &cap.snapshot_size))
				return 2;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[0] == '-') {
			fprintf(stderr,
				"mt-capture: unknown option %s%s (see "
				"mt-capture --help)\n",
				a,
				i + 1 == argc ? " or its value missing" : "");
			return 2;
		} else {
			break;
		}
	}
	/* Valgrind starts the program it runs: attaching is ptrace's. */
	if (emulate == BE_EMULATE_ANY) {
		attach_picked = cap.pid != 0;
		emulate = cap.pid ? BE_PTRACE : BE_VALGRIND;
	}
	if (emulate != BE_HW && hw_opt) {
		fprintf(stderr,
			"mt-capture: %s is for the Intel PT backend, not "
			"--emulate\n",
			hw_opt);
		return 2;
	}
	if (emulate == BE_HW && emu_opt) {
		fprintf(stderr, "mt-capture: %s needs --emulate%s\n", emu_opt,
			!strcmp(emu_opt, "--noretcomp")
				? " (with Intel PT: --timing high, or "
				  "--timing-custom noretcomp=1)"
				: "");
		return 2;
	}
	if (custom && timing_given) {
		fputs("mt-capture: --timing and --timing-custom: one or the "
		      "other\n",
		      stderr);
		return 2;
	}
	/* The emulators keep the newest 4M a thread, as the hardware's
	 * ring does, so that memory stays bounded on a long run; --truth,
	 * a log of every call, asks for the whole trace beside it. */
	if (emulate != BE_HW && !h.full && !cap.snapshot_size && !o.truth)
		cap.snapshot_size = 4ull << 20;
	if (h.full && cap.multi_snapshot) {
		fputs("mt-capture: --full keeps everything already; "
		      "--multi-snapshot is for the ring\n",
		      stderr);
		return 2;
	}
	if (cap.trigger && pick_trigger_spec(cap.trigger) &&
	    choose_trigger(&cap, i < argc ? argv[i] : NULL, trigger,
			   sizeof(trigger)))
		return 2;
	o.cap = cap;
	/* From here on a stop signal ends the capture: caught before the
	 * program starts, it is said instead of a silent death. */
	if (catch_stop_signals(emulate == BE_HW))
		return 1;
	if ((!check || emulate != BE_HW) && i >= argc && !cap.pid) {
		fprintf(stderr,
			"mt-capture: no program to run (mt-capture%s -- PROG "
			"ARGS..., or -p PID)\n",
			emulate != BE_HW ? " --emulate" : "");
		return 2;
	}
	if (emulate == BE_HW) {
		/* The hardware path: the PMU as sysfs describes it.  For
		 * tests: MT_INTEL_PT_SYSFS points elsewhere,
		 * MT_PERF_EVENT_PARANOID replaces perf_event_paranoid,
		 * MT_PROC_ROOT replaces /proc where the kernel's code is
		 * read, and MT_TEST_SIDEBAND_ONLY maps no AUX area (a
		 * software event standing in for intel_pt has none). */
		const char *dir = getenv("MT_INTEL_PT_SYSFS");
		const char *par = getenv("MT_PERF_EVENT_PARANOID");
		struct pt_pmu pmu;
		uint64_t config;

		if (custom &&
		    pmu_parse_custom(custom, &req, err, sizeof(err))) {
			fprintf(stderr, "mt-capture: %s\n", err);
			return 2;
		}
		if (pmu_probe(dir ? dir : PT_SYSFS, &pmu, err, sizeof(err)) ||
		    pmu_config(&pmu, &req, &config, err, sizeof(err))) {
			fprintf(stderr, "mt-capture: %s\n", err);
			return 1;
		}
		if (check)
			return check_pmu(&pmu, config,
					 custom ? custom : timing_name);
		/* What was asked of the PMU is refused before where the
		 * capture goes; hw_run() checks this again for its other
		 * callers. */
		if (h.include_kernel &&
		    pmu_check_kernel(par ? par : h.paranoid,
				     pmu_effective_caps(), err, sizeof(err))) {
			fprintf(stderr, "mt-capture: %s\n", err);
			return 1;
		}
		if (preflight(i < argc ? argv[i] : NULL, cap.pid, &o))
			return 2;
		h.cap = cap;
		h.sysfs = dir ? dir : PT_SYSFS;
		h.req = req;
		if (par)
			h.paranoid = par;
		h.sideband_only = getenv("MT_TEST_SIDEBAND_ONLY") != NULL;
		h.proc_root = getenv("MT_PROC_ROOT");
		return run_hw(argv + i, &h, quiet);
	}
	if (preflight(i < argc ? argv[i] : NULL, cap.pid, &o))
		return 2;
	if (cap.pid && emulate == BE_PTRACE && !run_tracer_apart(&rc))
		return rc;
	if (!quiet)
		say_backend(emulate, attach_picked);
	if (emulate == BE_VALGRIND)
		rc = vg_run(argv + i, &o, &st, err, sizeof(err));
	else
		rc = emu_run(argv + i, &o, &st, err, sizeof(err));
	if (report_run(&cap, argv[i], rc, st.killed_by, err, st.warning))
		return 1;
	/* The Valgrind tool counts instructions for its end record, which a
	 * capture ended by the trigger never gets: no count, rather than 0. */
	insns[0] = 0;
	if (st.insns || !st.branches)
		snprintf(insns, sizeof(insns), "%llu instructions, ",
			 (unsigned long long)st.insns);
	if (!quiet)
		fprintf(stderr,
			"mt-capture: %s: %s%llu branches, %llu thread%s, %.1f "
			"KiB of trace in %.2fs\n",
			cap.output, insns, (unsigned long long)st.branches,
			(unsigned long long)st.threads,
			st.threads == 1 ? "" : "s", (double)st.aux_bytes / 1024,
			st.seconds);
	return 0;
}
