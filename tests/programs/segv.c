/*
 * Makes a few calls, then dies of SIGSEGV: a program whose death by a
 * signal the tracer must report, with the trace up to it written.
 */
#include <stddef.h>

static volatile int depth;
/* Read at run time, so the compiler cannot see the null store (and turn
 * it into a trap instruction, which would be SIGILL). */
static int *volatile nowhere;

__attribute__((noinline)) static void crash(void)
{
	*nowhere = depth;
}

__attribute__((noinline)) static void descend(int n)
{
	depth++;
	if (n)
		descend(n - 1);
	else
		crash();
}

int main(void)
{
	descend(3);
	return 0;
}
