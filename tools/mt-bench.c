/* SPDX-License-Identifier: MIT */
/*
 * mt-bench: the measuring half of `make bench`.
 *
 *   mt-bench decode CAPTURE     libipt's block decoder alone over the
 *                               capture (the floor for our design)
 *   mt-bench run CMD ARGS...    run a command; report its wall time and
 *                               peak RSS
 *   mt-bench run-own CMD ARGS...  the same, and the peak RSS of the
 *                               command's own process, its children's
 *                               apart (own_rss_kb=K): mt-capture's,
 *                               without Valgrind's; the command's
 *                               output goes to /dev/null
 *
 * They print one line: "seconds=S rss_kb=K [blocks=N|cpu=C]".
 */
#include "decode/decode.h"
#include "util/util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	return (double)mt_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static int bench_decode(const char *path)
{
	struct dec_capture *c;
	struct rusage ru;
	char err[512];
	double t0;
	int64_t blocks;

	if (dec_open(&c, path, NULL, err, sizeof(err))) {
		fprintf(stderr, "mt-bench: %s\n", err);
		return 1;
	}
	t0 = now();
	blocks = dec_bare_loop(c);
	t0 = now() - t0;
	dec_free(c);
	if (blocks < 0) {
		fprintf(stderr, "mt-bench: %s: decoding failed\n", path);
		return 1;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("seconds=%.3f rss_kb=%ld blocks=%lld\n", t0, ru.ru_maxrss,
	       (long long)blocks);
	return 0;
}

static int hwm_field(const char *key, const char *val, void *arg)
{
	if (strcmp(key, "VmHWM"))
		return 0;
	return sscanf(val, "%ld", (long *)arg) == 1;
}

/* The peak RSS of process pid, from /proc (kB), or -1. */
static long vm_hwm(pid_t pid)
{
	long kb = -1;

	if (mt_proc_status(pid, 0, hwm_field, &kb) != 1)
		return -1;
	return kb;
}

/*
 * Waits for pid; with own, pid is traced (PTRACE_TRACEME) and stopped
 * at its exit, while its memory is still there, for its own peak RSS:
 * the rusage of a child counts the children it waited for in ru_maxrss.
 * Every other stop passes its signal on.
 */
static int wait_own(pid_t pid, bool own, int *status, struct rusage *ru,
		    long *own_kb)
{
	for (;;) {
		int sig;

		if (wait4(pid, status, 0, ru) < 0)
			return -1;
		if (!WIFSTOPPED(*status))
			return 0;
		sig = WSTOPSIG(*status);
		if (!own)
			continue;
		if (sig == SIGTRAP && (*status >> 16) == PTRACE_EVENT_EXIT) {
			*own_kb = vm_hwm(pid);
			sig = 0;
		} else if (sig == SIGTRAP && *own_kb == -2) {
			/* The stop at exec: from here on, its exit. */
			ptrace(PTRACE_SETOPTIONS, pid, 0,
			       (void *)(long)(PTRACE_O_TRACEEXIT |
					      PTRACE_O_EXITKILL));
			*own_kb = -1;
			sig = 0;
		}
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
	}
}

static int bench_run(char **argv, bool own)
{
	struct rusage ru;
	double t0 = now();
	int status;
	long own_kb = -2;
	pid_t pid = fork();

	if (pid < 0) {
		perror("mt-bench: fork");
		return 1;
	}
	if (!pid) {
		if (own) {
			int null = open("/dev/null", O_WRONLY);

			if (null < 0 || dup2(null, 1) < 0 ||
			    ptrace(PTRACE_TRACEME, 0, 0, 0)) {
				perror("mt-bench");
				_exit(127);
			}
			close(null);
		}
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (wait_own(pid, own, &status, &ru, &own_kb) < 0) {
		perror("mt-bench: wait");
		return 1;
	}
	/* cpu: user and system time of the command, to set against the
	 * wall clock (how many cores it kept busy). */
	printf("seconds=%.3f rss_kb=%ld cpu=%.3f", now() - t0, ru.ru_maxrss,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	if (own)
		printf(" own_rss_kb=%ld", own_kb);
	/* Where the CPU went when it grows with threads: the kernel's part
	 * (page faults, memory maps, futexes) and the switches. */
	printf(" sys=%.3f minflt=%ld vcsw=%ld ivcsw=%ld\n",
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	       ru.ru_minflt, ru.ru_nvcsw, ru.ru_nivcsw);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "decode"))
		return bench_decode(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return bench_run(argv + 2, false);
	if (argc >= 3 && !strcmp(argv[1], "run-own"))
		return bench_run(argv + 2, true);
	fprintf(stderr,
		"usage: mt-bench decode CAPTURE | mt-bench run[-own] CMD...\n");
	return 2;
}
