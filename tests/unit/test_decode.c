/* SPDX-License-Identifier: MIT */
/*
 * decode/: finding a PSB in a buffer (dec_find_psb), where a parallel
 * decode cuts a buffer and where decoding picks up after an error; the
 * TIP right before an overflow (dec_tip_before_overflow); the pace a
 * transfer before a point that is no tick is held to (timing.c).
 */
#include "decode/decode.h"
#include "decode/strm.h"
#include "image/image.h"
#include "ptenc/ptenc.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void put_psb(uint8_t *b)
{
	for (int i = 0; i < 16; i += 2) {
		b[i] = 0x02;
		b[i + 1] = 0x82;
	}
}

static void test_find_psb(struct check_state *cs)
{
	uint8_t buf[256];
	uint64_t at = 0;

	memset(buf, 0, sizeof(buf)); /* PAD packets */
	put_psb(buf + 10);
	put_psb(buf + 100);
	CHECK(cs, dec_find_psb(buf, sizeof(buf), 0, &at) && at == 10);
	CHECK(cs, dec_find_psb(buf, sizeof(buf), 10, &at) && at == 10);
	CHECK(cs, dec_find_psb(buf, sizeof(buf), 11, &at) && at == 100);
	CHECK(cs, !dec_find_psb(buf, sizeof(buf), 101, &at));
	CHECK(cs, !dec_find_psb(buf, sizeof(buf), sizeof(buf), &at));
	CHECK(cs, !dec_find_psb(buf, sizeof(buf), UINT64_MAX, &at));
	/* A PSB cut off by the buffer's end is none. */
	CHECK(cs, !dec_find_psb(buf, 110, 11, &at));
}

/* A payload ending in 02 82 right before a PSB: the pattern begins two
 * bytes early, the PSB does not. */
static void test_find_psb_payload_before(struct check_state *cs)
{
	uint8_t buf[64];
	uint64_t at = 0;

	memset(buf, 0, sizeof(buf));
	buf[20] = 0x02;
	buf[21] = 0x82;
	put_psb(buf + 22);
	buf[38] = 0x19; /* TSC, as in a PSB+ */
	CHECK(cs, dec_find_psb(buf, sizeof(buf), 0, &at) && at == 22);
	/* Two such bytes pairs before it. */
	buf[18] = 0x02;
	buf[19] = 0x82;
	CHECK(cs, dec_find_psb(buf, sizeof(buf), 0, &at) && at == 22);
	/* The run reaching the buffer's end: its last 16 bytes. */
	CHECK(cs, dec_find_psb(buf, 38, 0, &at) && at == 22);
	/* Searched backwards: the same PSB, never the payload's bytes,
	 * and none that begins after end. */
	at = 0;
	CHECK(cs, dec_find_psb_before(buf, sizeof(buf), 63, &at) && at == 22);
	CHECK(cs, dec_find_psb_before(buf, sizeof(buf), 22, &at) && at == 22);
	CHECK(cs, !dec_find_psb_before(buf, sizeof(buf), 21, &at));
	CHECK(cs, !dec_find_psb_before(buf, 8, 8, &at));
}

static struct ptenc *tip_trace(void)
{
	static const struct ptenc_cfg cfg = {.timing = PTENC_MTC,
					     .psb_period = 1, /* 4 KiB */
					     .mtc_period = 3,
					     .tsc_ctc_ratio = 2,
					     .cbr = 20,
					     .tnt_max = 6};
	struct ptenc *g = ptenc_new(&cfg, 1);

	if (g && ptenc_start(g, 1000, 0x401000, true))
		return NULL;
	return g;
}

/*
 * The destination of an indirect branch right before an OVF: the last
 * TIP's address, rebuilt from its compressed form, whatever timing
 * packets lie between; none when a TNT, another IP packet or a PSB came
 * after it, and never an earlier overflow's.
 */
static void test_tip_before_overflow(struct check_state *cs)
{
	struct ptenc *g = tip_trace();
	const uint8_t *b;
	size_t len, first;
	uint64_t ip = 0;

	CHECK(cs, g != NULL);
	if (!g)
		return;
	/* update_16, then update_48. */
	CHECK(cs, !ptenc_indirect(g, 1100, 0x401234));
	CHECK(cs, !ptenc_indirect(g, 1200, 0x7f0000401c50));
	CHECK(cs, !ptenc_overflow(g, 5000, 0x401b5c));
	b = ptenc_data(g, &len);
	first = len;
	CHECK(cs, dec_tip_before_overflow(b, len, len, &ip) &&
			  ip == 0x7f0000401c50);
	/* libipt may stand at the OVF itself. */
	ip = 0;
	CHECK(cs, dec_tip_before_overflow(b, len, len - 9, &ip) &&
			  ip == 0x7f0000401c50);
	/* A conditional branch after the TIP: its TNT comes last. */
	CHECK(cs, !ptenc_indirect(g, 5100, 0x401300));
	CHECK(cs, !ptenc_cond(g, 5200, true));
	CHECK(cs, !ptenc_overflow(g, 9000, 0x401400));
	b = ptenc_data(g, &len);
	ip = 0;
	CHECK(cs, !dec_tip_before_overflow(b, len, len, &ip) && ip == 0);
	/* The first overflow is still found where it was. */
	CHECK(cs, dec_tip_before_overflow(b, len, first, &ip) &&
			  ip == 0x7f0000401c50);
	/* A PSB+ between the TIP and the OVF: its FUP came last. */
	CHECK(cs, !ptenc_indirect(g, 9100, 0x401500));
	ptenc_force_psb(g);
	CHECK(cs, ptenc_maybe_psb(g, 9200, 0x401500) == 1);
	CHECK(cs, !ptenc_overflow(g, 9900, 0x401600));
	b = ptenc_data(g, &len);
	ip = 0;
	CHECK(cs, !dec_tip_before_overflow(b, len, len, &ip) && ip == 0);
	/* No PSB before: nothing to start from. */
	CHECK(cs, !dec_tip_before_overflow(b, 8, 8, &ip));
	CHECK(cs, !dec_tip_before_overflow(b, 0, 0, &ip));
	ptenc_free(g);
}

/* The walk over code at 0x1000 without landing pads. */
static bool never(const uint8_t *b, size_t n, uint64_t from, uint64_t to,
		  bool ret_to, bool (*twice)(void *ctx, uint64_t target))
{
	struct img_code c = {.bytes = b, .n = n, .lo = 0x1000, .twice = twice};

	return img_code_never_reaches(&c, from, to, ret_to);
}

/* A direct call's target at 0x4000 returns twice (a setjmp). */
static bool twice_at_4000(void *ctx, uint64_t target)
{
	(void)ctx;
	return target == 0x4000;
}

/* handle(): call parse; mov %eax,%edi; call respond; ret (at 0x1000) */
static const uint8_t straight[] = {
	0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
	0x89, 0xc7,		      /* 1005 mov */
	0xe8, 0xf4, 0x1f, 0x00, 0x00, /* 1007 call 3000 */
	0xc3,			      /* 100c ret */
};
/* the same in a loop: jne back to the first call */
static const uint8_t loop[] = {
	0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
	0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
	0x75, 0xf4,		      /* 100a jne 1000 */
	0xc3,			      /* 100c ret */
};

/*
 * The walk of a function's code from one call site's return address:
 * whether another call site can be reached in the same activation.
 * Hand-assembled, at 0x1000.
 */
static void test_never_reaches(struct check_state *cs)
{
	/* after the second call, a jump through a register */
	static const uint8_t indirect[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
		0xff, 0xe0,		      /* 100a jmp *%rax */
	};
	/* after the second call, a jump out of the function (a tail call,
	 * a cold part) and a conditional one: either way, the slice of this
	 * activation ends there, as segments/ builds them */
	static const uint8_t out[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
		0x74, 0x01,		      /* 100a je 100d */
		0xc3,			      /* 100c ret */
		0xe9, 0xee, 0x4f, 0x00, 0x00, /* 100d jmp 6000 */
	};
	/* a setjmp before both calls: a longjmp comes back after it */
	static const uint8_t sj[] = {
		0xe8, 0xfb, 0x2f, 0x00, 0x00, /* 1000 call 4000 */
		0xe8, 0xf6, 0x0f, 0x00, 0x00, /* 1005 call 2000 */
		0xe8, 0xf1, 0x1f, 0x00, 0x00, /* 100a call 3000 */
		0xc3,			      /* 100f ret */
	};
	/* the same, the setjmp called through a GOT slot (-fno-plt) */
	static const uint8_t sj_got[] = {
		0xff, 0x15, 0x00, 0x10, 0x00,
		0x00,			      /* 1000 call *0x1000(%rip) */
		0xe8, 0xf5, 0x0f, 0x00, 0x00, /* 1006 call 2000 */
		0xe8, 0xf0, 0x1f, 0x00, 0x00, /* 100b call 3000 */
		0xc3,			      /* 1010 ret */
	};
	/* a conditional branch over the second call, both ways followed */
	static const uint8_t cond[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0x74, 0x05,		      /* 1005 je 100c */
		0xe8, 0xf4, 0x1f, 0x00, 0x00, /* 1007 call 3000 */
		0xc3,			      /* 100c ret */
	};

	CHECK(cs,
	      never(straight, sizeof(straight), 0x100c, 0x1005, true, NULL));
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x1005, 0x100c, true, NULL));
	CHECK(cs, !never(loop, sizeof(loop), 0x100a, 0x1005, true, NULL));
	CHECK(cs,
	      !never(indirect, sizeof(indirect), 0x100a, 0x1005, true, NULL));
	CHECK(cs, never(out, sizeof(out), 0x100a, 0x1005, true, NULL));
	CHECK(cs, !never(out, sizeof(out), 0x1005, 0x100a, true, NULL));
	CHECK(cs, never(sj, sizeof(sj), 0x100f, 0x100a, true, NULL));
	CHECK(cs, !never(sj, sizeof(sj), 0x100f, 0x100a, true, twice_at_4000));
	CHECK(cs, !never(sj_got, sizeof(sj_got), 0x1010, 0x100b, true,
			 twice_at_4000));
	CHECK(cs, never(sj_got, sizeof(sj_got), 0x1010, 0x100b, true, NULL));
	CHECK(cs, !never(cond, sizeof(cond), 0x1005, 0x100c, true, NULL));
	CHECK(cs, never(cond, sizeof(cond), 0x100c, 0x1005, true, NULL));
	/* A's leaf, back from parse() where B's parse() returned to: it
	 * goes on to respond() and returns, and never calls parse() */
	CHECK(cs,
	      never(straight, sizeof(straight), 0x1005, 0x1005, true, NULL));
	/* where control arrives, not a call's return */
	CHECK(cs,
	      never(straight, sizeof(straight), 0x100c, 0x1005, false, NULL));
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x1005, 0x1007, false, NULL));
	CHECK(cs, !never(loop, sizeof(loop), 0x100a, 0x1000, false, NULL));
	/* no call ends at 1007: a return landing there was a jump */
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x100c, 0x1007, true, NULL));
	/* The last instruction a call: one that never returns (abort) */
	{
		static const uint8_t noret[] = {
			0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
			0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
			0xe8, 0xf1, 0x2f, 0x00, 0x00, /* 100a call 4000 */
		};

		CHECK(cs,
		      never(noret, sizeof(noret), 0x100a, 0x1005, true, NULL));
	}
	/* An exception out of respond() lands at 100b, which calls parse()
	 * again: only the landing pad leads there. */
	{
		static const uint8_t eh[] = {
			0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
			0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
			0xc3,			      /* 100a ret */
			0xe8, 0xf0, 0x0f, 0x00, 0x00, /* 100b call 2000 */
			0xc3,			      /* 1010 ret */
		};
		static const struct img_lp pad = {0x1005, 0x100a, 0x100b};
		struct img_code c = {
			.bytes = eh, .n = sizeof(eh), .lo = 0x1000};

		CHECK(cs, img_code_never_reaches(&c, 0x100a, 0x1010, true));
		c.lps = &pad;
		c.nr_lps = 1;
		CHECK(cs, !img_code_never_reaches(&c, 0x100a, 0x1010, true));
		CHECK(cs, img_code_never_reaches(&c, 0x100a, 0x1005, true));
		/* a pad out of the code: a cold part, not followed */
		c.lps = &(const struct img_lp){0x1005, 0x100a, 0x5000};
		CHECK(cs, !img_code_never_reaches(&c, 0x100a, 0x1005, true));
	}
	/* from outside the code, or bytes that are no instruction */
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x2000, 0x1005, true, NULL));
	CHECK(cs, !never(straight, 3, 0x1000, 0x1005, true, NULL));
}

/* A direct call's target is another function than callee, by name. */
static bool named_other(void *ctx, uint64_t target, uint64_t callee)
{
	(void)ctx;
	return target != callee;
}

/*
 * The walk for a call to a function: sure where a direct call to it is on
 * a path, never where every call on every path is to another by name,
 * maybe where a call or a jump could go anywhere.  At 0x1000.
 */
static void test_calls_to(struct check_state *cs)
{
	/* a call through a register, then a direct one, or a jump through
	 * one */
	static const uint8_t ptr[] = {
		0xff, 0xd0,		      /* 1000 call *%rax */
		0x74, 0x05,		      /* 1002 je 1009 */
		0xe8, 0xf7, 0x1f, 0x00, 0x00, /* 1004 call 3000 */
		0xff, 0xe0,		      /* 1009 jmp *%rax */
	};
	struct img_code c = {.bytes = straight,
			     .n = sizeof(straight),
			     .lo = 0x1000,
			     .other_fn = named_other};

	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x3000) == IMG_CALLS_SURE);
	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x2000) == IMG_CALLS_NEVER);
	CHECK(cs, img_code_calls_to(&c, 0x100c, 0x3000) == IMG_CALLS_NEVER);
	c.other_fn = NULL; /* no names: any call could be to it */
	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x2000) == IMG_CALLS_MAYBE);
	c.other_fn = named_other;
	c.bytes = loop;
	c.n = sizeof(loop);
	CHECK(cs, img_code_calls_to(&c, 0x100a, 0x2000) == IMG_CALLS_SURE);
	c.bytes = ptr;
	c.n = sizeof(ptr);
	/* past the pointer, a direct call to 3000 on one way: sure */
	CHECK(cs, img_code_calls_to(&c, 0x1002, 0x3000) == IMG_CALLS_SURE);
	/* to another: the pointer and the jump could be to it */
	CHECK(cs, img_code_calls_to(&c, 0x1000, 0x4000) == IMG_CALLS_MAYBE);
	CHECK(cs, img_code_calls_to(&c, 0x1002, 0x4000) == IMG_CALLS_MAYBE);
}

/*
 * ptenc_conds(): a run of branches at once makes the bytes ptenc_cond()
 * makes for each at its time, whether the run lies in one MTC period or
 * crosses several, fills a TNT or not, with PADs, CYCs and 47-bit TNTs.
 */
static void test_conds_as_cond(struct check_state *cs)
{
	static const struct ptenc_cfg cfgs[] = {
		{.timing = PTENC_MTC,
		 .psb_period = 1,
		 .mtc_period = 3,
		 .tsc_ctc_ratio = 2,
		 .cbr = 20,
		 .tnt_max = 6},
		{.timing = PTENC_CYC,
		 .psb_period = 1,
		 .mtc_period = 3,
		 .tsc_ctc_ratio = 2,
		 .cbr = 20,
		 .tnt_max = 6},
		{.timing = PTENC_TSC,
		 .psb_period = 1,
		 .cbr = 20,
		 .tnt_max = 47},
		{.timing = PTENC_MTC,
		 .psb_period = 1,
		 .mtc_period = 9,
		 .tsc_ctc_ratio = 40,
		 .cbr = 10,
		 .tnt_max = 6,
		 .pad_chance = 100},
	};

	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		struct ptenc *a = ptenc_new(&cfgs[c], 7);
		struct ptenc *b = ptenc_new(&cfgs[c], 7);
		uint64_t x = 0x9e3779b97f4a7c15ull, t = 1000;
		const uint8_t *da, *db;
		size_t la, lb;
		bool ok = a && b && !ptenc_start(a, t, 0x401000, true) &&
			  !ptenc_start(b, t, 0x401000, true);

		for (int i = 0; ok && i < 5000; i++) {
			unsigned n;
			uint64_t dt, step;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			n = (unsigned)(x % 65);
			/* Short runs mostly, now and then one that spans
			 * several MTC periods. */
			dt = x >> 40 & 7 ? (x >> 20) % (4 * n + 1)
					 : (x >> 20) % 5000;
			step = n > 1 ? (dt << 16) / (n - 1) : 0;
			ok = !ptenc_conds(a, t, dt, n, x);
			for (unsigned k = 0; ok && k < n; k++)
				ok = !ptenc_cond(b, t + ((k * step) >> 16),
						 x >> k & 1);
			t += dt + (x >> 50) % 3;
			if (ok && !(x >> 56 & 15))
				ok = !ptenc_indirect(a, t,
						     0x402000 + (x & 0xff)) &&
				     !ptenc_indirect(b, t,
						     0x402000 + (x & 0xff));
			if (ok)
				ok = ptenc_maybe_psb(a, t, 0x401000) >= 0 &&
				     ptenc_maybe_psb(b, t, 0x401000) >= 0;
		}
		CHECK(cs, ok);
		CHECK(cs, ok && !ptenc_finish(a, t) && !ptenc_finish(b, t));
		da = a ? ptenc_data(a, &la) : NULL;
		db = b ? ptenc_data(b, &lb) : NULL;
		CHECK(cs,
		      da && db && la == lb && la > 1000 && !memcmp(da, db, la));
		CHECK(cs, a && ptenc_conds(a, t, 0, 65, 0) == -EINVAL);
		ptenc_free(a);
		ptenc_free(b);
	}
}

/* What a stream handed to its thread: the time of its call. */
static int call_time(void *ctx, struct dec_thread *t, uint64_t time,
		     enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	(void)t;
	(void)ip;
	(void)aux;
	if (kind == DEC_CALL)
		*(uint64_t *)ctx = time;
	return 0;
}

/* A time point of type ty at ns (the capture converts no TSC: ticks are
 * ns), the stream icount instructions in. */
static void point_at(struct strm *s, enum pt_event_type ty, uint64_t ns,
		     uint64_t icount)
{
	struct pt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = ty;
	ev.has_tsc = 1;
	ev.tsc = ns;
	s->icount = icount;
	strm_event_time(s, &ev);
}

/*
 * Ticks at 1000 and 1100 ns, 10 instructions apart; a call 4 instructions
 * past the second; then a point that is no tick (tracing stops for a
 * system call) at 1 ms, 10 instructions on.  Nothing walked says the
 * call came late: it goes where the pace of the last stretch in which a
 * transfer waited, 8 times over, puts it.  inl: an inlined call's change
 * waits in the first stretch, as it does where the code there was
 * inlined; call: a call does.  The late call's time, or 0.
 */
static uint64_t call_before_pause(bool inl, bool call)
{
	struct dec_capture *c = calloc(1, sizeof(*c));
	struct strm *s = calloc(1, sizeof(*s));
	struct dec_thread th = {.pid = 1, .tid = 1, .comm = ""};
	uint64_t t = 0;

	if (c && s) {
		dec_set_sink(c, call_time, &t);
		s->c = c;
		s->thread = &th;
		point_at(s, ptev_tick, 1000, 0);
		if (inl)
			strm_held_push_at(s, 5, strm_now(s), DEC_INLINE, 0x1005,
					  0);
		if (call)
			strm_held_push_at(s, 6, strm_now(s), DEC_CALL, 0x1800,
					  0x1008);
		point_at(s, ptev_tick, 1100, 10);
		strm_held_push_at(s, 14, strm_now(s), DEC_CALL, 0x2000, 0x1010);
		point_at(s, ptev_disabled, 1000000, 20);
		strm_flush(s);
	}
	if (s) {
		free(s->held);
		free(s->win);
	}
	free(s);
	free(c);
	return t;
}

/*
 * The pace a transfer before a point that is no tick is held to is that
 * of the last stretch between ticks in which a transfer waited; an
 * inlined call's change waiting there (nothing with --no-inline) must not
 * set it, or the real calls after it move with --no-inline.
 */
static void test_pace_before_pause(struct check_state *cs)
{
	uint64_t plain = call_before_pause(false, false);
	uint64_t inl = call_before_pause(true, false);
	uint64_t call = call_before_pause(false, true);
	uint64_t both = call_before_pause(true, true);

	CHECKF(cs, inl == plain, "%llu, %llu without the inlined call",
	       (unsigned long long)inl, (unsigned long long)plain);
	CHECKF(cs, call == 1100 + 8 * 10 * 4, "%llu", (unsigned long long)call);
	CHECKF(cs, both == call, "%llu, %llu without the inlined call",
	       (unsigned long long)both, (unsigned long long)call);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_find_psb);
	RUN(&st, test_find_psb_payload_before);
	RUN(&st, test_tip_before_overflow);
	RUN(&st, test_never_reaches);
	RUN(&st, test_calls_to);
	RUN(&st, test_conds_as_cond);
	RUN(&st, test_pace_before_pause);
	return CHECK_DONE(&st);
}
