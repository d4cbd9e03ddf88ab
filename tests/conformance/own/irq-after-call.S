# An interrupt on the first instruction of a function just called: the
# handler nests under the callee (not in its place), and its IRET comes
# back to where the callee was interrupted.
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	nop
	ret
handler:
	nop
	iretq
