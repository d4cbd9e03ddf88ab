/*
 * decode/: finding a PSB in a buffer (dec_find_psb), where a parallel
 * decode cuts a buffer and where decoding picks up after an error; the
 * TIP right before an overflow (dec_tip_before_overflow).
 */
#include "decode/decode.h"
#include "ptenc/ptenc.h"
#include "tests/unit/check.h"

#include <stdint.h>
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

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_find_psb);
	RUN(&st, test_find_psb_payload_before);
	RUN(&st, test_tip_before_overflow);
	return CHECK_DONE(&st);
}
