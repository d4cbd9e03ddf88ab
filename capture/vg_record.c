/* SPDX-License-Identifier: MIT */
/*
 * The Valgrind backend's records (docs/capture.md, "The stream of the
 * Valgrind tool"), each read and checked in full and turned into what it
 * does: packets through ptenc, the truth, mappings, threads, processes,
 * the trigger's hits and the losses of --drop-every.
 */
#include "capture/emu_internal.h"
#include "capture/vg_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/*
 * When a mapping of a later process was made: an exec'd program's own,
 * which Valgrind maps before it runs a first instruction (its clock has
 * not moved since the exec), are dated at the exec, as the kernel's
 * records are; a decoder whose clock for the program's first packets
 * runs a little behind (MTC) then names them by the new program's code,
 * not the old one's.
 */
static uint64_t vg_map_time(const struct vg *v)
{
	return v->exec_at && v->now == v->exec_at + EXEC_NS ? v->exec_at
							    : v->now;
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
			rc = emu_task_add(e, ET_MMAP, vg_map_time(v), v->spid,
					  v->spid, 0, 0, line);
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
	if (rc > 0 && (prot & 4) && v->cur < e->nr_thr)
		e->thr[v->cur].mapped = true;
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
	int rc = 0, sent;

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
		v->exec_at = v->newest;
		v->later = v->need_comm = true;
		say = vg_traced(e, pid) ? 'T' : 'S';
		rc = emu_task_add(e, ET_EXEC, v->newest, pid, pid, 0, 0,
				  comm_of(e, pid));
	}
	sent = vg_answer(v, say);
	if (sent)
		return sent < 0 ? sent : 0; /* 1: it is gone, its stream ends */
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
	/* What the program maps from now on is its own doing. */
	v->exec_at = 0;
	if (e->o->truth)
		emu_truth_pop_to(t, 0, v->now);
	if (vg_enable(v, t, ip) ||
	    (e->o->truth && emu_truth_push(e, t, v->now, ip, 0, TR_EXEC)))
		return -ENOMEM;
	/* A PSB+ (its TSC) at once: a decoder's time for the new program
	 * must not fall before the exec's COMM, as it would by MTC alone. */
	ptenc_force_psb(t->enc);
	return ptenc_maybe_psb(t->enc, v->now, ip) < 0 ? -ENOMEM : 0;
}

/* A pack of branches that is 0, without the leading 1 that counts
 * them. */
static int vg_no_count(struct emu *e)
{
	return mt_fail(e, -EPROTO,
		       "the Valgrind tool's stream has a run of branches "
		       "without its count");
}

int vg_ret_above(struct emu *e)
{
	return mt_fail(e, -EPROTO,
		       "the Valgrind tool's stream has a return above the "
		       "calls it reported");
}

/* A record of a type this stream cannot have. */
static int vg_unknown(struct emu *e, int type)
{
	return mt_fail(e, -EPROTO,
		       "the Valgrind tool's stream has a record of unknown "
		       "type %#x",
		       type);
}

/* A thread's stack of calls, the newest first (--mt-calls=no): it
 * replaces what mt-capture has, which is where the records stand. */
static int vg_stack(struct vg *v, struct rd *r)
{
	struct emu *e = &v->e;
	uint64_t tid = rd_n(r, 4), n = rd_n(r, 4);
	struct thr *t;

	if (!r->bad && n > 4096)
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream has a stack of %llu "
			       "frames (4096 at most)",
			       (unsigned long long)n);
	if (r->bad || (size_t)(r->end - r->p) < n * 8) {
		r->bad = true;
		return 0;
	}
	t = emu_thr_find(e, (pid_t)tid);
	if (!t) {
		r->p += n * 8;
		return 0;
	}
	t->depth = 0;
	for (uint64_t i = n; i-- > 0;) {
		uint64_t ret;

		memcpy(&ret, r->p + i * 8, 8);
		if (emu_shadow_push(t, ret))
			return -ENOMEM;
	}
	r->p += n * 8;
	return 0;
}

/* A pack's branches into the packets, the returns among them (rets)
 * out of the stack of calls, unless lost. */
static int vg_pack(struct vg *v, struct thr *t, bool lost, uint64_t t0,
		   uint64_t dt, uint64_t bits, uint64_t rets)
{
	unsigned nr = (unsigned)__builtin_popcountll(rets);
	unsigned n = vg_pack_n(bits);
	uint64_t now = v->now;
	int rc = 0;

	if (v->e.tool_rets)
		return lost ? 0 : ptenc_tnt_word(t->enc, t0, dt, bits);
	if (nr > t->depth || rets >> n)
		return vg_ret_above(&v->e);
	if (!lost)
		rc = ptenc_tnt_word_rets(t->enc, t0, dt, bits, rets, t->shadow,
					 t->depth);
	/* The truth's rows of the returns (with --truth the pack holds
	 * nothing else), each at its time on the pack's line. */
	for (unsigned k = 0, i = 0; !rc && v->e.o->truth && k < n; k++) {
		if (!(rets >> k & 1))
			continue;
		v->now = ptenc_bit_time(t0, dt, n, k);
		rc = vg_truth(v, t, IC_RET, t->shadow[t->depth - 1 - i++], 0);
	}
	v->now = now;
	t->depth -= nr;
	return rc == -EPROTO ? vg_ret_above(&v->e) : rc;
}

/*
 * The n branches a call, return or jump carries (R_PACKED) and the
 * transfer itself, on vg_record()'s way (--drop-every): lost together,
 * tracing resuming at ip, the transfer's target; or the branches go into
 * the packets (*rc).  Returns what vg_drop() does.
 */
static int vg_carried(struct vg *v, struct thr *t, unsigned n, uint64_t t0,
		      uint64_t dt, uint64_t bits, uint64_t rets, uint64_t ip,
		      int *rc)
{
	int lost = vg_drop(v, t, 1 + n, ip);

	if (lost >= 0 && n)
		*rc = vg_pack(v, t, lost, t0, dt, bits, rets);
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
	uint64_t pbits = 0, pt0 = 0, pdt = 0, prets = 0;

	if (r->bad)
		return SHORT;
	if ((type & R_PACKED) && t) {
		pbits = rd_n(r, 8);
		pt0 = rd_time(v, r);
		pdt = rd_leb(r);
		prets = rd_leb(r);
		if (r->bad)
			return SHORT;
		if (!pbits)
			return vg_no_count(e);
		pn = vg_pack_n(pbits);
		type &= ~R_PACKED;
		if (type != R_CALL && type != R_ICALL && type != R_IJMP &&
		    type != R_RET)
			return vg_unknown(e, type | R_PACKED);
		/* The transfer's time counts from its last branch. */
		v->now = pt0 + pdt;
	}
	v->exec_pending = type == R_EXEC;
	if (!v->hello && type != R_HELLO)
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream does "
			       "not begin as it should");
	if (!t && type != R_HELLO && type != R_SWITCH && type != R_MMAP &&
	    type != R_END && type != R_EXEC && type != R_STACK &&
	    type != R_STACKS)
		return mt_fail(e, -EPROTO,
			       "the Valgrind tool's stream names no thread");
	/* The records of a tool that keeps the calls itself only. */
	if (!e->tool_rets &&
	    (type == R_PSB || type == R_STACK || type == R_STACKS))
		return vg_unknown(e, type);
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
		uint64_t bits = rd_n(r, 8), t0 = rd_time(v, r);
		uint64_t dt = rd_leb(r), rets = rd_leb(r);
		unsigned n;

		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (!bits)
			return vg_no_count(e);
		n = vg_pack_n(bits);
		v->now = t0 + dt;
		branch = true;
		lost = vg_drop(v, t, n, ip);
		if (lost >= 0)
			rc = vg_pack(v, t, lost, t0, dt, bits, rets);
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
		lost = vg_carried(v, t, pn, pt0, pdt, pbits, prets, ip, &rc);
		if (type == R_ICALL && !lost && !rc)
			rc = ptenc_indirect(t->enc, v->now, ip);
		if (!lost && !e->tool_rets)
			ptenc_call(t->enc, a);
		direct = type == R_CALL;
		if (!rc && !e->tool_rets)
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
		lost = vg_carried(v, t, pn, pt0, pdt, pbits, prets, ip, &rc);
		if (type == R_RET && e->tool_rets) {
			/* Not compressed: the tool knew it could not. */
			if (!lost && !rc)
				rc = ptenc_indirect(t->enc, v->now, ip);
		} else if (type == R_RET) {
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
		/* (no return compresses across a system call: the PSB
		 * changes none) */
		if (t->mapped)
			ptenc_force_psb(t->enc);
		t->mapped = false;
		/* The stack the tool sent as it entered its system call is
		 * not where it goes on from. */
		if (e->tool_rets)
			t->depth = 0;
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
	case R_PSB:
		/* After the record before, where that one left the thread:
		 * the tool emptied its stack of calls here. */
		if (!t->started || !t->last_ip)
			return mt_fail(e, -EPROTO,
				       "the Valgrind tool's stream has a PSB "
				       "where its thread is not traced");
		ip = t->last_ip;
		ptenc_force_psb(t->enc);
		psb = true;
		break;
	case R_STACK:
		rc = vg_stack(v, r);
		break;
	case R_STACKS:
		v->stacked = true;
		break;
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
		return vg_unknown(e, type);
	}
	if (r->bad)
		return SHORT;
	if (lost < 0)
		rc = lost;
	/* (What else fails has said why.) */
	if (rc == -ENOMEM)
		return mt_fail(e, rc, "out of memory encoding trace");
	if (rc < 0)
		return rc;
	/* A branch record: its packets, unless lost, are the newest. */
	if (t && branch && !lost) {
		psb = true;
		if (!direct) {
			t->last_pkt_tsc = v->now;
			t->last_pkt_ip = ip;
		}
	}
	if (t && psb && ip && vg_psb_at(v, t, v->now, ip))
		return -ENOMEM;
	return rc;
}
