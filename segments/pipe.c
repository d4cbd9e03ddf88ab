/*
 * The builders on a thread of their own, fed while the decoder goes on.
 *
 * The decoder's sink fills a batch of events; full batches go through a
 * short queue to the builder thread, which hands each event to
 * seg_all_sink() in the order it came, so the model is the one the
 * decoder's own thread would have built.  Decoding and building then
 * take a core each (on a 6M-slice capture, 2.6 s and 1.2 s).
 *
 * What both threads touch of the decoding session (a missing binary's
 * note) is locked there; the builders own the model until the end.
 */
#include "segments/segments.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define PIPE_BATCH 8192 /* events a batch */
#define PIPE_DEPTH 4	/* batches queued, at most */

struct pipe_ev {
	struct dec_thread *t;
	uint64_t time, ip, aux;
	enum dec_kind kind;
};

struct seg_pipe {
	struct seg_all *all;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	/* Batches: PIPE_DEPTH + 1 of them, each in the queue, free, or
	 * being filled (cur) or built from. */
	struct pipe_ev *batch[PIPE_DEPTH + 1];
	size_t len[PIPE_DEPTH + 1];
	size_t queue[PIPE_DEPTH + 1], q_head, q_n;
	size_t free_[PIPE_DEPTH + 1], nr_free;
	size_t cur, cur_n;
	bool done; /* the decoder has finished */
	int rc;	   /* the builders' first error, 0 */
};

static void *builder_main(void *arg)
{
	struct seg_pipe *p = arg;

	for (;;) {
		size_t b;
		int rc;

		pthread_mutex_lock(&p->lock);
		while (!p->q_n && !p->done)
			pthread_cond_wait(&p->changed, &p->lock);
		if (!p->q_n) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		b = p->queue[p->q_head];
		p->q_head = (p->q_head + 1) % (PIPE_DEPTH + 1);
		p->q_n--;
		rc = p->rc;
		pthread_mutex_unlock(&p->lock);

		/* After an error the rest is drained unbuilt, so that the
		 * decoder never waits for a batch that does not come. */
		for (size_t i = 0; i < p->len[b] && !rc; i++) {
			const struct pipe_ev *e = &p->batch[b][i];

			rc = seg_all_sink(p->all, e->t, e->time, e->kind, e->ip,
					  e->aux);
		}

		pthread_mutex_lock(&p->lock);
		if (rc && !p->rc)
			p->rc = rc;
		p->free_[p->nr_free++] = b;
		pthread_cond_broadcast(&p->changed);
		pthread_mutex_unlock(&p->lock);
	}
}

static void pipe_free(struct seg_pipe *p)
{
	for (size_t i = 0; i <= PIPE_DEPTH; i++)
		free(p->batch[i]);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int seg_pipe_start(struct seg_pipe **out, struct seg_all *a)
{
	struct seg_pipe *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->all = a;
	if (pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		return -ENOMEM;
	}
	if (pthread_cond_init(&p->changed, NULL)) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i <= PIPE_DEPTH; i++) {
		p->batch[i] = malloc(PIPE_BATCH * sizeof(*p->batch[i]));
		if (!p->batch[i]) {
			pipe_free(p);
			return -ENOMEM;
		}
		if (i)
			p->free_[p->nr_free++] = i;
	}
	p->cur = 0;
	rc = pthread_create(&p->th, NULL, builder_main, p);
	if (rc) {
		pipe_free(p);
		return -rc;
	}
	*out = p;
	return 0;
}

/* The batch being filled goes to the builder; the next one to fill is a
 * free one, once there is one. */
static int submit(struct seg_pipe *p)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	p->len[p->cur] = p->cur_n;
	p->queue[(p->q_head + p->q_n) % (PIPE_DEPTH + 1)] = p->cur;
	p->q_n++;
	pthread_cond_broadcast(&p->changed);
	while (!p->nr_free)
		pthread_cond_wait(&p->changed, &p->lock);
	p->cur = p->free_[--p->nr_free];
	p->cur_n = 0;
	rc = p->rc;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int seg_pipe_sink(void *ctx, struct dec_thread *t, uint64_t time,
		  enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	struct seg_pipe *p = ctx;

	p->batch[p->cur][p->cur_n++] = (struct pipe_ev){t, time, ip, aux, kind};
	return p->cur_n == PIPE_BATCH ? submit(p) : 0;
}

int seg_pipe_end(struct seg_pipe *p)
{
	int rc;

	if (!p)
		return 0;
	if (p->cur_n)
		submit(p);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->th, NULL);
	rc = p->rc;
	pipe_free(p);
	return rc;
}
