/*
 * Threads that come and go: four at a time, each ending as soon as it
 * has started, replaced as they end, for SECONDS seconds of wall-clock
 * time; then "done" to FILE (when given) and exit 0.  A tracer attaching
 * to it finds threads ending, and new ones appearing, while it attaches.
 *
 *   churn SECONDS [FILE]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long total;

static void *brief(void *arg)
{
	total += (unsigned long)arg;
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);
	pthread_t t[4];
	FILE *f;

	while (now() < end) {
		for (unsigned long i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, brief, (void *)i))
				return 1;
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	if (argc > 2) {
		f = fopen(argv[2], "w");
		if (!f || fputs("done\n", f) == EOF || fclose(f))
			return 1;
	}
	return 0;
}
