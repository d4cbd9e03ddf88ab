/* SPDX-License-Identifier: MIT */
/*
 * sched_run: the threads' walks taking turns on the CPUs.
 *
 * Time is TSC ticks.  The CPU whose clock is furthest behind moves next:
 * its thread walks a quantum of branches, then an interrupt stops it at a
 * random instruction (FUP, TIP.PGD), the kernel writes the switch records
 * (OUT at once, IN when it has chosen), and the next thread comes back to
 * user space (TIP.PGE).  A thread switched out can be chosen by any CPU
 * once its OUT record is written, so threads migrate.  When the thread
 * had gaps, one switch in four is lost in an overflow: its packets stop
 * before the interrupt, and the next thread on that CPU starts with OVF
 * and a FUP instead of TIP.PGE.
 */
#include "synth/sched.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

struct thr {
	struct walker *w;
	uint64_t ready; /* may run from then on */
	bool started, running, done;
};

struct cpu_state {
	struct ptenc *g;
	uint64_t now; /* the running thread's clock, or idle since */
	uint32_t cur; /* NONE: idle */
	bool begun;   /* the stream has its PSB+ */
	bool lost;    /* the last switch-out was lost in an overflow */
};

static int add_sw(struct sched_result *r, uint32_t cpu, uint64_t tsc, bool out,
		  uint32_t thread, uint32_t other)
{
	if (r->nr_sw == r->cap_sw) {
		size_t cap = r->cap_sw ? r->cap_sw * 2 : 256;
		struct sched_switch *v = realloc(r->sw, cap * sizeof(*v));

		if (!v)
			return -2;
		r->sw = v;
		r->cap_sw = cap;
	}
	r->sw[r->nr_sw++] = (struct sched_switch){cpu, tsc, out, thread, other};
	return 0;
}

/* The runnable thread that has waited longest, other than `not`. */
static uint32_t pick(const struct thr *th, unsigned nth, uint32_t not )
{
	uint32_t best = NONE;

	for (uint32_t t = 0; t < nth; t++) {
		if (t == not || th[t].running || th[t].done)
			continue;
		if (best == NONE || th[t].ready < th[best].ready)
			best = t;
	}
	return best;
}

/* Thread n comes onto CPU c at tsc. */
static int enter(struct thr *th, struct cpu_state *cs, struct sched_result *r,
		 uint32_t c, uint32_t n, uint64_t tsc)
{
	enum walk_entry how = !cs->begun ? WALK_PSB
			      : cs->lost ? WALK_OVF
					 : WALK_PGE;
	int rc;

	if (!cs->begun) {
		r->cpus[c].first = n;
		r->cpus[c].start_tsc = tsc;
	}
	rc = th[n].started ? walk_switch_in(th[n].w, cs->g, tsc, how)
			   : walk_begin(th[n].w, cs->g, tsc, how);
	if (rc)
		return rc;
	th[n].started = th[n].running = true;
	cs->begun = true;
	cs->lost = false;
	cs->cur = n;
	cs->now = walk_tsc(th[n].w);
	return 0;
}

/* The running thread of CPU c has walked its quantum or all of it. */
static int preempt(struct thr *th, unsigned nth, struct cpu_state *cs,
		   struct sched_result *r, struct rng *rng, uint32_t c,
		   bool gaps)
{
	uint32_t t = cs->cur, n;
	struct walker *w = th[t].w;
	uint64_t out, in;
	int rc;

	if (!th[t].done && gaps && rng_chance(rng, 1, 4)) {
		rc = walk_gap_out(w);
		cs->lost = true;
		r->lost_switches++;
	} else {
		if (!th[t].done)
			walk_creep(w);
		rc = walk_switch_out(w, th[t].done);
	}
	if (rc)
		return rc;
	if (th[t].done && (rc = walk_end(w)))
		return rc;
	th[t].running = false;
	/* Interrupt entry and the scheduler, before the kernel writes. */
	out = walk_tsc(w) + 800 + rng_below(rng, 2400);
	th[t].ready = out + 1;
	n = pick(th, nth, t);
	if (n == NONE && !th[t].done)
		n = t;
	if (n == t) {
		/* Preempted, and chosen again: no switch, no record. */
		in = out + 600 + rng_below(rng, 2000);
		return enter(th, cs, r, c, n, in);
	}
	r->switches++;
	if ((rc = add_sw(r, c, out, true, t, n)))
		return rc;
	if (n == NONE) {
		cs->cur = NONE;
		cs->now = out;
		return add_sw(r, c, out + 1, false, SCHED_IDLE, t);
	}
	in = out + 100 + rng_below(rng, 600);
	if (in < th[n].ready + 100)
		in = th[n].ready + 100;
	if ((rc = add_sw(r, c, in, false, n, t)))
		return rc;
	return enter(th, cs, r, c, n, in + 500 + rng_below(rng, 2000));
}

/* Idle CPU c takes thread n. */
static int wake(struct thr *th, struct cpu_state *cs, struct sched_result *r,
		struct rng *rng, uint32_t c, uint32_t n)
{
	uint64_t at = cs->now > th[n].ready ? cs->now : th[n].ready;
	int rc;

	if (cs->begun) {
		if ((rc = add_sw(r, c, at + 50, true, SCHED_IDLE, n)))
			return rc;
		r->switches++;
	}
	if ((rc = add_sw(r, c, at + 100, false, n, SCHED_IDLE)))
		return rc;
	return enter(th, cs, r, c, n, at + 600 + rng_below(rng, 2000));
}

static int run(const struct walk_cfg *cfgs, struct thr *th, unsigned nth,
	       struct cpu_state *cs, unsigned ncpu, struct sched_result *r,
	       struct rng *rng)
{
	for (uint32_t c = 0; c < ncpu && c < nth; c++) {
		int rc = enter(th, &cs[c], r, c, c, walk_tsc(th[c].w));

		if (rc)
			return rc;
	}
	for (;;) {
		uint32_t best = NONE, ready = pick(th, nth, NONE);
		uint64_t key = UINT64_MAX;
		int rc;

		for (uint32_t c = 0; c < ncpu; c++) {
			uint64_t k = cs[c].now;

			if (cs[c].cur == NONE) {
				if (ready == NONE)
					continue;
				if (th[ready].ready > k)
					k = th[ready].ready;
			}
			if (k < key) {
				key = k;
				best = c;
			}
		}
		if (best == NONE)
			return 0;
		if (cs[best].cur == NONE) {
			rc = wake(th, &cs[best], r, rng, best, ready);
		} else {
			uint32_t t = cs[best].cur;

			rc = walk_run(th[t].w, 100 + rng_below(rng, 4000));
			if (rc < 0)
				return rc;
			th[t].done = rc == 1;
			rc = preempt(th, nth, &cs[best], r, rng, best,
				     cfgs[t].gap_every != 0);
		}
		if (rc)
			return rc;
	}
}

int sched_run(const struct program *p, const struct walk_cfg *cfgs,
	      struct walk_thread *th, unsigned nth, unsigned ncpu,
	      uint64_t seed, struct sched_result *r, char *err, size_t errlen)
{
	struct thr *ts = calloc(nth, sizeof(*ts));
	struct cpu_state *cs = calloc(ncpu, sizeof(*cs));
	struct rng rng;
	int rc = -2;

	memset(r, 0, sizeof(*r));
	r->cpus = calloc(ncpu, sizeof(*r->cpus));
	r->nr_cpus = ncpu;
	if (!ts || !cs || !r->cpus)
		goto out;
	rng_seed(&rng, seed ^ 0x5c4edull);
	for (uint32_t t = 0; t < nth; t++) {
		ts[t].w = walk_new(p, &cfgs[t], &th[t], err, errlen);
		if (!ts[t].w) {
			rc = -3;
			goto out;
		}
		ts[t].ready = walk_tsc(ts[t].w);
	}
	for (uint32_t c = 0; c < ncpu; c++) {
		const struct walk_cfg *k = &cfgs[c % nth];

		cs[c].cur = NONE;
		cs[c].now = ts[c % nth].ready;
		r->cpus[c].first = NONE;
		cs[c].g = ptenc_new(&k->pt, k->seed ^ 0x5eed);
		if (!cs[c].g)
			goto out;
	}
	rc = run(cfgs, ts, nth, cs, ncpu, r, &rng);
	for (uint32_t c = 0; c < ncpu && !rc; c++) {
		struct walk_thread dummy = {0};

		if (!cs[c].begun)
			continue;
		if (ptenc_finish(cs[c].g, cs[c].now)) {
			rc = -1;
			break;
		}
		rc = walk_take_aux(&dummy, cs[c].g);
		r->cpus[c].aux = dummy.aux;
		r->cpus[c].aux_len = dummy.aux_len;
	}
out:
	if (rc && rc != -3)
		walk_fail_msg(rc, seed, err, errlen);
	for (uint32_t t = 0; ts && t < nth; t++)
		walk_free(ts[t].w);
	for (uint32_t c = 0; cs && c < ncpu; c++)
		ptenc_free(cs[c].g);
	free(ts);
	free(cs);
	if (rc)
		sched_free(r);
	return rc ? -1 : 0;
}

void sched_free(struct sched_result *r)
{
	for (unsigned c = 0; r->cpus && c < r->nr_cpus; c++)
		free(r->cpus[c].aux);
	free(r->cpus);
	free(r->sw);
	memset(r, 0, sizeof(*r));
}
