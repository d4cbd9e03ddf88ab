/* SPDX-License-Identifier: MIT */
/*
 * Guessed spans: where a join's depth was a guess, for how long.
 *
 * A join that had to guess (a recursion that fits several depths, a
 * frame below a longjmp target) places B's frames from A's chain[sure]
 * down on the guess's word.  What that makes uncertain is time, not a
 * frame's whole life: A's frames were at known depths before the gap,
 * and a later join that anchors its frames above the guess, on evidence
 * of its own, puts everything after it at known depths again.  So each
 * guess is a span on the thread: from B's start, at the guessed frame's
 * depth and below, until such a join (or the thread's end).  A slice
 * whose life overlaps a span, at or below its depth, is depth_guessed;
 * one that began after the span was settled is not, whatever its
 * ancestors.
 */
#include "stitch/stitch_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define OPEN UINT64_MAX

/* Where slice x now sits on A's chain (its depth there), or pos when the
 * chain no longer holds it. */
static size_t pos_on_chain(const struct thread_state *s, size_t na, uint32_t x,
			   size_t pos)
{
	x = stitch_resolve(s, x);
	for (size_t i = 0; i < na; i++)
		if (s->chain[i] == x)
			return i;
	return pos;
}

/*
 * Whether join m of B's chain (jumps: with a stitch_jump_link()) puts the
 * frames from A's chain[p] down at known depths again: it joins frames above p,
 * nothing it joins there is a guess, and B knows each of its frames' callers by
 * the call it made.  A caller that B learnt of from a jump landing in it (a
 * longjmp, an exception) says nothing of the frames between: in a
 * recursion, how many there were is the join's own reading.
 */
static bool settles(const struct match *m, bool jumps, size_t p)
{
	return m->off < p && (!m->guessed || m->sure >= p) && !m->nr_skips &&
	       !jumps;
}

/*
 * The deepest frame of A's chain (na frames) whose function B's frames
 * below the joined ones (the calls B made in the gap, as the join reads
 * them) run again, or SIZE_MAX.  From it down, the join cannot tell B's
 * new frames from frames A lost to its own guess: a recursion that A's
 * guess left too shallow looks the same to a join that matches A whole
 * and hangs the rest of B below A's leaf.  It settles nothing there.
 * Returns -ENOMEM into *rc when out of memory.
 */
static size_t rerun_below(const struct thread_state *s, size_t na,
			  const struct chainv *bv, const struct match *m,
			  int *rc)
{
	const struct mt_trace *t = s->t;
	const struct mt_slice *sl = s->th->slices;
	size_t from = m->ahead + m->len, n, at = SIZE_MAX;
	uint32_t *names;

	if (from >= bv->n)
		return SIZE_MAX;
	n = bv->n - from;
	names = malloc(n * sizeof(*names));
	if (!names) {
		*rc = -ENOMEM;
		return SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = mt_slice_name(
			t, &sl[stitch_resolve(s, bv->sl[from + i])]);
	qsort(names, n, sizeof(*names), mt_cmp_u32);
	for (size_t i = na; i-- > 0 && at == SIZE_MAX;) {
		uint32_t x = mt_slice_name(t, &sl[s->chain[i]]);

		if (bsearch(&x, names, n, sizeof(*names), mt_cmp_u32))
			at = i;
	}
	free(names);
	return at;
}

/*
 * Whether join m stands on the thread's root by B's own evidence: B's
 * first frame joins A's root (av), which is the thread's, and each
 * of B's frames below knows its caller by the call it made.  Every depth
 * B places is then its own count of returns up from its leaf, whatever A's
 * chain held.
 */
static bool own_depths(const struct thread_state *s, const struct chainv *av,
		       const struct match *m, bool jumps)
{
	return m->len && !m->off && !m->ahead && !m->nr_skips && !jumps &&
	       stitch_at_thread_root(s, av);
}

/* The first of B's frames that m places at A's chain[pos] or below,
 * MT_NONE for none. */
static uint32_t first_from(const struct thread_state *s,
			   const struct chainv *bv, const struct match *m,
			   size_t pos)
{
	for (size_t i = 0; m->ahead + i < bv->n; i++)
		if (stitch_a_pos(m, i) >= pos)
			return stitch_resolve(s, bv->sl[m->ahead + i]);
	return MT_NONE;
}

/* A guess from x (at pos on A's chain) down, from at, for as long as
 * until lives (MT_NONE: until a join settles it). */
static int add_span(struct thread_state *s, uint32_t x, size_t pos, uint64_t at,
		    uint32_t until)
{
	if (mt_grow((void **)&s->spans, &s->cap_spans, s->nr_spans + 1,
		    sizeof(*s->spans)))
		return -ENOMEM;
	s->spans[s->nr_spans++] = (struct guess_span){
		.x = x, .until = until, .pos = pos, .from = at, .to = OPEN};
	return 0;
}

/*
 * B (its chain bv, the last nr_own of its frames B's own start chain)
 * joins A's chain (na frames) as m says, across the gap that began at
 * time at: the open spans that m anchors above are settled there (all
 * of them, where m stands on the thread's root by B's own evidence), and
 * what m guesses or doubts opens one.  Joins made out of time order (the
 * later passes) settle only spans that began before.
 */
int stitch_guess_at_join(struct thread_state *s, uint64_t at, size_t na,
			 const struct chainv *bv, size_t nr_own,
			 const struct match *m)
{
	struct chainv av = {s->chain, s->rets, na, 0};
	bool jumps = stitch_jump_link(bv), looked = false;
	bool own = own_depths(s, &av, m, jumps), rooted = own && !m->guessed;
	size_t rerun = SIZE_MAX, nb = m->ahead + m->len, q = SIZE_MAX;
	bool new_doubt = false;
	uint32_t root = s->chain[0];
	int rc = 0;

	for (size_t k = 0; k < s->nr_spans; k++) {
		struct guess_span *g = &s->spans[k];
		size_t p;

		if (g->to != OPEN || g->from >= at)
			continue;
		if (rooted && stitch_resolve(s, g->x) == root)
			continue;
		p = pos_on_chain(s, na, g->x, rooted ? SIZE_MAX : g->pos);
		if (!rooted && !settles(m, jumps, p))
			continue;
		/* looked for once, and only for a span m would settle */
		if (!looked) {
			rerun = rerun_below(s, na, bv, m, &rc);
			if (rc)
				return rc;
			looked = true;
		}
		if (rooted) {
			/* q: the shallowest guess still on A's chain that B's
			 * new frames run functions at or below; new_doubt:
			 * one whose frame has ended */
			g->to = at;
			if (rerun != SIZE_MAX && p == SIZE_MAX)
				new_doubt = true;
			else if (rerun != SIZE_MAX && rerun >= p && p < q)
				q = p;
		} else if (rerun == SIZE_MAX || rerun < p) {
			g->to = at;
		}
	}
	/*
	 * Standing on the root, the join knows every depth, but where B's
	 * new frames run functions that A's chain has at or below a guess
	 * (rerun_below()), not which frames are which: they may be calls
	 * made in the gap or frames the guess placed elsewhere, and then the
	 * frames of B's joined to A's from the guessed one on (q) may be
	 * other calls too.  That doubt lasts as long as the frame it is
	 * about.
	 */
	if (rooted && q < m->len)
		rc = add_span(s, s->chain[q], q, at, s->chain[q]);
	else if (rooted && (q != SIZE_MAX || new_doubt) && nb < bv->n)
		rc = add_span(s, stitch_resolve(s, bv->sl[nb]), m->len, at,
			      stitch_resolve(s, bv->sl[nb]));
	if (rc)
		return rc;
	/*
	 * A caller that a jump revealed (a longjmp, an exception landing in
	 * it) says nothing of the frames the jump unwound between it and
	 * B's frame under it (such links are B's own: above them, B's
	 * callers that later segments revealed may have ip 0 too, where B's
	 * root never returned).  Where that frame joins none of A's (which
	 * would place it), its depth, and its callees', is a guess until it
	 * ends (the jump ends it, back at a known depth).
	 */
	for (size_t i = bv->n - nr_own; i + 1 < bv->n; i++)
		if (!bv->ip[i]) {
			uint32_t x = stitch_resolve(s, bv->sl[i + 1]);

			if (i + 1 >= nb &&
			    (rc = add_span(s, x,
					   stitch_a_pos(m, i + 1 - m->ahead),
					   at, x)) != 0)
				return rc;
			break;
		}
	/* A guess of a join that knows every depth is of which frames are
	 * A's: it lasts as long as the first of them. */
	if (m->guessed &&
	    (rc = add_span(s, s->chain[m->sure], m->sure, at,
			   own ? first_from(s, bv, m, m->sure) : MT_NONE)) != 0)
		return rc;
	if (m->skip_guess && (!m->guessed || m->skip_from < m->sure))
		rc = add_span(s, s->chain[m->skip_from], m->skip_from, at,
			      first_from(s, bv, m, m->skip_from));
	return rc;
}

struct span_order {
	uint32_t depth, idx;
};

static int cmp_depth(const void *a, const void *b)
{
	const struct span_order *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The first period from p on not painted yet. */
static size_t find(uint32_t *next, size_t p)
{
	while (next[p] != p) {
		next[p] = next[next[p]];
		p = next[p];
	}
	return p;
}

/* The first index of the sorted t[0..n) whose value is above v. */
static size_t upper(const uint64_t *t, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The spans as the trace keeps them (mt_guess): each run of periods with
 * the same least depth guessed, the last running to the thread's end.
 */
static int add_pieces(const struct thread_state *s, const struct mt_slice *out,
		      size_t n, const uint64_t *cut, const uint32_t *least,
		      size_t np)
{
	uint64_t last = 0;

	for (size_t i = 0; i < n; i++)
		if (end_of(&out[i]) > last)
			last = end_of(&out[i]);
	for (size_t p = 0, q; p < np; p = q) {
		struct mt_guess g = {.tid = s->th->tid, .depth = least[p]};
		uint64_t to;

		for (q = p + 1; q < np && least[q] == least[p]; q++)
			;
		to = q < np ? cut[q] : last;
		if (least[p] == UINT32_MAX || to <= cut[p])
			continue;
		g.ts = cut[p];
		g.dur = to - cut[p];
		if (!mt_trace_add_guess(s->t, &g))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The slices out[0..n), laid out anew (where[old] is an old index's new
 * one), flagged where they overlap a span at or below its depth.  Time
 * is cut at every span's ends into periods; each period gets the least
 * depth guessed in it, and a slice asks for the least over the periods
 * its life covers (a sparse table: one lookup a slice).  The spans go
 * to the trace too (add_pieces()).
 */
int stitch_guess_mark(const struct thread_state *s, struct mt_slice *out,
		      size_t n, const uint32_t *where)
{
	size_t nb = 0, np, levels = 1;
	uint64_t *cut = NULL, *to = NULL;
	uint32_t *least = NULL, *next = NULL;
	struct span_order *order = NULL;
	int rc = -ENOMEM;

	if (!s->nr_spans || !n)
		return 0;
	cut = malloc(2 * s->nr_spans * sizeof(*cut));
	to = malloc(s->nr_spans * sizeof(*to));
	if (!cut || !to)
		goto out;
	for (size_t k = 0; k < s->nr_spans; k++) {
		const struct guess_span *g = &s->spans[k];

		to[k] = g->to;
		if (g->until != MT_NONE) {
			uint64_t e = end_of(
				&out[where[stitch_resolve(s, g->until)]]);

			if (e < to[k])
				to[k] = e > g->from ? e : g->from + 1;
		}
		cut[nb++] = g->from;
		if (to[k] != OPEN)
			cut[nb++] = to[k];
	}
	qsort(cut, nb, sizeof(*cut), mt_cmp_u64);
	np = 0;
	for (size_t i = 0; i < nb; i++)
		if (!np || cut[np - 1] != cut[i])
			cut[np++] = cut[i];
	/* period p runs from cut[p] to cut[p + 1] (the last, for ever) */
	while ((1ul << levels) <= np)
		levels++;
	least = malloc(levels * np * sizeof(*least));
	if (!least)
		goto out;
	for (size_t p = 0; p < np; p++)
		least[p] = UINT32_MAX;
	/* The shallowest spans first, each period painted once: next[p]
	 * leads past the painted periods from p (with path halving). */
	order = malloc(s->nr_spans * sizeof(*order));
	next = malloc((np + 1) * sizeof(*next));
	if (!order || !next)
		goto out;
	for (size_t k = 0; k < s->nr_spans; k++) {
		const struct guess_span *g = &s->spans[k];

		order[k].depth = out[where[stitch_resolve(s, g->x)]].depth;
		order[k].idx = (uint32_t)k;
	}
	qsort(order, s->nr_spans, sizeof(*order), cmp_depth);
	for (size_t p = 0; p <= np; p++)
		next[p] = (uint32_t)p;
	for (size_t k = 0; k < s->nr_spans; k++) {
		const struct guess_span *g = &s->spans[order[k].idx];
		uint64_t end = to[order[k].idx];
		size_t p = upper(cut, np, g->from) - 1;
		size_t e = end == OPEN ? np : upper(cut, np, end - 1);

		for (p = find(next, p); p < e; p = find(next, p)) {
			least[p] = order[k].depth;
			next[p] = (uint32_t)(p + 1);
		}
	}
	rc = add_pieces(s, out, n, cut, least, np);
	if (rc)
		goto out;
	rc = -ENOMEM;
	for (size_t l = 1; l < levels; l++) {
		uint32_t *prev = least + (l - 1) * np, *cur = least + l * np;

		for (size_t p = 0; p + (1ul << l) <= np; p++) {
			uint32_t a = prev[p], b = prev[p + (1ul << (l - 1))];

			cur[p] = a < b ? a : b;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct mt_slice *x = &out[i];
		size_t hi = upper(cut, np, end_of(x)), lo, l = 0;
		uint32_t d;

		/* (one that ends as a span begins, as a gap's slice does,
		 * is in it) */
		if (!hi)
			continue; /* over before the first guess */
		lo = upper(cut, np, x->ts);
		lo = lo ? lo - 1 : 0;
		/* periods lo .. hi - 1 */
		while ((2ul << l) <= hi - lo)
			l++;
		d = least[l * np + lo];
		if (least[l * np + hi - (1ul << l)] < d)
			d = least[l * np + hi - (1ul << l)];
		if (d <= x->depth)
			x->flags |= MT_SLICE_DEPTH_GUESSED;
	}
	rc = 0;
out:
	free(cut);
	free(to);
	free(least);
	free(next);
	free(order);
	return rc;
}
