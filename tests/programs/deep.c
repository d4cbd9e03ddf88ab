/*
 * A call chain main -> outer -> middle -> inner -> work, then work calls
 * step() three times, each calling mark().  Traced from work (--start-at
 * work) and triggered on a line of mark(), the capture's trace never sees
 * outer, middle or inner called: only the stack unwound at the trigger
 * knows them.  Each caller does something after its call, so none of the
 * calls is a tail call.
 */
#include <stdio.h>

volatile unsigned sink;

__attribute__((noinline)) void mark(unsigned i)
{
	sink += i; /* the trigger line: the third call stops here */
	if (i == 2)
		sink += 100; /* MARK_LINE */
}

__attribute__((noinline)) void step(unsigned i)
{
	mark(i);
	sink++;
}

__attribute__((noinline)) void work(void)
{
	for (unsigned i = 0; i < 3; i++)
		step(i);
	sink++;
}

__attribute__((noinline)) void inner(void)
{
	work();
	sink++;
}

__attribute__((noinline)) void middle(void)
{
	inner();
	sink++;
}

__attribute__((noinline)) void outer(void)
{
	middle();
	sink++;
}

int main(void)
{
	outer();
	printf("sink=%u\n", sink);
	return 0;
}
