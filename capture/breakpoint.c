/* SPDX-License-Identifier: MIT */
/*
 * The trigger of the hardware backend: a hardware execute breakpoint on
 * the trigger's first instruction, as a perf event on every thread of
 * the target (or, where the debug registers never fire, a uprobe there:
 * the same samples, at the cost of a trap per hit).
 *
 * The CPU's debug registers fire before the instruction runs, and the
 * kernel samples the thread's user registers there: DI and SI are the
 * stub's two arguments (mt_snapshot_point(arg, mark_start_ns)), so the
 * hit carries them without reading the target's memory later, when they
 * may have changed.  The thread is not stopped: it runs on while we read
 * the sample, which is why --stop-at-trigger exists.
 *
 * An inherited event cannot be mapped per thread (the kernel refuses to
 * let a whole family of tasks write into one per-task ring), so either
 * each thread has its own event and ring, and new threads are added as
 * they are found, or each CPU has one ring that every thread's inherited
 * events on that CPU write into (PERF_EVENT_IOC_SET_OUTPUT).
 */
#include "capture/breakpoint_internal.h"
#include "capture/ring_internal.h"
#include "capture/symaddr_internal.h"
#include "util/util.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BP_DATA_PAGES 64    /* 256 KiB: some 15 hits between reads */
#define BP_STACK      16384 /* bytes of user stack per hit */

/* The registers sampled (perf's x86 numbering: AX BX CX DX SI DI BP SP
 * IP, then R8..R15), and where each goes in DWARF's numbering. */
#define BP_REGS_MASK (0x1ffull | 0xffull << 16)
static const uint8_t bp_dwarf_of[BP_NR_REGS] = {0, 3, 2,  1,  4,  5,  6,  7, 16,
						8, 9, 10, 11, 12, 13, 14, 15};

struct bp_set {
	struct perf_event_attr attr;
	char path[4096]; /* a uprobe's file: config1 points here */
	bool per_cpu;
	int ncpu;
	pid_t *tids; /* the threads added */
	size_t nr_tids, cap_tids;
	int *fds; /* every event, owned */
	size_t nr_fds, cap_fds;
	int *ring_fds; /* the events that own a ring (per_cpu: one per
			  CPU, index = CPU) */
	struct perf_event_mmap_page **pages;
	size_t nr_rings, cap_rings, cap_pages, page_len;
};

static int bp_err(char *err, size_t errlen, int e, const char *what)
{
	snprintf(err, errlen, "perf_event_open(trigger) on %s: %s%s", what,
		 strerror(e),
		 e == EACCES || e == EPERM
			 ? " (see /proc/sys/kernel/perf_event_paranoid, or "
			   "CAP_PERFMON)"
		 : e == ENOSPC ? " (no debug register left)"
			       : "");
	return -e;
}

static int add_fd(struct bp_set *b, int fd)
{
	if (mt_grow((void **)&b->fds, &b->cap_fds, b->nr_fds + 1,
		    sizeof(*b->fds))) {
		close(fd);
		return -ENOMEM;
	}
	b->fds[b->nr_fds++] = fd;
	return 0;
}

/* A ring for fd, which becomes a ring owner. */
static int add_ring(struct bp_set *b, int fd, char *err, size_t errlen)
{
	void *p;

	if (mt_grow((void **)&b->ring_fds, &b->cap_rings, b->nr_rings + 1,
		    sizeof(*b->ring_fds)) ||
	    mt_grow((void **)&b->pages, &b->cap_pages, b->nr_rings + 1,
		    sizeof(*b->pages)))
		return -ENOMEM;
	p = mmap(NULL, b->page_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "mmap of the breakpoint's ring: %s",
			 strerror(errno));
		return -errno;
	}
	b->ring_fds[b->nr_rings] = fd;
	b->pages[b->nr_rings++] = p;
	return 0;
}

bool bp_inherits(const struct bp_set *b)
{
	return b->per_cpu;
}

int bp_add_thread(struct bp_set *b, pid_t tid, char *err, size_t errlen)
{
	char what[32];
	int rc;

	for (size_t i = 0; i < b->nr_tids; i++)
		if (b->tids[i] == tid)
			return 0;
	if (mt_grow((void **)&b->tids, &b->cap_tids, b->nr_tids + 1,
		    sizeof(*b->tids)))
		return -ENOMEM;
	b->tids[b->nr_tids++] = tid;

	snprintf(what, sizeof(what), "thread %d", (int)tid);
	for (int c = 0; c < (b->per_cpu ? b->ncpu : 1); c++) {
		int fd = (int)syscall(SYS_perf_event_open, &b->attr, tid,
				      b->per_cpu ? c : -1, -1,
				      PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return bp_err(err, errlen, errno, what);
		if ((rc = add_fd(b, fd)))
			return rc;
		if (b->per_cpu && (size_t)c < b->nr_rings) {
			/* This CPU has its ring: write there. */
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
				  b->ring_fds[c])) {
				snprintf(err, errlen,
					 "breakpoint on %s: SET_OUTPUT: %s",
					 what, strerror(errno));
				return -errno;
			}
		} else if ((rc = add_ring(b, fd, err, errlen))) {
			return rc;
		}
	}
	return 0;
}

/* The uprobe PMU's type, from sysfs. */
static int uprobe_type(uint32_t *type, char *err, size_t errlen)
{
	const char *path = "/sys/bus/event_source/devices/uprobe/type";
	FILE *f = fopen(path, "r");
	unsigned v = 0;
	int ok;

	if (!f) {
		snprintf(err, errlen, "%s: %s (a kernel without uprobes?)",
			 path, strerror(errno));
		return -ENOENT;
	}
	ok = fscanf(f, "%u", &v) == 1;
	fclose(f);
	if (!ok) {
		snprintf(err, errlen, "%s: not a number", path);
		return -EINVAL;
	}
	*type = v;
	return 0;
}

int bp_open(struct bp_set **out, enum bp_kind kind, pid_t pid, uint64_t addr,
	    const pid_t *tids, size_t n, bool per_cpu, char *err, size_t errlen)
{
	struct bp_set *b = calloc(1, sizeof(*b));
	int rc = -ENOMEM;

	*out = NULL;
	if (!b)
		goto fail;
	/* An inherited uprobe reads its path again, as a pointer into
	 * the new thread's memory, where it is not: clone() then fails
	 * with EFAULT.  So uprobes are per thread, always. */
	b->per_cpu = per_cpu && kind != BP_UPROBE;
	b->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	b->page_len = mt_page_size() * (1 + BP_DATA_PAGES);
	b->attr.size = sizeof(b->attr);
	if (kind == BP_UPROBE) {
		uint64_t off;

		/* A uprobe is placed in the file, not in the process. */
		if ((rc = uprobe_type(&b->attr.type, err, errlen)) ||
		    (rc = symaddr_file_offset(pid, addr, b->path,
					      sizeof(b->path), &off, err,
					      errlen)))
			goto fail;
		b->attr.config1 = (uint64_t)(uintptr_t)b->path;
		b->attr.config2 = off;
	} else {
		b->attr.type = PERF_TYPE_BREAKPOINT;
		b->attr.bp_type = HW_BREAKPOINT_X;
		b->attr.bp_addr = addr;
		/* The only length x86 accepts for an execute breakpoint. */
		b->attr.bp_len = sizeof(long);
	}
	b->attr.sample_period = 1;
	/* The registers and the top of the stack: the stack at the hit can
	 * be unwound from them while the program runs on. */
	b->attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			      PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
			      PERF_SAMPLE_STACK_USER;
	b->attr.sample_regs_user = BP_REGS_MASK;
	b->attr.sample_stack_user = BP_STACK;
	b->attr.exclude_kernel = 1;
	b->attr.exclude_hv = 1;
	b->attr.wakeup_events = 1;
	b->attr.inherit = b->per_cpu;
	for (size_t i = 0; i < n; i++)
		if ((rc = bp_add_thread(b, tids[i], err, errlen)))
			goto fail;
	*out = b;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	bp_free(b);
	return rc;
}

/* Where bp_probe() puts its breakpoint. */
__attribute__((noinline)) static void probe_point(void)
{
	__asm__ volatile("" : : : "memory");
}

int bp_probe(char *err, size_t errlen)
{
	void (*volatile call)(void) = probe_point;
	struct perf_event_attr a;
	uint64_t count = 0;
	int fd;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)probe_point;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return bp_err(err, errlen, errno, "this process");
	for (int i = 0; i < 3; i++)
		call();
	if (read(fd, &count, sizeof(count)) != sizeof(count))
		count = 0;
	close(fd);
	if (!count) {
		snprintf(err, errlen,
			 "hardware breakpoints are accepted but never fire "
			 "on this machine (0 hits of 3): a virtual machine "
			 "that keeps the debug registers?");
		return -ENOTSUP;
	}
	return 0;
}

const int *bp_fds(const struct bp_set *b, size_t *n)
{
	*n = b->nr_rings;
	return b->ring_fds;
}

/* The sample's fields, in the kernel's order for our sample_type: IP,
 * PID/TID, TIME, the registers' ABI and values, the stack's size, bytes
 * and the part of them that is real (dyn_size). */
static void parse_sample(const uint8_t *rec, size_t size, struct bp_hit *h)
{
	uint64_t v[4], abi = 0, len = 0, dyn = 0;
	size_t at = sizeof(struct perf_event_header);

	memset(h, 0, sizeof(*h));
	if (size < at + sizeof(v))
		return;
	memcpy(v, rec + at, sizeof(v));
	at += sizeof(v);
	h->ip = v[0];
	h->pid = (pid_t)(uint32_t)v[1];
	h->tid = (pid_t)(uint32_t)(v[1] >> 32);
	h->time = v[2];
	abi = v[3];
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if (size < at + 8 * BP_NR_REGS)
			return;
		for (size_t i = 0; i < BP_NR_REGS; i++)
			memcpy(&h->regs[bp_dwarf_of[i]], rec + at + 8 * i, 8);
		at += 8 * BP_NR_REGS;
		h->si = h->regs[4];
		h->di = h->regs[5];
	}
	if (size < at + 8)
		return;
	memcpy(&len, rec + at, 8);
	at += 8;
	if (!len || size < at + len + 8)
		return;
	memcpy(&dyn, rec + at + len, 8);
	if (dyn > len)
		dyn = len;
	if (abi != PERF_SAMPLE_REGS_ABI_NONE && dyn &&
	    (h->stack = malloc(dyn))) {
		memcpy(h->stack, rec + at, dyn);
		h->stack_len = dyn;
	}
}

void bp_hit_release(struct bp_hit *h)
{
	free(h->stack);
	h->stack = NULL;
	h->stack_len = 0;
}

/* Where bp_read() puts the hits it takes. */
struct hit_sink {
	struct bp_hit *hits;
	size_t got, max;
};

static int take_hit(const struct perf_event_header *rec, void *arg)
{
	struct hit_sink *k = arg;

	if (rec->type == PERF_RECORD_SAMPLE)
		parse_sample((const uint8_t *)rec, rec->size,
			     &k->hits[k->got++]);
	return k->got == k->max;
}

size_t bp_read(struct bp_set *b, struct bp_hit *hits, size_t max)
{
	struct hit_sink k = {hits, 0, max};

	for (size_t r = 0; r < b->nr_rings && k.got < max; r++)
		ring_read(b->pages[r], BP_DATA_PAGES, false, true, take_hit,
			  &k);
	return k.got;
}

void bp_free(struct bp_set *b)
{
	if (!b)
		return;
	for (size_t r = 0; r < b->nr_rings; r++)
		munmap(b->pages[r], b->page_len);
	for (size_t i = 0; i < b->nr_fds; i++)
		close(b->fds[i]);
	free(b->pages);
	free(b->tids);
	free(b->ring_fds);
	free(b->fds);
	free(b);
}
