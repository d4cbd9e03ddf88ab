/* SPDX-License-Identifier: MIT */
/*
 * When each event happened, and whose it is.
 *
 * Events of a per-CPU stream go to the thread the switch records say ran
 * then.  Calls, returns and jumps wait for the next time point and are
 * spread between the two points by the instructions before them.
 */
#include "decode/strm.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Events past which the clock has not moved wait for the next time point
 * (held_release), but no more than this many: a TSC-only trace between
 * PSBs, say.  The rest keep the time of the last point.
 */
#define HELD_MAX 65536

/* The most events the step window holds, whatever their times. */
#define WIN_MAX 65536

static void held_release(struct strm *s, uint64_t t1, bool bound, bool tick);

static struct dec_thread *route(struct strm *s, uint64_t t)
{
	struct dec_capture *c = s->c;

	if (s->thread)
		return s->thread;
	/* Per-CPU: the last switch on this CPU at or before t. */
	while (s->sw_cur < c->nr_switches) {
		const struct dec_switch *w = &c->switches[s->sw_cur];

		if (w->cpu != s->cpu) {
			s->sw_cur++;
			continue;
		}
		if (w->time > t)
			break;
		s->sw_valid = !w->out;
		s->sw_since = w->time;
		s->sw_thread = s->sw_valid
				       ? s->io.thread(s->io.ctx, w->pid, w->tid)
				       : NULL;
		if (s->sw_valid && !s->sw_thread)
			s->rc = -ENOMEM;
		s->sw_cur++;
	}
	return s->sw_valid ? s->sw_thread : NULL;
}

bool dec_tid_chosen(const struct dec_capture *c, uint32_t tid)
{
	if (!c->opts.nr_tids)
		return true;
	for (size_t i = 0; i < c->opts.nr_tids; i++)
		if (c->opts.tids[i] == tid)
			return true;
	return false;
}

/* An event straight into th's array: 0 or -ENOMEM. */
static int push_to(struct strm *s, struct dec_thread *th, uint64_t t,
		   enum dec_kind k, uint64_t ip, uint64_t aux)
{
	return s->out.deliver(s->out.ctx, th, false, s->thread != NULL, t, k,
			      ip, aux);
}

/*
 * The switch records of this CPU from sw_cur on, up to time t, one a
 * call: the next at or after *i (moved past it), with its thread in
 * *th; NULL when there are no more (or out of memory: s->rc).
 */
static const struct dec_switch *next_switch(struct strm *s, size_t *i,
					    uint64_t t, struct dec_thread **th)
{
	struct dec_capture *c = s->c;

	for (; *i < c->nr_switches; (*i)++) {
		const struct dec_switch *w = &c->switches[*i];

		if (w->cpu != s->cpu)
			continue;
		if (w->time > t)
			return NULL;
		(*i)++;
		*th = s->io.thread(s->io.ctx, w->pid, w->tid);
		if (!*th) {
			s->rc = -ENOMEM;
			return NULL;
		}
		return w;
	}
	return NULL;
}

/*
 * An overflow on a shared CPU lost the trace of every thread that left
 * the CPU during it, not only the one it resumes in: they were switched
 * out without a trace of it, and their next TIP.PGE would seem to go on
 * from their last event.  Each gets an overflow of its own (no IP: its
 * next start resumes) when it left, its gap from the last event decoded
 * here or from when it came in.
 */
static void lost_in_overflow(struct strm *s, uint64_t t, uint64_t floor)
{
	struct dec_capture *c = s->c;
	struct dec_thread *in = NULL, *th;
	const struct dec_switch *w;
	uint64_t in_time = 0;
	size_t i = s->sw_cur;

	while ((w = next_switch(s, &i, t, &th))) {
		uint64_t from;

		if (!w->out) {
			in = th;
			in_time = w->time;
			continue;
		}
		from = th == in && in_time > floor ? in_time : floor;
		if (dec_tid_chosen(c, th->tid) &&
		    push_to(s, th, w->time, DEC_OVERFLOW, 0,
			    from ? from : w->time)) {
			s->rc = -ENOMEM;
			return;
		}
	}
}

/*
 * Between a decode error and the next sync point nothing of a shared
 * CPU's trace is decoded, but the switch records still say who ran: each
 * thread's gap covers its own time on the CPU, not the others'.
 */
static void switches_in_gap(struct strm *s, uint64_t t, bool to_end)
{
	struct dec_thread *th;
	const struct dec_switch *w;
	size_t i = s->sw_cur;

	while ((w = next_switch(s, &i, t, &th))) {
		if (dec_tid_chosen(s->c, th->tid) &&
		    push_to(s, th, w->time, DEC_SWITCH, 0, !w->out)) {
			s->rc = -ENOMEM;
			return;
		}
		/* After the buffer's last sync point nothing says how far
		 * its trace went: it ends no later than its thread left. */
		if (to_end && w->out)
			return;
	}
}

static void deliver(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		    uint64_t aux)
{
	struct dec_capture *c = s->c;
	struct dec_thread *th;

	if (k == DEC_OVERFLOW && !s->thread && s->sw_valid)
		lost_in_overflow(s, t, s->win_floor);
	if (s->sw_gap && !s->thread && k != DEC_ERROR)
		switches_in_gap(s, t, false);
	s->sw_gap = k == DEC_ERROR;
	th = route(s, t);
	/* Its thread's gap begins no earlier than it came onto the CPU. */
	if (k == DEC_OVERFLOW && !s->thread && aux && aux < s->sw_since)
		aux = s->sw_since;

	if (!th || s->rc || !dec_tid_chosen(c, th->tid))
		return;
	s->rc = s->out.deliver(s->out.ctx, th, true, s->thread != NULL, t, k,
			       ip, aux);
}

uint64_t strm_mtc_span(const struct dec_capture *c)
{
	const struct pd_pt_info *pt = &c->pt;
	uint64_t tsc;

	if (!(c->pt_config & pt->cyc_bit) || !(c->pt_config & pt->mtc_bit) ||
	    !pt->tsc_ctc_n || !pt->tsc_ctc_d)
		return 0;
	tsc = ((uint64_t)pt->tsc_ctc_n << c->mtc_freq) / pt->tsc_ctc_d;
	return pd_tsc_to_perf_time(tsc, pt) - pd_tsc_to_perf_time(0, pt);
}

/* How long the 8 CTC bits of an MTC packet take to wrap around, in perf
 * ns; 0 without MTC. */
uint64_t strm_mtc_wrap(const struct dec_capture *c)
{
	const struct pd_pt_info *pt = &c->pt;
	uint64_t tsc;

	/* (without TSC packets, nothing would put it right) */
	if (!(c->pt_config & pt->mtc_bit) || !(c->pt_config & pt->tsc_bit) ||
	    !pt->tsc_ctc_n || !pt->tsc_ctc_d || c->mtc_freq > 24)
		return 0;
	tsc = ((uint64_t)pt->tsc_ctc_n << (c->mtc_freq + 8)) / pt->tsc_ctc_d;
	return pd_tsc_to_perf_time(tsc, pt) - pd_tsc_to_perf_time(0, pt);
}

static void win_deliver_first(struct strm *s)
{
	const struct timed *e = &s->win[s->win_head];

	s->win_floor = e->t;
	deliver(s, e->t, e->k, e->ip, e->aux);
	s->win_head++;
	s->win_n--;
	if (!s->win_n)
		s->win_head = 0;
}

void strm_end_gap(struct strm *s)
{
	if (s->sw_gap && !s->thread && s->end_time)
		switches_in_gap(s, s->end_time, true);
	s->sw_gap = false;
}

/* Whether an overflow's gap waits in aq: the one that began the wait
 * (its gap begins before the wait, at a time that stays). */
static bool aq_has_overflow(const struct strm *s)
{
	for (size_t i = 0; i < s->aq_n; i++)
		if (s->aq[i].k == DEC_OVERFLOW)
			return true;
	return false;
}

/* What waited since the overflow goes on, later by shift; so does the
 * start of any later overflow's gap. */
static void aq_replay(struct strm *s, uint64_t shift)
{
	bool later = false;

	s->unanchored = false;
	s->wrap_fix = 0;
	for (size_t i = 0; i < s->aq_n; i++) {
		const struct timed *e = &s->aq[i];
		uint64_t aux = e->aux;

		if (e->k == DEC_OVERFLOW) {
			if (later)
				aux += shift;
			later = true;
		}
		strm_emit_now(s, e->t + shift, e->k, e->ip, aux);
	}
	s->aq_n = 0;
}

/*
 * An MTC packet carries 8 bits of the CTC, so the time since the last one
 * is known modulo 256 MTC periods (mtc_wrap), and an overflow drops the
 * MTCs that fall inside it: after one longer than that, libipt's clock
 * runs short by whole wraps until the next TSC sets it (perf's decoder
 * ignores MTCs after an overflow until then).  With CYC, the OVF's own
 * cycle count times it: the first MTC after it then steps the clock back
 * by the wraps, which are added back (wrap_fix) to every time libipt
 * gives until the TSC.  Without CYC nothing tells until the TSC, at the
 * next PSB: what was decoded since the overflow waits (in aq, and the
 * transfers held for their time), and the TSC's reading ahead of the
 * clock, to the nearest wrap, is what the overflow hid: all of it moves
 * by that much.  Returns the time of a reading t from libipt.
 */
static uint64_t mtc_wraps_lost_in_overflow(struct strm *s, uint64_t t, bool tsc)
{
	uint64_t w = s->mtc_wrap, shift = 0;

	if (!tsc) {
		t += s->wrap_fix;
		if (t + w / 2 < s->last_time) {
			uint64_t k = (s->last_time - t + w / 2) / w;

			s->wrap_fix += k * w;
			t += k * w;
		}
		return t;
	}
	if (t > s->last_time)
		shift = (t - s->last_time + w / 2) / w * w;
	if (shift) {
		s->last_time += shift;
		for (size_t i = 0; i < s->nheld; i++)
			s->held[i].t += shift;
		if (s->pend != PEND_NONE)
			s->pend_time += shift;
		if (s->ovf_pending && aq_has_overflow(s))
			s->ovf_before += shift;
	}
	aq_replay(s, shift);
	return t;
}

void strm_overflow_unanchors(struct strm *s)
{
	if (!s->mtc_wrap || s->unanchored)
		return;
	s->unanchored = true;
	s->wrap_fix = 0;
}

void strm_flush(struct strm *s)
{
	s->hold_until = 0;
	/* No TSC came: the clock is all there is. */
	if (s->unanchored)
		aq_replay(s, 0);
	while (s->win_n)
		win_deliver_first(s);
}

/*
 * An event with its time.  With CYC and MTC it waits two MTC periods
 * before it goes to its thread, so that a wrong clock rate found at the
 * next MTC can still be corrected (cyc_rate_after_psb).
 */
void strm_emit_now(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		   uint64_t aux)
{
	struct timed *e;

	if (s->unanchored) {
		if (mt_grow((void **)&s->aq, &s->aq_cap, s->aq_n + 1,
			    sizeof(*s->aq))) {
			/* (the times would be a guess: the decode stops) */
			s->rc = -ENOMEM;
			aq_replay(s, 0);
		} else {
			s->aq[s->aq_n++] = (struct timed){t, ip, aux, k};
			return;
		}
	}
	if (!s->mtc_span) {
		deliver(s, t, k, ip, aux);
		return;
	}
	while (s->win_n &&
	       (s->win_n >= WIN_MAX ||
		(s->win[s->win_head].t + 2 * s->mtc_span < t &&
		 !(s->hold_until && s->win[s->win_head].t > s->hold_from))))
		win_deliver_first(s);
	if (s->win_head + s->win_n == s->win_cap) {
		if (s->win_head) {
			memmove(s->win, s->win + s->win_head,
				s->win_n * sizeof(*s->win));
			s->win_head = 0;
		} else {
			size_t cap = s->win_cap ? 2 * s->win_cap : 256;
			struct timed *n = realloc(s->win, cap * sizeof(*n));

			if (!n) {
				/* (a rate corrected later would not reach
				 * these: the decode stops) */
				s->rc = -ENOMEM;
				strm_flush(s);
				deliver(s, t, k, ip, aux);
				return;
			}
			s->win = n;
			s->win_cap = cap;
		}
	}
	e = &s->win[s->win_head + s->win_n++];
	e->t = t;
	e->k = k;
	e->ip = ip;
	e->aux = aux;
}

/*
 * libipt's clock runs too fast for one MTC period after a PSB: at a PSB
 * it restarts its cycle count from the TSC, but at the next MTC it sets
 * the cycle rate from the CTC time since the MTC before the PSB divided
 * by the cycles counted since the PSB only.  The MTC after that puts the
 * clock right, and it steps back (by up to 0.7 of a period in our
 * captures).  Everything timed since the MTC where the rate went wrong
 * (one period before the reading that steps back: MTCs come exactly one
 * period apart) is scaled into the time the MTCs allow, keeping the
 * proportions CYC gave.  Returns the time now, never before an event
 * already delivered.
 */
static uint64_t cyc_rate_after_psb(struct strm *s, uint64_t t)
{
	uint64_t peak = s->last_time, a, to;

	to = t > s->win_floor ? t : s->win_floor;
	a = t > s->mtc_span ? t - s->mtc_span : 0;
	if (a < s->win_floor)
		a = s->win_floor;
	if (peak <= a || to < a)
		return peak;
	for (size_t i = 0; i < s->win_n; i++) {
		struct timed *e = &s->win[s->win_head + i];

		if (e->t > a)
			e->t = a + (uint64_t)((unsigned __int128)(e->t - a) *
					      (to - a) / (peak - a));
	}
	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].t > to)
			s->held[i].t = to;
	s->last_time = to;
	return to;
}

/* Packets looked at after a PSB for the MTCs that set libipt's rate. */
#define PSB_SCAN_MAX 4096

/*
 * At the first MTC after a PSB that follows some cycles, libipt sets its
 * rate from the CTC time since the MTC before the PSB over the cycles
 * counted since then, which leave out those run between the PSB's
 * previous CYC and the PSB: when the PSB came late in its MTC period, the
 * rate is many times too fast (32 times, for a PSB 25 cycles before the
 * MTC), and until the next MTC the clock runs that much ahead,
 * microseconds, before it steps back (cyc_rate_after_psb).  By then the
 * step window, which keeps two periods by the times the clock gave, has
 * let go of the events the step back would put right.  perf's decoder
 * looks ahead to the next MTC for its rate; here the packets after the
 * PSB tell how far the clock can run ahead: the MTC where libipt sets
 * the rate (the j-th, at most j periods after the PSB's TSC), the cycles
 * counted before it and those in the period after it.  The window keeps
 * what comes after the PSB until the clock steps back after that MTC's
 * next one, or reads past the most the fast rate can reach.
 */
static void psb_hold_scan(struct strm *s, uint64_t at)
{
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	struct pt_packet p;
	uint64_t tsc = 0, cyc = 0, before = 0, span = s->mtc_span, t, reach;
	unsigned mtcs = 0, j = 0, periods = 0;
	uint8_t ctc0 = 0;
	bool have_tsc = false, done = false;

	s->hold_until = 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)s->buf;
	cfg.end = (uint8_t *)s->buf + s->len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return;
	if (pt_pkt_sync_set(d, at) < 0)
		done = true;
	for (int n = 0; n < PSB_SCAN_MAX && !done; n++) {
		if (pt_pkt_next(d, &p, sizeof(p)) < 0)
			break;
		switch (p.type) {
		case ppt_psb:
			done = n > 0;
			break;
		case ppt_ovf:
			/* libipt calibrates afresh after it */
			done = true;
			break;
		case ppt_tsc:
			tsc = p.payload.tsc.tsc;
			have_tsc = true;
			break;
		case ppt_tma:
			/* the CTC of the last MTC before the TSC */
			ctc0 = (uint8_t)(p.payload.tma.ctc >> s->c->mtc_freq);
			break;
		case ppt_cyc:
			cyc += p.payload.cyc.value;
			break;
		case ppt_mtc:
			mtcs++;
			if (before) {
				done = true;
			} else if (cyc) {
				j = mtcs;
				before = cyc;
				periods = (uint8_t)(p.payload.mtc.ctc - ctc0);
				if (!periods)
					periods = 256;
				cyc = 0;
			}
			break;
		default:
			break;
		}
	}
	pt_pkt_free_decoder(d);
	if (!have_tsc || !before)
		return;
	t = pd_tsc_to_perf_time(tsc, &s->c->pt);
	reach = (uint64_t)((unsigned __int128)span * periods * cyc / before);
	s->hold_from = t;
	s->hold_back = t + j * span;
	s->hold_until = t + (j + 1) * span + reach;
}

/* Past a PSB the decoder has read since the last look, its hold. */
static void psb_look(struct strm *s)
{
	uint64_t off, at = UINT64_MAX;

	if (!s->mtc_span || !s->dec || pt_blk_get_offset(s->dec, &off) < 0)
		return;
	while (s->psb_next < off) {
		at = s->psb_next;
		if (!dec_find_psb(s->buf, s->len, at + 16, &s->psb_next))
			s->psb_next = UINT64_MAX;
	}
	if (at != UINT64_MAX)
		psb_hold_scan(s, at);
}

/* An event that is no transfer: what waits goes first, as it was. */
void strm_emit(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
	       uint64_t aux)
{
	strm_settle(s);
	strm_emit_now(s, t, k, ip, aux);
}

/*
 * Timing packets give the time of the instruction they bind to, and none
 * of those in between: a TNT's CYC times its first branch, and the calls
 * and returns after it until the next timing packet would all take that
 * time (perf stamps them so).  So a transfer waits until the clock moves
 * again and is then placed between the two time points in proportion to
 * the instructions before it: exact where instructions take equal time,
 * and never outside the interval the packets allow.  No time point is
 * made up: across an overflow, a resync or a decode error, or with no
 * second point, an event keeps the time of the last one.
 */
void strm_held_push(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		    uint64_t aux)
{
	size_t n = s->nheld;

	strm_held_push_at(s, s->pend_pos, t, k, ip, aux);
	if (s->nheld > n && s->pend_fixed) {
		s->held[n].fixed = true;
		s->held[n].t = t;
	}
}

void strm_held_push_at(struct strm *s, uint64_t pos, uint64_t t,
		       enum dec_kind k, uint64_t ip, uint64_t aux)
{
	struct held *h;

	if (!s->have_mark || s->nheld >= HELD_MAX) {
		strm_emit(s, t, k, ip, aux);
		return;
	}
	if (s->nheld == s->held_cap) {
		size_t cap = s->held_cap ? 2 * s->held_cap : 256;
		struct held *n = realloc(s->held, cap * sizeof(*n));

		if (!n) {
			/* (it would keep the last time: the decode stops) */
			s->rc = -ENOMEM;
			strm_emit(s, t, k, ip, aux);
			return;
		}
		s->held = n;
		s->held_cap = cap;
	}
	/* A time point read after the transfer's block binds to the
	 * transfer itself: the packet it precedes is the transfer's. */
	h = &s->held[s->nheld++];
	h->pos = pos;
	h->t = s->last_time;
	h->k = k;
	h->ip = ip;
	h->aux = aux;
	h->fixed = false;
}

/*
 * A time point that is no tick (a PSB's, a stop's) binds to where the
 * decoder stands, which may be far from where the time was taken: after
 * a call into a spin loop (`jmp .`, which needs no packet, so libipt
 * never walks it), the next PSB comes when the loop has filled the PSB
 * period with MTCs, tens of milliseconds on, and the stop at the end of
 * the capture seconds on.  What waits for such a point is placed no
 * later than the pace of the last stretch between ticks, this many times
 * over, would put it.
 */
#define UNWALKED_PACE 8

/* a * b / c (c > 0), as 128-bit arithmetic has it.  Most spans between
 * time points are short and the product fits 64 bits: a 64-bit division
 * is the same quotient for a fraction of the cost, once an event. */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
	if (!((a | b) >> 32))
		return a * b / c;
	return (uint64_t)((unsigned __int128)a * b / c);
}

/* Where between the time points t0 (at instruction p0) and t1 (at p1,
 * a tick or not) the transfer at instruction pos goes. */
static uint64_t placed(const struct strm *s, uint64_t t0, uint64_t p0,
		       uint64_t t1, uint64_t p1, uint64_t pos, bool tick)
{
	uint64_t t = t0 + mul_div(t1 - t0, pos - p0, p1 - p0);
	uint64_t most;

	if (tick || !s->rate_dp)
		return t;
	most = t0 + (uint64_t)((unsigned __int128)s->rate_dt * UNWALKED_PACE *
			       (pos - p0) / s->rate_dp);
	return most < t ? most : t;
}

/*
 * A time point (t1, a tick or not) right after a call, return or jump:
 * the transfer ran before it, though libipt reports it before any block
 * at the destination.  Timed now, between the last point and this one,
 * not by the last of the points before that block, which is seconds
 * later for one into a spin loop (`jmp .` needs no packet, so libipt
 * never walks it, and PSBs and the stop come all the same).
 */
static void pend_timed(struct strm *s, uint64_t t1, bool tick)
{
	uint64_t t0 = s->last_time, p0 = s->mark_pos, p1 = s->icount;
	uint64_t pos = s->pend_pos;

	s->pend_time = t1 > t0 && p1 > p0 && pos >= p0 && pos <= p1
			       ? placed(s, t0, p0, t1, p1, pos, tick)
			       : t1;
	s->pend_fixed = true;
}

/* The clock reads t1 at the current instruction; bound: the reading
 * belongs there (not the first after lost trace). */
static void held_release(struct strm *s, uint64_t t1, bool bound, bool tick)
{
	uint64_t t0 = s->last_time, p0 = s->mark_pos, p1 = s->icount;
	size_t n = s->nheld;

	bool transfer = false;

	s->nheld = 0;
	for (size_t i = 0; i < n; i++) {
		const struct held *h = &s->held[i];
		uint64_t t = h->t;

		transfer |= h->k != DEC_INLINE;
		if (h->fixed) {
			/* timed by the point that came before its block */
		} else if (bound && t1 > t0 && p1 > p0 && h->pos >= p0 &&
			   h->pos <= p1) {
			t = placed(s, t0, p0, t1, p1, h->pos, tick);
		} else if (t < t0) {
			t = t0;
		}
		strm_emit_now(s, t, h->k, h->ip, h->aux);
	}
	/* The pace a point that is no tick, or an overflow's resume, is
	 * held to: that of the last stretch between ticks in which a call,
	 * return or jump waited.  An inlined call's change (DEC_INLINE)
	 * waits like a transfer but must not set it: with --no-inline it is
	 * not there, and the real calls after it would move. */
	if (transfer && tick && s->mark_tick && t1 > t0 && p1 > p0) {
		s->rate_dt = t1 - t0;
		s->rate_dp = p1 - p0;
	}
}

/*
 * An overflow in a trace without CYC carries no time of its own: tracing
 * resumed somewhere between the last time point and the next.  At the
 * next one (t1, bound to the current instruction) the resume is placed
 * back from it by the instructions run since, at the pace of the last
 * stretch between time points, and never before the last point.
 */
static void ovf_resolve(struct strm *s, uint64_t t1, bool bound)
{
	uint64_t t0 = s->last_time, r = t0;

	s->ovf_pending = false;
	if (bound && t1 > t0) {
		uint64_t back = 0;

		if (s->rate_dp)
			back = (uint64_t)((unsigned __int128)s->rate_dt *
					  (s->icount - s->ovf_pos) /
					  s->rate_dp);
		r = t1 - (back < t1 - t0 ? back : t1 - t0);
	}
	/* The last instruction before it ran after the last time point, by
	 * the same pace. */
	if (s->ovf_before + s->ovf_fwd < r)
		s->ovf_before += s->ovf_fwd;
	else if (s->ovf_before < r)
		s->ovf_before = r;
	strm_emit_now(s, r, DEC_OVERFLOW, s->ovf_ip, s->ovf_before);
	s->last_time = r;
	s->mark_pos = s->ovf_pos;
	s->mark_tick = false;
}

/* Whatever waits goes out with the last time known. */
void strm_settle(struct strm *s)
{
	if (s->ovf_pending)
		ovf_resolve(s, 0, false);
	if (s->nheld)
		held_release(s, 0, false, false);
}

/*
 * The time of what is being decoded: the last timing update the decoder
 * has reached in the instruction flow.  Not pt_blk_time(): the decoder
 * reads packets ahead of the instructions it returns, so after a long
 * stretch that needs no packets (a spin loop, straight-line code) its
 * clock is already at the packets that end the stretch, and a call made
 * at its start would take the time of its end.  Tick events
 * (enable_tick_events) come where the timing packets bind in the flow.
 */
uint64_t strm_now(const struct strm *s)
{
	return s->last_time;
}

/*
 * A time point.  After an overflow or at an enable, time passed that no
 * instruction of ours accounts for: what waits keeps the last time.
 */
uint64_t strm_event_time(struct strm *s, const struct pt_event *ev)
{
	uint64_t t;
	bool bound;

	if (!ev->has_tsc)
		return strm_now(s);
	psb_look(s);
	t = pd_tsc_to_perf_time(ev->tsc, &s->c->pt);
	/* (a PSB's status events bear the time of its TSC) */
	if (s->unanchored)
		t = mtc_wraps_lost_in_overflow(s, t, ev->status_update);
	bound = ev->type != ptev_overflow && ev->type != ptev_enabled;
	if (t < s->last_time && bound && ev->type == ptev_tick && s->mtc_span &&
	    !s->ovf_pending) {
		if (t >= s->hold_back)
			s->hold_until = 0;
		t = cyc_rate_after_psb(s, t);
	}
	if (t < s->last_time)
		t = s->last_time;
	if (t >= s->hold_until)
		s->hold_until = 0;
	if (s->ovf_pending)
		ovf_resolve(s, t, bound);
	if (s->nheld)
		held_release(s, t, bound, ev->type == ptev_tick);
	if (bound && s->pend != PEND_NONE && !s->pend_fixed)
		pend_timed(s, t, ev->type == ptev_tick);
	s->mark_tick = ev->type == ptev_tick;
	s->last_time = t;
	s->mark_pos = s->icount;
	s->have_mark = true;
	return t;
}