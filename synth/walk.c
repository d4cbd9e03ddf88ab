/* SPDX-License-Identifier: MIT */
/*
 * The walker: executes the generated program one instruction at a time
 * with a seeded random choice at every decision, keeps the true call
 * stack, records every call that was live in the traced window, and feeds
 * the packet emitter.
 */
#include "synth/walk.h"

#include <stdlib.h>
#include <string.h>

enum mode {
	RUN_EMIT,   /* traced: packets and truth */
	RUN_SILENT, /* inside an injected gap: truth only */
	RUN_PRE,    /* before the window: neither */
};

struct frame {
	uint32_t func;
	uint32_t resume; /* insn index in func when the callee returns */
	size_t row;	 /* truth row, SIZE_MAX outside the window */
};

struct walker {
	const struct program *p;
	struct rng rng;
	struct ptenc *g;
	struct walk_thread *t;

	struct frame *st;
	size_t top, cap; /* st[top] is the running frame */
	uint32_t pc;
	uint64_t tsc;
	uint64_t deep_target;
	size_t max_depth;
	/*
	 * The last instruction a packet accounts for (a TNT bit, a TIP, a
	 * TIP.PGE or a PSB+'s FUP): its time and the IP after it.  A decoder
	 * that meets an OVF stops there, so a gap's lost events begin after
	 * it, even when direct calls or jumps, which need no packet, ran
	 * before the packets were lost.
	 */
	uint64_t pkt_tsc, pkt_ip;
	size_t nlr_to;	 /* the ancestor the next non-local jump lands in */
	unsigned gap_at; /* SYNTH_GAP_* */
	bool again;	 /* inject a gap after the next branch */
	bool again_done; /* the gap just injected was such a one */
	struct walk_cfg c;
	uint64_t n;    /* branches walked in the window, lost ones included */
	bool gap_open; /* the last gap ended in a switch: its resume waits */
	size_t untraced_row; /* open while switched out; else SIZE_MAX */
};

static uint64_t cur_ip(const struct walker *w)
{
	return insn_addr(&w->p->funcs[w->st[w->top].func], w->pc);
}

int walk_add_row(struct walk_thread *t, uint32_t func, uint32_t depth,
		 uint64_t start, unsigned flags, size_t *idx)
{
	if (t->nr_rows == t->cap_rows) {
		size_t cap = t->cap_rows ? t->cap_rows * 2 : 4096;
		struct truth_row *r = realloc(t->rows, cap * sizeof(*r));
		if (!r)
			return -1;
		t->rows = r;
		t->cap_rows = cap;
	}
	t->rows[t->nr_rows] = (struct truth_row){.func = func,
						 .depth = depth,
						 .start = start,
						 .end = 0,
						 .flags = flags};
	*idx = t->nr_rows++;
	return 0;
}

static int add_row(struct walker *w, uint32_t func, uint64_t start,
		   unsigned flags, size_t *idx)
{
	return walk_add_row(w->t, func, (uint32_t)w->top, start, flags, idx);
}

static int add_gap(struct walk_thread *t, const struct walk_gap *g)
{
	if (t->nr_gaps == t->cap_gaps) {
		size_t cap = t->cap_gaps ? t->cap_gaps * 2 : 16;
		struct walk_gap *v = realloc(t->gap_list, cap * sizeof(*v));
		if (!v)
			return -1;
		t->gap_list = v;
		t->cap_gaps = cap;
	}
	t->gap_list[t->nr_gaps++] = *g;
	return 0;
}

static void end_row(struct walker *w, size_t row, uint64_t end, unsigned flags)
{
	if (row == SIZE_MAX)
		return;
	w->t->rows[row].end = end;
	w->t->rows[row].flags |= flags;
}

static int push(struct walker *w, uint32_t func, uint32_t resume, enum mode m,
		unsigned flags)
{
	if (w->top + 1 == w->cap) {
		size_t cap = w->cap * 2;
		struct frame *s = realloc(w->st, cap * sizeof(*s));
		if (!s)
			return -1;
		w->st = s;
		w->cap = cap;
	}
	w->st[w->top].resume = resume;
	w->top++;
	w->st[w->top] = (struct frame){.func = func, .row = SIZE_MAX};
	if (m != RUN_PRE && add_row(w, func, w->tsc, flags, &w->st[w->top].row))
		return -1;
	if ((unsigned)w->top > w->t->max_depth)
		w->t->max_depth = (unsigned)w->top;
	w->pc = 0;
	return 0;
}

/* Replace the running frame: a tail call or a trampoline's jump. */
static int replace(struct walker *w, uint32_t func, enum mode m)
{
	end_row(w, w->st[w->top].row, w->tsc, TRUTH_TAIL_OUT);
	w->st[w->top].func = func;
	w->st[w->top].row = SIZE_MAX;
	w->pc = 0;
	if (m != RUN_PRE &&
	    add_row(w, func, w->tsc, TRUTH_TAIL, &w->st[w->top].row))
		return -1;
	return 0;
}

/* Should the guarded site after the JCC at pc be skipped? */
/*
 * The ancestor a non-local jump may land in, 2..5 frames up (starting at
 * a random distance), or SIZE_MAX.  A jump's target IP names a function,
 * not an activation: when the function is active twice between the
 * landing frame and the top, or the landing frame began before the
 * window (no decoder has seen it), no trace can tell where the jump
 * went, so the program does not make such jumps.
 */
static size_t nlr_target(const struct walker *w, size_t k0)
{
	for (size_t d = 0; d < 4; d++) {
		size_t k = 2 + (k0 + d) % 4, a;
		bool ok;

		if (k > w->top)
			continue;
		a = w->top - k;
		ok = w->st[a].row != SIZE_MAX &&
		     !(w->t->rows[w->st[a].row].flags & TRUTH_CLIP_START);
		for (size_t i = a + 1; i <= w->top && ok; i++)
			ok = w->st[i].func != w->st[a].func;
		if (ok)
			return a;
	}
	return SIZE_MAX;
}

static bool guard_skip(struct walker *w, enum mode m)
{
	const struct program *p = w->p;
	const struct func *f = &p->funcs[w->st[w->top].func];
	const struct insn *next = &f->insns[w->pc + 1];
	uint32_t callee;

	if (next->kind == I_NLR) {
		if (w->top < 3 || m == RUN_PRE || !rng_chance(&w->rng, 1, 3))
			return true;
		w->nlr_to = nlr_target(w, rng_below(&w->rng, 4));
		return w->nlr_to == SIZE_MAX;
	}
	if (next->kind == I_TAIL ||
	    (next->kind == I_LEA && f->insns[w->pc + 2].kind == I_ITAIL))
		return !rng_chance(&w->rng, 1, 2);
	callee = next->target;
	if (p->funcs[callee].kind == F_PLT)
		callee = p->funcs[callee].insns[0].target;
	if (f->kind == F_DEEP)
		return w->top >= w->deep_target;
	if (callee == p->deep) {
		if (m == RUN_PRE || w->t->branches_left < 4000 ||
		    !rng_chance(&w->rng, 1, 48))
			return true;
		w->deep_target = w->top + 1000 + rng_below(&w->rng, 300);
		return false;
	}
	if (w->top >= w->max_depth)
		return true;
	if (m == RUN_PRE)
		return false;
	/* About one call per function body: depth wanders up and down. */
	return rng_below(&w->rng, 1000) >=
	       (f->kind == F_ROOT ? 500 : 1300 / (f->nr_guards + 1));
}

static bool cond_taken(struct walker *w, const struct insn *in, enum mode m)
{
	switch (in->role) {
	case JCC_LOOP:
		return rng_chance(&w->rng, 3, 4);
	case JCC_GUARD:
		return guard_skip(w, m);
	default:
		return rng_chance(&w->rng, 1, 2);
	}
}

/*
 * Execute one instruction.  Returns 1 if it was a branch, 0 if not,
 * -1 on error.
 */
static int step(struct walker *w, enum mode m)
{
	const struct program *p = w->p;
	const struct func *f = &p->funcs[w->st[w->top].func];
	const struct insn *in = &f->insns[w->pc];
	bool emit = m == RUN_EMIT;
	uint64_t ip = insn_addr(f, w->pc), next_ip = ip + in->size;
	int rc = 0;

	/* Every instruction takes 3..8 TSC ticks: no two share a ns. */
	w->tsc += 3 + rng_below(&w->rng, 6);
	switch (in->kind) {
	case I_FILL:
	case I_MOVEAX:
	case I_LEA:
		w->pc++;
		return 0;
	case I_JCC: {
		bool taken = cond_taken(w, in, m);
		if (emit)
			rc = ptenc_cond(w->g, w->tsc, taken);
		w->pc = taken ? in->target : w->pc + 1;
		break;
	}
	case I_JMP:
		w->pc = in->target;
		break;
	case I_CALL:
	case I_ICALL:
		if (emit && in->kind == I_ICALL)
			rc = ptenc_indirect(w->g, w->tsc,
					    p->funcs[in->target].addr);
		if (emit)
			ptenc_call(w->g, next_ip);
		if (!rc && push(w, in->target, w->pc + 1, m, 0))
			rc = -1;
		w->t->calls += emit;
		break;
	case I_TAIL:
	case I_ITAIL:
	case I_PLTJMP:
		if (emit && in->kind != I_TAIL)
			rc = ptenc_indirect(w->g, w->tsc,
					    p->funcs[in->target].addr);
		if (!rc && replace(w, in->target, m))
			rc = -1;
		break;
	case I_SYSCALL: {
		uint64_t back = w->tsc + 200 + rng_below(&w->rng, 3000);
		size_t row = SIZE_MAX;

		if (w->c.kernel) {
			struct kwalk kw = {&w->rng, w->g, w->t,
					   w->tsc,  emit, m != RUN_PRE};

			rc = kwalk_syscall(&kw, (uint32_t)w->top + 1, next_ip);
			w->tsc = kw.tsc;
			w->pc++;
			w->t->syscalls += emit;
			break;
		}
		w->top++; /* the row sits one level below the caller */
		if (m != RUN_PRE &&
		    add_row(w, TRUTH_SYSCALL_FUNC, w->tsc, TRUTH_SYSCALL, &row))
			rc = -1;
		w->top--;
		if (emit && !rc)
			rc = ptenc_syscall(w->g, w->tsc, back, next_ip);
		end_row(w, row, back, 0);
		w->tsc = back;
		w->pc++;
		w->t->syscalls += emit;
		break;
	}
	case I_NLR: {
		/* Unwind to the ancestor the guard chose. */
		size_t a = w->nlr_to;
		for (size_t i = w->top; i > a; i--)
			end_row(w, w->st[i].row, w->tsc, TRUTH_UNWOUND);
		w->top = a;
		w->pc = p->funcs[w->st[a].func].land;
		if (emit) {
			ptenc_unwind(w->g);
			rc = ptenc_indirect(w->g, w->tsc, cur_ip(w));
		}
		break;
	}
	case I_RET:
		if (w->top == 0)
			return -1; /* roots never return */
		end_row(w, w->st[w->top].row, w->tsc, 0);
		w->top--;
		w->pc = w->st[w->top].resume;
		if (emit)
			rc = ptenc_ret(w->g, w->tsc, cur_ip(w));
		w->t->returns += emit;
		break;
	}
	if (emit && in->kind != I_JMP && in->kind != I_CALL &&
	    in->kind != I_TAIL) {
		w->pkt_tsc = w->tsc;
		w->pkt_ip = cur_ip(w);
	}
	return rc ? -1 : 1;
}

/* How an injected gap ends. */
enum lose {
	LOSE_COUNT,    /* after 1..48 branches */
	LOSE_PAST_NLR, /* once the non-local jump about to run has run */
	LOSE_RETURNS,  /* once the stack is three frames shallower */
};

/*
 * Lose the packets of the branches from here on, as an overflow does:
 * the walk goes on silently (truth only) until the gap ends as `how`
 * says, then OVF and a FUP at the resume IP.  *n counts the branches.
 * Returns 0, -1 when encoding failed, -2 when out of memory.
 */
static int inject_gap(struct walker *w, enum lose how, uint64_t *n)
{
	struct walk_thread *t = w->t;
	struct walk_gap gap = {.first_branch = *n + 1,
			       .after_tsc = w->pkt_tsc,
			       .stop_ip = w->pkt_ip};
	uint64_t lost = how == LOSE_COUNT ? 1 + rng_below(&w->rng, 48)
					  : 1 + rng_below(&w->rng, 8);
	size_t floor = w->top > 3 ? w->top - 3 : 0;
	bool jumped = false;
	uint64_t k = 0;

	if (ptenc_finish(w->g, w->tsc))
		return -1;
	/* Past 4096 branches a gap ends whatever it waited for. */
	while (k < lost ||
	       (k < 4096 && ((how == LOSE_PAST_NLR && !jumped) ||
			     (how == LOSE_RETURNS && w->top > floor)))) {
		uint8_t kind =
			w->p->funcs[w->st[w->top].func].insns[w->pc].kind;
		int rc = step(w, RUN_SILENT);

		if (rc < 0)
			return -1;
		jumped |= kind == I_NLR;
		k += (uint64_t)rc;
	}
	*n += k;
	gap.last_branch = *n;
	gap.end_tsc = w->tsc;
	w->tsc += 3;
	gap.resume_tsc = w->tsc;
	gap.resume_ip = cur_ip(w);
	if (add_gap(t, &gap))
		return -2;
	if (ptenc_overflow(w->g, w->tsc, gap.resume_ip))
		return -1;
	/* The FUP tells where the next gap could stop. */
	w->pkt_tsc = w->tsc;
	w->pkt_ip = gap.resume_ip;
	t->gaps++;
	/* Back to back: the next one follows the next branch. */
	w->again = (w->gap_at & SYNTH_GAP_BACK2BACK) && !w->again_done &&
		   rng_chance(&w->rng, 1, 3);
	w->again_done = w->again;
	return 0;
}

struct walker *walk_new(const struct program *p, const struct walk_cfg *c,
			struct walk_thread *t, char *err, size_t errlen)
{
	struct walker *w = calloc(1, sizeof(*w));

	if (!w)
		goto nomem;
	*w = (struct walker){.p = p,
			     .t = t,
			     .gap_at = c->gap_at,
			     .c = *c,
			     .untraced_row = SIZE_MAX};
	rng_seed(&w->rng, c->seed);
	w->cap = 2048;
	w->st = calloc(w->cap, sizeof(*w->st));
	if (!w->st)
		goto nomem;
	w->st[0] = (struct frame){.func = c->root, .row = SIZE_MAX};
	w->tsc = c->start_tsc;
	w->max_depth = 40 + (size_t)c->start_depth;
	t->branches_left = c->branches;

	/* Before the window: get start_depth frames deep, silently. */
	for (uint64_t guard = 0; w->top < c->start_depth; guard++) {
		if (guard > 10000000 || step(w, RUN_PRE) < 0) {
			snprintf(err, errlen,
				 "could not reach start depth %u (seed %llu)",
				 c->start_depth, (unsigned long long)c->seed);
			walk_free(w);
			return NULL;
		}
	}
	return w;
nomem:
	snprintf(err, errlen, "out of memory walking the program");
	walk_free(w);
	return NULL;
}

void walk_free(struct walker *w)
{
	if (!w)
		return;
	free(w->st);
	free(w);
}

uint64_t walk_tsc(const struct walker *w)
{
	return w->tsc;
}

bool walk_done(const struct walker *w)
{
	return w->n >= w->c.branches;
}

static int enter(struct walker *w, struct ptenc *g, uint64_t tsc,
		 enum walk_entry how)
{
	const struct walk_cfg *c = &w->c;
	int rc;

	w->g = g;
	if (tsc > w->tsc)
		w->tsc = tsc;
	switch (how) {
	case WALK_PSB:
		rc = ptenc_start(g, w->tsc, cur_ip(w), c->start_depth > 0);
		break;
	case WALK_PGE:
		rc = ptenc_pge(g, w->tsc, cur_ip(w));
		break;
	default:
		rc = ptenc_overflow(g, w->tsc, cur_ip(w));
		break;
	}
	if (rc)
		return -2;
	w->pkt_tsc = w->tsc;
	w->pkt_ip = cur_ip(w);
	end_row(w, w->untraced_row, w->tsc, 0);
	w->untraced_row = SIZE_MAX;
	if (w->gap_open) {
		struct walk_gap *gap = &w->t->gap_list[w->t->nr_gaps - 1];

		gap->resume_tsc = w->tsc;
		gap->resume_ip = cur_ip(w);
		w->gap_open = false;
	}
	return 0;
}

int walk_begin(struct walker *w, struct ptenc *g, uint64_t tsc,
	       enum walk_entry how)
{
	const struct walk_cfg *c = &w->c;

	if (tsc > w->tsc)
		w->tsc = tsc;
	w->t->window_start = w->tsc;
	for (size_t i = 0; i <= w->top; i++) {
		size_t saved = w->top;
		int rc;

		w->top = i;
		rc = add_row(w, w->st[i].func, w->tsc,
			     c->start_depth ? TRUTH_CLIP_START : 0,
			     &w->st[i].row);
		w->top = saved;
		if (rc)
			return -2;
	}
	return enter(w, g, w->tsc, how);
}

int walk_run(struct walker *w, uint64_t quantum)
{
	const struct program *p = w->p;
	const struct walk_cfg *c = &w->c;
	struct walk_thread *t = w->t;
	uint64_t stop =
		quantum > UINT64_MAX - w->n ? UINT64_MAX : w->n + quantum;
	int rc;

	while (w->n < c->branches && w->n < stop) {
		const struct insn *in =
			&p->funcs[w->st[w->top].func].insns[w->pc];
		uint8_t kind = in->kind;
		enum lose how = LOSE_COUNT;

		/* Gaps that must begin before this instruction. */
		if ((c->gap_at & SYNTH_GAP_LONGJMP) && kind == I_NLR &&
		    rng_chance(&w->rng, 1, 4))
			how = LOSE_PAST_NLR;
		else if ((c->gap_at & SYNTH_GAP_RETURNS) && kind == I_RET &&
			 w->top > 6 && rng_below(&w->rng, 1000) == 0)
			how = LOSE_RETURNS;
		if (how != LOSE_COUNT && w->n + 64 < c->branches) {
			rc = inject_gap(w, how, &w->n);
			if (rc)
				return rc;
			continue;
		}
		rc = step(w, RUN_EMIT);
		if (rc < 0)
			return -1;
		if (!rc)
			continue;
		w->n++;
		t->branches_left = c->branches - w->n;
		rc = ptenc_maybe_psb(w->g, w->tsc, cur_ip(w));
		if (rc < 0)
			return -2;
		if (rc) {
			w->pkt_tsc = w->tsc;
			w->pkt_ip = cur_ip(w);
		}
		if (((c->gap_every && rng_below(&w->rng, c->gap_every) == 0) ||
		     ((c->gap_at & SYNTH_GAP_SYSCALL) && kind == I_SYSCALL &&
		      rng_chance(&w->rng, 1, 16)) ||
		     ((c->gap_at & SYNTH_GAP_RECURSION) && w->top > 100 &&
		      rng_below(&w->rng, 5000) == 0) ||
		     w->again) &&
		    w->n + 64 < c->branches) {
			w->again = false;
			rc = inject_gap(w, LOSE_COUNT, &w->n);
			if (rc)
				return rc;
		}
	}
	return w->n >= c->branches;
}

int walk_switch_out(struct walker *w, bool last)
{
	/* An interrupt at the next instruction: FUP names it, TIP.PGD. */
	int rc = ptenc_async_pgd(w->g, w->tsc, cur_ip(w)) ? -2 : 0;

	w->g = NULL;
	if (rc)
		return rc;
	w->top++; /* the row sits one level below the running frame */
	rc = add_row(w, TRUTH_UNTRACED_FUNC, w->tsc, TRUTH_UNTRACED,
		     &w->untraced_row);
	w->top--;
	if (rc)
		return -2;
	if (last)
		end_row(w, w->untraced_row, w->tsc, TRUTH_CLIP_END);
	return 0;
}

int walk_switch_in(struct walker *w, struct ptenc *g, uint64_t tsc,
		   enum walk_entry how)
{
	return enter(w, g, tsc, how);
}

void walk_creep(struct walker *w)
{
	/* An interrupt lands anywhere, not only at branch targets: a few
	 * straight-line instructions first. */
	for (unsigned k = (unsigned)rng_below(&w->rng, 4); k; k--) {
		uint8_t kind =
			w->p->funcs[w->st[w->top].func].insns[w->pc].kind;

		if (kind != I_FILL && kind != I_MOVEAX && kind != I_LEA)
			break;
		step(w, RUN_EMIT);
	}
}

int walk_gap_out(struct walker *w)
{
	struct walk_thread *t = w->t;
	struct walk_gap gap = {.first_branch = w->n + 1,
			       .after_tsc = w->pkt_tsc,
			       .stop_ip = w->pkt_ip};
	uint64_t lost = 1 + rng_below(&w->rng, 48), k = 0;

	if (ptenc_finish(w->g, w->tsc))
		return -1;
	while (k < lost && w->n + k < w->c.branches) {
		int rc = step(w, RUN_SILENT);

		if (rc < 0)
			return -1;
		k += (uint64_t)rc;
	}
	w->n += k;
	t->branches_left = w->c.branches - w->n;
	gap.last_branch = w->n;
	gap.end_tsc = w->tsc;
	if (add_gap(t, &gap))
		return -2;
	t->gaps++;
	w->gap_open = true;
	w->g = NULL;
	return 0;
}

int walk_end(struct walker *w)
{
	const struct program *p = w->p;
	struct walk_thread *t = w->t;

	t->window_end = w->tsc;
	for (size_t i = 0; i <= w->top; i++)
		end_row(w, w->st[i].row, w->tsc, TRUTH_CLIP_END);
	t->branches = w->n;

	/* The stack an unwinder would report, leaf first. */
	t->final_stack = calloc(w->top + 1, sizeof(uint64_t));
	if (!t->final_stack)
		return -2;
	t->final_stack[0] = cur_ip(w);
	for (size_t i = 1; i <= w->top; i++) {
		const struct frame *fr = &w->st[w->top - i];
		t->final_stack[i] = insn_addr(&p->funcs[fr->func], fr->resume);
	}
	t->nr_final_stack = w->top + 1;
	return 0;
}

int walk_take_aux(struct walk_thread *t, const struct ptenc *g)
{
	size_t len;
	const uint8_t *d = ptenc_data(g, &len);

	t->aux = malloc(len ? len : 1);
	if (!t->aux)
		return -2;
	memcpy(t->aux, d, len);
	t->aux_len = len;
	return 0;
}

int walk_thread_run(const struct program *p, const struct walk_cfg *c,
		    struct walk_thread *t, char *err, size_t errlen)
{
	struct walker *w = walk_new(p, c, t, err, errlen);
	struct ptenc *g;
	int rc;

	if (!w)
		return -1;
	g = ptenc_new(&c->pt, c->seed ^ 0x5eed);
	rc = g ? walk_begin(w, g, w->tsc, WALK_PSB) : -2;
	if (!rc)
		rc = walk_run(w, UINT64_MAX) < 0 ? -1 : 0;
	if (!rc)
		rc = ptenc_finish(g, w->tsc) ? -1 : 0;
	if (!rc)
		rc = walk_end(w);
	if (!rc)
		rc = walk_take_aux(t, g);
	walk_fail_msg(rc, c->seed, err, errlen);
	ptenc_free(g);
	walk_free(w);
	return rc ? -1 : 0;
}

void walk_fail_msg(int rc, uint64_t seed, char *err, size_t errlen)
{
	if (rc == -1)
		snprintf(err, errlen, "packet encoding failed (seed %llu)",
			 (unsigned long long)seed);
	else if (rc)
		snprintf(err, errlen, "out of memory walking the program");
}

void walk_thread_free(struct walk_thread *t)
{
	free(t->rows);
	free(t->gap_list);
	free(t->aux);
	free(t->final_stack);
	memset(t, 0, sizeof(*t));
}
