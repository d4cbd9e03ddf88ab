/*
 * The program `make demo` traces: a little server loop.  Each request is
 * parsed, looked up (a recursive Fibonacci stands in for the work), its
 * numbers sorted with a libc callback, and answered with write(2).
 * Request 7 is the slow one: it asks for much more work, and the program
 * asks for a snapshot through the stub API when it is done, the way you
 * would catch a tail-latency spike.
 */
#include "include/magic_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct request {
	int id;
	unsigned work;
	int numbers[32];
};

__attribute__((noinline)) static unsigned fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static void parse(struct request *r, int id)
{
	r->id = id;
	r->work = id == 7 ? 12 : 5; /* the slow one */
	for (int i = 0; i < 32; i++)
		r->numbers[i] = (id * 31 + i * 7919) % 101;
}

__attribute__((noinline)) static unsigned lookup(const struct request *r)
{
	return fib(r->work);
}

__attribute__((noinline)) static void sort_numbers(struct request *r)
{
	qsort(r->numbers, 32, sizeof(int), cmp_int);
}

__attribute__((noinline)) static void respond(const struct request *r,
					      unsigned v)
{
	char line[96];
	int len = snprintf(line, sizeof(line), "request %d: %u (%d..%d)\n",
			   r->id, v, r->numbers[0], r->numbers[31]);

	if (write(1, line, (size_t)len) < 0)
		exit(1);
}

__attribute__((noinline)) static void handle_request(int id)
{
	struct request r;
	unsigned v;

	parse(&r, id);
	v = lookup(&r);
	sort_numbers(&r);
	respond(&r, v);
}

int main(void)
{
	for (int id = 0; id < 10; id++) {
		mt_mark_start();
		handle_request(id);
		if (id == 7) /* slow: look at what it did */
			mt_take_snapshot_with_arg(id);
	}
	return 0;
}
