/* SPDX-License-Identifier: MIT */
/*
 * Segment builder tests: event scripts with the expected stack after
 * every event, then the slices the segment left behind.
 *
 * The fake address space: function k lives at [k * 0x1000, k * 0x1000 +
 * 0x1000) and is named "fk", except a few named for what they play.
 */
#include "segments/segments.h"
#include "segments/unwind_quirks.h"
#include "symbols/symbols.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN(k)	   ((uint64_t)(k)*0x1000)
#define AT(k, off) (FN(k) + (off))

static void fake_sym(void *ctx, uint64_t ip, struct img_sym *out)
{
	uint64_t k = ip / 0x1000;

	(void)ctx;
	out->start = FN(k);
	out->end = FN(k + 1);
	out->dso = "/bin/fake";
	out->known = k != 0 && k < 90 && !(k >= 80 && k < 85);
	/* 80-84: a stripped binary's functions, their entries known from
	 * its unwind tables */
	out->entry_known = k >= 80 && k < 85;
	if (out->entry_known)
		snprintf(out->buf, sizeof(out->buf), "[unknown @ %#llx]",
			 (unsigned long long)FN(k)),
			out->name = out->buf;
	else if (k == 13)
		out->name = "f2.cold";
	else if (k == 50)
		out->name = "puts@plt";
	else if (k == 51)
		out->name = "puts";
	else if (k == 53)
		out->name = "caml_raise_exn";
	else if (!out->known)
		snprintf(out->buf, sizeof(out->buf), "[unknown @ %#llx]",
			 (unsigned long long)ip),
			out->name = out->buf;
	else
		snprintf(out->buf, sizeof(out->buf), "f%llu",
			 (unsigned long long)k),
			out->name = out->buf;
}

struct step {
	enum dec_kind kind;
	uint64_t ip, aux;
	const char *stack; /* root first, space separated */
};

struct fixture {
	struct mt_trace t;
	struct seg_ends_table ends;
	struct seg_builder *b;
};

static int setup(struct fixture *f)
{
	mt_trace_init(&f->t);
	f->ends = (struct seg_ends_table){0};
	if (!mt_trace_add_thread(&f->t, 1, 1, "t"))
		return -1;
	return seg_builder_new(&f->b, &f->t, 0, &f->ends, fake_sym, NULL);
}

static void teardown(struct fixture *f)
{
	seg_builder_free(f->b);
	seg_ends_free(&f->ends);
	mt_trace_free(&f->t);
}

static void stack_str(const struct seg_builder *b, char *buf, size_t len)
{
	const char *names[64];
	size_t n = seg_stack(b, names, 64), at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && i < 64 && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "",
				       names[i]);
}

/* Feed the script, checking the stack after each step. */
static void run_script(struct check_state *st, struct fixture *f,
		       const struct step *s, size_t n)
{
	char buf[512];

	for (size_t i = 0; i < n; i++) {
		CHECKF(st,
		       !seg_feed(f->b, 100 + 10 * i, s[i].kind, s[i].ip,
				 s[i].aux),
		       "step %zu", i);
		stack_str(f->b, buf, sizeof(buf));
		CHECKF(st, !strcmp(buf, s[i].stack),
		       "step %zu: stack \"%s\", expected \"%s\"", i, buf,
		       s[i].stack);
	}
}

/* The slices as "depth:name:flags" lines, and the pre-order invariant. */
static void tree_str(struct check_state *st, const struct fixture *f, char *buf,
		     size_t len)
{
	const struct mt_thread *th = &f->t.threads[0];
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < th->nr_slices; i++) {
		const struct mt_slice *s = &th->slices[i];
		char fl[8] = "";
		size_t k = 0;

		if (s->flags & MT_SLICE_INFERRED_START)
			fl[k++] = 's';
		if (s->flags & MT_SLICE_INFERRED_END)
			fl[k++] = 'e';
		if (s->flags & MT_SLICE_TAIL)
			fl[k++] = 't';
		if (s->flags & MT_SLICE_GAP)
			fl[k++] = 'g';
		if (s->flags & MT_SLICE_INLINED)
			fl[k++] = 'i';
		fl[k] = 0;
		at += (size_t)snprintf(buf + at, len - at, "%s%u:%s:%s",
				       i ? " " : "", s->depth,
				       mt_slice_str(&f->t, s), fl);
		/* pre-order: the parent comes first, one level up, and
		 * contains the child in time */
		if (s->parent == MT_NONE) {
			CHECKF(st, s->depth == 0, "slice %zu: root at depth %u",
			       i, s->depth);
		} else {
			const struct mt_slice *p = &th->slices[s->parent];

			CHECKF(st, s->parent < i, "slice %zu: parent after", i);
			CHECKF(st, p->depth + 1 == s->depth,
			       "slice %zu: depth %u under %u", i, s->depth,
			       p->depth);
			CHECKF(st,
			       p->ts <= s->ts &&
				       s->ts + s->dur <= p->ts + p->dur,
			       "slice %zu outside its parent", i);
		}
	}
}

#define RUN_SCRIPT(st, f, steps)                                               \
	run_script(st, f, steps, sizeof(steps) / sizeof(*(steps)))

static void check_tree(struct check_state *st, struct fixture *f,
		       const char *want)
{
	char buf[2048];

	CHECK(st, !seg_finish(f->b, NULL));
	tree_str(st, f, buf, sizeof(buf));
	CHECKF(st, !strcmp(buf, want), "tree\n    got  %s\n    want %s", buf,
	       want);
}

static void test_never_seen_callers(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(3, 0x10), 0, "f3"},
		{DEC_RET, AT(2, 0x20), 0, "f2"},
		{DEC_CALL, FN(4), AT(2, 0x30), "f2 f4"},
		{DEC_RET, AT(2, 0x30), 0, "f2"},
		{DEC_RET, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(5), AT(1, 0x18), "f1 f5"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2:s 2:f3:s 2:f4: 1:f5:e");
	teardown(&f);
}

/* A clock that runs on for more than 52 bits of nanoseconds (a capture
 * whose timestamps are wild): a slice holds no longer, and the child
 * still ends inside its parent. */
static void test_wild_clock(struct check_state *st)
{
	struct fixture f;
	char buf[256];
	const struct mt_slice *sl;

	CHECK(st, !setup(&f));
	CHECK(st, !seg_feed(f.b, 0, DEC_SYNC, AT(1, 0x10), 0));
	CHECK(st, !seg_feed(f.b, 1000, DEC_CALL, FN(2), AT(1, 0x15)));
	CHECK(st,
	      !seg_feed(f.b, UINT64_C(1) << 60, DEC_CALL, FN(3), AT(2, 0x15)));
	CHECK(st,
	      !seg_feed(f.b, (UINT64_C(1) << 60) + 5, DEC_RET, AT(2, 0x15), 0));
	CHECK(st, !seg_finish(f.b, NULL));
	tree_str(st, &f, buf, sizeof(buf));
	CHECKF(st, !strcmp(buf, "0:f1:se 1:f2:e 2:f3:"), "tree %s", buf);
	sl = f.t.threads[0].slices;
	CHECK(st, f.t.threads[0].nr_slices == 3 && sl[0].dur == MT_DUR_MAX &&
			  sl[1].ts + sl[1].dur == sl[0].ts + sl[0].dur &&
			  sl[2].ts == MT_DUR_MAX && sl[2].dur == 0);
	teardown(&f);
}

static void test_multi_level_return(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f1 f2 f3"},
		{DEC_CALL, FN(4), AT(3, 0x15), "f1 f2 f3 f4"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 2:f3: 3:f4:");
	teardown(&f);
}

static void test_tail_call(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_JUMP, FN(3), AT(2, 0x40), "f1 f3"},
		{DEC_JUMP, AT(3, 0x40), AT(3, 0x10), "f1 f3"}, /* inside */
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 1:f3:t");
	teardown(&f);
}

static void test_same_symbol_recursion(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(2), AT(2, 0x55), "f1 f2 f2"},
		{DEC_CALL, FN(2), AT(2, 0x55), "f1 f2 f2 f2"},
		{DEC_RET, AT(2, 0x55), 0, "f1 f2 f2"},
		{DEC_RET, AT(2, 0x55), 0, "f1 f2"},
		{DEC_CALL, FN(2), AT(2, 0x55), "f1 f2 f2"},
		{DEC_RET, AT(2, 0x55), 0, "f1 f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 2:f2: 3:f2: 2:f2:");
	teardown(&f);
}

/* Recursion seen from inside: returns into the same function reveal one
 * caller each. */
static void test_recursion_revealed(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(2, 0x60), 0, "f2"},
		{DEC_RET, AT(2, 0x55), 0, "f2"},
		{DEC_RET, AT(2, 0x55), 0, "f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2:s 2:f2:s 3:f2:s");
	teardown(&f);
}

static void test_plt_trampoline(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(50), AT(1, 0x15), "f1 puts@plt"},
		{DEC_JUMP, FN(51), AT(50, 0), "f1 puts"},
		{DEC_CALL, FN(52), AT(51, 0x9), "f1 puts f52"},
		{DEC_RET, AT(51, 0x9), 0, "f1 puts"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:puts@plt: 1:puts:t 2:f52:");
	teardown(&f);
}

static void test_syscall(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_SYSCALL, AT(2, 0x30), 0, "f1 f2 [syscall]"},
		{DEC_RESUME, AT(2, 0x32), 0, "f1 f2"},
		{DEC_STOP, AT(2, 0x40), 0, "f1 f2 [untraced]"},
		{DEC_RESUME, AT(2, 0x40), 0, "f1 f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 2:[syscall]: 2:[untraced]:");
	teardown(&f);
}

/* A signal handler: tracing resumes at a function's entry. */
static void test_signal_handler(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_STOP, AT(1, 0x20), 0, "f1 [untraced]"},
		{DEC_RESUME, FN(7), 0, "f1 f7"},
		{DEC_RET, AT(8, 0), 0, "f1 f8"},
		{DEC_SYSCALL, AT(8, 0x7), 0, "f1 f8 [syscall]"},
		{DEC_RESUME, AT(1, 0x20), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	teardown(&f);
}

static void test_return_with_empty_stack(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(5, 0x10), 0, "f5"},
		{DEC_RET, AT(6, 0x10), 0, "f6"},
		{DEC_RET, AT(7, 0x10), 0, "f7"},
		{DEC_CALL, FN(8), AT(7, 0x15), "f7 f8"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f7:se 1:f6:s 2:f5:s 1:f8:e");
	teardown(&f);
}

static void test_longjmp(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f1 f2 f3"},
		{DEC_CALL, FN(4), AT(3, 0x15), "f1 f2 f3 f4"},
		/* unwinds to a landing pad in f2 */
		{DEC_JUMP, AT(2, 0x80), AT(4, 0x20), "f1 f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
		/* a jump into the middle of a function nowhere on the
		 * stack (shared code, or an exception to a frame never
		 * seen): it takes the top frame's place */
		{DEC_CALL, FN(2), AT(1, 0x25), "f1 f2"},
		{DEC_JUMP, AT(9, 0x80), AT(2, 0x20), "f1 f9"},
		{DEC_RET, AT(1, 0x25), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 2:f3: 3:f4: 1:f2: 1:f9:t");
	teardown(&f);
}

/*
 * A longjmp or an exception landing in a caller the segment never saw:
 * an indirect jump into the middle of a function nowhere on the stack
 * reveals it above the roots, as a return climbing past them would.  A
 * direct jump there is shared code and takes the top frame's place.
 */
static void test_unwind_to_unseen_caller(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(5, 0x10), 0, "f5"},
		{DEC_CALL, FN(6), AT(5, 0x15), "f5 f6"},
		{DEC_IJUMP, AT(3, 0x40), AT(6, 0x20), "f3"},
		{DEC_CALL, FN(7), AT(3, 0x45), "f3 f7"},
		{DEC_JUMP, AT(8, 0x40), AT(7, 0x20), "f3 f8"},
		{DEC_RET, AT(2, 0x15), 0, "f2"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f2:se 1:f3:s 2:f5:s 3:f6: 2:f7: 2:f8:t");
	teardown(&f);
}

/*
 * OCaml's raise (caml_raise_exn) loads the stack pointer from the
 * innermost trap frame and returns into the handler it holds, in a
 * function far down the stack: the frames between end there, as a
 * longjmp's do.  The handler in middle (f3) raises again, to round's
 * (f1).
 */
static void test_ocaml_raise(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f1 f2 f3"},
		{DEC_CALL, FN(4), AT(3, 0x15), "f1 f2 f3 f4"},
		{DEC_CALL, FN(5), AT(4, 0x15), "f1 f2 f3 f4 f5"},
		{DEC_CALL, FN(53), AT(5, 0x15),
		 "f1 f2 f3 f4 f5 caml_raise_exn"},
		{DEC_RET, AT(3, 0x80), 0, "f1 f2 f3"},
		{DEC_CALL, FN(53), AT(3, 0x90), "f1 f2 f3 caml_raise_exn"},
		{DEC_RET, AT(1, 0x40), 0, "f1"},
		{DEC_CALL, FN(7), AT(1, 0x45), "f1 f7"},
		{DEC_RET, AT(1, 0x45), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:se 1:f2: 2:f3: 3:f4: 4:f5: 5:caml_raise_exn: "
		   "3:caml_raise_exn: 1:f7:");
	teardown(&f);
}

/*
 * The same raise landing in a handler whose function the segment never
 * saw: the function is revealed as a caller, as a non-local jump
 * reveals it, and its start address is no call site (0) for stitching:
 * the handler follows no call, and frames between are unknowable.
 */
static void test_ocaml_raise_unseen(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(5, 0x10), 0, "f5"},
		{DEC_CALL, FN(53), AT(5, 0x15), "f5 caml_raise_exn"},
		{DEC_RET, AT(1, 0x40), 0, "f1"},
		{DEC_CALL, FN(7), AT(1, 0x45), "f1 f7"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f5:s 2:caml_raise_exn: 1:f7:e");
	CHECK(st, f.ends.nr == 1 && f.ends.v[0].nr_start == 2);
	if (f.ends.nr == 1 && f.ends.v[0].nr_start == 2)
		CHECKF(st,
		       f.ends.v[0].start_ips[0] == 0 &&
			       f.ends.v[0].start_ips[1] == AT(5, 0x10),
		       "start ips %#" PRIx64 " %#" PRIx64,
		       f.ends.v[0].start_ips[0], f.ends.v[0].start_ips[1]);
	teardown(&f);
}

/*
 * A Rust panic: the unwinder (f7) jumps into the landing pad of level2
 * (f3), which drops what it holds and calls _Unwind_Resume (f10), which
 * jumps on into catch_unwind's landing pad in round (f1).
 */
static void test_rust_landing_pads(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f1 f2 f3"},
		{DEC_CALL, FN(4), AT(3, 0x15), "f1 f2 f3 f4"},
		{DEC_CALL, FN(5), AT(4, 0x15), "f1 f2 f3 f4 f5"},
		{DEC_CALL, FN(6), AT(5, 0x15), "f1 f2 f3 f4 f5 f6"},
		{DEC_CALL, FN(7), AT(6, 0x15), "f1 f2 f3 f4 f5 f6 f7"},
		{DEC_CALL, FN(8), AT(7, 0x15), "f1 f2 f3 f4 f5 f6 f7 f8"},
		{DEC_RET, AT(7, 0x15), 0, "f1 f2 f3 f4 f5 f6 f7"},
		{DEC_IJUMP, AT(3, 0x60), AT(7, 0x30), "f1 f2 f3"},
		{DEC_CALL, FN(9), AT(3, 0x65), "f1 f2 f3 f9"},
		{DEC_RET, AT(3, 0x65), 0, "f1 f2 f3"},
		{DEC_CALL, FN(10), AT(3, 0x6a), "f1 f2 f3 f10"},
		{DEC_IJUMP, AT(1, 0x60), AT(10, 0x30), "f1"},
		{DEC_CALL, FN(11), AT(1, 0x65), "f1 f11"},
		{DEC_RET, AT(1, 0x65), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:se 1:f2: 2:f3: 3:f4: 4:f5: 5:f6: 6:f7: 7:f8: 3:f9: "
		   "3:f10: 1:f11:");
	teardown(&f);
}

/* Code without a symbol is no evidence of a caller: stripped libraries
 * jump through tables between their unnamed static functions. */
static void test_indirect_jump_to_unknown(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(5, 0x10), 0, "f5"},
		{DEC_CALL, FN(6), AT(5, 0x15), "f5 f6"},
		{DEC_IJUMP, AT(95, 0x40), AT(6, 0x20),
		 "f5 [unknown @ 0x5f040]"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	teardown(&f);
}

/* A function's split-off cold part (entered by a jump to its start)
 * jumping back into the middle of the function it came from. */
static void test_cold_part(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_JUMP, FN(12), AT(2, 0x20), "f1 f12"},
		{DEC_JUMP, AT(2, 0x30), AT(12, 0x8), "f1 f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 1:f12:t 1:f2:t");
	CHECK(st, f.t.nr_segments == 1);
	teardown(&f);
}

/* The same in a recursion: the jump back lands in the activation that
 * jumped to its cold part, not in the one below that called it. */
static void test_cold_part_recursive(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(2), AT(2, 0x55), "f1 f2 f2"},
		{DEC_JUMP, FN(12), AT(2, 0x20), "f1 f2 f12"},
		{DEC_JUMP, AT(2, 0x30), AT(12, 0x8), "f1 f2 f2"},
		{DEC_JUMP, FN(12), AT(2, 0x40), "f1 f2 f12"},
		{DEC_JUMP, AT(2, 0x48), AT(12, 0x8), "f1 f2 f2"},
		{DEC_RET, AT(2, 0x55), 0, "f1 f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 2:f2: 2:f12:t 2:f2:t 2:f12:t 2:f2:t");
	CHECK(st, f.t.nr_segments == 1);
	teardown(&f);
}

/* A recursion through the cold part: the cold part calls the function
 * again, which jumps into the middle of its cold part, the older
 * activation's cold part being below. */
static void test_into_cold_part_recursive(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_JUMP, FN(12), AT(2, 0x20), "f1 f12"},
		{DEC_CALL, FN(2), AT(12, 0x25), "f1 f12 f2"},
		{DEC_JUMP, AT(12, 0x40), AT(2, 0x30), "f1 f12 f12"},
		{DEC_RET, AT(12, 0x25), 0, "f1 f12"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 1:f12:t 2:f2: 2:f12:t");
	teardown(&f);
}

/* A switch's jump table into the function's own cold part (by name): an
 * indirect jump into the middle of a known function that is no longjmp,
 * also while an older activation runs that part below. */
static void test_jump_table_into_cold_part(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_IJUMP, AT(13, 0x40), AT(2, 0x20), "f1 f2.cold"},
		{DEC_CALL, FN(2), AT(13, 0x55), "f1 f2.cold f2"},
		{DEC_IJUMP, AT(13, 0x70), AT(2, 0x20), "f1 f2.cold f2.cold"},
		{DEC_RET, AT(13, 0x55), 0, "f1 f2.cold"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:f2: 1:f2.cold:t 2:f2: 2:f2.cold:t");
	teardown(&f);
}

static void test_gcc_cold_part_names(struct check_state *st)
{
	CHECK(st, gcc_cold_part("f.cold", "f"));
	CHECK(st, gcc_cold_part("f.part.0.cold", "f.part.0"));
	CHECK(st, gcc_cold_part("f.cold.3", "f"));
	CHECK(st, !gcc_cold_part("f.cold.", "f"));
	CHECK(st, !gcc_cold_part("f.coldx", "f"));
	CHECK(st, !gcc_cold_part("g.cold", "f"));
	CHECK(st, !gcc_cold_part("f.cold", "f.cold"));
	CHECK(st, !gcc_cold_part("f", "f"));
	CHECK(st, !gcc_cold_part(NULL, "f") && !gcc_cold_part("f.cold", ""));
}

/* A stripped binary's recursion through a tail call: a jump to the entry
 * of an unnamed function that is active below calls it anew. */
static void test_tail_call_unnamed_recursive(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(80), AT(1, 0x15), "f1 [unknown @ 0x50000]"},
		{DEC_CALL, FN(81), AT(80, 0x25),
		 "f1 [unknown @ 0x50000] [unknown @ 0x51000]"},
		{DEC_JUMP, FN(80), AT(81, 0x10),
		 "f1 [unknown @ 0x50000] [unknown @ 0x50000]"},
		{DEC_RET, AT(80, 0x25), 0, "f1 [unknown @ 0x50000]"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	CHECK(st, f.t.threads[0].nr_slices == 4);
	teardown(&f);
}

static void test_error_and_gap(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_ERROR, AT(2, 0x20), pte_bad_query, ""},
		{DEC_CALL, FN(3), AT(2, 0x15), ""}, /* ignored: no sync */
		{DEC_SYNC, AT(3, 0x10), 0, "f3"},
		{DEC_OVERFLOW, AT(4, 0x10), 0, "f4"},
		{DEC_RET, AT(5, 0x10), 0, "f5"},
	};
	const struct mt_thread *th;

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:se 1:f2:e 0:[decode gap: decode error: trace "
		   "stream does not match query]:g 0:f3:se "
		   "0:[decode gap: overflow]:g 0:f5:se 1:f4:s");
	CHECK(st, f.t.nr_segments == 3);
	th = &f.t.threads[0];
	/* the gap runs from the error to the next sync */
	CHECK(st, th->nr_slices > 2 && th->slices[2].ts == 120 &&
			  th->slices[2].dur == 20);
	teardown(&f);
}

/*
 * An exec: the old program's frames end at its time (known, not
 * clipped), and the new program's first instruction is a new root in a
 * segment flagged as begun by the exec, with no gap between.  A return
 * above the new program's roots reveals a caller of its own, never an
 * old frame.  An exec while a gap is open ends the gap.
 */
static void test_exec(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f1 f2 f3"},
		{DEC_SYSCALL, AT(3, 0x30), 0, "f1 f2 f3 [syscall]"},
		{DEC_EXEC, 0, 0, ""},
		{DEC_RESUME, FN(60), 0, "f60"},
		{DEC_CALL, FN(61), AT(60, 0x15), "f60 f61"},
		{DEC_RET, AT(60, 0x15), 0, "f60"},
		{DEC_ERROR, AT(60, 0x20), pte_bad_query, ""},
		{DEC_EXEC, 0, 0, ""},
		{DEC_SYNC, AT(70, 0x10), 0, "f70"},
		{DEC_RET, AT(71, 0x10), 0, "f71"},
	};
	const struct mt_thread *th;

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:s 1:f2: 2:f3: 3:[syscall]: 0:f60:e 1:f61: "
		   "0:[decode gap: decode error: trace stream does not match "
		   "query]:g 0:f71:se 1:f70:s");
	th = &f.t.threads[0];
	CHECK(st, f.t.nr_segments == 3);
	CHECK(st, th->nr_slices == 9);
	if (f.t.nr_segments == 3 && th->nr_slices == 9) {
		/* the old frames end at the exec (step 4, time 140) */
		for (size_t i = 0; i < 4; i++)
			CHECKF(st, th->slices[i].ts + th->slices[i].dur == 140,
			       "slice %zu ends at %" PRIu64, i,
			       th->slices[i].ts + th->slices[i].dur);
		CHECK(st, !f.t.segments[0].exec && f.t.segments[1].exec &&
				  f.t.segments[2].exec);
		CHECK(st, !strcmp(mt_str(&f.t.strs, f.t.segments[0].end_reason),
				  "exec"));
		CHECK(st, f.t.segments[1].start == 150);
		/* the gap after the error ends at the second exec */
		CHECK(st, th->slices[6].ts == 180 && th->slices[6].dur == 10);
		CHECK(st, th->slices[7].parent == MT_NONE &&
				  th->slices[8].parent == 7);
	}
	teardown(&f);
}

static void test_final_stack_anchors_roots(struct check_state *st)
{
	struct fixture f;
	uint64_t ips[] = {AT(3, 0x44), AT(2, 0x15), AT(1, 0x15), AT(60, 0x15)};
	struct dec_stack fs = {.time = 200, .nr = 4, .ips = ips};
	const struct step s[] = {
		{DEC_SYNC, AT(2, 0x10), 0, "f2"},
		{DEC_CALL, FN(3), AT(2, 0x15), "f2 f3"},
	};
	char buf[512];

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	CHECK(st, !seg_finish(f.b, &fs));
	tree_str(st, &f, buf, sizeof(buf));
	CHECKF(st, !strcmp(buf, "0:f60:se 1:f1:se 2:f2:se 3:f3:e"), "%s", buf);
	teardown(&f);

	/* a stack that disagrees with the trace is not used */
	ips[1] = AT(9, 0x15);
	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	CHECK(st, !seg_finish(f.b, &fs));
	tree_str(st, &f, buf, sizeof(buf));
	CHECKF(st, !strcmp(buf, "0:f2:se 1:f3:e"), "%s", buf);
	teardown(&f);
}

/* The first event is tracing stopping: the leaf must survive anchoring. */
static void test_anchor_after_syscall(struct check_state *st)
{
	struct fixture f;
	uint64_t ips[] = {AT(4, 0x12), AT(4, 0x1e), AT(4, 0x1e), AT(3, 0x15)};
	struct dec_stack fs = {.time = 200, .nr = 4, .ips = ips};
	const struct step s[] = {
		{DEC_SYNC, AT(4, 0x10), 0, "f4"},
		{DEC_SYSCALL, AT(4, 0x10), 0, "f4 [syscall]"},
		{DEC_RESUME, AT(4, 0x12), 0, "f4"},
		{DEC_CALL, FN(4), AT(4, 0x1e), "f4 f4"},
	};
	char buf[512];

	CHECK(st, !setup(&f));
	RUN_SCRIPT(st, &f, s);
	CHECK(st, !seg_finish(f.b, &fs));
	tree_str(st, &f, buf, sizeof(buf));
	CHECKF(st, !strcmp(buf, "0:f3:se 1:f4:se 2:f4:se 3:[syscall]: 3:f4:e"),
	       "%s", buf);
	teardown(&f);
}

/*
 * Inlined calls: f7 inlined g at [0x100, 0x300), and g inlined h at
 * [0x100, 0x200).  They open at a sync point inside them, close and
 * reopen as DEC_INLINE says, hold the calls made from inside them, come
 * back on a return into them, go with their function on a tail call, and
 * come with a caller that a return reveals, around what returned (the
 * call was made from inside them).
 */
static const struct sym_inline inl_g = {.name = "g"};
static const struct sym_inline inl_h = {.name = "h", .up = &inl_g, .depth = 1};

static void inl_sym(void *ctx, uint64_t ip, struct img_sym *out)
{
	uint64_t off = ip - FN(7);

	fake_sym(ctx, ip, out);
	out->fn_inl = ip / 0x1000 == 7;
	out->inl = !out->fn_inl			 ? NULL
		   : off >= 0x100 && off < 0x200 ? &inl_h
		   : off >= 0x200 && off < 0x300 ? &inl_g
						 : NULL;
}

static void test_inlined(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(7, 0x150), 0, "f7 g h"},
		{DEC_INLINE, AT(7, 0x200), (uintptr_t)&inl_g, "f7 g"},
		{DEC_CALL, FN(8), AT(7, 0x210), "f7 g f8"},
		{DEC_RET, AT(7, 0x210), 0, "f7 g"},
		{DEC_INLINE, AT(7, 0x300), 0, "f7"},
		{DEC_CALL, FN(8), AT(7, 0x320), "f7 f8"},
		{DEC_RET, AT(7, 0x120), 0, "f7 g h"},
		{DEC_INLINE, AT(7, 0x1f0), (uintptr_t)&inl_h, "f7 g h"},
		{DEC_JUMP, FN(9), AT(7, 0x1f8), "f9"},
		{DEC_RET, AT(7, 0x110), 0, "f7 g h"},
	};

	mt_trace_init(&f.t);
	f.ends = (struct seg_ends_table){0};
	CHECK(st,
	      mt_trace_add_thread(&f.t, 1, 1, "t") &&
		      !seg_builder_new(&f.b, &f.t, 0, &f.ends, inl_sym, NULL));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f7:se 1:g:sei 2:h:sei 3:f7:s 4:g:si 5:h:si 5:f8: 4:f8: "
		   "4:g:i 5:h:i 3:f9:t");
	teardown(&f);
}

static void go_sym(void *ctx, uint64_t ip, struct img_sym *out)
{
	static const char *const names[] = {
		"runtime.gogo.abi0",	  "gogo",
		"runtime.mcall",	  "runtime.systemstack.abi0",
		"runtime.morestack.abi0", "runtime.newstack",
		"runtime.goexit0",	  "runtime.park_m",
		"runtime.schedule",	  "runtime.gopark",
	};
	uint64_t k = ip / 0x1000;

	fake_sym(ctx, ip, out);
	if (k >= 80 && k < 90)
		out->name = names[k - 80];
}

static int setup_go(struct fixture *f)
{
	mt_trace_init(&f->t);
	f->ends = (struct seg_ends_table){0};
	if (!mt_trace_add_thread(&f->t, 1, 1, "t"))
		return -1;
	return seg_builder_new(&f->b, &f->t, 0, &f->ends, go_sym, NULL);
}

/* Goroutine A (f1 f2) parks; B starts at f5 and parks in the same place;
 * the resume fits both until A's stack returns into f2, which says it
 * was A.  Each turn is a segment of its own, labelled by goroutine. */
static void test_go_park_resume(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(2), AT(1, 0x15), "f1 f2"},
		{DEC_CALL, FN(89), AT(2, 0x15), "f1 f2 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f1 f2 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(88), AT(87, 0x10),
		 "runtime.park_m runtime.schedule"},
		{DEC_CALL, FN(80), AT(88, 0x10),
		 "runtime.park_m runtime.schedule runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m runtime.schedule gogo"},
		{DEC_IJUMP, FN(5), 0, "f5"},
		{DEC_CALL, FN(89), AT(5, 0x10), "f5 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f5 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(80), AT(87, 0x10),
		 "runtime.park_m runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m gogo"},
		{DEC_IJUMP, AT(89, 0x15), 0, "runtime.gopark"},
		{DEC_RET, AT(2, 0x15), 0, "f2"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};
	const struct mt_thread *th;

	CHECK(st, !setup_go(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:s 1:f2: 2:runtime.gopark: 3:runtime.mcall: "
		   "0:runtime.park_m: 1:runtime.schedule: "
		   "2:runtime.gogo.abi0: 2:gogo:t 0:f5:t 1:runtime.gopark: "
		   "2:runtime.mcall: 0:runtime.park_m: 1:runtime.gogo.abi0: "
		   "1:gogo:t 0:f1:se 1:f2:s 2:runtime.gopark:");
	th = &f.t.threads[0];
	CHECK(st, f.t.nr_goroutines == 2 && f.t.nr_segments == 5);
	for (size_t i = 0; i < th->nr_slices; i++) {
		static const uint32_t want[] = {1, 1, 1, 1, 0, 0, 0, 0, 2,
						2, 2, 0, 0, 0, 1, 1, 1};

		CHECKF(st,
		       i < sizeof(want) / sizeof(*want) &&
			       mt_slice_goroutine(&f.t, &th->slices[i]) ==
				       want[i],
		       "slice %zu: goroutine %u", i,
		       mt_slice_goroutine(&f.t, &th->slices[i]));
		CHECKF(st,
		       !(th->slices[i].flags & MT_SLICE_RESUME_GUESSED) &&
			       !!(th->slices[i].flags & MT_SLICE_RESUMED) ==
				       (i == 16),
		       "slice %zu: flags %#x", i, th->slices[i].flags);
	}
	/* a slice ends where its goroutine's turn ends */
	CHECK(st, th->slices[0].ts + th->slices[0].dur == 140);
	if (f.t.nr_goroutines == 2)
		CHECKF(st,
		       !strcmp(mt_str(&f.t.strs, f.t.goroutines[1].start),
			       "f5") &&
			       f.t.goroutines[1].first == 180 &&
			       f.t.goroutines[1].last == 210,
		       "%s %" PRIu64 " %" PRIu64,
		       mt_str(&f.t.strs, f.t.goroutines[1].start),
		       f.t.goroutines[1].first, f.t.goroutines[1].last);
	teardown(&f);
}

/* The same resume, but the goroutine parks again before it returns far
 * enough to tell: its turn is flagged a guess. */
static void test_go_ambiguous_guess(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(89), AT(1, 0x15), "f1 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f1 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(80), AT(87, 0x10),
		 "runtime.park_m runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m gogo"},
		{DEC_IJUMP, FN(5), 0, "f5"},
		{DEC_CALL, FN(89), AT(5, 0x10), "f5 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f5 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(80), AT(87, 0x10),
		 "runtime.park_m runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m gogo"},
		{DEC_IJUMP, AT(89, 0x15), 0, "runtime.gopark"},
		{DEC_CALL, FN(6), AT(89, 0x20), "runtime.gopark f6"},
		{DEC_RET, AT(89, 0x20), 0, "runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x30),
		 "runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
	};
	const struct mt_thread *th;
	size_t guessed = 0;

	CHECK(st, !setup_go(&f));
	RUN_SCRIPT(st, &f, s);
	CHECK(st, !seg_finish(f.b, NULL));
	th = &f.t.threads[0];
	for (size_t i = 0; i < th->nr_slices; i++) {
		const struct mt_slice *x = &th->slices[i];
		bool turn = x->ts >= 220 && x->ts < 260;

		guessed += !!(x->flags & MT_SLICE_RESUME_GUESSED);
		CHECKF(st, !!(x->flags & MT_SLICE_RESUME_GUESSED) == turn,
		       "slice %zu (%s at %" PRIu64 "): flags %#x", i,
		       mt_slice_str(&f.t, x), x->ts, x->flags);
	}
	CHECK(st, guessed == 3);
	teardown(&f);
}

/* systemstack: fn runs on g0 as a stack of its own, and its return goes
 * back to the goroutine's stack, with systemstack on top. */
static void test_go_systemstack(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(83), AT(1, 0x15), "f1 runtime.systemstack.abi0"},
		{DEC_CALL, FN(6), AT(83, 0x49), "f6"},
		{DEC_CALL, FN(7), AT(6, 0x10), "f6 f7"},
		{DEC_RET, AT(6, 0x10), 0, "f6"},
		{DEC_RET, AT(83, 0x49), 0, "f1 runtime.systemstack.abi0"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup_go(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:s 1:runtime.systemstack.abi0: 0:f6: 1:f7: 0:f1:e "
		   "1:runtime.systemstack.abi0:");
	CHECK(st, f.t.nr_goroutines == 1 && f.t.nr_segments == 3 &&
			  f.t.segments[0].goroutine == 1 &&
			  f.t.segments[1].goroutine == 0 &&
			  f.t.segments[2].goroutine == 1 &&
			  f.t.segments[1].exec && f.t.segments[2].exec);
	teardown(&f);
}

/* morestack: newstack on g0, then gogo back to where morestack would
 * have returned; the prologue's jump to its own start is no new call. */
static void test_go_morestack(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(3), AT(1, 0x15), "f1 f3"},
		{DEC_CALL, FN(84), AT(3, 0x50), "f1 f3 runtime.morestack.abi0"},
		{DEC_CALL, FN(85), AT(84, 0x8b), "runtime.newstack"},
		{DEC_CALL, FN(80), AT(85, 0x10),
		 "runtime.newstack runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.newstack gogo"},
		{DEC_IJUMP, AT(3, 0x50), 0, "f1 f3"},
		{DEC_JUMP, FN(3), 0, "f1 f3"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};

	CHECK(st, !setup_go(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f,
		   "0:f1:s 1:f3: 2:runtime.morestack.abi0: 0:runtime.newstack: "
		   "1:runtime.gogo.abi0: 1:gogo:t 0:f1:e 1:f3:");
	teardown(&f);
}

/* With the capture's goroutine ids, a resume that fits two suspended
 * goroutines is the one named: its whole stack, no guess. */
static void test_go_exact(struct check_state *st)
{
	struct fixture f;
	const struct dec_goroutine items[] = {
		{155, FN(5), 0x100, 7},
		{215, AT(89, 0x15), 0x200, 1},
	};
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(89), AT(1, 0x15), "f1 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f1 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(80), AT(87, 0x10),
		 "runtime.park_m runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m gogo"},
		{DEC_IJUMP, FN(5), 0, "f5"},
		{DEC_CALL, FN(89), AT(5, 0x10), "f5 runtime.gopark"},
		{DEC_CALL, FN(82), AT(89, 0x15),
		 "f5 runtime.gopark runtime.mcall"},
		{DEC_CALL, FN(87), AT(82, 0x20), "runtime.park_m"},
		{DEC_CALL, FN(80), AT(87, 0x10),
		 "runtime.park_m runtime.gogo.abi0"},
		{DEC_JUMP, FN(81), 0, "runtime.park_m gogo"},
		{DEC_IJUMP, AT(89, 0x15), 0, "runtime.gopark"},
		{DEC_RET, AT(1, 0x15), 0, "f1"},
	};
	const struct mt_thread *th;

	CHECK(st, !setup_go(&f));
	seg_builder_go(f.b, NULL, items, 2);
	RUN_SCRIPT(st, &f, s);
	CHECK(st, !seg_finish(f.b, NULL));
	th = &f.t.threads[0];
	for (size_t i = 0; i < th->nr_slices; i++)
		CHECKF(st, !(th->slices[i].flags & MT_SLICE_RESUME_GUESSED),
		       "slice %zu guessed", i);
	/* the first goroutine's id comes with its resume */
	CHECK(st, f.t.nr_goroutines == 3);
	if (f.t.nr_goroutines == 3)
		CHECK(st, f.t.goroutines[1].goid == 7 &&
				  f.t.goroutines[2].goid == 1 &&
				  !strcmp(mt_str(&f.t.strs,
						 f.t.goroutines[1].start),
					  "f5"));
	teardown(&f);
}

/* A program without Go's runtime: a function named gogo jumping
 * somewhere is no switch. */
static void test_go_not_go(struct check_state *st)
{
	struct fixture f;
	const struct step s[] = {
		{DEC_SYNC, AT(1, 0x10), 0, "f1"},
		{DEC_CALL, FN(81), AT(1, 0x15), "f1 gogo"},
		{DEC_IJUMP, FN(5), 0, "f1 f5"},
	};

	CHECK(st, !setup_go(&f));
	RUN_SCRIPT(st, &f, s);
	check_tree(st, &f, "0:f1:se 1:gogo: 1:f5:et");
	CHECK(st, f.t.nr_segments == 1 && f.t.nr_goroutines == 0);
	teardown(&f);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_never_seen_callers);
	RUN(&st, test_multi_level_return);
	RUN(&st, test_wild_clock);
	RUN(&st, test_tail_call);
	RUN(&st, test_cold_part_recursive);
	RUN(&st, test_tail_call_unnamed_recursive);
	RUN(&st, test_into_cold_part_recursive);
	RUN(&st, test_jump_table_into_cold_part);
	RUN(&st, test_gcc_cold_part_names);
	RUN(&st, test_same_symbol_recursion);
	RUN(&st, test_recursion_revealed);
	RUN(&st, test_plt_trampoline);
	RUN(&st, test_syscall);
	RUN(&st, test_signal_handler);
	RUN(&st, test_return_with_empty_stack);
	RUN(&st, test_longjmp);
	RUN(&st, test_cold_part);
	RUN(&st, test_unwind_to_unseen_caller);
	RUN(&st, test_ocaml_raise);
	RUN(&st, test_ocaml_raise_unseen);
	RUN(&st, test_rust_landing_pads);
	RUN(&st, test_indirect_jump_to_unknown);
	RUN(&st, test_error_and_gap);
	RUN(&st, test_exec);
	RUN(&st, test_final_stack_anchors_roots);
	RUN(&st, test_anchor_after_syscall);
	RUN(&st, test_inlined);
	RUN(&st, test_go_park_resume);
	RUN(&st, test_go_ambiguous_guess);
	RUN(&st, test_go_systemstack);
	RUN(&st, test_go_morestack);
	RUN(&st, test_go_exact);
	RUN(&st, test_go_not_go);
	return CHECK_DONE(&st);
}
