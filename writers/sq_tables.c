/* SPDX-License-Identifier: MIT */
/*
 * The SQLite writer's tables written through SQLite's inserts while the
 * database is first open: processes, threads and their tracks, strings,
 * args and frames (one pass over the slices, which also writes the gap
 * rows), segments, goroutines, stitches, guesses, hits, ptwrites and
 * metadata.  sqlite.c has the schema and the order of the writes.
 */
#include "util/version.h"
#include "writers/sq_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
int sq_write_threads(struct sq *w)
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
int sq_write_strings(struct sq *w)
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

/* s's slot in a memo of SQ_MEMO frames. */
static struct frame_memo *memo_slot(struct frame_memo *memo,
				    const struct mt_slice *s)
{
	uint64_t h =
		((uint64_t)s->frame * 0x9e3779b97f4a7c15ull) ^
		((uint64_t)s->flags << 32 | s->site) * 0xc2b2ae3d27d4eb4full;

	return &memo[(h >> 40) % SQ_MEMO];
}

/* frame_find(), remembered: a slot per (model frame, flags, call site),
 * the last one there.  Frame id UINT32_MAX is never handed out. */
static int frame_get(struct sq *w, const struct mt_slice *s, uint32_t *id)
{
	struct frame_memo *m = memo_slot(w->memo, s);
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

uint32_t sq_frame_id(const struct sq *w, const struct mt_slice *s,
		     struct frame_memo *memo)
{
	struct frame_memo *m = memo_slot(memo, s);
	const struct mt_frame *fr = mt_slice_frame(w->t, s);
	struct aset a = {fr->addr, fr->dso, s->flags, fr->source, s->site};
	struct aset_key k = {w, &a};
	uint64_t set = UINT64_MAX;

	if (m->id != UINT32_MAX && m->frame == s->frame &&
	    m->flags == s->flags && m->site == s->site)
		return m->id;
	if ((a.addr || a.dso || a.flags || a.source || a.site) &&
	    !mt_hmap_find_ext(&w->aset_index, aset_hash(&a), same_aset, &k,
			      &set))
		return UINT32_MAX;
	for (uint32_t f = (uint32_t)mt_hmap_get(&w->frame_heads, set + 1); f;
	     f = w->frames[f - 1].next)
		if (w->frames[f - 1].name == fr->name) {
			*m = (struct frame_memo){s->frame, s->flags, s->site,
						 f - 1};
			return f - 1;
		}
	return UINT32_MAX;
}

/*
 * The pass over the slices while SQLite is open: each is checked where a
 * bad value would make the database lie (a parent that is not an earlier
 * slice of the same thread, a string id out of range), its frame found
 * or written, and its gap row written.  The trees are written from the
 * frames kept here once SQLite is closed.
 */
/*
 * The frame table takes one pass over every slice (checking it, and
 * whether its thread's starts are in order) and a frame for each new
 * (model frame, flags, call site): tens of millions of slices, a few
 * thousand frames.  The slices are read in chunks on the writer's
 * threads, each chunk listing the slices whose key its memo had not
 * seen (every first in the whole trace among them: a chunk's memo starts
 * empty) and its gaps; then this thread goes through the lists in order,
 * giving SQLite the same frames and gaps in the same order as one pass
 * would, so the file is the same at every -j.
 */
#define FR_CHUNK ((uint32_t)1 << 16)

struct fr_chunk {
	uint32_t ti, lo, hi;
	uint32_t bad; /* the first slice out of range, UINT32_MAX: none */
	bool unsorted;
	uint32_t *list; /* slices to see: new keys and gaps, in order */
	size_t n, cap;
	int rc;
};

struct fr_pass {
	struct sq *w;
	struct frame_memo (*memo)[SQ_MEMO]; /* a worker's */
};

static bool slice_ok(const struct mt_trace *t, const struct mt_slice *s,
		     size_t j)
{
	return !((s->parent != MT_NONE && s->parent >= j) ||
		 s->frame >= t->nr_frames ||
		 t->frames[s->frame].name >= t->strs.nr ||
		 t->frames[s->frame].dso >= t->strs.nr ||
		 t->frames[s->frame].source >= t->strs.nr ||
		 s->site >= t->strs.nr);
}

static int fr_work(void *ctx, unsigned worker, void *job)
{
	const struct fr_pass *a = ctx;
	const struct mt_trace *t = a->w->t;
	struct fr_chunk *k = job;
	const struct mt_slice *sl = t->threads[k->ti].slices;
	struct frame_memo *memo = a->memo[worker];

	memset(memo, 0xff, sizeof(*a->memo));
	for (uint32_t j = k->lo; j < k->hi; j++) {
		const struct mt_slice *s = &sl[j];
		struct frame_memo *m = memo_slot(memo, s);
		bool seen = m->frame == s->frame && m->flags == s->flags &&
			    m->site == s->site;

		if (!slice_ok(t, s, j)) {
			k->bad = j;
			return 0;
		}
		/* The start index takes a thread whose starts are in order
		 * as it is. */
		if (j && (int64_t)sl[j - 1].ts > (int64_t)s->ts)
			k->unsorted = true;
		if (seen && !(s->flags & MT_SLICE_GAP))
			continue;
		*m = (struct frame_memo){s->frame, s->flags, s->site, 0};
		if (mt_grow((void **)&k->list, &k->cap, k->n + 1,
			    sizeof(*k->list))) {
			k->rc = -ENOMEM;
			return 0;
		}
		k->list[k->n++] = j;
	}
	return 0;
}

int sq_write_frames(struct sq *w)
{
	const struct mt_trace *t = w->t;
	struct fr_pass a = {.w = w};
	struct fr_chunk *ks = NULL;
	size_t nk = 0;
	uint64_t base = 0, gaps = 0;
	unsigned jobs = w->jobs > 1 ? w->jobs : 1;
	int rc = 0;

	for (size_t ti = 0; ti < t->nr_threads; ti++) {
		w->nr_slices += t->threads[ti].nr_slices;
		nk += (t->threads[ti].nr_slices + FR_CHUNK - 1) / FR_CHUNK;
	}
	w->ts_unsorted = calloc(t->nr_threads + 1, sizeof(*w->ts_unsorted));
	ks = calloc(nk ? nk : 1, sizeof(*ks));
	a.memo = malloc(jobs * sizeof(*a.memo));
	if (!w->ts_unsorted || !ks || !a.memo) {
		rc = sq_fail(w, -ENOMEM, "out of memory");
		goto out;
	}
	nk = 0;
	for (size_t ti = 0; ti < t->nr_threads; ti++)
		for (size_t lo = 0; lo < t->threads[ti].nr_slices;
		     lo += FR_CHUNK) {
			size_t hi = t->threads[ti].nr_slices - lo > FR_CHUNK
					    ? lo + FR_CHUNK
					    : t->threads[ti].nr_slices;

			ks[nk++] = (struct fr_chunk){.ti = (uint32_t)ti,
						     .lo = (uint32_t)lo,
						     .hi = (uint32_t)hi,
						     .bad = UINT32_MAX};
		}
	/* Every chunk is held until this thread has gone through them all:
	 * their lists are short. */
	if ((rc = mt_pool_each(jobs, fr_work, NULL, &a, ks, nk, sizeof(*ks)))) {
		rc = sq_fail(w, rc, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nk && !rc; i++) {
		const struct fr_chunk *k = &ks[i];
		const struct mt_thread *th = &t->threads[k->ti];
		uint32_t f = 0;

		if (k->lo == 0 && i)
			base += t->threads[ks[i - 1].ti].nr_slices;
		if (k->rc) {
			rc = sq_fail(w, k->rc, "out of memory");
			break;
		}
		for (size_t e = 0; e < k->n && !rc; e++) {
			const struct mt_slice *s = &th->slices[k->list[e]];

			rc = frame_get(w, s, &f);
			if (!rc && (s->flags & MT_SLICE_GAP))
				rc = write_gap(w, s, k->ti + 1,
					       base + k->list[e], gaps++);
		}
		if (!rc && k->bad != UINT32_MAX)
			rc = sq_fail(w, -EINVAL,
				     "thread %" PRIu32 " slice %" PRIu32 ": "
				     "parent or string id out of range",
				     th->tid, k->bad);
		if (k->unsorted)
			w->ts_unsorted[k->ti] = true;
	}
out:
	for (size_t i = 0; ks && i < nk; i++)
		free(ks[i].list);
	free(ks);
	free(a.memo);
	return rc;
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

int sq_write_extras(struct sq *w)
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
int sq_write_metadata(struct sq *w)
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

int sq_write_ptwrites(struct sq *w)
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
int sq_check_strings(struct sq *w)
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
