/* One of two inlined functions named step (samename.c). */
volatile unsigned samename_sink;

__attribute__((noinline)) void samename_note(unsigned v)
{
	samename_sink += v;
}

static inline __attribute__((always_inline)) unsigned step(unsigned x)
{
	samename_note(x);
	return x * 3u + 1;
}

__attribute__((noinline)) unsigned via_a(unsigned x)
{
	return step(x) ^ 5u;
}
