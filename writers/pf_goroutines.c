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

struct pf_turnev {
	uint64_t ts;
	uint32_t begin; /* ENDs first at one time */
	uint32_t turn;
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

static int pf_turnev_cmp(const void *a, const void *b)
{
	const struct pf_turnev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->turn < y->turn ? -1 : x->turn > y->turn;
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

int pf_goroutines(struct pf *w, uint32_t seq)
{
	const struct mt_trace *t = w->t;
	struct mt_hmap th_track = {0};
	uint64_t *g_track = NULL;
	struct pf_turn *turn = NULL;
	struct pf_turnev *ev = NULL;
	size_t nt = 0, nev = 0;
	char name[512];
	int rc = -1;

	if (!t->nr_goroutines)
		return 0;
	g_track = malloc(t->nr_goroutines * sizeof(*g_track));
	turn = malloc((2 * t->nr_segments + 1) * sizeof(*turn));
	ev = malloc((4 * t->nr_segments + 1) * sizeof(*ev));
	if (!g_track || !turn || !ev) {
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
	for (size_t i = 0; i < nt; i++) {
		ev[nev++] = (struct pf_turnev){turn[i].ts, 1, (uint32_t)i};
		ev[nev++] = (struct pf_turnev){turn[i].end, 0, (uint32_t)i};
	}
	if (!nev) {
		rc = 0;
		goto out;
	}
	qsort(ev, nev, sizeof(*ev), pf_turnev_cmp);
	if (pf_seq_start(w, seq, ev[0].ts, 0))
		goto out;
	for (size_t i = 0; i < nev; i++) {
		const struct pf_turn *x = &turn[ev[i].turn];
		const struct mt_segment *g = &t->segments[x->seg];
		struct pb_buf *b = &w->pk;
		size_t pkt = pf_event_packet(w, ev[i].ts), m;

		m = pb_begin(b, F_TRACK_EVENT);
		pb_uint(b, F_TE_TYPE,
			ev[i].begin ? TYPE_SLICE_BEGIN : TYPE_SLICE_END);
		pb_uint(b, F_TE_TRACK, x->track);
		if (ev[i].begin) {
			if (x->on_thread)
				mt_goroutine_name(
					t, &t->goroutines[g->goroutine - 1],
					name, sizeof(name));
			else
				snprintf(name, sizeof(name), "on thread %u",
					 g->tid);
			pb_str(b, F_TE_NAME, name);
		}
		pb_end(b, m);
		if (pf_event_end(w, pkt))
			goto out;
	}
	w->slices += nev / 2;
	rc = 0;
out:
	mt_hmap_free(&th_track);
	free(g_track);
	free(turn);
	free(ev);
	return rc ? pf_failed(w) : 0;
}
