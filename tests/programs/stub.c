/*
 * Calls step() 50 times, takes a snapshot through the stub API in the
 * 20th, then goes on.  A capture triggered on the stub ends inside the
 * 20th step, with the stack at that point stored.
 */
#include "include/magic_trace.h"

#include <stdio.h>

static volatile unsigned counter;

__attribute__((noinline)) static void step(unsigned i)
{
	counter += i;
	if (i == 19)
		mt_take_snapshot_with_arg((long)i);
}

int main(void)
{
	for (unsigned i = 0; i < 50; i++)
		step(i);
	printf("counter=%u\n", counter);
	return 0;
}
