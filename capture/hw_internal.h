/* SPDX-License-Identifier: MIT */
/*
 * Internal to the hardware backend: its state, shared by the recording
 * (hwpt.c) and the writing of the capture (hw_capture.c).
 */
#ifndef MT_HW_INTERNAL_H
#define MT_HW_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "capture/breakpoint_internal.h"
#include "capture/capture.h"
#include "capture/pmu_internal.h"
#include "capture/sideband_internal.h"
#include "perfdata/perfdata.h"
#include "util/err.h"

#define DATA_PAGES SB_DATA_PAGES

/* One data ring with its AUX area: a thread's, or a CPU's. */
struct ring {
	int fd; /* the event that owns the mapping */
	pid_t tid;
	int cpu; /* -1 per thread */
	struct perf_event_mmap_page *page;
	size_t page_len;
	uint8_t *aux;
	size_t aux_len;
	uint64_t taken; /* AUX position already copied */
};

/* A piece of trace waiting in the spool file. */
struct chunk {
	long at;
	struct pd_auxtrace a;
};

struct hw {
	const struct hw_opts *o;
	struct hw_stats *st;
	uint64_t aux_size; /* per ring */
	struct pt_pmu pmu;
	struct perf_event_attr attr;
	pid_t pid;
	bool launched;
	bool recording;	  /* past the setup */
	bool scan_enable; /* scan_threads(): new events on at once */
	int ncpu;
	char exe[4096];
	struct ring *rings;
	size_t nr_rings, cap_rings;
	int *fds; /* every intel_pt event, owned */
	size_t nr_fds, cap_fds;
	uint64_t *ids;
	size_t nr_ids, cap_ids;
	pid_t *tids; /* the threads that have events */
	size_t nr_tids, cap_tids;
	char filter[2048]; /* the kernel's filter string, "" if none */
	uint64_t trigger;
	struct bp_set *bp;
	struct pd_ext_hit *hits;
	size_t nr_hits, cap_hits;
	bool mark_warned;
	/* The stack at the last hit, unwound from its sample (leaf first):
	 * it anchors the converted trace's roots. */
	char *maps0; /* /proc/PID/maps when the trigger was set */
	uint64_t *final_ips;
	size_t nr_final;
	pid_t final_tid;
	uint64_t final_time;
	uint8_t *sb; /* sideband records, as the kernel wrote them */
	size_t sb_len, sb_cap;
	FILE *spool;
	struct chunk *chunks;
	size_t nr_chunks, cap_chunks;
	uint8_t *copy; /* one AUX ring's worth */
	uint8_t *vdso;
	uint64_t vdso_start, vdso_len;
	char *err; /* mt_fail()'s */
	size_t errlen;
};

/* hw_capture.c */
/* The AUXTRACE_INFO for the PMU and the events as opened. */
void hw_pt_info(const struct hw *h, struct pd_pt_info *pt);
/* The capture; 0, or a negative code with why in h->err. */
int hw_write_capture(struct hw *h);

#endif
