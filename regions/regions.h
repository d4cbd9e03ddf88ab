/* SPDX-License-Identifier: MIT */
/*
 * regions: cut a finished trace down to the part a user asked for, after
 * stitching and before the writers.  The trace keeps its shape: what is
 * kept of a slice that runs past the cut is clipped to it and flagged
 * inferred at that end, as a slice the trace saw only part of.
 */
#ifndef MT_REGIONS_H
#define MT_REGIONS_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

/* A window of time, in ns from the trace's first slice; either end may
 * be open. */
struct rg_window {
	uint64_t from, to; /* to: UINT64_MAX when open */
};

/*
 * "FROM..TO", each a number of ns or a number with a unit (ns, us, ms,
 * s; decimals allowed with a unit, as 1.5ms), either side empty for
 * open.  Returns 0, or -EINVAL with one line in err.
 */
int rg_parse_window(const char *s, struct rg_window *w, char *err,
		    size_t errlen);

struct rg_stats {
	uint64_t slices_before, slices_after;
	uint64_t regions;    /* spans kept, over all threads */
	uint64_t kept_ns;    /* their total length */
	uint64_t first;	     /* the trace's first slice, perf time */
	uint64_t start, end; /* the window in perf time, clipped to the trace */
	/* rg_keep_between(): the calls of START and of STOP in the trace
	 * before the cut; where either has none, nothing is kept */
	uint64_t start_calls, stop_calls;
};

/*
 * Keeps only what happened in w: slices that overlap it (clipped to it),
 * and the trigger hits inside it.  Returns 0, or -ENOMEM with one line
 * in err (t is then unchanged).
 */
int rg_keep_time(struct mt_trace *t, const struct rg_window *w,
		 struct rg_stats *st, char *err, size_t errlen);

/*
 * Keeps only what ran, on each thread, from a call to the function named
 * start until the next return from the function named stop (start again
 * when stop is NULL: each outermost call of start), as magic-trace's
 * -filter does.  The stack at each region's entry is kept, clipped and
 * flagged inferred; a region whose stop never returns runs to the
 * thread's last slice.  Hits inside a region stay.  A trace without a
 * call of start, or of stop, keeps nothing (st says which).  Returns 0, or
 * -ENOMEM with one line in err (t is then unchanged).
 */
int rg_keep_between(struct mt_trace *t, const char *start, const char *stop,
		    struct rg_stats *st, char *err, size_t errlen);

/*
 * Cutting a trace into parts of at most max slices each, for viewers
 * that cannot load it whole.  Each part is a window of time cut where a
 * slice starts, and holds what overlaps it as --time would keep it: the
 * slices open at its start (the stack there, on every thread) clipped
 * and flagged inferred, so that each part opens on its own.  The cuts
 * are perf times: the parts are [cuts[k], cuts[k + 1]), nr + 1 cuts for
 * nr parts (the last one past the trace's end).  Returns 0, or with one
 * line in err -ENOMEM, or -ERANGE when the stack at a cut alone leaves no
 * room for max slices, or a single instant holds more than max starts.
 */
int rg_split_plan(const struct mt_trace *t, uint64_t max, uint64_t **cuts,
		  size_t *nr, char *err, size_t errlen);

/*
 * The part [lo, hi) of t as a trace of its own, for a writer: view is
 * a shallow copy of t whose threads (their slices), hits, ptwrites and
 * guesses are new, and everything else t's (strings, frames,
 * processes, segments).  Free it with rg_part_free only, before t.
 * Returns 0, or -ENOMEM with one line in err (view then needs no free).
 */
int rg_part(const struct mt_trace *t, uint64_t lo, uint64_t hi,
	    struct mt_trace *view, char *err, size_t errlen);
void rg_part_free(struct mt_trace *view);

#endif
