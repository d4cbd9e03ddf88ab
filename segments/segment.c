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
#include "segments/seg_internal.h"
#include "util/util.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>

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
	free(b->src_spec);
	if (b->go_own)
		go_proc_free(b->go);
	free(b);
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
	struct mt_thread *th = seg_thr(b);
	char buf[160];
	uint32_t name;
	struct mt_slice g = {
		.ts = b->gap_start,
		.dur = mt_dur_fit(time > b->gap_start ? time - b->gap_start
						      : 0),
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
	if (g.frame == MT_NONE || !seg_add_slice(b, th, &g))
		return -ENOMEM;
	b->have_gap = false;
	return 0;
}

/* A segment begins at ip.  resumed: tracing started there (TIP.PGE);
 * after an exec that is the new program's first instruction, so its
 * first frame begins there, not before. */
int seg_open_bare(struct seg_builder *b, uint64_t time, uint64_t ip)
{
	struct mt_thread *th = seg_thr(b);
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

int seg_open_segment(struct seg_builder *b, uint64_t time, uint64_t ip,
		     bool resumed)
{
	uint32_t first = resumed && b->exec_next ? 0 : MT_SLICE_INFERRED_START;
	int rc = seg_open_bare(b, time, ip);

	return seg_then_inl(b, rc ? rc : seg_push_fn(b, time, 0, ip, 0, first),
			    time, ip, first);
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
			const struct sym_ent *e =
				seg_lookup(b, st->ips[lead + j]);

			/* The functions' own frames, without the calls
			 * inlined into them. */
			while (b->stack[at - 1].kind != FR_FUNC)
				at--;
			f = &b->stack[--at];
			if (!e)
				return -ENOMEM;
			same = e->name == b->t->frames[f->fid].name;
		}
		if (!same)
			continue;
		for (size_t j = lead + have; j < st->nr; j++) {
			int rc = seg_reveal_at(b, st->ips[j], st->ips[j] - 1);

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
		if (i < k && (seg_thr(b)->slices[b->reveals[k - 1 - i]].flags &
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
int seg_end_segment(struct seg_builder *b, uint64_t time, const char *reason,
		    uint64_t ip, uint32_t end_flags)
{
	struct mt_thread *th = seg_thr(b);
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
		seg_end_frame(b, seg_top(b), time, end_flags);
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
	return seg_end_segment(b, time, reason, ip, MT_SLICE_INFERRED_END);
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
		rc = seg_end_segment(b, time, "exec", 0, 0);
	else
		rc = gap_ends(b, time);
	b->have_gap = false;
	b->paused = MT_NONE;
	b->exec_next = b->any;
	/* Another program: its addresses name other functions. */
	seg_builder_forget_names(b);
	return rc;
}

static const char *error_reason(struct seg_builder *b, uint64_t ip,
				uint64_t code, char *buf, size_t len)
{
	if (code == (uint64_t)pte_nomap) {
		const struct sym_ent *e = seg_lookup(b, ip);
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
	const struct frame *f = b->open ? seg_top(b) : NULL;

	return ip && f && f->kind == FR_PSEUDO && b->stop_ip == ip;
}

/*
 * A slice holds 52 bits of duration (model.h): a clock that runs on
 * past that from the thread's first time (a capture whose timestamps
 * are wild) stops there.  Capping the times, not only the lengths,
 * keeps every child's end inside its parent's.
 */
static uint64_t seg_time_cap(struct seg_builder *b, uint64_t time)
{
	if (!b->have_time0) {
		b->time0 = time;
		b->have_time0 = true;
	}
	return time > b->time0 && time - b->time0 > MT_DUR_MAX
		       ? b->time0 + MT_DUR_MAX
		       : time;
}

int seg_feed(struct seg_builder *b, uint64_t time, enum dec_kind kind,
	     uint64_t ip, uint64_t aux)
{
	char buf[160];
	struct frame *f;

	time = seg_time_cap(b, time);
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
			return seg_on_resume(b, time, ip);

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
	f = seg_top(b);
	switch (kind) {
	case DEC_CALL:
		if (f && f->kind == FR_PSEUDO)
			seg_pop_to(b, b->depth - 1, time);
		f = seg_top(b);
		return seg_then_inl(b,
				    seg_push_fn(b, time,
						f ? f->level + 1 : b->rmin, ip,
						aux, 0),
				    time, ip, 0);
	case DEC_RET:
		if (f && f->kind == FR_PSEUDO)
			seg_pop_to(b, b->depth - 1, time);
		return seg_on_return(b, time, ip);
	case DEC_JUMP:
	case DEC_IJUMP:
		return seg_on_jump(b, time, ip, kind == DEC_IJUMP);
	case DEC_SYSCALL:
	case DEC_STOP:
		if (f && f->kind == FR_PSEUDO)
			return 0;
		b->stop_ip = kind == DEC_STOP ? ip : 0;
		/* A kernel traced but not decodable (aux): its time. */
		return seg_push(b, time, f ? f->level + 1 : b->rmin,
				aux		      ? b->frame_kernel
				: kind == DEC_SYSCALL ? b->frame_syscall
						      : b->frame_untraced,
				kind == DEC_SYSCALL ? MT_SLICE_SYSCALL
						    : MT_SLICE_UNTRACED,
				0, 1, 0, FR_PSEUDO);
	case DEC_RESUME:
		return seg_on_resume(b, time, ip);
	case DEC_INLINE:
		return seg_inl_open(
			b, time, (const struct sym_inline *)(uintptr_t)aux, 0);
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
	for (size_t i = 0; i < b->depth && i < max; i++)
		names[i] = seg_frame_str(b, &b->stack[i]);
	return b->depth;
}
