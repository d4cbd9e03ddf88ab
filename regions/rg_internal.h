/* SPDX-License-Identifier: MIT */
/*
 * What the ways of cutting a trace share: each finds the spans of time to
 * keep on each thread, and clip.c keeps them.
 */
#ifndef MT_RG_INTERNAL_H
#define MT_RG_INTERNAL_H

#include "regions/regions.h"

#include <stdbool.h>

struct rg_span {
	uint64_t lo, hi; /* perf time, lo <= hi */
};

/*
 * The spans to keep of each thread: spans[i] of nr[i] (sorted, disjoint)
 * for t->threads[i].  A slice that overlaps a span is kept, clipped to it
 * and flagged inferred where clipped; one that overlaps several (a caller
 * of every region) is kept once per span, so each region has its stack.
 * The trigger hits and the values the program wrote (ptwrites) inside a
 * span of their thread stay.  All or nothing: returns 0, or -ENOMEM with t
 * unchanged.  Counts the slices kept into st.
 */
int rg_keep_spans(struct mt_trace *t, struct rg_span *const *spans,
		  const size_t *nr, struct rg_stats *st);

/* Appends the slices of th that overlap sp to *out, clipped to it;
 * map: scratch of th->nr_slices.  Returns 0 or -ENOMEM. */
int rg_keep_span(const struct mt_thread *th, struct rg_span sp, uint32_t *map,
		 struct mt_slice **out, size_t *n, size_t *cap);

/* Clips a guess to [lo, hi): false when none of it is inside. */
bool rg_clip_guess(struct mt_guess *g, uint64_t lo, uint64_t hi);

/* The first and last instant of any slice, and how many slices. */
void rg_trace_span(const struct mt_trace *t, uint64_t *first, uint64_t *last,
		   uint64_t *nr);

#endif
