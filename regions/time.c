/*
 * --time FROM..TO: the trace between two times.  Slices are in pre-order
 * per thread, and a slice lies inside its parent, so a slice that
 * overlaps the window has a parent that does too: the kept slices are
 * compacted in place, in order, and each parent index is mapped to its
 * new place.
 */
#include "regions/regions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One side of FROM..TO ([s, e)); returns 0 or -1. */
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
		return -1;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -1;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (p < e && *p == '.') {
		for (p++; p < e && *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
		if (scale == 1)
			return -1;
	}
	ul = (size_t)(e - p);
	if (ul) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(*units); i++)
			if (strlen(units[i].unit) == ul &&
			    !memcmp(p, units[i].unit, ul))
				break;
		if (i == sizeof(units) / sizeof(*units))
			return -1;
		mult = units[i].ns;
	} else if (scale != 1) {
		return -1; /* a fraction of a ns */
	}
	if (whole > UINT64_MAX / mult)
		return -1;
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
	snprintf(err, errlen,
		 "--time %s: not a window FROM..TO (ns from the trace's start, "
		 "or with a unit: 2ms..3.5ms, ..500us, 1s..)",
		 s);
	return -EINVAL;
}

/* The slices of th that overlap [lo, hi], clipped; map: scratch of at
 * least nr_slices entries. */
static uint64_t keep_thread(struct mt_thread *th, uint64_t lo, uint64_t hi,
			    uint32_t *map)
{
	size_t n = 0;

	for (size_t i = 0; i < th->nr_slices; i++) {
		struct mt_slice s = th->slices[i];
		uint64_t end = s.ts + s.dur;

		map[i] = MT_NONE;
		/* Touching the window at one instant only is no overlap; a
		 * slice of no length counts inside [lo, hi). */
		if (s.dur ? end <= lo || s.ts >= hi : s.ts < lo || s.ts >= hi)
			continue;
		/* Its parent overlaps more than it does; should a model
		 * say otherwise, the slice goes with its parent. */
		if (s.parent != MT_NONE) {
			if (s.parent >= i || map[s.parent] == MT_NONE)
				continue;
			s.parent = map[s.parent];
		}
		if (s.ts < lo) {
			s.dur -= lo - s.ts;
			s.ts = lo;
			s.flags |= MT_SLICE_INFERRED_START;
		}
		if (end > hi) {
			s.dur = hi - s.ts;
			s.flags |= MT_SLICE_INFERRED_END;
		}
		map[i] = (uint32_t)n;
		th->slices[n++] = s;
	}
	th->nr_slices = n;
	return n;
}

int rg_keep_time(struct mt_trace *t, const struct rg_window *w,
		 struct rg_stats *st)
{
	uint64_t first = UINT64_MAX, last = 0, lo, hi;
	size_t most = 0, nh = 0;
	uint32_t *map;

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		st->slices_before += th->nr_slices;
		if (th->nr_slices > most)
			most = th->nr_slices;
		for (size_t k = 0; k < th->nr_slices; k++) {
			const struct mt_slice *s = &th->slices[k];

			if (s->ts < first)
				first = s->ts;
			if (s->ts + s->dur > last)
				last = s->ts + s->dur;
		}
	}
	if (!st->slices_before)
		return 0;
	map = malloc((most ? most : 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	lo = w->from > last - first ? last : first + w->from;
	hi = w->to > last - first ? last : first + w->to;
	for (size_t i = 0; i < t->nr_threads; i++)
		st->slices_after += keep_thread(&t->threads[i], lo, hi, map);
	free(map);
	for (size_t i = 0; i < t->nr_hits; i++)
		if (t->hits[i].ts >= lo && t->hits[i].ts <= hi)
			t->hits[nh++] = t->hits[i];
	t->nr_hits = nh;
	st->first = first;
	st->start = lo;
	st->end = hi;
	return 0;
}
