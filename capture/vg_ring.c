/* SPDX-License-Identifier: MIT */
/*
 * The reader's side of the shared ring a Valgrind tool's process writes
 * its records to (vg_internal.h says what is where; vgtool/mtpt.c is the
 * writer).  The positions are published with release stores and read
 * with acquire loads; a side that is about to sleep says so, and checks
 * the other's position again after a full fence, so that one of the two
 * always sees the other and no wake is lost, and neither side makes a
 * system call while both are busy.
 */
#include "capture/vg_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int vg_ring_new(size_t size, struct vg_ring **out, int *fd)
{
	size_t page = mt_page_size();
	size_t file = VG_RING_HDR + size;
	struct vg_ring *r = NULL;
	uint8_t *m = MAP_FAILED;
	int rc = -EINVAL;

	*fd = -1;
	if (size < VG_RING_MIN || size % page || VG_RING_HDR % page)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	*fd = memfd_create("mt-capture-ring", MFD_CLOEXEC);
	if (!r || *fd < 0 || ftruncate(*fd, (off_t)file))
		goto fail_errno;
	/* The header and the ring, then the ring again right after. */
	r->maplen = VG_RING_HDR + 2 * size;
	m = mmap(NULL, r->maplen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (m == MAP_FAILED ||
	    mmap(m, VG_RING_HDR + size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, *fd, 0) == MAP_FAILED ||
	    mmap(m + VG_RING_HDR + size, size, PROT_READ,
		 MAP_SHARED | MAP_FIXED, *fd, VG_RING_HDR) == MAP_FAILED)
		goto fail_errno;
	r->h = (struct vg_ring_hdr *)m;
	r->data = m + VG_RING_HDR;
	r->size = size;
	r->h->size = size;
	*out = r;
	return 0;
fail_errno:
	rc = -errno;
	if (m != MAP_FAILED)
		munmap(m, r->maplen);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	free(r);
	return rc;
}

void vg_ring_free(struct vg_ring *r)
{
	if (!r)
		return;
	vg_ring_close(r);
	munmap(r->h, r->maplen);
	free(r);
}

void vg_ring_close(struct vg_ring *r)
{
	__atomic_store_n(&r->h->closed, 1, __ATOMIC_SEQ_CST);
}

int vg_ring_unread(struct vg_ring *r, const uint8_t **p, size_t *len)
{
	uint64_t w = __atomic_load_n(&r->h->wpos, __ATOMIC_ACQUIRE);
	uint64_t rd = r->h->rpos;

	if (w < rd || w - rd > r->size)
		return -EPROTO;
	*p = r->data + rd % r->size;
	*len = (size_t)(w - rd);
	if (w == r->seen)
		return 0;
	r->seen = w;
	return 1;
}

bool vg_ring_consume(struct vg_ring *r, size_t n)
{
	uint64_t rd = r->h->rpos + n;

	if (!n)
		return false;
	__atomic_store_n(&r->h->rpos, rd, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&r->h->wsleep, __ATOMIC_RELAXED) &&
	       rd >= __atomic_load_n(&r->h->wwake, __ATOMIC_RELAXED) &&
	       __atomic_exchange_n(&r->h->wsleep, 0, __ATOMIC_SEQ_CST);
}

bool vg_ring_sleep(struct vg_ring *r, size_t want)
{
	__atomic_store_n(&r->h->rwake, r->seen + want, __ATOMIC_RELAXED);
	__atomic_store_n(&r->h->rsleep, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->h->wpos, __ATOMIC_ACQUIRE) == r->seen)
		return true;
	vg_ring_awake(r);
	return false;
}

void vg_ring_awake(struct vg_ring *r)
{
	__atomic_store_n(&r->h->rsleep, 0, __ATOMIC_RELAXED);
}

void vg_ring_ask_stacks(struct vg_ring *r)
{
	__atomic_store_n(&r->h->stacks, 1, __ATOMIC_RELEASE);
}
