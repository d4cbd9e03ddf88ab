/* SPDX-License-Identifier: MIT */
/*
 * Stitching, one thread at a time and one program of it at a time (an
 * exec begins another run of segments): each pair of neighbours decided
 * and joined, then the pairs left apart again with what the joins
 * revealed, then across segments that joined neither side.  A thread
 * whose joins do not make a tree is given back as it was.
 *
 * A segment joined to its predecessor still offers its end chain to its
 * successor: the chain is rebuilt by walking parents through the aliases.
 */
#include "stitch/stitch.h"
#include "stitch/stitch_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char not_ahead[] =
	"B already hangs under a frame that began after A's root";
static const char not_callers[] =
	"B's callers, which later segments revealed, are not A's";

/* Decide A -> B and join what is the same. */
static int stitch_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       bool join)
{
	struct mt_trace *t = s->t;
	const struct seg_ends *b = ends_of(s, ib);
	struct match m;
	struct chainv av, bv;
	size_t na;
	char why[256];
	int rc = stitch_end_chain(s, ends_of(s, ia), &na);

	if (rc)
		return rc;
	if (!na || !b->nr_start)
		return record(t, s->th->tid, ia, ib, 0, 0,
			      "no frames on one side");
	av = (struct chainv){s->chain, s->rets, na, ends_of(s, ia)->end_at};
	bv = (struct chainv){b->start_chain, b->start_ips, b->nr_start};
	if (!stitch_decide(s, &av, &bv, ib, &m, why, sizeof(why)))
		return record(t, s->th->tid, ia, ib, 0, m.len ? m.score : 0,
			      why);
	if (join && (!stitch_ahead_fits(s, &bv, &m) ||
		     !stitch_callers_fit(s, &bv, &m))) {
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; not joined: %s",
			 stitch_ahead_fits(s, &bv, &m) ? not_callers
						       : not_ahead);
		return record(t, s->th->tid, ia, ib, 0, m.score, why);
	}
	rc = record(t, s->th->tid, ia, ib,
		    join ? (uint32_t)(m.len - m.split) : 0, m.score, why);
	if (rc || !join)
		return rc;
	return stitch_apply_join(s, ib, t->segments[ia].end, na, &bv, &m);
}

/* A decision the first pass recorded, made again: now a join as m says. */
static int amend(struct mt_trace *t, struct mt_stitch *st, const char *why,
		 const struct match *m)
{
	st->reason = mt_str_intern(&t->strs, why);
	if (st->reason == MT_NONE)
		return -ENOMEM;
	st->frames_joined = (uint32_t)(m->len - m->split);
	st->score = m->score;
	return 0;
}

/*
 * The first root of the segment that root i (a slice without a parent)
 * is a second root of, through the segments whose first roots were
 * joined to second roots: the slice whose parent i would share.
 */
static uint32_t first_root(const struct thread_state *s, uint32_t i)
{
	for (size_t n = 0; n < s->th->nr_slices; n++) {
		const struct mt_slice *x = &s->th->slices[i];
		uint32_t r;

		if (x->parent != MT_NONE || x->flags & MT_SLICE_GAP ||
		    x->segment >= s->t->nr_segments ||
		    !ends_of(s, x->segment)->nr_start)
			break;
		r = stitch_resolve(s, ends_of(s, x->segment)->start_chain[0]);
		if (r == i)
			break;
		i = r;
	}
	return i;
}

/*
 * The island: X may be a run of segments joined to one another but to
 * neither side (a longjmp landed where no frame of A confirms it, and
 * the island's own returns never climbed to a frame of A's).  Its top is
 * the callers its later segments revealed above its first root, into
 * *top.  False when X is no island to hang under A: its top is a frame
 * of another segment (it hangs under A already, across an earlier
 * sliver, or under callers a later segment revealed in the second
 * pass), or B hangs under it already (a later segment tied them, or
 * the pair X -> B hung B's other activation under X's frame: no frame
 * joined, but one tree; under a second root of X's, too).
 */
static bool handle_island(const struct thread_state *s, size_t k, size_t rec,
			  const struct seg_ends *x, const struct seg_ends *b,
			  uint32_t *top)
{
	const struct mt_trace *t = s->t;
	const struct mt_slice *sl = s->th->slices;
	uint32_t up = stitch_resolve(s, x->start_chain[0]);
	bool own = false;

	for (size_t n = 0; sl[up].parent != MT_NONE && n < s->th->nr_slices;
	     n++)
		up = stitch_resolve(s, sl[up].parent);
	for (size_t q = k; q < rec && !own; q++)
		own = sl[up].segment == t->stitches[q].seg_b;
	if (!own)
		return false;
	for (uint32_t y = stitch_resolve(s, b->start_chain[0]), n = 0;
	     y != MT_NONE && n <= s->th->nr_slices; n++) {
		uint32_t p = stitch_parent_of(s, y);

		if (y == up || (p == MT_NONE && first_root(s, y) == up))
			return false;
		y = p;
	}
	*top = up;
	return true;
}

/* Two gaps and a segment that fits neither side: under the first joined
 * frame, a function may have returned and been called again from the
 * same place in between, which nothing here can rule out. */
static void handle_sliver_guess(struct match *m)
{
	if (m->len > 1 && (!m->guessed || m->sure > m->off + 1)) {
		m->guessed = true;
		m->sure = m->off + 1;
	}
}

/* What join_across() adds to the reason: from A (ia) across X's run of
 * segments ix .. last. */
static void across_note(char *why, size_t len, uint32_t ia, uint32_t ix,
			uint32_t last, const struct match *m)
{
	char run[48];
	size_t at = strlen(why);

	if (ix == last)
		snprintf(run, sizeof(run), "%u, which joins", ix);
	else
		snprintf(run, sizeof(run), "%u to %u, which join", ix, last);
	snprintf(why + at, len - at, "; to segment %u, across %s neither%s", ia,
		 run, m->len > 1 ? " (a guess below the first frame)" : "");
}

/*
 * A segment X that joined neither neighbour (a sliver between two
 * overflows, say, that saw one frame of a recursion) must not cut the
 * thread in two: the segment after it, B, is compared with the one
 * before it, A, as if X were part of the gap.  When they join, X goes
 * under the deepest joined frame, its depth a guess.  X may be an island
 * (handle_island()).  Records k (A -> X's first) to rec (its last -> B):
 * rec says so.
 */
static int join_across(struct thread_state *s, size_t k, size_t rec)
{
	struct mt_trace *t = s->t;
	uint32_t ia = t->stitches[k].seg_a, ib = t->stitches[rec].seg_b;
	uint32_t ix = t->stitches[k].seg_b;
	const struct seg_ends *b = ends_of(s, ib), *x = ends_of(s, ix);
	struct mt_stitch *st = &t->stitches[rec];
	struct chainv av, bv;
	struct match m;
	size_t na;
	uint32_t top = MT_NONE, deepest, g;
	char why[320];
	int rc = stitch_end_chain(s, ends_of(s, ia), &na);

	if (rc || !na || !b->nr_start)
		return rc;
	av = (struct chainv){s->chain, s->rets, na, ends_of(s, ia)->end_at};
	bv = (struct chainv){b->start_chain, b->start_ips, b->nr_start};
	if (x->nr_start && !handle_island(s, k, rec, x, b, &top))
		return 0;
	if (!stitch_decide(s, &av, &bv, ib, &m, why, sizeof(why)) ||
	    !stitch_ahead_fits(s, &bv, &m) || !stitch_callers_fit(s, &bv, &m))
		return 0;
	deepest = stitch_join_deepest(s, &bv, &m);
	if (top != MT_NONE) {
		/* X ran while the joined frames were live, somewhere under
		 * the deepest of them: at a depth nobody can tell.  Unless
		 * X is among them (hung there by an earlier join). */
		for (size_t i = 0; i <= stitch_a_pos(&m, m.len - 1); i++)
			if (s->chain[i] == top)
				return 0;
		if (stitch_slice_set_parent(s, top, deepest) ||
		    stitch_slice_add_flags(s, top, MT_SLICE_DEPTH_GUESSED))
			return -ENOMEM;
	}
	handle_sliver_guess(&m);
	across_note(why, sizeof(why), ia, ix, st->seg_a, &m);
	if (amend(t, st, why, &m))
		return -ENOMEM;
	g = stitch_gap_before(s, x);
	if (g != MT_NONE && stitch_slice_set_parent(s, g, deepest))
		return -ENOMEM;
	return stitch_apply_join(s, ib, t->segments[ia].end, na, &bv, &m);
}

/*
 * Second pass, for a pair the first left apart: the segments after B
 * were joined to B by then, and those that returned above B's roots
 * revealed its callers.  With them on top, B may share frames with A
 * after all (a gap in the dynamic linker's lazy binding, say, whose
 * caller only a later segment returned to).
 */
static int rejoin_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       size_t rec)
{
	struct mt_trace *t = s->t;
	const struct seg_ends *b = ends_of(s, ib);
	struct mt_stitch *st = &t->stitches[rec];
	struct chainv av, bv;
	struct match m;
	uint32_t *sorted;
	size_t na, nb;
	char why[320], was[256];
	bool shared = false;
	int rc = stitch_end_chain(s, ends_of(s, ia), &na);

	if (rc || !na || !b->nr_start)
		return rc;
	nb = stitch_extended_chain(s, b);
	if (!nb)
		return -ENOMEM;
	if (nb == b->nr_start)
		return 0; /* nothing learnt */
	/* Already one tree (joined around this pair): nothing to do. */
	sorted = malloc(na * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, s->chain, na * sizeof(*sorted));
	qsort(sorted, na, sizeof(*sorted), mt_cmp_u32);
	for (size_t i = 0; i < nb && !shared; i++)
		shared = bsearch(&s->xs[i], sorted, na, sizeof(*sorted),
				 mt_cmp_u32) != NULL;
	free(sorted);
	if (shared)
		return 0;
	av = (struct chainv){s->chain, s->rets, na, ends_of(s, ia)->end_at};
	bv = (struct chainv){s->xs, s->xi, nb};
	if (!stitch_decide(s, &av, &bv, MT_NONE, &m, why, sizeof(why)) ||
	    !stitch_ahead_fits(s, &bv, &m) || !stitch_callers_fit(s, &bv, &m))
		return 0;
	snprintf(was, sizeof(was), "%s", mt_str(&t->strs, st->reason));
	snprintf(why + strlen(why), sizeof(why) - strlen(why),
		 " with %zu caller%s later segments revealed (first: %s)",
		 nb - b->nr_start, nb - b->nr_start == 1 ? "" : "s", was);
	if (amend(t, st, why, &m))
		return -ENOMEM;
	return stitch_apply_join(s, ib, t->segments[ia].end, na, &bv, &m);
}

/* The call sites every segment of the thread saw, by slice. */
static int thread_init(struct thread_state *s)
{
	const struct mt_trace *t = s->t;
	size_t n = s->th->nr_slices;
	int rc = 0;

	s->alias = malloc((n ? n : 1) * sizeof(*s->alias));
	if (!s->alias)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->alias[i] = (uint32_t)i;
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		const struct seg_ends *g = ends_of(s, (uint32_t)i);

		if (t->segments[i].tid != s->th->tid)
			continue;
		for (size_t k = 0; k + 1 < g->nr_end && !rc; k++)
			rc = stitch_ret_set(s, g->end_chain[k + 1],
					    g->end_rets[k]);
		for (size_t k = 0; k + 1 < g->nr_start && !rc; k++)
			rc = stitch_ret_set(s, g->start_chain[k + 1],
					    g->start_ips[k]);
	}
	return rc;
}

static void thread_free(struct thread_state *s)
{
	free(s->alias);
	mt_hmap_free(&s->rets_of);
	free(s->chain);
	free(s->rets);
	free(s->xs);
	free(s->xi);
	free(s->spans);
	free(s->tops);
	stitch_undo_free(&s->undo);
}

/* First pass: each pair of neighbours, and across a segment that joined
 * neither of its own. */
static int pass_pairs(struct thread_state *s, size_t first_rec, bool join)
{
	struct mt_trace *t = s->t;
	uint32_t prev = MT_NONE;
	int rc = 0;

	for (size_t i = s->run_lo; i < s->run_hi && !rc; i++) {
		const struct seg_ends *g = ends_of(s, (uint32_t)i);

		if (!in_run(s, i))
			continue;
		if (prev != MT_NONE) {
			size_t rec = t->nr_stitches;

			rc = stitch_pair(s, prev, (uint32_t)i, join);
			/* prev joined neither side: try across it */
			if (!rc && join && rec > first_rec &&
			    !t->stitches[rec].frames_joined &&
			    !t->stitches[rec - 1].frames_joined)
				rc = join_across(s, rec - 1, rec);
		} else {
			s->first_segment = (uint32_t)i;
			s->root_name =
				g->nr_start
					? mt_slice_name(
						  s->t,
						  &s->th->slices
							   [g->start_chain[0]])
					: MT_NONE;
			s->root_open = g->nr_start &&
				       (s->th->slices[g->start_chain[0]].flags &
					MT_SLICE_INFERRED_END);
		}
		prev = (uint32_t)i;
	}
	return rc;
}

/*
 * The pairs left apart, again, knowing what the first pass joined, until
 * a sweep joins none: a pair joined now may be what reveals the callers
 * of an earlier pair's B (two gaps in a row inside code called in them,
 * the lazy binding of a function that then ran long).  Then runs of
 * segments joined to one another that still join neither side: across
 * them, as across a single one.  Each sweep but the last joined a pair;
 * the sweeps are bounded all the same, since each costs an alignment per
 * pair left apart, and a capture may have thousands.
 */
#define MAX_SWEEPS 16

static int pass_rejoin(struct thread_state *s, size_t first_rec)
{
	struct mt_trace *t = s->t;
	int rc = 0;

	for (size_t sweep = 0, again = 1; again && !rc && sweep < MAX_SWEEPS;
	     sweep++) {
		again = 0;
		for (size_t k = first_rec; !rc && k < t->nr_stitches; k++) {
			if (t->stitches[k].frames_joined)
				continue;
			rc = rejoin_pair(s, t->stitches[k].seg_a,
					 t->stitches[k].seg_b, k);
			again += t->stitches[k].frames_joined != 0;
		}
	}
	for (size_t r = first_rec + 1; !rc && r < t->nr_stitches; r++) {
		size_t k = r - 1;

		if (t->stitches[r].frames_joined)
			continue;
		while (k > first_rec && t->stitches[k].frames_joined)
			k--;
		if (k + 1 < r && !t->stitches[k].frames_joined)
			rc = join_across(s, k, r);
	}
	return rc;
}

/* The top of slice i's tree as the joins left it. */
static uint32_t top_of(const struct thread_state *s, uint32_t i)
{
	uint32_t up = stitch_resolve(s, i);

	for (size_t n = 0;
	     stitch_parent_of(s, up) != MT_NONE && n < s->th->nr_slices; n++)
		up = stitch_parent_of(s, up);
	return up;
}

/* stitch_parent_of(i) != MT_NONE, without resolving a parent it has itself
 * (pass_root() asks it of every slice). */
static bool has_parent(const struct thread_state *s, uint32_t i)
{
	return s->th->slices[i].parent != MT_NONE ||
	       stitch_parent_of(s, i) != MT_NONE;
}

/*
 * The tops among slices [lo, hi) (no parent), in order, into *tops;
 * false when one of them with a parent is the root's function under
 * another top than root (the root is no root).  Reads the thread's
 * state only: chunks of it are scanned at once.
 */
static bool scan_tops(const struct thread_state *s, uint32_t root, size_t lo,
		      size_t hi, uint32_t **tops, size_t *nr, size_t *cap,
		      int *rc)
{
	const struct mt_trace *t = s->t;
	const struct mt_slice *sl = s->th->slices;

	for (size_t i = lo; i < hi; i++) {
		if (s->alias[i] != i || !in_run(s, sl[i].segment))
			continue;
		if (!has_parent(s, (uint32_t)i)) {
			if (mt_grow((void **)tops, cap, *nr + 1,
				    sizeof(**tops))) {
				*rc = -ENOMEM;
				return false;
			}
			(*tops)[(*nr)++] = (uint32_t)i;
		} else if (mt_slice_name(t, &sl[i]) == s->root_name &&
			   top_of(s, (uint32_t)i) != root) {
			return false;
		}
	}
	return true;
}

/* Slices a chunk of a pass over a thread stitched alone, by default. */
#define SCAN_CHUNK (1u << 20)

struct scan_job {
	size_t lo, hi;
	uint32_t *tops;
	size_t nr, cap;
	bool ok;
	int rc;
};

struct scan_all {
	struct thread_state *s;
	uint32_t root;
	bool ok;
	int rc;
};

static int scan_work(void *ctx, unsigned worker, void *job)
{
	const struct scan_all *a = ctx;
	struct scan_job *j = job;

	(void)worker;
	j->ok = scan_tops(a->s, a->root, j->lo, j->hi, &j->tops, &j->nr,
			  &j->cap, &j->rc);
	return 0;
}

/* In order: a chunk's tops after those before. */
static int scan_keep(void *ctx, void *job)
{
	struct scan_all *a = ctx;
	struct thread_state *s = a->s;
	struct scan_job *j = job;

	if (a->ok && !a->rc && !j->rc && j->ok && j->nr) {
		if (mt_grow((void **)&s->tops, &s->cap_tops, s->nr_tops + j->nr,
			    sizeof(*s->tops))) {
			a->rc = -ENOMEM;
		} else {
			memcpy(s->tops + s->nr_tops, j->tops,
			       j->nr * sizeof(*j->tops));
			s->nr_tops += j->nr;
		}
	}
	a->rc = a->rc ? a->rc : j->rc;
	a->ok = a->ok && j->ok;
	free(j->tops);
	j->tops = NULL;
	return 0;
}

/* The thread's tops into s->tops; false as scan_tops() says.  A thread
 * stitched alone is scanned in chunks on its threads. */
static bool all_tops(struct thread_state *s, uint32_t root, int *rc)
{
	size_t chunk = s->o && s->o->scan_chunk ? s->o->scan_chunk : SCAN_CHUNK;
	size_t n = s->th->nr_slices, nr = (n + chunk - 1) / chunk;
	struct scan_all a = {s, root, true, 0};
	struct scan_job *jobs;

	if (s->scan_jobs < 2 || nr < 2)
		return scan_tops(s, root, 0, n, &s->tops, &s->nr_tops,
				 &s->cap_tops, rc);
	if (!(jobs = calloc(nr, sizeof(*jobs)))) {
		*rc = -ENOMEM;
		return false;
	}
	for (size_t i = 0; i < nr; i++) {
		jobs[i].lo = i * chunk;
		jobs[i].hi = i + 1 < nr ? (i + 1) * chunk : n;
	}
	*rc = mt_pool_each(s->scan_jobs, scan_work, scan_keep, &a, jobs, nr,
			   sizeof(*jobs));
	for (size_t i = 0; i < nr; i++)
		free(jobs[i].tops);
	free(jobs);
	if (!*rc)
		*rc = a.rc;
	return a.ok && !*rc;
}

/*
 * Last, the thread's root: the function the trace began under (its first
 * segment's top, when that segment ended with it open), which returns
 * only when the thread ends.  Another top
 * of that function is the same activation, found again by a segment's
 * returns: one slice.  What else is left beside the root once every
 * pair is decided (a run of segments that shares no frame with what
 * came before: a longjmp in a gap unwound an unknown number of frames of
 * a recursion, say, or a tail call replaced a segment's root) ran under
 * it all the same, at a depth nobody can tell: it goes under the root,
 * marked depth_guessed with everything under it, so that the root is not
 * cut in two.  Not when the root's function turns up below another top:
 * then it was no root (a trace that began deep, whose true roots the
 * stack unwound at the end gave).
 */
static int pass_root(struct thread_state *s)
{
	const struct mt_trace *t = s->t;
	const struct mt_slice *sl = s->th->slices;
	const struct seg_ends *f = ends_of(s, s->first_segment);
	uint32_t root;
	int rc = 0;

	s->nr_tops = 0;
	if (s->root_name == MT_NONE || !s->root_open || !f->nr_start)
		return 0;
	root = top_of(s, f->start_chain[0]);
	if (mt_slice_name(t, &sl[root]) != s->root_name)
		return 0;
	/* One pass over the slices: the tops are kept for the joins, which
	 * touch no other slice's parent, and a slice with a parent keeps
	 * it. */
	if (!all_tops(s, root, &rc))
		return rc;
	for (int same = 1; same >= 0; same--)
		for (size_t k = 0; k < s->nr_tops; k++) {
			uint32_t x = s->tops[k];

			if (s->alias[x] != x || x == root ||
			    sl[x].ts < sl[root].ts || has_parent(s, x) ||
			    (mt_slice_name(t, &sl[x]) == s->root_name) != same)
				continue;
			s->joins++;
			if (same) {
				if (stitch_merge(s, root, x))
					return -ENOMEM;
				continue;
			}
			if (stitch_slice_set_parent(s, x, root) ||
			    (!(sl[x].flags & MT_SLICE_GAP) &&
			     stitch_slice_add_flags(s, x,
						    MT_SLICE_DEPTH_GUESSED)))
				return -ENOMEM;
		}
	return 0;
}

/*
 * The run from segment lo: up to the thread's next segment that began in
 * a program an exec started.  The program before the exec is gone with
 * its stack, so no frame of it is a caller of the new one's: each run
 * is stitched apart, with a root of its own.
 */
static void next_run(struct thread_state *s, uint32_t lo)
{
	const struct mt_trace *t = s->t;
	uint32_t hi = lo + 1;

	while (hi < t->nr_segments &&
	       !(t->segments[hi].tid == s->th->tid && t->segments[hi].exec))
		hi++;
	s->run_lo = lo;
	s->run_hi = hi;
	/* The code its segments ran is that of the program its first one
	 * began in. */
	s->space = s->th->pid;
	for (uint32_t k = lo; k < hi && s->o && s->o->code.space; k++)
		if (t->segments[k].tid == s->th->tid) {
			s->space = s->o->code.space(s->o->code.ctx, s->th->pid,
						    t->segments[k].start);
			break;
		}
	s->first_segment = MT_NONE;
	s->root_name = MT_NONE;
	s->root_open = false;
}

/*
 * All or nothing: a thread whose joins do not make a tree (-EINVAL from
 * stitch_rebuild(), a fault of ours, not of the capture) is given back as it
 * was, without its decisions, and *fault says why.  Out of memory, the
 * slices are put back too, but the conversion cannot go on.
 */
static int stitch_thread(struct mt_trace *t, const struct seg_ends_table *ends,
			 struct mt_thread *th, const struct stitch_opts *o,
			 unsigned scan_jobs, const char **fault)
{
	struct thread_state s = {.t = t,
				 .o = o,
				 .ends = ends,
				 .th = th,
				 .root_name = MT_NONE,
				 .scan_jobs = scan_jobs};
	bool join = !(o && o->record_only);
	size_t first_rec = t->nr_stitches;
	int rc = thread_init(&s);

	for (uint32_t lo = 0; !rc && lo < t->nr_segments; lo = s.run_hi) {
		size_t run_rec = t->nr_stitches;

		next_run(&s, lo);
		rc = pass_pairs(&s, run_rec, join);
		if (!rc && join)
			rc = pass_rejoin(&s, run_rec);
		if (!rc && join)
			rc = pass_root(&s);
	}
	if (!rc && s.joins)
		rc = stitch_rebuild(&s);
	if (rc) {
		stitch_undo_edits(&s);
		t->nr_stitches = first_rec;
	}
	thread_free(&s);
	*fault = s.fault ? s.fault : "the joins make no tree";
	return rc;
}

/*
 * The threads are stitched at once, one a worker, each into a trace of
 * its own that shares the model's slices, frames and segments but keeps
 * its own decisions, spans and strings (the reasons).  Each thread edits
 * only its own slices.  In the threads' order, what a thread kept is then
 * added to the model: its strings interned in the order it interned them,
 * which gives every string the id that stitching the threads one after
 * another gives it, and its decisions and spans after the ones before.
 */
struct stitch_job {
	struct mt_trace own; /* the model's, but for what is kept apart */
	struct mt_thread *th;
	const char *fault;
	int rc;
};

struct stitch_all {
	struct mt_trace *t;
	const struct seg_ends_table *ends;
	const struct stitch_opts *o;
	unsigned scan_jobs; /* a thread stitched alone: its passes' threads */
};

static int stitch_work(void *ctx, unsigned worker, void *job)
{
	const struct stitch_all *a = ctx;
	struct stitch_job *j = job;

	(void)worker;
	j->rc = stitch_thread(&j->own, a->ends, j->th, a->o, a->scan_jobs,
			      &j->fault);
	/* A thread left unstitched is told of in order, when it is kept. */
	return j->rc == -EINVAL ? 0 : j->rc;
}

static void job_free(struct stitch_job *j)
{
	mt_strtab_free(&j->own.strs);
	free(j->own.stitches);
	free(j->own.guesses);
	memset(j, 0, sizeof(*j));
}

static int stitch_keep(void *ctx, void *job)
{
	const struct stitch_all *a = ctx;
	struct stitch_job *j = job;
	struct mt_trace *t = a->t;
	uint32_t *ids = malloc(j->own.strs.nr * sizeof(*ids) + 1);
	int rc = 0;

	if (!ids)
		goto no_mem;
	for (uint32_t k = 0; k < j->own.strs.nr; k++) {
		ids[k] = mt_str_intern(&t->strs, mt_str(&j->own.strs, k));
		if (ids[k] == MT_NONE)
			goto no_mem;
	}
	for (size_t k = 0; k < j->own.nr_stitches; k++) {
		struct mt_stitch st = j->own.stitches[k];

		st.reason = ids[st.reason];
		if (!mt_trace_add_stitch(t, &st))
			goto no_mem;
	}
	for (size_t k = 0; k < j->own.nr_guesses; k++)
		if (!mt_trace_add_guess(t, &j->own.guesses[k]))
			goto no_mem;
	if (j->rc == -EINVAL && a->o && a->o->unstitched)
		a->o->unstitched(a->o->ctx, j->th->tid, j->fault);
	goto out;
no_mem:
	rc = -ENOMEM;
out:
	free(ids);
	job_free(j);
	return rc;
}

int stitch_trace(struct mt_trace *t, const struct seg_ends_table *ends,
		 const struct stitch_opts *o, char *err, size_t errlen)
{
	struct stitch_all a = {.t = t, .ends = ends, .o = o};
	size_t n = t->nr_threads;
	unsigned workers = o && o->jobs > 1 ? o->jobs : 1;
	struct stitch_job *jobs = calloc(n ? n : 1, sizeof(*jobs));
	struct mt_pool *pool = NULL;
	/* What each thread's own trace starts as: taken before any worker
	 * adds to the model. */
	struct mt_trace base = *t;
	size_t put = 0;
	int rc = 0;

	memset(&base.strs, 0, sizeof(base.strs));
	base.stitches = NULL;
	base.nr_stitches = base.cap_stitches = 0;
	base.guesses = NULL;
	base.nr_guesses = base.cap_guesses = 0;
	if (!jobs) {
		rc = -ENOMEM;
		goto out;
	}
	if (workers > n)
		workers = (unsigned)n;
	/* One thread (or one at a time): the cores go to its passes. */
	a.scan_jobs = workers <= 1 && o && o->jobs > 1 ? o->jobs : 0;
	if (workers > 1 && (rc = mt_pool_start(&pool, workers, stitch_work,
					       stitch_keep, &a, 2 * workers)))
		goto out;
	for (; put < n && !rc; put++) {
		struct stitch_job *j = &jobs[put];

		j->own = base;
		j->th = &t->threads[put];
		if (mt_strtab_init(&j->own.strs)) {
			rc = -ENOMEM;
			put++;
			break;
		}
		if (pool)
			rc = mt_pool_put(pool, j);
		else if (!(rc = stitch_work(&a, 0, j)))
			rc = stitch_keep(&a, j);
	}
	if (pool) {
		int prc = mt_pool_end(pool);

		rc = rc ? rc : prc;
	}
out:
	/* Jobs skipped after a failure, or that failed, hold their own. */
	for (size_t i = 0; jobs && i < put; i++)
		job_free(&jobs[i]);
	free(jobs);
	if (rc)
		snprintf(err, errlen, "out of memory while stitching");
	return rc;
}
