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
#include "tests/unit/stitchtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * A capture of one thread has its pass over every slice in chunks, on
 * the threads stitching would have had (here of two slices, on four):
 * the tree one thread makes, the tops found in order and put under the
 * root, and a root that turns up under another top (so no root) seen.
 */
static void test_one_thread_in_chunks(struct check_state *st)
{
/* f1 and f2, then across a gap f8 with nothing in common */
#define APART                                                                  \
	CALLS_TO_F2, {DEC_CALL, FN(3), AT(2, 0x25)},                           \
		{DEC_RET, AT(2, 0x25), 0}, {DEC_OVERFLOW, AT(7, 0x30), 0},     \
		{DEC_RET, AT(8, 0x15), 0}, {DEC_CALL, FN(9), AT(8, 0x25)},     \
	{                                                                      \
		DEC_RET, AT(8, 0x25), 0                                        \
	}
	const struct stitch_opts opts[2] = {{0}, {.jobs = 4, .scan_chunk = 2}};
	const struct ev apart[] = {
		APART,
		{DEC_OVERFLOW, AT(5, 0x30), 0},
		{DEC_RET, AT(6, 0x15), 0},
	};
	/* f1 again, under f8 */
	const struct ev root_below[] = {
		APART,
		{DEC_CALL, FN(1), AT(8, 0x35)},
		{DEC_RET, AT(8, 0x35), 0},
	};
#undef APART

	for (int k = 0; k < 2; k++) {
		run_with(st, apart, sizeof(apart) / sizeof(*apart), &opts[k],
			 "0:f1:e 1:f2:e 2:f3 1:gap 1:f8:e:d 2:f7:d 2:f9:d "
			 "1:gap 1:f6:e:d 2:f5:d",
			 "no common frames");
		run_with(st, root_below,
			 sizeof(root_below) / sizeof(*root_below), &opts[k],
			 "0:f1:e 1:f2:e 2:f3 0:gap 0:f8:e 1:f7 1:f9 1:f1",
			 "no common frames");
	}
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
	RUN(&st, test_one_thread_in_chunks);
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
	return CHECK_DONE(&st);
}
