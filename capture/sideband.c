/* SPDX-License-Identifier: MIT */
/*
 * Sideband from the kernel: a dummy software event on the target (one per
 * CPU: an inherited event can only be mapped per CPU) records
 * its mmaps, comm changes, forks, exits and context switches in a data
 * ring, timestamped on CLOCK_MONOTONIC (the emulator's clock), and the
 * records are copied into the capture exactly as the kernel wrote them,
 * but for the mmaps: the emulator sees each system call that maps code
 * and writes those itself, once each, with build ids.  The hardware
 * backend's data rings carry the same records.
 */
#include "capture/ring_internal.h"
#include "capture/sideband_internal.h"
#include "symbols/symbols.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int sb_open_dummy(struct sb_ring *r, pid_t pid, int cpu, char *err,
		  size_t errlen)
{
	size_t page = mt_page_size();
	struct perf_event_attr a;

	memset(r, 0, sizeof(*r));
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1;
	/* No context switches: under single-stepping every step is one. */
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	r->attr = a;
	r->fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, 0);
	if (r->fd < 0) {
		snprintf(err, errlen,
			 "perf_event_open(dummy) on %d: %s: mappings come from "
			 "/proc/%d/maps only",
			 pid, strerror(errno), pid);
		return -errno;
	}
	ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id);
	r->len = page * (1 + SB_DATA_PAGES);
	r->page = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		       0);
	if (r->page == MAP_FAILED) {
		r->page = NULL;
		close(r->fd);
		r->fd = -1;
		snprintf(err, errlen, "mmap of the sideband ring: %s",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

void sb_close(struct sb_ring *r)
{
	if (r->page)
		munmap(r->page, r->len);
	if (r->fd > 0)
		close(r->fd);
	r->page = NULL;
	r->fd = -1;
}

/* A record of the target's life into the capture; the trace's own
 * records (AUX, LOST) and samples are not sideband. */
static int copy_record(const struct perf_event_header *rec, void *w)
{
	if (rec->type == PERF_RECORD_AUX || rec->type == PERF_RECORD_LOST ||
	    rec->type == PERF_RECORD_SAMPLE || rec->type == PERF_RECORD_MMAP ||
	    rec->type == PERF_RECORD_MMAP2)
		return 0;
	return pd_writer_raw(w, rec, rec->size);
}

int sb_copy(struct pd_writer *w, struct perf_event_mmap_page *pg,
	    size_t data_pages)
{
	return ring_read(pg, data_pages, true, false, copy_record, w);
}
