/* SPDX-License-Identifier: MIT */
/*
 * A thread's events built in pieces at once, the model the same as one
 * builder makes of them all.
 *
 * The caller's thread cuts each thread's events into pieces (after a
 * call, a return or a jump, so that the function running where a piece
 * begins is the target's).  Piece 0 goes to the thread's own builder.
 * Every later piece gets a builder of its own, in a model of its own,
 * that opens in the function running where the piece begins and builds
 * what it can decide alone (spec.c); of each event it could not, it
 * keeps its stack before and after.  The pieces are joined in order, on
 * one thread at a time (util's pool): the thread's builder takes the
 * piece's slices, decides those events itself on the real stack (the
 * piece's frames above the ones it began with put on it), and checks
 * that the stack it has after each is the one the piece's builder went
 * on with: the same functions and inlined calls, at the same depths.
 * Where it is not, or where the piece's builder stopped (a segment ended
 * or began, a program was exec'd), the thread's builder builds the rest
 * of the piece itself, as it would have.  So the model is the same at
 * every -j, and the same as one builder's: slices, their order, depths
 * and parents, and the ids.  The slices it takes are put in the thread's
 * model's ids; the piece's model stays to date its entries for par.c's
 * merge, but for those it made as it opened, at the events the thread's
 * builder decided, or after it went wrong: those one builder never made
 * there.
 */
#include "segments/seg_internal.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE_EVENTS 65536 /* the events of a piece, by default */
/* How far past their ends the threads' slice arrays have their pages
 * populated after each join, all of them together: a few pieces' slices
 * (8 MiB), which a capture of one thread needs, shared by the threads
 * of a capture of several, whose joins run side by side anyway. */
#define AHEAD_SLICES (((size_t)8 << 20) / sizeof(struct mt_slice))
/* room past a full piece for the events up to where a piece can begin */
#define SEAM_SLACK 64
/* Pieces out at once: one building on each thread, and two more for
 * the one joining and the one the caller fills (each holds its events
 * and slices: about 4 MB at the default size).  No more than
 * PIECES_BUSY build at once, whatever the threads: building takes a
 * fifth of the decode's work, so that many keep up with the 64 threads
 * the decode runs on at most, and each piece more out only held its
 * 4 MB (at -j 64 the bench capture's peak was 1432 MiB, where -j 16's
 * is 1066 MiB). */
#define PIECES_BUSY 16
#define PIECES_OUT(p)                                                          \
	((size_t)((p)->max_workers < PIECES_BUSY ? (p)->max_workers            \
						 : PIECES_BUSY) +              \
	 2)

/* An event a piece's builder could not decide alone. */
struct spec_touch {
	size_t ev;  /* its index in the piece */
	bool stop;  /* the builder stopped there */
	size_t pre; /* its stack before: snap[pre .. pre + nr_pre) */
	size_t nr_pre;
	size_t post, nr_post; /* and after (not when it stopped) */
	size_t base;	      /* spec_base before it */
	size_t slices_before, slices_after;
	uint64_t stop_ip; /* the builder's stop_ip before it */
};

struct seg_piece {
	struct seg_piece *prev, *next; /* the pieces put and not finished */
	struct seg_one *o;
	size_t k; /* the thread's k-th */
	/* Its n events: in runs kept where the decode left them (span)
	 * until a builder takes the piece, so that the thread handing
	 * them over copies none; or, when the decode handed them without a
	 * hold, and once a builder has the piece, in ev and seq. */
	struct dec_sink_ev *ev;
	uint64_t *seq; /* each event's number */
	size_t n, cap;
	struct ev_span {
		const struct dec_sink_ev *ev;
		size_t n;
		uint64_t seq; /* its first event's number */
		struct dec_hold *hold;
	} * span;
	size_t nr_span, cap_span;
	uint64_t seam_time, seam_ip, time0;

	/* Its own builder (k > 0), its model and context. */
	struct seg_group *m;
	struct seg_builder *b;
	struct seg_one so;
	struct frame *snap; /* stacks kept */
	size_t nr_snap, cap_snap;
	size_t open_depth, open_slices; /* as it opened: snap[0 ..) */
	struct spec_touch *touch;
	size_t nr_touch, cap_touch;
	size_t end, nr_end; /* its stack at the end: snap[end ..) */
	uint64_t end_stop_ip, end_time;
	size_t stop; /* the first event it did not build (n: none) */
	/* it saw Go's scheduler, which the thread's program was not thought
	 * to have: the thread's builder builds it all */
	bool went_go;
	/* what it interned at the event being built ((frame << 32) | id) */
	uint64_t *noted;
	size_t nr_noted, cap_noted;
	/* The join: its slices' index in the thread's array, its
	 * levels' offset from the thread builder's */
	uint32_t *smap;
	uint32_t *fids; /* its frame ids as the thread's model has them */
	uint32_t *sids; /* and its string ids */
	int32_t delta;
	size_t t_first; /* the thread's first slice from this piece */
	/* built, then joined, and how the join went (under live_lock) */
	bool built, joined;
	int join_rc;
	uint64_t touches, rebuilt; /* the join's counts */
};

void seg_piece_free(struct seg_piece *pc)
{
	if (!pc)
		return;
	free(pc->ev);
	free(pc->seq);
	for (size_t i = 0; i < pc->nr_span; i++)
		dec_hold_drop(pc->span[i].hold);
	free(pc->span);
	seg_builder_free(pc->b);
	free(pc->snap);
	free(pc->touch);
	free(pc->noted);
	free(pc->smap);
	free(pc->fids);
	free(pc->sids);
	/* (the model goes to the merge, or here when it never got there) */
	seg_group_free(pc->m);
	free(pc);
}

/* Keeps b's stack: its place in pc->snap. */
static int keep_stack(struct seg_piece *pc, size_t *at, size_t *nr)
{
	const struct seg_builder *b = pc->b;

	if (mt_grow((void **)&pc->snap, &pc->cap_snap, pc->nr_snap + b->depth,
		    sizeof(*pc->snap)))
		return -ENOMEM;
	memcpy(pc->snap + pc->nr_snap, b->stack, b->depth * sizeof(*b->stack));
	*at = pc->nr_snap;
	*nr = b->depth;
	pc->nr_snap += b->depth;
	return 0;
}

static struct spec_touch *touch_new(struct seg_piece *pc, size_t i, bool stop)
{
	struct spec_touch *t;

	if (mt_grow((void **)&pc->touch, &pc->cap_touch, pc->nr_touch + 1,
		    sizeof(*pc->touch)))
		return NULL;
	t = &pc->touch[pc->nr_touch++];
	*t = (struct spec_touch){.ev = i,
				 .stop = stop,
				 .base = pc->b->spec_base,
				 .slices_before =
					 pc->b->t->threads[0].nr_slices,
				 .stop_ip = pc->b->stop_ip};
	return keep_stack(pc, &t->pre, &t->nr_pre) ? NULL : t;
}

/*
 * A finished piece's slice array serves the next piece's builder, as
 * many as can be out at once: grown from nothing for each piece, the
 * arrays were a third of the conversion's page faults and their copies
 * as they grew.
 */
static void slices_put(struct seg_par *p, struct mt_thread *th)
{
	pthread_mutex_lock(&p->live_lock);
	if (th->slices && p->nr_spare_sl < PIECES_OUT(p) &&
	    !mt_grow((void **)&p->spare_sl, &p->cap_spare_sl,
		     p->nr_spare_sl + 1, sizeof(*p->spare_sl))) {
		p->spare_sl[p->nr_spare_sl++] =
			(struct seg_spare_slices){th->slices, th->cap_slices};
		th->slices = NULL;
	}
	pthread_mutex_unlock(&p->live_lock);
	free(th->slices);
}

static void slices_get(struct seg_par *p, struct mt_thread *th)
{
	pthread_mutex_lock(&p->live_lock);
	if (p->nr_spare_sl && !th->slices) {
		p->nr_spare_sl--;
		th->slices = p->spare_sl[p->nr_spare_sl].v;
		th->cap_slices = p->spare_sl[p->nr_spare_sl].cap;
	}
	pthread_mutex_unlock(&p->live_lock);
}

/* A piece's model: no string of the caller's (the caller's thread goes
 * on interning them), what it makes as it opens not the thread's. */
static struct seg_group *piece_model(const struct seg_one *o)
{
	struct seg_group *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->piece = true;
	m->weak_from = UINT64_MAX;
	if (mt_trace_init(&m->t) ||
	    !mt_trace_add_thread(&m->t, o->pid, o->d->tid, "") ||
	    seg_group_tag(m, TAG_SPEC)) {
		seg_group_free(m);
		return NULL;
	}
	return m;
}

static void on_noted(void *ctx, bool frame, uint32_t id)
{
	struct seg_piece *pc = ctx;

	/* (out of memory: the entry keeps the date it had, TAG_SPEC at
	 * worst, and the merge finds it no less) */
	if (!mt_grow((void **)&pc->noted, &pc->cap_noted, pc->nr_noted + 1,
		     sizeof(*pc->noted)))
		pc->noted[pc->nr_noted++] = (uint64_t)frame << 32 | id;
}

/*
 * Dates what event i made: at an event the thread's builder decides
 * (weak), the piece's entries are not the thread's; at one it built
 * alone, one builder makes what it interned there (if not before), new
 * in its model or not.
 */
static int date_event(struct seg_piece *pc, size_t i, bool weak)
{
	struct seg_group *m = pc->m;
	uint64_t tag = TAG_EV(pc->seq[i]);
	int rc = 0;

	/* In the order it interned them: new ones, and those it had only
	 * from events another builder decided, are made here by one builder
	 * in that order. */
	for (size_t j = 0; !weak && !rc && j < pc->nr_noted; j++) {
		struct tags *tg = &m->tag[pc->noted[j] >> 32 ? T_FRAME : T_STR];
		uint32_t id = (uint32_t)pc->noted[j];
		uint64_t at = tag | (j < TAG_SUB_MAX ? j + 1 : TAG_SUB_MAX);

		if (id >= tg->nr)
			rc = seg_tag_new(tg, (size_t)id + 1, at);
		else if (tg->v[id] & TAG_SPEC)
			tg->v[id] = at;
	}
	pc->nr_noted = 0;
	return rc ? rc : seg_group_tag(m, weak ? tag | TAG_SPEC : tag);
}

/* The piece's events, from where the piece before stopped. */
static int spec_build(struct seg_piece *pc)
{
	struct seg_one *o = pc->o;
	const struct dec_thread *d = o->d;
	struct img *im = o->all->im;
	size_t x = 0, i;
	int rc;

	if (!(pc->m = piece_model(o)))
		return -ENOMEM;
	slices_get(o->all->par, &pc->m->t.threads[0]);
	pc->so = (struct seg_one){.d = o->d, .pid = o->pid, .all = o->all};
	pc->so.space =
		img_space_until(im, o->pid, pc->seam_time, &pc->so.space_until);
	if ((rc = seg_builder_new(&pc->b, &pc->m->t, 0, NULL, seg_symbolize_pid,
				  &pc->so)) ||
	    (rc = seg_spec_open(pc->b, pc->seam_time, pc->seam_ip,
				pc->time0)) ||
	    (rc = seg_group_tag(pc->m, TAG_SPEC)) ||
	    (rc = keep_stack(pc, &x, &pc->open_depth)))
		return rc;
	pc->open_slices = pc->m->t.threads[0].nr_slices;
	pc->b->noted = on_noted;
	pc->b->noted_ctx = pc;
	/* The execs the thread's builder has not gone past. */
	for (x = 0; x < d->nr_execs && d->execs[x] <= pc->seam_time; x++)
		;
	for (i = 0; i < pc->n; i++) {
		const struct dec_sink_ev *e = &pc->ev[i];
		struct spec_touch *t = NULL;
		enum seg_spec s;

		/* (what the check looks up is the event's too) */
		pc->nr_noted = 0;
		if (x < d->nr_execs && d->execs[x] <= e->time)
			s = SPEC_STOP;
		else {
			if (e->time >= pc->so.space_until) {
				uint32_t sp =
					img_space_until(im, o->pid, e->time,
							&pc->so.space_until);

				if (sp != pc->so.space)
					seg_builder_forget_names(pc->b);
				pc->so.space = sp;
			}
			s = seg_spec_check(pc->b, e->kind, e->ip, &rc);
			if (rc)
				return rc;
		}
		if (s != SPEC_OWN && !(t = touch_new(pc, i, s == SPEC_STOP)))
			return -ENOMEM;
		if (s == SPEC_STOP)
			break;
		pc->b->spec_nocache = t != NULL;
		rc = seg_feed(pc->b, e->time, e->kind, e->ip, e->aux);
		pc->b->spec_nocache = false;
		if (rc || (rc = date_event(pc, i, t != NULL)))
			return rc;
		if (pc->b->go_seen) {
			pc->went_go = true;
			break;
		}
		if (t) {
			t->slices_after = pc->b->t->threads[0].nr_slices;
			if (keep_stack(pc, &t->post, &t->nr_post))
				return -ENOMEM;
			seg_spec_rebase(pc->b);
		}
	}
	pc->stop = i;
	pc->end_stop_ip = pc->b->stop_ip;
	pc->end_time = pc->b->last_time;
	return keep_stack(pc, &pc->end, &pc->nr_end);
}

static int piece_flat(struct seg_par *p, struct seg_piece *pc);
static void built(struct seg_par *p, struct seg_piece *pc, int rc);

static int build_piece(struct seg_par *p, struct seg_piece *pc)
{
	struct seg_one *o = pc->o;
	int rc;

	if ((rc = piece_flat(p, pc)))
		return rc;
	if (pc->k)
		return spec_build(pc);
	if (!o->b && (rc = seg_one_start(o)))
		return rc;
	for (size_t i = 0; i < pc->n; i++)
		if ((rc = seg_take(o, pc->ev[i].time, pc->ev[i].kind,
				   pc->ev[i].ip, pc->ev[i].aux)) ||
		    (rc = seg_group_tag(o->g, TAG_EV(pc->seq[i]))))
			return rc;
	return 0;
}

static int piece_work(void *ctx, unsigned worker, void *job)
{
	struct seg_piece *pc = job;
	int rc = build_piece(ctx, pc);

	(void)worker;
	built(ctx, pc, rc);
	return rc;
}

/*
 * The join.
 */

static const char *str_or(const struct mt_trace *t, uint32_t id)
{
	return id ? mt_str(&t->strs, id) : "";
}

/* A piece's frame id as the thread's model has it, interned there: a
 * frame the piece's builder made alone, which one builder makes too. */
static int thread_fid(struct seg_piece *pc, uint32_t fid, uint32_t *out)
{
	const struct mt_trace *st = &pc->m->t;
	struct mt_trace *ct = &pc->o->g->t;
	const struct mt_frame *f = &st->frames[fid];
	uint32_t name, dso, src;

	if ((*out = pc->fids[fid]) != MT_NONE)
		return 0;
	name = mt_str_intern(&ct->strs, str_or(st, f->name));
	dso = mt_str_intern(&ct->strs, str_or(st, f->dso));
	src = mt_str_intern(&ct->strs, str_or(st, f->source));
	if (name == MT_NONE || dso == MT_NONE || src == MT_NONE ||
	    (*out = mt_frame_intern(ct, name, dso, f->addr)) == MT_NONE)
		return -ENOMEM;
	if (src && !ct->frames[*out].source)
		ct->frames[*out].source = src;
	pc->fids[fid] = *out;
	return 0;
}

/* A piece's string id as the thread's model has it (interned there). */
static int thread_sid(struct seg_piece *pc, uint32_t sid, uint32_t *out)
{
	if (sid && pc->sids[sid] == MT_NONE &&
	    (pc->sids[sid] = mt_str_intern(&pc->o->g->t.strs,
					   mt_str(&pc->m->t.strs, sid))) ==
		    MT_NONE)
		return -ENOMEM;
	*out = sid ? pc->sids[sid] : 0;
	return 0;
}

/* A piece's string id as the thread's model has it, if it has it. */
static uint32_t find_sid(struct seg_piece *pc, uint32_t sid)
{
	uint32_t id;

	if (!sid || pc->sids[sid] != MT_NONE)
		return sid ? pc->sids[sid] : 0;
	if (!mt_str_find(&pc->o->g->t.strs, mt_str(&pc->m->t.strs, sid), &id))
		return MT_NONE;
	return pc->sids[sid] = id;
}

/* The same function (or inlined call, or pseudo frame), by its range and
 * what names it (an unnamed function's frames differ by address: where
 * each builder first saw it; two inlined functions of one name share a
 * frame, whose source is the first each builder gave it). */
static bool same_frame(struct seg_piece *pc, const struct frame *s,
		       const struct frame *c)
{
	const struct mt_frame *fs = &pc->m->t.frames[s->fid];
	const struct mt_frame *fc = &pc->o->g->t.frames[c->fid];

	return s->kind == c->kind && s->lo == c->lo && s->hi == c->hi &&
	       s->in == c->in && s->inl_code == c->inl_code && s->go == c->go &&
	       find_sid(pc, fs->name) == fc->name &&
	       find_sid(pc, fs->dso) == fc->dso && !fs->source == !fc->source;
}

/*
 * The piece's slices [from, to) onto the thread's, in its model's ids
 * (what the piece built alone one builder makes as well: those entries
 * are the thread's, and the piece's model dates them for the merge).
 */
static int take_slices(struct seg_piece *pc, size_t from, size_t to)
{
	struct seg_one *o = pc->o;
	struct seg_builder *c = o->b;
	struct mt_thread *th = &o->g->t.threads[c->thread];
	const struct mt_slice *v = pc->m->t.threads[0].slices;
	size_t n = th->nr_slices;
	int rc = 0;

	if (from >= to)
		return 0;
	if (seg_slices_room(c, th, n + to - from))
		return -ENOMEM;
	/* (a thread's joins run one at a time: on a capture of one thread
	 * this loop is a part of the conversion that does not spread over
	 * the cores, so an id found before is looked up here and only a
	 * new one costs a call) */
	for (size_t i = from; i < to; i++, n++) {
		struct mt_slice *s = &th->slices[n];
		uint32_t frame, site;

		*s = v[i];
		/* Every slice it built alone has a parent it had. */
		if (s->parent == MT_NONE || pc->smap[s->parent] == MT_NONE) {
			rc = -EPROTO;
			break;
		}
		frame = pc->fids[s->frame];
		if (frame == MT_NONE && (rc = thread_fid(pc, s->frame, &frame)))
			break;
		site = s->site ? pc->sids[s->site] : 0;
		if (site == MT_NONE && (rc = thread_sid(pc, s->site, &site)))
			break;
		s->frame = frame;
		s->site = site;
		s->parent = pc->smap[s->parent];
		s->depth = (uint32_t)((int32_t)s->depth + pc->delta);
		s->segment = c->seg_id;
		pc->smap[i] = (uint32_t)n;
	}
	th->nr_slices = n;
	return rc;
}

/* The frames on top down to the first that is no inlined call: all a
 * builder reads of the frames it began with until it asks again. */
static size_t top_region(const struct frame *snap, size_t nr)
{
	size_t k = 0;

	while (k < nr && snap[nr - 1 - k].kind == FR_INLINE)
		k++;
	return k < nr ? k + 1 : k;
}

/*
 * The thread's builder's stack as the piece's was (snap, nr frames, the
 * first base of them those it began with): the top of those is the top
 * of the thread builder's already (as the last join left it), the
 * others go on it.
 */
static int put_stack(struct seg_piece *pc, const struct frame *snap, size_t nr,
		     size_t base, uint64_t stop_ip)
{
	struct seg_builder *c = pc->o->b;
	size_t k = top_region(snap, base);

	if (c->depth < k || nr < base)
		return -EPROTO;
	for (size_t j = base; j < nr; j++)
		if (pc->smap[snap[j].slice] == MT_NONE)
			return -EPROTO;
	/* Control came into the function on top since. */
	for (size_t j = base - k; j < base; j++)
		if (snap[j].arrived)
			c->stack[c->depth - base + j].at = snap[j].at;
	if (mt_grow((void **)&c->stack, &c->cap, c->depth + nr - base,
		    sizeof(*c->stack)))
		return -ENOMEM;
	for (size_t j = base; j < nr; j++) {
		struct frame f = snap[j];
		int rc;

		f.slice = pc->smap[f.slice];
		f.level += pc->delta;
		f.arrived = false;
		if ((rc = thread_fid(pc, snap[j].fid, &f.fid)))
			return rc;
		c->stack[c->depth++] = f;
	}
	c->stop_ip = stop_ip;
	return 0;
}

/*
 * The top of the piece's stack (snap, nr) is the top of the thread
 * builder's: the same function, with the same calls inlined in it open,
 * at the same depths one to the other; its slices are theirs from now
 * on, and the depths of the piece's next slices follow.  Below that the
 * piece's builder reads nothing before it asks again.
 */
static bool same_stack(struct seg_piece *pc, const struct frame *snap,
		       size_t nr)
{
	const struct seg_builder *c = pc->o->b;
	size_t k = top_region(snap, nr), at;

	if (!k || c->depth < k || top_region(c->stack, c->depth) != k)
		return false;
	at = c->depth - k;
	pc->delta = c->stack[c->depth - 1].level - snap[nr - 1].level;
	for (size_t j = 0; j < k; j++) {
		const struct frame *s = &snap[nr - k + j],
				   *f = &c->stack[at + j];

		if (!same_frame(pc, s, f) || f->level - s->level != pc->delta)
			return false;
	}
	for (size_t j = 0; j < k; j++)
		pc->smap[snap[nr - k + j].slice] = c->stack[at + j].slice;
	return true;
}

/* The thread's builder builds the piece's events from i on. */
static int rebuild(struct seg_piece *pc, size_t i)
{
	struct seg_one *o = pc->o;
	struct seg_builder *c = o->b;
	struct mt_thread *th = &o->g->t.threads[c->thread];
	int rc;

	/* Frames open from the piece's slices: what the piece's builder
	 * made of their end is its guess. */
	for (size_t j = 0; j < c->depth; j++)
		if (c->stack[j].slice >= pc->t_first)
			th->slices[c->stack[j].slice].dur = 0;
	if (pc->m && i < pc->n)
		pc->m->weak_from = TAG_EV(pc->seq[i]);
	pc->rebuilt = pc->n - i;
	for (; i < pc->n; i++)
		if ((rc = seg_take(o, pc->ev[i].time, pc->ev[i].kind,
				   pc->ev[i].ip, pc->ev[i].aux)) ||
		    (rc = seg_group_tag(o->g, TAG_EV(pc->seq[i]))))
			return rc;
	return 0;
}

/* Whether the thread's builder is where the piece's began. */
static bool fits(struct seg_piece *pc)
{
	const struct seg_builder *c = pc->o->b;

	if (!c || !pc->m || pc->went_go || !c->open || c->ended || c->go_seen ||
	    c->spec || !c->have_time0 || c->time0 != pc->time0 ||
	    top_region(pc->snap, pc->open_depth) != pc->open_depth)
		return false;
	return same_stack(pc, pc->snap, pc->open_depth);
}

static int join(struct seg_piece *pc)
{
	struct seg_one *o = pc->o;
	struct seg_builder *c = o->b;
	size_t done;
	int rc;

	pc->t_first = c ? o->g->t.threads[c->thread].nr_slices : 0;
	if (!c)
		return -EPROTO;
	if (!(pc->smap = malloc((pc->m->t.threads[0].nr_slices + 1) *
				sizeof(*pc->smap))) ||
	    !(pc->fids = malloc(pc->m->t.nr_frames * sizeof(*pc->fids))))
		return -ENOMEM;
	memset(pc->fids, 0xff, pc->m->t.nr_frames * sizeof(*pc->fids));
	if (!(pc->sids = malloc(pc->m->t.strs.nr * sizeof(*pc->sids))))
		return -ENOMEM;
	memset(pc->sids, 0xff, pc->m->t.strs.nr * sizeof(*pc->sids));
	memset(pc->smap, 0xff,
	       (pc->m->t.threads[0].nr_slices + 1) * sizeof(*pc->smap));
	if (!fits(pc))
		return rebuild(pc, 0);
	done = pc->open_slices;
	for (size_t k = 0; k < pc->nr_touch; k++) {
		struct spec_touch *t = &pc->touch[k];
		const struct dec_sink_ev *e = &pc->ev[t->ev];

		if ((rc = take_slices(pc, done, t->slices_before)))
			return rc;
		done = t->slices_before;
		if ((rc = put_stack(pc, pc->snap + t->pre, t->nr_pre, t->base,
				    t->stop_ip)))
			return rc;
		if (t->stop)
			return rebuild(pc, t->ev);
		if ((rc = seg_take(o, e->time, e->kind, e->ip, e->aux)) ||
		    (rc = seg_group_tag(o->g, TAG_EV(pc->seq[t->ev]))))
			return rc;
		pc->touches++;
		if (!same_stack(pc, pc->snap + t->post, t->nr_post))
			return rebuild(pc, t->ev + 1);
		done = t->slices_after;
	}
	if ((rc = take_slices(pc, done, pc->m->t.threads[0].nr_slices)))
		return rc;
	if ((rc = put_stack(pc, pc->snap + pc->end, pc->nr_end,
			    pc->nr_touch ? pc->touch[pc->nr_touch - 1].nr_post
					 : pc->open_depth,
			    pc->end_stop_ip)))
		return rc;
	c->last_time = pc->end_time;
	/* (a piece that stopped early has its stop among its touches) */
	return pc->stop < pc->n ? -EPROTO : 0;
}

/* Keeps the model for the merge, lets the rest go. */
static int keep_model(struct seg_par *p, struct seg_piece *pc)
{
	struct mt_thread *th;

	if (!pc->m)
		return 0;
	th = &pc->m->t.threads[0];
	slices_put(p, th);
	th->slices = NULL;
	th->nr_slices = th->cap_slices = 0;
	/* (threads join at once: the merge orders the models' entries by
	 * the events that dated them, each a thread's own) */
	pthread_mutex_lock(&p->live_lock);
	if (mt_grow((void **)&p->pm, &p->cap_pm, p->nr_pm + 1,
		    sizeof(*p->pm))) {
		pthread_mutex_unlock(&p->live_lock);
		return -ENOMEM;
	}
	p->pm[p->nr_pm++] = pc->m;
	pthread_mutex_unlock(&p->live_lock);
	pc->m = NULL;
	return 0;
}

/* Put: the pool has it; finished, or left by a pool that failed. */
static void live_add(struct seg_par *p, struct seg_piece *pc)
{
	pthread_mutex_lock(&p->live_lock);
	pc->next = p->live;
	if (p->live)
		p->live->prev = pc;
	p->live = pc;
	pthread_mutex_unlock(&p->live_lock);
}

/* A finished piece's event arrays serve the next piece put (no pages
 * to fault in again), as many as can be out at once. */
static void live_free(struct seg_par *p, struct seg_piece *pc)
{
	pthread_mutex_lock(&p->live_lock);
	if (pc->prev)
		pc->prev->next = pc->next;
	else
		p->live = pc->next;
	if (pc->next)
		pc->next->prev = pc->prev;
	if (pc->cap == p->piece_events + SEAM_SLACK &&
	    p->nr_spare < PIECES_OUT(p) &&
	    !mt_grow((void **)&p->spare, &p->cap_spare, p->nr_spare + 1,
		     sizeof(*p->spare))) {
		p->spare[p->nr_spare++] = (struct seg_spare){pc->ev, pc->seq};
		pc->ev = NULL;
		pc->seq = NULL;
	}
	pthread_mutex_unlock(&p->live_lock);
	seg_piece_free(pc);
}

/* Event arrays for a piece of need events at least: a finished one's,
 * or new. */
static int piece_arrays(struct seg_par *p, struct seg_piece *pc, size_t need)
{
	pc->cap = p->piece_events + SEAM_SLACK;
	if (need > pc->cap)
		pc->cap = need;
	pthread_mutex_lock(&p->live_lock);
	if (p->nr_spare && pc->cap == p->piece_events + SEAM_SLACK) {
		p->nr_spare--;
		pc->ev = p->spare[p->nr_spare].ev;
		pc->seq = p->spare[p->nr_spare].seq;
	}
	pthread_mutex_unlock(&p->live_lock);
	if (!pc->ev)
		pc->ev = malloc(pc->cap * sizeof(*pc->ev));
	if (!pc->seq)
		pc->seq = malloc(pc->cap * sizeof(*pc->seq));
	return pc->ev && pc->seq ? 0 : -ENOMEM;
}

/* The piece's runs into its arrays (on the builder's thread), their
 * blocks let go. */
static int piece_flat(struct seg_par *p, struct seg_piece *pc)
{
	size_t at = 0;

	if (!pc->nr_span)
		return 0;
	if (piece_arrays(p, pc, pc->n))
		return -ENOMEM;
	for (size_t i = 0; i < pc->nr_span; i++) {
		const struct ev_span *r = &pc->span[i];

		memcpy(pc->ev + at, r->ev, r->n * sizeof(*r->ev));
		for (size_t j = 0; j < r->n; j++)
			pc->seq[at + j] = r->seq + j;
		at += r->n;
		dec_hold_drop(r->hold);
	}
	free(pc->span);
	pc->span = NULL;
	pc->nr_span = pc->cap_span = 0;
	return 0;
}

/* k events kept where they are: a run of the last one's, or one more. */
static int span_add(struct seg_par *p, struct seg_piece *pc,
		    const struct dec_sink_ev *ev, size_t k,
		    struct dec_hold *hold)
{
	struct ev_span *r = pc->nr_span ? &pc->span[pc->nr_span - 1] : NULL;

	if (r && r->hold == hold && r->ev + r->n == ev &&
	    r->seq + r->n == p->seq) {
		r->n += k;
	} else {
		if (mt_grow((void **)&pc->span, &pc->cap_span, pc->nr_span + 1,
			    sizeof(*pc->span)))
			return -ENOMEM;
		dec_hold_take(hold);
		pc->span[pc->nr_span++] = (struct ev_span){ev, k, p->seq, hold};
	}
	pc->n += k;
	p->seq += k;
	return 0;
}

/* k events copied into the piece's arrays. */
static int copy_in(struct seg_par *p, struct seg_piece *pc,
		   const struct dec_sink_ev *ev, size_t k)
{
	if (pc->nr_span && piece_flat(p, pc))
		return -ENOMEM;
	if (!pc->ev && piece_arrays(p, pc, pc->n + k))
		return -ENOMEM;
	if (pc->n + k > pc->cap) {
		uint64_t *seq;

		if (mt_grow((void **)&pc->ev, &pc->cap, pc->n + k,
			    sizeof(*pc->ev)) ||
		    !(seq = realloc(pc->seq, pc->cap * sizeof(*pc->seq))))
			return -ENOMEM;
		pc->seq = seq;
	}
	memcpy(pc->ev + pc->n, ev, k * sizeof(*ev));
	for (size_t i = 0; i < k; i++)
		pc->seq[pc->n + i] = p->seq++;
	pc->n += k;
	return 0;
}

/*
 * The thread's slice array after a join: its pages a little past its end
 * populated by the pager while the next pieces are built, grown now if
 * they are not there yet.  Otherwise its joins, which run on one thread
 * at a time, stopped at each new page: half their time on a capture of
 * one thread.
 */
static int page_ahead(struct seg_par *p, struct seg_one *o)
{
	struct seg_builder *c = o->b;
	struct mt_thread *th;
	size_t want;

	if (!p->pager || !c)
		return 0;
	th = &o->g->t.threads[c->thread];
	if (!c->ahead) {
		if (!(c->ahead = mt_pager_watch(p->pager)))
			return 0;
		__atomic_add_fetch(&p->nr_watched, 1, __ATOMIC_RELAXED);
		mt_ahead_lock(c->ahead);
		mt_ahead_grown(c->ahead, th->slices,
			       th->cap_slices * sizeof(*th->slices));
	}
	/* (and no more than a quarter of what it has: a small thread's
	 * faults are few) */
	want = AHEAD_SLICES / __atomic_load_n(&p->nr_watched, __ATOMIC_RELAXED);
	want = th->nr_slices +
	       (want < th->nr_slices / 4 ? want : th->nr_slices / 4);
	if (seg_slices_room(c, th, want))
		return -ENOMEM;
	mt_ahead_want(p->pager, c->ahead, want * sizeof(*th->slices));
	return 0;
}

/* The pager's watches end, the pages populated past each array's end
 * given back; then the pager. */
static void pager_end(struct seg_par *p)
{
	for (size_t i = 0; p->pager && i < p->a->nr; i++) {
		struct seg_builder *c = p->a->one[i]->b;

		if (!c || !c->ahead)
			continue;
		mt_ahead_release(p->pager, c->ahead,
				 c->t->threads[c->thread].nr_slices *
					 sizeof(struct mt_slice));
		c->ahead = NULL;
	}
	mt_pager_end(p->pager);
	p->pager = NULL;
}

void seg_pieces_free(struct seg_par *p)
{
	if (p->pieces)
		mt_pool_end(p->pieces);
	p->pieces = NULL;
	pager_end(p);
	while (p->live)
		live_free(p, p->live);
	for (size_t i = 0; i < p->nr_spare; i++) {
		free(p->spare[i].ev);
		free(p->spare[i].seq);
	}
	free(p->spare);
	p->spare = NULL;
	p->nr_spare = 0;
	for (size_t i = 0; i < p->nr_spare_sl; i++)
		free(p->spare_sl[i].v);
	free(p->spare_sl);
	p->spare_sl = NULL;
	p->nr_spare_sl = 0;
	/* (pieces not put: the conversion failed) */
	for (size_t i = 0; i < p->a->nr; i++) {
		seg_piece_free(p->a->one[i]->cur);
		p->a->one[i]->cur = NULL;
	}
}

/* Piece pc joined: its thread's builder takes it (piece 0 it built
 * itself).  Returns its error. */
static int join_one(struct seg_par *p, struct seg_piece *pc)
{
	uint64_t a = mt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int rc = 0;

	if (pc->k) {
		rc = join(pc);
		if (!rc)
			rc = keep_model(p, pc);
	}
	if (!rc)
		rc = page_ahead(p, pc->o);
	pc->o->join_cpu_s += mt_since_s(CLOCK_THREAD_CPUTIME_ID, a);
	return rc;
}

/* o's piece k, built and not joined, or NULL (under live_lock). */
static struct seg_piece *built_piece(struct seg_par *p, struct seg_one *o,
				     size_t k)
{
	for (struct seg_piece *pc = p->live; pc; pc = pc->next)
		if (pc->o == o && pc->k == k)
			return pc->built && !pc->joined ? pc : NULL;
	return NULL;
}

/*
 * Piece pc is built (rc: how).  A thread's pieces join in order, but the
 * threads' pieces at once: whoever built the piece its thread's joins
 * wait for joins it, and the ones after it built by then.  (One pool
 * finishing every piece in order joined the threads one after another:
 * on a capture of 16 threads, all their joins on one thread at a time.)
 */
static void built(struct seg_par *p, struct seg_piece *pc, int rc)
{
	struct seg_one *o = pc->o;

	pthread_mutex_lock(&p->live_lock);
	pc->built = true;
	if (rc && !p->join_err)
		p->join_err = rc;
	if (rc || o->joining) {
		pthread_cond_broadcast(&p->joined);
		pthread_mutex_unlock(&p->live_lock);
		return;
	}
	o->joining = true;
	while (!p->join_err && (pc = built_piece(p, o, o->next_join))) {
		pthread_mutex_unlock(&p->live_lock);
		rc = join_one(p, pc);
		pthread_mutex_lock(&p->live_lock);
		pc->join_rc = rc;
		pc->joined = true;
		p->nr_touches += pc->touches;
		p->nr_rebuilt += pc->rebuilt;
		if (o->join_cpu_s > p->join_cpu_s)
			p->join_cpu_s = o->join_cpu_s;
		if (rc && !p->join_err)
			p->join_err = rc;
		o->next_join++;
		pthread_cond_broadcast(&p->joined);
	}
	o->joining = false;
	pthread_mutex_unlock(&p->live_lock);
}

/* The pool finishes the pieces in the order they were put, once each is
 * joined: so the pieces out stay as many as its depth. */
static int piece_finish(void *ctx, void *job)
{
	struct seg_par *p = ctx;
	struct seg_piece *pc = job;
	int rc;

	pthread_mutex_lock(&p->live_lock);
	while (!pc->joined && !p->join_err)
		pthread_cond_wait(&p->joined, &p->live_lock);
	rc = pc->joined ? pc->join_rc : p->join_err;
	pthread_mutex_unlock(&p->live_lock);
	live_free(p, pc);
	return rc;
}

int seg_pieces_start(struct seg_par *p)
{
	int rc;

	if (!p->piece_events)
		p->piece_events = PIECE_EVENTS;
	if (pthread_mutex_init(&p->live_lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&p->joined, NULL)) {
		pthread_mutex_destroy(&p->live_lock);
		return -ENOMEM;
	}
	p->have_live_lock = true;
	/* (without a pager the joins fault their pages in themselves) */
	if (mt_pager_start(&p->pager))
		p->pager = NULL;
	rc = mt_pool_start(&p->pieces, p->max_workers, piece_work, piece_finish,
			   p, PIECES_OUT(p));
	if (!rc)
		p->piece_threads = mt_pool_workers(p->pieces);
	return rc;
}

/* After one of these the function running is the event's target. */
static bool seam_after(const struct dec_sink_ev *e)
{
	return e->ip && (e->kind == DEC_CALL || e->kind == DEC_RET ||
			 e->kind == DEC_JUMP || e->kind == DEC_IJUMP);
}

static int put_piece(struct seg_par *p, struct seg_one *o)
{
	struct seg_piece *pc = o->cur;

	o->cur = NULL;
	p->nr_pieces++;
	live_add(p, pc);
	return mt_pool_put(p->pieces, pc);
}

int seg_pieces_put(struct seg_par *p, struct seg_one *o,
		   const struct dec_sink_ev *ev, size_t n,
		   struct dec_hold *hold)
{
	while (n) {
		struct seg_piece *pc = o->cur;
		size_t k;
		int rc;

		if (!pc) {
			if (!(pc = calloc(1, sizeof(*pc))))
				return -ENOMEM;
			pc->o = o;
			pc->k = o->nr_pieces++;
			if (pc->k) {
				pc->seam_time = o->last.time;
				pc->seam_ip = o->last.ip;
			} else /* (the first time its builder is fed) */
				o->time0 = o->d->nr_execs && o->d->execs[0] <=
								     ev->time
						   ? o->d->execs[0]
						   : ev->time;
			pc->time0 = o->time0;
			o->cur = pc;
		}
		/* Full: one event at a time to where a piece can begin. */
		k = pc->n < p->piece_events ? p->piece_events - pc->n : 1;
		k = k < n ? k : n;
		rc = hold && !pc->ev ? span_add(p, pc, ev, k, hold)
				     : copy_in(p, pc, ev, k);
		if (rc)
			return rc;
		o->last = ev[k - 1];
		ev += k;
		n -= k;
		if (pc->n >= p->piece_events && seam_after(&o->last) &&
		    (rc = put_piece(p, o)))
			return rc;
	}
	return 0;
}

static int end_thread(void *ctx, unsigned worker, void *job)
{
	struct seg_one *o = job;
	struct seg_held_tag h = {o->g, 0};
	int rc;

	(void)ctx;
	(void)worker;
	if (!o->b)
		return 0;
	/* (a program found to be Go's after all held its events) */
	if ((rc = seg_held_feed(&o, 1, seg_tag_held, &h)) || (rc = h.rc))
		return rc;
	rc = seg_finish(o->b,
			o->all->opts.no_final_stack ? NULL : &o->d->final);
	return rc ? rc : seg_group_tag(o->g, TAG_FINISH | o->idx);
}

int seg_pieces_end(struct seg_par *p)
{
	struct mt_pool *ends;
	int rc = 0, erc;

	for (size_t i = 0; i < p->a->nr && !rc; i++)
		if (p->a->one[i]->cur)
			rc = put_piece(p, p->a->one[i]);
	erc = mt_pool_end(p->pieces);
	p->pieces = NULL;
	pager_end(p);
	if (rc || erc)
		return rc ? rc : erc;
	if ((rc = mt_pool_start(&ends, p->max_workers, end_thread, NULL, p,
				2 * p->max_workers)))
		return rc;
	for (size_t i = 0; i < p->a->nr && !rc; i++)
		if (!p->a->one[i]->g->worker_mode)
			rc = mt_pool_put(ends, p->a->one[i]);
	erc = mt_pool_end(ends);
	return rc ? rc : erc;
}
