/* SPDX-License-Identifier: MIT */
/*
 * The Intel PT hardware backend: the CPU records, we keep the newest (or,
 * with --full, everything).
 *
 * Rings.  By default each thread of the target has its own intel_pt
 * event, data ring (sideband) and AUX ring: a busy thread cannot push a
 * quiet one's history out, and the trace needs no context-switch records
 * to say whose it is.  The kernel refuses to map an inherited per-thread
 * event, so threads created later get their own events when we see them
 * (a FORK record wakes us; /proc/PID/task says which): their first
 * microseconds are not traced.  With --per-cpu, each CPU has one ring
 * that every thread's events on that CPU write into (inherited by new
 * threads from their first instruction, so nothing is missed), and
 * context-switch records say which thread ran.
 *
 * Snapshot mode maps the AUX area read-only, which puts the kernel in
 * overwrite mode: aux_head is then a position that only grows, and the
 * ring always holds the newest trace.  A snapshot disables the events
 * (which makes the driver publish aux_head), copies what each ring gained
 * since the last snapshot, and, for --multi-snapshot, enables them again.
 * --full maps it read-write: the kernel then never overwrites what we
 * have not consumed, and PERF_RECORD_AUX in the data ring says what to
 * copy before we move aux_tail on.
 *
 * The sideband (mmaps, comm, fork, exit, switches) is drained from the
 * data rings as it comes, so a long run cannot fill them.  Trace chunks
 * wait in a temporary file: the capture's attr must list every event id,
 * and new threads bring new ids until the end.
 *
 * A launched program is held (a pipe) until its events exist, opened
 * with enable_on_exec so the exec's own mmaps are recorded, and stopped
 * by ptrace right after exec: the trigger's address is only known once
 * the executable is mapped.  Then the breakpoint and the filters are set
 * and it is let go.
 *
 * Nothing in here can run without the PMU; pmu_probe() says why first.
 */
#include "capture/hw_internal.h"
#include "capture/ring_internal.h"
#include "capture/symaddr_internal.h"
#include "capture/target_internal.h"
#include "capture/unwind_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t rdtsc(void)
{
	unsigned lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static int open_err(struct hw *h, int e, pid_t tid, int cpu)
{
	return mt_fail(
		h, -e, "perf_event_open(intel_pt, thread %d, cpu %d): %s%s",
		(int)tid, cpu, strerror(e),
		e == EACCES || e == EPERM
			? " (see /proc/sys/kernel/perf_event_paranoid, "
			  "or CAP_PERFMON)"
		: e == EOPNOTSUPP && h->filter[0] ? " (the address filter?)"
						  : "");
}

/* Map fd's data ring and AUX area as a new ring. */
static int add_ring(struct hw *h, int fd, pid_t tid, int cpu)
{
	size_t page = mt_page_size();
	struct ring *r;

	if (mt_grow((void **)&h->rings, &h->cap_rings, h->nr_rings + 1,
		    sizeof(*h->rings)))
		return mt_fail(h, -ENOMEM, "out of memory");
	r = &h->rings[h->nr_rings];
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->tid = tid;
	r->cpu = cpu;
	r->page_len = page * (1 + DATA_PAGES);
	r->page = mmap(NULL, r->page_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (r->page == MAP_FAILED)
		return mt_fail(h, -errno, "mmap of the sideband ring: %s",
			       strerror(errno));
	h->nr_rings++;
	if (h->o->sideband_only)
		return 0;
	r->page->aux_offset = r->page_len;
	r->page->aux_size = h->aux_size;
	/* Read-only: the kernel overwrites the oldest trace (snapshot);
	 * writable: it waits for aux_tail (full). */
	r->aux = mmap(NULL, h->aux_size,
		      PROT_READ | (h->o->full ? PROT_WRITE : 0), MAP_SHARED, fd,
		      (off_t)r->page_len);
	if (r->aux == MAP_FAILED) {
		r->aux = NULL;
		return mt_fail(
			h, -errno, "mmap of the AUX area (%llu bytes): %s",
			(unsigned long long)h->aux_size, strerror(errno));
	}
	r->aux_len = h->aux_size;
	return 0;
}

/* One intel_pt event on tid (and cpu); its filter set; enabled unless
 * it waits for exec. */
static int open_event(struct hw *h, pid_t tid, int cpu, int *out)
{
	int fd = (int)syscall(SYS_perf_event_open, &h->attr, tid, cpu, -1,
			      PERF_FLAG_FD_CLOEXEC);
	uint64_t id = 0;

	if (fd < 0)
		return open_err(h, errno, tid, cpu);
	if (mt_grow((void **)&h->fds, &h->cap_fds, h->nr_fds + 1,
		    sizeof(*h->fds)) ||
	    mt_grow((void **)&h->ids, &h->cap_ids, h->nr_ids + 1,
		    sizeof(*h->ids))) {
		close(fd);
		return mt_fail(h, -ENOMEM, "out of memory");
	}
	h->fds[h->nr_fds++] = fd;
	ioctl(fd, PERF_EVENT_IOC_ID, &id);
	h->ids[h->nr_ids++] = id;
	*out = fd;
	return 0;
}

static int set_filter(struct hw *h, int fd)
{
	if (h->filter[0] && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, h->filter))
		return mt_fail(h, -errno, "address filter '%s': %s", h->filter,
			       strerror(errno));
	return 0;
}

/* Events for a thread: its own ring, or one per CPU writing into that
 * CPU's ring. */
static int add_thread(struct hw *h, pid_t tid, bool enable)
{
	int rc, fd = -1;

	if (mt_grow((void **)&h->tids, &h->cap_tids, h->nr_tids + 1,
		    sizeof(*h->tids)))
		return mt_fail(h, -ENOMEM, "out of memory");
	h->tids[h->nr_tids++] = tid;
	for (int c = 0; c < (h->o->per_cpu ? h->ncpu : 1); c++) {
		int cpu = h->o->per_cpu ? c : -1;

		if ((rc = open_event(h, tid, cpu, &fd)))
			return rc;
		if (cpu >= 0 && (size_t)c < h->nr_rings) {
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
				  h->rings[c].fd))
				return mt_fail(h, -errno,
					       "thread %d, cpu %d: SET_OUTPUT: "
					       "%s",
					       (int)tid, c, strerror(errno));
		} else if ((rc = add_ring(h, fd, cpu >= 0 ? -1 : tid, cpu))) {
			return rc;
		}
		if ((rc = set_filter(h, fd)))
			return rc;
		if (enable && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
			return mt_fail(h, -errno, "enabling intel_pt: %s",
				       strerror(errno));
	}
	h->st->threads++;
	if (h->bp && !bp_inherits(h->bp) &&
	    (rc = bp_add_thread(h->bp, tid, h->err, h->errlen)))
		return rc;
	return 0;
}

static bool have_thread(const struct hw *h, pid_t tid)
{
	for (size_t i = 0; i < h->nr_tids; i++)
		if (h->tids[i] == tid)
			return true;
	return false;
}

/* A thread that has no event yet gets one (per CPU only at attach: later
 * threads inherit them). */
static int scan_thread(pid_t tid, void *arg)
{
	struct hw *h = arg;
	int rc = 0;

	/* Per CPU, threads made while recording inherit the events; only a
	 * trigger that cannot be inherited needs them. */
	if ((!h->o->per_cpu || !h->recording) && !have_thread(h, tid))
		rc = add_thread(h, tid, h->scan_enable);
	else if (h->recording && h->bp && !bp_inherits(h->bp))
		rc = bp_add_thread(h->bp, tid, h->err, h->errlen);
	/* A thread that ended meanwhile is no error. */
	return rc == -ESRCH ? 0 : rc;
}

/* Every thread of the target. */
static int scan_threads(struct hw *h, bool enable)
{
	int rc;

	h->scan_enable = enable;
	rc = target_tasks(h->pid, scan_thread, h);
	return rc == -ENOENT || rc == -ESRCH ? 0
					     : rc; /* gone: the loop sees it */
}

static int spool_chunk(struct hw *h, const struct pd_auxtrace *a,
		       const uint8_t *data)
{
	struct chunk *c;

	if (!a->size)
		return 0;
	if (!h->spool && !(h->spool = tmpfile()))
		return mt_fail(h, -errno, "a temporary file for the trace: %s",
			       strerror(errno));
	if (mt_grow((void **)&h->chunks, &h->cap_chunks, h->nr_chunks + 1,
		    sizeof(*h->chunks)))
		return mt_fail(h, -ENOMEM, "out of memory");
	c = &h->chunks[h->nr_chunks];
	c->at = ftell(h->spool);
	c->a = *a;
	if (fwrite(data, 1, a->size, h->spool) != a->size)
		return mt_fail(h, -EIO, "writing the temporary trace file: %s",
			       strerror(errno));
	h->nr_chunks++;
	h->st->aux_bytes += a->size;
	return 0;
}

/* --full: the bytes a PERF_RECORD_AUX announces, then aux_tail on. */
static int take_aux(struct hw *h, struct ring *r, const uint8_t *rec)
{
	uint64_t off, size, flags;
	struct pd_auxtrace a = {0};
	size_t at, first;
	int rc;

	memcpy(&off, rec + 8, 8);
	memcpy(&size, rec + 16, 8);
	memcpy(&flags, rec + 24, 8);
	if (flags & PERF_AUX_FLAG_TRUNCATED)
		h->st->truncated++;
	if (!size || size > r->aux_len)
		return 0;
	at = (size_t)(off % r->aux_len);
	first = r->aux_len - at < size ? r->aux_len - at : (size_t)size;
	memcpy(h->copy, r->aux + at, first);
	memcpy(h->copy + first, r->aux, (size_t)size - first);
	a.size = size;
	a.offset = off;
	a.reference = rdtsc();
	a.idx = (uint32_t)(r - h->rings);
	a.tid = r->cpu >= 0 ? UINT32_MAX : (uint32_t)r->tid;
	a.cpu = r->cpu >= 0 ? (uint32_t)r->cpu : UINT32_MAX;
	rc = spool_chunk(h, &a, h->copy);
	if (rc)
		return rc;
	__atomic_store_n(&r->page->aux_tail, off + size, __ATOMIC_RELEASE);
	return 0;
}

/* What drain() reads a ring for. */
struct drain_to {
	struct hw *h;
	struct ring *r;
	bool *forked;
};

static int drain_record(const struct perf_event_header *rec, void *arg)
{
	struct drain_to *d = arg;
	struct hw *h = d->h;

	if (rec->type == PERF_RECORD_AUX)
		return h->o->full && rec->size >= 32
			       ? take_aux(h, d->r, (const uint8_t *)rec)
			       : 0;
	if (rec->type == PERF_RECORD_LOST || rec->type == PERF_RECORD_SAMPLE)
		return 0;
	if (rec->type == PERF_RECORD_FORK)
		*d->forked = true;
	if (mt_grow((void **)&h->sb, &h->sb_cap, h->sb_len + rec->size, 1))
		return mt_fail(h, -ENOMEM, "out of memory");
	memcpy(h->sb + h->sb_len, rec, rec->size);
	h->sb_len += rec->size;
	return 0;
}

/* Move the ring's records into h->sb (and, --full, its trace into the
 * spool).  *forked: a thread was created. */
static int drain(struct hw *h, struct ring *r, bool *forked)
{
	struct drain_to d = {h, r, forked};

	return ring_read(r->page, DATA_PAGES, false, true, drain_record, &d);
}

static int drain_all(struct hw *h, bool *forked)
{
	int rc = 0;

	for (size_t i = 0; i < h->nr_rings && !rc; i++)
		rc = drain(h, &h->rings[i], forked);
	return rc;
}

static void enable_all(struct hw *h, bool on)
{
	for (size_t i = 0; i < h->nr_fds; i++)
		ioctl(h->fds[i],
		      on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/*
 * A snapshot: with the events stopped the driver has published aux_head;
 * what each ring gained since the last one is spooled.  again: tracing
 * goes on (--multi-snapshot).
 */
static int snapshot(struct hw *h, bool again)
{
	uint64_t ref;
	int rc = 0;

	enable_all(h, false);
	ref = rdtsc();
	for (size_t i = 0; i < h->nr_rings && !rc; i++) {
		struct ring *r = &h->rings[i];
		uint64_t head =
			__atomic_load_n(&r->page->aux_head, __ATOMIC_ACQUIRE);
		size_t n =
			!r->aux ? 0
				: pmu_ring_copy_since(r->aux, r->aux_len, head,
						      r->taken, h->copy);
		struct pd_auxtrace a = {
			.size = n,
			.offset = head - n,
			.reference = ref,
			.idx = (uint32_t)i,
			.tid = r->cpu >= 0 ? UINT32_MAX : (uint32_t)r->tid,
			.cpu = r->cpu >= 0 ? (uint32_t)r->cpu : UINT32_MAX};

		r->taken = head;
		rc = spool_chunk(h, &a, h->copy);
	}
	h->st->snapshots++;
	if (again)
		enable_all(h, true);
	return rc;
}

/* CLOCK_MONOTONIC (the stub's clock) to perf time, through the TSC. */
static uint64_t mono_to_perf(struct hw *h, uint64_t mono)
{
	struct pd_pt_info pt;
	uint64_t tsc, now;

	hw_pt_info(h, &pt);
	if (!pt.cap_user_time_zero || !pt.time_mult || !mono)
		return 0;
	tsc = rdtsc();
	now = mt_clock_ns(CLOCK_MONOTONIC);
	return pd_tsc_to_perf_time(tsc, &pt) - (now - mono);
}

/*
 * A hit: kept when it passes --duration-thresh.  Returns 1 when it ends
 * the recording, 0 to go on, negative on error.
 */
#define MAX_FRAMES 4096

/* The mappings of a process that may be gone: as at the start, then as
 * the kernel's MMAP2 records announced. */
static char *maps_known(struct hw *h)
{
	size_t len = h->maps0 ? strlen(h->maps0) : 0, cap = 0;
	char *text = NULL;

	if (mt_grow((void **)&text, &cap, len + 1, 1))
		return NULL;
	memcpy(text, h->maps0 ? h->maps0 : "", len + 1);
	for (size_t off = 0;
	     off + sizeof(struct perf_event_header) <= h->sb_len;) {
		struct perf_event_header eh;
		uint64_t addr, size, pgoff;
		uint32_t prot;
		char line[4200];
		int k;

		memcpy(&eh, h->sb + off, sizeof(eh));
		if (eh.size < sizeof(eh))
			break;
		/* MMAP2: pid, tid, addr, len, pgoff, 24 bytes, prot, flags,
		 * the file name. */
		/* Files mapped already are in the text once: libdw takes
		 * a file seen twice apart for two modules that overlap. */
		if (eh.type == PERF_RECORD_MMAP2 && eh.size > 72 &&
		    h->sb[off + 72] == '/' &&
		    !strstr(text, (const char *)h->sb + off + 72)) {
			memcpy(&addr, h->sb + off + 16, 8);
			memcpy(&size, h->sb + off + 24, 8);
			memcpy(&pgoff, h->sb + off + 32, 8);
			memcpy(&prot, h->sb + off + 64, 4);
			k = snprintf(
				line, sizeof(line),
				"%llx-%llx r-%cp %08llx 00:00 1 %.*s\n",
				(unsigned long long)addr,
				(unsigned long long)(addr + size),
				prot & PROT_EXEC ? 'x' : '-',
				(unsigned long long)pgoff,
				(int)strnlen((const char *)h->sb + off + 72,
					     eh.size - 72),
				(const char *)h->sb + off + 72);
			if (k > 0 && (size_t)k < sizeof(line)) {
				if (mt_grow((void **)&text, &cap,
					    len + (size_t)k + 1, 1)) {
					free(text);
					return NULL;
				}
				memcpy(text + len, line, (size_t)k + 1);
				len += (size_t)k;
			}
		}
		off += eh.size;
	}
	return text;
}

/* The stack of a hit, from its registers and stack copy, while the
 * process still maps its modules.  A stack that cannot be unwound is
 * said once; the capture is good without it. */
static void unwind_hit(struct hw *h, const struct bp_hit *b)
{
	uint64_t *ips = malloc(MAX_FRAMES * sizeof(*ips));
	char *maps = mt_maps_text(h->pid);
	char why[256];
	size_t n = 0;
	int rc;

	if (!maps)
		maps = maps_known(h);
	rc = ips && maps ? unwind_sample(h->pid, b->tid, maps, b->regs,
					 b->stack, b->stack_len, ips,
					 MAX_FRAMES, &n, why, sizeof(why))
			 : -ENOMEM;
	free(maps);
	if (!rc) {
		free(h->final_ips);
		h->final_ips = ips;
		h->nr_final = n;
		h->final_tid = b->tid;
		h->final_time = b->time;
		return;
	}
	free(ips);
	if (!h->st->warning[0])
		snprintf(h->st->warning, sizeof(h->st->warning),
			 "the stack at the hit was not unwound (%s): the "
			 "trace's roots are what its returns reveal",
			 rc != -ENOMEM ? why : "out of memory");
}

static int on_hit(struct hw *h, const struct bp_hit *b)
{
	const struct hw_opts *o = h->o;
	uint64_t mark = mono_to_perf(h, b->si);
	struct pd_ext_hit *x;

	if (o->cap.duration_thresh && b->si && !mark && !h->mark_warned) {
		h->mark_warned = true;
		snprintf(h->st->warning, sizeof(h->st->warning),
			 "--duration-thresh: perf time cannot be read here "
			 "(no cap_user_time_zero): every hit counts");
	}
	if (o->cap.duration_thresh && mark && b->time > mark &&
	    b->time - mark < o->cap.duration_thresh)
		return 0;
	if (mt_grow((void **)&h->hits, &h->cap_hits, h->nr_hits + 1,
		    sizeof(*h->hits)))
		return mt_fail(h, -ENOMEM, "out of memory");
	x = &h->hits[h->nr_hits++];
	memset(x, 0, sizeof(*x));
	x->pid = (uint32_t)b->pid;
	x->tid = (uint32_t)b->tid;
	x->time = b->time;
	x->ip = b->ip;
	x->arg = (int64_t)b->di;
	x->mark_start = mark;
	x->name = o->cap.trigger ? o->cap.trigger : "mt_snapshot_point";
	h->st->hits++;
	unwind_hit(h, b);
	if (!o->cap.multi_snapshot)
		return 1;
	return snapshot(h, true);
}

static bool target_gone(struct hw *h)
{
	char state = 0;

	if (h->launched) {
		int status;
		pid_t r = waitpid(h->pid, &status, WNOHANG);

		if (r == h->pid && WIFSIGNALED(status))
			h->st->killed_by = WTERMSIG(status);
		return r == h->pid || (r < 0 && errno == ECHILD);
	}
	/* Not our child: gone when /proc says so, or a zombie. */
	if (mt_proc_stat(h->pid, &state, NULL))
		return true;
	return state == 'Z' || state == 'X';
}

/* The trigger's address (the default one only when the program has it),
 * the breakpoint, and the filters, once the executable is mapped. */
static int arm(struct hw *h, unsigned nranges)
{
	const struct hw_opts *o = h->o;
	char stop[1024];
	int rc;

	if ((rc = capture_exe(h->pid, h->exe, sizeof(h->exe), NULL, 0)))
		return mt_fail(h, rc, "/proc/%d/exe: %s", (int)h->pid,
			       strerror(-rc));
	/* The mappings now, for unwinding hits after the process is gone
	 * (with the MMAP2 records that come later). */
	free(h->maps0);
	h->maps0 = mt_maps_text(h->pid);
	if (o->cap.trigger &&
	    line_trigger_spec(o->cap.trigger, NULL, 0, &(unsigned){0})) {
		uint64_t *addrs = NULL;
		size_t na = 0;

		/* One breakpoint: a line with inlined copies in several
		 * functions is watched at its first. */
		rc = line_trigger_resolve(h->pid, h->exe, o->cap.trigger,
					  &addrs, &na, h->err, h->errlen);
		if (!rc)
			h->trigger = addrs[0];
		free(addrs);
	} else {
		rc = symaddr_resolve(h->pid, h->exe,
				     o->cap.trigger ? o->cap.trigger
						    : "mt_snapshot_point",
				     &h->trigger, h->err, h->errlen);
	}
	if (rc && o->cap.trigger)
		return rc;
	if (rc)
		h->trigger = 0; /* no stub in the program: no trigger */
	if (o->stop_at_trigger) {
		size_t len = strlen(h->filter);

		if (!h->trigger)
			return mt_fail(h, -EINVAL,
				       "--stop-at-trigger: %s has no "
				       "mt_snapshot_point; name one with "
				       "--trigger",
				       h->exe);
		if ((rc = symaddr_stop_filter(h->pid, h->trigger, stop,
					      sizeof(stop), h->err, h->errlen)))
			return rc;
		if (len + strlen(stop) + 2 > sizeof(h->filter))
			return mt_fail(h, -E2BIG, "address filters too long");
		snprintf(h->filter + len, sizeof(h->filter) - len, "%s%s",
			 len ? "," : "", stop);
		nranges++;
	}
	if ((rc = pmu_check_filters(&h->pmu, nranges, h->err, h->errlen)))
		return rc;
	if (h->trigger) {
		enum bp_kind kind = BP_HARDWARE;
		char why[256];

		/* Where the debug registers never fire, a uprobe does the
		 * same at a trap per hit: say so rather than never fire. */
		if (bp_probe(why, sizeof(why)) == -ENOTSUP) {
			kind = BP_UPROBE;
			snprintf(h->st->warning, sizeof(h->st->warning),
				 "%s: the trigger is a uprobe instead", why);
		}
		rc = bp_open(&h->bp, kind, h->pid, h->trigger, h->tids,
			     h->nr_tids, o->per_cpu, h->err, h->errlen);
		if (rc)
			return rc;
	}
	if (h->launched)
		for (size_t i = 0; i < h->nr_fds; i++)
			if ((rc = set_filter(h, h->fds[i])))
				return rc;
	mt_vdso_read(h->pid, &h->vdso, &h->vdso_start, &h->vdso_len);
	return 0;
}

/* Until the target ends, Ctrl-C, or the hit that ends it. */
static int record(struct hw *h)
{
	const struct hw_opts *o = h->o;
	struct bp_hit hits[64];
	int rc;

	h->recording = true;
	while (!*o->cap.stop) {
		struct pollfd pf[256];
		size_t n = 0, nb = 0;
		const int *bfd = h->bp ? bp_fds(h->bp, &nb) : NULL;
		bool forked = false, gone;
		int ready;

		for (size_t i = 0; i < nb && n < 256; i++)
			pf[n++] =
				(struct pollfd){.fd = bfd[i], .events = POLLIN};
		for (size_t i = 0; o->full && i < h->nr_rings && n < 256; i++)
			pf[n++] = (struct pollfd){.fd = h->rings[i].fd,
						  .events = POLLIN};
		ready = poll(pf, n, 10);
		/* An ended thread's event reports POLLHUP for ever: sleep
		 * rather than spin when nothing else is ready. */
		if (ready > 0) {
			bool in = false;

			for (size_t i = 0; i < n; i++)
				in |= (pf[i].revents & POLLIN) != 0;
			if (!in)
				usleep(10000);
		}
		if ((rc = drain_all(h, &forked)))
			return rc;
		if ((!o->per_cpu || (h->bp && !bp_inherits(h->bp))) &&
		    (rc = scan_threads(h, true)))
			return rc;
		/* Gone is checked before the last hits are read: a hit
		 * just before the end still counts. */
		gone = target_gone(h);
		for (size_t k, got;
		     h->bp && (got = bp_read(h->bp, hits, 64));) {
			for (k = 0, rc = 0; k < got && !rc; k++)
				rc = on_hit(h, &hits[k]);
			for (k = 0; k < got; k++)
				bp_hit_release(&hits[k]);
			if (rc)
				return rc < 0 ? rc : 0;
		}
		if (gone)
			break;
	}
	return 0;
}

uint64_t hw_aux_size(uint64_t snapshot_size)
{
	uint64_t size = 4096;

	if (!snapshot_size)
		return 4u << 20;
	while (size < snapshot_size)
		size <<= 1;
	return size;
}

int hw_run(char *const argv[], const struct hw_opts *o, struct hw_stats *st,
	   char *err, size_t errlen)
{
	struct hw h = {.o = o,
		       .st = st,
		       .aux_size = hw_aux_size(o->cap.snapshot_size),
		       .err = err,
		       .errlen = errlen};
	unsigned nranges = 0;
	uint64_t config;
	struct target tg = {.pid = -1, .go = -1, .why = -1};
	int rc, status;
	bool forked = false;

	memset(st, 0, sizeof(*st));
	h.ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	rc = pmu_probe(o->sysfs, &h.pmu, err, errlen);
	if (!rc)
		rc = pmu_config(&h.pmu, &o->req, &config, err, errlen);
	if (!rc && o->include_kernel)
		rc = pmu_check_kernel(o->paranoid, pmu_effective_caps(), err,
				      errlen);
	if (!rc && o->filter)
		rc = symaddr_filters(o->filter, h.filter, sizeof(h.filter),
				     &nranges, err, errlen);
	if (!rc)
		rc = pmu_check_filters(&h.pmu,
				       nranges + (o->stop_at_trigger ? 1 : 0),
				       err, errlen);
	if (rc)
		return rc;
	h.copy = malloc(h.aux_size);
	if (!h.copy)
		return mt_fail(&h, -ENOMEM, "out of memory");
	memset(&h.attr, 0, sizeof(h.attr));
	h.attr.type = h.pmu.type;
	h.attr.size = sizeof(h.attr);
	h.attr.config = config;
	h.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			     PERF_SAMPLE_IDENTIFIER;
	h.attr.disabled = 1;
	h.attr.inherit = o->per_cpu;
	h.attr.exclude_kernel = !o->include_kernel;
	h.attr.exclude_hv = 1;
	h.attr.mmap = h.attr.mmap2 = h.attr.comm = h.attr.comm_exec = 1;
	h.attr.task = 1;
	h.attr.context_switch = o->per_cpu;
	h.attr.sample_id_all = 1;
	if (o->full)
		h.attr.aux_watermark = (uint32_t)(h.aux_size / 4);
	if (o->cap.pid > 0) {
		h.pid = o->cap.pid;
		if (kill(h.pid, 0) && errno == ESRCH) {
			rc = mt_fail(&h, -ESRCH, "-p %d: no such process",
				     o->cap.pid);
			goto out;
		}
		/* Threads first, then the trigger, then tracing on. */
		if ((rc = scan_threads(&h, false)))
			goto out;
		if (!h.nr_rings) {
			rc = mt_fail(&h, -ESRCH, "-p %d: no threads to trace",
				     o->cap.pid);
			goto out;
		}
		if ((rc = arm(&h, nranges)))
			goto out;
		enable_all(&h, true);
	} else {
		const struct target_how how = {.traced = true};

		if ((rc = target_fork(&tg, argv, &how, err, errlen)))
			goto out;
		h.pid = tg.pid;
		h.launched = true;
		h.attr.enable_on_exec = 1;
		if ((rc = add_thread(&h, h.pid, false)))
			goto out;
		h.attr.enable_on_exec = 0;
		rc = target_exec(&tg, argv[0], err, errlen);
		h.pid = tg.pid;
		if (rc)
			goto out;
		rc = arm(&h, nranges);
		ptrace(PTRACE_DETACH, h.pid, NULL, NULL);
		if (rc)
			goto out;
	}
	rc = record(&h);
	enable_all(&h, false);
	if (!rc)
		rc = drain_all(&h, &forked);
	if (!rc && !o->full)
		rc = snapshot(&h, false);
	if (!rc && st->truncated)
		snprintf(st->warning, sizeof(st->warning),
			 "%llu times the trace came faster than it could be "
			 "saved: it has gaps (a bigger --snapshot-size helps)",
			 (unsigned long long)st->truncated);
	if (!rc)
		rc = hw_write_capture(&h);
out:
	target_close(&tg);
	bp_free(h.bp);
	for (size_t i = 0; i < h.nr_rings; i++) {
		if (h.rings[i].aux)
			munmap(h.rings[i].aux, h.rings[i].aux_len);
		if (h.rings[i].page)
			munmap(h.rings[i].page, h.rings[i].page_len);
	}
	for (size_t i = 0; i < h.nr_fds; i++)
		close(h.fds[i]);
	if (h.launched && h.pid > 0) {
		/* After an error the program goes too; otherwise it ended,
		 * or runs on untraced after Ctrl-C. */
		if (rc)
			kill(h.pid, SIGKILL);
		waitpid(h.pid, &status, rc ? 0 : WNOHANG);
	}
	if (h.spool)
		fclose(h.spool);
	free(h.chunks);
	free(h.rings);
	free(h.fds);
	free(h.ids);
	free(h.tids);
	free(h.hits);
	free(h.sb);
	free(h.final_ips);
	free(h.maps0);
	free(h.copy);
	free(h.vdso);
	return rc;
}
