/* SPDX-License-Identifier: MIT */
/*
 * The target as every backend starts and reads it (capture/target.c): a
 * launch held before its exec, stopped at the exec when traced, a
 * program that cannot be run said in one line and reaped; the
 * executable, command name and threads of a process; PATH as execvp
 * searches it.
 */
#include "capture/capture.h"
#include "capture/target_internal.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_traced_stops_at_exec(struct check_state *st)
{
	char *argv[] = {"true", NULL};
	const struct target_how how = {.traced = true};
	struct target t;
	char err[256] = "", exe[4096], comm[16], pcomm[32];
	int status = 0;

	CHECK(st, !target_fork(&t, argv, &how, err, sizeof(err)));
	CHECKF(st, !target_exec(&t, "true", err, sizeof(err)), "%s", err);
	CHECK(st, t.pid > 0 && t.go < 0 && t.why < 0);
	if (t.pid <= 0)
		return;
	/* Stopped at the exec: /proc says which program it is now. */
	CHECK(st, !capture_exe(t.pid, exe, sizeof(exe), comm, sizeof(comm)));
	CHECKF(st, !strcmp(comm, "true"), "comm '%s'", comm);
	target_comm(t.pid, pcomm, sizeof(pcomm));
	CHECKF(st, !strcmp(pcomm, "true"), "comm '%s'", pcomm);
	kill(t.pid, SIGKILL);
	CHECK(st, waitpid(t.pid, &status, 0) == t.pid);
	CHECK(st, WIFSIGNALED(status));
}

static void test_missing_program(struct check_state *st)
{
	char *argv[] = {"/nonexistent/mt-no-such-program", NULL};
	char err[256] = "";

	for (int traced = 0; traced < 2; traced++) {
		const struct target_how how = {.traced = traced};
		struct target t;
		int rc;

		CHECK(st, !target_fork(&t, argv, &how, err, sizeof(err)));
		rc = target_exec(&t, argv[0], err, sizeof(err));
		CHECKF(st, rc == -ENOENT, "rc %d", rc);
		CHECKF(st,
		       !strcmp(err, "/nonexistent/mt-no-such-program: No such "
				    "file or directory"),
		       "'%s'", err);
		/* Reaped already: nothing left to wait for. */
		CHECK(st, t.pid == -1);
	}
}

static void test_untraced_env(struct check_state *st)
{
	char *argv[] = {"sh", "-c", "test \"$MT_TARGET_TEST\" = yes", NULL};
	const struct target_how how = {.env_name = "MT_TARGET_TEST",
				       .env_value = "yes"};
	struct target t;
	char err[256] = "";
	int status = 0;

	CHECK(st, !target_fork(&t, argv, &how, err, sizeof(err)));
	CHECKF(st, !target_exec(&t, "sh", err, sizeof(err)), "%s", err);
	CHECK(st, t.pid > 0 && waitpid(t.pid, &status, 0) == t.pid);
	CHECK(st, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Only the child's environment. */
	CHECK(st, !getenv("MT_TARGET_TEST"));
}

static int count_task(pid_t tid, void *arg)
{
	int *n = arg;

	n[0]++;
	n[1] |= tid == getpid();
	return 0;
}

static int stop_at_first(pid_t tid, void *arg)
{
	(void)tid;
	(void)arg;
	return 7;
}

static void test_tasks_exe_comm(struct check_state *st)
{
	int n[2] = {0, 0};
	char exe[4096], self[4096], comm[16], pcomm[32];
	ssize_t len;

	CHECK(st, !target_tasks(getpid(), count_task, n));
	CHECK(st, n[0] >= 1 && n[1]);
	CHECK(st, target_tasks(getpid(), stop_at_first, NULL) == 7);
	CHECK(st, target_tasks(-1, count_task, n) < 0);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(st, len > 0);
	self[len > 0 ? len : 0] = 0;
	CHECK(st, !capture_exe(getpid(), exe, sizeof(exe), comm, sizeof(comm)));
	CHECK(st, !strcmp(exe, self));
	CHECKF(st, !strcmp(comm, "test_target"), "'%s'", comm);
	target_comm(-1, pcomm, sizeof(pcomm));
	CHECK(st, !pcomm[0]);
	CHECK(st, capture_exe(-1, exe, sizeof(exe), NULL, 0) < 0);
}

static void test_find_program(struct check_state *st)
{
	char path[4096];

	CHECK(st, capture_find_program("sh", path, sizeof(path)));
	CHECK(st, !access(path, X_OK) && strchr(path, '/'));
	CHECK(st,
	      !capture_find_program("mt-no-such-program", path, sizeof(path)));
	/* A name with a slash is as it is, as for execvp. */
	CHECK(st, capture_find_program("./x", path, sizeof(path)));
	CHECK(st, !strcmp(path, "./x"));
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_traced_stops_at_exec);
	RUN(&st, test_missing_program);
	RUN(&st, test_untraced_env);
	RUN(&st, test_tasks_exe_comm);
	RUN(&st, test_find_program);
	return CHECK_DONE(&st);
}
