/* SPDX-License-Identifier: MIT */
/* What the stitching tests share: see stitchtest.h. */
#include "tests/unit/stitchtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* f12 inlined g at [0x100, 0x200). */
const struct sym_inline inl_g = {.name = "g"};

void fake_sym(void *ctx, uint64_t ip, struct img_sym *out)
{
	uint64_t k = ip / 0x1000, off = ip % 0x1000;

	(void)ctx;
	out->fn_inl = k == 12;
	out->inl = k == 12 && off >= 0x100 && off < 0x200 ? &inl_g : NULL;
	out->start = FN(k);
	out->end = FN(k + 1);
	out->dso = "/bin/fake";
	out->known = true;
	snprintf(out->buf, sizeof(out->buf), "f%llu", (unsigned long long)k);
	out->name = out->buf;
}

/* Children of one parent (or roots) one after another, never at once:
 * a trace viewer would cut one short to nest them. */
void check_no_overlap(struct check_state *st, const struct mt_thread *th)
{
	size_t n = th->nr_slices;
	uint32_t *last = malloc((n + 1) * sizeof(*last));

	CHECK(st, last != NULL);
	if (!last)
		return;
	for (size_t i = 0; i <= n; i++)
		last[i] = MT_NONE;
	for (size_t i = 0; i < n; i++) {
		const struct mt_slice *x = &th->slices[i];
		size_t p = x->parent == MT_NONE ? n : x->parent;

		if (last[p] != MT_NONE) {
			const struct mt_slice *y = &th->slices[last[p]];

			CHECKF(st, y->ts + y->dur <= x->ts,
			       "slices %u and %zu overlap under one parent",
			       last[p], i);
		}
		last[p] = (uint32_t)i;
	}
	free(last);
}

/* Build one thread from events, stitch it as so says, and render the
 * tree as "depth:name:flags": j joined, e inferred end, d depth guessed;
 * "gap" for gaps. */
void run_with(struct check_state *st, const struct ev *e, size_t n,
	      const struct stitch_opts *so, const char *want,
	      const char *reason)
{
	struct mt_trace t;
	struct seg_ends_table ends = {0};
	struct seg_builder *b;
	char buf[1024] = "", err[128];
	size_t at = 0;

	mt_trace_init(&t);
	CHECK(st, mt_trace_add_thread(&t, 1, 1, "t") != NULL);
	CHECK(st, !seg_builder_new(&b, &t, 0, &ends, fake_sym, NULL));
	for (size_t i = 0; i < n; i++)
		CHECK(st,
		      !seg_feed(b, 100 + 10 * i, e[i].kind, e[i].ip, e[i].aux));
	CHECK(st, !seg_finish(b, NULL));
	seg_builder_free(b);
	CHECK(st, !stitch_trace(&t, &ends, so, err, sizeof(err)));
	seg_ends_free(&ends);
	for (size_t i = 0; i < t.threads[0].nr_slices; i++) {
		const struct mt_slice *s = &t.threads[0].slices[i];

		at += (size_t)snprintf(
			buf + at, sizeof(buf) - at, "%s%u:%s%s%s%s",
			i ? " " : "", s->depth,
			(s->flags & MT_SLICE_GAP) ? "gap" : mt_slice_str(&t, s),
			(s->flags & MT_SLICE_JOINED) ? ":j" : "",
			(s->flags & MT_SLICE_INFERRED_END) ? ":e" : "",
			(s->flags & MT_SLICE_DEPTH_GUESSED) ? ":d" : "");
		if (s->parent != MT_NONE) {
			const struct mt_slice *p =
				&t.threads[0].slices[s->parent];

			CHECKF(st, s->parent < i && p->depth + 1 == s->depth,
			       "slice %zu: bad parent", i);
			CHECKF(st,
			       p->ts <= s->ts &&
				       s->ts + s->dur <= p->ts + p->dur,
			       "slice %zu outside its parent", i);
		} else {
			CHECKF(st, s->depth == 0, "slice %zu: root not at 0",
			       i);
		}
	}
	CHECKF(st, !strcmp(buf, want), "\n    got  %s\n    want %s", buf, want);
	check_no_overlap(st, &t.threads[0]);
	{
		size_t gaps = 0;

		for (size_t i = 0; i < n; i++)
			gaps += e[i].kind == DEC_OVERFLOW;
		CHECKF(st, t.nr_stitches == gaps, "%zu decisions, %zu gaps",
		       t.nr_stitches, gaps);
	}
	if (t.nr_stitches) {
		bool found = false;

		/* the reason of any decision */
		for (size_t i = 0; i < t.nr_stitches && !found; i++)
			found = strstr(mt_str(&t.strs, t.stitches[i].reason),
				       reason) != NULL;
		CHECKF(st, found, "reason: %s",
		       mt_str(&t.strs, t.stitches[t.nr_stitches - 1].reason));
	}
	mt_trace_free(&t);
}

/* The same, with no code to read, joining unless record_only. */
void run(struct check_state *st, const struct ev *e, size_t n, bool record_only,
	 const char *want, const char *reason)
{
	struct stitch_opts so = {.record_only = record_only};

	run_with(st, e, n, &so, want, reason);
}
