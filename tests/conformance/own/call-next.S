# A call to the next instruction only reads the IP (call/pop): no
# function is entered, and the real return that follows closes the
# right frame.
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	call	here
here:
	pop	rax
	ret
