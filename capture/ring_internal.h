/* SPDX-License-Identifier: MIT */
/*
 * Internal to capture/: the data ring of a perf event, read the one way
 * the kernel's protocol asks (data_head acquired, data_tail released),
 * by the sideband copy, the breakpoint's hits and the hardware
 * backend's drain.
 */
#ifndef MT_RING_INTERNAL_H
#define MT_RING_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * fn on each whole record in the ring of data_pages pages after pg,
 * oldest first, copied out in one piece.  fn returns 0 to go on, 1 to
 * stop after this record, or a negative code to stop at once, which is
 * returned (the ring then left as it was).  newest: a reader that has
 * fallen more than a ring behind starts at the newest ring's worth.
 * consume: data_tail moves past what was read, giving the kernel the
 * room back.  Returns 0, or fn's negative code.
 */
int ring_read(struct perf_event_mmap_page *pg, size_t data_pages, bool newest,
	      bool consume,
	      int (*fn)(const struct perf_event_header *rec, void *arg),
	      void *arg);

#endif
