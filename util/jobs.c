/* SPDX-License-Identifier: MIT */
/*
 * Jobs run in order on a thread of their own.
 *
 * A writer fills one buffer while the thread puts the last one out: the
 * write's copy into the page cache (on the database of a 24M-slice
 * capture, a third of the writer's time) or the compression of a batch
 * happens beside the encoding instead of after it.  The caller owns the
 * jobs and their buffers; the queue only holds pointers, and its depth
 * bounds how many buffers are out at once.
 */
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct mt_jobs {
	int (*run)(void *ctx, void *job);
	void *ctx;
	pthread_t th;
	bool threaded; /* else each job runs when it is put */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	void **ring;	    /* depth of them */
	size_t depth, head; /* head: the next job to run, in ring */
	uint64_t put, done; /* jobs queued, jobs run (or skipped) */
	bool quit;
	int rc; /* the first failed job's error */
};

static void *jobs_main(void *arg)
{
	struct mt_jobs *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		void *job;
		int rc;

		while (q->done == q->put && !q->quit)
			pthread_cond_wait(&q->changed, &q->lock);
		if (q->done == q->put)
			break;
		job = q->ring[q->head];
		rc = q->rc;
		pthread_mutex_unlock(&q->lock);
		/* After a failure the rest are skipped: a file with a hole
		 * in it is no use, and the first error is the one to tell. */
		if (!rc)
			rc = q->run(q->ctx, job);
		pthread_mutex_lock(&q->lock);
		if (rc && !q->rc)
			q->rc = rc;
		q->head = (q->head + 1) % q->depth;
		q->done++;
		pthread_cond_broadcast(&q->changed);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int mt_jobs_start(struct mt_jobs **out, int (*run)(void *ctx, void *job),
		  void *ctx, unsigned depth)
{
	struct mt_jobs *q = calloc(1, sizeof(*q));

	*out = NULL;
	if (!q)
		return -ENOMEM;
	q->run = run;
	q->ctx = ctx;
	q->depth = depth ? depth : 1;
	q->ring = calloc(q->depth, sizeof(*q->ring));
	if (!q->ring)
		goto no_ring;
	if (pthread_mutex_init(&q->lock, NULL))
		goto no_lock;
	if (pthread_cond_init(&q->changed, NULL))
		goto no_cond;
	/* Without a thread the work is the same, only not side by side. */
	q->threaded = !pthread_create(&q->th, NULL, jobs_main, q);
	*out = q;
	return 0;
no_cond:
	pthread_mutex_destroy(&q->lock);
no_lock:
	free(q->ring);
no_ring:
	free(q);
	return -ENOMEM;
}

int mt_jobs_put(struct mt_jobs *q, void *job)
{
	int rc;

	if (!q->threaded) {
		if (!q->rc)
			q->rc = q->run(q->ctx, job);
		q->put++;
		q->done++;
		return q->rc;
	}
	pthread_mutex_lock(&q->lock);
	while (q->put - q->done == q->depth)
		pthread_cond_wait(&q->changed, &q->lock);
	q->ring[(q->head + (q->put - q->done)) % q->depth] = job;
	q->put++;
	rc = q->rc;
	pthread_cond_broadcast(&q->changed);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int mt_jobs_end(struct mt_jobs *q)
{
	int rc;

	if (!q)
		return 0;
	if (q->threaded) {
		pthread_mutex_lock(&q->lock);
		q->quit = true;
		pthread_cond_broadcast(&q->changed);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->th, NULL);
	}
	rc = q->rc;
	pthread_cond_destroy(&q->changed);
	pthread_mutex_destroy(&q->lock);
	free(q->ring);
	free(q);
	return rc;
}
