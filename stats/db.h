/* SPDX-License-Identifier: MIT */
/* stats/ inside: reading a database mt-convert wrote (db.c). */
#ifndef MT_STATS_DB_H
#define MT_STATS_DB_H

#include "stats/stats.h"

#include <sqlite3.h>

/* A function of a database: what a row of function holds. */
struct st_fn {
	char *name, *dso; /* owned; NULL when the database has none */
	bool inlined;
};

struct st_db {
	const char *path;
	sqlite3 *db;
	char *err;
	size_t errlen;
	/* Functions, by our id (not the function table's). */
	struct st_fn *fns;
	size_t nr_fns, cap_fns;
	/* By frame id: its function, and whether its start or end was
	 * inferred. */
	uint32_t *fn_of_frame;
	uint8_t *frame_inferred;
	uint32_t nr_frames;
	bool has_function; /* the tables function and caller are there */
	bool has_slowest;  /* and slowest */
	uint64_t first_ts; /* the trace's first slice */
	uint64_t last_end; /* the end of its last */
};

/* One slice as a scan hands it on: a thread's in pre-order. */
struct st_row {
	uint64_t id, parent; /* parent ST_ROOT for a region's roots */
	uint32_t fn, track, depth;
	uint64_t ts, dur;
	bool inferred; /* in the trace, or cut at the region's edge */
};

/* A function's key hashed, for a table of them (mt_hmap_find_ext). */
uint64_t st_fn_hash(const char *name, const char *dso, bool inlined);

/* Opens the database at path for reading.  Returns 0, or a negative errno
 * value with one line naming it in err (d is then closed). */
int st_db_open(struct st_db *d, const char *path, char *err, size_t errlen);
void st_db_close(struct st_db *d);
/* One line naming the database; returns rc. */
int st_db_fail(struct st_db *d, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Every slice of the region r, each thread's in pre-order; fn returns
 * non-zero to stop (its value is returned).  Returns 0, fn's value, or a
 * negative errno value with one line in d->err. */
int st_db_scan(struct st_db *d, const struct st_region *r,
	       int (*fn)(void *ctx, const struct st_row *row), void *ctx);
/* The figures of the region (from the function and caller tables when
 * the region is the whole trace, the database has them and scan is
 * false; a scan keeps the durations in a->fdur and a->pdur).  a's function ids
 * are d's.  Returns 0, or a negative errno value with one line in d->err. */
int st_db_figures(struct st_db *d, const struct st_region *r, struct st_agg *a,
		  bool scan);
/* The slowest calls the table slowest keeps (of functions named name,
 * or of all when NULL), in id order, as st_db_scan hands them on; it
 * returns what st_db_scan does. */
int st_db_slowest(struct st_db *d, const char *name,
		  int (*fn)(void *ctx, const struct st_row *row), void *ctx);
/* The functions named name (any dso, inlined or not), as a bit per id
 * in want (d->nr_fns bytes, owned by the caller).  Returns how many, or
 * -ENOMEM with one line in d->err. */
int st_db_named(struct st_db *d, const char *name, uint8_t **want);
/* The stack of slice id, outermost first, "a > b > c", into *buf (the
 * caller's to free).  Returns 0, or a negative errno value with one line
 * in d->err. */
int st_db_stack(struct st_db *d, uint64_t id, char **buf);
/* The tid of a track, or -1 when the database has none for it. */
int64_t st_db_tid(struct st_db *d, uint32_t track);

#endif
