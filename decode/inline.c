/* SPDX-License-Identifier: MIT */
/*
 * The inlined calls inside a function's blocks.
 *
 * The block decoder gives a block as its first and last instruction, and
 * a block is straight-line code that runs every instruction between: the
 * inlined calls it passes through are the ranges of the binary's table
 * (symbols/ sym_dwarf_inlines) that it crosses, walked from its first
 * instruction, and only in functions that have any (the span set_range()
 * found), so that code without inlined calls costs one test a block.
 *
 * The calls open at an instruction are those its address is in, and a
 * change goes to segments/ as DEC_INLINE at the instruction where it
 * happens, counted: nothing may depend on where libipt cut straight code
 * into blocks, which differs from run to run (its block cache is shared
 * by the threads of a parallel decode).  So a call whose instructions
 * the compiler interleaved with its caller's shows as several slices,
 * as its code does.  A change goes to segments/ as DEC_INLINE,
 * naming the innermost call now open (its chain of callers is the
 * rest).  After an event that names an ip (a call, a return, a sync
 * point) segments/ opens the calls at that ip itself, and this starts
 * from the same (strm_inline_told()).
 */
#include "decode/strm.h"

/* Pieces of a block looked at once: a block crossing more ranges is
 * walked in several rounds. */
#define PIECES 64

struct piece {
	uint64_t ip; /* runtime address of its first instruction */
	const struct sym_inline *in;
};

/* The index of the first range of the span that ends after vaddr. */
static size_t span_from(const struct img_inl_span *sp, uint64_t vaddr)
{
	return sp->from +
	       sym_inlines_from(sp->tab + sp->from, sp->to - sp->from, vaddr);
}

static const struct sym_inline *leaf_at(const struct strm *s, uint64_t ip)
{
	const struct img_inl_span *sp = &s->inl_span;
	uint64_t v = ip - sp->bias;
	size_t i;

	if (!sp->tab)
		return NULL;
	i = span_from(sp, v);
	return i < sp->to && sp->tab[i].lo <= v ? sp->tab[i].in : NULL;
}

/*
 * The instructions of b before ip (an address in it).  Counted, not
 * guessed: an event's time comes from its instruction count, and where
 * libipt cuts straight code into blocks varies (its block cache, which
 * the threads of a parallel decode share, cuts it differently from run to
 * run), so the count must not depend on it.  Kept per pair of addresses:
 * a loop's blocks ask the same again and again.
 */
static uint64_t insns_before(struct strm *s, const struct pt_block *b,
			     uint64_t ip)
{
	struct strm_cache *c = &s->cache;
	struct count_ent *e =
		&c->counts[(b->ip ^ (ip << 3) ^ (ip >> 7)) & (COUNT_CACHE - 1)];
	uint64_t n = 0, at = b->ip;
	uint8_t code[256];
	cs_insn *in;

	if (ip == b->ip)
		return 0;
	if (e->from == b->ip && e->to == ip)
		return e->n;
	if (!c->have_cs) {
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &c->cs) != CS_ERR_OK)
			return b->ninsn - 1;
		c->have_cs = true;
	}
	img_capstone_serialized(s->c->img, true);
	cs_option(c->cs, CS_OPT_MODE,
		  b->mode == ptem_32bit ? CS_MODE_32 : CS_MODE_64);
	in = cs_malloc(c->cs);
	while (in && at < ip && n < b->ninsn) {
		int got = s->view ? (int)img_view_read(s->view, b->isid, at,
						       code, sizeof(code))
				  : pt_iscache_read(s->c->iscache, code,
						    sizeof(code), b->isid, at);
		const uint8_t *p = code;
		size_t left = got > 0 ? (size_t)got : 0;
		uint64_t addr = at, start = at;

		while (at < ip && n < b->ninsn &&
		       cs_disasm_iter(c->cs, &p, &left, &addr, in)) {
			at = addr;
			n++;
		}
		if (at == start)
			break; /* nothing decoded: give up */
	}
	if (in)
		cs_free(in, 1);
	img_capstone_serialized(s->c->img, false);
	if (at != ip || n >= b->ninsn)
		return b->ninsn - 1; /* not an instruction of b: the last */
	*e = (struct count_ent){b->ip, ip, n};
	return n;
}

static void change(struct strm *s, const struct pt_block *b, uint64_t pos,
		   uint64_t ip, const struct sym_inline *top)
{
	if (top == s->inl_top)
		return;
	s->inl_top = top;
	strm_held_push_at(s, pos + insns_before(s, b, ip), strm_now(s),
			  DEC_INLINE, ip, (uint64_t)(uintptr_t)top);
}

/* One round: the calls open at each piece of block b (decoded from
 * instruction count pos on). */
static void walk(struct strm *s, const struct pt_block *b,
		 const struct piece *p, size_t n, uint64_t pos)
{
	for (size_t k = 0; k < n; k++)
		change(s, b, pos, p[k].ip, p[k].in);
}

void strm_inline_block(struct strm *s, const struct pt_block *b, uint64_t pos)
{
	const struct img_inl_span *sp = &s->inl_span;
	struct piece p[PIECES];
	uint64_t v, vend;
	size_t i, n = 0;

	if (s->inl_told) {
		s->inl_told = false;
		s->inl_top = leaf_at(s, s->inl_told_ip);
	}
	if (!sp->tab) {
		/* Into code whose function is unknown, or without any
		 * inlined calls, by a jump within what we took for one
		 * function. */
		change(s, b, pos, b->ip, NULL);
		return;
	}
	v = b->ip - sp->bias;
	vend = b->end_ip - sp->bias;
	i = span_from(sp, v);
	while (v <= vend) {
		const struct sym_inline *in = NULL;
		uint64_t next = UINT64_MAX;

		if (i < sp->to && sp->tab[i].lo <= v) {
			in = sp->tab[i].in;
			next = sp->tab[i].hi;
			i++;
		} else if (i < sp->to) {
			next = sp->tab[i].lo;
		}
		if (!n || p[n - 1].in != in) {
			if (n == PIECES) {
				walk(s, b, p, n, pos);
				n = 0;
			}
			p[n++] = (struct piece){v + sp->bias, in};
		}
		v = next;
	}
	walk(s, b, p, n, pos);
}
