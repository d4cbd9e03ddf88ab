/* SPDX-License-Identifier: MIT */
/*
 * Tree edits, one thread at a time.
 *
 * Pairs are decided with slice indexes fixed: a joined frame of B gets an
 * alias (the A frame it is), parents are rewired, times extended.  One
 * rebuild at the end drops the aliases and lays the thread's slices out
 * again in pre-order, walking the tree from its roots, children by start
 * time, with depths recomputed from the parents.  So a join may attach
 * B's frames anywhere in A's tree, and B's revealed callers may become
 * callers of A's roots, without moving anything by hand.
 *
 * Every edit of a slice goes through stitch_slice_edit(), which keeps the
 * slice as it was the first time: stitch_undo_edits() gives the thread back
 * as segments/ built it.
 */
#include "stitch/stitch_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t stitch_ret_of(const struct thread_state *s, uint32_t slice)
{
	return mt_hmap_get(&s->rets_of, slice);
}

/* An unknown call site (0) is not kept: it would read as one anyway. */
int stitch_ret_set(struct thread_state *s, uint32_t slice, uint64_t ret)
{
	return ret ? mt_hmap_set(&s->rets_of, slice, ret) : 0;
}

/*
 * Slice i, to be edited: kept in the undo log first, the first time.
 * NULL when out of memory.  The bitmap comes with the first edit, so a
 * thread without joins costs nothing.
 */
struct mt_slice *stitch_slice_edit(struct thread_state *s, uint32_t i)
{
	struct undo_log *u = &s->undo;

	if (!u->saved) {
		u->saved = calloc(s->th->nr_slices / 8 + 1, 1);
		if (!u->saved)
			return NULL;
	}
	if (!(u->saved[i / 8] & (1u << (i % 8)))) {
		if (mt_grow((void **)&u->log, &u->cap, u->n + 1,
			    sizeof(*u->log)))
			return NULL;
		const struct mt_slice *x = &s->th->slices[i];

		u->log[u->n++] = (struct undo_entry){.ts = x->ts,
						     .dur = x->dur,
						     .idx = i,
						     .parent = x->parent,
						     .flags = x->flags};
		u->saved[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	return &s->th->slices[i];
}

/* Every slice back as it was before the thread's first edit. */
void stitch_undo_edits(struct thread_state *s)
{
	struct undo_log *u = &s->undo;

	for (size_t k = 0; k < u->n; k++) {
		struct mt_slice *x = &s->th->slices[u->log[k].idx];

		x->ts = u->log[k].ts;
		x->dur = u->log[k].dur;
		x->parent = u->log[k].parent;
		x->flags = u->log[k].flags;
	}
	u->n = 0;
	if (u->saved)
		memset(u->saved, 0, s->th->nr_slices / 8 + 1);
}

void stitch_undo_free(struct undo_log *u)
{
	free(u->saved);
	free(u->log);
	memset(u, 0, sizeof(*u));
}

uint32_t stitch_resolve(const struct thread_state *s, uint32_t i)
{
	while (s->alias[i] != i)
		i = s->alias[i];
	return i;
}

/*
 * The parent of slice i, through aliases.  A segment's roots share one
 * unknown parent: a tail call from the topmost frame makes a second root
 * beside the first (the segment's start chain root), so once that first
 * root is joined, all of them hang under its parent.  That first root
 * may have been joined to another segment's second root, which hangs
 * under its own first root's parent, and so on: followed to the first
 * that has a parent (one step was not enough: a root found so would
 * have been a root of the tree, beside the frames it ran under).
 */
uint32_t stitch_parent_of(const struct thread_state *s, uint32_t i)
{
	for (size_t n = 0; n < s->th->nr_slices; n++) {
		const struct mt_slice *x = &s->th->slices[i];
		uint32_t r;

		if (x->parent != MT_NONE)
			return stitch_resolve(s, x->parent);
		if (x->flags & MT_SLICE_GAP ||
		    x->segment >= s->t->nr_segments ||
		    !ends_of(s, x->segment)->nr_start)
			return MT_NONE;
		r = stitch_resolve(s, ends_of(s, x->segment)->start_chain[0]);
		if (r == i)
			return MT_NONE;
		i = r;
	}
	return MT_NONE;
}

/*
 * The frame of the function that called slice i: the calls a compiler
 * inlined are part of their function's frame here, as in the segments'
 * chains (their returns and call sites are the function's).
 */
static uint32_t caller_of(const struct thread_state *s, uint32_t i)
{
	uint32_t p = stitch_parent_of(s, i);

	for (size_t n = 0;
	     p != MT_NONE && (s->th->slices[p].flags & MT_SLICE_INLINED) &&
	     n < s->th->nr_slices;
	     n++)
		p = stitch_parent_of(s, p);
	return p;
}

/* A's open frames at its end, root first, through aliases; with the
 * return address into each where A knew it. */
int stitch_end_chain(struct thread_state *s, const struct seg_ends *a,
		     size_t *n)
{
	size_t len = 0;
	uint32_t x;

	*n = 0;
	if (!a->nr_end)
		return 0;
	x = stitch_resolve(s, a->end_chain[a->nr_end - 1]);
	for (;;) {
		if (mt_grow((void **)&s->chain, &s->cap_chain, len + 1,
			    sizeof(*s->chain)))
			return -ENOMEM;
		s->chain[len++] = x;
		x = caller_of(s, x);
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
		s->rets[i] = stitch_ret_of(s, s->chain[i + 1]);
	*n = len;
	return 0;
}

/* The same activation on both sides: x stays, y becomes x. */
int stitch_merge(struct thread_state *s, uint32_t x, uint32_t y)
{
	const struct mt_slice *sy = &s->th->slices[y];
	struct mt_slice *sx = stitch_slice_edit(s, x);
	uint64_t r = stitch_ret_of(s, x);

	if (!sx)
		return -ENOMEM;
	if (end_of(sy) > end_of(sx))
		sx->dur = mt_dur_fit(end_of(sy) - sx->ts);
	sx->flags = (sx->flags & ~MT_SLICE_INFERRED_END) |
		    (sy->flags & MT_SLICE_INFERRED_END) | MT_SLICE_JOINED;
	s->alias[y] = x;
	return r ? 0 : stitch_ret_set(s, x, stitch_ret_of(s, y));
}

/* The [decode gap] slice before B: the builder puts it just before B's
 * first slice (its start chain's root). */
uint32_t stitch_gap_before(const struct thread_state *s,
			   const struct seg_ends *b)
{
	uint32_t g = b->nr_start ? b->start_chain[0] : 0;

	if (g == 0 || !(s->th->slices[g - 1].flags & MT_SLICE_GAP))
		return MT_NONE;
	return g - 1;
}

/*
 * A's frames chain[from..n) are callers of frame y of B (segment ib):
 * they live at least as long as it.  For B's root, that is all of B (a
 * root of B that returned would have revealed its caller).
 */
static int live_through(struct thread_state *s, uint32_t ib, uint32_t y,
			size_t from, size_t n)
{
	const struct mt_segment *b = &s->t->segments[ib];
	uint64_t end = end_of(&s->th->slices[y]);
	uint32_t flags = s->th->slices[y].flags;

	if (y == ends_of(s, ib)->start_chain[0] && end < b->end) {
		end = b->end;
		flags = MT_SLICE_INFERRED_END;
	}

	for (size_t j = from; j < n; j++) {
		struct mt_slice *x = stitch_slice_edit(s, s->chain[j]);

		if (!x)
			return -ENOMEM;
		if (end > end_of(x))
			x->dur = mt_dur_fit(end - x->ts);
		x->flags = (x->flags & ~MT_SLICE_INFERRED_END) |
			   (flags & MT_SLICE_INFERRED_END) | MT_SLICE_JOINED;
	}
	return 0;
}

/* Slice i's parent becomes p. */
int stitch_slice_set_parent(struct thread_state *s, uint32_t i, uint32_t p)
{
	struct mt_slice *x = stitch_slice_edit(s, i);

	if (!x)
		return -ENOMEM;
	x->parent = p;
	return 0;
}

/* Slice i is flagged so. */
int stitch_slice_add_flags(struct thread_state *s, uint32_t i, uint32_t flags)
{
	struct mt_slice *x = stitch_slice_edit(s, i);

	if (!x)
		return -ENOMEM;
	x->flags |= flags;
	return 0;
}

/* A's root's segment's first root, when it is another slice with no
 * parent yet: the segment's other roots share its parent (stitch_parent_of()),
 * so it goes under B's revealed callers too. */
static uint32_t other_root(const struct thread_state *s, uint32_t aroot)
{
	const struct mt_slice *sl = s->th->slices;
	uint32_t seg = sl[aroot].segment, r0;

	if (seg >= s->t->nr_segments || !ends_of(s, seg)->nr_start)
		return MT_NONE;
	r0 = stitch_resolve(s, ends_of(s, seg)->start_chain[0]);
	return sl[r0].parent == MT_NONE && r0 != aroot ? r0 : MT_NONE;
}

/* When B's callers above A's root begin: with A's root, or with its
 * segment's first root if that began earlier. */
static uint64_t revealed_from(const struct thread_state *s)
{
	const struct mt_slice *sl = s->th->slices;
	uint32_t r0 = other_root(s, s->chain[0]);
	uint64_t from = sl[s->chain[0]].ts;

	return r0 != MT_NONE && sl[r0].ts < from ? sl[r0].ts : from;
}

/*
 * Whether B's frames ahead of A's root can become its callers: they are
 * moved back to when A's root began (hang_under_revealed()), so whatever
 * they hang under already (an island is hung under the frame live at its
 * gap, by a join across it) must have begun by then, or a caller would
 * begin after its callee.
 */
bool stitch_ahead_fits(const struct thread_state *s, const struct chainv *bv,
		       const struct match *m)
{
	uint32_t p;

	if (!m->ahead)
		return true;
	p = stitch_parent_of(s, stitch_resolve(s, bv->sl[0]));
	return p == MT_NONE || s->th->slices[p].ts <= revealed_from(s);
}

/*
 * Whether the ways up from px and from py, taken in step, meet at
 * different steps: py's callers include px's own frames (or the reverse),
 * at another depth.  A join that treats the two as the same callers,
 * level by level, would merge a frame with its own ancestor and close a
 * cycle: they are one tree already.  Meeting at the same step is where
 * the callers are one (the walk in step stops there).  1, 0 or -ENOMEM.
 */
static int meet_apart(const struct thread_state *s, uint32_t px, uint32_t py)
{
	struct mt_hmap step = {0};
	size_t n = 0;
	int rc = 0;

	if (px == MT_NONE || py == MT_NONE)
		return 0; /* the common case: no callers on one side */
	for (uint32_t p = px; p != MT_NONE && n < s->th->nr_slices;
	     p = stitch_parent_of(s, p), n++)
		if (mt_hmap_set(&step, p, n + 1)) {
			rc = -ENOMEM;
			goto out;
		}
	n = 0;
	for (uint32_t p = py; p != MT_NONE && n < s->th->nr_slices;
	     p = stitch_parent_of(s, p), n++) {
		uint64_t at;

		if (mt_hmap_find(&step, p, &at)) {
			rc = at != n + 1;
			break;
		}
	}
out:
	mt_hmap_free(&step);
	return rc;
}

/* Slices x and y are calls of one function, both inlined or neither:
 * one frame seen twice, as far as their names tell. */
static bool same_call(const struct thread_state *s, uint32_t x, uint32_t y)
{
	const struct mt_slice *a = &s->th->slices[x], *b = &s->th->slices[y];

	return mt_slice_name(s->t, a) == mt_slice_name(s->t, b) &&
	       (a->flags & MT_SLICE_INLINED) == (b->flags & MT_SLICE_INLINED);
}

/*
 * Whether B's first frame's callers of its own, if it has any, can be
 * A's frames where m puts it: the same functions going up, as far as
 * both go (above A's root, they become its callers).  Later segments
 * may have revealed them before a join across an island came back to A
 * with B's start chain; a join that puts B's frame under other callers
 * (a recursion's depth guessed otherwise, say) is wrong on their word,
 * and would leave them a tree of their own beside A's, through the same
 * time.
 */
bool stitch_callers_fit(const struct thread_state *s, const struct chainv *bv,
			const struct match *m)
{
	size_t nj = m->len - m->split;
	uint32_t px, py;

	if (m->ahead || (!nj && !m->split))
		return true;
	px = nj ? stitch_parent_of(s, s->chain[stitch_a_pos(m, 0)])
		: stitch_join_deepest(s, bv, m);
	py = stitch_parent_of(s, bv->sl[0]);
	/* already one tree, at another depth (out of memory: no join) */
	if (meet_apart(s, px, py))
		return false;
	for (size_t n = 0;
	     px != MT_NONE && py != MT_NONE && px != py && n < s->th->nr_slices;
	     n++) {
		if (!same_call(s, px, py))
			return false;
		px = stitch_parent_of(s, px);
		py = stitch_parent_of(s, py);
	}
	return true;
}

/* Slice i, one of B's callers above A's root, begins by from: joined,
 * and guessed if it is. */
static int move_back(struct thread_state *s, uint32_t i, uint64_t from,
		     bool guessed)
{
	struct mt_slice *y = stitch_slice_edit(s, i);
	uint64_t e;

	if (!y)
		return -ENOMEM;
	e = end_of(y);
	if (from < y->ts) {
		y->ts = from;
		y->dur = mt_dur_fit(e - y->ts);
	}
	y->flags |= MT_SLICE_JOINED | (guessed ? MT_SLICE_DEPTH_GUESSED : 0);
	return 0;
}

/*
 * B's callers above A's root were there before A began: they become A's
 * root's callers, from A's start.  So do the calls inlined in them that
 * were open when they made their calls (a caller comes with them): what
 * B's frame next down hangs under, up to B's frame above.  A's root goes
 * where B's frame it is hung: under the innermost of them.
 */
static int hang_under_revealed(struct thread_state *s, const struct chainv *bv,
			       const struct match *m)
{
	uint32_t aroot = s->chain[0], up = bv->sl[m->ahead - 1];
	uint32_t r0 = other_root(s, aroot);
	uint64_t from = revealed_from(s);

	for (size_t j = 0; j < m->ahead; j++) {
		bool guessed = j + m->bguess >= m->ahead;
		uint32_t p = stitch_parent_of(s, bv->sl[j + 1]);

		if (move_back(s, bv->sl[j], from, guessed))
			return -ENOMEM;
		for (size_t n = 0;
		     p != MT_NONE && p != stitch_resolve(s, bv->sl[j]) &&
		     (s->th->slices[p].flags & MT_SLICE_INLINED) &&
		     n < s->th->nr_slices;
		     p = stitch_parent_of(s, p), n++)
			if (move_back(s, p, from, guessed))
				return -ENOMEM;
	}
	{
		uint32_t p = stitch_parent_of(s, bv->sl[m->ahead]);

		if (p != MT_NONE && p != aroot &&
		    (s->th->slices[p].flags & MT_SLICE_INLINED))
			up = p;
	}
	if (stitch_slice_set_parent(s, aroot, up) ||
	    (r0 != MT_NONE && stitch_slice_set_parent(s, r0, up)))
		return -ENOMEM;
	return 0;
}

/* Most calls inlined around one another that are told apart: deeper
 * nests are left as they are. */
#define MAX_INLINED 64

/*
 * The calls inlined in i's caller that i was made from, innermost first,
 * into in (MAX_INLINED at most); *caller: the frame they are inlined in.
 */
static size_t inlined_around(const struct thread_state *s, uint32_t i,
			     uint32_t *in, uint32_t *caller)
{
	size_t n = 0;
	uint32_t p = stitch_parent_of(s, i);

	while (p != MT_NONE && (s->th->slices[p].flags & MT_SLICE_INLINED) &&
	       n < MAX_INLINED) {
		in[n++] = p;
		p = stitch_parent_of(s, p);
	}
	*caller = p;
	return n;
}

/* Whether inlined calls a and b are the same call: the same function,
 * from the same line where both know it. */
static bool same_inlined(const struct thread_state *s, uint32_t a, uint32_t b)
{
	const struct mt_slice *x = &s->th->slices[a], *y = &s->th->slices[b];

	return mt_slice_name(s->t, x) == mt_slice_name(s->t, y) &&
	       (!x->site || !y->site || x->site == y->site);
}

/*
 * Frames x (A's) and y (B's) were just joined.  The calls their caller
 * inlined, open around the call that made them, are one activation on
 * both sides too (the call site that placed x there placed y): left
 * apart, A's would stretch with x across the gap while B's began after
 * it, two siblings at once under the caller.  Merged from the caller
 * down, as far as both sides hang under the same frame and agree; what
 * is left of B's then begins after the gap, beside A's that ended there.
 */
static int merge_inlined(struct thread_state *s, uint32_t x, uint32_t y)
{
	uint32_t ia[MAX_INLINED], ib[MAX_INLINED], ca, cb;
	size_t na = inlined_around(s, x, ia, &ca);
	size_t nb = inlined_around(s, y, ib, &cb);

	if (ca != cb)
		return 0;
	while (na && nb && same_inlined(s, ia[na - 1], ib[nb - 1])) {
		uint32_t a = ia[--na], b = ib[--nb];

		if (a != b && stitch_merge(s, a, b))
			return -ENOMEM;
	}
	if (na || !nb)
		return 0;
	/* B saw calls inlined around y that A did not around x (an earlier
	 * join hung x under its caller, not knowing them): they were open
	 * when x began. */
	for (size_t k = nb; k-- > 0;)
		if (move_back(s, ib[k], s->th->slices[x].ts, false))
			return -ENOMEM;
	return stitch_slice_set_parent(s, x, ib[0]);
}

/*
 * A's frames from px up and B's from py up are the same callers: B's
 * were revealed by later segments before a join across an island, or
 * the second pass, came back to A with B's own start chain.  Those that
 * match, going up, are merged; what is left of B's above A's root
 * (top, the last of A's so far) becomes its callers from its start, as
 * B's revealed callers do (hang_under_revealed()).  Left alone, they
 * would stay a tree of their own beside A's, through the same time.
 */
static int merge_callers(struct thread_state *s, uint32_t px, uint32_t py,
			 uint32_t top)
{
	size_t n = 0;
	int rc = meet_apart(s, px, py);

	/* B's callers are A's frames already, at another depth (a segment
	 * between hung under A, and B under it): merging them level by
	 * level would make a frame its own ancestor */
	if (rc)
		return rc < 0 ? rc : 0;
	for (;
	     px != MT_NONE && py != MT_NONE && px != py && n < s->th->nr_slices;
	     n++) {
		/* not the same callers (stitch_callers_fit() keeps the joins
		 * from it): left as they are */
		if (!same_call(s, px, py))
			return 0;
		if (stitch_merge(s, px, py))
			return -ENOMEM;
		top = px;
		px = stitch_parent_of(s, px);
		py = stitch_parent_of(s, py);
	}
	if (px != MT_NONE || py == MT_NONE || top == MT_NONE)
		return 0;
	for (uint32_t p = py; p != MT_NONE && n < s->th->nr_slices;
	     p = stitch_parent_of(s, p), n++)
		if (move_back(s, p, s->th->slices[top].ts, false))
			return -ENOMEM;
	return stitch_slice_set_parent(s, top, py);
}

/*
 * The deepest frame of A's live through the gap.  B's other activation
 * goes beside A's frame, under its caller: the frame above it in A,
 * which is B's frame above, joined, unless a longjmp's step lies between
 * them (the frames stepped over lived until the jump, and B's new call
 * was made by the last of them).
 */
uint32_t stitch_join_deepest(const struct thread_state *s,
			     const struct chainv *bv, const struct match *m)
{
	size_t p;

	if (m->len && !m->split)
		return s->chain[stitch_a_pos(m, m->len - 1)];
	p = stitch_a_pos(m, m->len ? m->len - 1 : 0);
	if (p)
		return s->chain[p - 1];
	return m->ahead ? bv->sl[m->ahead - 1] : MT_NONE;
}

/* Join B (segment ib, its frames bv, root first) to A (s->chain, na
 * frames) as m says, across the gap that began at time at. */
int stitch_apply_join(struct thread_state *s, uint32_t ib, uint64_t at,
		      size_t na, const struct chainv *bv, const struct match *m)
{
	const struct seg_ends *b = ends_of(s, ib);
	uint32_t deepest = stitch_join_deepest(s, bv, m);
	uint32_t gap = stitch_gap_before(s, b);
	size_t nj = m->len - m->split;
	int rc = 0;

	s->joins++;
	for (size_t i = 0; i < nj && !rc; i++)
		rc = stitch_merge(s, s->chain[stitch_a_pos(m, i)],
				  bv->sl[m->ahead + i]);
	/* B's first frame, joined, may have callers of its own already */
	if (!rc && nj && !m->ahead)
		rc = merge_callers(
			s, stitch_parent_of(s, s->chain[stitch_a_pos(m, 0)]),
			stitch_parent_of(s, bv->sl[0]),
			s->chain[stitch_a_pos(m, 0)]);
	for (size_t i = 0; i < nj && !rc; i++)
		rc = merge_inlined(s, s->chain[stitch_a_pos(m, i)],
				   bv->sl[m->ahead + i]);
	/* B's other activation hangs beside A's: under its caller, which
	 * is B's too once joined (but where a step lies between), else
	 * A's. */
	if (!rc && m->split && !nj && !m->ahead)
		rc = merge_callers(s, deepest, stitch_parent_of(s, bv->sl[0]),
				   MT_NONE);
	if (!rc && m->split &&
	    ((!nj && !m->ahead) ||
	     (nj && stitch_a_pos(m, nj) - 1 != stitch_a_pos(m, nj - 1))))
		rc = stitch_slice_set_parent(s, bv->sl[m->ahead + nj], deepest);
	/* A's callers above the join live at least as long. */
	if (!rc)
		rc = live_through(s, ib, b->start_chain[0], 0, m->off);
	/* and so do the frames B stepped over, between joined ones */
	for (size_t k = 0; k < m->nr_skips && !rc; k++) {
		size_t to = stitch_a_pos(m, m->skip_at[k]);

		rc = live_through(s, ib, bv->sl[m->ahead + m->skip_at[k]],
				  to - m->skip_len[k], to);
	}
	/* From here, a guess's depth, or none that this join settled. */
	if (!rc)
		rc = stitch_guess_at_join(s, at, na, bv, b->nr_start, m);
	if (!rc && m->ahead)
		rc = hang_under_revealed(s, bv, m);
	/* The gap between sits under the deepest joined frame. */
	if (!rc && gap != MT_NONE)
		rc = stitch_slice_set_parent(s, gap, deepest);
	return rc;
}

/*
 * B's start chain with the callers above its roots that the first pass
 * learnt from later segments (joined to B, they revealed B's callers),
 * root first, resolved, with where each child returned to: into
 * s->xs/s->xi.  Returns the length, 0 when out of memory.
 */
size_t stitch_extended_chain(struct thread_state *s, const struct seg_ends *b)
{
	size_t up = 0, n;
	uint32_t x = caller_of(s, stitch_resolve(s, b->start_chain[0]));

	for (uint32_t p = x; p != MT_NONE && up < (1u << 20);
	     p = caller_of(s, p))
		up++;
	n = up + b->nr_start;
	if (mt_grow((void **)&s->xs, &s->cap_xs, n, sizeof(*s->xs)))
		return 0;
	free(s->xi);
	s->xi = malloc(n * sizeof(*s->xi));
	if (!s->xi)
		return 0;
	for (size_t i = up; i-- > 0; x = caller_of(s, x))
		s->xs[i] = x;
	for (size_t i = 0; i < b->nr_start; i++) {
		s->xs[up + i] = stitch_resolve(s, b->start_chain[i]);
		s->xi[up + i] = b->start_ips[i];
	}
	for (size_t i = 0; i < up; i++)
		s->xi[i] = stitch_ret_of(s, s->xs[i + 1]);
	return n;
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
 * Whether the kept slices, with the parents in par, make a tree: joins
 * that close a cycle leave slices that no walk from the roots reaches.
 * Each slice's way up is walked once: marked on the way, rooted once it
 * is known to end at a root.  Returns 0, -EINVAL or -ENOMEM.
 */
static int reaches_roots(const struct thread_state *s, const uint32_t *par)
{
	enum { UNSEEN, ON_PATH, ROOTED };
	size_t n = s->th->nr_slices;
	uint8_t *mark = calloc(n ? n : 1, 1);

	if (!mark)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t x = (uint32_t)i;

		if (s->alias[i] != i)
			continue;
		for (; x != MT_NONE && mark[x] == UNSEEN; x = par[x])
			mark[x] = ON_PATH;
		if (x != MT_NONE && mark[x] == ON_PATH) {
			free(mark);
			return -EINVAL;
		}
		for (x = (uint32_t)i; x != MT_NONE && mark[x] == ON_PATH;
		     x = par[x])
			mark[x] = ROOTED;
	}
	free(mark);
	return 0;
}

/*
 * Whether two slices with one parent (or two roots) overlap in time,
 * out[0..n) in pre-order (children after their parent, in start order);
 * last (n + 1 slots) is scratch.  A call tree has no such pair: a trace
 * viewer would cut one short to nest them, and the database would
 * disagree with it.
 */
static bool siblings_overlap(const struct mt_slice *out, size_t n,
			     uint32_t *last)
{
	/* last[p]: the latest child of p so far, p == n for the roots */
	for (size_t i = 0; i <= n; i++)
		last[i] = MT_NONE;
	for (size_t i = 0; i < n; i++) {
		size_t p = out[i].parent == MT_NONE ? n : out[i].parent;

		if (last[p] != MT_NONE && out[i].ts < end_of(&out[last[p]]))
			return true;
		last[p] = (uint32_t)i;
	}
	return false;
}

/*
 * Lay the kept slices out again, their parents in newidx (which it
 * reuses): the tree from its roots, children by start time (then by
 * their old order), depths from the parents.
 */
static int lay_out(struct thread_state *s, uint32_t *newidx)
{
	struct mt_thread *th = s->th;
	size_t n = th->nr_slices, kept = 0, at = 0, sp = 0;
	struct order *ord = malloc((n ? n : 1) * sizeof(*ord));
	uint32_t *first = malloc((n + 1) * sizeof(*first));
	uint32_t *kids = malloc((n ? n : 1) * sizeof(*kids));
	uint32_t *fill = calloc(n + 1, sizeof(*fill));
	uint32_t *stack = malloc((n + 1) * sizeof(*stack));
	struct mt_slice *out = malloc((n ? n : 1) * sizeof(*out));
	/* where each kept slice goes, for the guessed spans */
	uint32_t *where =
		s->nr_spans ? malloc((n ? n : 1) * sizeof(*where)) : NULL;
	int rc = -ENOMEM;

	if (!ord || !first || !kids || !fill || !stack || !out ||
	    (s->nr_spans && !where))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mt_slice *x = &th->slices[i];

		if (s->alias[i] != i)
			continue;
		ord[kept++] = (struct order){x->ts, (uint32_t)i};
	}
	qsort(ord, kept, sizeof(*ord), cmp_order);
	/* Children lists (slot n holds the roots), in start order. */
	memset(first, 0, (n + 1) * sizeof(*first));
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = newidx[ord[k].idx];

		fill[p == MT_NONE ? n : p]++;
	}
	for (size_t i = 0, sum = 0; i <= n; i++) {
		first[i] = (uint32_t)sum;
		sum += fill[i];
		fill[i] = 0;
	}
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = newidx[ord[k].idx];
		size_t slot = p == MT_NONE ? n : p;

		kids[first[slot] + fill[slot]++] = ord[k].idx;
	}
	/* Depth-first, roots in order; push children in reverse, each
	 * with its parent's new index in newidx (a root's is MT_NONE). */
	for (size_t k = fill[n]; k-- > 0;)
		stack[sp++] = kids[first[n] + k];
	while (sp) {
		uint32_t i = stack[--sp];
		struct mt_slice x = th->slices[i];

		x.parent = newidx[i];
		x.depth = x.parent == MT_NONE ? 0 : out[x.parent].depth + 1;
		for (size_t k = fill[i]; k-- > 0;) {
			newidx[kids[first[i] + k]] = (uint32_t)at;
			stack[sp++] = kids[first[i] + k];
		}
		if (where)
			where[i] = (uint32_t)at;
		out[at++] = x;
	}
	if (at != kept) {
		/* A cycle would leave slices unreached (reaches_roots()
		 * rules it out): keep the old array rather than lose them. */
		s->fault = "joins close a cycle";
		rc = -EINVAL;
		goto out;
	}
	/* Nor may a callee begin before its caller: a trace viewer would
	 * nest it elsewhere, or not at all (stitch_ahead_fits() keeps the joins
	 * from doing it; this keeps a fault of ours out of the output). */
	for (size_t i = 0; i < at; i++)
		if (out[i].parent != MT_NONE &&
		    out[i].ts < out[out[i].parent].ts) {
			s->fault = "a callee begins before its caller";
			rc = -EINVAL;
			goto out;
		}
	/* Below a frame put at a depth nobody can tell (under the root,
	 * across a sliver), every depth is a guess for its whole life. */
	for (size_t i = 0; i < at; i++)
		if (out[i].parent != MT_NONE &&
		    (out[out[i].parent].flags & MT_SLICE_DEPTH_GUESSED))
			out[i].flags |= MT_SLICE_DEPTH_GUESSED;
	/*
	 * A caller spans its callees.  A join extends A's callers through
	 * B, but not through the segments already joined under B (the
	 * second pass joins whole runs): children after parents in
	 * pre-order, so one backward sweep carries every end up.
	 */
	for (size_t i = at; i-- > 0;) {
		struct mt_slice *x = &out[i], *p;

		if (x->parent == MT_NONE)
			continue;
		p = &out[x->parent];
		if (end_of(x) > end_of(p)) {
			p->dur = mt_dur_fit(end_of(x) - p->ts);
			p->flags = (p->flags & ~MT_SLICE_INFERRED_END) |
				   (x->flags & MT_SLICE_INFERRED_END);
		}
	}
	if (siblings_overlap(out, at, stack)) {
		s->fault = "two calls under one caller overlap in time";
		rc = -EINVAL;
		goto out;
	}
	/* and what ran at a guessed depth, as long as the guess stood */
	if (where && stitch_guess_mark(s, out, at, where))
		goto out;
	memcpy(th->slices, out, at * sizeof(*out));
	th->nr_slices = at;
	rc = 0;
out:
	free(ord);
	free(first);
	free(kids);
	free(fill);
	free(stack);
	free(out);
	free(where);
	return rc;
}

/*
 * The thread's slices as the joins left them, in pre-order.  Parents are
 * all settled before any is rewritten (stitch_parent_of() reads a root's
 * start-chain root, which may come later), and kept aside until the tree
 * is known to be one.  Any failure (a cycle, a callee that would begin
 * before its caller, out of memory) leaves the slices as the joins left
 * them, for stitch_undo_edits(): the log goes only once the new layout is in
 * place.
 */
int stitch_rebuild(struct thread_state *s)
{
	size_t n = s->th->nr_slices;
	uint32_t *par = malloc((n ? n : 1) * sizeof(*par));
	int rc;

	if (!par)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (s->alias[i] == i)
			par[i] = stitch_parent_of(s, (uint32_t)i);
	rc = reaches_roots(s, par);
	if (rc == -EINVAL)
		s->fault = "joins close a cycle";
	if (!rc)
		rc = lay_out(s, par);
	if (!rc)
		stitch_undo_free(&s->undo);
	free(par);
	return rc;
}
