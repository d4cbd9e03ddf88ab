/* SPDX-License-Identifier: MIT */
/*
 * The Valgrind backend's reading of the records that come with
 * --mt-calls=no (capture/vg_record.c): a PSB where the tool says, a
 * thread's stack (the newest frame first) replacing what mt-capture had,
 * the answer to its question that ends the stream's reading; and what it
 * refuses: a PSB where no thread is traced, a stack of more frames than
 * the tool sends, these records where mt-capture keeps the calls itself.
 */
#include "capture/vg_internal.h"
#include "tests/unit/check.h"
#include "tests/unit/ptpkts.h"

#include <stdlib.h>
#include <string.h>

#define TID 4242

/* A stream being made: its bytes. */
struct out {
	uint8_t b[65536];
	size_t n;
};

static void put(struct out *o, const void *p, size_t n)
{
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put8(struct out *o, uint8_t v)
{
	put(o, &v, 1);
}

static void put32(struct out *o, uint32_t v)
{
	put(o, &v, 4);
}

static void put64(struct out *o, uint64_t v)
{
	put(o, &v, 8);
}

/* A time or span field: one LEB128 byte, under 128. */
static void leb(struct out *o, uint8_t v)
{
	put8(o, v);
}

/* The thread named, and traced from ip on. */
static void begin(struct out *o, uint64_t ip)
{
	put8(o, R_SWITCH);
	put32(o, TID);
	put8(o, R_BEGIN);
	leb(o, 1);
	put64(o, ip);
}

/* A pack of six branches, the last to ip. */
static void pack(struct out *o, uint64_t ip)
{
	put8(o, R_TNT);
	put64(o, 0x40 | 0x2d);
	leb(o, 2);
	leb(o, 5);
	leb(o, 0);
	put64(o, ip);
}

static void stack(struct out *o, uint32_t n, const uint64_t *ips)
{
	put8(o, R_STACK);
	put32(o, TID);
	put32(o, n);
	for (uint32_t i = 0; i < n; i++)
		put64(o, ips[i]);
}

struct run {
	struct emu_opts opts;
	struct emu_stats st;
	char err[512];
	struct vg v;
	int rc;
};

/* The stream o read as vg_capture.c reads a ring's, the records of the
 * tool of --mt-calls=no (tool_rets) or of the one that sends the calls;
 * r->rc what vg_parse() returned. */
static void run(struct run *r, struct out *o, bool tool_rets)
{
	memset(r, 0, sizeof(*r));
	r->v.e.o = &r->opts;
	r->v.e.st = &r->st;
	r->v.e.err = r->err;
	r->v.e.errlen = sizeof(r->err);
	r->v.e.tool_rets = tool_rets;
	r->v.sock = -1;
	r->v.cur = SIZE_MAX;
	/* (As after the hello, which the socket carries.) */
	r->v.hello = true;
	r->v.spid = TID;
	r->v.e.pid = TID;
	r->v.buf = o->b;
	r->v.len = o->n;
	r->rc = vg_parse(&r->v);
}

static void done(struct run *r)
{
	r->v.buf = NULL;
	emu_free(&r->v.e);
	free(r->v.sys_next);
}

/* The PSBs in a thread's packets. */
static unsigned psbs(struct thr *t)
{
	const uint8_t *data;
	size_t len;

	ptenc_finish(t->enc, 1000);
	data = ptenc_data(t->enc, &len);
	return ptpkts_count(data, len, ppt_psb);
}

static void test_psb_stack_answer(struct check_state *st)
{
	static const uint64_t ips[3] = {0x401234, 0x401100, 0x400800};
	struct out o = {.n = 0};
	struct run r;
	struct thr *t;
	size_t after;

	begin(&o, 0x401000);
	for (int i = 0; i < 40; i++)
		pack(&o, 0x401010);
	/* The encoder of --mt-calls=no writes no PSB of its own: this is
	 * its second, after its first at the start. */
	put8(&o, R_PSB);
	pack(&o, 0x401020);
	stack(&o, 3, ips);
	put8(&o, R_STACKS);
	after = o.n;
	/* Not read: the stacks are where the stream is cut. */
	pack(&o, 0x401030);
	run(&r, &o, true);
	CHECKF(st, r.rc == 0, "vg_parse: %d (%s)", r.rc, r.err);
	CHECKF(st, r.v.used == after, "read %zu bytes of %zu, not %zu",
	       r.v.used, o.n, after);
	CHECK(st, r.v.stacked);
	t = emu_thr_find(&r.v.e, TID);
	CHECK(st, t != NULL);
	if (t) {
		CHECKF(st, t->depth == 3, "depth %zu", t->depth);
		for (size_t i = 0; i < 3 && i < t->depth; i++)
			CHECKF(st, t->shadow[t->depth - 1 - i] == ips[i],
			       "frame %zu: %#llx", i,
			       (unsigned long long)t->shadow[t->depth - 1 - i]);
		CHECKF(st, psbs(t) == 2, "%u PSBs", psbs(t));
	}
	done(&r);
}

static void test_refused(struct check_state *st)
{
	static const struct {
		const char *name, *want;
		bool tool_rets, traced;
		uint8_t type;
		uint32_t frames;
	} cases[] = {
		{"PSB untraced", "has a PSB where its thread is not traced",
		 true, false, R_PSB, 0},
		{"deep stack", "has a stack of 5000 frames (4096 at most)",
		 true, true, R_STACK, 5000},
		{"PSB with calls", "record of unknown type 0x50", false, true,
		 R_PSB, 0},
		{"stack with calls", "record of unknown type 0x6b", false, true,
		 R_STACK, 2},
		{"answer with calls", "record of unknown type 0x4b", false,
		 true, R_STACKS, 0},
	};
	static uint64_t ips[5000];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct out *o = calloc(1, sizeof(*o));
		struct run r;

		if (!o)
			return;
		if (cases[k].traced) {
			begin(o, 0x401000);
			pack(o, 0x401010);
		} else {
			put8(o, R_SWITCH);
			put32(o, TID);
		}
		if (cases[k].type == R_STACK)
			stack(o, cases[k].frames, ips);
		else
			put8(o, cases[k].type);
		/* Room for the reader's longest record after it. */
		for (int i = 0; i < 8; i++)
			pack(o, 0x401020);
		run(&r, o, cases[k].tool_rets);
		CHECKF(st, r.rc < 0 && strstr(r.err, cases[k].want),
		       "%s: %d '%s'", cases[k].name, r.rc, r.err);
		done(&r);
		free(o);
	}
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_psb_stack_answer);
	RUN(&st, test_refused);
	return CHECK_DONE(&st);
}
