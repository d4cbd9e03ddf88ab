/* SPDX-License-Identifier: MIT */
/*
 * The reader's side of the Valgrind tool's shared ring (capture/vg_ring.c),
 * against a writer that does what vgtool/mtpt.c does: fills a buffer and
 * copies it into the ring, cut in two at the ring's end.  A record over the end
 * is read whole; the positions a writer cannot have written are refused; the
 * sleep and wake flags; the closed flag.
 */
#include "capture/vg_internal.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE (128u << 10)

/* The tool's view: the file mapped once, and its buffer. */
struct writer {
	struct vg_ring_hdr *h;
	uint8_t *ring;
	uint8_t buf[1 << 16];
	size_t len;
	uint64_t w;
};

static int writer_map(struct writer *wr, int fd)
{
	void *m = mmap(NULL, VG_RING_HDR + SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -1;
	wr->h = m;
	wr->ring = (uint8_t *)m + VG_RING_HDR;
	return 0;
}

static void writer_put(struct writer *wr, const uint8_t *p, size_t n)
{
	memcpy(wr->buf + wr->len, p, n);
	wr->len += n;
}

static void writer_publish(struct writer *wr)
{
	size_t o = wr->w % SIZE,
	       first = wr->len < SIZE - o ? wr->len : SIZE - o;

	memcpy(wr->ring + o, wr->buf, first);
	memcpy(wr->ring, wr->buf + first, wr->len - first);
	wr->w += wr->len;
	wr->len = 0;
	__atomic_store_n(&wr->h->wpos, wr->w, __ATOMIC_RELEASE);
}

/* Records of 1..5000 bytes, each its length's bytes, written in chunks
 * of about 40 KiB and read as they come, over twenty times round: every
 * record is read whole and as written, the ones over the end too. */
static void test_ring_wrap(struct check_state *cs)
{
	struct vg_ring *r = NULL;
	struct writer wr = {0};
	uint8_t rec[5000];
	uint64_t seed = 1, read_total = 0, written = 0;
	unsigned over_end = 0, bad = 0;
	int fd;

	CHECK(cs, vg_ring_new(SIZE, &r, &fd) == 0);
	if (!r)
		return;
	CHECK(cs, writer_map(&wr, fd) == 0);
	close(fd);
	if (!wr.h) {
		vg_ring_free(r);
		return;
	}
	CHECK(cs, wr.h->size == SIZE);
	while (written < 20ull * SIZE) {
		const uint8_t *p;
		size_t len, off = 0;

		/* A chunk, as room for it is free. */
		while (wr.len + sizeof(rec) <= sizeof(wr.buf) &&
		       wr.len < 40000 &&
		       wr.w + wr.len + sizeof(rec) <= wr.h->rpos + SIZE) {
			size_t n;

			seed = seed * 6364136223846793005ull +
			       1442695040888963407ull;
			n = 3 + (size_t)(seed >> 33) % (sizeof(rec) - 3);
			rec[0] = (uint8_t)(n >> 8);
			rec[1] = (uint8_t)n;
			memset(rec + 2, (int)(n & 0xff), n - 2);
			if ((wr.w + wr.len) / SIZE !=
			    (wr.w + wr.len + n - 1) / SIZE)
				over_end++;
			writer_put(&wr, rec, n);
			written += n;
		}
		writer_publish(&wr);
		CHECK(cs, vg_ring_unread(r, &p, &len) == 1);
		/* Whole records only; the rest waits, as vg_parse's do. */
		while (off + 2 <= len) {
			size_t n = (size_t)p[off] << 8 | p[off + 1];

			if (n < 3 || off + n > len)
				break;
			for (size_t i = 2; i < n; i++)
				bad += p[off + i] != (uint8_t)(n & 0xff);
			off += n;
		}
		read_total += off;
		vg_ring_consume(r, off);
	}
	CHECKF(cs, bad == 0, "%u bytes not as written", bad);
	CHECKF(cs, over_end > 5, "only %u records over the end", over_end);
	CHECK(cs, read_total + (wr.w - wr.h->rpos) == wr.w);
	CHECK(cs, wr.h->rpos == read_total);
	vg_ring_free(r);
	CHECK(cs, wr.h->closed == 1);
	munmap(wr.h, VG_RING_HDR + SIZE);
}

/* Positions no writer can have published: refused, never read. */
static void test_ring_bad_positions(struct check_state *cs)
{
	struct vg_ring *r = NULL;
	const uint8_t *p;
	size_t len;
	int fd;

	CHECK(cs, vg_ring_new(SIZE, &r, &fd) == 0);
	if (!r)
		return;
	close(fd);
	CHECK(cs, vg_ring_unread(r, &p, &len) == 0 && len == 0);
	r->h->wpos = SIZE + 1; /* more than the ring holds */
	CHECK(cs, vg_ring_unread(r, &p, &len) == -EPROTO);
	r->h->wpos = 100;
	CHECK(cs, vg_ring_unread(r, &p, &len) == 1 && len == 100);
	vg_ring_consume(r, 100);
	r->h->wpos = 50; /* behind what was read */
	CHECK(cs, vg_ring_unread(r, &p, &len) == -EPROTO);
	vg_ring_free(r);
	/* Sizes the tool cannot use. */
	CHECK(cs, vg_ring_new(4096, &r, &fd) == -EINVAL && fd == -1);
	CHECK(cs, vg_ring_new(SIZE + 100, &r, &fd) == -EINVAL && fd == -1);
}

/* The reader sleeps only when nothing is new, and asks to be woken at
 * what it wants; the writer is woken only once the room it waits for
 * is read. */
static void test_ring_sleep_wake(struct check_state *cs)
{
	struct vg_ring *r = NULL;
	const uint8_t *p;
	size_t len;
	int fd;

	CHECK(cs, vg_ring_new(SIZE, &r, &fd) == 0);
	if (!r)
		return;
	close(fd);
	CHECK(cs, vg_ring_sleep(r, 1000));
	CHECK(cs, r->h->rsleep == 1 && r->h->rwake == 1000);
	vg_ring_awake(r);
	CHECK(cs, r->h->rsleep == 0);
	r->h->wpos = 10;
	CHECK(cs, !vg_ring_sleep(r, 1000) && r->h->rsleep == 0);
	CHECK(cs, vg_ring_unread(r, &p, &len) == 1 && len == 10);
	CHECK(cs, vg_ring_unread(r, &p, &len) == 0 && len == 10);
	CHECK(cs, vg_ring_sleep(r, 1000) && r->h->rwake == 1010);
	vg_ring_awake(r);
	r->h->wwake = 8;
	r->h->wsleep = 1;
	CHECK(cs, !vg_ring_consume(r, 4) && r->h->wsleep == 1);
	CHECK(cs, vg_ring_consume(r, 4) && r->h->wsleep == 0);
	CHECK(cs, !vg_ring_consume(r, 2));
	vg_ring_free(r);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_ring_wrap);
	RUN(&st, test_ring_bad_positions);
	RUN(&st, test_ring_sleep_wake);
	return CHECK_DONE(&st);
}
