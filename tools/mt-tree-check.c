/* SPDX-License-Identifier: MIT */
/*
 * mt-tree-check TRUTH.tsv OURS.tsv [--tol-ns N] [--unanchored] [--callers]
 *               [--extra N]
 *
 * Compares the slice tree mt-convert wrote (--text) with mt-synth's truth:
 * per thread, the same rows in the same pre-order, with the same depth,
 * name and the flags both sides know (clipped_start, clipped_end, tail,
 * syscall), and start and end times within N ns.
 *
 * --unanchored: the capture had no unwound stack, so callers that no
 * return revealed cannot be known; the check looks for the one depth
 * offset under which the rest agrees and drops the truth's rows above it.
 * --callers: ours may have callers above the truth's roots, which the stack
 * unwound at the trigger knew and the emulator's log (which begins where
 * tracing began) cannot: a chain of rows at the top of ours, each flagged
 * clipped_start, is dropped when the rest then agrees.
 * --extra N: ours may end with up to N rows the truth lacks (decoders run
 * on through direct calls after the last packet).
 *
 * Prints the rows compared and the time errors: the worst start and end,
 * and over every start and end both sides know (a call or a return), the
 * median, 99th percentile and worst.
 */
#include "tools/treefile.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	unsigned tid, depth;
	char name[1024];
	uint64_t start, end;
	bool cs, ce, tail, sys, gap;
};

struct table {
	struct row *r;
	size_t n, cap;
};

static int add_row(const struct tf_row *x, void *arg)
{
	struct table *t = arg;
	struct row r = {0};

	r.tid = x->tid;
	r.depth = x->depth;
	memcpy(r.name, x->name, sizeof(r.name));
	r.start = x->start;
	r.end = x->end;
	r.cs = x->flags & TF_CLIP_START;
	r.ce = x->flags & TF_CLIP_END;
	r.tail = x->flags & TF_TAIL;
	r.sys = x->flags & TF_SYSCALL;
	r.gap = x->flags & TF_GAP;
	if (mt_grow((void **)&t->r, &t->cap, t->n + 1, sizeof(*t->r))) {
		fprintf(stderr, "mt-tree-check: out of memory\n");
		return -1;
	}
	t->r[t->n++] = r;
	return 0;
}

static int load(const char *path, struct table *t)
{
	return tf_load(path, add_row, t);
}

struct result {
	size_t compared, bad, missing_tail;
	uint64_t max_start_err, max_end_err;
	double sum_start_err;
	char first_bad[512];
};

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* Time errors of the rows compared, ns: a start and an end each. */
struct errs {
	uint64_t *v;
	size_t n;
};

/* Compare one thread's rows under depth offset k; e has room for 2 nt. */
static void compare(const struct row *t, size_t nt, const struct row *o,
		    size_t no, unsigned k, uint64_t tol, size_t extra,
		    struct result *res, struct errs *e)
{
	size_t i = 0, j = 0;
	uint64_t last_start = 0;

	memset(res, 0, sizeof(*res));
	e->n = 0;
	for (size_t m = 0; m < nt; m++)
		if (t[m].start > last_start)
			last_start = t[m].start;
	for (; i < nt; i++) {
		const struct row *a = &t[i], *b;
		uint64_t es, ee;

		if (a->depth < k)
			continue; /* unknowable caller */
		if (j >= no) {
			/* The truth's last calls may start after the last
			 * packet (a direct call needs none): tolerated. */
			if (a->ce && a->start + tol >= last_start &&
			    res->missing_tail < extra) {
				res->missing_tail++;
				continue;
			}
			res->bad++;
			if (!res->first_bad[0])
				snprintf(res->first_bad, sizeof(res->first_bad),
					 "truth row %zu (%s depth %u) missing",
					 i, a->name, a->depth);
			continue;
		}
		b = &o[j++];
		res->compared++;
		es = diff(a->start, b->start);
		/* Where both were cut by the window's end, the truth's end is
		 * the capture's and ours is the last event's. */
		ee = a->ce && b->ce ? 0 : diff(a->end, b->end);
		if (es > res->max_start_err)
			res->max_start_err = es;
		if (ee > res->max_end_err)
			res->max_end_err = ee;
		res->sum_start_err += (double)es;
		/* A start the trace saw, an end it saw. */
		if (!a->cs && !b->cs)
			e->v[e->n++] = es;
		if (!a->ce && !b->ce)
			e->v[e->n++] = ee;
		/* A trace that starts at a function's entry cannot tell
		 * whether the call was just before it. */
		if (a->depth - k != b->depth ||
		    !tf_same_name(a->name, b->name) ||
		    (a->cs != b->cs && !(b->cs && es <= tol)) ||
		    a->ce != b->ce || a->tail != b->tail || a->sys != b->sys ||
		    es > tol || ee > tol) {
			res->bad++;
			if (!res->first_bad[0])
				snprintf(res->first_bad, sizeof(res->first_bad),
					 "row %zu: truth %s depth %u [%" PRIu64
					 ",%" PRIu64
					 "]%s%s%s, ours %s depth %u "
					 "[%" PRIu64 ",%" PRIu64 "]%s%s%s",
					 i, a->name, a->depth - k, a->start,
					 a->end, a->cs ? " cs" : "",
					 a->ce ? " ce" : "",
					 a->tail ? " tail" : "", b->name,
					 b->depth, b->start, b->end,
					 b->cs ? " cs" : "", b->ce ? " ce" : "",
					 b->tail ? " tail" : "");
		}
	}
	if (no - j > extra) {
		res->bad++;
		if (!res->first_bad[0])
			snprintf(res->first_bad, sizeof(res->first_bad),
				 "%zu extra rows at the end, first %s", no - j,
				 o[j].name);
	}
	for (; j < no; j++)
		if (!o[j].ce) {
			res->bad++;
			if (!res->first_bad[0])
				snprintf(res->first_bad, sizeof(res->first_bad),
					 "extra row %s is not clipped at the "
					 "end",
					 o[j].name);
		}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	struct errs all = {0}, cur = {0}, keep = {0};
	struct table tt = {0}, ot = {0};
	uint64_t tol = 0;
	size_t extra = 3, bad_threads = 0, rows = 0;
	bool unanchored = false, callers = false;
	uint64_t max_s = 0, max_e = 0;
	double sum_s = 0;
	char why[256];

	if (argc < 3) {
		fprintf(stderr, "usage: mt-tree-check TRUTH OURS [--tol-ns N] "
				"[--unanchored] [--callers] [--extra N]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		uint64_t v;

		if (!strcmp(argv[i], "--tol-ns") && i + 1 < argc) {
			if (mt_parse_arg(argv[i], argv[i + 1], 10, UINT64_MAX,
					 &tol, why, sizeof(why)))
				goto bad;
			i++;
		} else if (!strcmp(argv[i], "--unanchored")) {
			unanchored = true;
		} else if (!strcmp(argv[i], "--callers")) {
			callers = true;
		} else if (!strcmp(argv[i], "--extra") && i + 1 < argc) {
			if (mt_parse_arg(argv[i], argv[i + 1], 10, SIZE_MAX, &v,
					 why, sizeof(why)))
				goto bad;
			extra = (size_t)v;
			i++;
		} else {
			return 2;
		}
	}
	if (load(argv[1], &tt) || load(argv[2], &ot))
		return 2;
	all.v = malloc(2 * (tt.n + 1) * sizeof(*all.v));
	cur.v = malloc(2 * (tt.n + 1) * sizeof(*cur.v));
	keep.v = malloc(2 * (tt.n + 1) * sizeof(*keep.v));
	if (!all.v || !cur.v || !keep.v)
		return 2;
	for (size_t a = 0; a < tt.n;) {
		unsigned tid = tt.r[a].tid;
		size_t b = a, oa = 0, nt, no = 0, k, kmax, up = 0, umax = 0;
		struct row *o;
		struct result res, best = {0};
		bool ok = false;

		while (b < tt.n && tt.r[b].tid == tid)
			b++;
		nt = b - a;
		o = malloc((ot.n ? ot.n : 1) * sizeof(*o));
		if (!o)
			return 2;
		for (oa = 0; oa < ot.n; oa++)
			if (ot.r[oa].tid == tid && !ot.r[oa].gap)
				o[no++] = ot.r[oa];
		/* The unwound callers: the leading chain of ours. */
		while (callers && umax < no && o[umax].depth == umax &&
		       o[umax].cs)
			umax++;
		kmax = 0;
		if (unanchored)
			for (size_t i = a; i < b && tt.r[i].cs; i++)
				if (tt.r[i].depth > kmax)
					kmax = tt.r[i].depth;
		for (up = 0; up <= umax && !ok; up++) {
			bool fits = true;

			if (up) {
				/* Drop one more caller: the rest climbs. */
				for (size_t i = up; i < no; i++)
					fits = fits && o[i].depth >= 1;
				if (!fits)
					break;
				for (size_t i = up; i < no; i++)
					o[i].depth--;
			}
			for (k = 0; k <= kmax; k++) {
				compare(tt.r + a, nt, o + up, no - up,
					(unsigned)k, tol, extra, &res, &cur);
				if ((k == 0 && up == 0) || res.bad < best.bad) {
					struct errs x = keep;

					best = res;
					keep = cur;
					cur = x;
				}
				if (!res.bad) {
					ok = true;
					break;
				}
			}
		}
		rows += best.compared;
		memcpy(all.v + all.n, keep.v, keep.n * sizeof(*keep.v));
		all.n += keep.n;
		if (best.max_start_err > max_s)
			max_s = best.max_start_err;
		if (best.max_end_err > max_e)
			max_e = best.max_end_err;
		sum_s += best.sum_start_err;
		if (!ok) {
			bad_threads++;
			fprintf(stderr,
				"tid %u: %zu of %zu rows differ; first: %s\n",
				tid, best.bad, best.compared, best.first_bad);
		}
		free(o);
		a = b;
	}
	for (size_t i = 0; i < ot.n; i++) {
		bool known = false;

		/* (a thread's rows come together: one look each) */
		if (i && ot.r[i].tid == ot.r[i - 1].tid)
			continue;
		for (size_t j = 0; j < tt.n && !known; j++)
			known = tt.r[j].tid == ot.r[i].tid;
		if (!known) {
			fprintf(stderr, "tid %u is not in the truth\n",
				ot.r[i].tid);
			bad_threads++;
			break;
		}
	}
	printf("%zu rows compared, max start error %" PRIu64
	       " ns, max end error %" PRIu64 " ns, mean start error %.1f ns\n",
	       rows, max_s, max_e, rows ? sum_s / (double)rows : 0.0);
	if (all.n) {
		qsort(all.v, all.n, sizeof(*all.v), cmp_u64);
		printf("time error over %zu calls and returns: median %" PRIu64
		       " ns, p99 %" PRIu64 " ns, worst %" PRIu64 " ns\n",
		       all.n, all.v[all.n / 2], all.v[all.n * 99 / 100],
		       all.v[all.n - 1]);
	}
	free(all.v);
	free(cur.v);
	free(keep.v);
	free(tt.r);
	free(ot.r);
	return bad_threads ? 1 : 0;
bad:
	fprintf(stderr, "mt-tree-check: %s\n", why);
	return 2;
}
