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
 * k is jobs[k % BT_NR_CHUNKS], in bufs[k % ...].  A dry one only counts
 * them.
 */
struct bt_out {
	struct bt_file *f;
	int dfd; /* the file for direct writes, or -1 (the writer's) */
	int dry;
	uint32_t next;	/* the number the next page appended gets */
	uint32_t count; /* pages appended */
	uint8_t *chunk; /* appended pages not yet written: one of bufs */
	uint32_t chunk_first, chunk_nr;
	uint8_t *bufs[BT_NR_CHUNKS];
	struct bt_chunk jobs[BT_NR_CHUNKS];
	uint64_t nr_put;
	struct mt_jobs *writer;
	struct mt_writeback wb; /* the writer's */
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
	struct bt_out own;
	int failed;
	int index; /* an index b-tree, else a table's */
	uint32_t root;
	struct bt_page leaf;
	uint8_t *held;	    /* the first leaf, until a second one shows
			       that it is not the root */
	uint64_t nr_leaves; /* leaves completed */
	int64_t last_rowid; /* of the last row in leaf (tables) */
	uint8_t pending[BT_MAX_CELL]; /* the last index entry given, placed
					 when the next shows it is not
					 the last */
	uint32_t pending_len;
	uint32_t last_len;     /* of the last cell put in an index leaf */
	struct bt_item *items; /* the leaves, then each level's pages */
	size_t nr_items, cap_items;
	uint8_t *keys;
	size_t keys_len, keys_cap;
};

/* Takes over the SQLite database at path, which SQLite has closed. */
int bt_open(struct bt_file *f, const char *path);
/* Writes what is left and the header, and closes; after an error (or
 * with abort set) it only closes. */
int bt_close(struct bt_file *f, int abort);

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
 * Trees built side by side.  Each puts its leaves in a run of pages of
 * its own, from page first on, and its interior pages (far fewer) at the
 * end of the file once every tree's leaves are in: so the file is the
 * same whichever tree is done first.  A run's first page is where the
 * run before ends, known before that tree is built from a dry run of it
 * (first 0), which only counts its pages.  bt_begin_run() starts such a
 * tree; bt_end_leaves() completes its leaves and waits until they are
 * written; bt_run_end() is then the page after its run, or, for a dry
 * run, the page after it had it begun at first.  When every run is
 * complete, bt_runs_done() makes the end of the last one the end of the
 * file, and bt_levels() puts each tree's interior pages there, one tree
 * after the other, in a fixed order.  A tree is used by one thread at a
 * time; the file's calls are made when no tree's are.
 */
int bt_begin_run(struct bt_tree *t, struct bt_file *f, int index, uint32_t root,
		 uint32_t first);
int bt_end_leaves(struct bt_tree *t);
uint32_t bt_run_end(const struct bt_tree *t, uint32_t first);
/* The page the first run begins at. */
uint32_t bt_file_end(const struct bt_file *f);
int bt_runs_done(struct bt_file *f, uint32_t end);
int bt_levels(struct bt_tree *t);

#endif
