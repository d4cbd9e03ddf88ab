/* SPDX-License-Identifier: MIT */
/*
 * Stitching tests: segments built from event scripts (as in
 * test_segments.c), joined across their gap, and the tree that results.
 * Function k lives at [k * 0x1000, (k + 1) * 0x1000) and is named "fk".
 */
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "symbols/symbols.h"
#include "tests/unit/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN(k)	   ((uint64_t)(k)*0x1000)
#define AT(k, off) (FN(k) + (off))

/* f12 inlined g at [0x100, 0x200). */
static const struct sym_inline inl_g = {.name = "g"};

static void fake_sym(void *ctx, uint64_t ip, struct img_sym *out)
{
	uint64_t k = ip / 0x1000, off = ip % 0x1000;

	(void)ctx;
	out->fn_inl = k == 12;
	out->inl = k == 12 && off >= 0x100 && off < 0x200 ? &inl_g : NULL;
	out->start = FN(k);
	out->end = FN(k + 1);
	out->dso = "/bin/fake";
	out->known = true;
	snprintf(out->buf, sizeof(out->buf), "f%llu", (unsigned long long)k);
	out->name = out->buf;
}

struct ev {
	enum dec_kind kind;
	uint64_t ip, aux;
};

/* Children of one parent (or roots) one after another, never at once:
 * a trace viewer would cut one short to nest them. */
static void check_no_overlap(struct check_state *st, const struct mt_thread *th)
{
	size_t n = th->nr_slices;
	uint32_t *last = malloc((n + 1) * sizeof(*last));

	CHECK(st, last != NULL);
	if (!last)
		return;
	for (size_t i = 0; i <= n; i++)
		last[i] = MT_NONE;
	for (size_t i = 0; i < n; i++) {
		const struct mt_slice *x = &th->slices[i];
		size_t p = x->parent == MT_NONE ? n : x->parent;

		if (last[p] != MT_NONE) {
			const struct mt_slice *y = &th->slices[last[p]];

			CHECKF(st, y->ts + y->dur <= x->ts,
			       "slices %u and %zu overlap under one parent",
			       last[p], i);
		}
		last[p] = (uint32_t)i;
	}
	free(last);
}

/* Build one thread from events, stitch it as so says, and render the
 * tree as "depth:name:flags": j joined, e inferred end, d depth guessed;
 * "gap" for gaps. */
static void run_with(struct check_state *st, const struct ev *e, size_t n,
		     const struct stitch_opts *so, const char *want,
		     const char *reason)
{
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	struct seg_builder *b;
	char buf[1024] = "", err[128];
	size_t at = 0;

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t") != NULL);
	CHECK(st, !seg_builder_new(&b, &t, 0, &ends, fake_sym, NULL));
	for (size_t i = 0; i < n; i++)
		CHECK(st,
		      !seg_feed(b, 100 + 10 * i, e[i].kind, e[i].ip, e[i].aux));
	CHECK(st, !seg_finish(b, NULL));
	seg_builder_free(b);
	CHECK(st, !stitch_trace(&t, &ends, so, err, sizeof(err)));
	seg_ends_free(&ends);
	for (size_t i = 0; i < t.threads[0].nr_slices; i++) {
		const struct mt_slice *s = &t.threads[0].slices[i];

		at += (size_t)snprintf(
			buf + at, sizeof(buf) - at, "%s%u:%s%s%s%s",
			i ? " " : "", s->depth,
			(s->flags & MT_SLICE_GAP) ? "gap" : mt_slice_str(&t, s),
			(s->flags & MT_SLICE_JOINED) ? ":j" : "",
			(s->flags & MT_SLICE_INFERRED_END) ? ":e" : "",
			(s->flags & MT_SLICE_DEPTH_GUESSED) ? ":d" : "");
		if (s->parent != MT_NONE) {
			const struct mt_slice *p =
				&t.threads[0].slices[s->parent];

			CHECKF(st, s->parent < i && p->depth + 1 == s->depth,
			       "slice %zu: bad parent", i);
			CHECKF(st,
			       p->ts <= s->ts &&
				       s->ts + s->dur <= p->ts + p->dur,
			       "slice %zu outside its parent", i);
		} else {
			CHECKF(st, s->depth == 0, "slice %zu: root not at 0",
			       i);
		}
	}
	CHECKF(st, !strcmp(buf, want), "\n    got  %s\n    want %s", buf, want);
	check_no_overlap(st, &t.threads[0]);
	{
		size_t gaps = 0;

		for (size_t i = 0; i < n; i++)
			gaps += e[i].kind == DEC_OVERFLOW;
		CHECKF(st, t.nr_stitches == gaps, "%zu decisions, %zu gaps",
		       t.nr_stitches, gaps);
	}
	if (t.nr_stitches) {
		bool found = false;

		/* the reason of any decision */
		for (size_t i = 0; i < t.nr_stitches && !found; i++)
			found = strstr(mt_str(&t.strs, t.stitches[i].reason),
				       reason) != NULL;
		CHECKF(st, found, "reason: %s",
		       mt_str(&t.strs, t.stitches[t.nr_stitches - 1].reason));
	}
	mt_trace_free(&t);
}

/* The same, with no code to read, joining unless record_only. */
static void run(struct check_state *st, const struct ev *e, size_t n,
		bool record_only, const char *want, const char *reason)
{
	struct stitch_opts so = {.record_only = record_only};

	run_with(st, e, n, &so, want, reason);
}

/* A's stack f1 > f2 > ... : the sync in f1, each frame called from 0x15
 * of its caller. */
/* clang-format off */
#define CALLS_TO_F2 {DEC_SYNC, AT(1, 0x10), 0}, {DEC_CALL, FN(2), AT(1, 0x15)}
#define CALLS_TO_F3 CALLS_TO_F2, {DEC_CALL, FN(3), AT(2, 0x15)}
#define CALLS_TO_F4 CALLS_TO_F3, {DEC_CALL, FN(4), AT(3, 0x15)}
#define CALLS_TO_F5 CALLS_TO_F4, {DEC_CALL, FN(5), AT(4, 0x15)}
/* clang-format on */

#define RUN_EV(st, e, ro, want, why)                                           \
	run(st, e, sizeof(e) / sizeof(*(e)), ro, want, why)

/* Both sides see the same three frames, and B's returns land at the call
 * sites A's calls came from: all three are joined. */
static void test_join_confirmed(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:gap", "3 frames");
	/* record only: the decision is kept, nothing is joined */
	RUN_EV(st, e, true, "0:f1:e 1:f2:e 2:f3:e 0:gap 0:f1:e 1:f2 2:f3",
	       "3 frames");
}

/* B's return into f2 lands at another call site than A's child came
 * from: f2 is the same activation, its child is not. */
static void test_child_differs(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		{DEC_RET, AT(2, 0x45), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:e 2:gap 2:f4", "2 frames");
}

/* Recursion: B knows only that it is in f2, which A has three times.
 * Names cannot tell which: B is joined where the depth changes least,
 * and every frame whose depth rests on that says so (f1's does not). */
static void test_recursion_ambiguous(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), AT(2, 0x55)},
		{DEC_CALL, FN(2), AT(2, 0x55)},
		{DEC_OVERFLOW, AT(2, 0x30), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:e:d 2:f2:j:e:d 3:f2:j:e:d 4:gap:d",
	       "depth guessed");
}

/* In f2's recursion: a gap, f6 called and returned, a gap, f8 called
 * and returned. */
#define GAP_F6_GAP_F8                                                          \
	{DEC_OVERFLOW, AT(2, 0x30), 0}, {DEC_CALL, FN(6), AT(2, 0x60)},        \
		{DEC_RET, AT(2, 0x60), 0}, {DEC_OVERFLOW, AT(2, 0x30), 0},     \
		{DEC_CALL, FN(8), AT(2, 0x80)},                                \
	{                                                                      \
		DEC_RET, AT(2, 0x80), 0                                        \
	}

/*
 * The mark covers the time the guess stood, not the frames' lives: f9,
 * which A saw called and return before the first gap, is known; so is
 * f8, called after C, whose returns climbed to f1 through the call sites
 * A saw, put the stack at known depths again (and the gap before C sits
 * under frames C placed).  f6, called in B, and the frames the guess
 * joined, are not.
 */
static void test_guess_settled(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), AT(2, 0x55)},
		{DEC_CALL, FN(2), AT(2, 0x55)},
		{DEC_CALL, FN(9), AT(2, 0x70)},
		{DEC_RET, AT(2, 0x70), 0},
		GAP_F6_GAP_F8,
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f2:j:d 3:f2:j:d 4:f9 4:gap:d 4:f6:d "
	       "4:gap 4:f8",
	       "depth guessed");
}

/*
 * The guess of the first gap (B in a recursion of f2 that A has three
 * levels of) stands after the second: C's returns climb to f1 through
 * the call sites A saw, but through five levels of f2, not three.  The
 * join puts A's levels at the top and C's two others below A's leaf, as
 * calls made in the gap; they may as well be levels A's guess left out,
 * so what C ran is marked too (before, that join settled the guess).
 */
static void test_guess_stands_deeper(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), AT(2, 0x55)},
		{DEC_CALL, FN(2), AT(2, 0x55)},
		GAP_F6_GAP_F8,
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(2, 0x55), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_CALL, FN(7), AT(1, 0x25)},
		{DEC_RET, AT(1, 0x25), 0},
	};

	run(st, e, sizeof(e) / sizeof(*e) - 2, false,
	    "0:f1:j:e 1:f2:j:d 2:f2:j:d 3:f2:j:d 4:gap:d 4:f6:d 4:gap:d "
	    "4:f2:d 5:f2:d 6:f8:d",
	    "depth guessed");
	/* and then f1 calls f7: C stands on the thread's root (its returns
	 * climb to f1, the first segment's), so every depth it places is
	 * its own count; what it cannot tell is which f2s are A's, and that
	 * doubt ends with them: f7 is known */
	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f2:j:d 3:f2:j:d 4:gap:d 4:f6:d 4:gap:d "
	       "4:f2:d 5:f2:d 6:f8:d 1:f7",
	       "depth guessed");
}

/* Three segments: the call sites A saw still confirm the frames when
 * C is compared with B, whose frames were joined to A's. */
static void test_call_sites_carry_over(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F4,
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		{DEC_RET, AT(3, 0x15), 0},
		{DEC_CALL, FN(5), AT(3, 0x25)},
		{DEC_OVERFLOW, AT(5, 0x30), 0},
		{DEC_RET, AT(3, 0x25), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:f4:j 4:gap 3:f5:j 4:gap",
	       "4 frames by name, 3 by call site");
}

/* B's first root tail-calls f4: f4 replaces it at the top of B, so once
 * that root is joined, f4 hangs under the same parent, A's f1. */
static void test_tail_from_root(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_JUMP, FN(4), AT(2, 0x40)},
		{DEC_CALL, FN(5), AT(4, 0x15)},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:gap 1:f4:e 2:f5:e",
	       "2 frames by name, 1 by call site");
}

/*
 * Recursion through two call sites, x and y: B knows one caller, whose
 * child came from x, which fits four of A's frames equally well (the
 * depth changing least is A's leaf).  C returns above B's roots through
 * x into f1: only one of the four has those callers.
 */
static void test_depth_from_later_segment(struct check_state *st)
{
	const uint64_t x = AT(2, 0x25), y = AT(2, 0x35);
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), y},
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), x},
		{DEC_OVERFLOW, AT(2, 0x50), 0},
		{DEC_RET, x, 0},
		{DEC_CALL, FN(3), AT(2, 0x45)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x45), 0},
		{DEC_RET, x, 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j 2:f2:j 3:f2:j 4:f2:e 5:f2:e 6:f2:e "
	       "4:gap 3:f3:j 4:gap",
	       "depth from a later segment");
}

/*
 * B shares nothing with A: it began in code called in the gap (f9, the
 * way a lazy binding's resolver is), which jumped on to f3.  C returns
 * above B's roots into f2 and f1, which A has: the second pass puts B
 * under A's f2.
 */
static void test_rejoin_with_later_callers(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_OVERFLOW, AT(9, 0x30), 0},
		{DEC_JUMP, FN(3), AT(9, 0x40)},
		{DEC_CALL, FN(4), AT(3, 0x15)},
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		{DEC_RET, AT(3, 0x15), 0},
		{DEC_RET, AT(2, 0x25), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:gap 2:f9 2:f3:j 3:f4:j 4:gap",
	       "later segments revealed (first: no common frames)");
}

/*
 * As above, but what reveals B's callers is two segments on: C too began
 * in code called in its gap (f8, which jumped on to f5), and only D
 * returns above C's roots, through f4 and f3 (B's) to f2 and f1 (A's).
 * The second pass joins B -> C first; that is what tells B's callers,
 * so A -> B, tried before it, is tried again.
 */
static void test_rejoin_until_settled(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_OVERFLOW, AT(9, 0x30), 0},
		{DEC_JUMP, FN(3), AT(9, 0x40)},
		{DEC_CALL, FN(4), AT(3, 0x15)},
		{DEC_OVERFLOW, AT(8, 0x30), 0},
		{DEC_JUMP, FN(5), AT(8, 0x40)},
		{DEC_CALL, FN(6), AT(5, 0x15)},
		{DEC_OVERFLOW, AT(6, 0x30), 0},
		{DEC_RET, AT(5, 0x15), 0},
		{DEC_RET, AT(4, 0x25), 0},
		{DEC_RET, AT(3, 0x15), 0},
		{DEC_RET, AT(2, 0x25), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j 2:gap 2:f9 2:f3:j 3:f4:j 4:gap "
	       "4:f8 4:f5:j 5:f6:j 6:gap",
	       "later segments revealed (first: no common frames)");
}

/*
 * B knows one frame, f2, and no call site: but it resumed at the return
 * address of A's f2's call into f3, so f3 returned in the gap and B's f2
 * is A's.  Resuming anywhere else in f2 proves nothing (B goes under
 * the thread's root, its depth a guess).
 */
static void test_resume_at_return_site(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(2, 0x15), 0},
		{DEC_CALL, FN(4), AT(2, 0x25)},
	};
	struct ev other[sizeof(e) / sizeof(*e)];

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j:e 2:f3:e 2:gap 2:f4:e",
	       "1 frame by name, 1 by call site");
	memcpy(other, e, sizeof(e));
	other[3].ip = AT(2, 0x40);
	RUN_EV(st, other, false, "0:f1:e 1:f2:e 2:f3:e 1:gap 1:f2:e:d 2:f4:e:d",
	       "weak");
}

/*
 * The pushtrap case: A is f1 > f2 > f3 > f4 > f5; B knows only f5, then
 * longjmps land in f4 and in f1, neither on B's stack.  They are f5's
 * ancestors, not its parent and grandparent: f4 is A's f4 with f2 and
 * f3 between it and f1, and those two end when the jump to f1 unwinds
 * them.  f5, B's leaf right under f4, has nothing but its name to say it
 * is A's f5 and not one called afresh under f4: a guess.
 */
static void test_longjmp_steps_over(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F5,
		{DEC_OVERFLOW, AT(5, 0x30), 0},
		{DEC_IJUMP, AT(4, 0x60), AT(5, 0x40)},
		{DEC_IJUMP, AT(1, 0x60), AT(4, 0x70)},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:f4:j 4:f5:j:d 5:gap:d",
	       "stepped over");
}

/*
 * The same, but B resumes in f4 itself, not in A's leaf f5, and no call
 * site backs f4: it may be A's f4, or one f1 called after a longjmp in
 * the gap unwound everything.  Joined where the names put it, as a guess.
 */
static void test_longjmp_step_unbacked(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F5,
		{DEC_OVERFLOW, AT(4, 0x50), 0},
		{DEC_IJUMP, AT(1, 0x60), AT(4, 0x70)},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f3:j:d 3:f4:j:d 4:f5:e:d 4:gap:d",
	       "below a longjmp target (guessed)");
}

/*
 * B resumes in A's leaf f3, then a longjmp lands in f1: f2 is stepped
 * over, and below the step there is only the leaf.  A fresh f3 called
 * after a longjmp in the gap would resume at the same place too (the
 * same system call, say): joined, as a guess.
 */
static void test_longjmp_step_leaf_only(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_IJUMP, AT(1, 0x60), AT(3, 0x40)},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j:d 2:f3:j:d 3:gap:d",
	       "below a longjmp target (guessed)");
}

/*
 * No frame of A to step over: B's leaf f4 sits right under f3, where a
 * longjmp landed, as in A.  But the jump may have unwound A's f4 and f3
 * called a fresh f4 (or something that called it): nothing below f3 but
 * f4's name backs it.  f1 and f2, which B's returns confirm, stay sure.
 */
static void test_longjmp_no_step_unbacked(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F4,
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		{DEC_IJUMP, AT(3, 0x60), AT(4, 0x40)},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:f4:j:d 4:gap:d",
	       "below a longjmp target (guessed)");
}

/* A longjmp from src lands in f3, which calls fk, and returns to f2 and
 * f2 to f1 through the call sites CALLS_TO_F* make. */
#define LONGJMP_INTO_F3(src, k)                                                \
	{DEC_IJUMP, AT(3, 0x60), (src)}, {DEC_CALL, FN(k), AT(3, 0x65)},       \
		{DEC_RET, AT(3, 0x6a), 0}, {DEC_RET, AT(2, 0x15), 0},          \
	{                                                                      \
		DEC_RET, AT(1, 0x15), 0                                        \
	}

/*
 * As above, and after the jump f3 calls f5.  What the guess was about,
 * how many frames lay between f3 and B's f4, ended with the jump: f3's
 * depth is known, and so is f5's.  Only what lived in the gap's wake,
 * up to the jump, is marked.
 */
static void test_longjmp_guess_ends_with_jump(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F4,
		{DEC_OVERFLOW, AT(4, 0x30), 0},
		LONGJMP_INTO_F3(AT(4, 0x40), 5),
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:f3:j 3:f4:j:d 4:gap:d 3:f5",
	       "below a longjmp target (guessed)");
}

/*
 * B resumes in f5, and a longjmp lands in f3, which returns to f2 and
 * f2 to f1, through the call sites A saw: f1 and f2 are A's, f3 a call
 * made in the gap.  How many frames the jump unwound between f3 and f5
 * nothing says: f5's depth is a guess, until the jump ends it; f3's
 * next call, f6, is known.
 */
static void test_jump_revealed_caller(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_OVERFLOW, AT(5, 0x30), 0},
		LONGJMP_INTO_F3(AT(5, 0x40), 6),
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j 2:gap 2:f3 3:f5:d 3:f6",
	       "2 frames");
}

/*
 * A recursion f2 > f2 > f2 through one call site, under f1, and f3 at
 * the bottom; B resumes in an f5 the deepest f2 called in the gap,
 * returns to it, then twice to the recursion's call site, and a longjmp
 * lands in f1.  Those call sites are every level's: they would confirm
 * B's f2s a level lower, or fresh ones f1 called after a longjmp in the
 * gap, as well.  A guess, though B does not reach A's leaf; it ends with
 * the jump, and f1's next call is sure.
 */
static void test_longjmp_step_recursion_sites(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_CALL, FN(2), AT(2, 0x15)},
		{DEC_CALL, FN(3), AT(2, 0x25)},
		{DEC_OVERFLOW, AT(5, 0x30), 0},
		{DEC_RET, AT(2, 0x35), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_IJUMP, AT(1, 0x60), AT(2, 0x30)},
		{DEC_CALL, FN(4), AT(1, 0x65)},
		{DEC_RET, AT(1, 0x6a), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f2:j:d 3:f2:j:d 4:f3:e:d 4:gap:d 4:f5:d "
	       "1:f4",
	       "below a longjmp target (guessed)");
}

/*
 * Recursion through two call sites, x and y: B's two frames fit A's f2s
 * at two depths (B's root called from x both times).  Where the depth
 * changes least is wrong.  C returns through all of it into f1, and only
 * the deeper choice fits what C saw: the next segment decides.
 */
static void test_next_segment_decides(struct check_state *st)
{
	const uint64_t x = AT(2, 0x25), y = AT(2, 0x35);
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), y},
		{DEC_OVERFLOW, AT(2, 0x50), 0},
		{DEC_RET, x, 0},
		{DEC_CALL, FN(3), AT(2, 0x45)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(2, 0x45), 0},
		{DEC_RET, x, 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j 2:f2:j 3:f2:j 4:f2:e 4:gap 3:f3:j 4:gap",
	       "chosen by the next segments");
}

/*
 * Back-to-back overflows leave a sliver, X, that saw only f9 and shares
 * nothing with either side.  B is compared with A across it: B returns
 * through A's call sites, so A's frames live on; X stays apart.  Across
 * two gaps and a segment that fits neither side, f3 (and f2) may have
 * returned and been called again from the same site: below the first
 * joined frame, the join is a guess.
 */
static void test_join_across_sliver(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(9, 0x30), 0},
		{DEC_OVERFLOW, AT(3, 0x40), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f3:j:d 3:gap:d 3:f9:e:d 3:gap:d",
	       "across 1, which joins neither (a guess below the first "
	       "frame)");
}

/*
 * As above, and then f1 calls f4.  B's returns climb to f1, the thread's
 * root: the guess is of which frames are A's, not of their depths, and
 * it lasts as long as they do.
 */
static void test_sliver_guess_ends_with_frame(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(9, 0x30), 0},
		{DEC_OVERFLOW, AT(3, 0x40), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_CALL, FN(4), AT(1, 0x25)},
		{DEC_RET, AT(1, 0x25), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f3:j:d 3:gap:d 3:f9:e:d 3:gap:d 1:f4",
	       "across 1, which joins neither (a guess below the first "
	       "frame)");
}

/*
 * Three overflows: X1 saw f9 call f8, X2 saw f8 return to f9 at that call
 * site (so X2 joins X1), and neither shares a frame with A or B, which
 * both see f1 > f2 > f3.  The island X1..X2 must not cut the thread:
 * A and B are compared across it, and it goes under f3, its depth a
 * guess.
 */
static void test_join_across_island(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F3,
		{DEC_OVERFLOW, AT(9, 0x30), 0},
		{DEC_CALL, FN(8), AT(9, 0x35)},
		{DEC_OVERFLOW, AT(8, 0x40), 0},
		{DEC_RET, AT(9, 0x35), 0},
		{DEC_OVERFLOW, AT(3, 0x60), 0},
		{DEC_RET, AT(2, 0x15), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f2:j:d 2:f3:j:d 3:gap:d 3:f9:j:e:d 4:f8:j:d "
	       "5:gap:d 3:gap:d",
	       "across 1 to 2, which join neither");
}

/*
 * A recursion through one call site x, and B resuming at x: its leaf
 * is some f2 whose child returned, which fits every level of A but A's
 * leaf one call site better, and A's leaf better by keeping the depth.
 * Nothing tells them apart: a guess, and marked.
 */
static void test_one_site_recursion_guessed(struct check_state *st)
{
	const uint64_t x = AT(2, 0x25);
	const struct ev e[] = {
		CALLS_TO_F2,	      {DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), x}, {DEC_OVERFLOW, x, 0},
		{DEC_RET, x, 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j:e:d 2:f2:j:e:d 3:f2:j:d 4:gap:d",
	       "depth guessed");
}

/*
 * Recursion through two call sites, x and y.  B returns to y, then x:
 * that fits A's frames where they stand, and also one level up, with
 * A's deepest f2 having returned and called again in the gap.  The
 * call sites prefer the first, but only a segment that climbs to the
 * root could tell: the depth is marked as a guess.  With C, which
 * returns through the rest into f1, it no longer is.
 */
static void test_other_depth_fits(struct check_state *st)
{
	const uint64_t x = AT(2, 0x25), y = AT(2, 0x35);
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(2), x},
		{DEC_CALL, FN(3), y},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, y, 0},
		{DEC_RET, x, 0},
		/* C */
		{DEC_OVERFLOW, AT(2, 0x50), 0},
		{DEC_RET, x, 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	run(st, e, 8, false,
	    "0:f1:j:e 1:f2:j:e:d 2:f2:j:e:d 3:f2:j:d 4:f3:j:d 5:gap:d",
	    "another depth fits");
	run(st, e, sizeof(e) / sizeof(*e), false,
	    "0:f1:j:e 1:f2:j 2:f2:j 3:f2:j 4:f3:j 5:gap 3:gap", "by call site");
}

/*
 * A began inside a recursion through y, knowing no caller of its root.
 * B returns through two f2s at y into f1: A's root is the lower, or,
 * with its child returned and called again in the gap, the upper.  The
 * callers B puts above A's root are placed on that guess too.
 */
static void test_callers_above_guessed(struct check_state *st)
{
	const uint64_t y = AT(2, 0x35);
	const struct ev e[] = {
		{DEC_SYNC, AT(2, 0x10), 0},
		{DEC_CALL, FN(3), y},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, y, 0},
		{DEC_RET, y, 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f2:j:d 2:f2:j:d 3:f3:j:d 4:gap:d",
	       "another depth fits");
}

/* Nothing in common: B still ran under the thread's root, at a depth
 * nobody can tell. */
static void test_nothing_common(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_OVERFLOW, AT(7, 0x30), 0},
		{DEC_RET, AT(8, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:e 1:f2:e 1:gap 1:f8:e:d 2:f7:d",
	       "no common frames");
}

/*
 * A program that execs itself: the new f1 is the root of another program,
 * not the old f1 found again (both at the thread's root, they would join
 * on that alone), and nothing of the new program goes under the old
 * root.  A gap in each program joins its own frames.
 */
static void test_exec_not_joined(struct check_state *st)
{
	const struct ev e[] = {
		CALLS_TO_F2,
		{DEC_OVERFLOW, AT(2, 0x30), 0},
		{DEC_RET, AT(1, 0x15), 0},
		{DEC_SYSCALL, AT(1, 0x40), 0},
		{DEC_EXEC, 0, 0},
		{DEC_RESUME, FN(1), 0},
		{DEC_CALL, FN(2), AT(1, 0x15)},
		{DEC_OVERFLOW, AT(2, 0x30), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j 1:f2:j 2:gap 1:[syscall] 0:f1:j:e 1:f2:j 2:gap", "");
}

/*
 * A gap while f3, called from code f12 inlined (g), runs: the inlined
 * call is no frame of its own to stitching (segments' chains leave it
 * out), so f1 > f12 > f3 join as without it, by the call site in g.  g
 * is one call across the gap too: f3 ran in it on both sides (two g's,
 * the first stretched with f3 across the gap, would overlap).
 */
static void test_inlined_call_open(struct check_state *st)
{
	const struct ev e[] = {
		{DEC_SYNC, AT(1, 0x10), 0},
		{DEC_CALL, FN(12), AT(1, 0x15)},
		{DEC_INLINE, AT(12, 0x100), (uintptr_t)&inl_g},
		{DEC_CALL, FN(3), AT(12, 0x120)},
		{DEC_OVERFLOW, AT(3, 0x30), 0},
		{DEC_RET, AT(12, 0x120), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false, "0:f1:j:e 1:f12:j 2:g:j 3:f3:j 4:gap",
	       "by call site");
}

/*
 * B reveals callers above A's root f3: f5, then f12, which made its call
 * from code it inlined (g), then f1.  They were there before A began,
 * and so was g, open between f12 and f5: it moves back with them, or f5
 * would begin before its caller g.
 */
static void test_revealed_through_inlined(struct check_state *st)
{
	const struct ev e[] = {
		{DEC_SYNC, AT(3, 0x10), 0},	{DEC_CALL, FN(4), AT(3, 0x15)},
		{DEC_OVERFLOW, AT(4, 0x30), 0}, {DEC_RET, AT(3, 0x15), 0},
		{DEC_RET, AT(5, 0x15), 0},	{DEC_RET, AT(12, 0x150), 0},
		{DEC_RET, AT(1, 0x15), 0},
	};

	RUN_EV(st, e, false,
	       "0:f1:j:e 1:f12:j 2:g:j 3:f5:j 4:f3:j 5:f4:j 6:gap",
	       "3 revealed");
}

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

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_join_confirmed);
	RUN(&st, test_child_differs);
	RUN(&st, test_recursion_ambiguous);
	RUN(&st, test_guess_settled);
	RUN(&st, test_guess_stands_deeper);
	RUN(&st, test_nothing_common);
	RUN(&st, test_exec_not_joined);
	RUN(&st, test_inlined_call_open);
	RUN(&st, test_revealed_through_inlined);
	RUN(&st, test_call_sites_carry_over);
	RUN(&st, test_tail_from_root);
	RUN(&st, test_depth_from_later_segment);
	RUN(&st, test_rejoin_with_later_callers);
	RUN(&st, test_rejoin_until_settled);
	RUN(&st, test_resume_at_return_site);
	RUN(&st, test_longjmp_steps_over);
	RUN(&st, test_longjmp_step_unbacked);
	RUN(&st, test_longjmp_step_leaf_only);
	RUN(&st, test_longjmp_no_step_unbacked);
	RUN(&st, test_longjmp_guess_ends_with_jump);
	RUN(&st, test_jump_revealed_caller);
	RUN(&st, test_longjmp_step_recursion_sites);
	RUN(&st, test_next_segment_decides);
	RUN(&st, test_join_across_sliver);
	RUN(&st, test_sliver_guess_ends_with_frame);
	RUN(&st, test_join_across_island);
	RUN(&st, test_one_site_recursion_guessed);
	RUN(&st, test_other_depth_fits);
	RUN(&st, test_callers_above_guessed);
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
	return CHECK_DONE(&st);
}
