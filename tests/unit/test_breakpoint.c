/* SPDX-License-Identifier: MIT */
/*
 * The hardware backend's trigger, for real: a hardware execute breakpoint
 * (and a uprobe) on mt_snapshot_point (include/magic_trace.h) of a child
 * process, per thread and per CPU, must deliver each hit with the right
 * thread and the stub's two arguments; a thread created after the
 * trigger was set is covered too.  Also: where triggers and address filters
 * land (capture/symaddr.c), and the refusals with their messages.
 *
 * Hardware breakpoints need no Intel PT; when this kernel refuses the
 * event (perf_event_paranoid), or accepts it and never fires it (a
 * virtual machine that keeps the debug registers), the tests that need
 * it say SKIP and why.
 */
#include "capture/breakpoint_internal.h"
#include "capture/symaddr_internal.h"
#include "capture/unwind_internal.h"
#include "include/magic_trace.h"
#include "tests/unit/check.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct child {
	pid_t pid;
	int go1[2], go2[2], tid[2];
};

static void *second_thread(void *arg)
{
	struct child *c = arg;
	pid_t me = gettid();
	char x;

	if (write(c->tid[1], &me, sizeof(me)) != sizeof(me) ||
	    read(c->go2[0], &x, 1) != 1)
		return NULL;
	mt_snapshot_point(7, 77);
	return NULL;
}

/* The child: waits for go1, hits the stub as itself, then starts a
 * thread that tells its tid, waits for go2 and hits the stub. */
static void child_main(struct child *c)
{
	pthread_t t;
	char x;

	if (read(c->go1[0], &x, 1) != 1)
		_exit(1);
	mt_snapshot_point(42, 4242);
	if (pthread_create(&t, NULL, second_thread, c))
		_exit(2);
	pthread_join(t, NULL);
	_exit(0);
}

static int child_start(struct child *c)
{
	if (pipe(c->go1) || pipe(c->go2) || pipe(c->tid))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid)
		child_main(c);
	return 0;
}

static void child_end(struct child *c)
{
	for (int i = 0; i < 2; i++) {
		close(c->go1[i]);
		close(c->go2[i]);
		close(c->tid[i]);
	}
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
}

static void self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
}

/* Why the kernel may refuse, for the SKIP line. */
static const char *refusal(int rc, char *buf, size_t len)
{
	char p[16] = "?";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");

	if (f) {
		if (!fgets(p, sizeof(p), f))
			p[0] = 0;
		fclose(f);
		p[strcspn(p, "\n")] = 0;
	}
	snprintf(buf, len,
		 "the breakpoint event was refused: %s; perf_event_paranoid "
		 "%s, uid %d",
		 strerror(-rc), p, (int)getuid());
	return buf;
}

static void run_hits(struct check_state *st, enum bp_kind kind, bool per_cpu)
{
	static char why[256];
	struct child c = {0};
	char exe[PATH_MAX], err[256];
	struct bp_set *b = NULL;
	struct bp_hit hits[8];
	uint64_t addr = 0;
	size_t n = 0;
	pid_t tid = 0;
	int status = -1, rc;

	/* Accepted is not enough: some machines never fire them. */
	rc = kind == BP_HARDWARE ? bp_probe(err, sizeof(err)) : 0;
	if (rc) {
		snprintf(why, sizeof(why), "%s", err);
		SKIP(st, why);
		return;
	}
	self_exe(exe, sizeof(exe));
	CHECK(st, !child_start(&c));
	if (c.pid <= 0)
		goto out;
	rc = symaddr_resolve(c.pid, exe, "mt_snapshot_point", &addr, err,
			     sizeof(err));
	CHECKF(st, !rc, "%s", err);
	CHECK(st, addr == (uint64_t)(uintptr_t)mt_snapshot_point);
	rc = bp_open(&b, kind, c.pid, addr, &c.pid, 1, per_cpu, err,
		     sizeof(err));
	if (rc == -EACCES || rc == -EPERM || rc == -ENOENT ||
	    rc == -EOPNOTSUPP || rc == -ENOSPC || rc == -ENODEV) {
		SKIP(st, refusal(rc, why, sizeof(why)));
		goto out;
	}
	CHECKF(st, !rc, "%s", err);
	if (rc)
		goto out;
	CHECK(st, write(c.go1[1], "g", 1) == 1);
	CHECK(st, read(c.tid[0], &tid, sizeof(tid)) == sizeof(tid));
	/* Per thread, the new thread must be added before it hits; per
	 * CPU it inherited the breakpoint when it was created (uprobes
	 * cannot be inherited: they are per thread). */
	if (!bp_inherits(b))
		CHECKF(st, !bp_add_thread(b, tid, err, sizeof(err)), "%s", err);
	CHECK(st, bp_inherits(b) == (per_cpu && kind == BP_HARDWARE));
	CHECK(st, write(c.go2[1], "g", 1) == 1);
	CHECK(st, waitpid(c.pid, &status, 0) == c.pid);
	c.pid = 0;
	CHECKF(st, WIFEXITED(status) && !WEXITSTATUS(status), "status %x",
	       status);
	n = bp_read(b, hits, 8);
	CHECKF(st, n == 2, "%zu hits", n);
	if (n == 2) {
		struct bp_hit *m = hits[0].di == 42 ? &hits[0] : &hits[1];
		struct bp_hit *t = hits[0].di == 42 ? &hits[1] : &hits[0];

		CHECKF(st, m->tid == m->pid && m->di == 42 && m->si == 4242,
		       "tid %d pid %d di %llu si %llu", m->tid, m->pid,
		       (unsigned long long)m->di, (unsigned long long)m->si);
		CHECKF(st,
		       t->tid == tid && t->pid == m->pid && t->di == 7 &&
			       t->si == 77,
		       "tid %d (want %d) di %llu si %llu", t->tid, tid,
		       (unsigned long long)t->di, (unsigned long long)t->si);
		CHECK(st, m->ip == addr && t->ip == addr);
		CHECK(st, m->time && t->time >= m->time);
		/* The stack at the hit, unwound from the sample: the child
		 * is a fork, gone by now, whose modules lie where ours do. */
		CHECK(st, m->stack_len > 0 && m->regs[16] == addr);
		{
			static char maps[65536];
			uint64_t ips[64];
			size_t nf = 0, got = 0;
			FILE *f = fopen("/proc/self/maps", "r");

			if (f) {
				got = fread(maps, 1, sizeof(maps) - 1, f);
				fclose(f);
			}
			maps[got] = 0;
			rc = unwind_sample(getpid(), m->tid, maps, m->regs,
					   m->stack, m->stack_len, ips, 64, &nf,
					   err, sizeof(err));
			CHECKF(st, !rc && nf >= 3 && ips[0] == addr,
			       "%s: %zu frames", rc ? err : "unwound", nf);
		}
	}
	for (size_t i = 0; i < n; i++)
		bp_hit_release(&hits[i]);
	/* Read once, gone. */
	CHECK(st, bp_read(b, hits, 8) == 0);
out:
	bp_free(b);
	child_end(&c);
}

static void test_bp_per_thread(struct check_state *st)
{
	run_hits(st, BP_HARDWARE, false);
}

static void test_bp_per_cpu(struct check_state *st)
{
	run_hits(st, BP_HARDWARE, true);
}

/* The same samples, rings and threads through a uprobe, which fires
 * where the debug registers may not (asked per CPU, it is per thread:
 * an inherited uprobe makes clone() fail). */
static void test_uprobe_per_thread(struct check_state *st)
{
	run_hits(st, BP_UPROBE, false);
}

static void test_uprobe_per_cpu(struct check_state *st)
{
	run_hits(st, BP_UPROBE, true);
}

static void test_resolve_refusals(struct check_state *st)
{
	char exe[PATH_MAX], err[512];
	uint64_t addr;

	self_exe(exe, sizeof(exe));
	CHECK(st, symaddr_resolve(getpid(), exe, "addr:0x1234", &addr, err,
				  sizeof(err)) == 0 &&
			  addr == 0x1234);
	CHECK(st, symaddr_resolve(getpid(), exe, "addr:zz", &addr, err,
				  sizeof(err)) == -EINVAL);
	CHECKF(st, !strcmp(err, "bad address in 'addr:zz'"), "%s", err);
	CHECK(st, symaddr_resolve(getpid(), exe, "mt_snapshot", &addr, err,
				  sizeof(err)) == -ENOENT);
	CHECKF(st,
	       strstr(err, "no symbol 'mt_snapshot' (did you mean ") &&
		       strstr(err, "mt_snapshot_point"),
	       "%s", err);
	CHECK(st, symaddr_resolve(getpid(), "/bin/true", "main", &addr, err,
				  sizeof(err)) == -ENOENT);
	CHECKF(st, !strcmp(err, "/bin/true: not mapped in the target"), "%s",
	       err);
	CHECK(st, symaddr_object(getpid(), exe, "mt_mark_start_ns") ==
			  (uint64_t)(uintptr_t)&mt_mark_start_ns);
	/* Not the executable's: a library's it maps (Capstone's). */
	CHECKF(st,
	       symaddr_resolve(getpid(), exe, "cs_open", &addr, err,
			       sizeof(err)) == 0 &&
		       addr == (uint64_t)(uintptr_t)&cs_open,
	       "%s", err);
}

static void test_filters(struct check_state *st)
{
	char exe[PATH_MAX], out[512], err[512], want[PATH_MAX + 64];
	unsigned n = 9;
	int rc;

	self_exe(exe, sizeof(exe));
	snprintf(want, sizeof(want), "mt_snapshot_point@%s", exe);
	rc = symaddr_filters(want, out, sizeof(out), &n, err, sizeof(err));
	CHECKF(st, !rc && n == 1, "%s", err);
	CHECKF(st,
	       !strncmp(out, "filter 0x", 9) && strstr(out, "/0x") &&
		       strstr(out, exe),
	       "%s", out);
	/* Two ranges, one by addresses. */
	snprintf(want, sizeof(want), "main-main@%s,0x1000-0x1010@%s", exe, exe);
	rc = symaddr_filters(want, out, sizeof(out), &n, err, sizeof(err));
	CHECKF(st, !rc && n == 2 && strchr(out, ','), "%s / %s", err, out);
	CHECK(st, symaddr_filters("main", out, sizeof(out), &n, err,
				  sizeof(err)) == -EINVAL);
	CHECKF(st, !strcmp(err, "--filter: 'main' is not START-STOP@FILE"),
	       "%s", err);
	CHECK(st, symaddr_filters("main@/nonexistent/x", out, sizeof(out), &n,
				  err, sizeof(err)) < 0);
	CHECKF(st,
	       !strcmp(err,
		       "--filter: /nonexistent/x: No such file or directory"),
	       "%s", err);
	snprintf(want, sizeof(want), "nosuchfn@%s", exe);
	CHECK(st, symaddr_filters(want, out, sizeof(out), &n, err,
				  sizeof(err)) == -ENOENT);
	CHECKF(st, strstr(err, "no symbol 'nosuchfn'"), "%s", err);
	snprintf(want, sizeof(want), "0x1010-0x1000@%s", exe);
	CHECK(st, symaddr_filters(want, out, sizeof(out), &n, err,
				  sizeof(err)) == -EINVAL);
	CHECKF(st, strstr(err, "is an empty range"), "%s", err);
	/* The trigger as a TraceStop range, found through the maps. */
	CHECK(st, !symaddr_stop_filter(getpid(),
				       (uint64_t)(uintptr_t)mt_snapshot_point,
				       out, sizeof(out), err, sizeof(err)));
	CHECKF(st,
	       !strncmp(out, "stop 0x", 7) && strstr(out, "/1@") &&
		       strstr(out, exe),
	       "%s", out);
	CHECK(st, symaddr_stop_filter(getpid(), 8, out, sizeof(out), err,
				      sizeof(err)) == -ENOENT);
	snprintf(want, sizeof(want),
		 "--stop-at-trigger: 0x8 is in no file mapped by %d",
		 (int)getpid());
	CHECKF(st, !strcmp(err, want), "%s", err);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_bp_per_thread);
	RUN(&st, test_bp_per_cpu);
	RUN(&st, test_uprobe_per_thread);
	RUN(&st, test_uprobe_per_cpu);
	RUN(&st, test_resolve_refusals);
	RUN(&st, test_filters);
	return CHECK_DONE(&st);
}
