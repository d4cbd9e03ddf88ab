/*
 * decode/: finding a PSB in a buffer (dec_find_psb), where a parallel
 * decode cuts a buffer and where decoding picks up after an error.
 */
#include "decode/decode.h"
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
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_find_psb);
	RUN(&st, test_find_psb_payload_before);
	return CHECK_DONE(&st);
}
