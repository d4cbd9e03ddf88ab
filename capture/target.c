/* SPDX-License-Identifier: MIT */
/*
 * Starting a program to trace, and what /proc says of a process: the
 * same for the hardware, ptrace and Valgrind backends (see
 * target_internal.h), and where execvp() finds a program for mt-capture.
 */
#include "capture/capture.h"
#include "capture/target_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int target_fork(struct target *t, char *const argv[],
		const struct target_how *how, char *err, size_t errlen)
{
	int p[2], e[2], code;
	pid_t child;

	t->pid = -1;
	t->go = t->why = -1;
	if (pipe2(p, O_CLOEXEC))
		return mt_err(err, errlen, -errno, "pipe: %s", strerror(errno));
	if (pipe2(e, O_CLOEXEC)) {
		code = errno;
		close(p[0]);
		close(p[1]);
		return mt_err(err, errlen, -code, "pipe: %s", strerror(code));
	}
	child = fork();
	if (child < 0) {
		code = errno;
		close(p[0]);
		close(p[1]);
		close(e[0]);
		close(e[1]);
		return mt_err(err, errlen, -code, "fork: %s", strerror(code));
	}
	if (!child) {
		char c;
		ssize_t n;

		close(p[1]);
		close(e[0]);
		/* mt-capture's handlers are still ours here: a Ctrl-C to the
		 * group breaks into the read without SA_RESTART. */
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(126);
		if (how->traced && ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(126);
		if (how->env_name && setenv(how->env_name, how->env_value, 1))
			_exit(126);
		execvp(argv[0], argv);
		code = errno;
		/* Nothing more to do if the parent cannot hear it: it says
		 * the program did not start. */
		if (write(e[1], &code, sizeof(code)) != sizeof(code))
			_exit(127);
		_exit(127);
	}
	close(p[0]);
	close(e[1]);
	t->pid = child;
	t->traced = how->traced;
	t->go = p[1];
	t->why = e[0];
	return 0;
}

/* The exec's errno from the child, or 0 when it exec'd (the pipe closed
 * at the exec) or said nothing. */
static int exec_errno(struct target *t)
{
	int code = 0;
	ssize_t n;

	do
		n = read(t->why, &code, sizeof(code));
	while (n < 0 && errno == EINTR);
	return n == sizeof(code) ? code : 0;
}

int target_exec(struct target *t, const char *prog, char *err, size_t errlen)
{
	int status, code;
	pid_t r;

	if (write(t->go, "g", 1) != 1) {
		code = errno;
		target_close(t);
		return mt_err(err, errlen, -code, "starting %s: %s", prog,
			      strerror(code));
	}
	/* The pipe closes at the exec, before a traced exec's stop, or
	 * brings why it failed. */
	code = exec_errno(t);
	target_close(t);
	if (!code && !t->traced)
		return 0;
	do
		r = waitpid(t->pid, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r == t->pid && WIFSTOPPED(status) && !code)
		return 0;
	if (r == t->pid && !WIFSTOPPED(status))
		t->pid = -1; /* reaped */
	if (code)
		return mt_err(err, errlen, -code, "%s: %s", prog,
			      strerror(code));
	return mt_err(err, errlen, -ECHILD, "%s did not start", prog);
}

void target_close(struct target *t)
{
	if (t->go >= 0)
		close(t->go);
	if (t->why >= 0)
		close(t->why);
	t->go = t->why = -1;
}

int capture_exe(pid_t pid, char *exe, size_t len, char *comm, size_t clen)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, len - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	exe[n] = 0;
	if (comm) {
		const char *b = strrchr(exe, '/');

		snprintf(comm, clen, "%s", b ? b + 1 : exe);
	}
	return 0;
}

void target_comm(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "r"))) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}

int target_tasks(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!rc && (d = readdir(dir))) {
		pid_t tid = mt_proc_id(d->d_name);

		if (tid)
			rc = fn(tid, arg);
	}
	closedir(dir);
	return rc;
}

bool capture_find_program(const char *prog, char *path, size_t len)
{
	const char *dirs = getenv("PATH"), *p;
	struct stat st;

	if (strchr(prog, '/')) {
		snprintf(path, len, "%s", prog);
		return true;
	}
	if (!dirs)
		dirs = "/bin:/usr/bin";
	for (p = dirs;; p++) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);

		/* An empty entry is the current directory, as for execvp. */
		if ((size_t)snprintf(path, len, "%.*s%s%s", (int)n, p,
				     n ? "/" : "", prog) < len &&
		    !stat(path, &st) && S_ISREG(st.st_mode) &&
		    !access(path, X_OK))
			return true;
		if (!colon)
			return false;
		p = colon;
	}
}
