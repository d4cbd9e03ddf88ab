/*
 * Five clock_gettime() calls: they run in the vDSO, whose bytes only the
 * capture holds.
 */
#include <stdio.h>
#include <time.h>
__attribute__((noinline)) static long long now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_nsec;
}
int main(void)
{
	long long s = 0;
	for (int i = 0; i < 5; i++)
		s += now();
	printf("%lld\n", s & 1);
	return 0;
}
