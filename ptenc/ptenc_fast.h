/* SPDX-License-Identifier: MIT */
/*
 * The encoder's state, and inline fast paths of its most frequent events
 * for a caller that sends hundreds of millions of them (the Valgrind
 * backend's records): each makes the bytes its function in ptenc.h
 * makes, and calls that function whenever its case is not the common
 * one (a timing packet due, the buffer to grow, CYC, PAD, TNT-64).
 * Only ptenc.c and such a caller include this.
 */
#ifndef MT_PTENC_FAST_H
#define MT_PTENC_FAST_H

#include "ptenc/ptenc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RETSTACK_MAX 64

struct pt_encoder;

struct ptenc {
	struct ptenc_cfg cfg;
	struct pt_encoder *enc;
	uint8_t scratch[64];
	uint64_t rng; /* splitmix64 state, for PAD placement */

	uint8_t *buf;
	size_t len, cap;
	bool oom;

	uint64_t last_ip;
	bool last_ip_valid;

	uint64_t tnt_bits;
	unsigned tnt_n;
	uint64_t tnt_time;

	uint64_t rs[RETSTACK_MAX]; /* ring; rs_top is the next free slot */
	unsigned rs_top, rs_n;

	size_t next_psb;
	uint64_t mtc_last_period;
	/* The TSCs of mtc_last_period, once known: an event in them needs
	 * no MTC, without the division that says so (0, 0: unknown). */
	uint64_t mtc_lo, mtc_hi;
	uint64_t cyc_last;
	/* The emulators' packets: MTC, no CYC, no PAD, TNT-8 of 6 bits,
	 * what the fast paths below make. */
	bool fast;
};

/* Can an event from t0 to t1 go in with no timing packet before it, and
 * n more bytes without growing the buffer? */
static inline bool ptenc_fast_ok(const struct ptenc *g, uint64_t t0,
				 uint64_t t1, size_t n)
{
	return g->fast && t0 >= g->mtc_lo && t1 < g->mtc_hi &&
	       g->len + n <= g->cap;
}

/* A TNT-8 of the six bits b (the first highest): a byte above a stop
 * bit. */
static inline void ptenc_fast_tnt8(struct ptenc *g, uint64_t b)
{
	g->buf[g->len++] = (uint8_t)(b << 1 | 0x80);
}

/* ptenc_tnt_word(). */
static inline int ptenc_fast_tnt_word(struct ptenc *g, uint64_t t0, uint64_t dt,
				      uint64_t word)
{
	unsigned n, an = g->tnt_n;
	uint64_t bits;

	if (word <= 1 || !ptenc_fast_ok(g, t0, t0 + dt, 64 / 6 + 1))
		return ptenc_tnt_word(g, t0, dt, word);
	n = 63 - (unsigned)__builtin_clzll(word);
	bits = word ^ 1ull << n;
	if (!an)
		g->tnt_time = t0;
	else {
		/* The pending bits first, made up to six by the run's. */
		unsigned c = 6 - an;

		if (n < c) {
			g->tnt_bits = g->tnt_bits << n | bits;
			g->tnt_n = an + n;
			return 0;
		}
		n -= c;
		ptenc_fast_tnt8(g, g->tnt_bits << c | bits >> n);
		bits &= (1ull << n) - 1;
	}
	while (n >= 6) {
		n -= 6;
		ptenc_fast_tnt8(g, bits >> n & 63);
	}
	g->tnt_bits = bits & ((1ull << n) - 1);
	g->tnt_n = n;
	return 0;
}

/* The bits set in x: a pack holds a return or two (without -mpopcnt,
 * __builtin_popcountll() is a call). */
static inline unsigned ptenc_nbits(uint64_t x)
{
	unsigned n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

/* ptenc_tnt_word_rets(): at once when the encoder's stack holds the
 * returns' targets, as the caller's does, on top. */
static inline int ptenc_fast_tnt_rets(struct ptenc *g, uint64_t t0, uint64_t dt,
				      uint64_t word, uint64_t rets,
				      const uint64_t *stack, size_t depth)
{
	unsigned nr = ptenc_nbits(rets), top = g->rs_top;

	if (!word || rets >> (63 - __builtin_clzll(word)) || nr > g->rs_n ||
	    nr > depth)
		return ptenc_tnt_word_rets(g, t0, dt, word, rets, stack, depth);
	for (unsigned i = 0; i < nr; i++) {
		top = (top + RETSTACK_MAX - 1) % RETSTACK_MAX;
		if (g->rs[top] != stack[depth - 1 - i])
			return ptenc_tnt_word_rets(g, t0, dt, word, rets, stack,
						   depth);
	}
	g->rs_top = top;
	g->rs_n -= nr;
	return ptenc_fast_tnt_word(g, t0, dt, word);
}

/* ptenc_call(). */
static inline void ptenc_fast_call(struct ptenc *g, uint64_t ret_ip)
{
	if (g->cfg.noretcomp)
		return;
	g->rs[g->rs_top] = ret_ip;
	g->rs_top = (g->rs_top + 1) % RETSTACK_MAX;
	if (g->rs_n < RETSTACK_MAX)
		g->rs_n++;
}

/* ptenc_ret(): compressed, a taken bit, when its call is on the stack. */
static inline int ptenc_fast_ret(struct ptenc *g, uint64_t tsc, uint64_t target)
{
	unsigned top = (g->rs_top + RETSTACK_MAX - 1) % RETSTACK_MAX;

	if (!g->rs_n || g->rs[top] != target || !ptenc_fast_ok(g, tsc, tsc, 1))
		return ptenc_ret(g, tsc, target);
	g->rs_top = top;
	g->rs_n--;
	if (!g->tnt_n)
		g->tnt_time = tsc;
	g->tnt_bits = g->tnt_bits << 1 | 1;
	if (++g->tnt_n == 6) {
		ptenc_fast_tnt8(g, g->tnt_bits);
		g->tnt_bits = 0;
		g->tnt_n = 0;
	}
	return 0;
}

/* ptenc_indirect(): the pending bits' TNT, then a TIP with the IP
 * compressed against the last (SDM, "IP Packets"), stored as one word
 * of which the buffer counts the bytes the compression keeps. */
static inline int ptenc_fast_tip(struct ptenc *g, uint64_t tsc, uint64_t ip)
{
	static const uint8_t nbytes[8] = {0, 2, 4, 6, 6, 0, 8, 0};
	uint64_t x = ip ^ g->last_ip;
	unsigned ipc;

	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
	    !ptenc_fast_ok(g, tsc, tsc, 1 + 9))
		return ptenc_indirect(g, tsc, ip);
	if (g->tnt_n) {
		g->buf[g->len++] = (uint8_t)(g->tnt_bits << 1 | 2u << g->tnt_n);
		g->tnt_bits = 0;
		g->tnt_n = 0;
	}
	/* pt_ipc_sext_48, _update_16, _update_32, _update_48. */
	ipc = !g->last_ip_valid ? 3
	      : !(x >> 16)	? 1
	      : !(x >> 32)	? 2
	      : !(x >> 48)	? 4
				: 3;
	g->buf[g->len] = (uint8_t)(ipc << 5 | 0x0d);
	memcpy(g->buf + g->len + 1, &ip, 8);
	g->len += 1 + nbytes[ipc];
	g->last_ip = ip;
	g->last_ip_valid = true;
	return 0;
}

/* Is a PSB+ due (ptenc_maybe_psb() writes one)? */
static inline bool ptenc_fast_psb_due(const struct ptenc *g)
{
	return g->len >= g->next_psb;
}

#endif
