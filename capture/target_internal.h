/* SPDX-License-Identifier: MIT */
/*
 * The target, one way for every backend: a program started held before
 * its exec (so that events can be opened on it first), the executable
 * and command name of a process, its threads.  Inside capture/ only.
 */
#ifndef MT_TARGET_INTERNAL_H
#define MT_TARGET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct target {
	pid_t pid; /* -1 once reaped by a failed start */
	int go;	   /* a byte here lets it exec */
	int why;   /* the errno of an exec that failed */
	bool traced;
};

/* How target_fork() starts the program. */
struct target_how {
	bool traced; /* under PTRACE_TRACEME: stopped at its exec */
	/* One variable set in its environment only, or NULL. */
	const char *env_name, *env_value;
};

/* Fork argv, held before its exec until target_exec().  0 or a negative
 * errno value with the line in err. */
int target_fork(struct target *t, char *const argv[],
		const struct target_how *how, char *err, size_t errlen);
/* Let it exec.  Traced, wait until it stops at the exec (resumed after a
 * signal to mt-capture breaks into the wait); untraced, until the exec
 * is done.  A program that cannot be run: "PROG: why", and it is reaped. */
int target_exec(struct target *t, const char *prog, char *err, size_t errlen);
/* The pipes, where still open (the process is not touched). */
void target_close(struct target *t);

/* /proc/PID/comm into comm ("" where it cannot be read). */
void target_comm(pid_t pid, char *comm, size_t len);
/* fn for each thread of pid in /proc/PID/task, until one returns non-zero
 * (that value is returned); -errno when the list cannot be read. */
int target_tasks(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg);

#endif
