# Nested calls with compressed returns: main calls f, which calls g;
# both return; main calls g again and stops at done.
	.intel_syntax noprefix
	.text
main:
	call	f
	nop
	call	g
done:
	hlt
f:
	call	g
	ret
g:
	ret
