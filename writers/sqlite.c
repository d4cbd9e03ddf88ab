/* SPDX-License-Identifier: MIT */
/*
 * The SQLite writer: the model as a database whose tables carry
 * trace_processor's names and columns, so that a query written in
 * Perfetto's SQL page runs here unchanged.
 *
 * Ids.  trace_processor numbers slices in global (ts, arrival) order; we
 * give each thread a contiguous range of ids in the model's pre-order
 * instead.  Then a slice's parent_id is its thread's base plus the model's
 * parent index, with no map in memory, and the slices come in the order
 * of the slice b-tree.  Compare with trace_processor's output on (tid,
 * ts, dur, depth, name), never on id.  utid and upid start at 1 because
 * trace_processor keeps 0 for its implicit "swapper" rows; we add no such
 * rows, but a 0 is never one of our threads.
 *
 * Args.  trace_processor interns arg sets: slices whose args are equal
 * share one arg_set_id.  We do the same, keyed on (address, dso, flags),
 * which are the args a slice carries.  A trace has millions of slices but
 * only as many distinct sets as (function, flag combination) pairs, so the
 * args table stays small while every slice keeps its args and queries
 * joining slice with args see what they would see in Perfetto.  A slice
 * with no address, no dso and no flags has a NULL arg_set_id.
 *
 * Columns that trace_processor has but we never fill (thread_ts and
 * friends) and its aliases (cat, slice_id) are virtual generated columns:
 * they cost no bytes per row yet SELECT of them works.  Reading them needs
 * SQLite 3.31 (2020) or later.
 *
 * Frames.  What many slices share, a name and an arg set (and with the
 * set its address, dso, flags, source position and call site), is one
 * row of frame; a row of
 * slice_raw keeps what is the slice's own (times, track, depth, parent,
 * segment) and its frame_id, and the view slice joins them back.
 *
 * Writing.  SQLite writes the schema and every table but slice_raw, its
 * two indexes and the function figures, and is closed; btree.c then
 * writes those three b-trees into the file as SQLite lays them out (in
 * fixed ranges of rows, on the jobs' threads: sq_pages.c), and SQLite, opened
 * again, adds the function figures, summed meanwhile, after them.  Ids follow
 * threads and, in a thread, start times, so the rows and the (track_id, ts)
 * entries come in key order as the model is read, and the parent_id entries by
 * following sibling links: no sort, no b-tree descent.
 *
 * Cost.  On 1.7M slices (mt-synth --seed 4242 --branches 8000000) the
 * database costs 0.13 us of CPU per slice and 55.6 bytes: 27.6 in
 * slice_raw, 16.0 and 11.8 in its indexes.  SQLite's own inserts cost
 * 1.5 us a slice (its bytecode engine for every row, its sorter for every
 * index) and 64.5 bytes; docs/writers.md has each step measured, and what
 * did not help.
 *
 * Durability.  The database is built in a temporary file beside the output
 * (util's mt_outfile) with journaling and syncing off, then synced once
 * and renamed into place.  A crash leaves at worst a stray temporary
 * file, never a damaged output; on an error the temporary file goes.
 */
#include "stats/stats.h"
#include "util/err.h"
#include "writers/btree_internal.h"
#include "writers/sq_internal.h"
#include "writers/writers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The columns of function and caller, in struct st_fig's order. */
#define FIGURES                                                                \
	" calls INTEGER, inferred INTEGER, total_dur INTEGER,"                 \
	" self_dur INTEGER, inferred_dur INTEGER, p50_dur INTEGER,"            \
	" p90_dur INTEGER, p99_dur INTEGER, max_dur INTEGER"

static const char schema[] =
	"CREATE TABLE process("
	"upid INTEGER PRIMARY KEY, pid INTEGER, name TEXT, start_ts INTEGER,"
	" end_ts INTEGER, parent_upid INTEGER, uid INTEGER,"
	" android_appid INTEGER, android_user_id INTEGER, cmdline TEXT,"
	" arg_set_id INTEGER, machine_id INTEGER);"
	"CREATE TABLE thread("
	"utid INTEGER PRIMARY KEY, tid INTEGER, name TEXT, start_ts INTEGER,"
	" end_ts INTEGER, upid INTEGER, is_main_thread INTEGER,"
	" is_idle INTEGER, machine_id INTEGER, arg_set_id INTEGER);"
	"CREATE TABLE thread_track("
	"id INTEGER PRIMARY KEY, name TEXT, type TEXT, parent_id INTEGER,"
	" source_arg_set_id INTEGER, machine_id INTEGER, utid INTEGER);"
	"CREATE VIEW track AS SELECT id, name, type, parent_id,"
	" source_arg_set_id, machine_id FROM thread_track;"
	/*
	 * Slices are stored compactly: what many slices share (name,
	 * args, address, dso, flags) once per frame, names and dsos as ids
	 * into strings; the view slice gives them Perfetto's columns (and
	 * ours) by name.  slice_raw and its two indexes are filled by
	 * btree.c, not by SQLite: keep their columns in step with
	 * write_slice_rows() and the index writers.
	 */
	"CREATE TABLE strings(id INTEGER PRIMARY KEY, str TEXT);"
	"CREATE TABLE frame("
	"id INTEGER PRIMARY KEY, name_id INTEGER, arg_set_id INTEGER,"
	" address INTEGER, dso_id INTEGER, flags INTEGER NOT NULL,"
	" source_id INTEGER, call_site_id INTEGER);"
	"CREATE TABLE slice_raw("
	"id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, dur INTEGER NOT NULL,"
	" track_id INTEGER NOT NULL, depth INTEGER NOT NULL,"
	" parent_id INTEGER, frame_id INTEGER NOT NULL, segment INTEGER);"
	"CREATE INDEX slice_track_ts ON slice_raw(track_id, ts);"
	"CREATE INDEX slice_parent ON slice_raw(parent_id);"
	"CREATE VIEW slice AS SELECT s.id AS id, s.ts AS ts, s.dur AS dur,"
	" s.track_id AS track_id, NULL AS category, n.str AS name,"
	" s.depth AS depth, s.parent_id AS parent_id,"
	" f.arg_set_id AS arg_set_id, f.address AS address, d.str AS dso,"
	" (f.flags & 1) != 0 AS inferred_start,"
	" (f.flags & 2) != 0 AS inferred_end,"
	" (f.flags & 4) != 0 AS joined,"
	" (f.flags & 64) != 0 AS tail,"
	" (f.flags & 8) != 0 AS is_gap,"
	" (f.flags & 16) != 0 AS syscall,"
	" (f.flags & 32) != 0 AS untraced,"
	" (f.flags & 128) != 0 AS unknown,"
	" (f.flags & 256) != 0 AS depth_guessed,"
	" (f.flags & 512) != 0 AS inlined,"
	" (f.flags & 1024) != 0 AS resumed,"
	" (f.flags & 2048) != 0 AS resume_guessed,"
	" s.segment AS segment, src.str AS source, cs.str AS call_site,"
	" (SELECT g.goroutine FROM segment g WHERE g.id = s.segment)"
	" AS goroutine,"
	" NULL AS thread_ts, NULL AS thread_dur,"
	" NULL AS thread_instruction_count,"
	" NULL AS thread_instruction_delta,"
	" NULL AS cat, s.id AS slice_id"
	" FROM slice_raw s LEFT JOIN frame f ON f.id = s.frame_id"
	" LEFT JOIN strings n ON n.id = f.name_id"
	" LEFT JOIN strings d ON d.id = f.dso_id"
	" LEFT JOIN strings src ON src.id = f.source_id"
	" LEFT JOIN strings cs ON cs.id = f.call_site_id;"
	"CREATE VIEW slices AS SELECT * FROM slice;"
	"CREATE TABLE args("
	"id INTEGER PRIMARY KEY, arg_set_id INTEGER NOT NULL, flat_key TEXT,"
	" key TEXT, int_value INTEGER, string_value TEXT, real_value REAL,"
	" value_type TEXT,"
	" display_value TEXT AS (CASE value_type"
	"  WHEN 'pointer' THEN printf('0x%x', int_value)"
	"  WHEN 'string' THEN string_value"
	"  WHEN 'bool' THEN CASE int_value WHEN 0 THEN 'false' ELSE 'true' END"
	"  WHEN 'real' THEN CAST(real_value AS TEXT)"
	"  ELSE CAST(int_value AS TEXT) END) VIRTUAL);"
	/* goroutine: the Go goroutine whose stack the segment ran on (its
	 * id in the goroutine table), NULL for none */
	"CREATE TABLE segment("
	"id INTEGER PRIMARY KEY, utid INTEGER, tid INTEGER, ts INTEGER,"
	" dur INTEGER, end_reason TEXT, end_ip INTEGER, goroutine INTEGER);"
	/* The Go goroutines that ran: goid is the runtime's id, NULL when
	 * the capture did not give it (then name numbers it "~N"). */
	"CREATE TABLE goroutine("
	"id INTEGER PRIMARY KEY, upid INTEGER, pid INTEGER, goid INTEGER,"
	" name TEXT, start_function TEXT, first_ts INTEGER,"
	" last_ts INTEGER);"
	"CREATE TABLE stitch("
	"id INTEGER PRIMARY KEY, utid INTEGER, tid INTEGER,"
	" segment_a INTEGER, segment_b INTEGER, frames_joined INTEGER,"
	" score REAL, reason TEXT);"
	/* Where the depth of the frames from `depth` down was a stitching
	 * guess: a slice overlapping a row at or below its depth is
	 * depth_guessed. */
	"CREATE TABLE guess("
	"id INTEGER PRIMARY KEY, utid INTEGER, tid INTEGER, ts INTEGER,"
	" dur INTEGER, depth INTEGER);"
	"CREATE TABLE gap("
	"id INTEGER PRIMARY KEY, utid INTEGER, ts INTEGER, dur INTEGER,"
	" name TEXT, reason TEXT, slice_id INTEGER, segment INTEGER);"
	"CREATE TABLE hit("
	"id INTEGER PRIMARY KEY, ts INTEGER, mark_start INTEGER, pid INTEGER,"
	" tid INTEGER, utid INTEGER, ip INTEGER, arg INTEGER, name TEXT);"
	/* The values the program wrote (PTWRITE), each with the innermost
	 * slice of its thread it was written in. */
	"CREATE TABLE ptwrite("
	"id INTEGER PRIMARY KEY, ts INTEGER, utid INTEGER, tid INTEGER,"
	" ip INTEGER, value INTEGER, slice_id INTEGER);"
	/* What made the capture and the database, under trace_processor's
	 * column names for its metadata table. */
	"CREATE TABLE metadata("
	"name TEXT PRIMARY KEY, key_type TEXT, int_value INTEGER,"
	" str_value TEXT);"
	/* What each function cost (stats/): a function is a name, a dso
	 * and whether the calls were inlined; caller has the same figures
	 * for the calls of callee_id made from caller_id's slices. */
	"CREATE TABLE function("
	"id INTEGER PRIMARY KEY, name TEXT, dso TEXT, inlined INTEGER," FIGURES
	", hist TEXT);"
	"CREATE TABLE caller("
	"id INTEGER PRIMARY KEY, caller_id INTEGER, callee_id INTEGER," FIGURES
	");"
	"CREATE INDEX caller_callee ON caller(callee_id);"
	/* The calling-context tree: each distinct path of calls from a
	 * root, every thread's merged (what folded stacks are made of). */
	/* The slowest calls of each function (ST_KEPT at most). */
	"CREATE TABLE slowest("
	"function_id INTEGER, slice_id INTEGER, dur INTEGER);"
	"CREATE TABLE call_path("
	"id INTEGER PRIMARY KEY, parent_id INTEGER, function_id INTEGER,"
	" calls INTEGER, total_dur INTEGER, self_dur INTEGER);"
	"CREATE INDEX args_set ON args(arg_set_id);"
	"CREATE INDEX gap_ts ON gap(utid, ts);";

/* slice's flag columns test the bits of enum mt_slice_flags: keep the
 * view in the schema in step with model.h. */
_Static_assert(MT_SLICE_INFERRED_START == 1 && MT_SLICE_INFERRED_END == 2 &&
		       MT_SLICE_JOINED == 4 && MT_SLICE_GAP == 8 &&
		       MT_SLICE_SYSCALL == 16 && MT_SLICE_UNTRACED == 32 &&
		       MT_SLICE_TAIL == 64 && MT_SLICE_UNKNOWN == 128 &&
		       MT_SLICE_DEPTH_GUESSED == 256 &&
		       MT_SLICE_INLINED == 512 && MT_SLICE_RESUMED == 1024 &&
		       MT_SLICE_RESUME_GUESSED == 2048,
	       "slice flags changed: update the slice view");

/* Bump when a table or column changes meaning. */
#define SCHEMA_VERSION 6

static const char *const stmt_sql[S_NR] = {
	[S_PROCESS] = "INSERT INTO process(upid, pid, name, cmdline)"
		      " VALUES(?, ?, ?, ?)",
	[S_THREAD] = "INSERT INTO thread(utid, tid, name, upid,"
		     " is_main_thread) VALUES(?, ?, ?, ?, ?)",
	[S_TRACK] = "INSERT INTO thread_track(id, name, type, utid)"
		    " VALUES(?, ?, 'thread_execution', ?)",
	[S_FRAME] = "INSERT INTO frame(id, name_id, arg_set_id, address,"
		    " dso_id, flags, source_id, call_site_id)"
		    " VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	[S_STRING] = "INSERT INTO strings(id, str) VALUES(?, ?)",
	[S_ARG] = "INSERT INTO args(arg_set_id, flat_key, key, int_value,"
		  " string_value, value_type) VALUES(?1, ?2, ?2, ?3, ?4, ?5)",
	[S_SEGMENT] = "INSERT INTO segment(id, utid, tid, ts, dur, end_reason,"
		      " end_ip, goroutine) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	[S_GOROUTINE] = "INSERT INTO goroutine(id, upid, pid, goid, name,"
			" start_function, first_ts, last_ts)"
			" VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	[S_STITCH] = "INSERT INTO stitch(id, utid, tid, segment_a, segment_b,"
		     " frames_joined, score, reason)"
		     " VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	[S_GUESS] = "INSERT INTO guess(id, utid, tid, ts, dur, depth)"
		    " VALUES(?, ?, ?, ?, ?, ?)",
	[S_GAP] = "INSERT INTO gap(id, utid, ts, dur, name, reason, slice_id,"
		  " segment) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	[S_HIT] = "INSERT INTO hit(id, ts, mark_start, pid, tid, utid, ip,"
		  " arg, name) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[S_PTWRITE] = "INSERT INTO ptwrite(id, ts, utid, tid, ip, value,"
		      " slice_id) VALUES(?, ?, ?, ?, ?, ?, ?)",
	[S_FUNCTION] = "INSERT INTO function VALUES(?, ?, ?, ?,"
		       " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[S_CALL_PATH] = "INSERT INTO call_path VALUES(?, ?, ?, ?, ?, ?)",
	[S_SLOWEST] = "INSERT INTO slowest VALUES(?, ?, ?)",
	[S_CALLER] = "INSERT INTO caller VALUES(?, ?, ?,"
		     " ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

/* Sets the one-line message; returns rc so callers can `return sq_fail()`. */
int sq_fail(struct sq *w, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(w->err, w->errlen, rc, w->path, fmt, ap);
	va_end(ap);
	return rc;
}

int sq_fail_db(struct sq *w, const char *what)
{
	return sq_fail(w, -EIO, "sqlite: %s: %s", what,
		       w->db ? sqlite3_errmsg(w->db) : "out of memory");
}

static int exec(struct sq *w, const char *sql)
{
	if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail_db(w, "executing statements");
	return 0;
}

/* Runs a bound insert and readies it for the next row. */
int sq_step(struct sq *w, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sq_fail_db(w, "inserting");
	return 0;
}

/* String id 0 is "": stored as NULL, as trace_processor leaves names it
 * does not know. */
void sq_bind_str(struct sq *w, sqlite3_stmt *st, int i, uint32_t id)
{
	if (id)
		sqlite3_bind_text(st, i, mt_str(&w->t->strs, id), -1,
				  SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Addresses and times are unsigned in the model, signed in SQLite: they
 * are stored bit for bit, so kernel addresses read back negative, as in
 * trace_processor. */
void sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

/* 0 means "none" for the optional numbers in the model. */
void sq_bind_opt(sqlite3_stmt *st, int i, uint64_t v)
{
	if (v)
		sq_bind_u64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/* The figures from column i on; percentiles NULL when no call was
 * seen whole. */
static void bind_fig(sqlite3_stmt *st, int i, const struct st_fig *f)
{
	bool whole = f->calls > f->inferred;

	sq_bind_u64(st, i, f->calls);
	sq_bind_u64(st, i + 1, f->inferred);
	sq_bind_u64(st, i + 2, f->total);
	sqlite3_bind_int64(st, i + 3, f->self);
	sq_bind_u64(st, i + 4, f->inferred_dur);
	for (int k = 0; k < 4; k++) {
		const uint64_t v[4] = {f->p50, f->p90, f->p99, f->max};

		if (whole)
			sq_bind_u64(st, i + 5 + k, v[k]);
		else
			sqlite3_bind_null(st, i + 5 + k);
	}
}

/* The histogram as "BUCKET:CALLS ..." (stats.h's buckets), the empty
 * ones left out. */
static int bind_hist(struct sq *w, sqlite3_stmt *st, int i,
		     const uint64_t *hist)
{
	char buf[ST_HIST * 24];
	size_t at = 0;

	buf[0] = 0;
	for (unsigned b = 0; b < ST_HIST; b++)
		if (hist[b])
			at += (size_t)snprintf(buf + at, sizeof(buf) - at,
					       "%s%u:%" PRIu64, at ? " " : "",
					       b, hist[b]);
	if (sqlite3_bind_text(st, i, buf, -1, SQLITE_TRANSIENT) != SQLITE_OK)
		return sq_fail_db(w, "binding");
	return 0;
}

/* A function's id: one per (name, dso, inlined), found through each
 * model frame once. */
struct fnmap {
	uint32_t *of_frame; /* model frame * 2 + inlined -> id, or ST_NONE */
	struct mt_hmap index[2]; /* name << 32 | dso -> id, by inlined */
	struct fnkey {
		uint32_t name, dso;
		bool inlined;
	} * keys;
	size_t nr, cap;
};

/* The id of a function, given one when new. */
static int fn_key_id(struct fnmap *m, struct fnkey k, uint32_t *fn)
{
	uint64_t key = (uint64_t)k.name << 32 | k.dso, v;

	if (!mt_hmap_find(&m->index[k.inlined], key, &v)) {
		if (mt_grow((void **)&m->keys, &m->cap, m->nr + 1,
			    sizeof(*m->keys)) ||
		    mt_hmap_set(&m->index[k.inlined], key, m->nr))
			return -ENOMEM;
		m->keys[m->nr] = k;
		v = m->nr++;
	}
	*fn = (uint32_t)v;
	return 0;
}

static int fn_of(struct fnmap *m, const struct mt_trace *t,
		 const struct mt_slice *s, uint32_t *fn)
{
	bool inl = (s->flags & MT_SLICE_INLINED) != 0;
	uint32_t *slot;
	const struct mt_frame *fr;

	/* Summed beside the pass that refuses such a slice, with a line. */
	if (s->frame >= t->nr_frames)
		return -EINVAL;
	slot = &m->of_frame[(size_t)s->frame * 2 + inl];
	fr = mt_slice_frame(t, s);
	if (*slot != ST_NONE) {
		*fn = *slot;
		return 0;
	}
	if (fn_key_id(m, (struct fnkey){fr->name, fr->dso, inl}, fn))
		return -ENOMEM;
	*slot = *fn;
	return 0;
}

static void fnmap_free(struct fnmap *m)
{
	free(m->keys);
	mt_hmap_free(&m->index[0]);
	mt_hmap_free(&m->index[1]);
	m->keys = NULL;
	m->nr = m->cap = 0;
}

static int sum_functions(const struct mt_trace *t, struct fnmap *m,
			 struct st_agg *a)
{
	uint64_t base = 0; /* the thread's first slice id in slice_raw */
	uint32_t fn;

	for (size_t ti = 0; ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];

		for (size_t j = 0; j < th->nr_slices; j++) {
			const struct mt_slice *s = &th->slices[j];
			bool inf = (s->flags & (MT_SLICE_INFERRED_START |
						MT_SLICE_INFERRED_END)) != 0;

			if (fn_of(m, t, s, &fn) || st_grow(a, (uint32_t)m->nr))
				return -ENOMEM;
			if (st_add(a, fn, base + j,
				   s->parent == MT_NONE ? ST_ROOT
							: base + s->parent,
				   s->dur, inf))
				return -ENOMEM;
		}
		st_end_thread(a);
		base += th->nr_slices;
	}
	return st_finish(a, 1);
}

/*
 * The figures of the tables function and caller (stats/): the durations
 * of every whole call are held until their percentiles are found, 4
 * bytes a slice.  Summed from the model alone, beside the slice table's
 * pages when there are threads to spare (fn_sums_start), and freed once
 * their rows are in.
 *
 * With threads to spare, each thread is summed in parts of FN_PART
 * slices (fixed, so the ids are the same at every -j) on a pool, each
 * part with function ids of its own, then the parts are merged in order
 * (st_merge).  That sum is the serial one for a pre-order walk, which
 * every thread of the model is; a part that finds otherwise has the
 * whole sum made again serially, as st_add() treats such a thread.
 */
#define FN_PART	   (1u << 18)
#define FN_THREADS 8

struct fn_sums {
	const struct mt_trace *t;
	struct fnmap m;
	struct st_agg a;
	bool have_agg;
	int rc;
	pthread_t th;
	bool threaded;
	unsigned jobs, part; /* threads, slices a part */
	uint32_t **scratch;  /* a worker's frame slots -> its part's ids */
	uint32_t *of_part;   /* scratch: a part's ids -> m's */
	size_t cap_of_part;
	bool not_walk;
};

struct fn_part {
	uint32_t ti;
	uint32_t lo, hi; /* the thread's slices [lo, hi) */
	uint64_t base;	 /* the thread's first slice id */
	struct st_agg a;
	struct fnmap m; /* its ids; of_frame is the worker's */
	bool have_agg;
	bool not_walk;
};

static void part_clear(struct fn_part *p)
{
	if (p->have_agg)
		st_free(&p->a);
	fnmap_free(&p->m);
	p->have_agg = false;
}

/* Slice c's parent is an ancestor of slice c - 1 (or c - 1 itself), as
 * in a pre-order walk: what st_add() finds on its stack. */
static bool walks_on(const struct mt_slice *sl, uint32_t c)
{
	uint32_t par = sl[c].parent, x = c - 1;

	if (par == MT_NONE)
		return true;
	if (!c || par >= c)
		return false;
	while (x != par) {
		if (sl[x].parent == MT_NONE || sl[x].parent >= x)
			return false;
		x = sl[x].parent;
	}
	return true;
}

static int part_work(void *ctx, unsigned worker, void *job)
{
	struct fn_sums *fs = ctx;
	struct fn_part *p = job;
	const struct mt_trace *t = fs->t;
	const struct mt_slice *sl = t->threads[p->ti].slices;
	uint32_t *chain = NULL, n = 0, fn;
	int rc;

	p->m.of_frame = fs->scratch[worker];
	memset(p->m.of_frame, 0xff,
	       (size_t)t->nr_frames * 2 * sizeof(uint32_t));
	rc = st_init(&p->a, 0);
	p->have_agg = !rc;
	/* The slices open before the part: slice lo - 1 and its callers. */
	for (uint32_t x = p->lo - 1; !rc && p->lo && x != MT_NONE;
	     x = sl[x].parent) {
		if (n && sl[chain[n - 1]].parent >= chain[n - 1]) {
			p->not_walk = true;
			break;
		}
		if (!(n & (n - 1))) {
			uint32_t *c =
				reallocarray(chain, n ? 2 * n : 1, sizeof(*c));

			if (!c) {
				rc = -ENOMEM;
				break;
			}
			chain = c;
		}
		chain[n++] = x;
	}
	for (uint32_t k = n; !rc && !p->not_walk && k-- > 0;) {
		const struct mt_slice *s = &sl[chain[k]];

		rc = fn_of(&p->m, t, s, &fn);
		if (!rc)
			rc = st_grow(&p->a, (uint32_t)p->m.nr);
		if (!rc)
			rc = st_add_open(&p->a, fn, p->base + chain[k],
					 s->parent == MT_NONE
						 ? ST_ROOT
						 : p->base + s->parent);
	}
	for (uint32_t j = p->lo; !rc && !p->not_walk && j < p->hi; j++) {
		const struct mt_slice *s = &sl[j];
		bool inf = (s->flags & (MT_SLICE_INFERRED_START |
					MT_SLICE_INFERRED_END)) != 0;

		if (!walks_on(sl, j)) {
			p->not_walk = true;
			break;
		}
		rc = fn_of(&p->m, t, s, &fn);
		if (!rc)
			rc = st_grow(&p->a, (uint32_t)p->m.nr);
		if (!rc)
			rc = st_add(&p->a, fn, p->base + j,
				    s->parent == MT_NONE ? ST_ROOT
							 : p->base + s->parent,
				    s->dur, inf);
	}
	if (!rc)
		st_end_thread(&p->a);
	free(chain);
	p->m.of_frame = NULL;
	return rc;
}

/* The parts in order: each one's ids made m's, its sums added. */
static int part_finish(void *ctx, void *job)
{
	struct fn_sums *fs = ctx;
	struct fn_part *p = job;
	int rc = 0;

	fs->not_walk |= p->not_walk;
	if (fs->not_walk)
		goto out;
	if (mt_grow((void **)&fs->of_part, &fs->cap_of_part,
		    p->m.nr ? p->m.nr : 1, sizeof(*fs->of_part))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; !rc && k < p->m.nr; k++)
		rc = fn_key_id(&fs->m, p->m.keys[k], &fs->of_part[k]);
	if (!rc)
		rc = st_grow(&fs->a, (uint32_t)fs->m.nr);
	if (!rc)
		rc = st_merge(&fs->a, &p->a, fs->of_part);
out:
	part_clear(p);
	return rc;
}

/* Every thread in parts on the pool; 0 or -ENOMEM. */
static int sum_in_parts(struct fn_sums *fs)
{
	const struct mt_trace *t = fs->t;
	unsigned depth, nr_slots;
	struct fn_part *slots;
	struct mt_pool *pool = NULL;
	uint64_t base = 0, k = 0;
	int rc = -ENOMEM;

	/* As many threads as the slice table's pages have: slice_parent's
	 * pages wait for the figures (fn_sums_done).  Each part waiting
	 * holds its durations, so no more. */
	if (fs->jobs > FN_THREADS)
		fs->jobs = FN_THREADS;
	depth = fs->jobs + 2;
	nr_slots = depth + 1;
	slots = calloc(nr_slots, sizeof(*slots));
	fs->scratch = calloc(fs->jobs, sizeof(*fs->scratch));
	if (!slots || !fs->scratch)
		goto out;
	for (unsigned i = 0; i < fs->jobs; i++)
		if (!(fs->scratch[i] = malloc(((size_t)t->nr_frames * 2 + 1) *
					      sizeof(uint32_t))))
			goto out;
	rc = mt_pool_start(&pool, fs->jobs, part_work, part_finish, fs, depth);
	for (size_t ti = 0; !rc && ti < t->nr_threads; ti++) {
		uint32_t n = (uint32_t)t->threads[ti].nr_slices;

		for (uint32_t lo = 0; !rc && lo < n; lo += fs->part, k++) {
			struct fn_part *p = &slots[k % nr_slots];

			part_clear(p);
			*p = (struct fn_part){
				.ti = (uint32_t)ti,
				.lo = lo,
				.hi = n - lo > fs->part ? lo + fs->part : n,
				.base = base};
			rc = mt_pool_put(pool, p);
		}
		base += n;
	}
	if (pool) {
		int prc = mt_pool_end(pool);

		if (!rc)
			rc = prc;
	}
out:
	for (unsigned i = 0; slots && i < nr_slots; i++)
		part_clear(&slots[i]);
	free(slots);
	for (unsigned i = 0; fs->scratch && i < fs->jobs; i++)
		free(fs->scratch[i]);
	free(fs->scratch);
	fs->scratch = NULL;
	return rc;
}

static void *fn_sums_run(void *arg)
{
	struct fn_sums *fs = arg;
	const struct mt_trace *t = fs->t;

	fs->rc = st_init(&fs->a, 0);
	fs->have_agg = !fs->rc;
	fs->m.of_frame =
		malloc(((size_t)t->nr_frames * 2 + 1) * sizeof(uint32_t));
	if (fs->rc || !fs->m.of_frame) {
		fs->rc = -ENOMEM;
		return NULL;
	}
	memset(fs->m.of_frame, 0xff,
	       (size_t)t->nr_frames * 2 * sizeof(uint32_t));
	if (fs->jobs > 1) {
		fs->rc = sum_in_parts(fs);
		if (!fs->rc && !fs->not_walk)
			fs->rc = st_finish(&fs->a, fs->jobs);
		if (fs->rc || !fs->not_walk)
			goto out;
		/* Not a walk: the serial sum, from nothing. */
		st_free(&fs->a);
		fnmap_free(&fs->m);
		fs->rc = st_init(&fs->a, 0);
		fs->have_agg = !fs->rc;
		if (fs->rc)
			return NULL;
	}
	if (sum_functions(t, &fs->m, &fs->a))
		fs->rc = -ENOMEM;
out:
	/* 4 bytes a slice, not to be held while the slices are written. */
	if (fs->have_agg)
		st_drop_durs(&fs->a);
	/* Most were in the parts' arrays, of a MiB or less, freed into the
	 * threads' heaps, which keep their pages: given back before the
	 * sibling links take as much. */
	malloc_trim(0);
	return NULL;
}

/* On a thread of its own with threads to spare, else when waited for. */
static void fn_sums_start(struct fn_sums *fs, const struct mt_trace *t,
			  unsigned jobs, unsigned part)
{
	memset(fs, 0, sizeof(*fs));
	fs->t = t;
	fs->jobs = jobs;
	fs->part = part;
	fs->threaded =
		jobs > 1 && !pthread_create(&fs->th, NULL, fn_sums_run, fs);
}

static int fn_sums_wait(struct fn_sums *fs)
{
	if (fs->threaded)
		pthread_join(fs->th, NULL);
	else if (fs->t)
		fn_sums_run(fs);
	fs->threaded = false;
	fs->t = NULL;
	return fs->rc;
}

/* For sq_write_trees(): the durations are gone once the sums are
 * done, so they and the sibling links are never held at once. */
static int fn_sums_done(void *ctx)
{
	return fn_sums_wait(ctx) ? -ENOMEM : 0;
}

static void fn_sums_free(struct fn_sums *fs)
{
	fn_sums_wait(fs);
	if (fs->have_agg)
		st_free(&fs->a);
	free(fs->m.of_frame);
	fnmap_free(&fs->m);
	free(fs->of_part);
	memset(fs, 0, sizeof(*fs));
}

/* The rows of the tables function, slowest, call_path and caller. */
static int write_functions(struct sq *w, struct fn_sums *fs)
{
	sqlite3_stmt *st;
	int rc = fn_sums_wait(fs);
	const struct fnmap m = fs->m;
	const struct st_agg a = fs->a;

	if (rc)
		return sq_fail(w, -ENOMEM, "out of memory");
	st = w->stmts[S_FUNCTION];
	for (size_t i = 0; !rc && i < m.nr; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)i);
		sq_bind_str(w, st, 2, m.keys[i].name);
		sq_bind_str(w, st, 3, m.keys[i].dso);
		sqlite3_bind_int(st, 4, m.keys[i].inlined);
		bind_fig(st, 5, &a.fns[i]);
		rc = bind_hist(w, st, 14, a.hist[i]);
		if (!rc)
			rc = sq_step(w, st);
	}
	st = w->stmts[S_SLOWEST];
	for (size_t i = 0; !rc && i < m.nr; i++)
		for (unsigned k = 0; !rc && k < a.nr_top[i]; k++) {
			sqlite3_bind_int64(st, 1, (int64_t)i);
			sq_bind_u64(st, 2, a.top[i][k].id);
			sq_bind_u64(st, 3, a.top[i][k].dur);
			rc = sq_step(w, st);
		}
	st = w->stmts[S_CALL_PATH];
	for (size_t i = 0; !rc && i < a.nr_paths; i++) {
		const struct st_path *p = &a.paths[i];

		sqlite3_bind_int64(st, 1, (int64_t)i);
		if (p->parent == ST_NONE)
			sqlite3_bind_null(st, 2);
		else
			sqlite3_bind_int64(st, 2, p->parent);
		sqlite3_bind_int64(st, 3, p->fn);
		sq_bind_u64(st, 4, p->calls);
		sq_bind_u64(st, 5, p->total);
		sqlite3_bind_int64(st, 6, p->self);
		rc = sq_step(w, st);
	}
	st = w->stmts[S_CALLER];
	for (size_t i = 0; !rc && i < a.nr_pairs; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)i);
		sqlite3_bind_int64(st, 2, a.pairs[i].caller);
		sqlite3_bind_int64(st, 3, a.pairs[i].callee);
		bind_fig(st, 4, &a.pairs[i].fig);
		rc = sq_step(w, st);
	}
	return rc;
}

static int close_db(struct sq *w);

/* A connection to the database being built: one thread, no journal,
 * no syncs (a failed build is thrown away whole, so there is nothing to
 * roll back to), its statements prepared, in a transaction. */
static int open_db(struct sq *w, const char *tmp)
{
	char sql[64];
	int rc;

	/* One connection, one thread: no per-call mutex. */
	if (sqlite3_open_v2(tmp, &w->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		return sq_fail_db(w, "opening");
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d;", SCHEMA_VERSION);
	rc = exec(w, "PRAGMA page_size = 8192;"
		     "PRAGMA journal_mode = OFF;"
		     "PRAGMA synchronous = OFF;"
		     "PRAGMA locking_mode = EXCLUSIVE;");
	if (!rc)
		rc = exec(w, sql);
	if (!rc)
		rc = exec(w, "BEGIN;");
	return rc;
}

static int prepare_all(struct sq *w)
{
	for (int i = 0; i < S_NR; i++)
		if (sqlite3_prepare_v3(w->db, stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &w->stmts[i],
				       NULL) != SQLITE_OK)
			return sq_fail_db(w, "preparing");
	return 0;
}

/*
 * SQLite writes the schema and the small tables and is closed; then the
 * slice table and its indexes are written into the file (btree.c), which
 * costs a fraction of what SQLite's inserts and index sorts would; then
 * SQLite adds the function figures, summed meanwhile, after them.
 */
static int build(struct sq *w, const char *tmp)
{
	uint32_t roots[SQ_NR_TREES];
	struct fn_sums fs;
	int rc;

	rc = sq_check_strings(w);
	if (rc)
		return rc;
	fn_sums_start(&fs, w->t, w->jobs, w->fn_part);
	rc = open_db(w, tmp);
	if (!rc)
		rc = exec(w, schema);
	if (!rc)
		rc = prepare_all(w);
	if (!rc)
		rc = sq_write_threads(w);
	if (!rc)
		rc = sq_write_strings(w);
	if (!rc)
		rc = sq_write_frames(w);
	if (!rc)
		rc = sq_write_extras(w);
	if (!rc)
		rc = sq_write_ptwrites(w);
	if (!rc)
		rc = sq_write_metadata(w);
	if (!rc)
		rc = exec(w, "COMMIT;");
	if (!rc)
		rc = sq_read_roots(w, roots);
	if (!rc)
		rc = close_db(w);
	if (!rc)
		rc = sq_write_trees(w, tmp, roots, fn_sums_done, &fs);
	/* The sibling links (4 bytes a slice), not to be held while the
	 * figures are summed (-j 1). */
	free(w->next_sib);
	w->next_sib = NULL;
	if (!rc)
		rc = open_db(w, tmp);
	if (!rc)
		rc = prepare_all(w);
	if (!rc)
		rc = write_functions(w, &fs);
	fn_sums_free(&fs);
	if (!rc)
		rc = exec(w, "COMMIT;");
	if (!rc)
		rc = close_db(w);
	return rc;
}

/* Closes the database; a close that fails means the file may be short. */
static int close_db(struct sq *w)
{
	int rc = 0;

	for (int i = 0; i < S_NR; i++) {
		sqlite3_finalize(w->stmts[i]);
		w->stmts[i] = NULL;
	}
	if (w->db && sqlite3_close(w->db) != SQLITE_OK) {
		rc = sq_fail_db(w, "closing");
		/* Still free it: nothing is left to finish. */
		sqlite3_close_v2(w->db);
	}
	w->db = NULL;
	return rc;
}

int wr_sqlite_to(const struct mt_trace *t, const struct mt_outfile *f,
		 struct wr_stats *st, char *err, size_t errlen)
{
	return wr_sqlite_to_opts(t, f, NULL, st, err, errlen);
}

int wr_sqlite_to_opts(const struct mt_trace *t, const struct mt_outfile *f,
		      const struct wr_sqlite_opts *o, struct wr_stats *st,
		      char *err, size_t errlen)
{
	struct sq w = {.t = t,
		       .path = f->path,
		       .err = err,
		       .errlen = errlen,
		       .jobs = o && o->jobs ? o->jobs : 1,
		       .fn_part = o && o->fn_part ? o->fn_part : FN_PART};
	struct stat sb;
	int rc;

	for (size_t i = 0; i < sizeof(w.memo) / sizeof(*w.memo); i++)
		w.memo[i].id = UINT32_MAX;
	if (err && errlen)
		err[0] = 0;
	/* Written with seeks and read back: never to a stream (util's
	 * mt_outfile_begin refuses a special file for it). */
	if (!f->tmp)
		return sq_fail(&w, -ESPIPE, "cannot be written as a stream");
	rc = build(&w, f->tmp);
	if (rc)
		close_db(&w);
	if (!rc && stat(f->tmp, &sb))
		rc = sq_fail(&w, -errno, "%s", strerror(errno));
	if (!rc && st) {
		st->bytes = (uint64_t)sb.st_size;
		st->slices = w.nr_slices;
		st->tracks = (uint32_t)t->nr_threads;
		st->write_s = w.write_s;
	}
	free(w.asets);
	mt_hmap_free(&w.aset_index);
	free(w.frames);
	mt_hmap_free(&w.frame_heads);
	free(w.next_sib);
	free(w.ts_unsorted);
	free(w.tids);
	free(w.pids);
	return rc;
}

int wr_sqlite(const struct mt_trace *t, const char *path, struct wr_stats *st,
	      char *err, size_t errlen)
{
	struct mt_outfile f;
	int rc = mt_outfile_begin(&f, path, err, errlen);

	if (rc)
		return rc;
	rc = wr_sqlite_to(t, &f, st, err, errlen);
	if (rc)
		mt_outfile_abort(&f);
	else
		rc = mt_outfile_commit(&f, err, errlen);
	return rc;
}

void wr_sqlite_setup(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
