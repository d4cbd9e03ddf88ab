/* SPDX-License-Identifier: MIT */
/* stats/ inside: the tables show.c prints (not part of the interface). */
#ifndef MT_STATS_SHOW_H
#define MT_STATS_SHOW_H

#include "stats/stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ns as "812 ns", "12.3 us", "4.56 ms", "1.20 s": three digits; sign
 * adds a "+" to a positive value. */
void st_fmt_dur(char *buf, size_t len, double ns, bool sign);

struct st_tab {
	const char *const *head; /* NULL-terminated */
	const char *left;	 /* per column: 'l' left-aligned, else right */
	size_t ncols, nrows, cap;
	char **cells; /* nrows * ncols, owned */
};

void st_tab_init(struct st_tab *t, const char *const *head, const char *left);
/* A row of ncols strings (copied; NULL is empty).  0 or -ENOMEM. */
int st_tab_row(struct st_tab *t, ...);
void st_tab_print(const struct st_tab *t, FILE *out, bool csv);
void st_tab_free(struct st_tab *t);

#endif
