/* SPDX-License-Identifier: MIT */
/*
 * The packet encoder: turns one thread's executed control flow into the
 * Intel PT packets the hardware emits for user-only tracing, encoded with
 * libipt's encoder.  The emulation backend feeds it what ptrace sees;
 * mt-synth feeds it its walks.
 *
 * The rules we follow (research/pt-formats.md §2.4, SDM vol. 3C ch. 33):
 *  - TNT bits oldest first, flushed before any other packet that binds to
 *    an instruction, so the order of the stream is the order of execution;
 *  - IP compression against the last IP, which PSB and OVF reset;
 *  - a RET is compressed into a TNT bit only while its call is on our
 *    model of the hardware's return stack: calls since the last PSB, OVF
 *    or syscall, at most 64, never across a longjmp-like jump.  Hardware
 *    may always send a RET as a TIP, and perf's decoder clears its own
 *    return stack at every PSB, so erring towards TIP is what keeps both
 *    decoders in step;
 *  - an MTC for every CTC period boundary, sent at the first event after
 *    it, TNT flushed first, so the MTC sits between the branches it
 *    separates in time; MTCs go on while tracing is filtered out;
 *  - CYC before each CYC-eligible packet (TNT, TIP*, MTC, TSC, OVF; not
 *    FUP), counting core cycles (== TSC ticks, since CBR equals the
 *    non-turbo ratio) since the previous CYC or the PSB's TSC.
 */
#include "ptenc/ptenc.h"
#include "ptenc/ptenc_fast.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_below(struct ptenc *g, uint64_t n)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return n ? z % n : 0;
}

static bool has_mtc(const struct ptenc *g)
{
	return g->cfg.timing != PTENC_TSC;
}

/* Room for n more bytes. */
static int reserve(struct ptenc *g, size_t n)
{
	size_t cap = g->cap ? g->cap : 1 << 16;
	uint8_t *b;

	if (g->len + n <= g->cap)
		return 0;
	while (cap < g->len + n)
		cap *= 2;
	b = realloc(g->buf, cap);
	if (!b) {
		g->oom = true;
		return -ENOMEM;
	}
	g->buf = b;
	g->cap = cap;
	return 0;
}

static int append_grow(struct ptenc *g, const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	if (reserve(g, n))
		return -ENOMEM;
	memcpy(g->buf + g->len, p, n);
	g->len += n;
	return 0;
}

/* Most packets are a byte or a few, and the buffer has room. */
static inline int append(struct ptenc *g, const uint8_t *p, size_t n)
{
	if (g->len + n > g->cap || n > 9)
		return append_grow(g, p, n);
	for (size_t i = 0; i < n; i++)
		g->buf[g->len + i] = p[i];
	g->len += n;
	return 0;
}

static int put(struct ptenc *g, const struct pt_packet *pk)
{
	int n;
	struct pt_packet pad = {.type = ppt_pad};

	if (pt_enc_sync_set(g->enc, 0) < 0)
		return -ENOMEM;
	n = pt_enc_next(g->enc, pk);
	if (n < 0 || append(g, g->scratch, (size_t)n))
		return -ENOMEM;
	/* Real hardware sprinkles PAD bytes between packets. */
	if (g->cfg.pad_chance && rng_below(g, 1024) < g->cfg.pad_chance)
		for (unsigned i = 1 + (unsigned)rng_below(g, 3); i; i--)
			if (put(g, &pad))
				return -ENOMEM;
	return 0;
}

/*
 * An IP packet (TIP, TIP.PGE, TIP.PGD, FUP with an IP) as libipt's
 * encoder writes it, without its per-packet cost: the header byte (IP
 * bytes above the opcode) and the low bytes of the IP (SDM, "IP
 * Packets").  Most of a call-heavy program's trace is these.
 */
static int put_ip(struct ptenc *g, const struct pt_packet *pk)
{
	static const uint8_t nbytes[8] = {0, 2, 4, 6, 6, 0, 8, 0};
	uint8_t b[9], op;
	unsigned ipc = (unsigned)pk->payload.ip.ipc & 7, n = nbytes[ipc];

	switch (pk->type) {
	case ppt_tip:
		op = 0x0d;
		break;
	case ppt_tip_pge:
		op = 0x11;
		break;
	case ppt_tip_pgd:
		op = 0x01;
		break;
	case ppt_fup:
		op = 0x1d;
		break;
	default:
		return put(g, pk);
	}
	b[0] = (uint8_t)(ipc << 5 | op);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The IP's low bytes are its first in memory: one store of all 8,
	 * the buffer counting only n of them. */
	if (g->len + 9 <= g->cap) {
		uint64_t ip = pk->payload.ip.ip;

		g->buf[g->len] = b[0];
		memcpy(g->buf + g->len + 1, &ip, 8);
		g->len += 1 + n;
		return 0;
	}
#endif
	for (unsigned i = 0; i < n; i++)
		b[1 + i] = (uint8_t)(pk->payload.ip.ip >> (8 * i));
	return append(g, b, 1 + n);
}

static int cyc(struct ptenc *g, uint64_t tsc)
{
	struct pt_packet pk = {.type = ppt_cyc};

	if (g->cfg.timing != PTENC_CYC)
		return 0;
	pk.payload.cyc.value = tsc > g->cyc_last ? tsc - g->cyc_last : 0;
	g->cyc_last = tsc > g->cyc_last ? tsc : g->cyc_last;
	return put(g, &pk);
}

static int flush_tnt_now(struct ptenc *g)
{
	struct pt_packet pk = {0};

	if (cyc(g, g->tnt_time))
		return -ENOMEM;
	if (g->tnt_n <= 6 && !g->cfg.pad_chance) {
		/* A TNT-8 is one byte: the bits, oldest highest, above a
		 * stop bit (SDM, "Short TNT Packet"); libipt's encoder costs
		 * more than the byte on a trace that is mostly TNT. */
		uint8_t b = (uint8_t)((g->tnt_bits << 1) | (2u << g->tnt_n));

		g->tnt_n = 0;
		g->tnt_bits = 0;
		return append(g, &b, 1);
	}
	pk.type = g->tnt_n <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pk.payload.tnt.bit_size = (uint8_t)g->tnt_n;
	pk.payload.tnt.payload = g->tnt_bits;
	g->tnt_n = 0;
	g->tnt_bits = 0;
	return put(g, &pk);
}

/* Most IP packets come with no TNT pending: no call then. */
static inline int flush_tnt(struct ptenc *g)
{
	return g->tnt_n ? flush_tnt_now(g) : 0;
}

static uint64_t mtc_period_of(const struct ptenc *g, uint64_t tsc)
{
	return (tsc / g->cfg.tsc_ctc_ratio) >> g->cfg.mtc_period;
}

/*
 * Called before every event: an MTC for each CTC period boundary crossed
 * since the last one.  MTC needs TriggerEn only, so it goes on while the
 * thread is in the kernel or filtered out, and it is CYC-eligible: in
 * cycle-accurate mode a CYC precedes it, so the cycles of the next CYC
 * count from the MTC.  Decoders rely on both (libipt restarts its cycle
 * count at every MTC; perf does when a CYC precedes the MTC).
 */
static int timing_cross(struct ptenc *g, uint64_t tsc)
{
	struct pt_packet pk = {.type = ppt_mtc};
	uint64_t period = mtc_period_of(g, tsc);

	if (period == g->mtc_last_period) {
		g->mtc_lo =
			(period << g->cfg.mtc_period) * g->cfg.tsc_ctc_ratio;
		g->mtc_hi = ((period + 1) << g->cfg.mtc_period) *
			    g->cfg.tsc_ctc_ratio;
		return 0;
	}
	g->mtc_lo = g->mtc_hi = 0;
	if (flush_tnt(g))
		return -ENOMEM;
	/*
	 * An MTC carries 8 bits of the period count: after 128 periods with
	 * nothing to say (an emulated thread waits long between steps) we
	 * send one TSC with its TMA instead of a long run of MTCs; hardware
	 * may drop MTCs, and a TSC puts time back on its feet.
	 */
	if (period - g->mtc_last_period >= 128) {
		uint64_t ctc = tsc / g->cfg.tsc_ctc_ratio;
		struct pt_packet t = {.type = ppt_tsc};

		if (cyc(g, tsc))
			return -ENOMEM;
		t.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
		if (put(g, &t))
			return -ENOMEM;
		t.type = ppt_tma;
		t.payload.tma.ctc = (uint16_t)ctc;
		t.payload.tma.fc = (uint16_t)(tsc - ctc * g->cfg.tsc_ctc_ratio);
		g->mtc_last_period = period;
		return put(g, &t);
	}
	while (g->mtc_last_period != period) {
		uint64_t p = ++g->mtc_last_period;

		if (cyc(g, (p << g->cfg.mtc_period) * g->cfg.tsc_ctc_ratio))
			return -ENOMEM;
		pk.payload.mtc.ctc = (uint8_t)p;
		if (put(g, &pk))
			return -ENOMEM;
	}
	return 0;
}

/* Most events fall in the MTC period of the one before: no call then. */
static inline int timing_before(struct ptenc *g, uint64_t tsc)
{
	if (!has_mtc(g) || (tsc >= g->mtc_lo && tsc < g->mtc_hi))
		return 0;
	return timing_cross(g, tsc);
}

static int ip_packet(struct ptenc *g, enum pt_packet_type type, uint64_t ip,
		     uint64_t tsc)
{
	struct pt_packet pk = {.type = type};
	uint64_t x = ip ^ g->last_ip;

	if (timing_before(g, tsc) || flush_tnt(g))
		return -ENOMEM;
	/* FUP is not CYC-eligible; its time is that of the packet after. */
	if (type != ppt_fup && cyc(g, tsc))
		return -ENOMEM;
	if (!g->last_ip_valid)
		pk.payload.ip.ipc = pt_ipc_sext_48;
	else if (!(x >> 16))
		pk.payload.ip.ipc = pt_ipc_update_16;
	else if (!(x >> 32))
		pk.payload.ip.ipc = pt_ipc_update_32;
	else if (!(x >> 48))
		pk.payload.ip.ipc = pt_ipc_update_48;
	else
		pk.payload.ip.ipc = pt_ipc_sext_48;
	pk.payload.ip.ip = ip;
	g->last_ip = ip;
	g->last_ip_valid = true;
	if (!g->cfg.pad_chance)
		return put_ip(g, &pk);
	return put(g, &pk);
}

static void rs_clear(struct ptenc *g)
{
	g->rs_n = 0;
}

static int psb_plus(struct ptenc *g, uint64_t tsc, uint64_t ip, bool fup)
{
	struct pt_packet pk = {.type = ppt_psb};
	size_t psb_bytes = (size_t)1 << (g->cfg.psb_period + 11);

	if (flush_tnt(g) || put(g, &pk))
		return -ENOMEM;
	g->last_ip_valid = false;
	g->last_ip = 0;
	rs_clear(g);
	if (fup) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_mode;
		pk.payload.mode.leaf = pt_mol_exec;
		pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
		if (put(g, &pk))
			return -ENOMEM;
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_fup;
		pk.payload.ip.ipc = pt_ipc_sext_48;
		pk.payload.ip.ip = ip;
		if (put(g, &pk))
			return -ENOMEM;
		g->last_ip = ip;
		g->last_ip_valid = true;
	}
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_tsc;
	pk.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
	if (put(g, &pk))
		return -ENOMEM;
	if (has_mtc(g)) {
		uint64_t ctc = tsc / g->cfg.tsc_ctc_ratio;
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tma;
		pk.payload.tma.ctc = (uint16_t)ctc;
		pk.payload.tma.fc =
			(uint16_t)(tsc - ctc * g->cfg.tsc_ctc_ratio);
		if (put(g, &pk))
			return -ENOMEM;
		g->mtc_last_period = mtc_period_of(g, tsc);
		g->mtc_lo = g->mtc_hi = 0;
	}
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_cbr;
	pk.payload.cbr.ratio = g->cfg.cbr;
	if (put(g, &pk))
		return -ENOMEM;
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_psbend;
	if (put(g, &pk))
		return -ENOMEM;
	g->cyc_last = tsc;
	g->next_psb = g->cfg.psb_forced_only
			      ? SIZE_MAX
			      : (g->len / psb_bytes + 1) * psb_bytes;
	return 0;
}

struct ptenc *ptenc_new(const struct ptenc_cfg *cfg, uint64_t seed)
{
	struct ptenc *g = calloc(1, sizeof(*g));
	struct pt_config pc;

	if (!g)
		return NULL;
	g->cfg = *cfg;
	if (g->cfg.tnt_max < 1 || g->cfg.tnt_max > 47)
		g->cfg.tnt_max = 6;
	if (!g->cfg.tsc_ctc_ratio)
		g->cfg.tsc_ctc_ratio = 1;
	g->fast = g->cfg.timing == PTENC_MTC && !g->cfg.pad_chance &&
		  g->cfg.tnt_max == 6;
	g->rng = seed;
	pt_config_init(&pc);
	pc.begin = g->scratch;
	pc.end = g->scratch + sizeof(g->scratch);
	g->enc = pt_alloc_encoder(&pc);
	if (!g->enc) {
		free(g);
		return NULL;
	}
	return g;
}

void ptenc_free(struct ptenc *g)
{
	if (!g)
		return;
	pt_free_encoder(g->enc);
	free(g->buf);
	free(g);
}

const uint8_t *ptenc_data(const struct ptenc *g, size_t *len)
{
	*len = g->len;
	return g->buf;
}

int ptenc_start(struct ptenc *g, uint64_t tsc, uint64_t ip, bool enabled)
{
	struct pt_packet pk = {0};

	if (enabled) {
		/* A snapshot begins mid-packet: a few bytes of a lost one. */
		static const uint8_t tail[] = {0x06, 0x0a, 0xfc, 0x03};
		if (append(g, tail, rng_below(g, sizeof(tail) + 1)))
			return -ENOMEM;
		return psb_plus(g, tsc, ip, true);
	}
	if (psb_plus(g, tsc, 0, false))
		return -ENOMEM;
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	if (put(g, &pk))
		return -ENOMEM;
	return ip_packet(g, ppt_tip_pge, ip, tsc);
}

int ptenc_cond(struct ptenc *g, uint64_t tsc, bool taken)
{
	if (timing_before(g, tsc))
		return -ENOMEM;
	/* The CYC before a TNT times its first branch (SDM, "Cycle Packet
	 * Semantics"); the others retired at or after it. */
	if (!g->tnt_n)
		g->tnt_time = tsc;
	g->tnt_bits = (g->tnt_bits << 1) | (taken ? 1 : 0);
	g->tnt_n++;
	if (g->tnt_n >= g->cfg.tnt_max)
		return flush_tnt(g);
	return 0;
}

static uint64_t bit_reverse(uint64_t x)
{
	x = (x >> 1 & 0x5555555555555555ull) | (x & 0x5555555555555555ull) << 1;
	x = (x >> 2 & 0x3333333333333333ull) | (x & 0x3333333333333333ull) << 2;
	x = (x >> 4 & 0x0f0f0f0f0f0f0f0full) | (x & 0x0f0f0f0f0f0f0f0full) << 4;
	return __builtin_bswap64(x);
}

/* Six bits, the first lowest, as a TNT-8 holds them (the first
 * highest). */
static uint8_t rev6(uint64_t v)
{
	static const uint8_t r[64] = {
		0, 32, 16, 48, 8,  40, 24, 56, 4, 36, 20, 52, 12, 44, 28, 60,
		2, 34, 18, 50, 10, 42, 26, 58, 6, 38, 22, 54, 14, 46, 30, 62,
		1, 33, 17, 49, 9,  41, 25, 57, 5, 37, 21, 53, 13, 45, 29, 61,
		3, 35, 19, 51, 11, 43, 27, 59, 7, 39, 23, 55, 15, 47, 31, 63};

	return r[v & 63];
}

/* The n bits of a run (bit k the k-th branch), with those pending, as
 * TNT-8 bytes of 6 (the time of the pending bits kept for a CYC). */
static int tnt8_run(struct ptenc *g, uint64_t t0, unsigned n, uint64_t bits)
{
	unsigned an = g->tnt_n;
	uint64_t acc;

	if (reserve(g, 64 / 6 + 1))
		return -ENOMEM;
	if (!an)
		g->tnt_time = t0;
	/* The pending bits (the first highest) first lowest, then the
	 * run's after them, six at a time. */
	acc = rev6(g->tnt_bits << (6 - an));
	if (an) {
		unsigned c = 6 - an < n ? 6 - an : n;

		acc |= (bits & ((1ull << c) - 1)) << an;
		an += c;
		n -= c;
		bits = c < 64 ? bits >> c : 0;
		if (an < 6) {
			g->tnt_bits = rev6(acc) >> (6 - an);
			g->tnt_n = an;
			return 0;
		}
		g->buf[g->len++] = (uint8_t)(rev6(acc) << 1 | 0x80);
	}
	for (; n >= 6; n -= 6, bits >>= 6)
		g->buf[g->len++] = (uint8_t)(rev6(bits) << 1 | 0x80);
	g->tnt_bits =
		n ? (uint64_t)rev6(bits & ((1ull << n) - 1)) >> (6 - n) : 0;
	g->tnt_n = n;
	return 0;
}

int ptenc_conds(struct ptenc *g, uint64_t t0, uint64_t dt, unsigned n,
		uint64_t bits)
{
	uint64_t step;
	unsigned k = 0;

	if (n > 64)
		return -EINVAL;
	if (!n)
		return 0;

	/* Within one MTC period (most runs of branches are) no timing
	 * packet can fall between the bits: they go in as many at a time
	 * as a TNT takes. */
	if (!has_mtc(g) || (t0 >= g->mtc_lo && t0 + dt < g->mtc_hi)) {
		/* The first branch highest, as a TNT holds them. */
		uint64_t rev;

		/* No CYC and TNT-8s of 6 bits (the emulators' packets):
		 * the bytes at once, without a call each, and without the
		 * times of the bits (only a CYC would say them). */
		if (g->cfg.timing != PTENC_CYC && !g->cfg.pad_chance &&
		    g->cfg.tnt_max == 6)
			return tnt8_run(g, t0, n, bits);
		rev = bit_reverse(bits) >> (64 - n);
		step = n > 1 ? (dt << 16) / (n - 1) : 0;

		while (k < n) {
			unsigned c = g->cfg.tnt_max - g->tnt_n;

			if (c > n - k)
				c = n - k;
			if (!g->tnt_n)
				g->tnt_time = t0 + ((k * step) >> 16);
			g->tnt_bits = (g->tnt_bits << c) |
				      (rev >> (n - k - c) & ((1ull << c) - 1));
			g->tnt_n += c;
			k += c;
			if (g->tnt_n >= g->cfg.tnt_max && flush_tnt(g))
				return -ENOMEM;
		}
		return 0;
	}
	step = n > 1 ? (dt << 16) / (n - 1) : 0;
	for (; k < n; k++)
		if (ptenc_cond(g, t0 + ((k * step) >> 16), bits >> k & 1))
			return -ENOMEM;
	return 0;
}

int ptenc_tnt_word(struct ptenc *g, uint64_t t0, uint64_t dt, uint64_t word)
{
	unsigned n;

	if (!word)
		return -EINVAL;
	n = 63 - (unsigned)__builtin_clzll(word);
	return n ? ptenc_conds(g, t0, dt, n, bit_reverse(word) >> (64 - n)) : 0;
}

int ptenc_tnt_word_rets(struct ptenc *g, uint64_t t0, uint64_t dt,
			uint64_t word, uint64_t rets, const uint64_t *stack,
			size_t depth)
{
	unsigned n, i = 0;

	if (!word)
		return -EINVAL;
	n = 63 - (unsigned)__builtin_clzll(word);
	if (rets >> n || (unsigned)__builtin_popcountll(rets) > depth)
		return -EPROTO;
	/* One at a time, each at the time ptenc_conds() gives it (the
	 * encoder's stack cleared since the calls, seldom). */
	for (unsigned k = 0; k < n; k++) {
		uint64_t tk = ptenc_bit_time(t0, dt, n, k);
		int rc = rets >> k & 1
				 ? ptenc_ret(g, tk, stack[depth - 1 - i++])
				 : ptenc_cond(g, tk, word >> (n - 1 - k) & 1);

		if (rc)
			return rc;
	}
	return 0;
}

void ptenc_call(struct ptenc *g, uint64_t ret_ip)
{
	ptenc_fast_call(g, ret_ip);
}

int ptenc_indirect(struct ptenc *g, uint64_t tsc, uint64_t target)
{
	return ip_packet(g, ppt_tip, target, tsc);
}

int ptenc_ret(struct ptenc *g, uint64_t tsc, uint64_t target)
{
	if (g->rs_n) {
		unsigned top = (g->rs_top + RETSTACK_MAX - 1) % RETSTACK_MAX;
		if (g->rs[top] == target) {
			g->rs_top = top;
			g->rs_n--;
			return ptenc_cond(g, tsc, true);
		}
		/* Out of step: never compress again until it is rebuilt. */
		rs_clear(g);
	}
	return ip_packet(g, ppt_tip, target, tsc);
}

static int pgd(struct ptenc *g, uint64_t tsc, bool timed)
{
	struct pt_packet pk = {.type = ppt_tip_pgd};

	if (timing_before(g, tsc) || flush_tnt(g) || (timed && cyc(g, tsc)))
		return -ENOMEM;
	pk.payload.ip.ipc = pt_ipc_suppressed;
	if (put(g, &pk))
		return -ENOMEM;
	rs_clear(g);
	return 0;
}

int ptenc_pgd(struct ptenc *g, uint64_t tsc)
{
	return pgd(g, tsc, true);
}

int ptenc_async_pgd(struct ptenc *g, uint64_t tsc, uint64_t ip)
{
	/* An interrupt or signal: FUP names the instruction it came at.
	 * The CYC goes before the FUP, which begins the compound packet
	 * (Intel's ptxed-tick test): a CYC after it would time the FUP
	 * with the clock of the instructions before. */
	if (timing_before(g, tsc) || flush_tnt(g) || cyc(g, tsc))
		return -ENOMEM;
	return ip_packet(g, ppt_fup, ip, tsc) || pgd(g, tsc, false) ? -ENOMEM
								    : 0;
}

int ptenc_pge(struct ptenc *g, uint64_t tsc, uint64_t ip)
{
	return ip_packet(g, ppt_tip_pge, ip, tsc);
}

int ptenc_ptwrite(struct ptenc *g, uint64_t tsc, uint64_t value, uint64_t ip)
{
	struct pt_packet pk = {.type = ppt_ptw};

	/* PTW is CYC-eligible; the FUP after it is not. */
	if (timing_before(g, tsc) || flush_tnt(g) || cyc(g, tsc))
		return -ENOMEM;
	pk.payload.ptw.plc = 1; /* 8 bytes */
	pk.payload.ptw.payload = value;
	pk.payload.ptw.ip = 1;
	if (put(g, &pk))
		return -ENOMEM;
	return ip_packet(g, ppt_fup, ip, tsc);
}

int ptenc_syscall(struct ptenc *g, uint64_t tsc, uint64_t tsc_back,
		  uint64_t resume_ip)
{
	return ptenc_pgd(g, tsc) || ptenc_pge(g, tsc_back, resume_ip) ? -ENOMEM
								      : 0;
}

void ptenc_unwind(struct ptenc *g)
{
	rs_clear(g);
}

/*
 * SDM vol. 3C, "Internal Buffer Overflow": timing packets generated during
 * the overflow are dropped, so no MTC stands for the CTC periods that ended
 * inside it (the next MTC jumps, and decoders expect that); in
 * cycle-accurate mode the OVF itself gets a CYC, which covers the
 * overflow's duration.  The FUP follows in the same cycle, so it needs no
 * CYC, and with last IP reset it carries the whole IP.
 */
int ptenc_overflow(struct ptenc *g, uint64_t tsc, uint64_t resume_ip)
{
	struct pt_packet pk = {.type = ppt_ovf};

	if (flush_tnt(g))
		return -ENOMEM;
	if (has_mtc(g))
		g->mtc_last_period = mtc_period_of(g, tsc);
	g->mtc_lo = g->mtc_hi = 0;
	if (cyc(g, tsc) || put(g, &pk))
		return -ENOMEM;
	rs_clear(g);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_fup;
	pk.payload.ip.ipc = pt_ipc_sext_48;
	pk.payload.ip.ip = resume_ip;
	g->last_ip = resume_ip;
	g->last_ip_valid = true;
	return put(g, &pk);
}

int ptenc_maybe_psb(struct ptenc *g, uint64_t tsc, uint64_t ip)
{
	if (g->len < g->next_psb)
		return 0;
	if (timing_before(g, tsc) || psb_plus(g, tsc, ip, true))
		return -ENOMEM;
	return 1;
}

void ptenc_force_psb(struct ptenc *g)
{
	g->next_psb = g->len;
}

void ptenc_discard(struct ptenc *g, size_t n)
{
	if (n > g->len)
		n = g->len;
	memmove(g->buf, g->buf + n, g->len - n);
	g->len -= n;
	if (g->next_psb != SIZE_MAX)
		g->next_psb = g->next_psb > n ? g->next_psb - n : 0;
}

int ptenc_finish(struct ptenc *g, uint64_t tsc)
{
	(void)tsc;
	return flush_tnt(g) || g->oom ? -ENOMEM : 0;
}
