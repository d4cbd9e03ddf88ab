/* SPDX-License-Identifier: MIT */
/*
 * ptenc: the packets Intel PT hardware emits for user-only tracing of
 * one thread, given its instruction-level events.  It knows no OS: the
 * emulation backend (capture/) feeds it what ptrace sees, mt-synth
 * (synth/) the walks it makes up.
 */
#ifndef MT_PTENC_H
#define MT_PTENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ptenc_timing {
	PTENC_TSC, /* TSC in PSB+ only */
	PTENC_MTC, /* + TMA and MTC */
	PTENC_CYC, /* + CYC before every CYC-eligible packet */
};

struct ptenc_cfg {
	enum ptenc_timing timing;
	bool noretcomp;
	unsigned psb_period, mtc_period;
	uint32_t tsc_ctc_ratio; /* TSC ticks per CTC tick */
	uint8_t cbr;		/* core:bus ratio == max non-turbo */
	unsigned tnt_max;	/* 6 or 47 bits */
	unsigned pad_chance;	/* in 1/1024 */
	/* A PSB+ only where ptenc_force_psb() asks for one, not every PSB
	 * period: for a caller whose source compresses the returns and so
	 * must know where the decoder's return stack empties. */
	bool psb_forced_only;
};

struct ptenc;

struct ptenc *ptenc_new(const struct ptenc_cfg *cfg, uint64_t seed);
void ptenc_free(struct ptenc *g);
/* The bytes written so far. */
const uint8_t *ptenc_data(const struct ptenc *g, size_t *len);

/* Each call gives the time (TSC) at which the event happens, and returns
 * 0 or -ENOMEM (the encoder keeps no half packet then). */
int ptenc_start(struct ptenc *g, uint64_t tsc, uint64_t ip, bool enabled);
int ptenc_cond(struct ptenc *g, uint64_t tsc, bool taken);
/* n (at most 64) conditional branches, bit k of bits the k-th (1: taken),
 * the first at t0 and the others spread evenly up to t0 + dt: the same
 * packets as ptenc_cond() for each at its time, for less; -EINVAL for
 * more than 64. */
int ptenc_conds(struct ptenc *g, uint64_t t0, uint64_t dt, unsigned n,
		uint64_t bits);
/* The same, the branches as a shift register holds them: below the
 * leading 1 of word, the first highest (at most 63; -EINVAL for 0). */
int ptenc_tnt_word(struct ptenc *g, uint64_t t0, uint64_t dt, uint64_t word);
/* The time ptenc_conds() gives the k-th of n branches run from t0 over
 * dt (for a caller that times each of them as the packets do). */
static inline uint64_t ptenc_bit_time(uint64_t t0, uint64_t dt, unsigned n,
				      unsigned k)
{
	return n > 1 ? t0 + ((k * ((dt << 16) / (n - 1))) >> 16) : t0;
}
/* The same, where the branches whose bits are set in rets (bit k: the
 * k-th, the first 0) are returns, the i-th of them (the first 0) to
 * stack[depth - 1 - i], the caller's stack of return addresses: a taken
 * bit each where the encoder's own stack compresses it, else a TIP, as
 * ptenc_ret() does (-EPROTO: the stack holds fewer). */
int ptenc_tnt_word_rets(struct ptenc *g, uint64_t t0, uint64_t dt,
			uint64_t word, uint64_t rets, const uint64_t *stack,
			size_t depth);
void ptenc_call(struct ptenc *g, uint64_t ret_ip);
int ptenc_indirect(struct ptenc *g, uint64_t tsc, uint64_t target);
int ptenc_ret(struct ptenc *g, uint64_t tsc, uint64_t target);
/* syscall: TIP.PGD now, TIP.PGE(resume) at tsc_back. */
int ptenc_syscall(struct ptenc *g, uint64_t tsc, uint64_t tsc_back,
		  uint64_t resume_ip);
/* Tracing stops at a syscall (TIP.PGD), at an interrupt or signal at ip
 * (FUP, TIP.PGD), and starts again at ip (TIP.PGE). */
int ptenc_pgd(struct ptenc *g, uint64_t tsc);
int ptenc_async_pgd(struct ptenc *g, uint64_t tsc, uint64_t ip);
int ptenc_pge(struct ptenc *g, uint64_t tsc, uint64_t ip);
/* The program wrote value into the trace at ip (PTWRITE): PTW, then the
 * FUP that names ip (as fup_on_ptw asks). */
int ptenc_ptwrite(struct ptenc *g, uint64_t tsc, uint64_t value, uint64_t ip);
/* The compression stack no longer matches (a longjmp-like jump). */
void ptenc_unwind(struct ptenc *g);
/* Hardware lost packets: OVF then FUP(resume) at tsc. */
int ptenc_overflow(struct ptenc *g, uint64_t tsc, uint64_t resume_ip);
/*
 * PSB+ at the current IP, if the PSB period has been reached: 1 if one was
 * written, 0 if not, -ENOMEM.
 */
int ptenc_maybe_psb(struct ptenc *g, uint64_t tsc, uint64_t ip);
/* The next ptenc_maybe_psb() writes PSB+ whatever the period: a new
 * snapshot chunk must start at a sync point. */
void ptenc_force_psb(struct ptenc *g);
/* Forget the oldest n bytes written (at most all of them), as a ring
 * that keeps the newest does: ptenc_data() then starts n bytes later. */
void ptenc_discard(struct ptenc *g, size_t n);
/* Flush pending TNT bits at the end. */
int ptenc_finish(struct ptenc *g, uint64_t tsc);

#endif
