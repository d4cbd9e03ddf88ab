/*
 * Pass 1, second half: libipt's block decoder over each AUX stream.
 *
 * Blocks end at every call and jump (end_on_call, end_on_jump) as well as
 * at conditional branches, returns and indirect branches, so each block's
 * last instruction is a control transfer whose destination is the next
 * block's first IP.  A transfer becomes an event only when it matters to
 * a call tree: every call and return, and a jump only when it lands
 * outside the function it left.  The function of the current IP is kept
 * as an address range, so a loop's branches cost two compares.
 *
 * Chunks of one stream that follow each other in the AUX area are decoded
 * as one buffer; a chunk that does not is a separate buffer and the lost
 * bytes between become a DEC_LOST event.  In snapshot mode every chunk
 * is its own snapshot.  Per-CPU streams are split among threads with the
 * capture's context-switch records.
 */
#include "decode/dec_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum pend { PEND_NONE, PEND_CALL, PEND_RET, PEND_JUMP };

#define LEN_CACHE   1024
#define RANGE_CACHE 512

/*
 * Work done without reading a packet before we call it a loop no trace
 * will end.  Real code reads a packet at least every 47 conditional
 * branches or compressed returns (a long TNT), and between them only
 * direct jumps and calls run, a handful at most; a jump cycle (jmp .,
 * l1: call l1) runs for ever, in a wrong binary or when the decoder is
 * out of step with the packets.  perf stops after 100000 branches; a
 * block here ends at every branch.  Calls have a lower limit of their
 * own, because each one is a frame kept in memory: with both, the work
 * and the memory of any input are linear in its size.
 */
#define MAX_BLOCKS_STUCK 16384
#define MAX_CALLS_STUCK	 1024

/*
 * Events past which the clock has not moved wait for the next time point
 * (held_release), but no more than this many: a TSC-only trace between
 * PSBs, say.  The rest keep the time of the last point.
 */
#define HELD_MAX 65536

struct range_ent {
	uint64_t ip, lo, hi;
};

/* A call, return or jump waiting for its time. */
struct held {
	uint64_t pos; /* instructions decoded up to the transfer */
	uint64_t t, ip, aux;
	enum dec_kind k;
};

struct strm {
	struct dec_capture *c;
	struct pt_block_decoder *dec;
	uint32_t pid;
	/* where events go: a thread, or a CPU's switch timeline */
	struct dec_thread *thread;
	uint32_t cpu;
	size_t sw_cur; /* index into c->switches (per-CPU) */
	struct dec_thread *sw_thread;
	bool sw_valid;

	uint64_t last_time; /* perf ns, never decreasing */
	uint64_t icount;    /* instructions decoded in this buffer */
	uint64_t mark_pos;  /* icount where last_time was read */
	bool have_mark;
	bool mark_tick;	   /* the mark is a tick: a timing packet bound there */
	struct held *held; /* owned by dec_streams(), kept across buffers */
	size_t nheld, held_cap;
	uint64_t rate_dt, rate_dp; /* the last stretch between time points */
	/* an overflow whose resume time waits for the next time point */
	bool ovf_pending;
	uint64_t ovf_ip, ovf_before, ovf_pos, ovf_fwd;
	bool synced;  /* SYNC emitted for this sync point */
	bool tracing; /* between a stop and a resume: false */
	enum pend pend;
	uint64_t pend_time, pend_from, pend_ret, pend_pos;
	uint64_t last_ip; /* last instruction decoded */
	int last_isid;
	bool last_far;		 /* the last block ended in a far transfer */
	uint64_t cur_lo, cur_hi; /* function of last_ip; lo > hi: unknown */

	uint64_t len_ip[LEN_CACHE];
	uint8_t len_val[LEN_CACHE];
	struct range_ent ranges[RANGE_CACHE];
	uint64_t lost; /* AUX bytes lost before this buffer */
	int rc;	       /* first sink error */

	uint64_t prog_off;     /* decoder offset when last seen moving */
	uint32_t stuck_blocks; /* blocks since then */
	uint32_t stuck_calls;  /* calls among them */
};

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
		s->sw_valid = w->tid != (uint32_t)-1;
		s->sw_thread =
			s->sw_valid ? dec_thread_get(c, w->pid, w->tid) : NULL;
		if (s->sw_valid && !s->sw_thread)
			s->rc = -ENOMEM;
		s->sw_cur++;
	}
	return s->sw_valid ? s->sw_thread : NULL;
}

static bool chosen(const struct dec_capture *c, uint32_t tid)
{
	if (!c->opts.nr_tids)
		return true;
	for (size_t i = 0; i < c->opts.nr_tids; i++)
		if (c->opts.tids[i] == tid)
			return true;
	return false;
}

/* A chunk of a thread that was not chosen; per-CPU chunks are decoded
 * and their events sorted out by thread in emit(). */
static bool chunk_skipped(const struct dec_capture *c,
			  const struct dec_chunk *k)
{
	return k->tid != (uint32_t)-1 &&
	       !(c->pt.per_cpu_mmaps && k->cpu != (uint32_t)-1) &&
	       !chosen(c, k->tid);
}

uint64_t dec_aux_bytes(const struct dec_capture *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->nr_chunks; i++)
		if (!chunk_skipped(c, &c->chunks[i]))
			n += c->chunks[i].size;
	return n;
}

static void held_release(struct strm *s, uint64_t t1, bool bound, bool tick);
static void settle(struct strm *s);

static void emit_now(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		     uint64_t aux)
{
	struct dec_capture *c = s->c;
	struct dec_thread *th = route(s, t);

	if (!th || s->rc || !chosen(c, th->tid))
		return;
	if (t < c->first)
		c->first = t;
	if (t > c->last)
		c->last = t;
	c->stats.events++;
	if (c->sink && s->thread)
		s->rc = c->sink(c->sink_ctx, th, t, k, ip, aux);
	else if (dec_thread_push(th, c->base, t, k, ip, aux))
		s->rc = -ENOMEM;
}

/* An event that is no transfer: what waits goes first, as it was. */
static void emit(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		 uint64_t aux)
{
	settle(s);
	emit_now(s, t, k, ip, aux);
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
static void held_push(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		      uint64_t aux)
{
	struct held *h;

	if (!s->have_mark || s->nheld >= HELD_MAX) {
		emit(s, t, k, ip, aux);
		return;
	}
	if (s->nheld == s->held_cap) {
		size_t cap = s->held_cap ? 2 * s->held_cap : 256;
		struct held *n = realloc(s->held, cap * sizeof(*n));

		if (!n) {
			emit(s, t, k, ip, aux);
			return;
		}
		s->held = n;
		s->held_cap = cap;
	}
	/* A time point read after the transfer's block binds to the
	 * transfer itself: the packet it precedes is the transfer's. */
	h = &s->held[s->nheld++];
	h->pos = s->pend_pos;
	h->t = s->last_time;
	h->k = k;
	h->ip = ip;
	h->aux = aux;
}

/* The clock reads t1 at the current instruction; bound: the reading
 * belongs there (not the first after lost trace). */
static void held_release(struct strm *s, uint64_t t1, bool bound, bool tick)
{
	uint64_t t0 = s->last_time, p0 = s->mark_pos, p1 = s->icount;
	size_t n = s->nheld;

	s->nheld = 0;
	for (size_t i = 0; i < n; i++) {
		const struct held *h = &s->held[i];
		uint64_t t = h->t;

		if (bound && t1 > t0 && p1 > p0 && h->pos >= p0 && h->pos <= p1)
			t = t0 + (uint64_t)((unsigned __int128)(t1 - t0) *
					    (h->pos - p0) / (p1 - p0));
		else if (t < t0)
			t = t0;
		emit_now(s, t, h->k, h->ip, h->aux);
	}
	if (tick && s->mark_tick && t1 > t0 && p1 > p0) {
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
	emit_now(s, r, DEC_OVERFLOW, s->ovf_ip, s->ovf_before);
	s->last_time = r;
	s->mark_pos = s->ovf_pos;
	s->mark_tick = false;
}

/* Whatever waits goes out with the last time known. */
static void settle(struct strm *s)
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
static uint64_t now(struct strm *s)
{
	return s->last_time;
}

/*
 * A time point.  After an overflow or at an enable, time passed that no
 * instruction of ours accounts for: what waits keeps the last time.
 */
static uint64_t event_time(struct strm *s, const struct pt_event *ev)
{
	uint64_t t;
	bool bound;

	if (!ev->has_tsc)
		return now(s);
	t = pd_tsc_to_perf_time(ev->tsc, &s->c->pt);
	if (t < s->last_time)
		t = s->last_time;
	bound = ev->type != ptev_overflow && ev->type != ptev_enabled;
	if (s->ovf_pending)
		ovf_resolve(s, t, bound);
	if (s->nheld)
		held_release(s, t, bound, ev->type == ptev_tick);
	s->mark_tick = ev->type == ptev_tick;
	s->last_time = t;
	s->mark_pos = s->icount;
	s->have_mark = true;
	return t;
}

/* The return address of the call ending at ip, 0 if unknown. */
static uint64_t return_address(struct strm *s, uint64_t ip, int isid)
{
	size_t h = (size_t)(ip ^ (ip >> 12)) & (LEN_CACHE - 1);
	uint8_t b[15];
	unsigned len;
	int n;

	if (s->len_ip[h] == ip && s->len_val[h])
		return ip + s->len_val[h];
	if (isid <= 0)
		return 0;
	n = pt_iscache_read(s->c->iscache, b, sizeof(b), isid, ip);
	if (n <= 0)
		return 0;
	len = dec_call_len(b, (size_t)n);
	if (!len)
		return 0;
	s->len_ip[h] = ip;
	s->len_val[h] = (uint8_t)len;
	return ip + len;
}

static bool at_syscall(struct strm *s)
{
	uint8_t b[2];

	if (s->last_isid <= 0 || !s->last_ip)
		return s->last_far;
	if (pt_iscache_read(s->c->iscache, b, 2, s->last_isid, s->last_ip) != 2)
		return s->last_far;
	return (b[0] == 0x0f && (b[1] == 0x05 || b[1] == 0x34)) ||
	       (b[0] == 0xcd && b[1] == 0x80);
}

static void set_range(struct strm *s, uint64_t ip)
{
	size_t h = (size_t)(ip ^ (ip >> 9)) & (RANGE_CACHE - 1);
	struct range_ent *r = &s->ranges[h];

	if (r->ip != ip || r->lo > r->hi) {
		r->ip = ip;
		dec_range(s->c, s->pid, ip, &r->lo, &r->hi);
	}
	s->cur_lo = r->lo;
	s->cur_hi = r->hi;
}

static inline void forget_range(struct strm *s)
{
	s->cur_lo = 1;
	s->cur_hi = 0;
}

/*
 * The jump that ended the last block reads its target from a register or
 * memory.  Only an indirect jump can land in the middle of a function
 * that called nobody on the stack (a longjmp, an exception's landing
 * pad); direct ones into another function's body are shared code.
 */
static bool indirect_jump(struct strm *s)
{
	uint8_t b[8];
	int n, i = 0;

	if (s->last_isid <= 0)
		return false;
	n = pt_iscache_read(s->c->iscache, b, sizeof(b), s->last_isid,
			    s->pend_from);
	/* notrack, segment, operand-size and REX prefixes */
	while (i < n && i < 4 &&
	       (b[i] == 0x3e || b[i] == 0x2e || b[i] == 0x66 ||
		(b[i] & 0xf0) == 0x40))
		i++;
	return i + 1 < n && b[i] == 0xff && ((b[i + 1] >> 3) & 7) == 4;
}

/* A new block starts at ip: settle the transfer that led here. */
static void arrive(struct strm *s, uint64_t ip)
{
	switch (s->pend) {
	case PEND_CALL:
		held_push(s, s->pend_time, DEC_CALL, ip, s->pend_ret);
		set_range(s, ip);
		break;
	case PEND_RET:
		held_push(s, s->pend_time, DEC_RET, ip, 0);
		set_range(s, ip);
		break;
	case PEND_JUMP:
		if (s->cur_lo > s->cur_hi)
			set_range(s, s->pend_from);
		if (ip < s->cur_lo || ip >= s->cur_hi) {
			held_push(s, s->pend_time,
				  indirect_jump(s) ? DEC_IJUMP : DEC_JUMP, ip,
				  s->pend_from);
			set_range(s, ip);
		}
		break;
	case PEND_NONE:
		break;
	}
	s->pend = PEND_NONE;
}

/* Decoding starts (again) at ip. */
static void sync_at(struct strm *s, uint64_t t, uint64_t ip)
{
	if (s->lost) {
		emit(s, t, DEC_LOST, ip, s->lost);
		s->lost = 0;
	}
	emit(s, t, DEC_SYNC, ip, 0);
	s->synced = true;
}

static void on_block(struct strm *s, const struct pt_block *b)
{
	if (!b->ninsn)
		return;
	if (!s->synced) {
		sync_at(s, now(s), b->ip);
		s->tracing = true;
		s->pend = PEND_NONE;
		set_range(s, b->ip);
	} else {
		arrive(s, b->ip);
	}
	s->last_ip = b->end_ip;
	s->last_isid = b->isid;
	s->last_far = false;
	s->icount += b->ninsn;
	s->pend_pos = s->icount;
	s->c->stats.blocks++;
	switch (b->iclass) {
	case ptic_call:
		s->pend = PEND_CALL;
		s->pend_time = now(s);
		s->pend_ret = return_address(s, b->end_ip, b->isid);
		break;
	case ptic_return:
		s->pend = PEND_RET;
		s->pend_time = now(s);
		break;
	case ptic_far_call:
	case ptic_far_jump:
	case ptic_far_return:
		s->last_far = true;
		/* fall through */
	default:
		s->pend = PEND_JUMP;
		s->pend_time = now(s);
		s->pend_from = b->end_ip;
		break;
	}
}

/*
 * Tracing stops right after a transfer: its destination is where the
 * program went, though no block of it is decoded.  An asynchronous stop
 * (an interrupt, a signal, the end of tracing at detach) names it as
 * the place tracing stopped; a synchronous one (TIP.PGD of a branch
 * leaving the filter) as the branch's destination.  Dropping it would
 * lose a call whose callee never ran traced (the callee of a call to a
 * spin loop, interrupted there), or a return: the callee would stay
 * open and later calls would nest under it.  A far transfer (a system
 * call) goes to the kernel, which is no frame of ours.
 */
static void settle_at_stop(struct strm *s, const struct pt_event *ev)
{
	uint64_t dest;

	if (s->pend == PEND_NONE || s->last_far)
		return;
	/* async_disabled's 'at' comes from the FUP; only the TIP.PGD's
	 * destination can be suppressed. */
	if (ev->type == ptev_async_disabled)
		dest = ev->variant.async_disabled.at;
	else if (!ev->ip_suppressed)
		dest = ev->variant.disabled.ip;
	else
		return;
	if (dest)
		arrive(s, dest);
}

static void on_event(struct strm *s, const struct pt_event *ev)
{
	uint64_t before = s->last_time, before_pos = s->mark_pos;
	uint64_t t = event_time(s, ev);

	switch (ev->type) {
	case ptev_enabled:
		if (!s->synced) {
			sync_at(s, t, ev->variant.enabled.ip);
		} else {
			emit(s, t, DEC_RESUME, ev->variant.enabled.ip, 0);
		}
		s->tracing = true;
		s->pend = PEND_NONE;
		set_range(s, ev->variant.enabled.ip);
		break;
	case ptev_disabled:
	case ptev_async_disabled:
		if (s->synced && s->tracing) {
			settle_at_stop(s, ev);
			if (ev->type == ptev_disabled && at_syscall(s))
				emit(s, t, DEC_SYSCALL, s->last_ip, 0);
			else
				emit(s, t, DEC_STOP,
				     ev->type == ptev_async_disabled
					     ? ev->variant.async_disabled.at
					     : s->last_ip,
				     0);
		}
		s->tracing = false;
		s->pend = PEND_NONE;
		forget_range(s);
		break;
	case ptev_overflow:
		/* Trace was lost before the first instruction too: a gap,
		 * not a plain start. */
		if (!s->synced) {
			if (s->lost) {
				emit(s, t, DEC_LOST, ev->variant.overflow.ip,
				     s->lost);
				s->lost = 0;
			}
			s->synced = true;
		}
		if (t > before || !before) {
			/* A CYC times the OVF: it covers the overflow. */
			emit(s, t, DEC_OVERFLOW, ev->variant.overflow.ip,
			     before ? before : t);
		} else {
			settle(s);
			s->ovf_pending = true;
			s->ovf_ip = ev->variant.overflow.ip;
			s->ovf_before = before;
			s->ovf_pos = s->icount;
			s->ovf_fwd = 0;
			if (s->rate_dp && s->icount > before_pos)
				s->ovf_fwd =
					(uint64_t)((unsigned __int128)
							   s->rate_dt *
						   (s->icount - before_pos) /
						   s->rate_dp);
		}
		s->c->stats.overflows++;
		s->tracing = true;
		s->pend = PEND_NONE;
		set_range(s, ev->variant.overflow.ip);
		break;
	case ptev_ptwrite:
		emit(s, t, DEC_PTWRITE, ev->variant.ptwrite.ip,
		     ev->variant.ptwrite.payload);
		break;
	default:
		/* Mode, paging, timing and power events change nothing in a
		 * user-space call tree. */
		break;
	}
}

static int config_for(struct strm *s, struct pt_config *cfg, const uint8_t *buf,
		      size_t len)
{
	const struct dec_capture *c = s->c;

	pt_config_init(cfg);
	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + len;
	cfg->cpu = c->cpu;
	if (c->cpu.vendor == pcv_intel &&
	    pt_cpu_errata(&cfg->errata, &cfg->cpu) < 0)
		memset(&cfg->errata, 0, sizeof(cfg->errata));
	cfg->mtc_freq = c->mtc_freq;
	cfg->nom_freq = (uint8_t)c->pt.max_nonturbo_ratio;
	cfg->cpuid_0x15_eax = c->pt.tsc_ctc_d;
	cfg->cpuid_0x15_ebx = c->pt.tsc_ctc_n;
	cfg->flags.variant.block.end_on_call = 1;
	cfg->flags.variant.block.end_on_jump = 1;
	cfg->flags.variant.block.enable_tick_events = 1;
	return 0;
}

/* True when the decoder has done too much work since it last read a
 * packet (see MAX_BLOCKS_STUCK). */
static bool no_progress(struct strm *s, const struct pt_block *b)
{
	uint64_t off;

	if (pt_blk_get_offset(s->dec, &off) < 0 || off != s->prog_off) {
		s->prog_off = off;
		s->stuck_blocks = 0;
		s->stuck_calls = 0;
		return false;
	}
	s->stuck_blocks++;
	if (b->iclass == ptic_call || b->iclass == ptic_far_call)
		s->stuck_calls++;
	return s->stuck_blocks > MAX_BLOCKS_STUCK ||
	       s->stuck_calls > MAX_CALLS_STUCK;
}

/* Decode one buffer: sync, decode until an error, resync, ... */
static int decode_buffer(struct strm *s, const uint8_t *buf, size_t len)
{
	struct pt_config cfg;
	struct pt_block blk;
	uint64_t code;
	bool eos, stuck;
	int status;

	config_for(s, &cfg, buf, len);
	s->dec = pt_blk_alloc_decoder(&cfg);
	if (!s->dec)
		return -ENOMEM;
	status = pt_blk_set_image(s->dec, dec_image_of(s->c, s->pid));
	if (status < 0)
		goto out;
	s->c->stats.aux_bytes += len;
	for (;;) {
		status = pt_blk_sync_forward(s->dec);
		if (status < 0)
			break;
		settle(s);
		s->have_mark = false;
		s->synced = false;
		s->tracing = false;
		s->pend = PEND_NONE;
		forget_range(s);
		s->stuck_blocks = 0;
		s->stuck_calls = 0;
		pt_blk_get_offset(s->dec, &s->prog_off);
		eos = false;
		stuck = false;
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(s->dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				on_event(s, &ev);
			}
			if (status < 0)
				break;
			memset(&blk, 0, sizeof(blk));
			status = pt_blk_next(s->dec, &blk, sizeof(blk));
			if (eos) {
				/* Past the last packet the decoder runs on
				 * through code that needs no trace, where
				 * the snapshot may have come first; only the
				 * destination of the last traced transfer is
				 * sure. */
				if (blk.ninsn && s->synced)
					arrive(s, blk.ip);
				status = -pte_eos;
				break;
			}
			on_block(s, &blk);
			if (status < 0)
				break;
			eos = status & pts_eos;
			if (no_progress(s, &blk)) {
				stuck = true;
				break;
			}
		}
		if (s->rc)
			break;
		if (status == -pte_eos || (stuck && eos)) {
			if (s->synced) {
				/* The last transfer has no destination in
				 * the trace: nothing to report for it.  A
				 * program spinning at the end (for (;;);)
				 * ends here too. */
				s->pend = PEND_NONE;
				emit(s, now(s), DEC_END, s->last_ip, 0);
			}
			status = -pte_eos;
			continue; /* sync_forward reports the real end */
		}
		/* A decode error: the segment ends here; resync at the next
		 * PSB. */
		if (!s->synced)
			sync_at(s, now(s), blk.ninsn ? blk.end_ip : blk.ip);
		code = stuck ? DEC_ERR_NO_PROGRESS
			     : (uint64_t)pt_errcode(status);
		if (code == (uint64_t)pte_nomap)
			dec_note_use(s->c, s->pid,
				     blk.ninsn ? blk.end_ip : blk.ip);
		emit(s, now(s), DEC_ERROR, blk.ninsn ? blk.end_ip : blk.ip,
		     code);
		s->c->stats.errors++;
	}
	settle(s);
	if (status == -pte_eos)
		status = 0;
out:
	pt_blk_free_decoder(s->dec);
	s->dec = NULL;
	if (s->rc)
		return s->rc;
	return status < 0 ? status : 0;
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct dec_chunk *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void strm_init(struct strm *s, struct dec_capture *c,
		      const struct dec_chunk *k)
{
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->cpu = k->cpu;
	for (size_t i = 0; i < RANGE_CACHE; i++)
		s->ranges[i].lo = 1; /* empty */
	if (k->tid != (uint32_t)-1 &&
	    !(c->pt.per_cpu_mmaps && k->cpu != (uint32_t)-1)) {
		s->thread = dec_thread_get(c, (uint32_t)-1, k->tid);
		s->pid = s->thread ? s->thread->pid : (uint32_t)-1;
	} else {
		s->pid = (uint32_t)-1;
		for (size_t i = 0; i < c->nr_switches; i++)
			if (c->switches[i].cpu == k->cpu &&
			    c->switches[i].tid != (uint32_t)-1) {
				s->pid = c->switches[i].pid;
				break;
			}
	}
}

const char *dec_error_str(uint64_t code)
{
	if (code == DEC_ERR_NO_PROGRESS)
		return "never-ending loop (no packet for too long: a wrong "
		       "binary, or the decoder out of step)";
	return pt_errstr((enum pt_error_code)code);
}

int dec_streams(struct dec_capture *c, char *err, size_t errlen)
{
	struct strm *s = malloc(sizeof(*s));
	uint64_t done = 0, total = 0;
	int rc = 0;

	if (!s) {
		snprintf(err, errlen, "%s: out of memory", c->path);
		return -ENOMEM;
	}
	s->held = NULL;
	s->held_cap = 0;
	/* qsort's base may not be NULL, even for no elements: a capture
	 * can hold no trace at all. */
	if (c->nr_chunks)
		qsort(c->chunks, c->nr_chunks, sizeof(*c->chunks), cmp_chunk);
	c->first = UINT64_MAX;
	c->last = 0;
	total = dec_aux_bytes(c);
	for (size_t i = 0; i < c->nr_chunks && !rc;) {
		const struct dec_chunk *k = &c->chunks[i];
		size_t j = i + 1, len = k->size;
		uint8_t *joined = NULL;

		/* In full mode, chunks that continue each other are one
		 * buffer. */
		while (!c->pt.snapshot_mode && j < c->nr_chunks &&
		       c->chunks[j].idx == k->idx &&
		       c->chunks[j].offset ==
			       c->chunks[j - 1].offset + c->chunks[j - 1].size)
			len += c->chunks[j++].size;
		if (chunk_skipped(c, k)) {
			i = j;
			continue;
		}
		if (j > i + 1) {
			size_t at = 0;

			joined = malloc(len);
			if (!joined) {
				rc = -ENOMEM;
				break;
			}
			for (size_t m = i; m < j; m++) {
				memcpy(joined + at, c->chunks[m].data,
				       c->chunks[m].size);
				at += c->chunks[m].size;
			}
		}
		{
			struct held *held = s->held;
			size_t cap = s->held_cap;

			strm_init(s, c, k);
			s->held = held;
			s->held_cap = cap;
		}
		if (!c->pt.snapshot_mode && i > 0 &&
		    c->chunks[i - 1].idx == k->idx && s->thread) {
			const struct dec_chunk *p = &c->chunks[i - 1];

			s->lost = k->offset - (p->offset + p->size);
		}
		c->stats.streams++;
		rc = decode_buffer(s, joined ? joined : k->data, len);
		free(joined);
		if (rc == -ENOMEM)
			break;
		rc = 0; /* a stream that cannot be decoded is not fatal */
		done += len;
		if (c->opts.progress &&
		    c->opts.progress(c->opts.progress_ctx, done, total)) {
			snprintf(err, errlen, "%s: interrupted", c->path);
			free(s->held);
			free(s);
			return -EINTR;
		}
		i = j;
	}
	free(s->held);
	free(s);
	if (c->first == UINT64_MAX)
		c->first = c->last = 0;
	if (rc) {
		snprintf(err, errlen, "%s: out of memory while decoding",
			 c->path);
		return rc;
	}
	return 0;
}

int64_t dec_bare_loop(struct dec_capture *c)
{
	struct strm s;
	int64_t blocks = 0;

	for (size_t i = 0; i < c->nr_chunks; i++) {
		const struct dec_chunk *k = &c->chunks[i];
		struct pt_block_decoder *d;
		struct pt_config cfg;
		struct pt_block blk;
		int status;

		strm_init(&s, c, k);
		config_for(&s, &cfg, k->data, k->size);
		d = pt_blk_alloc_decoder(&cfg);
		if (!d)
			return -ENOMEM;
		pt_blk_set_image(d, dec_image_of(c, s.pid));
		while (pt_blk_sync_forward(d) >= 0) {
			for (;;) {
				status = pt_blk_next(d, &blk, sizeof(blk));
				while (status >= 0 &&
				       (status & pts_event_pending)) {
					struct pt_event ev;

					status = pt_blk_event(d, &ev,
							      sizeof(ev));
				}
				if (status < 0)
					break;
				blocks++;
			}
		}
		pt_blk_free_decoder(d);
	}
	return blocks;
}
