/* SPDX-License-Identifier: MIT */
/*
 * Pages of growing arrays faulted in ahead of their writers, on a thread
 * of its own.
 *
 * A page an array grows into costs the thread that first writes it a
 * fault, and the kernel's zeroing of it: on a capture of one thread,
 * half of the joins of its call tree's pieces, which run on one thread
 * at a time.  The pager asks the kernel for those pages (one call a
 * step, MADV_POPULATE_WRITE) on another core, a little ahead of where
 * the writer is.  The array only moves while its writer holds its lock
 * (mt_ahead_lock(), mt_ahead_grown()), and the pager holds that lock
 * for each step, so it never asks for pages the array no longer has.
 * Populating pages changes nothing in them: a writer that gets there
 * first loses only the time.
 */
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The most a step populates: what a writer growing its array may wait
 * for (64 pages: a fraction of a millisecond). */
#define STEP_BYTES ((size_t)256 << 10)

struct mt_ahead {
	struct mt_ahead *next; /* the pager's, in the order watched */
	pthread_mutex_t lock;  /* held while the array moves, and for a step */
	uint8_t *base;	       /* the array, as last grown */
	/* Its size, the bytes from base populated, and up to where to
	 * populate: read without the lock (atomics), written under it but
	 * for want. */
	size_t bytes, done, want;
};

struct mt_pager {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t th;
	bool started, quit;
	bool off; /* the kernel has no such advice: nothing more to do */
	size_t page;
	struct mt_ahead *list, *cursor;
};

/* An array with pages to populate, the one after the last served first
 * (under the pager's lock). */
static struct mt_ahead *next_wanted(struct mt_pager *pg)
{
	struct mt_ahead *a =
		pg->cursor && pg->cursor->next ? pg->cursor->next : pg->list;

	for (struct mt_ahead *start = a; a;) {
		size_t want = __atomic_load_n(&a->want, __ATOMIC_RELAXED);
		size_t bytes = __atomic_load_n(&a->bytes, __ATOMIC_RELAXED);

		if ((want < bytes ? want : bytes) >
		    __atomic_load_n(&a->done, __ATOMIC_RELAXED))
			return pg->cursor = a;
		a = a->next ? a->next : pg->list;
		if (a == start)
			break;
	}
	return NULL;
}

/* One step of a's pages, under its lock: whole pages only, from the one
 * done ends in (populated, it costs nothing). */
static void populate_step(struct mt_pager *pg, struct mt_ahead *a)
{
	size_t want = __atomic_load_n(&a->want, __ATOMIC_RELAXED);
	size_t upto = want < a->bytes ? want : a->bytes, done;
	uintptr_t from, to;

	if (a->done >= upto)
		return;
	from = ((uintptr_t)a->base + a->done) & ~(uintptr_t)(pg->page - 1);
	to = ((uintptr_t)a->base + upto) & ~(uintptr_t)(pg->page - 1);
	if (to > from + STEP_BYTES)
		to = from + STEP_BYTES;
	if (to > from &&
	    madvise((void *)from, to - from, MADV_POPULATE_WRITE) &&
	    errno == EINVAL)
		pg->off = true;
	/* (the last page, partly the array's, is left to the writer) */
	done = to > (uintptr_t)a->base + a->done ? to - (uintptr_t)a->base
						 : upto;
	__atomic_store_n(&a->done, done, __ATOMIC_RELAXED);
}

static void *pager_main(void *arg)
{
	struct mt_pager *pg = arg;

	pthread_mutex_lock(&pg->lock);
	while (!pg->quit) {
		struct mt_ahead *a = pg->off ? NULL : next_wanted(pg);

		if (!a) {
			pthread_cond_wait(&pg->wake, &pg->lock);
			continue;
		}
		pthread_mutex_unlock(&pg->lock);
		pthread_mutex_lock(&a->lock);
		populate_step(pg, a);
		pthread_mutex_unlock(&a->lock);
		pthread_mutex_lock(&pg->lock);
	}
	pthread_mutex_unlock(&pg->lock);
	return NULL;
}

int mt_pager_start(struct mt_pager **out)
{
	struct mt_pager *pg = calloc(1, sizeof(*pg));

	*out = NULL;
	if (!pg)
		return -ENOMEM;
	pg->page = mt_page_size();
	if (pthread_mutex_init(&pg->lock, NULL)) {
		free(pg);
		return -ENOMEM;
	}
	if (pthread_cond_init(&pg->wake, NULL)) {
		pthread_mutex_destroy(&pg->lock);
		free(pg);
		return -ENOMEM;
	}
	/* Without a thread the writers fault their pages in themselves. */
	pg->started = !pthread_create(&pg->th, NULL, pager_main, pg);
	*out = pg;
	return 0;
}

struct mt_ahead *mt_pager_watch(struct mt_pager *pg)
{
	struct mt_ahead *a;

	if (!pg || !pg->started || !(a = calloc(1, sizeof(*a))))
		return NULL;
	if (pthread_mutex_init(&a->lock, NULL)) {
		free(a);
		return NULL;
	}
	pthread_mutex_lock(&pg->lock);
	a->next = pg->list;
	pg->list = a;
	pthread_mutex_unlock(&pg->lock);
	return a;
}

void mt_ahead_lock(struct mt_ahead *a)
{
	if (a)
		pthread_mutex_lock(&a->lock);
}

void mt_ahead_grown(struct mt_ahead *a, void *base, size_t bytes)
{
	if (!a)
		return;
	/* A move by mremap() took the pages populated along; a copy left
	 * them behind, which costs the writer only the faults. */
	a->base = base;
	__atomic_store_n(&a->bytes, bytes, __ATOMIC_RELAXED);
	if (a->done > bytes)
		__atomic_store_n(&a->done, bytes, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->lock);
}

void mt_ahead_want(struct mt_pager *pg, struct mt_ahead *a, size_t upto)
{
	if (!pg || !a || upto <= __atomic_load_n(&a->want, __ATOMIC_RELAXED))
		return;
	/* Stored before the pager's lock is taken: a pager looking for
	 * work sees it, one waiting is woken. */
	__atomic_store_n(&a->want, upto, __ATOMIC_RELAXED);
	pthread_mutex_lock(&pg->lock);
	pthread_cond_signal(&pg->wake);
	pthread_mutex_unlock(&pg->lock);
}

size_t mt_ahead_release(struct mt_pager *pg, struct mt_ahead *a, size_t used)
{
	size_t n = 0;

	if (!pg || !a)
		return 0;
	__atomic_store_n(&a->want, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&a->lock);
	if (a->base && a->done > used) {
		n = mt_forget(a->base + used, a->done - used);
		__atomic_store_n(&a->done, used, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

void mt_pager_end(struct mt_pager *pg)
{
	if (!pg)
		return;
	if (pg->started) {
		pthread_mutex_lock(&pg->lock);
		pg->quit = true;
		pthread_cond_signal(&pg->wake);
		pthread_mutex_unlock(&pg->lock);
		pthread_join(pg->th, NULL);
	}
	while (pg->list) {
		struct mt_ahead *a = pg->list;

		pg->list = a->next;
		pthread_mutex_destroy(&a->lock);
		free(a);
	}
	pthread_cond_destroy(&pg->wake);
	pthread_mutex_destroy(&pg->lock);
	free(pg);
}
