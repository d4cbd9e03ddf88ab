/* SPDX-License-Identifier: MIT */
/*
 * PSBs in raw trace bytes, found without a decoder: where a parallel
 * decode cuts a buffer, where decoding picks up after an error, and
 * where lasttip.c reads back from.
 */
#include "decode/decode.h"

#include <string.h>

/* A PSB packet: 02 82 eight times. */
static const uint8_t psb_bytes[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				      0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				      0x02, 0x82, 0x02, 0x82};

bool dec_find_psb(const uint8_t *buf, size_t len, uint64_t from, uint64_t *at)
{
	const uint8_t *p;

	if (from >= len || len - from < sizeof(psb_bytes))
		return false;
	p = memmem(buf + from, len - from, psb_bytes, sizeof(psb_bytes));
	if (!p)
		return false;
	while (p + sizeof(psb_bytes) + 2 <= buf + len &&
	       p[sizeof(psb_bytes)] == 0x02 && p[sizeof(psb_bytes) + 1] == 0x82)
		p += 2;
	*at = (uint64_t)(p - buf);
	return true;
}

bool dec_find_psb_before(const uint8_t *buf, size_t len, uint64_t end,
			 uint64_t *at)
{
	uint64_t i;

	if (len < sizeof(psb_bytes))
		return false;
	i = end < len - sizeof(psb_bytes) ? end + 1
					  : len - sizeof(psb_bytes) + 1;
	while (i-- > 0) {
		uint64_t q = i;

		if (buf[i] != 0x02 ||
		    memcmp(buf + i, psb_bytes, sizeof(psb_bytes)))
			continue;
		/* In a longer run of 02 82 the PSB is the last 16 bytes. */
		while (q + sizeof(psb_bytes) + 2 <= len &&
		       buf[q + sizeof(psb_bytes)] == 0x02 &&
		       buf[q + sizeof(psb_bytes) + 1] == 0x82)
			q += 2;
		if (q <= end) {
			*at = q;
			return true;
		}
	}
	return false;
}
