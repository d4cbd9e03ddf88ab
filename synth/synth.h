/* SPDX-License-Identifier: MIT */
/*
 * synth: captures with known truth.
 *
 * synth_generate() writes, into a directory, an x86-64 program built from
 * generated assembly (prog), a perf.data capture of Intel PT packets for a
 * seeded random walk through that program (raw.bin), and the exact call
 * tree of that walk (truth.tsv).  This header is the whole interface of
 * synth/.
 */
#ifndef MT_SYNTH_H
#define MT_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptenc/ptenc.h"

/* Gaps placed where they are hardest to stitch across (--gap-at). */
enum {
	SYNTH_GAP_SYSCALL = 1 << 0,   /* just after a syscall returns */
	SYNTH_GAP_LONGJMP = 1 << 1,   /* a non-local jump inside the gap */
	SYNTH_GAP_RETURNS = 1 << 2,   /* three or more returns inside it */
	SYNTH_GAP_RECURSION = 1 << 3, /* deep in deep_recurse (one site) */
	SYNTH_GAP_BACK2BACK = 1 << 4, /* a second gap one branch after */
};

struct synth_opts {
	uint64_t seed;
	uint64_t branches; /* per thread */
	unsigned threads;  /* 1.. */
	enum ptenc_timing timing;
	bool noretcomp;
	uint64_t gap_every;   /* 0: no injected overflows */
	unsigned gap_at;      /* SYNTH_GAP_*: targeted overflows */
	unsigned start_depth; /* frames live when the trace starts */
	bool final_stack;     /* store the true stack at the window end */
	unsigned psb_period;  /* PSB every 2^(n+11) bytes */
	unsigned mtc_period;  /* MTC every 2^n CTC ticks */
	bool deep;	      /* include >1000-deep recursion */
	bool per_cpu;	      /* one AUX stream per CPU (thread t on CPU t),
				 threads known from ITRACE_START */
	unsigned cpus;	      /* with per_cpu: the threads take turns on
				 this many CPUs, with switch records; 0:
				 one CPU each, no switches */
	bool task_switches;   /* with cpus: PERF_RECORD_SWITCH of our
				 threads only (as mt-capture --per-cpu
				 records), not SWITCH_CPU_WIDE */
	bool kernel;	      /* syscalls run through a traced kernel
				 (DIR/vmlinux) whose code the capture has */
	bool no_kernel_code;  /* with kernel: the capture has not */
	const char *outdir;
	const char *cc; /* compiler for the generated assembly */
};

void synth_opts_init(struct synth_opts *o);

struct synth_stats {
	uint64_t branches, packets_bytes, calls, returns, syscalls, gaps;
	uint64_t switches, lost_switches;
	unsigned max_depth;
	size_t truth_rows;
};

/* Returns 0, or -1 with a one-line message in err. */
int synth_generate(const struct synth_opts *o, struct synth_stats *st,
		   char *err, size_t errlen);

#endif
