/* SPDX-License-Identifier: MIT */
/*
 * --time FROM..TO: the trace between two times, the same span on every
 * thread.
 */
#include "regions/rg_internal.h"

#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One side of FROM..TO ([s, e)); returns 0 or -EINVAL. */
static int parse_time(const char *s, const char *e, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	uint64_t whole = 0, frac = 0, scale = 1, mult = 1;
	const char *p = s;
	size_t ul;

	if (p == e || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (p < e && *p == '.') {
		for (p++; p < e && *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
		if (scale == 1)
			return -EINVAL;
	}
	ul = (size_t)(e - p);
	if (ul) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(*units); i++)
			if (strlen(units[i].unit) == ul &&
			    !memcmp(p, units[i].unit, ul))
				break;
		if (i == sizeof(units) / sizeof(*units))
			return -EINVAL;
		mult = units[i].ns;
	} else if (scale != 1) {
		return -EINVAL; /* a fraction of a ns */
	}
	if (whole > UINT64_MAX / mult)
		return -EINVAL;
	*out = whole * mult + frac * mult / scale;
	return 0;
}

int rg_parse_window(const char *s, struct rg_window *w, char *err,
		    size_t errlen)
{
	const char *dots = strstr(s, "..");
	const char *end = s + strlen(s);

	w->from = 0;
	w->to = UINT64_MAX;
	if (!dots || (dots == s && dots + 2 == end))
		goto bad;
	if (dots > s && parse_time(s, dots, &w->from))
		goto bad;
	if (dots + 2 < end && parse_time(dots + 2, end, &w->to))
		goto bad;
	if (w->from > w->to)
		goto bad;
	return 0;
bad:
	return mt_err(err, errlen, -EINVAL,
		      "--time %s: not a window FROM..TO (ns from the trace's "
		      "start, or with a unit: 2ms..3.5ms, ..500us, 1s..)",
		      s);
}

int rg_keep_time(struct mt_trace *t, const struct rg_window *w,
		 struct rg_stats *st, char *err, size_t errlen)
{
	uint64_t first, last;
	struct rg_span sp, **spans;
	size_t *nr;
	int rc = -ENOMEM;

	memset(st, 0, sizeof(*st));
	rg_trace_span(t, &first, &last, &st->slices_before);
	if (!st->slices_before)
		return 0;
	sp.lo = w->from > last - first ? last : first + w->from;
	sp.hi = w->to > last - first ? last : first + w->to;
	spans = calloc(t->nr_threads, sizeof(*spans));
	nr = calloc(t->nr_threads, sizeof(*nr));
	if (!spans || !nr)
		goto out;
	/* A window that starts after the trace keeps nothing. */
	for (size_t i = 0; i < t->nr_threads; i++) {
		spans[i] = &sp;
		nr[i] = w->from <= last - first;
	}
	rc = rg_keep_spans(t, spans, nr, st);
	if (rc)
		goto out;
	st->first = first;
	st->start = sp.lo;
	st->end = sp.hi;
	st->regions = w->from <= last - first;
	st->kept_ns = sp.hi - sp.lo;
out:
	free(spans);
	free(nr);
	return rc ? mt_err(err, errlen, rc,
			   "out of memory keeping the window of time")
		  : 0;
}
