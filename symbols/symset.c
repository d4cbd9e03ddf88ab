/* SPDX-License-Identifier: MIT */
/*
 * A set of symbols being built from several sources, and the sorted,
 * deduplicated array it becomes.
 */
#include "symbols/sym_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sym_cands_add(struct sym_cands *c, const struct sym_cand *s)
{
	if (mt_grow((void **)&c->v, &c->cap, c->nr + 1, sizeof(*c->v)))
		return -ENOMEM;
	c->v[c->nr] = *s;
	c->v[c->nr].seq = (uint32_t)c->nr;
	c->nr++;
	return 0;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Which of two symbols at one address names it: a global over a local
 * (the local is usually a compiler-private alias), a sized one over a bare
 * label, a strong one over a weak alias, a real symbol over a PLT name,
 * then the name with fewer leading underscores (puts over _IO_puts when
 * both are strong; glibc's puts is weak, so _IO_puts names it there, as
 * in perf), and finally the first seen.  Negative when a is better.
 */
static int cand_rank(const struct sym_cand *a, const struct sym_cand *b)
{
	int ga = !!(a->flags & SYM_F_GLOBAL), gb = !!(b->flags & SYM_F_GLOBAL);
	int sa = a->size != 0, sb = b->size != 0;
	int wa = !!(a->flags & SYM_F_WEAK), wb = !!(b->flags & SYM_F_WEAK);
	int pa = !!(a->flags & SYM_F_PLT), pb = !!(b->flags & SYM_F_PLT);
	int fa = !!(a->flags & SYM_F_FUNC), fb = !!(b->flags & SYM_F_FUNC);
	size_t ua, ub;

	if (a->flags & b->flags & SYM_F_JIT)
		return a->seq < b->seq ? -1 : a->seq > b->seq;
	if (pa != pb)
		return pa - pb;
	if (ga != gb)
		return gb - ga;
	if (sa != sb)
		return sb - sa;
	if (wa != wb)
		return wa - wb;
	if (fa != fb)
		return fb - fa;
	ua = leading_underscores(a->name);
	ub = leading_underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cand_cmp(const void *pa, const void *pb)
{
	const struct sym_cand *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return cand_rank(a, b);
}

/*
 * perf's order (choose_best_symbol) among the names at one address: a
 * sized one, a strong one over a weak, STB_GLOBAL over the rest, fewer
 * leading underscores, the longer name, the first seen.  Negative when a
 * is better.
 */
static int perf_rank(const struct sym_cand *a, const struct sym_cand *b)
{
	int sa = a->size != 0, sb = b->size != 0;
	int wa = !!(a->flags & SYM_F_WEAK), wb = !!(b->flags & SYM_F_WEAK);
	int ga = (a->flags & (SYM_F_GLOBAL | SYM_F_WEAK)) == SYM_F_GLOBAL;
	int gb = (b->flags & (SYM_F_GLOBAL | SYM_F_WEAK)) == SYM_F_GLOBAL;
	size_t ua = leading_underscores(a->name),
	       ub = leading_underscores(b->name);
	size_t la = strlen(a->name), lb = strlen(b->name);

	if (sa != sb)
		return sb - sa;
	if (wa != wb)
		return wa - wb;
	if (ga != gb)
		return gb - ga;
	if (ua != ub)
		return ua < ub ? -1 : 1;
	if (la != lb)
		return la > lb ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * An IFUNC symbol's value is its resolver, which the loader calls: the
 * names there are the IFUNC's (strnlen) and the resolver's own
 * (__strnlen_ifunc, local).  perf picks among them by its own order,
 * which our usual one would not follow (it ranks a weak global IFUNC
 * first); the best of v[0..n), all at one address, by perf's order when
 * one of them is an IFUNC.
 */
static const struct sym_cand *ifunc_resolver_name(const struct sym_cand *v,
						  size_t n)
{
	const struct sym_cand *best = &v[0];
	bool ifunc = false;

	for (size_t i = 0; i < n && !ifunc; i++)
		ifunc = (v[i].flags & SYM_F_IFUNC) && !(v[i].flags & SYM_F_PLT);
	if (!ifunc || (v[0].flags & SYM_F_JIT))
		return best;
	for (size_t i = 1; i < n; i++)
		if (!(v[i].flags & SYM_F_PLT) && perf_rank(&v[i], best) < 0)
			best = &v[i];
	return best;
}

int sym_cands_finish(struct sym_cands *c, struct sym **syms, uint64_t **ends,
		     size_t *nr)
{
	struct sym *s = NULL;
	uint64_t *e = NULL;
	size_t i, n = 0;

	*syms = NULL;
	*ends = NULL;
	*nr = 0;
	if (c->nr)
		qsort(c->v, c->nr, sizeof(*c->v), cand_cmp);
	/* One extra so that an empty set still gets non-NULL arrays. */
	s = malloc((c->nr + 1) * sizeof(*s));
	e = malloc((c->nr + 1) * sizeof(*e));
	if (!s || !e)
		goto fail;
	for (i = 0; i < c->nr; i++) {
		const struct sym_cand *best;
		size_t k = i + 1;

		/* After the sort the best of each address comes first. */
		if (n && s[n - 1].addr == c->v[i].addr)
			continue;
		while (k < c->nr && c->v[k].addr == c->v[i].addr)
			k++;
		best = ifunc_resolver_name(&c->v[i], k - i);
		s[n].addr = best->addr;
		s[n].size = best->size;
		s[n].name = best->name;
		/* Stash the limit until the next address is known. */
		e[n] = best->limit;
		n++;
	}
	for (i = 0; i < n; i++) {
		uint64_t end;

		if (s[i].size) {
			end = s[i].addr + s[i].size;
			if (end < s[i].addr)
				end = UINT64_MAX;
		} else {
			/* A label runs to the next symbol, but never past
			 * the end of its section (the next symbol may lie
			 * in another section, far away). */
			end = i + 1 < n ? s[i + 1].addr : UINT64_MAX;
			if (e[i] > s[i].addr && e[i] < end)
				end = e[i];
			/* The last label of an unknown section: its own
			 * address only. */
			if (end == UINT64_MAX)
				end = s[i].addr + 1;
		}
		e[i] = end;
	}
	*syms = s;
	*ends = e;
	*nr = n;
	return 0;
fail:
	free(s);
	free(e);
	return -ENOMEM;
}

/*
 * How far back a lookup looks for an enclosing symbol when the nearest one
 * below addr has ended: nested symbols (a sized function holding a smaller
 * sized one) are rare and shallow.
 */
#define SYM_NEST_MAX 8

long sym_search(const struct sym *syms, const uint64_t *ends, size_t nr,
		uint64_t addr)
{
	size_t lo = 0, hi = nr, i, k;

	/* First symbol starting above addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, k = 0; i > 0 && k < SYM_NEST_MAX; i--, k++)
		if (addr < ends[i - 1])
			return (long)(i - 1);
	return -1;
}
