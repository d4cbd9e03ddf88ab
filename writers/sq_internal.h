/* SPDX-License-Identifier: MIT */
/*
 * What the SQLite writer's rooms share: sqlite.c (the schema, the order
 * of the writes, the function figures), sq_tables.c (the small tables
 * through SQLite, the frames) and sq_pages.c (slice_raw and its indexes
 * written as pages).
 */
#ifndef MT_SQ_INTERNAL_H
#define MT_SQ_INTERNAL_H

#include "model/model.h"
#include "util/util.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One interned arg set: its key, at its arg_set_id in sq.asets. */
struct aset {
	uint64_t addr;
	uint32_t dso, flags;
	uint32_t source, site; /* string ids of "FILE:LINE", 0 unknown */
};

/* A number (tid or pid) and the row that stands for it. */
struct idmap {
	uint32_t key;
	uint32_t id;
};

/*
 * A frame: a name and an arg set, which most slices share with many
 * others.  Frames of one set are chained, newest first, from the set's
 * entry in frame_heads.
 */
struct frame {
	uint32_t name;
	uint32_t next; /* id + 1 of the next frame of the set, 0 at the end */
};

/* The prepared inserts, in the order stmts[] holds them. */
enum {
	S_PROCESS,
	S_THREAD,
	S_TRACK,
	S_FRAME,
	S_ARG,
	S_SEGMENT,
	S_STITCH,
	S_GUESS,
	S_GAP,
	S_HIT,
	S_PTWRITE,
	S_STRING,
	S_FUNCTION,
	S_CALLER,
	S_CALL_PATH,
	S_SLOWEST,
	S_GOROUTINE,
	S_NR
};

#define SQ_MEMO 1024 /* frames remembered by a frame memo */

/* One write in progress; owns everything it points to except t. */
struct sq {
	const struct mt_trace *t;
	const char *path;
	char *err;
	size_t errlen;
	sqlite3 *db;
	sqlite3_stmt *stmts[S_NR];
	struct aset *asets; /* by arg_set_id */
	size_t nr_asets, cap_asets;
	struct mt_hmap aset_index; /* an aset's hash -> its arg_set_id */
	struct idmap *tids;	   /* sorted by tid: utid of each thread */
	struct idmap *pids;	   /* sorted by pid: upid of each process */
	size_t nr_pids;
	uint32_t next_upid;
	struct frame *frames; /* by id */
	size_t nr_frames, cap_frames;
	struct mt_hmap frame_heads; /* arg_set_id + 1 -> frame id + 1 */
	/* The frames last found, by (model frame, flags, call site), which
	 * decide a frame: most slices repeat one seen a moment before. */
	struct frame_memo {
		uint32_t frame, flags, site, id;
	} memo[SQ_MEMO];
	/* by slice id: the next sibling, while slice_parent is built */
	uint32_t *next_sib;
	bool *ts_unsorted; /* by thread: its starts are not in order */
	uint64_t nr_slices;
	unsigned jobs;	  /* threads the big trees may be built on */
	double write_s;	  /* the big trees' pages' writes, on their thread */
	unsigned fn_part; /* slices a part of the function sums */
};

/* One line in the caller's buffer, naming the database (util/err.h);
 * returns rc. */
int sq_fail(struct sq *w, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* SQLite's own message for what failed. */
int sq_fail_db(struct sq *w, const char *what);

/* Runs a bound insert and readies it for the next row. */
int sq_step(struct sq *w, sqlite3_stmt *st);
/* String id 0 is "": bound as NULL. */
void sq_bind_str(struct sq *w, sqlite3_stmt *st, int i, uint32_t id);
/* A model number bound bit for bit into SQLite's signed integer. */
void sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v);
/* 0 means "none": bound as NULL. */
void sq_bind_opt(sqlite3_stmt *st, int i, uint64_t v);

/* sq_tables.c, in the order sqlite.c calls them: the model's string ids
 * outside the slices checked first, then the tables SQLite writes. */
int sq_check_strings(struct sq *w);
int sq_write_threads(struct sq *w);
int sq_write_strings(struct sq *w);
int sq_write_frames(struct sq *w);
/* The id sq_write_frames() gave s's frame, found again without writing,
 * through a memo of SQ_MEMO (ids UINT32_MAX at first) of the caller's;
 * UINT32_MAX if it has none. */
uint32_t sq_frame_id(const struct sq *w, const struct mt_slice *s,
		     struct frame_memo *memo);
int sq_write_extras(struct sq *w);
int sq_write_ptwrites(struct sq *w);
int sq_write_metadata(struct sq *w);

/* sq_pages.c.  The trees SQLite left empty: slice_raw, slice_track_ts,
 * slice_parent. */
#define SQ_NR_TREES 3
int sq_read_roots(struct sq *w, uint32_t *roots);
/* before_links(ctx), when not NULL, is called once slice_raw's and
 * slice_track_ts's leaves are built, before the sibling links take 4
 * bytes a slice: the caller lets go of what it can; its error ends the
 * write. */
int sq_write_trees(struct sq *w, const char *tmp, const uint32_t *roots,
		   int (*before_links)(void *ctx), void *ctx);

#endif
