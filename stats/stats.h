/* SPDX-License-Identifier: MIT */
/*
 * stats: what each function cost, from a slice tree.
 *
 * This header is the whole interface of the folder.  agg.c sums a
 * stream of slices (each thread's in pre-order) into figures per
 * function and per (caller, callee) pair: the SQLite writer stores them
 * as the tables function and caller, and mt-report computes them again
 * from a database's slices for a region or a database without them.
 * db.c reads a database mt-convert wrote; show.c prints figures for a
 * terminal or as CSV; report.c is what mt-report does.
 *
 * A function is a (name, dso, inlined) triple: the calls the compiler
 * inlined are counted apart from the real calls of the same function.
 * A slice whose start or end was inferred (cut at the snapshot's edge,
 * at a decode gap or at a region's edge) is counted in calls, total
 * and self time and also in `inferred`; the percentiles are of the
 * calls seen whole only, because an inferred duration is a bound.
 */
#ifndef MT_STATS_H
#define MT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/util.h"

#define ST_NONE UINT32_MAX

struct st_fig {
	uint64_t calls;
	uint64_t inferred;     /* calls with an inferred start or end */
	uint64_t total;	       /* ns, the calls' durations summed */
	int64_t self;	       /* ns, total less the direct children's */
	uint64_t inferred_dur; /* ns, of the inferred calls */
	/* ns, nearest rank over the calls seen whole; 0 when none was */
	uint64_t p50, p90, p99, max;
};

struct st_pair {
	uint32_t caller, callee; /* function ids */
	struct st_fig fig;	 /* of the callee's calls from the caller */
};

/*
 * A call path: a function called from a path (a calling-context tree,
 * every thread's merged).  What folded stacks are made of.
 */
struct st_path {
	uint32_t parent; /* its caller's path; ST_NONE for a root */
	uint32_t fn;
	/* the (caller, callee) pair of its calls: ST_NONE for a root, and
	 * for paths read back from a database */
	uint32_t pair;
	uint64_t calls, total;
	int64_t self;
};

/* Histogram buckets: 0 for calls of no length, b for 2^(b-1) <= dur <
 * 2^b ns. */
#define ST_HIST 65
unsigned st_bucket(uint64_t dur);

/* A function's slowest calls (all of them, inferred too), longest
 * first, the earlier first among equals. */
#define ST_KEPT 32
struct st_top {
	uint64_t dur, id;
};

/* Durations of whole calls, kept to find the percentiles: 32 bits each
 * until one needs more (4.3 s), which widens the array to 64.  A part's
 * arrays that st_merge() adds stay as they were, in more, until
 * st_finish() gathers them: merging the parts in order costs no copy. */
struct st_durs {
	uint32_t *v32;
	uint64_t *v64; /* when set, the durations, v32 gone */
	size_t n, cap;
	struct st_durs *more; /* none of them has more of its own */
	size_t nr_more, cap_more;
};

struct st_agg {
	uint32_t nr_fns;
	struct st_fig *fns;	   /* by function id */
	struct st_durs *fdur;	   /* by function id: calls with no caller */
	uint64_t (*hist)[ST_HIST]; /* by function id: whole calls a bucket */
	struct st_top (*top)[ST_KEPT]; /* by function id: its slowest calls */
	uint8_t *nr_top;	       /* by function id: how many */
	struct st_pair *pairs;
	struct st_durs *pdur; /* by pair index */
	size_t nr_pairs, cap_pairs;
	struct mt_hmap pair_index; /* caller << 32 | callee -> pair index */
	struct st_path *paths;
	size_t nr_paths, cap_paths;
	struct mt_hmap path_index; /* (parent + 1) << 32 | fn -> path */
	/* by path (the first nr_kid): the last path looked up from it,
	 * fn << 32 | path (all ones: none) */
	uint64_t *kid;
	size_t nr_kid, cap_kid;
	/* The open slices of the thread being read, outermost first. */
	struct st_open {
		uint64_t id;
		uint32_t fn, pair, path;
		uint64_t dur, child;
	} * stack;
	size_t nr_open, cap_open;
};

/* Figures for nr_fns functions (ids 0 .. nr_fns - 1); st_grow adds
 * more.  Returns 0 or -ENOMEM. */
int st_init(struct st_agg *a, uint32_t nr_fns);
int st_grow(struct st_agg *a, uint32_t nr_fns);
/*
 * One slice of the thread being read, in pre-order (a parent before its
 * children): id its own number, parent its parent's (ST_ROOT for none).
 * A parent that is not among the open slices (not a pre-order walk)
 * makes the slice a root.
 */
#define ST_ROOT UINT64_MAX
int st_add(struct st_agg *a, uint32_t fn, uint64_t id, uint64_t parent,
	   uint64_t dur, bool inferred);
/* The thread's slices are all in: closes the open ones. */
void st_end_thread(struct st_agg *a);
/*
 * A thread summed in parts, each part into an st_agg of its own, the
 * parts added in order with st_merge(): a part that begins inside the
 * thread first gets the slices open there (the last slice before it and
 * its ancestors, root first) with st_add_open(), which counts no call:
 * their calls are the parts' before, and this part only takes its
 * children's time off their self time.  The sum is the one st_add()
 * gives over the whole thread when the thread is a pre-order walk.
 */
int st_add_open(struct st_agg *a, uint32_t fn, uint64_t id, uint64_t parent);
/*
 * Adds from's figures to a's, from's function f being a's fn_of[f] (a
 * holds every such id: st_grow).  from's pairs and paths that a does
 * not have are added in from's order, and its durations after a's, so
 * that merging the parts in order gives the ids one st_agg over all of
 * them gives.  from is left as it was, its durations possibly moved
 * away.  Returns 0 or -ENOMEM.
 */
int st_merge(struct st_agg *a, struct st_agg *from, const uint32_t *fn_of);
/* Computes the percentiles, a function at a time on up to workers
 * threads (the figures are the same for any number), and frees the
 * durations kept for them.  Returns 0 or -ENOMEM. */
int st_finish(struct st_agg *a, unsigned workers);
/* Frees the durations kept for the percentiles (st_finish() has): the
 * rest of a stays. */
void st_drop_durs(struct st_agg *a);
void st_free(struct st_agg *a);

/* The k-th smallest of v[0..n) (0-based), v reordered around it. */
uint64_t st_select(uint64_t *v, size_t n, size_t k);
uint32_t st_select32(uint32_t *v, size_t n, size_t k);
/* The nearest-rank index of percentile p of n values: ceil(p n / 100) - 1. */
size_t st_rank(size_t n, unsigned p);

/* ------------------------------------------------------------------ */
/* mt-report (report.c) */

enum st_mode {
	ST_TOP,	    /* top functions by self and by total time */
	ST_FUNC,    /* one function: figures, histogram, callers, callees */
	ST_SLOWEST, /* the slowest calls, each with its stack */
	ST_COMPARE, /* per function, B less A */
	ST_FOLDED,  /* folded stacks weighted by self time */
};

/* A part of a trace: all of it, a call of a function with what it
 * called, or a window of time. */
struct st_region {
	enum { ST_ALL, ST_CALL, ST_TIME } kind;
	char name[512];	   /* ST_CALL: the function */
	int64_t nth;	   /* ST_CALL: 1 the first call, -1 the last, 0 each
			      outermost one */
	uint64_t from, to; /* ST_TIME: ns from the trace's first slice */
	const char *spec;  /* as given, for messages and headings */
};

struct st_opts {
	enum st_mode mode;
	const char *db[2];     /* db[1]: the second database of a compare */
	struct st_region r[2]; /* r[1]: the second region of a compare */
	const char *function;  /* ST_FUNC, and ST_SLOWEST when set */
	uint32_t limit;	       /* rows per table (ST_SLOWEST: calls) */
	bool csv;
};

/* Parses a region: NAME#N (the N-th call of NAME, negative from the
 * last), NAME (each outermost call of NAME, as mt-convert --between), or
 * FROM..TO as mt-convert --time takes it.  Returns 0 or -EINVAL with one
 * line in err. */
int st_parse_call(const char *s, struct st_region *r, char *err, size_t errlen);
int st_parse_time(const char *s, struct st_region *r, char *err, size_t errlen);

/* Runs mt-report; prints to out.  Returns 0, or a negative errno value
 * with one line (naming the database) in err. */
int st_report(const struct st_opts *o, FILE *out, char *err, size_t errlen);

#endif
