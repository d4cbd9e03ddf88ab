/* SPDX-License-Identifier: MIT */
/*
 * The threads' sequences encoded side by side, each thread on a pool
 * thread of its own, and put into the file in thread order, so that the
 * file is the one a single thread writes.
 *
 * A sequence owns all its incremental state (interning, clock 64, the
 * default track), so a thread's packets depend on nothing before them
 * but the uuids of the level tracks earlier threads made: those are
 * counted again where needed (pf_thread_levels()), which is rare, as
 * only a thread deeper than max_depth makes one.
 *
 * Each encoder fills pieces of about PT_PIECE bytes, cut at packets, and
 * hands them over; the calling thread takes the pieces of thread 0,
 * then those of thread 1, and so on, and copies their packets into the
 * batches exactly where the single thread would have cut them (after
 * the packet that takes the batch past flush_at), so the compressed
 * batches are the same too.  An encoder more than PT_AHEAD pieces ahead
 * of the calling thread waits: memory stays flat however large the
 * threads, at the price of one copy of the packets.
 */
#include "writers/pf_internal.h"

#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A piece ends past 60 KiB: its buffer stays at 64 KiB, packets being
 * small. */
#define PT_PIECE (60u << 10)
#define PT_AHEAD 3

struct pf_piece {
	struct pb_buf pk;
	struct pf_piece *next;
};

/* One thread's sequence, and what its encoder said of it. */
struct pf_tjob {
	size_t thread;
	struct pf_piece *head, *tail; /* handed over, not yet taken */
	size_t nr;
	bool done;
	int rc;
	char *err; /* its line, when rc (NULL: out of memory for it) */
	uint64_t slices;
	uint32_t tracks;
	/* The level tracks it makes, once known (by it or by a later
	 * thread that needed its uuids first). */
	size_t levels;
	bool levels_known;
};

struct pf_par {
	struct pf *w;
	struct pf *enc; /* one a pool thread */
	char *errs;	/* their lines, PT_ERRLEN each */
	struct pf_tjob *jobs;
	struct pf_piece *spare;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	bool stop;
};

#define PT_ERRLEN 1024

/*
 * The uuid of encoder e's first level track: after those of the threads
 * before its own, whose count is taken from them when they are done and
 * counted here when not.
 */
int pf_par_first_level(struct pf *e)
{
	struct pf_par *par = e->par;
	const struct mt_trace *t = e->t;
	uint64_t uuid = 1 + t->nr_procs + t->nr_threads;

	for (size_t i = 0; i < e->job->thread; i++) {
		struct pf_tjob *j = &par->jobs[i];
		size_t n;
		bool known;

		pthread_mutex_lock(&par->lock);
		known = j->levels_known;
		n = j->levels;
		pthread_mutex_unlock(&par->lock);
		/* Counted without the lock, as it may be long: whoever
		 * counts it too finds the same. */
		if (!known) {
			n = pf_thread_levels(e, &t->threads[i]);
			pthread_mutex_lock(&par->lock);
			if (!j->levels_known) {
				j->levels = n;
				j->levels_known = true;
			}
			pthread_mutex_unlock(&par->lock);
		}
		uuid += n;
	}
	e->next_uuid = uuid;
	return 0;
}

/*
 * Encoder e's packets so far to the calling thread: waits while it is
 * PT_AHEAD pieces ahead, unless they are its last.
 */
static int pt_hand_over(struct pf *e, bool last)
{
	struct pf_par *par = e->par;
	struct pf_tjob *j = e->job;
	struct pf_piece *pc;

	pthread_mutex_lock(&par->lock);
	while (!last && j->nr >= PT_AHEAD && !par->stop)
		pthread_cond_wait(&par->changed, &par->lock);
	if (par->stop) {
		pthread_mutex_unlock(&par->lock);
		return pf_fail(e, -ECANCELED, "stopped");
	}
	if (e->pk.len) {
		pc = par->spare;
		if (pc)
			par->spare = pc->next;
		else if (!(pc = calloc(1, sizeof(*pc)))) {
			pthread_mutex_unlock(&par->lock);
			return pf_fail(e, -ENOMEM, "out of memory");
		}
		/* The piece takes the packets; the encoder goes on in the
		 * spare's buffer. */
		{
			struct pb_buf full = e->pk;

			e->pk = pc->pk;
			pc->pk = full;
			pb_reset(&e->pk);
		}
		pc->next = NULL;
		if (j->tail)
			j->tail->next = pc;
		else
			j->head = pc;
		j->tail = pc;
		j->nr++;
	}
	pthread_cond_broadcast(&par->changed);
	pthread_mutex_unlock(&par->lock);
	return 0;
}

int pf_par_flush(struct pf *e)
{
	return pt_hand_over(e, false);
}

/* A thread's sequence on pool thread worker; what fails stays in the
 * job, for the calling thread to find in order. */
static int pt_work(void *ctx, unsigned worker, void *job)
{
	struct pf_par *par = ctx;
	struct pf_tjob *j = job;
	struct pf *e = &par->enc[worker];
	const struct mt_trace *t = e->t;
	size_t i = j->thread;
	bool stop;
	int rc;

	pthread_mutex_lock(&par->lock);
	stop = par->stop;
	pthread_mutex_unlock(&par->lock);
	e->job = j;
	e->slices = 0;
	e->tracks = 0;
	e->nr_lvl = 0;
	e->code = 0;
	pb_reset(&e->pk);
	e->pk.oom = 0;
	rc = stop ? -ECANCELED
		  : pf_thread(e, &t->threads[i], 1 + t->nr_procs + i,
			      (uint32_t)(2 + i));
	if (!rc)
		rc = pt_hand_over(e, true);
	pthread_mutex_lock(&par->lock);
	if (!rc) {
		size_t made = t->threads[i].nr_slices && e->nr_lvl
				      ? e->nr_lvl - 1
				      : 0;

		/* A later thread counted them first: the two must agree,
		 * or its uuids are wrong. */
		if (j->levels_known && j->levels != made) {
			rc = pf_fail(e, -EIO,
				     "internal error: thread %zu made %zu "
				     "level tracks, %zu counted",
				     i, made, j->levels);
		} else {
			j->levels = made;
			j->levels_known = true;
			j->slices = e->slices;
			j->tracks = e->tracks;
		}
	}
	if (rc) {
		j->rc = rc;
		j->err = strdup(e->err);
	}
	/* Only now, with what it made told. */
	j->done = true;
	pthread_cond_broadcast(&par->changed);
	pthread_mutex_unlock(&par->lock);
	return 0;
}

static int pt_none(void *ctx, void *job)
{
	(void)ctx;
	(void)job;
	return 0;
}

/* The length of the packet at p, its key and length included: n bytes
 * are there.  0 if it is not one of ours. */
static size_t pt_packet_len(const uint8_t *p, size_t n)
{
	uint64_t len = 0;
	size_t i = 1;

	if (!n || p[0] != (F_TRACE_PACKET << 3 | PB_LEN))
		return 0;
	for (unsigned shift = 0; i < n && shift < 64; shift += 7) {
		uint8_t b = p[i++];

		len |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return len <= n - i ? i + (size_t)len : 0;
	}
	return 0;
}

/*
 * Packets p[0..n) into the batches, which end where a single thread
 * would have ended them: after the packet that takes one to flush_at.
 */
static int pt_append(struct pf *w, const uint8_t *p, size_t n)
{
	while (n) {
		size_t take = n;
		uint8_t *to;

		if (w->pk.len + n >= w->flush_at) {
			size_t need = w->flush_at - w->pk.len;

			take = 0;
			while (take < need) {
				size_t l = pt_packet_len(p + take, n - take);

				if (!l)
					return pf_fail(w, -EIO,
						       "internal error: a "
						       "piece cut in a packet");
				take += l;
			}
		}
		to = pb_room(&w->pk, take);
		if (!to)
			return pf_fail(w, -ENOMEM, "out of memory");
		memcpy(to, p, take);
		w->pk.len += take;
		p += take;
		n -= take;
		if (w->pk.len >= w->flush_at) {
			int rc = pf_flush(w);

			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Thread j's pieces into the batches as they come, until its end. */
static int pt_take(struct pf_par *par, struct pf_tjob *j)
{
	struct pf *w = par->w;
	int rc = 0;

	pthread_mutex_lock(&par->lock);
	for (;;) {
		struct pf_piece *list, *last = NULL;

		while (!j->head && !j->done)
			pthread_cond_wait(&par->changed, &par->lock);
		if (!j->head)
			break;
		list = j->head;
		j->head = j->tail = NULL;
		j->nr = 0;
		pthread_cond_broadcast(&par->changed);
		pthread_mutex_unlock(&par->lock);
		for (struct pf_piece *pc = list; pc; pc = pc->next) {
			if (!rc)
				rc = pt_append(w, pc->pk.p, pc->pk.len);
			pb_reset(&pc->pk);
			last = pc;
		}
		pthread_mutex_lock(&par->lock);
		last->next = par->spare;
		par->spare = list;
		if (rc) {
			pthread_mutex_unlock(&par->lock);
			return rc;
		}
	}
	if (j->rc) {
		rc = j->rc;
		if (j->err)
			snprintf(w->err, w->errlen, "%s", j->err);
		else
			pf_fail(w, rc, "out of memory");
		w->code = rc;
	} else {
		w->slices += j->slices;
		w->tracks += j->tracks;
		w->next_uuid += j->levels;
	}
	pthread_mutex_unlock(&par->lock);
	return rc;
}

static void pt_free_pieces(struct pf_piece *pc)
{
	while (pc) {
		struct pf_piece *next = pc->next;

		pb_free(&pc->pk);
		free(pc);
		pc = next;
	}
}

/* Encoder i's own state, what pf_thread() uses of struct pf. */
static int pt_enc_init(struct pf_par *par, unsigned i)
{
	const struct pf *w = par->w;
	struct pf *e = &par->enc[i];
	size_t nstr = w->t->strs.nr ? w->t->strs.nr : 1;

	e->t = w->t;
	e->path = w->path;
	e->err = par->errs + (size_t)i * PT_ERRLEN;
	e->errlen = PT_ERRLEN;
	e->max_depth = w->max_depth;
	e->flag_mask = w->flag_mask;
	e->flush_at = PT_PIECE;
	e->fd = -1;
	e->par = par;
	pb_init(&e->pk);
	/* calloc'd: only the pages of the strings a thread uses are ever
	 * touched. */
	e->names.iid = calloc(nstr, sizeof(uint32_t));
	e->names.gen = calloc(nstr, sizeof(uint32_t));
	e->strs.iid = calloc(nstr, sizeof(uint32_t));
	e->strs.gen = calloc(nstr, sizeof(uint32_t));
	return e->names.iid && e->names.gen && e->strs.iid && e->strs.gen
		       ? 0
		       : -ENOMEM;
}

static void pt_enc_free(struct pf *e)
{
	pb_free(&e->pk);
	free(e->names.iid);
	free(e->names.gen);
	free(e->strs.iid);
	free(e->strs.gen);
	free(e->stack);
	free(e->lvl);
}

int pf_threads_par(struct pf *w, unsigned workers)
{
	const struct mt_trace *t = w->t;
	size_t nth = t->nr_threads, next = 0;
	struct pf_par par = {.w = w};
	struct mt_pool *pool = NULL;
	bool locks = false;
	int rc = -ENOMEM;

	if (workers > nth)
		workers = (unsigned)nth;
	par.enc = calloc(workers, sizeof(*par.enc));
	par.errs = calloc(workers, PT_ERRLEN);
	par.jobs = calloc(nth, sizeof(*par.jobs));
	if (!par.enc || !par.errs || !par.jobs)
		goto out;
	for (unsigned i = 0; i < workers; i++)
		if (pt_enc_init(&par, i))
			goto out;
	for (size_t i = 0; i < nth; i++)
		par.jobs[i].thread = i;
	if (pthread_mutex_init(&par.lock, NULL))
		goto out;
	if (pthread_cond_init(&par.changed, NULL)) {
		pthread_mutex_destroy(&par.lock);
		goto out;
	}
	locks = true;
	/* Jobs are taken in order, so the thread the calling one waits
	 * for always has an encoder. */
	rc = mt_pool_start(&pool, workers, pt_work, pt_none, &par, workers + 2);
	if (rc)
		goto out;
	/* On the calling thread the first encoder would wait for it. */
	if (mt_pool_workers(pool) < 2) {
		rc = 1;
		goto out;
	}
	w->next_uuid = 1 + t->nr_procs + nth;
	for (size_t i = 0; i < nth && !rc; i++) {
		while (next < nth && next <= i + workers)
			mt_pool_put(pool, &par.jobs[next++]);
		rc = pt_take(&par, &par.jobs[i]);
	}
	pthread_mutex_lock(&par.lock);
	par.stop = true;
	pthread_cond_broadcast(&par.changed);
	pthread_mutex_unlock(&par.lock);
out:
	mt_pool_end_cpu(pool, &w->cpu_s);
	if (rc == -ENOMEM && !w->code)
		pf_fail(w, rc, "out of memory");
	if (locks) {
		pthread_cond_destroy(&par.changed);
		pthread_mutex_destroy(&par.lock);
	}
	for (size_t i = 0; par.jobs && i < nth; i++) {
		pt_free_pieces(par.jobs[i].head);
		free(par.jobs[i].err);
	}
	pt_free_pieces(par.spare);
	for (unsigned i = 0; par.enc && i < workers; i++)
		pt_enc_free(&par.enc[i]);
	free(par.enc);
	free(par.errs);
	free(par.jobs);
	return rc;
}
