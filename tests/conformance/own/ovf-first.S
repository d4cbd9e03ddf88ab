# An overflow before the first instruction decoded: trace was lost, and
# the gap shows it (before any segment as after one).
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	nop
	ret
