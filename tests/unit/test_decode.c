/* SPDX-License-Identifier: MIT */
/*
 * decode/: finding a PSB in a buffer (dec_find_psb), where a parallel
 * decode cuts a buffer and where decoding picks up after an error; the
 * TIP right before an overflow (dec_tip_before_overflow); the pace a
 * transfer before a point that is no tick is held to (timing.c).
 */
#include "decode/decode.h"
#include "decode/strm.h"
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
static int call_time(void *ctx, struct dec_thread *th, bool counted, bool own,
		     uint64_t time, enum dec_kind kind, uint64_t ip,
		     uint64_t aux)
{
	(void)th;
	(void)counted;
	(void)own;
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
		const struct strm_io io = {0};
		const struct strm_out out = {&t, call_time, NULL, NULL};

		strm_init(s, c, &io, &out, 0, &th, 1);
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
	strm_free(s);
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
	RUN(&st, test_conds_as_cond);
	RUN(&st, test_pace_before_pause);
	return CHECK_DONE(&st);
}
