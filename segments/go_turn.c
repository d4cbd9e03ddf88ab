/* SPDX-License-Identifier: MIT */
/*
 * Go: the switches between goroutines' stacks (go.h).  A switch ends the
 * segment of the stack that ran (its frames end there, a known end) and
 * begins one for the stack that runs next, apart for stitching (its exec
 * flag), so that no slice spans two goroutines; the frames of a resumed
 * goroutine begin again there, flagged resumed.
 */
#include "segments/seg_internal.h"

#include <errno.h>
#include <stdlib.h>

/* The candidates of an ambiguous resume but keep go back to the
 * suspended; keep's frames go. */
static int go_amb_drop(struct seg_builder *b, size_t keep)
{
	int rc = 0;

	for (size_t i = 0; i < b->nr_amb; i++)
		if (i == keep)
			free(b->amb[i].frames);
		else if (!rc)
			rc = go_switch_suspend(b->go, &b->amb[i]);
		else
			free(b->amb[i].frames);
	free(b->amb);
	b->amb = NULL;
	b->nr_amb = 0;
	return rc;
}

/*
 * The stack resumed among several candidates returned to `to` above the
 * frames they shared: those whose next frame returns elsewhere were not
 * it.  One left: that goroutine it is; none: one not seen suspended.
 */
int go_climbed(struct seg_builder *b, uint64_t time, uint64_t to)
{
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < b->nr_amb; i++) {
		struct go_susp *c = &b->amb[i];
		const struct go_frame *v = c->frames;
		size_t idx = c->nr - b->amb_k;

		/* a frame whose return address is unknown (revealed by an
		 * earlier turn's return) does not tell */
		if (idx < b->amb_climb || idx - b->amb_climb >= c->nr ||
		    !v[idx - b->amb_climb].f.ret ||
		    v[idx - b->amb_climb].f.ret == to)
			b->amb[keep++] = *c;
		else if (!rc)
			rc = go_switch_suspend(b->go, c);
		else
			free(c->frames);
	}
	b->nr_amb = keep;
	b->amb_climb++;
	if (rc || keep > 1)
		return rc;
	if (keep == 1) {
		b->go_cur = b->amb[0].gor;
		b->go_goid = b->amb[0].goid;
		b->go_guess = b->amb[0].guessed;
	} else {
		b->go_cur = go_switch_goroutine(b->t, b->go, 0, go_root_name(b),
						time);
		if (!b->go_cur)
			return -ENOMEM;
	}
	go_label(b, b->go_cur);
	go_switch_ran(b->t, b->go_cur, b->amb_time);
	return go_amb_drop(b, 0);
}

/*
 * The resumed stack leaves (or the trace ends) with several candidates
 * left: the newest is taken, its turn is a guess, and so is, from now
 * on, which goroutine each of the others is (one of them ran: the pick
 * may have swapped two), and whatever is resumed from them.
 */
static int go_amb_end(struct seg_builder *b)
{
	if (!b->nr_amb)
		return 0;
	for (size_t i = 1; i < b->nr_amb; i++)
		b->amb[i].guessed = true;
	b->go_guess = true;
	go_switch_ran(b->t, b->go_cur, b->amb_time);
	return go_amb_drop(b, 0);
}

/* The running goroutine's turn ends: flagged resume_guessed when which
 * goroutine it is was a guess. */
int go_turn_end(struct seg_builder *b)
{
	struct mt_thread *th = seg_thr(b);
	int rc = go_amb_end(b);

	if (rc || !b->go_guess)
		return rc;
	for (size_t i = b->guess_slice; i < th->nr_slices; i++)
		if (!(th->slices[i].flags & MT_SLICE_GAP))
			th->slices[i].flags |= MT_SLICE_RESUME_GUESSED;
	return 0;
}

/* The goroutine id the capture gives for a switch to ip at time, or 0
 * (then *known is false). */
static uint64_t go_item(struct seg_builder *b, uint64_t time, uint64_t ip,
			bool *known)
{
	/*
	 * Items are dated by the emulator, events by the decoder's clock,
	 * which lags behind it (by up to the distance between timing
	 * packets): the item of this switch is the first to ip dated from
	 * a little before to a while after it.  Items between are of
	 * switches that are not gogo's (systemstack's there and back).
	 */
	for (size_t i = b->next_go_item; i < b->nr_go_items; i++) {
		const struct dec_goroutine *g = &b->go_items[i];

		if (g->time > time + GO_ITEM_LATE_NS)
			break;
		if (g->ip == ip && g->time + GO_ITEM_EARLY_NS >= time) {
			b->next_go_item = i + 1;
			*known = true;
			return g->goid;
		}
	}
	*known = false;
	return 0;
}

static int go_proc_of(struct seg_builder *b)
{
	if (b->go)
		return 0;
	b->go = go_proc_new(seg_thr(b)->pid);
	b->go_own = true;
	return b->go ? 0 : -ENOMEM;
}

/* The turn of the stack that ran ends, in the process's goroutines
 * (made on the first switch). */
static int go_leave(struct seg_builder *b)
{
	int rc = go_proc_of(b);

	return rc ? rc : go_turn_end(b);
}

/* The stack that ran was a goroutine's (gor): so were its segments. */
void go_label(struct seg_builder *b, uint32_t gor)
{
	for (size_t i = b->go_first_seg; i < b->t->nr_segments; i++)
		if (b->t->segments[i].tid == seg_thr(b)->tid)
			b->t->segments[i].goroutine = gor;
}

/* Frames [0, n) of the stack, to resume later. */
static int go_save(struct seg_builder *b, size_t n, struct go_susp *s)
{
	struct go_frame *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct mt_slice *sl = seg_slice_of(b, &b->stack[i]);

		v[i] = (struct go_frame){.f = b->stack[i],
					 .frame = sl->frame,
					 .site = sl->site,
					 .flags = sl->flags};
	}
	s->frames = v;
	s->nr = n;
	return 0;
}

/*
 * The stack that ran ends at time; another begins at ip: the n frames
 * saved (flags added to theirs), or a frame at ip (with flags, returning
 * to ret).
 */
static int go_restart(struct seg_builder *b, uint64_t time, uint64_t ip,
		      const struct go_frame *saved, size_t n, uint32_t flags,
		      uint64_t ret, bool cut)
{
	int rc = seg_end_segment(b, time, "goroutine switch", ip, 0);

	b->have_gap = false;
	if (!rc)
		rc = seg_open_bare(b, time, ip);
	if (rc)
		return rc;
	b->t->segments[b->seg_id].exec = true;
	b->go_first_seg = b->seg_id;
	if (!n)
		return seg_then_inl(b, seg_push_fn(b, time, 0, ip, ret, flags),
				    time, ip, flags & MT_SLICE_INFERRED_START);
	for (size_t i = 0; i < n; i++) {
		const struct go_frame *g = &saved[i];
		uint32_t keep =
			g->flags & (MT_SLICE_UNKNOWN | MT_SLICE_INLINED);

		/* cut: frames below saved[0] are not known, so where it
		 * returns to is no frame's (a return there reveals one) */
		rc = seg_push(b, time, (int32_t)i, g->frame,
			      keep | flags | MT_SLICE_RESUMED,
			      cut && !i ? 0 : g->f.ret, g->f.lo, g->f.hi,
			      g->f.kind);
		if (rc)
			return rc;
		seg_top(b)->at = g->f.at;
		seg_top(b)->async = g->f.async;
		seg_top(b)->inl_code = g->f.inl_code;
		seg_top(b)->go = g->f.go;
		seg_top(b)->in = g->f.in;
		seg_top(b)->took_lo = g->f.took_lo;
		seg_top(b)->took_hi = g->f.took_hi;
		seg_thr(b)->slices[seg_thr(b)->nr_slices - 1].site = g->site;
	}
	return seg_inl_at(b, time, ip, 0);
}

/* The name of the oldest frame open: a goroutine's start, as far as the
 * trace saw it. */
uint32_t go_root_name(struct seg_builder *b)
{
	return b->depth ? mt_slice_name(b->t, seg_slice_of(b, &b->stack[0]))
			: 0;
}

/*
 * A call from mcall, systemstack or morestack (how) to fn at ip (the
 * return address ret) on the thread's system stack: the goroutine that
 * ran is left (and ends, when fn is goexit0).
 */
static int go_to_g0(struct seg_builder *b, uint64_t time, uint64_t ip,
		    uint64_t ret, enum go_fn how, bool ends)
{
	size_t h = seg_host_at(b);
	struct go_susp s = {.time = time};
	int rc = go_leave(b);

	if (rc)
		return rc;
	s.goid = b->go_goid;
	s.guessed = b->go_guess;
	b->go_guess = false;
	if (b->go_on != GS_G) {
		uint64_t goid = 0;

		/* The capture names the goroutine the thread's trace began
		 * in with its first item. */
		if (b->go_on == GS_UNKNOWN && !b->next_go_item &&
		    b->nr_go_items && b->go_items[0].time <= time) {
			goid = b->go_items[0].goid;
			b->next_go_item = 1;
		}
		b->go_goid = goid;
		b->go_cur = go_switch_goroutine(b->t, b->go, goid,
						go_root_name(b), b->seg_start);
		if (!b->go_cur)
			return -ENOMEM;
		go_label(b, b->go_cur);
	}
	s.gor = b->go_cur;
	go_switch_ran(b->t, b->go_cur, time);
	if (how == GO_SYSTEMSTACK) {
		/* It comes back here, on this thread, when fn returns. */
		free(b->go_sys.frames);
		b->go_sys = (struct go_susp){0};
		b->have_sys = false;
		s.resume = ret;
		rc = go_save(b, b->depth, &s);
		if (rc)
			return rc;
		b->go_sys = s;
		b->have_sys = true;
	} else if (!ends) {
		/* It resumes as if mcall or morestack returned. */
		s.resume = b->stack[h].ret;
		rc = go_save(b, h, &s);
		if (!rc)
			rc = go_switch_suspend(b->go, &s);
		free(s.frames);
		if (rc)
			return rc;
	}
	b->go_on = GS_G0;
	b->go_cur = 0;
	b->go_goid = 0;
	return go_restart(b, time, ip, NULL, 0, 0, ret, false);
}

/* systemstack's fn returned to ip: the goroutine it left runs again. */
static int go_back(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	struct go_susp s = b->go_sys;
	int rc;

	b->go_sys = (struct go_susp){0};
	b->have_sys = false;
	b->go_on = GS_G;
	b->go_cur = s.gor;
	b->go_goid = s.goid;
	b->go_guess = s.guessed;
	b->guess_slice = seg_thr(b)->nr_slices;
	rc = go_restart(b, time, ip, s.frames, s.nr, 0, 0, false);
	free(s.frames);
	return rc;
}

/* gogo jumps to ip: a goroutine resumes, or a new one starts. */
/*
 * How many frames from the top the n candidates' stacks share: the same
 * calls, each returning to the same place but the last (whose return
 * address is dropped: the one below it is not known).
 */
static size_t go_common(const struct go_susp *v, size_t n)
{
	for (size_t k = 0;; k++) {
		bool same_ret = true;

		for (size_t i = 0; i < n; i++) {
			const struct go_frame *a, *x;

			if (k >= v[i].nr)
				return k;
			a = &((const struct go_frame *)v[0]
				      .frames)[v[0].nr - 1 - k];
			x = &((const struct go_frame *)v[i]
				      .frames)[v[i].nr - 1 - k];
			if (x->frame != a->frame)
				return k;
			same_ret &= x->f.ret == a->f.ret;
		}
		if (!same_ret)
			return k + 1;
	}
}

/* gogo jumps to ip: a goroutine resumes, or a new one starts. */
static int go_gogo(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	bool exact, several = false;
	uint64_t goid = go_item(b, time, ip, &exact);
	const struct sym_ent *e = seg_lookup(b, ip);
	struct go_susp s = {0}, *v = NULL;
	const struct go_frame *from = NULL;
	size_t nr = 0;
	uint32_t flags;
	long n = 0;
	int rc;

	if (!e)
		return -ENOMEM;
	if ((rc = go_leave(b)))
		return rc;
	b->go_guess = false;
	b->guess_slice = seg_thr(b)->nr_slices;
	/* An item without the id (a binary without DWARF) says nothing. */
	exact &= goid != 0;
	if (exact) {
		n = go_switch_resume(b->go, ip, goid, &s, &several);
		if (n && !s.goid)
			s.gor = go_switch_goroutine(b->t, b->go, goid, 0, time);
	} else {
		n = go_switch_take(b->go, ip, &v);
		if (n < 0)
			return -ENOMEM;
		if (n == 1)
			s = v[0];
	}
	if (n > 1) {
		/* Told apart later (go_climbed): the frames all have on top
		 * now, the newest's goroutine meanwhile. */
		b->amb = v;
		b->nr_amb = (size_t)n;
		b->amb_k = go_common(v, b->nr_amb);
		b->amb_climb = 0;
		b->amb_slice = seg_thr(b)->nr_slices;
		b->amb_time = time;
		v = NULL;
		s.gor = b->amb[0].gor;
		s.goid = b->amb[0].goid;
		from = (const struct go_frame *)b->amb[0].frames +
		       (b->amb[0].nr - b->amb_k);
		nr = b->amb_k;
		flags = 0;
	} else if (n == 1) {
		from = s.frames;
		nr = s.nr;
		flags = 0;
		b->go_guess = s.guessed;
	} else {
		/* A new goroutine at its function's start; else one that
		 * was suspended before the trace (or on a thread whose
		 * trace comes later): its callers show as it returns. */
		flags = e->known && ip == e->lo ? MT_SLICE_TAIL
						: MT_SLICE_INFERRED_START;
		s.goid = goid;
		s.gor = go_switch_goroutine(b->t, b->go, goid, e->name, time);
		/* its start names it, even where another thread's trace
		 * (read first) saw it resume */
		if (s.gor && (flags & MT_SLICE_TAIL))
			b->t->goroutines[s.gor - 1].start = e->name;
	}
	free(v);
	if (!s.gor) {
		free(s.frames);
		return -ENOMEM;
	}
	if (!b->t->goroutines[s.gor - 1].start)
		b->t->goroutines[s.gor - 1].start = e->name;
	/* which ran is known once the candidates are told apart */
	if (!b->nr_amb)
		go_switch_ran(b->t, s.gor, time);
	b->go_on = GS_G;
	b->go_cur = s.gor;
	b->go_goid = exact ? goid : s.goid;
	rc = go_restart(b, time, ip, from, nr, flags, 0, b->nr_amb > 0);
	free(s.frames);
	return rc;
}

/*
 * A segment begins after trace was lost (or tracing was off), where a
 * switch may have been: the capture's last goroutine item before it, if
 * any, says which goroutine runs, and a goroutine other than the one
 * before begins a stack of its own (the one before was suspended in the
 * gap, its resume point unknown).
 */
int go_reopen(struct seg_builder *b, uint64_t time, uint64_t ip, bool resumed)
{
	const struct dec_goroutine *last = NULL;
	uint32_t gor = 0;
	int rc = seg_open_segment(b, time, ip, resumed);

	if (rc || !b->go_seen || !b->nr_go_items || b->go_on == GS_UNKNOWN)
		return rc;
	while (b->next_go_item < b->nr_go_items &&
	       b->go_items[b->next_go_item].time <= time)
		last = &b->go_items[b->next_go_item++];
	if (!last ||
	    (b->go_on == GS_G0 ? !last->goid : last->goid == b->go_goid))
		return 0;
	if ((rc = go_leave(b)))
		return rc;
	b->go_guess = false;
	if (last->goid) {
		gor = go_switch_goroutine(b->t, b->go, last->goid,
					  go_root_name(b), time);
		if (!gor)
			return -ENOMEM;
		go_switch_ran(b->t, gor, time);
	}
	b->go_on = last->goid ? GS_G : GS_G0;
	b->go_cur = gor;
	b->go_goid = last->goid;
	b->go_first_seg = b->seg_id;
	b->t->segments[b->seg_id].goroutine = gor;
	b->t->segments[b->seg_id].exec = true;
	return 0;
}

/* An event at a Go switch point is the switch: 0 or -ENOMEM.  1: it is
 * no switch. */
int go_hook(struct seg_builder *b, uint64_t time, enum dec_kind kind,
	    uint64_t ip, uint64_t aux)
{
	size_t h = seg_host_at(b);
	const struct frame *f = h < b->depth ? &b->stack[h] : NULL;
	const struct sym_ent *e;

	if (kind == DEC_RET)
		/* Only the return of systemstack's function lands there,
		 * even where a gap lost that function's frame. */
		return b->have_sys && b->go_on == GS_G0 &&
				       ip == b->go_sys.resume
			       ? go_back(b, time, ip)
			       : 1;
	if (!f || f->kind != FR_FUNC || f->go == GO_NONE)
		return 1;
	if (kind == DEC_IJUMP)
		return f->go == GO_GOGO ? go_gogo(b, time, ip) : 1;
	if (f->go != GO_MCALL && f->go != GO_MORESTACK &&
	    f->go != GO_SYSTEMSTACK)
		return 1;
	e = seg_lookup(b, ip);
	if (!e)
		return -ENOMEM;
	if ((f->go == GO_MORESTACK && e->go != GO_NEWSTACK) ||
	    (f->go == GO_SYSTEMSTACK && e->go == GO_SWITCH_HELPER))
		return 1;
	return go_to_g0(b, time, ip, aux, f->go, e->go == GO_GOEXIT0);
}

bool seg_builder_is_go(const struct seg_builder *b)
{
	return b->go_seen;
}

void seg_builder_go(struct seg_builder *b, struct go_proc *p,
		    const struct dec_goroutine *items, size_t nr)
{
	if (b->go_own)
		go_proc_free(b->go);
	b->go = p;
	b->go_own = false;
	b->go_items = items;
	b->nr_go_items = nr;
	b->next_go_item = 0;
}
