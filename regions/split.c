/* SPDX-License-Identifier: MIT */
/*
 * A trace cut into parts a viewer can load.  The cuts go where a slice
 * starts, so that on that slice's thread nothing is cut in half but the
 * stack the slice runs on; the stack open at a cut (on every thread) is
 * repeated, clipped, at the start of the next part, as --time keeps it,
 * and counts against the part's slices.
 */
#include "regions/rg_internal.h"

#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The slices open at c: started before it and ending after it. */
static uint64_t open_at(const struct mt_trace *t, uint64_t c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		for (size_t k = 0; k < th->nr_slices; k++)
			n += th->slices[k].ts < c &&
			     th->slices[k].ts + th->slices[k].dur > c;
	}
	return n;
}

int rg_split_plan(const struct mt_trace *t, uint64_t max, uint64_t **cuts,
		  size_t *nr, char *err, size_t errlen)
{
	uint64_t first, last, total, *starts, *ends, *out = NULL;
	size_t at = 0, i = 0, n = 0, cap = 0;
	int rc = -ENOMEM;

	*cuts = NULL;
	*nr = 0;
	rg_trace_span(t, &first, &last, &total);
	starts = malloc((total ? total : 1) * sizeof(*starts));
	ends = malloc((total ? total : 1) * sizeof(*ends));
	if (!starts || !ends)
		goto out;
	for (size_t k = 0; k < t->nr_threads; k++)
		for (size_t j = 0; j < t->threads[k].nr_slices; j++) {
			ends[n] = t->threads[k].slices[j].ts +
				  t->threads[k].slices[j].dur;
			starts[n++] = t->threads[k].slices[j].ts;
		}
	qsort(starts, n, sizeof(*starts), mt_cmp_u64);
	qsort(ends, n, sizeof(*ends), mt_cmp_u64);
	if (mt_grow((void **)&out, &cap, 1, sizeof(*out)))
		goto out;
	out[at++] = total ? first : 0;
	while (i < n) {
		uint64_t carried = at > 1 ? open_at(t, out[at - 1]) : 0;
		size_t j;

		if (carried >= max) {
			rc = mt_err(err, errlen, -ERANGE,
				    "--split %" PRIu64 ": %" PRIu64
				    " slices are open at a cut (the stacks "
				    "there): give more slices a part",
				    max, carried);
			goto out;
		}
		if (n - i <= max - carried)
			break;
		j = i + (size_t)(max - carried);
		/* Not inside an instant's starts, nor where a slice ends: a
		 * call of no length there could be in neither part. */
		while (j > i && (starts[j - 1] == starts[j] ||
				 bsearch(&starts[j], ends, n, sizeof(*ends),
					 mt_cmp_u64)))
			j--;
		if (j == i) {
			rc = mt_err(err, errlen, -ERANGE,
				    "--split %" PRIu64 ": no instant to cut "
				    "at: more slices than that start or end "
				    "together",
				    max);
			goto out;
		}
		if (mt_grow((void **)&out, &cap, at + 1, sizeof(*out)))
			goto out;
		out[at++] = starts[j];
		i = j;
	}
	if (mt_grow((void **)&out, &cap, at + 1, sizeof(*out)))
		goto out;
	out[at++] = total ? last + 1 : 1;
	*cuts = out;
	*nr = at - 1;
	out = NULL;
	rc = 0;
out:
	free(out);
	free(starts);
	free(ends);
	if (rc == -ENOMEM)
		mt_err(err, errlen, rc, "out of memory planning the parts");
	return rc;
}

void rg_part_free(struct mt_trace *view)
{
	for (size_t i = 0; view->threads && i < view->nr_threads; i++)
		free(view->threads[i].slices);
	free(view->threads);
	free(view->hits);
	free(view->ptwrites);
	free(view->guesses);
	memset(view, 0, sizeof(*view));
}

int rg_part(const struct mt_trace *t, uint64_t lo, uint64_t hi,
	    struct mt_trace *view, char *err, size_t errlen)
{
	struct rg_span sp = {lo, hi};
	size_t most = 1;
	uint32_t *map = NULL;

	*view = *t;
	view->threads = calloc(t->nr_threads + 1, sizeof(*view->threads));
	view->hits = malloc((t->nr_hits + 1) * sizeof(*view->hits));
	view->ptwrites = malloc((t->nr_ptwrites + 1) * sizeof(*view->ptwrites));
	view->guesses = malloc((t->nr_guesses + 1) * sizeof(*view->guesses));
	view->nr_hits = view->nr_ptwrites = view->nr_guesses = 0;
	view->cap_threads = t->nr_threads;
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].nr_slices > most)
			most = t->threads[i].nr_slices;
	map = malloc(most * sizeof(*map));
	if (!view->threads || !view->hits || !view->ptwrites ||
	    !view->guesses || !map)
		goto nomem;
	for (size_t i = 0; i < t->nr_threads; i++) {
		struct mt_thread *th = &view->threads[i];

		*th = t->threads[i];
		th->slices = NULL;
		th->nr_slices = th->cap_slices = 0;
		if (rg_keep_span(&t->threads[i], sp, map, &th->slices,
				 &th->nr_slices, &th->cap_slices))
			goto nomem;
	}
	/* Each mark in the one part its time falls in. */
	for (size_t h = 0; h < t->nr_hits; h++)
		if (t->hits[h].ts >= lo && t->hits[h].ts < hi)
			view->hits[view->nr_hits++] = t->hits[h];
	for (size_t p = 0; p < t->nr_ptwrites; p++)
		if (t->ptwrites[p].ts >= lo && t->ptwrites[p].ts < hi)
			view->ptwrites[view->nr_ptwrites++] = t->ptwrites[p];
	for (size_t g = 0; g < t->nr_guesses; g++) {
		struct mt_guess y = t->guesses[g];

		if (rg_clip_guess(&y, lo, hi))
			view->guesses[view->nr_guesses++] = y;
	}
	view->cap_hits = view->nr_hits;
	view->cap_ptwrites = view->nr_ptwrites;
	view->cap_guesses = view->nr_guesses;
	free(map);
	return 0;
nomem:
	free(map);
	rg_part_free(view);
	return mt_err(err, errlen, -ENOMEM,
		      "out of memory cutting a part of the trace");
}
