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
#include "segments/segments.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event held back (a Go process's: see take()). */
struct seg_held {
	uint64_t time, ip, aux;
	enum dec_kind kind;
};

struct seg_one {
	struct dec_thread *d; /* the decoder's thread */
	uint32_t pid;
	/* whose code its addresses are named from: the process's space
	 * (img_space()) at its last event, and when the next one begins */
	uint32_t space;
	uint64_t space_until;
	struct seg_builder *b;
	struct seg_all *all;
	size_t next_exec; /* d->execs before it are fed */
	struct go_proc *go;
	struct seg_held *held;
	size_t nr_held, cap_held, next_held;
};

struct seg_all {
	struct img *im;
	struct mt_trace *t;
	struct seg_ends_table *ends;
	struct seg_opts opts;
	struct seg_one **one; /* each is a builder's context: never moves */
	size_t nr, cap;
	struct mt_hmap by_tid; /* tid -> index in one */
	struct seg_one *last;  /* events come in runs of one thread */
	/* Go: each process's goroutines not running, shared by its
	 * threads' builders, made as its threads' are */
	struct go_proc **go;
	size_t nr_go, cap_go;
};

static void symbolize_pid(void *ctx, uint64_t ip, struct img_sym *out)
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
	for (size_t i = 0; i < a->nr; i++) {
		seg_builder_free(a->one[i]->b);
		free(a->one[i]->held);
		free(a->one[i]);
	}
	free(a->one);
	for (size_t i = 0; i < a->nr_go; i++)
		go_proc_free(a->go[i]);
	free(a->go);
	mt_hmap_free(&a->by_tid);
	free(a);
}

/* The builder of o shares its process's Go state with its others. */
static int go_of(struct seg_all *a, struct seg_one *o)
{
	struct go_proc *p = NULL;

	for (size_t i = 0; i < a->nr_go && !p; i++)
		if (a->go[i]->pid == o->pid)
			p = a->go[i];
	if (!p) {
		if (mt_grow((void **)&a->go, &a->cap_go, a->nr_go + 1,
			    sizeof(*a->go)))
			return -ENOMEM;
		p = go_proc_new(o->pid);
		if (!p)
			return -ENOMEM;
		a->go[a->nr_go++] = p;
	}
	o->go = p;
	if (a->opts.no_goroutine_ids)
		seg_builder_go(o->b, p, NULL, 0);
	else
		seg_builder_go(o->b, p, o->d->gos, o->d->nr_gos);
	return 0;
}

/* The builder of d, made (with its model thread) on first use. */
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
	*o = (struct seg_one){.d = d, .pid = d->pid, .space = d->pid, .all = a};
	if (seg_builder_new(&o->b, a->t, a->t->nr_threads - 1, a->ends,
			    symbolize_pid, o)) {
		free(o);
		return NULL;
	}
	if (go_of(a, o)) {
		seg_builder_free(o->b);
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
 * are held and built in time order at the end (held_feed()), so that a
 * goroutine is suspended before it is resumed.  Other programs' events
 * go straight to their builders.
 */
static int take(struct seg_one *o, uint64_t time, enum dec_kind kind,
		uint64_t ip, uint64_t aux)
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

/* The held events of every thread, merged by time (a thread's own keep
 * their order). */
static int held_feed(struct seg_all *a)
{
	for (;;) {
		struct seg_one *next = NULL;
		int rc;

		for (size_t i = 0; i < a->nr; i++) {
			struct seg_one *o = a->one[i];

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
	}
}

int seg_all_sink(void *ctx, struct dec_thread *t, uint64_t time,
		 enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	struct seg_one *o = one_of(ctx, t);

	if (!o)
		return -ENOMEM;
	return take(o, time, kind, ip, aux);
}

int seg_all_sink_run(void *ctx, struct dec_thread *t,
		     const struct dec_sink_ev *ev, size_t n)
{
	struct seg_one *o = one_of(ctx, t);

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int rc = take(o, ev[i].time, ev[i].kind, ev[i].ip, ev[i].aux);

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
			rc = take(o, dec_event_time(&d->ev[k], d->base),
				  dec_event_kind(&d->ev[k]), d->ev[k].ip,
				  d->ev[k].aux);
		dec_thread_free_events(d);
	}
	if (!rc)
		rc = held_feed(a);
	for (size_t i = 0; i < a->nr && !rc; i++)
		rc = seg_finish(a->one[i]->b, a->opts.no_final_stack
						      ? NULL
						      : &a->one[i]->d->final);
	if (rc) {
		snprintf(err, errlen,
			 "out of memory while building the call tree");
		return rc;
	}
	return 0;
}
