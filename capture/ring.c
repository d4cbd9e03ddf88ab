/* SPDX-License-Identifier: MIT */
/*
 * A perf data ring's records: the kernel writes them at data_head,
 * wrapping at the ring's end, and we read from data_tail.  A record
 * may wrap, so each is copied out whole before anyone looks at it.
 */
#include "capture/ring_internal.h"
#include "util/util.h"

#include <stdint.h>
#include <unistd.h>

int ring_read(struct perf_event_mmap_page *pg, size_t data_pages, bool newest,
	      bool consume,
	      int (*fn)(const struct perf_event_header *rec, void *arg),
	      void *arg)
{
	size_t page = mt_page_size();
	const uint8_t *data = (const uint8_t *)pg + page;
	uint64_t size = (uint64_t)page * data_pages;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	/* A record's size is 16 bits: the largest fits. */
	union {
		struct perf_event_header h;
		uint8_t b[65536];
	} rec;
	int rc = 0;

	if (newest && head - tail > size)
		tail = head - size; /* overwritten: the newest part only */
	while (tail < head && !rc) {
		struct perf_event_header h;
		uint64_t at = tail % size;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) % size];
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		for (size_t i = 0; i < h.size; i++)
			rec.b[i] = data[(at + i) % size];
		rc = fn(&rec.h, arg);
		if (rc < 0)
			return rc;
		tail += h.size;
	}
	if (consume)
		__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return 0;
}
