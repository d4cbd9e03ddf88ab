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
 * writes those three b-trees into the file as SQLite lays them out (side
 * by side with jobs > 1: sq_pages.c), and SQLite, opened again, adds the
 * function figures, summed meanwhile, after them.  Ids follow threads and,
 * in a thread, start times, so the rows and the (track_id, ts) entries
 * come in key order as the model is read, and the parent_id entries by
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
#include "util/version.h"
#include "writers/btree_internal.h"
#include "writers/sq_internal.h"
#include "writers/writers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/*
 * The flags a slice carries as args, under the keys trace_processor gives
 * debug annotations ("debug." + name), next to debug.address and
 * debug.dso.
 */
static const struct {
	uint32_t bit;
	const char *key;
} flag_args[] = {
	{MT_SLICE_INFERRED_START, "debug.inferred_start"},
	{MT_SLICE_INFERRED_END, "debug.inferred_end"},
	{MT_SLICE_JOINED, "debug.joined"},
	{MT_SLICE_GAP, "debug.gap"},
	{MT_SLICE_SYSCALL, "debug.syscall"},
	{MT_SLICE_UNTRACED, "debug.untraced"},
	{MT_SLICE_TAIL, "debug.tail"},
	{MT_SLICE_UNKNOWN, "debug.unknown"},
	{MT_SLICE_DEPTH_GUESSED, "debug.depth_guessed"},
	{MT_SLICE_INLINED, "debug.inlined"},
	{MT_SLICE_RESUMED, "debug.resumed"},
	{MT_SLICE_RESUME_GUESSED, "debug.resume_guessed"},
};

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
static int sq_step(struct sq *w, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sq_fail_db(w, "inserting");
	return 0;
}

/* String id 0 is "": stored as NULL, as trace_processor leaves names it
 * does not know. */
static void sq_bind_str(struct sq *w, sqlite3_stmt *st, int i, uint32_t id)
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
static void sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

/* 0 means "none" for the optional numbers in the model. */
static void sq_bind_opt(sqlite3_stmt *st, int i, uint64_t v)
{
	if (v)
		sq_bind_u64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static int idmap_cmp(const void *a, const void *b)
{
	const struct idmap *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	/* Equal keys: the first row wins, as in mt_trace_thread(). */
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Where key is, or would go, in the sorted m. */
static size_t idmap_pos(const struct idmap *m, size_t n, uint32_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The row for key, or 0 (never a row: ours start at 1). */
static uint32_t idmap_find(const struct idmap *m, size_t n, uint32_t key)
{
	size_t i = idmap_pos(m, n, key);

	return i < n && m[i].key == key ? m[i].id : 0;
}

static void bind_utid(struct sq *w, sqlite3_stmt *st, int i, uint32_t tid)
{
	uint32_t utid = idmap_find(w->tids, w->t->nr_threads, tid);

	if (utid)
		sqlite3_bind_int64(st, i, utid);
	else
		sqlite3_bind_null(st, i);
}

static int write_process(struct sq *w, uint32_t pid, uint32_t name)
{
	sqlite3_stmt *st = w->stmts[S_PROCESS];

	sqlite3_bind_int64(st, 1, w->next_upid++);
	sqlite3_bind_int64(st, 2, pid);
	/* The model's process name is the command line when known. */
	sq_bind_str(w, st, 3, name);
	sq_bind_str(w, st, 4, name);
	return sq_step(w, st);
}

/*
 * Processes, then threads and their tracks.  A thread whose pid has no
 * process gets a nameless one, as trace_processor creates for a thread
 * descriptor naming an unknown pid.
 */
static int sq_write_threads(struct sq *w)
{
	const struct mt_trace *t = w->t;
	size_t n = t->nr_procs + t->nr_threads;
	int rc;

	w->pids = calloc(n ? n : 1, sizeof(*w->pids));
	w->tids = calloc(t->nr_threads ? t->nr_threads : 1, sizeof(*w->tids));
	if (!w->pids || !w->tids)
		return sq_fail(w, -ENOMEM, "out of memory");
	w->next_upid = 1;
	for (size_t i = 0; i < t->nr_procs; i++) {
		w->pids[w->nr_pids++] =
			(struct idmap){t->procs[i].pid, w->next_upid};
		rc = write_process(w, t->procs[i].pid, t->procs[i].name);
		if (rc)
			return rc;
	}
	qsort(w->pids, w->nr_pids, sizeof(*w->pids), idmap_cmp);
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];
		uint32_t upid = idmap_find(w->pids, w->nr_pids, th->pid);
		sqlite3_stmt *st;
		size_t j;

		if (!upid) {
			upid = w->next_upid;
			rc = write_process(w, th->pid, 0);
			if (rc)
				return rc;
			j = idmap_pos(w->pids, w->nr_pids, th->pid);
			memmove(&w->pids[j + 1], &w->pids[j],
				(w->nr_pids++ - j) * sizeof(*w->pids));
			w->pids[j] = (struct idmap){th->pid, upid};
		}
		w->tids[i] = (struct idmap){th->tid, (uint32_t)i + 1};

		st = w->stmts[S_THREAD];
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
		sqlite3_bind_int64(st, 2, th->tid);
		sq_bind_str(w, st, 3, th->name);
		sqlite3_bind_int64(st, 4, upid);
		sqlite3_bind_int(st, 5, th->tid == th->pid);
		rc = sq_step(w, st);
		if (rc)
			return rc;

		st = w->stmts[S_TRACK];
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sq_bind_str(w, st, 2, th->name);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)i + 1);
		rc = sq_step(w, st);
		if (rc)
			return rc;
	}
	qsort(w->tids, t->nr_threads, sizeof(*w->tids), idmap_cmp);
	return 0;
}

static int write_arg(struct sq *w, uint64_t set, const char *key,
		     sqlite3_int64 v, const char *s, const char *type)
{
	sqlite3_stmt *st = w->stmts[S_ARG];

	sq_bind_u64(st, 1, set);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	if (s) {
		sqlite3_bind_null(st, 3);
		sqlite3_bind_text(st, 4, s, -1, SQLITE_STATIC);
	} else {
		sqlite3_bind_int64(st, 3, v);
		sqlite3_bind_null(st, 4);
	}
	sqlite3_bind_text(st, 5, type, -1, SQLITE_STATIC);
	return sq_step(w, st);
}

static int write_aset(struct sq *w, uint64_t set, const struct aset *a)
{
	int rc = 0;

	if (a->addr)
		rc = write_arg(w, set, "debug.address", (sqlite3_int64)a->addr,
			       NULL, "pointer");
	if (!rc && a->dso)
		rc = write_arg(w, set, "debug.dso", 0,
			       mt_str(&w->t->strs, a->dso), "string");
	if (!rc && a->source)
		rc = write_arg(w, set, "debug.source", 0,
			       mt_str(&w->t->strs, a->source), "string");
	if (!rc && a->site)
		rc = write_arg(w, set, "debug.call_site", 0,
			       mt_str(&w->t->strs, a->site), "string");
	for (size_t i = 0; !rc && i < sizeof(flag_args) / sizeof(*flag_args);
	     i++)
		if (a->flags & flag_args[i].bit)
			rc = write_arg(w, set, flag_args[i].key, 1, NULL,
				       "bool");
	return rc;
}

static uint64_t aset_hash(const struct aset *a)
{
	uint64_t h = a->addr * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)a->dso << 8 | a->flags) * 0xc2b2ae3d27d4eb4full;
	h ^= ((uint64_t)a->source << 32 | a->site) * 0x165667b19e3779f9ull;
	return h ^ h >> 29;
}

struct aset_key {
	const struct sq *w;
	const struct aset *a;
};

static bool same_aset(const void *ctx, uint64_t set)
{
	const struct aset_key *k = ctx;
	const struct aset *o = &k->w->asets[set];

	return o->addr == k->a->addr && o->dso == k->a->dso &&
	       o->flags == k->a->flags && o->source == k->a->source &&
	       o->site == k->a->site;
}

/* The slice's arg_set_id, its rows written the first time the set is
 * seen; -1 when the slice has no args, or an error. */
static int aset_get(struct sq *w, const struct mt_slice *s, int64_t *set)
{
	const struct mt_frame *fr = mt_slice_frame(w->t, s);
	struct aset a = {fr->addr, fr->dso, s->flags, fr->source, s->site};
	struct aset_key k = {w, &a};
	uint64_t h = aset_hash(&a), id;

	*set = -1;
	if (!a.addr && !a.dso && !a.flags && !a.source && !a.site)
		return 0;
	if (mt_hmap_find_ext(&w->aset_index, h, same_aset, &k, &id)) {
		*set = (int64_t)id;
		return 0;
	}
	if (mt_grow((void **)&w->asets, &w->cap_asets, w->nr_asets + 1,
		    sizeof(*w->asets)) ||
	    mt_hmap_add_ext(&w->aset_index, h, w->nr_asets))
		return sq_fail(w, -ENOMEM, "out of memory");
	w->asets[w->nr_asets] = a;
	*set = (int64_t)w->nr_asets++;
	return write_aset(w, (uint64_t)*set, &a);
}

/* "[decode gap: overflow]" -> "overflow"; other names stay whole. */
static void bind_gap_reason(sqlite3_stmt *st, int i, const char *name)
{
	static const char pre[] = "[decode gap: ";
	size_t n = strlen(name);

	if (n > sizeof(pre) && !strncmp(name, pre, sizeof(pre) - 1) &&
	    name[n - 1] == ']')
		sqlite3_bind_text(st, i, name + sizeof(pre) - 1,
				  (int)(n - sizeof(pre)), SQLITE_STATIC);
	else
		sqlite3_bind_text(st, i, name, -1, SQLITE_STATIC);
}

static int write_gap(struct sq *w, const struct mt_slice *s, uint32_t utid,
		     uint64_t id, uint64_t gap_id)
{
	sqlite3_stmt *st = w->stmts[S_GAP];

	sq_bind_u64(st, 1, gap_id);
	sqlite3_bind_int64(st, 2, utid);
	sq_bind_u64(st, 3, s->ts);
	sq_bind_u64(st, 4, s->dur);
	sq_bind_str(w, st, 5, mt_slice_name(w->t, s));
	bind_gap_reason(st, 6, mt_slice_str(w->t, s));
	sq_bind_u64(st, 7, id);
	if (s->segment != MT_NONE)
		sqlite3_bind_int64(st, 8, s->segment);
	else
		sqlite3_bind_null(st, 8);
	return sq_step(w, st);
}

/* A string id as stored in frame: NULL for the empty string. */
static void bind_sid(sqlite3_stmt *st, int i, uint32_t id)
{
	if (id)
		sqlite3_bind_int64(st, i, id);
	else
		sqlite3_bind_null(st, i);
}

/* The model's string table, which slice_raw's name and dso ids index,
 * then the hits' names that are not in it. */
static int sq_write_strings(struct sq *w)
{
	const struct mt_trace *t = w->t;
	sqlite3_stmt *st = w->stmts[S_STRING];
	uint32_t next = t->strs.nr, id;
	int rc;

	for (uint32_t i = 1; i < t->strs.nr; i++) {
		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_text(st, 2, mt_str(&t->strs, i), -1,
				  SQLITE_STATIC);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	for (uint32_t i = 1; i < t->hit_names.nr; i++) {
		const char *name = mt_str(&t->hit_names, i);

		if (mt_str_find(&t->strs, name, &id))
			continue;
		sqlite3_bind_int64(st, 1, next++);
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	return 0;
}

/*
 * The frame of s: interned on (name, arg set), its row written the first
 * time it is seen.  Nearly every set has one name (a function's address
 * names it), so the chains are short.
 */
static int frame_find(struct sq *w, const struct mt_slice *s, uint32_t *id)
{
	sqlite3_stmt *st = w->stmts[S_FRAME];
	const struct mt_frame *fr = mt_slice_frame(w->t, s);
	uint32_t key, head, f;
	int64_t set;
	int rc;

	rc = aset_get(w, s, &set);
	if (rc)
		return rc;
	if (set + 1 >= UINT32_MAX || w->nr_frames >= UINT32_MAX - 1)
		return sq_fail(w, -EOVERFLOW, "more frames than ids");
	key = (uint32_t)(set + 1);
	head = (uint32_t)mt_hmap_get(&w->frame_heads, key);
	for (f = head; f; f = w->frames[f - 1].next)
		if (w->frames[f - 1].name == fr->name) {
			*id = f - 1;
			return 0;
		}
	if (mt_grow((void **)&w->frames, &w->cap_frames, w->nr_frames + 1,
		    sizeof(*w->frames)))
		return sq_fail(w, -ENOMEM, "out of memory");
	f = (uint32_t)w->nr_frames;
	if (mt_hmap_set(&w->frame_heads, key, f + 1))
		return sq_fail(w, -ENOMEM, "out of memory");
	w->frames[w->nr_frames++] = (struct frame){fr->name, head};
	*id = f;
	sqlite3_bind_int64(st, 1, f);
	bind_sid(st, 2, fr->name);
	if (set >= 0)
		sqlite3_bind_int64(st, 3, set);
	else
		sqlite3_bind_null(st, 3);
	sq_bind_opt(st, 4, fr->addr);
	bind_sid(st, 5, fr->dso);
	sqlite3_bind_int64(st, 6, s->flags);
	bind_sid(st, 7, fr->source);
	bind_sid(st, 8, set >= 0 ? w->asets[set].site : 0);
	return sq_step(w, st);
}

/* frame_find(), remembered: a slot per (model frame, flags, call site),
 * the last one there.  Frame id UINT32_MAX is never handed out. */
static int frame_get(struct sq *w, const struct mt_slice *s, uint32_t *id)
{
	uint64_t h =
		((uint64_t)s->frame * 0x9e3779b97f4a7c15ull) ^
		((uint64_t)s->flags << 32 | s->site) * 0xc2b2ae3d27d4eb4full;
	struct frame_memo *m =
		&w->memo[(h >> 40) % (sizeof(w->memo) / sizeof(*w->memo))];
	int rc;

	if (m->id != UINT32_MAX && m->frame == s->frame &&
	    m->flags == s->flags && m->site == s->site) {
		*id = m->id;
		return 0;
	}
	rc = frame_find(w, s, id);
	if (!rc)
		*m = (struct frame_memo){s->frame, s->flags, s->site, *id};
	return rc;
}

/*
 * The pass over the slices while SQLite is open: each is checked where a
 * bad value would make the database lie (a parent that is not an earlier
 * slice of the same thread, a string id out of range), its frame found
 * or written, and its gap row written.  The trees are written from the
 * frames kept here once SQLite is closed.
 */
static int sq_write_frames(struct sq *w)
{
	const struct mt_trace *t = w->t;
	uint64_t id = 0, gaps = 0;
	int rc;

	for (size_t ti = 0; ti < t->nr_threads; ti++)
		w->nr_slices += t->threads[ti].nr_slices;
	if (w->nr_slices > SIZE_MAX / sizeof(*w->frame_of) ||
	    !(w->frame_of = malloc((size_t)(w->nr_slices ? w->nr_slices : 1) *
				   sizeof(*w->frame_of))))
		return sq_fail(w, -ENOMEM, "out of memory");
	for (size_t ti = 0; ti < t->nr_threads; ti++) {
		const struct mt_thread *th = &t->threads[ti];

		for (size_t j = 0; j < th->nr_slices; j++, id++) {
			const struct mt_slice *s = &th->slices[j];

			if ((s->parent != MT_NONE && s->parent >= j) ||
			    s->frame >= t->nr_frames ||
			    t->frames[s->frame].name >= t->strs.nr ||
			    t->frames[s->frame].dso >= t->strs.nr ||
			    t->frames[s->frame].source >= t->strs.nr ||
			    s->site >= t->strs.nr)
				return sq_fail(
					w, -EINVAL,
					"thread %" PRIu32 " slice %zu: "
					"parent or string id out of range",
					th->tid, j);
			rc = frame_get(w, s, &w->frame_of[id]);
			if (!rc && (s->flags & MT_SLICE_GAP))
				rc = write_gap(w, s, (uint32_t)ti + 1, id,
					       gaps++);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The goroutine table (ids from 1, as the segments name them). */
static int write_goroutines(struct sq *w)
{
	const struct mt_trace *t = w->t;
	sqlite3_stmt *st = w->stmts[S_GOROUTINE];
	char name[512];
	int rc;

	for (size_t i = 0; i < t->nr_goroutines; i++) {
		const struct mt_goroutine *g = &t->goroutines[i];
		uint64_t upid = 0;

		for (size_t p = 0; p < t->nr_procs && !upid; p++)
			if (t->procs[p].pid == g->pid)
				upid = p + 1;
		mt_goroutine_name(t, g, name, sizeof(name));
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
		sq_bind_opt(st, 2, upid);
		sqlite3_bind_int64(st, 3, g->pid);
		sq_bind_opt(st, 4, g->goid);
		sqlite3_bind_text(st, 5, name, -1, SQLITE_TRANSIENT);
		sq_bind_str(w, st, 6, g->start);
		sq_bind_u64(st, 7, g->first);
		sq_bind_u64(st, 8, g->last);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	return 0;
}

static int sq_write_extras(struct sq *w)
{
	const struct mt_trace *t = w->t;
	sqlite3_stmt *st;
	int rc;

	st = w->stmts[S_SEGMENT];
	for (size_t i = 0; i < t->nr_segments; i++) {
		const struct mt_segment *g = &t->segments[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		bind_utid(w, st, 2, g->tid);
		sqlite3_bind_int64(st, 3, g->tid);
		sq_bind_u64(st, 4, g->start);
		sq_bind_u64(st, 5, g->end - g->start);
		sq_bind_str(w, st, 6, g->end_reason);
		sq_bind_opt(st, 7, g->end_ip);
		sq_bind_opt(st, 8, g->goroutine);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	if ((rc = write_goroutines(w)))
		return rc;
	st = w->stmts[S_STITCH];
	for (size_t i = 0; i < t->nr_stitches; i++) {
		const struct mt_stitch *s = &t->stitches[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		bind_utid(w, st, 2, s->tid);
		sqlite3_bind_int64(st, 3, s->tid);
		sqlite3_bind_int64(st, 4, s->seg_a);
		sqlite3_bind_int64(st, 5, s->seg_b);
		sqlite3_bind_int64(st, 6, s->frames_joined);
		sqlite3_bind_double(st, 7, s->score);
		sq_bind_str(w, st, 8, s->reason);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	st = w->stmts[S_GUESS];
	for (size_t i = 0; i < t->nr_guesses; i++) {
		const struct mt_guess *g = &t->guesses[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		bind_utid(w, st, 2, g->tid);
		sqlite3_bind_int64(st, 3, g->tid);
		sq_bind_u64(st, 4, g->ts);
		sq_bind_u64(st, 5, g->dur);
		sqlite3_bind_int64(st, 6, g->depth);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	st = w->stmts[S_HIT];
	for (size_t i = 0; i < t->nr_hits; i++) {
		const struct mt_hit *h = &t->hits[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sq_bind_u64(st, 2, h->ts);
		sq_bind_opt(st, 3, h->mark_start);
		sqlite3_bind_int64(st, 4, h->pid);
		sqlite3_bind_int64(st, 5, h->tid);
		bind_utid(w, st, 6, h->tid);
		sq_bind_u64(st, 7, h->ip);
		sqlite3_bind_int64(st, 8, h->arg);
		if (h->name)
			sqlite3_bind_text(st, 9, mt_str(&t->hit_names, h->name),
					  -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 9);
		if ((rc = sq_step(w, st)))
			return rc;
	}
	return 0;
}

/* The innermost slice of th running at ts (its index), or MT_NONE.
 * Slices are in pre-order, so by start time: the last to start at or
 * before ts, or the ancestor of it still running then. */
static uint32_t slice_at(const struct mt_thread *th, uint64_t ts)
{
	size_t lo = 0, hi = th->nr_slices;
	uint32_t i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (th->slices[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return MT_NONE;
	for (i = (uint32_t)(lo - 1); i != MT_NONE; i = th->slices[i].parent) {
		const struct mt_slice *s = &th->slices[i];

		if (s->ts + s->dur >= ts)
			return i;
		if (s->parent != MT_NONE && s->parent >= i)
			break; /* not a tree: no answer rather than a loop */
	}
	return MT_NONE;
}

/* converted_by: this program; recorded_by: what wrote the capture. */
static int sq_write_metadata(struct sq *w)
{
	const char *rows[2][2] = {{"converted_by", NULL},
				  {"recorded_by", w->t->recorded_by}};
	sqlite3_stmt *st;
	char line[128];
	int rc = 0;

	rows[0][1] = mt_version_line("mt-convert", line, sizeof(line));
	if (sqlite3_prepare_v2(w->db,
			       "INSERT INTO metadata(name, key_type,"
			       " str_value) VALUES(?, 'single', ?)",
			       -1, &st, NULL) != SQLITE_OK)
		return sq_fail_db(w, "preparing");
	for (int i = 0; !rc && i < 2; i++) {
		if (!rows[i][1][0])
			continue;
		sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_STATIC);
		rc = sq_step(w, st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int sq_write_ptwrites(struct sq *w)
{
	const struct mt_trace *t = w->t;
	sqlite3_stmt *st = w->stmts[S_PTWRITE];
	uint64_t *base;
	int rc = 0;

	if (!t->nr_ptwrites)
		return 0;
	/* Each thread's first slice id: ids follow threads, in order. */
	base = malloc((t->nr_threads + 1) * sizeof(*base));
	if (!base)
		return sq_fail(w, -ENOMEM, "out of memory");
	base[0] = 0;
	for (size_t i = 0; i < t->nr_threads; i++)
		base[i + 1] = base[i] + t->threads[i].nr_slices;
	for (size_t i = 0; i < t->nr_ptwrites && !rc; i++) {
		const struct mt_ptwrite *p = &t->ptwrites[i];
		/* utid is the thread's index + 1 (sq_write_threads) */
		uint32_t utid = idmap_find(w->tids, t->nr_threads, p->tid);
		uint32_t s =
			utid ? slice_at(&t->threads[utid - 1], p->ts) : MT_NONE;

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sq_bind_u64(st, 2, p->ts);
		bind_utid(w, st, 3, p->tid);
		sqlite3_bind_int64(st, 4, p->tid);
		sq_bind_opt(st, 5, p->ip);
		sq_bind_u64(st, 6, p->value);
		if (s != MT_NONE)
			sq_bind_u64(st, 7, base[utid - 1] + s);
		else
			sqlite3_bind_null(st, 7);
		rc = sq_step(w, st);
	}
	free(base);
	return rc;
}

/* Checks the model's string ids outside the slices, which the hot loop
 * checks itself. */
static int sq_check_strings(struct sq *w)
{
	const struct mt_trace *t = w->t;
	uint32_t nr = t->strs.nr;
	size_t i;

	for (i = 0; i < t->nr_procs; i++)
		if (t->procs[i].name >= nr)
			goto bad;
	for (i = 0; i < t->nr_threads; i++)
		if (t->threads[i].name >= nr)
			goto bad;
	for (i = 0; i < t->nr_segments; i++)
		if (t->segments[i].end_reason >= nr)
			goto bad;
	for (i = 0; i < t->nr_stitches; i++)
		if (t->stitches[i].reason >= nr)
			goto bad;
	for (i = 0; i < t->nr_hits; i++)
		if (t->hits[i].name >= t->hit_names.nr)
			goto bad;
	return 0;
bad:
	return sq_fail(w, -EINVAL, "string id out of range in the model");
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

static int fn_of(struct fnmap *m, const struct mt_trace *t,
		 const struct mt_slice *s, uint32_t *fn)
{
	bool inl = (s->flags & MT_SLICE_INLINED) != 0;
	uint32_t *slot = &m->of_frame[(size_t)s->frame * 2 + inl];
	const struct mt_frame *fr = mt_slice_frame(t, s);
	uint64_t key = (uint64_t)fr->name << 32 | fr->dso, v;

	if (*slot != ST_NONE) {
		*fn = *slot;
		return 0;
	}
	if (!mt_hmap_find(&m->index[inl], key, &v)) {
		if (mt_grow((void **)&m->keys, &m->cap, m->nr + 1,
			    sizeof(*m->keys)) ||
		    mt_hmap_set(&m->index[inl], key, m->nr))
			return -ENOMEM;
		m->keys[m->nr] = (struct fnkey){fr->name, fr->dso, inl};
		v = m->nr++;
	}
	*fn = *slot = (uint32_t)v;
	return 0;
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
	st_finish(a);
	return 0;
}

/*
 * The figures of the tables function and caller (stats/): the durations
 * of every whole call are held until their percentiles are found, 8
 * bytes a slice for the function and 8 for the pair.  Summed from the
 * model alone, beside the slice table's pages when there are threads to
 * spare (fn_sums_start), and freed once their rows are in.
 */
struct fn_sums {
	const struct mt_trace *t;
	struct fnmap m;
	struct st_agg a;
	bool have_agg;
	int rc;
	pthread_t th;
	bool threaded;
};

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
	if (sum_functions(t, &fs->m, &fs->a))
		fs->rc = -ENOMEM;
	return NULL;
}

/* On a thread of its own with threads to spare, else when waited for. */
static void fn_sums_start(struct fn_sums *fs, const struct mt_trace *t,
			  unsigned jobs)
{
	memset(fs, 0, sizeof(*fs));
	fs->t = t;
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

static void fn_sums_free(struct fn_sums *fs)
{
	fn_sums_wait(fs);
	if (fs->have_agg)
		st_free(&fs->a);
	free(fs->m.of_frame);
	free(fs->m.keys);
	mt_hmap_free(&fs->m.index[0]);
	mt_hmap_free(&fs->m.index[1]);
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
	fn_sums_start(&fs, w->t, w->jobs);
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
		rc = sq_write_trees(w, tmp, roots);
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
		       .jobs = o && o->jobs ? o->jobs : 1};
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
	}
	free(w.asets);
	mt_hmap_free(&w.aset_index);
	free(w.frames);
	mt_hmap_free(&w.frame_heads);
	free(w.frame_of);
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
