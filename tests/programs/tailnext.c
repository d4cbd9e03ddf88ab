/*
 * A tail call into the function placed right after the caller in the
 * text: tail_from() ends with a direct jump to tail_to(), whose first
 * byte is the first byte past tail_from()'s end.  main() calls
 * tail_from() three times; each call shows as tail_from(), then
 * tail_to() in its place.
 */
int tail_from(int x);

__asm__(".text\n"
	".p2align 4\n"
	".globl tail_from\n"
	".type tail_from, @function\n"
	"tail_from:\n"
	"\taddl $1, %edi\n"
	"\tjmp tail_to\n"
	".size tail_from, .-tail_from\n"
	".globl tail_to\n"
	".type tail_to, @function\n"
	"tail_to:\n"
	"\tleal 2(%rdi), %eax\n"
	"\tret\n"
	".size tail_to, .-tail_to\n");

int main(void)
{
	int s = 0;

	for (int i = 0; i < 3; i++)
		s += tail_from(i);
	return s != 12;
}
