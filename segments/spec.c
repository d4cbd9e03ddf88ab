/* SPDX-License-Identifier: MIT */
/*
 * A builder that begins in the middle of a thread's events (par.c builds
 * a thread's pieces at once): it opens where the piece begins, in the
 * function running there, as a builder opens a segment, and builds what
 * it can decide alone.  What it cannot is anything that reads or ends
 * the frames it began with: what they return to, how they were entered,
 * and the frames below them, which it never saw.  Each event says
 * beforehand whether it is such a one (seg_spec_check()), so that the
 * builder of the pieces before, which has the real frames, decides it
 * instead; the speculating builder decides it as well, as if its frames
 * were all there were, and from then on every frame it has counts as one
 * it began with.  An event that ends or begins a segment stops it.
 *
 * What it looks up as it opens and at those events stays out of its
 * caches (spec_nocache): the names the other builder makes then are its
 * to date, and a name the speculating builder had from them would hide
 * where one builder first makes it, at a later event.
 */
#include "segments/seg_internal.h"
#include "segments/unwind_quirks.h"

#include <errno.h>

void seg_spec_rebase(struct seg_builder *b)
{
	b->spec_base = b->depth;
	for (size_t i = 0; i < b->depth; i++)
		b->stack[i].arrived = false;
}

int seg_spec_open(struct seg_builder *b, uint64_t time, uint64_t ip,
		  uint64_t time0)
{
	int rc;

	b->time0 = time0;
	b->have_time0 = true;
	b->spec_nocache = true;
	rc = seg_open_segment(b, time, ip, false);
	b->spec_nocache = false;
	if (rc)
		return rc;
	b->spec = true;
	seg_spec_rebase(b);
	return 0;
}

/* The frame on top once a [syscall] or [untraced] frame on top has gone,
 * as calls, returns and resumes begin; false when that pops one of the
 * frames below spec_base. */
static bool top_after_pseudo(const struct seg_builder *b, size_t *d)
{
	*d = b->depth;
	if (*d && b->stack[*d - 1].kind == FR_PSEUDO) {
		if (*d - 1 < b->spec_base)
			return false;
		(*d)--;
	}
	return true;
}

static size_t host_below(const struct seg_builder *b, size_t d)
{
	for (size_t i = d; i-- > 0;)
		if (b->stack[i].kind != FR_INLINE)
			return i;
	return d;
}

/* Control comes into frame t (the top once the frames above it went):
 * seg_inl_at() writes its function's at (kept: spec_base's frames say
 * they were arrived in), and changes the calls inlined above it, which
 * may be frames below spec_base when the function is one. */
static bool arrive_alone(const struct seg_builder *b, size_t t)
{
	size_t h = host_below(b, t + 1);

	return h + 1 >= b->spec_base || (h == t && !b->stack[h].inl_code);
}

static enum seg_spec on_return(const struct seg_builder *b, uint64_t to)
{
	size_t d, h;

	if (!top_after_pseudo(b, &d))
		return SPEC_TOUCH;
	if (!to) {
		h = host_below(b, d);
		return h < d && h >= b->spec_base ? SPEC_OWN : SPEC_TOUCH;
	}
	/* The frames it sees first are its own: a callee of theirs
	 * returning is as it would be with the real frames below. */
	for (size_t i = d; i-- > b->spec_base;)
		if (b->stack[i].kind == FR_FUNC && b->stack[i].ret == to)
			return i > 0 && arrive_alone(b, i - 1) ? SPEC_OWN
							       : SPEC_TOUCH;
	return SPEC_TOUCH;
}

/* The same decisions as seg_on_jump(), as far as they stay above
 * spec_base. */
static enum seg_spec on_jump(struct seg_builder *b, uint64_t to, bool indirect,
			     int *err)
{
	size_t h = seg_host_at(b);
	const struct frame *f;
	const struct sym_ent *e;

	if (h >= b->depth || h < b->spec_base)
		return SPEC_TOUCH;
	f = &b->stack[h];
	if (f->kind == FR_FUNC && to >= f->lo && to < f->hi)
		return SPEC_OWN;
	e = seg_lookup(b, to);
	if (!e) {
		*err = -ENOMEM;
		return SPEC_TOUCH;
	}
	if (f->kind == FR_FUNC && e->known &&
	    gcc_cold_part(mt_str(&b->t->strs, e->name), seg_frame_str(b, f)))
		return SPEC_OWN;
	if (!(e->entry_known && to == e->lo) &&
	    !back_from_cold_part(f, to, indirect)) {
		size_t i = h;

		while (i-- > 0)
			if (b->stack[i].kind == FR_FUNC &&
			    to >= b->stack[i].lo && to < b->stack[i].hi)
				break;
		/* Nothing it has holds the target: one it never saw may. */
		if (i == SIZE_MAX || i < b->spec_base)
			return SPEC_TOUCH;
		if (!into_cold_part(f, &b->stack[i], indirect))
			return SPEC_OWN;
	}
	/* A longjmp to a caller not seen climbs above every frame. */
	return indirect && e->known && to != e->lo ? SPEC_TOUCH : SPEC_OWN;
}

enum seg_spec seg_spec_check(struct seg_builder *b, enum dec_kind kind,
			     uint64_t ip, int *err)
{
	size_t d;

	*err = 0;
	if (!b->spec)
		return SPEC_OWN;
	if (!b->open || b->ended || b->go_seen)
		return SPEC_STOP;
	switch (kind) {
	case DEC_CALL:
		return top_after_pseudo(b, &d) && d ? SPEC_OWN : SPEC_TOUCH;
	case DEC_SYSCALL:
	case DEC_STOP:
		return b->depth ? SPEC_OWN : SPEC_TOUCH;
	case DEC_PTWRITE:
		return SPEC_OWN;
	case DEC_RET:
		return on_return(b, ip);
	case DEC_JUMP:
	case DEC_IJUMP:
		return on_jump(b, ip, kind == DEC_IJUMP, err);
	case DEC_RESUME:
		/* Resumed in the function on top, its own. */
		if (!top_after_pseudo(b, &d) || !d || d - 1 < b->spec_base)
			return SPEC_TOUCH;
		return b->stack[d - 1].kind == FR_FUNC &&
				       ip >= b->stack[d - 1].lo &&
				       ip < b->stack[d - 1].hi
			       ? SPEC_OWN
			       : SPEC_TOUCH;
	case DEC_INLINE: {
		size_t h = seg_host_at(b);

		return h < b->depth && h + 1 >= b->spec_base ? SPEC_OWN
							     : SPEC_TOUCH;
	}
	case DEC_SWITCH:
		return SPEC_OWN; /* (nothing while a segment is open) */
	default:
		return SPEC_STOP;
	}
}
