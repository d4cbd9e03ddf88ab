/* SPDX-License-Identifier: MIT */
/*
 * Tables for a terminal (columns aligned, each duration in the unit
 * that suits it) or as CSV (plain numbers, in ns).
 */
#include "stats/show.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void st_fmt_dur(char *buf, size_t len, double ns, bool sign)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
	const char *plus = sign && ns > 0 ? "+" : "";
	double a = ns < 0 ? -ns : ns;

	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
		double v = ns / units[i].div, av = a / units[i].div;

		if (av < 1 && units[i].div > 1)
			continue;
		if (units[i].div == 1 || av >= 100)
			snprintf(buf, len, "%s%.0f %s", plus, v, units[i].unit);
		else if (av >= 10)
			snprintf(buf, len, "%s%.1f %s", plus, v, units[i].unit);
		else
			snprintf(buf, len, "%s%.2f %s", plus, v, units[i].unit);
		return;
	}
}

void st_tab_init(struct st_tab *t, const char *const *head, const char *left)
{
	memset(t, 0, sizeof(*t));
	t->head = head;
	while (head[t->ncols])
		t->ncols++;
	t->left = left;
}

int st_tab_row(struct st_tab *t, ...)
{
	va_list ap;
	size_t at = t->nrows * t->ncols;

	if (mt_grow((void **)&t->cells, &t->cap, at + t->ncols,
		    sizeof(*t->cells)))
		return -ENOMEM;
	va_start(ap, t);
	for (size_t i = 0; i < t->ncols; i++) {
		const char *c = va_arg(ap, const char *);

		t->cells[at + i] = strdup(c ? c : "");
		if (!t->cells[at + i]) {
			for (size_t k = 0; k < i; k++)
				free(t->cells[at + k]);
			va_end(ap);
			return -ENOMEM;
		}
	}
	va_end(ap);
	t->nrows++;
	return 0;
}

static void csv_cell(FILE *out, const char *c)
{
	if (!strpbrk(c, ",\"\n")) {
		fputs(c, out);
		return;
	}
	fputc('"', out);
	for (; *c; c++) {
		if (*c == '"')
			fputc('"', out);
		fputc(*c, out);
	}
	fputc('"', out);
}

void st_tab_print(const struct st_tab *t, FILE *out, bool csv)
{
	size_t w[32] = {0};

	if (csv) {
		for (size_t r = 0; r <= t->nrows; r++)
			for (size_t i = 0; i < t->ncols; i++) {
				csv_cell(out,
					 r ? t->cells[(r - 1) * t->ncols + i]
					   : t->head[i]);
				fputc(i + 1 < t->ncols ? ',' : '\n', out);
			}
		return;
	}
	for (size_t i = 0; i < t->ncols && i < 32; i++) {
		w[i] = strlen(t->head[i]);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t l = strlen(t->cells[r * t->ncols + i]);

			if (l > w[i])
				w[i] = l;
		}
	}
	for (size_t r = 0; r <= t->nrows; r++) {
		for (size_t i = 0; i < t->ncols && i < 32; i++) {
			const char *c = r ? t->cells[(r - 1) * t->ncols + i]
					  : t->head[i];
			bool last = i + 1 == t->ncols;
			int wi = (int)w[i];

			if (t->left[i] == 'l')
				fprintf(out, "%-*s", last ? 0 : wi, c);
			else
				fprintf(out, "%*s", wi, c);
			fputs(last ? "\n" : "  ", out);
		}
	}
}

void st_tab_free(struct st_tab *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
