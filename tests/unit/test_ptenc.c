/* SPDX-License-Identifier: MIT */
/*
 * The packet encoder's short paths against its long ones: a run of
 * branches given at once (ptenc_conds(), as the Valgrind backend gives
 * them) writes the bytes that the same branches one by one write
 * (ptenc_cond()), and so do the inline paths of ptenc_fast.h; and the
 * IP packets it writes itself are the ones libipt's decoder reads back
 * as the IPs given.
 */
#include "ptenc/ptenc.h"
#include "ptenc/ptenc_fast.h"
#include "tests/unit/check.h"
#include "tests/unit/ptpkts.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* An address in one of a few user-space regions, so that IP
 * compression takes each of its forms. */
static uint64_t some_ip(uint64_t *s)
{
	static const uint64_t base[] = {0x401000, 0x7f1234560000ull,
					0x7ffff7dd0000ull, 0x55555555a000ull};
	uint64_t r = next_rand(s);

	return base[r % 4] + (r >> 8) % (r & 16 ? 0x100 : 0x10000000);
}

/* The emulators' packets (TNT-8 of 6 bits, MTC period 3), timed as
 * asked. */
static struct ptenc_cfg cfg_of(enum ptenc_timing timing)
{
	return (struct ptenc_cfg){.timing = timing,
				  .psb_period = 0,
				  .mtc_period = 3,
				  .tsc_ctc_ratio = 40,
				  .cbr = 20,
				  .tnt_max = 6};
}

static void test_conds_as_cond(struct check_state *st)
{
	for (int timing = PTENC_TSC; timing <= PTENC_MTC; timing++) {
		struct ptenc_cfg cfg = cfg_of((enum ptenc_timing)timing);
		struct ptenc *run = ptenc_new(&cfg, 1),
			     *one = ptenc_new(&cfg, 1);
		uint64_t s = 42 + (uint64_t)timing, tsc = 1000000;
		const uint8_t *a, *b;
		size_t la, lb;
		int rc = 0;

		CHECK(st, run && one);
		if (!run || !one)
			return;
		rc |= ptenc_start(run, tsc, 0x401000, false);
		rc |= ptenc_start(one, tsc, 0x401000, false);
		for (int i = 0; i < 20000 && !rc; i++) {
			uint64_t r = next_rand(&s), ip = some_ip(&s);
			unsigned n = 1 + (unsigned)(r % 64);
			uint64_t bits = next_rand(&s);
			uint64_t dt = (r >> 8) % 400, step;

			/* A run of n branches over dt ticks, some of them
			 * across an MTC; then a transfer. */
			step = n > 1 ? (dt << 16) / (n - 1) : 0;
			rc |= ptenc_conds(run, tsc, dt, n, bits);
			for (unsigned k = 0; k < n; k++)
				rc |= ptenc_cond(one, tsc + ((k * step) >> 16),
						 bits >> k & 1);
			tsc += dt + 1;
			switch ((r >> 20) % 4) {
			case 0:
				ptenc_call(run, ip);
				ptenc_call(one, ip);
				break;
			case 1:
				rc |= ptenc_ret(run, tsc, ip);
				rc |= ptenc_ret(one, tsc, ip);
				break;
			case 2:
				rc |= ptenc_indirect(run, tsc, ip);
				rc |= ptenc_indirect(one, tsc, ip);
				break;
			default:
				rc |= ptenc_maybe_psb(run, tsc, ip) < 0;
				rc |= ptenc_maybe_psb(one, tsc, ip) < 0;
				break;
			}
		}
		rc |= ptenc_finish(run, tsc);
		rc |= ptenc_finish(one, tsc);
		CHECK(st, !rc);
		a = ptenc_data(run, &la);
		b = ptenc_data(one, &lb);
		CHECKF(st, la == lb && !memcmp(a, b, la),
		       "timing %d: %zu bytes against %zu", timing, la, lb);
		ptenc_free(run);
		ptenc_free(one);
	}
}

/* The inline paths (ptenc_fast.h, the Valgrind backend's) against the
 * functions one event at a time: the same bytes, returns compressed or
 * not, runs across MTCs and PSBs included. */
static void test_fast_as_slow(struct check_state *st)
{
	struct ptenc_cfg cfg = cfg_of(PTENC_MTC);
	struct ptenc *fast = ptenc_new(&cfg, 1), *one = ptenc_new(&cfg, 1);
	uint64_t s = 99, tsc = 1000000, stack[256];
	unsigned depth = 0;
	const uint8_t *a, *b;
	size_t la, lb;
	int rc = 0;

	CHECK(st, fast && one && fast->fast);
	if (!fast || !one)
		return;
	rc |= ptenc_start(fast, tsc, 0x401000, false);
	rc |= ptenc_start(one, tsc, 0x401000, false);
	for (int i = 0; i < 50000 && !rc; i++) {
		uint64_t r = next_rand(&s), ip = some_ip(&s);
		unsigned n = (unsigned)(r % 64);
		uint64_t word = 1ull << n | (next_rand(&s) & ((1ull << n) - 1));
		uint64_t dt = (r >> 8) % 400, step;

		/* A pack of n branches (first highest) over dt ticks. */
		step = n > 1 ? (dt << 16) / (n - 1) : 0;
		rc |= ptenc_fast_tnt_word(fast, tsc, dt, word);
		for (unsigned k = 0; k < n; k++)
			rc |= ptenc_cond(one, tsc + ((k * step) >> 16),
					 word >> (n - 1 - k) & 1);
		tsc += dt + 1;
		switch ((r >> 20) % 4) {
		case 0:
			ptenc_fast_call(fast, ip);
			ptenc_call(one, ip);
			if (depth < 256)
				stack[depth++] = ip;
			break;
		case 1:
			/* Mostly to where the last call left. */
			if (depth && r >> 40 & 7)
				ip = stack[--depth];
			rc |= ptenc_fast_ret(fast, tsc, ip);
			rc |= ptenc_ret(one, tsc, ip);
			break;
		default:
			rc |= ptenc_fast_tip(fast, tsc, ip);
			rc |= ptenc_indirect(one, tsc, ip);
			break;
		}
		if (ptenc_fast_psb_due(fast))
			rc |= ptenc_maybe_psb(fast, tsc, ip) < 0;
		rc |= ptenc_maybe_psb(one, tsc, ip) < 0;
	}
	rc |= ptenc_finish(fast, tsc);
	rc |= ptenc_finish(one, tsc);
	CHECK(st, !rc);
	a = ptenc_data(fast, &la);
	b = ptenc_data(one, &lb);
	CHECKF(st, la == lb && !memcmp(a, b, la), "%zu bytes against %zu", la,
	       lb);
	CHECK(st, ptenc_tnt_word(one, tsc, 0, 0) == -EINVAL);
	ptenc_free(fast);
	ptenc_free(one);
}

/*
 * Packs with returns among their branches (the Valgrind tool's returns
 * to the newest call): the inline path, ptenc_tnt_word_rets() and the
 * events one at a time write the same bytes, a taken bit where the
 * encoder's stack compresses the return and a TIP where a PSB cleared
 * it; and a pack that returns above the caller's stack is refused.
 */
static void test_rets_as_one(struct check_state *st)
{
	for (int timing = PTENC_TSC; timing <= PTENC_MTC; timing++) {
		struct ptenc_cfg cfg = cfg_of((enum ptenc_timing)timing);
		struct ptenc *fast = ptenc_new(&cfg, 1),
			     *mid = ptenc_new(&cfg, 1),
			     *one = ptenc_new(&cfg, 1);
		uint64_t s = 7 + (uint64_t)timing, tsc = 1000000, stack[4096];
		size_t depth = 0, la, lb, lc, nrets = 0;
		const uint8_t *a, *b, *c;
		int rc = 0;

		CHECK(st, fast && mid && one);
		if (!fast || !mid || !one)
			return;
		rc |= ptenc_start(fast, tsc, 0x401000, false);
		rc |= ptenc_start(mid, tsc, 0x401000, false);
		rc |= ptenc_start(one, tsc, 0x401000, false);
		for (int i = 0; i < 30000 && !rc; i++) {
			uint64_t r = next_rand(&s), ip = some_ip(&s);
			unsigned n = (unsigned)(r % 64), nr = 0;
			uint64_t word = 1, rets = 0, bits = next_rand(&s);
			/* (One time for every bit with TSC alone: the
			 * packets do not say the times between.) */
			uint64_t dt = timing == PTENC_TSC ? 0 : (r >> 8) % 400;

			for (unsigned k = 0; k < n; k++) {
				bool ret = nr < depth && !(bits >> k % 64 & 6);

				word = word << 1 | (ret || bits >> k & 1);
				rets |= (uint64_t)ret << k;
				nr += ret;
			}
			rc |= rets ? ptenc_fast_tnt_rets(fast, tsc, dt, word,
							 rets, stack, depth)
				   : ptenc_fast_tnt_word(fast, tsc, dt, word);
			rc |= ptenc_tnt_word_rets(mid, tsc, dt, word, rets,
						  stack, depth);
			for (unsigned k = 0, j = 0; k < n; k++)
				rc |= rets >> k & 1
					      ? ptenc_ret(
							one, tsc,
							stack[depth - 1 - j++])
					      : ptenc_cond(one, tsc,
							   word >> (n - 1 - k) &
								   1);
			depth -= nr;
			nrets += nr;
			tsc += dt + 1;
			switch ((r >> 20) % 4) {
			case 0:
			case 1:
				ptenc_fast_call(fast, ip);
				ptenc_call(mid, ip);
				ptenc_call(one, ip);
				if (depth < 4096)
					stack[depth++] = ip;
				break;
			case 2:
				rc |= ptenc_indirect(fast, tsc, ip);
				rc |= ptenc_indirect(mid, tsc, ip);
				rc |= ptenc_indirect(one, tsc, ip);
				break;
			default:
				rc |= ptenc_maybe_psb(fast, tsc, ip) < 0;
				rc |= ptenc_maybe_psb(mid, tsc, ip) < 0;
				rc |= ptenc_maybe_psb(one, tsc, ip) < 0;
				break;
			}
		}
		rc |= ptenc_finish(fast, tsc);
		rc |= ptenc_finish(mid, tsc);
		rc |= ptenc_finish(one, tsc);
		CHECKF(st, !rc && nrets > 10000, "rc %d, %zu returns", rc,
		       nrets);
		a = ptenc_data(fast, &la);
		b = ptenc_data(mid, &lb);
		c = ptenc_data(one, &lc);
		CHECKF(st, la == lb && !memcmp(a, b, la),
		       "timing %d: inline %zu bytes, ptenc_tnt_word_rets %zu",
		       timing, la, lb);
		if (timing == PTENC_TSC)
			CHECKF(st, lb == lc && !memcmp(b, c, lb),
			       "%zu bytes against %zu one at a time", lb, lc);
		CHECK(st, ptenc_tnt_word_rets(mid, tsc, 0, 4 | 3, 1, stack,
					      0) == -EPROTO);
		CHECK(st, ptenc_tnt_word_rets(mid, tsc, 0, 4 | 3, 8, stack,
					      4) == -EPROTO);
		ptenc_free(fast);
		ptenc_free(mid);
		ptenc_free(one);
	}
}

/* The IP of an IP packet, from the last one (SDM, "IP Compression"). */
static uint64_t full_ip(const struct pt_packet_ip *p, uint64_t last)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffff);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffff);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) |
		       (p->ip & 0xffffffffffffull);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	default:
		return p->ip;
	}
}

static void test_ip_packets(struct check_state *st)
{
	struct ptenc_cfg cfg = {.timing = PTENC_TSC, .tnt_max = 6, .cbr = 20};
	struct ptenc *g = ptenc_new(&cfg, 1);
	struct pt_packet_decoder *d;
	struct pt_config pc;
	struct pt_packet pk;
	uint64_t s = 7, ips[3000], last = 0;
	const uint8_t *data;
	size_t len, n = 0, seen = 0;
	int rc = 0;

	CHECK(st, g != NULL);
	if (!g)
		return;
	rc |= ptenc_start(g, 100, 0x401000, false);
	ips[n++] = 0x401000;
	while (n < sizeof(ips) / sizeof(ips[0])) {
		ips[n] = some_ip(&s);
		rc |= ptenc_indirect(g, 100 + n, ips[n]);
		n++;
	}
	rc |= ptenc_finish(g, 100 + n);
	CHECK(st, !rc);
	data = ptenc_data(g, &len);
	pt_config_init(&pc);
	pc.begin = (uint8_t *)data;
	pc.end = (uint8_t *)data + len;
	d = pt_pkt_alloc_decoder(&pc);
	CHECK(st, d && pt_pkt_sync_set(d, 0) >= 0);
	while (d && pt_pkt_next(d, &pk, sizeof(pk)) > 0) {
		if (pk.type == ppt_psb)
			last = 0;
		if (pk.type != ppt_tip && pk.type != ppt_tip_pge)
			continue;
		last = full_ip(&pk.payload.ip, last);
		CHECKF(st, seen < n && last == ips[seen],
		       "packet %zu: %#llx, not %#llx", seen,
		       (unsigned long long)last,
		       (unsigned long long)(seen < n ? ips[seen] : 0));
		seen++;
	}
	CHECKF(st, seen == n, "%zu IP packets of %zu", seen, n);
	pt_pkt_free_decoder(d);
	ptenc_free(g);
}

/*
 * psb_forced_only: past the PSB period no PSB+ comes by itself, over 64
 * KiB of branches and returns (a caller whose source compresses the
 * returns places them); one comes where ptenc_force_psb() asks, and
 * survives ptenc_discard().
 */
static void test_psb_forced_only(struct check_state *st)
{
	struct ptenc_cfg cfg = cfg_of(PTENC_MTC);
	struct ptenc *g;
	const uint8_t *data;
	size_t len = 0;
	uint64_t s = 3, t = 1000;
	int rc = 0;

	cfg.psb_forced_only = true;
	g = ptenc_new(&cfg, 1);
	CHECK(st, g != NULL);
	if (!g)
		return;
	rc |= ptenc_start(g, t, 0x401000, false);
	for (unsigned i = 0; len < 65536 && !rc; i++) {
		uint64_t ip = some_ip(&s);

		rc |= ptenc_tnt_word(g, t, 40, next_rand(&s) | 1ull << 40);
		rc |= ptenc_indirect(g, t += 50, ip);
		rc |= ptenc_maybe_psb(g, t, ip) < 0;
		ptenc_data(g, &len);
	}
	CHECK(st, !rc);
	data = ptenc_data(g, &len);
	CHECKF(st, ptpkts_count(data, len, ppt_psb) == 1,
	       "%u PSBs unasked in %zu bytes", ptpkts_count(data, len, ppt_psb),
	       len);
	ptenc_discard(g, len / 2);
	ptenc_force_psb(g);
	rc |= ptenc_maybe_psb(g, t, 0x401000) != 1;
	rc |= ptenc_indirect(g, t += 50, 0x401020);
	rc |= ptenc_maybe_psb(g, t, 0x401020) < 0;
	rc |= ptenc_finish(g, t);
	CHECK(st, !rc);
	data = ptenc_data(g, &len);
	CHECKF(st, ptpkts_count(data, len, ppt_psb) == 1,
	       "%u PSBs after the one asked", ptpkts_count(data, len, ppt_psb));
	ptenc_free(g);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_conds_as_cond);
	RUN(&st, test_fast_as_slow);
	RUN(&st, test_rets_as_one);
	RUN(&st, test_ip_packets);
	RUN(&st, test_psb_forced_only);
	return CHECK_DONE(&st);
}
