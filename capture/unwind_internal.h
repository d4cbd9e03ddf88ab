/* SPDX-License-Identifier: MIT */
/*
 * unwind: a thread's call stack from the modules' CFI (libdw), from a
 * stopped thread or from a sample's registers and stack copy.
 */
#ifndef MT_UNWIND_INTERNAL_H
#define MT_UNWIND_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The call stack of thread tid of process pid, which the caller holds
 * stopped under ptrace, unwound with the modules' CFI (libdw): leaf first,
 * the IP then return addresses, at most max of them in ips, the count in
 * *n.  Returns 0, or a negative code with one line in err (nothing usable
 * in ips then).
 */
int unwind_thread(pid_t pid, pid_t tid, uint64_t *ips, size_t max, size_t *n,
		  char *err, size_t errlen);
/*
 * The same from a sample instead of a stopped thread: the registers
 * (BP_NR_REGS, DWARF numbering) and a copy of the stack from rsp on, of
 * thread tid of process pid, whose modules maps names (the text of
 * /proc/PID/maps, or lines like it): the process may be gone by now.
 */
int unwind_sample(pid_t pid, pid_t tid, const char *maps, const uint64_t *regs,
		  const uint8_t *stack, size_t stack_len, uint64_t *ips,
		  size_t max, size_t *n, char *err, size_t errlen);

#endif
