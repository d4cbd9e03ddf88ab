/*
 * Calls work() with short sleeps for SECONDS seconds of wall-clock time,
 * then writes "done" to FILE (when given) and exits 0: a target that
 * shows, after the tracer is stopped, that it ran on and ended normally.
 * finish(), which writes FILE, is reached only at the end: a late start
 * for --start-at.
 *
 *   ticker SECONDS [FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long total;

__attribute__((noinline)) static void work(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		total += i;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static int finish(const char *path)
{
	FILE *f = fopen(path, "w");

	return !f || fputs("done\n", f) == EOF || fclose(f);
}

int main(int argc, char **argv)
{
	struct timespec ts = {0, 1000000};
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);

	while (now() < end) {
		work(50);
		nanosleep(&ts, NULL);
	}
	return argc > 2 ? finish(argv[2]) : 0;
}
