/* SPDX-License-Identifier: MIT */
/*
 * Internal to synth/: threads taking turns on fewer CPUs, as a
 * `perf record -e intel_pt//u` without --per-thread sees them: one packet
 * stream per CPU, the threads' stretches in it between TIP.PGE and an
 * interrupt's FUP, TIP.PGD, and the kernel's switch records.
 */
#ifndef MT_SYNTH_SCHED_H
#define MT_SYNTH_SCHED_H

#include "synth/walk.h"

#define SCHED_IDLE UINT32_MAX /* the idle task (pid 0) */

/* One PERF_RECORD_SWITCH_CPU_WIDE. */
struct sched_switch {
	uint32_t cpu;
	uint64_t tsc;
	bool out;
	uint32_t thread; /* the thread switched out or in, or SCHED_IDLE */
	uint32_t other;	 /* the next (out) or previous (in) one */
};

struct sched_cpu {
	uint8_t *aux;
	size_t aux_len;
	uint32_t first;	    /* the thread the stream starts with */
	uint64_t start_tsc; /* when it does (ITRACE_START) */
};

struct sched_result {
	struct sched_cpu *cpus;
	unsigned nr_cpus;
	struct sched_switch *sw; /* in time order per CPU */
	size_t nr_sw, cap_sw;
	uint64_t switches, lost_switches;
};

/* Walks nth threads (cfgs[t] into th[t]) on ncpu CPUs.  Returns 0, or -1
 * with a message in err. */
int sched_run(const struct program *p, const struct walk_cfg *cfgs,
	      struct walk_thread *th, unsigned nth, unsigned ncpu,
	      uint64_t seed, struct sched_result *r, char *err, size_t errlen);
void sched_free(struct sched_result *r);

#endif
