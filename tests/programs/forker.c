/*
 * The child of a fork reaches late() first; the parent waits for it and
 * calls late() itself only when the child ended normally, then exits 0
 * ("child ok").  A tracer that runs the parent to late() must not let its
 * breakpoint there, copied into the child by fork, kill the child.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static void late(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

int main(void)
{
	int status;
	pid_t child = fork();

	if (child < 0)
		return 1;
	if (child == 0) {
		late(3);
		_exit(0);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		puts("child died");
		return 3;
	}
	late(5);
	puts("child ok");
	return 0;
}
