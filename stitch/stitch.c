/*
 * Stitching, one thread at a time.
 *
 * Pairs are decided with slice indexes fixed: a joined frame of B gets an
 * alias (the A frame it is), parents are rewired, times extended.  One
 * rebuild at the end drops the aliases and lays the thread's slices out
 * again in pre-order, walking the tree from its roots, children by start
 * time, with depths recomputed from the parents.  So a join may attach
 * B's frames anywhere in A's tree, and B's revealed callers may become
 * callers of A's roots, without moving anything by hand.
 *
 * A segment joined to its predecessor still offers its end chain to its
 * successor: the chain is rebuilt by walking parents through the aliases.
 */
#include "stitch/stitch.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * What a slice returns to: the call site in its parent, where a segment
 * saw it (the call's return address, or the address a return into the
 * parent landed at).  Only the frames of segment chains have one, so a
 * small map keyed by slice index.
 */
struct ret_map {
	uint32_t *key; /* slice + 1; 0 = empty */
	uint64_t *ret;
	size_t cap; /* a power of two */
	size_t n;
};

static size_t ret_slot(const struct ret_map *m, uint32_t slice)
{
	size_t h = ((size_t)slice * 0x9E3779B1u) & (m->cap - 1);

	while (m->key[h] && m->key[h] != slice + 1)
		h = (h + 1) & (m->cap - 1);
	return h;
}

static uint64_t ret_get(const struct ret_map *m, uint32_t slice)
{
	size_t h;

	if (!m->cap)
		return 0;
	h = ret_slot(m, slice);
	return m->key[h] ? m->ret[h] : 0;
}

static int ret_set(struct ret_map *m, uint32_t slice, uint64_t ret)
{
	size_t h;

	if (!ret)
		return 0;
	if (2 * (m->n + 1) > m->cap) {
		struct ret_map g = {.cap = m->cap ? 2 * m->cap : 64};

		g.key = calloc(g.cap, sizeof(*g.key));
		g.ret = malloc(g.cap * sizeof(*g.ret));
		if (!g.key || !g.ret) {
			free(g.key);
			free(g.ret);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->key[i]) {
				size_t k = ret_slot(&g, m->key[i] - 1);

				g.key[k] = m->key[i];
				g.ret[k] = m->ret[i];
				g.n++;
			}
		free(m->key);
		free(m->ret);
		*m = g;
	}
	h = ret_slot(m, slice);
	if (!m->key[h]) {
		m->key[h] = slice + 1;
		m->n++;
	}
	m->ret[h] = ret;
	return 0;
}

struct thread_state {
	struct mt_trace *t;
	struct mt_thread *th;
	struct ret_map rets_of;
	uint32_t *alias; /* slice -> the slice it is (itself if kept) */
	uint32_t *chain; /* scratch: A's end chain, root first */
	uint64_t *rets;
	size_t cap_chain;
	uint32_t first_segment; /* the thread's first */
	size_t joins;		/* pairs joined: the tree must be rebuilt */
};

static uint32_t resolve(const struct thread_state *s, uint32_t i)
{
	while (s->alias[i] != i)
		i = s->alias[i];
	return i;
}

/*
 * The parent of slice i, through aliases.  A segment's roots share one
 * unknown parent: a tail call from the topmost frame makes a second root
 * beside the first (the segment's start chain root), so once that first
 * root is joined, all of them hang under its parent.
 */
static uint32_t parent_of(const struct thread_state *s, uint32_t i)
{
	const struct mt_slice *x = &s->th->slices[i];
	uint32_t r;

	if (x->parent != MT_NONE)
		return resolve(s, x->parent);
	if (x->flags & MT_SLICE_GAP || x->segment >= s->t->nr_segments ||
	    !s->t->segments[x->segment].nr_start)
		return MT_NONE;
	r = resolve(s, s->t->segments[x->segment].start_chain[0]);
	if (r == i || s->th->slices[r].parent == MT_NONE)
		return MT_NONE;
	return resolve(s, s->th->slices[r].parent);
}

static uint64_t end_of(const struct mt_slice *s)
{
	return s->ts + s->dur;
}

/* A's open frames at its end, root first, through aliases; with the
 * return address into each where A knew it. */
static int end_chain(struct thread_state *s, const struct mt_segment *a,
		     size_t *n)
{
	size_t len = 0;
	uint32_t x;

	*n = 0;
	if (!a->nr_end)
		return 0;
	x = resolve(s, a->end_chain[a->nr_end - 1]);
	for (;;) {
		if (mt_grow((void **)&s->chain, &s->cap_chain, len + 1,
			    sizeof(*s->chain)))
			return -ENOMEM;
		s->chain[len++] = x;
		x = parent_of(s, x);
		if (x == MT_NONE || len > (1u << 24))
			break;
	}
	free(s->rets);
	s->rets = calloc(len, sizeof(*s->rets));
	if (!s->rets)
		return -ENOMEM;
	for (size_t i = 0; i < len / 2; i++) {
		uint32_t t = s->chain[i];

		s->chain[i] = s->chain[len - 1 - i];
		s->chain[len - 1 - i] = t;
	}
	/* The call site into each frame's open child, wherever it was
	 * seen: in A, or in an earlier segment joined to it. */
	for (size_t i = 0; i + 1 < len; i++)
		s->rets[i] = ret_get(&s->rets_of, s->chain[i + 1]);
	*n = len;
	return 0;
}

/*
 * A chain of frames, root first, with an address per frame: on the side
 * that ends (A), the call site into the frame's open child; on the side
 * that begins (B), where the return from its child landed (the leaf's is
 * where B resumed).  0 where unknown.
 */
struct chainv {
	const uint32_t *sl;
	const uint64_t *ip;
	size_t n;
};

/*
 * An alignment: B's start chain b[] against A's end chain a[].  With
 * ahead = 0, b[0] sits at a[off] (B never climbed as far as A's roots);
 * with ahead > 0, a[0] sits at b[ahead] (B revealed callers A never saw).
 */
struct match {
	size_t off, ahead, len, confirmed;
	bool leaf; /* A's leaf is among the joined frames */
	double score;
};

static struct match try_align(const struct mt_slice *sl, const struct chainv *a,
			      const struct chainv *b, size_t off, size_t ahead)
{
	struct match m = {.off = off, .ahead = ahead};
	size_t na = a->n, nb = b->n, change;

	for (size_t i = 0; off + i < na && ahead + i < nb; i++) {
		const struct mt_slice *x = &sl[a->sl[off + i]];
		const struct mt_slice *y = &sl[b->sl[ahead + i]];
		uint64_t ra = a->ip[off + i];
		/* The leaf's address is where B resumed, not a return. */
		uint64_t rb = ahead + i + 1 < nb ? b->ip[ahead + i] : 0;

		if (x->name != y->name)
			break;
		m.len++;
		/* A different call site: this frame is the same, its child
		 * returned in the gap and it called another. */
		if (ra && rb) {
			if (ra != rb)
				break;
			m.confirmed++;
		}
	}
	m.leaf = m.len && off + m.len == na;
	/*
	 * Recursion repeats the same frames at many depths, so names alone
	 * often fit several alignments.  A gap is short next to a stack's
	 * life: prefer the alignment that keeps A's leaf and changes the
	 * depth least, then the one with more call sites confirmed.
	 */
	change = off + nb > na + ahead ? off + nb - na - ahead
				       : na + ahead - off - nb;
	m.score = (double)m.len + 2.0 * (double)m.confirmed +
		  (m.leaf ? 3.0 : 0.0) - 0.25 * (double)change;
	return m;
}

/* Alignments that explain as many frames, and confirm as many call
 * sites, as the best: only the depth change tells them apart. */
#define MAX_NEAR 16

struct alignment {
	struct match best;
	size_t ties; /* others with the best's very score */
	struct match near[MAX_NEAR];
	size_t nr_near;
};

static void align(const struct mt_slice *sl, const struct chainv *a,
		  const struct chainv *b, struct alignment *r)
{
	struct match m;

	memset(r, 0, sizeof(*r));
	for (size_t off = 0; off < a->n; off++)
		for (size_t ahead = 0; ahead < b->n; ahead++) {
			if (off && ahead)
				break; /* one side starts at its root */
			m = try_align(sl, a, b, off, ahead);
			if (!m.len)
				continue;
			if (!r->best.len || m.score > r->best.score + 1e-9) {
				r->best = m;
				r->ties = 0;
			} else if (m.score > r->best.score - 1e-9) {
				r->ties++;
			}
		}
	if (!r->best.len)
		return;
	for (size_t off = 0; off < a->n && r->nr_near < MAX_NEAR; off++) {
		m = try_align(sl, a, b, off, 0);
		if (m.len == r->best.len && m.confirmed == r->best.confirmed)
			r->near[r->nr_near++] = m;
	}
}

/* Try each near alignment again with ext (the callers above B's roots,
 * root first) on top of B's start chain; the index into r->near of the
 * one they confirm best, if exactly one, else -1. */
static int pick_near(const struct mt_slice *sl, const struct chainv *a,
		     const struct mt_segment *b, const uint32_t *xs,
		     const uint64_t *xi, size_t e, const struct alignment *r)
{
	struct chainv ext = {xs, xi, e + b->nr_start};
	size_t bestlen = 0, bestconf = 0, n = 0;
	int pick = -1;

	for (size_t k = 0; k < r->nr_near; k++) {
		size_t off = r->near[k].off;
		struct match m = off >= e ? try_align(sl, a, &ext, off - e, 0)
					  : try_align(sl, a, &ext, 0, e - off);

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
 * When alignments one level apart explain B equally well (recursion),
 * the segments after B may know more: one that returned above B's roots
 * revealed the callers there, which sit above B's start chain too.  Walk
 * the following segments, each placed against the one before it where
 * that is certain, collecting the callers revealed above B's roots, and
 * try the candidates again with them on top.  Returns the index into
 * r->near of the one they pick, or -1.
 */
static int look_ahead(struct thread_state *s, const struct chainv *a,
		      uint32_t ib, const struct alignment *r)
{
	const struct mt_slice *sl = s->th->slices;
	const struct mt_segment *b = &s->t->segments[ib], *cur = b;
	uint32_t *xs = NULL;
	uint64_t *xi = NULL;
	size_t e = 0, cap = 0, steps = 0;
	long level = 0; /* of cur's roots, B's being 0 */
	int pick = -1;

	for (size_t k = ib + 1;
	     k < s->t->nr_segments && steps < LOOK_AHEAD && pick < 0; k++) {
		const struct mt_segment *c = &s->t->segments[k];
		struct chainv cl = {cur->end_chain, cur->end_rets, cur->nr_end};
		struct chainv cv = {c->start_chain, c->start_ips, c->nr_start};
		struct alignment rc;
		long top;

		if (c->tid != b->tid)
			continue;
		steps++;
		align(sl, &cl, &cv, &rc);
		if (!rc.best.len || rc.ties || !rc.best.confirmed ||
		    rc.nr_near > 1)
			break;
		top = rc.best.ahead ? level - (long)rc.best.ahead
				    : level + (long)rc.best.off;
		if (top < -(long)e) {
			size_t add = (size_t)(-(long)e - top);
			size_t need = add + e + b->nr_start;

			if (need > cap) {
				uint32_t *ns = realloc(xs, need * sizeof(*xs));
				uint64_t *ni;

				if (!ns)
					break;
				xs = ns;
				ni = realloc(xi, need * sizeof(*xi));
				if (!ni)
					break;
				xi = ni;
				cap = need;
			}
			memmove(xs + add, xs, e * sizeof(*xs));
			memmove(xi + add, xi, e * sizeof(*xi));
			memcpy(xs, c->start_chain, add * sizeof(*xs));
			memcpy(xi, c->start_ips, add * sizeof(*xi));
			e += add;
			memcpy(xs + e, b->start_chain,
			       b->nr_start * sizeof(*xs));
			memcpy(xi + e, b->start_ips, b->nr_start * sizeof(*xi));
			pick = pick_near(sl, a, b, xs, xi, e, r);
		}
		level = top;
		cur = c;
	}
	free(xs);
	free(xi);
	return pick;
}

static int record(struct mt_trace *t, uint32_t tid, uint32_t a, uint32_t b,
		  uint32_t joined, double score, const char *why)
{
	struct mt_stitch st = {.tid = tid,
			       .seg_a = a,
			       .seg_b = b,
			       .frames_joined = joined,
			       .score = score};

	st.reason = mt_str_intern(&t->strs, why);
	if (st.reason == MT_NONE || !mt_trace_add_stitch(t, &st))
		return -ENOMEM;
	return 0;
}

/* The same activation on both sides: x stays, y becomes x. */
static int merge(struct thread_state *s, uint32_t x, uint32_t y)
{
	struct mt_slice *sl = s->th->slices;
	uint64_t r = ret_get(&s->rets_of, x);

	if (end_of(&sl[y]) > end_of(&sl[x]))
		sl[x].dur = end_of(&sl[y]) - sl[x].ts;
	sl[x].flags = (sl[x].flags & ~MT_SLICE_INFERRED_END) |
		      (sl[y].flags & MT_SLICE_INFERRED_END) | MT_SLICE_JOINED;
	s->alias[y] = x;
	return r ? 0 : ret_set(&s->rets_of, x, ret_get(&s->rets_of, y));
}

/* Decide A -> B and join what is the same. */
static int stitch_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       bool join)
{
	struct mt_trace *t = s->t;
	const struct mt_segment *a = &t->segments[ia], *b = &t->segments[ib];
	struct mt_slice *sl = s->th->slices;
	struct alignment r;
	struct match best;
	struct chainv av, bv;
	size_t na;
	char why[160];
	bool ahead_used = false;
	size_t guessed = 0; /* alignments that fit as well */
	int rc = end_chain(s, a, &na);

	if (rc)
		return rc;
	if (!na || !b->nr_start)
		return record(t, s->th->tid, ia, ib, 0, 0,
			      "no frames on one side");
	av = (struct chainv){s->chain, s->rets, na};
	bv = (struct chainv){b->start_chain, b->start_ips, b->nr_start};
	align(sl, &av, &bv, &r);
	best = r.best;
	if (!best.len)
		return record(t, s->th->tid, ia, ib, 0, 0, "no common frames");
	if (r.ties) {
		snprintf(why, sizeof(why),
			 "ambiguous: %zu alignments explain %zu frames",
			 r.ties + 1, best.len);
		return record(t, s->th->tid, ia, ib, 0, best.score, why);
	}
	if (!best.ahead && r.nr_near > 1) {
		int k = look_ahead(s, &av, ib, &r);

		if (k >= 0) {
			ahead_used = r.near[k].off != best.off;
			best = r.near[k];
		} else {
			guessed = r.nr_near;
		}
	}
	/* Names alone are weak evidence (recursion repeats them, and a
	 * function may return and be called again inside a gap): join only
	 * where a call site confirms it, or where both stacks start at the
	 * thread's first root, the one the trace began under. */
	if (!best.confirmed && (best.off > 0 || best.ahead > 0 ||
				sl[s->chain[0]].segment != s->first_segment))
		return record(t, s->th->tid, ia, ib, 0, best.score,
			      "weak: no call site confirms the frames");
	snprintf(why, sizeof(why),
		 "%zu frame%s by name, %zu by call site, %zu ancestor%s kept, "
		 "%zu revealed%s",
		 best.len, best.len == 1 ? "" : "s", best.confirmed, best.off,
		 best.off == 1 ? "" : "s", best.ahead,
		 ahead_used ? "; depth from a later segment's callers"
		 : guessed  ? "; depth guessed (least change)"
			    : "");
	rc = record(t, s->th->tid, ia, ib, join ? (uint32_t)best.len : 0,
		    best.score, why);
	if (rc || !join)
		return rc;
	s->joins++;

	{
		uint32_t deepest = s->chain[best.off + best.len - 1];
		uint32_t broot = b->start_chain[0];
		/* The parent of B's roots lives through all of B: a root
		 * that returned would have revealed it. */
		uint64_t b_root_end = end_of(&sl[broot]) > b->end
					      ? end_of(&sl[broot])
					      : b->end;
		uint32_t b_root_flags = end_of(&sl[broot]) < b->end
						? MT_SLICE_INFERRED_END
						: sl[broot].flags;

		for (size_t i = 0; i < best.len && !rc; i++)
			rc = merge(s, s->chain[best.off + i],
				   b->start_chain[best.ahead + i]);
		if (rc)
			return rc;
		/* A's callers above the join live at least as long. */
		for (size_t j = 0; j < best.off; j++) {
			struct mt_slice *x = &sl[s->chain[j]];

			if (b_root_end > end_of(x))
				x->dur = b_root_end - x->ts;
			x->flags = (x->flags & ~MT_SLICE_INFERRED_END) |
				   (b_root_flags & MT_SLICE_INFERRED_END) |
				   MT_SLICE_JOINED;
		}
		/* B's callers above A's root were there before A began: they
		 * become A's root's callers, from A's start. */
		if (best.ahead) {
			uint32_t aroot = s->chain[0];

			sl[aroot].parent = b->start_chain[best.ahead - 1];
			for (size_t j = 0; j < best.ahead; j++) {
				struct mt_slice *y = &sl[b->start_chain[j]];
				uint64_t e = end_of(y);

				if (sl[aroot].ts < y->ts) {
					y->ts = sl[aroot].ts;
					y->dur = e - y->ts;
				}
				y->flags |= MT_SLICE_JOINED;
			}
		}
		/* The gap between sits under the deepest joined frame. */
		for (size_t i = 0; i < s->th->nr_slices; i++)
			if ((sl[i].flags & MT_SLICE_GAP) &&
			    sl[i].segment == ia && sl[i].ts >= a->end &&
			    end_of(&sl[i]) <= b->start)
				sl[i].parent = deepest;
	}
	return 0;
}

struct order {
	uint64_t ts;
	uint32_t idx;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Lay the kept slices out again: the tree from its roots, children by
 * start time (then by their old order), depths from the parents.
 */
static int rebuild(struct thread_state *s)
{
	struct mt_thread *th = s->th;
	size_t n = th->nr_slices, kept = 0, at = 0, sp = 0;
	struct order *ord = malloc((n ? n : 1) * sizeof(*ord));
	uint32_t *first = malloc((n + 1) * sizeof(*first));
	uint32_t *kids = malloc((n ? n : 1) * sizeof(*kids));
	uint32_t *fill = calloc(n + 1, sizeof(*fill));
	uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
	uint32_t *newidx = malloc((n ? n : 1) * sizeof(*newidx));
	struct mt_slice *out = malloc((n ? n : 1) * sizeof(*out));
	int rc = -ENOMEM;

	if (!ord || !first || !kids || !fill || !stack || !newidx || !out)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mt_slice *x = &th->slices[i];

		if (s->alias[i] != i)
			continue;
		ord[kept++] = (struct order){x->ts, (uint32_t)i};
	}
	/* Parents are all settled before any is rewritten: parent_of()
	 * reads a root's start-chain root, which may come later. */
	for (size_t k = 0; k < kept; k++)
		newidx[ord[k].idx] = parent_of(s, ord[k].idx);
	for (size_t k = 0; k < kept; k++) {
		struct mt_slice *x = &th->slices[ord[k].idx];

		x->parent = newidx[ord[k].idx];
	}
	qsort(ord, kept, sizeof(*ord), cmp_order);
	/* Children lists (slot n holds the roots), in start order. */
	memset(first, 0, (n + 1) * sizeof(*first));
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = th->slices[ord[k].idx].parent;

		fill[p == MT_NONE ? n : p]++;
	}
	for (size_t i = 0, sum = 0; i <= n; i++) {
		first[i] = (uint32_t)sum;
		sum += fill[i];
		fill[i] = 0;
	}
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = th->slices[ord[k].idx].parent;
		size_t slot = p == MT_NONE ? n : p;

		kids[first[slot] + fill[slot]++] = ord[k].idx;
	}
	/* Depth-first, roots in order; push children in reverse. */
	for (size_t k = fill[n]; k-- > 0;)
		stack[sp++] = kids[first[n] + k];
	while (sp) {
		uint32_t i = stack[--sp];
		struct mt_slice x = th->slices[i];

		newidx[i] = (uint32_t)at;
		if (x.parent == MT_NONE) {
			x.depth = 0;
		} else {
			x.depth = out[newidx[x.parent]].depth + 1;
			x.parent = newidx[x.parent];
		}
		out[at++] = x;
		for (size_t k = fill[i]; k-- > 0;)
			stack[sp++] = kids[first[i] + k];
	}
	if (at != kept) {
		/* A cycle would leave slices unreached: keep the old array
		 * rather than lose them. */
		rc = -EINVAL;
		goto out;
	}
	memcpy(th->slices, out, at * sizeof(*out));
	th->nr_slices = at;
	rc = 0;
out:
	free(ord);
	free(first);
	free(kids);
	free(fill);
	free(stack);
	free(newidx);
	free(out);
	return rc;
}

static int stitch_thread(struct mt_trace *t, struct mt_thread *th, bool join)
{
	struct thread_state s = {.t = t, .th = th};
	uint32_t prev = MT_NONE;
	int rc = 0;

	s.alias =
		malloc((th->nr_slices ? th->nr_slices : 1) * sizeof(*s.alias));
	if (!s.alias)
		return -ENOMEM;
	for (size_t i = 0; i < th->nr_slices; i++)
		s.alias[i] = (uint32_t)i;
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		const struct mt_segment *g = &t->segments[i];

		if (g->tid != th->tid)
			continue;
		for (size_t k = 0; k + 1 < g->nr_end && !rc; k++)
			rc = ret_set(&s.rets_of, g->end_chain[k + 1],
				     g->end_rets[k]);
		for (size_t k = 0; k + 1 < g->nr_start && !rc; k++)
			rc = ret_set(&s.rets_of, g->start_chain[k + 1],
				     g->start_ips[k]);
	}
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		if (t->segments[i].tid != th->tid)
			continue;
		if (prev != MT_NONE)
			rc = stitch_pair(&s, prev, (uint32_t)i, join);
		else
			s.first_segment = (uint32_t)i;
		prev = (uint32_t)i;
	}
	if (!rc && s.joins)
		rc = rebuild(&s);
	free(s.alias);
	free(s.rets_of.key);
	free(s.rets_of.ret);
	free(s.chain);
	free(s.rets);
	return rc;
}

int stitch_trace(struct mt_trace *t, const struct stitch_opts *o, char *err,
		 size_t errlen)
{
	bool join = !(o && o->record_only);

	for (size_t i = 0; i < t->nr_threads; i++) {
		int rc = stitch_thread(t, &t->threads[i], join);

		if (rc) {
			snprintf(err, errlen, "%s while stitching",
				 rc == -ENOMEM ? "out of memory"
					       : "an inconsistent tree");
			return rc;
		}
	}
	return 0;
}
