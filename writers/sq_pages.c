/* SPDX-License-Identifier: MIT */
/*
 * The slice table and its two indexes, written as the pages SQLite lays
 * out (btree.c) into the file SQLite has written the schema and the small
 * tables into and closed: rows and index entries come in key order, so
 * no sort and no b-tree descent is needed (docs/writers.md has the
 * figures).  Each tree is built in ranges of rows that do not depend on
 * the number of threads, side by side, and joined in order: the file is
 * the same for any number.
 */
#include "writers/sq_internal.h"

#include "util/util.h"
#include "writers/btree_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An open ancestor in a walk of a thread's slices, and its last child
 * seen so far. */
struct open_slice {
	uint32_t slice, last;
};

/*
 * Links each slice of a thread to its next sibling, MT_NONE after the
 * last, in one pass with the stack of open ancestors.  This holds only
 * for a depth-first walk, in which a slice's parent is always open;
 * -EINVAL if the thread is not one.
 */
static int sibling_links(const struct mt_slice *sl, size_t n, uint32_t *next,
			 struct open_slice **stack, size_t *cap)
{
	size_t sp = 0;

	for (size_t j = 0; j < n; j++) {
		uint32_t p = sl[j].parent;

		next[j] = MT_NONE;
		if (p == MT_NONE) {
			sp = 0;
		} else {
			while (sp && (*stack)[sp - 1].slice != p)
				sp--;
			if (!sp)
				return -EINVAL;
			if ((*stack)[sp - 1].last != MT_NONE)
				next[(*stack)[sp - 1].last] = (uint32_t)j;
			(*stack)[sp - 1].last = (uint32_t)j;
		}
		if (mt_grow((void **)stack, cap, sp + 1, sizeof(**stack)))
			return -ENOMEM;
		(*stack)[sp++] = (struct open_slice){(uint32_t)j, MT_NONE};
	}
	return 0;
}

/*
 * A thread's children grouped by parent in id order, for a thread that
 * is not a depth-first walk (the model promises it is): a counting sort
 * into kids; the number of them in *nr.
 */
static int group_by_parent(const struct mt_slice *sl, size_t n, uint32_t *kids,
			   size_t *nr)
{
	uint32_t *start = calloc(n + 1, sizeof(*start));

	if (!start)
		return -ENOMEM;
	/* start[p + 1] counts p's children, then start[p] is where they
	 * begin in kids. */
	for (size_t j = 0; j < n; j++)
		if (sl[j].parent != MT_NONE)
			start[sl[j].parent + 1]++;
	for (size_t p = 0; p < n; p++)
		start[p + 1] += start[p];
	*nr = 0;
	for (size_t j = 0; j < n; j++)
		if (sl[j].parent != MT_NONE) {
			kids[start[sl[j].parent]++] = (uint32_t)j;
			(*nr)++;
		}
	free(start);
	return 0;
}

static int parent_entry(struct bt_tree *bt, uint64_t parent, uint64_t id)
{
	int64_t v[2] = {(int64_t)parent, (int64_t)id};

	return bt_entry(bt, v, 0, 2);
}

/*
 * slice_parent: (parent_id, id).  Roots (a NULL parent) come first, all
 * threads' in id order; then each thread's children, parent by parent.
 * In a depth-first walk a parent's first child is the slice after it and
 * the others follow by sibling links, kept in next: a word per slice,
 * made once slice_raw is written (whose ranges find each slice's frame
 * again rather than keep it), so that the index costs no memory beyond
 * them.
 */
static int fill_parent_index(struct sq *w, struct bt_tree *bt, uint32_t *next)
{
	const struct mt_trace *t = w->t;
	struct open_slice *stack = NULL;
	size_t cap = 0;
	uint64_t base = 0;
	int rc = 0;

	for (size_t ti = 0; ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];

		for (size_t j = 0; !rc && j < th->nr_slices; j++)
			if (th->slices[j].parent == MT_NONE) {
				int64_t v[2] = {0, (int64_t)(base + j)};

				rc = bt_entry(bt, v, 1, 2);
			}
		base += th->nr_slices;
	}
	base = 0;
	for (size_t ti = 0; !rc && ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];
		const struct mt_slice *sl = th->slices;
		size_t n = th->nr_slices, nr;

		rc = sibling_links(sl, n, next, &stack, &cap);
		if (!rc) {
			for (size_t p = 0; !rc && p + 1 < n; p++)
				for (uint32_t c = sl[p + 1].parent == p
							  ? (uint32_t)p + 1
							  : MT_NONE;
				     !rc && c != MT_NONE; c = next[c])
					rc = parent_entry(bt, base + p,
							  base + c);
		} else if (rc == -EINVAL) {
			rc = group_by_parent(sl, n, next, &nr);
			for (size_t k = 0; !rc && k < nr; k++)
				rc = parent_entry(bt, base + sl[next[k]].parent,
						  base + next[k]);
		}
		base += n;
	}
	free(stack);
	return rc;
}

/* The trees SQLite left empty, in this order. */
static const char *const tree_names[] = {"slice_raw", "slice_track_ts",
					 "slice_parent"};
_Static_assert(sizeof(tree_names) / sizeof(*tree_names) == SQ_NR_TREES,
	       "one root per tree");

int sq_read_roots(struct sq *w, uint32_t *roots)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(w->db,
			       "SELECT rootpage FROM sqlite_schema"
			       " WHERE name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return sq_fail_db(w, "preparing");
	for (size_t i = 0; !rc && i < SQ_NR_TREES; i++) {
		sqlite3_bind_text(st, 1, tree_names[i], -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			roots[i] = (uint32_t)sqlite3_column_int64(st, 0);
		else
			rc = sq_fail_db(w, "reading the schema");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Rows (or entries) of a range: fixed, so that the pages are the same
 * for any number of threads.  A range's pages are held until joined:
 * about 1.8 MB of slice_raw. */
#define SQ_RANGE      ((uint64_t)1 << 16)
#define SQ_KEEP_BYTES ((size_t)4 << 20)

/* The jobs, in the order of the trees' leaves in the file. */
enum {
	SQ_TREE_ROWS,	  /* slice_raw's ranges */
	SQ_TREE_TRACK_TS, /* slice_track_ts's */
	SQ_TREE_PARENT,	  /* slice_parent's */
	SQ_LINKS,	  /* slice_parent's sibling links, by block of ids */
};

/* What the jobs share; read only while they are worked, written only as
 * they finish. */
struct sq_plan {
	struct sq *w;
	struct bt_file *f;
	uint64_t *base;	    /* by thread: its first slice id; then the end */
	uint32_t **order;   /* by thread: its slices by start, when they are
			       not in order already, else NULL */
	uint64_t nr_ranges; /* of the first two trees; blocks of ids */
	/*
	 * slice_parent's entries by block of SQ_RANGE ids: the roots in it
	 * (unit b), the children of the parents in it (unit nr_ranges + b),
	 * and the ranges cut between units, each range_end[r] its end.
	 */
	uint64_t *unit_entries;
	uint64_t *range_end;
	uint64_t nr_parent_ranges;
	bool not_walk; /* a thread is no depth-first walk */
	struct bt_tree trees[SQ_TREE_PARENT + 1]; /* the ranges joined */
	int (*before_links)(void *ctx);
	void *links_ctx;
};

/* One job: rows (or entries, or units, or ids) first .. end - 1 of one
 * tree. */
struct range_job {
	struct sq_plan *p;
	unsigned kind; /* SQ_TREE_*, SQ_LINKS */
	uint64_t first, end, nr;
	struct bt_tree bt;
	uint64_t *kids; /* SQ_LINKS: children by block of their parent */
	uint64_t roots;
	bool not_walk;
};

/* The thread the row (or entry) at pos is of: the last whose base is
 * at or before it. */
static size_t thread_at(const struct sq_plan *p, uint64_t pos)
{
	size_t lo = 0, hi = p->w->t->nr_threads;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->base[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * slice_raw's rows first .. end - 1, in id order, which is its rowid
 * order.  Columns as in the schema: id (the rowid, stored as NULL), ts,
 * dur, track_id, depth, parent_id, frame_id, segment.
 */
static int fill_slice_rows(const struct sq_plan *p, struct bt_tree *bt,
			   uint64_t first, uint64_t end)
{
	const struct mt_trace *t = p->w->t;
	size_t ti = thread_at(p, first);
	uint64_t id = first;
	/* The frames found again, not kept a slice: 4 bytes a slice less
	 * while the function figures are summed beside. */
	struct frame_memo memo[SQ_MEMO];
	int rc = 0;

	for (size_t i = 0; i < SQ_MEMO; i++)
		memo[i].id = UINT32_MAX;
	for (; !rc && id < end; ti++) {
		const struct mt_thread *th = &t->threads[ti];
		uint64_t base = p->base[ti];
		uint64_t stop = p->base[ti + 1] < end ? p->base[ti + 1] : end;

		for (; !rc && id < stop; id++) {
			const struct mt_slice *s = &th->slices[id - base];
			int root_slice = s->parent == MT_NONE;
			uint32_t f = sq_frame_id(p->w, s, memo);
			int64_t v[8] = {
				0,
				(int64_t)s->ts,
				(int64_t)s->dur,
				(int64_t)ti,
				s->depth,
				root_slice ? 0 : (int64_t)(base + s->parent),
				f,
				s->segment,
			};
			uint32_t nulls = 1u | (uint32_t)root_slice << 5 |
					 (uint32_t)(s->segment == MT_NONE) << 7;

			/* The pass over the slices made every frame. */
			rc = f == UINT32_MAX
				     ? -EINVAL
				     : bt_row(bt, (int64_t)id, v, nulls, 8);
		}
	}
	return rc;
}

/*
 * slice_track_ts's entries first .. end - 1: (track_id, ts, id).  Ids
 * are in thread order, and in a thread in pre-order, which is start
 * order: entry k is slice k's.  A thread whose starts are not in order
 * (the model promises they are) has its order sorted beforehand.
 */
static int fill_track_index(const struct sq_plan *p, struct bt_tree *bt,
			    uint64_t first, uint64_t end)
{
	const struct mt_trace *t = p->w->t;
	size_t ti = thread_at(p, first);
	uint64_t pos = first;
	int rc = 0;

	for (; !rc && pos < end; ti++) {
		const struct mt_slice *sl = t->threads[ti].slices;
		const uint32_t *order = p->order[ti];
		uint64_t base = p->base[ti];
		uint64_t stop = p->base[ti + 1] < end ? p->base[ti + 1] : end;

		for (; !rc && pos < stop; pos++) {
			size_t k = order ? order[pos - base] : pos - base;
			int64_t v[3] = {(int64_t)ti, (int64_t)sl[k].ts,
					(int64_t)(base + k)};

			rc = bt_entry(bt, v, 0, 3);
		}
	}
	return rc;
}

/* A slice's start, as SQLite orders it (signed), and its index. */
struct ts_idx {
	int64_t ts;
	size_t j;
};

static int ts_idx_cmp(const void *a, const void *b)
{
	const struct ts_idx *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

/* The order of a thread's slices by start, for one whose slices are not
 * in it. */
static int sort_thread(const struct mt_thread *th, uint32_t **order)
{
	size_t n = th->nr_slices;
	struct ts_idx *by_ts = malloc(n * sizeof(*by_ts));

	*order = malloc(n * sizeof(**order));
	if (!by_ts || !*order) {
		free(by_ts);
		return -ENOMEM;
	}
	for (size_t j = 0; j < n; j++)
		by_ts[j] = (struct ts_idx){(int64_t)th->slices[j].ts, j};
	qsort(by_ts, n, sizeof(*by_ts), ts_idx_cmp);
	for (size_t j = 0; j < n; j++)
		(*order)[j] = (uint32_t)by_ts[j].j;
	free(by_ts);
	return 0;
}

static int plan_start(struct sq_plan *p, struct sq *w, struct bt_file *f,
		      const uint32_t *roots)
{
	const struct mt_trace *t = w->t;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	p->w = w;
	p->f = f;
	p->base = malloc((t->nr_threads + 1) * sizeof(*p->base));
	p->order = calloc(t->nr_threads + 1, sizeof(*p->order));
	if (!p->base || !p->order)
		return -ENOMEM;
	p->base[0] = 0;
	for (size_t ti = 0; ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];

		p->base[ti + 1] = p->base[ti] + th->nr_slices;
		if (!rc && w->ts_unsorted[ti])
			rc = sort_thread(th, &p->order[ti]);
	}
	p->nr_ranges = (w->nr_slices + SQ_RANGE - 1) / SQ_RANGE;
	p->unit_entries = calloc(2 * p->nr_ranges + 1, sizeof(uint64_t));
	p->range_end = calloc(2 * p->nr_ranges + 1, sizeof(uint64_t));
	if (!p->unit_entries || !p->range_end)
		rc = -ENOMEM;
	for (unsigned i = 0; !rc && i <= SQ_TREE_PARENT; i++)
		rc = bt_begin(&p->trees[i], f, i != SQ_TREE_ROWS, roots[i]);
	return rc;
}

static void plan_free(struct sq_plan *p)
{
	for (size_t ti = 0; p->order && ti < p->w->t->nr_threads; ti++)
		free(p->order[ti]);
	free(p->order);
	free(p->base);
	free(p->unit_entries);
	free(p->range_end);
	for (unsigned i = 0; i <= SQ_TREE_PARENT; i++)
		bt_free(&p->trees[i]);
}

/*
 * The sibling links of the slices in a block of ids, into the frames'
 * words (set to MT_NONE before), and its counts: the roots in it, and
 * the children of the parents in each block.  A slice's previous
 * sibling is the child of its parent that the slice before it is or
 * descends from: found going up from there, which takes as many steps
 * in all as the walk's stack would pop.  Not finding the parent there
 * means the thread is no depth-first walk.
 */
static int link_block(const struct sq_plan *p, struct range_job *j)
{
	const struct mt_trace *t = p->w->t;
	uint32_t *next = p->w->next_sib;
	size_t ti = thread_at(p, j->first);
	uint64_t id = j->first;

	j->kids = calloc(p->nr_ranges, sizeof(*j->kids));
	if (!j->kids)
		return -ENOMEM;
	for (; id < j->end; ti++) {
		const struct mt_slice *sl = t->threads[ti].slices;
		uint64_t base = p->base[ti];
		uint64_t stop =
			p->base[ti + 1] < j->end ? p->base[ti + 1] : j->end;

		for (; id < stop; id++) {
			uint32_t c = (uint32_t)(id - base), par = sl[c].parent;
			uint32_t x = c - 1;

			if (par == MT_NONE) {
				j->roots++;
				continue;
			}
			j->kids[(base + par) / SQ_RANGE]++;
			/* parent < c (sq_write_frames): x only goes down. */
			while (x != par && sl[x].parent != par) {
				x = sl[x].parent;
				if (x == MT_NONE) {
					j->not_walk = true;
					return 0;
				}
			}
			/* In a walk each slice has one next sibling; in a
			 * thread that is none two blocks may name one
			 * (and the links are not used). */
			if (x != par)
				__atomic_store_n(&next[base + x], c,
						 __ATOMIC_RELAXED);
		}
	}
	return 0;
}

/* slice_parent's entries of units first .. end - 1, in order: roots by
 * id, then children by parent and id (the first child of a parent is
 * the slice after it, the others follow by sibling links). */
static int fill_parent_units(const struct sq_plan *p, struct bt_tree *bt,
			     uint64_t first, uint64_t end)
{
	const struct mt_trace *t = p->w->t;
	const uint32_t *next = p->w->next_sib;
	uint64_t n = p->w->nr_slices;
	int rc = 0;

	for (uint64_t u = first; !rc && u < end; u++) {
		int kids = u >= p->nr_ranges;
		uint64_t b = kids ? u - p->nr_ranges : u;
		uint64_t id = b * SQ_RANGE;
		uint64_t stop = id + SQ_RANGE < n ? id + SQ_RANGE : n;
		size_t ti = thread_at(p, id);

		for (; !rc && id < stop; ti++) {
			const struct mt_slice *sl = t->threads[ti].slices;
			uint64_t base = p->base[ti];
			uint64_t tend =
				p->base[ti + 1] < stop ? p->base[ti + 1] : stop;
			uint32_t nr = (uint32_t)(p->base[ti + 1] - base);

			for (; !rc && id < tend; id++) {
				uint32_t k = (uint32_t)(id - base), c;

				if (!kids) {
					int64_t v[2] = {0, (int64_t)id};

					if (sl[k].parent == MT_NONE)
						rc = bt_entry(bt, v, 1, 2);
					continue;
				}
				c = k + 1 < nr && sl[k + 1].parent == k
					    ? k + 1
					    : MT_NONE;
				for (; !rc && c != MT_NONE; c = next[base + c])
					rc = parent_entry(bt, id, base + c);
			}
		}
	}
	return rc;
}

/* A range's leaves, into memory, on any thread; or a block's links. */
/* Another range of the job's tree follows it. */
static int range_more(const struct sq_plan *p, const struct range_job *j)
{
	return j->kind == SQ_TREE_PARENT ? j->end < 2 * p->nr_ranges
					 : j->end < p->w->nr_slices;
}

/* The job's rows or entries into bt, and the range's end. */
static int range_fill(const struct sq_plan *p, const struct range_job *j,
		      struct bt_tree *bt)
{
	int rc;

	switch (j->kind) {
	case SQ_TREE_ROWS:
		rc = fill_slice_rows(p, bt, j->first, j->end);
		break;
	case SQ_TREE_TRACK_TS:
		rc = fill_track_index(p, bt, j->first, j->end);
		break;
	default:
		rc = fill_parent_units(p, bt, j->first, j->end);
	}
	return rc ? rc : bt_range_end(bt);
}

static int range_work(void *ctx, unsigned worker, void *job)
{
	struct range_job *j = job;
	const struct sq_plan *p = ctx;
	int rc;

	(void)worker;
	if (j->kind == SQ_LINKS)
		return link_block(p, j);
	rc = bt_range_begin(&j->bt, p->f, j->kind != SQ_TREE_ROWS,
			    range_more(p, j), j->nr);
	return rc ? rc : range_fill(p, j, &j->bt);
}

/* A range's leaves into the file, after the ranges before it; a block's
 * counts into the plan. */
static int range_finish(void *ctx, void *job)
{
	struct sq_plan *p = ctx;
	struct range_job *j = job;
	int rc = 0;

	if (j->kind == SQ_LINKS) {
		uint64_t b = j->first / SQ_RANGE;

		p->unit_entries[b] = j->roots;
		for (uint64_t k = 0; k <= b; k++)
			p->unit_entries[p->nr_ranges + k] += j->kids[k];
		p->not_walk |= j->not_walk;
	} else {
		rc = bt_join(&p->trees[j->kind], &j->bt);
		/* Kept for the next range in the slot, unless it is one of
		 * the few far larger (a parent's children all in one). */
		if (j->bt.own.mem_cap > SQ_KEEP_BYTES)
			bt_free(&j->bt);
	}
	free(j->kids);
	j->kids = NULL;
	return rc;
}

/* On one thread, a range goes straight into its tree, with no copy:
 * the same pages. */
static int range_direct(struct sq_plan *p, struct range_job *j)
{
	struct bt_tree *bt = &p->trees[j->kind];
	int rc;

	if (j->kind == SQ_LINKS) {
		rc = link_block(p, j);
		return rc ? rc : range_finish(p, j);
	}
	rc = bt_range_start(bt, range_more(p, j), j->nr);
	return rc ? rc : range_fill(p, j, bt);
}

/* Job r of a kind: what it covers.  Its tree keeps the buffers of the
 * job before it in the slot. */
static void job_at(struct sq_plan *p, struct range_job *j, unsigned kind,
		   uint64_t r)
{
	free(j->kids);
	*j = (struct range_job){.p = p, .kind = kind, .bt = j->bt};
	if (kind == SQ_TREE_PARENT) {
		j->first = r ? p->range_end[r - 1] : 0;
		j->end = p->range_end[r];
		for (uint64_t u = j->first; u < j->end; u++)
			j->nr += p->unit_entries[u];
		return;
	}
	j->first = r * SQ_RANGE;
	j->end = r + 1 < p->nr_ranges ? (r + 1) * SQ_RANGE : p->w->nr_slices;
	j->nr = j->end - j->first;
}

/*
 * Jobs of the kinds given, nr[i] of kind kinds[i], worked on jobs
 * threads when there are more than one and finished in this order.
 * Jobs ahead of the oldest one not finished: one a thread and 2 more,
 * a range's pages each.
 */
static int run_jobs(struct sq_plan *p, unsigned jobs, const unsigned *kinds,
		    const uint64_t *nr, size_t nr_kinds)
{
	unsigned depth = jobs + 2;
	unsigned nr_slots = jobs > 1 ? depth + 1 : 1;
	struct range_job *slots = calloc(nr_slots, sizeof(*slots));
	struct mt_pool *pool = NULL;
	uint64_t k = 0;
	int rc;

	if (!slots)
		return -ENOMEM;
	rc = jobs > 1 ? mt_pool_start(&pool, jobs, range_work, range_finish, p,
				      depth)
		      : 0;
	for (size_t i = 0; !rc && i < nr_kinds; i++)
		for (uint64_t r = 0; !rc && r < nr[i]; r++, k++) {
			struct range_job *j = &slots[k % nr_slots];

			job_at(p, j, kinds[i], r);
			rc = pool ? mt_pool_put(pool, j) : range_direct(p, j);
		}
	if (pool) {
		int prc = mt_pool_end(pool);

		if (!rc)
			rc = prc;
	}
	for (unsigned i = 0; i < nr_slots; i++) {
		free(slots[i].kids);
		bt_free(&slots[i].bt);
	}
	free(slots);
	return rc;
}

/*
 * slice_parent's ranges: units taken in order until a range has
 * SQ_RANGE entries or more; the last one takes what is left.  Then
 * every range but the last has 2 entries or more, as a range of an
 * index that another follows must.
 */
static void cut_parent_ranges(struct sq_plan *p)
{
	uint64_t nr_units = 2 * p->nr_ranges, in = 0;

	p->nr_parent_ranges = 0;
	for (uint64_t u = 0; u < nr_units; u++) {
		in += p->unit_entries[u];
		if (in >= SQ_RANGE) {
			p->range_end[p->nr_parent_ranges++] = u + 1;
			in = 0;
		}
	}
	if (in) {
		p->range_end[p->nr_parent_ranges++] = nr_units;
	} else if (p->nr_parent_ranges) {
		/* Units without entries at the end go with the last. */
		p->range_end[p->nr_parent_ranges - 1] = nr_units;
	}
}

/*
 * The three trees' leaves: slice_raw's and slice_track_ts's ranges,
 * then, once slice_raw's no longer need the frames' words, the sibling
 * links in them, block by block, then slice_parent's ranges.  A thread
 * that is no depth-first walk (the model promises none is) has
 * slice_parent written on this thread instead.
 */
static int build_leaves(struct sq_plan *p, unsigned jobs)
{
	unsigned kinds[2] = {SQ_TREE_ROWS, SQ_TREE_TRACK_TS};
	uint64_t nr[2] = {p->nr_ranges, p->nr_ranges};
	int rc = run_jobs(p, jobs, kinds, nr, 2);

	if (rc)
		return rc;
	/* The sibling links, only now: slice_raw found its frames
	 * again. */
	if (p->before_links && (rc = p->before_links(p->links_ctx)))
		return rc;
	if (p->w->nr_slices > SIZE_MAX / sizeof(uint32_t) ||
	    !(p->w->next_sib = malloc((p->w->nr_slices ? p->w->nr_slices : 1) *
				      sizeof(uint32_t))))
		return -ENOMEM;
	memset(p->w->next_sib, 0xff, p->w->nr_slices * sizeof(uint32_t));
	kinds[0] = SQ_LINKS;
	rc = run_jobs(p, jobs, kinds, nr, 1);
	if (rc)
		return rc;
	if (p->not_walk)
		return fill_parent_index(p->w, &p->trees[SQ_TREE_PARENT],
					 p->w->next_sib);
	cut_parent_ranges(p);
	kinds[0] = SQ_TREE_PARENT;
	nr[0] = p->nr_parent_ranges;
	return run_jobs(p, jobs, kinds, nr, 1);
}

/*
 * The slice table and its indexes, into the file SQLite has closed:
 * slice_raw's leaves and slice_track_ts's, built in ranges side by side
 * (build_ranges), then slice_parent's, read off the sibling links that
 * take the frames' words once slice_raw is written; then the interior
 * pages of the three.
 */
int sq_write_trees(struct sq *w, const char *tmp, const uint32_t *roots,
		   int (*before_links)(void *ctx), void *ctx)
{
	struct sq_plan p;
	struct bt_file f;
	/* (the bench capture's slice table and indexes: 59 bytes a
	 * slice) */
	int rc = bt_open(&f, tmp, w->nr_slices * 60);

	if (rc)
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	rc = plan_start(&p, w, &f, roots);
	p.before_links = before_links;
	p.links_ctx = ctx;
	if (!rc)
		rc = build_leaves(&p, w->jobs);
	for (unsigned i = 0; !rc && i <= SQ_TREE_PARENT; i++)
		rc = bt_end_leaves(&p.trees[i]);
	for (unsigned i = 0; !rc && i <= SQ_TREE_PARENT; i++)
		rc = bt_levels(&p.trees[i]);
	plan_free(&p);
	if (rc) {
		bt_close(&f, 1, NULL);
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	}
	rc = bt_close(&f, 0, &w->write_s);
	if (rc)
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	return 0;
}
