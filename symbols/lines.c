/* SPDX-License-Identifier: MIT */
/*
 * Source lines to code addresses, from the DWARF line tables.
 *
 * libdw (elfutils) reads the tables: it knows every DWARF version the
 * compilers emit, and its offline Dwfl finds the separate debug file of a
 * stripped binary (by build id or .gnu_debuglink) the same way the ELF
 * symbols here are found.  Only the line-table rows are used: a line
 * "begins" at a row that starts a statement (is_stmt), and where several
 * rows of one function carry the line (a loop condition, code the
 * compiler moved) the lowest address is the one a breakpoint on the line
 * belongs at, as gdb chooses.  Each function with code for the line (an
 * inlined copy in each caller) gives one address.  The other way, an
 * address to its line, reads one unit's rows at a time for sym_dwarf
 * (sym_unit_rows).
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row of interest: its address and the function holding it. */
struct lrow {
	uint64_t addr, fn;
};

struct lsearch {
	const char *want;
	unsigned line;
	/* The distinct file names that match want (at most a few kept). */
	char *names[8];
	size_t nr_names;
	struct lrow *rows;
	size_t nr_rows, cap_rows;
	/* The nearest lines with code on each side of line. */
	unsigned below, above;
};

/* "demo.c" and "examples/demo.c" name /src/examples/demo.c; an absolute
 * name must be the whole path. */
static bool name_matches(const char *table, const char *want)
{
	size_t lt = strlen(table), lw = strlen(want);

	if (want[0] == '/')
		return !strcmp(table, want);
	return lt >= lw && !strcmp(table + lt - lw, want) &&
	       (lt == lw || table[lt - lw - 1] == '/');
}

/* The line-table name of row l, made whole and normalized into full. */
static const char *row_file(Dwarf_Line *l, const char *dir, char *full,
			    size_t size)
{
	const char *name = l ? dwarf_linesrc(l, NULL, NULL) : NULL;

	if (!name)
		return NULL;
	/* A relative name is relative to the compilation's directory: an
	 * absolute FILE must still find it. */
	if (name[0] != '/' && dir)
		snprintf(full, size, "%s/%s", dir, name);
	else
		snprintf(full, size, "%s", name);
	sym_path_normalize(full, size);
	return full;
}

/* The index of name among those seen, -1 when there is no room left,
 * -2 when out of memory. */
static int note_name(struct lsearch *s, const char *name)
{
	for (size_t i = 0; i < s->nr_names; i++)
		if (!strcmp(s->names[i], name))
			return (int)i;
	if (s->nr_names == sizeof(s->names) / sizeof(s->names[0]))
		return -1;
	s->names[s->nr_names] = strdup(name);
	if (!s->names[s->nr_names])
		return -2;
	return (int)s->nr_names++;
}

/* A row of a unit's line table, as each reader here takes it. */
struct row {
	const char *file; /* whole and normalized (row_file) */
	uint64_t addr;
	int line;
	bool stmt; /* a statement begins here */
	bool end;  /* the first address past a sequence */
};

/*
 * fn on each row of the line table of unit cu whose file and fields are
 * known, in the table's order, until it returns non-zero (returned).  A
 * unit without a line table (a type unit) has no rows.
 */
static int each_row(Dwarf_Die *cu, int (*fn)(void *ctx, const struct row *r),
		    void *ctx)
{
	Dwarf_Attribute at;
	const char *dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at));
	Dwarf_Lines *lines;
	char full[4096];
	size_t n;

	if (dwarf_getsrclines(cu, &lines, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct row r = {.file = row_file(l, dir, full, sizeof(full))};
		Dwarf_Addr addr;
		int rc;

		if (!r.file || dwarf_lineno(l, &r.line) ||
		    dwarf_lineaddr(l, &addr) ||
		    dwarf_linebeginstatement(l, &r.stmt) ||
		    dwarf_lineendsequence(l, &r.end))
			continue;
		r.addr = addr;
		if ((rc = fn(ctx, &r)))
			return rc;
	}
	return 0;
}

static int scan_row(void *ctx, const struct row *r)
{
	struct lsearch *s = ctx;
	unsigned ln = (unsigned)r->line;
	int k;

	if (r->end || r->line <= 0 || !name_matches(r->file, s->want))
		return 0;
	/* Only the first of several files is searched: the caller is told
	 * of the others and asked to choose. */
	if ((k = note_name(s, r->file)) == -2)
		return -ENOMEM;
	if (k != 0)
		return 0;
	if (ln < s->line && ln > s->below)
		s->below = ln;
	if (ln > s->line && (!s->above || ln < s->above))
		s->above = ln;
	if (ln != s->line || !r->stmt)
		return 0;
	if (mt_grow((void **)&s->rows, &s->cap_rows, s->nr_rows + 1,
		    sizeof(*s->rows)))
		return -ENOMEM;
	s->rows[s->nr_rows++] = (struct lrow){.addr = r->addr};
	return 0;
}

static int scan_unit(struct lsearch *s, Dwarf_Die *cu)
{
	return each_row(cu, scan_row, s);
}

static int cmp_lrow(const void *a, const void *b)
{
	const struct lrow *x = a, *y = b;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct sym_src *src_of(struct sym_src **v, size_t *n, size_t *cap,
			      const char *file)
{
	struct sym_src *f;

	/* Rows of one file come in runs: the last one is the likely one. */
	for (size_t i = *n; i-- > 0;)
		if (!strcmp((*v)[i].file, file))
			return &(*v)[i];
	if (mt_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return NULL;
	f = &(*v)[*n];
	memset(f, 0, sizeof(*f));
	f->file = strdup(file);
	if (!f->file)
		return NULL;
	(*n)++;
	return f;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

static int cmp_src(const void *a, const void *b)
{
	return strcmp(((const struct sym_src *)a)->file,
		      ((const struct sym_src *)b)->file);
}

void sym_src_free(struct sym_src *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].file);
		free(v[i].lines);
	}
	free(v);
}

struct src_list {
	struct sym_src **v;
	size_t *n, *cap;
};

static int list_row(void *ctx, const struct row *r)
{
	struct src_list *l = ctx;
	struct sym_src *f;

	if (r->end || !r->stmt || r->line <= 0)
		return 0;
	f = src_of(l->v, l->n, l->cap, r->file);
	if (!f || mt_grow((void **)&f->lines, &f->cap_lines, f->nr_lines + 1,
			  sizeof(*f->lines)))
		return -ENOMEM;
	f->lines[f->nr_lines++] = (unsigned)r->line;
	return 0;
}

int sym_src_list(const char *path, struct sym_src **out, size_t *nr, char *err,
		 size_t errlen)
{
	struct sym_src *v = NULL;
	size_t n = 0, cap = 0;
	Dwfl *dwfl = NULL;
	Dwarf *dw;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	struct sym_dwfl_cb cb;
	int rc = sym_dwarf_begin(path, NULL, &cb, &dwfl, &dw, err, errlen);

	*out = NULL;
	*nr = 0;
	if (rc)
		goto fail;
	while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
		struct src_list l = {&v, &n, &cap};

		if (each_row(&cudie, list_row, &l))
			goto oom;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym_src *f = &v[i];
		size_t k = 0;

		qsort(f->lines, f->nr_lines, sizeof(*f->lines), cmp_uint);
		for (size_t j = 0; j < f->nr_lines; j++)
			if (!j || f->lines[j] != f->lines[j - 1])
				f->lines[k++] = f->lines[j];
		f->nr_lines = k;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_src);
	*out = v;
	*nr = n;
	dwfl_end(dwfl);
	return 0;
oom:
	rc = mt_err(err, errlen, -ENOMEM, "out of memory reading %s", path);
fail:
	sym_src_free(v, n);
	dwfl_end(dwfl);
	return rc;
}

int sym_line_addrs(const char *path, const char *file, unsigned line,
		   uint64_t **addrs, char *err, size_t errlen)
{
	struct lsearch s = {.line = line};
	char want[4096];
	struct sym_file *sf = NULL;
	struct sym_dwfl_cb cb;
	Dwfl *dwfl = NULL;
	Dwarf *dw;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint64_t *out = NULL;
	size_t nr = 0;
	int rc;

	*addrs = NULL;
	snprintf(want, sizeof(want), "%s", file);
	sym_path_normalize(want, sizeof(want));
	s.want = want;
	rc = sym_dwarf_begin(path, NULL, &cb, &dwfl, &dw, err, errlen);
	if (rc)
		goto fail;
	while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0)
		if ((rc = scan_unit(&s, &cudie)))
			goto oom;
	if (!s.nr_names) {
		snprintf(err, errlen,
			 "%s: no source file '%s' in its line tables", path,
			 file);
		rc = -ENOENT;
		goto fail;
	}
	if (s.nr_names > 1) {
		size_t at = (size_t)snprintf(
			err, errlen, "%s: '%s' names %zu source files:", path,
			file, s.nr_names);

		for (size_t i = 0; i < s.nr_names && at < errlen; i++)
			at += (size_t)snprintf(err + at, errlen - at, "%s %s",
					       i ? "," : "", s.names[i]);
		rc = -EINVAL;
		goto fail;
	}
	if (!s.nr_rows) {
		char near[64] = "none";

		if (s.below && s.above)
			snprintf(near, sizeof(near), "%u and %u", s.below,
				 s.above);
		else if (s.below || s.above)
			snprintf(near, sizeof(near), "%u",
				 s.below ? s.below : s.above);
		snprintf(err, errlen,
			 "%s:%u has no code in %s; the nearest lines that do: "
			 "%s",
			 s.names[0], line, path, near);
		rc = -ERANGE;
		goto fail;
	}
	/* One address per function: the lowest of its rows. */
	{
		char serr[256];

		if (sym_file_open(path, NULL, &sf, serr, sizeof(serr)))
			sf = NULL;
	}
	for (size_t i = 0; i < s.nr_rows; i++) {
		const struct sym *fn =
			sf ? sym_file_lookup(sf, s.rows[i].addr) : NULL;

		s.rows[i].fn = fn ? fn->addr : s.rows[i].addr;
	}
	qsort(s.rows, s.nr_rows, sizeof(*s.rows), cmp_lrow);
	out = malloc(s.nr_rows * sizeof(*out));
	if (!out)
		goto oom;
	for (size_t i = 0; i < s.nr_rows; i++)
		if (!i || s.rows[i].fn != s.rows[i - 1].fn)
			out[nr++] = s.rows[i].addr;
	qsort(out, nr, sizeof(*out), mt_cmp_u64);
	*addrs = out;
	rc = (int)nr;
	goto done;
oom:
	snprintf(err, errlen, "out of memory reading %s", path);
	rc = -ENOMEM;
fail:
done:
	sym_file_free(sf);
	free(s.rows);
	for (size_t i = 0; i < s.nr_names; i++)
		free(s.names[i]);
	dwfl_end(dwfl);
	return rc;
}

static int cmp_pos(const void *a, const void *b)
{
	const struct sym_row *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int unit_row(void *ctx, const struct row *r)
{
	struct sym_unit *u = ctx;
	int64_t f = r->end ? (int64_t)UINT32_MAX : sym_unit_str(u, r->file);

	if (f < 0 || mt_grow((void **)&u->rows, &u->cap_rows, u->nr_rows + 1,
			     sizeof(*u->rows)))
		return -ENOMEM;
	u->rows[u->nr_rows++] = (struct sym_row){
		r->addr, (uint32_t)f, r->line > 0 ? (uint32_t)r->line : 0};
	return 0;
}

int sym_unit_rows(struct sym_unit *u, Dwarf_Die *cu)
{
	int rc = each_row(cu, unit_row, u);

	/* Stable, so that where two sequences share an address (an end
	 * and the next start) the start, read later, comes last. */
	if (!rc &&
	    mt_stable_sort(u->rows, u->nr_rows, sizeof(*u->rows), cmp_pos))
		rc = -ENOMEM;
	return rc;
}
