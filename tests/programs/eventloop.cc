// The event loop of eventloop.c in C++: handle() holds an object whose
// destructor runs when an exception passes, so handle() has a landing
// pad that only an exception out of parse() or respond() leads to.
static volatile unsigned sink;

struct guard {
	unsigned v;
	~guard()
	{
		sink += v;
	}
};

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
	if (h == 12345)
		throw 1;
}

__attribute__((noinline)) static void handle(unsigned i)
{
	guard g{i};

	respond(parse(i));
}

int main()
{
	for (unsigned i = 0; i < 400; i++)
		handle(i);
	return 0;
}
