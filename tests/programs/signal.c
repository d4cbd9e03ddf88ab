/*
 * A signal handler runs in the middle of a loop (raise), calls a function
 * of its own, and returns through the kernel's trampoline.
 */
#include <signal.h>
#include <stdio.h>

static volatile int caught;

__attribute__((noinline)) static void note(int s)
{
	caught += s;
}

static void handler(int s)
{
	note(s);
}

__attribute__((noinline)) static void work(int i)
{
	if (i == 3)
		raise(SIGUSR1);
	caught++;
}

int main(void)
{
	signal(SIGUSR1, handler);
	for (int i = 0; i < 6; i++)
		work(i);
	printf("caught=%d\n", caught);
	return 0;
}
