/* SPDX-License-Identifier: MIT */
/*
 * The Valgrind backend (--emulate=valgrind): Intel PT without Intel PT, at
 * tens of times native speed instead of thousands.
 *
 * The program runs under Valgrind with mtpt, the tool of vgtool/ (GPL, a
 * separate program: we only read what it writes).  It reports, thread by
 * thread, what the hardware turns into packets: conditional branches
 * (taken bits, packed), calls, returns and indirect branches with their
 * targets, system calls, signals, the mappings of executable files, and
 * the trigger's hits, on a socket; the record layout is in
 * docs/capture.md.  Here each thread's records go through ptenc, as the
 * ptrace emulator's steps do, and the capture is written by the same
 * code (emu_capture.c, emu_truth.c): the two backends' captures differ
 * only in their clock.
 *
 * The clock is virtual: the tool counts instructions, one a nanosecond,
 * and adds the wall time each system call took (see vgtool/mtpt.c); the
 * "TSC" is that, from CLOCK_MONOTONIC at start.
 */
#include "capture/capture.h"
#include "capture/emu_internal.h"
#include "capture/symaddr_internal.h"
#include "capture/target_internal.h"
#include "capture/vg_internal.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"
#include "util/version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The records of vgtool/mtpt.c. */
enum {
	R_HELLO = 'H',
	R_SWITCH = 'S',
	R_BEGIN = 'B',
	R_TNT = 'N',
	R_COND = 'C',
	R_JMP = 'J',
	R_CALL = 'c',
	R_ICALL = 'i',
	R_IJMP = 'j',
	R_RET = 'r',
	R_SYSCALL = 'y',
	R_ASYNC = 'a',
	R_ENABLE = 'e',
	R_EXIT = 'x',
	R_MMAP = 'm',
	R_HIT = 'h',
	R_PTW = 'w',
	R_END = 'E',
	R_EXEC = 'X',
	R_GO = 'g',
	R_PACKED = 0x80,
};
#define VG_MAGIC 0x6d747074u

/*
 * The time an exec takes on the virtual clock: about what the kernel
 * takes natively, and more than two MTC periods, so that a decoder, which
 * dates the new program's first branches by the MTC before them, dates
 * them after the exec's COMM.
 */
#define EXEC_NS 50000

/* A record cut short by the end of what was read: read more. */
#define SHORT 1

/*
 * One process's stream: each connects on its own (the first, a fork of a
 * traced one, the program an exec starts).  The one being read is swapped
 * into struct vg's fields of the same names, which the records use.
 */
struct vgs {
	int sock; /* -1 once it closed */
	uint8_t *buf;
	size_t len, cap;
	uint64_t now;
	size_t cur;
	pid_t pid;
	bool hello, ended, exec_pending, later, need_comm;
};

struct vg {
	struct emu e;
	int sock;
	pid_t child;
	uint8_t *buf;
	size_t len, cap;
	uint64_t now; /* the stream's clock: the last record's time */
	bool hello, ended, hit;
	char exec[256]; /* what the program last tried to exec, or "" */
	size_t cur;	/* the thread the records are of, or SIZE_MAX */
	/* The stream's process; its last record an exec's; it is not the
	 * first process as it began (its tasks are dated records); it
	 * exec'd and its command name is still to come. */
	pid_t spid;
	bool exec_pending, later, need_comm;
	/* Where each process's tool connects (abstract), and the streams. */
	int lsock;
	char lname[64];
	struct vgs *strm;
	size_t nr_strm, cap_strm;
	uint64_t newest; /* the newest time of any stream */
	bool main_ended; /* the first process's stream ended as it should */
	bool reaped;	 /* Valgrind's process waited for: status */
	int status;
	uint64_t *sys_next; /* per thread: where its system call returns */
	/* Where tracing begins: --start-at, else main (main.main in Go). */
	const char *start;
	/* A program without a "main" symbol: main's file and offset. */
	char start_file[PATH_MAX];
	uint64_t start_off;
	/* A trigger that is no function: addr:, or FILE:LINE as offsets
	 * ("%llx,...") of the executable trig_file. */
	uint64_t trig_addr;
	char trig_file[PATH_MAX];
	char *trig_offs;
};

/* A cursor over one record. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t rd_n(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p, n);
	r->p += n;
	return v;
}

static inline uint64_t rd_leb(struct rd *r)
{
	uint64_t v = 0;

	/* Most times are a few ns: one byte. */
	if (r->p < r->end && !(*r->p & 0x80))
		return *r->p++;

	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b;

		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static inline uint64_t rd_time(struct vg *v, struct rd *r)
{
	uint64_t dt = rd_leb(r);

	return r->bad ? v->now : v->now + dt;
}

/* The command name of process pid now. */
static const char *comm_of(const struct emu *e, pid_t pid)
{
	for (size_t i = e->nr_tasks; i-- > 0;)
		if (e->tasks[i].pid == pid && (e->tasks[i].kind == ET_COMM ||
					       e->tasks[i].kind == ET_EXEC))
			return e->tasks[i].text;
	return e->comm;
}

/* Thread tid's index, made if new (e->thr may move), or SIZE_MAX. */
static size_t vg_thr(struct vg *v, pid_t tid)
{
	struct emu *e = &v->e;
	struct thr *t = emu_thr_find(e, tid);
	uint64_t *n;

	if (t)
		return (size_t)(t - e->thr);
	t = emu_thr_add(e, tid);
	if (!t)
		return SIZE_MAX;
	n = realloc(v->sys_next, e->cap_thr * sizeof(*n));
	if (!n)
		return SIZE_MAX;
	v->sys_next = n;
	v->sys_next[e->nr_thr - 1] = 0;
	/* A thread of a fork or of an exec'd program: as perf's inherit has
	 * it, made now (a fork's first thread came with its hello). */
	if (v->later) {
		t = &e->thr[e->nr_thr - 1];
		t->pid = v->spid;
		if (tid != v->spid &&
		    (emu_task_add(e, ET_FORK, v->now, v->spid, tid, v->spid,
				  v->spid, NULL) ||
		     emu_task_add(e, ET_COMM, v->now, v->spid, tid, 0, 0,
				  comm_of(e, v->spid))))
			return SIZE_MAX;
	}
	return e->nr_thr - 1;
}

/* The command name of process pid's last exec, now that it is known. */
static int vg_exec_comm(struct emu *e, pid_t pid, const char *comm)
{
	for (size_t i = e->nr_tasks; i-- > 0;)
		if (e->tasks[i].pid == pid && e->tasks[i].kind == ET_EXEC) {
			char *c = strdup(comm);

			if (!c)
				return -ENOMEM;
			free(e->tasks[i].text);
			e->tasks[i].text = c;
			break;
		}
	return 0;
}

/* A file mapping of the program, as a /proc/PID/maps line (what
 * emu_write_capture() reads), and a binary to name functions by for
 * --truth. */
static int vg_map(struct vg *v, uint64_t lo, uint64_t len, uint64_t off,
		  unsigned prot, const char *path)
{
	struct emu *e = &v->e;
	char *line;
	int rc;

	if (asprintf(&line, "%llx-%llx %c%c%cp %08llx 00:00 0 %s",
		     (unsigned long long)lo, (unsigned long long)(lo + len),
		     prot & 1 ? 'r' : '-', prot & 2 ? 'w' : '-',
		     prot & 4 ? 'x' : '-', (unsigned long long)off, path) < 0)
		return -ENOMEM;
	if (v->later) {
		/* An exec'd program's first mapping is its executable: its
		 * name, as the kernel's COMM with the exec flag says. */
		const char *b = strrchr(path, '/');

		rc = v->need_comm ? vg_exec_comm(e, v->spid, b ? b + 1 : path)
				  : 0;
		v->need_comm = false;
		if (!rc)
			rc = emu_task_add(e, ET_MMAP, v->now, v->spid, v->spid,
					  0, 0, line);
		free(line);
		if (rc)
			return rc;
		return e->o->truth ? emu_edso_add(e, lo, lo + len, off, path)
				   : 0;
	}
	/* At the time the program mapped it: perf switches images then. */
	rc = emu_add_map(e, line, v->now);
	free(line);
	if (rc < 0)
		return rc;
	if (!e->exe[0]) {
		/* Valgrind maps the executable first. */
		const char *b = strrchr(path, '/');

		snprintf(e->exe, sizeof(e->exe), "%s", path);
		snprintf(e->comm, sizeof(e->comm), "%s", b ? b + 1 : path);
	}
	return e->o->truth ? emu_edso_add(e, lo, lo + len, off, path) : 0;
}

/* A transfer of class cls from the current thread to `to`, for the
 * truth (the packets are the caller's). */
static int vg_truth(struct vg *v, struct thr *t, uint8_t cls, uint64_t to,
		    uint64_t next)
{
	if (!v->e.o->truth)
		return 0;
	t->step.cls = cls;
	t->step_tsc = v->now;
	return emu_truth_transfer(&v->e, t, to, next, v->now);
}

/* --snapshot-size: the ring keeps the newest bytes.  Trimmed now and
 * then, at a PSB (every 4 KiB), not at every packet: twice the size is
 * kept at most, and a PSB period. */
void vg_trim(struct vg *v, struct thr *t)
{
	uint64_t size = v->e.o->cap.snapshot_size;
	size_t len, drop;

	if (!size || v->e.o->cap.multi_snapshot)
		return;
	ptenc_data(t->enc, &len);
	if (len <= 2 * size)
		return;
	drop = len - size;
	ptenc_discard(t->enc, drop);
}

/* Is ip in an executable mapping of the program? */
static bool in_code(const struct emu *e, uint64_t ip)
{
	for (size_t i = 0; i < e->nr_maps; i++) {
		unsigned long long lo, hi;

		if (sscanf(e->maps[i], "%llx-%llx", &lo, &hi) == 2 &&
		    ip >= lo && ip < hi)
			return true;
	}
	return false;
}

/* The trigger was reached: whether it snapshots (--duration-thresh), and
 * what it keeps.  Returns 1 when the capture ends here. */
static int vg_hit(struct vg *v, struct thr *t, struct rd *r)
{
	struct emu *e = &v->e;
	uint64_t ip = rd_n(r, 8), arg = rd_n(r, 8), mark = rd_n(r, 8);
	uint64_t wall = rd_n(r, 8), n = rd_n(r, 2), *ips;
	uint64_t when = v->now, mark_at = 0;

	if (r->bad || (size_t)(r->end - r->p) < n * 8) {
		r->bad = true;
		return 0;
	}
	/* The program's mark is its CLOCK_MONOTONIC; the trace's clock is
	 * virtual: the mark is placed as long before the hit as it was. */
	if (mark && wall >= mark)
		mark_at = when > wall - mark ? when - (wall - mark) : 0;
	if (e->o->cap.duration_thresh && mark &&
	    wall - mark < e->o->cap.duration_thresh) {
		r->p += n * 8;
		return 0;
	}
	if (e->o->cap.multi_snapshot) {
		r->p += n * 8;
		if (mt_grow((void **)&e->hits, &e->cap_hits, e->nr_hits + 1,
			    sizeof(*e->hits)) ||
		    emu_snapshot(&v->e, when))
			return -ENOMEM;
		e->hits[e->nr_hits++] =
			(struct ehit){when, mark_at, ip, t->tid, (long)arg};
		return 0;
	}
	e->hit_time = when;
	e->hit_mark = mark_at;
	e->hit_tid = t->tid;
	e->hit_arg = (long)arg;
	e->hit_ip = ip;
	ips = n ? malloc(n * sizeof(*ips)) : NULL;
	if (n && !ips)
		return -ENOMEM;
	memcpy(ips, r->p, n * 8);
	r->p += n * 8;
	/* Valgrind names a caller by its call instruction (the return
	 * address less one); the capture, as the unwinder, by the return
	 * address.  Its walk may go on past the outermost frame: the
	 * stack ends at the first address no executable mapping holds. */
	for (uint64_t i = 0; i < n; i++) {
		ips[i] += i ? 1 : 0;
		if (!in_code(e, ips[i])) {
			n = i;
			break;
		}
	}
	free(t->unwound);
	t->unwound = ips;
	t->nr_unwound = n;
	return 1;
}

/* The thread's signal is delivered: FUP and TIP.PGD where user code was
 * interrupted (user), and the truth's "[untraced]" row, as the ptrace
 * emulator keeps it; or nothing when it was in a system call. */
static int vg_async(struct vg *v, struct thr *t, bool user, uint64_t ip)
{
	struct emu *e = &v->e;

	t->async = true;
	if (!user) {
		/* The system call's row runs on to the handler, where the
		 * trace resumes: nothing untraced of its own. */
		t->untraced_row = UINT32_MAX;
		return 0;
	}
	if (ptenc_async_pgd(t->enc, v->now, ip))
		return -ENOMEM;
	if (e->o->truth &&
	    emu_truth_row_add(
		    t, v->now, "[untraced]",
		    t->tdepth ? t->tstack[t->tdepth - 1].row : UINT32_MAX, 0))
		return -ENOMEM;
	t->untraced_row = (uint32_t)t->nr_rows - 1;
	return 0;
}

/* --drop-every: the packets are lost up to here, where tracing resumes at
 * ip: OVF and FUP, and the gap for --gaps. */
static int vg_drop_end(struct vg *v, struct thr *t, uint64_t ip)
{
	t->dropping = 0;
	t->gap_end = v->now;
	t->last_pkt_tsc = v->now;
	t->last_pkt_ip = ip;
	return ptenc_overflow(t->enc, v->now, ip) ||
			       emu_add_gap(&v->e, t, v->now, ip)
		       ? -ENOMEM
		       : 0;
}

/*
 * --drop-every: are the packets of this record's n branches lost, as an
 * overflowing CPU loses them (emulate.c's transfer())?  A loss begins at
 * a record and ends after the record its count runs out in, at ip, where
 * that record's last branch went.  Returns 1 (lost), 0 or -ENOMEM.
 */
int vg_drop(struct vg *v, struct thr *t, unsigned n, uint64_t ip)
{
	struct emu *e = &v->e;
	unsigned k = 0;

	if (!e->o->drop_every)
		return 0;
	if (!t->dropping) {
		while (k < n && emu_drop_rand(e, e->o->drop_every))
			k++;
		if (k == n)
			return 0;
		t->dropping = 1 + emu_drop_rand(e, 48);
		t->gap_after = t->last_pkt_tsc;
		t->gap_stop = t->last_pkt_ip;
		if (ptenc_finish(t->enc, t->last_pkt_tsc))
			return -ENOMEM;
	}
	t->gap_end = v->now;
	if (t->dropping > n) {
		t->dropping -= n;
		return 1;
	}
	return vg_drop_end(v, t, ip) ? -ENOMEM : 1;
}

/* Tracing resumes at ip: after a system call, or in a signal handler. */
static int vg_enable(struct vg *v, struct thr *t, uint64_t ip)
{
	struct emu *e = &v->e;
	size_t k = (size_t)(t - e->thr);

	if (t->step.cls == IC_SYSCALL && v->sys_next[k]) {
		if (e->o->truth &&
		    emu_truth_transfer(e, t, ip, v->sys_next[k], v->now))
			return -ENOMEM;
		v->sys_next[k] = 0;
	}
	if (t->async) {
		t->async = false;
		if (e->o->truth && t->untraced_row < t->nr_rows)
			t->rows[t->untraced_row].end = v->now;
		if (e->o->truth && t->tdepth &&
		    !(ip >= t->tstack[t->tdepth - 1].lo &&
		      ip < t->tstack[t->tdepth - 1].hi)) {
			if (emu_truth_push(e, t, v->now, ip, 0, TR_SIGNAL))
				return -ENOMEM;
			t->tstack[t->tdepth - 1].async = true;
		}
	}
	t->step.cls = IC_PLAIN;
	/* A loss that ran into the system call or the signal ends here. */
	if (t->dropping)
		return vg_drop_end(v, t, ip);
	t->last_pkt_tsc = v->now;
	t->last_pkt_ip = ip;
	return ptenc_pge(t->enc, v->now, ip) ? -ENOMEM : 0;
}

/* Was process pid traced already (a thread of it began)? */
static bool vg_traced(const struct emu *e, pid_t pid)
{
	for (size_t i = 0; i < e->nr_thr; i++)
		if (e->thr[i].started &&
		    (e->thr[i].pid ? e->thr[i].pid : e->pid) == pid)
			return true;
	return false;
}

/* Has process pid connected before (this is the program it exec'd)? */
static bool vg_known(const struct vg *v, pid_t pid)
{
	for (size_t i = 0; i < v->nr_strm; i++)
		if (v->strm[i].hello && v->strm[i].pid == pid)
			return true;
	return pid == v->e.pid;
}

/*
 * A process says hello: the first (traced from the start symbol), a fork
 * of another (ppid; with --follow-children: FORK and COMM now, traced as
 * its parent is), or the program one exec'd (its COMM comes with its first
 * mapping; traced from its first instruction when it was traced before:
 * the trace goes on in the new program, as perf's does).  Its tool waits
 * for the answer: 'S' from the start symbol, 'T' from here, 'N' not at
 * all.
 */
static int vg_hello(struct vg *v, pid_t pid, uint64_t t0, pid_t ppid,
		    pid_t ptid)
{
	struct emu *e = &v->e;
	char say = 'N';
	int rc = 0;

	v->hello = true;
	v->spid = pid;
	v->now = t0;
	if (!e->pid) {
		e->pid = pid;
		e->start_time = t0;
		say = 'S';
	} else if (ppid && e->o->follow_children) {
		v->later = true;
		say = vg_traced(e, ppid) ? 'T' : 'S';
		rc = emu_task_add(e, ET_FORK, t0, pid, pid, ppid, ptid, NULL);
		if (!rc)
			rc = emu_task_add(e, ET_COMM, t0, pid, pid, 0, 0,
					  comm_of(e, ppid));
	} else if (!ppid && vg_known(v, pid)) {
		/* Its clock goes on from the old program's, with EXEC_NS
		 * for the exec (Valgrind loading itself again is not the
		 * program's time); the COMM, named by the new program's
		 * first mapping, comes at its start. */
		v->now = v->newest + EXEC_NS;
		v->later = v->need_comm = true;
		say = vg_traced(e, pid) ? 'T' : 'S';
		rc = emu_task_add(e, ET_EXEC, v->newest, pid, pid, 0, 0,
				  comm_of(e, pid));
	}
	if (write(v->sock, &say, 1) != 1)
		return 0; /* it is gone: its stream ends */
	return rc;
}

/* The thread that exec'd begins again in the new program, at its first
 * instruction: TIP.PGE there after the execve's TIP.PGD, as the hardware
 * traces an exec.  Its calls are gone with the old program. */
static int vg_exec_begin(struct vg *v, struct thr *t, uint64_t ip)
{
	struct emu *e = &v->e;

	t->depth = 0;
	t->async = false;
	v->sys_next[t - e->thr] = 0;
	if (e->o->truth)
		emu_truth_pop_to(t, 0, v->now);
	if (vg_enable(v, t, ip) ||
	    (e->o->truth && emu_truth_push(e, t, v->now, ip, 0, 0)))
		return -ENOMEM;
	/* A PSB+ (its TSC) at once: a decoder's time for the new program
	 * must not fall before the exec's COMM, as it would by MTC alone. */
	ptenc_force_psb(t->enc);
	return ptenc_maybe_psb(t->enc, v->now, ip) < 0 ? -ENOMEM : 0;
}

/* A pack of n branches (none: n 0) from t0 over dt, into t's packets. */
static inline int vg_pack(struct vg *v, struct thr *t, uint64_t t0, uint64_t dt,
			  unsigned n, uint64_t bits)
{
	if (!n)
		return 0;
	v->e.st->branches += n;
	return ptenc_conds(t->enc, t0, dt, n, bits);
}

/* The longest record vg_hot() reads: a packed call. */
#define HOT_MAX (1 + 1 + 8 + 3 * 10 + 8 + 8)

/* A LEB128 number at *pp, of 10 bytes at most (false: longer). */
static inline bool hot_leb(const uint8_t **pp, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t x = 0;

	/* Most times are a few ns: one byte. */
	if (!(*p & 0x80)) {
		*v = *p;
		*pp = p + 1;
		return true;
	}
	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b = *p++;

		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			*pp = p;
			return true;
		}
	}
	return false;
}

static inline uint64_t hot_u64(const uint8_t **pp)
{
	uint64_t v;

	memcpy(&v, *pp, 8);
	*pp += 8;
	return v;
}

/*
 * The records most of the stream is (branches, calls, returns, indirect
 * jumps, and the last three with a pack of branches before them) without
 * --truth or --drop-every, each as vg_record() takes it, with less to
 * check: r holds HOT_MAX bytes at least, so that the fields are read
 * without a bound each, and all of them are read before anything is done
 * with them.  Returns what vg_record() does, or 2 when the record is not
 * one of these (or not as it should be: vg_record() says what is wrong).
 */
static int vg_hot(struct vg *v, struct rd *r)
{
	struct emu *e = &v->e;
	struct thr *t = v->cur < e->nr_thr ? &e->thr[v->cur] : NULL;
	const uint8_t *p = r->p;
	int type = *p++, rc = 0;
	unsigned n = 0;
	uint64_t bits = 0, t0 = 0, dt = 0, now = v->now, ip, a = 0, x;

	if (!t || !v->hello)
		return 2;
	if (type == R_TNT || (type & R_PACKED)) {
		n = *p++;
		bits = hot_u64(&p);
		if (n > 64 || !hot_leb(&p, &x) || !hot_leb(&p, &dt))
			return 2;
		t0 = now + x;
		now = t0 + dt;
	}
	/* One switch: each case reads its fields, then acts (the pack
	 * first). */
	switch (type) {
	case R_TNT:
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		break;
	case R_CALL:
	case R_ICALL:
	case R_CALL | R_PACKED:
	case R_ICALL | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		a = hot_u64(&p);
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		if (!rc && (type & ~R_PACKED) == R_ICALL)
			rc = ptenc_indirect(t->enc, now, ip);
		ptenc_call(t->enc, a);
		if (!rc && t->depth < t->cap_shadow)
			t->shadow[t->depth++] = a;
		else if (!rc)
			rc = emu_shadow_push(t, a);
		e->st->branches++;
		break;
	case R_RET:
	case R_RET | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		for (size_t i = t->depth; i-- > 0;)
			if (t->shadow[i] == ip) {
				t->depth = i;
				break;
			}
		if (!rc)
			rc = ptenc_ret(t->enc, now, ip);
		e->st->branches++;
		break;
	case R_IJMP:
	case R_IJMP | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		if (!rc)
			rc = ptenc_indirect(t->enc, now, ip);
		e->st->branches++;
		break;
	default:
		return 2;
	}
	r->p = p;
	v->now = now;
	v->exec_pending = false;
	if (rc < 0)
		return mt_fail(e, rc, "out of memory encoding trace");
	if ((type & ~R_PACKED) != R_CALL) {
		t->last_pkt_tsc = now;
		t->last_pkt_ip = ip;
	}
	if (ip) {
		int sync;

		t->last_ip = ip;
		sync = ptenc_maybe_psb(t->enc, now, ip);
		if (sync < 0)
			return mt_fail(e, -ENOMEM,
				       "out of memory encoding trace");
		if (sync)
			vg_trim(v, t);
	}
	return rc;
}

/*
 * The n branches a call, return or jump carries (R_PACKED) and the
 * transfer itself, on vg_record()'s way (--drop-every): lost together,
 * tracing resuming at ip, the transfer's target; or the branches go into
 * the packets (*rc).  Returns what vg_drop() does.
 */
static int vg_carried(struct vg *v, struct thr *t, unsigned n, uint64_t t0,
		      uint64_t dt, uint64_t bits, uint64_t ip, int *rc)
{
	int lost = vg_drop(v, t, 1 + n, ip);

	if (!lost && n)
		*rc = ptenc_conds(t->enc, t0, dt, n, bits);
	v->e.st->branches += n;
	return lost;
}

/* One record at r.  Returns 0, 1 when the capture ends with it, SHORT
 * (r->bad) when it is not all there yet, or a negative code. */
int vg_record(struct vg *v, struct rd *r)
{
	struct emu *e = &v->e;
	struct thr *t = v->cur < e->nr_thr ? &e->thr[v->cur] : NULL;
	int type = (int)rd_n(r, 1);
	uint64_t ip = 0, a, b;
	int rc = 0, lost = 0;
	bool psb = false, branch = false, direct = false;
	/* The branches a call, return or jump carries (R_PACKED). */
	unsigned pn = 0;
	uint64_t pbits = 0, pt0 = 0, pdt = 0;

	if (r->bad)
		return SHORT;
	if ((type & R_PACKED) && t) {
		pn = (unsigned)rd_n(r, 1);
		pbits = rd_n(r, 8);
		pt0 = rd_time(v, r);
		pdt = rd_leb(r);
		if (r->bad)
			return SHORT;
		if (pn > 64)
			return mt_fail(e, -EPROTO,
				       "the Valgrind tool's stream has a run "
				       "of %u branches (at most 64)",
				       pn);
		type &= ~R_PACKED;
		if (type != R_CALL && type != R_ICALL && type != R_IJMP &&
		    type != R_RET)
			return mt_fail(
				e, -EPROTO,
				"the Valgrind tool's stream has a record "
				"of unknown type %#x",
				type | R_PACKED);
		/* The transfer's time counts from its last branch. */
		v->now = pt0 + pdt;
	}
	v->exec_pending = type == R_EXEC;
	if (!v->hello && type != R_HELLO)
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream does "
			       "not begin as it should");
	if (!t && type != R_HELLO && type != R_SWITCH && type != R_MMAP &&
	    type != R_END && type != R_EXEC)
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream names no thread");
	switch (type) {
	case R_HELLO: {
		uint64_t ppid, ptid;

		if (rd_n(r, 4) != VG_MAGIC && !r->bad)
			return mt_fail(e, -EPROTO,
				       "the Valgrind tool is not mtpt");
		a = rd_n(r, 4);
		b = rd_n(r, 8);
		ppid = rd_n(r, 4);
		ptid = rd_n(r, 4);
		if (r->bad)
			break;
		rc = vg_hello(v, (pid_t)a, b, (pid_t)ppid, (pid_t)ptid);
		break;
	}
	case R_SWITCH:
		a = rd_n(r, 4);
		if (r->bad)
			break;
		v->cur = vg_thr(v, (pid_t)a);
		if (v->cur == SIZE_MAX)
			return -ENOMEM;
		t = &e->thr[v->cur];
		break;
	case R_BEGIN:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (t->started) {
			rc = vg_exec_begin(v, t, ip);
			break;
		}
		t->started = true;
		t->t0 = t->last_pkt_tsc = v->now;
		t->last_pkt_ip = ip;
		if (ptenc_start(t->enc, v->now, ip, false) ||
		    (e->o->truth &&
		     emu_truth_push(e, t, v->now, ip, 0, TR_CLIP_START)))
			return -ENOMEM;
		e->st->threads++;
		break;
	case R_TNT: {
		unsigned n = (unsigned)rd_n(r, 1);
		uint64_t bits = rd_n(r, 8), t0 = rd_time(v, r);
		uint64_t dt = rd_leb(r);

		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (n > 64)
			return mt_fail(e, -EPROTO,
				       "the Valgrind tool's stream has a run "
				       "of %u branches (at most 64)",
				       n);
		v->now = t0 + dt;
		branch = true;
		lost = vg_drop(v, t, n, ip);
		if (!lost)
			rc = ptenc_conds(t->enc, t0, dt, n, bits);
		e->st->branches += n;
		break;
	}
	case R_COND:
		v->now = rd_time(v, r);
		a = rd_n(r, 1);
		b = rd_n(r, 8);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		branch = true;
		lost = vg_drop(v, t, 1, a ? b : ip);
		if (!lost)
			rc = ptenc_cond(t->enc, v->now, a != 0);
		if (!rc && a)
			rc = vg_truth(v, t, IC_COND, b, ip);
		if (a)
			ip = b;
		e->st->branches++;
		break;
	case R_JMP:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		branch = true;
		lost = vg_drop(v, t, 1, ip);
		rc = vg_truth(v, t, IC_JMP, ip, 0);
		direct = true;
		break;
	case R_CALL:
	case R_ICALL:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		branch = true;
		lost = vg_carried(v, t, pn, pt0, pdt, pbits, ip, &rc);
		if (type == R_ICALL && !lost && !rc)
			rc = ptenc_indirect(t->enc, v->now, ip);
		if (!lost)
			ptenc_call(t->enc, a);
		direct = type == R_CALL;
		if (!rc)
			rc = emu_shadow_push(t, a);
		if (!rc)
			rc = vg_truth(v, t, type == R_CALL ? IC_CALL : IC_ICALL,
				      ip, a);
		e->st->branches++;
		break;
	case R_IJMP:
	case R_RET:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		branch = true;
		lost = vg_carried(v, t, pn, pt0, pdt, pbits, ip, &rc);
		if (type == R_RET) {
			/* Pop to the frame it returns into (longjmp-like
			 * returns skip several). */
			for (size_t i = t->depth; i-- > 0;)
				if (t->shadow[i] == ip) {
					t->depth = i;
					break;
				}
			if (!lost && !rc)
				rc = ptenc_ret(t->enc, v->now, ip);
		} else if (!lost && !rc) {
			rc = ptenc_indirect(t->enc, v->now, ip);
		}
		if (!rc)
			rc = vg_truth(v, t, type == R_RET ? IC_RET : IC_IJMP,
				      ip, 0);
		e->st->branches++;
		break;
	case R_SYSCALL:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		if (r->bad)
			break;
		/* A loss goes on to where tracing resumes. */
		if (!t->dropping)
			rc = ptenc_pgd(t->enc, v->now);
		t->step.cls = IC_SYSCALL;
		t->step_tsc = v->now;
		t->step_ip = a;
		v->sys_next[t - e->thr] = a;
		e->st->branches++;
		break;
	case R_ASYNC:
		v->now = rd_time(v, r);
		a = rd_n(r, 1);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		rc = vg_async(v, t, a != 0, ip);
		ip = 0;
		break;
	case R_ENABLE:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		rc = vg_enable(v, t, ip);
		psb = true;
		break;
	case R_EXIT:
		v->now = rd_time(v, r);
		if (r->bad)
			break;
		/* Its last system call never returned: the truth's row of it
		 * stays open, as a decoder sees it. */
		if (e->o->truth && t->step.cls == IC_SYSCALL &&
		    v->sys_next[t - e->thr] &&
		    emu_truth_row_add(t, t->step_tsc, "[syscall]",
				      t->tdepth ? t->tstack[t->tdepth - 1].row
						: UINT32_MAX,
				      TR_SYSCALL))
			return -ENOMEM;
		if (!t->exited) {
			t->exited = true;
			e->live--;
		}
		break;
	case R_MMAP: {
		uint64_t lo, len, off, prot, n;
		char path[4096];

		v->now = rd_time(v, r);
		lo = rd_n(r, 8);
		len = rd_n(r, 8);
		off = rd_n(r, 8);
		prot = rd_n(r, 1);
		n = rd_n(r, 2);
		if (r->bad || (size_t)(r->end - r->p) < n) {
			r->bad = true;
			break;
		}
		if (n >= sizeof(path))
			return mt_fail(e, -EPROTO,
				       "the Valgrind tool's stream is bad");
		memcpy(path, r->p, n);
		path[n] = 0;
		r->p += n;
		rc = vg_map(v, lo, len, off, (unsigned)prot, path);
		break;
	}
	case R_HIT:
		v->now = rd_time(v, r);
		rc = vg_hit(v, t, r);
		if (rc == 1)
			v->hit = true;
		break;
	case R_PTW:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (!t->dropping)
			rc = ptenc_ptwrite(t->enc, v->now, a, ip);
		break;
	case R_GO: {
		uint64_t g;

		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		g = rd_n(r, 8);
		b = rd_n(r, 8);
		if (r->bad)
			break;
		rc = emu_go_switch(e, t, v->now, a, g, b);
		break;
	}
	case R_EXEC: {
		uint64_t n = rd_n(r, 2);

		if (r->bad || (size_t)(r->end - r->p) < n) {
			r->bad = true;
			break;
		}
		snprintf(v->exec, sizeof(v->exec), "%.*s", (int)n,
			 (const char *)r->p);
		r->p += n;
		break;
	}
	case R_END:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		if (r->bad)
			break;
		e->st->insns += a;
		v->ended = true;
		v->main_ended |= v->spid == e->pid;
		break;
	default:
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream has a record of "
			       "unknown type %#x",
			       type);
	}
	if (r->bad)
		return SHORT;
	if (lost < 0)
		rc = lost;
	if (rc < 0)
		return mt_fail(e, rc, "out of memory encoding trace");
	/* A branch record: its packets, unless lost, are the newest. */
	if (t && branch && !lost) {
		psb = true;
		if (!direct) {
			t->last_pkt_tsc = v->now;
			t->last_pkt_ip = ip;
		}
	}
	if (t && psb && ip) {
		t->last_ip = ip;
		int sync = ptenc_maybe_psb(t->enc, v->now, ip);

		if (sync < 0)
			return mt_fail(e, -ENOMEM,
				       "out of memory encoding trace");
		if (sync)
			vg_trim(v, t);
	}
	return rc;
}

/* Every whole record read so far; what is cut short waits for more. */
int vg_parse(struct vg *v)
{
	size_t off = 0;
	int rc = 0;
	/* (--drop-every: vg_record() loses a transfer and its pack
	 * together.) */
	bool hot = !v->e.o->truth && !v->e.o->drop_every;

	while (off < v->len && !v->hit && !v->ended) {
		struct rd r = {v->buf + off, v->buf + v->len, false};
		uint64_t now = v->now;

		/* Every record is 2 bytes at least. */
		rc = v->len - off < 2		      ? SHORT
		     : hot && v->len - off >= HOT_MAX ? vg_hot(v, &r)
						      : 2;
		if (rc == 2) {
			r.p = v->buf + off;
			r.bad = false;
			rc = vg_record(v, &r);
		}
		if (rc == SHORT) {
			/* Read again whole, from the clock it began at. */
			v->now = now;
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		off = (size_t)(r.p - v->buf);
	}
	memmove(v->buf, v->buf + off, v->len - off);
	v->len -= off;
	return rc < 0 ? rc : 0;
}

/* Where mtpt-amd64-linux is, beside Valgrind's own files: $MT_VALGRIND_LIB,
 * or lib/valgrind beside the bin/ folder mt-capture is in (the build
 * tree), else lib/mt/valgrind there (make install, the package). */
static int tool_dir(char *dir, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("MT_VALGRIND_LIB");
	char self[PATH_MAX], tool[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (env && env[0]) {
		snprintf(dir, len, "%s", env);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return mt_err(err, errlen, -errno, "/proc/self/exe: %s",
				      strerror(errno));
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		snprintf(dir, len, "%s/../lib/valgrind", self);
		snprintf(tool, sizeof(tool), "%s/mtpt-amd64-linux", dir);
		if (access(tool, X_OK))
			snprintf(dir, len, "%s/../lib/mt/valgrind", self);
	}
	snprintf(tool, sizeof(tool), "%s/mtpt-amd64-linux", dir);
	if (access(tool, X_OK) && mt_build_limits())
		return mt_err(err, errlen, -ENOENT, "%s is missing (%s)", tool,
			      mt_build_limits());
	if (access(tool, X_OK))
		return mt_err(err, errlen, -ENOENT,
			      "%s: the Valgrind tool is not built (make builds "
			      "it where valgrind is installed: apt-get install "
			      "valgrind)",
			      tool);
	return 0;
}

/* A trigger that is an address or a source line, for the tool: the
 * line's offsets in the executable (its line tables; the libraries are
 * not mapped before the program runs). */
static int resolve_trigger(struct vg *v, const char *prog, const char *spec,
			   char *err, size_t errlen)
{
	char path[PATH_MAX];
	uint64_t *offs = NULL;
	size_t n = 0, len = 0;
	int rc;

	if (!strncmp(spec, "addr:", 5)) {
		if (mt_parse_u64(spec + 5, 16, UINT64_MAX, &v->trig_addr) ||
		    !v->trig_addr)
			return mt_err(err, errlen, -EINVAL,
				      "bad address in '%s'", spec);
		return 0;
	}
	if (!line_trigger_spec(spec, NULL, 0, &(unsigned){0}))
		return 0;
	if (!capture_find_program(prog, path, sizeof(path)) ||
	    access(path, X_OK))
		return 0; /* the launch says it is not there */
	rc = line_trigger_offsets(path, spec, &offs, &n, err, errlen);
	if (rc)
		return rc;
	if (!realpath(path, v->trig_file))
		rc = mt_err(err, errlen, -errno, "%s: %s", path,
			    strerror(errno));
	v->trig_offs = rc ? NULL : malloc(n * 17 + 1);
	if (!rc && !v->trig_offs)
		rc = mt_err(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++)
		len += (size_t)sprintf(v->trig_offs + len, "%s%llx",
				       i ? "," : "",
				       (unsigned long long)offs[i]);
	free(offs);
	return rc;
}

/* Is there a function sym in the executable prog (as execvp finds it)?
 * The ptrace emulator says the same when there is none. */
static int check_start(struct vg *v, const char *prog, const char *sym,
		       char *err, size_t errlen)
{
	char path[PATH_MAX], why[PATH_MAX + 256];
	struct sym_file *sf = NULL;
	const struct sym *s;
	size_t n;
	bool found = false;

	if (!capture_find_program(prog, path, sizeof(path)) ||
	    access(path, X_OK))
		return 0;
	if (sym_file_open(path, NULL, &sf, why, sizeof(why)))
		return 0; /* not ELF (a script): Valgrind follows it */
	s = sym_file_syms(sf, &n);
	for (size_t i = 0; i < n && !found; i++)
		found = !strcmp(s[i].name, sym);
	sym_file_free(sf);
	/* Stripped: main is what _start hands to __libc_start_main. */
	if (!found && !strcmp(sym, "main")) {
		if (symaddr_main_vaddr(path, &(uint64_t){0}, &v->start_off, why,
				       sizeof(why)))
			return mt_err(err, errlen, -ENOENT,
				      "%s; --start-at '' traces from exec",
				      why);
		if (!realpath(path, v->start_file))
			return mt_err(err, errlen, -errno, "%s: %s", path,
				      strerror(errno));
		return 0;
	}
	/* Else it may be a library's: the tool finds it wherever it is,
	 * and vg_run() says so when none of the files mapped has it. */
	return 0;
}

/* A Go program: the tool reports its threads' goroutine switches. */
static void vg_go(struct vg *v, const char *prog)
{
	char path[PATH_MAX];

	if (capture_find_program(prog, path, sizeof(path)) &&
	    !access(path, X_OK))
		go_rt_read(path, &v->e.go);
}

/* The socket each process's tool connects to: an abstract name (no file
 * to remove), unique to this mt-capture. */
static int vg_listen(struct vg *v)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec ts;
	size_t n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(v->lname, sizeof(v->lname), "mt-capture.%d.%llx",
		 (int)getpid(), (unsigned long long)ts.tv_nsec);
	n = strlen(v->lname);
	memcpy(a.sun_path + 1, v->lname, n);
	v->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (v->lsock < 0 ||
	    bind(v->lsock, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
	    listen(v->lsock, 64))
		return mt_fail(&v->e, -errno, "a socket for Valgrind: %s",
			       strerror(errno));
	return 0;
}

/*
 * Does a file the program mapped (its 'm' records) have function sym?
 * 0 when one does; else -ENOENT and the line that says none does, with
 * the names like it, into err.
 */
static int vg_in_maps(struct vg *v, const char *sym, char *err, size_t errlen)
{
	struct symwatch *w = symwatch_new(sym);
	struct emu *e = &v->e;
	char path[4096];
	int rc = 0;

	if (!w)
		return mt_err(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < e->nr_maps && !rc; i++) {
		struct mt_map m;

		if (!mt_map_parse(e->maps[i], &m, path, sizeof(path)) &&
		    path[0] == '/')
			rc = symwatch_file(w, path);
	}
	if (!rc && !symwatch_in_files(w))
		rc = symwatch_missing(w, e->exe[0] ? e->exe : "the program",
				      err, errlen);
	else if (rc)
		rc = mt_err(err, errlen, rc, "out of memory");
	symwatch_free(w);
	return rc;
}

/* Start argv under Valgrind with mtpt, its stream on our socket. */
static int vg_launch(struct vg *v, char *const argv[])
{
	const struct emu_opts *o = v->e.o;
	char dir[PATH_MAX], fdopt[96], start[600], trig[600], ptw[64],
		sfile[PATH_MAX + 32], soff[48], taddr[48], tfile[PATH_MAX + 32],
		gofns[16 + GO_SWITCH_MAX * 32], gotls[48], goid[48];
	int argc = 0, rc;
	char **args, *offs_opt = NULL;

	rc = tool_dir(dir, sizeof(dir), v->e.err, v->e.errlen);
	if (rc)
		return rc;
	if (v->trig_offs &&
	    asprintf(&offs_opt, "--mt-trigger-offs=%s", v->trig_offs) < 0)
		return mt_fail(&v->e, -ENOMEM, "out of memory");
	rc = vg_listen(v);
	if (rc) {
		free(offs_opt);
		return rc;
	}
	while (argv[argc])
		argc++;
	args = calloc((size_t)argc + 32, sizeof(*args));
	if (!args) {
		free(offs_opt);
		return mt_fail(&v->e, -ENOMEM, "out of memory");
	}
	snprintf(fdopt, sizeof(fdopt), "--mt-sock=%s", v->lname);
	snprintf(start, sizeof(start), "--mt-start=%s", v->start);
	snprintf(trig, sizeof(trig), "--mt-trigger=%s",
		 v->trig_addr || v->trig_offs ? ""
		 : o->cap.trigger	      ? o->cap.trigger
					      : "mt_snapshot_point");
	snprintf(ptw, sizeof(ptw), "--mt-ptwrite=%s",
		 o->ptwrite ? "mt_ptwrite" : "");
	{
		int k = 0;

		args[k++] = "valgrind";
		args[k++] = "--tool=mtpt";
		args[k++] = "-q";
		/* Every branch ends a block: see vgtool/mtpt.c. */
		args[k++] = "--vex-guest-chase=no";
		args[k++] = "--vex-iropt-unroll-thresh=0";
		/* Valgrind's own clean-up code at exit is not the
		 * program's. */
		args[k++] = "--run-libc-freeres=no";
		args[k++] = "--run-cxx-freeres=no";
		/* A program it execs runs under Valgrind too, traced on (a
		 * child that is not traced turns this off for itself). */
		args[k++] = "--trace-children=yes";
		args[k++] = fdopt;
		args[k++] = o->follow_children ? "--mt-follow=yes"
					       : "--mt-follow=no";
		args[k++] = start;
		if (v->start_file[0]) {
			snprintf(sfile, sizeof(sfile), "--mt-start-file=%s",
				 v->start_file);
			snprintf(soff, sizeof(soff), "--mt-start-off=%#llx",
				 (unsigned long long)v->start_off);
			args[k++] = sfile;
			args[k++] = soff;
		}
		args[k++] = trig;
		if (v->trig_addr) {
			snprintf(taddr, sizeof(taddr), "--mt-trigger-addr=%llx",
				 (unsigned long long)v->trig_addr);
			args[k++] = taddr;
		}
		if (v->trig_offs) {
			snprintf(tfile, sizeof(tfile), "--mt-trigger-file=%s",
				 v->trig_file);
			args[k++] = tfile;
			args[k++] = offs_opt;
		}
		args[k++] = ptw;
		args[k++] = o->truth ? "--mt-truth=yes" : "--mt-truth=no";
		if (v->e.go.is_go) {
			size_t len = (size_t)snprintf(gofns, sizeof(gofns),
						      "--mt-go-fns=");

			for (size_t i = 0; i < v->e.go.nr_fns; i++)
				len += (size_t)snprintf(gofns + len,
							sizeof(gofns) - len,
							"%s%s", i ? "," : "",
							v->e.go.fns[i].name);
			snprintf(gotls, sizeof(gotls), "--mt-go-tls=%lld",
				 (long long)v->e.go.tls_off);
			snprintf(goid, sizeof(goid), "--mt-go-goid=%llu",
				 (unsigned long long)v->e.go.goid_off);
			args[k++] = gofns;
			args[k++] = gotls;
			args[k++] = goid;
		}
		args[k++] = "--";
		for (int i = 0; i < argc; i++)
			args[k++] = argv[i];
		args[k] = NULL;
	}
	{
		const struct target_how how = {.env_name = "VALGRIND_LIB",
					       .env_value = dir};
		struct target t;

		rc = target_fork(&t, args, &how, v->e.err, v->e.errlen);
		if (!rc) {
			v->child = t.pid;
			rc = target_exec(&t, args[0], v->e.err, v->e.errlen);
			v->child = t.pid;
		}
		if (rc == -ENOENT) {
			size_t len = strlen(v->e.err);

			snprintf(v->e.err + len, v->e.errlen - len,
				 " (apt-get install valgrind)");
		}
	}
	free(args);
	free(offs_opt);
	return rc;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Stream k into v's fields, and back. */
static void strm_in(struct vg *v, size_t k)
{
	const struct vgs *s = &v->strm[k];

	v->sock = s->sock;
	v->buf = s->buf;
	v->len = s->len;
	v->cap = s->cap;
	v->now = s->now;
	v->cur = s->cur;
	v->spid = s->pid;
	v->hello = s->hello;
	v->ended = s->ended;
	v->exec_pending = s->exec_pending;
	v->later = s->later;
	v->need_comm = s->need_comm;
}

static void strm_out(struct vg *v, size_t k)
{
	v->strm[k] =
		(struct vgs){v->sock,  v->buf,		v->len,	  v->cap,
			     v->now,   v->cur,		v->spid,  v->hello,
			     v->ended, v->exec_pending, v->later, v->need_comm};
	if (v->now > v->newest)
		v->newest = v->now;
	v->sock = -1;
	v->buf = NULL;
	v->len = v->cap = 0;
}

/* What stream k has now, encoded: 1 when it had something, 0 when not
 * (or it closed), or a negative code. */
static int strm_read(struct vg *v, size_t k)
{
	ssize_t n = 0;
	int rc = 0;

	strm_in(v, k);
	if (mt_grow((void **)&v->buf, &v->cap, v->len + (1 << 20), 1)) {
		rc = mt_fail(&v->e, -ENOMEM, "out of memory");
	} else {
		n = recv(v->sock, v->buf + v->len, v->cap - v->len,
			 MSG_DONTWAIT);
		if (n > 0) {
			v->len += (size_t)n;
			rc = vg_parse(v);
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			/* Its process is gone (or exec'd). */
			close(v->sock);
			v->sock = -1;
		}
	}
	strm_out(v, k);
	return rc ? rc : n > 0;
}

/* A process's tool connects: of our own user only. */
static int strm_accept(struct vg *v)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int fd = accept4(v->lsock, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    cr.uid != getuid()) {
		close(fd);
		return 0;
	}
	if (mt_grow((void **)&v->strm, &v->cap_strm, v->nr_strm + 1,
		    sizeof(*v->strm))) {
		close(fd);
		return mt_fail(&v->e, -ENOMEM, "out of memory");
	}
	v->strm[v->nr_strm++] = (struct vgs){.sock = fd, .cur = SIZE_MAX};
	return 0;
}

/* Is a process still to connect: the first, or the program one exec'd
 * while it lives? */
static bool strm_awaited(struct vg *v)
{
	if (!v->reaped && v->child > 0 &&
	    waitpid(v->child, &v->status, WNOHANG) == v->child)
		v->reaped = true;
	if (!v->nr_strm)
		return !v->reaped;
	for (size_t k = 0; k < v->nr_strm; k++) {
		const struct vgs *s = &v->strm[k];
		bool after = false;

		if (s->sock >= 0 || !s->exec_pending || s->ended)
			continue;
		for (size_t j = k + 1; j < v->nr_strm && !after; j++)
			after = v->strm[j].pid == s->pid;
		if (!after &&
		    (s->pid == v->child ? !v->reaped : !kill(s->pid, 0)))
			return true;
	}
	return false;
}

/* Read and encode until every process's stream has ended, the capture
 * ends at a hit, or we are told to stop. */
static int vg_loop(struct vg *v)
{
	struct pollfd *p = NULL;
	size_t cap = 0;
	int rc = 0;

	while (!rc && !v->hit && !*v->e.o->cap.stop) {
		size_t np = 1;

		if (mt_grow((void **)&p, &cap, v->nr_strm + 1, sizeof(*p))) {
			rc = mt_fail(&v->e, -ENOMEM, "out of memory");
			break;
		}
		p[0] = (struct pollfd){v->lsock, POLLIN, 0};
		for (size_t k = 0; k < v->nr_strm; k++)
			if (v->strm[k].sock >= 0)
				p[np++] = (struct pollfd){v->strm[k].sock,
							  POLLIN, 0};
		if (np == 1 && !strm_awaited(v))
			break;
		if (poll(p, np, 200) < 0) {
			if (errno == EINTR)
				continue;
			rc = mt_fail(&v->e, -errno, "poll: %s",
				     strerror(errno));
			break;
		}
		for (size_t i = 1, k = 0; i < np && rc >= 0 && !v->hit; i++) {
			while (v->strm[k].sock != p[i].fd)
				k++;
			if (p[i].revents)
				rc = strm_read(v, k);
		}
		if (rc > 0)
			rc = 0;
		if (!rc && p[0].revents)
			rc = strm_accept(v);
	}
	free(p);
	/* Told to stop: what the tools sent before is in the capture. */
	for (size_t k = 0; k < v->nr_strm && *v->e.o->cap.stop; k++)
		while (!v->hit && (rc = strm_read(v, k)) > 0)
			;
	return rc < 0 ? rc : 0;
}

int vg_run(char *const argv[], const struct emu_opts *o, struct emu_stats *st,
	   char *err, size_t errlen)
{
	struct vg v = {.e = {.o = o, .st = st, .err = err, .errlen = errlen},
		       .sock = -1,
		       .lsock = -1,
		       .child = -1,
		       .cur = SIZE_MAX};
	uint64_t t_start = mono_ns();
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (o->cap.pid)
		return mt_fail(&v.e, -EINVAL,
			       "--emulate=valgrind starts the program: -p "
			       "needs --emulate=ptrace");
	v.e.rng = o->drop_seed ? o->drop_seed : 1;
	if (o->cap.trigger)
		rc = resolve_trigger(&v, argv[0], o->cap.trigger, err, errlen);
	if (!rc)
		vg_go(&v, argv[0]);
	v.start = o->start_at	 ? o->start_at
		  : v.e.go.is_go ? "main.main"
				 : "main";
	if (!rc && v.start[0])
		rc = check_start(&v, argv[0], v.start, err, errlen);
	if (!rc)
		rc = vg_launch(&v, argv);
	if (!rc)
		rc = vg_loop(&v);
	st->seconds = (double)(mono_ns() - t_start) / 1e9;
	if (!rc && !v.main_ended && !v.hit && !*o->cap.stop && v.exec[0])
		snprintf(st->warning, sizeof(st->warning),
			 "%s runs %s by exec: the trace ends there (Valgrind "
			 "did not run it with the tool)",
			 argv[0], v.exec);
	else if (!rc && !v.main_ended && !v.hit && !*o->cap.stop && v.e.pid)
		snprintf(st->warning, sizeof(st->warning),
			 "the Valgrind tool's stream ended early (Valgrind "
			 "failed?)");
	/* The program runs on untraced after a hit or Ctrl-C: the tool
	 * stops when it finds the socket closed. */
	for (size_t k = 0; k < v.nr_strm; k++) {
		if (v.strm[k].sock >= 0)
			close(v.strm[k].sock);
		free(v.strm[k].buf);
	}
	free(v.strm);
	if (v.lsock >= 0)
		close(v.lsock);
	if (v.child > 0 && !v.reaped && !*o->cap.stop &&
	    (v.main_ended || rc || !v.e.pid))
		v.reaped = waitpid(v.child, &v.status, 0) == v.child;
	if (v.reaped) {
		if (WIFSIGNALED(v.status))
			st->killed_by = WTERMSIG(v.status);
		else if (!v.e.nr_thr && !rc && WIFEXITED(v.status) &&
			 WEXITSTATUS(v.status))
			rc = mt_fail(&v.e, -ECHILD,
				     "%s: Valgrind could not run it "
				     "(exit status %d)",
				     argv[0], WEXITSTATUS(v.status));
	}
	if (!rc && v.e.nr_thr && o->cap.trigger && !v.hit) {
		char why[512];
		size_t len = strlen(st->warning);

		/* A trigger no file has: traced to the end, and said. */
		if (vg_in_maps(&v, o->cap.trigger, why, sizeof(why)) == -ENOENT)
			snprintf(st->warning + len, sizeof(st->warning) - len,
				 "%s--trigger: %s; traced to the end",
				 len ? "; " : "", why);
	}
	if (v.e.nr_thr) {
		rc = emu_write_all(&v.e, v.hit ? v.e.hit_time : v.newest, rc);
	} else if (!rc && v.e.pid && o->start_at && o->start_at[0] &&
		   vg_in_maps(&v, o->start_at, err, errlen)) {
		size_t len = strlen(err);

		rc = -ENOENT;
		snprintf(err + len, errlen - len,
			 "; --start-at '' traces from exec");
	} else if (!rc && v.e.pid) {
		rc = mt_fail(&v.e, -ENOENT,
			     "%s never reached %s: nothing was traced", argv[0],
			     v.start[0] ? v.start : "its first instruction");
	}
	emu_free(&v.e);
	free(v.trig_offs);
	free(v.sys_next);
	free(v.buf);
	return rc;
}
