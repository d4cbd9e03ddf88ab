/*
 * Works a little, then spins for ever in a loop that has no branch to
 * record (jmp .): the end of its trace is a call that no packet after it
 * shows, interrupted where it landed.  With an argument, the last work
 * returns straight into the loop instead: a return that no packet after
 * it shows.
 */
static volatile int sink;

__attribute__((noinline)) static void work(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) static void spin(void)
{
	for (;;)
		;
}

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; i < 20; i++)
		work(100);
	if (argc > 1) {
		work(100);
		for (;;)
			;
	}
	spin();
}
