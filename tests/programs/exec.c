/*
 * Execs itself: main -> run_exec -> execl, and the new program (argument
 * "child") runs child_work(), which calls child_leaf() three times.  The
 * new program has a stack of its own: nothing of it is under the old
 * program's frames.  Built static, the new program starts without the
 * dynamic loader, which the emulator would single-step through.
 */
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static int child_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int child_work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += child_leaf(i);
	return s;
}

__attribute__((noinline)) static void run_exec(const char *self)
{
	execl(self, self, "child", (char *)NULL);
	_exit(1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_work(3) != 12;
	run_exec("/proc/self/exe");
	return 1;
}
