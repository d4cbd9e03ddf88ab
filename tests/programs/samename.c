/*
 * Two inlined functions of one name, declared in two files
 * (samename_a.c, samename_b.c), called in turns: their inlined calls
 * share a frame, whose source must be the same at every -j.
 */
#include <stdio.h>

unsigned via_a(unsigned x);
unsigned via_b(unsigned x);

int main(void)
{
	unsigned x = 1;

	for (int i = 0; i < 400; i++)
		x = via_a(x);
	for (int i = 0; i < 800; i++)
		x = via_b(x);
	for (int i = 0; i < 400; i++)
		x = via_a(x);
	printf("%u\n", x);
	return 0;
}
