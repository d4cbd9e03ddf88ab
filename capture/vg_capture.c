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
#include "capture/symaddr.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
};
#define VG_MAGIC 0x6d747074u

/* A record cut short by the end of what was read: read more. */
#define SHORT 1

struct vg {
	struct emu e;
	int sock;
	pid_t child;
	uint8_t *buf;
	size_t len, cap;
	uint64_t now; /* the stream's clock: the last record's time */
	bool hello, ended, hit;
	char exec[256];	    /* what the program last tried to exec, or "" */
	size_t cur;	    /* the thread the records are of, or SIZE_MAX */
	uint64_t *sys_next; /* per thread: where its system call returns */
	/* A program without a "main" symbol: main's file and offset. */
	char start_file[PATH_MAX];
	uint64_t start_off;
};

/* A cursor over one record. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_n(struct rd *r, size_t n)
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

static uint64_t rd_leb(struct rd *r)
{
	uint64_t v = 0;

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

static uint64_t rd_time(struct vg *v, struct rd *r)
{
	uint64_t dt = rd_leb(r);

	return r->bad ? v->now : v->now + dt;
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
	return e->nr_thr - 1;
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
	return truth_transfer(&v->e, t, to, next, v->now);
}

/* --snapshot-size: the ring keeps the newest bytes.  Trimmed now and
 * then, not at every packet: twice the size is kept at most. */
static void vg_trim(struct vg *v, struct thr *t)
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
	    trow_add(t, v->now, "[untraced]",
		     t->tdepth ? t->tstack[t->tdepth - 1].row : UINT32_MAX, 0))
		return -ENOMEM;
	t->untraced_row = (uint32_t)t->nr_rows - 1;
	return 0;
}

/* Tracing resumes at ip: after a system call, or in a signal handler. */
static int vg_enable(struct vg *v, struct thr *t, uint64_t ip)
{
	struct emu *e = &v->e;
	size_t k = (size_t)(t - e->thr);

	if (t->step.cls == IC_SYSCALL && v->sys_next[k]) {
		if (e->o->truth &&
		    truth_transfer(e, t, ip, v->sys_next[k], v->now))
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
			if (tpush(e, t, v->now, ip, 0, TR_SIGNAL))
				return -ENOMEM;
			t->tstack[t->tdepth - 1].async = true;
		}
	}
	t->step.cls = IC_PLAIN;
	return ptenc_pge(t->enc, v->now, ip) ? -ENOMEM : 0;
}

/* One record at r.  Returns 0, 1 when the capture ends with it, SHORT
 * (r->bad) when it is not all there yet, or a negative code. */
static int vg_record(struct vg *v, struct rd *r)
{
	struct emu *e = &v->e;
	struct thr *t = v->cur < e->nr_thr ? &e->thr[v->cur] : NULL;
	int type = (int)rd_n(r, 1);
	uint64_t ip = 0, a, b;
	int rc = 0;
	bool psb = false;

	if (r->bad)
		return SHORT;
	if (!v->hello && type != R_HELLO)
		return emu_fail(e, -EPROTO,
				"the Valgrind tool's stream does "
				"not begin as it should");
	if (!t && type != R_HELLO && type != R_SWITCH && type != R_MMAP &&
	    type != R_END && type != R_EXEC)
		return emu_fail(e, -EPROTO,
				"the Valgrind tool's stream names no thread");
	switch (type) {
	case R_HELLO:
		if (rd_n(r, 4) != VG_MAGIC && !r->bad)
			return emu_fail(e, -EPROTO,
					"the Valgrind tool is not mtpt");
		e->pid = (pid_t)rd_n(r, 4);
		v->now = e->start_time = rd_n(r, 8);
		v->hello = true;
		break;
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
		t->started = true;
		t->t0 = v->now;
		if (ptenc_start(t->enc, v->now, ip, false) ||
		    (e->o->truth && tpush(e, t, v->now, ip, 0, TR_CLIP_START)))
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
			return emu_fail(e, -EPROTO,
					"the Valgrind tool's stream has a run "
					"of %u branches (at most 64)",
					n);
		rc = ptenc_conds(t->enc, t0, dt, n, bits);
		v->now = t0 + dt;
		e->st->branches += n;
		psb = true;
		break;
	}
	case R_COND:
		v->now = rd_time(v, r);
		a = rd_n(r, 1);
		b = rd_n(r, 8);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		rc = ptenc_cond(t->enc, v->now, a != 0);
		if (!rc && a)
			rc = vg_truth(v, t, IC_COND, b, ip);
		if (a)
			ip = b;
		e->st->branches++;
		psb = true;
		break;
	case R_JMP:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		rc = vg_truth(v, t, IC_JMP, ip, 0);
		psb = true;
		break;
	case R_CALL:
	case R_ICALL:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (type == R_ICALL)
			rc = ptenc_indirect(t->enc, v->now, ip);
		ptenc_call(t->enc, a);
		if (!rc)
			rc = emu_shadow_push(t, a);
		if (!rc)
			rc = vg_truth(v, t, type == R_CALL ? IC_CALL : IC_ICALL,
				      ip, a);
		e->st->branches++;
		psb = true;
		break;
	case R_IJMP:
	case R_RET:
		v->now = rd_time(v, r);
		ip = rd_n(r, 8);
		if (r->bad)
			break;
		if (type == R_RET) {
			/* Pop to the frame it returns into (longjmp-like
			 * returns skip several). */
			for (size_t i = t->depth; i-- > 0;)
				if (t->shadow[i] == ip) {
					t->depth = i;
					break;
				}
			rc = ptenc_ret(t->enc, v->now, ip);
		} else {
			rc = ptenc_indirect(t->enc, v->now, ip);
		}
		if (!rc)
			rc = vg_truth(v, t, type == R_RET ? IC_RET : IC_IJMP,
				      ip, 0);
		e->st->branches++;
		psb = true;
		break;
	case R_SYSCALL:
		v->now = rd_time(v, r);
		a = rd_n(r, 8);
		if (r->bad)
			break;
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
		    trow_add(t, t->step_tsc, "[syscall]",
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
			return emu_fail(e, -EPROTO,
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
		rc = ptenc_ptwrite(t->enc, v->now, a, ip);
		break;
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
		e->st->insns = rd_n(r, 8);
		if (r->bad)
			break;
		v->ended = true;
		break;
	default:
		return emu_fail(e, -EPROTO,
				"the Valgrind tool's stream has a record of "
				"unknown type %#x",
				type);
	}
	if (r->bad)
		return SHORT;
	if (rc < 0)
		return emu_fail(e, rc, "out of memory encoding trace");
	if (t && psb && ip) {
		t->last_ip = ip;
		if (ptenc_maybe_psb(t->enc, v->now, ip) < 0)
			return emu_fail(e, -ENOMEM,
					"out of memory encoding trace");
		vg_trim(v, t);
	}
	return rc;
}

/* Every whole record read so far; what is cut short waits for more. */
static int vg_parse(struct vg *v)
{
	size_t off = 0;
	int rc = 0;

	while (off < v->len && !v->hit && !v->ended) {
		struct rd r = {v->buf + off, v->buf + v->len, false};

		rc = vg_record(v, &r);
		if (rc == SHORT) {
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
 * or lib/valgrind beside the bin/ folder mt-capture is in. */
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
	}
	snprintf(tool, sizeof(tool), "%s/mtpt-amd64-linux", dir);
	if (access(tool, X_OK))
		return mt_err(err, errlen, -ENOENT,
			      "%s: the Valgrind tool is not built (make builds "
			      "it where valgrind is installed: apt-get install "
			      "valgrind)",
			      tool);
	return 0;
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

	if (strchr(prog, '/')) {
		snprintf(path, sizeof(path), "%s", prog);
	} else {
		const char *dirs = getenv("PATH"), *p;

		path[0] = 0;
		for (p = dirs ? dirs : "/bin:/usr/bin"; p;) {
			const char *colon = strchr(p, ':');
			int k = colon ? (int)(colon - p) : (int)strlen(p);

			snprintf(path, sizeof(path), "%.*s/%s", k, p, prog);
			if (!access(path, X_OK))
				break;
			path[0] = 0;
			p = colon ? colon + 1 : NULL;
		}
		if (!path[0])
			return 0; /* the launch says it is not there */
	}
	if (access(path, X_OK))
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
	char dir[PATH_MAX], fdopt[32], start[600], trig[600], ptw[64],
		sfile[PATH_MAX + 32], soff[48];
	int sv[2], argc = 0, rc;
	char **args;

	rc = tool_dir(dir, sizeof(dir), v->e.err, v->e.errlen);
	if (rc)
		return rc;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return emu_fail(&v->e, -errno, "socketpair: %s",
				strerror(errno));
	while (argv[argc])
		argc++;
	args = calloc((size_t)argc + 20, sizeof(*args));
	if (!args) {
		close(sv[0]);
		close(sv[1]);
		return emu_fail(&v->e, -ENOMEM, "out of memory");
	}
	snprintf(fdopt, sizeof(fdopt), "--mt-fd=%d", sv[1]);
	snprintf(start, sizeof(start), "--mt-start=%s",
		 o->start_at ? o->start_at : "main");
	snprintf(trig, sizeof(trig), "--mt-trigger=%s",
		 o->cap.trigger ? o->cap.trigger : "mt_snapshot_point");
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
		args[k++] = fdopt;
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
		args[k++] = ptw;
		args[k++] = o->truth ? "--mt-truth=yes" : "--mt-truth=no";
		args[k++] = "--";
		for (int i = 0; i < argc; i++)
			args[k++] = argv[i];
		args[k] = NULL;
	}
	v->child = fork();
	if (v->child < 0) {
		rc = emu_fail(&v->e, -errno, "fork: %s", strerror(errno));
		free(args);
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	if (v->child == 0) {
		/* The tool's end of the socket survives exec. */
		fcntl(sv[1], F_SETFD, 0);
		setenv("VALGRIND_LIB", dir, 1);
		execvp(args[0], args);
		fprintf(stderr, "mt-capture: valgrind: %s%s\n", strerror(errno),
			errno == ENOENT ? " (apt-get install valgrind)" : "");
		_exit(127);
	}
	free(args);
	close(sv[1]);
	v->sock = sv[0];
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read and encode until the stream ends, the capture ends at a hit, or we
 * are told to stop. */
static int vg_loop(struct vg *v)
{
	while (!v->ended && !v->hit && !*v->e.o->cap.stop) {
		struct pollfd p = {v->sock, POLLIN, 0};
		ssize_t n;
		int rc;

		if (poll(&p, 1, 200) < 0) {
			if (errno == EINTR)
				continue;
			return emu_fail(&v->e, -errno, "poll: %s",
					strerror(errno));
		}
		if (!p.revents)
			continue;
		if (mt_grow((void **)&v->buf, &v->cap, v->len + (1 << 20), 1))
			return emu_fail(&v->e, -ENOMEM, "out of memory");
		n = read(v->sock, v->buf + v->len, v->cap - v->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return emu_fail(&v->e, -errno,
					"reading the Valgrind tool: %s",
					strerror(errno));
		}
		if (n == 0)
			break;
		v->len += (size_t)n;
		rc = vg_parse(v);
		if (rc)
			return rc;
	}
	/* Told to stop: what the tool sent before is in the capture. */
	while (*v->e.o->cap.stop && !v->ended && !v->hit) {
		ssize_t n;

		if (mt_grow((void **)&v->buf, &v->cap, v->len + (1 << 20), 1))
			return emu_fail(&v->e, -ENOMEM, "out of memory");
		n = recv(v->sock, v->buf + v->len, v->cap - v->len,
			 MSG_DONTWAIT);
		if (n <= 0)
			break;
		v->len += (size_t)n;
		if (vg_parse(v))
			return -ENOMEM;
	}
	return 0;
}

int vg_run(char *const argv[], const struct emu_opts *o, struct emu_stats *st,
	   char *err, size_t errlen)
{
	struct vg v = {.e = {.o = o, .st = st, .err = err, .errlen = errlen},
		       .sock = -1,
		       .child = -1,
		       .cur = SIZE_MAX};
	uint64_t t_start = mono_ns();
	int rc = 0, status;

	memset(st, 0, sizeof(*st));
	if (o->cap.pid)
		return emu_fail(&v.e, -EINVAL,
				"--emulate=valgrind starts the program: -p "
				"needs --emulate=ptrace");
	if (o->drop_every)
		return emu_fail(&v.e, -EINVAL,
				"--drop-every needs --emulate=ptrace");
	if (o->cap.trigger &&
	    (line_trigger_spec(o->cap.trigger, NULL, 0, &(unsigned){0}) ||
	     !strncmp(o->cap.trigger, "addr:", 5)))
		return emu_fail(&v.e, -EINVAL,
				"--emulate=valgrind takes a function as "
				"--trigger, not '%s' (--emulate=ptrace "
				"takes it)",
				o->cap.trigger);
	if (!o->start_at || o->start_at[0])
		rc = check_start(&v, argv[0],
				 o->start_at ? o->start_at : "main", err,
				 errlen);
	if (!rc)
		rc = vg_launch(&v, argv);
	if (!rc)
		rc = vg_loop(&v);
	st->seconds = (double)(mono_ns() - t_start) / 1e9;
	if (!rc && !v.ended && !v.hit && !*o->cap.stop && v.exec[0])
		snprintf(st->warning, sizeof(st->warning),
			 "%s runs %s by exec: the trace ends there "
			 "(--emulate=valgrind does not follow exec)",
			 argv[0], v.exec);
	else if (!rc && !v.ended && !v.hit && !*o->cap.stop && v.hello)
		snprintf(st->warning, sizeof(st->warning),
			 "the Valgrind tool's stream ended early (Valgrind "
			 "failed?)");
	/* The program runs on untraced after a hit or Ctrl-C: the tool
	 * stops when it finds the socket closed. */
	if (v.sock >= 0)
		close(v.sock);
	if (v.child > 0 && !*o->cap.stop && (v.ended || rc || !v.hello)) {
		if (waitpid(v.child, &status, 0) == v.child) {
			if (WIFSIGNALED(status))
				st->killed_by = WTERMSIG(status);
			else if (!v.e.nr_thr && !rc && WIFEXITED(status) &&
				 WEXITSTATUS(status))
				rc = emu_fail(&v.e, -ECHILD,
					      "%s: Valgrind could not run it "
					      "(exit status %d)",
					      argv[0], WEXITSTATUS(status));
		}
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
		rc = emu_write_all(&v.e, v.hit ? v.e.hit_time : v.now, rc);
	} else if (!rc && v.hello && o->start_at && o->start_at[0] &&
		   vg_in_maps(&v, o->start_at, err, errlen)) {
		size_t len = strlen(err);

		rc = -ENOENT;
		snprintf(err + len, errlen - len,
			 "; --start-at '' traces from exec");
	} else if (!rc && v.hello) {
		rc = emu_fail(&v.e, -ENOENT,
			      "%s never reached %s: nothing was traced",
			      argv[0],
			      !o->start_at     ? "main"
			      : o->start_at[0] ? o->start_at
					       : "its first instruction");
	}
	emu_free(&v.e);
	free(v.sys_next);
	free(v.buf);
	return rc;
}
