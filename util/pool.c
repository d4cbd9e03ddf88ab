/* SPDX-License-Identifier: MIT */
/*
 * Jobs worked on several threads at once and finished in the order they
 * were put.
 *
 * The writers' costly part is often one that each buffer needs on its
 * own (the compression of a batch of Perfetto packets), while what
 * follows must keep the order (the write into the file).  Workers take
 * the jobs as they come; whichever worker completes the job that is next
 * in order finishes it, and the ones after it that are done already, so
 * that no thread waits for the one before.  The caller owns the jobs;
 * the pool only holds pointers, and its depth bounds how many are out.
 */
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct mt_pool {
	int (*work)(void *ctx, unsigned worker, void *job);
	int (*finish)(void *ctx, void *job);
	void *ctx;
	pthread_t *th;
	unsigned nr_th; /* started; 0: each job runs when it is put */
	pthread_mutex_t lock;
	/* A put wakes one worker (a broadcast woke every idle one, to find
	 * the job taken: most of a conversion's context switches); a job
	 * finished wakes whoever waits for room. */
	pthread_cond_t wake, room;
	void **ring;		   /* depth of them, job k at k % depth */
	bool *worked;		   /* the same slots: work() has returned */
	int *rcs;		   /* the same slots: what work() returned */
	size_t depth;		   /* at most this many put and not finished */
	uint64_t put, taken, done; /* jobs put, given to a worker, finished */
	bool finishing;		   /* a worker is finishing jobs */
	bool quit;
	int rc;		 /* the first failed job's error */
	uint64_t cpu_ns; /* the CPU of the threads that have ended */
};

/* Finishes, in order, the jobs whose work is done: with the lock held,
 * which is let go while each one is finished. */
static void finish_ready(struct mt_pool *p)
{
	if (p->finishing)
		return;
	p->finishing = true;
	while (p->done < p->taken && p->worked[p->done % p->depth]) {
		size_t slot = p->done % p->depth;
		void *job = p->ring[slot];
		int rc = p->rc ? p->rc : p->rcs[slot];

		pthread_mutex_unlock(&p->lock);
		/* After a failure the rest are skipped, as mt_jobs does. */
		if (!rc && p->finish)
			rc = p->finish(p->ctx, job);
		pthread_mutex_lock(&p->lock);
		if (rc && !p->rc)
			p->rc = rc;
		p->worked[slot] = false;
		p->done++;
		pthread_cond_broadcast(&p->room);
	}
	p->finishing = false;
}

struct pool_worker {
	struct mt_pool *p;
	unsigned id;
};

static void *pool_main(void *arg)
{
	struct mt_pool *p = ((struct pool_worker *)arg)->p;
	unsigned id = ((struct pool_worker *)arg)->id;

	free(arg);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		size_t slot;
		int rc;

		while (p->taken == p->put && !p->quit)
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->taken == p->put)
			break;
		slot = p->taken++ % p->depth;
		rc = p->rc;
		pthread_mutex_unlock(&p->lock);
		if (!rc)
			rc = p->work(p->ctx, id, p->ring[slot]);
		pthread_mutex_lock(&p->lock);
		p->rcs[slot] = rc;
		p->worked[slot] = true;
		finish_ready(p);
	}
	/* What the thread spent, for the stage that started the pool. */
	p->cpu_ns += mt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int mt_pool_start(struct mt_pool **out, unsigned workers,
		  int (*work)(void *ctx, unsigned worker, void *job),
		  int (*finish)(void *ctx, void *job), void *ctx,
		  unsigned depth)
{
	struct mt_pool *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->work = work;
	p->finish = finish;
	p->ctx = ctx;
	p->depth = depth ? depth : 1;
	workers = workers ? workers : 1;
	p->ring = calloc(p->depth, sizeof(*p->ring));
	p->worked = calloc(p->depth, sizeof(*p->worked));
	p->rcs = calloc(p->depth, sizeof(*p->rcs));
	p->th = calloc(workers, sizeof(*p->th));
	if (!p->ring || !p->worked || !p->rcs || !p->th)
		goto no_mem;
	if (pthread_mutex_init(&p->lock, NULL))
		goto no_mem;
	if (pthread_cond_init(&p->wake, NULL)) {
		pthread_mutex_destroy(&p->lock);
		goto no_mem;
	}
	if (pthread_cond_init(&p->room, NULL)) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		goto no_mem;
	}
	/* Fewer threads than asked, or none, do the same work. */
	for (unsigned i = 0; i < workers; i++) {
		struct pool_worker *w = malloc(sizeof(*w));

		if (!w)
			break;
		*w = (struct pool_worker){p, i};
		if (pthread_create(&p->th[i], NULL, pool_main, w)) {
			free(w);
			break;
		}
		p->nr_th++;
	}
	*out = p;
	return 0;
no_mem:
	free(p->ring);
	free(p->worked);
	free(p->rcs);
	free(p->th);
	free(p);
	return -ENOMEM;
}

unsigned mt_pool_workers(const struct mt_pool *p)
{
	return p->nr_th ? p->nr_th : 1;
}

int mt_pool_put(struct mt_pool *p, void *job)
{
	int rc;

	if (!p->nr_th) {
		if (!p->rc)
			p->rc = p->work(p->ctx, 0, job);
		if (!p->rc && p->finish)
			p->rc = p->finish(p->ctx, job);
		p->put++;
		p->taken++;
		p->done++;
		return p->rc;
	}
	pthread_mutex_lock(&p->lock);
	while (p->put - p->done >= p->depth)
		pthread_cond_wait(&p->room, &p->lock);
	p->ring[p->put % p->depth] = job;
	p->put++;
	rc = p->rc;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int mt_pool_end(struct mt_pool *p)
{
	return mt_pool_end_cpu(p, NULL);
}

int mt_pool_end_cpu(struct mt_pool *p, double *cpu_s)
{
	int rc;

	if (!p)
		return 0;
	if (p->nr_th) {
		pthread_mutex_lock(&p->lock);
		p->quit = true;
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
		for (unsigned i = 0; i < p->nr_th; i++)
			pthread_join(p->th[i], NULL);
	}
	rc = p->rc;
	if (cpu_s)
		*cpu_s += (double)p->cpu_ns / 1e9;
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->room);
	pthread_mutex_destroy(&p->lock);
	free(p->ring);
	free(p->worked);
	free(p->rcs);
	free(p->th);
	free(p);
	return rc;
}

int mt_pool_each(unsigned workers,
		 int (*work)(void *ctx, unsigned worker, void *job),
		 int (*finish)(void *ctx, void *job), void *ctx, void *jobs,
		 size_t nr, size_t size)
{
	char *job = jobs;
	struct mt_pool *p;
	int rc = 0, erc;

	if (workers > nr)
		workers = (unsigned)nr;
	if (workers < 2) {
		for (size_t i = 0; !rc && i < nr; i++, job += size) {
			rc = work(ctx, 0, job);
			if (!rc && finish)
				rc = finish(ctx, job);
		}
		return rc;
	}
	if ((rc = mt_pool_start(&p, workers, work, finish, ctx, 2 * workers)))
		return rc;
	for (size_t i = 0; !rc && i < nr; i++, job += size)
		rc = mt_pool_put(p, job);
	erc = mt_pool_end(p);
	return rc ? rc : erc;
}

unsigned mt_nr_cores(unsigned jobs)
{
	long cores;

	if (jobs)
		return jobs;
	cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores > 0 ? (unsigned)cores : 1;
}
