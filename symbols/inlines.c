/* SPDX-License-Identifier: MIT */
/*
 * The calls a compiler inlined, from the DWARF, a compilation unit at a
 * time (for sym_dwarf).
 *
 * Each DW_TAG_inlined_subroutine with code is one inlined call: the
 * function (through its abstract origin), where it is defined, the line
 * of the call it replaced, and its address ranges, nested in those of the
 * inlined call around it.  The ranges are painted, outermost first, into
 * one sorted list of disjoint ranges that each name the innermost call
 * covering them, so that an address finds its call with one binary
 * search and a run of code finds the calls it crosses by walking on.
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A range of one call, before painting. */
struct raw_range {
	uint64_t lo, hi;
	uint32_t call, depth;
};

struct ibuild {
	struct sym_unit *u;
	uint32_t *up; /* each call's enclosing call, UINT32_MAX none */
	size_t cap_up;
	struct raw_range *raw;
	size_t nr_raw, cap_raw;
	const char *comp_dir;
	Dwarf_Files *files;
	size_t nr_files;
};

/* s kept once in the unit; NULL when out of memory. */
static const char *keep_str(struct ibuild *b, const char *s)
{
	int64_t i = sym_unit_str(b->u, s);

	return i < 0 ? NULL : b->u->strs[i];
}

/* A file name of the unit's tables, whole and normalized, kept; NULL
 * when unknown or out of memory (*oom says which). */
static const char *keep_file(struct ibuild *b, const char *name, bool *oom)
{
	char full[4096];
	const char *s;

	if (!name)
		return NULL;
	if (name[0] != '/' && b->comp_dir)
		snprintf(full, sizeof(full), "%s/%s", b->comp_dir, name);
	else
		snprintf(full, sizeof(full), "%s", name);
	sym_path_normalize(full, sizeof(full));
	s = keep_str(b, full);
	*oom |= !s;
	return s;
}

/* The name of the function an inlined call is of, demangled as the ELF
 * symbols are. */
static const char *call_name(Dwarf_Die *die, char *buf, size_t len)
{
	Dwarf_Attribute at;
	const char *n;

	n = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &at));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(
			die, DW_AT_MIPS_linkage_name, &at));
	if (n)
		return sym_demangle(n, buf, len);
	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &at));
	return n ? n : "[inlined]";
}

static int add_call(struct ibuild *b, Dwarf_Die *die, uint32_t up,
		    uint32_t depth, uint32_t *idx)
{
	struct sym_unit *l = b->u;
	struct sym_inline *c;
	Dwarf_Addr base, lo, hi;
	Dwarf_Attribute at;
	Dwarf_Word w;
	ptrdiff_t off = 0;
	char nbuf[1024];
	bool oom = false;
	uint64_t entry = UINT64_MAX;
	int line;
	size_t first = b->nr_raw;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (mt_grow((void **)&b->raw, &b->cap_raw, b->nr_raw + 1,
			    sizeof(*b->raw)))
			return -ENOMEM;
		b->raw[b->nr_raw++] = (struct raw_range){
			lo, hi, (uint32_t)l->nr_calls, depth};
		if (lo < entry)
			entry = lo;
	}
	*idx = UINT32_MAX;
	if (b->nr_raw == first)
		return 0; /* no code of its own: nothing runs in it */
	if (mt_grow((void **)&l->calls, &l->cap_calls, l->nr_calls + 1,
		    sizeof(*l->calls)) ||
	    mt_grow((void **)&b->up, &b->cap_up, l->nr_calls + 1,
		    sizeof(*b->up)))
		return -ENOMEM;
	c = &l->calls[l->nr_calls];
	memset(c, 0, sizeof(*c));
	c->entry = entry;
	c->depth = depth;
	c->name = keep_str(b, call_name(die, nbuf, sizeof(nbuf)));
	oom |= !c->name;
	c->decl_file = keep_file(b, dwarf_decl_file(die), &oom);
	if (c->decl_file && !dwarf_decl_line(die, &line) && line > 0)
		c->decl_line = (unsigned)line;
	if (b->files &&
	    !dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &at), &w) &&
	    w < b->nr_files) {
		c->call_file = keep_file(
			b, dwarf_filesrc(b->files, w, NULL, NULL), &oom);
		if (c->call_file &&
		    !dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &at), &w))
			c->call_line = (unsigned)w;
	}
	if (oom)
		return -ENOMEM;
	b->up[l->nr_calls] = up;
	*idx = (uint32_t)l->nr_calls++;
	return 0;
}

/* Tags whose children may hold code: where inlined calls can be. */
static bool may_hold_code(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_lexical_block:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_module:
		return true;
	default:
		return false;
	}
}

/*
 * DIEs nested deeper than this are not looked into: compilers nest a few
 * dozen at most, and a damaged or hostile file must not run the stack
 * out.
 */
#define MAX_NESTING 256

/* The inlined calls among die's children (nest levels down), up the call
 * around them. */
static int walk(struct ibuild *b, Dwarf_Die *die, uint32_t up, uint32_t depth,
		unsigned nest)
{
	Dwarf_Die child;
	int rc;

	if (nest >= MAX_NESTING || dwarf_child(die, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child);
		uint32_t idx;

		if (tag == DW_TAG_inlined_subroutine) {
			if ((rc = add_call(b, &child, up, depth, &idx)))
				return rc;
			/* An inlined call without code leaves its
			 * children to the call around it. */
			if (idx != UINT32_MAX)
				rc = walk(b, &child, idx, depth + 1, nest + 1);
			else
				rc = walk(b, &child, up, depth, nest + 1);
		} else if (may_hold_code(tag)) {
			rc = walk(b, &child, up, depth, nest + 1);
		} else {
			rc = 0;
		}
		if (rc)
			return rc;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi;
}

/* [lo, hi) is the code of call (UINT32_MAX: none): appended, merged with
 * the range before when that is the same call's and ends at lo. */
static int emit(struct ibuild *b, uint64_t lo, uint64_t hi, uint32_t call)
{
	struct sym_unit *l = b->u;
	struct sym_inline_range *r;

	if (lo >= hi || call == UINT32_MAX)
		return 0;
	r = l->nr_ranges ? &l->ranges[l->nr_ranges - 1] : NULL;
	if (r && r->hi == lo && r->in == &l->calls[call]) {
		r->hi = hi;
		return 0;
	}
	if (mt_grow((void **)&l->ranges, &l->cap_ranges, l->nr_ranges + 1,
		    sizeof(*l->ranges)))
		return -ENOMEM;
	l->ranges[l->nr_ranges++] =
		(struct sym_inline_range){lo, hi, &l->calls[call]};
	return 0;
}

/*
 * Paint the calls' ranges, outer before inner, into disjoint ranges of
 * the innermost call.  A range that sticks out of the one around it
 * (DWARF that is not properly nested) is cut to it.
 */
static int paint(struct ibuild *b)
{
	struct raw_range *st = NULL;
	size_t n = 0, cap_st = 0;
	uint64_t cur = 0;
	int rc = 0;

	qsort(b->raw, b->nr_raw, sizeof(*b->raw), cmp_raw);
	for (size_t i = 0; i <= b->nr_raw && !rc; i++) {
		const struct raw_range *e = i < b->nr_raw ? &b->raw[i] : NULL;
		struct raw_range r;

		/* Close what ends before e (everything, at the end). */
		while (n && (!e || st[n - 1].hi <= e->lo) && !rc) {
			rc = emit(b, cur, st[n - 1].hi, st[n - 1].call);
			if (st[n - 1].hi > cur)
				cur = st[n - 1].hi;
			n--;
		}
		if (!e || rc)
			break;
		r = *e;
		if (n && st[n - 1].hi < r.hi)
			r.hi = st[n - 1].hi;
		if (n)
			rc = emit(b, cur, r.lo, st[n - 1].call);
		if (rc || mt_grow((void **)&st, &cap_st, n + 1, sizeof(*st))) {
			rc = -ENOMEM;
			break;
		}
		cur = r.lo;
		st[n++] = r;
	}
	free(st);
	return rc;
}

int sym_unit_inlines(struct sym_unit *u, Dwarf_Die *cu)
{
	struct ibuild b = {.u = u};
	Dwarf_Attribute at;
	int rc;

	b.comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at));
	if (dwarf_getsrcfiles(cu, &b.files, &b.nr_files)) {
		b.files = NULL;
		b.nr_files = 0;
	}
	rc = walk(&b, cu, UINT32_MAX, 0, 0);
	if (!rc && b.nr_raw)
		rc = paint(&b);
	/* The calls are all in place: their links can point. */
	for (size_t i = 0; !rc && i < u->nr_calls; i++)
		u->calls[i].up =
			b.up[i] == UINT32_MAX ? NULL : &u->calls[b.up[i]];
	free(b.raw);
	free(b.up);
	return rc;
}

size_t sym_inlines_from(const struct sym_inline_range *r, size_t nr,
			uint64_t vaddr)
{
	size_t lo = 0, hi = r ? nr : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].hi <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct sym_inline *sym_inline_at(const struct sym_inline_range *r,
				       size_t nr, uint64_t vaddr)
{
	size_t i = sym_inlines_from(r, nr, vaddr);

	if (!r || i >= nr || r[i].lo > vaddr)
		return NULL;
	return r[i].in;
}
