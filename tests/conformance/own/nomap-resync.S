# A jump into code that is not mapped, then a new PSB+ in f: decoding
# fails at the jump's target and must pick up again at that PSB, as perf
# does.  (libipt's own pt_blk_sync_forward() has already read past it when
# the error comes, so a decoder that resyncs with it loses the rest.)
	.intel_syntax noprefix
	.text
main:
	jmp	rax
f:
	call	g
	nop
	hlt
g:
	ret
