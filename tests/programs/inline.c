/*
 * A hot function whose work the compiler inlines three levels deep
 * (built with -O2 -g): hot() inlines round_of(), which inlines step(),
 * which inlines mix(); mix() calls note(), which is not inlined.  The
 * inlined calls must appear nested where the source puts them.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) static void note(unsigned v)
{
	sink += v;
}

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	x ^= x >> 13;
	x *= 2654435761u;
	if ((x & 0xff) == 0x2a)
		note(x);
	return x ^ (x >> 7);
}

static inline __attribute__((always_inline)) unsigned step(unsigned x)
{
	unsigned a = mix(x);

	return a + (a >> 3);
}

static inline __attribute__((always_inline)) unsigned round_of(unsigned x)
{
	unsigned b = step(x + 1);

	return b ^ (b << 5);
}

__attribute__((noinline)) unsigned hot(unsigned x, int n)
{
	for (int i = 0; i < n; i++)
		x = round_of(x) + (unsigned)i;
	return x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;

	printf("%u\n", hot(1, n));
	return 0;
}
