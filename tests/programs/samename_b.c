/* The other inlined function named step (samename.c). */
void samename_note(unsigned v);

static inline __attribute__((always_inline)) unsigned step(unsigned x)
{
	samename_note(x + 7);
	return x * 5u + 2;
}

__attribute__((noinline)) unsigned via_b(unsigned x)
{
	return step(x) ^ 9u;
}
