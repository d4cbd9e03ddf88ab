/*
 * Runs until killed, calling work() in a loop with short sleeps: the
 * program the attach test traces for a moment and lets go.
 */
#include <time.h>

static volatile unsigned long total;

__attribute__((noinline)) static void work(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		total += i;
}

int main(void)
{
	struct timespec ts = {0, 1000000};

	for (;;) {
		work(50);
		nanosleep(&ts, NULL);
	}
}
