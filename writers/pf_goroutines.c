/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto trace's Go goroutines: a track per goroutine under its
 * process ("goroutine 7 (main.work)"), with a slice for each time it ran
 * ("on thread 1234"), and a child track of each thread that ran one
 * ("goroutines") with a slice for each goroutine's turn on it, so that
 * the thread's stacks show beside which goroutine they belong to.  One
 * sequence after the other marks; a trace without goroutines has none.
 */
#include "writers/pf_internal.h"

#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One turn of a goroutine on a thread (a segment), on one of the two
 * tracks that show it. */
struct pf_turn {
	uint64_t ts, end;
	uint64_t track;
	uint32_t seg;
	bool on_thread; /* the thread's child track: named by goroutine */
};

static int pf_turn_cmp(const void *a, const void *b)
{
	const struct pf_turn *x = a, *y = b;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

/* The tracks: each goroutine's under its process, then a child of each
 * thread that ran one.  Fills g_track (by goroutine) and th_track (tid
 * -> uuid). */
static int pf_turn_tracks(struct pf *w, uint64_t *g_track,
			  struct mt_hmap *th_track)
{
	const struct mt_trace *t = w->t;
	char name[512];

	for (size_t i = 0; i < t->nr_goroutines; i++) {
		uint64_t parent = 0;

		for (size_t p = 0; p < t->nr_procs && !parent; p++)
			if (t->procs[p].pid == t->goroutines[i].pid)
				parent = 1 + p;
		mt_goroutine_name(t, &t->goroutines[i], name, sizeof(name));
		g_track[i] = w->next_uuid++;
		if (pf_desc_track(w, g_track[i], parent, name, ""))
			return -1;
		w->tracks++;
	}
	for (size_t s = 0; s < t->nr_segments; s++)
		if (t->segments[s].goroutine &&
		    mt_hmap_set(th_track, t->segments[s].tid, UINT64_MAX))
			return pf_fail(w, -ENOMEM, "out of memory");
	for (size_t i = 0; i < t->nr_threads; i++) {
		uint32_t tid = t->threads[i].tid;

		/* 0: none ran on it */
		if (mt_hmap_get(th_track, tid) != UINT64_MAX)
			continue;
		if (mt_hmap_set(th_track, tid, w->next_uuid))
			return pf_fail(w, -ENOMEM, "out of memory");
		if (pf_desc_track(w, w->next_uuid++, 1 + t->nr_procs + i,
				  "goroutines", ""))
			return -1;
		w->tracks++;
	}
	return 0;
}

/* A track's turns must not overlap for Perfetto to keep them all: a turn
 * that begins before the last one ended (a goroutine two threads were
 * given, its resume a guess) begins where that one ends. */
static size_t pf_turn_clamp(struct pf_turn *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), pf_turn_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].track == v[i].track && v[i].ts < v[k - 1].end)
			v[i].ts = v[k - 1].end;
		if (v[i].end < v[i].ts)
			continue;
		v[k++] = v[i];
	}
	return k;
}

struct turn_names {
	const struct mt_trace *t;
	const struct pf_turn *turn;
};

static void turn_name(void *ctx, size_t i, char *buf, size_t len)
{
	const struct turn_names *n = ctx;
	const struct pf_turn *x = &n->turn[i];
	const struct mt_segment *g = &n->t->segments[x->seg];

	if (x->on_thread)
		mt_goroutine_name(n->t, &n->t->goroutines[g->goroutine - 1],
				  buf, len);
	else
		snprintf(buf, len, "on thread %u", g->tid);
}

int pf_goroutines(struct pf *w, uint32_t seq)
{
	const struct mt_trace *t = w->t;
	struct mt_hmap th_track = {0};
	uint64_t *g_track = NULL;
	struct pf_turn *turn = NULL;
	struct pf_span *sp = NULL;
	size_t nt = 0;
	int rc = -1;

	if (!t->nr_goroutines)
		return 0;
	g_track = malloc(t->nr_goroutines * sizeof(*g_track));
	turn = malloc((2 * t->nr_segments + 1) * sizeof(*turn));
	sp = malloc((2 * t->nr_segments + 1) * sizeof(*sp));
	if (!g_track || !turn || !sp) {
		pf_fail(w, -ENOMEM, "out of memory");
		goto out;
	}
	if (pf_turn_tracks(w, g_track, &th_track))
		goto out;
	for (size_t s = 0; s < t->nr_segments; s++) {
		const struct mt_segment *g = &t->segments[s];
		uint64_t th = mt_hmap_get(&th_track, g->tid);

		if (!g->goroutine || g->goroutine > t->nr_goroutines || !th ||
		    th == UINT64_MAX)
			continue;
		turn[nt++] = (struct pf_turn){g->start, g->end,
					      g_track[g->goroutine - 1],
					      (uint32_t)s, false};
		turn[nt++] = (struct pf_turn){g->start, g->end, th, (uint32_t)s,
					      true};
	}
	nt = pf_turn_clamp(turn, nt);
	for (size_t i = 0; i < nt; i++)
		sp[i] = (struct pf_span){turn[i].ts, turn[i].end,
					 turn[i].track};
	{
		struct turn_names names = {t, turn};

		rc = pf_spans(w, seq, sp, nt, turn_name, &names);
	}
out:
	mt_hmap_free(&th_track);
	free(g_track);
	free(turn);
	free(sp);
	return rc ? pf_failed(w) : 0;
}
