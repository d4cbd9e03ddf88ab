/*
 * Three threads created a while after the start, each living 200 ms
 * before it asks for a snapshot through the stub API with 100 + its
 * number: a tracer that finds new threads late must still see their
 * hits, with their own thread ids.
 */
#include "include/magic_trace.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static void *thread_main(void *arg)
{
	struct timespec ts = {0, 200000000L};

	nanosleep(&ts, NULL);
	mt_take_snapshot_with_arg(100 + (long)arg);
	return NULL;
}

int main(void)
{
	struct timespec ts = {0, 50000000L};
	pthread_t t[3];

	nanosleep(&ts, NULL);
	for (long i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i))
			return 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	mt_take_snapshot_with_arg(1);
	puts("spawned 3");
	return 0;
}
