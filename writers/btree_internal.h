/* SPDX-License-Identifier: MIT */
/*
 * btree: SQLite b-trees written straight into a database file, for the
 * SQLite writer's slice table and its indexes.
 *
 * SQLite makes the file: the schema, the small tables and an empty root
 * page for each big tree, and is closed.  bt_open() then takes the file
 * over; each tree is given its rows (a table) or entries (an index) in
 * key order, its pages are appended to the file and its root written
 * over the empty one; bt_close() puts the new page count in the header.
 * The result is what SQLite would have written itself, and PRAGMA
 * integrity_check reads it as such.
 *
 * Only what these trees need is written: integers and NULLs, cells that
 * fit in their page (no overflow pages), no free blocks, no autovacuum
 * (bt_open() refuses a file that has it).  The format is SQLite's stable
 * one, https://www.sqlite.org/fileformat2.html.
 *
 * Errors are negative errno values; after one, bt_close() only closes.
 */
#ifndef MT_BTREE_INTERNAL_H
#define MT_BTREE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* The most columns in a row or entry, and so the most bytes in a cell:
 * a payload length, a rowid, a header byte per column and a 64-bit
 * value per column. */
#define BT_MAX_COLS 16
#define BT_MAX_CELL (9 + 9 + 1 + BT_MAX_COLS * 9)

#define BT_NR_CHUNKS 3
#define BT_ALIGN     4096 /* of the chunks' buffers, for direct writes */

struct bt_chunk {
	const uint8_t *p;
	uint32_t first, nr; /* pages first .. first + nr - 1 */
};

/*
 * Where appended pages go: a run of pages from first on, numbered as
 * they come (the lock page skipped), gathered into chunks that are
 * written on a thread of their own (writer) while the next fills: chunk
 * k is jobs[k % BT_NR_CHUNKS], in bufs[k % ...].  A range's (in_mem)
 * has its leaves built in mem, one after the other, and kept there until
 * they are joined to their tree.
 */
struct bt_out {
	struct bt_file *f;
	int dfd; /* the file for direct writes, or -1 (the writer's) */
	int in_mem;
	uint8_t *mem;
	size_t mem_cap;
	uint32_t next;	/* the number the next page appended gets */
	uint32_t count; /* pages appended */
	uint8_t *chunk; /* appended pages not yet written: one of bufs */
	uint32_t chunk_first, chunk_nr;
	uint8_t *bufs[BT_NR_CHUNKS];
	struct bt_chunk jobs[BT_NR_CHUNKS];
	uint64_t nr_put;
	struct mt_jobs *writer;
	struct mt_writeback wb; /* the writer's */
	double write_s;		/* the writer's time in its writes */
};

struct bt_file {
	int fd;
	const char *path;
	uint32_t page_size;
	uint32_t usable;    /* page_size less SQLite's reserved bytes */
	uint32_t nr_pages;  /* pages in the file as SQLite left it */
	uint32_t lock_page; /* the page at 1 GiB, which SQLite never uses */
	uint32_t chunk_cap; /* pages in a chunk */
	int small_ints;	    /* schema format 4: 0 and 1 take no bytes */
	int failed;
	struct bt_out out; /* pages appended at the end of the file */
};

/* A page being filled: cells from the end backwards, their pointers
 * after the header. */
struct bt_page {
	uint8_t *p;
	uint32_t hdr; /* header bytes: 8 on a leaf, 12 on an interior page */
	uint32_t nr;  /* cells */
	uint32_t top; /* where the cell content begins */
};

/* A page of the level below and the key that follows it there: a
 * table's largest rowid in it, an index's separating entry. */
struct bt_item {
	uint32_t page;
	uint32_t key_len;
	size_t key_off; /* in bt_tree.keys */
};

struct bt_tree {
	struct bt_file *f;
	struct bt_out *out; /* where its leaves go: &f->out, or own */
	struct bt_out own;  /* a range's, in memory */
	int failed;
	int index;  /* an index b-tree, else a table's */
	int joined; /* its leaves so far are complete: ranges' (bt_join) or
		       its own (bt_range_end) */
	int more;   /* a range that another follows */
	uint64_t expect, given; /* a range's entries: to come, given */
	uint32_t root;
	struct bt_page leaf;
	uint8_t *held;	    /* the first leaf, until a second one shows
			       that it is not the root */
	uint64_t nr_leaves; /* leaves completed */
	int64_t first_rowid, last_rowid; /* the tree's first, the last one
					    given (tables) */
	uint8_t pending[BT_MAX_CELL];	 /* the last index entry given, placed
					    when the next shows it is not
					    the last */
	uint32_t pending_len;
	uint32_t last_len;     /* of the last cell put in an index leaf */
	struct bt_item *items; /* the leaves, then each level's pages */
	size_t nr_items, cap_items;
	uint8_t *keys;
	size_t keys_len, keys_cap;
};

/* Takes over the SQLite database at path, which SQLite has closed;
 * about expect bytes will be appended (0: not known), which sizes the
 * runs they are written in. */
int bt_open(struct bt_file *f, const char *path, uint64_t expect);
/* Writes what is left and the header, and closes; after an error (or
 * with abort set) it only closes.  *write_s (if not NULL): the seconds
 * the pages took to write, on the thread that writes them. */
int bt_close(struct bt_file *f, int abort, double *write_s);

/* Starts the tree whose root page SQLite made at root (an empty leaf). */
int bt_begin(struct bt_tree *t, struct bt_file *f, int index, uint32_t root);
/*
 * A table row: its rowid (larger than the last one's) and n values
 * (n <= BT_MAX_COLS), NULL where bit i of nulls is set.  A column that is
 * the table's INTEGER PRIMARY KEY is given as NULL, as SQLite stores it.
 */
int bt_row(struct bt_tree *t, int64_t rowid, const int64_t *v, uint32_t nulls,
	   int n);
/* An index entry: its n values, the row's rowid last, in index order. */
int bt_entry(struct bt_tree *t, const int64_t *v, uint32_t nulls, int n);
/* Writes the interior levels and the root.  bt_free() after either. */
int bt_end(struct bt_tree *t);
void bt_free(struct bt_tree *t);

/*
 * Trees built in ranges, on several threads.  A range is a run of a
 * tree's rows or entries, in order, whose leaves are built in memory by
 * itself (bt_range_begin(), bt_row() or bt_entry(), bt_range_end()), on
 * any thread: it touches nothing of the file's.  bt_join() then appends
 * them, numbered, to the tree begun with bt_begin(), range after range
 * in key order, on one thread.  A range's last leaf ends with it, so
 * the pages depend only on where the ranges are cut.  In an index the
 * entry that separates a range's last leaf from the next range's first
 * is the range's own last one: a range that another follows (more) says
 * how many entries it is given (nr, 2 or more), and its entry before the
 * last ends its leaves.  A range tree (or a zeroed one) may be begun
 * again for the next range once joined: it keeps its buffers.
 *
 * Several trees' leaves may go in the file one tree after the other
 * (bt_end_leaves() completes them, bt_join() or not) and their interior
 * pages after all of them (bt_levels(), in a fixed order): the file is
 * then the same however the ranges were spread over threads.
 */
int bt_range_begin(struct bt_tree *t, struct bt_file *f, int index, int more,
		   uint64_t nr);
int bt_range_end(struct bt_tree *t);
/* A range of a tree begun with bt_begin() built in it directly, on its
 * thread: the same pages as a range built apart and joined.  Ended with
 * bt_range_end(). */
int bt_range_start(struct bt_tree *t, int more, uint64_t nr);
int bt_join(struct bt_tree *t, const struct bt_tree *r);
int bt_end_leaves(struct bt_tree *t);
int bt_levels(struct bt_tree *t);

#endif
