/*
 * The length of a call instruction, from its bytes: a near call, a far
 * call, a software interrupt or a system call (the transfers that come
 * back to the instruction after them).
 *
 * libipt's block decoder ends a block on the call but only says how long
 * the call was when the block was truncated, and we need the return
 * address (call + length) to match returns exactly.  Near calls come in
 * two forms in 64-bit code, E8 rel32 and FF /2 with a ModRM operand, so
 * their length follows from the prefixes, ModRM, SIB and displacement;
 * far calls are FF /3 (or 9A outside 64-bit code), the rest have fixed
 * lengths.
 */
#include "decode/decode.h"

#include <stdbool.h>

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

/* Length of an instruction whose ModRM byte is at b[i]. */
static unsigned modrm_len(const uint8_t *b, size_t n, size_t i)
{
	uint8_t modrm = b[i], mod = modrm >> 6, rm = modrm & 7;
	size_t len = i + 1;

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

unsigned dec_call_len(const uint8_t *b, size_t n)
{
	size_t i = 0, len;
	bool opsize = false;
	unsigned reg;

	while (i < n && i < 14 && is_legacy_prefix(b[i]))
		opsize |= b[i++] == 0x66;
	if (i < n && (b[i] & 0xf0) == 0x40) /* REX */
		i++;
	if (i >= n)
		return 0;
	switch (b[i]) {
	case 0xe8: /* rel32; a 66 prefix is ignored in 64-bit mode */
		len = i + 5;
		break;
	case 0x9a: /* far call ptr16:32 (ptr16:16 with 66) */
		len = i + (opsize ? 5 : 7);
		break;
	case 0xcc: /* int3 */
	case 0xce: /* into */
	case 0xf1: /* int1 */
		len = i + 1;
		break;
	case 0xcd: /* int imm8 */
		len = i + 2;
		break;
	case 0x0f: /* syscall, sysenter */
		if (i + 1 >= n || (b[i + 1] != 0x05 && b[i + 1] != 0x34))
			return 0;
		len = i + 2;
		break;
	case 0xff: /* FF /2 near, FF /3 far */
		if (i + 1 >= n)
			return 0;
		reg = (b[i + 1] >> 3) & 7;
		if (reg != 2 && reg != 3)
			return 0;
		return modrm_len(b, n, i + 1);
	default:
		return 0;
	}
	return len <= n && len <= 15 ? (unsigned)len : 0;
}
