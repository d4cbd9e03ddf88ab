/* SPDX-License-Identifier: MIT */
/*
 * regions/: the --time window's syntax, and what a window keeps of a
 * trace (clipping, parents remapped, hits).
 */
#include "regions/regions.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_parse_window(struct check_state *st)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t from, to;
	} c[] = {
		{"100..200", 1, 100, 200},
		{"2ms..3.5ms", 1, 2000000, 3500000},
		{"..500us", 1, 0, 500000},
		{"1s..", 1, 1000000000, UINT64_MAX},
		{"1.25us..2ns", 0, 0, 0}, /* from after to */
		{"0.5us..1us", 1, 500, 1000},
		{"..", 0, 0, 0},
		{"5", 0, 0, 0},
		{"1.5..2", 0, 0, 0}, /* a fraction of a ns */
		{"1ks..2", 0, 0, 0},
		{"-1..2", 0, 0, 0},
		{"1..2..3", 0, 0, 0},
		{"99999999999999999999..", 0, 0, 0},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		struct rg_window w;
		int rc = rg_parse_window(c[i].s, &w, err, sizeof(err));

		if (c[i].ok)
			CHECKF(st,
			       !rc && w.from == c[i].from && w.to == c[i].to,
			       "%s", c[i].s);
		else
			CHECKF(st, rc == -EINVAL && strstr(err, c[i].s),
			       "%s accepted", c[i].s);
	}
}

static void push(struct mt_trace *t, struct mt_thread *th, uint64_t ts,
		 uint64_t dur, uint32_t depth, uint32_t parent, uint32_t name)
{
	struct mt_slice s = {.ts = ts,
			     .dur = dur,
			     .frame = mt_frame_intern(t, name, 0, 0),
			     .depth = depth,
			     .parent = parent,
			     .segment = 0};

	mt_thread_push(th, &s);
}

/*
 * main 1000..2000 { a 1000..1100, b 1200..1600 { c 1300..1400 },
 * d 1700..1900 }; window 150..750 from the first slice (1150..1750):
 * main clipped both ends, b whole, c whole, d clipped at its end, a gone.
 */
static void test_keep_time(struct check_state *st)
{
	struct mt_trace t;
	struct mt_thread *th;
	struct rg_window w = {150, 750};
	struct rg_stats rs;
	uint32_t n[5];
	const char *names[5] = {"main", "a", "b", "c", "d"};

	mt_trace_init(&t);
	for (int i = 0; i < 5; i++)
		n[i] = mt_str_intern(&t.strs, names[i]);
	th = mt_trace_add_thread(&t, 1, 1, "x");
	if (!th) {
		CHECK(st, 0);
		return;
	}
	push(&t, th, 1000, 1000, 0, MT_NONE, n[0]);
	push(&t, th, 1000, 100, 1, 0, n[1]);
	push(&t, th, 1200, 400, 1, 0, n[2]);
	push(&t, th, 1300, 100, 2, 2, n[3]);
	push(&t, th, 1700, 200, 1, 0, n[4]);
	t.hits = calloc(2, sizeof(*t.hits));
	if (t.hits) {
		t.hits[0].ts = 1100;
		t.hits[1].ts = 1500;
		t.hits[0].tid = t.hits[1].tid = 1;
		t.nr_hits = t.cap_hits = 2;
	}
	{
		struct mt_ptwrite a = {.ts = 1100, .tid = 1, .value = 1};
		struct mt_ptwrite b = {.ts = 1300, .tid = 1, .value = 2};

		CHECK(st, mt_trace_add_ptwrite(&t, &a) &&
				  mt_trace_add_ptwrite(&t, &b));
	}
	CHECK(st, !rg_keep_time(&t, &w, &rs, NULL, 0));
	CHECK(st, t.nr_ptwrites == 1 && t.ptwrites[0].value == 2);
	th = &t.threads[0];
	CHECK(st, rs.slices_before == 5 && rs.slices_after == 4);
	CHECK(st, rs.first == 1000 && rs.start == 1150 && rs.end == 1750);
	CHECK(st, th->nr_slices == 4);
	if (th->nr_slices == 4) {
		const struct mt_slice *s = th->slices;

		CHECK(st, mt_slice_name(&t, &s[0]) == n[0] && s[0].ts == 1150 &&
				  s[0].dur == 600 &&
				  (s[0].flags & MT_SLICE_INFERRED_START) &&
				  (s[0].flags & MT_SLICE_INFERRED_END));
		CHECK(st, mt_slice_name(&t, &s[1]) == n[2] &&
				  s[1].parent == 0 && s[1].ts == 1200 &&
				  s[1].dur == 400 && !s[1].flags);
		CHECK(st, mt_slice_name(&t, &s[2]) == n[3] &&
				  s[2].parent == 1 && s[2].depth == 2);
		CHECK(st, mt_slice_name(&t, &s[3]) == n[4] &&
				  s[3].parent == 0 && s[3].ts == 1700 &&
				  s[3].dur == 50 &&
				  s[3].flags == MT_SLICE_INFERRED_END);
	}
	CHECK(st, t.nr_hits == 1 && t.hits[0].ts == 1500);

	/* A window past the end keeps nothing. */
	w = (struct rg_window){5000, UINT64_MAX};
	CHECK(st, !rg_keep_time(&t, &w, &rs, NULL, 0));
	CHECK(st, rs.start == rs.end && !rs.slices_after &&
			  !t.threads[0].nr_slices);
	mt_trace_free(&t);
}

/* main 0..1000 { f 100..200 { g 120..150 }, h 300..400,
 * f 500..600 { f 520..550 }, s 700..800 } */
static void build_between(struct mt_trace *t, uint32_t *n)
{
	static const char *const names[] = {"main", "f", "g", "h", "s"};
	struct mt_thread *th;

	mt_trace_init(t);
	for (int i = 0; i < 5; i++)
		n[i] = mt_str_intern(&t->strs, names[i]);
	th = mt_trace_add_thread(t, 1, 1, "x");
	if (!th)
		return;
	push(t, th, 0, 1000, 0, MT_NONE, n[0]);
	push(t, th, 100, 100, 1, 0, n[1]);
	push(t, th, 120, 30, 2, 1, n[2]);
	push(t, th, 300, 100, 1, 0, n[3]);
	push(t, th, 500, 100, 1, 0, n[1]);
	push(t, th, 520, 30, 2, 4, n[1]);
	push(t, th, 700, 100, 1, 0, n[4]);
}

static void test_keep_between(struct check_state *st)
{
	struct mt_trace t;
	struct rg_stats rs;
	uint32_t n[5];
	const struct mt_slice *s;

	/* Each outermost call of f, each with main clipped around it. */
	build_between(&t, n);
	CHECK(st, !rg_keep_between(&t, "f", NULL, &rs, NULL, 0));
	CHECK(st, rs.regions == 2 && rs.kept_ns == 200 && rs.slices_after == 6);
	s = t.threads[0].slices;
	if (t.threads[0].nr_slices == 6) {
		CHECK(st, mt_slice_name(&t, &s[0]) == n[0] && s[0].ts == 100 &&
				  s[0].dur == 100 &&
				  s[0].flags == (MT_SLICE_INFERRED_START |
						 MT_SLICE_INFERRED_END));
		CHECK(st, mt_slice_name(&t, &s[1]) == n[1] &&
				  s[1].parent == 0 && !s[1].flags);
		CHECK(st, mt_slice_name(&t, &s[2]) == n[2] && s[2].parent == 1);
		CHECK(st, mt_slice_name(&t, &s[3]) == n[0] && s[3].ts == 500 &&
				  s[3].parent == MT_NONE);
		CHECK(st, mt_slice_name(&t, &s[4]) == n[1] && s[4].parent == 3);
		CHECK(st, mt_slice_name(&t, &s[5]) == n[1] &&
				  s[5].parent == 4 && s[5].depth == 2);
	} else {
		CHECKF(st, 0, "%zu slices", t.threads[0].nr_slices);
	}
	mt_trace_free(&t);

	/* From the first call of f to the return from s. */
	build_between(&t, n);
	CHECK(st, !rg_keep_between(&t, "f", "s", &rs, NULL, 0));
	CHECK(st, rs.regions == 1 && rs.kept_ns == 700 && rs.slices_after == 7);
	s = t.threads[0].slices;
	CHECK(st, s[0].ts == 100 && s[0].dur == 700 &&
			  mt_slice_name(&t, &s[6]) == n[4]);
	mt_trace_free(&t);

	/* No such function: nothing kept, no region. */
	build_between(&t, n);
	CHECK(st, !rg_keep_between(&t, "nosuch", NULL, &rs, NULL, 0));
	CHECK(st,
	      !rs.regions && !t.threads[0].nr_slices && rs.slices_before == 7);
	CHECK(st, !rs.start_calls);
	mt_trace_free(&t);

	/* A STOP the trace never calls keeps nothing either, and the
	 * counts say which name is the one missing. */
	build_between(&t, n);
	CHECK(st, !rg_keep_between(&t, "f", "nosuch", &rs, NULL, 0));
	CHECK(st, !rs.regions && !t.threads[0].nr_slices);
	CHECKF(st, rs.start_calls == 3 && !rs.stop_calls, "%llu calls of f",
	       (unsigned long long)rs.start_calls);
	mt_trace_free(&t);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_parse_window);
	RUN(&st, test_keep_time);
	RUN(&st, test_keep_between);
	return CHECK_DONE(&st);
}
