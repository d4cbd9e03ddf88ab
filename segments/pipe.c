/* SPDX-License-Identifier: MIT */
/*
 * The builders on a thread of their own, fed while the decoder goes on.
 *
 * The decoder's sink fills a batch of events; full batches go to the
 * builders' thread (util's jobs, in order), which hands each event to
 * seg_all_sink() in the order it came, so the model is the one the
 * decoder's own thread would have built.  Decoding and building then
 * take a core each (on a 6M-slice capture, 2.6 s and 1.2 s).  After a
 * builder's error the batches still queued are skipped, and the sink
 * passes the error back to the decoder at its next batch.
 *
 * What both threads touch of the decoding session (a missing binary's
 * note) is locked there; the builders own the model until the end.
 */
#include "segments/segments.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

#define PIPE_BATCH 8192 /* events a batch */
/* batches: the builder's queue holds all but the one being filled */
#define PIPE_NR 5

struct pipe_ev {
	struct dec_thread *t;
	uint64_t time, ip, aux;
	enum dec_kind kind;
};

struct pipe_batch {
	struct pipe_ev *ev;
	size_t n;
};

struct seg_pipe {
	struct seg_all *all;
	struct mt_jobs *builder;
	/* Batch k is batch[k % PIPE_NR]; nr_put of them went to the
	 * builder, the next one fills. */
	struct pipe_batch batch[PIPE_NR];
	uint64_t nr_put;
	struct pipe_batch *cur;
};

static int build_batch(void *ctx, void *job)
{
	struct seg_pipe *p = ctx;
	const struct pipe_batch *b = job;

	for (size_t i = 0; i < b->n; i++) {
		const struct pipe_ev *e = &b->ev[i];
		int rc = seg_all_sink(p->all, e->t, e->time, e->kind, e->ip,
				      e->aux);

		if (rc)
			return rc;
	}
	return 0;
}

static void pipe_free(struct seg_pipe *p)
{
	for (size_t i = 0; i < PIPE_NR; i++)
		free(p->batch[i].ev);
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
	for (size_t i = 0; i < PIPE_NR; i++) {
		p->batch[i].ev = malloc(PIPE_BATCH * sizeof(*p->batch[i].ev));
		if (!p->batch[i].ev) {
			pipe_free(p);
			return -ENOMEM;
		}
	}
	p->cur = &p->batch[0];
	rc = mt_jobs_start(&p->builder, build_batch, p, PIPE_NR - 1);
	if (rc) {
		pipe_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* The batch being filled goes to the builder; the next one to fill is
 * the one PIPE_NR before, which has been built from by then. */
static int submit(struct seg_pipe *p)
{
	int rc = mt_jobs_put(p->builder, p->cur);

	p->nr_put++;
	p->cur = &p->batch[p->nr_put % PIPE_NR];
	p->cur->n = 0;
	return rc;
}

int seg_pipe_sink(void *ctx, struct dec_thread *t, uint64_t time,
		  enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	struct seg_pipe *p = ctx;
	struct pipe_batch *b = p->cur;

	b->ev[b->n++] = (struct pipe_ev){t, time, ip, aux, kind};
	return b->n == PIPE_BATCH ? submit(p) : 0;
}

int seg_pipe_end(struct seg_pipe *p)
{
	int rc;

	if (!p)
		return 0;
	if (p->cur->n)
		mt_jobs_put(p->builder, p->cur);
	/* Every batch is built (or skipped after an error) before the
	 * model is the caller's again; the first error is the one. */
	rc = mt_jobs_end(p->builder);
	pipe_free(p);
	return rc;
}
