/*
 * Mutual recursion (even/odd) and a recursion 5000 frames deep.
 */
#include <stdio.h>

__attribute__((noinline)) static int is_odd(unsigned n);

__attribute__((noinline)) static int is_even(unsigned n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) static int is_odd(unsigned n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

__attribute__((noinline)) static unsigned long deep(unsigned n)
{
	volatile unsigned long pad = n;

	return n ? deep(n - 1) + pad : 0;
}

int main(void)
{
	printf("%d %lu\n", is_even(10), deep(5000));
	return 0;
}
