# An overflow while tracing is off: the trace says nothing of where the
# program was until a TIP.PGE names where tracing is on again.  A gap,
# then a new root there (not a root at IP 0 with the real function as
# its tail call).
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	test	eax, eax
	jz	done
	nop
done:
	hlt
g:
	nop
	nop
	hlt
