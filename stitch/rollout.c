/* SPDX-License-Identifier: MIT */
/*
 * Later segments' word on alignments that tie: the callers they reveal
 * above B's roots (stitch_look_ahead()), and each candidate carried forward
 * over them (stitch_roll_pick()).
 */
#include "stitch/stitch_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Try each near alignment again with ext (the callers above B's roots,
 * root first) on top of B's start chain; the index into r->near of the
 * one they confirm best, if exactly one, else -1. */
static int pick_near(const struct mt_slice *sl, const struct mt_frame *fr,
		     const struct chainv *a, const struct seg_ends *b,
		     const uint32_t *xs, const uint64_t *xi, size_t e,
		     const struct alignment *r)
{
	struct chainv ext = {xs, xi, e + b->nr_start};
	size_t bestlen = 0, bestconf = 0, n = 0;
	int pick = -1;

	for (size_t k = 0; k < r->nr_near; k++) {
		size_t off = r->near[k].off;
		struct match m =
			off >= e
				? stitch_try_align(sl, fr, a, &ext, off - e, 0)
				: stitch_try_align(sl, fr, a, &ext, 0, e - off);

		if (m.len > bestlen ||
		    (m.len == bestlen && m.confirmed > bestconf)) {
			bestlen = m.len;
			bestconf = m.confirmed;
			pick = (int)k;
			n = 1;
		} else if (m.len == bestlen && m.confirmed == bestconf) {
			n++;
		}
	}
	return n == 1 ? pick : -1;
}

#define LOOK_AHEAD 16

/*
 * The callers above B's roots that later segments revealed.  Each
 * following segment is placed against the one before it, where that is
 * certain; one that returned above B's roots revealed the frames there,
 * which sit above B's start chain too.  xs/xi hold them, root first,
 * then B's start chain: e + nr_start frames.
 */
struct ext_walk {
	const struct seg_ends *b, *cur;
	size_t next, steps;
	long level; /* of cur's roots, B's being 0 */
	uint32_t *xs;
	uint64_t *xi;
	size_t e, cap;
};

static void ext_init(struct ext_walk *w, const struct thread_state *s,
		     uint32_t ib)
{
	memset(w, 0, sizeof(*w));
	w->b = w->cur = ends_of(s, ib);
	w->next = ib + 1;
}

static void ext_free(struct ext_walk *w)
{
	free(w->xs);
	free(w->xi);
}

/* Walk on to the next segment that reveals more callers above B's
 * roots: 1 when xs/xi grew, 0 when the walk can go no further. */
static int ext_next(const struct thread_state *s, struct ext_walk *w)
{
	const struct mt_slice *sl = s->th->slices;
	const struct seg_ends *b = w->b;

	for (; w->next < s->run_hi && w->steps < LOOK_AHEAD; w->next++) {
		const struct seg_ends *c = ends_of(s, (uint32_t)w->next);
		struct chainv cl = {w->cur->end_chain, w->cur->end_rets,
				    w->cur->nr_end};
		struct chainv cv = {c->start_chain, c->start_ips, c->nr_start};
		struct alignment rc;
		long top;

		if (!in_run(s, w->next))
			continue;
		w->steps++;
		stitch_align(sl, s->t->frames, &cl, &cv, &rc);
		if (!rc.best.len || rc.ties || !rc.best.confirmed ||
		    rc.nr_near > 1)
			return 0;
		top = rc.best.ahead ? w->level - (long)rc.best.ahead
				    : w->level + (long)rc.best.off;
		w->level = top;
		w->cur = c;
		if (top < -(long)w->e) {
			size_t add = (size_t)(-(long)w->e - top);
			size_t need = add + w->e + b->nr_start;

			if (need > w->cap) {
				uint32_t *ns =
					realloc(w->xs, need * sizeof(*ns));
				uint64_t *ni;

				if (!ns)
					return 0;
				w->xs = ns;
				ni = realloc(w->xi, need * sizeof(*ni));
				if (!ni)
					return 0;
				w->xi = ni;
				w->cap = need;
			}
			memmove(w->xs + add, w->xs, w->e * sizeof(*w->xs));
			memmove(w->xi + add, w->xi, w->e * sizeof(*w->xi));
			memcpy(w->xs, c->start_chain, add * sizeof(*w->xs));
			memcpy(w->xi, c->start_ips, add * sizeof(*w->xi));
			w->e += add;
			memcpy(w->xs + w->e, b->start_chain,
			       b->nr_start * sizeof(*w->xs));
			memcpy(w->xi + w->e, b->start_ips,
			       b->nr_start * sizeof(*w->xi));
			w->next++;
			return 1;
		}
	}
	return 0;
}

/*
 * When alignments one level apart explain B equally well (recursion),
 * try them again with the callers later segments revealed on top.
 * Returns the index into r->near of the one they pick, or -1; *pinned
 * when those callers reach A's root, so that no other depth is left.
 */
int stitch_look_ahead(struct thread_state *s, const struct chainv *a,
		      uint32_t ib, const struct alignment *r, bool *pinned)
{
	struct ext_walk w;
	int pick = -1;

	*pinned = false;
	ext_init(&w, s, ib);
	while (pick < 0 && ext_next(s, &w))
		pick = pick_near(s->th->slices, s->t->frames, a, w.b, w.xs,
				 w.xi, w.e, r);
	if (pick >= 0)
		*pinned = r->near[pick].off <= w.e;
	ext_free(&w);
	return pick;
}

/*
 * Rolling a choice forward.  A wrong depth at one gap is inherited by
 * every later join (each aligns against the stack the last one built),
 * and in recursion a segment that knows few frames fits several depths.
 * A later segment that knows many frames tells them apart, so each
 * plausible alignment is carried forward over the next segments without
 * touching the slices: a virtual stack stands for A's end chain, each
 * later segment is aligned against it greedily, and candidates that
 * trail drop out (stitch_roll_pick()).  Only where the local evidence ties: a
 * clearly better alignment is not second-guessed by a future that may
 * differ for reasons of its own.
 */
#define ROLL_SEGMENTS 8	    /* how far */
#define ROLL_MAX_WORK 65536 /* frames na * nb above which it is skipped */
#define ROLL_DROP     3.0   /* behind the leader: out */

/* A chain as A's side reads it: ip[i] the call site in sl[i] into
 * sl[i + 1], 0 where unknown and at the leaf. */
struct vstack {
	uint32_t *sl;
	uint64_t *ip;
	size_t n, cap;
};

static int vs_reserve(struct vstack *v, size_t n)
{
	size_t c1 = v->cap, c2 = v->cap;

	/* Both grow from the same capacity to the same one. */
	if (mt_grow((void **)&v->sl, &c1, n, sizeof(*v->sl)) ||
	    mt_grow((void **)&v->ip, &c2, n, sizeof(*v->ip)))
		return -ENOMEM;
	v->cap = c1 < c2 ? c1 : c2;
	return 0;
}

static void vs_free(struct vstack *v)
{
	free(v->sl);
	free(v->ip);
}

/*
 * The stack at C's end once C is joined to h as m says (m NULL: not
 * joined, C's own frames alone), into out.  As stitch_apply_join() would leave
 * it: frames below the join stay; C's end chain sits on the joined
 * frames, which keep A's call sites where A knew them.
 */
static int vs_after(const struct vstack *h, const struct seg_ends *c,
		    const struct match *m, struct vstack *out)
{
	size_t base = m && !m->ahead ? m->off : 0, n, j = 0, last = 0;

	/* C's leading end-chain frames that are joined frames of h. */
	while (m && j < m->len && j < c->nr_end &&
	       c->end_chain[j] == c->start_chain[j])
		j++;
	if (m && !m->ahead && j)
		base = (last = stitch_a_pos(m, j - 1)) + 1;
	else
		j = 0;
	n = base + c->nr_end - j;
	out->n = 0;
	if (vs_reserve(out, n + 1))
		return -ENOMEM;
	for (size_t i = 0; i < base; i++) {
		out->sl[i] = h->sl[i];
		out->ip[i] = h->ip[i];
	}
	/* Call sites C knew where h did not, between joined frames. */
	for (size_t k = 0; k + 1 < j; k++)
		if (!out->ip[stitch_a_pos(m, k)] &&
		    stitch_a_pos(m, k + 1) == stitch_a_pos(m, k) + 1)
			out->ip[stitch_a_pos(m, k)] = c->end_rets[k];
	if (j)
		out->ip[last] = c->end_rets[j - 1];
	for (size_t k = j; k < c->nr_end; k++) {
		/* ahead > 0: C's frames from ahead up are joined to h's */
		size_t lo = m ? m->ahead : 0, hk = 0;
		bool joined = m && m->ahead && k >= lo && k < lo + m->len &&
			      c->end_chain[k] == c->start_chain[k];
		bool child = joined && k + 1 < lo + m->len &&
			     k + 1 < c->nr_end &&
			     c->end_chain[k + 1] == c->start_chain[k + 1];

		if (joined)
			hk = k - lo;
		out->sl[base + k - j] = joined ? h->sl[hk] : c->end_chain[k];
		out->ip[base + k - j] =
			child && h->ip[hk] ? h->ip[hk] : c->end_rets[k];
	}
	if (n)
		out->ip[n - 1] = 0;
	out->n = n;
	return 0;
}

/* A joined to B in a rollout: the best alignment, if confirmed (among
 * equals, the first: what is measured is how well B fits at all); 0
 * when not. */
static int greedy_join(const struct thread_state *s, const struct chainv *a,
		       const struct chainv *b, struct match *m)
{
	struct alignment r;

	stitch_align(s->th->slices, s->t->frames, a, b, &r);
	*m = r.best;
	return m->len && !stitch_weak_match(s, a, m);
}

/*
 * Of the candidate alignments of A -> B (cand, nc), the one the next
 * segments bear out: each candidate's stack is carried forward in step,
 * every later segment joined greedily to it, and a candidate falls out
 * once its score trails the leader's by ROLL_DROP.  Only the first
 * segments that fit the candidates differently count: after that their
 * futures differ for reasons of their own.  Returns the index of the one
 * left, or -1 (none stands out, or out of memory); *gain is its lead.
 */
int stitch_roll_pick(const struct thread_state *s, const struct chainv *a,
		     uint32_t ib, const struct match *cand, size_t nc,
		     double *gain, bool *pinned)
{
	bool rooted[MAX_CAND] = {false};
	const struct seg_ends *b = ends_of(s, ib);
	const struct vstack h = {
		.sl = (uint32_t *)a->sl, .ip = (uint64_t *)a->ip, .n = a->n};
	struct vstack v[MAX_CAND][2];
	double total[MAX_CAND];
	bool alive[MAX_CAND];
	size_t left = nc, done = 0;
	int cur = 0, pick = -1;

	*gain = 0;
	*pinned = false;
	if (nc < 2 || !b->nr_end || a->n * b->nr_start > ROLL_MAX_WORK)
		return -1;
	memset(v, 0, sizeof(v));
	for (size_t k = 0; k < nc; k++) {
		alive[k] = true;
		total[k] = cand[k].score;
		if (vs_after(&h, b, &cand[k], &v[k][0]))
			goto out;
	}
	for (size_t i = ib + 1;
	     i < s->run_hi && left > 1 && done < ROLL_SEGMENTS; i++) {
		const struct seg_ends *c = ends_of(s, (uint32_t)i);
		struct chainv cv = {c->start_chain, c->start_ips, c->nr_start};
		double lead = -1e300;

		if (!in_run(s, i))
			continue;
		done++;
		if (!c->nr_start || !c->nr_end)
			break;
		for (size_t k = 0; k < nc; k++) {
			const struct vstack *x = &v[k][cur];
			struct chainv av = {x->sl, x->ip, x->n};
			struct match m;
			int joined;

			if (!alive[k])
				continue;
			if (x->n * c->nr_start > ROLL_MAX_WORK)
				goto out;
			joined = greedy_join(s, &av, &cv, &m);
			if (joined)
				total[k] += m.score;
			/* a later segment that knows every frame from the
			 * root down, and fits them all: no other depth */
			if (joined && !m.off && !m.ahead && m.len == cv.n)
				rooted[k] = true;
			if (vs_after(x, c, joined ? &m : NULL, &v[k][cur ^ 1]))
				goto out;
			if (total[k] > lead)
				lead = total[k];
		}
		cur ^= 1;
		for (size_t k = 0; k < nc; k++)
			if (alive[k] && total[k] < lead - ROLL_DROP) {
				alive[k] = false;
				left--;
			}
	}
	if (left == 1) {
		double second = -1e300;

		for (size_t k = 0; k < nc; k++)
			if (alive[k])
				pick = (int)k;
		for (size_t k = 0; k < nc; k++)
			if (!alive[k] && total[k] > second)
				second = total[k];
		*gain = total[pick] - second;
		*pinned = rooted[pick];
	}
out:
	for (size_t k = 0; k < nc; k++) {
		vs_free(&v[k][0]);
		vs_free(&v[k][1]);
	}
	return pick;
}
