/* SPDX-License-Identifier: MIT */
/*
 * mt-bench: the measuring half of `make bench`.
 *
 *   mt-bench decode CAPTURE     libipt's block decoder alone over the
 *                               capture (the floor for our design)
 *   mt-bench run CMD ARGS...    run a command; report its wall time and
 *                               peak RSS
 *
 * Both print one line: "seconds=S rss_kb=K [blocks=N]".
 */
#include "decode/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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

static int bench_run(char **argv)
{
	struct rusage ru;
	double t0 = now();
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("mt-bench: fork");
		return 1;
	}
	if (!pid) {
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("mt-bench: wait");
		return 1;
	}
	/* cpu: user and system time of the command, to set against the
	 * wall clock (how many cores it kept busy). */
	printf("seconds=%.3f rss_kb=%ld cpu=%.3f\n", now() - t0, ru.ru_maxrss,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "decode"))
		return bench_decode(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return bench_run(argv + 2);
	fprintf(stderr,
		"usage: mt-bench decode CAPTURE | mt-bench run CMD...\n");
	return 2;
}
