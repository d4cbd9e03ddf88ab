/* SPDX-License-Identifier: MIT */
/*
 * Whether a function, with control at one place, can get to another in
 * the same activation: a walk of its control flow graph from its code.
 *
 * A gap hides what a thread did; stitching then asks whether a frame
 * open before it and a frame of the same name after it are one
 * activation.  The first was at from: the return address its open child
 * comes back to, or where control last came into it.  The second was at
 * to: where its child's return landed (ret_to), or where it resumed.  One
 * activation must go from from to a call that returns to to, or to to
 * itself.  The walk follows every edge of the function's code from from,
 * both ways of a conditional branch, over calls (as if each returned);
 * not one path getting there proves them two activations.  A path ends
 * at a return, and at a direct jump out of the function: a tail call, a
 * jump to a cold part or into a frame below; in the trace each of those
 * is another slice (segments/ takes the frame's place with the target,
 * and a jump back into the function from there is another slice again),
 * so the activation a slice stands for has ended.  The walk proves
 * nothing, and says so, wherever the code might go where it cannot
 * follow: a jump through a register or memory, bytes it cannot decode,
 * code too large to walk, an exception's landing pads where they cannot
 * be read (the binary's unwind tables or the function's LSDA; where they
 * can, an exception is one more edge, to the pad, unless the pad lies
 * out of the function), and a second return from setjmp and its kin,
 * which arrives where no edge leads.
 *
 * The same walk answers whether the function, from from, can call a given
 * one (img_calls_to()): for sure where a direct call to it is on a path;
 * never where every path was followed and every call on them is to
 * another function by name; maybe where a call through a register, a
 * memory slot or a PLT stub could be to it, or a path went where the
 * walk cannot follow.
 */
#include "image/img_internal.h"
#include "util/util.h"

#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

/* Larger functions are not walked (a few in a thousand). */
#define REACH_MAX_CODE (64u << 10)
#define REACH_CACHE    4096

/* One answer: to is the callee for a walk that looks for calls; the
 * answer is an enum walk. */
struct img_reach_ent {
	uint64_t from, to;
	uint32_t pid;
	bool used, ret_to, calls;
	uint8_t answer;
};

/*
 * Functions that return more than once (GCC's special_function_p(): the
 * names after up to two leading underscores, or "__x"): a longjmp back
 * lands after their call, where no edge of the function leads.
 */
static bool returns_twice(const char *name)
{
	static const char *const twice[] = {"setjmp", "sigsetjmp",  "savectx",
					    "vfork",  "getcontext", "qsetjmp"};
	size_t n;

	if (!strncmp(name, "__x", 3))
		name += 3;
	else if (!strncmp(name, "__", 2))
		name += 2;
	else if (name[0] == '_')
		name++;
	n = strcspn(name, "@");
	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++)
		if (strlen(twice[i]) == n && !strncmp(name, twice[i], n))
			return true;
	return false;
}

struct named {
	struct img *c;
	uint32_t pid;
};

static bool calls_returns_twice(void *ctx, uint64_t target)
{
	const struct named *nm = ctx;
	struct img_sym ds;

	img_symbolize(nm->c, nm->pid, target, &ds);
	return ds.known && returns_twice(ds.name);
}

/* A direct call's target is another function than callee: the start of
 * one with a name, and not a PLT stub (which may lead anywhere). */
static bool calls_other_fn(void *ctx, uint64_t target, uint64_t callee)
{
	const struct named *nm = ctx;
	struct img_sym ds;

	if (target == callee)
		return false;
	img_symbolize(nm->c, nm->pid, target, &ds);
	return ds.known && ds.start == target && !strstr(ds.name, "@plt");
}

/* The direct target of a branch, or false for one through a register or
 * memory. */
static bool branch_target(const cs_insn *in, uint64_t *to)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*to = (uint64_t)x->operands[0].imm;
	return true;
}

/* SURE only where calls are looked for: a direct call to the callee. */
/* WALK_NOMEM: no answer for want of memory (cached_walk() says so) */
enum walk { WALK_NEVER, WALK_MAYBE, WALK_SURE, WALK_NOMEM };

struct walker {
	const struct img_code *c;
	uint64_t lo, hi; /* the function's code, at code */
	const uint8_t *code;
	uint64_t to;
	bool ret_to; /* to is reached by a call returning there */
	bool calls;  /* to is a callee: reached by a call that may be to it */
	bool unsure; /* (calls) a path went where it could not be followed */
	uint8_t *seen;
	uint64_t *work;
	size_t nw;
	csh cs;
	cs_insn *in;
};

/*
 * One instruction at pc: where the path goes on (*next, or nowhere when
 * it ends there), and any other way a conditional branch goes is pushed.
 */
static enum walk step(struct walker *w, uint64_t pc, uint64_t *next, bool *ends)
{
	const uint8_t *p = w->code + (pc - w->lo);
	size_t left = w->hi - pc;
	uint64_t addr = pc, to;
	cs_insn *in = w->in;

	*ends = false;
	if (!cs_disasm_iter(w->cs, &p, &left, &addr, in))
		return WALK_MAYBE;
	*next = addr;
	if (cs_insn_group(w->cs, in, CS_GRP_RET) ||
	    cs_insn_group(w->cs, in, CS_GRP_IRET) || in->id == X86_INS_HLT ||
	    in->id == X86_INS_UD2 || in->id == X86_INS_INT3) {
		*ends = true;
		return WALK_NEVER;
	}
	if (cs_insn_group(w->cs, in, CS_GRP_CALL)) {
		bool direct = branch_target(in, &to);

		if (w->calls && direct && to == w->to)
			return WALK_SURE;
		/* a call that could be to the callee: the path goes on */
		if (w->calls && (!direct || !w->c->other_fn ||
				 !w->c->other_fn(w->c->ctx, to, w->to)))
			w->unsure = true;
		if (!w->calls && w->ret_to && addr == w->to)
			return WALK_MAYBE;
		/* the function's last instruction: a call that never
		 * returns (abort, _Unwind_Resume) */
		*ends = addr == w->hi;
		return WALK_NEVER;
	}
	/* a transaction's abort goes to XBEGIN's operand */
	if (in->id == X86_INS_XBEGIN) {
		if (!branch_target(in, &to))
			return WALK_MAYBE;
		w->work[w->nw++] = to;
		return WALK_NEVER;
	}
	if (!cs_insn_group(w->cs, in, CS_GRP_JUMP))
		return WALK_NEVER;
	if (!branch_target(in, &to))
		return WALK_MAYBE;
	if (to < w->lo || to >= w->hi) {
		/* out of the function: that way, the slice has ended */
		*ends = in->id == X86_INS_JMP || in->id == X86_INS_LJMP;
		return WALK_NEVER;
	}
	if (in->id == X86_INS_JMP || in->id == X86_INS_LJMP)
		*next = to;
	else
		w->work[w->nw++] = to;
	return WALK_NEVER;
}

/*
 * Whether the function calls, anywhere, one that returns twice: a
 * longjmp may come back after that call at any time after it, whether
 * the walk from from passes it or not (it may have run before).  Found
 * by decoding the code from its start in a line, which is how compilers
 * lay out x86-64 functions (their tables live elsewhere); a call through
 * a GOT slot (-fno-plt) could be to anything, and so could bytes that
 * are no instruction.
 */
static enum walk any_returns_twice(struct walker *w)
{
	const uint8_t *p = w->code;
	size_t left = w->hi - w->lo;
	uint64_t addr = w->lo, to;

	while (left) {
		const cs_x86 *x = &w->in->detail->x86;

		if (!cs_disasm_iter(w->cs, &p, &left, &addr, w->in))
			return WALK_MAYBE;
		if (!cs_insn_group(w->cs, w->in, CS_GRP_CALL))
			continue;
		if (branch_target(w->in, &to)
			    ? w->c->twice(w->c->ctx, to)
			    : x->op_count == 1 &&
				      x->operands[0].type == X86_OP_MEM &&
				      x->operands[0].mem.base == X86_REG_RIP)
			return WALK_MAYBE;
	}
	return WALK_NEVER;
}

/*
 * Whether a call ends right before to, so that a return can land there
 * from a call: some decoding of the bytes before it is a call that ends
 * at to.  A return that lands anywhere else was no return to a call
 * (a ret used as a jump), and the walk does not look for one.
 */
static bool call_ends_at(struct walker *w, uint64_t to)
{
	for (uint64_t k = 1; k <= 15 && k <= to - w->lo; k++) {
		const uint8_t *p = w->code + (to - k - w->lo);
		size_t left = (size_t)k;
		uint64_t addr = to - k;

		if (cs_disasm_iter(w->cs, &p, &left, &addr, w->in) &&
		    addr == to && cs_insn_group(w->cs, w->in, CS_GRP_CALL))
			return true;
	}
	return false;
}

/* The landing pad an exception out of the instruction at pc goes to, or
 * 0.  A call site's range begins its struct img_lp as a struct mt_range
 * does. */
static uint64_t pad_of(const struct img_code *c, uint64_t pc)
{
	long i = mt_range_at(c->lps, c->nr_lps, sizeof(*c->lps), pc);

	return i < 0 ? 0 : c->lps[i].pad;
}

/*
 * Every path from from, until one reaches to or leaves what can be
 * followed.  An exception is one more way on: out of any instruction
 * that its call site's range covers (a call's callee throws; with
 * -fnon-call-exceptions, the instruction itself), to its landing pad,
 * and so out of the call whose return from is, the child open there.
 */
static enum walk walk(struct walker *w, uint64_t from)
{
	uint64_t pad = pad_of(w->c, from - 1);

	w->work[w->nw++] = from;
	if (pad)
		w->work[w->nw++] = pad;
	while (w->nw) {
		uint64_t pc = w->work[--w->nw], next;
		bool ends;

		for (;;) {
			enum walk r;

			if ((!w->ret_to && !w->calls && pc == w->to) ||
			    pc < w->lo || pc >= w->hi) {
				r = WALK_MAYBE;
			} else if (w->seen[pc - w->lo]) {
				break;
			} else {
				w->seen[pc - w->lo] = 1;
				pad = pad_of(w->c, pc);
				if (pad)
					w->work[w->nw++] = pad;
				r = step(w, pc, &next, &ends);
			}
			/* Looking for a call to the callee, a path that
			 * cannot be followed ends there; the others may
			 * still make one for sure. */
			if (r == WALK_MAYBE && w->calls) {
				w->unsure = true;
				break;
			}
			if (r != WALK_NEVER)
				return r;
			if (ends)
				break;
			pc = next;
		}
	}
	return w->unsure ? WALK_MAYBE : WALK_NEVER;
}

static bool read_all(struct img *c, const struct img_fn_code *f, uint8_t *buf)
{
	uint64_t n = f->hi - f->lo, got = 0;

	while (got < n) {
		int r = pt_iscache_read(c->iscache, buf + got, n - got, f->isid,
					f->lo + got);

		if (r <= 0)
			return false;
		got += (uint64_t)r;
	}
	return true;
}

/* The walk of either kind: to a place (to, ret_to), or to a call that
 * may be to the function at to (calls). */
static enum walk run_walk(const struct img_code *c, uint64_t from, uint64_t to,
			  bool ret_to, bool calls)
{
	size_t n = c->n;
	struct walker w = {.c = c,
			   .lo = c->lo,
			   .hi = c->lo + n,
			   .code = c->bytes,
			   .to = to,
			   .ret_to = ret_to && !calls,
			   .calls = calls};
	enum walk r = WALK_MAYBE;

	if (from < w.lo || from - w.lo >= n || n > REACH_MAX_CODE ||
	    (!calls && (to < w.lo || to - w.lo >= n)))
		return WALK_MAYBE;
	w.seen = calloc(n, 1);
	/* each instruction pushes at most two other ways (a branch's, a
	 * landing pad), and the walk starts with two */
	w.work = malloc((2 * n + 2) * sizeof(*w.work));
	/* (capstone fails to open only for want of memory) */
	r = WALK_NOMEM;
	if (!w.seen || !w.work ||
	    cs_open(CS_ARCH_X86, CS_MODE_64, &w.cs) != CS_ERR_OK)
		goto out;
	cs_option(w.cs, CS_OPT_DETAIL, CS_OPT_ON);
	w.in = cs_malloc(w.cs);
	if (w.in) {
		r = c->twice ? any_returns_twice(&w) : WALK_NEVER;
		if (r == WALK_NEVER && w.ret_to && !call_ends_at(&w, to))
			r = WALK_MAYBE;
		/* a longjmp back may go on anywhere: never is not proven,
		 * but a sure call still is */
		if (calls) {
			w.unsure = r == WALK_MAYBE;
			r = walk(&w, from);
		} else if (r == WALK_NEVER) {
			r = walk(&w, from);
		}
		cs_free(w.in, 1);
	}
	cs_close(&w.cs);
out:
	free(w.seen);
	free(w.work);
	return r;
}

bool img_code_never_reaches(const struct img_code *c, uint64_t from,
			    uint64_t to, bool ret_to)
{
	return run_walk(c, from, to, ret_to, false) == WALK_NEVER;
}

/* (no answer, WALK_NOMEM, is a maybe) */
static enum img_calls calls_of(enum walk r)
{
	return r == WALK_SURE	 ? IMG_CALLS_SURE
	       : r == WALK_NEVER ? IMG_CALLS_NEVER
				 : IMG_CALLS_MAYBE;
}

enum img_calls img_code_calls_to(const struct img_code *c, uint64_t from,
				 uint64_t callee)
{
	return calls_of(run_walk(c, from, callee, false, true));
}

/* The walk over the code of the function around from. */
static enum walk walk_fn(struct img *c, uint32_t pid, uint64_t from,
			 uint64_t to, bool ret_to, bool calls)
{
	struct named nm = {c, pid};
	struct img_fn_code f;
	struct img_code code = {.twice = calls_returns_twice,
				.other_fn = calls_other_fn,
				.ctx = &nm};
	uint8_t *bytes = NULL;
	struct img_lp *lps = NULL;
	enum walk r = WALK_MAYBE;

	if (!img_fn_code(c, pid, from, &f) ||
	    (!calls && (to < f.lo || to >= f.hi)) || !f.eh_known ||
	    f.hi - f.lo > REACH_MAX_CODE)
		return WALK_MAYBE;
	code.n = (size_t)(f.hi - f.lo);
	code.lo = f.lo;
	bytes = malloc(code.n);
	lps = malloc((f.nr_lps ? f.nr_lps : 1) * sizeof(*lps));
	if (!bytes || !lps) {
		r = WALK_NOMEM;
		goto out;
	}
	if (!read_all(c, &f, bytes))
		goto out;
	for (size_t i = 0; i < f.nr_lps; i++)
		lps[i] = (struct img_lp){f.lps[i].lo + f.bias,
					 f.lps[i].hi + f.bias,
					 f.lps[i].pad + f.bias};
	code.bytes = bytes;
	code.lps = lps;
	code.nr_lps = f.nr_lps;
	img_capstone_serialized(c, true);
	r = run_walk(&code, from, to, ret_to, calls);
	img_capstone_serialized(c, false);
out:
	free(bytes);
	free(lps);
	return r;
}

/* A walk's answer, from the cache of the last ones when it holds it.
 * The walk runs outside the lock: two threads may walk the same
 * function at once, and both find the same answer. */
static enum walk cached_walk(struct img *c, uint32_t pid, uint64_t from,
			     uint64_t to, bool ret_to, bool calls)
{
	struct img_reach_ent want = {.from = from,
				     .to = to,
				     .pid = pid,
				     .used = true,
				     .ret_to = ret_to,
				     .calls = calls};
	struct img_reach_ent *e;
	size_t h = (size_t)((from * 0x9e3779b97f4a7c15ull) ^ (to >> 1) ^
			    ((uint64_t)pid << 17) ^ calls) &
		   (REACH_CACHE - 1);

	pthread_mutex_lock(&c->reach_lock);
	if (!c->reach)
		c->reach = calloc(REACH_CACHE, sizeof(*c->reach));
	e = c->reach ? &c->reach[h] : NULL;
	if (e && e->used && e->from == from && e->to == to && e->pid == pid &&
	    e->ret_to == ret_to && e->calls == calls) {
		want.answer = e->answer;
		pthread_mutex_unlock(&c->reach_lock);
		return (enum walk)want.answer;
	}
	pthread_mutex_unlock(&c->reach_lock);
	want.answer = (uint8_t)walk_fn(c, pid, from, to, ret_to, calls);
	/* A maybe for want of memory would change the stitching: it is
	 * said at the end (img_short_of_memory()), and not kept. */
	if (want.answer == WALK_NOMEM) {
		atomic_store(&c->reach_short, true);
		return WALK_MAYBE;
	}
	pthread_mutex_lock(&c->reach_lock);
	if (e)
		*e = want;
	pthread_mutex_unlock(&c->reach_lock);
	return (enum walk)want.answer;
}

bool img_never_reaches(struct img *c, uint32_t pid, uint64_t from, uint64_t to,
		       bool ret_to)
{
	return cached_walk(c, pid, from, to, ret_to, false) == WALK_NEVER;
}

enum img_calls img_calls_to(struct img *c, uint32_t pid, uint64_t from,
			    uint64_t callee)
{
	return calls_of(cached_walk(c, pid, from, callee, false, true));
}

static bool reach_never(void *ctx, uint32_t pid, uint64_t from, uint64_t to,
			bool ret_to)
{
	return img_never_reaches(ctx, pid, from, to, ret_to);
}

static enum img_calls reach_calls(void *ctx, uint32_t pid, uint64_t from,
				  uint64_t callee)
{
	return img_calls_to(ctx, pid, from, callee);
}

static uint32_t reach_space(void *ctx, uint32_t pid, uint64_t t)
{
	return img_space(ctx, pid, t);
}

struct img_reach img_reach_of(struct img *c)
{
	return (struct img_reach){.never_reaches = reach_never,
				  .calls_to = reach_calls,
				  .space = reach_space,
				  .ctx = c};
}
