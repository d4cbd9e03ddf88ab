/* SPDX-License-Identifier: MIT */
/*
 * Deciding a pair: whether B's start chain joins A's end chain, at which
 * depth, how sure that depth is, and the reason recorded for it.  Each
 * special rule is a handle_*() function of its own.
 */
#include "stitch/stitch_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A decision in the making: the alignment taken and how it was. */
struct verdict {
	struct match m;
	double gain;	 /* the next segments' lead, when they chose */
	bool pinned;	 /* no other depth is left */
	bool ahead_used; /* a later segment's callers moved the depth */
	bool guessed;	 /* the depth is the least change's guess */
	bool shifted;	 /* another depth, backed, fits as well */
};

/*
 * Another alignment that a call site backs, at another depth: in a
 * recursion the gap may have added or removed levels, and whatever
 * picked m (the least change, the call sites, the next segments short
 * of the root) only made it likelier.  Returns where in A the two part
 * ways, with the other in *alt; SIZE_MAX when there is none.
 */
static size_t other_depth(const struct thread_state *s, const struct chainv *av,
			  const struct alignment *r, const struct match *m,
			  struct match *alt)
{
	size_t from = SIZE_MAX;

	for (size_t i = 0; i < r->nr_backed && from == SIZE_MAX; i++)
		if (stitch_depth_of(&r->backed[i]) != stitch_depth_of(m)) {
			from = r->backed[i].off;
			*alt = r->backed[i];
		}
	/* joining the roots needs no call site at the thread's root */
	if (r->at_root.len && stitch_depth_of(m) != 0 &&
	    stitch_at_thread_root(s, av)) {
		from = 0;
		*alt = r->at_root;
	}
	return from == SIZE_MAX || m->off > from ? from : m->off;
}

/*
 * Alignments tie, or several depths explain B as well (a recursion):
 * the next segments may tell them apart (stitch_roll_pick()).  Only candidates
 * that are not weak take part.  True when they picked one.
 */
static bool handle_tie_by_rollout(struct thread_state *s,
				  const struct chainv *av, uint32_t ib,
				  const struct alignment *r, struct verdict *v)
{
	struct match c[MAX_CAND];
	size_t nc = 0;
	int k;

	if (ib == MT_NONE || (!r->ties && r->nr_near <= 1))
		return false;
	for (size_t i = 0; i < r->nr_cand; i++)
		if (!stitch_weak_match(s, av, &r->cand[i]))
			c[nc++] = r->cand[i];
	k = stitch_roll_pick(s, av, ib, c, nc, &v->gain, &v->pinned);
	if (k < 0) {
		v->gain = 0;
		return false;
	}
	v->m = c[k];
	return true;
}

/* The recursion tie: alignments a level apart fit as well, and B does
 * not reach above A's root. */
static bool is_recursion_tie(const struct alignment *r, const struct match *m)
{
	return !m->ahead && r->nr_near > 1;
}

/*
 * In a recursion tie, the callers later segments revealed above B's
 * roots pick the depth when a call site backs their pick; one that names
 * alone back is no better than the least change, and is taken as that
 * guess: A's frames from the highest of the near alignments are kept on
 * its word.
 */
static void handle_recursion_tie(struct thread_state *s,
				 const struct chainv *av, uint32_t ib,
				 const struct alignment *r, struct verdict *v)
{
	struct match *m = &v->m;
	int k = ib != MT_NONE ? stitch_look_ahead(s, av, ib, r, &v->pinned)
			      : -1;

	if (k >= 0 && !stitch_weak_match(s, av, &r->near[k])) {
		v->ahead_used = r->near[k].off != m->off;
		*m = r->near[k];
		return;
	}
	v->pinned = false;
	v->guessed = true;
	m->guessed = true;
	m->sure = m->off;
	for (size_t i = 0; i < r->nr_near; i++)
		if (r->near[i].off < m->sure)
			m->sure = r->near[i].off;
}

/*
 * Another depth, backed by a call site, fits too: unless a later segment
 * that climbs to the root rules it out, the frames from where the two
 * part ways are a guess, and so are B's callers the other puts elsewhere.
 */
static void handle_other_depth(const struct thread_state *s,
			       const struct chainv *av, uint32_t ib,
			       const struct alignment *r, struct verdict *v)
{
	struct match *m = &v->m, alt, c[2];
	size_t from = other_depth(s, av, r, m, &alt);
	bool pinned = false;
	double g;

	if (from == SIZE_MAX)
		return;
	c[0] = *m;
	c[1] = alt;
	if (ib != MT_NONE && v->gain <= 0 &&
	    stitch_roll_pick(s, av, ib, c, 2, &g, &pinned) == 0 && pinned)
		return;
	v->shifted = !m->guessed;
	if (m->ahead > alt.ahead && m->ahead - alt.ahead > m->bguess)
		m->bguess = m->ahead - alt.ahead;
	if (!m->guessed || from < m->sure) {
		m->guessed = true;
		m->sure = from;
	}
}

/*
 * The code's word on the deepest pair: from where A's frame was (back
 * at the call site of its open child, or for A's leaf, where control
 * last came into it), can the function make the call whose return B saw
 * land in its frame (B's frame with a child), or arrive where B resumed
 * (B's leaf)?  When no path does, B's frame is another activation: the
 * function returned in the gap and was called again, as an event loop
 * calls its handler.  It keeps A's frame's depth, beside it, so that
 * the alignment (and any guess it made) stays as it was.
 */
static void handle_other_activation(const struct thread_state *s,
				    const struct chainv *av,
				    const struct chainv *bv, struct match *m)
{
	const struct stitch_opts *o = s->o;
	size_t p = stitch_a_pos(m, m->len - 1), i = m->ahead + m->len - 1;
	bool leaf = p + 1 == av->n, ret_to = i + 1 < bv->n;
	uint64_t from = leaf ? av->at : av->ip[p], to = bv->ip[i];

	/* The same place is no evidence (the same call site; B resuming
	 * where A's leaf was), but a leaf back from a child at to must call
	 * it again for another return to land there. */
	if (!o || !o->code.never_reaches || !from || !to ||
	    (from == to && !(leaf && ret_to)))
		return;
	m->split =
		o->code.never_reaches(o->code.ctx, s->space, from, to, ret_to);
	/*
	 * B's frame is another slice than A's: a new call, made by A's
	 * frame above it once A's frame there returned (from the call site
	 * they share, the same call again), or A's frame's successor by
	 * tail calls in the same place.  Where the code cannot make the
	 * call again (no loop around it), B's frame above is likely a new
	 * call too, beside A's, and so on up: the depths stay, fewer frames
	 * are joined, and since tail calls could have done it, that is a
	 * guess from the first such frame down.
	 */
	while (m->split && m->len >= 2) {
		size_t pp = stitch_a_pos(m, m->len - 2);
		uint64_t site = av->ip[pp];

		if (pp + 1 != stitch_a_pos(m, m->len - 1) || !site ||
		    site != bv->ip[m->ahead + m->len - 2] ||
		    !o->code.never_reaches(o->code.ctx, s->space, site, site,
					   true))
			break;
		m->len--;
		m->recalled++;
		if (!m->guessed || stitch_a_pos(m, m->len - 1) < m->sure) {
			m->guessed = true;
			m->sure = stitch_a_pos(m, m->len - 1);
		}
	}
}

/*
 * When no frame is left joined, B's first frame is beside A's: a new call
 * made by A's frame above it once A's frame returned, or A's frame's
 * successor by tail calls.  What the code says of a call to B's function
 * from A's frame above: SURE (a direct call is on a path), NEVER, or
 * MAYBE (only through a call it cannot name, a pointer, or code it cannot
 * follow); SURE too where something joins.
 */
static enum img_calls new_call(const struct thread_state *s,
			       const struct chainv *av, const struct chainv *bv,
			       const struct match *m)
{
	const struct stitch_opts *o = s->o;
	size_t p;
	uint64_t callee;

	if (!m->split || m->len != 1 || m->ahead || !o || !o->code.calls_to)
		return IMG_CALLS_SURE;
	p = stitch_a_pos(m, 0);
	callee = s->t->frames[s->th->slices[bv->sl[0]].frame].addr;
	if (!p || !av->ip[p - 1] || !callee)
		return IMG_CALLS_SURE;
	return o->code.calls_to(o->code.ctx, s->space, av->ip[p - 1], callee);
}

/* How the depth was settled, for the reason. */
static void depth_note(const struct verdict *v, char *how, size_t len)
{
	if (v->gain > 0)
		snprintf(how, len, "; chosen by the next segments (+%.1f)",
			 v->gain);
	else if (v->ahead_used)
		snprintf(how, len, "; depth from a later segment's callers");
	else if (v->guessed)
		snprintf(how, len, "; depth guessed (least change)");
	if (v->shifted)
		snprintf(how + strlen(how), len - strlen(how),
			 "; depth guessed (another depth fits)");
}

/* What a longjmp did to the join: [frames stepped over][a guess]. */
static const char *const longjmp_note[2][2] = {
	{"", "; a frame below a longjmp target (guessed)"},
	{"; frames stepped over below a longjmp target",
	 "; frames stepped over below a longjmp target (guessed)"},
};

static void join_reason(const struct verdict *v, char *why, size_t len)
{
	const struct match *m = &v->m;
	char how[96] = "";

	depth_note(v, how, sizeof(how));
	snprintf(why, len,
		 "%zu frame%s by name, %zu by call site, %zu ancestor%s kept, "
		 "%zu revealed%s%s",
		 m->len, m->len == 1 ? "" : "s", m->confirmed, m->off,
		 m->off == 1 ? "" : "s", m->ahead, how,
		 longjmp_note[m->nr_skips != 0][m->skip_guess]);
	if (m->split)
		snprintf(why + strlen(why), len - strlen(why),
			 "; the deepest is another call (its code cannot "
			 "get back there)");
	if (m->recalled)
		snprintf(why + strlen(why), len - strlen(why),
			 "; %zu above it another call too (no loop makes "
			 "the call again)",
			 m->recalled);
}

/*
 * Whether the best alignment stands on the evidence at this gap: 1, or
 * 0 with why saying why not.
 */
static int settle_locally(struct thread_state *s, const struct chainv *av,
			  uint32_t ib, const struct alignment *r,
			  struct verdict *v, char *why, size_t len)
{
	if (r->ties) {
		snprintf(why, len,
			 "ambiguous: %zu alignments explain %zu frames",
			 r->ties + 1, v->m.len);
		return 0;
	}
	if (is_recursion_tie(r, &v->m))
		handle_recursion_tie(s, av, ib, r, v);
	/*
	 * No call site confirms it, but alignments a level apart fit as
	 * well: a recursion through one call site, which no trace can
	 * place after a gap.  Joined at the least change, marked as a
	 * guess, rather than left to float without its callers.
	 */
	if (stitch_weak_match(s, av, &v->m) && !v->guessed) {
		snprintf(why, len, "weak: no call site confirms the frames");
		return 0;
	}
	return 1;
}

/* Alignments that give way to likelier ones, at most. */
#define MAX_GIVE_WAY 4

/*
 * Whether B's chain bv joins A's (s->chain): 1 with m and why filled, 0
 * with why saying why not (m the best alignment, if any).  ib is B,
 * whose later segments may settle a recursion's depth (MT_NONE: bv
 * already holds what they revealed).
 */
int stitch_decide(struct thread_state *s, const struct chainv *av,
		  const struct chainv *bv, uint32_t ib, struct match *m,
		  char *why, size_t len)
{
	struct align_at out[MAX_GIVE_WAY] = {{0, 0}};
	size_t nout = 0, part = SIZE_MAX;
	bool strict = true;
	struct alignment r;
	struct verdict v;

	/*
	 * An alignment of which nothing is left joined puts B's first frame
	 * beside A's.  Unless A's frame above makes a direct call to B's
	 * function, it gives way to another alignment that stands on such
	 * a call or on joined frames: the other is likelier (tail calls
	 * could have put B's frame there all the same, so it is a guess).
	 * Failing any (none is left, or what is left does not join), it
	 * stands.
	 */
	for (;;) {
		bool ok;

		stitch_align_except(s->th->slices, s->t->frames, av, bv, out,
				    nout, &r);
		*m = r.best;
		v = (struct verdict){.m = r.best};
		ok = m->len && (handle_tie_by_rollout(s, av, ib, &r, &v) ||
				settle_locally(s, av, ib, &r, &v, why, len));
		if (!ok && nout) {
			strict = false;
			nout = 0;
			continue;
		}
		if (!m->len)
			snprintf(why, len, "no common frames");
		if (!ok)
			return 0;
		if (!v.pinned)
			handle_other_depth(s, av, ib, &r, &v);
		handle_other_activation(s, av, bv, &v.m);
		*m = v.m;
		if (!strict || nout == MAX_GIVE_WAY ||
		    new_call(s, av, bv, m) == IMG_CALLS_SURE)
			break;
		out[nout++] = (struct align_at){m->off, m->ahead};
		if (stitch_a_pos(m, 0) < part)
			part = stitch_a_pos(m, 0);
	}
	if (nout) {
		/* another depth, not ruled out, fits: the frames from the
		 * caller of the shallower of B's first frames are a guess */
		if (stitch_a_pos(&v.m, 0) < part)
			part = stitch_a_pos(&v.m, 0);
		part = part ? part - 1 : 0;
		if (!v.m.guessed || part < v.m.sure)
			v.m.sure = part;
		v.m.guessed = true;
		v.shifted = true;
		*m = v.m;
	}
	if (m->split && stitch_join_deepest(s, bv, m) == MT_NONE) {
		snprintf(
			why, len,
			"another activation: the code cannot get back to where "
			"B's frame is");
		return 0;
	}
	join_reason(&v, why, len);
	if (nout)
		snprintf(why + strlen(why), len - strlen(why),
			 "; %zu other%s, likelier by the code", nout,
			 nout == 1 ? "" : "s");
	return 1;
}
