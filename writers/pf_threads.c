/* SPDX-License-Identifier: MIT */
/*
 * The threads' sequences encoded side by side on pool threads and put
 * into the file in order, so that the file is the one a single thread
 * writes.
 *
 * A thread's slices are encoded in pieces of PF_PIECE_SLICES
 * (pf_thread_piece()), each starting by clearing its sequence's
 * incremental state (interning, clock 64, the default track), so a
 * piece's packets depend on nothing before them but what
 * pf_thread_scan() finds of the pieces before without writing: the open
 * slices, the time last put down, the level tracks made.  A job is a
 * whole thread, or with PT_PIECE_JOBS jobs or more a single piece: then
 * each job scans its slices first, from what the job before found, and
 * passes the result on to the next before it encodes, so that the scans
 * (a few ns a slice) follow each other while the encodings overlap.
 * Jobs are taken in the order they were put, so the one a job waits for
 * is under way.
 *
 * Every piece's packets begin a batch and end one (pf_thread_piece()),
 * so an encoder cuts its piece's batches where a single thread would
 * (after the packet that takes one to flush_at, and at the piece's end)
 * and hands each over whole; the calling thread takes the batches of job
 * 0, then those of job 1, and so on, and puts them to the compressors
 * as they are, so the compressed batches are the same too, and no packet
 * is copied on the way.  An encoder past its first piece and more than
 * PT_AHEAD batches ahead of the calling thread waits: memory stays flat
 * however large the threads.
 */
#include "writers/pf_internal.h"

#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PT_AHEAD 3

/*
 * A job of one piece costs a scan of its slices and the hand-overs, which
 * only pays when the encoding on one thread is what the rest waits for.
 * A batch takes 1.3 to 2 times as long to compress as to encode, so with
 * fewer jobs the compressors keep the other cores busy anyway, and the
 * file would come later: a job is then a whole thread.
 */
#define PT_PIECE_JOBS 4

/* A batch an encoder handed over, whole. */
struct pf_handed {
	struct pb_buf pk;
	struct pf_handed *next;
};

/* Pieces [first, end) of a thread's sequence, and what its encoder said
 * of them. */
struct pf_tjob {
	size_t thread, first, end;
	/* What the pieces before leave, once start_known; then, scanned,
	 * what its last leaves, for the next job of the thread. */
	struct pf_cut cut;
	bool start_known;
	struct pf_handed *head, *tail; /* handed over, not yet taken */
	size_t nr;
	bool done;
	int rc;
	char *err; /* its line, when rc (NULL: out of memory for it) */
	uint64_t slices;
	uint32_t tracks;
	size_t most_lvl;
};

struct pf_par {
	struct pf *w;
	struct pf *enc; /* one a pool thread */
	char *errs;	/* their lines, PT_ERRLEN each */
	struct pf_tjob *jobs;
	size_t nr_jobs;
	struct pf_handed *spare;
	pthread_mutex_t lock;
	/* changed: for the encoders, a start known, batches taken, a stop;
	 * ready: for the calling thread, batches or the end of the job it
	 * waits for, wanted.  Apart, so that a hand-over wakes no one
	 * else. */
	pthread_cond_t changed, ready;
	struct pf_tjob *wanted;
	unsigned throttled; /* encoders waiting for batches to be taken */
	bool stop;
	bool broken; /* a scan failed: the jobs after it cannot start */
};

#define PT_ERRLEN 1024

/*
 * Encoder e's packets so far to the calling thread: past its job's first
 * piece, waits while it is PT_AHEAD batches ahead, unless they are its
 * last.
 */
static int pt_hand_over(struct pf *e, bool last)
{
	struct pf_par *par = e->par;
	struct pf_tjob *j = e->job;
	struct pf_handed *pc;

	pthread_mutex_lock(&par->lock);
	while (!last && e->piece > j->first && j->nr >= PT_AHEAD &&
	       !par->stop) {
		par->throttled++;
		pthread_cond_wait(&par->changed, &par->lock);
		par->throttled--;
	}
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
		/* It takes the packets; the encoder goes on in the
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
	if (par->wanted == j)
		pthread_cond_signal(&par->ready);
	pthread_mutex_unlock(&par->lock);
	return 0;
}

int pf_par_flush(struct pf *e)
{
	return pt_hand_over(e, false);
}

/* Encoder e's state from what the pieces before job j's leave: its open
 * slices and its level tracks, thread uuid's own and those below. */
static int pt_enter(struct pf *e, const struct pf_tjob *j, uint64_t uuid)
{
	const struct pf_cut *c = &j->cut;

	if (!j->first)
		return 0;
	if (mt_grow((void **)&e->stack, &e->cap_stack, c->sp ? c->sp : 1,
		    sizeof(*e->stack)) ||
	    mt_grow((void **)&e->lvl, &e->cap_lvl, c->nr_lvl, sizeof(*e->lvl)))
		return pf_fail(e, -ENOMEM, "out of memory");
	if (c->sp)
		memcpy(e->stack, c->stack, c->sp * sizeof(*e->stack));
	e->sp = c->sp;
	e->last = c->last;
	e->lvl[0] = uuid;
	for (size_t l = 1; l < c->nr_lvl; l++)
		e->lvl[l] = pf_level_uuid(e, uuid, l);
	e->nr_lvl = c->nr_lvl;
	return 0;
}

/*
 * What job j's pieces leave, for the next job, the same thread's next
 * piece, which may start then: the stack's buffer goes on with it, the
 * encoder having its copy.
 */
static int pt_pass_on(struct pf_par *par, struct pf *e, struct pf_tjob *j)
{
	struct pf_tjob *next = j + 1;
	const struct mt_thread *th = &e->t->threads[j->thread];
	int rc = 0;

	for (size_t k = j->first; k < j->end && !rc; k++)
		rc = pf_thread_scan(e, th, k, &j->cut);
	pthread_mutex_lock(&par->lock);
	if (rc) {
		/* The jobs after it wait no more; the calling thread finds
		 * this one's failure first. */
		par->broken = true;
	} else {
		next->cut = j->cut;
		next->start_known = true;
		j->cut.stack = NULL;
		j->cut.cap = 0;
	}
	pthread_cond_broadcast(&par->changed);
	pthread_mutex_unlock(&par->lock);
	return rc ? pf_fail(e, rc, "out of memory") : 0;
}

/* A job's pieces on pool thread worker; what fails stays in the job, for
 * the calling thread to find in order. */
static int pt_work(void *ctx, unsigned worker, void *job)
{
	struct pf_par *par = ctx;
	struct pf_tjob *j = job;
	struct pf *e = &par->enc[worker];
	const struct mt_trace *t = e->t;
	size_t i = j->thread;
	const struct mt_thread *th = &t->threads[i];
	uint64_t uuid = 1 + t->nr_procs + i;
	bool stop, more = j->end < pf_thread_pieces(th);
	int rc;

	pthread_mutex_lock(&par->lock);
	while (!j->start_known && !par->stop && !par->broken)
		pthread_cond_wait(&par->changed, &par->lock);
	stop = !j->start_known || par->stop;
	pthread_mutex_unlock(&par->lock);
	e->job = j;
	e->slices = 0;
	e->tracks = 0;
	e->most_lvl = 0;
	e->code = 0;
	pb_reset(&e->pk);
	e->pk.oom = 0;
	rc = stop ? pf_fail(e, -ECANCELED, "stopped") : pt_enter(e, j, uuid);
	/* The thread goes on in the next job, with the stack's buffer;
	 * else the buffer is done with, the encoder having its copy. */
	if (!rc && more) {
		rc = pt_pass_on(par, e, j);
	} else {
		free(j->cut.stack);
		j->cut.stack = NULL;
	}
	for (size_t k = j->first; k < j->end && !rc; k++) {
		e->piece = k;
		rc = pf_thread_piece(e, th, uuid, (uint32_t)(2 + i), k);
	}
	if (!rc)
		rc = pt_hand_over(e, true);
	/* The scan and the pieces must agree, or the next job starts from
	 * the wrong stack or level tracks. */
	if (!rc && more &&
	    (e->nr_lvl != j->cut.nr_lvl || e->sp != j->cut.sp ||
	     e->last != j->cut.last))
		rc = pf_fail(e, -EIO,
			     "internal error: thread %zu, piece %zu: not what "
			     "its scan found",
			     i, j->end - 1);
	pthread_mutex_lock(&par->lock);
	if (rc) {
		j->rc = rc;
		j->err = strdup(e->err);
	} else {
		j->slices = e->slices;
		j->tracks = e->tracks;
		j->most_lvl = e->most_lvl;
	}
	/* Only now, with what it made told. */
	j->done = true;
	if (par->wanted == j)
		pthread_cond_signal(&par->ready);
	pthread_mutex_unlock(&par->lock);
	return 0;
}

/*
 * A batch an encoder handed over (its buffer, pk) to the compressors as
 * it is: pk gets an empty buffer back.  What the calling thread has
 * pending (the track descriptors before the first thread) is a batch of
 * its own before it, as a piece's first packet begins one.
 */
static int pt_batch(struct pf *w, struct pb_buf *pk)
{
	struct pb_buf full = *pk;
	int rc = pf_flush(w);

	if (rc)
		return rc;
	*pk = w->pk;
	w->pk = full;
	return pf_flush(w);
}

/* Job j's batches to the compressors as they come, until its end. */
static int pt_take(struct pf_par *par, struct pf_tjob *j)
{
	struct pf *w = par->w;
	int rc = 0;

	pthread_mutex_lock(&par->lock);
	for (;;) {
		struct pf_handed *list, *last = NULL;

		par->wanted = j;
		while (!j->head && !j->done)
			pthread_cond_wait(&par->ready, &par->lock);
		par->wanted = NULL;
		if (!j->head)
			break;
		list = j->head;
		j->head = j->tail = NULL;
		j->nr = 0;
		if (par->throttled)
			pthread_cond_broadcast(&par->changed);
		pthread_mutex_unlock(&par->lock);
		for (struct pf_handed *pc = list; pc; pc = pc->next) {
			if (!rc)
				rc = pt_batch(w, &pc->pk);
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
		if (j->most_lvl > w->most_lvl)
			w->most_lvl = j->most_lvl;
	}
	pthread_mutex_unlock(&par->lock);
	return rc;
}

static void pt_free_handed(struct pf_handed *pc)
{
	while (pc) {
		struct pf_handed *next = pc->next;

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
	e->flush_at = w->flush_at;
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
	size_t nth = t->nr_threads, nr = 0, next = 0;
	bool pieces = workers >= PT_PIECE_JOBS;
	struct pf_par par = {.w = w};
	struct mt_pool *pool = NULL;
	bool locks = false;
	int rc = -ENOMEM;

	for (size_t i = 0; i < nth; i++)
		nr += pieces ? pf_thread_pieces(&t->threads[i])
			     : t->threads[i].nr_slices > 0;
	if (workers > nr)
		workers = (unsigned)nr;
	/* One job: the calling thread would only copy what it writes. */
	if (workers < 2)
		return 1;
	par.enc = calloc(workers, sizeof(*par.enc));
	par.errs = calloc(workers, PT_ERRLEN);
	par.jobs = calloc(nr, sizeof(*par.jobs));
	if (!par.enc || !par.errs || !par.jobs)
		goto out;
	for (unsigned i = 0; i < workers; i++)
		if (pt_enc_init(&par, i))
			goto out;
	for (size_t i = 0; i < nth; i++) {
		size_t n = pf_thread_pieces(&t->threads[i]);

		for (size_t k = 0; k < n; k = par.jobs[par.nr_jobs++].end) {
			struct pf_tjob *j = &par.jobs[par.nr_jobs];

			j->thread = i;
			j->first = k;
			j->end = pieces ? k + 1 : n;
			j->start_known = !k;
		}
	}
	if (pthread_mutex_init(&par.lock, NULL))
		goto out;
	if (pthread_cond_init(&par.changed, NULL)) {
		pthread_mutex_destroy(&par.lock);
		goto out;
	}
	if (pthread_cond_init(&par.ready, NULL)) {
		pthread_cond_destroy(&par.changed);
		pthread_mutex_destroy(&par.lock);
		goto out;
	}
	locks = true;
	/* Jobs are taken in order, so the job the calling one waits for
	 * always has an encoder, and the one before each has had one. */
	rc = mt_pool_start(&pool, workers, pt_work, NULL, &par, workers + 2);
	if (rc)
		goto out;
	/* On the calling thread the first encoder would wait for it. */
	if (mt_pool_workers(pool) < 2) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < nr && !rc; i++) {
		while (next < nr && next <= i + workers)
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
		pthread_cond_destroy(&par.ready);
		pthread_cond_destroy(&par.changed);
		pthread_mutex_destroy(&par.lock);
	}
	for (size_t i = 0; par.jobs && i < par.nr_jobs; i++) {
		pt_free_handed(par.jobs[i].head);
		free(par.jobs[i].cut.stack);
		free(par.jobs[i].err);
	}
	pt_free_handed(par.spare);
	for (unsigned i = 0; par.enc && i < workers; i++)
		pt_enc_free(&par.enc[i]);
	free(par.enc);
	free(par.errs);
	free(par.jobs);
	return rc;
}
