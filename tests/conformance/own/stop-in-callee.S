# An interrupt (kernel not traced) on the first instruction of a function
# called through a register: the callee was entered, though none of its
# instructions is traced.  The call shows, the stop is under it.
	.intel_syntax noprefix
	.text
main:
	call	rax
	hlt
f:
	nop
	ret
