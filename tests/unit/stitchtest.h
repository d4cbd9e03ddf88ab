/* SPDX-License-Identifier: MIT */
/*
 * What the stitching tests share (stitchtest.c): a fake symbolizer where
 * function k lives at [k * 0x1000, (k + 1) * 0x1000) and is named "fk",
 * event scripts, and running one through the segment builder and stitching.
 */
#ifndef MT_STITCHTEST_H
#define MT_STITCHTEST_H

#include "segments/segments.h"
#include "stitch/stitch.h"
#include "symbols/symbols.h"
#include "tests/unit/check.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FN(k)	   ((uint64_t)(k)*0x1000)
#define AT(k, off) (FN(k) + (off))

/* f12 inlined g at [0x100, 0x200). */
extern const struct sym_inline inl_g;

struct ev {
	enum dec_kind kind;
	uint64_t ip, aux;
};

/* The scripts' symbolizer: fk as above, f12 with g inlined in it. */
void fake_sym(void *ctx, uint64_t ip, struct img_sym *out);

/* Children of one parent (or roots) one after another, never at once:
 * a trace viewer would cut one short to nest them. */
void check_no_overlap(struct check_state *st, const struct mt_thread *th);

/* Build one thread from events, stitch it as so says, and render the
 * tree as "depth:name:flags": j joined, e inferred end, d depth guessed;
 * "gap" for gaps. */
void run_with(struct check_state *st, const struct ev *e, size_t n,
	      const struct stitch_opts *so, const char *want,
	      const char *reason);

/* The same, with no code to read, joining unless record_only. */
void run(struct check_state *st, const struct ev *e, size_t n, bool record_only,
	 const char *want, const char *reason);

/* A's stack f1 > f2 > ... : the sync in f1, each frame called from 0x15
 * of its caller. */
/* clang-format off */
#define CALLS_TO_F2 {DEC_SYNC, AT(1, 0x10), 0}, {DEC_CALL, FN(2), AT(1, 0x15)}
#define CALLS_TO_F3 CALLS_TO_F2, {DEC_CALL, FN(3), AT(2, 0x15)}
#define CALLS_TO_F4 CALLS_TO_F3, {DEC_CALL, FN(4), AT(3, 0x15)}
#define CALLS_TO_F5 CALLS_TO_F4, {DEC_CALL, FN(5), AT(4, 0x15)}
/* clang-format on */

#define RUN_EV(st, e, ro, want, why)                                           \
	run(st, e, sizeof(e) / sizeof(*(e)), ro, want, why)

#endif
