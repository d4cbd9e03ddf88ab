/* SPDX-License-Identifier: MIT */
/* Internal to synth/: one thread's walk and its truth. */
#ifndef MT_SYNTH_WALK_H
#define MT_SYNTH_WALK_H

#include "synth/synth_int.h"

enum {
	TRUTH_CLIP_START = 1 << 0, /* live before the window began */
	TRUTH_CLIP_END = 1 << 1,   /* still live when the window ended */
	TRUTH_TAIL = 1 << 2,	   /* entered by a jump, not a call */
	TRUTH_TAIL_OUT = 1 << 3,   /* left by a jump to another function */
	TRUTH_UNWOUND = 1 << 4,	   /* left by a longjmp-like jump */
	TRUTH_SYSCALL = 1 << 5,	   /* time in the kernel, untraced */
	TRUTH_UNTRACED = 1 << 6,   /* interrupted: off the CPU, or kernel */
};

#define TRUTH_SYSCALL_FUNC  UINT32_MAX
#define TRUTH_UNTRACED_FUNC (UINT32_MAX - 1)
/* Rows of the --kernel kernel's function i have func TRUTH_KERNEL_FUNC + i. */
#define TRUTH_KERNEL_FUNC 0x80000000u

struct truth_row {
	uint32_t func; /* TRUTH_SYSCALL_FUNC for [syscall] */
	uint32_t depth;
	uint64_t start, end; /* TSC */
	uint32_t flags;
};

struct walk_cfg {
	uint64_t seed;
	uint64_t branches;
	uint32_t root;
	unsigned start_depth;
	uint64_t gap_every;
	unsigned gap_at; /* SYNTH_GAP_* */
	uint64_t start_tsc;
	struct ptenc_cfg pt;
	const struct kprog *kernel; /* syscalls run through it, traced */
};

/*
 * One injected overflow.  The packets of branches first_branch..last_branch
 * (counted from 1, lost ones included) were lost.  after_tsc is the time of
 * the last instruction a packet still accounts for and stop_ip the IP after
 * it, where a decoder runs out of packets; nothing executed after it up to
 * and including end_tsc can be decoded (direct calls and jumps just before
 * the first lost branch included).  OVF and FUP(resume_ip) follow at
 * resume_tsc.
 */
struct walk_gap {
	uint64_t first_branch, last_branch;
	uint64_t after_tsc, end_tsc, resume_tsc;
	uint64_t stop_ip, resume_ip;
};

struct walk_thread {
	struct truth_row *rows;
	size_t nr_rows, cap_rows;
	struct walk_gap *gap_list;
	size_t nr_gaps, cap_gaps;
	uint8_t *aux;
	size_t aux_len;
	uint64_t *final_stack; /* leaf first */
	size_t nr_final_stack;
	uint64_t window_start, window_end;
	uint64_t branches, branches_left, calls, returns, syscalls, gaps;
	unsigned max_depth;
};

/* Append a truth row (end 0 until it ends) at *idx; 0 or -1. */
int walk_add_row(struct walk_thread *t, uint32_t func, uint32_t depth,
		 uint64_t start, unsigned flags, size_t *idx);

/* One thread walked alone, with its own packet stream. */
int walk_thread_run(const struct program *p, const struct walk_cfg *c,
		    struct walk_thread *t, char *err, size_t errlen);
void walk_thread_free(struct walk_thread *t);

/*
 * The same walk in steps, for threads that share a CPU's packet stream
 * (sched.c).  Functions returning int give 0, -1 when encoding failed or
 * -2 when out of memory (walk_fail_msg words it).
 */
struct walker;

/* The walk up to its window (start_depth frames deep), no packets yet;
 * NULL with a message in err. */
struct walker *walk_new(const struct program *p, const struct walk_cfg *c,
			struct walk_thread *t, char *err, size_t errlen);
void walk_free(struct walker *w);
/* How a thread's packets (re)start on a CPU's stream. */
enum walk_entry {
	WALK_PSB, /* the stream's first packets: PSB+ */
	WALK_PGE, /* back in user space: TIP.PGE */
	WALK_OVF, /* the switch was lost in an overflow: OVF, FUP */
};

/* The window opens at tsc (or later) on g. */
int walk_begin(struct walker *w, struct ptenc *g, uint64_t tsc,
	       enum walk_entry how);
/* Walk quantum more branches, or the rest: 1 when the thread has walked
 * all of its branches, 0 when the quantum is spent, or < 0. */
int walk_run(struct walker *w, uint64_t quantum);
bool walk_done(const struct walker *w);
uint64_t walk_tsc(const struct walker *w);
/* Preempted before the next instruction (FUP, TIP.PGD), and back on g at
 * tsc or later, at the same instruction: an [untraced] row between, one
 * that ends with the window when the thread is not coming back (last). */
int walk_switch_out(struct walker *w, bool last);
int walk_switch_in(struct walker *w, struct ptenc *g, uint64_t tsc,
		   enum walk_entry how);
/* Straight-line instructions up to a random point before a switch. */
void walk_creep(struct walker *w);
/*
 * A switch lost in an overflow: this thread's packets are lost from now
 * (a gap of its own, 1..48 branches), it leaves the CPU unseen, and the
 * next thread on the CPU comes back with WALK_OVF.
 */
int walk_gap_out(struct walker *w);
/* The window closes now: live frames end clipped, the final stack. */
int walk_end(struct walker *w);
/* A copy of g's packets as t's stream. */
int walk_take_aux(struct walk_thread *t, const struct ptenc *g);
void walk_fail_msg(int rc, uint64_t seed, char *err, size_t errlen);

/*
 * kwalk.c: the small kernel of --kernel, linked at 0xffffffff81000000
 * (DIR/vmlinux), and the walk of one system call through it.
 */
struct kprog;
int kprog_build(struct kprog **out, const char *dir, const char *cc, char *err,
		size_t errlen);
void kprog_free(struct kprog *k);
/* The name of a TRUTH_KERNEL_FUNC row's function. */
const char *kprog_func_name(uint32_t func);
/* What perf record --kcore keeps of it, as extension items; and the
 * MMAP of [kernel.kallsyms] perf writes for a kernel. */
int kprog_add_ext(const struct kprog *k, struct pd_ext_buf *ext);
int kprog_write_mmap(const struct kprog *k, struct pd_writer *w,
		     const struct pd_sample_id *sid);

struct kwalk {
	struct rng *rng;
	struct ptenc *g;
	struct walk_thread *t;
	uint64_t tsc; /* the SYSCALL's time; on return, SYSRET's */
	bool emit;    /* packets */
	bool rows;    /* truth rows */
};
/*
 * A SYSCALL whose caller is at depth - 1 runs through the kernel and
 * comes back to back_ip.  Returns 0, -1 when encoding failed, -2 when
 * out of memory.
 */
int kwalk_syscall(struct kwalk *kw, uint32_t depth, uint64_t back_ip);

#endif
