/* SPDX-License-Identifier: MIT */
/*
 * The segment builder.
 *
 * While a segment is open, a slice's depth field holds its level plus
 * LEVEL_BIAS: levels are relative to the segment's first frame (level 0)
 * and go negative as returns reveal callers.  Slices are appended as calls
 * happen, which is pre-order for everything except revealed callers; they
 * start at the segment start but are found later, so closing a segment
 * moves them (in reverse order of discovery) in front of the segment's
 * other slices and turns levels into depths.
 */
#include "segments/go.h"
#include "segments/segments.h"
#include "segments/unwind_quirks.h"
#include "symbols/symbols.h"
#include "util/util.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEVEL_BIAS (UINT32_C(1) << 30)
/* How far a Go switch item's time may be from its event's (go_item) */
#define GO_ITEM_EARLY_NS 10000
#define GO_ITEM_LATE_NS	 10000000
#define SYM_CACHE	 4096

enum frame_kind {
	FR_FUNC,   /* a function activation */
	FR_PSEUDO, /* [syscall] / [untraced]: tracing is off */
	FR_INLINE, /* a call the compiler inlined, above its function's
		      frame (and above those inlined around it) */
};

struct frame {
	uint32_t slice;
	int32_t level;
	uint64_t ret;	 /* return address, 0 if unknown */
	uint64_t at;	 /* where control last came into it (inl_at()) */
	uint64_t lo, hi; /* the function's range; lo > hi for pseudo */
	uint8_t kind;
	bool async;    /* entered by the kernel (a signal handler) */
	bool inl_code; /* the function has inlined calls */
	uint8_t go;    /* enum go_fn: a Go switch point */
	const struct sym_inline *in; /* FR_INLINE: the call */
};

struct sym_ent {
	uint64_t ip;
	uint64_t lo, hi;
	uint32_t name, dso;
	uint32_t frame; /* (name, dso, lo or the ip when unknown) */
	uint32_t site;	/* "FILE:LINE" of ip itself, 0 unknown */
	bool valid, known;
	bool fn_inl;		      /* its function has inlined calls */
	uint8_t go;		      /* enum go_fn of its function */
	const struct sym_inline *inl; /* innermost inlined call at ip */
};

/* What the running stack of a Go thread is (go.h). */
enum go_on { GS_UNKNOWN, GS_G, GS_G0 };

/* A frame of a stack not running, kept to be resumed. */
struct go_frame {
	struct frame f;
	uint32_t frame, site, flags; /* of its slice */
};

struct seg_builder {
	struct mt_trace *t;
	size_t thread;
	struct seg_ends_table *ends; /* NULL: not kept */
	seg_symbolize_fn sym;
	void *ctx;

	struct frame *stack;
	size_t depth, cap;

	bool open;	  /* a segment is open */
	bool any;	  /* one was: seg_id is valid */
	bool ended;	  /* it saw DEC_END: closes at finish or next sync */
	uint64_t stop_ip; /* where the open [untraced] frame began */
	uint32_t paused;  /* reason of a gap paused while off the CPU */
	uint32_t seg_id;
	uint64_t seg_start, last_time;
	size_t first;	 /* its first slice */
	int32_t rmin;	 /* lowest level so far */
	uint32_t *roots; /* slices at level rmin (parent unknown) */
	size_t nr_roots, cap_roots;
	uint32_t *reveals;    /* revealed callers, in order of discovery */
	uint64_t *reveal_ips; /* the address each was revealed at */
	size_t nr_reveals, cap_reveals;
	uint64_t sync_ip; /* where the segment began */

	bool exec_next; /* an exec since the last segment: the next one
			   begins in another program */

	bool have_gap; /* a gap is pending since gap_start */
	uint64_t gap_start;
	uint32_t gap_reason;

	uint32_t frame_syscall, frame_untraced, frame_kernel;
	struct sym_ent cache[SYM_CACHE];
	/* return address -> string id of its call's "FILE:LINE" + 1 */
	struct mt_hmap sites;
	/* an inlined call -> its frame id, and "FILE:LINE" of the call
	 * the compiler replaced << 32 */
	struct mt_hmap inl_frames;

	/* Go (go.h): on once the runtime's switch points are seen */
	bool go_seen;
	struct go_proc *go;    /* the process's goroutines not running */
	bool go_own;	       /* go is the builder's */
	uint8_t go_on;	       /* enum go_on */
	uint32_t go_cur;       /* the running goroutine (1 + index), 0 none */
	uint64_t go_goid;      /* its id, 0 unknown */
	uint32_t go_first_seg; /* the first segment of the running stack */
	struct go_susp go_sys; /* the goroutine systemstack left */
	bool have_sys;
	const struct dec_goroutine *go_items; /* the capture's switches */
	size_t nr_go_items, next_go_item;
	/* A resume that several suspended goroutines fitted: they are
	 * told apart by where the resumed stack returns to (amb_climb
	 * returns above its amb_k frames so far); slices from amb_slice
	 * are the resumed goroutine's */
	struct go_susp *amb;
	size_t nr_amb, amb_k, amb_climb, amb_slice;
	uint64_t amb_time; /* of the resume */
	/* The running goroutine's identity is a guess: its slices from
	 * guess_slice are flagged when its turn ends */
	bool go_guess;
	size_t guess_slice;
};

static struct mt_thread *thr(struct seg_builder *b)
{
	return &b->t->threads[b->thread];
}

/* "FILE:LINE" as a string id, 0 when out of memory. */
static uint32_t pos_intern(struct seg_builder *b, const char *file,
			   unsigned line)
{
	char buf[4096 + 16];
	uint32_t id;

	snprintf(buf, sizeof(buf), "%s:%u", file, line);
	id = mt_str_intern(&b->t->strs, buf);
	return id == MT_NONE ? 0 : id;
}

static const struct sym_ent *lookup(struct seg_builder *b, uint64_t ip)
{
	struct sym_ent *e =
		&b->cache[(ip ^ (ip >> 7) ^ (ip >> 17)) & (SYM_CACHE - 1)];
	struct img_sym ds;

	if (e->valid && e->ip == ip)
		return e;
	/* A symbolizer that knows no source positions leaves them out. */
	ds.fn_file = ds.ip_file = NULL;
	ds.fn_line = ds.ip_line = 0;
	ds.inl = NULL;
	ds.fn_inl = false;
	b->sym(b->ctx, ip, &ds);
	e->name = mt_str_intern(&b->t->strs, ds.name);
	e->dso = mt_str_intern(&b->t->strs, ds.dso);
	if (e->name == MT_NONE || e->dso == MT_NONE) {
		e->valid = false;
		return NULL;
	}
	e->frame = mt_frame_intern(b->t, e->name, e->dso,
				   ds.known ? ds.start : ip);
	e->site = 0;
	if (e->frame != MT_NONE && ds.fn_file &&
	    (!(e->site = pos_intern(b, ds.ip_file, ds.ip_line)) ||
	     !(b->t->frames[e->frame].source =
		       pos_intern(b, ds.fn_file, ds.fn_line))))
		e->frame = MT_NONE;
	if (e->frame == MT_NONE) {
		e->valid = false;
		return NULL;
	}
	e->ip = ip;
	e->lo = ds.start;
	e->hi = ds.end;
	e->known = ds.known;
	e->inl = ds.inl;
	e->fn_inl = ds.fn_inl || ds.inl;
	e->go = (uint8_t)go_switch_fn(ds.name);
	/* A plain "gogo" counts in a program that has the runtime's. */
	b->go_seen |= e->go != GO_NONE && !strncmp(ds.name, "runtime.", 8);
	e->valid = true;
	return e;
}

int seg_builder_new(struct seg_builder **out, struct mt_trace *t, size_t thread,
		    struct seg_ends_table *ends, seg_symbolize_fn sym,
		    void *ctx)
{
	struct seg_builder *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->t = t;
	b->thread = thread;
	b->paused = MT_NONE;
	b->ends = ends;
	b->sym = sym;
	b->ctx = ctx;
	b->frame_syscall =
		mt_frame_intern(t, mt_str_intern(&t->strs, "[syscall]"), 0, 0);
	b->frame_untraced =
		mt_frame_intern(t, mt_str_intern(&t->strs, "[untraced]"), 0, 0);
	b->frame_kernel =
		mt_frame_intern(t, mt_str_intern(&t->strs, "[kernel]"), 0, 0);
	if (b->frame_syscall == MT_NONE || b->frame_untraced == MT_NONE ||
	    b->frame_kernel == MT_NONE) {
		free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

void seg_builder_free(struct seg_builder *b)
{
	if (!b)
		return;
	free(b->stack);
	free(b->roots);
	free(b->reveals);
	free(b->reveal_ips);
	mt_hmap_free(&b->sites);
	mt_hmap_free(&b->inl_frames);
	free(b->go_sys.frames);
	for (size_t i = 0; i < b->nr_amb; i++)
		free(b->amb[i].frames);
	free(b->amb);
	if (b->go_own)
		go_proc_free(b->go);
	free(b);
}

static struct frame *top(struct seg_builder *b)
{
	return b->depth ? &b->stack[b->depth - 1] : NULL;
}

static struct mt_slice *slice_of(struct seg_builder *b, const struct frame *f)
{
	return &thr(b)->slices[f->slice];
}

/* Append a slice for a new frame at level lv; parent is the frame below
 * (or unknown, for a root). */
static int push(struct seg_builder *b, uint64_t time, int32_t lv,
		uint32_t frame, uint32_t flags, uint64_t ret, uint64_t lo,
		uint64_t hi, uint8_t kind)
{
	struct mt_thread *th = thr(b);
	struct frame *below = top(b);
	struct mt_slice s = {
		.ts = time,
		.frame = frame,
		.depth = (uint32_t)(lv + (int32_t)LEVEL_BIAS),
		.parent = below ? below->slice : MT_NONE,
		.flags = flags,
		.segment = b->seg_id,
	};

	if (!mt_thread_push(th, &s) || mt_grow((void **)&b->stack, &b->cap,
					       b->depth + 1, sizeof(*b->stack)))
		return -ENOMEM;
	b->stack[b->depth++] = (struct frame){
		.slice = (uint32_t)(th->nr_slices - 1),
		.level = lv,
		.ret = ret,
		.lo = lo,
		.hi = hi,
		.kind = kind,
	};
	if (!below) {
		if (mt_grow((void **)&b->roots, &b->cap_roots, b->nr_roots + 1,
			    sizeof(*b->roots)))
			return -ENOMEM;
		b->roots[b->nr_roots++] = (uint32_t)(th->nr_slices - 1);
		if (lv < b->rmin)
			b->rmin = lv;
	}
	return 0;
}

/*
 * The line of the call that returns to ret: the line of the instruction
 * before ret, as addr2line and debuggers say it.  Only asked of callers
 * whose binary has a line table (their frame has a source), once for each
 * return address.  0: unknown.
 */
static uint32_t call_site(struct seg_builder *b, const struct frame *caller,
			  uint64_t ret)
{
	const struct sym_ent *e;
	uint64_t v;

	if (!caller || caller->kind == FR_PSEUDO || !ret ||
	    !b->t->frames[thr(b)->slices[caller->slice].frame].source)
		return 0;
	if (mt_hmap_find(&b->sites, ret, &v))
		return (uint32_t)v;
	e = lookup(b, ret - 1);
	v = e ? e->site : 0;
	/* A full table only costs the lookups again. */
	mt_hmap_set(&b->sites, ret, v);
	return (uint32_t)v;
}

static int push_fn(struct seg_builder *b, uint64_t time, int32_t lv,
		   uint64_t ip, uint64_t ret, uint32_t flags)
{
	uint32_t site = call_site(b, top(b), ret);
	const struct sym_ent *e = lookup(b, ip);
	int rc;

	if (!e)
		return -ENOMEM;
	if (!e->known)
		flags |= MT_SLICE_UNKNOWN;
	rc = push(b, time, lv, e->frame, flags, ret, e->lo, e->hi, FR_FUNC);
	if (!rc) {
		thr(b)->slices[thr(b)->nr_slices - 1].site = site;
		top(b)->inl_code = e->fn_inl;
		top(b)->go = e->go;
	}
	return rc;
}

/* The index of the top frame that is no inlined call (b->depth when
 * there is none). */
static size_t host_at(const struct seg_builder *b)
{
	for (size_t i = b->depth; i-- > 0;)
		if (b->stack[i].kind != FR_INLINE)
			return i;
	return b->depth;
}

/* How many frames stay when frame i is returned to: it and the calls
 * inlined into it that are open. */
static size_t with_inlined(const struct seg_builder *b, size_t i)
{
	size_t n = i + 1;

	while (n < b->depth && b->stack[n].kind == FR_INLINE)
		n++;
	return n;
}

static void pop_to(struct seg_builder *b, size_t n, uint64_t time);

/* The frame of an inlined call in the binary dso (a string id), and the
 * line of the call it replaced; -ENOMEM. */
static int inl_frame(struct seg_builder *b, uint32_t dso,
		     const struct sym_inline *in, uint32_t *frame,
		     uint32_t *site)
{
	uint64_t key = (uint64_t)(uintptr_t)in, v;
	uint32_t name;

	if (mt_hmap_find(&b->inl_frames, key, &v)) {
		*frame = (uint32_t)v;
		*site = (uint32_t)(v >> 32);
		return 0;
	}
	name = mt_str_intern(&b->t->strs, in->name);
	if (name == MT_NONE)
		return -ENOMEM;
	*frame = mt_frame_intern(b->t, name, dso, 0);
	if (*frame == MT_NONE)
		return -ENOMEM;
	if (in->decl_file && !(b->t->frames[*frame].source = pos_intern(
				       b, in->decl_file, in->decl_line)))
		return -ENOMEM;
	*site = 0;
	if (in->call_file &&
	    !(*site = pos_intern(b, in->call_file, in->call_line)))
		return -ENOMEM;
	return mt_hmap_set(&b->inl_frames, key, *frame | (uint64_t)*site << 32);
}

/*
 * The inlined calls open above the top function become leaf and the
 * calls it is inlined in: those already open stay, the others end at
 * time and the missing ones begin there (flags: how they begin).
 */
static int inl_open(struct seg_builder *b, uint64_t time,
		    const struct sym_inline *leaf, uint32_t flags)
{
	const struct sym_inline *chain[64];
	size_t h = host_at(b), n = 0, keep;

	if (h == b->depth || b->stack[h].kind != FR_FUNC)
		return 0;
	for (const struct sym_inline *x = leaf; x; x = x->up)
		n++;
	/* Deeper than kept: the innermost go. */
	while (leaf && n > sizeof(chain) / sizeof(chain[0])) {
		leaf = leaf->up;
		n--;
	}
	for (size_t j = n; j-- > 0; leaf = leaf->up)
		chain[j] = leaf;
	for (keep = 0; keep < n && h + 1 + keep < b->depth &&
		       b->stack[h + 1 + keep].in == chain[keep];
	     keep++)
		;
	pop_to(b, h + 1 + keep, time);
	for (size_t j = keep; j < n; j++) {
		const struct frame *host = &b->stack[h];
		const struct frame *f = top(b);
		uint32_t frame, site;
		int rc =
			inl_frame(b, b->t->frames[slice_of(b, host)->frame].dso,
				  chain[j], &frame, &site);

		if (!rc)
			rc = push(b, time, f->level + 1, frame,
				  flags | MT_SLICE_INLINED, 0, host->lo,
				  host->hi, FR_INLINE);
		if (rc)
			return rc;
		top(b)->in = chain[j];
		thr(b)->slices[thr(b)->nr_slices - 1].site = site;
	}
	return 0;
}

/* Code at ip runs in the top function: the calls inlined there open. */
static int inl_at(struct seg_builder *b, uint64_t time, uint64_t ip,
		  uint32_t flags)
{
	const struct sym_ent *e;
	size_t h = host_at(b);

	/* Every arrival in a function passes here: its entry, a return
	 * into it, a resume. */
	if (h < b->depth)
		b->stack[h].at = ip;
	/* Most code has nothing inlined: no lookup there. */
	if (h == b->depth || (h + 1 == b->depth && !b->stack[h].inl_code))
		return 0;
	e = lookup(b, ip);
	if (!e)
		return -ENOMEM;
	if (!e->inl && h + 1 == b->depth)
		return 0;
	return inl_open(b, time, e->inl, flags);
}

/* After rc (0: a frame was pushed or found), the calls inlined at ip. */
static int then_inl(struct seg_builder *b, int rc, uint64_t time, uint64_t ip,
		    uint32_t flags)
{
	return rc ? rc : inl_at(b, time, ip, flags);
}

static void end_frame(struct seg_builder *b, const struct frame *f,
		      uint64_t time, uint32_t flags)
{
	struct mt_slice *s = slice_of(b, f);

	s->dur = time > s->ts ? time - s->ts : 0;
	s->flags |= flags;
}

static void pop_to(struct seg_builder *b, size_t n, uint64_t time)
{
	while (b->depth > n) {
		end_frame(b, top(b), time, 0);
		b->depth--;
	}
}

/*
 * A return or jump climbed above every known frame into the function at
 * ip: it is the caller of the current roots.
 */
static int reveal_slice(struct seg_builder *b, uint64_t ip, struct mt_slice s,
			struct frame f)
{
	struct mt_thread *th = thr(b);
	int32_t lv = b->rmin - 1;
	uint32_t idx;
	size_t cap = b->cap_reveals;

	s.ts = b->seg_start;
	s.depth = (uint32_t)(lv + (int32_t)LEVEL_BIAS);
	s.parent = MT_NONE;
	s.flags |= MT_SLICE_INFERRED_START;
	s.segment = b->seg_id;

	if (!mt_thread_push(th, &s) ||
	    mt_grow((void **)&b->reveal_ips, &cap, b->nr_reveals + 1,
		    sizeof(*b->reveal_ips)) ||
	    mt_grow((void **)&b->reveals, &b->cap_reveals, b->nr_reveals + 1,
		    sizeof(*b->reveals)) ||
	    mt_grow((void **)&b->stack, &b->cap, b->depth + 1,
		    sizeof(*b->stack)))
		return -ENOMEM;
	idx = (uint32_t)(th->nr_slices - 1);
	for (size_t i = 0; i < b->nr_roots; i++)
		th->slices[b->roots[i]].parent = idx;
	b->roots[0] = idx;
	b->nr_roots = 1;
	b->reveal_ips[b->nr_reveals] = ip;
	b->reveals[b->nr_reveals++] = idx;
	b->rmin = lv;
	/* It goes under whatever is open (normally nothing is). */
	memmove(b->stack + 1, b->stack, b->depth * sizeof(*b->stack));
	f.slice = idx;
	f.level = lv;
	b->stack[0] = f;
	b->depth++;
	if (b->depth > 1)
		th->slices[b->stack[1].slice].parent = idx;
	return 0;
}

static int reveal(struct seg_builder *b, uint64_t ip)
{
	const struct sym_ent *e = lookup(b, ip);

	if (!e)
		return -ENOMEM;
	return reveal_slice(
		b, ip,
		(struct mt_slice){.frame = e->frame,
				  .flags = e->known ? 0 : MT_SLICE_UNKNOWN},
		(struct frame){.lo = e->lo,
			       .hi = e->hi,
			       .kind = FR_FUNC,
			       .inl_code = e->fn_inl});
}

/*
 * A return to ip (from a call at call) climbed above every known frame:
 * the function at ip is revealed with the calls inlined where it made
 * the call, innermost first, so that what returned sits under them.
 */
static int reveal_at(struct seg_builder *b, uint64_t ip, uint64_t call)
{
	const struct sym_ent *e = lookup(b, call), *f;
	const struct sym_inline *in;
	uint64_t lo, hi;
	uint32_t dso;

	if (!e)
		return -ENOMEM;
	in = e->inl;
	dso = e->dso;
	f = lookup(b, ip);
	if (!f)
		return -ENOMEM;
	lo = f->lo;
	hi = f->hi;
	for (; in; in = in->up) {
		uint32_t frame, site;
		int rc = inl_frame(b, dso, in, &frame, &site);

		if (!rc)
			rc = reveal_slice(
				b, ip,
				(struct mt_slice){.frame = frame,
						  .flags = MT_SLICE_INLINED,
						  .site = site},
				(struct frame){.lo = lo,
					       .hi = hi,
					       .kind = FR_INLINE,
					       .in = in});
		if (rc)
			return rc;
	}
	return reveal(b, ip);
}

/* Trace is lost from now on: the gap slice waits for where it ends. */
static int gap_begins(struct seg_builder *b, uint64_t time, const char *reason)
{
	uint32_t r;

	if (b->have_gap)
		return 0;
	r = mt_str_intern(&b->t->strs, reason);
	if (r == MT_NONE)
		return -ENOMEM;
	b->have_gap = true;
	b->gap_start = time;
	b->gap_reason = r;
	return 0;
}

/* The pending gap ends at time: its slice. */
static int gap_ends(struct seg_builder *b, uint64_t time)
{
	struct mt_thread *th = thr(b);
	char buf[160];
	uint32_t name;
	struct mt_slice g = {
		.ts = b->gap_start,
		.dur = time > b->gap_start ? time - b->gap_start : 0,
		.parent = MT_NONE,
		.flags = MT_SLICE_GAP,
		.segment = b->any ? b->seg_id : MT_NONE,
	};

	if (!b->have_gap)
		return 0;
	snprintf(buf, sizeof(buf), "[decode gap: %s]",
		 mt_str(&b->t->strs, b->gap_reason));
	name = mt_str_intern(&b->t->strs, buf);
	if (name == MT_NONE)
		return -ENOMEM;
	g.frame = mt_frame_intern(b->t, name, 0, 0);
	if (g.frame == MT_NONE || !mt_thread_push(th, &g))
		return -ENOMEM;
	b->have_gap = false;
	return 0;
}

/* A segment begins at ip.  resumed: tracing started there (TIP.PGE);
 * after an exec that is the new program's first instruction, so its
 * first frame begins there, not before. */
static int open_bare(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	struct mt_thread *th = thr(b);
	struct mt_segment seg = {
		.tid = th->tid, .start = time, .goroutine = b->go_cur};

	b->paused = MT_NONE;
	if (gap_ends(b, time))
		return -ENOMEM;
	if (!mt_trace_add_segment(b->t, &seg))
		return -ENOMEM;
	b->seg_id = (uint32_t)(b->t->nr_segments - 1);
	b->t->segments[b->seg_id].exec = b->exec_next;
	b->exec_next = false;
	b->any = true;
	b->open = true;
	b->ended = false;
	b->seg_start = time;
	b->first = th->nr_slices;
	b->rmin = 0;
	b->nr_roots = 0;
	b->nr_reveals = 0;
	b->depth = 0;
	b->sync_ip = ip;
	return 0;
}

static int open_segment(struct seg_builder *b, uint64_t time, uint64_t ip,
			bool resumed)
{
	uint32_t first = resumed && b->exec_next ? 0 : MT_SLICE_INFERRED_START;
	int rc = open_bare(b, time, ip);

	return then_inl(b, rc ? rc : push_fn(b, time, 0, ip, 0, first), time,
			ip, first);
}

/* Reveal callers that no return showed from the stack unwound at the end
 * (leaf first), when it agrees with the frames we have. */
static int anchor(struct seg_builder *b, const struct dec_stack *st)
{
	size_t have = 0, skip = 0, lead;

	while (skip < b->depth && b->stack[b->depth - 1 - skip].kind != FR_FUNC)
		skip++;
	for (size_t i = 0; i + skip < b->depth; i++)
		have += b->stack[i].kind == FR_FUNC;
	if (!st || !st->nr || have == 0)
		return 0;
	/*
	 * The unwound stack may be deeper at its leaf than the trace shows:
	 * a direct call after the last packet needs none, so a trace can end
	 * a frame or two short of where the thread stopped.  Our frames must
	 * then match the stack below those few.
	 */
	for (lead = 0; lead <= 2 && lead + have <= st->nr; lead++) {
		bool same = true;
		size_t at = b->depth - skip;

		for (size_t j = 0; j < have && same; j++) {
			const struct frame *f;
			const struct sym_ent *e = lookup(b, st->ips[lead + j]);

			/* The functions' own frames, without the calls
			 * inlined into them. */
			while (b->stack[at - 1].kind != FR_FUNC)
				at--;
			f = &b->stack[--at];
			if (!e)
				return -ENOMEM;
			same = e->name == mt_slice_name(b->t, slice_of(b, f));
		}
		if (!same)
			continue;
		for (size_t j = lead + have; j < st->nr; j++) {
			int rc = reveal_at(b, st->ips[j], st->ips[j] - 1);

			if (rc)
				return rc;
		}
		return 0;
	}
	return 0; /* they disagree: trust neither */
}

/* Where slice rel (relative to the segment's first) goes when the k
 * revealed callers move to the front, newest first.  reveals[] holds their
 * absolute indexes, in increasing order (they were appended as found). */
static size_t new_pos(const struct seg_builder *b, size_t rel)
{
	size_t lo = 0, hi = b->nr_reveals, k = b->nr_reveals;

	while (lo < hi) { /* reveals before rel */
		size_t mid = lo + (hi - lo) / 2;

		if (b->reveals[mid] - b->first < rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < k && b->reveals[lo] - b->first == rel)
		return k - 1 - lo;
	return rel + k - lo;
}

/* Move the revealed callers in front, in place: every other slice moves
 * up by the number of reveals after it, so walking from the end never
 * overwrites a slice not yet moved. */
static int reorder(struct seg_builder *b, struct mt_thread *th, size_t n,
		   size_t k)
{
	struct mt_slice *rev = malloc(k * sizeof(*rev));
	struct mt_slice *base = th->slices + b->first;
	size_t j = k;

	if (!rev)
		return -ENOMEM;
	for (size_t i = 0; i < k; i++)
		rev[i] = th->slices[b->reveals[i]];
	for (size_t i = n; i-- > 0;) {
		struct mt_slice s;

		if (j > 0 && b->reveals[j - 1] - b->first == i) {
			j--;
			continue;
		}
		s = base[i];
		if (s.parent != MT_NONE && s.parent >= b->first)
			s.parent = (uint32_t)(b->first +
					      new_pos(b, s.parent - b->first));
		base[new_pos(b, i)] = s;
	}
	for (size_t i = 0; i < k; i++) {
		struct mt_slice s = rev[i];

		if (s.parent != MT_NONE && s.parent >= b->first)
			s.parent = (uint32_t)(b->first +
					      new_pos(b, s.parent - b->first));
		base[k - 1 - i] = s;
	}
	free(rev);
	return 0;
}

void seg_ends_free(struct seg_ends_table *e)
{
	for (size_t i = 0; i < e->nr; i++) {
		free(e->v[i].start_chain);
		free(e->v[i].end_chain);
		free(e->v[i].start_ips);
		free(e->v[i].end_rets);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* The closing segment's entry in b->ends, zeroed, or NULL when out of
 * memory. */
static struct seg_ends *ends_entry(struct seg_builder *b)
{
	struct seg_ends_table *e = b->ends;

	if (b->seg_id >= e->nr) {
		if (mt_grow((void **)&e->v, &e->cap, b->seg_id + 1,
			    sizeof(*e->v)))
			return NULL;
		memset(e->v + e->nr, 0,
		       (b->seg_id + 1 - e->nr) * sizeof(*e->v));
		e->nr = b->seg_id + 1;
	}
	return &e->v[b->seg_id];
}

/* What stitching needs of a closing segment (see struct seg_ends):
 * indexes as they will be once the revealed callers move in front. */
static int keep_chains(struct seg_builder *b, size_t n)
{
	size_t k = b->nr_reveals, ne = 0, at = 0;
	struct seg_ends *e;

	if (!b->ends)
		return 0;
	e = ends_entry(b);
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < b->depth; i++)
		ne += b->stack[i].kind == FR_FUNC;
	e->start_chain = malloc((k + 1) * sizeof(*e->start_chain));
	e->start_ips = malloc((k + 1) * sizeof(*e->start_ips));
	e->end_chain = malloc((ne ? ne : 1) * sizeof(*e->end_chain));
	e->end_rets = malloc((ne ? ne : 1) * sizeof(*e->end_rets));
	if (!e->start_chain || !e->start_ips || !e->end_chain || !e->end_rets)
		return -ENOMEM;
	/* Revealed inlined calls are part of their function's frame to
	 * stitching, as in the end chain. */
	for (size_t i = 0; i <= k && i < n; i++) {
		if (i < k && (thr(b)->slices[b->reveals[k - 1 - i]].flags &
			      MT_SLICE_INLINED))
			continue;
		e->start_chain[at] = (uint32_t)(b->first + i);
		e->start_ips[at++] =
			i < k ? b->reveal_ips[k - 1 - i] : b->sync_ip;
	}
	e->nr_start = (uint32_t)at;
	e->end_at = 0;
	at = 0;
	for (size_t i = 0; i < b->depth; i++) {
		const struct frame *f = &b->stack[i];

		if (f->kind != FR_FUNC)
			continue;
		e->end_chain[at] =
			(uint32_t)(b->first + new_pos(b, f->slice - b->first));
		e->end_rets[at] = 0;
		if (at > 0)
			e->end_rets[at - 1] = f->ret;
		e->end_at = f->at;
		at++;
	}
	e->nr_end = (uint32_t)at;
	return 0;
}

/* Close the open segment at time: open frames end there (with
 * end_flags), the revealed callers move in front, levels become depths. */
static int end_segment(struct seg_builder *b, uint64_t time, const char *reason,
		       uint64_t ip, uint32_t end_flags)
{
	struct mt_thread *th = thr(b);
	struct mt_segment *seg;
	size_t n = th->nr_slices - b->first, k = b->nr_reveals;
	uint32_t r;

	/* Before the first sync point, or between segments, there is no
	 * segment to end: the trace lost there is a gap all the same. */
	if (!b->open)
		return gap_begins(b, time, reason);
	seg = &b->t->segments[b->seg_id];
	if (keep_chains(b, n))
		return -ENOMEM;
	while (b->depth) {
		end_frame(b, top(b), time, end_flags);
		b->depth--;
	}
	r = mt_str_intern(&b->t->strs, reason);
	if (r == MT_NONE)
		return -ENOMEM;
	seg->end = time;
	seg->end_reason = r;
	seg->end_ip = ip;
	if (k && reorder(b, th, n, k))
		return -ENOMEM;
	for (size_t i = b->first; i < th->nr_slices; i++)
		th->slices[i].depth =
			(uint32_t)((int32_t)(th->slices[i].depth - LEVEL_BIAS) -
				   b->rmin);
	b->open = false;
	b->ended = false;
	b->have_gap = true;
	b->gap_start = time;
	b->gap_reason = r;
	return 0;
}

/* The trace stops there: where the open frames went is unknown. */
static int close_segment(struct seg_builder *b, uint64_t time,
			 const char *reason, uint64_t ip)
{
	return end_segment(b, time, reason, ip, MT_SLICE_INFERRED_END);
}

/*
 * An exec replaced the program: every frame of the old one ends at time,
 * known (its stack is gone), and the new program begins a segment of its
 * own at its first event, with a new root.  No gap joins the two, and
 * stitching joins nothing across (the segment's exec flag).  A trace
 * that had ended before says nothing of how far the frames ran.
 */
static int on_exec(struct seg_builder *b, uint64_t time)
{
	int rc;

	if (b->open && b->ended)
		rc = close_segment(b, time, "end of trace", 0);
	else if (b->open)
		rc = end_segment(b, time, "exec", 0, 0);
	else
		rc = gap_ends(b, time);
	b->have_gap = false;
	b->paused = MT_NONE;
	b->exec_next = b->any;
	return rc;
}

static int on_jump(struct seg_builder *b, uint64_t time, uint64_t to,
		   bool indirect);
static int go_climbed(struct seg_builder *b, uint64_t time, uint64_t to);
static int go_reopen(struct seg_builder *b, uint64_t time, uint64_t ip,
		     bool resumed);
static int go_amb_end(struct seg_builder *b);
static void go_label(struct seg_builder *b, uint32_t gor);
static uint32_t go_root_name(struct seg_builder *b);

static int on_return(struct seg_builder *b, uint64_t time, uint64_t to)
{
	size_t i;

	size_t h = host_at(b);

	/* Tracing stopped on the return, its target unsaid: it leaves the
	 * frame on top, to whichever caller is below. */
	if (!to) {
		if (h > 0 && h < b->depth && b->stack[h].kind == FR_FUNC)
			pop_to(b, h, time);
		return 0;
	}

	/* The callee whose return address this is, topmost first. */
	for (i = b->depth; i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && b->stack[i].ret == to) {
			pop_to(b, i, time);
			return inl_at(b, time, to, 0);
		}
	/* A runtime's raise returning into a handler (unwind_quirks.c). */
	if (h < b->depth && ocaml_raise_ret(mt_slice_str(
				    b->t, &thr(b)->slices[b->stack[h].slice])))
		return on_jump(b, time, to, true);
	/* Else a frame of the function it lands in, below the top. */
	for (i = h; h < b->depth && i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && to >= b->stack[i].lo &&
		    to < b->stack[i].hi) {
			pop_to(b, with_inlined(b, i), time);
			return inl_at(b, time, to, 0);
		}
	/* A signal handler returns into the kernel's trampoline, which
	 * takes its place until sigreturn resumes the interrupted code. */
	if (h < b->depth && b->stack[h].async) {
		int32_t lv = b->stack[h].level;
		int rc;

		pop_to(b, h, time);
		rc = push_fn(b, time, lv, to, 0, MT_SLICE_TAIL);
		if (!rc)
			top(b)->async = true;
		return then_inl(b, rc, time, to, 0);
	}
	/* Else it climbs above everything we know. */
	if (b->nr_amb) {
		int rc = go_climbed(b, time, to);

		if (rc)
			return rc;
	}
	pop_to(b, 0, time);
	return then_inl(b, reveal_at(b, to, to - 1), time, to, 0);
}

static int on_jump(struct seg_builder *b, uint64_t time, uint64_t to,
		   bool indirect)
{
	const struct sym_ent *e = lookup(b, to);
	size_t h = host_at(b);
	struct frame *f = h < b->depth ? &b->stack[h] : NULL;
	uint64_t ret;
	int32_t lv;

	if (!e)
		return -ENOMEM;
	if (f && f->kind == FR_FUNC && to >= f->lo && to < f->hi)
		return inl_at(b, time, to, 0);
	/* Into the middle of a function below: a longjmp or an exception
	 * unwinding to it. */
	if (!(e->known && to == e->lo))
		for (size_t i = h; f && i-- > 0;)
			if (b->stack[i].kind == FR_FUNC &&
			    to >= b->stack[i].lo && to < b->stack[i].hi) {
				pop_to(b, with_inlined(b, i), time);
				return inl_at(b, time, to, 0);
			}
	/*
	 * An indirect jump into the middle of a function nowhere on the stack
	 * is a longjmp or an exception landing in a caller the segment has
	 * not seen yet: like a return that climbs above every frame, it
	 * reveals that caller (as the roots' parent: frames between are
	 * unknowable).  Its address is no call site, so stitching gets 0.
	 * Code without a symbol gives no such evidence: stripped libraries
	 * jump through tables between their unnamed static functions.
	 */
	if (indirect && e->known && to != e->lo) {
		int rc;

		pop_to(b, 0, time);
		rc = reveal(b, to);
		if (!rc)
			b->reveal_ips[b->nr_reveals - 1] = 0;
		return then_inl(b, rc, time, to, MT_SLICE_INFERRED_START);
	}
	/*
	 * A tail call, or a direct jump into the middle of a function nowhere
	 * on the stack: code shared between functions (glibc's string
	 * functions jump into each other's bodies; compilers split off cold
	 * parts).  The new function takes the frame's place and returns
	 * where it would have.
	 */
	ret = f ? f->ret : 0;
	lv = f ? f->level : 0;
	if (f)
		pop_to(b, h, time);
	return then_inl(b, push_fn(b, time, lv, to, ret, MT_SLICE_TAIL), time,
			to, 0);
}

static int on_resume(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	const struct sym_ent *e;
	struct frame *f = top(b);
	size_t h;

	if (f && f->kind == FR_PSEUDO) {
		pop_to(b, b->depth - 1, time);
		f = top(b);
	}
	if (!f)
		return then_inl(b,
				push_fn(b, time, b->rmin, ip, 0,
					MT_SLICE_INFERRED_START),
				time, ip, MT_SLICE_INFERRED_START);
	if (ip >= f->lo && ip < f->hi)
		return inl_at(b, time, ip, 0);
	h = host_at(b);
	for (size_t i = h; i-- > 0;)
		if (b->stack[i].kind == FR_FUNC && ip >= b->stack[i].lo &&
		    ip < b->stack[i].hi) {
			pop_to(b, with_inlined(b, i), time);
			return inl_at(b, time, ip, 0);
		}
	e = lookup(b, ip);
	if (!e)
		return -ENOMEM;
	/* At a function's entry: delivered like a call (a signal
	 * handler); it returns to a trampoline we will see. */
	if (e->known && ip == e->lo) {
		int rc = push_fn(b, time, f->level + 1, ip, 0, 0);

		if (!rc)
			top(b)->async = true;
		return then_inl(b, rc, time, ip, 0);
	}
	return on_jump(b, time, ip, false);
}

/*
 * Go: the switches between goroutines' stacks (go.h).  A switch ends the
 * segment of the stack that ran (its frames end there, a known end) and
 * begins one for the stack that runs next, apart for stitching (its exec
 * flag), so that no slice spans two goroutines; the frames of a resumed
 * goroutine begin again there, flagged resumed.
 */

/* The candidates of an ambiguous resume but keep go back to the
 * suspended; keep's frames go. */
static int go_amb_drop(struct seg_builder *b, size_t keep)
{
	int rc = 0;

	for (size_t i = 0; i < b->nr_amb; i++)
		if (i == keep)
			free(b->amb[i].frames);
		else if (!rc)
			rc = go_switch_suspend(b->go, &b->amb[i]);
		else
			free(b->amb[i].frames);
	free(b->amb);
	b->amb = NULL;
	b->nr_amb = 0;
	return rc;
}

/*
 * The stack resumed among several candidates returned to `to` above the
 * frames they shared: those whose next frame returns elsewhere were not
 * it.  One left: that goroutine it is; none: one not seen suspended.
 */
static int go_climbed(struct seg_builder *b, uint64_t time, uint64_t to)
{
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < b->nr_amb; i++) {
		struct go_susp *c = &b->amb[i];
		const struct go_frame *v = c->frames;
		size_t idx = c->nr - b->amb_k;

		/* a frame whose return address is unknown (revealed by an
		 * earlier turn's return) does not tell */
		if (idx < b->amb_climb || idx - b->amb_climb >= c->nr ||
		    !v[idx - b->amb_climb].f.ret ||
		    v[idx - b->amb_climb].f.ret == to)
			b->amb[keep++] = *c;
		else if (!rc)
			rc = go_switch_suspend(b->go, c);
		else
			free(c->frames);
	}
	b->nr_amb = keep;
	b->amb_climb++;
	if (rc || keep > 1)
		return rc;
	if (keep == 1) {
		b->go_cur = b->amb[0].gor;
		b->go_goid = b->amb[0].goid;
		b->go_guess = b->amb[0].guessed;
	} else {
		b->go_cur = go_switch_goroutine(b->t, b->go, 0, go_root_name(b),
						time);
		if (!b->go_cur)
			return -ENOMEM;
	}
	go_label(b, b->go_cur);
	go_switch_ran(b->t, b->go_cur, b->amb_time);
	return go_amb_drop(b, 0);
}

/*
 * The resumed stack leaves (or the trace ends) with several candidates
 * left: the newest is taken, its turn is a guess, and so is, from now
 * on, which goroutine each of the others is (one of them ran: the pick
 * may have swapped two), and whatever is resumed from them.
 */
static int go_amb_end(struct seg_builder *b)
{
	if (!b->nr_amb)
		return 0;
	for (size_t i = 1; i < b->nr_amb; i++)
		b->amb[i].guessed = true;
	b->go_guess = true;
	go_switch_ran(b->t, b->go_cur, b->amb_time);
	return go_amb_drop(b, 0);
}

/* The running goroutine's turn ends: flagged resume_guessed when which
 * goroutine it is was a guess. */
static int go_turn_end(struct seg_builder *b)
{
	struct mt_thread *th = thr(b);
	int rc = go_amb_end(b);

	if (rc || !b->go_guess)
		return rc;
	for (size_t i = b->guess_slice; i < th->nr_slices; i++)
		if (!(th->slices[i].flags & MT_SLICE_GAP))
			th->slices[i].flags |= MT_SLICE_RESUME_GUESSED;
	return 0;
}

/* The goroutine id the capture gives for a switch to ip at time, or 0
 * (then *known is false). */
static uint64_t go_item(struct seg_builder *b, uint64_t time, uint64_t ip,
			bool *known)
{
	/*
	 * Items are dated by the emulator, events by the decoder's clock,
	 * which lags behind it (by up to the distance between timing
	 * packets): the item of this switch is the first to ip dated from
	 * a little before to a while after it.  Items between are of
	 * switches that are not gogo's (systemstack's there and back).
	 */
	for (size_t i = b->next_go_item; i < b->nr_go_items; i++) {
		const struct dec_goroutine *g = &b->go_items[i];

		if (g->time > time + GO_ITEM_LATE_NS)
			break;
		if (g->ip == ip && g->time + GO_ITEM_EARLY_NS >= time) {
			b->next_go_item = i + 1;
			*known = true;
			return g->goid;
		}
	}
	*known = false;
	return 0;
}

static int go_proc_of(struct seg_builder *b)
{
	if (b->go)
		return 0;
	b->go = go_proc_new(thr(b)->pid);
	b->go_own = true;
	return b->go ? 0 : -ENOMEM;
}

/* The stack that ran was a goroutine's (gor): so were its segments. */
static void go_label(struct seg_builder *b, uint32_t gor)
{
	for (size_t i = b->go_first_seg; i < b->t->nr_segments; i++)
		if (b->t->segments[i].tid == thr(b)->tid)
			b->t->segments[i].goroutine = gor;
}

/* Frames [0, n) of the stack, to resume later. */
static int go_save(struct seg_builder *b, size_t n, struct go_susp *s)
{
	struct go_frame *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct mt_slice *sl = slice_of(b, &b->stack[i]);

		v[i] = (struct go_frame){.f = b->stack[i],
					 .frame = sl->frame,
					 .site = sl->site,
					 .flags = sl->flags};
	}
	s->frames = v;
	s->nr = n;
	return 0;
}

/*
 * The stack that ran ends at time; another begins at ip: the n frames
 * saved (flags added to theirs), or a frame at ip (with flags, returning
 * to ret).
 */
static int go_restart(struct seg_builder *b, uint64_t time, uint64_t ip,
		      const struct go_frame *saved, size_t n, uint32_t flags,
		      uint64_t ret, bool cut)
{
	int rc = end_segment(b, time, "goroutine switch", ip, 0);

	b->have_gap = false;
	if (!rc)
		rc = open_bare(b, time, ip);
	if (rc)
		return rc;
	b->t->segments[b->seg_id].exec = true;
	b->go_first_seg = b->seg_id;
	if (!n)
		return then_inl(b, push_fn(b, time, 0, ip, ret, flags), time,
				ip, flags & MT_SLICE_INFERRED_START);
	for (size_t i = 0; i < n; i++) {
		const struct go_frame *g = &saved[i];
		uint32_t keep =
			g->flags & (MT_SLICE_UNKNOWN | MT_SLICE_INLINED);

		/* cut: frames below saved[0] are not known, so where it
		 * returns to is no frame's (a return there reveals one) */
		rc = push(b, time, (int32_t)i, g->frame,
			  keep | flags | MT_SLICE_RESUMED,
			  cut && !i ? 0 : g->f.ret, g->f.lo, g->f.hi,
			  g->f.kind);
		if (rc)
			return rc;
		top(b)->at = g->f.at;
		top(b)->async = g->f.async;
		top(b)->inl_code = g->f.inl_code;
		top(b)->go = g->f.go;
		top(b)->in = g->f.in;
		thr(b)->slices[thr(b)->nr_slices - 1].site = g->site;
	}
	return inl_at(b, time, ip, 0);
}

/* The name of the oldest frame open: a goroutine's start, as far as the
 * trace saw it. */
static uint32_t go_root_name(struct seg_builder *b)
{
	return b->depth ? mt_slice_name(b->t, slice_of(b, &b->stack[0])) : 0;
}

/*
 * A call from mcall, systemstack or morestack (how) to fn at ip (the
 * return address ret) on the thread's system stack: the goroutine that
 * ran is left (and ends, when fn is goexit0).
 */
static int go_to_g0(struct seg_builder *b, uint64_t time, uint64_t ip,
		    uint64_t ret, enum go_fn how, bool ends)
{
	size_t h = host_at(b);
	struct go_susp s = {.time = time};
	int rc = go_proc_of(b);

	if (!rc)
		rc = go_turn_end(b);
	if (rc)
		return rc;
	s.goid = b->go_goid;
	s.guessed = b->go_guess;
	b->go_guess = false;
	if (b->go_on != GS_G) {
		uint64_t goid = 0;

		/* The capture names the goroutine the thread's trace began
		 * in with its first item. */
		if (b->go_on == GS_UNKNOWN && !b->next_go_item &&
		    b->nr_go_items && b->go_items[0].time <= time) {
			goid = b->go_items[0].goid;
			b->next_go_item = 1;
		}
		b->go_goid = goid;
		b->go_cur = go_switch_goroutine(b->t, b->go, goid,
						go_root_name(b), b->seg_start);
		if (!b->go_cur)
			return -ENOMEM;
		go_label(b, b->go_cur);
	}
	s.gor = b->go_cur;
	go_switch_ran(b->t, b->go_cur, time);
	if (how == GO_SYSTEMSTACK) {
		/* It comes back here, on this thread, when fn returns. */
		free(b->go_sys.frames);
		b->go_sys = (struct go_susp){0};
		b->have_sys = false;
		s.resume = ret;
		rc = go_save(b, b->depth, &s);
		if (rc)
			return rc;
		b->go_sys = s;
		b->have_sys = true;
	} else if (!ends) {
		/* It resumes as if mcall or morestack returned. */
		s.resume = b->stack[h].ret;
		rc = go_save(b, h, &s);
		if (!rc)
			rc = go_switch_suspend(b->go, &s);
		free(s.frames);
		if (rc)
			return rc;
	}
	b->go_on = GS_G0;
	b->go_cur = 0;
	b->go_goid = 0;
	return go_restart(b, time, ip, NULL, 0, 0, ret, false);
}

/* systemstack's fn returned to ip: the goroutine it left runs again. */
static int go_back(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	struct go_susp s = b->go_sys;
	int rc;

	b->go_sys = (struct go_susp){0};
	b->have_sys = false;
	b->go_on = GS_G;
	b->go_cur = s.gor;
	b->go_goid = s.goid;
	b->go_guess = s.guessed;
	b->guess_slice = thr(b)->nr_slices;
	rc = go_restart(b, time, ip, s.frames, s.nr, 0, 0, false);
	free(s.frames);
	return rc;
}

/* gogo jumps to ip: a goroutine resumes, or a new one starts. */
/*
 * How many frames from the top the n candidates' stacks share: the same
 * calls, each returning to the same place but the last (whose return
 * address is dropped: the one below it is not known).
 */
static size_t go_common(const struct go_susp *v, size_t n)
{
	for (size_t k = 0;; k++) {
		bool same_ret = true;

		for (size_t i = 0; i < n; i++) {
			const struct go_frame *a, *x;

			if (k >= v[i].nr)
				return k;
			a = &((const struct go_frame *)v[0]
				      .frames)[v[0].nr - 1 - k];
			x = &((const struct go_frame *)v[i]
				      .frames)[v[i].nr - 1 - k];
			if (x->frame != a->frame)
				return k;
			same_ret &= x->f.ret == a->f.ret;
		}
		if (!same_ret)
			return k + 1;
	}
}

/* gogo jumps to ip: a goroutine resumes, or a new one starts. */
static int go_gogo(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	bool exact, several = false;
	uint64_t goid = go_item(b, time, ip, &exact);
	const struct sym_ent *e = lookup(b, ip);
	struct go_susp s = {0}, *v = NULL;
	const struct go_frame *from = NULL;
	size_t nr = 0;
	uint32_t flags;
	long n = 0;
	int rc;

	if (!e)
		return -ENOMEM;
	rc = go_proc_of(b);
	if (!rc)
		rc = go_turn_end(b);
	if (rc)
		return rc;
	b->go_guess = false;
	b->guess_slice = thr(b)->nr_slices;
	/* An item without the id (a binary without DWARF) says nothing. */
	exact &= goid != 0;
	if (exact) {
		n = go_switch_resume(b->go, ip, goid, &s, &several);
		if (n && !s.goid)
			s.gor = go_switch_goroutine(b->t, b->go, goid, 0, time);
	} else {
		n = go_switch_take(b->go, ip, &v);
		if (n < 0)
			return -ENOMEM;
		if (n == 1)
			s = v[0];
	}
	if (n > 1) {
		/* Told apart later (go_climbed): the frames all have on top
		 * now, the newest's goroutine meanwhile. */
		b->amb = v;
		b->nr_amb = (size_t)n;
		b->amb_k = go_common(v, b->nr_amb);
		b->amb_climb = 0;
		b->amb_slice = thr(b)->nr_slices;
		b->amb_time = time;
		v = NULL;
		s.gor = b->amb[0].gor;
		s.goid = b->amb[0].goid;
		from = (const struct go_frame *)b->amb[0].frames +
		       (b->amb[0].nr - b->amb_k);
		nr = b->amb_k;
		flags = 0;
	} else if (n == 1) {
		from = s.frames;
		nr = s.nr;
		flags = 0;
		b->go_guess = s.guessed;
	} else {
		/* A new goroutine at its function's start; else one that
		 * was suspended before the trace (or on a thread whose
		 * trace comes later): its callers show as it returns. */
		flags = e->known && ip == e->lo ? MT_SLICE_TAIL
						: MT_SLICE_INFERRED_START;
		s.goid = goid;
		s.gor = go_switch_goroutine(b->t, b->go, goid, e->name, time);
		/* its start names it, even where another thread's trace
		 * (read first) saw it resume */
		if (s.gor && (flags & MT_SLICE_TAIL))
			b->t->goroutines[s.gor - 1].start = e->name;
	}
	free(v);
	if (!s.gor) {
		free(s.frames);
		return -ENOMEM;
	}
	if (!b->t->goroutines[s.gor - 1].start)
		b->t->goroutines[s.gor - 1].start = e->name;
	/* which ran is known once the candidates are told apart */
	if (!b->nr_amb)
		go_switch_ran(b->t, s.gor, time);
	b->go_on = GS_G;
	b->go_cur = s.gor;
	b->go_goid = exact ? goid : s.goid;
	rc = go_restart(b, time, ip, from, nr, flags, 0, b->nr_amb > 0);
	free(s.frames);
	return rc;
}

/*
 * A segment begins after trace was lost (or tracing was off), where a
 * switch may have been: the capture's last goroutine item before it, if
 * any, says which goroutine runs, and a goroutine other than the one
 * before begins a stack of its own (the one before was suspended in the
 * gap, its resume point unknown).
 */
static int go_reopen(struct seg_builder *b, uint64_t time, uint64_t ip,
		     bool resumed)
{
	const struct dec_goroutine *last = NULL;
	uint32_t gor = 0;
	int rc = open_segment(b, time, ip, resumed);

	if (rc || !b->go_seen || !b->nr_go_items || b->go_on == GS_UNKNOWN)
		return rc;
	while (b->next_go_item < b->nr_go_items &&
	       b->go_items[b->next_go_item].time <= time)
		last = &b->go_items[b->next_go_item++];
	if (!last ||
	    (b->go_on == GS_G0 ? !last->goid : last->goid == b->go_goid))
		return 0;
	rc = go_proc_of(b);
	if (!rc)
		rc = go_turn_end(b);
	if (rc)
		return rc;
	b->go_guess = false;
	if (last->goid) {
		gor = go_switch_goroutine(b->t, b->go, last->goid,
					  go_root_name(b), time);
		if (!gor)
			return -ENOMEM;
		go_switch_ran(b->t, gor, time);
	}
	b->go_on = last->goid ? GS_G : GS_G0;
	b->go_cur = gor;
	b->go_goid = last->goid;
	b->go_first_seg = b->seg_id;
	b->t->segments[b->seg_id].goroutine = gor;
	b->t->segments[b->seg_id].exec = true;
	return 0;
}

/* An event at a Go switch point is the switch: 0 or -ENOMEM.  1: it is
 * no switch. */
static int go_hook(struct seg_builder *b, uint64_t time, enum dec_kind kind,
		   uint64_t ip, uint64_t aux)
{
	size_t h = host_at(b);
	const struct frame *f = h < b->depth ? &b->stack[h] : NULL;
	const struct sym_ent *e;

	if (kind == DEC_RET)
		/* Only the return of systemstack's function lands there,
		 * even where a gap lost that function's frame. */
		return b->have_sys && b->go_on == GS_G0 &&
				       ip == b->go_sys.resume
			       ? go_back(b, time, ip)
			       : 1;
	if (!f || f->kind != FR_FUNC || f->go == GO_NONE)
		return 1;
	if (kind == DEC_IJUMP)
		return f->go == GO_GOGO ? go_gogo(b, time, ip) : 1;
	if (f->go != GO_MCALL && f->go != GO_MORESTACK &&
	    f->go != GO_SYSTEMSTACK)
		return 1;
	e = lookup(b, ip);
	if (!e)
		return -ENOMEM;
	if ((f->go == GO_MORESTACK && e->go != GO_NEWSTACK) ||
	    (f->go == GO_SYSTEMSTACK && e->go == GO_SWITCH_HELPER))
		return 1;
	return go_to_g0(b, time, ip, aux, f->go, e->go == GO_GOEXIT0);
}

bool seg_builder_is_go(const struct seg_builder *b)
{
	return b->go_seen;
}

void seg_builder_go(struct seg_builder *b, struct go_proc *p,
		    const struct dec_goroutine *items, size_t nr)
{
	if (b->go_own)
		go_proc_free(b->go);
	b->go = p;
	b->go_own = false;
	b->go_items = items;
	b->nr_go_items = nr;
	b->next_go_item = 0;
}

static const char *error_reason(struct seg_builder *b, uint64_t ip,
				uint64_t code, char *buf, size_t len)
{
	if (code == (uint64_t)pte_nomap) {
		const struct sym_ent *e = lookup(b, ip);
		const char *dso = e ? mt_str(&b->t->strs, e->dso) : "";
		const char *base = strrchr(dso, '/');

		base = base ? base + 1 : dso;
		if (*base)
			snprintf(buf, len, "no binary for %s", base);
		else
			snprintf(buf, len, "no code mapped at %#llx",
				 (unsigned long long)ip);
		return buf;
	}
	snprintf(buf, len, "decode error: %s", dec_error_str(code));
	return buf;
}

/* A thread left (or came back onto) a CPU whose trace was not decoded. */
static int gap_switch(struct seg_builder *b, uint64_t time, bool in)
{
	uint32_t reason = b->paused;
	int rc;

	if (b->open)
		return 0;
	if (!in) {
		if (!b->have_gap)
			return 0;
		reason = b->gap_reason;
		rc = gap_ends(b, time);
		b->paused = reason;
		return rc;
	}
	if (b->have_gap)
		return 0;
	rc = gap_begins(b, time,
			reason != MT_NONE ? mt_str(&b->t->strs, reason)
					  : "not decoded");
	b->paused = MT_NONE;
	return rc;
}

/*
 * A thread that was off its CPU (an interrupt stopped it) comes back in
 * an overflow, at the instruction it stopped at: the switch back was in
 * the trace lost, and it ran nothing since.  Only a thread back at the
 * same IP after a round of calls and returns would differ, and the
 * stack would still be the one it left with.
 */
static bool overflow_at_stop(struct seg_builder *b, uint64_t ip)
{
	const struct frame *f = b->open ? top(b) : NULL;

	return ip && f && f->kind == FR_PSEUDO && b->stop_ip == ip;
}

int seg_feed(struct seg_builder *b, uint64_t time, enum dec_kind kind,
	     uint64_t ip, uint64_t aux)
{
	char buf[160];
	struct frame *f;

	b->last_time = time;
	if (kind == DEC_EXEC)
		return on_exec(b, time);
	if (b->ended && kind != DEC_SYNC && kind != DEC_LOST) {
		int rc = close_segment(b, time, "end of trace", ip);

		if (rc)
			return rc;
	}
	switch (kind) {
	case DEC_SYNC:
		if (b->open) {
			int rc =
				close_segment(b, time,
					      b->ended ? "end of trace"
						       : "trace resynchronised",
					      ip);
			if (rc)
				return rc;
		}
		return go_reopen(b, time, ip, false);
	case DEC_OVERFLOW: {
		/* The gap runs from the last instruction traced to the
		 * resume; before any segment it is a gap all the same.  No
		 * IP: tracing was off, the next sync point resumes. */
		int rc;

		if (overflow_at_stop(b, ip))
			return on_resume(b, time, ip);

		if (aux > time || !aux)
			aux = time;
		rc = close_segment(b, aux, "overflow", ip);
		if (rc || !ip)
			return rc;
		return go_reopen(b, time, ip, false);
	}
	case DEC_ERROR:
		return close_segment(b, time,
				     error_reason(b, ip, aux, buf, sizeof(buf)),
				     ip);
	case DEC_LOST:
		return close_segment(b, time, "trace data lost", ip);
	case DEC_END:
		b->ended = b->open;
		return 0;
	case DEC_SWITCH:
		return gap_switch(b, time, aux != 0);
	case DEC_PTWRITE: {
		struct mt_ptwrite p = {.ts = time,
				       .tid = b->t->threads[b->thread].tid,
				       .ip = ip,
				       .value = aux};

		return mt_trace_add_ptwrite(b->t, &p) ? 0 : -ENOMEM;
	}
	default:
		break;
	}
	if (!b->open) {
		/* A thread's trace on a shared CPU starts where it comes
		 * back to user space (TIP.PGE), after its first sync point
		 * or its last gap. */
		if (kind == DEC_RESUME)
			return go_reopen(b, time, ip, true);
		return 0; /* nothing before the first sync point */
	}
	if (b->go_seen &&
	    (kind == DEC_CALL || kind == DEC_RET || kind == DEC_IJUMP)) {
		int rc = go_hook(b, time, kind, ip, aux);

		if (rc <= 0)
			return rc;
	}
	f = top(b);
	switch (kind) {
	case DEC_CALL:
		if (f && f->kind == FR_PSEUDO)
			pop_to(b, b->depth - 1, time);
		f = top(b);
		return then_inl(b,
				push_fn(b, time, f ? f->level + 1 : b->rmin, ip,
					aux, 0),
				time, ip, 0);
	case DEC_RET:
		if (f && f->kind == FR_PSEUDO)
			pop_to(b, b->depth - 1, time);
		return on_return(b, time, ip);
	case DEC_JUMP:
	case DEC_IJUMP:
		return on_jump(b, time, ip, kind == DEC_IJUMP);
	case DEC_SYSCALL:
	case DEC_STOP:
		if (f && f->kind == FR_PSEUDO)
			return 0;
		b->stop_ip = kind == DEC_STOP ? ip : 0;
		/* A kernel traced but not decodable (aux): its time. */
		return push(b, time, f ? f->level + 1 : b->rmin,
			    aux			  ? b->frame_kernel
			    : kind == DEC_SYSCALL ? b->frame_syscall
						  : b->frame_untraced,
			    kind == DEC_SYSCALL ? MT_SLICE_SYSCALL
						: MT_SLICE_UNTRACED,
			    0, 1, 0, FR_PSEUDO);
	case DEC_RESUME:
		return on_resume(b, time, ip);
	case DEC_INLINE:
		return inl_open(b, time,
				(const struct sym_inline *)(uintptr_t)aux, 0);
	default:
		return 0;
	}
}

int seg_finish(struct seg_builder *b, const struct dec_stack *final)
{
	int rc;

	/* Trace lost at the end, no segment after it: the gap lasts until
	 * the last thing the thread's trace says. */
	if (!b->open)
		return gap_ends(b, b->last_time);
	rc = anchor(b, final);
	if (rc)
		return rc;
	b->have_gap = false;
	rc = go_turn_end(b);
	if (rc)
		return rc;
	go_switch_ran(b->t, b->go_cur, b->last_time);
	rc = close_segment(b, b->last_time, "end of trace", 0);
	b->have_gap = false;
	return rc;
}

size_t seg_stack(const struct seg_builder *b, const char **names, size_t max)
{
	const struct mt_thread *th = &b->t->threads[b->thread];

	for (size_t i = 0; i < b->depth && i < max; i++)
		names[i] = mt_slice_str(b->t, &th->slices[b->stack[i].slice]);
	return b->depth;
}
