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
 * the trigger's hits, in a ring of shared memory of each process's own
 * (a socket says when it connects and when it is gone); the record layout is in
 * docs/capture.md.  Here each thread's records go through ptenc, as the
 * ptrace emulator's steps do, and the capture is written by the same
 * code (emu_capture.c, emu_truth.c): the two backends' captures differ
 * only in their clock.  The records are read in vg_hot.c and
 * vg_record.c; here, the tool's processes, their sockets and rings.
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
	size_t n;

	snprintf(v->lname, sizeof(v->lname), "mt-capture.%d.%llx",
		 (int)getpid(),
		 (unsigned long long)mt_clock_ns(CLOCK_MONOTONIC));
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
	char dir[PATH_MAX], fdopt[96], start[600], trig[600], ptw[64], psb[32],
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
		/* Returns compressed by the tool (a record fewer each),
		 * unless the encoder compresses none, or --drop-every
		 * loses transfers, which it counts by the record. */
		args[k++] = o->noretcomp || o->drop_every ? "--mt-retcomp=no"
							  : "--mt-retcomp=yes";
		/* No record for a direct call: the tool keeps the calls it
		 * compresses the returns of, and places the PSBs. */
		args[k++] = v->e.tool_rets ? "--mt-calls=no" : "--mt-calls=yes";
		/* At most 20 bytes of packets a record: 2 PSBs at least in
		 * the smallest snapshot. */
		snprintf(psb, sizeof(psb), "--mt-psb=%llu",
			 !o->cap.snapshot_size		  ? 512ull
			 : o->cap.snapshot_size / 32 < 16 ? 16ull
			 : o->cap.snapshot_size / 32 > 512
				 ? 512ull
				 : (unsigned long long)o->cap.snapshot_size /
					   32);
		args[k++] = psb;
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

/* Each process's ring: MT_TEST_VG_RING bytes when set (a small one, for
 * the tests, wraps often), else VG_RING_SIZE. */
static size_t vg_ring_size(void)
{
	const char *env = getenv("MT_TEST_VG_RING");
	uint64_t n;

	if (env && env[0] && !mt_parse_u64(env, 0, SIZE_MAX, &n))
		return (size_t)n;
	return VG_RING_SIZE;
}

/* Stream k into v's fields, and back. */
static void strm_in(struct vg *v, size_t k)
{
	const struct vgs *s = &v->strm[k];

	v->sock = s->sock;
	v->ring = s->ring;
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
	v->stacked = s->stacked;
	v->exec_at = s->exec_at;
}

static void strm_out(struct vg *v, size_t k)
{
	v->strm[k] = (struct vgs){.sock = v->sock,
				  .ring = v->ring,
				  .buf = v->buf,
				  .len = v->len,
				  .cap = v->cap,
				  .now = v->now,
				  .cur = v->cur,
				  .pid = v->spid,
				  .hello = v->hello,
				  .ended = v->ended,
				  .exec_pending = v->exec_pending,
				  .later = v->later,
				  .need_comm = v->need_comm,
				  .stacked = v->stacked,
				  .exec_at = v->exec_at};
	if (v->now > v->newest)
		v->newest = v->now;
	v->sock = -1;
	v->ring = NULL;
	v->buf = NULL;
	v->len = v->cap = 0;
}

int vg_answer(struct vg *v, char say)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec io = {.iov_base = &say, .iov_len = 1};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
	int fd = -1, rc;

	if (say == 'S' || say == 'T') {
		struct cmsghdr *c;

		rc = vg_ring_new(v->ring_size, &v->ring, &fd);
		if (rc)
			return mt_fail(
				&v->e, rc,
				"a shared ring for the Valgrind tool: %s",
				strerror(-rc));
		memset(&u, 0, sizeof(u));
		m.msg_control = u.b;
		m.msg_controllen = sizeof(u.b);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	}
	rc = sendmsg(v->sock, &m, MSG_NOSIGNAL) == 1 ? 0 : 1;
	if (fd >= 0)
		close(fd);
	if (rc) {
		vg_ring_free(v->ring);
		v->ring = NULL;
	}
	return rc;
}

/* A byte on the socket of the stream read: its tool, waiting for room
 * in its ring, goes on (one there already does as well). */
static void strm_wake(struct vg *v)
{
	char b = 0;

	(void)!send(v->sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* What is new in the ring of the stream read, encoded: 1 when there was
 * something, 0 when not, or a negative code. */
static int ring_read(struct vg *v)
{
	uint8_t *sbuf = v->buf;
	size_t slen = v->len;
	const uint8_t *p;
	size_t len;
	int rc = vg_ring_unread(v->ring, &p, &len);

	if (rc < 0)
		return mt_fail(&v->e, rc,
			       "the Valgrind tool of process %d: its ring's "
			       "positions are not as they can be",
			       (int)v->spid);
	if (!rc)
		return 0;
	/* Read where it is, whole: the ring is mapped twice in a row. */
	v->buf = (uint8_t *)p;
	v->len = len;
	v->used = 0;
	rc = vg_parse(v);
	v->buf = sbuf;
	v->len = slen;
	if (vg_ring_consume(v->ring, v->used))
		strm_wake(v);
	return rc ? rc : 1;
}

/*
 * What stream k has now, encoded: 1 when it had something, 0 when not
 * (or it closed), or a negative code.  ready: its socket has something
 * (the hello; once there is a ring, a wake or its end).
 */
static int strm_read(struct vg *v, size_t k, bool ready)
{
	ssize_t n = 0;
	bool eof = false;
	int rc = 0;

	strm_in(v, k);
	if (!v->ring && !ready) {
		/* nothing */
	} else if (v->ring) {
		char b[256];

		if (ready && v->sock >= 0) {
			n = recv(v->sock, b, sizeof(b), MSG_DONTWAIT);
			eof = n == 0 ||
			      (n < 0 && errno != EINTR && errno != EAGAIN);
		}
		/* After its end: all it published is there. */
		rc = ring_read(v);
		n = 0;
	} else if (mt_grow((void **)&v->buf, &v->cap, v->len + 4096, 1)) {
		rc = mt_fail(&v->e, -ENOMEM, "out of memory");
	} else {
		n = recv(v->sock, v->buf + v->len, v->cap - v->len,
			 MSG_DONTWAIT);
		eof = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
		if (n > 0) {
			v->len += (size_t)n;
			v->used = 0;
			rc = vg_parse(v);
			memmove(v->buf, v->buf + v->used, v->len - v->used);
			v->len -= v->used;
		}
	}
	if (eof) {
		/* Its process is gone (or exec'd). */
		close(v->sock);
		v->sock = -1;
		vg_ring_free(v->ring);
		v->ring = NULL;
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

/* Asleep until a ring has half its size new, or its tool says to wake:
 * the poll's time, 0 when a ring has something new already. */
static int strm_sleep(struct vg *v)
{
	int timeout = 200;

	for (size_t k = 0; k < v->nr_strm; k++)
		if (v->strm[k].ring && v->strm[k].sock >= 0 &&
		    !vg_ring_sleep(v->strm[k].ring, v->ring_size / 2))
			timeout = 0;
	return timeout;
}

/*
 * Told to stop, with --mt-calls=no: each tool is asked for its threads'
 * stacks, which only it knows, and its stream is read up to them (they
 * come after its next branch), for half a second at most.  A tool whose
 * program sits in a system call does not answer; its threads' stacks
 * came as each entered its call.
 */
static int strm_stacks(struct vg *v)
{
	uint64_t until = mt_clock_ns(CLOCK_MONOTONIC) + 500000000ull;
	int rc = 0;

	for (size_t k = 0; k < v->nr_strm; k++)
		if (v->strm[k].ring && v->strm[k].sock >= 0)
			vg_ring_ask_stacks(v->strm[k].ring);
	while (rc >= 0 && !v->hit && mt_clock_ns(CLOCK_MONOTONIC) < until) {
		bool waiting = false, news = false;

		for (size_t k = 0; k < v->nr_strm && rc >= 0; k++) {
			const struct vgs *s = &v->strm[k];

			if (!s->ring || s->sock < 0 || s->stacked || s->ended)
				continue;
			waiting = true;
			rc = strm_read(v, k, false);
			news |= rc > 0;
		}
		if (!waiting)
			break;
		if (!news)
			poll(NULL, 0, 1);
		if (rc > 0)
			rc = 0;
	}
	return rc < 0 ? rc : 0;
}

/* Read and encode until every process's stream has ended, the capture
 * ends at a hit, or we are told to stop. */
static int vg_loop(struct vg *v)
{
	struct pollfd *p = NULL;
	size_t cap = 0;
	int rc = 0;

	while (!rc && !v->hit && !*v->e.o->cap.stop) {
		size_t np = 1, nr = v->nr_strm;
		int n;

		if (mt_grow((void **)&p, &cap, nr + 1, sizeof(*p))) {
			rc = mt_fail(&v->e, -ENOMEM, "out of memory");
			break;
		}
		p[0] = (struct pollfd){v->lsock, POLLIN, 0};
		for (size_t k = 0; k < nr; k++)
			if (v->strm[k].sock >= 0)
				p[np++] = (struct pollfd){v->strm[k].sock,
							  POLLIN, 0};
		if (np == 1 && !strm_awaited(v))
			break;
		n = poll(p, np, strm_sleep(v));
		for (size_t k = 0; k < nr; k++)
			if (v->strm[k].ring)
				vg_ring_awake(v->strm[k].ring);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = mt_fail(&v->e, -errno, "poll: %s",
				     strerror(errno));
			break;
		}
		/* Every ring is looked at, its socket read when it has
		 * something. */
		for (size_t i = 1, k = 0; k < nr && rc >= 0 && !v->hit; k++) {
			bool ready = false;

			if (i < np && v->strm[k].sock == p[i].fd)
				ready = p[i++].revents != 0;
			if (ready || v->strm[k].ring)
				rc = strm_read(v, k, ready);
		}
		if (rc > 0)
			rc = 0;
		if (!rc && p[0].revents)
			rc = strm_accept(v);
	}
	free(p);
	if (!rc && !v->hit && *v->e.o->cap.stop && v->e.tool_rets)
		rc = strm_stacks(v);
	/* Told to stop: what the tools published before is in the
	 * capture, and they publish no more. */
	for (size_t k = 0; k < v->nr_strm && *v->e.o->cap.stop; k++)
		if (v->strm[k].ring)
			vg_ring_close(v->strm[k].ring);
	for (size_t k = 0; k < v->nr_strm && *v->e.o->cap.stop; k++)
		while (!v->hit && (rc = strm_read(v, k, true)) > 0)
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
	uint64_t t_start = mt_clock_ns(CLOCK_MONOTONIC);
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (o->cap.pid)
		return mt_fail(&v.e, -EINVAL,
			       "--emulate=valgrind starts the program: -p "
			       "needs --emulate=ptrace");
	v.e.rng = o->drop_seed ? o->drop_seed : 1;
	/* --truth wants every call, and --drop-every loses transfers the
	 * tool cannot know of, with the calls they carry. */
	v.e.tool_rets = !o->truth && !o->drop_every;
	v.ring_size = vg_ring_size();
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
	st->seconds = mt_since_s(CLOCK_MONOTONIC, t_start);
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
	 * stops when it finds its ring closed, or the socket. */
	for (size_t k = 0; k < v.nr_strm; k++) {
		vg_ring_free(v.strm[k].ring);
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
