/* SPDX-License-Identifier: MIT */
/*
 * breakpoint: the trigger, a hardware breakpoint (or a uprobe) on
 * every thread of the target, whose hits the kernel samples.
 */
#ifndef MT_BREAKPOINT_INTERNAL_H
#define MT_BREAKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The user registers a hit samples, in DWARF's x86-64 numbering (rax,
 * rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip): what an unwinder
 * starts from. */
#define BP_NR_REGS 17

/* One hit, as the kernel sampled it. */
struct bp_hit {
	pid_t pid, tid;
	uint64_t time; /* perf time (ns) */
	uint64_t ip;
	uint64_t di, si; /* the stub's arguments: arg and mark_start_ns */
	uint64_t regs[BP_NR_REGS];
	uint8_t *stack; /* the top of the user stack from rsp, owned */
	size_t stack_len;
};

/* Free what a hit owns (its stack copy). */
void bp_hit_release(struct bp_hit *h);

struct bp_set;

enum bp_kind {
	BP_HARDWARE, /* a debug register: no cost until it fires */
	BP_UPROBE,   /* the kernel's int3 and single-step: works where the
			debug registers do not fire, costs a trap per hit */
};

/*
 * A trigger at runtime address addr of process pid: a hardware execute
 * breakpoint (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) or a uprobe, each
 * sampling IP, TID, TIME and the user registers DI and SI, on the
 * threads tids[0..n).  per_cpu: one event per CPU and thread, inherited
 * by the threads they create, sharing one ring per CPU; else (and for
 * uprobes, which cannot be inherited) one event per thread.  Returns 0,
 * or a negative code with one line in err.
 */
int bp_open(struct bp_set **out, enum bp_kind kind, pid_t pid, uint64_t addr,
	    const pid_t *tids, size_t n, bool per_cpu, char *err,
	    size_t errlen);
/* Does an execute breakpoint fire here?  Some virtual machines accept
 * the event and never fire it.  0, or -ENOTSUP (or the open's code)
 * with why in err. */
int bp_probe(char *err, size_t errlen);
/* Add a thread (once; again is a no-op).  Needed for every new thread
 * unless bp_inherits(). */
int bp_add_thread(struct bp_set *b, pid_t tid, char *err, size_t errlen);
/* Do new threads get the trigger by themselves?  Per CPU, except for
 * uprobes, which are always per thread (bp_open). */
bool bp_inherits(const struct bp_set *b);
/* The fds to poll for hits; *n of them. */
const int *bp_fds(const struct bp_set *b, size_t *n);
/* Move the hits sampled so far into hits[0..max); returns how many. */
size_t bp_read(struct bp_set *b, struct bp_hit *hits, size_t max);
void bp_free(struct bp_set *b);

#endif
