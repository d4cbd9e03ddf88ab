# A system call traced into the kernel: SYSCALL is a far call, the
# kernel's entry calls a function of its own, SYSRET returns to the
# instruction after the SYSCALL.  Depths stay right: the entry nests
# under f, not in its place.
	.intel_syntax noprefix
	.text
main:
	call	f
	hlt
f:
	syscall
	ret
entry:
	call	kf
	sysretq
kf:
	ret
