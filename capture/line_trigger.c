/* SPDX-License-Identifier: MIT */
/*
 * FILE:LINE triggers: a source line of a running process to the runtime
 * addresses where it begins.
 *
 * The executable's line tables are searched first; only when they know
 * no file of that name are the shared libraries mapped now searched (a
 * library loaded later by dlopen() is not).  ELF addresses become runtime
 * ones through the mapping that holds their file offset, which is right
 * for position-dependent and position-independent code alike.
 */
#include "capture/symaddr_internal.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One file-backed mapping of the process. */
struct lmap {
	uint64_t lo, hi, off;
	char *path;
};

struct lmaps {
	struct lmap *v;
	size_t n, cap;
};

static void lmaps_free(struct lmaps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
}

static int lmaps_add(const struct mt_map *mm, const char *line, void *arg)
{
	struct lmaps *m = arg;
	struct lmap *x;

	(void)line;
	if (mm->path[0] != '/')
		return 0;
	if (mt_grow((void **)&m->v, &m->cap, m->n + 1, sizeof(*m->v)))
		return -ENOMEM;
	x = &m->v[m->n];
	x->lo = mm->lo;
	x->hi = mm->hi;
	x->off = mm->pgoff;
	x->path = strdup(mm->path);
	if (!x->path)
		return -ENOMEM;
	m->n++;
	return 0;
}

static int lmaps_read(pid_t pid, struct lmaps *m, char *err, size_t errlen)
{
	int rc = mt_maps_each(pid, lmaps_add, m, err, errlen);

	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* The file offset of ELF vaddr v, or UINT64_MAX when no segment loads
 * it from the file. */
static uint64_t file_offset(const struct sym_file *sf, uint64_t v)
{
	const struct sym_load *ld;
	size_t nl;
	uint64_t off = UINT64_MAX;

	ld = sym_file_loads(sf, &nl);
	for (size_t i = 0; i < nl; i++)
		if (v >= ld[i].vaddr && v < ld[i].vaddr + ld[i].filesz)
			off = v - ld[i].vaddr + ld[i].offset;
	return off;
}

/* The runtime address of ELF vaddr v of path, or 0 when no mapping
 * holds it. */
static uint64_t to_runtime(const struct lmaps *m, const char *path,
			   const struct sym_file *sf, uint64_t v)
{
	uint64_t off = file_offset(sf, v);

	if (off == UINT64_MAX)
		return 0;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].path, path) && off >= m->v[i].off &&
		    off - m->v[i].off < m->v[i].hi - m->v[i].lo)
			return m->v[i].lo + off - m->v[i].off;
	return 0;
}

bool line_trigger_spec(const char *spec, char *file, size_t filelen,
		       unsigned *line)
{
	const char *colon = strrchr(spec, ':');
	uint64_t v;

	if (!colon || colon == spec || !strncmp(spec, "addr:", 5) ||
	    !isdigit((unsigned char)colon[1]))
		return false;
	if (mt_parse_u64(colon + 1, 10, 0xffffff, &v) || !v)
		return false;
	if (file) {
		if ((size_t)(colon - spec) >= filelen)
			return false;
		memcpy(file, spec, (size_t)(colon - spec));
		file[colon - spec] = 0;
	}
	*line = (unsigned)v;
	return true;
}

/* Resolve in one file; >0 addresses (runtime, in *out), or a negative
 * code with err set. */
static int resolve_in(const struct lmaps *m, const char *path, const char *file,
		      unsigned line, uint64_t **out, char *err, size_t errlen)
{
	struct sym_file *sf = NULL;
	uint64_t *a = NULL;
	size_t k = 0;
	int n = sym_line_addrs(path, file, line, &a, err, errlen);

	if (n <= 0)
		return n;
	if (sym_file_open(path, NULL, &sf, err, errlen)) {
		free(a);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		uint64_t r = to_runtime(m, path, sf, a[i]);

		if (r)
			a[k++] = r;
	}
	sym_file_free(sf);
	if (!k) {
		free(a);
		snprintf(err, errlen, "%s:%u: its code in %s is not mapped",
			 file, line, path);
		return -ENXIO;
	}
	*out = a;
	return (int)k;
}

int line_trigger_resolve(pid_t pid, const char *exe, const char *spec,
			 uint64_t **addrs, size_t *n, char *err, size_t errlen)
{
	struct lmaps m = {0};
	char file[4096], first[512] = "";
	const char *found_in = NULL;
	unsigned line;
	size_t libs = 0;
	int rc;

	*addrs = NULL;
	*n = 0;
	if (!line_trigger_spec(spec, file, sizeof(file), &line)) {
		snprintf(err, errlen, "'%s' is not FILE:LINE", spec);
		return -EINVAL;
	}
	if ((rc = lmaps_read(pid, &m, err, errlen)))
		return rc;
	rc = resolve_in(&m, exe, file, line, addrs, err, errlen);
	if (rc != -ENOENT)
		goto out;
	snprintf(first, sizeof(first), "%s", err);
	/* Not the executable's: a library's, if exactly one has it. */
	for (size_t i = 0; i < m.n; i++) {
		uint64_t *a = NULL;
		char e2[1024];
		int r;
		bool seen = !strcmp(m.v[i].path, exe);

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(m.v[k].path, m.v[i].path);
		if (seen)
			continue;
		libs++;
		r = resolve_in(&m, m.v[i].path, file, line, &a, e2, sizeof(e2));
		if (r == -ENOENT)
			continue;
		if (found_in) {
			free(a);
			free(*addrs);
			*addrs = NULL;
			snprintf(err, errlen,
				 "'%s' is in the line tables of %s and of %s: "
				 "name the file by more of its path",
				 file, found_in, m.v[i].path);
			rc = -EINVAL;
			goto out;
		}
		found_in = m.v[i].path;
		if (r < 0) {
			snprintf(err, errlen, "%s", e2);
			rc = r;
			goto out;
		}
		*addrs = a;
		rc = r;
	}
	if (!found_in)
		snprintf(err, errlen, "%s (nor in the %zu libraries mapped)",
			 first, libs);
out:
	lmaps_free(&m);
	if (rc > 0) {
		*n = (size_t)rc;
		return 0;
	}
	free(*addrs);
	*addrs = NULL;
	return rc ? rc : -ENOENT;
}

int line_trigger_offsets(const char *exe, const char *spec, uint64_t **offs,
			 size_t *n, char *err, size_t errlen)
{
	struct sym_file *sf = NULL;
	char file[4096];
	unsigned line;
	size_t k = 0;
	int got;

	*offs = NULL;
	*n = 0;
	if (!line_trigger_spec(spec, file, sizeof(file), &line))
		return mt_err(err, errlen, -EINVAL, "'%s' is not FILE:LINE",
			      spec);
	got = sym_line_addrs(exe, file, line, offs, err, errlen);
	if (got <= 0)
		return got ? got : -ENOENT;
	if (sym_file_open(exe, NULL, &sf, err, errlen)) {
		free(*offs);
		*offs = NULL;
		return -EINVAL;
	}
	for (int i = 0; i < got; i++) {
		uint64_t off = file_offset(sf, (*offs)[i]);

		if (off != UINT64_MAX)
			(*offs)[k++] = off;
	}
	sym_file_free(sf);
	if (!k) {
		free(*offs);
		*offs = NULL;
		return mt_err(err, errlen, -ENXIO,
			      "%s:%u: its code in %s is in no loaded segment",
			      file, line, exe);
	}
	*n = k;
	return 0;
}
