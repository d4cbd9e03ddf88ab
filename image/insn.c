/* SPDX-License-Identifier: MIT */
/*
 * What the bytes of a branch say, where libipt does not tell us: the
 * length of a call (near, far, a software interrupt or a system call:
 * the transfers that come back to the instruction after them), the
 * target of a direct call or jump, and whether a jump is indirect or an
 * instruction a system call.
 *
 * libipt's block decoder ends a block on the call but only says how long
 * the call was when the block was truncated, and we need the return
 * address (call + length) to match returns exactly.  Near calls come in
 * two forms in 64-bit code, E8 rel32 and FF /2 with a ModRM operand, so
 * their length follows from the prefixes, ModRM, SIB and displacement;
 * far calls are FF /3 (or 9A outside 64-bit code), the rest have fixed
 * lengths.  Every reader skips the same prefixes: legacy ones (segment
 * overrides, which double as branch hints and notrack, operand and
 * address size, lock, rep/bnd) and then one REX.
 */
#include "image/image.h"

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

/* Index of the opcode after the prefixes; *opsize: a 66 was among them. */
static size_t skip_prefixes(const uint8_t *b, size_t n, bool *opsize)
{
	size_t i = 0;

	*opsize = false;
	while (i < n && i < 14 && is_legacy_prefix(b[i]))
		*opsize |= b[i++] == 0x66;
	if (i < n && (b[i] & 0xf0) == 0x40) /* REX */
		i++;
	return i;
}

unsigned img_call_len(const uint8_t *b, size_t n)
{
	size_t i, len;
	bool opsize;
	unsigned reg;

	i = skip_prefixes(b, n, &opsize);
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

static int32_t rel32(const uint8_t *b)
{
	return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 |
			 (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

bool img_direct_target(const uint8_t *b, size_t n, uint64_t ip, uint64_t *out)
{
	bool opsize;
	size_t i = skip_prefixes(b, n, &opsize);

	if (i >= n)
		return false;
	/* rel32 whatever the operand size: 64-bit code ignores 66 on near
	 * branches (as img_call_len assumes). */
	if ((b[i] == 0xe8 || b[i] == 0xe9) && i + 5 <= n) {
		*out = ip + i + 5 + (uint64_t)(int64_t)rel32(b + i + 1);
		return true;
	}
	if (b[i] == 0xeb && i + 2 <= n) {
		*out = ip + i + 2 + (uint64_t)(int64_t)(int8_t)b[i + 1];
		return true;
	}
	return false;
}

bool img_is_indirect_jump(const uint8_t *b, size_t n)
{
	bool opsize;
	size_t i = skip_prefixes(b, n, &opsize);

	return i + 1 < n && b[i] == 0xff && ((b[i + 1] >> 3) & 7) == 4;
}

bool img_is_syscall(const uint8_t *b, size_t n)
{
	return n >= 2 && ((b[0] == 0x0f && (b[1] == 0x05 || b[1] == 0x34)) ||
			  (b[0] == 0xcd && b[1] == 0x80));
}

bool img_is_far_return(const uint8_t *b, size_t n)
{
	bool opsize;
	size_t i = skip_prefixes(b, n, &opsize);

	if (i >= n)
		return false;
	/* IRET, far RET (imm16 or not); SYSRET, SYSEXIT. */
	if (b[i] == 0xcf || b[i] == 0xca || b[i] == 0xcb)
		return true;
	return i + 1 < n && b[i] == 0x0f &&
	       (b[i + 1] == 0x07 || b[i + 1] == 0x35);
}

unsigned img_soft_interrupt_len(const uint8_t *b, size_t n)
{
	if (!n || !(b[0] == 0xcc || b[0] == 0xcd || b[0] == 0xce))
		return 0;
	return img_call_len(b, n);
}
