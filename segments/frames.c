/* SPDX-License-Identifier: MIT */
/* The segment builder's frame stack: pushing and ending frames, the
 * calls inlined at an address, callers revealed by returns. */
#include "segments/seg_internal.h"
#include "symbols/symbols.h"
#include "util/util.h"

#include <errno.h>
#include <intel-pt.h>

struct mt_thread *seg_thr(struct seg_builder *b)
{
	return &b->t->threads[b->thread];
}

int seg_slices_room(struct seg_builder *b, struct mt_thread *th, size_t need)
{
	int rc;

	if (need <= th->cap_slices)
		return 0;
	/* (the pager, if any, waits while the array moves) */
	mt_ahead_lock(b->ahead);
	rc = mt_grow((void **)&th->slices, &th->cap_slices, need,
		     sizeof(*th->slices));
	mt_ahead_grown(b->ahead, th->slices,
		       th->cap_slices * sizeof(*th->slices));
	return rc ? -ENOMEM : 0;
}

struct mt_slice *seg_add_slice_grow(struct seg_builder *b, struct mt_thread *th,
				    const struct mt_slice *s)
{
	if (seg_slices_room(b, th, th->nr_slices + 1))
		return NULL;
	return mt_thread_push(th, s);
}

/* "FILE:LINE" as a string id, 0 when out of memory. */
static uint32_t pos_intern(struct seg_builder *b, const char *file,
			   unsigned line)
{
	char buf[4096 + 16];
	uint32_t id;

	snprintf(buf, sizeof(buf), "%s:%u", file, line);
	id = seg_noted(b, false, mt_str_intern(&b->t->strs, buf));
	return id == MT_NONE ? 0 : id;
}

/*
 * A frame keeps the first source it is given.  A function's is always
 * the same, but an inlined call's frame is its name in its binary, and
 * two inlined functions of one name (a header's, declared in two files)
 * share it: the first given is the same at every -j, wherever caches
 * stand, the last is not.  What a speculating builder gives at the
 * events another decides is its own to read (spec.c), and the first it
 * gives at one of its own replaces it.
 */
static bool frame_source(struct seg_builder *b, uint32_t frame, uint32_t src)
{
	struct mt_frame *f = &b->t->frames[frame];
	bool was = frame < b->nr_src_spec && b->src_spec[frame];

	if (f->source && !(was && !b->spec_nocache))
		return true;
	/* A source set speculatively and not marked so would stay: out of
	 * memory leaves it as it was. */
	if (b->spec_nocache) {
		if (mt_grow((void **)&b->src_spec, &b->cap_src_spec,
			    (size_t)frame + 1, sizeof(*b->src_spec)))
			return false;
		while (b->nr_src_spec <= frame)
			b->src_spec[b->nr_src_spec++] = false;
		b->src_spec[frame] = true;
	} else if (was) {
		b->src_spec[frame] = false;
	}
	f->source = src;
	return true;
}

void seg_builder_forget_names(struct seg_builder *b)
{
	for (size_t i = 0; i < SYM_CACHE; i++)
		b->cache[i].valid = false;
	mt_hmap_free(&b->sites); /* (empty, and usable so) */
}

const struct sym_ent *seg_lookup(struct seg_builder *b, uint64_t ip)
{
	struct sym_ent *e =
		&b->cache[(ip ^ (ip >> 7) ^ (ip >> 17)) & (SYM_CACHE - 1)];
	struct img_sym ds;

	if (e->valid && e->ip == ip)
		return e;
	if (b->spec_nocache)
		e = &b->scratch[b->next_scratch++ % 4];
	/* A symbolizer that knows no source positions leaves them out. */
	ds.fn_file = ds.ip_file = NULL;
	ds.fn_line = ds.ip_line = 0;
	ds.inl = NULL;
	ds.fn_inl = false;
	ds.entry_known = false;
	b->sym(b->ctx, ip, &ds);
	e->name = seg_noted(b, false, mt_str_intern(&b->t->strs, ds.name));
	e->dso = seg_noted(b, false, mt_str_intern(&b->t->strs, ds.dso));
	if (e->name == MT_NONE || e->dso == MT_NONE) {
		e->valid = false;
		return NULL;
	}
	e->frame = seg_noted(b, true,
			     mt_frame_intern(b->t, e->name, e->dso,
					     ds.known ? ds.start : ip));
	e->site = 0;
	if (e->frame != MT_NONE && ds.fn_file) {
		uint32_t src;

		if (!(e->site = pos_intern(b, ds.ip_file, ds.ip_line)) ||
		    !(src = pos_intern(b, ds.fn_file, ds.fn_line)) ||
		    !frame_source(b, e->frame, src))
			e->frame = MT_NONE;
	}
	if (e->frame == MT_NONE) {
		e->valid = false;
		return NULL;
	}
	e->ip = ip;
	e->lo = ds.start;
	e->hi = ds.end;
	e->known = ds.known;
	e->entry_known = ds.known || ds.entry_known;
	e->inl = ds.inl;
	e->fn_inl = ds.fn_inl || ds.inl;
	e->go = (uint8_t)go_switch_fn(ds.name);
	/* A plain "gogo" counts in a program that has the runtime's. */
	b->go_seen |= e->go != GO_NONE && go_runtime_switch(ds.name);
	e->valid = true;
	return e;
}

struct frame *seg_top(struct seg_builder *b)
{
	return b->depth ? &b->stack[b->depth - 1] : NULL;
}

struct mt_slice *seg_slice_of(struct seg_builder *b, const struct frame *f)
{
	return &seg_thr(b)->slices[f->slice];
}

/* Append a slice for a new frame at level lv; parent is the frame below
 * (or unknown, for a root). */
int seg_push(struct seg_builder *b, uint64_t time, int32_t lv, uint32_t frame,
	     uint32_t flags, uint64_t ret, uint64_t lo, uint64_t hi,
	     uint8_t kind)
{
	struct mt_thread *th = seg_thr(b);
	struct frame *below = seg_top(b);
	struct mt_slice s = {
		.ts = time,
		.frame = frame,
		.depth = (uint32_t)(lv + (int32_t)LEVEL_BIAS),
		.parent = below ? below->slice : MT_NONE,
		.flags = flags,
		.segment = b->seg_id,
	};

	if (!seg_add_slice(b, th, &s) ||
	    mt_grow((void **)&b->stack, &b->cap, b->depth + 1,
		    sizeof(*b->stack)))
		return -ENOMEM;
	b->stack[b->depth++] = (struct frame){
		.slice = (uint32_t)(th->nr_slices - 1),
		.fid = frame,
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
 * return address.  *site 0: unknown.  0, or -ENOMEM.
 */
static int call_site(struct seg_builder *b, const struct frame *caller,
		     uint64_t ret, uint32_t *site)
{
	const struct sym_ent *e;
	uint64_t v;

	*site = 0;
	if (!caller || caller->kind == FR_PSEUDO || !ret ||
	    !b->t->frames[caller->fid].source)
		return 0;
	if (mt_hmap_find(&b->sites, ret, &v)) {
		*site = (uint32_t)v;
		return 0;
	}
	if (!(e = seg_lookup(b, ret - 1)))
		return -ENOMEM;
	/* A full table only costs the lookups again. */
	if (!b->spec_nocache)
		mt_hmap_set(&b->sites, ret, e->site);
	*site = e->site;
	return 0;
}

int seg_push_fn(struct seg_builder *b, uint64_t time, int32_t lv, uint64_t ip,
		uint64_t ret, uint32_t flags)
{
	uint32_t site;
	const struct sym_ent *e;
	int rc;

	if (call_site(b, seg_top(b), ret, &site) || !(e = seg_lookup(b, ip)))
		return -ENOMEM;
	if (!e->known)
		flags |= MT_SLICE_UNKNOWN;
	rc = seg_push(b, time, lv, e->frame, flags, ret, e->lo, e->hi, FR_FUNC);
	if (!rc) {
		seg_thr(b)->slices[seg_thr(b)->nr_slices - 1].site = site;
		seg_top(b)->inl_code = e->fn_inl;
		seg_top(b)->go = e->go;
	}
	return rc;
}

/* The index of the top frame that is no inlined call (b->depth when
 * there is none). */
size_t seg_host_at(const struct seg_builder *b)
{
	for (size_t i = b->depth; i-- > 0;)
		if (b->stack[i].kind != FR_INLINE)
			return i;
	return b->depth;
}

/* How many frames stay when frame i is returned to: it and the calls
 * inlined into it that are open. */
size_t seg_with_inlined(const struct seg_builder *b, size_t i)
{
	size_t n = i + 1;

	while (n < b->depth && b->stack[n].kind == FR_INLINE)
		n++;
	return n;
}

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
	name = seg_noted(b, false, mt_str_intern(&b->t->strs, in->name));
	if (name == MT_NONE)
		return -ENOMEM;
	*frame = seg_noted(b, true, mt_frame_intern(b->t, name, dso, 0));
	if (*frame == MT_NONE)
		return -ENOMEM;
	if (in->decl_file) {
		uint32_t src = pos_intern(b, in->decl_file, in->decl_line);

		if (!src)
			return -ENOMEM;
		frame_source(b, *frame, src);
	}
	*site = 0;
	if (in->call_file &&
	    !(*site = pos_intern(b, in->call_file, in->call_line)))
		return -ENOMEM;
	return b->spec_nocache ? 0
			       : mt_hmap_set(&b->inl_frames, key,
					     *frame | (uint64_t)*site << 32);
}

/*
 * The inlined calls open above the top function become leaf and the
 * calls it is inlined in: those already open stay, the others end at
 * time and the missing ones begin there (flags: how they begin).
 */
int seg_inl_open(struct seg_builder *b, uint64_t time,
		 const struct sym_inline *leaf, uint32_t flags)
{
	const struct sym_inline *chain[64];
	size_t h = seg_host_at(b), n = 0, keep;

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
	seg_pop_to(b, h + 1 + keep, time);
	for (size_t j = keep; j < n; j++) {
		const struct frame *host = &b->stack[h];
		const struct frame *f = seg_top(b);
		uint32_t frame, site;
		int rc = inl_frame(b, b->t->frames[host->fid].dso, chain[j],
				   &frame, &site);

		if (!rc)
			rc = seg_push(b, time, f->level + 1, frame,
				      flags | MT_SLICE_INLINED, 0, host->lo,
				      host->hi, FR_INLINE);
		if (rc)
			return rc;
		seg_top(b)->in = chain[j];
		seg_thr(b)->slices[seg_thr(b)->nr_slices - 1].site = site;
	}
	return 0;
}

/* Code at ip runs in the top function: the calls inlined there open. */
int seg_inl_at(struct seg_builder *b, uint64_t time, uint64_t ip,
	       uint32_t flags)
{
	const struct sym_ent *e;
	size_t h = seg_host_at(b);

	/* Every arrival in a function passes here: its entry, a return
	 * into it, a resume. */
	if (h < b->depth) {
		b->stack[h].at = ip;
		b->stack[h].arrived = true;
	}
	/* Most code has nothing inlined: no lookup there. */
	if (h == b->depth || (h + 1 == b->depth && !b->stack[h].inl_code))
		return 0;
	e = seg_lookup(b, ip);
	if (!e)
		return -ENOMEM;
	if (!e->inl && h + 1 == b->depth)
		return 0;
	return seg_inl_open(b, time, e->inl, flags);
}

/* After rc (0: a frame was pushed or found), the calls inlined at ip. */
int seg_then_inl(struct seg_builder *b, int rc, uint64_t time, uint64_t ip,
		 uint32_t flags)
{
	return rc ? rc : seg_inl_at(b, time, ip, flags);
}

void seg_end_frame(struct seg_builder *b, const struct frame *f, uint64_t time,
		   uint32_t flags)
{
	struct mt_slice *s = seg_slice_of(b, f);

	s->dur = mt_dur_fit(time > s->ts ? time - s->ts : 0);
	s->flags |= flags;
}

void seg_pop_to(struct seg_builder *b, size_t n, uint64_t time)
{
	while (b->depth > n) {
		seg_end_frame(b, seg_top(b), time, 0);
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
	struct mt_thread *th = seg_thr(b);
	int32_t lv = b->rmin - 1;
	uint32_t idx;
	size_t cap = b->cap_reveals;

	s.ts = b->seg_start;
	s.depth = (uint32_t)(lv + (int32_t)LEVEL_BIAS);
	s.parent = MT_NONE;
	s.flags |= MT_SLICE_INFERRED_START;
	s.segment = b->seg_id;

	if (!seg_add_slice(b, th, &s) ||
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
	f.fid = s.frame;
	f.level = lv;
	b->stack[0] = f;
	b->depth++;
	if (b->depth > 1)
		th->slices[b->stack[1].slice].parent = idx;
	return 0;
}

int seg_reveal(struct seg_builder *b, uint64_t ip)
{
	const struct sym_ent *e = seg_lookup(b, ip);

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
int seg_reveal_at(struct seg_builder *b, uint64_t ip, uint64_t call)
{
	const struct sym_ent *e = seg_lookup(b, call), *f;
	const struct sym_inline *in;
	uint64_t lo, hi;
	uint32_t dso;

	if (!e)
		return -ENOMEM;
	in = e->inl;
	dso = e->dso;
	f = seg_lookup(b, ip);
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
	return seg_reveal(b, ip);
}
