/* SPDX-License-Identifier: MIT */
/*
 * Stitching tests, whole traces: threads built from event scripts
 * (stitchtest.h), stitched with what the code says of calls and returns,
 * and threads given back unstitched when their tree cannot be laid.
 */
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "symbols/symbols.h"
#include "tests/unit/check.h"
#include "tests/unit/stitchtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Feed events to thread th of t as one builder; the segments' ends go
 * to ends. */
static void build_thread(struct check_state *st, struct mt_trace *t, size_t th,
			 struct seg_ends_table *ends, const struct ev *e,
			 size_t n)
{
	struct seg_builder *b;

	CHECK(st, !seg_builder_new(&b, t, th, ends, fake_sym, NULL));
	for (size_t i = 0; i < n; i++)
		CHECK(st,
		      !seg_feed(b, 100 + 10 * i, e[i].kind, e[i].ip, e[i].aux));
	CHECK(st, !seg_finish(b, NULL));
	seg_builder_free(b);
}

/* The code, as a test says it is: f1 calls f2 in a loop, nothing else
 * gets back anywhere. */
static bool f1_loops(void *ctx, uint32_t pid, uint64_t from, uint64_t to,
		     bool ret_to)
{
	(void)ctx;
	(void)pid;
	(void)ret_to;
	return !(from == AT(1, 0x15) && to == AT(1, 0x15));
}

/* Nothing gets back anywhere; f5 calls f5 for sure from its call at
 * 0x10 (return 0x15) on, and maybe (a pointer) from 0x25. */
static bool nothing_back(void *ctx, uint32_t pid, uint64_t from, uint64_t to,
			 bool ret_to)
{
	(void)ctx;
	(void)pid;
	(void)from;
	(void)to;
	(void)ret_to;
	return true;
}

static enum img_calls f5_calls(void *ctx, uint32_t pid, uint64_t from,
			       uint64_t callee)
{
	(void)ctx;
	(void)pid;
	return callee == FN(5) && from == AT(5, 0x15) ? IMG_CALLS_SURE
						      : IMG_CALLS_MAYBE;
}

/*
 * A recursion through f5, as a merge sort's: A's f5s called from 0x25
 * then 0x15; B's two callers were called from 0x15.  Aligned at A's
 * second f5, B's first would be A's, its child a new call from 0x15:
 * but no frame gets back where B's are, so nothing of it joins, and
 * its first frame would be a new call of A's first f5, which calls f5
 * again only through a pointer.  A's second f5 calls f5 for sure: B's
 * first frame is a new call of it, beside A's leaf, a guess.
 */
static void test_new_call_likelier(struct check_state *st)
{
	const struct ev evs[] = {
		{DEC_SYNC, AT(1, 0x10), 0},	{DEC_CALL, FN(5), AT(1, 0x15)},
		{DEC_CALL, FN(5), AT(5, 0x25)}, {DEC_CALL, FN(5), AT(5, 0x15)},
		{DEC_OVERFLOW, AT(5, 0x30), 0}, {DEC_RESUME, AT(5, 0x40), 0},
		{DEC_RET, AT(5, 0x15), 0},	{DEC_RET, AT(5, 0x15), 0},
	};
	const struct stitch_opts so = {
		.code = {.never_reaches = nothing_back, .calls_to = f5_calls}};

	run_with(st, evs, sizeof(evs) / sizeof(*evs), &so,
		 "0:f1:j:e 1:f5:j:e:d 2:f5:j:e:d 3:f5:e:d 3:gap:d "
		 "3:f5:e:d 4:f5:d 5:f5:d",
		 "1 other, likelier by the code");
}

/*
 * Every frame on both sides alike (f1 > f2 > f3, the same call sites),
 * but by the code B's f3 cannot be A's (A's f3 cannot get to where B's
 * resumed), and f2 does not call f3 again once it returned (no loop
 * around the call): B's f2 is another call of f2 too, made by f1, which
 * loops.  Joined: f1 alone; B's f2 beside A's, a guess from there down
 * (tail calls could have put f3 there again).
 */
static void test_new_calls_up_to_a_loop(struct check_state *st)
{
	const struct ev evs[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RESUME, AT(3, 0x40), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const struct stitch_opts so = {.code = {.never_reaches = f1_loops}};

	run_with(st, evs, sizeof(evs) / sizeof(*evs), &so,
		 "0:f1:j:e 1:f2:e:d 2:f3:e:d 1:gap:d 1:f2:d 2:f3:d",
		 "1 above it another call too");
}

/* The first slice of th named name, from index from on. */
static uint32_t slice_named(const struct mt_trace *t,
			    const struct mt_thread *th, const char *name,
			    size_t from)
{
	for (size_t i = from; i < th->nr_slices; i++)
		if (!strcmp(mt_slice_str(t, &th->slices[i]), name))
			return (uint32_t)i;
	return MT_NONE;
}

static void note_unstitched(void *ctx, uint32_t tid, const char *why)
{
	uint32_t *got = ctx;

	(void)why;
	got[got[0] + 1] = tid;
	got[0]++;
}

/* f1 calls f12 in a loop, and f2 goes on past its call, but does not
 * make it again; nothing else gets back anywhere. */
static bool f2_goes_on(void *ctx, uint32_t pid, uint64_t from, uint64_t to,
		       bool ret_to)
{
	(void)ctx;
	(void)pid;
	(void)ret_to;
	if (from == AT(1, 0x15) && to == AT(1, 0x15))
		return false;
	return from / 0x1000 != 2 || to == AT(2, 0x15);
}

/*
 * f12 calls f2 from the code it inlined (g).  After the first gap, B's
 * f2 is another call (A's f3 cannot get back to where B's resumed, nor
 * f2 make its call again), made by f12: it hangs under f12, the only
 * caller anyone saw.  The second gap's B returns from f2 into g, then
 * into f1: f2 is joined, and g, which it was called from, began before
 * it (not with B, beside an f2 that ran on into it).
 */
static void test_inlined_caller_learnt_later(struct check_state *st)
{
	const struct ev evs[] = {
		{DEC_SYNC, AT(1, 0x10), 0},
		{DEC_CALL, FN(12), AT(1, 0x15)},
		{DEC_INLINE, AT(12, 0x100), (uintptr_t)&inl_g},
		{DEC_CALL, FN(2), AT(12, 0x120)},
		{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RESUME, AT(3, 0x40), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_OVERFLOW, AT(2, 0x20), 0},
		{DEC_RESUME, AT(2, 0x40), 0},
		{DEC_RET, AT(12, 0x120), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const struct stitch_opts so = {.code = {.never_reaches = f2_goes_on}};

	run_with(st, evs, sizeof(evs) / sizeof(*evs), &so,
		 "0:f1:j:e 1:f12:j 2:g:e 3:f2:e:d 4:f3:e:d 2:gap "
		 "2:g:j 3:f2:j:d 4:f3:d 4:gap",
		 "the deepest is another call");
}

/*
 * An island between A and B: X1 and X2 (f9 > f10) join each other but
 * neither side.  B's root f1 learns its caller f7 from C, the segment
 * after it, before the second pass joins A to B across the island, by
 * B's start chain (f1 > f2, f2 returning to A's call site).  f7 was B's
 * f1's caller, so it is A's f1's: it comes with it, from A's start (not
 * a tree of its own, from B's, beside A's f1 through the same time).
 */
static void test_across_island_callers_known(struct check_state *st)
{
	const struct ev evs[] = {
		{DEC_SYNC, AT(1, 0x10), 0},
		{DEC_CALL, FN(2), AT(1, 0x15)},
		{DEC_OVERFLOW, AT(9, 0x10), 0},
		{DEC_CALL, FN(10), AT(9, 0x15)},
		{DEC_OVERFLOW, AT(10, 0x40), 0},
		{DEC_RET, AT(9, 0x15), 0},
		{DEC_OVERFLOW, AT(2, 0x40), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_CALL, FN(3), AT(1, 0x25)},
		{DEC_OVERFLOW, AT(3, 0x40), 0},
		{DEC_RET, AT(1, 0x25), 0},
		{DEC_RET, AT(7, 0x15), 0},
	};

	RUN_EV(st, evs, false,
	       "0:f7:j:e 1:f1:j 2:f2:j:d 3:gap:d 3:f9:j:e:d 4:f10:j:d 5:gap:d "
	       "3:gap:d 2:f3:j 3:gap",
	       "across 1 to 2, which join neither");
}

/*
 * The same, but A's f1 was called by f8, and C says B's f1 was called
 * by f7: across the island, B's f1 is not A's, whatever B's own chain
 * says (joined, f7 would be left a tree of its own beside A's f1,
 * through the same time).  Not joined.
 */
static void test_across_island_callers_differ(struct check_state *st)
{
	const struct ev evs[] = {
		{DEC_SYNC, AT(8, 0x10), 0},
		{DEC_CALL, FN(1), AT(8, 0x15)},
		{DEC_CALL, FN(2), AT(1, 0x15)},
		{DEC_OVERFLOW, AT(9, 0x10), 0},
		{DEC_CALL, FN(10), AT(9, 0x15)},
		{DEC_OVERFLOW, AT(10, 0x40), 0},
		{DEC_RET, AT(9, 0x15), 0},
		{DEC_OVERFLOW, AT(2, 0x40), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_CALL, FN(3), AT(1, 0x25)},
		{DEC_OVERFLOW, AT(3, 0x40), 0},
		{DEC_RET, AT(1, 0x25), 0},
		{DEC_RET, AT(7, 0x15), 0},
	};

	RUN_EV(st, evs, false,
	       "0:f8:e 1:f1:e 2:f2:e 1:gap 1:f9:j:e:d 2:f10:j:d 3:gap:d 1:gap "
	       "1:f7:j:e:d 2:f1:j:d 3:f2:d 3:f3:j:d 4:gap:d",
	       "1 revealed");
}

/*
 * f2 tail-calls f4 in B, and f4 tail-calls f6 in C: each is a second
 * root of its segment, under its first root's parent.  C's first root
 * (f4) is joined to B's second root, so f6's caller is found two steps
 * away: f1, which D returns to.  D joins there (one step found none:
 * f1 came back as a caller revealed above f6, a second f1 beside A's,
 * through the same time).
 */
static void test_second_roots_chained(struct check_state *st)
{
	const struct ev e[] = {
		{DEC_SYNC, AT(8, 0x10), 0},	{DEC_CALL, FN(1), AT(8, 0x15)},
		{DEC_CALL, FN(2), AT(1, 0x15)}, {DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0}, {DEC_RET, AT(2, 0x15), 0},
		{DEC_JUMP, FN(4), AT(2, 0x40)}, {DEC_CALL, FN(5), AT(4, 0x15)},
		{DEC_OVERFLOW, AT(5, 0x30), 0}, {DEC_RET, AT(4, 0x15), 0},
		{DEC_JUMP, FN(6), AT(4, 0x40)}, {DEC_CALL, FN(7), AT(6, 0x15)},
		{DEC_OVERFLOW, AT(7, 0x30), 0}, {DEC_RET, AT(6, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f8:j:e 1:f1:j:e 2:f2:j 3:f3:j 4:gap 2:f4:j 3:f5:j 4:gap "
	       "2:f6:j 3:f7:j 4:gap",
	       "3 frames by name, 1 by call site, 1 ancestor kept");
}

/*
 * B resumes in f4 and longjmps into f1, stepping over A's f2 and f3;
 * but by the code B's f4 cannot be A's (A's f4 cannot get to where B
 * resumed): it is another call, made by f3, which lived until the jump.
 * It and the gap go under f3, not beside it under f1.
 */
static void test_longjmp_step_other_call(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F5,
		{DEC_OVERFLOW, AT(4, 0x50), 0},
		{DEC_IJUMP, AT(1, 0x60), AT(4, 0x70)},
	};
	const struct stitch_opts so = {.code = {.never_reaches = nothing_back}};

	run_with(
		st, e, sizeof(e) / sizeof(*e), &so,
		"0:f1:j:e 1:f2:j:d 2:f3:j:d 3:f4:e:d 4:f5:e:d 3:gap:d 3:f4:d",
		"stepped over below a longjmp target (guessed); the deepest is "
		"another call");
}

/*
 * All or nothing: thread 1's joins are made to close a cycle (B reveals
 * f1 above A's root f2, and f1 is made a child of f2 beforehand, as no
 * capture would), so its tree cannot be rebuilt.  That thread comes
 * back exactly as it was, without its decisions, and the caller hears
 * of it; thread 2, stitched alongside, stays joined.
 */
static void test_failed_thread_given_back(struct check_state *st)
{
	const struct ev cyc[] = {
		{DEC_SYNC, AT(2, 0x10), 0},	{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0}, {DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const struct ev ok[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	uint32_t got[4] = {0};
	struct stitch_opts so = {.unstitched = note_unstitched, .ctx = got};
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	struct mt_slice *was = NULL;
	size_t nr_was = 0, ok_slices;
	uint32_t f1, f2;
	char err[128];

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t1") != NULL);
	CHECK(st, mt_trace_add_thread(&t, 1, 2, "t2") != NULL);
	build_thread(st, &t, 0, &ends, cyc, sizeof(cyc) / sizeof(*cyc));
	build_thread(st, &t, 1, &ends, ok, sizeof(ok) / sizeof(*ok));
	f2 = slice_named(&t, &t.threads[0], "f2", 0);
	f1 = slice_named(&t, &t.threads[0], "f1", 0);
	CHECK(st, f1 != MT_NONE && f2 != MT_NONE && f2 < f1);
	if (f1 == MT_NONE || f2 == MT_NONE)
		goto out;
	t.threads[0].slices[f1].parent = f2;
	nr_was = t.threads[0].nr_slices;
	was = malloc(nr_was * sizeof(*was));
	CHECK(st, was != NULL);
	if (!was)
		goto out;
	memcpy(was, t.threads[0].slices, nr_was * sizeof(*was));
	ok_slices = t.threads[1].nr_slices;
	CHECK(st, !stitch_trace(&t, &ends, &so, err, sizeof(err)));
	CHECKF(st, got[0] == 1 && got[1] == 1, "%u threads given back", got[0]);
	CHECK(st, t.threads[0].nr_slices == nr_was);
	CHECK(st,
	      t.threads[0].nr_slices == nr_was &&
		      !memcmp(was, t.threads[0].slices, nr_was * sizeof(*was)));
	/* thread 2 joined its three frames; only its decision is left */
	CHECK(st, t.threads[1].nr_slices == ok_slices - 3);
	CHECK(st, t.threads[1].slices[0].flags & MT_SLICE_JOINED);
	CHECKF(st, t.nr_stitches == 1 && t.stitches[0].tid == 2,
	       "%zu decisions", t.nr_stitches);
out:
	free(was);
	seg_ends_free(&ends);
	mt_trace_free(&t);
}

/*
 * All or nothing, when the fault shows only as the tree is laid out: the
 * joins make a tree, but one whose callee begins before its caller (A's
 * f4, which returned before the gap, is made a child of f6, which begins
 * after it, as no capture would).  The thread comes back exactly as it
 * was, joins undone, and the caller hears of it.
 */
static void test_unlaid_thread_given_back(struct check_state *st)
{
	const struct ev evs[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(4), AT(2, 0x35)},
		{DEC_RET, AT(2, 0x35), 0},
		{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_RET, AT(7, 0x15), 0},
		{DEC_CALL, FN(6), AT(7, 0x25)},
		{DEC_RET, AT(7, 0x25), 0},
	};
	uint32_t got[4] = {0};
	struct stitch_opts so = {.unstitched = note_unstitched, .ctx = got};
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	struct mt_slice *was = NULL;
	size_t nr_was = 0;
	uint32_t f4, f6;
	char err[128];

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t1") != NULL);
	build_thread(st, &t, 0, &ends, evs, sizeof(evs) / sizeof(*evs));
	f4 = slice_named(&t, &t.threads[0], "f4", 0);
	f6 = slice_named(&t, &t.threads[0], "f6", 0);
	CHECK(st, f4 != MT_NONE && f6 != MT_NONE);
	if (f4 == MT_NONE || f6 == MT_NONE)
		goto out;
	CHECK(st, t.threads[0].slices[f4].ts < t.threads[0].slices[f6].ts);
	t.threads[0].slices[f4].parent = f6;
	nr_was = t.threads[0].nr_slices;
	was = malloc(nr_was * sizeof(*was));
	CHECK(st, was != NULL);
	if (!was)
		goto out;
	memcpy(was, t.threads[0].slices, nr_was * sizeof(*was));
	CHECK(st, !stitch_trace(&t, &ends, &so, err, sizeof(err)));
	CHECKF(st, got[0] == 1 && got[1] == 1, "%u threads given back", got[0]);
	CHECK(st,
	      t.threads[0].nr_slices == nr_was &&
		      !memcmp(was, t.threads[0].slices, nr_was * sizeof(*was)));
	CHECKF(st, t.nr_stitches == 0, "%zu decisions", t.nr_stitches);
out:
	free(was);
	seg_ends_free(&ends);
	mt_trace_free(&t);
}

/* What was wrong with the last thread given back. */
static void note_why(void *ctx, uint32_t tid, const char *why)
{
	const char **got = ctx;

	(void)tid;
	*got = why;
}

/*
 * All or nothing, when two calls under one caller would overlap in time
 * (A's f4 is made to run past the start of f3, its caller's next call,
 * as no capture would): a trace viewer would cut one short to nest them,
 * so the database and the trace would disagree.  The thread comes back
 * as it was, and the caller hears why.
 */
static void test_overlap_given_back(struct check_state *st)
{
	const struct ev evs[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(4), AT(2, 0x35)},
		{DEC_RET, AT(2, 0x35), 0},
		{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const char *why = NULL;
	struct stitch_opts so = {.unstitched = note_why, .ctx = &why};
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	struct mt_slice *was = NULL;
	size_t nr_was = 0;
	uint32_t f4, f3;
	char err[128];

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t1") != NULL);
	build_thread(st, &t, 0, &ends, evs, sizeof(evs) / sizeof(*evs));
	f4 = slice_named(&t, &t.threads[0], "f4", 0);
	f3 = slice_named(&t, &t.threads[0], "f3", 0);
	CHECK(st, f4 != MT_NONE && f3 != MT_NONE);
	if (f4 == MT_NONE || f3 == MT_NONE)
		goto out;
	t.threads[0].slices[f4].dur =
		t.threads[0].slices[f3].ts + 5 - t.threads[0].slices[f4].ts;
	nr_was = t.threads[0].nr_slices;
	was = malloc(nr_was * sizeof(*was));
	CHECK(st, was != NULL);
	if (!was)
		goto out;
	memcpy(was, t.threads[0].slices, nr_was * sizeof(*was));
	CHECK(st, !stitch_trace(&t, &ends, &so, err, sizeof(err)));
	CHECKF(st, why && strstr(why, "overlap"), "given back: %s",
	       why ? why : "no");
	CHECK(st,
	      t.threads[0].nr_slices == nr_was &&
		      !memcmp(was, t.threads[0].slices, nr_was * sizeof(*was)));
	CHECKF(st, t.nr_stitches == 0, "%zu decisions", t.nr_stitches);
out:
	free(was);
	seg_ends_free(&ends);
	mt_trace_free(&t);
}

/*
 * One call repeated deep, across gaps: A is f2 calling itself; X returns
 * into f3, which tail-calls f2 (a second root) that calls itself again;
 * B resumes in f2, which by the code cannot be X's leaf: another call,
 * hung under X's frame above (no frame joined).  X joins neither side,
 * so A is tried across X to B; but B hangs under X already, through X's
 * second root, and the join across is not made.  It was: B's callers
 * (X's f2s, hung under A's frame) became A's own frames at another depth,
 * merged level by level, and the joins closed a cycle (the thread was
 * given back unstitched).
 */
static void test_recursion_across_second_root(struct check_state *st)
{
	const struct ev e[] = {
		{DEC_SYNC, AT(2, 0x10), 0},	{DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_CALL, FN(2), AT(2, 0x15)}, {DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(2, 0x30), 0}, {DEC_RET, AT(3, 0x15), 0},
		{DEC_JUMP, FN(2), AT(3, 0x40)}, {DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_CALL, FN(2), AT(2, 0x15)}, {DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(2, 0x30), 0}, {DEC_CALL, FN(2), AT(2, 0x50)},
		{DEC_CALL, FN(2), AT(2, 0x15)},
	};
	const char *why = NULL;
	struct stitch_opts so = {.code = {.never_reaches = nothing_back},
				 .unstitched = note_why,
				 .ctx = &why};

	run_with(st, e, sizeof(e) / sizeof(*e), &so,
		 "0:f2:e 1:f2:e 2:f2:e 3:f2:e 0:gap 0:f3 1:f2 0:f2:j:e:d "
		 "1:f2:j:e:d 2:f2:j:e:d 3:f2:e:d 3:gap:d 3:f2:e:d 4:f2:e:d "
		 "5:f2:e:d",
		 "another call");
	CHECKF(st, !why, "given back: %s", why ? why : "");
}

/*
 * B's revealed caller f1 would become the caller of A's root f2, from
 * f2's start; but f1 already hangs under f3, which began after f2 (as
 * an island hung by a join across it does).  The join would make f3
 * begin after its callee: it is not made, and the decision says why.
 */
static void test_join_under_later_frame(struct check_state *st)
{
	const struct ev evs[] = {
		{DEC_SYNC, AT(2, 0x10), 0},	{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0}, {DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	uint32_t got[4] = {0};
	struct stitch_opts so = {.unstitched = note_unstitched, .ctx = got};
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	uint32_t f1, f3;
	char err[128];

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t1") != NULL);
	build_thread(st, &t, 0, &ends, evs, sizeof(evs) / sizeof(*evs));
	f3 = slice_named(&t, &t.threads[0], "f3", 0);
	f1 = slice_named(&t, &t.threads[0], "f1", 0);
	CHECK(st, f1 != MT_NONE && f3 != MT_NONE && f3 < f1);
	if (f1 == MT_NONE || f3 == MT_NONE)
		goto out;
	/* and so does the gap before it, as that join would have hung it */
	CHECK(st, t.threads[0].slices[f1 - 1].flags & MT_SLICE_GAP);
	t.threads[0].slices[f1].parent = f3;
	t.threads[0].slices[f1 - 1].parent = f3;
	CHECK(st, !stitch_trace(&t, &ends, &so, err, sizeof(err)));
	CHECKF(st, got[0] == 0, "%u threads given back", got[0]);
	CHECKF(st, t.nr_stitches == 1, "%zu decisions", t.nr_stitches);
	if (t.nr_stitches == 1) {
		const char *why = mt_str(&t.strs, t.stitches[0].reason);

		CHECK(st, t.stitches[0].frames_joined == 0);
		CHECKF(st, strstr(why, "not joined: B already hangs under"),
		       "reason: %s", why);
	}
	for (size_t i = 0; i < t.threads[0].nr_slices; i++)
		CHECK(st, !(t.threads[0].slices[i].flags & MT_SLICE_JOINED));
out:
	seg_ends_free(&ends);
	mt_trace_free(&t);
}
/* Threads for test_threads_at_once(): each kind of thread in turn, a
 * cycle (given back) every fifth. */
static void build_many(struct check_state *st, struct mt_trace *t,
		       struct seg_ends_table *ends, size_t n)
{
	const struct ev cyc[] = {
		{DEC_SYNC, AT(2, 0x10), 0},	{DEC_CALL, FN(3), AT(2, 0x15)},
		{DEC_OVERFLOW, AT(3, 0x30), 0}, {DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const struct ev ok[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};
	const struct ev two[] = {
		CALLS_TO_F4,
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		{DEC_RET, AT(3, 0x15), 0},
		{DEC_CALL, FN(6), AT(3, 0x25)},
		{DEC_OVERFLOW, AT(6, 0x30), 0},
		{DEC_RET, AT(3, 0x25), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	for (size_t i = 0; i < n; i++)
		CHECK(st, mt_trace_add_thread(t, 1, (uint32_t)(10 + i), "t") !=
				  NULL);
	for (size_t i = 0; i < n; i++) {
		if (i % 5 == 4) {
			uint32_t f1, f2;

			build_thread(st, t, i, ends, cyc,
				     sizeof(cyc) / sizeof(*cyc));
			f2 = slice_named(t, &t->threads[i], "f2", 0);
			f1 = slice_named(t, &t->threads[i], "f1", 0);
			CHECK(st, f1 != MT_NONE && f2 != MT_NONE);
			if (f1 != MT_NONE && f2 != MT_NONE)
				t->threads[i].slices[f1].parent = f2;
		} else if (i % 2) {
			build_thread(st, t, i, ends, two,
				     sizeof(two) / sizeof(*two));
		} else {
			build_thread(st, t, i, ends, ok,
				     sizeof(ok) / sizeof(*ok));
		}
	}
}

/*
 * Threads stitched at once give what stitching them one after another
 * gives: the same slices, the same decisions in the same order, the same
 * strings under the same ids, the same spans, and the threads given back
 * told of in the same order.
 */
static void test_threads_at_once(struct check_state *st)
{
	enum { N = 23 };
	struct mt_trace t[2];
	struct seg_ends_table ends[2] = {{0}};
	uint32_t got[2][N + 1] = {{0}};
	char err[128];

	for (int k = 0; k < 2; k++) {
		struct stitch_opts so = {.unstitched = note_unstitched,
					 .ctx = got[k],
					 .jobs = k ? 4 : 1};

		mt_trace_init(&t[k]);
		build_many(st, &t[k], &ends[k], N);
		CHECK(st,
		      !stitch_trace(&t[k], &ends[k], &so, err, sizeof(err)));
	}
	CHECKF(st,
	       got[0][0] == N / 5 && !memcmp(got[0], got[1], sizeof(got[0])),
	       "%u and %u threads given back", got[0][0], got[1][0]);
	CHECK(st, t[0].nr_stitches > N &&
			  t[0].nr_stitches == t[1].nr_stitches &&
			  !memcmp(t[0].stitches, t[1].stitches,
				  t[0].nr_stitches * sizeof(*t[0].stitches)));
	CHECK(st, t[0].nr_guesses == t[1].nr_guesses &&
			  (!t[0].nr_guesses ||
			   !memcmp(t[0].guesses, t[1].guesses,
				   t[0].nr_guesses * sizeof(*t[0].guesses))));
	CHECK(st, t[0].strs.nr == t[1].strs.nr &&
			  t[0].strs.len == t[1].strs.len &&
			  !memcmp(t[0].strs.buf, t[1].strs.buf, t[0].strs.len));
	for (size_t i = 0; i < N; i++)
		CHECKF(st,
		       t[0].threads[i].nr_slices == t[1].threads[i].nr_slices &&
			       !memcmp(t[0].threads[i].slices,
				       t[1].threads[i].slices,
				       t[0].threads[i].nr_slices *
					       sizeof(struct mt_slice)),
		       "thread %zu", i);
	for (int k = 0; k < 2; k++) {
		seg_ends_free(&ends[k]);
		mt_trace_free(&t[k]);
	}
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_failed_thread_given_back);
	RUN(&st, test_unlaid_thread_given_back);
	RUN(&st, test_overlap_given_back);
	RUN(&st, test_new_calls_up_to_a_loop);
	RUN(&st, test_new_call_likelier);
	RUN(&st, test_join_under_later_frame);
	RUN(&st, test_inlined_caller_learnt_later);
	RUN(&st, test_across_island_callers_known);
	RUN(&st, test_across_island_callers_differ);
	RUN(&st, test_second_roots_chained);
	RUN(&st, test_longjmp_step_other_call);
	RUN(&st, test_recursion_across_second_root);
	RUN(&st, test_threads_at_once);
	return CHECK_DONE(&st);
}
