/*
 * mt_ptwrite(): each call of work() writes i * 1000 + 7 into the trace,
 * then the program takes a snapshot.  Every second call comes through
 * long_run(), whose call to mt_ptwrite() ends a long straight run of
 * code: the block libipt reports to the PTWRITE holds all of it.
 */
#include "include/magic_trace.h"

static volatile int sink[64];

static void __attribute__((noinline)) long_run(int i)
{
	/* Stores the compiler keeps: some 200 bytes of straight code. */
#define S4(k)                                                                  \
	sink[k] = i + k, sink[k + 1] = i + k + 1, sink[k + 2] = i + k + 2,     \
	sink[k + 3] = i + k + 3
	S4(0), S4(4), S4(8), S4(12), S4(16), S4(20), S4(24), S4(28);
	mt_ptwrite((unsigned long long)i * 1000 + 7);
}

static int __attribute__((noinline)) work(int i)
{
	if (i % 2)
		long_run(i);
	else
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
