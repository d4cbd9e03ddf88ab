/* SPDX-License-Identifier: MIT */
/*
 * JIT symbols from perf map files (/tmp/perf-PID.map), the format JITs
 * (V8, the JVM with perf-map-agent, LuaJIT, ...) write for perf: one
 * "START SIZE name" line per code blob, hex numbers with or without 0x.
 *
 * A JIT may reuse an address for new code; the later line wins, since it
 * describes what was there last.
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sym_map {
	struct sym *syms;
	uint64_t *ends;
	size_t nr;
	struct sym_arena arena;
};

/* Parse one hex number at *s (optional 0x), moving *s past it. */
static bool parse_hex(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int digits = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (;; p++, digits++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (x >> 60)
			return false; /* more than 64 bits */
		x = x << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*v = x;
	*s = p;
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Split a line into start, size and name.  The name is the rest of the
 * line: JIT names often hold spaces ("LazyCompile: *foo bar.js:1").
 */
static bool parse_line(char *line, uint64_t *start, uint64_t *size,
		       const char **name, size_t *name_len)
{
	const char *p = line;
	size_t n;

	while (is_blank(*p))
		p++;
	if (!parse_hex(&p, start) || !is_blank(*p))
		return false;
	while (is_blank(*p))
		p++;
	if (!parse_hex(&p, size) || !is_blank(*p))
		return false;
	while (is_blank(*p))
		p++;
	n = strlen(p);
	while (n &&
	       (p[n - 1] == '\n' || p[n - 1] == '\r' || is_blank(p[n - 1])))
		n--;
	if (!n)
		return false;
	*name = p;
	*name_len = n;
	return true;
}

static bool blank_line(const char *s)
{
	for (; *s; s++)
		if (!is_blank(*s) && *s != '\n' && *s != '\r')
			return false;
	return true;
}

int sym_map_open(const char *path, struct sym_map **out, char *err,
		 size_t errlen)
{
	struct sym_cands c = {0};
	struct sym_map *m = NULL;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	FILE *fp = NULL;
	int fd, rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	fd = mt_open_regular(path, NULL);
	if (fd < 0) {
		rc = mt_err(err, errlen, fd, "%s: %s", path,
			    fd == -EINVAL ? "not a regular file"
					  : strerror(-fd));
		goto fail;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		goto nomem;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	while (getline(&line, &cap, fp) >= 0) {
		struct sym_cand s = {0};
		const char *name;
		size_t len;

		lineno++;
		if (blank_line(line))
			continue;
		if (!parse_line(line, &s.addr, &s.size, &name, &len)) {
			rc = mt_err(err, errlen, -EINVAL,
				    "%s:%zu: malformed line (want \"START SIZE "
				    "name\" in hex)",
				    path, lineno);
			goto fail;
		}
		/* Raw: JIT names are not linker manglings, except when
		 * they are, and then the JIT wrote what it wanted shown. */
		s.name = sym_name_store(&m->arena, name, len, NULL, true);
		s.flags = SYM_F_JIT;
		if (!s.name || sym_cands_add(&c, &s))
			goto nomem;
	}
	if (ferror(fp)) {
		rc = mt_err(err, errlen, -EIO, "%s: read error", path);
		goto fail;
	}
	/* Reverse the insertion order so that the stable tie-break (first
	 * seen) picks the last line of an address. */
	for (size_t i = 0; i < c.nr; i++)
		c.v[i].seq = (uint32_t)(c.nr - 1 - i);
	if (sym_cands_finish(&c, &m->syms, &m->ends, &m->nr))
		goto nomem;
	free(c.v);
	free(line);
	fclose(fp);
	*out = m;
	return 0;
nomem:
	rc = mt_err(err, errlen, -ENOMEM, "%s: out of memory", path);
fail:
	free(c.v);
	free(line);
	if (fp)
		fclose(fp);
	sym_map_free(m);
	return rc;
}

void sym_map_free(struct sym_map *m)
{
	if (!m)
		return;
	sym_arena_free(&m->arena);
	free(m->syms);
	free(m->ends);
	free(m);
}

const struct sym *sym_map_lookup(const struct sym_map *m, uint64_t addr)
{
	long i = sym_search(m->syms, m->ends, m->nr, addr);

	return i < 0 ? NULL : &m->syms[i];
}
