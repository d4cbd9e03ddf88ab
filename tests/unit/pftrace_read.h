/* SPDX-License-Identifier: MIT */
/*
 * A reader of our Perfetto traces for the writer's tests
 * (pftrace_read.c): it replays the packets the way Perfetto's importer
 * does (sequences, incremental state, interning, the incremental clock,
 * BEGIN/END nesting per track, compressed batches) and compares the
 * slices it rebuilds with the model they were written from.
 */
#ifndef MT_PFTRACE_READ_H
#define MT_PFTRACE_READ_H

#include "model/model.h"
#include "tests/unit/check.h"

#include <stddef.h>
#include <stdint.h>

struct rd_open {
	uint64_t ts;
	uint32_t name; /* in the reader's string table */
	uint32_t dso, source, site;
	uint64_t addr, ip;
	int64_t arg, tid;
	uint32_t flags;
};

struct rd_track {
	uint64_t uuid, parent;
	uint32_t name;
	int is_thread;
	uint32_t tid;
	struct rd_open *open;
	size_t nr_open, cap_open, max_open;
};

struct rd_seq {
	uint32_t id;
	int valid; /* incremental state cleared once */
	uint32_t def_clock;
	uint64_t def_track;
	uint64_t clock64; /* running value of the incremental clock */
	int clock64_incr;
	uint64_t last_ts;
	uint32_t *names, *annots, *strs; /* iid -> string id */
	size_t cap_names, cap_annots, cap_strs;
};

struct rd_slice {
	uint64_t track;
	uint64_t ts, dur;
	uint32_t depth;
	int instant;
	struct rd_open o;
};

struct rd {
	struct mt_strtab strs;
	struct rd_seq *seqs;
	size_t nr_seqs, cap_seqs;
	struct rd_track *tracks;
	size_t nr_tracks, cap_tracks;
	struct rd_slice *slices;
	size_t nr_slices, cap_slices;
	uint64_t packets, bundles, max_bundle;
	int errors;
	char first_error[256];
	/* SystemInfo.tracing_service_version: what made the trace. */
	char made_by[320];
};

/* Reads path into r; returns 0 when it read without errors. */
int rd_file(struct rd *r, const char *path);
void rd_free(struct rd *r);

/*
 * Reads path back and checks it against t: a clean replay, nesting within
 * max_depth on every track, and exactly the model's slices.
 */
void check_file(struct check_state *st, const struct mt_trace *t,
		const char *path, uint32_t max_depth, int compressed);

#endif
