# A jump into code no mapping covers as the last thing in the trace: the
# error is reported (a gap), not dropped because nothing follows.
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	jmp	rax
