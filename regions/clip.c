/* SPDX-License-Identifier: MIT */
/*
 * Keeping spans of a thread's slices.  Slices are in pre-order and a
 * slice lies inside its parent, so within a span the slices that overlap
 * it come in pre-order too, each after its parent: one pass per span
 * copies them into a new array, mapping each parent to its copy.
 */
#include "regions/rg_internal.h"

#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The first and last instant of any slice. */
void rg_trace_span(const struct mt_trace *t, uint64_t *first, uint64_t *last,
		   uint64_t *nr)
{
	*first = UINT64_MAX;
	*last = 0;
	*nr = 0;
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		*nr += th->nr_slices;
		for (size_t k = 0; k < th->nr_slices; k++) {
			const struct mt_slice *s = &th->slices[k];

			if (s->ts < *first)
				*first = s->ts;
			if (s->ts + s->dur > *last)
				*last = s->ts + s->dur;
		}
	}
}

/*
 * Touching a span at one instant only is no overlap, and a slice of no
 * length counts inside [lo, hi); but a span of no length (calls that took
 * no measurable time) holds what runs at its instant.
 */
static bool overlaps(uint64_t ts, uint64_t end, struct rg_span sp)
{
	if (sp.lo == sp.hi)
		return ts <= sp.lo && end >= sp.lo;
	if (ts == end)
		return ts >= sp.lo && ts < sp.hi;
	return end > sp.lo && ts < sp.hi;
}

int rg_keep_span(const struct mt_thread *th, struct rg_span sp, uint32_t *map,
		 struct mt_slice **out, size_t *n, size_t *cap)
{
	size_t first = *n;

	for (size_t i = 0; i < th->nr_slices; i++) {
		struct mt_slice s = th->slices[i];
		uint64_t end = s.ts + s.dur;

		map[i] = MT_NONE;
		if (!overlaps(s.ts, end, sp))
			continue;
		/* Its parent overlaps more than it does; should a model
		 * say otherwise, the slice goes with its parent. */
		if (s.parent != MT_NONE) {
			if (s.parent >= i || map[s.parent] == MT_NONE)
				continue;
			s.parent = map[s.parent];
		}
		if (s.ts < sp.lo) {
			s.dur -= sp.lo - s.ts;
			s.ts = sp.lo;
			s.flags |= MT_SLICE_INFERRED_START;
		}
		if (end > sp.hi) {
			s.dur = sp.hi - s.ts;
			s.flags |= MT_SLICE_INFERRED_END;
		}
		if (*n - first >= UINT32_MAX - 1 ||
		    mt_grow((void **)out, cap, *n + 1, sizeof(**out)))
			return -ENOMEM;
		map[i] = (uint32_t)(*n - first);
		(*out)[(*n)++] = s;
	}
	/* Parents were numbered within the span: make them indices of the
	 * thread's new array. */
	for (size_t k = first; k < *n; k++)
		if ((*out)[k].parent != MT_NONE)
			(*out)[k].parent += (uint32_t)first;
	return 0;
}

/* Is ts inside a span of thread tid? */
static bool in_spans(const struct mt_trace *t, struct rg_span *const *spans,
		     const size_t *nr, uint32_t tid, uint64_t ts)
{
	for (size_t i = 0; i < t->nr_threads; i++) {
		if (t->threads[i].tid != tid)
			continue;
		for (size_t j = 0; j < nr[i]; j++)
			if (ts >= spans[i][j].lo && ts <= spans[i][j].hi)
				return true;
	}
	return false;
}

/* The trigger hits and the values written inside a span of their
 * thread. */
static void keep_marks(struct mt_trace *t, struct rg_span *const *spans,
		       const size_t *nr)
{
	size_t k = 0;

	for (size_t p = 0; p < t->nr_ptwrites; p++)
		if (in_spans(t, spans, nr, t->ptwrites[p].tid,
			     t->ptwrites[p].ts))
			t->ptwrites[k++] = t->ptwrites[p];
	t->nr_ptwrites = k;
	k = 0;
	for (size_t h = 0; h < t->nr_hits; h++)
		if (in_spans(t, spans, nr, t->hits[h].tid, t->hits[h].ts))
			t->hits[k++] = t->hits[h];
	t->nr_hits = k;
}

/* The guessed spans, cut to the kept spans of their thread (into as many
 * pieces as they overlap). */
static int keep_guesses(struct mt_trace *t, struct rg_span *const *spans,
			const size_t *nr)
{
	struct mt_guess *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t g = 0; g < t->nr_guesses; g++) {
		const struct mt_guess *x = &t->guesses[g];

		for (size_t i = 0; i < t->nr_threads; i++) {
			if (t->threads[i].tid != x->tid)
				continue;
			for (size_t j = 0; j < nr[i]; j++) {
				uint64_t lo = spans[i][j].lo,
					 hi = spans[i][j].hi;
				struct mt_guess y = *x;

				if (!rg_clip_guess(&y, lo, hi))
					continue;
				if (mt_grow((void **)&v, &cap, n + 1,
					    sizeof(*v))) {
					free(v);
					return -ENOMEM;
				}
				v[n++] = y;
			}
		}
	}
	free(t->guesses);
	t->guesses = v;
	t->nr_guesses = n;
	t->cap_guesses = cap;
	return 0;
}

bool rg_clip_guess(struct mt_guess *g, uint64_t lo, uint64_t hi)
{
	if (g->ts + g->dur <= lo || g->ts >= hi)
		return false;
	if (g->ts < lo) {
		g->dur -= lo - g->ts;
		g->ts = lo;
	}
	if (g->ts + g->dur > hi)
		g->dur = hi - g->ts;
	return true;
}

int rg_keep_spans(struct mt_trace *t, struct rg_span *const *spans,
		  const size_t *nr, struct rg_stats *st)
{
	struct mt_slice **keep = calloc(t->nr_threads + 1, sizeof(*keep));
	size_t *n = calloc(t->nr_threads + 1, sizeof(*n));
	size_t most = 1, cap;
	uint32_t *map = NULL;
	int rc = -ENOMEM;

	if (!keep || !n)
		goto out;
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].nr_slices > most)
			most = t->threads[i].nr_slices;
	map = malloc(most * sizeof(*map));
	if (!map)
		goto out;
	for (size_t i = 0; i < t->nr_threads; i++) {
		cap = 0;
		for (size_t k = 0; k < nr[i]; k++)
			if (rg_keep_span(&t->threads[i], spans[i][k], map,
					 &keep[i], &n[i], &cap))
				goto out;
	}
	/* Nothing can fail from here. */
	for (size_t i = 0; i < t->nr_threads; i++) {
		struct mt_thread *th = &t->threads[i];

		free(th->slices);
		th->slices = keep[i];
		th->nr_slices = th->cap_slices = n[i];
		keep[i] = NULL;
		st->slices_after += n[i];
	}
	keep_marks(t, spans, nr);
	rc = keep_guesses(t, spans, nr);
out:
	if (keep)
		for (size_t i = 0; i < t->nr_threads; i++)
			free(keep[i]);
	free(keep);
	free(n);
	free(map);
	return rc;
}
