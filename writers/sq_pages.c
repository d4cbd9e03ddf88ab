/* SPDX-License-Identifier: MIT */
/*
 * The slice table and its two indexes, written as the pages SQLite lays
 * out (btree.c) into the file SQLite has written the schema and the small
 * tables into and closed: rows and index entries come in key order, so
 * no sort and no b-tree descent is needed (docs/writers.md has the
 * figures).
 */
#include "writers/sq_internal.h"

#include "util/util.h"
#include "writers/btree_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * slice_raw: one row per slice in id order, which is its rowid order.
 * Columns as in the schema: id (the rowid, stored as NULL), ts, dur,
 * track_id, depth, parent_id, frame_id, segment.
 */
static int fill_slice_rows(struct sq *w, struct bt_tree *bt)
{
	const struct mt_trace *t = w->t;
	uint64_t id = 0;
	int rc = 0;

	for (size_t ti = 0; !rc && ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];
		uint64_t base = id;

		for (size_t j = 0; !rc && j < th->nr_slices; j++, id++) {
			const struct mt_slice *s = &th->slices[j];
			int root_slice = s->parent == MT_NONE;
			int64_t v[8] = {
				0,
				(int64_t)s->ts,
				(int64_t)s->dur,
				(int64_t)ti,
				s->depth,
				root_slice ? 0 : (int64_t)(base + s->parent),
				w->frame_of[id],
				s->segment,
			};
			uint32_t nulls = 1u | (uint32_t)root_slice << 5 |
					 (uint32_t)(s->segment == MT_NONE) << 7;

			rc = bt_row(bt, (int64_t)id, v, nulls, 8);
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

/*
 * slice_track_ts: (track_id, ts, id).  Ids are in thread order, and in a
 * thread in pre-order, which is start order: the entries come in the
 * table's order.  A thread whose starts are not in order (the model
 * promises they are) is sorted rather than trusted.
 */
static int fill_track_index(struct sq *w, struct bt_tree *bt)
{
	const struct mt_trace *t = w->t;
	struct ts_idx *order = NULL;
	uint64_t base = 0;
	int rc = 0;

	for (size_t ti = 0; !rc && ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];
		const struct mt_slice *sl = th->slices;
		size_t n = th->nr_slices, j = 1;

		while (j < n && (int64_t)sl[j - 1].ts <= (int64_t)sl[j].ts)
			j++;
		if (j < n) {
			order = malloc(n * sizeof(*order));
			if (!order) {
				rc = -ENOMEM;
				break;
			}
			for (j = 0; j < n; j++)
				order[j] =
					(struct ts_idx){(int64_t)sl[j].ts, j};
			qsort(order, n, sizeof(*order), ts_idx_cmp);
		}
		for (j = 0; !rc && j < n; j++) {
			size_t k = order ? order[j].j : j;
			int64_t v[3] = {(int64_t)ti, (int64_t)sl[k].ts,
					(int64_t)(base + k)};

			rc = bt_entry(bt, v, 0, 3);
		}
		free(order);
		order = NULL;
		base += n;
	}
	return rc;
}

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
 * the others follow by sibling links, kept in next: the words per slice
 * that held the frames (slice_raw is written: they are free), so that
 * the index costs no memory beyond them.
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

/* One of the trees: its leaves in a run of pages from first on (0: a
 * dry run, which counts them), on a thread of its own or not. */
struct tree_job {
	struct sq *w;
	struct bt_file *f;
	unsigned which; /* SQ_TREE_* */
	uint32_t root, first;
	uint32_t *next; /* the parent index's sibling links */
	struct bt_tree bt;
	int rc;
	pthread_t th;
	bool threaded;
};

enum { SQ_TREE_ROWS, SQ_TREE_TRACK_TS, SQ_TREE_PARENT };

static void *tree_run(void *arg)
{
	struct tree_job *j = arg;

	j->rc = bt_begin_run(&j->bt, j->f, j->which != SQ_TREE_ROWS, j->root,
			     j->first);
	if (!j->rc) {
		switch (j->which) {
		case SQ_TREE_ROWS:
			j->rc = fill_slice_rows(j->w, &j->bt);
			break;
		case SQ_TREE_TRACK_TS:
			j->rc = fill_track_index(j->w, &j->bt);
			break;
		default:
			j->rc = fill_parent_index(j->w, &j->bt, j->next);
		}
	}
	if (!j->rc)
		j->rc = bt_end_leaves(&j->bt);
	return NULL;
}

/* A tree on a thread of its own, or on this one when none can be had. */
static void tree_start(struct tree_job *j)
{
	j->threaded = !pthread_create(&j->th, NULL, tree_run, j);
	if (!j->threaded)
		tree_run(j);
}

static int tree_wait(struct tree_job *j)
{
	if (j->threaded)
		pthread_join(j->th, NULL);
	j->threaded = false;
	return j->rc;
}

/*
 * The three trees' leaves side by side: slice_raw's from the end of the
 * file on, slice_track_ts's after them and slice_parent's after those,
 * each run's first page found by a dry run of the tree before (for
 * slice_parent, of both before, side by side).  slice_parent begins once
 * slice_raw is done, so that its links take the frames' words as when
 * the trees are built in turn, rather than 4 more bytes a slice: the
 * function figures, summed meanwhile, take longer than either.
 */
static int trees_side_by_side(struct sq *w, struct bt_file *f,
			      const uint32_t *roots, struct tree_job *jobs)
{
	struct tree_job dry[2] = {
		{.w = w, .f = f, .which = SQ_TREE_ROWS, .root = roots[0]},
		{.w = w, .f = f, .which = SQ_TREE_TRACK_TS, .root = roots[1]},
	};
	int rc;

	tree_start(&jobs[SQ_TREE_ROWS]);
	tree_start(&dry[0]);
	tree_run(&dry[1]);
	rc = tree_wait(&dry[0]);
	if (!rc)
		rc = dry[1].rc;
	if (!rc) {
		jobs[SQ_TREE_TRACK_TS].first =
			bt_run_end(&dry[0].bt, jobs[SQ_TREE_ROWS].first);
		jobs[SQ_TREE_PARENT].first =
			bt_run_end(&dry[1].bt, jobs[SQ_TREE_TRACK_TS].first);
		tree_start(&jobs[SQ_TREE_TRACK_TS]);
	}
	bt_free(&dry[0].bt);
	bt_free(&dry[1].bt);
	if (tree_wait(&jobs[SQ_TREE_ROWS]) && !rc)
		rc = jobs[SQ_TREE_ROWS].rc;
	if (!rc) {
		jobs[SQ_TREE_PARENT].next = w->frame_of;
		tree_run(&jobs[SQ_TREE_PARENT]);
	}
	for (size_t i = 0; i < SQ_NR_TREES; i++)
		if (tree_wait(&jobs[i]) && !rc)
			rc = jobs[i].rc;
	return rc;
}

/* The same trees one after the other, on this thread. */
static int trees_in_turn(struct sq *w, struct tree_job *jobs)
{
	int rc = 0;

	/* slice_raw is written before: the frames' words are free. */
	jobs[SQ_TREE_PARENT].next = w->frame_of;
	for (size_t i = 0; !rc && i < SQ_NR_TREES; i++) {
		if (i)
			jobs[i].first =
				bt_run_end(&jobs[i - 1].bt, jobs[i - 1].first);
		tree_run(&jobs[i]);
		rc = jobs[i].rc;
	}
	return rc;
}

/* The slice table and its indexes, into the file SQLite has closed:
 * their leaves, then their interior pages. */
int sq_write_trees(struct sq *w, const char *tmp, const uint32_t *roots)
{
	struct tree_job jobs[SQ_NR_TREES];
	struct bt_file f;
	int rc = bt_open(&f, tmp);

	if (rc)
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	for (unsigned i = 0; i < SQ_NR_TREES; i++)
		jobs[i] = (struct tree_job){
			.w = w, .f = &f, .which = i, .root = roots[i]};
	jobs[0].first = bt_file_end(&f);
	rc = w->jobs > 1 ? trees_side_by_side(w, &f, roots, jobs)
			 : trees_in_turn(w, jobs);
	if (!rc)
		rc = bt_runs_done(&f, bt_run_end(&jobs[SQ_NR_TREES - 1].bt,
						 jobs[SQ_NR_TREES - 1].first));
	for (size_t i = 0; !rc && i < SQ_NR_TREES; i++)
		rc = bt_levels(&jobs[i].bt);
	for (size_t i = 0; i < SQ_NR_TREES; i++)
		bt_free(&jobs[i].bt);
	if (rc) {
		bt_close(&f, 1);
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	}
	rc = bt_close(&f, 0);
	if (rc)
		return sq_fail(w, rc, "writing slices: %s", strerror(-rc));
	return 0;
}
