/*
 * An event loop: main calls the handler again and again from one call
 * site, and the handler parses a request, then responds.  A gap that
 * begins in respond() and ends in the next request's parse() joins
 * main's frames, but not the two handlers.
 */
static volatile unsigned sink;

__attribute__((noinline)) static unsigned parse(unsigned i)
{
	unsigned h = i;

	for (unsigned k = 0; k < 4 + (i & 3); k++)
		h = h * 31 + k;
	return h;
}

__attribute__((noinline)) static void respond(unsigned h)
{
	for (unsigned k = 0; k < 4 + (h & 3); k++)
		sink += h >> k;
}

__attribute__((noinline)) static void handle(unsigned i)
{
	respond(parse(i));
}

int main(void)
{
	for (unsigned i = 0; i < 400; i++)
		handle(i);
	return 0;
}
