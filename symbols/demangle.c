/* SPDX-License-Identifier: MIT */
/*
 * Demangling through libiberty, the demangler binutils and gdb use, so that
 * our names read like theirs.  The callback entry points are used rather
 * than cplus_demangle(): they write into our buffer without allocating
 * (cplus_demangle's xmalloc aborts the process when memory runs out) and
 * take the style from their arguments only, never from libiberty's global
 * current_demangling_style.
 */
#include "symbols/sym_internal.h"

#include <libiberty/demangle.h>
#include <string.h>

/* Without DMGL_VERBOSE, libiberty drops the "::h<hash>" of legacy Rust
 * names and the crate disambiguators of v0 names: what a reader wants. */
#define SYM_DMGL (DMGL_PARAMS | DMGL_ANSI)

/* Longest demangled name we keep; longer ones stay mangled. */
#define SYM_DEMANGLE_MAX 4096

struct dm_out {
	char *buf;
	size_t len, cap;
	bool overflow;
};

static void dm_put(const char *s, size_t n, void *opaque)
{
	struct dm_out *o = opaque;

	if (o->overflow || n >= o->cap - o->len) {
		o->overflow = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static bool dm_try(const char *name, char *buf, size_t len)
{
	struct dm_out o = {buf, 0, len, false};

	if (len == 0)
		return false;
	buf[0] = '\0';
	/*
	 * Legacy Rust names are valid C++ manglings too (_ZN...E), so Rust is
	 * tried first, as libiberty's own auto style does.
	 */
	if (name[0] == '_' && (name[1] == 'R' || name[1] == 'Z') &&
	    rust_demangle_callback(name, SYM_DMGL | DMGL_RUST, dm_put, &o) &&
	    !o.overflow)
		return true;
	if (name[0] != '_' || name[1] != 'Z')
		return false;
	o.len = 0;
	o.overflow = false;
	buf[0] = '\0';
	return cplus_demangle_v3_callback(name, SYM_DMGL, dm_put, &o) &&
	       !o.overflow;
}

const char *sym_demangle(const char *name, char *buf, size_t len)
{
	if (!name || name[0] != '_')
		return name;
	return dm_try(name, buf, len) ? buf : name;
}

const char *sym_name_store(struct sym_arena *a, const char *name, size_t len,
			   const char *suffix, bool raw)
{
	char dm[SYM_DEMANGLE_MAX], tmp[SYM_DEMANGLE_MAX];
	size_t slen = suffix ? strlen(suffix) : 0;
	char *p;

	/* The demanglers want a terminated string; names from a string
	 * table are, but a length-limited copy may not be. */
	if (!raw && len >= 2 && name[0] == '_' &&
	    (name[1] == 'Z' || name[1] == 'R') && len < sizeof(tmp)) {
		memcpy(tmp, name, len);
		tmp[len] = '\0';
		if (dm_try(tmp, dm, sizeof(dm))) {
			name = dm;
			len = strlen(dm);
		}
	}
	if (len > SIZE_MAX - slen - 1)
		return NULL;
	p = sym_arena_alloc(a, len + slen + 1);
	if (!p)
		return NULL;
	memcpy(p, name, len);
	if (slen)
		memcpy(p + len, suffix, slen);
	p[len + slen] = '\0';
	return p;
}
