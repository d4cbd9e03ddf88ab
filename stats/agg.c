/* SPDX-License-Identifier: MIT */
/*
 * The figures per function and per (caller, callee) pair, summed over a
 * stream of slices.  Self time needs a slice's children, which come
 * after it in pre-order: each slice stays on a stack of open ones until
 * a slice that is not its descendant arrives, and its self time is
 * counted then.  Percentiles need every whole call's duration: each is
 * kept once, in its (caller, callee) pair's array, or in its function's
 * for a call with no caller, and each percentile is found by selection
 * (linear on average) rather than by sorting.  A function's durations
 * are the union of its own and its pairs' arrays, gathered when its
 * figures are found, each array freed as it is gathered: so the writer
 * holds 4 bytes a call, not 8, and the functions can be found on
 * threads side by side.
 */
#include "stats/stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int st_init(struct st_agg *a, uint32_t nr_fns)
{
	memset(a, 0, sizeof(*a));
	return st_grow(a, nr_fns);
}

int st_grow(struct st_agg *a, uint32_t nr_fns)
{
	struct st_fig *f;
	struct st_durs *d;
	uint64_t(*h)[ST_HIST];
	struct st_top(*top)[ST_KEPT];
	uint8_t *nt;

	if (nr_fns <= a->nr_fns)
		return 0;
	top = realloc(a->top, (size_t)nr_fns * sizeof(*top));
	if (!top)
		return -ENOMEM;
	a->top = top;
	nt = realloc(a->nr_top, nr_fns);
	if (!nt)
		return -ENOMEM;
	a->nr_top = nt;
	memset(nt + a->nr_fns, 0, nr_fns - a->nr_fns);
	h = realloc(a->hist, (size_t)nr_fns * sizeof(*h));
	if (!h)
		return -ENOMEM;
	a->hist = h;
	memset(h + a->nr_fns, 0, (nr_fns - a->nr_fns) * sizeof(*h));
	f = realloc(a->fns, (size_t)nr_fns * sizeof(*f));
	if (!f)
		return -ENOMEM;
	a->fns = f;
	d = realloc(a->fdur, (size_t)nr_fns * sizeof(*d));
	if (!d)
		return -ENOMEM;
	a->fdur = d;
	memset(f + a->nr_fns, 0, (nr_fns - a->nr_fns) * sizeof(*f));
	memset(d + a->nr_fns, 0, (nr_fns - a->nr_fns) * sizeof(*d));
	a->nr_fns = nr_fns;
	return 0;
}

/* Most calls take less than 4.3 s: their durations are held in 32 bits,
 * half the memory (the writer holds one a slice, twice), until one
 * does not fit. */
static int durs_widen(struct st_durs *d)
{
	uint64_t *w = malloc((d->cap ? d->cap : 1) * sizeof(*w));

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		w[i] = d->v32[i];
	free(d->v32);
	d->v32 = NULL;
	d->v64 = w;
	return 0;
}

static int durs_add(struct st_durs *d, uint64_t v)
{
	if (!d->v64 && v > UINT32_MAX && durs_widen(d))
		return -ENOMEM;
	if (d->v64) {
		if (mt_grow((void **)&d->v64, &d->cap, d->n + 1,
			    sizeof(*d->v64)))
			return -ENOMEM;
		d->v64[d->n++] = v;
		return 0;
	}
	if (mt_grow((void **)&d->v32, &d->cap, d->n + 1, sizeof(*d->v32)))
		return -ENOMEM;
	d->v32[d->n++] = (uint32_t)v;
	return 0;
}

static void fig_add(struct st_fig *f, uint64_t dur, bool inferred)
{
	f->calls++;
	f->total += dur;
	if (inferred) {
		f->inferred++;
		f->inferred_dur += dur;
	}
}

static int pair_get(struct st_agg *a, uint32_t caller, uint32_t callee,
		    uint32_t *idx)
{
	uint64_t key = (uint64_t)caller << 32 | callee, v;
	size_t cap;

	if (mt_hmap_find(&a->pair_index, key, &v)) {
		*idx = (uint32_t)v;
		return 0;
	}
	cap = a->cap_pairs;
	if (mt_grow((void **)&a->pairs, &cap, a->nr_pairs + 1,
		    sizeof(*a->pairs)))
		return -ENOMEM;
	if (mt_grow((void **)&a->pdur, &a->cap_pairs, a->nr_pairs + 1,
		    sizeof(*a->pdur)))
		return -ENOMEM;
	/* Both arrays grew to the same capacity: mt_grow_to is
	 * deterministic in need and size alone. */
	if (mt_hmap_set(&a->pair_index, key, a->nr_pairs))
		return -ENOMEM;
	a->pairs[a->nr_pairs] = (struct st_pair){caller, callee, {0}};
	memset(&a->pdur[a->nr_pairs], 0, sizeof(*a->pdur));
	*idx = (uint32_t)a->nr_pairs++;
	return 0;
}

unsigned st_bucket(uint64_t dur)
{
	return dur ? 64u - (unsigned)__builtin_clzll(dur) : 0;
}

/*
 * The path of a call of fn from the path parent (ST_NONE: a root).  A
 * path has one (caller, callee) pair, found as the path is made: the
 * first call of a pair is the first of some path, so pairs are made in
 * the order of their first calls all the same, and a call costs one
 * lookup, not two.
 */
static int path_find(struct st_agg *a, uint32_t parent, uint32_t fn,
		     uint32_t *idx)
{
	uint64_t key = (uint64_t)(parent + 1) << 32 | fn, v;
	uint32_t pair = ST_NONE;

	if (mt_hmap_find(&a->path_index, key, &v)) {
		*idx = (uint32_t)v;
		return 0;
	}
	if (parent != ST_NONE && pair_get(a, a->paths[parent].fn, fn, &pair))
		return -ENOMEM;
	if (a->nr_paths >= ST_NONE ||
	    mt_grow((void **)&a->paths, &a->cap_paths, a->nr_paths + 1,
		    sizeof(*a->paths)) ||
	    mt_grow((void **)&a->kid, &a->cap_kid, a->nr_paths + 1,
		    sizeof(*a->kid)) ||
	    mt_hmap_set(&a->path_index, key, a->nr_paths))
		return -ENOMEM;
	a->paths[a->nr_paths] = (struct st_path){parent, fn, pair, 0, 0, 0};
	/* (paths read from a database have none) */
	while (a->nr_kid <= a->nr_paths)
		a->kid[a->nr_kid++] = UINT64_MAX;
	*idx = (uint32_t)a->nr_paths++;
	return 0;
}

/* A path's calls mostly call what its last call called (a loop, the
 * same descent again): one compare before the lookup. */
static int path_get(struct st_agg *a, uint32_t parent, uint32_t fn,
		    uint32_t *idx)
{
	int rc;

	if (parent == ST_NONE || parent >= a->nr_kid)
		return path_find(a, parent, fn, idx);
	if (a->kid[parent] >> 32 == fn) {
		*idx = (uint32_t)a->kid[parent];
		return 0;
	}
	if (!(rc = path_find(a, parent, fn, idx)))
		a->kid[parent] = (uint64_t)fn << 32 | *idx;
	return rc;
}

/* Among fn's slowest when longer than the last kept: ids come in
 * increasing order, so an equal one is later and stays out. */
static void keep_top(struct st_agg *a, uint32_t fn, uint64_t dur, uint64_t id)
{
	struct st_top *t = a->top[fn];
	unsigned n = a->nr_top[fn], i;

	if (n == ST_KEPT && t[n - 1].dur >= dur)
		return;
	if (n < ST_KEPT)
		a->nr_top[fn] = (uint8_t)++n;
	for (i = n - 1; i > 0 && t[i - 1].dur < dur; i--)
		t[i] = t[i - 1];
	t[i] = (struct st_top){dur, id};
}

/* The slice on top of the stack is complete: its self time counts. */
static void close_top(struct st_agg *a)
{
	struct st_open *o = &a->stack[--a->nr_open];
	int64_t self = (int64_t)o->dur - (int64_t)o->child;

	a->fns[o->fn].self += self;
	a->paths[o->path].self += self;
	if (o->pair != ST_NONE)
		a->pairs[o->pair].fig.self += self;
}

/* The open slices down to parent (all of them when it is not open): the
 * new slice's parent, or NULL. */
static struct st_open *pop_to(struct st_agg *a, uint64_t parent)
{
	while (a->nr_open && a->stack[a->nr_open - 1].id != parent)
		close_top(a);
	return a->nr_open ? &a->stack[a->nr_open - 1] : NULL;
}

static int push_open(struct st_agg *a, struct st_open o)
{
	if (mt_grow((void **)&a->stack, &a->cap_open, a->nr_open + 1,
		    sizeof(*a->stack)))
		return -ENOMEM;
	a->stack[a->nr_open++] = o;
	return 0;
}

int st_add(struct st_agg *a, uint32_t fn, uint64_t id, uint64_t parent,
	   uint64_t dur, bool inferred)
{
	uint32_t pair = ST_NONE, path;
	struct st_open *up;

	if (fn >= a->nr_fns)
		return -EINVAL;
	up = pop_to(a, parent);
	fig_add(&a->fns[fn], dur, inferred);
	keep_top(a, fn, dur, id);
	if (!inferred) {
		if (!up && durs_add(&a->fdur[fn], dur))
			return -ENOMEM;
		a->hist[fn][st_bucket(dur)]++;
	}
	if (path_get(a, up ? up->path : ST_NONE, fn, &path))
		return -ENOMEM;
	a->paths[path].calls++;
	a->paths[path].total += dur;
	if (up) {
		up->child += dur;
		pair = a->paths[path].pair;
		fig_add(&a->pairs[pair].fig, dur, inferred);
		if (!inferred && durs_add(&a->pdur[pair], dur))
			return -ENOMEM;
	}
	return push_open(a, (struct st_open){id, fn, pair, path, dur, 0});
}

int st_add_open(struct st_agg *a, uint32_t fn, uint64_t id, uint64_t parent)
{
	uint32_t pair = ST_NONE, path;
	struct st_open *up;

	if (fn >= a->nr_fns)
		return -EINVAL;
	up = pop_to(a, parent);
	if (path_get(a, up ? up->path : ST_NONE, fn, &path))
		return -ENOMEM;
	pair = a->paths[path].pair;
	/* No time of its own here: closing it takes its children's off. */
	return push_open(a, (struct st_open){id, fn, pair, path, 0, 0});
}

static void fig_merge(struct st_fig *to, const struct st_fig *f)
{
	to->calls += f->calls;
	to->inferred += f->inferred;
	to->total += f->total;
	to->self += f->self;
	to->inferred_dur += f->inferred_dur;
}

static void durs_free(struct st_durs *d)
{
	for (size_t i = 0; i < d->nr_more; i++)
		durs_free(&d->more[i]);
	free(d->v32);
	free(d->v64);
	free(d->more);
	*d = (struct st_durs){0};
}

/* The durations d holds, its own and those in more. */
static size_t durs_count(const struct st_durs *d)
{
	size_t n = d->n;

	for (size_t i = 0; i < d->nr_more; i++)
		n += d->more[i].n;
	return n;
}

static bool durs_wide(const struct st_durs *d)
{
	bool wide = d->v64 != NULL;

	for (size_t i = 0; i < d->nr_more; i++)
		wide |= d->more[i].v64 != NULL;
	return wide;
}

/* One array of d's into more (taken from d, fitted to its count: a
 * part's arrays are held until the figures are found). */
static int durs_keep(struct st_durs *to, struct st_durs *d)
{
	size_t w = d->v64 ? sizeof(*d->v64) : sizeof(*d->v32);
	void **v = d->v64 ? (void **)&d->v64 : (void **)&d->v32;

	if (!d->n) {
		durs_free(d);
		return 0;
	}
	if (mt_grow((void **)&to->more, &to->cap_more, to->nr_more + 1,
		    sizeof(*to->more)))
		return -ENOMEM;
	if (d->cap - d->n > d->n / 8) {
		void *fit = realloc(*v, d->n * w);

		if (fit) {
			*v = fit;
			d->cap = d->n;
		}
	}
	to->more[to->nr_more++] = (struct st_durs){
		.v32 = d->v32, .v64 = d->v64, .n = d->n, .cap = d->cap};
	d->v32 = NULL;
	d->v64 = NULL;
	d->n = d->cap = 0;
	return 0;
}

/* d's durations moved to to, d left empty: no copy. */
static int durs_merge(struct st_durs *to, struct st_durs *d)
{
	int rc = 0;

	if (!to->v32 && !to->v64 && !to->nr_more) {
		free(to->more);
		*to = *d;
		*d = (struct st_durs){0};
		return 0;
	}
	for (size_t i = 0; !rc && i < d->nr_more; i++)
		rc = durs_keep(to, &d->more[i]);
	if (!rc)
		rc = durs_keep(to, d);
	durs_free(d);
	return rc;
}

static int cmp_top_id(const void *x, const void *y)
{
	const struct st_top *a = x, *b = y;

	return a->id < b->id ? -1 : a->id > b->id;
}

int st_merge(struct st_agg *a, struct st_agg *from, const uint32_t *fn_of)
{
	uint32_t *pair_of = malloc((from->nr_pairs ? from->nr_pairs : 1) *
				   sizeof(*pair_of));
	uint32_t *path_of = malloc((from->nr_paths ? from->nr_paths : 1) *
				   sizeof(*path_of));
	int rc = -ENOMEM;

	if (!pair_of || !path_of)
		goto out;
	for (uint32_t f = 0; f < from->nr_fns; f++) {
		uint32_t g = fn_of[f];
		struct st_top by_id[ST_KEPT];
		unsigned n = from->nr_top[f];

		fig_merge(&a->fns[g], &from->fns[f]);
		for (unsigned b = 0; b < ST_HIST; b++)
			a->hist[g][b] += from->hist[f][b];
		if (durs_merge(&a->fdur[g], &from->fdur[f]))
			goto out;
		/* keep_top takes calls in the order of their ids. */
		memcpy(by_id, from->top[f], n * sizeof(*by_id));
		qsort(by_id, n, sizeof(*by_id), cmp_top_id);
		for (unsigned k = 0; k < n; k++)
			keep_top(a, g, by_id[k].dur, by_id[k].id);
	}
	for (size_t i = 0; i < from->nr_pairs; i++) {
		const struct st_pair *p = &from->pairs[i];

		if (pair_get(a, fn_of[p->caller], fn_of[p->callee],
			     &pair_of[i]))
			goto out;
		fig_merge(&a->pairs[pair_of[i]].fig, &p->fig);
		if (durs_merge(&a->pdur[pair_of[i]], &from->pdur[i]))
			goto out;
	}
	/* A path's caller comes before it. */
	for (size_t i = 0; i < from->nr_paths; i++) {
		const struct st_path *p = &from->paths[i];
		struct st_path *q;

		if (path_get(a,
			     p->parent == ST_NONE ? ST_NONE
						  : path_of[p->parent],
			     fn_of[p->fn], &path_of[i]))
			goto out;
		q = &a->paths[path_of[i]];
		q->calls += p->calls;
		q->total += p->total;
		q->self += p->self;
	}
	rc = 0;
out:
	free(pair_of);
	free(path_of);
	return rc;
}

void st_end_thread(struct st_agg *a)
{
	while (a->nr_open)
		close_top(a);
}

size_t st_rank(size_t n, unsigned p)
{
	size_t r = (n * p + 99) / 100;

	return r ? r - 1 : 0;
}

/* A place in [lo, hi], from a generator of the selection's own: the
 * same every run. */
static ptrdiff_t pick(uint64_t *seed, ptrdiff_t lo, ptrdiff_t hi)
{
	*seed = *seed * 6364136223846793005u + 1442695040888963407u;
	return lo + (ptrdiff_t)((*seed >> 33) % (uint64_t)(hi - lo + 1));
}

/*
 * Hoare's selection, the pivot a median of three places picked at
 * random; for both widths.  (The first, middle and last value were a
 * poor pivot in what a selection before left: a function's durations
 * gathered after its pairs' percentiles were found took 12 times as
 * long.)  The result does not depend on the pivots.
 */
#define SELECT(NAME, T)                                                        \
	T NAME(T *v, size_t n, size_t k)                                       \
	{                                                                      \
		ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;    \
		uint64_t seed = n;                                             \
                                                                               \
		while (lo < hi) {                                              \
			ptrdiff_t i = lo, j = hi;                              \
			T x = v[pick(&seed, lo, hi)],                          \
			  y = v[pick(&seed, lo, hi)],                          \
			  z = v[pick(&seed, lo, hi)], p;                       \
                                                                               \
			p = x < y ? (y < z ? y : (x < z ? z : x))              \
				  : (x < z ? x : (y < z ? z : y));             \
			while (i <= j) {                                       \
				while (v[i] < p)                               \
					i++;                                   \
				while (v[j] > p)                               \
					j--;                                   \
				if (i <= j) {                                  \
					T t = v[i];                            \
                                                                               \
					v[i++] = v[j];                         \
					v[j--] = t;                            \
				}                                              \
			}                                                      \
			if (kk <= j)                                           \
				hi = j;                                        \
			else if (kk >= i)                                      \
				lo = i;                                        \
			else                                                   \
				break;                                         \
		}                                                              \
		return v[k];                                                   \
	}
SELECT(st_select, uint64_t)
SELECT(st_select32, uint32_t)

/* p50, p90, p99 of v[0..n) in turn, each in the part the one before
 * left above it, and the largest, above them all. */
static void percentiles(struct st_fig *f, uint32_t *v32, uint64_t *v64,
			size_t n)
{
	const unsigned ps[3] = {50, 90, 99};
	uint64_t *out[3] = {&f->p50, &f->p90, &f->p99};
	size_t base = 0;

	if (!n)
		return;
	for (int i = 0; i < 3; i++) {
		size_t k = st_rank(n, ps[i]);

		*out[i] = v64 ? st_select(v64 + base, n - base, k - base)
			      : st_select32(v32 + base, n - base, k - base);
		base = k;
	}
	f->max = 0;
	for (size_t i = base; i < n; i++) {
		uint64_t x = v64 ? v64[i] : v32[i];

		f->max = x > f->max ? x : f->max;
	}
}

/* One function's figures: its calls with no caller, then each of its
 * pairs' (by_fn[0..nr)), gathered into one array as the arrays they
 * were in are freed. */
struct fn_job {
	struct st_agg *a;
	uint32_t fn;
	const uint32_t *by_fn;
	size_t nr;
	size_t n; /* durations in all */
};

/*
 * The functions gathered at once hold no more durations than the
 * largest one: an array freed as it is gathered mostly stays in its
 * thread's heap, so the copies in flight add to what the process holds
 * (the largest functions side by side raised the bench capture's peak by
 * 57 MB).  The largest goes first, alone.
 */
struct fn_gate {
	pthread_mutex_t lock;
	pthread_cond_t room;
	size_t held, most;
};

static void gate_enter(struct fn_gate *g, size_t n)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	while (g->held && g->held + n > g->most)
		pthread_cond_wait(&g->room, &g->lock);
	g->held += n;
	pthread_mutex_unlock(&g->lock);
}

static void gate_leave(struct fn_gate *g, size_t n)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->held -= n;
	pthread_cond_broadcast(&g->room);
	pthread_mutex_unlock(&g->lock);
}

/* d's durations after the all.n there are (all has room, and is wide
 * when d is); d freed. */
static void gather(struct st_durs *all, struct st_durs *d)
{
	for (size_t i = 0; i < d->nr_more; i++)
		gather(all, &d->more[i]);
	if (all->v64) {
		for (size_t i = 0; i < d->n; i++)
			all->v64[all->n + i] = d->v64 ? d->v64[i] : d->v32[i];
	} else if (d->n) {
		memcpy(all->v32 + all->n, d->v32, d->n * sizeof(*d->v32));
	}
	all->n += d->n;
	durs_free(d);
}

static int fn_figures(void *ctx, unsigned worker, void *job)
{
	struct fn_job *j = job;
	struct st_agg *a = j->a;
	bool wide = durs_wide(&a->fdur[j->fn]);
	size_t n = j->n ? j->n : 1;
	struct st_durs all = {0};

	(void)worker;
	for (size_t k = 0; k < j->nr; k++)
		wide |= durs_wide(&a->pdur[j->by_fn[k]]);
	gate_enter(ctx, j->n);
	if (wide ? !(all.v64 = malloc(n * sizeof(*all.v64)))
		 : !(all.v32 = malloc(n * sizeof(*all.v32)))) {
		gate_leave(ctx, j->n);
		return -ENOMEM;
	}
	gather(&all, &a->fdur[j->fn]);
	/* A pair's percentiles in its place, then the function's over the
	 * whole: the values are the same, in another order. */
	for (size_t k = 0; k < j->nr; k++) {
		size_t from = all.n;
		uint32_t p = j->by_fn[k];

		gather(&all, &a->pdur[p]);
		percentiles(&a->pairs[p].fig, all.v32 ? all.v32 + from : NULL,
			    all.v64 ? all.v64 + from : NULL, all.n - from);
	}
	percentiles(&a->fns[j->fn], all.v32, all.v64, all.n);
	free(all.v32);
	free(all.v64);
	gate_leave(ctx, j->n);
	return 0;
}

/* The largest first: the last to end starts first. */
static int cmp_job_n(const void *x, const void *y)
{
	const struct fn_job *a = x, *b = y;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return a->fn < b->fn ? -1 : a->fn > b->fn;
}

int st_finish(struct st_agg *a, unsigned workers)
{
	/* The pairs by callee: by_fn[start[f] .. start[f + 1]). */
	size_t *start = calloc((size_t)a->nr_fns + 1, sizeof(*start));
	uint32_t *by_fn =
		malloc((a->nr_pairs ? a->nr_pairs : 1) * sizeof(*by_fn));
	struct fn_job *jobs =
		malloc((a->nr_fns ? a->nr_fns : 1) * sizeof(*jobs));
	struct fn_gate gate = {.held = 0};
	bool have_gate = false;
	int rc = -ENOMEM;

	st_end_thread(a);
	if (!start || !by_fn || !jobs)
		goto out;
	for (size_t i = 0; i < a->nr_pairs; i++)
		start[a->pairs[i].callee + 1]++;
	for (uint32_t f = 0; f < a->nr_fns; f++)
		start[f + 1] += start[f];
	for (size_t i = 0; i < a->nr_pairs; i++)
		by_fn[start[a->pairs[i].callee]++] = (uint32_t)i;
	/* start[f] is now where f + 1's pairs begin. */
	for (uint32_t f = 0; f < a->nr_fns; f++) {
		struct fn_job *j = &jobs[f];

		*j = (struct fn_job){.a = a, .fn = f};
		j->by_fn = by_fn + (f ? start[f - 1] : 0);
		j->nr = start[f] - (f ? start[f - 1] : 0);
		j->n = durs_count(&a->fdur[f]);
		for (size_t k = 0; k < j->nr; k++)
			j->n += durs_count(&a->pdur[j->by_fn[k]]);
	}
	qsort(jobs, a->nr_fns, sizeof(*jobs), cmp_job_n);
	if (workers > 1 && a->nr_fns > 1) {
		gate.most = jobs[0].n;
		if (pthread_mutex_init(&gate.lock, NULL)) {
			rc = -ENOMEM;
			goto out;
		}
		if (pthread_cond_init(&gate.room, NULL)) {
			pthread_mutex_destroy(&gate.lock);
			rc = -ENOMEM;
			goto out;
		}
		have_gate = true;
	}
	rc = mt_pool_each(workers, fn_figures, NULL, have_gate ? &gate : NULL,
			  jobs, a->nr_fns, sizeof(*jobs));
out:
	if (have_gate) {
		pthread_cond_destroy(&gate.room);
		pthread_mutex_destroy(&gate.lock);
	}
	free(jobs);
	free(start);
	free(by_fn);
	return rc;
}

void st_drop_durs(struct st_agg *a)
{
	for (uint32_t i = 0; a->fdur && i < a->nr_fns; i++)
		durs_free(&a->fdur[i]);
	for (size_t i = 0; a->pdur && i < a->nr_pairs; i++)
		durs_free(&a->pdur[i]);
}

void st_free(struct st_agg *a)
{
	st_drop_durs(a);
	free(a->fns);
	free(a->fdur);
	free(a->hist);
	free(a->top);
	free(a->nr_top);
	free(a->paths);
	free(a->kid);
	mt_hmap_free(&a->path_index);
	free(a->pairs);
	free(a->pdur);
	free(a->stack);
	mt_hmap_free(&a->pair_index);
	memset(a, 0, sizeof(*a));
}
