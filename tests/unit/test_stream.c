/* SPDX-License-Identifier: MIT */
/*
 * decode/'s core (stream.c, timing.c) on bare packet buffers: ptenc
 * writes the packets of a walk through a few instructions of code the
 * test holds, the core reads that code and hands its events through its
 * callbacks, with no capture file, image cache or thread pool behind it.
 */
#include "decode/strm.h"
#include "ptenc/ptenc.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The code: main calls f, f jumps (a tail call) to g, g returns to main,
 * whose loop goes round on a conditional branch or leaves through an
 * indirect jump to g.  A system call and an address no code is at are
 * for the tests that stop tracing or fail.
 */
#define MAIN	 0x1000 /* call f */
#define MAIN_RET 0x1005 /* jz MAIN_OUT */
#define MAIN_JMP 0x1007 /* jmp MAIN */
#define MAIN_OUT 0x1009 /* jmp *%rax */
#define MAIN_SYS 0x100b /* syscall */
#define MAIN_END 0x100d /* jmp MAIN */
#define F	 0x2000 /* jmp G */
#define G	 0x3000 /* ret */
#define NOWHERE	 0x9000 /* no code */

static const struct {
	uint64_t at;
	uint8_t n, b[5];
} code[] = {
	{MAIN, 5, {0xe8, 0xfb, 0x0f, 0x00, 0x00}}, /* call F */
	{MAIN_RET, 2, {0x74, 0x02}},		   /* jz MAIN_OUT */
	{MAIN_JMP, 2, {0xeb, 0xf7}},		   /* jmp MAIN */
	{MAIN_OUT, 2, {0xff, 0xe0}},		   /* jmp *%rax */
	{MAIN_SYS, 2, {0x0f, 0x05}},		   /* syscall */
	{MAIN_END, 2, {0xeb, 0xf1}},		   /* jmp MAIN */
	{F, 5, {0xe9, 0xfb, 0x0f, 0x00, 0x00}},	   /* jmp G */
	{G, 1, {0xc3}},				   /* ret */
};

/* Functions: [lo, hi). */
static const uint64_t funcs[][2] = {
	{MAIN, MAIN + 0x100}, {F, F + 0x100}, {G, G + 0x100}};

#define MAX_EV 64

struct ev {
	uint64_t t, ip, aux;
	enum dec_kind k;
	bool counted, own;
};

/* One stream's decode, and what came out of it. */
struct rig {
	struct dec_capture *c;
	struct dec_thread th;
	struct strm *s;
	struct ptenc *g;
	struct ev ev[MAX_EV];
	size_t n;
	size_t nr_no_code;
	uint64_t no_code_at;
	unsigned ticks, stop_at_tick; /* 0: never stop */
};

static size_t code_at(uint64_t ip, uint8_t *b, size_t n)
{
	size_t got = 0;

	/* The instructions lie one after the other in each function. */
	while (got < n) {
		size_t i, off = 0;

		for (i = 0; i < sizeof(code) / sizeof(code[0]); i++)
			if (ip >= code[i].at && ip < code[i].at + code[i].n) {
				off = (size_t)(ip - code[i].at);
				break;
			}
		if (i == sizeof(code) / sizeof(code[0]))
			break;
		for (; off < code[i].n && got < n; off++, ip++)
			b[got++] = code[i].b[off];
	}
	return got;
}

static int image_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx)
{
	size_t n = code_at(ip, buffer, size);

	(void)asid;
	(void)ctx;
	return n ? (int)n : -pte_nomap;
}

static size_t rig_read_code(void *ctx, int isid, uint64_t ip, uint8_t *b,
			    size_t n)
{
	(void)ctx;
	(void)isid;
	return code_at(ip, b, n);
}

static void rig_range(void *ctx, uint32_t pid, uint64_t ip, uint64_t *lo,
		      uint64_t *hi, struct img_inl_span *inl)
{
	(void)ctx;
	(void)pid;
	memset(inl, 0, sizeof(*inl));
	*lo = 1;
	*hi = 0;
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (ip >= funcs[i][0] && ip < funcs[i][1]) {
			*lo = funcs[i][0];
			*hi = funcs[i][1];
		}
}

static void rig_no_code(void *ctx, uint32_t pid, uint64_t ip)
{
	struct rig *r = ctx;

	(void)pid;
	r->nr_no_code++;
	r->no_code_at = ip;
}

static struct dec_thread *rig_thread(void *ctx, uint32_t pid, uint32_t tid)
{
	struct rig *r = ctx;

	(void)pid;
	(void)tid;
	return &r->th;
}

static int rig_deliver(void *ctx, struct dec_thread *th, bool counted, bool own,
		       uint64_t t, enum dec_kind k, uint64_t ip, uint64_t aux)
{
	struct rig *r = ctx;

	if (th != &r->th || r->n == MAX_EV)
		return -ENOSPC;
	r->ev[r->n++] = (struct ev){t, ip, aux, k, counted, own};
	return 0;
}

static bool rig_tick(void *ctx, struct strm *s)
{
	struct rig *r = ctx;

	(void)s;
	return ++r->ticks == r->stop_at_tick;
}

/* A stream of pid 1's thread 1, its packets timed as timing says, TSC
 * ticks taken for perf ns (the capture has no conversion). */
static bool rig_open(struct rig *r, enum ptenc_timing timing)
{
	const struct ptenc_cfg cfg = {.timing = timing,
				      .psb_period = 0,
				      .mtc_period = 3,
				      .tsc_ctc_ratio = 100,
				      .cbr = 24,
				      .tnt_max = 6};
	const struct strm_io io = {.ctx = r,
				   .read_code = rig_read_code,
				   .range = rig_range,
				   .no_code = rig_no_code,
				   .thread = rig_thread};
	const struct strm_out out = {
		.ctx = r, .deliver = rig_deliver, .tick = rig_tick};

	memset(r, 0, sizeof(*r));
	r->th = (struct dec_thread){.pid = 1, .tid = 1, .comm = ""};
	r->c = calloc(1, sizeof(*r->c));
	r->s = calloc(1, sizeof(*r->s));
	r->g = ptenc_new(&cfg, 1);
	if (!r->c || !r->s || !r->g)
		return false;
	/* What the capture's intel_pt event and CPUID leaf 0x15 say. */
	r->c->pt.tsc_bit = 1ull << 10;
	r->c->pt.mtc_bit = 1ull << 9;
	r->c->pt.cyc_bit = 1ull << 1;
	r->c->pt_config = r->c->pt.tsc_bit;
	if (timing != PTENC_TSC)
		r->c->pt_config |= r->c->pt.mtc_bit;
	if (timing == PTENC_CYC)
		r->c->pt_config |= r->c->pt.cyc_bit;
	r->c->pt.tsc_ctc_n = 200;
	r->c->pt.tsc_ctc_d = 2;
	r->c->pt.max_nonturbo_ratio = 24;
	r->c->mtc_freq = 3;
	strm_init(r->s, r->c, &io, &out, 0, &r->th, 1);
	return true;
}

/* Decode what ptenc wrote: strm_decode()'s return. */
static int rig_decode(struct rig *r)
{
	struct pt_image *image = pt_image_alloc(NULL);
	const uint8_t *buf;
	size_t len;
	int rc;

	if (!image || pt_image_set_callback(image, image_read, r) < 0) {
		pt_image_free(image);
		return -ENOMEM;
	}
	buf = ptenc_data(r->g, &len);
	rc = strm_decode(r->s, buf, len, STRM_FROM_START, image);
	pt_image_free(image);
	return rc;
}

static void rig_close(struct rig *r)
{
	strm_free(r->s);
	free(r->c);
	ptenc_free(r->g);
}

/* The events of kind k, at most max of them into out: how many. */
static size_t of_kind(const struct rig *r, enum dec_kind k, struct ev *out,
		      size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].k == k) {
			if (n < max)
				out[n] = r->ev[i];
			n++;
		}
	return n;
}

/* Times never go back, and every event is the thread's own. */
static bool in_order(const struct rig *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (!r->ev[i].counted || !r->ev[i].own ||
		    (i && r->ev[i].t < r->ev[i - 1].t))
			return false;
	return true;
}

/* One round of main's loop from MAIN: call f, on to g, back. */
static bool one_round(struct rig *r, uint64_t t, bool leave)
{
	ptenc_call(r->g, MAIN_RET);
	return !ptenc_ret(r->g, t, MAIN_RET) && !ptenc_cond(r->g, t, leave);
}

/*
 * Calls, returns and jumps with their addresses: a call names its target
 * and where it returns to, the tail jump out of f its source, a return
 * where it went; a jump inside main is no event; the indirect jump out
 * of main is one of its own kind, and the trace's end ends the stream.
 */
static void test_calls_and_returns(struct check_state *cs)
{
	struct rig r;
	struct ev ev[4];
	bool ok = rig_open(&r, PTENC_TSC);

	ok = ok && !ptenc_start(r.g, 1000, MAIN, true) &&
	     one_round(&r, 1000, false) && one_round(&r, 1000, true) &&
	     !ptenc_indirect(r.g, 1000, G) && !ptenc_finish(r.g, 1000);
	CHECK(cs, ok && !rig_decode(&r));
	CHECKF(cs, r.n == 9, "%zu events", r.n);
	CHECK(cs, r.n && r.ev[0].k == DEC_SYNC && r.ev[0].ip == MAIN);
	CHECK(cs, of_kind(&r, DEC_CALL, ev, 4) == 2 && ev[0].ip == F &&
			  ev[0].aux == MAIN_RET && ev[1].ip == F &&
			  ev[1].aux == MAIN_RET);
	CHECK(cs, of_kind(&r, DEC_JUMP, ev, 4) == 2 && ev[0].ip == G &&
			  ev[0].aux == F && ev[1].ip == G);
	CHECK(cs, of_kind(&r, DEC_RET, ev, 4) == 2 && ev[0].ip == MAIN_RET &&
			  ev[1].ip == MAIN_RET);
	CHECK(cs, of_kind(&r, DEC_IJUMP, ev, 4) == 1 && ev[0].ip == G &&
			  ev[0].aux == MAIN_OUT);
	CHECK(cs, r.n == 9 && r.ev[8].k == DEC_END && r.ev[8].ip == MAIN_OUT);
	CHECK(cs, in_order(&r) && r.ev[0].t == 1000 && r.s->n_errors == 0);
	rig_close(&r);
}

/* A PSB+ at MAIN at time t: main's loop goes round there. */
static bool psb_at_main(struct rig *r, uint64_t t)
{
	ptenc_force_psb(r->g);
	return ptenc_maybe_psb(r->g, t, MAIN) == 1;
}

/*
 * TSC alone: a PSB+ every round; the calls, jumps and returns between
 * two wait for the second and are spread by the instructions between.
 */
static void test_times_tsc(struct check_state *cs)
{
	static const uint64_t want[] = {1000, 1200, 1400, 1600, 2200, 2400,
					2600, 3000, 3000, 3000, 3000, 3000};
	struct rig r;
	bool ok = rig_open(&r, PTENC_TSC);

	ok = ok && !ptenc_start(r.g, 1000, MAIN, true) &&
	     one_round(&r, 1500, false) && psb_at_main(&r, 2000) &&
	     one_round(&r, 2500, false) && psb_at_main(&r, 3000) &&
	     one_round(&r, 3500, true) && !ptenc_indirect(r.g, 3600, G) &&
	     !ptenc_finish(r.g, 3600);
	CHECK(cs, ok && !rig_decode(&r));
	CHECKF(cs, r.n == sizeof(want) / sizeof(want[0]), "%zu events", r.n);
	for (size_t i = 0; i < r.n && i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(cs, r.ev[i].t == want[i], "event %zu at %llu, not %llu",
		       i, (unsigned long long)r.ev[i].t,
		       (unsigned long long)want[i]);
	CHECK(cs, in_order(&r));
	rig_close(&r);
}

/* Three rounds whose returns retire at 3000, 6000 and 9000, then the
 * jump out at 9500. */
static bool three_rounds(struct rig *r)
{
	return !ptenc_start(r->g, 1000, MAIN, true) &&
	       one_round(r, 3000, false) && one_round(r, 6000, false) &&
	       one_round(r, 9000, true) && !ptenc_indirect(r->g, 9500, G) &&
	       !ptenc_finish(r->g, 9500);
}

/* The times of the returns, at most 3: how many there are. */
static size_t ret_times(const struct rig *r, uint64_t t[3])
{
	struct ev ev[3];
	size_t n = of_kind(r, DEC_RET, ev, 3);

	for (size_t i = 0; i < n && i < 3; i++)
		t[i] = ev[i].t;
	return n;
}

/* MTC: a return is timed by the last MTC before it (one every 8 CTC
 * periods of 100 TSC ticks: 800 ticks). */
static void test_times_mtc(struct check_state *cs)
{
	struct rig r;
	uint64_t t[3];
	bool ok = rig_open(&r, PTENC_MTC);

	CHECK(cs, ok && three_rounds(&r) && !rig_decode(&r));
	CHECK(cs, ret_times(&r, t) == 3 && t[0] == 2400 && t[1] == 5600 &&
			  t[2] == 8800);
	CHECK(cs, in_order(&r) && r.n && r.ev[0].t == 1000);
	rig_close(&r);
}

/* CYC: each return at the very tick it retired, the call and the jump
 * before it between that and the one before. */
static void test_times_cyc(struct check_state *cs)
{
	struct rig r;
	uint64_t t[3];
	struct ev call[3];
	bool ok = rig_open(&r, PTENC_CYC);

	CHECK(cs, ok && three_rounds(&r) && !rig_decode(&r));
	CHECK(cs, ret_times(&r, t) == 3 && t[0] == 3000 && t[1] == 6000 &&
			  t[2] == 9000);
	CHECK(cs, of_kind(&r, DEC_CALL, call, 3) == 3 && call[1].t > 3000 &&
			  call[1].t < 6000 && call[2].t > 6000 &&
			  call[2].t < 9000);
	CHECK(cs, of_kind(&r, DEC_IJUMP, call, 1) == 1 && call[0].t == 9500);
	CHECK(cs, in_order(&r));
	rig_close(&r);
}

/*
 * An overflow between two rounds: one event where tracing resumed, at
 * the time it did, with the last time the trace accounts for before it;
 * the round after goes on from there.
 */
static void test_overflow(struct check_state *cs)
{
	struct rig r;
	struct ev ev[3];
	bool ok = rig_open(&r, PTENC_CYC);

	ok = ok && !ptenc_start(r.g, 1000, MAIN, true) &&
	     one_round(&r, 3000, false) && !ptenc_overflow(r.g, 6000, MAIN) &&
	     one_round(&r, 9000, true) && !ptenc_indirect(r.g, 9500, G) &&
	     !ptenc_finish(r.g, 9500);
	CHECK(cs, ok && !rig_decode(&r));
	CHECK(cs, of_kind(&r, DEC_OVERFLOW, ev, 1) == 1 && ev[0].ip == MAIN &&
			  ev[0].t == 6000 && ev[0].aux == 3000);
	CHECK(cs, of_kind(&r, DEC_CALL, ev, 3) == 2 && ev[1].t > 6000 &&
			  ev[1].ip == F);
	CHECK(cs, r.s->n_overflows == 1 && in_order(&r));
	rig_close(&r);
}

/*
 * A jump to where there is no code: the stream's decode fails there
 * (DEC_ERROR with libipt's code, the address told as code missing) and
 * picks up at the next PSB+, with a sync.
 */
static void test_decode_error(struct check_state *cs)
{
	struct rig r;
	struct ev ev[2];
	bool ok = rig_open(&r, PTENC_TSC);

	ok = ok && !ptenc_start(r.g, 1000, MAIN, true) &&
	     one_round(&r, 1000, true) && !ptenc_indirect(r.g, 1000, NOWHERE) &&
	     psb_at_main(&r, 2000) && one_round(&r, 2000, true) &&
	     !ptenc_indirect(r.g, 2000, G) && !ptenc_finish(r.g, 2000);
	CHECK(cs, ok && !rig_decode(&r));
	CHECK(cs, of_kind(&r, DEC_ERROR, ev, 1) == 1 && ev[0].ip == NOWHERE &&
			  ev[0].aux == (uint64_t)pte_nomap && ev[0].t == 1000);
	CHECK(cs, r.nr_no_code == 1 && r.no_code_at == NOWHERE &&
			  r.s->n_errors == 1);
	CHECK(cs, of_kind(&r, DEC_SYNC, ev, 2) == 2 && ev[1].ip == MAIN &&
			  ev[1].t == 2000);
	CHECK(cs, of_kind(&r, DEC_CALL, ev, 2) == 2 && ev[1].t == 2000);
	CHECK(cs, r.n && r.ev[r.n - 1].k == DEC_END && in_order(&r));
	rig_close(&r);
}

/*
 * Tracing stops at an interrupt in g and resumes there, then stops at a
 * system call and resumes after it: a stop and a resume each, with their
 * addresses and times, and the return after the interrupt still g's.
 */
static void test_stop_resume(struct check_state *cs)
{
	static const struct {
		enum dec_kind k;
		uint64_t ip, t;
	} want[] = {
		{DEC_SYNC, MAIN, 1000},	       {DEC_CALL, F, 1100},
		{DEC_JUMP, G, 1200},	       {DEC_STOP, G, 1200},
		{DEC_RESUME, G, 1500},	       {DEC_RET, MAIN_RET, 1600},
		{DEC_SYSCALL, MAIN_SYS, 1800}, {DEC_RESUME, MAIN_END, 2000},
	};
	struct rig r;
	bool ok = rig_open(&r, PTENC_CYC);

	ptenc_call(r.g, MAIN_RET);
	ok = ok && !ptenc_start(r.g, 1000, MAIN, true) &&
	     !ptenc_async_pgd(r.g, 1200, G) && !ptenc_pge(r.g, 1500, G) &&
	     !ptenc_ret(r.g, 1600, MAIN_RET) && !ptenc_cond(r.g, 1700, true) &&
	     !ptenc_indirect(r.g, 1700, MAIN_SYS) &&
	     !ptenc_syscall(r.g, 1800, 2000, MAIN_END) &&
	     one_round(&r, 2500, true) && !ptenc_indirect(r.g, 2600, G) &&
	     !ptenc_finish(r.g, 2600);
	CHECK(cs, ok && !rig_decode(&r));
	CHECKF(cs, r.n > sizeof(want) / sizeof(want[0]), "%zu events", r.n);
	for (size_t i = 0; i < r.n && i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(cs,
		       r.ev[i].k == want[i].k && r.ev[i].ip == want[i].ip &&
			       r.ev[i].t == want[i].t,
		       "event %zu: %d at %#llx, %llu", i, r.ev[i].k,
		       (unsigned long long)r.ev[i].ip,
		       (unsigned long long)r.ev[i].t);
	CHECK(cs, in_order(&r));
	rig_close(&r);
}

/*
 * The caller stops the decode at a time point (out.tick, as a parallel
 * run does where the next piece's run goes on): strm_decode() returns 0
 * with the events up to there, and the stream not at its end.
 */
static void test_stop_at_tick(struct check_state *cs)
{
	struct rig r, all;
	bool ok = rig_open(&r, PTENC_MTC);

	ok = rig_open(&all, PTENC_MTC) && ok;

	r.stop_at_tick = 2;
	CHECK(cs, ok && three_rounds(&r) && three_rounds(&all));
	CHECK(cs, ok && !rig_decode(&r) && !rig_decode(&all));
	CHECK(cs, r.ticks == 2 && !r.s->at_end && all.s->at_end);
	CHECKF(cs, r.n > 1 && r.n < all.n, "%zu events of %zu", r.n, all.n);
	CHECK(cs, !memcmp(r.ev, all.ev, r.n * sizeof(r.ev[0])));
	rig_close(&r);
	rig_close(&all);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_calls_and_returns);
	RUN(&st, test_times_tsc);
	RUN(&st, test_times_mtc);
	RUN(&st, test_times_cyc);
	RUN(&st, test_overflow);
	RUN(&st, test_decode_error);
	RUN(&st, test_stop_resume);
	RUN(&st, test_stop_at_tick);
	return CHECK_DONE(&st);
}
