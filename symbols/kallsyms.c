/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from the text of /proc/kallsyms ("ADDR TYPE NAME" per
 * line, "\t[MODULE]" after the name for a module's symbol), as the kernel
 * prints it and the capture keeps it.  Only code symbols (types t, T, w,
 * W) are kept: data symbols between them would cut functions short.
 *
 * kallsyms gives no sizes: a symbol runs to the next one, the last one
 * to the end of the address space (whoever has the code knows where it
 * ends).  _stext, _text and _etext mark the kernel's text and are kept
 * apart: they share their addresses with functions.  Each module's
 * span (its lowest to its highest symbol) is kept, so that a function
 * can be said to be in its module ("[ext4]") or in the kernel.
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct kmod_span {
	const char *dso; /* "[name]", in the arena */
	uint64_t lo, hi; /* lowest and highest symbol address */
};

struct sym_kallsyms {
	uint64_t text_start, text_end; /* _stext (or _text), _etext */
	struct sym *syms;
	uint64_t *ends;
	size_t nr;
	struct kmod_span *mods;
	size_t nr_mods, cap_mods;
	struct sym_arena arena;
};

static bool is_code_type(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* The span of module name (len bytes), created on first sight. */
static struct kmod_span *mod_span(struct sym_kallsyms *k, const char *name,
				  size_t len)
{
	char *dso;

	for (size_t i = k->nr_mods; i-- > 0;)
		if (!strncmp(k->mods[i].dso + 1, name, len) &&
		    k->mods[i].dso[len + 1] == ']')
			return &k->mods[i];
	if (mt_grow((void **)&k->mods, &k->cap_mods, k->nr_mods + 1,
		    sizeof(*k->mods)))
		return NULL;
	dso = sym_arena_alloc(&k->arena, len + 3);
	if (!dso)
		return NULL;
	dso[0] = '[';
	memcpy(dso + 1, name, len);
	dso[len + 1] = ']';
	dso[len + 2] = 0;
	k->mods[k->nr_mods] =
		(struct kmod_span){.dso = dso, .lo = UINT64_MAX, .hi = 0};
	return &k->mods[k->nr_mods++];
}

/*
 * One line (len bytes, no newline): 1 with a code symbol added, 0 for a
 * line that is no code symbol, -EINVAL when malformed, -ENOMEM.
 */
static int parse_line(struct sym_kallsyms *k, struct sym_cands *c,
		      const char *line, size_t len, bool *nonzero)
{
	char num[17];
	const char *p = line, *end = line + len, *name, *mod = NULL;
	size_t n = 0, name_len, mod_len = 0;
	struct sym_cand s = {0};
	char type;

	while (p < end && *p != ' ' && n < sizeof(num) - 1)
		num[n++] = *p++;
	num[n] = 0;
	if (p + 3 > end || *p != ' ' || p[2] != ' ' ||
	    mt_parse_u64(num, 16, UINT64_MAX, &s.addr))
		return -EINVAL;
	type = p[1];
	name = p + 3;
	for (p = name; p < end && *p != '\t' && *p != ' '; p++)
		;
	name_len = (size_t)(p - name);
	if (!name_len)
		return -EINVAL;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	if (p < end) {
		if (*p != '[' || end[-1] != ']' || end - p < 3)
			return -EINVAL;
		mod = p + 1;
		mod_len = (size_t)(end - p - 2);
	}
	if (s.addr)
		*nonzero = true;
	if (!is_code_type(type) || !s.addr)
		return 0;
	/* The kernel's text bounds share their addresses with functions
	 * (or with nothing): kept apart, they name no code. */
	if (!mod && name_len == 6 && !memcmp(name, "_stext", 6)) {
		k->text_start = s.addr;
		return 0;
	}
	if (!mod && name_len == 5 && !memcmp(name, "_text", 5)) {
		if (!k->text_start)
			k->text_start = s.addr;
		return 0;
	}
	if (!mod && name_len == 6 && !memcmp(name, "_etext", 6)) {
		k->text_end = s.addr;
		return 0;
	}
	s.name = sym_name_store(&k->arena, name, name_len, NULL, true);
	s.flags = SYM_F_FUNC | (type == 'T' || type == 'W' ? SYM_F_GLOBAL : 0);
	s.seq = (uint32_t)c->nr;
	if (!s.name || sym_cands_add(c, &s))
		return -ENOMEM;
	if (mod) {
		struct kmod_span *m = mod_span(k, mod, mod_len);

		if (!m)
			return -ENOMEM;
		if (s.addr < m->lo)
			m->lo = s.addr;
		if (s.addr > m->hi)
			m->hi = s.addr;
	}
	return 1;
}

int sym_kallsyms_parse(const char *text, size_t len, const char *what,
		       struct sym_kallsyms **out, char *err, size_t errlen)
{
	struct sym_cands c = {0};
	struct sym_kallsyms *k = calloc(1, sizeof(*k));
	const char *p = text, *end = text + len;
	bool nonzero = false;
	size_t lineno = 0;
	int rc;

	*out = NULL;
	if (!k)
		goto nomem;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		lineno++;
		if (n) {
			rc = parse_line(k, &c, p, n, &nonzero);
			if (rc == -ENOMEM)
				goto nomem;
			if (rc < 0) {
				rc = mt_err(err, errlen, -EINVAL,
					    "%s:%zu: malformed line (want "
					    "\"ADDR TYPE NAME [MODULE]\")",
					    what, lineno);
				goto fail;
			}
		}
		p += n + 1;
	}
	if (!nonzero) {
		/* kptr_restrict, or no permission to see the addresses. */
		rc = mt_err(err, errlen, -ENODATA,
			    "%s: the kernel's addresses are hidden (all zero: "
			    "kptr_restrict)",
			    what);
		goto fail;
	}
	if (sym_cands_finish(&c, &k->syms, &k->ends, &k->nr))
		goto nomem;
	/* The last function has no next one: it runs on, and the caller
	 * knows where its code ends. */
	if (k->nr)
		k->ends[k->nr - 1] = UINT64_MAX;
	free(c.v);
	*out = k;
	return 0;
nomem:
	rc = mt_err(err, errlen, -ENOMEM, "%s: out of memory", what);
fail:
	free(c.v);
	sym_kallsyms_free(k);
	return rc;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	sym_arena_free(&k->arena);
	free(k->syms);
	free(k->ends);
	free(k->mods);
	free(k);
}

const struct sym *sym_kallsyms_lookup(const struct sym_kallsyms *k,
				      uint64_t addr, const char **dso)
{
	long i = sym_search(k->syms, k->ends, k->nr, addr);

	*dso = SYM_KERNEL_DSO;
	if (i < 0)
		return NULL;
	for (size_t m = 0; m < k->nr_mods; m++)
		if (k->syms[i].addr >= k->mods[m].lo &&
		    k->syms[i].addr <= k->mods[m].hi)
			*dso = k->mods[m].dso;
	return &k->syms[i];
}

uint64_t sym_kallsyms_end(const struct sym_kallsyms *k, const struct sym *s)
{
	return k->ends[s - k->syms];
}

int sym_kallsyms_text(const struct sym_kallsyms *k, uint64_t *start,
		      uint64_t *end)
{
	if (!k->text_start || k->text_end <= k->text_start)
		return -ENOENT;
	*start = k->text_start;
	*end = k->text_end;
	return 0;
}
