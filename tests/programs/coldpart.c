/*
 * Recursion through a function's cold part and through a tail call, as
 * -O2 compiles them: walk() recurses, and its unlikely branches call
 * rare() from walk.cold, which jumps back into walk() (the activation that
 * jumped there, not the one below that called it); pong() calls nothing
 * but jumps to ping()'s entry (a tail call), ping() being active below.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline, cold)) static void rare(int n)
{
	fprintf(stderr, "rare %d\n", n);
}

__attribute__((noinline)) static int walk(int n, int k)
{
	int s = 0;

	if (__builtin_expect(k == 7, 0))
		rare(n);
	if (n > 0)
		s = walk(n - 1, k + 1) + 1;
	if (__builtin_expect(k == 3, 0))
		rare(k);
	return s + k;
}

static int ping(int n);

__attribute__((noinline)) static int pong(int n)
{
	if (n <= 0)
		return 0;
	return ping(n - 1);
}

__attribute__((noinline)) static int ping(int n)
{
	volatile int x = n;

	return pong(x) + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;

	printf("%d %d\n", walk(n, 0), ping(n));
	return 0;
}
