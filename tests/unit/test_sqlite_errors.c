/* SPDX-License-Identifier: MIT */
/*
 * writers/sqlite.c when things go wrong or get big: failures must leave
 * neither a temporary file nor a damaged old output, a model out of the
 * order it promises must still index right, and the last test prints the
 * speed and size on many slices.
 */
#include "model/model.h"
#include "tests/unit/check.h"
#include "tests/unit/sqmodel.h"
#include "tests/unit/testfs.h"
#include "util/version.h"
#include "writers/writers.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Whether the file at path is a database holding n slices. */
static int has_slices(const char *path, int64_t n)
{
	sqlite3 *db = db_open(path);
	int ok = db && q_int(db, "SELECT count(*) FROM slice", -1) == n;

	sqlite3_close(db);
	return ok;
}

static void test_errors(struct check_state *cs)
{
	struct mt_trace t;
	char dir[64], path[256], err[512];
	int rc;

	build_model(&t);
	tmpdir_make(dir, sizeof(dir));

	/* A directory that does not exist. */
	snprintf(path, sizeof(path), "%s/no/such/dir/out.sqlite", dir);
	rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
	CHECK(cs, rc < 0);
	CHECKF(cs, strstr(err, path) && !strchr(err, '\n'), "%s", err);
	CHECK(cs, dir_entries(dir) == 0);

	/* A directory we may not write (root may write anywhere). */
	if (geteuid() != 0) {
		char ro[128];

		snprintf(ro, sizeof(ro), "%s/ro", dir);
		CHECK(cs, mkdir(ro, 0500) == 0);
		snprintf(path, sizeof(path), "%s/out.sqlite", ro);
		rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
		CHECK(cs, rc < 0);
		CHECKF(cs, strstr(err, path) != NULL, "%s", err);
		CHECK(cs, dir_entries(ro) == 0);
		chmod(ro, 0700);
		rmdir(ro);
	}

	/* An existing output is replaced whole. */
	snprintf(path, sizeof(path), "%s/out.sqlite", dir);
	{
		FILE *f = fopen(path, "w");

		CHECK(cs, f && fputs("not a database\n", f) >= 0);
		if (f)
			fclose(f);
	}
	rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
	CHECKF(cs, rc == 0, "%s", err);
	CHECK(cs, has_slices(path, (int64_t)total_slices(&t)));
	CHECK(cs, dir_entries(dir) == 1);

	/*
	 * A model the writer refuses midway, after the database was
	 * opened: the old output stays as it was and no temporary file
	 * is left.
	 */
	{
		struct mt_slice *s = &t.threads[1].slices[5];
		uint32_t saved = s->parent;

		s->parent = 7; /* a later slice: not pre-order */
		rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
		CHECK(cs, rc < 0);
		CHECKF(cs, strstr(err, path) && !strchr(err, '\n'), "%s", err);
		CHECK(cs, has_slices(path, (int64_t)total_slices(&t)));
		CHECK(cs, dir_entries(dir) == 1);
		s->parent = saved;

		saved = s->frame;
		s->frame = t.nr_frames; /* a frame that does not exist */
		rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
		CHECK(cs, rc < 0);
		CHECK(cs, dir_entries(dir) == 1);
		s->frame = saved;
	}

	/* The output is a directory: the rename fails at the very end.
	 */
	snprintf(path, sizeof(path), "%s/adir", dir);
	CHECK(cs, mkdir(path, 0700) == 0);
	rc = wr_sqlite(&t, path, NULL, err, sizeof(err));
	CHECK(cs, rc < 0);
	CHECKF(cs, strstr(err, path) != NULL, "%s", err);
	CHECK(cs, dir_entries(dir) == 2);

	/* A tiny message buffer is cut, not overrun; none is allowed.
	 */
	snprintf(path, sizeof(path), "%s/no/out.sqlite", dir);
	memset(err, 'x', sizeof(err));
	CHECK(cs, wr_sqlite(&t, path, NULL, err, 8) < 0);
	CHECK(cs, strlen(err) == 7 && err[8] == 'x');
	CHECK(cs, wr_sqlite(&t, path, NULL, NULL, 0) < 0);

	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/*
 * What the model promises never to hand over: starts out of order, one
 * past 2^63 (which SQLite reads as negative), and parents that are not
 * a depth-first walk (slice 4's parent closed when slice 3 began).  The
 * indexes must still be in SQLite's order, and a thread without slices
 * is no trouble.
 */
static void test_unsorted(struct check_state *cs)
{
	static const uint64_t ts[] = {500, 100, 0xffffffffffffff00ull, 300};
	static const uint32_t parent[] = {MT_NONE, 0, 1, 0, 1};
	struct mt_trace t;
	char dir[64], path[128], err[256];
	sqlite3 *db;

	mt_trace_init(&t);
	if (!mt_trace_add_thread(&t, 1, 1, "empty") ||
	    !mt_trace_add_thread(&t, 1, 2, "odd") ||
	    !mt_trace_add_thread(&t, 1, 3, "not a walk"))
		exit(2);
	for (uint32_t i = 0; i < sizeof(parent) / sizeof(*parent); i++) {
		struct mt_slice s = {.ts = 1000 + i,
				     .dur = 1,
				     .depth = i ? 1 : 0,
				     .parent = parent[i]};

		if (!mt_thread_push(&t.threads[2], &s))
			exit(2);
	}
	for (size_t i = 0; i < sizeof(ts) / sizeof(*ts); i++) {
		struct mt_slice s = {
			.ts = ts[i],
			.dur = 10,
			.frame = mt_frame_intern(
				&t, mt_str_intern(&t.strs, "f"), 0, 0),
			.depth = 0,
			.parent = MT_NONE};

		if (!mt_thread_push(&t.threads[1], &s))
			exit(2);
	}
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/u.sqlite", dir);
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	CHECK(cs, db && integrity_ok(db));
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice_raw INDEXED BY "
			"slice_track_ts"
			" WHERE track_id = 1 AND ts < 200",
			-1) == 2);
	CHECK(cs, q_int(db,
			"SELECT id FROM slice WHERE track_id = 1"
			" ORDER BY ts LIMIT 1",
			-1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice_raw INDEXED BY "
			"slice_parent"
			" WHERE parent_id IS NULL",
			-1) == 5);
	/* Ids 4..8 are the third thread's. */
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice_raw INDEXED BY "
			"slice_parent"
			" WHERE parent_id = 5 AND id IN (6, 8)",
			-1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice_raw INDEXED BY "
			"slice_parent"
			" WHERE parent_id = 4 AND id IN (5, 7)",
			-1) == 2);
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/*
 * 200k slices (MT_SQLITE_BENCH_SLICES to change it) in four threads,
 * with 2000 names of about 30 characters: the speed and the size per
 * slice, printed for the record rather than checked.
 */
static void test_bench(struct check_state *cs)
{
	const char *env = getenv("MT_SQLITE_BENCH_SLICES");
	size_t n = env ? strtoul(env, NULL, 0) : 200000;
	struct mt_trace t;
	struct wr_stats ws = {0};
	uint32_t names[2000], dsos[4];
	char dir[64], path[128], err[256], buf[64];
	double t0, t1;
	sqlite3 *db;

	mt_trace_init(&t);
	for (size_t i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "ns::Component%zu::method_%zu", i,
			 i * 7919 % 1000);
		names[i] = mt_str_intern(&t.strs, buf);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(buf, sizeof(buf),
			 "/usr/lib/x86_64-linux-gnu/lib%zu.so", i);
		dsos[i] = mt_str_intern(&t.strs, buf);
	}
	for (uint32_t i = 0; i < 4; i++)
		if (!mt_trace_add_thread(&t, 1000, 1000 + i, "bench"))
			exit(2);
	for (size_t i = 0; i < 4; i++)
		gen_tree(&t, i, n / 4 + (i < n % 4), 60, names, 2000, dsos, 4,
			 i + 10);

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/bench.sqlite", dir);
	t0 = now_s();
	CHECKF(cs, wr_sqlite(&t, path, &ws, err, sizeof(err)) == 0, "%s", err);
	t1 = now_s();
	CHECK(cs, ws.slices == n);
	printf("sqlite: %zu slices in %.2f s: %.0f slices/s, %.1f "
	       "bytes/slice"
	       " (%.1f MB)\n",
	       n, t1 - t0, (double)n / (t1 - t0),
	       n ? (double)ws.bytes / (double)n : 0.0, (double)ws.bytes / 1e6);
	db = db_open(path);
	CHECK(cs,
	      db && q_int(db, "SELECT count(*) FROM slice", -1) == (int64_t)n);
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}
int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_errors);
	RUN(&st, test_unsorted);
	RUN(&st, test_bench);
	return CHECK_DONE(&st);
}
