/*
 * mt_ptwrite(): each call of work() writes i * 1000 + 7 into the trace,
 * then the program takes a snapshot.
 */
#include "include/magic_trace.h"

static int __attribute__((noinline)) work(int i)
{
	mt_ptwrite((unsigned long long)i * 1000 + 7);
	return i * 3;
}

int main(void)
{
	int s = 0;

	for (int i = 0; i < 20; i++)
		s += work(i);
	mt_take_snapshot();
	return s == 570 ? 0 : 1;
}
