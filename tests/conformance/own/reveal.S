# Tracing begins inside f, which returns to main: the return reveals
# main as the caller of the first frame.
	.intel_syntax noprefix
	.text
main:
	call	f
	nop
	hlt
f:
	nop
	ret
