/* SPDX-License-Identifier: MIT */
/*
 * writers/btree.c: trees written into databases SQLite made, then read,
 * checked and written to again by SQLite: every row and every index entry
 * must be what SQLite's own inserts give, at page sizes that make one
 * leaf, a few levels and many levels, with NULLs, small and huge values
 * and entries too wide for more than a few to fit a page.
 */
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"
#include "writers/btree_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define NCOLS 10 /* t's columns besides id */

struct row {
	int64_t id;
	int64_t v[NCOLS];
	uint32_t nulls; /* bit i: v[i] is NULL */
};

/* xorshift64*: tests must not depend on the C library's rand(). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Values of every width SQLite stores, NULLs and the two it stores in
 * no bytes. */
static int64_t pick(uint64_t *s, int *null)
{
	static const int64_t edge[] = {
		0,	   1,	       -1,	   127,		128,
		-128,	   -129,       32767,	   32768,	8388607,
		8388608,   2147483647, 2147483648, -2147483649, 140737488355327,
		INT64_MAX, INT64_MIN,
	};
	uint64_t r = rnd(s);

	*null = r % 11 == 0;
	if (r % 5 == 0)
		return edge[(r >> 8) % (sizeof(edge) / sizeof(*edge))];
	return (int64_t)(rnd(s) >> (1 + (r >> 8) % 63)) * (r & 1 ? -1 : 1);
}

static struct row *gen_rows(size_t n, uint64_t seed, int small)
{
	struct row *r = calloc(n ? n : 1, sizeof(*r));
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	int64_t id = small ? 0 : INT64_MAX - 3 * (int64_t)n - 10;

	if (!r)
		exit(2);
	for (size_t i = 0; i < n; i++) {
		id += 1 + (int64_t)(rnd(&s) % 3);
		r[i].id = id;
		for (int c = 0; c < NCOLS; c++) {
			int null;

			/* Few distinct leading values: index entries that
			 * differ only in a later column or the rowid. */
			r[i].v[c] = c == 0 ? (int64_t)(rnd(&s) % 7) - 3
					   : pick(&s, &null);
			if (c && null)
				r[i].nulls |= 1u << c;
		}
	}
	return r;
}

/* SQLite's order for index entries: NULL first, then by value, then
 * rowid. */
static int key_cmp(const struct row *x, const struct row *y, const int *cols,
		   int ncols)
{
	for (int k = 0; k < ncols; k++) {
		int c = cols[k];
		int xn = x->nulls >> c & 1, yn = y->nulls >> c & 1;

		if (xn != yn)
			return xn ? -1 : 1;
		if (!xn && x->v[c] != y->v[c])
			return x->v[c] < y->v[c] ? -1 : 1;
	}
	return x->id < y->id ? -1 : x->id > y->id;
}

static const int *sort_cols;
static int sort_ncols;

static int qsort_cmp(const void *a, const void *b)
{
	return key_cmp(a, b, sort_cols, sort_ncols);
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "  %s: %s\n", sql, sqlite3_errmsg(db));
		return -1;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;
	int ok = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL))
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		ok = !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
	if (!ok)
		do
			fprintf(stderr, "  integrity: %s\n",
				sqlite3_column_text(st, 0));
		while (sqlite3_step(st) == SQLITE_ROW);
	sqlite3_finalize(st);
	return ok;
}

static const char schema[] =
	"CREATE TABLE t(id INTEGER PRIMARY KEY, c0, c1, c2, c3, c4, c5, c6,"
	" c7, c8, c9);"
	"CREATE INDEX t_narrow ON t(c0, c1);"
	"CREATE INDEX t_wide ON t(c0, c1, c2, c3, c4, c5, c6, c7, c8);"
	"CREATE TABLE r(id INTEGER PRIMARY KEY, c0, c1, c2, c3, c4, c5, c6,"
	" c7, c8, c9);";

static uint32_t root_of(sqlite3 *db, const char *name)
{
	char sql[128];

	snprintf(sql, sizeof(sql),
		 "SELECT rootpage FROM sqlite_schema WHERE name = '%s'", name);
	return (uint32_t)q_int(db, sql);
}

/* SQLite makes the database; returns the roots of t and its indexes. */
static int make_db(const char *path, int page_size, uint32_t root[3])
{
	sqlite3 *db;
	char sql[64];
	int ok;

	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	snprintf(sql, sizeof(sql), "PRAGMA page_size = %d;", page_size);
	ok = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK;
	root[0] = root_of(db, "t");
	root[1] = root_of(db, "t_narrow");
	root[2] = root_of(db, "t_wide");
	sqlite3_close(db);
	return ok ? 0 : -1;
}

/*
 * How the trees are cut into ranges (bt_range_*): rows (or entries) a
 * range, 0 for none; joined from trees of their own, else put straight
 * into the tree.
 */
struct cut {
	size_t range;
	int joined;
};

/* A row (index: an entry) into t. */
static int put_one(struct bt_tree *t, const struct row *r, const int *cols,
		   int ncols)
{
	int64_t v[BT_MAX_COLS] = {0};
	uint32_t nulls = 0;

	if (!cols) {
		memcpy(v + 1, r->v, sizeof(r->v));
		return bt_row(t, r->id, v, 1u | r->nulls << 1, NCOLS + 1);
	}
	for (int k = 0; k < ncols; k++) {
		v[k] = r->v[cols[k]];
		nulls |= (r->nulls >> cols[k] & 1) << k;
	}
	v[ncols] = r->id;
	return bt_entry(t, v, nulls, ncols + 1);
}

/* Rows r into the tree at root (cols NULL: the table), cut as c says;
 * the last range takes what is left over a whole range. */
static int write_tree(struct bt_file *f, uint32_t root, const struct row *r,
		      size_t n, const int *cols, int ncols, struct cut c)
{
	size_t nr = c.range ? (n / c.range ? n / c.range : 1) : 0;
	struct bt_tree t, part = {0};
	int rc = bt_begin(&t, f, cols != NULL, root);

	for (size_t i = 0; !rc && !nr && i < n; i++)
		rc = put_one(&t, &r[i], cols, ncols);
	for (size_t k = 0; !rc && k < nr; k++) {
		size_t a = k * c.range, b = k + 1 < nr ? a + c.range : n;
		struct bt_tree *into = c.joined ? &part : &t;

		rc = c.joined ? bt_range_begin(&part, f, cols != NULL,
					       k + 1 < nr, b - a)
			      : bt_range_start(&t, k + 1 < nr, b - a);
		for (size_t i = a; !rc && i < b; i++)
			rc = put_one(into, &r[i], cols, ncols);
		if (!rc)
			rc = bt_range_end(into);
		if (!rc && c.joined)
			rc = bt_join(&t, &part);
	}
	bt_free(&part);
	if (!rc)
		rc = nr ? bt_end_leaves(&t) : 0;
	if (!rc)
		rc = nr ? bt_levels(&t) : bt_end(&t);
	bt_free(&t);
	return rc;
}

static int write_index(struct bt_file *f, uint32_t root, struct row *r,
		       size_t n, const int *cols, int ncols, struct cut c)
{
	sort_cols = cols;
	sort_ncols = ncols;
	qsort(r, n, sizeof(*r), qsort_cmp);
	return write_tree(f, root, r, n, cols, ncols, c);
}

/* Our trees for rows r into t, its two indexes. */
static int write_trees_cut(const char *path, const uint32_t root[3],
			   const struct row *rows, size_t n, struct cut c)
{
	static const int narrow[] = {0, 1};
	static const int wide[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
	struct row *r = malloc((n ? n : 1) * sizeof(*r));
	struct bt_file f;
	double write_s = 0;
	bool appended;
	int rc;

	if (!r)
		exit(2);
	memcpy(r, rows, n * sizeof(*r));
	rc = bt_open(&f, path, 0);
	if (rc) {
		free(r);
		return rc;
	}
	rc = write_tree(&f, root[0], r, n, NULL, 0, c);
	if (!rc)
		rc = write_index(&f, root[1], r, n, narrow, 2, c);
	if (!rc)
		rc = write_index(&f, root[2], r, n, wide, 9, c);
	/* Pages appended are written, and their writes timed. */
	appended = f.out.next - 1 > f.nr_pages;
	rc = rc ? (bt_close(&f, 1, NULL), rc) : bt_close(&f, 0, &write_s);
	free(r);
	if (!rc && appended && !(write_s > 0))
		return -ERANGE;
	return rc;
}

static int write_trees(const char *path, const uint32_t root[3],
		       const struct row *rows, size_t n)
{
	return write_trees_cut(path, root, rows, n, (struct cut){0, 0});
}

/* The same rows through SQLite's inserts, into r. */
static void insert_ref(struct check_state *cs, sqlite3 *db, const struct row *r,
		       size_t n)
{
	sqlite3_stmt *st;

	CHECK(cs, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(cs, sqlite3_prepare_v2(db,
				     "INSERT INTO r VALUES(?, ?, ?, ?, ?, ?,"
				     " ?, ?, ?, ?, ?)",
				     -1, &st, NULL) == SQLITE_OK);
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, r[i].id);
		for (int c = 0; c < NCOLS; c++)
			if (r[i].nulls >> c & 1)
				sqlite3_bind_null(st, c + 2);
			else
				sqlite3_bind_int64(st, c + 2, r[i].v[c]);
		CHECK(cs, sqlite3_step(st) == SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	CHECK(cs,
	      sqlite3_exec(db,
			   "CREATE INDEX r_narrow ON r(c0, c1);"
			   "CREATE INDEX r_wide ON r(c0, c1, c2, c3, c4, c5,"
			   " c6, c7, c8);"
			   "COMMIT",
			   NULL, NULL, NULL) == SQLITE_OK);
}

/* Rows in id order through each index (and the table) compared with r's,
 * column by column, serial type included. */
static void compare(struct check_state *cs, sqlite3 *db, const char *t_idx,
		    const char *r_idx, const char *order)
{
	char a[256], b[256];
	sqlite3_stmt *x, *y;

	snprintf(a, sizeof(a), "SELECT * FROM t INDEXED BY %s ORDER BY %s",
		 t_idx, order);
	snprintf(b, sizeof(b), "SELECT * FROM r INDEXED BY %s ORDER BY %s",
		 r_idx, order);
	CHECKF(cs, sqlite3_prepare_v2(db, a, -1, &x, NULL) == SQLITE_OK, "%s",
	       sqlite3_errmsg(db));
	CHECKF(cs, sqlite3_prepare_v2(db, b, -1, &y, NULL) == SQLITE_OK, "%s",
	       sqlite3_errmsg(db));
	if (cs->failed_checks)
		return;
	for (;;) {
		int rx = sqlite3_step(x), ry = sqlite3_step(y);

		CHECK(cs, rx == ry);
		if (rx != SQLITE_ROW || ry != SQLITE_ROW)
			break;
		for (int c = 0; c <= NCOLS; c++) {
			CHECK(cs, sqlite3_column_type(x, c) ==
					  sqlite3_column_type(y, c));
			CHECK(cs, sqlite3_column_int64(x, c) ==
					  sqlite3_column_int64(y, c));
		}
		if (cs->failed_checks)
			break;
	}
	sqlite3_finalize(x);
	sqlite3_finalize(y);
}

static void cut_case(struct check_state *cs, int page_size, size_t n, int small,
		     struct cut c)
{
	char dir[64], path[128];
	uint32_t root[3];
	struct row *r = gen_rows(n, n + (uint64_t)page_size, small);
	sqlite3 *db = NULL;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.sqlite", dir);
	CHECK(cs, make_db(path, page_size, root) == 0);
	rc = write_trees_cut(path, root, r, n, c);
	CHECKF(cs, rc == 0, "page size %d, %zu rows, ranges of %zu: %s",
	       page_size, n, c.range, strerror(-rc));
	CHECK(cs, sqlite3_open(path, &db) == SQLITE_OK);
	CHECKF(cs, integrity_ok(db), "page size %d, %zu rows, ranges of %zu",
	       page_size, n, c.range);
	CHECK(cs, q_int(db, "SELECT count(*) FROM t") == (int64_t)n);
	insert_ref(cs, db, r, n);
	compare(cs, db, "t_narrow", "r_narrow", "c0, c1, id");
	compare(cs, db, "t_wide", "r_wide",
		"c0, c1, c2, c3, c4, c5, c6, c7, c8, id");
	CHECK(cs, q_int(db, "SELECT count(*) FROM (SELECT * FROM t EXCEPT"
			    " SELECT * FROM r)") == 0);
	/* Lookups through the indexes, and SQLite writing into our pages. */
	if (n)
		CHECK(cs,
		      q_int(db, "SELECT count(*) FROM t INDEXED BY t_narrow"
				" WHERE c0 = 0") ==
			      q_int(db, "SELECT count(*) FROM r WHERE c0 = 0"));
	CHECK(cs,
	      sqlite3_exec(db,
			   "INSERT INTO t SELECT -id, c0 + 1, c1, c2, c3,"
			   " c4, c5, c6, c7, c8, c9 FROM r WHERE id % 5 = 0;"
			   "DELETE FROM t WHERE id % 7 = 0;",
			   NULL, NULL, NULL) == SQLITE_OK);
	CHECKF(cs, integrity_ok(db), "after SQLite's writes: page size %d",
	       page_size);
	sqlite3_close(db);
	tmpdir_remove(dir);
	free(r);
}

static void one_case(struct check_state *cs, int page_size, size_t n, int small)
{
	cut_case(cs, page_size, n, small, (struct cut){0, 0});
}

static void test_sizes(struct check_state *cs)
{
	static const size_t counts[] = {0, 1, 2, 3, 40, 1000, 30000};
	static const int pages[] = {512, 4096, 65536};

	for (size_t p = 0; p < sizeof(pages) / sizeof(*pages); p++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++)
			one_case(cs, pages[p], counts[i], i % 2);
}

/* Every count of rows around the first leaf splits and levels. */
static void test_boundaries(struct check_state *cs)
{
	for (size_t n = 1; n < 200; n += 1 + n / 16)
		one_case(cs, 512, n, 1);
}

/*
 * Entries of one size, every count from 1 to past three leaves: one of
 * them ends on an entry that does not fit the leaf and has nothing after
 * it, which must not become a separator.
 */
static void test_every_count(struct check_state *cs)
{
	char dir[64], path[128];
	uint32_t root[3];

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.sqlite", dir);
	for (size_t n = 1; n <= 160 && !cs->failed_checks; n++) {
		struct row *r = calloc(n, sizeof(*r));
		sqlite3 *db;

		if (!r)
			exit(2);
		for (size_t i = 0; i < n; i++)
			r[i] = (struct row){.id = 1000 + (int64_t)i,
					    .v = {5, 300, 7}};
		remove(path);
		CHECK(cs, make_db(path, 512, root) == 0);
		CHECK(cs, write_trees(path, root, r, n) == 0);
		CHECK(cs, sqlite3_open(path, &db) == SQLITE_OK);
		CHECKF(cs, integrity_ok(db), "%zu rows", n);
		CHECK(cs, q_int(db, "SELECT count(*) FROM t INDEXED BY t_wide"
				    " WHERE c0 = 5") == (int64_t)n);
		sqlite3_close(db);
		free(r);
	}
	tmpdir_remove(dir);
}

/*
 * Trees cut into ranges, joined or put straight into the tree: every
 * range size from 2 entries to past a leaf, over row counts that make a
 * leaf, a few and a few levels; each must read as SQLite's own, whatever
 * entry a range ends on (one that fills its leaf, or does not fit).
 */
static void test_ranges(struct check_state *cs)
{
	static const size_t ranges[] = {2, 3, 40};
	static const size_t counts[] = {1, 41, 160, 1000};

	for (size_t k = 0; k < sizeof(ranges) / sizeof(*ranges); k++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++)
			for (int joined = 0; joined < 2; joined++)
				cut_case(cs, 512, counts[i], (int)(i % 2),
					 (struct cut){ranges[k], joined});
}

/* A file that is no database, and rows out of order, are refused. */
static void test_refusals(struct check_state *cs)
{
	char dir[64], path[128];
	uint32_t root[3];
	struct bt_file f;
	struct bt_tree t;
	int64_t v[2] = {0, 0};
	FILE *fp;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/x", dir);
	fp = fopen(path, "w");
	CHECK(cs, fp && fputs("not a database at all, but long enough to"
			      " have a header of a hundred bytes if it"
			      " were one, which it is not, at all.\n",
			      fp) >= 0);
	if (fp)
		fclose(fp);
	CHECK(cs, bt_open(&f, path, 0) == -EINVAL);
	snprintf(path, sizeof(path), "%s/t.sqlite", dir);
	CHECK(cs, make_db(path, 4096, root) == 0);
	CHECK(cs, bt_open(&f, path, 0) == 0);
	CHECK(cs, bt_begin(&t, &f, 0, 1) == -EINVAL);
	bt_free(&t);
	CHECK(cs, bt_close(&f, 1, NULL) == 0);
	CHECK(cs, bt_open(&f, path, 0) == 0);
	CHECK(cs, bt_begin(&t, &f, 0, root[0]) == 0);
	CHECK(cs, bt_row(&t, 5, v, 0, 2) == 0);
	CHECK(cs, bt_row(&t, 5, v, 0, 2) == -EINVAL);
	/* Failed: nothing more is written, the header stays. */
	CHECK(cs, bt_row(&t, 6, v, 0, 2) == -EIO);
	bt_free(&t);
	CHECK(cs, bt_close(&f, 0, NULL) == 0);
	{
		sqlite3 *db;

		CHECK(cs, sqlite3_open(path, &db) == SQLITE_OK);
		CHECK(cs, integrity_ok(db));
		CHECK(cs, q_int(db, "SELECT count(*) FROM t") == 0);
		sqlite3_close(db);
	}
	tmpdir_remove(dir);
}

/*
 * Pages go out a chunk at a time on a thread of their own: a write that
 * fails there (a file that may not grow past 2 MiB) still fails the
 * trees.  In a child, as the limit is the process's.
 */
static void test_write_error(struct check_state *cs)
{
	char dir[64], path[128];
	uint32_t root[3];
	size_t n = 200000; /* about 20 MB of pages */
	struct row *r = gen_rows(n, 7, 0);
	pid_t pid;
	int status = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.sqlite", dir);
	CHECK(cs, make_db(path, 4096, root) == 0);
	pid = fork();
	if (pid == 0) {
		struct rlimit lim = {2u << 20, 2u << 20};
		int rc;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &lim))
			_exit(100);
		rc = write_trees(path, root, r, n);
		if (rc != -EFBIG)
			fprintf(stderr, "# write_trees: %d\n", rc);
		_exit(rc == -EFBIG ? 0 : 1);
	}
	CHECK(cs, pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECKF(cs, WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d",
	       status);
	tmpdir_remove(dir);
	free(r);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_sizes);
	RUN(&st, test_boundaries);
	RUN(&st, test_every_count);
	RUN(&st, test_ranges);
	RUN(&st, test_refusals);
	RUN(&st, test_write_error);
	return CHECK_DONE(&st);
}
