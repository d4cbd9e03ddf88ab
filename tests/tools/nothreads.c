/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into a program: pthread_create() starts the first
 * MT_NOTHREADS_AFTER threads (default 0) and fails with EAGAIN after
 * that, as it does under a limit on threads or processes (ulimit -u, a
 * container's pids.max).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
			 void *);

static atomic_long started;

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
		   void *arg)
{
	const char *e = getenv("MT_NOTHREADS_AFTER");
	long after = e ? atol(e) : 0;
	create_fn real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");

	if (!real || atomic_fetch_add(&started, 1) >= after)
		return EAGAIN;
	return real(t, a, fn, arg);
}
