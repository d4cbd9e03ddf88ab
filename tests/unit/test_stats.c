/* SPDX-License-Identifier: MIT */
/*
 * stats/: the sums per function and per (caller, callee) pair on
 * hand-made trees, selection against sorting, the units a duration is
 * shown in; regions/: where --split cuts and what a part holds.
 */
#include "regions/regions.h"
#include "stats/show.h"
#include "stats/stats.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every rank of arrays with and without repeated values. */
static void test_select(struct check_state *cs)
{
	uint64_t v[257], sorted[257], w[257];
	unsigned seed = 7;

	for (size_t n = 1; n <= 257; n += 16) {
		for (int mod = 3; mod <= 1000; mod *= 10) {
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				v[i] = (seed >> 8) % (unsigned)mod;
			}
			memcpy(sorted, v, n * sizeof(*v));
			qsort(sorted, n, sizeof(*v), cmp_u64);
			for (size_t k = 0; k < n; k++) {
				memcpy(w, v, n * sizeof(*v));
				CHECKF(cs, st_select(w, n, k) == sorted[k],
				       "n %zu k %zu", n, k);
			}
		}
	}
}

static void test_rank(struct check_state *cs)
{
	CHECK(cs, st_rank(1, 50) == 0 && st_rank(1, 99) == 0);
	CHECK(cs, st_rank(2, 50) == 0 && st_rank(2, 90) == 1);
	CHECK(cs, st_rank(100, 50) == 49 && st_rank(100, 99) == 98);
	CHECK(cs, st_rank(10, 99) == 9 && st_rank(3, 50) == 1);
}

/*
 * Thread 1: a(0, 100) > { b(10, 30) > c(15, 5), b(50, 20) }, then d
 * (inferred, 7 ns); thread 2: b(0, 40) > c, c whose parent is not open
 * (not a pre-order walk): a root.  Functions a=0 b=1 c=2 d=3.
 */
static void test_sums(struct check_state *cs)
{
	struct st_agg a;
	const struct st_fig *f;
	size_t ab = SIZE_MAX, bc = SIZE_MAX;

	CHECK(cs, !st_init(&a, 4));
	CHECK(cs, !st_add(&a, 0, 0, ST_ROOT, 100, false));
	CHECK(cs, !st_add(&a, 1, 1, 0, 30, false));
	CHECK(cs, !st_add(&a, 2, 2, 1, 5, false));
	CHECK(cs, !st_add(&a, 1, 3, 0, 20, false));
	CHECK(cs, !st_add(&a, 3, 4, ST_ROOT, 7, true));
	CHECK(cs, st_add(&a, 4, 5, ST_ROOT, 1, false) < 0); /* no such fn */
	st_end_thread(&a);
	CHECK(cs, !st_add(&a, 1, 0, ST_ROOT, 40, false));
	CHECK(cs, !st_add(&a, 2, 1, 0, 10, false));
	CHECK(cs, !st_add(&a, 2, 2, 99, 3, false));
	CHECK(cs, !st_finish(&a, 1));

	f = &a.fns[0];
	CHECK(cs, f->calls == 1 && f->total == 100 && f->self == 50 &&
			  f->p50 == 100 && f->max == 100 && !f->inferred);
	f = &a.fns[1];
	CHECK(cs, f->calls == 3 && f->total == 90 && f->self == 75);
	/* 20 30 40: p50 rank 1, p90 and p99 rank 2 */
	CHECK(cs, f->p50 == 30 && f->p90 == 40 && f->p99 == 40 && f->max == 40);
	f = &a.fns[2];
	CHECK(cs, f->calls == 3 && f->total == 18 && f->self == 18 &&
			  f->p50 == 5 && f->max == 10);
	f = &a.fns[3];
	CHECK(cs, f->calls == 1 && f->inferred == 1 && f->inferred_dur == 7 &&
			  f->total == 7 && f->p50 == 0 && f->max == 0);
	CHECK(cs, a.nr_pairs == 2);
	for (size_t i = 0; i < a.nr_pairs; i++) {
		if (a.pairs[i].caller == 0 && a.pairs[i].callee == 1)
			ab = i;
		if (a.pairs[i].caller == 1 && a.pairs[i].callee == 2)
			bc = i;
	}
	CHECK(cs, ab != SIZE_MAX && bc != SIZE_MAX);
	if (ab != SIZE_MAX && bc != SIZE_MAX) {
		f = &a.pairs[ab].fig;
		CHECK(cs, f->calls == 2 && f->total == 50 && f->self == 45 &&
				  f->p50 == 20 && f->max == 30);
		f = &a.pairs[bc].fig;
		CHECK(cs, f->calls == 2 && f->total == 15 && f->self == 15 &&
				  f->p90 == 10);
	}
	/* Paths: a, a>b, a>b>c, d; b, b>c, c (the root of no walk). */
	CHECK(cs, a.nr_paths == 7);
	if (a.nr_paths == 7) {
		CHECK(cs, a.paths[1].parent == 0 && a.paths[1].fn == 1 &&
				  a.paths[1].calls == 2 &&
				  a.paths[1].self == 45);
		CHECK(cs, a.paths[2].parent == 1 && a.paths[2].self == 5);
		CHECK(cs, a.paths[4].parent == ST_NONE && a.paths[4].fn == 1 &&
				  a.paths[4].self == 30);
		CHECK(cs, a.paths[6].parent == ST_NONE && a.paths[6].fn == 2);
	}
	/* Histograms: b's 20, 30 in bucket 5 (16..32), 40 in 6. */
	CHECK(cs, a.hist[1][5] == 2 && a.hist[1][6] == 1 && !a.hist[3][3]);
	/* b's slowest: 40, 30, 20. */
	CHECK(cs, a.nr_top[1] == 3 && a.top[1][0].dur == 40 &&
			  a.top[1][1].dur == 30 && a.top[1][2].dur == 20);
	CHECK(cs, st_bucket(0) == 0 && st_bucket(1) == 1 && st_bucket(2) == 2 &&
			  st_bucket(3) == 2 && st_bucket(UINT64_MAX) == 64);
	st_free(&a);
}

/* A call of more than 4.3 s among short ones: the durations held widen
 * from 32 to 64 bits, and the figures stay exact. */
static void test_wide(struct check_state *cs)
{
	static const uint64_t d[] = {5, 3, 5000000000ull, 7, 4294967296ull};
	struct st_agg a;

	CHECK(cs, !st_init(&a, 1));
	for (size_t i = 0; i < sizeof(d) / sizeof(*d); i++)
		CHECK(cs, !st_add(&a, 0, i, ST_ROOT, d[i], false));
	CHECK(cs, a.fdur[0].v64 && !a.fdur[0].v32);
	CHECK(cs, !st_finish(&a, 1));
	/* 3 5 7 4294967296 5000000000: ranks 2, 4, 4 */
	CHECK(cs, a.fns[0].p50 == 7 && a.fns[0].p90 == 5000000000ull &&
			  a.fns[0].max == 5000000000ull &&
			  a.fns[0].total == 9294967311ull);
	/* Gathered, the durations are freed. */
	CHECK(cs, !a.fdur[0].v64 && !a.fdur[0].n);
	st_free(&a);
}

/* Parts merged in order give one pass's figures, a wide duration in the
 * second part widening what the first kept. */
static void test_merge_wide(struct check_state *cs)
{
	static const uint64_t d[] = {9, 5000000000ull, 3, 7, 4294967296ull, 1};
	const uint32_t same[2] = {0, 1};
	struct st_agg one, a, b;

	CHECK(cs, !st_init(&one, 2) && !st_init(&a, 2) && !st_init(&b, 2));
	CHECK(cs, !st_add(&one, 0, 0, ST_ROOT, 10000000000ull, false));
	CHECK(cs, !st_add(&a, 0, 0, ST_ROOT, 10000000000ull, false));
	for (uint64_t i = 0; i < 6; i++) {
		CHECK(cs, !st_add(&one, 1, i + 1, 0, d[i], false));
		if (i < 3)
			CHECK(cs, !st_add(&a, 1, i + 1, 0, d[i], false));
		else if (i == 3)
			CHECK(cs,
			      !st_add_open(&b, 0, 0, ST_ROOT) &&
				      !st_add(&b, 1, i + 1, 0, d[i], false));
		else
			CHECK(cs, !st_add(&b, 1, i + 1, 0, d[i], false));
	}
	st_end_thread(&a);
	st_end_thread(&b);
	CHECK(cs, !st_merge(&a, &b, same));
	CHECK(cs, !st_finish(&one, 1) && !st_finish(&a, 4));
	for (int f = 0; f < 2; f++)
		CHECK(cs, a.fns[f].calls == one.fns[f].calls &&
				  a.fns[f].self == one.fns[f].self &&
				  a.fns[f].p50 == one.fns[f].p50 &&
				  a.fns[f].p90 == one.fns[f].p90 &&
				  a.fns[f].max == one.fns[f].max);
	CHECK(cs, a.nr_pairs == 1 &&
			  a.pairs[0].fig.p50 == one.pairs[0].fig.p50 &&
			  a.pairs[0].fig.max == 5000000000ull);
	st_free(&one);
	st_free(&a);
	st_free(&b);
}

/* Figures of one agg and of the same slices in parts merged in order
 * agree, field by field, whatever the threads that find them. */
static bool same_fig(const struct st_fig *x, const struct st_fig *y)
{
	return x->calls == y->calls && x->inferred == y->inferred &&
	       x->total == y->total && x->self == y->self && x->p50 == y->p50 &&
	       x->p90 == y->p90 && x->p99 == y->p99 && x->max == y->max;
}

/*
 * A random walk of 6 functions, 20000 slices, a few over 4.3 s, summed
 * in one pass and in parts of 1000 (each merged into the whole: the
 * parts' arrays kept as they are, some 32 bits wide, some 64), the
 * figures found on 1 and on 4 threads; then a function's p90 against a
 * sort of its durations.
 */
static void test_parts_finish(struct check_state *cs)
{
	enum { N = 20000, PART = 1000, FNS = 6 };
	static uint64_t dur[N], id_parent[N], sorted[N];
	static uint32_t fn[N];
	const uint32_t same[FNS] = {0, 1, 2, 3, 4, 5};
	struct st_agg one, whole;
	uint64_t stack[64];
	size_t depth = 0, nr_of_3 = 0;
	unsigned seed = 11;

	for (size_t i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		/* up (pop some), then this slice under the top */
		depth = depth ? (seed >> 16) % (depth + 1) : 0;
		if (depth >= 63)
			depth = 62;
		id_parent[i] = depth ? stack[depth - 1] : ST_ROOT;
		stack[depth++] = i;
		fn[i] = (seed >> 4) % FNS;
		dur[i] = (seed >> 8) % 5000;
		if (i % 3001 == 7)
			dur[i] = 5000000000ull + i;
	}
	CHECK(cs, !st_init(&one, FNS) && !st_init(&whole, FNS));
	for (size_t i = 0; i < N; i++)
		CHECK(cs, !st_add(&one, fn[i], i, id_parent[i], dur[i],
				  i % 97 == 5));
	for (size_t lo = 0; lo < N; lo += PART) {
		struct st_agg p;
		size_t open[64], nr = 0;

		CHECK(cs, !st_init(&p, FNS));
		/* the slices open before the part, root first */
		for (uint64_t x = lo ? lo - 1 : ST_ROOT; x != ST_ROOT;
		     x = id_parent[x])
			open[nr++] = x;
		while (nr--)
			CHECK(cs, !st_add_open(&p, fn[open[nr]], open[nr],
					       id_parent[open[nr]]));
		for (size_t i = lo; i < lo + PART; i++)
			CHECK(cs, !st_add(&p, fn[i], i, id_parent[i], dur[i],
					  i % 97 == 5));
		st_end_thread(&p);
		CHECK(cs, !st_merge(&whole, &p, same));
		st_free(&p);
	}
	CHECK(cs, whole.fdur[fn[0]].nr_more > 0);
	CHECK(cs, !st_finish(&one, 1) && !st_finish(&whole, 4));
	for (uint32_t f = 0; f < FNS; f++)
		CHECKF(cs, same_fig(&one.fns[f], &whole.fns[f]), "fn %u", f);
	CHECK(cs, one.nr_pairs == whole.nr_pairs);
	for (size_t i = 0; i < one.nr_pairs && i < whole.nr_pairs; i++)
		CHECKF(cs,
		       one.pairs[i].caller == whole.pairs[i].caller &&
			       one.pairs[i].callee == whole.pairs[i].callee &&
			       same_fig(&one.pairs[i].fig, &whole.pairs[i].fig),
		       "pair %zu", i);
	for (size_t i = 0; i < N; i++)
		if (fn[i] == 3 && i % 97 != 5)
			sorted[nr_of_3++] = dur[i];
	qsort(sorted, nr_of_3, sizeof(*sorted), cmp_u64);
	CHECK(cs, nr_of_3 && one.fns[3].p90 == sorted[st_rank(nr_of_3, 90)] &&
			  one.fns[3].max == sorted[nr_of_3 - 1]);
	for (uint32_t f = 0; f < FNS; f++)
		CHECK(cs, !whole.fdur[f].n && !whole.fdur[f].nr_more);
	st_free(&one);
	st_free(&whole);
}

static void test_units(struct check_state *cs)
{
	static const struct {
		double ns;
		bool sign;
		const char *want;
	} c[] = {
		{0, false, "0 ns"},	    {999, false, "999 ns"},
		{1234, false, "1.23 us"},   {12345, false, "12.3 us"},
		{123456, false, "123 us"},  {1.5e9, false, "1.50 s"},
		{4.56e6, true, "+4.56 ms"}, {-1500, true, "-1.50 us"},
		{2e12, false, "2000 s"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		st_fmt_dur(buf, sizeof(buf), c[i].ns, c[i].sign);
		CHECKF(cs, !strcmp(buf, c[i].want), "%g: %s, want %s", c[i].ns,
		       buf, c[i].want);
	}
}

static void push(struct mt_thread *th, uint64_t ts, uint64_t dur,
		 uint32_t depth, uint32_t parent)
{
	struct mt_slice s = {
		.ts = ts, .dur = dur, .depth = depth, .parent = parent};

	if (!mt_thread_push(th, &s))
		exit(2);
}

/*
 * r(0, 100) over children at 10, 20, ... 90 of 5 ns each: at most 4
 * slices a part is [0, 40), then r carried and 3 children, twice.  A
 * child that ends where a cut would go (at 70: one of 60..70) moves
 * the cut to a start before it.
 */
static void test_split(struct check_state *cs)
{
	struct mt_trace t, v;
	uint64_t *cuts;
	size_t n;
	char err[256];

	mt_trace_init(&t);
	if (!mt_trace_add_thread(&t, 1, 1, "t"))
		exit(2);
	push(&t.threads[0], 0, 100, 0, MT_NONE);
	for (uint64_t k = 1; k <= 9; k++)
		push(&t.threads[0], k * 10, 5, 1, 0);
	CHECK(cs, !rg_split_plan(&t, 4, &cuts, &n, err, sizeof(err)));
	CHECK(cs, n == 3);
	if (n == 3)
		CHECK(cs, cuts[0] == 0 && cuts[1] == 40 && cuts[2] == 70 &&
				  cuts[3] == 101);
	CHECK(cs, !rg_part(&t, cuts[1], cuts[2], &v, err, sizeof(err)));
	CHECK(cs, v.nr_threads == 1 && v.threads[0].nr_slices == 4);
	if (v.threads[0].nr_slices == 4) {
		const struct mt_slice *s = v.threads[0].slices;

		CHECK(cs, s[0].ts == 40 && s[0].dur == 30 &&
				  (s[0].flags & MT_SLICE_INFERRED_START) &&
				  (s[0].flags & MT_SLICE_INFERRED_END));
		CHECK(cs, s[1].ts == 40 && s[1].parent == 0 && !s[1].flags);
		CHECK(cs, s[3].ts == 60 && s[3].parent == 0);
	}
	rg_part_free(&v);
	free(cuts);

	t.threads[0].slices[6].dur = 10; /* 60..70 */
	CHECK(cs, !rg_split_plan(&t, 4, &cuts, &n, err, sizeof(err)));
	CHECK(cs, n >= 3 && cuts[2] == 60);
	free(cuts);
	/* The stack alone fills a part. */
	CHECK(cs, rg_split_plan(&t, 1, &cuts, &n, err, sizeof(err)) < 0 &&
			  strstr(err, "open at a cut"));
	mt_trace_free(&t);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_select);
	RUN(&st, test_rank);
	RUN(&st, test_sums);
	RUN(&st, test_wide);
	RUN(&st, test_merge_wide);
	RUN(&st, test_parts_finish);
	RUN(&st, test_units);
	RUN(&st, test_split);
	return CHECK_DONE(&st);
}
