/* SPDX-License-Identifier: MIT */
/*
 * writers/sqlite.c: hand-built models written and read back through the
 * sqlite3 API; every slice must come back with its time, name, depth,
 * parent and thread; the Perfetto-style queries must run
 * (test_sqlite_errors.c has failures and size).
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

/* Reading every slice back                                            */

struct row {
	int64_t id, ts, dur, track, depth, parent, addr, segment, aset;
	int64_t fl[10]; /* the flag columns, in flag_cols order */
	int has_parent, has_addr, has_segment, has_aset;
	char *name, *dso; /* NULL for SQL NULL */
	int64_t tid;	  /* through thread_track and thread */
	size_t pos;	  /* index in its thread's pre-order */
};

static const struct {
	const char *col;
	uint32_t bit;
} flag_cols[10] = {
	{"inferred_start", MT_SLICE_INFERRED_START},
	{"inferred_end", MT_SLICE_INFERRED_END},
	{"joined", MT_SLICE_JOINED},
	{"tail", MT_SLICE_TAIL},
	{"is_gap", MT_SLICE_GAP},
	{"syscall", MT_SLICE_SYSCALL},
	{"untraced", MT_SLICE_UNTRACED},
	{"unknown", MT_SLICE_UNKNOWN},
	{"depth_guessed", MT_SLICE_DEPTH_GUESSED},
	{"inlined", MT_SLICE_INLINED},
};

static char *col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? strdup((const char *)s) : NULL;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

struct idpos {
	int64_t id;
	size_t i; /* index in the sorted rows */
};

static int idpos_cmp(const void *a, const void *b)
{
	const struct idpos *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void rows_free(struct row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].name);
		free(r[i].dso);
	}
	free(r);
}

/*
 * Reads every slice with its tid (through the join people write), sorted
 * as the model is: by thread, then time, a parent before its children.
 */
static struct row *read_rows(struct check_state *cs, sqlite3 *db, size_t *n)
{
	static const char sql[] =
		"SELECT s.id, s.ts, s.dur, s.track_id, s.name, s.depth,"
		" s.parent_id, s.address, s.dso, s.segment, s.arg_set_id,"
		" s.inferred_start, s.inferred_end, s.joined, s.tail,"
		" s.is_gap, s.syscall, s.untraced, s.unknown, s.depth_guessed,"
		" s.inlined, t.tid"
		" FROM slice s JOIN thread_track tt ON s.track_id = tt.id"
		" JOIN thread t USING(utid)";
	sqlite3_stmt *st;
	struct row *r = NULL;
	size_t cap = 0;

	*n = 0;
	CHECKF(cs, sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
	       "%s", sqlite3_errmsg(db));
	if (cs->failed_checks)
		return NULL;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct row *x;

		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			r = realloc(r, cap * sizeof(*r));
			if (!r)
				exit(2);
		}
		x = &r[(*n)++];
		memset(x, 0, sizeof(*x));
		x->id = sqlite3_column_int64(st, 0);
		x->ts = sqlite3_column_int64(st, 1);
		x->dur = sqlite3_column_int64(st, 2);
		x->track = sqlite3_column_int64(st, 3);
		x->name = col_str(st, 4);
		x->depth = sqlite3_column_int64(st, 5);
		x->has_parent = sqlite3_column_type(st, 6) != SQLITE_NULL;
		x->parent = sqlite3_column_int64(st, 6);
		x->has_addr = sqlite3_column_type(st, 7) != SQLITE_NULL;
		x->addr = sqlite3_column_int64(st, 7);
		x->dso = col_str(st, 8);
		x->has_segment = sqlite3_column_type(st, 9) != SQLITE_NULL;
		x->segment = sqlite3_column_int64(st, 9);
		x->has_aset = sqlite3_column_type(st, 10) != SQLITE_NULL;
		x->aset = sqlite3_column_int64(st, 10);
		for (int i = 0; i < 10; i++)
			x->fl[i] = sqlite3_column_int64(st, 11 + i);
		x->tid = sqlite3_column_int64(st, 21);
	}
	sqlite3_finalize(st);
	if (*n)
		qsort(r, *n, sizeof(*r), row_cmp);
	return r;
}

/* Checks one slice's args against the model: address, dso, flags. */
static void check_args(struct check_state *cs, sqlite3 *db,
		       const struct mt_trace *t, const struct mt_slice *s,
		       const struct row *x)
{
	const struct mt_frame *fr = mt_slice_frame(t, s);
	sqlite3_stmt *st;
	int n = 0, want = 0;

	if (!fr->addr && !fr->dso && !s->flags) {
		CHECK(cs, !x->has_aset);
		return;
	}
	CHECK(cs, x->has_aset);
	if (sqlite3_prepare_v2(db,
			       "SELECT key, flat_key, int_value, string_value,"
			       " value_type, display_value FROM args"
			       " WHERE arg_set_id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		CHECK(cs, !"prepare args");
		return;
	}
	sqlite3_bind_int64(st, 1, x->aset);
	want = !!fr->addr + !!fr->dso + __builtin_popcount(s->flags);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		const char *flat = (const char *)sqlite3_column_text(st, 1);
		int64_t iv = sqlite3_column_int64(st, 2);
		const char *sv = (const char *)sqlite3_column_text(st, 3);
		const char *type = (const char *)sqlite3_column_text(st, 4);
		const char *disp = (const char *)sqlite3_column_text(st, 5);

		n++;
		CHECK(cs, key && flat && type && !strcmp(key, flat));
		if (!key || !type)
			continue;
		if (!strcmp(key, "debug.address")) {
			char hex[32];

			snprintf(hex, sizeof(hex), "0x%" PRIx64, fr->addr);
			CHECK(cs, (uint64_t)iv == fr->addr);
			CHECK(cs, !strcmp(type, "pointer"));
			CHECK(cs, disp && !strcmp(disp, hex));
		} else if (!strcmp(key, "debug.dso")) {
			CHECK(cs, sv && !strcmp(sv, mt_str(&t->strs, fr->dso)));
			CHECK(cs, !strcmp(type, "string"));
		} else {
			CHECK(cs, !strcmp(type, "bool") && iv == 1);
			CHECKF(cs, !strncmp(key, "debug.", 6), "%s", key);
		}
	}
	sqlite3_finalize(st);
	CHECKF(cs, n == want, "%d args, want %d", n, want);
}

/* Every slice of t is in the database at path, and nothing else. */
static void check_slices(struct check_state *cs, const struct mt_trace *t,
			 sqlite3 *db)
{
	size_t n, k = 0, bad = 0;
	struct row *r = read_rows(cs, db, &n);
	struct idpos *ip = calloc(n ? n : 1, sizeof(*ip));
	int64_t prev_tid = -1;

	if (!ip)
		exit(2);
	CHECKF(cs, n == total_slices(t), "%zu rows, %zu slices", n,
	       total_slices(t));
	/* Position of each row in its thread, and an id -> row map. */
	for (size_t i = 0; i < n; i++) {
		k = r[i].tid == prev_tid ? k + 1 : 0;
		prev_tid = r[i].tid;
		r[i].pos = k;
		ip[i] = (struct idpos){r[i].id, i};
	}
	qsort(ip, n, sizeof(*ip), idpos_cmp);
	for (size_t i = 1; i < n; i++)
		CHECK(cs, ip[i].id != ip[i - 1].id);

	for (size_t i = 0; i < n && bad < 10; i++) {
		const struct row *x = &r[i];
		const struct mt_thread *th =
			mt_trace_thread((struct mt_trace *)t, (uint32_t)x->tid);
		const struct mt_slice *s;
		const struct mt_frame *fr;
		int before = cs->failed_checks;

		CHECK(cs, th && x->pos < th->nr_slices);
		if (!th || x->pos >= th->nr_slices) {
			bad++;
			continue;
		}
		s = &th->slices[x->pos];
		CHECK(cs, (uint64_t)x->ts == s->ts);
		CHECK(cs, (uint64_t)x->dur == s->dur);
		CHECK(cs, (uint64_t)x->depth == s->depth);
		fr = mt_slice_frame(t, s);
		if (fr->name)
			CHECK(cs,
			      x->name && !strcmp(x->name,
						 mt_str(&t->strs, fr->name)));
		else
			CHECK(cs, !x->name);
		if (fr->dso)
			CHECK(cs, x->dso && !strcmp(x->dso,
						    mt_str(&t->strs, fr->dso)));
		else
			CHECK(cs, !x->dso);
		CHECK(cs, x->has_addr == !!fr->addr);
		CHECK(cs, (uint64_t)x->addr == fr->addr);
		CHECK(cs, x->has_segment == (s->segment != MT_NONE));
		if (s->segment != MT_NONE)
			CHECK(cs, x->segment == s->segment);
		for (int f = 0; f < 10; f++)
			CHECK(cs, x->fl[f] == !!(s->flags & flag_cols[f].bit));
		CHECK(cs, x->has_parent == (s->parent != MT_NONE));
		if (x->has_parent) {
			struct idpos key = {x->parent, 0}, *p;

			p = bsearch(&key, ip, n, sizeof(*ip), idpos_cmp);
			CHECK(cs, p != NULL);
			if (p) {
				const struct row *y = &r[p->i];

				CHECK(cs, y->tid == x->tid);
				CHECK(cs, y->track == x->track);
				CHECK(cs, y->pos == s->parent);
				CHECK(cs, y->depth + 1 == x->depth);
			}
		}
		/* The args of a few, including every flagged one. */
		if (s->flags || i % 97 == 0)
			check_args(cs, db, t, s, x);
		if (cs->failed_checks != before) {
			fprintf(stderr, "  at slice %zu of tid %" PRId64 "\n",
				x->pos, x->tid);
			bad++;
		}
	}
	free(ip);
	rows_free(r, n);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void test_roundtrip(struct check_state *cs)
{
	struct mt_trace t;
	struct wr_stats ws = {0};
	char dir[64], path[128], err[256];
	sqlite3 *db;
	int rc;

	build_model(&t);
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.sqlite", dir);
	rc = wr_sqlite(&t, path, &ws, err, sizeof(err));
	CHECKF(cs, rc == 0, "%s", err);
	CHECK(cs, ws.slices == total_slices(&t));
	CHECK(cs, ws.tracks == 4);
	{
		struct stat sb;

		CHECK(cs,
		      stat(path, &sb) == 0 && (uint64_t)sb.st_size == ws.bytes);
	}
	CHECK(cs, dir_entries(dir) == 1);
	db = db_open(path);
	CHECK(cs, db != NULL);
	if (!db)
		goto out;
	check_slices(cs, &t, db);

	/* The queries people paste from Perfetto's SQL page. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM slices", -1) ==
			  (int64_t)total_slices(&t));
	CHECK(cs, q_int(db, "SELECT dur FROM slices ORDER BY dur DESC LIMIT 1",
			-1) == 900000000000ll);
	{
		sqlite3_stmt *st;

		CHECK(cs, sqlite3_prepare_v2(db,
					     "SELECT * FROM slices ORDER BY dur"
					     " DESC LIMIT 1",
					     -1, &st, NULL) == SQLITE_OK);
		CHECK(cs, sqlite3_step(st) == SQLITE_ROW);
		for (int i = 0; i < sqlite3_column_count(st); i++)
			if (!strcmp(sqlite3_column_name(st, i), "name"))
				CHECK(cs,
				      !strcmp((const char *)sqlite3_column_text(
						      st, i),
					      odd_names[1]));
		sqlite3_finalize(st);
	}
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice s JOIN thread_track tt"
			" ON s.track_id = tt.id JOIN thread t USING(utid)"
			" WHERE t.tid = 201",
			-1) == DEEP);
	CHECK(cs, q_int(db, "SELECT max(depth) FROM slice", -1) == DEEP - 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice s JOIN thread_track tt"
			" ON s.track_id = tt.id JOIN thread t USING(utid)"
			" JOIN process p USING(upid) WHERE p.pid = 100",
			-1) == 5500);
	/* trace_processor's aliases and never-filled columns. */
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice WHERE slice_id = id AND"
			" cat IS category AND thread_ts IS NULL AND"
			" thread_dur IS NULL",
			-1) == (int64_t)total_slices(&t));
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice s JOIN track t"
			" ON s.track_id = t.id",
			-1) == (int64_t)total_slices(&t));
	CHECK(cs, q_int(db, "SELECT count(*) FROM slice WHERE name IS NULL",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice WHERE name ="
			" 'ünïcødé_函数_🙂'",
			-1) > 0);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM slice WHERE name ="
			" 'it''s \"quoted\"'",
			-1) > 0);
	/* Kernel addresses are stored bit for bit. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM slice WHERE address < 0",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM args WHERE key = 'debug.address'"
			" AND display_value = '0xffffffff81000000'",
			-1) == 1);
	/* Arg sets are shared: far fewer than slices. */
	CHECK(cs, q_int(db, "SELECT count(DISTINCT arg_set_id) FROM args", -1) <
			  200);

	/* Threads, processes and tracks. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM thread", -1) == 4);
	CHECK(cs, q_int(db, "SELECT count(*) FROM thread_track", -1) == 4);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM thread_track"
			" WHERE type = 'thread_execution'",
			-1) == 4);
	CHECK(cs, q_int(db, "SELECT count(*) FROM process", -1) == 3);
	CHECK(cs, q_int(db, "SELECT min(utid) FROM thread", -1) >= 1);
	CHECK(cs, q_int(db,
			"SELECT p.pid FROM thread t JOIN process p USING(upid)"
			" WHERE t.tid = 201",
			-1) == 200);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM process WHERE pid = 100 AND"
			" name = '/usr/bin/prog --flag ''x''' AND"
			" cmdline = name",
			-1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM thread WHERE is_main_thread",
			-1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM thread WHERE tid = 300 AND"
			" name IS NULL",
			-1) == 1);

	/* Gaps: one row per gap slice, pointing at it. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM gap", -1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM gap g JOIN slice s"
			" ON s.id = g.slice_id WHERE s.is_gap AND"
			" s.ts = g.ts AND s.dur = g.dur AND s.name = g.name",
			-1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM gap WHERE reason = 'overflow'"
			" AND segment IS NULL AND ts = 150 AND dur = 30",
			-1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM gap WHERE reason = 'odd gap'",
			-1) == 1);

	/* Segments, stitches, hits. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM segment", -1) == 3);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM segment s JOIN thread t"
			" USING(utid) WHERE s.id = 0 AND t.tid = 300 AND"
			" s.ts = 100 AND s.dur = 50 AND"
			" s.end_reason = 'overflow' AND s.end_ip = 4198964",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM segment WHERE id = 1 AND"
			" end_ip IS NULL AND dur = 900000000000",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM segment WHERE tid = 999 AND"
			" utid IS NULL",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM stitch WHERE tid = 300 AND"
			" segment_a = 0 AND segment_b = 1 AND"
			" frames_joined = 1 AND score = 0.75 AND"
			" reason = 'stack match' AND utid IS NOT NULL",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM guess g JOIN thread t"
			" USING(utid) WHERE g.id = 0 AND t.tid = 300 AND"
			" g.tid = 300 AND g.ts = 120 AND g.dur = 30 AND"
			" g.depth = 2",
			-1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM guess", -1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM hit", -1) == 2);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM hit WHERE ts = 5000 AND"
			" mark_start = 4000 AND tid = 101 AND arg = -7 AND"
			" ip = 4199680 AND name = 'mt_take_snapshot' AND"
			" utid IS NOT NULL",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM hit WHERE tid = 7 AND"
			" mark_start IS NULL AND utid IS NULL",
			-1) == 1);

	/* The indexes exist and the file is sound. */
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM sqlite_master WHERE"
			" type = 'index' AND tbl_name = 'slice_raw'",
			-1) == 2);
	CHECK(cs, integrity_ok(db));
	CHECK(cs, q_int(db, "PRAGMA user_version", -1) == 6);
	/* Every slice is a call in function, every child one in caller
	 * (their figures against SQL: tests/e2e/65-report.sh). */
	CHECK(cs, q_int(db, "SELECT sum(calls) FROM function", -1) ==
			  q_int(db, "SELECT count(*) FROM slice", -2));
	CHECK(cs, q_int(db, "SELECT sum(calls) FROM caller", -1) ==
			  q_int(db,
				"SELECT count(*) FROM slice"
				" WHERE parent_id IS NOT NULL",
				-2));
	CHECK(cs, q_int(db,
			"SELECT sum(total_dur) FROM function"
			" WHERE NOT inlined",
			-1) == q_int(db,
				     "SELECT sum(dur) FROM slice"
				     " WHERE NOT inlined",
				     -2));
	sqlite3_close(db);
out:
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

static void test_empty(struct check_state *cs)
{
	struct mt_trace t;
	struct wr_stats ws = {1, 1, 1};
	char dir[64], path[128], err[256];
	sqlite3 *db;

	mt_trace_init(&t);
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/empty.sqlite", dir);
	CHECKF(cs, wr_sqlite(&t, path, &ws, err, sizeof(err)) == 0, "%s", err);
	CHECK(cs, ws.slices == 0 && ws.tracks == 0 && ws.bytes > 0);
	/* Stats are optional. */
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	CHECK(cs, db && q_int(db, "SELECT count(*) FROM slices", -1) == 0);
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/* The metadata row name's str_value, in buf ("" when none). */
static const char *meta(sqlite3 *db, const char *name, char *buf, size_t len)
{
	sqlite3_stmt *st;

	buf[0] = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT str_value FROM metadata WHERE name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return buf;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		snprintf(buf, len, "%s",
			 (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return buf;
}

/* The database says what made it, and what made the capture. */
static void test_metadata(struct check_state *cs)
{
	struct mt_trace t;
	char dir[64], path[128], err[256], line[128], got[256];
	sqlite3 *db;

	mt_trace_init(&t);
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/meta.sqlite", dir);
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	mt_version_line("mt-convert", line, sizeof(line));
	CHECKF(cs, !strcmp(meta(db, "converted_by", got, sizeof(got)), line),
	       "converted_by '%s'", got);
	/* Unknown: no row. */
	CHECK(cs, q_int(db, "SELECT count(*) FROM metadata", -1) == 1);
	sqlite3_close(db);
	snprintf(t.recorded_by, sizeof(t.recorded_by), "mt-capture 9.9");
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	CHECKF(cs,
	       !strcmp(meta(db, "recorded_by", got, sizeof(got)),
		       "mt-capture 9.9"),
	       "recorded_by '%s'", got);
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/*
 * The hits' names are the model's table apart (mt_trace.hit_names):
 * strings lists the trace's strings first, in their ids, then the hits'
 * names that are not among them, each once; a hit's row has its name.
 */
static void test_hit_names(struct check_state *cs)
{
	struct mt_trace t;
	const char *names[] = {"f", "trig", "trig", ""};
	char dir[64], path[128], err[256];
	uint32_t nr;
	sqlite3 *db;

	mt_trace_init(&t);
	CHECK(cs, mt_str_intern(&t.strs, "f") != MT_NONE &&
			  mt_str_intern(&t.strs, "g") != MT_NONE);
	nr = t.strs.nr;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		CHECK(cs, mt_trace_add_named_hit(
				  &t, &(struct mt_hit){.ts = 10 + i, .tid = 1},
				  names[i]));
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/hits.sqlite", dir);
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	CHECK(cs, db);
	CHECK(cs, q_int(db, "SELECT count(*) FROM strings", -1) == nr);
	CHECK(cs, q_int(db, "SELECT id FROM strings WHERE str = 'g'", -1) ==
			  nr - 1);
	CHECK(cs,
	      q_int(db, "SELECT id FROM strings WHERE str = 'trig'", -1) == nr);
	CHECK(cs, q_int(db, "SELECT count(*) FROM strings WHERE str = 'f'",
			-1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM hit WHERE name = 'trig'",
			-1) == 2);
	CHECK(cs,
	      q_int(db, "SELECT count(*) FROM hit WHERE name = 'f'", -1) == 1);
	CHECK(cs, q_int(db, "SELECT count(*) FROM hit WHERE name IS NULL",
			-1) == 1);
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/* Go goroutines: the goroutine table, and each slice's goroutine
 * through its segment (NULL where none). */
static void test_goroutines(struct check_state *cs)
{
	struct mt_trace t;
	struct mt_thread *th;
	char dir[64], path[128], err[256];
	sqlite3 *db;
	uint32_t f1 = 0;

	mt_trace_init(&t);
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/go.sqlite", dir);
	CHECK(cs, mt_trace_add_process(&t, 5, "gofib") != NULL);
	th = mt_trace_add_thread(&t, 5, 5, "gofib");
	CHECK(cs, th != NULL);
	if (th)
		f1 = mt_frame_intern(&t, mt_str_intern(&t.strs, "main.work"), 0,
				     0x1000);
	for (uint32_t i = 0; th && i < 3; i++) {
		struct mt_segment g = {.tid = 5,
				       .start = 100 * i,
				       .end = 100 * i + 100,
				       .goroutine = i == 1 ? 0 : i / 2 + 1};
		struct mt_slice s = {
			.ts = 100 * i,
			.dur = 50,
			.frame = f1,
			.parent = MT_NONE,
			.segment = i,
			.flags = i == 2 ? MT_SLICE_RESUMED |
						  MT_SLICE_RESUME_GUESSED
					: 0};

		CHECK(cs,
		      mt_trace_add_segment(&t, &g) && mt_thread_push(th, &s));
	}
	for (uint32_t i = 0; i < 2; i++) {
		struct mt_goroutine g = {
			.pid = 5,
			.goid = i ? 0 : 7,
			.start = mt_str_intern(&t.strs, "main.work"),
			.first = 10 + i,
			.last = 20 + i,
			.nr = i};

		CHECK(cs, mt_trace_add_goroutine(&t, &g) != NULL);
	}
	CHECKF(cs, wr_sqlite(&t, path, NULL, err, sizeof(err)) == 0, "%s", err);
	db = db_open(path);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM goroutine WHERE id = 1 AND"
			" goid = 7 AND upid = 1 AND pid = 5 AND"
			" name = 'goroutine 7 (main.work)' AND"
			" start_function = 'main.work' AND first_ts = 10"
			" AND last_ts = 20",
			-1) == 1);
	CHECK(cs, q_int(db,
			"SELECT count(*) FROM goroutine WHERE id = 2 AND"
			" goid IS NULL AND name = 'goroutine ~1 "
			"(main.work)'",
			-1) == 1);
	{
		sqlite3_stmt *st = NULL;
		const char *got = "";

		if (sqlite3_prepare_v2(
			    db,
			    "SELECT group_concat(coalesce(goroutine,"
			    " 0) || ':' || resumed || resume_guessed,"
			    " ' ') FROM (SELECT * FROM slices ORDER"
			    " BY ts)",
			    -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			got = (const char *)sqlite3_column_text(st, 0);
		CHECKF(cs, got && !strcmp(got, "1:00 0:00 2:11"), "got '%s'",
		       got ? got : "");
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

/* Writing with jobs threads (wr_sqlite_to_opts). */
static int write_part(const struct mt_trace *t, const char *path, unsigned jobs,
		      unsigned part, char *err, size_t errlen)
{
	struct wr_sqlite_opts o = {.jobs = jobs, .fn_part = part};
	struct mt_outfile f;
	int rc = mt_outfile_begin(&f, path, err, errlen);

	if (rc)
		return rc;
	rc = wr_sqlite_to_opts(t, &f, &o, NULL, err, errlen);
	if (rc)
		mt_outfile_abort(&f);
	else
		rc = mt_outfile_commit(&f, err, errlen);
	return rc;
}

static int write_jobs(const struct mt_trace *t, const char *path, unsigned jobs,
		      char *err, size_t errlen)
{
	return write_part(t, path, jobs, 0, err, errlen);
}

/* The two files hold the same bytes. */
static int same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int same = fa && fb, ca, cb;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		same = ca == cb;
		if (ca == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/*
 * Every row of slice_raw as the model has it (ids follow threads), read
 * in id order; then each index walked whole: its entries counted and
 * summed against the model.
 */
static int rows_match(sqlite3 *db, const struct mt_trace *t)
{
	sqlite3_stmt *st;
	uint64_t base = 0, roots = 0, pairs = 0, tracks = 0;
	int ok = 1;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, ts, dur, track_id, depth,"
			       " parent_id FROM slice_raw ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	for (size_t ti = 0; ok && ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];

		for (size_t j = 0; ok && j < th->nr_slices; j++) {
			const struct mt_slice *s = &th->slices[j];

			roots += s->parent == MT_NONE;
			if (s->parent != MT_NONE)
				pairs += (base + s->parent) * 3 + base + j;
			tracks += ti * 5 + base + j;
			ok = sqlite3_step(st) == SQLITE_ROW &&
			     sqlite3_column_int64(st, 0) ==
				     (int64_t)(base + j) &&
			     sqlite3_column_int64(st, 1) == (int64_t)s->ts &&
			     sqlite3_column_int64(st, 2) == (int64_t)s->dur &&
			     sqlite3_column_int64(st, 3) == (int64_t)ti &&
			     sqlite3_column_int64(st, 4) == s->depth &&
			     (s->parent == MT_NONE
				      ? sqlite3_column_type(st, 5) ==
						SQLITE_NULL
				      : sqlite3_column_int64(st, 5) ==
						(int64_t)(base + s->parent));
		}
		base += th->nr_slices;
	}
	ok = ok && sqlite3_step(st) == SQLITE_DONE;
	sqlite3_finalize(st);
	return ok &&
	       q_int(db,
		     "SELECT count(*) FROM slice_raw INDEXED BY slice_track_ts"
		     " WHERE track_id >= 0",
		     -1) == (int64_t)base &&
	       q_int(db,
		     "SELECT count(*) FROM slice_raw INDEXED BY slice_parent"
		     " WHERE parent_id IS NULL",
		     -1) == (int64_t)roots &&
	       q_int(db,
		     "SELECT count(*) FROM slice_raw INDEXED BY slice_parent"
		     " WHERE parent_id >= 0",
		     -1) == (int64_t)(base - roots) &&
	       /* Every (parent_id, id) pair, through the index. */
	       q_int(db,
		     "SELECT sum(parent_id * 3 + id) FROM slice_raw"
		     " INDEXED BY slice_parent WHERE parent_id >= 0",
		     -1) == (int64_t)pairs &&
	       q_int(db,
		     "SELECT sum(track_id * 5 + id) FROM slice_raw"
		     " INDEXED BY slice_track_ts WHERE track_id >= 0",
		     -1) == (int64_t)tracks;
}

/*
 * The slice table and its indexes are built in ranges of a fixed number
 * of rows, on as many threads as there are jobs, and joined in order:
 * over several ranges (a random call tree, a parent whose children run
 * through more than one range, a thread whose starts are out of order,
 * ranges that end in an empty thread and in a small one), the file must
 * be the same for 1 and 4 jobs, whole for SQLite, and hold every row.
 * Then again with a thread that is no depth-first walk, which has
 * slice_parent written on one thread.
 */
static void test_ranges(struct check_state *cs)
{
	static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
	uint32_t nm[6], dso;
	struct mt_trace t;
	char dir[64], p1[128], p4[128], err[256];

	mt_trace_init(&t);
	for (int i = 0; i < 6; i++)
		nm[i] = mt_str_intern(&t.strs, names[i]);
	dso = mt_str_intern(&t.strs, "libx.so");
	for (uint32_t i = 0; i < 5; i++)
		if (!mt_trace_add_thread(&t, 7, 70 + i, "r"))
			exit(2);
	gen_tree(&t, 0, 100000, 40, nm, 6, &dso, 1, 5);
	/* One root with 80000 children. */
	for (uint32_t i = 0; i < 80001; i++) {
		struct mt_slice s = {
			.ts = 5000 + i,
			.dur = i ? 1 : 90000,
			.frame = mt_frame_intern(&t, nm[i % 6], dso, 0x1000),
			.depth = i ? 1 : 0,
			.parent = i ? 0 : MT_NONE,
			.segment = MT_NONE};

		if (!mt_thread_push(&t.threads[1], &s))
			exit(2);
	}
	/* Thread 2 is empty; thread 3's starts go backwards. */
	for (uint32_t i = 0; i < 70000; i++) {
		struct mt_slice s = {
			.ts = 1000000 - i * 3,
			.dur = 2,
			.frame = mt_frame_intern(&t, nm[i % 5], dso, 0x2000),
			.parent = MT_NONE,
			.segment = MT_NONE};

		if (!mt_thread_push(&t.threads[3], &s))
			exit(2);
	}
	gen_tree(&t, 4, 3, 2, nm, 6, &dso, 1, 9);
	tmpdir_make(dir, sizeof(dir));
	snprintf(p1, sizeof(p1), "%s/j1.sqlite", dir);
	snprintf(p4, sizeof(p4), "%s/j4.sqlite", dir);
	for (int walk = 1; walk >= 0; walk--) {
		sqlite3 *db;

		if (!walk) {
			/* Slice 2 of thread 4's parent (slice 0) is closed
			 * when it begins: slice 1 is a root. */
			struct mt_slice s = {.ts = 1, .parent = MT_NONE};

			t.threads[4].nr_slices = 0;
			for (uint32_t i = 0; i < 3; i++) {
				s.ts = 10 + i;
				s.parent = i == 2 ? 0 : MT_NONE;
				s.depth = i == 2;
				s.segment = MT_NONE;
				if (!mt_thread_push(&t.threads[4], &s))
					exit(2);
			}
		}
		CHECKF(cs, write_jobs(&t, p1, 1, err, sizeof(err)) == 0, "%s",
		       err);
		CHECKF(cs, write_jobs(&t, p4, 4, err, sizeof(err)) == 0, "%s",
		       err);
		CHECKF(cs, same_bytes(p1, p4), "walk %d: -j 1 and -j 4 differ",
		       walk);
		/* The function figures in parts cut inside every tree
		 * (thread 0's is 40 deep), thread 1's root open across all
		 * of its parts, thread 4 in one part. */
		for (unsigned part = 61; part <= 997; part += 936) {
			CHECKF(cs,
			       write_part(&t, p4, 3, part, err, sizeof(err)) ==
				       0,
			       "%s", err);
			CHECKF(cs, same_bytes(p1, p4),
			       "walk %d: parts of %u slices differ from -j 1",
			       walk, part);
		}
		db = db_open(p4);
		CHECKF(cs, db && integrity_ok(db), "walk %d: integrity_check",
		       walk);
		CHECKF(cs, db && rows_match(db, &t), "walk %d: rows", walk);
		sqlite3_close(db);
	}
	/* A slice out of range in the second chunk of the frame pass (of
	 * 65536 slices) and a later one: the first is named at every -j. */
	t.threads[1].slices[70000].frame = (uint32_t)t.nr_frames;
	t.threads[3].slices[5].frame = (uint32_t)t.nr_frames + 1;
	for (unsigned jobs = 1; jobs <= 4; jobs += 3) {
		err[0] = 0;
		CHECKF(cs, write_jobs(&t, p1, jobs, err, sizeof(err)) != 0,
		       "-j %u: a slice out of range written", jobs);
		CHECKF(cs,
		       strstr(err, "thread 71 slice 70000: parent or string id "
				   "out of range") != NULL,
		       "-j %u: %s", jobs, err);
	}
	tmpdir_remove(dir);
	mt_trace_free(&t);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_roundtrip);
	RUN(&st, test_empty);
	RUN(&st, test_metadata);
	RUN(&st, test_hit_names);
	RUN(&st, test_goroutines);
	RUN(&st, test_ranges);
	return CHECK_DONE(&st);
}
