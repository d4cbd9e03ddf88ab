/*
 * Stitching, one thread at a time.
 *
 * Slices keep their indexes while pairs are decided: a joined frame of B
 * gets an alias (the A frame it is), B's slices get a depth shift, and one
 * compaction at the end drops the aliases and renumbers parents.  So a
 * segment joined to its predecessor still offers its end chain to its
 * successor: the chain is rebuilt by walking parents through the aliases.
 */
#include "stitch/stitch.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct thread_state {
	struct mt_trace *t;
	struct mt_thread *th;
	uint32_t *alias; /* slice -> the slice it is (itself if kept) */
	int32_t *shift;	 /* per slice: depth to add */
	uint32_t *chain; /* scratch: A's end chain, root first */
	uint64_t *rets;
	size_t cap_chain;
};

static uint32_t resolve(const struct thread_state *s, uint32_t i)
{
	while (s->alias[i] != i)
		i = s->alias[i];
	return i;
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
		if (s->th->slices[x].parent == MT_NONE)
			break;
		x = resolve(s, s->th->slices[x].parent);
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
	/* A's own frames are the deepest nr_end of the chain. */
	for (size_t i = 0; i < a->nr_end && i < len; i++)
		s->rets[len - a->nr_end + i] = a->end_rets[i];
	*n = len;
	return 0;
}

struct match {
	size_t off, len, confirmed;
	bool leaf; /* A's leaf is among the joined frames */
	double score;
};

/*
 * Align B's root with A's frame off and count the frames that are the
 * same: same function, and, where both sides know it, the same call site
 * for the child.  A different call site ends the join below that frame
 * (its child returned in the gap and it called another).
 */
static struct match try_offset(const struct thread_state *s, size_t na,
			       const struct mt_segment *b, size_t off)
{
	struct match m = {.off = off};
	const struct mt_slice *sl = s->th->slices;
	size_t nb = b->nr_start, change;

	for (size_t i = 0; off + i < na && i < nb; i++) {
		const struct mt_slice *x = &sl[s->chain[off + i]];
		const struct mt_slice *y = &sl[b->start_chain[i]];
		uint64_t ra = s->rets[off + i];
		/* The leaf's address is where B resumed, not a return. */
		uint64_t rb = i + 1 < nb ? b->start_ips[i] : 0;

		if (x->name != y->name)
			break;
		m.len++;
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
	change = off + nb > na ? off + nb - na : na - (off + nb);
	m.score = (double)m.len + 2.0 * (double)m.confirmed +
		  (m.leaf ? 3.0 : 0.0) - 0.25 * (double)change;
	return m;
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

/* Decide A -> B and join what is the same. */
static int stitch_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       bool join)
{
	struct mt_trace *t = s->t;
	const struct mt_segment *a = &t->segments[ia], *b = &t->segments[ib];
	struct mt_slice *sl = s->th->slices;
	struct match best = {0}, m;
	size_t na, ties = 0;
	char why[160];
	double score;
	int rc = end_chain(s, a, &na);

	if (rc)
		return rc;
	if (!na || !b->nr_start)
		return record(t, s->th->tid, ia, ib, 0, 0,
			      "no frames on one side");
	for (size_t off = 0; off < na; off++) {
		m = try_offset(s, na, b, off);
		if (!m.len)
			continue;
		if (!best.len || m.score > best.score + 1e-9) {
			best = m;
			ties = 0;
		} else if (m.score > best.score - 1e-9) {
			ties++;
		}
	}
	score = best.score;
	if (!best.len)
		return record(t, s->th->tid, ia, ib, 0, 0, "no common frames");
	if (ties) {
		snprintf(why, sizeof(why),
			 "ambiguous: %zu alignments explain %zu frames",
			 ties + 1, best.len);
		return record(t, s->th->tid, ia, ib, 0, score, why);
	}
	/* Names alone are weak evidence (recursion repeats them): join only
	 * where a call site confirms it, or where both stacks start at the
	 * same root. */
	if (!best.confirmed && best.off > 0)
		return record(t, s->th->tid, ia, ib, 0, score,
			      "weak: no call site confirms the frames");
	snprintf(why, sizeof(why),
		 "%zu frame%s by name, %zu by call site, %zu ancestor%s kept",
		 best.len, best.len == 1 ? "" : "s", best.confirmed, best.off,
		 best.off == 1 ? "" : "s");
	rc = record(t, s->th->tid, ia, ib, join ? (uint32_t)best.len : 0, score,
		    why);
	if (rc || !join)
		return rc;

	{
		uint32_t deepest = s->chain[best.off + best.len - 1];
		uint32_t bend = (uint32_t)(b->start_chain[0]);
		uint64_t b_root_end = end_of(&sl[bend]);
		uint32_t b_root_flags = sl[bend].flags;
		int32_t shift =
			(int32_t)(sl[s->chain[best.off]].depth +
				  (uint32_t)s->shift[s->chain[best.off]]) -
			(int32_t)sl[bend].depth;

		/* The same activations: one slice each, to B's end of it. */
		for (size_t i = 0; i < best.len; i++) {
			struct mt_slice *x = &sl[s->chain[best.off + i]];
			const struct mt_slice *y = &sl[b->start_chain[i]];

			if (end_of(y) > end_of(x))
				x->dur = end_of(y) - x->ts;
			x->flags = (x->flags & ~MT_SLICE_INFERRED_END) |
				   (y->flags & MT_SLICE_INFERRED_END) |
				   MT_SLICE_JOINED;
			s->alias[b->start_chain[i]] = s->chain[best.off + i];
		}
		/* Their callers live at least as long. */
		for (size_t j = 0; j < best.off; j++) {
			struct mt_slice *x = &sl[s->chain[j]];

			if (b_root_end > end_of(x))
				x->dur = b_root_end - x->ts;
			x->flags = (x->flags & ~MT_SLICE_INFERRED_END) |
				   (b_root_flags & MT_SLICE_INFERRED_END) |
				   MT_SLICE_JOINED;
		}
		/* B's slices move under them; the gap between sits under the
		 * deepest joined frame. */
		for (size_t i = 0; i < s->th->nr_slices; i++) {
			if (sl[i].segment == ib &&
			    !(sl[i].flags & MT_SLICE_GAP))
				s->shift[i] = shift;
			else if ((sl[i].flags & MT_SLICE_GAP) &&
				 sl[i].segment == ia && sl[i].ts >= a->end &&
				 end_of(&sl[i]) <= b->start) {
				sl[i].parent = deepest;
				s->shift[i] =
					(int32_t)(sl[deepest].depth +
						  (uint32_t)s->shift[deepest] +
						  1) -
					(int32_t)sl[i].depth;
			}
		}
	}
	return 0;
}

/* Drop aliased slices, renumber parents, apply depth shifts. */
static int compact(struct thread_state *s)
{
	struct mt_thread *th = s->th;
	uint32_t *newidx =
		malloc((th->nr_slices ? th->nr_slices : 1) * sizeof(*newidx));
	size_t at = 0;

	if (!newidx)
		return -ENOMEM;
	for (size_t i = 0; i < th->nr_slices; i++)
		newidx[i] = s->alias[i] == i ? (uint32_t)at++ : MT_NONE;
	at = 0;
	for (size_t i = 0; i < th->nr_slices; i++) {
		struct mt_slice x = th->slices[i];

		if (s->alias[i] != i)
			continue;
		x.depth = (uint32_t)((int32_t)x.depth + s->shift[i]);
		if (x.parent != MT_NONE)
			x.parent = newidx[resolve(s, x.parent)];
		th->slices[at++] = x;
	}
	th->nr_slices = at;
	free(newidx);
	return 0;
}

static int stitch_thread(struct mt_trace *t, struct mt_thread *th, bool join)
{
	struct thread_state s = {.t = t, .th = th};
	uint32_t prev = MT_NONE;
	int rc = 0;

	s.alias =
		malloc((th->nr_slices ? th->nr_slices : 1) * sizeof(*s.alias));
	s.shift = calloc(th->nr_slices ? th->nr_slices : 1, sizeof(*s.shift));
	if (!s.alias || !s.shift) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < th->nr_slices; i++)
		s.alias[i] = (uint32_t)i;
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		if (t->segments[i].tid != th->tid)
			continue;
		if (prev != MT_NONE)
			rc = stitch_pair(&s, prev, (uint32_t)i, join);
		prev = (uint32_t)i;
	}
	if (!rc && join)
		rc = compact(&s);
out:
	free(s.alias);
	free(s.shift);
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
			snprintf(err, errlen, "out of memory while stitching");
			return rc;
		}
	}
	return 0;
}
