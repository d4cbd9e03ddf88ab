/* SPDX-License-Identifier: MIT */
/*
 * Reading a database mt-convert wrote: its frames give the functions,
 * slice_raw the slices (in id order a thread's come in pre-order, which
 * is what the sums need), and, where the writer made them, the tables
 * function and caller the figures of the whole trace without a scan.
 */
#include "stats/db.h"

#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int st_db_fail(struct st_db *d, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(d->err, d->errlen, rc, d->path, fmt, ap);
	va_end(ap);
	return rc;
}

static int db_fail(struct st_db *d, const char *what)
{
	return st_db_fail(d, -EIO, "%s: %s", what, sqlite3_errmsg(d->db));
}

static int prepare(struct st_db *d, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(d->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(d, "reading");
	return 0;
}

static bool has_table(struct st_db *d, const char *name)
{
	sqlite3_stmt *st;
	bool yes = false;

	if (sqlite3_prepare_v2(d->db,
			       "SELECT 1 FROM sqlite_master WHERE name = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

/* The function (name, dso, inlined), added when new; ids index d->fns. */
struct fnkey_ctx {
	const struct st_db *d;
	const char *name, *dso;
	bool inlined;
};

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_fn(const void *ctx, uint64_t v)
{
	const struct fnkey_ctx *k = ctx;
	const struct st_fn *f = &k->d->fns[v];

	return f->inlined == k->inlined && same_str(f->name, k->name) &&
	       same_str(f->dso, k->dso);
}

uint64_t st_fn_hash(const char *name, const char *dso, bool inlined)
{
	uint64_t h = name ? mt_hash_bytes(name, strlen(name)) : 1;

	h = h * 31 + (dso ? mt_hash_bytes(dso, strlen(dso)) : 2);
	return h * 2 + inlined;
}

static int fn_find(struct st_db *d, struct mt_hmap *index, const char *name,
		   const char *dso, bool inlined, uint32_t *id)
{
	struct fnkey_ctx k = {d, name, dso, inlined};
	uint64_t h = st_fn_hash(name, dso, inlined), v;
	struct st_fn f = {NULL, NULL, inlined};

	if (mt_hmap_find_ext(index, h, same_fn, &k, &v)) {
		*id = (uint32_t)v;
		return 0;
	}
	if (mt_grow((void **)&d->fns, &d->cap_fns, d->nr_fns + 1,
		    sizeof(*d->fns)))
		return -ENOMEM;
	if ((name && !(f.name = strdup(name))) ||
	    (dso && !(f.dso = strdup(dso))) ||
	    mt_hmap_add_ext(index, h, d->nr_fns)) {
		free(f.name);
		free(f.dso);
		return -ENOMEM;
	}
	d->fns[d->nr_fns] = f;
	*id = (uint32_t)d->nr_fns++;
	return 0;
}

static int load_frames(struct st_db *d, struct mt_hmap *index)
{
	sqlite3_stmt *st;
	int64_t max_id = -1;
	int rc, r;

	rc = prepare(d, "SELECT max(id) FROM frame", &st);
	if (rc)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		max_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	/* Below -1 only when every id is negative: ids a writer of ours
	 * never gives, which would make nr_frames wrap. */
	if (max_id < -1 || max_id >= UINT32_MAX - 1)
		return st_db_fail(d, -EINVAL, "frame ids out of range");
	d->nr_frames = (uint32_t)(max_id + 1);
	d->fn_of_frame = calloc(d->nr_frames + 1, sizeof(*d->fn_of_frame));
	d->frame_inferred = calloc(d->nr_frames + 1, 1);
	if (!d->fn_of_frame || !d->frame_inferred)
		return st_db_fail(d, -ENOMEM, "out of memory");
	rc = prepare(d,
		     "SELECT f.id, f.flags, n.str, s.str FROM frame f"
		     " LEFT JOIN strings n ON n.id = f.name_id"
		     " LEFT JOIN strings s ON s.id = f.dso_id",
		     &st);
	if (rc)
		return rc;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int64_t flags = sqlite3_column_int64(st, 1);
		const char *name = (const char *)sqlite3_column_text(st, 2);
		const char *dso = (const char *)sqlite3_column_text(st, 3);

		if (id < 0 || id > max_id)
			continue;
		/* 1, 2, 512: inferred_start, inferred_end, inlined (the
		 * slice view's bits). */
		if (fn_find(d, index, name, dso, (flags & 512) != 0,
			    &d->fn_of_frame[id])) {
			sqlite3_finalize(st);
			return st_db_fail(d, -ENOMEM, "out of memory");
		}
		d->frame_inferred[id] = (flags & 3) != 0;
	}
	sqlite3_finalize(st);
	if (r != SQLITE_DONE)
		return db_fail(d, "reading frame");
	return 0;
}

/* The trace's first slice: the least ts of each track, through the
 * (track_id, ts) index. */
static int load_first(struct st_db *d)
{
	sqlite3_stmt *st;
	int rc = prepare(d,
			 "SELECT min((SELECT ts FROM slice_raw s"
			 " WHERE s.track_id = t.id ORDER BY ts LIMIT 1))"
			 " FROM thread_track t",
			 &st);

	if (rc)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		d->first_ts = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

int st_db_open(struct st_db *d, const char *path, char *err, size_t errlen)
{
	struct mt_hmap index = {0};
	struct stat sb;
	int rc;

	memset(d, 0, sizeof(*d));
	d->path = path;
	d->err = err;
	d->errlen = errlen;
	if (stat(path, &sb))
		return st_db_fail(d, -errno, "%s", strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return st_db_fail(d, -EINVAL, "not a regular file");
	if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		rc = d->db ? db_fail(d, "opening")
			   : st_db_fail(d, -ENOMEM, "out of memory");
		goto fail;
	}
	if (sqlite3_exec(d->db, "SELECT 1 FROM sqlite_master LIMIT 1", NULL,
			 NULL, NULL) != SQLITE_OK) {
		rc = st_db_fail(d, -EINVAL, "not a SQLite database (%s)",
				sqlite3_errmsg(d->db));
		goto fail;
	}
	if (!has_table(d, "slice_raw") || !has_table(d, "frame") ||
	    !has_table(d, "strings") || !has_table(d, "thread_track")) {
		rc = st_db_fail(d, -EINVAL,
				"not a database mt-convert wrote (no "
				"slice_raw, frame, strings or thread_track)");
		goto fail;
	}
	d->has_function = has_table(d, "function") && has_table(d, "caller") &&
			  has_table(d, "call_path");
	d->has_slowest = d->has_function && has_table(d, "slowest");
	rc = load_frames(d, &index);
	if (!rc)
		rc = load_first(d);
	mt_hmap_free(&index);
	if (rc)
		goto fail;
	return 0;
fail:
	mt_hmap_free(&index);
	st_db_close(d);
	return rc;
}

void st_db_close(struct st_db *d)
{
	for (size_t i = 0; i < d->nr_fns; i++) {
		free(d->fns[i].name);
		free(d->fns[i].dso);
	}
	free(d->fns);
	free(d->fn_of_frame);
	free(d->frame_inferred);
	if (d->db)
		sqlite3_close(d->db);
	d->fns = NULL;
	d->nr_fns = 0;
	d->fn_of_frame = NULL;
	d->frame_inferred = NULL;
	d->db = NULL;
}

/* A row of (id, parent_id, frame_id, track_id, depth, ts, dur). */
static int read_row(struct st_db *d, sqlite3_stmt *st, struct st_row *row)
{
	int64_t frame = sqlite3_column_int64(st, 2);

	if (frame < 0 || frame >= (int64_t)d->nr_frames)
		return st_db_fail(d, -EINVAL,
				  "slice %lld: frame_id %lld out of range",
				  (long long)sqlite3_column_int64(st, 0),
				  (long long)frame);
	row->id = (uint64_t)sqlite3_column_int64(st, 0);
	row->parent = sqlite3_column_type(st, 1) == SQLITE_NULL
			      ? ST_ROOT
			      : (uint64_t)sqlite3_column_int64(st, 1);
	row->fn = d->fn_of_frame[frame];
	row->inferred = d->frame_inferred[frame];
	row->track = (uint32_t)sqlite3_column_int64(st, 3);
	row->depth = (uint32_t)sqlite3_column_int64(st, 4);
	row->ts = (uint64_t)sqlite3_column_int64(st, 5);
	row->dur = (uint64_t)sqlite3_column_int64(st, 6);
	return 0;
}

#define ROW_COLS "id, parent_id, frame_id, track_id, depth, ts, dur"

static int scan_all(struct st_db *d,
		    int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	sqlite3_stmt *st;
	struct st_row row;
	int rc = prepare(d, "SELECT " ROW_COLS " FROM slice_raw", &st);
	int r = SQLITE_DONE;

	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		rc = read_row(d, st, &row);
		if (!rc)
			rc = fn(ctx, &row);
	}
	if (!rc && r != SQLITE_DONE)
		rc = db_fail(d, "reading slice_raw");
	sqlite3_finalize(st);
	return rc;
}

int st_db_slowest(struct st_db *d, const char *name,
		  int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	sqlite3_stmt *st;
	struct st_row row;
	int rc = prepare(d,
			 "SELECT r.id, r.parent_id, r.frame_id, r.track_id,"
			 " r.depth, r.ts, r.dur FROM slowest s"
			 " JOIN function f ON f.id = s.function_id"
			 " JOIN slice_raw r ON r.id = s.slice_id"
			 " WHERE ?1 IS NULL OR f.name = ?1 ORDER BY r.id",
			 &st);
	int s = SQLITE_DONE;

	if (rc)
		return rc;
	if (name)
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		rc = read_row(d, st, &row);
		if (!rc)
			rc = fn(ctx, &row);
	}
	if (!rc && s != SQLITE_DONE)
		rc = db_fail(d, "reading slowest");
	sqlite3_finalize(st);
	return rc;
}

int st_db_named(struct st_db *d, const char *name, uint8_t **want)
{
	int n = 0;

	*want = calloc(d->nr_fns + 1, 1);
	if (!*want)
		return st_db_fail(d, -ENOMEM, "out of memory");
	for (size_t i = 0; i < d->nr_fns; i++)
		if (d->fns[i].name && !strcmp(d->fns[i].name, name)) {
			(*want)[i] = 1;
			n++;
		}
	return n;
}

struct calls {
	const uint8_t *want;
	struct call {
		uint64_t ts, id;
		uint32_t depth;
	} * v;
	size_t n, cap;
};

static int add_call(void *ctx, const struct st_row *row)
{
	struct calls *c = ctx;

	if (!c->want[row->fn])
		return 0;
	if (mt_grow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
		return -ENOMEM;
	c->v[c->n++] = (struct call){row->ts, row->id, row->depth};
	return 0;
}

static int call_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The call r names: the nth of its function's, in time order. */
static int find_call(struct st_db *d, const struct st_region *r,
		     struct call *out)
{
	struct calls c = {0};
	uint8_t *want = NULL;
	int64_t k;
	int rc = st_db_named(d, r->name, &want);

	if (rc < 0)
		return rc;
	if (!rc) {
		rc = st_db_fail(d, -ENOENT,
				"--between %s: no function named %s", r->spec,
				r->name);
		goto out;
	}
	c.want = want;
	rc = scan_all(d, add_call, &c);
	if (rc == -ENOMEM)
		rc = st_db_fail(d, rc, "out of memory");
	if (rc)
		goto out;
	qsort(c.v, c.n, sizeof(*c.v), call_cmp);
	k = r->nth > 0 ? r->nth - 1 : (int64_t)c.n + r->nth;
	if (r->nth == 0 || k < 0 || k >= (int64_t)c.n) {
		rc = st_db_fail(d, -ENOENT, "--between %s: %s has %zu call%s",
				r->spec, r->name, c.n, c.n == 1 ? "" : "s");
		goto out;
	}
	*out = c.v[k];
out:
	free(c.v);
	free(want);
	return rc;
}

/* Each outermost call of a function, with what it called. */
struct inside {
	const uint8_t *want;
	int (*fn)(void *ctx, const struct st_row *row);
	void *ctx;
	bool in;
	uint32_t track, depth;
	uint64_t calls;
};

static int keep_inside(void *ctx, const struct st_row *row)
{
	struct inside *s = ctx;
	struct st_row r = *row;

	if (s->in && (row->track != s->track || row->depth <= s->depth))
		s->in = false;
	if (!s->in) {
		if (!s->want[row->fn])
			return 0;
		s->in = true;
		s->track = row->track;
		s->depth = row->depth;
		s->calls++;
		r.parent = ST_ROOT;
	}
	return s->fn(s->ctx, &r);
}

static int scan_calls(struct st_db *d, const struct st_region *r,
		      int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	uint8_t *want = NULL;
	struct inside s = {.fn = fn, .ctx = ctx};
	int rc = st_db_named(d, r->name, &want);

	if (rc < 0)
		return rc;
	if (!rc)
		rc = st_db_fail(d, -ENOENT,
				"--between %s: no function named %s", r->spec,
				r->name);
	else {
		s.want = want;
		rc = scan_all(d, keep_inside, &s);
	}
	free(want);
	return rc;
}

static int scan_call(struct st_db *d, const struct st_region *r,
		     int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	struct call call = {0};
	sqlite3_stmt *st;
	struct st_row row;
	int rc, s;

	if (!r->nth)
		return scan_calls(d, r, fn, ctx);
	rc = find_call(d, r, &call);
	if (rc)
		return rc;
	rc = prepare(d,
		     "SELECT " ROW_COLS " FROM slice_raw WHERE id >= ?"
		     " ORDER BY id",
		     &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)call.id);
	/* Its subtree: the ids after it down to the next slice at its
	 * depth or above (ids are a thread's pre-order). */
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		rc = read_row(d, st, &row);
		if (rc)
			break;
		if (row.id == call.id)
			row.parent = ST_ROOT;
		else if (row.depth <= call.depth)
			break;
		rc = fn(ctx, &row);
		if (rc)
			break;
	}
	if (!rc && s != SQLITE_ROW && s != SQLITE_DONE)
		rc = db_fail(d, "reading slice_raw");
	sqlite3_finalize(st);
	return rc;
}

/* The slices that overlap the window, clipped to it and flagged
 * inferred where cut, as mt-convert --time cuts them. */
static int scan_time(struct st_db *d, const struct st_region *r,
		     int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	uint64_t from = d->first_ts + r->from,
		 to = r->to == UINT64_MAX ? UINT64_MAX : d->first_ts + r->to;
	sqlite3_stmt *tracks, *st = NULL;
	struct st_row row;
	int rc = prepare(d, "SELECT id FROM thread_track ORDER BY id", &tracks);
	int s = SQLITE_DONE;

	if (!rc)
		rc = prepare(d,
			     "SELECT " ROW_COLS " FROM slice_raw"
			     " WHERE track_id = ? AND ts < ? ORDER BY ts, id",
			     &st);
	while (!rc && sqlite3_step(tracks) == SQLITE_ROW) {
		sqlite3_bind_int64(st, 1, sqlite3_column_int64(tracks, 0));
		sqlite3_bind_int64(st, 2,
				   to > INT64_MAX ? INT64_MAX : (int64_t)to);
		while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t end;

			rc = read_row(d, st, &row);
			if (rc)
				break;
			end = row.ts + row.dur;
			if (end < from || (end == from && row.dur))
				continue;
			if (row.ts < from) {
				row.ts = from;
				row.inferred = true;
			}
			if (end > to) {
				end = to;
				row.inferred = true;
			}
			row.dur = end - row.ts;
			rc = fn(ctx, &row);
		}
		if (!rc && s != SQLITE_DONE)
			rc = db_fail(d, "reading slice_raw");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_finalize(tracks);
	return rc;
}

int st_db_scan(struct st_db *d, const struct st_region *r,
	       int (*fn)(void *ctx, const struct st_row *row), void *ctx)
{
	switch (r ? r->kind : ST_ALL) {
	case ST_CALL:
		return scan_call(d, r, fn, ctx);
	case ST_TIME:
		return scan_time(d, r, fn, ctx);
	default:
		return scan_all(d, fn, ctx);
	}
}

struct sum {
	struct st_agg *a;
	uint32_t track;
	bool started;
};

static int sum_row(void *ctx, const struct st_row *row)
{
	struct sum *s = ctx;

	if (s->started && row->track != s->track)
		st_end_thread(s->a);
	s->track = row->track;
	s->started = true;
	return st_add(s->a, row->fn, row->id, row->parent, row->dur,
		      row->inferred);
}

/* The figures of one row of function or caller, from column i on. */
static void read_fig(sqlite3_stmt *st, int i, struct st_fig *f)
{
	f->calls = (uint64_t)sqlite3_column_int64(st, i);
	f->inferred = (uint64_t)sqlite3_column_int64(st, i + 1);
	f->total = (uint64_t)sqlite3_column_int64(st, i + 2);
	f->self = sqlite3_column_int64(st, i + 3);
	f->inferred_dur = (uint64_t)sqlite3_column_int64(st, i + 4);
	f->p50 = (uint64_t)sqlite3_column_int64(st, i + 5);
	f->p90 = (uint64_t)sqlite3_column_int64(st, i + 6);
	f->p99 = (uint64_t)sqlite3_column_int64(st, i + 7);
	f->max = (uint64_t)sqlite3_column_int64(st, i + 8);
}

#define FIG_COLS                                                               \
	"calls, inferred, total_dur, self_dur, inferred_dur, p50_dur,"         \
	" p90_dur, p99_dur, max_dur"

/* "BUCKET:CALLS ..." into h; -EINVAL when it is not that. */
static int read_hist(const unsigned char *s, uint64_t *h)
{
	const char *p = (const char *)s;

	while (p && *p) {
		uint64_t b, n;

		if (mt_scan_u64(&p, 10, ST_HIST - 1, &b) || *p++ != ':' ||
		    mt_scan_u64(&p, 10, UINT64_MAX - 1, &n) ||
		    (*p && *p++ != ' '))
			return -EINVAL;
		h[b] = n;
	}
	return 0;
}

/* The stored tables, their function ids turned into ours. */
static int read_tables(struct st_db *d, struct st_agg *a)
{
	struct mt_hmap index = {0}, ids = {0};
	sqlite3_stmt *st = NULL;
	int rc = 0, s = SQLITE_DONE;

	/* Our functions by key, as load_frames found them. */
	for (size_t i = 0; i < d->nr_fns; i++)
		if (mt_hmap_add_ext(&index,
				    st_fn_hash(d->fns[i].name, d->fns[i].dso,
					       d->fns[i].inlined),
				    i))
			goto nomem;
	rc = prepare(d,
		     "SELECT id, name, dso, inlined, " FIG_COLS
		     ", hist FROM function",
		     &st);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		uint32_t fn;

		if (fn_find(d, &index, (const char *)sqlite3_column_text(st, 1),
			    (const char *)sqlite3_column_text(st, 2),
			    sqlite3_column_int(st, 3) != 0, &fn) ||
		    st_grow(a, (uint32_t)d->nr_fns) ||
		    mt_hmap_set(&ids, (uint64_t)sqlite3_column_int64(st, 0),
				fn))
			goto nomem;
		read_fig(st, 4, &a->fns[fn]);
		if (read_hist(sqlite3_column_text(st, 13), a->hist[fn])) {
			rc = st_db_fail(d, -EINVAL, "function %lld: bad hist",
					(long long)sqlite3_column_int64(st, 0));
			break;
		}
	}
	if (!rc && s != SQLITE_DONE)
		rc = db_fail(d, "reading function");
	sqlite3_finalize(st);
	st = NULL;
	if (!rc)
		rc = prepare(d,
			     "SELECT caller_id, callee_id, " FIG_COLS
			     " FROM caller",
			     &st);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t c, e;
		struct st_pair *p;

		if (!mt_hmap_find(&ids, (uint64_t)sqlite3_column_int64(st, 0),
				  &c) ||
		    !mt_hmap_find(&ids, (uint64_t)sqlite3_column_int64(st, 1),
				  &e)) {
			rc = st_db_fail(
				d, -EINVAL,
				"caller: a function id not in function");
			break;
		}
		if (mt_grow((void **)&a->pairs, &a->cap_pairs, a->nr_pairs + 1,
			    sizeof(*a->pairs)))
			goto nomem;
		p = &a->pairs[a->nr_pairs++];
		p->caller = (uint32_t)c;
		p->callee = (uint32_t)e;
		read_fig(st, 2, &p->fig);
	}
	if (!rc && s != SQLITE_DONE)
		rc = db_fail(d, "reading caller");
	sqlite3_finalize(st);
	st = NULL;
	if (!rc)
		rc = prepare(d,
			     "SELECT id, parent_id, function_id, calls,"
			     " total_dur, self_dur FROM call_path ORDER BY id",
			     &st);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t parent = sqlite3_column_type(st, 1) == SQLITE_NULL
					 ? -1
					 : sqlite3_column_int64(st, 1);
		uint64_t fn;

		/* Parents come first: ids are given in the order the
		 * paths were found. */
		if (sqlite3_column_int64(st, 0) != (int64_t)a->nr_paths ||
		    parent >= (int64_t)a->nr_paths ||
		    !mt_hmap_find(&ids, (uint64_t)sqlite3_column_int64(st, 2),
				  &fn)) {
			rc = st_db_fail(d, -EINVAL,
					"call_path %lld: ids out of order or "
					"range",
					(long long)sqlite3_column_int64(st, 0));
			break;
		}
		if (mt_grow((void **)&a->paths, &a->cap_paths, a->nr_paths + 1,
			    sizeof(*a->paths)))
			goto nomem;
		a->paths[a->nr_paths++] = (struct st_path){
			parent < 0 ? ST_NONE : (uint32_t)parent,
			(uint32_t)fn,
			ST_NONE,
			(uint64_t)sqlite3_column_int64(st, 3),
			(uint64_t)sqlite3_column_int64(st, 4),
			sqlite3_column_int64(st, 5)};
	}
	if (!rc && s != SQLITE_DONE)
		rc = db_fail(d, "reading call_path");
	sqlite3_finalize(st);
	mt_hmap_free(&index);
	mt_hmap_free(&ids);
	return rc;
nomem:
	sqlite3_finalize(st);
	mt_hmap_free(&index);
	mt_hmap_free(&ids);
	return st_db_fail(d, -ENOMEM, "out of memory");
}

int st_db_figures(struct st_db *d, const struct st_region *r, struct st_agg *a,
		  bool scan)
{
	struct sum s = {a, 0, false};
	int rc;

	if (st_init(a, (uint32_t)d->nr_fns))
		return st_db_fail(d, -ENOMEM, "out of memory");
	if (!scan && (!r || r->kind == ST_ALL) && d->has_function)
		return read_tables(d, a);
	rc = st_db_scan(d, r, sum_row, &s);
	/* The scan said why, or the sums failed: st_add() has no line. */
	if (rc && !(d->err && d->err[0]))
		rc = rc == -ENOMEM ? st_db_fail(d, rc, "out of memory")
				   : st_db_fail(d, rc,
						"a slice names a function the "
						"database does not list");
	if (!rc && st_finish(a, mt_nr_cores(0)))
		rc = st_db_fail(d, -ENOMEM, "out of memory");
	return rc;
}

int st_db_stack(struct st_db *d, uint64_t id, char **buf)
{
	sqlite3_stmt *st;
	char *s = NULL;
	int rc = prepare(d,
			 "SELECT parent_id, frame_id FROM slice_raw"
			 " WHERE id = ?",
			 &st);
	bool more = true;

	while (!rc && more) {
		const char *name = "?";
		char *n;
		int64_t frame;

		sqlite3_bind_int64(st, 1, (int64_t)id);
		if (sqlite3_step(st) != SQLITE_ROW)
			break;
		frame = sqlite3_column_int64(st, 1);
		if (frame >= 0 && frame < (int64_t)d->nr_frames &&
		    d->fns[d->fn_of_frame[frame]].name)
			name = d->fns[d->fn_of_frame[frame]].name;
		more = sqlite3_column_type(st, 0) != SQLITE_NULL;
		id = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		/* Innermost first: each caller goes in front. */
		if (asprintf(&n, "%s%s%s", name, s ? " > " : "", s ? s : "") <
		    0) {
			rc = st_db_fail(d, -ENOMEM, "out of memory");
			break;
		}
		free(s);
		s = n;
	}
	sqlite3_finalize(st);
	if (rc) {
		free(s);
		return rc;
	}
	*buf = s ? s : strdup("");
	return *buf ? 0 : st_db_fail(d, -ENOMEM, "out of memory");
}

int64_t st_db_tid(struct st_db *d, uint32_t track)
{
	sqlite3_stmt *st;
	int64_t tid = -1;

	if (prepare(d,
		    "SELECT t.tid FROM thread_track tt JOIN thread t"
		    " USING (utid) WHERE tt.id = ?",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, track);
	if (sqlite3_step(st) == SQLITE_ROW)
		tid = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return tid;
}
