/* SPDX-License-Identifier: MIT */
/*
 * Internal state of decode/: what the capture's sideband says of its
 * threads, AUX chunks and context switches, and the program's code
 * (image/) built from the rest of it.
 */
#ifndef MT_DEC_INTERNAL_H
#define MT_DEC_INTERNAL_H

#include <intel-pt.h>
#include <pthread.h>

#include "decode/decode.h"
#include "image/image.h"
#include "model/model.h"
#include "perfdata/perfdata.h"
#include "symbols/symbols.h"

/* Snapshot trigger hits recorded in the capture. */
struct dec_hit {
	uint32_t pid, tid;
	uint64_t time, ip, mark_start;
	int64_t arg;
	const char *name;
};

struct dec_chunk { /* one AUXTRACE record */
	uint32_t idx, tid, cpu;
	uint64_t offset, size, reference;
	const uint8_t *data;
	uint64_t order; /* position in the file */
};

struct dec_switch { /* who runs on a CPU from a time on */
	uint32_t cpu;
	uint64_t time;
	uint32_t pid, tid; /* out: the thread that left; else the one in */
	bool out;	   /* from then on, no thread of ours */
};

struct dec_capture {
	struct pd_file *pd;
	char *path;
	struct dec_opts opts;

	struct pd_pt_info pt;
	bool have_pt;
	uint64_t pt_config; /* the intel_pt event's attr.config */
	struct pt_cpu cpu;
	uint8_t mtc_freq;

	struct img *img; /* the program's code, owned */
	struct dec_thread *threads;
	size_t nr_threads, cap_threads;
	char **comms; /* per thread, owned */
	struct dec_chunk *chunks;
	size_t nr_chunks, cap_chunks;
	struct dec_switch *switches;
	size_t nr_switches, cap_switches;
	struct dec_hit *hits; /* names point into the capture */
	size_t nr_hits, cap_hits;

	dec_sink_fn sink;
	dec_sink_run_fn sink_run; /* NULL: sink, one event a call */
	void *sink_ctx;

	struct pt_image_section_cache *iscache; /* img's */
	uint64_t base;	      /* perf time that event times count from */
	uint64_t first, last; /* span of decoded events */
	struct dec_stats stats;
};

/* session.c */
struct dec_thread *dec_thread_get(struct dec_capture *c, uint32_t pid,
				  uint32_t tid);
int dec_thread_push(struct dec_thread *t, uint64_t base, uint64_t time,
		    enum dec_kind kind, uint64_t ip, uint64_t aux);

#endif
