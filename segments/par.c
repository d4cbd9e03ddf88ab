/* SPDX-License-Identifier: MIT */
/*
 * The threads' builders on threads of their own, the model the same as
 * one thread builds.
 *
 * A group is the threads whose builders share state: one thread, or
 * every thread of the programs that may be Go's (a goroutine suspended
 * on one thread resumes on another; their events are held and built in
 * time order at the end, build.c).  Each group builds into a model of
 * its own, on one worker, its events in the order the decoder handed
 * them over.  The caller's thread only makes the model's threads and
 * hands events over in batches.
 *
 * One thread interns strings, frames, segments, goroutines and PTWRITE
 * values as the events come, so their ids are in the order of the event
 * that first made each.  Every entry a group makes is tagged with that
 * event's number (the held events and the closing of each thread come
 * after all of them, in the order one thread takes them), and at the end
 * the groups' tables merge in tag order, the caller's own (process and
 * thread names) first among entries of one event.  The slices' ids are
 * then mapped to the merged ones, a thread a job.
 */
#include "segments/go.h"
#include "segments/seg_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAR_BATCH 4096 /* events a batch */
/* batches a worker has: its queue holds all but the one being filled */
#define PAR_NR 4
/* the threads from which a thread is built in pieces */
#define PIECES_MIN 3

/* A run of one thread's events in a batch. */
struct par_run {
	struct seg_one *o;
	uint64_t seq; /* its first event's number */
	size_t first, n;
};

struct par_batch {
	struct dec_sink_ev *ev;
	struct par_run *runs;
	size_t n, nr_runs;
	bool finish; /* close the worker's threads */
};

struct par_worker {
	struct seg_par *p;
	struct mt_jobs *q;
	struct par_batch batch[PAR_NR];
	uint64_t nr_put;
	struct par_batch *cur;
	struct seg_group **groups; /* the groups it builds */
	size_t nr_groups, cap_groups;
	double cpu_s; /* its thread's CPU after its last batch */
};

static size_t table_nr(const struct mt_trace *t, int k)
{
	switch (k) {
	case T_STR:
		return t->strs.nr;
	case T_FRAME:
		return t->nr_frames;
	case T_SEG:
		return t->nr_segments;
	case T_GOR:
		return t->nr_goroutines;
	default:
		return t->nr_ptwrites;
	}
}

int seg_tag_new(struct tags *tg, size_t nr, uint64_t tag)
{
	if (nr <= tg->nr)
		return 0;
	if (mt_grow((void **)&tg->v, &tg->cap, nr, sizeof(*tg->v)))
		return -ENOMEM;
	while (tg->nr < nr)
		tg->v[tg->nr++] = tag;
	return 0;
}

int seg_group_tag_new(struct seg_group *g, uint64_t tag)
{
	for (int k = 0; k < NR_T; k++)
		if (seg_tag_new(&g->tag[k], table_nr(&g->t, k), tag))
			return -ENOMEM;
	return 0;
}

void seg_group_free(struct seg_group *g)
{
	if (!g)
		return;
	mt_trace_free(&g->t);
	seg_ends_free(&g->ends);
	for (size_t i = 0; i < g->gos.nr; i++)
		go_proc_free(g->gos.v[i]);
	free(g->gos.v);
	for (int k = 0; k < NR_T; k++) {
		free(g->tag[k].v);
		free(g->map[k]);
	}
	free(g->ones);
	free(g);
}

/* A group begins with the caller's strings so far: when it is the only
 * one, its ids are the merged ones and its slices stay as they are. */
struct seg_group *seg_group_new(const struct seg_par *p)
{
	const struct mt_strtab *s = &p->a->t->strs;
	struct seg_group *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	if (mt_trace_init(&g->t))
		goto fail;
	for (uint32_t id = 1; id < s->nr; id++)
		if (mt_str_intern(&g->t.strs, mt_str(s, id)) == MT_NONE ||
		    seg_tag_new(&g->tag[T_STR], g->t.strs.nr,
				p->main_str.v[id]))
			goto fail;
	if (seg_group_tag(g, 0))
		goto fail;
	return g;
fail:
	seg_group_free(g);
	return NULL;
}

int seg_one_start(struct seg_one *o)
{
	struct seg_group *g = o->g;
	const struct seg_all *a = o->all;

	/* (its name is the caller's model thread's) */
	if (!mt_trace_add_thread(&g->t, o->pid, o->d->tid, ""))
		return -ENOMEM;
	return seg_one_builder(o, &g->t, g->t.nr_threads - 1,
			       a->ends ? &g->ends : NULL, &g->gos);
}

void seg_tag_held(void *ctx, uint64_t n)
{
	struct seg_held_tag *h = ctx;

	if (!h->rc)
		h->rc = seg_group_tag(h->g, TAG_HELD | n);
}

/* The held events of the worker's groups, then each thread's end. */
static int finish_groups(struct par_worker *w)
{
	const struct seg_all *a = w->p->a;

	for (size_t i = 0; i < w->nr_groups; i++) {
		struct seg_group *g = w->groups[i];
		struct seg_held_tag h = {g, 0};
		int rc = seg_held_feed(g->ones, g->nr_ones, seg_tag_held, &h);

		if (rc || h.rc)
			return rc ? rc : h.rc;
		for (size_t k = 0; k < g->nr_ones; k++) {
			struct seg_one *o = g->ones[k];

			if (!o->b)
				continue;
			rc = seg_finish(o->b, a->opts.no_final_stack
						      ? NULL
						      : &o->d->final);
			if (rc || (rc = seg_group_tag(g, TAG_FINISH | o->idx)))
				return rc;
		}
	}
	return 0;
}

/* The worker's thread has done only this (util's jobs): its CPU so far. */
static void took(struct par_worker *w)
{
	uint64_t ns = mt_clock_ns(CLOCK_THREAD_CPUTIME_ID);

	if (ns)
		w->cpu_s = (double)ns / 1e9;
}

static int build_batch(void *ctx, void *job)
{
	struct par_worker *w = ctx;
	const struct par_batch *b = job;

	if (b->finish) {
		int rc = finish_groups(w);

		took(w);
		return rc;
	}
	for (size_t r = 0; r < b->nr_runs; r++) {
		const struct par_run *run = &b->runs[r];
		struct seg_one *o = run->o;
		int rc = o->b ? 0 : seg_one_start(o);

		for (size_t i = 0; i < run->n && !rc; i++) {
			const struct dec_sink_ev *e = &b->ev[run->first + i];

			if (!(rc = seg_take(o, e->time, e->kind, e->ip,
					    e->aux)))
				rc = seg_group_tag(o->g, TAG_EV(run->seq + i));
		}
		if (rc)
			return rc;
	}
	took(w);
	return 0;
}

static void worker_end(struct par_worker *w)
{
	mt_jobs_end(w->q);
	w->q = NULL;
	for (size_t i = 0; i < PAR_NR; i++) {
		free(w->batch[i].ev);
		free(w->batch[i].runs);
	}
	free(w->groups);
}

void seg_par_free(struct seg_par *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nr_w; i++)
		worker_end(&p->w[i]);
	free(p->w);
	seg_pieces_free(p);
	if (p->have_live_lock) {
		pthread_cond_destroy(&p->joined);
		pthread_mutex_destroy(&p->live_lock);
	}
	for (size_t i = 0; i < p->nr_g; i++)
		seg_group_free(p->g[i]);
	free(p->g);
	for (size_t i = 0; i < p->nr_pm; i++)
		seg_group_free(p->pm[i]);
	free(p->pm);

	mt_hmap_free(&p->may_go);
	free(p->main_str.v);
	free(p->main_map);
	free(p);
}

unsigned seg_par_threads(const struct seg_par *p)
{
	/* Fewer where no more threads could be had. */
	return p ? p->piece_threads : 0;
}

double seg_par_busiest_cpu(const struct seg_par *p)
{
	double m = p ? p->join_cpu_s : 0;

	for (unsigned i = 0; p && i < p->nr_w; i++)
		m = p->w[i].cpu_s > m ? p->w[i].cpu_s : m;
	return m;
}

int seg_par_new(struct seg_par **out, struct seg_all *a, unsigned workers,
		size_t piece_events)
{
	struct seg_par *p = calloc(1, sizeof(*p));

	*out = NULL;
	/* The merge renumbers what builders make: none may be there. */
	if (a->t->nr_frames != 1 || a->t->nr_segments || a->t->nr_goroutines ||
	    a->t->nr_ptwrites) {
		free(p);
		return -EINVAL;
	}
	if (!p)
		return -ENOMEM;
	p->a = a;
	p->max_workers = workers ? workers : 1;
	p->w = calloc(p->max_workers, sizeof(*p->w));
	/* What the model held before: first in every order. */
	p->piece_events = piece_events;
	if (!p->w || seg_tag_new(&p->main_str, a->t->strs.nr, 0) ||
	    seg_pieces_start(p)) {
		seg_par_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

static int worker_start(struct seg_par *p, struct par_worker *w)
{
	w->p = p;
	for (size_t i = 0; i < PAR_NR; i++)
		if (!(w->batch[i].ev =
			      malloc(PAR_BATCH * sizeof(*w->batch[i].ev))) ||
		    !(w->batch[i].runs =
			      malloc(PAR_BATCH * sizeof(*w->batch[i].runs))))
			return -ENOMEM;
	w->cur = &w->batch[0];
	return mt_jobs_start(&w->q, build_batch, w, PAR_NR - 1);
}

/* Whether pid's code has Go's scheduler in it (asked once a process). */
static bool may_go(struct seg_par *p, uint32_t pid)
{
	uint64_t v;
	bool go;

	if (mt_hmap_find(&p->may_go, pid, &v))
		return v == 2;
	go = img_pid_has_symbol(p->a->im, pid, go_runtime_switch);
	/* (out of memory: asked again next time) */
	mt_hmap_set(&p->may_go, pid, go ? 2 : 1);
	return go;
}

/* A group of threads built in pieces, or (worker) on a worker of its
 * own, in order. */
static int add_group(struct seg_par *p, struct seg_group *g, bool worker)
{
	struct par_worker *w;
	unsigned k;
	int rc;

	if (mt_grow((void **)&p->g, &p->cap_g, p->nr_g + 1, sizeof(*p->g)))
		return -ENOMEM;
	p->g[p->nr_g++] = g;
	if (!worker)
		return 0;
	k = (unsigned)(p->nr_wg++ % p->max_workers);
	g->worker_mode = true;
	g->worker = k;
	w = &p->w[k];
	if (k == p->nr_w) {
		p->nr_w++;
		if ((rc = worker_start(p, w)))
			return rc;
	}
	if (mt_grow((void **)&w->groups, &w->cap_groups, w->nr_groups + 1,
		    sizeof(*w->groups)))
		return -ENOMEM;
	w->groups[w->nr_groups++] = g;
	return 0;
}

int seg_par_adopt(struct seg_par *p, struct seg_one *o)
{
	bool go = may_go(p, o->pid);
	struct seg_group *g = go ? p->go_group : NULL;
	int rc;

	/* The process and thread names one_of() interned come before what
	 * the next event makes. */
	if (seg_tag_new(&p->main_str, p->a->t->strs.nr, TAG_EV(p->seq)))
		return -ENOMEM;
	if (!g) {
		if (!(g = seg_group_new(p)))
			return -ENOMEM;
		/* On two cores the pieces' builders cost more than the
		 * building they take off the thread that joins them. */
		if ((rc = add_group(p, g, go || p->max_workers < PIECES_MIN))) {
			/* (a group in p->g is p's to free) */
			if (!p->nr_g || p->g[p->nr_g - 1] != g)
				seg_group_free(g);
			return rc;
		}
		if (go)
			p->go_group = g;
	}
	if (mt_grow((void **)&g->ones, &g->cap_ones, g->nr_ones + 1,
		    sizeof(*g->ones)))
		return -ENOMEM;
	g->ones[g->nr_ones++] = o;
	o->g = g;
	return 0;
}

/* The batch being filled goes to the worker; the next one to fill is
 * the one PAR_NR before, which has been built from by then. */
static int submit(struct par_worker *w)
{
	int rc = mt_jobs_put(w->q, w->cur);

	w->nr_put++;
	w->cur = &w->batch[w->nr_put % PAR_NR];
	w->cur->n = w->cur->nr_runs = 0;
	w->cur->finish = false;
	return rc;
}

int seg_par_put(struct seg_par *p, struct seg_one *o,
		const struct dec_sink_ev *ev, size_t n, struct dec_hold *hold)
{
	struct par_worker *w = &p->w[o->g->worker];

	if (!o->g->worker_mode)
		return seg_pieces_put(p, o, ev, n, hold);

	while (n) {
		struct par_batch *b = w->cur;
		struct par_run *last =
			b->nr_runs ? &b->runs[b->nr_runs - 1] : NULL;
		size_t k = PAR_BATCH - b->n < n ? PAR_BATCH - b->n : n;

		/* (a thread's events one at a time make one run) */
		if (last && last->o == o && last->seq + last->n == p->seq)
			last->n += k;
		else
			b->runs[b->nr_runs++] =
				(struct par_run){o, p->seq, b->n, k};
		memcpy(b->ev + b->n, ev, k * sizeof(*ev));
		b->n += k;
		p->seq += k;
		ev += k;
		n -= k;
		if (b->n == PAR_BATCH) {
			int rc = submit(w);

			if (rc)
				return rc;
		}
	}
	return 0;
}

/*
 * Merging.
 */

struct entry {
	uint64_t tag;
	uint32_t src; /* 0: the caller's model, 1 + i: model i */
	uint32_t id;
};

static size_t nr_models(const struct seg_par *p)
{
	return p->nr_g + p->nr_pm;
}

/* The groups' models, then the pieces'. */
static struct seg_group *model(const struct seg_par *p, size_t i)
{
	return i < p->nr_g ? p->g[i] : p->pm[i - p->nr_g];
}

/* An entry a piece's model made that is not the thread's: as it opened,
 * at an event the thread's builder decided, or after it went wrong. */
static bool weak(const struct seg_group *m, int k, uint64_t tag)
{
	return m->piece &&
	       (k == T_SEG || (tag & TAG_SPEC) || tag >= m->weak_from);
}

static int cmp_entry(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;

	if (a->tag != b->tag)
		return a->tag < b->tag ? -1 : 1;
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Every model's entries of table k from id first on (and the caller's
 * strings when k is T_STR), in the order one thread made them; the weak
 * ones left out. */
static struct entry *entries(const struct seg_par *p, int k, size_t first,
			     size_t *nr)
{
	size_t n = 0, at = 0;
	struct entry *v;

	if (k == T_STR)
		n += p->main_str.nr - first;
	for (size_t i = 0; i < nr_models(p); i++)
		n += model(p, i)->tag[k].nr - first;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	if (k == T_STR)
		for (size_t id = first; id < p->main_str.nr; id++)
			v[at++] = (struct entry){p->main_str.v[id], 0,
						 (uint32_t)id};
	for (size_t i = 0; i < nr_models(p); i++) {
		const struct seg_group *m = model(p, i);

		for (size_t id = first; id < m->tag[k].nr; id++)
			if (!weak(m, k, m->tag[k].v[id]))
				v[at++] = (struct entry){m->tag[k].v[id],
							 (uint32_t)i + 1,
							 (uint32_t)id};
	}
	qsort(v, at, sizeof(*v), cmp_entry);
	*nr = at;
	return v;
}

/* Every model's map of table k, MT_NONE (none yet) but for id 0 when
 * it is shared (first). */
static int alloc_maps(struct seg_par *p, int k, size_t first)
{
	for (size_t i = 0; i < nr_models(p); i++) {
		struct seg_group *m = model(p, i);
		size_t n = m->tag[k].nr;

		if (!(m->map[k] = malloc((n ? n : 1) * sizeof(uint32_t))))
			return -ENOMEM;
		memset(m->map[k], 0xff, (n ? n : 1) * sizeof(uint32_t));
		if (first)
			m->map[k][0] = 0;
	}
	return 0;
}

static int merge_strings(struct seg_par *p)
{
	struct mt_trace *t = p->a->t;
	struct mt_strtab s;
	struct entry *v;
	size_t n;
	int rc = -ENOMEM;

	if (alloc_maps(p, T_STR, 1) ||
	    !(p->main_map = calloc(p->main_str.nr + 1, sizeof(uint32_t))))
		return -ENOMEM;
	if (!(v = entries(p, T_STR, 1, &n)))
		return -ENOMEM;
	if (mt_strtab_init(&s))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct mt_strtab *from =
			v[i].src ? &model(p, v[i].src - 1)->t.strs : &t->strs;
		uint32_t id = mt_str_intern(&s, mt_str(from, v[i].id));

		if (id == MT_NONE)
			goto fail;
		if (v[i].src)
			model(p, v[i].src - 1)->map[T_STR][v[i].id] = id;
		else
			p->main_map[v[i].id] = id;
	}
	/* A weak string is the thread's only where the thread made it. */
	for (size_t i = p->nr_g; i < nr_models(p); i++) {
		struct seg_group *m = model(p, i);

		for (uint32_t id = 1; id < m->t.strs.nr; id++)
			if (m->map[T_STR][id] == MT_NONE &&
			    !mt_str_find(&s, mt_str(&m->t.strs, id),
					 &m->map[T_STR][id]))
				m->map[T_STR][id] = MT_NONE;
	}
	for (size_t i = 0; i < t->nr_procs; i++)
		t->procs[i].name = p->main_map[t->procs[i].name];
	for (size_t i = 0; i < t->nr_threads; i++)
		t->threads[i].name = p->main_map[t->threads[i].name];
	mt_strtab_free(&t->strs);
	t->strs = s;
	rc = 0;
fail:
	if (rc)
		mt_strtab_free(&s);
	free(v);
	return rc;
}

/* A frame's names in the merged model: false when one is not there. */
static bool frame_names(const struct seg_group *m, const struct mt_frame *f,
			uint32_t *name, uint32_t *dso, uint32_t *src)
{
	const uint32_t *ms = m->map[T_STR];

	*name = ms[f->name];
	*dso = ms[f->dso];
	*src = ms[f->source];
	return *name != MT_NONE && *dso != MT_NONE;
}

/* The models' frames (after frame 0, which all share) into t's. */
static int merge_frames(struct seg_par *p)
{
	struct mt_trace *t = p->a->t;
	struct entry *v;
	size_t n;

	if (alloc_maps(p, T_FRAME, 1) || !(v = entries(p, T_FRAME, 1, &n)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct seg_group *m = model(p, v[i].src - 1);
		const struct mt_frame *f = &m->t.frames[v[i].id];
		uint32_t name, dso, src, id;

		/* (a piece's frame whose names only it made, at events
		 * the thread's builder decided: no slice has it) */
		if (!frame_names(m, f, &name, &dso, &src))
			continue;
		id = mt_frame_intern(t, name, dso, f->addr);
		if (id == MT_NONE) {
			free(v);
			return -ENOMEM;
		}
		/* The first source given (frames.c's frame_source()) */
		if (f->source && src != MT_NONE && !t->frames[id].source)
			t->frames[id].source = src;
		m->map[T_FRAME][v[i].id] = id;
	}
	free(v);
	return 0;
}

static int merge_goroutines(struct seg_par *p)
{
	struct mt_trace *t = p->a->t;
	struct entry *v;
	size_t n;

	if (alloc_maps(p, T_GOR, 0) || !(v = entries(p, T_GOR, 0, &n)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct seg_group *m = model(p, v[i].src - 1);
		struct mt_goroutine r = m->t.goroutines[v[i].id];

		r.start = m->map[T_STR][r.start];
		if (!mt_trace_add_goroutine(t, &r)) {
			free(v);
			return -ENOMEM;
		}
		m->map[T_GOR][v[i].id] = (uint32_t)t->nr_goroutines;
	}
	free(v);
	return 0;
}

static int move_ends(struct seg_par *p)
{
	struct seg_ends_table *e = p->a->ends;
	size_t nr = e->nr;

	for (size_t i = 0; i < p->nr_g; i++)
		if (p->g[i]->ends.nr &&
		    p->g[i]->map[T_SEG][p->g[i]->ends.nr - 1] + (size_t)1 > nr)
			nr = p->g[i]->map[T_SEG][p->g[i]->ends.nr - 1] + 1;
	if (nr > e->nr) {
		if (mt_grow((void **)&e->v, &e->cap, nr, sizeof(*e->v)))
			return -ENOMEM;
		memset(e->v + e->nr, 0, (nr - e->nr) * sizeof(*e->v));
		e->nr = nr;
	}
	for (size_t i = 0; i < p->nr_g; i++) {
		struct seg_group *g = p->g[i];

		for (size_t id = 0; id < g->ends.nr; id++) {
			e->v[g->map[T_SEG][id]] = g->ends.v[id];
			memset(&g->ends.v[id], 0, sizeof(g->ends.v[id]));
		}
	}
	return 0;
}

/* The groups' segments (a piece's one is its thread's, made there). */
static int merge_segments(struct seg_par *p)
{
	struct mt_trace *t = p->a->t;
	struct entry *v;
	size_t n;

	if (alloc_maps(p, T_SEG, 0) || !(v = entries(p, T_SEG, 0, &n)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct seg_group *g = model(p, v[i].src - 1);
		struct mt_segment s = g->t.segments[v[i].id];

		s.end_reason = g->map[T_STR][s.end_reason];
		if (s.goroutine)
			s.goroutine = g->map[T_GOR][s.goroutine - 1];
		if (!mt_trace_add_segment(t, &s)) {
			free(v);
			return -ENOMEM;
		}
		g->map[T_SEG][v[i].id] = (uint32_t)t->nr_segments - 1;
	}
	free(v);
	return p->a->ends ? move_ends(p) : 0;
}

static int merge_ptwrites(struct seg_par *p)
{
	struct entry *v;
	size_t n;

	if (!(v = entries(p, T_PTW, 0, &n)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!mt_trace_add_ptwrite(
			    p->a->t,
			    &model(p, v[i].src - 1)->t.ptwrites[v[i].id])) {
			free(v);
			return -ENOMEM;
		}
	free(v);
	return 0;
}

static bool same_ids(const struct seg_group *g)
{
	for (int k = T_STR; k <= T_SEG; k++)
		for (size_t i = 0; i < g->tag[k].nr; i++)
			if (g->map[k][i] != i)
				return false;
	return true;
}

/* A thread's slices to the merged ids, moved into the caller's model. */
static int remap_thread(void *ctx, unsigned worker, void *job)
{
	struct seg_one *o = job;
	const struct seg_group *g = o->g;
	struct mt_thread *from = &o->g->t.threads[o->b->thread];
	struct mt_thread *to = &o->all->t->threads[o->thread];

	(void)ctx;
	(void)worker;
	for (size_t i = 0; !g->same && i < from->nr_slices; i++) {
		struct mt_slice *s = &from->slices[i];

		s->frame = g->map[T_FRAME][s->frame];
		s->site = g->map[T_STR][s->site];
		if (s->segment != MT_NONE)
			s->segment = g->map[T_SEG][s->segment];
	}
	to->slices = from->slices;
	to->nr_slices = from->nr_slices;
	to->cap_slices = from->cap_slices;
	from->slices = NULL;
	from->nr_slices = from->cap_slices = 0;
	return 0;
}

static int remap_all(struct seg_par *p)
{
	struct mt_pool *pool;
	int rc = mt_pool_start(&pool, p->max_workers, remap_thread, NULL, p,
			       2 * p->max_workers);

	if (rc)
		return rc;
	for (size_t i = 0; i < p->nr_g; i++)
		p->g[i]->same = same_ids(p->g[i]);
	for (size_t i = 0; i < p->a->nr && !rc; i++)
		if (p->a->one[i]->b)
			rc = mt_pool_put(pool, p->a->one[i]);
	{
		int erc = mt_pool_end(pool);

		return rc ? rc : erc;
	}
}

int seg_par_finish(struct seg_par *p)
{
	int rc = 0;

	for (unsigned i = 0; i < p->nr_w; i++) {
		struct par_worker *w = &p->w[i];
		int src = w->cur->n ? submit(w) : 0;

		w->cur->finish = true;
		rc = rc ? rc : src;
		src = mt_jobs_put(w->q, w->cur);
		rc = rc ? rc : src;
	}
	{
		int prc = seg_pieces_end(p);

		rc = rc ? rc : prc;
	}
	for (unsigned i = 0; i < p->nr_w; i++) {
		int erc = mt_jobs_end(p->w[i].q);

		p->w[i].q = NULL;
		rc = rc ? rc : erc;
	}
	if (rc ||
	    (rc = seg_tag_new(&p->main_str, p->a->t->strs.nr, TAG_EV(p->seq))))
		return rc;
	/* Goroutines before segments, which name them; the strings before
	 * all, which everything names. */
	if ((rc = merge_strings(p)) || (rc = merge_frames(p)) ||
	    (rc = merge_goroutines(p)) || (rc = merge_segments(p)) ||
	    (rc = merge_ptwrites(p)))
		return rc;
	return remap_all(p);
}
