/*
 * The length of a near call instruction, from its bytes.
 *
 * libipt's block decoder ends a block on the call but only says how long
 * the call was when the block was truncated, and we need the return
 * address (call + length) to match returns exactly.  Near calls come in
 * two forms in 64-bit code, E8 rel32 and FF /2 with a ModRM operand, so
 * their length follows from the prefixes, ModRM, SIB and displacement.
 */
#include "decode/decode.h"

static int is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26:
	case 0x2e:
	case 0x36:
	case 0x3e:
	case 0x64:
	case 0x65:
	case 0x66:
	case 0x67:
	case 0xf0:
	case 0xf2:
	case 0xf3:
		return 1;
	default:
		return 0;
	}
}

unsigned dec_call_len(const uint8_t *b, size_t n)
{
	size_t i = 0;
	uint8_t modrm, mod, rm;
	size_t len;

	while (i < n && i < 14 && is_legacy_prefix(b[i]))
		i++;
	if (i < n && (b[i] & 0xf0) == 0x40) /* REX */
		i++;
	if (i >= n)
		return 0;
	if (b[i] == 0xe8) {
		len = i + 5; /* rel32; a 66 prefix is ignored in 64-bit mode */
		return len <= n && len <= 15 ? (unsigned)len : 0;
	}
	if (b[i] != 0xff || i + 1 >= n)
		return 0;
	modrm = b[i + 1];
	if (((modrm >> 3) & 7) != 2)
		return 0; /* FF /3 is a far call: not ours */
	mod = modrm >> 6;
	rm = modrm & 7;
	len = i + 2;
	if (mod == 3)
		return len <= 15 ? (unsigned)len : 0;
	if (rm == 4) { /* SIB */
		if (len >= n)
			return 0;
		if (mod == 0 && (b[len] & 7) == 5)
			len += 4; /* no base: disp32 */
		len++;
	} else if (mod == 0 && rm == 5) {
		len += 4; /* RIP-relative (or disp32 with 67) */
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len <= n && len <= 15 ? (unsigned)len : 0;
}
