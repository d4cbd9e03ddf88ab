/*
 * The program `make demo` traces: a little of everything a call tree
 * shows.  A recursive Fibonacci, a sort with a comparison callback
 * (calls into libc and back), a hash over a buffer, and a write(2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_numbers(int *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_int);
}

__attribute__((noinline)) static unsigned hash(const unsigned char *p, size_t n)
{
	unsigned h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

__attribute__((noinline)) static void report(unsigned f, unsigned h, int lo,
					     int hi)
{
	char line[128];
	int len = snprintf(line, sizeof(line),
			   "fib=%u hash=%08x sorted %d..%d\n", f, h, lo, hi);

	if (write(1, line, (size_t)len) < 0)
		exit(1);
}

int main(void)
{
	int v[64];
	unsigned f, h;

	for (int i = 0; i < 64; i++)
		v[i] = (i * 7919) % 101;
	f = fib(12);
	sort_numbers(v, 64);
	h = hash((const unsigned char *)v, sizeof(v));
	report(f, h, v[0], v[63]);
	return 0;
}
