/* SPDX-License-Identifier: MIT */
/*
 * Every thread of a decoded capture through its own segment builder.
 *
 * Events arrive either through the decoder's sink, as they are decoded
 * (per-thread streams: nothing but the slices is kept), or from the
 * decoder's per-thread arrays after dec_run() (per-CPU streams, which
 * must be merged by time first).  Builders are made on a thread's first
 * event; threads that never had one leave no trace in the model.  The
 * thread's execs, which the sideband dates, go in among its events.
 */
#include "segments/go.h"
#include "segments/seg_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void seg_symbolize_pid(void *ctx, uint64_t ip, struct img_sym *out)
{
	const struct seg_one *o = ctx;

	img_symbolize(o->all->im, o->space, ip, out);
}

int seg_all_new(struct seg_all **out, struct img *im, struct mt_trace *t,
		struct seg_ends_table *ends, const struct seg_opts *o)
{
	struct seg_all *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->im = im;
	a->t = t;
	a->ends = ends;
	if (o)
		a->opts = *o;
	*out = a;
	return 0;
}

void seg_all_free(struct seg_all *a)
{
	if (!a)
		return;
	seg_par_free(a->par);
	for (size_t i = 0; i < a->nr; i++) {
		seg_builder_free(a->one[i]->b);
		free(a->one[i]->held);
		free(a->one[i]);
	}
	free(a->one);
	for (size_t i = 0; i < a->go.nr; i++)
		go_proc_free(a->go.v[i]);
	free(a->go.v);
	mt_hmap_free(&a->by_tid);
	free(a);
}

int seg_all_par(struct seg_all *a, unsigned workers, size_t piece_events)
{
	return a->nr || a->par ? -EINVAL
			       : seg_par_new(&a->par, a, workers, piece_events);
}

void seg_all_par_stats(const struct seg_all *a, uint64_t *pieces,
		       uint64_t *touches, uint64_t *rebuilt)
{
	*pieces = a->par ? a->par->nr_pieces : 0;
	*touches = a->par ? a->par->nr_touches : 0;
	*rebuilt = a->par ? a->par->nr_rebuilt : 0;
}

unsigned seg_all_par_threads(const struct seg_all *a)
{
	return seg_par_threads(a->par);
}

double seg_all_par_busiest_cpu(const struct seg_all *a)
{
	return seg_par_busiest_cpu(a->par);
}

/* The builder of o shares its process's Go state with its others. */
static int go_of(struct seg_gos *gos, struct seg_one *o)
{
	struct go_proc *p = NULL;

	for (size_t i = 0; i < gos->nr && !p; i++)
		if (gos->v[i]->pid == o->pid)
			p = gos->v[i];
	if (!p) {
		if (mt_grow((void **)&gos->v, &gos->cap, gos->nr + 1,
			    sizeof(*gos->v)))
			return -ENOMEM;
		p = go_proc_new(o->pid);
		if (!p)
			return -ENOMEM;
		gos->v[gos->nr++] = p;
	}
	o->go = p;
	if (o->all->opts.no_goroutine_ids)
		seg_builder_go(o->b, p, NULL, 0);
	else
		seg_builder_go(o->b, p, o->d->gos, o->d->nr_gos);
	return 0;
}

int seg_one_builder(struct seg_one *o, struct mt_trace *t, size_t thread,
		    struct seg_ends_table *ends, struct seg_gos *gos)
{
	int rc = seg_builder_new(&o->b, t, thread, ends, seg_symbolize_pid, o);

	if (rc)
		return rc;
	if ((rc = go_of(gos, o))) {
		seg_builder_free(o->b);
		o->b = NULL;
	}
	return rc;
}

/* The builder of d, made (with its model thread) on first use: here, or
 * by its group's thread. */
static struct seg_one *one_of(struct seg_all *a, struct dec_thread *d)
{
	struct seg_one *o;
	bool have_proc = false;
	uint64_t k;

	if (a->last && a->last->d == d)
		return a->last;
	if (mt_hmap_find(&a->by_tid, d->tid, &k))
		return a->last = a->one[k];
	if (mt_grow((void **)&a->one, &a->cap, a->nr + 1, sizeof(*a->one)))
		return NULL;
	for (size_t p = 0; p < a->t->nr_procs; p++)
		have_proc |= a->t->procs[p].pid == d->pid;
	if ((!have_proc &&
	     !mt_trace_add_process(a->t, d->pid,
				   mt_trace_process_name(a->t, d->pid))) ||
	    !mt_trace_add_thread(a->t, d->pid, d->tid, d->comm))
		return NULL;
	o = malloc(sizeof(*o));
	if (!o)
		return NULL;
	*o = (struct seg_one){.d = d,
			      .pid = d->pid,
			      .space = d->pid,
			      .all = a,
			      .idx = a->nr,
			      .thread = a->t->nr_threads - 1};
	if (a->par ? seg_par_adopt(a->par, o)
		   : seg_one_builder(o, a->t, o->thread, a->ends, &a->go)) {
		free(o);
		return NULL;
	}
	if (mt_hmap_set(&a->by_tid, d->tid, a->nr)) {
		seg_builder_free(o->b);
		free(o);
		return NULL;
	}
	a->one[a->nr++] = o;
	return a->last = o;
}

/*
 * One event, after the thread's execs up to its time: an exec goes in
 * where the trace passes it, and one after the thread's last event is
 * not fed at all (the trace ended before it: its frames end with the
 * trace, not at an exec the trace never reached).
 */
static int feed(struct seg_one *o, uint64_t time, enum dec_kind kind,
		uint64_t ip, uint64_t aux)
{
	const struct dec_thread *d = o->d;

	for (; o->next_exec < d->nr_execs && d->execs[o->next_exec] <= time;
	     o->next_exec++) {
		int rc = seg_feed(o->b, d->execs[o->next_exec], DEC_EXEC, 0, 0);

		if (rc)
			return rc;
	}
	/* (an exec, above, named the old program's frames in its space) */
	if (time >= o->space_until) {
		uint32_t sp = img_space_until(o->all->im, o->pid, time,
					      &o->space_until);

		if (sp != o->space)
			seg_builder_forget_names(o->b);
		o->space = sp;
	}
	return seg_feed(o->b, time, kind, ip, aux);
}

/*
 * A Go goroutine may leave one thread and resume on another, whose
 * events the decoder may hand over first (a thread's trace at a time):
 * once a thread of a process shows Go's scheduler, its process's events
 * are held and built in time order at the end (seg_held_feed()), so
 * that a goroutine is suspended before it is resumed.  Other programs'
 * events go straight to their builders.
 */
int seg_take(struct seg_one *o, uint64_t time, enum dec_kind kind, uint64_t ip,
	     uint64_t aux)
{
	int rc;

	if (o->go->held) {
		if (mt_grow((void **)&o->held, &o->cap_held, o->nr_held + 1,
			    sizeof(*o->held)))
			return -ENOMEM;
		o->held[o->nr_held++] = (struct seg_held){time, ip, aux, kind};
		return 0;
	}
	rc = feed(o, time, kind, ip, aux);
	o->go->held = seg_builder_is_go(o->b);
	return rc;
}

int seg_held_feed(struct seg_one **one, size_t nr,
		  void (*tag)(void *ctx, uint64_t n), void *ctx)
{
	for (uint64_t n = 0;; n++) {
		struct seg_one *next = NULL;
		int rc;

		for (size_t i = 0; i < nr; i++) {
			struct seg_one *o = one[i];

			if (o->next_held < o->nr_held &&
			    (!next || o->held[o->next_held].time <
					      next->held[next->next_held].time))
				next = o;
		}
		if (!next)
			return 0;
		rc = feed(next, next->held[next->next_held].time,
			  next->held[next->next_held].kind,
			  next->held[next->next_held].ip,
			  next->held[next->next_held].aux);
		next->next_held++;
		if (rc)
			return rc;
		if (tag)
			tag(ctx, n);
	}
}

/* An event of o's, to its builder here or to its group's thread. */
static int to_builder(struct seg_all *a, struct seg_one *o, uint64_t time,
		      enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	const struct dec_sink_ev ev = {time, ip, aux, kind};

	return a->par ? seg_par_put(a->par, o, &ev, 1, NULL)
		      : seg_take(o, time, kind, ip, aux);
}

int seg_all_sink(void *ctx, struct dec_thread *t, uint64_t time,
		 enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	struct seg_one *o = one_of(ctx, t);

	if (!o)
		return -ENOMEM;
	return to_builder(ctx, o, time, kind, ip, aux);
}

int seg_all_sink_run(void *ctx, struct dec_thread *t,
		     const struct dec_sink_ev *ev, size_t n,
		     struct dec_hold *hold)
{
	struct seg_one *o = one_of(ctx, t);

	if (!o)
		return -ENOMEM;
	if (o->all->par)
		return seg_par_put(o->all->par, o, ev, n, hold);
	for (size_t i = 0; i < n; i++) {
		int rc = seg_take(o, ev[i].time, ev[i].kind, ev[i].ip,
				  ev[i].aux);

		if (rc)
			return rc;
	}
	return 0;
}

int seg_all_finish(struct seg_all *a, struct dec_thread *threads, size_t nr,
		   char *err, size_t errlen)
{
	int rc = 0;

	/* What came through the arrays. */
	for (size_t i = 0; i < nr && !rc; i++) {
		struct dec_thread *d = &threads[i];
		struct seg_one *o;

		if (!d->nr)
			continue;
		o = one_of(a, d);
		if (!o) {
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < d->nr && !rc; k++)
			rc = to_builder(a, o,
					dec_event_time(&d->ev[k], d->base),
					dec_event_kind(&d->ev[k]), d->ev[k].ip,
					d->ev[k].aux);
		dec_thread_free_events(d);
	}
	if (a->par) {
		int prc = seg_par_finish(a->par);

		rc = rc ? rc : prc;
	} else {
		if (!rc)
			rc = seg_held_feed(a->one, a->nr, NULL, NULL);
		for (size_t i = 0; i < a->nr && !rc; i++)
			rc = seg_finish(a->one[i]->b,
					a->opts.no_final_stack
						? NULL
						: &a->one[i]->d->final);
	}
	if (rc) {
		snprintf(err, errlen,
			 "out of memory while building the call tree");
		return rc;
	}
	return 0;
}
