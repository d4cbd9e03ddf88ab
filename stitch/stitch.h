/* SPDX-License-Identifier: MIT */
/*
 * stitch: pass 2, joining a thread's trace segments across decode gaps.
 *
 * For neighbours A -> B of a thread, the frames open when A ended and
 * the frames open when B began are compared root first.  B's first stack
 * may start deeper than A's (B never returned to A's roots), so every
 * alignment of B's root against A's stack is tried; frames must have the
 * same function, and where both sides know the call site (A's return
 * address into the frame, the address B's return landed at) it must be
 * the same.  The alignment that explains the most frames wins, and only
 * if no other explains as much: an ambiguous or thin match (one frame, no
 * call-site evidence, not at the root) is not joined.  Joined frames
 * become one slice across the gap; the gap slice sits under the deepest
 * of them; B's other slices move down to their place in A's stack.
 *
 * Every decision, joined or not, is recorded in t->stitches with its
 * score and reason.
 */
#ifndef MT_STITCH_H
#define MT_STITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "model/model.h"

struct seg_ends_table; /* segments/segments.h */

struct stitch_opts {
	int record_only; /* decide and record, but join nothing */
	/*
	 * Called for each thread whose joins did not make a tree (a fault
	 * of ours, not of the capture), with what was wrong with it: the
	 * thread is given back as it was before stitching, without its
	 * decisions; the other threads stay stitched.  May be NULL.
	 */
	void (*unstitched)(void *ctx, uint32_t tid, const char *why);
	void *ctx;
	/*
	 * What the program's code says (img_reach_of(), or a stand-in):
	 * whether the function around from, with control at from, can
	 * never get to to in the same activation (with ret_to: never make
	 * the call that returns to to).  A frame of A that was at from and
	 * a frame of B that was at to (whose child returned to to) are then
	 * two activations, whatever their names.  And whether it can call
	 * the function at callee: IMG_CALLS_SURE when a direct call to it is
	 * on a path, NEVER when the code proves no call can be, MAYBE
	 * otherwise.  Either may be NULL: nothing proven, MAYBE.
	 */
	struct img_reach code;
	/* Threads stitched at once (0 or 1: one at a time); code's answers
	 * must then be safe to ask from as many threads.  A capture of one
	 * thread has its passes over every slice on as many, in chunks of
	 * scan_chunk slices (0: a million). */
	unsigned jobs;
	size_t scan_chunk;
};

/* ends: the frames open at each segment's two ends, as the segment
 * builders left them (NULL: none known, nothing joins).  Returns 0, or
 * -ENOMEM with one line in err (the thread being stitched is given back
 * as it was; the others may be stitched).  o may be NULL: join what
 * fits. */
int stitch_trace(struct mt_trace *t, const struct seg_ends_table *ends,
		 const struct stitch_opts *o, char *err, size_t errlen);

#endif
