/* SPDX-License-Identifier: MIT */
/*
 * Internal to capture/: the sideband ring both backends read, a dummy
 * event's data ring whose records go into the capture as the kernel
 * wrote them.
 */
#ifndef MT_SIDEBAND_INTERNAL_H
#define MT_SIDEBAND_INTERNAL_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "perfdata/perfdata.h"

#define SB_DATA_PAGES 64 /* 256 KiB of sideband */

struct sb_ring {
	int fd;
	uint64_t id;
	struct perf_event_attr attr;
	struct perf_event_mmap_page *page;
	size_t len;
};

/* A dummy event on pid and the threads it makes, on one CPU: its
 * sideband only. */
int sb_open_dummy(struct sb_ring *r, pid_t pid, int cpu, char *err,
		  size_t errlen);
void sb_close(struct sb_ring *r);
/* The ring's records, as the kernel wrote them, into the capture, but
 * for its MMAP and MMAP2 records: the emulator follows the mappings
 * itself and writes each once, with its build id and time. */
int sb_copy(struct pd_writer *w, struct perf_event_mmap_page *pg,
	    size_t data_pages);

#endif
