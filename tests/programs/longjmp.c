/*
 * setjmp/longjmp: a jump from three calls down back to the frame that set
 * it, several times.
 */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int hops;

__attribute__((noinline)) static void deepest(int i)
{
	if (i % 2)
		longjmp(env, i);
	hops++;
}

__attribute__((noinline)) static void middle(int i)
{
	deepest(i);
	hops++;
}

__attribute__((noinline)) static void outer(int i)
{
	middle(i);
	hops++;
}

int main(void)
{
	for (int i = 0; i < 6; i++)
		if (!setjmp(env))
			outer(i);
	printf("hops=%d\n", hops);
	return 0;
}
