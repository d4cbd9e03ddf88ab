/* SPDX-License-Identifier: MIT */
/*
 * Alignment: every way B's start chain can sit against A's end chain,
 * each scored by the frames it explains and the call sites that confirm
 * them.
 */
#include "stitch/stitch_internal.h"

#include <stdlib.h>
#include <string.h>

/* Where in A's chain B's frame ahead + i sits. */
size_t stitch_a_pos(const struct match *m, size_t i)
{
	size_t p = m->off + i;

	for (size_t k = 0; k < m->nr_skips; k++)
		if (m->skip_at[k] <= i)
			p += m->skip_len[k];
	return p;
}

/*
 * Whether A's frame p, with its call site into its child, repeats a few
 * levels up or down: a recursion's, which confirms no particular level.
 */
#define RECURSION_SPAN 8

static bool recursion_level(const struct mt_slice *sl,
			    const struct mt_frame *fr, const struct chainv *a,
			    size_t p)
{
	uint32_t name = fr[sl[a->sl[p]].frame].name;
	size_t lo = p > RECURSION_SPAN ? p - RECURSION_SPAN : 0;

	for (size_t q = lo; q < a->n && q <= p + RECURSION_SPAN; q++)
		if (q != p && a->ip[q] == a->ip[p] &&
		    fr[sl[a->sl[q]].frame].name == name)
			return true;
	return false;
}

/* Whether a caller of B's chain is known from a jump landing in it, not
 * from the call it made (no return address into its child). */
bool stitch_jump_link(const struct chainv *b)
{
	for (size_t i = 0; i + 1 < b->n; i++)
		if (!b->ip[i])
			return true;
	return false;
}

/* stitch_try_align(), where jump_link is stitch_jump_link(b): the
 * caller that tries every alignment of b asks it once, not once each. */
static struct match try_align(const struct mt_slice *sl,
			      const struct mt_frame *fr, const struct chainv *a,
			      const struct chainv *b, size_t off, size_t ahead,
			      bool jump_link)
{
	struct match m = {.off = off, .ahead = ahead};
	size_t na = a->n, nb = b->n, change, p = off;
	/* The frames of B under one a jump revealed, where in A they went,
	 * and the frames joined and call sites confirmed before them. */
	size_t nst = 0, st_p[MAX_STEPS], st_len[MAX_STEPS];
	/* the call sites confirmed that no neighbouring level repeats, and
	 * the frames joined that are a recursion's levels */
	size_t own = 0, st_own[MAX_STEPS], rec = 0, st_rec[MAX_STEPS];
	/* which only a step reads: none without a caller B learnt by a jump */
	bool steps = !ahead && jump_link;

	for (size_t i = 0; p < na && ahead + i < nb; i++, p++) {
		const struct mt_slice *x = &sl[a->sl[p]];
		const struct mt_slice *y = &sl[b->sl[ahead + i]];
		uint64_t ra;
		/* The leaf's address is where B resumed, not a return. */
		uint64_t rb = ahead + i + 1 < nb ? b->ip[ahead + i] : 0;
		size_t from = p; /* before any step */
		bool level;

		/* B's previous frame was revealed by a jump (no call site
		 * into its child): its child may be further up. */
		uint32_t yname = fr[y->frame].name;

		if (fr[x->frame].name != yname && i && !ahead &&
		    !b->ip[i - 1] && m.nr_skips < MAX_SKIPS) {
			size_t q = p + 1;

			while (q < na && fr[sl[a->sl[q]].frame].name != yname)
				q++;
			if (q == na)
				break;
			for (size_t r = q + 1; r < na && !m.skip_guess; r++)
				if (fr[sl[a->sl[r]].frame].name == yname) {
					m.skip_guess = true;
					m.skip_from = p;
				}
			m.skip_at[m.nr_skips] = (uint32_t)i;
			m.skip_len[m.nr_skips++] = (uint32_t)(q - p);
			m.skipped += q - p;
			p = q;
			x = &sl[a->sl[p]];
		}
		if (fr[x->frame].name != yname)
			break;
		if (i && !ahead && !b->ip[i - 1] && nst < MAX_STEPS) {
			st_p[nst] = from;
			st_len[nst] = m.len;
			st_own[nst] = own;
			st_rec[nst] = rec;
			nst++;
		}
		m.len++;
		level = steps && recursion_level(sl, fr, a, p);
		rec += level;
		ra = a->ip[p];
		/* A different call site: this frame is the same, its child
		 * returned in the gap and it called another. */
		if (ra && rb) {
			if (ra != rb)
				break;
			m.confirmed++;
			if (!level)
				own++;
		}
		/*
		 * B resumed right where A's frame gets its child's return:
		 * the child returned inside the gap.  (That B resumed where
		 * A's leaf stopped says less: a loop inside the gap, or the
		 * function called again, comes back there too.)
		 */
		if (ahead + i + 1 == nb && ra && b->ip[ahead + i] == ra)
			m.confirmed++;
	}
	m.leaf = m.len && off + m.skipped + m.len == na;
	/*
	 * A frame of B under one a jump revealed sits somewhere below it,
	 * whether A's frames are stepped over or not: the jump may have
	 * unwound them and the function been called afresh.  Unless a call
	 * site at or below it backs it, or B's jumps landed in A's frames
	 * down to A's leaf, names alone put it there.  B's leaf alone is not
	 * enough: a fresh call comes back to the same places (the same
	 * system call, say).  Nor is a recursion's call site (a neighbouring
	 * level repeats it, so a level up or down fits it as well).  And
	 * down to A's leaf, the jumps do not back it when a recursion lies
	 * below the step: the jump may have unwound a level and the
	 * recursion made another, and the frames below fit a level lower as
	 * well.
	 */
	for (size_t k = 0; k < nst; k++)
		if (own == st_own[k] &&
		    !(m.leaf && m.len - st_len[k] >= 2 && rec == st_rec[k])) {
			if (!m.skip_guess || st_p[k] < m.skip_from) {
				m.skip_guess = true;
				m.skip_from = st_p[k];
			}
			break;
		}
	/*
	 * Recursion repeats the same frames at many depths, so names alone
	 * often fit several alignments.  A gap is short next to a stack's
	 * life: prefer the alignment that keeps A's leaf and changes the
	 * depth least, then the one with more call sites confirmed.  A
	 * frame stepped over is a claim B cannot back: it costs a little.
	 */
	p = off + m.skipped + nb;
	change = p > na + ahead ? p - na - ahead : na + ahead - p;
	m.score = (double)m.len + 2.0 * (double)m.confirmed +
		  (m.leaf ? 3.0 : 0.0) - 0.25 * (double)change -
		  0.5 * (double)m.nr_skips;
	return m;
}

struct match stitch_try_align(const struct mt_slice *sl,
			      const struct mt_frame *fr, const struct chainv *a,
			      const struct chainv *b, size_t off, size_t ahead)
{
	return try_align(sl, fr, a, b, off, ahead,
			 !ahead && stitch_jump_link(b));
}

/* The depth at which an alignment puts B's frames, relative to A's. */
long stitch_depth_of(const struct match *m)
{
	return (long)m->off - (long)m->ahead;
}

/* Keep m among the MAX_CAND best. */
static void keep_cand(struct alignment *r, const struct match *m)
{
	size_t i = r->nr_cand < MAX_CAND ? r->nr_cand++ : MAX_CAND;

	if (i == MAX_CAND) {
		if (m->score <= r->cand[MAX_CAND - 1].score)
			return;
		i = MAX_CAND - 1;
	}
	for (; i > 0 && r->cand[i - 1].score < m->score; i--)
		r->cand[i] = r->cand[i - 1];
	r->cand[i] = *m;
}

static void keep_backed(struct alignment *r, const struct match *m)
{
	if (!m->off && !m->ahead)
		r->at_root = *m;
	if (!m->confirmed)
		return;
	/* the loops visit off in rising order: the first seen is the
	 * highest at its depth */
	for (size_t i = 0; i < r->nr_backed; i++)
		if (stitch_depth_of(&r->backed[i]) == stitch_depth_of(m))
			return;
	if (r->nr_backed < 2)
		r->backed[r->nr_backed++] = *m;
}

/* Whether the alignment at off, ahead is one of the nskip in skip. */
static bool skipped(const struct align_at *skip, size_t nskip, size_t off,
		    size_t ahead)
{
	for (size_t k = 0; k < nskip; k++)
		if (skip[k].off == off && skip[k].ahead == ahead)
			return true;
	return false;
}

/* An alignment as the near ones are chosen by. */
struct tried {
	size_t len, confirmed;
};

/* As many frames as the best, and one call site more or less: B's leaf
 * resuming at the return site confirms every level of a recursion
 * through one site but A's leaf. */
static bool near_best(const struct alignment *r, const struct tried *m)
{
	return m->len == r->best.len && m->confirmed <= r->best.confirmed + 1 &&
	       m->confirmed + 1 >= r->best.confirmed;
}

void stitch_align_except(const struct mt_slice *sl, const struct mt_frame *fr,
			 const struct chainv *a, const struct chainv *b,
			 const struct align_at *skip, size_t nskip,
			 struct alignment *r)
{
	struct match m;
	/* What the alignments at each off with ahead 0 explained, for the
	 * near ones: each is tried once (on deep recursions, with hundreds
	 * of frames on either side, the tries are most of a conversion).
	 * NULL when there is no room: tried again. */
	struct tried *tried = malloc((a->n ? a->n : 1) * sizeof(*tried));
	bool jump_link = stitch_jump_link(b);

	memset(r, 0, sizeof(*r));
	for (size_t off = 0; off < a->n; off++)
		for (size_t ahead = 0; ahead < b->n; ahead++) {
			if (off && ahead)
				break; /* one side starts at its root */
			if (skipped(skip, nskip, off, ahead))
				continue;
			m = try_align(sl, fr, a, b, off, ahead, jump_link);
			if (!ahead && tried)
				tried[off] = (struct tried){m.len, m.confirmed};
			if (!m.len)
				continue;
			keep_cand(r, &m);
			keep_backed(r, &m);
			if (!r->best.len || m.score > r->best.score + 1e-9) {
				r->best = m;
				r->ties = 0;
			} else if (m.score > r->best.score - 1e-9) {
				r->ties++;
			}
		}
	if (!r->best.len)
		goto out;
	while (r->nr_cand &&
	       r->cand[r->nr_cand - 1].score < r->best.score - CAND_MARGIN)
		r->nr_cand--;
	for (size_t off = 0; off < a->n && r->nr_near < MAX_NEAR; off++) {
		if (skipped(skip, nskip, off, 0) ||
		    (tried && !near_best(r, &tried[off])))
			continue;
		m = try_align(sl, fr, a, b, off, 0, jump_link);
		if (near_best(r, &(struct tried){m.len, m.confirmed}))
			r->near[r->nr_near++] = m;
	}
out:
	free(tried);
}

void stitch_align(const struct mt_slice *sl, const struct mt_frame *fr,
		  const struct chainv *a, const struct chainv *b,
		  struct alignment *r)
{
	stitch_align_except(sl, fr, a, b, NULL, 0, r);
}

/*
 * Whether A's chain starts at the thread's root: the first segment's
 * root, or the same function (revealed again by a segment that returned
 * to it after an unjoined gap) where it occurs once on the chain, so
 * that it cannot be a recursion's other activation.
 */
bool stitch_at_thread_root(const struct thread_state *s, const struct chainv *a)
{
	const struct mt_slice *sl = s->th->slices;
	const struct mt_frame *fr = s->t->frames;
	uint32_t name = fr[sl[a->sl[0]].frame].name;

	if (sl[a->sl[0]].segment == s->first_segment)
		return true;
	if (name != s->root_name || stitch_parent_of(s, a->sl[0]) != MT_NONE)
		return false;
	for (size_t i = 1; i < a->n; i++)
		if (fr[sl[a->sl[i]].frame].name == name)
			return false;
	return true;
}

/* Names alone are weak evidence (recursion repeats them, and a function
 * may return and be called again inside a gap): a join needs a call site
 * that confirms it, or both stacks starting at the thread's root, the
 * one the trace began under. */
bool stitch_weak_match(const struct thread_state *s, const struct chainv *a,
		       const struct match *m)
{
	return !m->confirmed &&
	       (m->off > 0 || m->ahead > 0 || !stitch_at_thread_root(s, a));
}
