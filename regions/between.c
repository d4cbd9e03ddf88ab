/* SPDX-License-Identifier: MIT */
/*
 * --between START [--until STOP]: the regions of each thread from a call
 * to START until the next return from STOP (START's own return when no
 * STOP is given).  Slices are in pre-order with non-decreasing starts, so
 * one pass finds them: a START that begins inside a region already found
 * (a recursive call, or a second call before STOP returned) belongs to
 * it, and calls of no length at one instant make one region.
 */
#include "regions/rg_internal.h"

#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The string id of name, or MT_NONE when no slice can carry it. */
static uint32_t find_name(const struct mt_trace *t, const char *name)
{
	for (uint32_t id = 1; id < t->strs.nr; id++)
		if (!strcmp(mt_str(&t->strs, id), name))
			return id;
	return MT_NONE;
}

static int thread_regions(const struct mt_thread *th, const struct mt_frame *fr,
			  uint32_t start, uint32_t stop, struct rg_span **out,
			  size_t *nr)
{
	size_t cap = 0;
	uint64_t last = 0;
	bool open = false;
	struct rg_span cur = {0};

	*out = NULL;
	*nr = 0;
	for (size_t i = 0; i < th->nr_slices; i++) {
		const struct mt_slice *s = &th->slices[i];
		uint64_t end = s->ts + s->dur;

		if (end > last)
			last = end;
		if (!open && fr[s->frame].name == start) {
			const struct rg_span *p = *nr ? &(*out)[*nr - 1] : NULL;

			if (!p || s->ts > p->hi ||
			    (s->ts == p->hi && p->lo < p->hi)) {
				open = true;
				cur.lo = s->ts;
			} else if (s->ts == p->hi) {
				/* Calls at one instant are one region. */
				open = true;
				cur.lo = p->lo;
				(*nr)--;
			}
		}
		/* START's own slice is the first STOP after it when they
		 * are one function. */
		if (open && fr[s->frame].name == stop && s->ts >= cur.lo) {
			cur.hi = end;
			open = false;
			if (mt_grow((void **)out, &cap, *nr + 1, sizeof(**out)))
				return -ENOMEM;
			(*out)[(*nr)++] = cur;
		}
	}
	if (open) {
		cur.hi = last;
		if (mt_grow((void **)out, &cap, *nr + 1, sizeof(**out)))
			return -ENOMEM;
		(*out)[(*nr)++] = cur;
	}
	return 0;
}

int rg_keep_between(struct mt_trace *t, const char *start, const char *stop,
		    struct rg_stats *st, char *err, size_t errlen)
{
	uint32_t a = find_name(t, start), b = stop ? find_name(t, stop) : a;
	struct rg_span **spans = calloc(t->nr_threads + 1, sizeof(*spans));
	size_t *nr = calloc(t->nr_threads + 1, sizeof(*nr)), k;
	uint64_t first, last;
	int rc = -ENOMEM;

	memset(st, 0, sizeof(*st));
	rg_trace_span(t, &first, &last, &st->slices_before);
	st->first = first;
	if (!spans || !nr)
		goto out;
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		for (k = 0; k < th->nr_slices; k++) {
			uint32_t name = mt_slice_name(t, &th->slices[k]);

			st->start_calls += name == a && a != MT_NONE;
			st->stop_calls += name == b && b != MT_NONE;
		}
	}
	for (size_t i = 0; i < t->nr_threads; i++) {
		if (!st->start_calls || !st->stop_calls)
			continue;
		if (thread_regions(&t->threads[i], t->frames, a, b, &spans[i],
				   &nr[i]))
			goto out;
		st->regions += nr[i];
		for (k = 0; k < nr[i]; k++)
			st->kept_ns += spans[i][k].hi - spans[i][k].lo;
	}
	rc = rg_keep_spans(t, spans, nr, st);
out:
	if (spans)
		for (size_t i = 0; i < t->nr_threads; i++)
			free(spans[i]);
	free(spans);
	free(nr);
	return rc ? mt_err(err, errlen, rc,
			   "out of memory keeping the calls of %s", start)
		  : 0;
}
