/*
 * A thread that must run before the start: main waits for it to say it
 * runs, then calls start_here() (--start-at start_here) and leaves by
 * pthread_exit() while the thread goes on to call late() three times:
 * the first thread a zombie while another runs, as a Go runtime's
 * threads start before main.main and its first thread may end first.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int running, started;

__attribute__((noinline)) void late(int i)
{
	printf("late %d\n", i);
	fflush(stdout);
}

static void *run(void *arg)
{
	(void)arg;
	running = 1;
	while (!started)
		usleep(1000);
	usleep(20000);
	for (int i = 0; i < 3; i++)
		late(i);
	return NULL;
}

__attribute__((noinline)) void start_here(void)
{
	started = 1;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, run, NULL);
	while (!running)
		usleep(1000);
	start_here();
	pthread_exit(NULL);
}
