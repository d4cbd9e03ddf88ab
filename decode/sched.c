/* SPDX-License-Identifier: MIT */
/*
 * Pass 1, second half: the capture's AUX streams, one buffer after
 * another, each decoded by the core (stream.c, timing.c) on this thread
 * or, cut in pieces, on the pool of parallel.c.
 *
 * dec_run() then sorts what per-CPU streams left.
 *
 * Chunks of one stream that follow each other in the AUX area are decoded
 * as one buffer; a chunk that does not is a separate buffer and the lost
 * bytes between become a DEC_LOST event.  In snapshot mode every chunk
 * is its own snapshot.
 */
#include "decode/par.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A chunk of a thread that was not chosen; per-CPU chunks are decoded
 * and their events sorted out by thread in strm_emit(). */
static bool chunk_skipped(const struct dec_capture *c,
			  const struct dec_chunk *k)
{
	return k->tid != (uint32_t)-1 &&
	       !(c->pt.per_cpu_mmaps && k->cpu != (uint32_t)-1) &&
	       !dec_tid_chosen(c, k->tid);
}

uint64_t dec_aux_bytes(const struct dec_capture *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->nr_chunks; i++)
		if (!chunk_skipped(c, &c->chunks[i]))
			n += c->chunks[i].size;
	return n;
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct dec_chunk *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Whose trace the buffer of chunk k is: a thread's own stream (*thread,
 * NULL when out of memory) or a CPU's (NULL), and the process whose code
 * it runs first (-1: not known).
 */
static void place(struct dec_capture *c, const struct dec_chunk *k,
		  struct dec_thread **thread, uint32_t *pid)
{
	*thread = NULL;
	*pid = (uint32_t)-1;
	if (k->tid != (uint32_t)-1 &&
	    !(c->pt.per_cpu_mmaps && k->cpu != (uint32_t)-1)) {
		*thread = dec_thread_get(c, (uint32_t)-1, k->tid);
		if (*thread)
			*pid = (*thread)->pid;
		return;
	}
	for (size_t i = 0; i < c->nr_switches; i++)
		if (c->switches[i].cpu == k->cpu && !c->switches[i].out) {
			*pid = c->switches[i].pid;
			return;
		}
}

/* The core's reads, from the capture (ctx). */
static struct pt_image *cap_image(void *ctx, uint32_t pid)
{
	return img_image_of(((struct dec_capture *)ctx)->img, pid);
}

static uint32_t cap_space(void *ctx, uint32_t pid, uint64_t t)
{
	return img_space(((struct dec_capture *)ctx)->img, pid, t);
}

static size_t cap_read_code(void *ctx, int isid, uint64_t ip, uint8_t *b,
			    size_t n)
{
	struct dec_capture *c = ctx;
	int got;

	if (isid <= 0)
		return 0;
	got = pt_iscache_read(c->iscache, b, n, isid, ip);
	return got > 0 ? (size_t)got : 0;
}

static void cap_range(void *ctx, uint32_t pid, uint64_t ip, uint64_t *lo,
		      uint64_t *hi, struct img_inl_span *inl)
{
	img_range(((struct dec_capture *)ctx)->img, pid, ip, lo, hi, inl);
}

static void cap_no_code(void *ctx, uint32_t pid, uint64_t ip)
{
	img_note_use(((struct dec_capture *)ctx)->img, pid, ip);
}

/* Only the capture's mapping: its pages come back from the file if a
 * run reads them again after all (the search for the last TIP before
 * an overflow may look back past a run's first PSB), a copy's would
 * come back as zeros. */
static void cap_forget(void *ctx, const uint8_t *p, size_t len)
{
	pd_forget(((struct dec_capture *)ctx)->pd, p, len);
}

static void cap_addr_filter(void *ctx, uint32_t pid,
			    struct pt_conf_addr_filter *f)
{
	img_addr_filter(((struct dec_capture *)ctx)->img, pid, f);
}

static struct dec_thread *cap_thread(void *ctx, uint32_t pid, uint32_t tid)
{
	return dec_thread_get(ctx, pid, tid);
}

/* An event to its thread: to the sink when the stream is the thread's
 * own, else to the thread's array; counted in the capture's span and
 * stats.  Returns 0 or the sink's error (-ENOMEM). */
static int cap_deliver(void *ctx, struct dec_thread *th, bool counted, bool own,
		       uint64_t t, enum dec_kind k, uint64_t ip, uint64_t aux)
{
	struct dec_capture *c = ctx;

	if (counted) {
		if (t < c->first)
			c->first = t;
		if (t > c->last)
			c->last = t;
		c->stats.events++;
		if (c->sink && own)
			return c->sink(c->sink_ctx, th, t, k, ip, aux);
	}
	return dec_thread_push(th, c->base, t, k, ip, aux) ? -ENOMEM : 0;
}

/* A run of counted events of th's own stream: as cap_deliver() would
 * take them one by one, with one call of the sink for them all. */
static int cap_deliver_run(void *ctx, struct dec_thread *th,
			   const struct dec_sink_ev *ev, size_t n,
			   struct dec_hold *hold)
{
	struct dec_capture *c = ctx;

	if (!c->sink || !c->sink_run) {
		for (size_t i = 0; i < n; i++) {
			int rc = cap_deliver(c, th, true, true, ev[i].time,
					     ev[i].kind, ev[i].ip, ev[i].aux);

			if (rc)
				return rc;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (ev[i].time < c->first)
			c->first = ev[i].time;
		if (ev[i].time > c->last)
			c->last = ev[i].time;
	}
	c->stats.events += n;
	return n ? c->sink_run(c->sink_ctx, th, ev, n, hold) : 0;
}

/* A buffer decoded on this thread: its counts are all the capture's. */
static int decode_serial(struct strm *s, struct dec_capture *c,
			 const uint8_t *buf, size_t len)
{
	int rc = strm_decode(s, buf, len, STRM_FROM_START,
			     img_image_of(c->img, s->pid));

	c->stats.blocks += s->n_blocks;
	c->stats.errors += s->n_errors;
	c->stats.overflows += s->n_overflows;
	return rc;
}

/* A buffer's bytes as libipt reads them: its chunks joined (full mode),
 * the kernel's code stripped; what of them is a copy. */
struct prep {
	size_t i, j; /* its chunks: c->chunks[i..j) */
	uint8_t *joined, *stripped;
};

static int prepare(struct dec_capture *c, size_t i, size_t j, size_t len,
		   struct prep *pr, const uint8_t **buf)
{
	*pr = (struct prep){.i = i, .j = j};
	*buf = c->chunks[i].data;
	if (j > i + 1) {
		size_t at = 0;

		pr->joined = malloc(len);
		if (!pr->joined)
			return -ENOMEM;
		/* Only the copy is read from here on. */
		for (size_t m = i; m < j; m++) {
			memcpy(pr->joined + at, c->chunks[m].data,
			       c->chunks[m].size);
			pd_forget(c->pd, c->chunks[m].data, c->chunks[m].size);
			at += c->chunks[m].size;
		}
		*buf = pr->joined;
	}
	if (img_kernel_strip(c->img, buf, len, &pr->stripped)) {
		free(pr->joined);
		pr->joined = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Done with a buffer: its copies go, and its chunks leave memory. */
static void release(struct dec_capture *c, struct prep *pr)
{
	free(pr->stripped);
	free(pr->joined);
	for (size_t m = pr->i; m < pr->j; m++)
		pd_forget(c->pd, c->chunks[m].data, c->chunks[m].size);
}

/* A buffer decoded on this thread; rc as dec_streams() treats it. */
static int decode_here(struct strm *s, struct dec_capture *c,
		       const struct par_buf *b, uint64_t done, uint64_t total)
{
	int rc;

	s->lost = b->lost;
	s->end_time = b->end_time;
	rc = decode_serial(s, c, b->data, b->len);
	if (rc != -ENOMEM && c->opts.progress &&
	    c->opts.progress(c->opts.progress_ctx, done + b->len, total))
		rc = -EINTR;
	return rc;
}

/*
 * The buffers gathered for the pool, decoded; rc as dec_streams() treats
 * it.  Where no thread could be started (a limit on threads or
 * processes), they are decoded here, as with --jobs 1, which gives the
 * same events in the same order.
 */
static int flush(struct dec_capture *c, struct par *par, struct strm *s,
		 const struct strm_io *io, const struct strm_out *out,
		 struct par_buf *bufs, struct prep *preps, size_t *n,
		 uint64_t *done, uint64_t total)
{
	int rc = *n ? dec_par_decode(par, bufs, *n, *done, total) : 0;

	if (rc == -EAGAIN) {
		uint64_t at = *done;

		rc = 0;
		for (size_t b = 0; b < *n && !rc; b++) {
			strm_init(s, c, io, out, bufs[b].k->cpu, bufs[b].own,
				  bufs[b].pid);
			rc = decode_here(s, c, &bufs[b], at, total);
			at += bufs[b].len;
			/* A stream that cannot be decoded is not fatal. */
			if (rc != -ENOMEM && rc != -EINTR)
				rc = 0;
		}
	}

	for (size_t b = 0; b < *n; b++) {
		release(c, &preps[b]);
		*done += bufs[b].len;
	}
	*n = 0;
	return rc;
}

/* Every stream of the capture decoded, in the order of its chunks. */
static int dec_streams(struct dec_capture *c, char *err, size_t errlen)
{
	const struct strm_io io = {.ctx = c,
				   .image = cap_image,
				   .space = cap_space,
				   .read_code = cap_read_code,
				   .range = cap_range,
				   .no_code = cap_no_code,
				   .thread = cap_thread,
				   .addr_filter = cap_addr_filter,
				   .forget = cap_forget};
	const struct strm_out out = {.ctx = c,
				     .deliver = cap_deliver,
				     .deliver_run = cap_deliver_run};
	struct strm *s = calloc(1, sizeof(*s));
	struct par *par = NULL;
	struct par_buf *bufs = NULL;
	struct prep *preps = NULL;
	size_t nbufs = 0, group;
	uint64_t done = 0, total = 0;
	int rc = 0;

	if (!s || dec_par_new(&par, c, &io, &out))
		goto oom;
	group = dec_par_group(par);
	bufs = calloc(group, sizeof(*bufs));
	preps = calloc(group, sizeof(*preps));
	if (!bufs || !preps)
		goto oom;
	/* qsort's base may not be NULL, even for no elements: a capture
	 * can hold no trace at all. */
	if (c->nr_chunks)
		qsort(c->chunks, c->nr_chunks, sizeof(*c->chunks), cmp_chunk);
	c->first = UINT64_MAX;
	c->last = 0;
	total = dec_aux_bytes(c);
	for (size_t i = 0; i < c->nr_chunks && !rc;) {
		const struct dec_chunk *k = &c->chunks[i];
		size_t j = i + 1, len = k->size;
		const uint8_t *buf;
		uint64_t end_time = 0, lost = 0;
		struct dec_thread *own;
		uint32_t pid;
		struct prep pr;

		/* In full mode, chunks that continue each other are one
		 * buffer. */
		while (!c->pt.snapshot_mode && j < c->nr_chunks &&
		       c->chunks[j].idx == k->idx &&
		       c->chunks[j].offset ==
			       c->chunks[j - 1].offset + c->chunks[j - 1].size)
			len += c->chunks[j++].size;
		if (chunk_skipped(c, k)) {
			i = j;
			continue;
		}
		if (prepare(c, i, j, len, &pr, &buf)) {
			rc = -ENOMEM;
			break;
		}
		place(c, k, &own, &pid);
		strm_init(s, c, &io, &out, k->cpu, own, pid);
		if (!c->pt.snapshot_mode && i > 0 &&
		    c->chunks[i - 1].idx == k->idx && s->thread) {
			const struct dec_chunk *p = &c->chunks[i - 1];

			lost = k->offset - (p->offset + p->size);
		}
		if (c->chunks[j - 1].reference)
			end_time = pd_tsc_to_perf_time(
				c->chunks[j - 1].reference, &c->pt);
		c->stats.streams++;
		c->stats.aux_bytes += len;
		i = j;
		if (par) {
			bufs[nbufs] = (struct par_buf){k,	 buf, len, lost,
						       end_time, own, pid};
			preps[nbufs++] = pr;
			if (nbufs == group)
				rc = flush(c, par, s, &io, &out, bufs, preps,
					   &nbufs, &done, total);
		} else {
			const struct par_buf b = {k,	    buf, len, lost,
						  end_time, own, pid};

			rc = decode_here(s, c, &b, done, total);
			release(c, &pr);
			done += len;
		}
		/* A stream that cannot be decoded is not fatal. */
		if (rc != -ENOMEM && rc != -EINTR)
			rc = 0;
	}
	if (!rc)
		rc = flush(c, par, s, &io, &out, bufs, preps, &nbufs, &done,
			   total);
	else
		for (size_t b = 0; b < nbufs; b++)
			release(c, &preps[b]);
	if (rc != -ENOMEM && rc != -EINTR)
		rc = 0;
	dec_par_free(par);
	free(bufs);
	free(preps);
	strm_free(s);
	if (c->first == UINT64_MAX)
		c->first = c->last = 0;
	if (rc == -EINTR) {
		snprintf(err, errlen, "%s: interrupted", c->path);
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "%s: out of memory while decoding",
			 c->path);
		return rc;
	}
	return 0;
oom:
	dec_par_free(par);
	free(bufs);
	free(preps);
	free(s);
	snprintf(err, errlen, "%s: out of memory", c->path);
	return -ENOMEM;
}

int64_t dec_bare_loop(struct dec_capture *c)
{
	int64_t blocks = 0;

	for (size_t i = 0; i < c->nr_chunks; i++) {
		const struct dec_chunk *k = &c->chunks[i];
		struct pt_block_decoder *d;
		struct pt_config cfg;
		struct pt_block blk;
		struct dec_thread *own;
		uint32_t pid, space;
		int status;

		place(c, k, &own, &pid);
		strm_config(c, &cfg, k->data, k->size);
		img_addr_filter(c->img, pid, &cfg.addr_filter);
		d = pt_blk_alloc_decoder(&cfg);
		if (!d)
			return -ENOMEM;
		space = pid;
		pt_blk_set_image(d, img_image_of(c->img, pid));
		while (pt_blk_sync_forward(d) >= 0) {
			uint64_t tsc;
			uint32_t lost_mtc, lost_cyc, now;

			/* The program the process exec'd into, as
			 * strm_decode() follows it (here at each sync
			 * point only, not at each enable). */
			if (pt_blk_time(d, &tsc, &lost_mtc, &lost_cyc) >= 0 &&
			    (now = img_space(c->img, pid,
					     pd_tsc_to_perf_time(
						     tsc, &c->pt))) != space) {
				space = now;
				pt_blk_set_image(d,
						 img_image_of(c->img, space));
			}
			for (;;) {
				status = pt_blk_next(d, &blk, sizeof(blk));
				while (status >= 0 &&
				       (status & pts_event_pending)) {
					struct pt_event ev;

					status = pt_blk_event(d, &ev,
							      sizeof(ev));
				}
				if (status < 0)
					break;
				blocks++;
			}
		}
		pt_blk_free_decoder(d);
	}
	return blocks;
}

static int cmp_event_time(const void *a, const void *b)
{
	const struct dec_event *x = a, *y = b;
	uint64_t tx = x->tk >> 8, ty = y->tk >> 8;

	return tx < ty ? -1 : tx > ty;
}

int dec_run(struct dec_capture *c, char *err, size_t errlen)
{
	int rc = dec_streams(c, err, errlen);

	if (rc)
		return rc;
	for (size_t i = 0; i < c->nr_threads; i++) {
		struct dec_thread *t = &c->threads[i];

		t->base = c->base;
		/* Per-CPU streams append a thread's runs CPU by CPU; the
		 * runs never overlap in time, so a merge by time is right.
		 * Per-thread streams are in order already. */
		if (c->pt.per_cpu_mmaps && t->nr > 1) {
			bool sorted = true;

			for (size_t j = 1; j < t->nr && sorted; j++)
				sorted = (t->ev[j - 1].tk >> 8) <=
					 (t->ev[j].tk >> 8);
			if (!sorted &&
			    mt_stable_sort(t->ev, t->nr, sizeof(*t->ev),
					   cmp_event_time)) {
				snprintf(err, errlen, "%s: out of memory",
					 c->path);
				return -ENOMEM;
			}
		}
	}
	if (c->first == UINT64_MAX)
		c->first = c->last = 0;
	return 0;
}
