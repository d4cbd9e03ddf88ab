# Tracing stops on a return, the TIP.PGD saying nothing of its target
# (it left the traced range): the return still closes the callee, so
# what follows does not nest under it.
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	nop
	ret
