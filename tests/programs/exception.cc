// A C++ exception thrown three calls down and caught above them.
#include <cstdio>
#include <stdexcept>

__attribute__((noinline)) static void thrower(int i)
{
	if (i == 2)
		throw std::runtime_error("two");
}

__attribute__((noinline)) static void between(int i)
{
	thrower(i);
}

int main()
{
	int caught = 0;

	for (int i = 0; i < 4; i++) {
		try {
			between(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("caught=%d\n", caught);
	return 0;
}
