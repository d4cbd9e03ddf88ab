/*
 * Two threads, each with a known call tree: worker(i) calls leaf() i + 3
 * times; main calls worker(0) itself too.  The emulation tests count the
 * calls.
 */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned sink;

__attribute__((noinline)) static void leaf(unsigned x)
{
	sink += x;
}

__attribute__((noinline)) static void worker(unsigned id)
{
	for (unsigned i = 0; i < id + 3; i++)
		leaf(i);
}

static void *thread_main(void *arg)
{
	worker((unsigned)(unsigned long)arg);
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, (void *)2ul))
		return 1;
	worker(0);
	pthread_join(t, NULL);
	printf("sink=%u\n", sink);
	return 0;
}
