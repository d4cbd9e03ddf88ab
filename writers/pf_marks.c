/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto trace's marks: the snapshot trigger hits, on tracks of
 * their own, the values the program wrote (PTWRITE), on their threads'
 * tracks, and where stitching guessed the depth, on child tracks of the
 * threads.  Each is one sequence after the threads'.
 */
#include "writers/pf_internal.h"

#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Snapshot symbol hits: a slice from mark_start to the hit, or an instant
 * at the hit.  Hits may overlap without nesting, which one track cannot
 * show, so each goes to the first of a set of tracks ("lanes") where it
 * nests properly, and the lanes' events are merged in time order.
 */
struct pf_hitev {
	uint64_t ts;
	uint32_t kind; /* HEV_*: the order of events at one time */
	uint32_t hit;
	uint64_t k1; /* then, among ENDs: inner first; BEGINs: outer */
	uint32_t k2; /* then the order of placement */
};

enum { HEV_END, HEV_INSTANT, HEV_BEGIN };

struct pf_hitspan {
	uint64_t start, end;
	uint32_t hit, lane;
};

static int pf_hitspan_cmp(const void *a, const void *b)
{
	const struct pf_hitspan *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->hit < y->hit ? -1 : x->hit > y->hit;
}

static int pf_hitev_cmp(const void *a, const void *b)
{
	const struct pf_hitev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	return x->k2 < y->k2 ? -1 : x->k2 > y->k2;
}

static int pf_hit_event(struct pf *w, const struct pf_hitev *e,
			const struct mt_hit *h, uint64_t track)
{
	struct pb_buf *b = &w->pk;
	const char *name = mt_str(&w->t->hit_names, h->name);
	size_t pkt = pf_event_packet(w, e->ts), m;

	m = pb_begin(b, F_TRACK_EVENT);
	pb_uint(b, F_TE_TYPE,
		e->kind == HEV_BEGIN	 ? TYPE_SLICE_BEGIN
		: e->kind == HEV_INSTANT ? TYPE_INSTANT
					 : TYPE_SLICE_END);
	pb_uint(b, F_TE_TRACK, track);
	if (e->kind != HEV_END) {
		pb_str(b, F_TE_NAME, *name ? name : "snapshot");
		pf_arg_uint(b, AN_IP, F_DA_POINTER, h->ip);
		pf_arg_uint(b, AN_ARG, F_DA_INT, (uint64_t)h->arg);
		pf_arg_uint(b, AN_TID, F_DA_INT, h->tid);
	}
	pb_end(b, m);
	return pf_event_end(w, pkt);
}

int pf_hits(struct pf *w, uint32_t seq)
{
	const struct mt_trace *t = w->t;
	struct pf_hitspan *sp = NULL;
	struct pf_hitev *ev = NULL;
	uint64_t *lanes = NULL; /* lane -> track */
	uint32_t *lane_of = NULL, nr_lanes = 0;
	size_t nev = 0, n = t->nr_hits;
	int rc = -1;

	if (!n)
		return 0;
	sp = calloc(n, sizeof(*sp));
	ev = calloc(2 * n, sizeof(*ev));
	lanes = calloc(n, sizeof(*lanes));
	lane_of = calloc(n, sizeof(*lane_of));
	if (!sp || !ev || !lanes || !lane_of) {
		pf_fail(w, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mt_hit *h = &t->hits[i];

		sp[i].hit = (uint32_t)i;
		sp[i].end = h->ts;
		sp[i].start = h->mark_start && h->mark_start < h->ts
				      ? h->mark_start
				      : h->ts;
	}
	qsort(sp, n, sizeof(*sp), pf_hitspan_cmp);

	/* Quadratic, but hits are one per snapshot: a handful. */
	for (size_t i = 0; i < n; i++) {
		uint32_t lane = 0;

		for (; lane < nr_lanes; lane++) {
			size_t j;

			for (j = 0; j < i; j++)
				if (sp[j].lane == lane &&
				    sp[j].end > sp[i].start &&
				    sp[j].end < sp[i].end)
					break;
			if (j == i)
				break;
		}
		if (lane == nr_lanes)
			nr_lanes++;
		sp[i].lane = lane;
		if (sp[i].start == sp[i].end) {
			ev[nev++] = (struct pf_hitev){sp[i].end, HEV_INSTANT,
						      sp[i].hit, 0, 0};
			continue;
		}
		ev[nev++] =
			(struct pf_hitev){sp[i].start, HEV_BEGIN, sp[i].hit,
					  UINT64_MAX - sp[i].end, (uint32_t)i};
		ev[nev++] = (struct pf_hitev){sp[i].end, HEV_END, sp[i].hit,
					      UINT64_MAX - sp[i].start,
					      UINT32_MAX - (uint32_t)i};
	}
	qsort(ev, nev, sizeof(*ev), pf_hitev_cmp);

	for (uint32_t l = 0; l < nr_lanes; l++) {
		char suffix[24] = "";

		lanes[l] = w->next_uuid++;
		if (l)
			snprintf(suffix, sizeof(suffix), " (%u)", l + 1);
		if (pf_desc_track(w, lanes[l], 0, HITS_TRACK_NAME, suffix))
			goto out;
	}
	for (size_t i = 0; i < n; i++)
		lane_of[sp[i].hit] = sp[i].lane;

	if (pf_seq_start(w, seq, ev[0].ts, 0))
		goto out;
	for (size_t i = 0; i < nev; i++) {
		uint32_t h = ev[i].hit;

		if (pf_hit_event(w, &ev[i], &t->hits[h], lanes[lane_of[h]]))
			goto out;
	}
	w->slices += n;
	rc = 0;
out:
	free(sp);
	free(ev);
	free(lanes);
	free(lane_of);
	return rc ? pf_failed(w) : 0;
}

static int pf_ptw_cmp(const void *a, const void *b)
{
	const struct mt_ptwrite *x = *(const struct mt_ptwrite *const *)a;
	const struct mt_ptwrite *y = *(const struct mt_ptwrite *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The values the program wrote (PTWRITE): instants named "ptwrite" on
 * their thread's track, with the value and the instruction as args, all
 * on one sequence in time order.
 */
int pf_ptwrites(struct pf *w, uint32_t seq)
{
	const struct mt_trace *t = w->t;
	const struct mt_ptwrite **v;
	struct mt_hmap uuid = {0};
	int rc;

	if (!t->nr_ptwrites)
		return 0;
	v = malloc(t->nr_ptwrites * sizeof(*v));
	if (!v)
		return pf_fail(w, -ENOMEM, "out of memory");
	for (size_t i = 0; i < t->nr_threads; i++)
		if (mt_hmap_set(&uuid, t->threads[i].tid,
				1 + t->nr_procs + i)) {
			rc = pf_fail(w, -ENOMEM, "out of memory");
			goto out;
		}
	for (size_t i = 0; i < t->nr_ptwrites; i++)
		v[i] = &t->ptwrites[i];
	qsort(v, t->nr_ptwrites, sizeof(*v), pf_ptw_cmp);
	rc = pf_seq_start(w, seq, v[0]->ts, 0);
	for (size_t i = 0; !rc && i < t->nr_ptwrites; i++) {
		struct pb_buf *b = &w->pk;
		size_t pkt = pf_event_packet(w, v[i]->ts), m;
		uint64_t track = mt_hmap_get(&uuid, v[i]->tid);

		m = pb_begin(b, F_TRACK_EVENT);
		pb_uint(b, F_TE_TYPE, TYPE_INSTANT);
		if (track)
			pb_uint(b, F_TE_TRACK, track);
		pb_str(b, F_TE_NAME, "ptwrite");
		pf_arg_uint(b, AN_VALUE, F_DA_UINT, v[i]->value);
		if (v[i]->ip)
			pf_arg_uint(b, AN_IP, F_DA_POINTER, v[i]->ip);
		pb_end(b, m);
		rc = pf_event_end(w, pkt);
	}
out:
	mt_hmap_free(&uuid);
	free(v);
	return rc;
}

struct pf_spanev {
	uint64_t ts;
	uint32_t begin; /* ENDs first at one time */
	uint32_t idx;
};

static int pf_spanev_cmp(const void *a, const void *b)
{
	const struct pf_spanev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int pf_spans(struct pf *w, uint32_t seq, const struct pf_span *sp, size_t n,
	     void (*name)(void *ctx, size_t i, char *buf, size_t len),
	     void *ctx)
{
	struct pf_spanev *ev;
	size_t nev = 0;
	char buf[512];
	int rc = -1;

	if (!n)
		return 0;
	ev = malloc(2 * n * sizeof(*ev));
	if (!ev)
		return pf_fail(w, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		ev[nev++] = (struct pf_spanev){sp[i].ts, 1, (uint32_t)i};
		ev[nev++] = (struct pf_spanev){sp[i].end, 0, (uint32_t)i};
	}
	qsort(ev, nev, sizeof(*ev), pf_spanev_cmp);
	if (pf_seq_start(w, seq, ev[0].ts, 0))
		goto out;
	for (size_t i = 0; i < nev; i++) {
		struct pb_buf *b = &w->pk;
		size_t pkt = pf_event_packet(w, ev[i].ts), m;

		m = pb_begin(b, F_TRACK_EVENT);
		pb_uint(b, F_TE_TYPE,
			ev[i].begin ? TYPE_SLICE_BEGIN : TYPE_SLICE_END);
		pb_uint(b, F_TE_TRACK, sp[ev[i].idx].track);
		if (ev[i].begin) {
			name(ctx, ev[i].idx, buf, sizeof(buf));
			pb_str(b, F_TE_NAME, buf);
		}
		pb_end(b, m);
		if (pf_event_end(w, pkt))
			goto out;
	}
	w->slices += nev / 2;
	rc = 0;
out:
	free(ev);
	return rc ? pf_failed(w) : 0;
}

/*
 * Where stitching guessed the depth: a slice per span on a child track of
 * its thread ("depth guessed"), named by the depth from which the frames
 * are a guess, so that the time a user cannot trust shows beside the
 * frames.  A thread's spans do not overlap: one track each.
 */
static void guess_name(void *ctx, size_t i, char *buf, size_t len)
{
	const struct mt_guess *const *x = ctx;

	snprintf(buf, len, "depth %u and below", x[i]->depth);
}

int pf_guesses(struct pf *w, uint32_t seq)
{
	const struct mt_trace *t = w->t;
	size_t n = t->nr_guesses, nsp = 0;
	struct pf_span *sp = NULL;
	const struct mt_guess **of = NULL;
	struct mt_hmap track = {0};
	int rc = -1;

	if (!n)
		return 0;
	sp = malloc(n * sizeof(*sp));
	of = malloc(n * sizeof(*of));
	if (!sp || !of) {
		pf_fail(w, -ENOMEM, "out of memory");
		goto out;
	}
	/* the threads with spans first, their tracks then in thread order */
	for (size_t g = 0; g < n; g++)
		if (mt_hmap_set(&track, t->guesses[g].tid, UINT64_MAX)) {
			pf_fail(w, -ENOMEM, "out of memory");
			goto out;
		}
	for (size_t i = 0; i < t->nr_threads; i++) {
		uint32_t tid = t->threads[i].tid;

		if (mt_hmap_get(&track, tid) != UINT64_MAX)
			continue;
		if (mt_hmap_set(&track, tid, w->next_uuid)) {
			pf_fail(w, -ENOMEM, "out of memory");
			goto out;
		}
		if (pf_desc_track(w, w->next_uuid++, 1 + t->nr_procs + i,
				  "depth guessed", ""))
			goto out;
		w->tracks++;
	}
	for (size_t g = 0; g < n; g++) {
		const struct mt_guess *x = &t->guesses[g];
		uint64_t tr = mt_hmap_get(&track, x->tid);

		if (tr == UINT64_MAX)
			continue; /* a thread the trace does not have */
		of[nsp] = x;
		sp[nsp++] = (struct pf_span){x->ts, x->ts + x->dur, tr};
	}
	rc = pf_spans(w, seq, sp, nsp, guess_name, of);
out:
	mt_hmap_free(&track);
	free(sp);
	free(of);
	return rc ? pf_failed(w) : 0;
}
