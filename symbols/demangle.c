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

#include <ctype.h>
#include <libiberty/demangle.h>
#include <stdio.h>
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

/*
 * OCaml's native code (4.x) names a function camlModule__name_NNN: the
 * parts of the module path joined by "__", a "$xx" hex escape for each
 * character a symbol cannot hold (operators), and a number that tells
 * functions of one name apart.  Shown as OCaml writes it, Module.name
 * (magic-trace shows them so too).  A module's name begins with a capital:
 * the runtime's own functions (caml_raise_exn, caml_program) do not, and
 * are left alone, as is a name without a "__".
 */
static bool ocaml_demangle(const char *name, char *buf, size_t len)
{
	const char *p = name + 4, *end;
	size_t n = 0;

	if (strncmp(name, "caml", 4) || !(*p >= 'A' && *p <= 'Z') ||
	    !strstr(p, "__"))
		return false;
	end = p + strlen(p);
	/* The number at the end, if it is one (camlM__1 is data). */
	for (const char *q = end; q > p; q--)
		if (q[-1] == '_') {
			if (q < end && q - 1 > p && q[-2] != '_' &&
			    strspn(q, "0123456789") == (size_t)(end - q))
				end = q - 1;
			break;
		}
	while (p < end) {
		char c = *p++;

		if (c == '_' && p < end && *p == '_') {
			c = '.';
			p++;
		} else if (c == '$') {
			unsigned v;

			if (end - p < 2 || !isxdigit((unsigned char)p[0]) ||
			    !isxdigit((unsigned char)p[1]) ||
			    sscanf(p, "%2x", &v) != 1 || v == 0)
				return false;
			c = (char)v;
			p += 2;
		}
		if (n + 1 >= len)
			return false;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return n > 0;
}

static bool dm_try(const char *name, char *buf, size_t len)
{
	struct dm_out o = {buf, 0, len, false};

	if (len == 0)
		return false;
	buf[0] = '\0';
	if (name[0] == 'c')
		return ocaml_demangle(name, buf, len);
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
	if (!name || (name[0] != '_' && name[0] != 'c'))
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
	if (!raw && len >= 2 &&
	    ((name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) ||
	     (len > 4 && !memcmp(name, "caml", 4))) &&
	    len < sizeof(tmp)) {
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
