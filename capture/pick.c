/* SPDX-License-Identifier: MIT */
/*
 * Choosing on a terminal.  fzf is run on a temporary file of the items
 * (popen gives one direction only) and its answer is matched back to an
 * item; without it the list is numbered.  The lists come from what the
 * trigger can name: the executable's functions (symaddr_resolve finds
 * them by name) and the files and lines of its DWARF line tables
 * (line_trigger_resolve finds them by FILE:LINE).
 */
#include "capture/pick_internal.h"

#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool have_fzf(FILE *in, FILE *out)
{
	return isatty(fileno(in)) && isatty(fileno(out)) &&
	       !system("command -v fzf >/dev/null 2>&1");
}

/* fzf over items: 0 with *chosen, 1 when left, or a negative code. */
static int pick_fzf(const char *const *items, size_t n, const char *prompt,
		    size_t *chosen)
{
	char tmp[] = "/tmp/mt-pick.XXXXXX", cmd[256], line[4096];
	FILE *f, *fz;
	int fd = mkstemp(tmp), rc = 1;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", items[i]);
	if (fclose(f)) {
		unlink(tmp);
		return -EIO;
	}
	snprintf(cmd, sizeof(cmd),
		 "fzf --prompt='%s> ' --height=20 --reverse < %s", prompt, tmp);
	fz = popen(cmd, "r");
	if (fz && fgets(line, sizeof(line), fz)) {
		line[strcspn(line, "\n")] = 0;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(items[i], line)) {
				*chosen = i;
				rc = 0;
				break;
			}
	}
	if (fz)
		pclose(fz);
	unlink(tmp);
	return rc;
}

int pick_one(const char *const *items, size_t n, const char *prompt, FILE *in,
	     FILE *out, size_t *chosen, char *err, size_t errlen)
{
	char line[256];
	uint64_t v;

	if (!n)
		return 1;
	if (have_fzf(in, out))
		return pick_fzf(items, n, prompt, chosen);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%4zu  %s\n", i + 1, items[i]);
	fprintf(out, "%s (1-%zu)? ", prompt, n);
	fflush(out);
	if (!fgets(line, sizeof(line), in))
		return 1;
	/* An answer not typed here was not echoed either. */
	if (!isatty(fileno(in)))
		fputc('\n', out);
	line[strcspn(line, "\n")] = 0;
	if (!line[0])
		return 1;
	if (mt_parse_u64(line, 10, n, &v) || !v) {
		return mt_err(err, errlen, -EINVAL,
			      "'%s' is not a number from 1 to %zu", line, n);
	}
	*chosen = (size_t)(v - 1);
	return 0;
}

/* The pid that starts a line of ps (right-aligned), or 0. */
static int pid_of_ps_line(const char *line)
{
	uint64_t v;

	line += strspn(line, " ");
	if (mt_scan_u64(&line, 10, INT_MAX, &v) || (*line && *line != ' '))
		return 0;
	return (int)v;
}

int pick_process(void)
{
	char line[512], err[128], **items = NULL;
	size_t n = 0, cap = 0, chosen = 0;
	int pid = 0, rc;
	FILE *ps = popen("ps -eo pid=,user=,args=", "r");

	if (!ps)
		return 0;
	while (fgets(line, sizeof(line), ps)) {
		line[strcspn(line, "\n")] = 0;
		if (mt_grow((void **)&items, &cap, n + 1, sizeof(*items)) ||
		    !(items[n] = strdup(line)))
			break;
		n++;
	}
	pclose(ps);
	rc = pick_one((const char *const *)items, n, "trace which", stdin,
		      stderr, &chosen, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "mt-capture: -p: %s\n", err);
		pid = -1;
	} else if (!rc) {
		pid = pid_of_ps_line(items[chosen]);
	}
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	free(items);
	return pid;
}

bool pick_trigger_spec(const char *spec)
{
	return !strcmp(spec, "?") || !strcmp(spec, "symbol:?") ||
	       !strcmp(spec, "line:?");
}

/* What can be picked: items[i] names either a function (i < nr_fn) or a
 * source file (src[i - nr_fn]). */
struct menu {
	const char **items;
	size_t n, cap, nr_fn;
	char **owned; /* the strings made here */
	size_t nr_owned, cap_owned;
};

static int menu_add(struct menu *m, const char *item, bool copy)
{
	char *c = NULL;

	if (copy) {
		if (mt_grow((void **)&m->owned, &m->cap_owned, m->nr_owned + 1,
			    sizeof(*m->owned)) ||
		    !(c = strdup(item)))
			return -ENOMEM;
		m->owned[m->nr_owned++] = c;
		item = c;
	}
	if (mt_grow((void **)&m->items, &m->cap, m->n + 1, sizeof(*m->items)))
		return -ENOMEM;
	m->items[m->n++] = item;
	return 0;
}

static void menu_free(struct menu *m)
{
	for (size_t i = 0; i < m->nr_owned; i++)
		free(m->owned[i]);
	free(m->owned);
	free(m->items);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The executable's functions, sorted and each once (PLT stubs are no
 * place to stop). */
static int add_functions(struct menu *m, const struct sym_file *sf)
{
	size_t nr, first = m->n, k;
	const struct sym *syms = sym_file_syms(sf, &nr);

	for (size_t i = 0; i < nr; i++)
		if (syms[i].name[0] && !strstr(syms[i].name, "@plt") &&
		    menu_add(m, syms[i].name, false))
			return -ENOMEM;
	qsort(m->items + first, m->n - first, sizeof(*m->items), cmp_str);
	k = first;
	for (size_t i = first; i < m->n; i++)
		if (i == first || strcmp(m->items[i], m->items[k - 1]))
			m->items[k++] = m->items[i];
	m->n = k;
	return 0;
}

/* The lines with code of src, each with its text when the file is here:
 * "42  x = f(y);". */
static int pick_line(const struct sym_src *src, FILE *in, FILE *out,
		     char *trigger, size_t len, char *err, size_t errlen)
{
	struct menu m = {0};
	FILE *f = fopen(src->file, "r");
	char text[512], item[640];
	unsigned at = 0;
	size_t chosen;
	int rc = 0;

	for (size_t i = 0; i < src->nr_lines && !rc; i++) {
		const char *t = "";

		while (f && at < src->lines[i] &&
		       fgets(text, sizeof(text), f)) {
			if (strchr(text, '\n'))
				at++;
			text[strcspn(text, "\n")] = 0;
		}
		if (f && at == src->lines[i])
			t = text + strspn(text, " \t");
		snprintf(item, sizeof(item), "%u  %s", src->lines[i], t);
		rc = menu_add(&m, item, true);
	}
	if (f)
		fclose(f);
	if (rc) {
		mt_err(err, errlen, rc, "out of memory listing %s", src->file);
		goto out;
	}
	rc = pick_one(m.items, m.n, "line", in, out, &chosen, err, errlen);
	if (!rc)
		snprintf(trigger, len, "%s:%u", src->file, src->lines[chosen]);
out:
	menu_free(&m);
	return rc;
}

int pick_trigger(const char *spec, const char *exe, FILE *in, FILE *out,
		 char *trigger, size_t len, char *err, size_t errlen)
{
	bool fns = strcmp(spec, "line:?"), files = strcmp(spec, "symbol:?");
	struct sym_file *sf = NULL;
	struct sym_src *src = NULL;
	struct menu m = {0};
	size_t nr_src = 0, chosen;
	char serr[256];
	int rc = 0;

	if (fns && (rc = sym_file_open(exe, NULL, &sf, err, errlen)))
		return rc;
	if (files && sym_src_list(exe, &src, &nr_src, serr, sizeof(serr))) {
		if (!fns) {
			rc = mt_err(err, errlen, -ENOENT, "%s", serr);
			goto out;
		}
		/* Functions are enough without -g. */
		nr_src = 0;
	}
	if (fns && add_functions(&m, sf))
		goto oom;
	m.nr_fn = m.n;
	for (size_t i = 0; i < nr_src; i++) {
		char item[4200];

		snprintf(item, sizeof(item), "%s%s", fns ? "file " : "",
			 src[i].file);
		if (menu_add(&m, item, true))
			goto oom;
	}
	if (!m.n) {
		rc = mt_err(err, errlen, -ENOENT, "%s: no %s to offer", exe,
			    fns ? "function" : "source file");
		goto out;
	}
	rc = pick_one(m.items, m.n, fns && files ? "trigger at" : "trigger in",
		      in, out, &chosen, err, errlen);
	if (rc)
		goto out;
	if (chosen < m.nr_fn)
		snprintf(trigger, len, "%s", m.items[chosen]);
	else
		rc = pick_line(&src[chosen - m.nr_fn], in, out, trigger, len,
			       err, errlen);
	goto out;
oom:
	rc = mt_err(err, errlen, -ENOMEM, "out of memory listing %s", exe);
out:
	menu_free(&m);
	sym_src_free(src, nr_src);
	sym_file_free(sf);
	return rc;
}
