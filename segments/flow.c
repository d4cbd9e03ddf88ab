/* SPDX-License-Identifier: MIT */
/* How returns, jumps and resumes move the segment builder's frame stack. */
#include "segments/seg_internal.h"
#include "segments/unwind_quirks.h"

#include <errno.h>

int seg_on_return(struct seg_builder *b, uint64_t time, uint64_t to)
{
	size_t i;

	size_t h = seg_host_at(b);

	/* Tracing stopped on the return, its target unsaid: it leaves the
	 * frame on top, to whichever caller is below. */
	if (!to) {
		if (h > 0 && h < b->depth && b->stack[h].kind == FR_FUNC)
			seg_pop_to(b, h, time);
		return 0;
	}

	/* The callee whose return address this is, topmost first. */
	for (i = b->depth; i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && b->stack[i].ret == to) {
			seg_pop_to(b, i, time);
			return seg_inl_at(b, time, to, 0);
		}
	/* A runtime's raise returning into a handler (unwind_quirks.c). */
	if (h < b->depth && ocaml_raise_ret(seg_frame_str(b, &b->stack[h])))
		return seg_on_jump(b, time, to, true);
	/* Else a frame of the function it lands in, below the top. */
	for (i = h; h < b->depth && i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && to >= b->stack[i].lo &&
		    to < b->stack[i].hi) {
			seg_pop_to(b, seg_with_inlined(b, i), time);
			return seg_inl_at(b, time, to, 0);
		}
	/* A signal handler returns into the kernel's trampoline, which
	 * takes its place until sigreturn resumes the interrupted code. */
	if (h < b->depth && b->stack[h].async) {
		int32_t lv = b->stack[h].level;
		int rc;

		seg_pop_to(b, h, time);
		rc = seg_push_fn(b, time, lv, to, 0, MT_SLICE_TAIL);
		if (!rc)
			seg_top(b)->async = true;
		return seg_then_inl(b, rc, time, to, 0);
	}
	/* Else it climbs above everything we know. */
	if (b->nr_amb) {
		int rc = go_climbed(b, time, to);

		if (rc)
			return rc;
	}
	seg_pop_to(b, 0, time);
	return seg_then_inl(b, seg_reveal_at(b, to, to - 1), time, to, 0);
}

int seg_on_jump(struct seg_builder *b, uint64_t time, uint64_t to,
		bool indirect)
{
	const struct sym_ent *e = seg_lookup(b, to);
	size_t h = seg_host_at(b);
	struct frame *f = h < b->depth ? &b->stack[h] : NULL;
	uint64_t ret, took_lo = 0, took_hi = 0;
	int32_t lv;
	int rc;

	if (!e)
		return -ENOMEM;
	if (f && f->kind == FR_FUNC && to >= f->lo && to < f->hi)
		return seg_inl_at(b, time, to, 0);
	/* Into its own cold part, by name (a switch's jump table reaches it
	 * too): the same activation, wherever else that part is running. */
	if (f && f->kind == FR_FUNC && e->known &&
	    gcc_cold_part(mt_str(&b->t->strs, e->name), seg_frame_str(b, f)))
		goto tail;
	/* Into the middle of a function below: a longjmp or an exception
	 * unwinding to it.  (To a function's entry, named or not, it is a
	 * tail call, though the function be active below: a stripped
	 * binary's recursion through a tail call.) */
	if (!(e->entry_known && to == e->lo) &&
	    !back_from_cold_part(f, to, indirect))
		for (size_t i = h; f && i-- > 0;)
			if (b->stack[i].kind == FR_FUNC &&
			    to >= b->stack[i].lo && to < b->stack[i].hi) {
				if (into_cold_part(f, &b->stack[i], indirect))
					break;
				seg_pop_to(b, seg_with_inlined(b, i), time);
				return seg_inl_at(b, time, to, 0);
			}
	/*
	 * An indirect jump into the middle of a function nowhere on the stack
	 * is a longjmp or an exception landing in a caller the segment has
	 * not seen yet: like a return that climbs above every frame, it
	 * reveals that caller (as the roots' parent: frames between are
	 * unknowable).  Its address is no call site, so stitching gets 0.
	 * Code without a symbol gives no such evidence: stripped libraries
	 * jump through tables between their unnamed static functions.
	 */
	if (indirect && e->known && to != e->lo) {
		seg_pop_to(b, 0, time);
		rc = seg_reveal(b, to);
		if (!rc)
			b->reveal_ips[b->nr_reveals - 1] = 0;
		return seg_then_inl(b, rc, time, to, MT_SLICE_INFERRED_START);
	}
	/*
	 * A tail call, or a direct jump into the middle of a function nowhere
	 * on the stack: code shared between functions (glibc's string
	 * functions jump into each other's bodies; compilers split off cold
	 * parts).  The new function takes the frame's place and returns
	 * where it would have.
	 */
tail:
	ret = f ? f->ret : 0;
	lv = f ? f->level : 0;
	if (f && f->kind == FR_FUNC) {
		took_lo = f->lo;
		took_hi = f->hi;
	}
	if (f)
		seg_pop_to(b, h, time);
	rc = seg_push_fn(b, time, lv, to, ret, MT_SLICE_TAIL);
	if (!rc) {
		seg_top(b)->took_lo = took_lo;
		seg_top(b)->took_hi = took_hi;
	}
	return seg_then_inl(b, rc, time, to, 0);
}

int seg_on_resume(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	const struct sym_ent *e;
	struct frame *f = seg_top(b);
	size_t h;

	if (f && f->kind == FR_PSEUDO) {
		seg_pop_to(b, b->depth - 1, time);
		f = seg_top(b);
	}
	if (!f)
		return seg_then_inl(b,
				    seg_push_fn(b, time, b->rmin, ip, 0,
						MT_SLICE_INFERRED_START),
				    time, ip, MT_SLICE_INFERRED_START);
	if (ip >= f->lo && ip < f->hi)
		return seg_inl_at(b, time, ip, 0);
	h = seg_host_at(b);
	for (size_t i = h; i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && ip >= b->stack[i].lo &&
		    ip < b->stack[i].hi) {
			seg_pop_to(b, seg_with_inlined(b, i), time);
			return seg_inl_at(b, time, ip, 0);
		}
	e = seg_lookup(b, ip);
	if (!e)
		return -ENOMEM;
	/* At a function's entry: delivered like a call (a signal
	 * handler); it returns to a trampoline we will see. */
	if (e->known && ip == e->lo) {
		int rc = seg_push_fn(b, time, f->level + 1, ip, 0, 0);

		if (!rc)
			seg_top(b)->async = true;
		return seg_then_inl(b, rc, time, ip, 0);
	}
	return seg_on_jump(b, time, ip, false);
}
