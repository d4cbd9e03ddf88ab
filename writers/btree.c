/* SPDX-License-Identifier: MIT */
/*
 * btree: SQLite b-trees written straight into a database file (see
 * btree_internal.h for the why and the limits).
 *
 * Rows and entries come in key order, so each leaf is filled once, left
 * to right, until the next cell does not fit, and nothing is ever moved.
 * The levels above are built from what each completed page hands up:
 * a table's largest rowid in it, or an index's next entry, which an
 * index b-tree keeps in the interior cell instead of in a leaf.  Every
 * non-root page keeps at least one cell: an index's last entry is never
 * made a separator with nothing after it, and the last page of a level
 * never holds only its right child.  Pages are filled to the brim:
 * SQLite needs no free space to read a page, and a later insert splits
 * it as it would any other.
 */
#include "util/util.h"
#include "writers/btree_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
	PAGE_INDEX_INTERIOR = 2,
	PAGE_TABLE_INTERIOR = 5,
	PAGE_INDEX_LEAF = 10,
	PAGE_TABLE_LEAF = 13,
};

/* SQLite's lock bytes start at 1 GiB; the page that holds them is never
 * part of a b-tree. */
#define PENDING_BYTE 0x40000000u

/* Appended pages are written in runs of up to this many bytes: each
 * direct write waits for the disk, and 1 MiB runs kept the writer's
 * thread waiting 1.6 s for the bench capture's 1.4 GB (4 MiB: 1.1 s,
 * 8 MiB no better for 12 MiB more of buffers).  A small file, a
 * sixty-fourth of what is to be appended, 1 MiB at least: its buffers
 * would outweigh it. */
#define CHUNK_BYTES	(4u << 20)
#define CHUNK_BYTES_MIN (1u << 20)

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t varint_len(uint64_t v)
{
	uint32_t n = 1;

	if (v >> 56)
		return 9;
	while (v >>= 7)
		n++;
	return n;
}

/* SQLite's varint: big-endian groups of 7 bits, all 8 in a ninth byte. */
static uint32_t put_varint(uint8_t *p, uint64_t v)
{
	uint32_t n = varint_len(v);

	if (n == 9) {
		p[8] = (uint8_t)v;
		v >>= 8;
		for (int i = 7; i >= 0; i--, v >>= 7)
			p[i] = (uint8_t)(v | 0x80);
		return 9;
	}
	p[n - 1] = (uint8_t)(v & 0x7f);
	for (int i = (int)n - 2; i >= 0; i--) {
		v >>= 7;
		p[i] = (uint8_t)(v | 0x80);
	}
	return n;
}

/* Bytes of the value under each serial type (7, a float, is not used). */
static const uint8_t type_len[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};

/* The smallest serial type that holds v, as SQLite picks it. */
static uint32_t int_type(const struct bt_file *f, int64_t v)
{
	uint64_t u = v < 0 ? ~(uint64_t)v : (uint64_t)v;

	if (u <= 127)
		return (v == 0 || v == 1) && f->small_ints ? 8 + (uint32_t)v
							   : 1;
	if (u <= 32767)
		return 2;
	if (u <= 8388607)
		return 3;
	if (u <= 2147483647)
		return 4;
	if (u <= 140737488355327)
		return 5;
	return 6;
}

/*
 * A record of n integers and NULLs; returns its length.  Each value is
 * stored as 8 big-endian bytes of which the next one overwrites all but
 * its own: out has room for 8 bytes past the record (BT_MAX_CELL).
 */
static uint32_t record(const struct bt_file *f, uint8_t *out, const int64_t *v,
		       uint32_t nulls, int n)
{
	uint8_t *b = out + 1 + n;

	/* n <= BT_MAX_COLS: the header's length and every type fit a
	 * one-byte varint. */
	out[0] = (uint8_t)(n + 1);
	for (int i = 0; i < n; i++) {
		uint32_t t = nulls >> i & 1 ? 0 : int_type(f, v[i]);
		uint32_t len = type_len[t];

		out[1 + i] = (uint8_t)t;
		if (len) {
			uint64_t be = __builtin_bswap64((uint64_t)v[i]
							<< (64 - 8 * len));

			memcpy(b, &be, 8);
			b += len;
		}
	}
	return (uint32_t)(b - out);
}

/* ------------------------------------------------------------------ */
/* The file                                                            */

static int pwrite_all(int fd, const uint8_t *p, size_t n, off_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

/*
 * A chunk's pages past the page cache, straight to the disk: nothing
 * reads them back while the file is written, and the copy of every byte
 * into the cache was the costliest part of writing them (a 1.4 GB
 * database on a fresh virtual machine: 3.1 s of system time through the
 * cache, 0.2 s direct).  A file system or an offset that takes no direct
 * writes says EINVAL, and the chunks go through the cache from then on.
 */
static int write_direct(struct bt_out *o, const struct bt_chunk *c)
{
	const struct bt_file *f = o->f;
	int rc;

	if (o->dfd < 0)
		return -EINVAL;
	rc = pwrite_all(o->dfd, c->p, (size_t)c->nr * f->page_size,
			(off_t)(c->first - 1) * f->page_size);
	if (rc == -EINVAL) {
		close(o->dfd);
		o->dfd = -1;
	}
	return rc;
}

/* A chunk's pages into the file, on the jobs' thread. */
static int write_chunk(void *ctx, void *job)
{
	struct bt_out *o = ctx;
	const struct bt_file *f = o->f;
	const struct bt_chunk *c = job;
	uint64_t a;
	int rc;

	/* (how long the disk took: no more cores shorten it) */
	a = mt_clock_ns(CLOCK_MONOTONIC);
	rc = write_direct(o, c);
	if (rc == -EINVAL) {
		rc = pwrite_all(f->fd, c->p, (size_t)c->nr * f->page_size,
				(off_t)(c->first - 1) * f->page_size);
		/* Pages are appended: the file so far is what to write
		 * back. */
		if (!rc)
			mt_writeback(&o->wb, f->fd,
				     (uint64_t)(c->first - 1 + c->nr) *
					     f->page_size);
	}
	o->write_s += mt_since_s(CLOCK_MONOTONIC, a);
	return rc;
}

/* Hands the pages appended so far to the jobs' thread and goes on in
 * the next buffer, which the job before has written by then (the queue
 * holds BT_NR_CHUNKS - 1). */
static int flush(struct bt_out *o)
{
	struct bt_chunk *c;
	int rc;

	if (!o->chunk_nr)
		return 0;
	c = &o->jobs[o->nr_put % BT_NR_CHUNKS];
	c->p = o->chunk;
	c->first = o->chunk_first;
	c->nr = o->chunk_nr;
	o->chunk_nr = 0;
	rc = mt_jobs_put(o->writer, c);
	o->nr_put++;
	o->chunk = o->bufs[o->nr_put % BT_NR_CHUNKS];
	return rc;
}

/* Appends a page (zeroes when page is NULL); *pgno is its number, or
 * in memory its place there. */
static int append(struct bt_out *o, const uint8_t *page, uint32_t *pgno)
{
	const struct bt_file *f = o->f;
	uint8_t *dst;
	int rc;

	if (o->in_mem) {
		/* Built where it goes (mem_leaf). */
		*pgno = o->count++;
		return 0;
	}
	/* SQLite numbers pages in 32 bits and stops at 2^32 - 2. */
	if (o->next >= 0xffffffffu)
		return -EFBIG;
	if (o->chunk_nr == f->chunk_cap && (rc = flush(o)))
		return rc;
	if (!o->chunk_nr)
		o->chunk_first = o->next;
	dst = o->chunk + (size_t)o->chunk_nr++ * f->page_size;
	if (page)
		memcpy(dst, page, f->page_size);
	else
		memset(dst, 0, f->page_size);
	*pgno = o->next++;
	if (o->next == f->lock_page) {
		uint32_t skip;

		return append(o, NULL, &skip);
	}
	return 0;
}

/* Pages go to o from first on. */
static int out_start(struct bt_out *o, struct bt_file *f, uint32_t first)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->f = f;
	o->dfd = -1;
	o->next = first == f->lock_page ? first + 1 : first;
	/* Direct writes want buffers aligned to the disk's blocks. */
	for (int i = 0; i < BT_NR_CHUNKS; i++) {
		void *b;

		if (posix_memalign(&b, BT_ALIGN,
				   (size_t)f->chunk_cap * f->page_size)) {
			rc = -ENOMEM;
			goto fail;
		}
		o->bufs[i] = b;
	}
	o->chunk = o->bufs[0];
	o->dfd = open(f->path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	rc = mt_jobs_start(&o->writer, write_chunk, o, BT_NR_CHUNKS - 1);
	if (rc)
		goto fail;
	return 0;
fail:
	for (int i = 0; i < BT_NR_CHUNKS; i++)
		free(o->bufs[i]);
	if (o->dfd >= 0)
		close(o->dfd);
	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	return rc;
}

/* Writes what is left (keep) and waits until every chunk is written or
 * skipped; then frees the buffers. */
static int out_end(struct bt_out *o, int keep)
{
	int rc = 0, jrc;

	if (keep)
		rc = flush(o);
	jrc = mt_jobs_end(o->writer);
	o->writer = NULL;
	if (keep && !rc)
		rc = jrc;
	if (o->dfd >= 0 && close(o->dfd) && !rc)
		rc = -errno;
	o->dfd = -1;
	for (int i = 0; i < BT_NR_CHUNKS; i++) {
		free(o->bufs[i]);
		o->bufs[i] = NULL;
	}
	o->chunk = NULL;
	return rc;
}

int bt_open(struct bt_file *f, const char *path, uint64_t expect)
{
	uint32_t chunk = CHUNK_BYTES;
	static const char magic[16] = "SQLite format 3";
	uint8_t h[100];
	struct stat sb;
	ssize_t n;
	int rc = -EINVAL;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->fd = open(path, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	n = pread(f->fd, h, sizeof(h), 0);
	if (n < 0 || fstat(f->fd, &sb)) {
		rc = -errno;
		goto fail;
	}
	if (n != sizeof(h) || memcmp(h, magic, sizeof(magic)))
		goto fail;
	f->page_size = (uint32_t)h[16] << 8 | h[17];
	if (f->page_size == 1)
		f->page_size = 65536;
	if (f->page_size < 512 || f->page_size & (f->page_size - 1) ||
	    h[20] > f->page_size - 480)
		goto fail;
	f->usable = f->page_size - h[20];
	f->nr_pages = get32(h + 28);
	/* The header's page count is only trusted when it matches the
	 * change counter; the file's size must agree with it. */
	if (get32(h + 24) != get32(h + 92) ||
	    (uint64_t)sb.st_size != (uint64_t)f->nr_pages * f->page_size)
		goto fail;
	/* Autovacuum keeps pointer-map pages, which these trees would have
	 * to be entered in. */
	if (get32(h + 52)) {
		rc = -ENOTSUP;
		goto fail;
	}
	f->small_ints = get32(h + 44) >= 4;
	f->lock_page = PENDING_BYTE / f->page_size + 1;
	if (expect && expect / 64 < chunk)
		chunk = expect / 64 > CHUNK_BYTES_MIN ? (uint32_t)(expect / 64)
						      : CHUNK_BYTES_MIN;
	f->chunk_cap = chunk / f->page_size ? chunk / f->page_size : 1;
	rc = out_start(&f->out, f, f->nr_pages + 1);
	if (rc)
		goto fail;
	return 0;
fail:
	close(f->fd);
	f->fd = -1;
	return rc;
}

int bt_close(struct bt_file *f, int abort, double *write_s)
{
	int keep = !abort && !f->failed; /* the trees go in the file */
	uint8_t h[100];
	int rc;

	if (f->fd < 0)
		return 0;
	/* Every chunk is written (or skipped, after a failure) before the
	 * header says how many pages there are, and before the close. */
	rc = out_end(&f->out, keep);
	if (write_s)
		*write_s += f->out.write_s;
	if (keep && !rc) {
		if (pread(f->fd, h, sizeof(h), 0) != sizeof(h))
			rc = -EIO;
		if (!rc) {
			/* A new change counter, with the page count valid for
			 * it. */
			uint32_t counter = get32(h + 24) + 1;

			put32(h + 24, counter);
			put32(h + 28, f->out.next - 1);
			put32(h + 92, counter);
			rc = pwrite_all(f->fd, h, sizeof(h), 0);
		}
	}
	if (close(f->fd) && !rc)
		rc = -errno;
	f->fd = -1;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Pages                                                               */

static void page_init(struct bt_page *pg, const struct bt_file *f, uint8_t type)
{
	pg->hdr = type == PAGE_TABLE_LEAF || type == PAGE_INDEX_LEAF ? 8 : 12;
	pg->nr = 0;
	pg->top = f->usable;
	memset(pg->p, 0, pg->hdr);
	pg->p[0] = type;
}

static int page_room(const struct bt_page *pg, uint32_t len)
{
	return pg->hdr + 2 * (pg->nr + 1) + len <= pg->top;
}

/* Room for a cell of len bytes after the others (page_room first). */
static uint8_t *page_add(struct bt_page *pg, uint32_t len)
{
	pg->top -= len;
	put16(pg->p + pg->hdr + 2 * pg->nr++, pg->top);
	return pg->p + pg->top;
}

/* The header's counts and right child; the unused bytes zeroed, so that
 * the file holds nothing but the trace. */
static void page_finish(struct bt_page *pg, const struct bt_file *f,
			uint32_t right)
{
	uint32_t end = pg->hdr + 2 * pg->nr;

	put16(pg->p + 3, pg->nr);
	put16(pg->p + 5, pg->top == 65536 ? 0 : pg->top);
	if (pg->hdr == 12)
		put32(pg->p + 8, right);
	memset(pg->p + end, 0, pg->top - end);
	memset(pg->p + f->usable, 0, f->page_size - f->usable);
}

/* ------------------------------------------------------------------ */
/* Trees                                                               */

/* A tree of the file's own fails the file; a range only itself, as its
 * thread may not touch the file (its caller then aborts the file). */
static int fail(struct bt_tree *t, int rc)
{
	t->failed = 1;
	if (t->out == &t->f->out)
		t->f->failed = 1;
	return rc;
}

static int tree_failed(const struct bt_tree *t)
{
	return t->failed || (t->out == &t->f->out && t->f->failed);
}

/* An item's key in t's keys; NULL when it has none (a table's items:
 * its keys were never allocated). */
static const uint8_t *item_key(const struct bt_tree *t,
			       const struct bt_item *it)
{
	return it->key_len ? t->keys + it->key_off : NULL;
}

static int push_item(struct bt_tree *t, uint32_t page, const uint8_t *key,
		     uint32_t key_len)
{
	if (mt_grow((void **)&t->items, &t->cap_items, t->nr_items + 1,
		    sizeof(*t->items)) ||
	    mt_grow((void **)&t->keys, &t->keys_cap, t->keys_len + key_len, 1))
		return -ENOMEM;
	if (key_len)
		memcpy(t->keys + t->keys_len, key, key_len);
	t->items[t->nr_items++] = (struct bt_item){page, key_len, t->keys_len};
	t->keys_len += key_len;
	return 0;
}

/* A range's next leaf begins where it will stay, after the others in
 * memory: no copy when it is complete. */
static int mem_leaf(struct bt_tree *t)
{
	struct bt_out *o = &t->own;
	size_t ps = t->f->page_size;

	if (mt_grow((void **)&o->mem, &o->mem_cap, ((size_t)o->count + 1) * ps,
		    1))
		return fail(t, -ENOMEM);
	t->leaf.p = o->mem + (size_t)o->count * ps;
	page_init(&t->leaf, t->f, t->index ? PAGE_INDEX_LEAF : PAGE_TABLE_LEAF);
	return 0;
}

static int begin(struct bt_tree *t, struct bt_file *f, int index, uint32_t root)
{
	t->f = f;
	t->index = index;
	t->root = root;
	if (root < 2 || root > f->nr_pages || root == f->lock_page)
		return fail(t, -EINVAL);
	if (t->own.in_mem)
		return mem_leaf(t);
	t->leaf.p = malloc(f->page_size);
	if (!t->leaf.p)
		return fail(t, -ENOMEM);
	page_init(&t->leaf, f, index ? PAGE_INDEX_LEAF : PAGE_TABLE_LEAF);
	return 0;
}

int bt_begin(struct bt_tree *t, struct bt_file *f, int index, uint32_t root)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->out = &f->out;
	if (f->failed || f->fd < 0)
		return -EIO;
	return begin(t, f, index, root);
}

int bt_range_begin(struct bt_tree *t, struct bt_file *f, int index, int more,
		   uint64_t nr)
{
	/* A range of the same file before keeps its buffers: growing them
	 * again for each range was a tenth of the pages' cost. */
	struct bt_tree was = *t;

	if (!was.own.in_mem || was.f != f) {
		bt_free(t);
		memset(&was, 0, sizeof(was));
	}
	memset(t, 0, sizeof(*t));
	t->own.mem = was.own.mem;
	t->own.mem_cap = was.own.mem_cap;
	t->items = was.items;
	t->cap_items = was.cap_items;
	t->keys = was.keys;
	t->keys_cap = was.keys_cap;
	t->f = f;
	t->out = &t->own;
	t->own.f = f;
	t->own.dfd = -1;
	t->own.in_mem = 1;
	t->more = more;
	t->expect = nr;
	if (f->fd < 0)
		return -EIO;
	/* The root is the joined tree's: 2 stands for any page SQLite
	 * made. */
	return begin(t, f, index, 2);
}

void bt_free(struct bt_tree *t)
{
	/* A range's leaf is in its memory. */
	if (!t->own.in_mem)
		free(t->leaf.p);
	free(t->own.mem);
	free(t->held);
	free(t->items);
	free(t->keys);
	memset(t, 0, sizeof(*t));
}

/*
 * A complete leaf is written (a tree's first one waits until a second
 * shows it is not the root; a range's go to memory) and noted for the
 * level above with the key that follows it.
 */
static int put_leaf(struct bt_tree *t, const uint8_t *leaf, const uint8_t *key,
		    uint32_t key_len)
{
	struct bt_file *f = t->f;
	uint32_t page = 0;
	int rc;

	if (t->nr_leaves == 0 && !t->out->in_mem) {
		t->held = malloc(f->page_size);
		if (!t->held)
			return fail(t, -ENOMEM);
		memcpy(t->held, leaf, f->page_size);
	} else {
		if (t->held) {
			rc = append(t->out, t->held, &t->items[0].page);
			if (rc)
				return fail(t, rc);
			free(t->held);
			t->held = NULL;
		}
		rc = append(t->out, leaf, &page);
		if (rc)
			return fail(t, rc);
	}
	rc = push_item(t, page, key, key_len);
	if (rc)
		return fail(t, rc);
	t->nr_leaves++;
	return 0;
}

/* The leaf is complete: put, and the next one begins. */
static int leaf_done(struct bt_tree *t, const uint8_t *key, uint32_t key_len)
{
	int rc;

	page_finish(&t->leaf, t->f, 0);
	rc = put_leaf(t, t->leaf.p, key, key_len);
	if (rc)
		return rc;
	if (t->own.in_mem)
		return mem_leaf(t);
	page_init(&t->leaf, t->f, t->index ? PAGE_INDEX_LEAF : PAGE_TABLE_LEAF);
	return 0;
}

int bt_row(struct bt_tree *t, int64_t rowid, const int64_t *v, uint32_t nulls,
	   int n)
{
	struct bt_file *f = t->f;
	uint8_t rec[BT_MAX_CELL], *p;
	uint32_t len, rec_len;
	int rc;

	if (tree_failed(t))
		return -EIO;
	if (t->index || t->joined || n < 0 || n > BT_MAX_COLS || rowid < 0 ||
	    ((t->nr_leaves || t->leaf.nr) && rowid <= t->last_rowid))
		return fail(t, -EINVAL);
	if (!t->nr_leaves && !t->leaf.nr)
		t->first_rowid = rowid;
	rec_len = record(f, rec, v, nulls, n);
	len = varint_len(rec_len) + varint_len((uint64_t)rowid) + rec_len;
	/* Longer rows would spill to overflow pages. */
	if (rec_len > f->usable - 35)
		return fail(t, -E2BIG);
	if (!page_room(&t->leaf, len)) {
		uint8_t key[9];

		rc = leaf_done(t, key,
			       put_varint(key, (uint64_t)t->last_rowid));
		if (rc)
			return rc;
	}
	p = page_add(&t->leaf, len);
	p += put_varint(p, rec_len);
	p += put_varint(p, (uint64_t)rowid);
	memcpy(p, rec, rec_len);
	t->last_rowid = rowid;
	return 0;
}

/* Puts an index cell in the leaf; last: no entry follows it. */
static int place(struct bt_tree *t, const uint8_t *cell, uint32_t len, int last)
{
	uint8_t sep[BT_MAX_CELL];
	uint32_t sep_len;
	int rc;

	if (page_room(&t->leaf, len)) {
		memcpy(page_add(&t->leaf, len), cell, len);
		t->last_len = len;
		return 0;
	}
	if (!last)
		return leaf_done(t, cell, len);
	/* The last entry cannot separate this leaf from an empty one: the
	 * leaf's own last entry does, and the last one starts a leaf.  A
	 * full leaf holds several (a cell is at most a quarter page). */
	if (t->leaf.nr < 2)
		return fail(t, -EINVAL);
	sep_len = t->last_len;
	memcpy(sep, t->leaf.p + t->leaf.top, sep_len);
	t->leaf.nr--;
	t->leaf.top += sep_len;
	rc = leaf_done(t, sep, sep_len);
	if (rc)
		return rc;
	memcpy(page_add(&t->leaf, len), cell, len);
	t->last_len = len;
	return 0;
}

int bt_entry(struct bt_tree *t, const int64_t *v, uint32_t nulls, int n)
{
	struct bt_file *f = t->f;
	uint32_t rec_len, hdr = 1;
	int rc;

	if (tree_failed(t))
		return -EIO;
	if (!t->index || t->joined || n < 1 || n > BT_MAX_COLS ||
	    (t->more && t->given == t->expect))
		return fail(t, -EINVAL);
	/* A range's last entry separates it from the next range's: the one
	 * before it is the last in a leaf. */
	t->given++;
	if (t->pending_len) {
		rc = place(t, t->pending, t->pending_len,
			   t->more && t->given == t->expect);
		if (rc)
			return rc;
	}
	/* The record goes straight where it waits, after its length. */
	rec_len = record(f, t->pending + 1, v, nulls, n);
	/* SQLite's largest index payload kept in the page. */
	if (rec_len > (f->usable - 12) * 64 / 255 - 23)
		return fail(t, -E2BIG);
	if (rec_len < 0x80) {
		t->pending[0] = (uint8_t)rec_len;
	} else {
		memmove(t->pending + 2, t->pending + 1, rec_len);
		hdr = put_varint(t->pending, rec_len);
	}
	t->pending_len = hdr + rec_len;
	return 0;
}

/*
 * Where the page that starts at item a ends: cells for a..end-1 and end
 * as its right child.  The page after it must not be left with only a
 * right child, so when one item would be left over, this page ends one
 * item earlier.
 */
static size_t run_end(const struct bt_tree *t, size_t a, uint32_t room)
{
	size_t i = a, n = t->nr_items;
	uint32_t used = 0;

	for (; i + 1 < n; i++) {
		uint32_t c = 2 + 4 + t->items[i].key_len;

		if (used + c > room)
			break;
		used += c;
	}
	if (i + 2 == n && i > a + 1)
		i--;
	return i;
}

/* The interior levels, each built from the pages of the one below,
 * until one page is left: the root. */
static int build_levels(struct bt_tree *t)
{
	struct bt_file *f = t->f;
	uint8_t type = t->index ? PAGE_INDEX_INTERIOR : PAGE_TABLE_INTERIOR;
	struct bt_page pg = {.p = t->leaf.p};
	uint32_t room = f->usable - 12;
	int rc;

	while (t->nr_items > 1) {
		size_t n = t->nr_items, a = 0, k = 0;
		int is_root = run_end(t, 0, room) + 1 == n;

		while (a < n) {
			size_t end = run_end(t, a, room);
			struct bt_item up = t->items[end];
			uint32_t page = t->root;

			/* A page of only a right child would be left
			 * (items too big for a page to hold two). */
			if (end == a || (end + 2 == n))
				return fail(t, -EINVAL);
			page_init(&pg, f, type);
			for (size_t i = a; i < end; i++) {
				const struct bt_item *it = &t->items[i];
				uint8_t *c = page_add(&pg, 4 + it->key_len);

				put32(c, it->page);
				if (it->key_len)
					memcpy(c + 4, item_key(t, it),
					       it->key_len);
			}
			page_finish(&pg, f, up.page);
			rc = is_root ? pwrite_all(f->fd, pg.p, f->page_size,
						  (off_t)(t->root - 1) *
							  f->page_size)
				     : append(&f->out, pg.p, &page);
			if (rc)
				return fail(t, rc);
			/* Each page takes two items or more: k stays behind
			 * a. */
			up.page = page;
			t->items[k++] = up;
			a = end + 1;
		}
		t->nr_items = k;
	}
	return 0;
}

/*
 * A range's last leaf completes, into memory: a table's with its last
 * rowid, an index's with the range's last entry when another range
 * follows (the entry before it is in the leaf: bt_entry), else with
 * nothing.  A range without rows has no leaf.
 */
static int end_range(struct bt_tree *t)
{
	int rc;

	if (!t->index) {
		uint8_t key[9];

		if (!t->leaf.nr)
			return 0;
		return leaf_done(t, key,
				 put_varint(key, (uint64_t)t->last_rowid));
	}
	if (t->more) {
		/* Too few entries to leave one between the ranges. */
		if (t->given != t->expect || t->expect < 2 || !t->leaf.nr)
			return fail(t, -EINVAL);
		rc = leaf_done(t, t->pending, t->pending_len);
		t->pending_len = 0;
		return rc;
	}
	if (t->pending_len) {
		rc = place(t, t->pending, t->pending_len, 1);
		if (rc)
			return rc;
		t->pending_len = 0;
	}
	return t->leaf.nr ? leaf_done(t, NULL, 0) : 0;
}

/* The last leaf completes; a tree of one leaf has it in its root. */
static int end_leaves(struct bt_tree *t)
{
	struct bt_file *f = t->f;
	int rc;

	if (tree_failed(t))
		return -EIO;
	if (t->own.in_mem)
		return end_range(t);
	if (t->joined) {
		if (!t->held)
			return 0;
		/* One leaf in all: the root. */
		rc = pwrite_all(f->fd, t->held, f->page_size,
				(off_t)(t->root - 1) * f->page_size);
		free(t->held);
		t->held = NULL;
		return rc ? fail(t, rc) : 0;
	}
	if (t->pending_len) {
		rc = place(t, t->pending, t->pending_len, 1);
		if (rc)
			return rc;
		t->pending_len = 0;
	}
	if (!t->nr_leaves) {
		/* One leaf, empty or not: the root. */
		page_finish(&t->leaf, f, 0);
		rc = pwrite_all(f->fd, t->leaf.p, f->page_size,
				(off_t)(t->root - 1) * f->page_size);
		return rc ? fail(t, rc) : 0;
	}
	if (t->index) {
		rc = leaf_done(t, NULL, 0);
	} else {
		uint8_t key[9];

		rc = leaf_done(t, key,
			       put_varint(key, (uint64_t)t->last_rowid));
	}
	return rc;
}

int bt_end(struct bt_tree *t)
{
	int rc = end_leaves(t);

	return rc ? rc : build_levels(t);
}

int bt_end_leaves(struct bt_tree *t)
{
	return end_leaves(t);
}

int bt_range_start(struct bt_tree *t, int more, uint64_t nr)
{
	if (tree_failed(t))
		return -EIO;
	if (t->own.in_mem || t->leaf.nr || t->pending_len)
		return fail(t, -EINVAL);
	t->more = more;
	t->expect = nr;
	t->given = 0;
	t->joined = 0;
	return 0;
}

int bt_range_end(struct bt_tree *t)
{
	int rc;

	if (tree_failed(t))
		return -EIO;
	rc = end_range(t);
	/* A tree's own range: its leaves so far are complete. */
	if (!rc && !t->own.in_mem)
		t->joined = 1;
	return rc;
}

int bt_join(struct bt_tree *t, const struct bt_tree *r)
{
	size_t page_size = t->f->page_size;
	int rc;

	if (tree_failed(t))
		return -EIO;
	if (r->failed || !r->own.in_mem || r->index != t->index ||
	    t->own.in_mem || t->leaf.nr || t->pending_len ||
	    (!t->index && t->nr_leaves && r->nr_leaves &&
	     r->first_rowid <= t->last_rowid))
		return fail(t, -EINVAL);
	t->joined = 1;
	for (size_t i = 0; i < r->nr_leaves; i++) {
		const struct bt_item *it = &r->items[i];

		rc = put_leaf(t, r->own.mem + i * page_size, item_key(r, it),
			      it->key_len);
		if (rc)
			return rc;
	}
	if (r->nr_leaves)
		t->last_rowid = r->last_rowid;
	return 0;
}

int bt_levels(struct bt_tree *t)
{
	if (t->failed || t->f->failed)
		return -EIO;
	/* Its interior pages are the file's from here. */
	t->out = &t->f->out;
	return build_levels(t);
}
