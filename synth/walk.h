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
};

#define TRUTH_SYSCALL_FUNC UINT32_MAX
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

int walk_thread_run(const struct program *p, const struct walk_cfg *c,
		    struct walk_thread *t, char *err, size_t errlen);
void walk_thread_free(struct walk_thread *t);

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
