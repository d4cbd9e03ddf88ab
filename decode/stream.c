/* SPDX-License-Identifier: MIT */
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
 * The core does no I/O: its buffer comes from its caller (sched.c,
 * parallel.c), code and the function of an address through s->io, and
 * events leave through s->io.deliver (timing.c), which also splits a
 * per-CPU stream among threads with the capture's context-switch records.
 */
#include "decode/strm.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* The thread's own sections when it has them (the same isids). */
static size_t read_code_from(struct strm *s, int isid, uint64_t ip, uint8_t *b,
			     size_t n)
{
	if (s->view)
		return img_view_read(s->view, isid, ip, b, n);
	return s->io.read_code(s->io.ctx, isid, ip, b, n);
}

/*
 * Up to n bytes of the code at ip in section isid; how many (0: none).
 * An instruction's worth is remembered per address: libipt's read takes
 * the image cache's and the section's locks, which the threads of a
 * parallel decode would otherwise contend for at every system call and
 * jump.
 */
static size_t read_code(struct strm *s, int isid, uint64_t ip, uint8_t *b,
			size_t n)
{
	struct code_ent *e =
		&s->cache.code[(ip ^ (ip >> 11)) & (CODE_CACHE - 1)];

	size_t got;

	if (n > sizeof(e->b))
		return read_code_from(s, isid, ip, b, n);
	if (e->isid != isid || e->ip != ip) {
		got = read_code_from(s, isid, ip, e->b, sizeof(e->b));
		if (!got)
			return 0;
		e->ip = ip;
		e->isid = isid;
		e->n = (uint8_t)got;
	}
	if (n > e->n)
		n = e->n;
	memcpy(b, e->b, n);
	return n;
}

/* The return address of the call ending at ip, 0 if unknown. */
static uint64_t return_address(struct strm *s, uint64_t ip, int isid)
{
	size_t h = (size_t)(ip ^ (ip >> 12)) & (LEN_CACHE - 1);
	uint8_t b[15];
	unsigned len;
	size_t n;

	if (s->cache.len_ip[h] == ip && s->cache.len_val[h])
		return ip + s->cache.len_val[h];
	n = read_code(s, isid, ip, b, sizeof(b));
	if (!n)
		return 0;
	len = img_call_len(b, n);
	if (!len)
		return 0;
	s->cache.len_ip[h] = ip;
	s->cache.len_val[h] = (uint8_t)len;
	return ip + len;
}

static bool at_syscall(struct strm *s)
{
	uint8_t b[2];

	if (!s->last_ip || read_code(s, s->last_isid, s->last_ip, b, 2) != 2)
		return s->last_far;
	return img_is_syscall(b, 2);
}

static void set_range(struct strm *s, uint64_t ip)
{
	size_t h = (size_t)(ip ^ (ip >> 9)) & (RANGE_CACHE - 1);
	struct range_ent *r = &s->cache.ranges[h];

	if (r->ip != ip || r->lo > r->hi) {
		r->ip = ip;
		s->io.range(s->io.ctx, s->pid, ip, &r->lo, &r->hi, &r->inl);
	}
	s->cur_lo = r->lo;
	s->cur_hi = r->hi;
	s->inl_span = r->inl;
}

static inline void forget_range(struct strm *s)
{
	s->cur_lo = 1;
	s->cur_hi = 0;
	s->inl_span.tab = NULL;
}

/*
 * The jump that ended the last block reads its target from a register or
 * memory.  Only an indirect jump can land in the middle of a function
 * that called nobody on the stack (a longjmp, an exception's landing
 * pad); direct ones into another function's body are shared code.
 */
static bool indirect_jump(struct strm *s)
{
	uint8_t b[15];
	size_t n = read_code(s, s->last_isid, s->pend_from, b, sizeof(b));

	return img_is_indirect_jump(b, n);
}

/* A new block starts at ip: settle the transfer that led here. */
static void arrive(struct strm *s, uint64_t ip)
{
	switch (s->pend) {
	case PEND_CALL:
		/* A call to the next instruction only reads the IP (call/pop
		 * in 32-bit position-independent code): no function is
		 * entered and no return will come back for it. */
		if (ip == s->pend_ret)
			break;
		strm_held_push(s, s->pend_time, DEC_CALL, ip, s->pend_ret);
		set_range(s, ip);
		strm_inline_told(s, ip);
		break;
	case PEND_RET:
		strm_held_push(s, s->pend_time, DEC_RET, ip, 0);
		set_range(s, ip);
		strm_inline_told(s, ip);
		break;
	case PEND_JUMP:
		if (s->cur_lo > s->cur_hi)
			set_range(s, s->pend_from);
		if (ip < s->cur_lo || ip >= s->cur_hi) {
			strm_held_push(s, s->pend_time,
				       indirect_jump(s) ? DEC_IJUMP : DEC_JUMP,
				       ip, s->pend_from);
			set_range(s, ip);
			strm_inline_told(s, ip);
		}
		break;
	case PEND_NONE:
		break;
	}
	s->pend = PEND_NONE;
}

/* The code the stream reads changed (an exec, code loaded where other
 * code was): what is kept of the old goes. */
static void cache_reset(struct strm *s)
{
	memset(s->cache.len_val, 0, sizeof(s->cache.len_val));
	memset(s->cache.counts, 0, sizeof(s->cache.counts));
	memset(s->cache.code, 0, sizeof(s->cache.code));
	/* Empty: lo above hi, which set_range() asks again (a stale hi
	 * with lo 1 would be a range that holds most addresses). */
	for (size_t i = 0; i < RANGE_CACHE; i++) {
		s->cache.ranges[i].lo = 1;
		s->cache.ranges[i].hi = 0;
	}
	s->cache.pid = s->pid;
	s->cache.valid = true;
}

/*
 * The process runs the code of the space it is in at t (img_space(): the
 * program it exec'd into, a library loaded where another was), followed
 * at the first sync point, enable or overflow resume at or after the
 * change (the sideband dates it, and what runs the new code comes
 * after): libipt reads that space's image from the next block on.
 */
static int follow_exec(struct strm *s, uint64_t t)
{
	struct pt_image *src, *copy = NULL;
	uint32_t key;
	int status = 0;

	/* (A CPU's stream follows the process it was given, as it reads
	 * that one's image for every process it runs.) */
	if (!s->io.space || s->proc == (uint32_t)-1)
		return 0;
	key = s->io.space(s->io.ctx, s->proc, t);
	if (key == s->pid)
		return 0;
	src = s->view ? img_view_image(s->view, key) : NULL;
	if (!src)
		src = s->io.image(s->io.ctx, key);
	if (src) {
		copy = pt_image_alloc(NULL);
		status = copy ? pt_image_copy(copy, src) : -pte_nomem;
		if (status < 0) {
			pt_image_free(copy);
			return img_pt_error(status, NULL, 0, NULL, "decoder");
		}
	}
	status = pt_blk_set_image(s->dec, copy);
	if (status < 0) {
		pt_image_free(copy);
		return img_pt_error(status, NULL, 0, NULL, "decoder");
	}
	pt_image_free(s->exec_image);
	s->exec_image = copy;
	s->pid = key;
	cache_reset(s);
	forget_range(s);
	return 0;
}

/* Right after a sync: the PSB's TSC dates it. */
static int follow_exec_at_sync(struct strm *s)
{
	uint64_t tsc;
	uint32_t lost_mtc, lost_cyc;

	if (!s->io.space || pt_blk_time(s->dec, &tsc, &lost_mtc, &lost_cyc) < 0)
		return 0;
	return follow_exec(s, pd_tsc_to_perf_time(tsc, &s->c->pt));
}

/* Decoding starts (again) at ip. */
static void sync_at(struct strm *s, uint64_t t, uint64_t ip)
{
	if (s->lost) {
		strm_emit(s, t, DEC_LOST, ip, s->lost);
		s->lost = 0;
	}
	strm_emit(s, t, DEC_SYNC, ip, 0);
	s->synced = true;
	strm_inline_told(s, ip);
}

/* The transfer that ended what was just decoded waits for its
 * destination (arrive()); far: it leaves or enters the kernel. */
static void pend_set(struct strm *s, enum pend p, bool far)
{
	s->pend = p;
	s->pend_time = strm_now(s);
	s->pend_fixed = false;
	s->pend_pos = s->icount;
	s->last_far = far;
}

/*
 * libipt leaves a block's instruction class out (ptic_error) when it
 * takes the block from its cache, as it does for blocks that end in a
 * far transfer it has seen before: SYSCALL and SYSRET in a traced
 * kernel.  The bytes say which it is; anything else stays a jump.
 */
static enum pt_insn_class cached_block_class(struct strm *s,
					     const struct pt_block *b)
{
	uint8_t bytes[15];
	size_t n;

	if (b->iclass != ptic_error)
		return b->iclass;
	n = read_code(s, b->isid, b->end_ip, bytes, sizeof(bytes));
	if (img_is_syscall(bytes, n))
		return ptic_far_call;
	if (img_is_far_return(bytes, n))
		return ptic_far_return;
	return ptic_error;
}

static void on_block(struct strm *s, const struct pt_block *b)
{
	enum pt_insn_class iclass;

	if (!b->ninsn)
		return;
	if (!s->synced) {
		sync_at(s, strm_now(s), b->ip);
		s->tracing = true;
		s->pend = PEND_NONE;
		set_range(s, b->ip);
	} else {
		arrive(s, b->ip);
	}
	if (s->inl_span.tab || s->inl_top || s->inl_told)
		strm_inline_block(s, b, s->icount);
	s->last_ip = b->end_ip;
	s->last_isid = b->isid;
	s->blk_ip = b->ip;
	s->blk_ninsn = b->ninsn;
	s->icount += b->ninsn;
	s->n_blocks++;
	/*
	 * A far call (a system call, a software interrupt, a call gate)
	 * comes back to the instruction after it with a far return (SYSRET,
	 * IRET): traced, they nest like near calls.
	 */
	iclass = cached_block_class(s, b);
	switch (iclass) {
	case ptic_call:
	case ptic_far_call:
		pend_set(s, PEND_CALL, iclass == ptic_far_call);
		s->pend_ret = return_address(s, b->end_ip, b->isid);
		break;
	case ptic_return:
	case ptic_far_return:
		pend_set(s, PEND_RET, iclass == ptic_far_return);
		break;
	default:
		pend_set(s, PEND_JUMP, iclass == ptic_far_jump);
		s->pend_from = b->end_ip;
		break;
	}
}

/*
 * A software interrupt (INT n, INT3, INTO) is traced as an asynchronous
 * branch whose FUP names the INT itself, not the instruction the
 * handler's IRET comes back to: its length, or 0 for any other
 * instruction at ip.
 */
static unsigned soft_interrupt_len(struct strm *s, uint64_t ip)
{
	uint8_t b[2];
	size_t n = read_code(s, s->last_isid, ip, b, sizeof(b));

	return img_soft_interrupt_len(b, n);
}

/*
 * An interrupt, an exception or a VM exit while tracing (FUP + TIP):
 * the handler runs like a function called from the interrupted
 * instruction, and IRET (a far return) comes back there.  A transfer of
 * the block before lands where the FUP says it was interrupted: a call
 * interrupted at its target's first instruction keeps its callee, the
 * handler nests under it.
 */
static void on_async_branch(struct strm *s, const struct pt_event *ev)
{
	uint64_t from = ev->variant.async_branch.from;
	bool abort = s->tsx_aborted;

	s->tsx_aborted = false;
	if (!s->synced || !s->tracing)
		return;
	if (s->pend != PEND_NONE)
		arrive(s, from);
	/* A transaction's abort goes to its fallback path (XBEGIN's
	 * operand), in the function that began it: a jump. */
	if (abort) {
		pend_set(s, PEND_JUMP, false);
		s->pend_from = from;
		return;
	}
	pend_set(s, PEND_CALL, true);
	s->pend_ret = from + soft_interrupt_len(s, from);
}

/*
 * The destination of the direct call or jump at ip, from its bytes.
 * A TIP.PGD of a direct branch out of the filter ranges carries no IP
 * (SKL014 and the like): the code says where it went.
 */
static bool direct_target(struct strm *s, uint64_t ip, uint64_t *out)
{
	uint8_t b[15];
	size_t n = read_code(s, s->last_isid, ip, b, sizeof(b));

	return img_direct_target(b, n, ip, out);
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
	else if (s->pend == PEND_RET)
		dest = 0; /* a return all the same, to where it was called */
	else if (!direct_target(s, s->last_ip, &dest))
		return;
	if (dest || s->pend == PEND_RET)
		arrive(s, dest);
}

/*
 * An overflow right after a call, return or jump: the transfer ran, but
 * libipt reports the overflow before any block at its destination.  A
 * direct call or jump says where
 * it went in its bytes; an indirect one's TIP, read again from the
 * packets, when it is the last before the OVF; a return is a return
 * wherever it went.  Dropped, a function entered by a tail jump through
 * a register as the packets ran out would be missing from the tree.
 */
static void libipt_hides_target_at_overflow(struct strm *s)
{
	uint64_t dest = 0, off;
	uint8_t b[15];
	size_t n;

	if (!s->synced || !s->tracing || s->pend == PEND_NONE || s->last_far)
		return;
	if (s->pend == PEND_RET) {
		if (pt_blk_get_offset(s->dec, &off) >= 0)
			dec_tip_before_overflow(s->buf, s->len, off, &dest);
		arrive(s, dest);
		return;
	}
	if (direct_target(s, s->last_ip, &dest)) {
		arrive(s, dest);
		return;
	}
	n = read_code(s, s->last_isid, s->last_ip, b, sizeof(b));
	if (s->pend == PEND_JUMP && !img_is_indirect_jump(b, n))
		return;
	if (pt_blk_get_offset(s->dec, &off) >= 0 &&
	    dec_tip_before_overflow(s->buf, s->len, off, &dest))
		arrive(s, dest);
}

/*
 * libipt proceeds to a PTWRITE that its FUP names across a direct call or
 * jump, and then past the PTWRITE, so the block ends at the PTWRITE and
 * the branch before it (end_on_call, end_on_jump) is inside the block:
 * without this, a PTWRITE at a function's first instruction loses the
 * call to the function.  A direct branch can only be the next to last
 * instruction of such a block, and it goes to the PTWRITE: found by its
 * bytes (the only candidate whose target is the PTWRITE), it is made the
 * transfer it was.
 */
static void ptwrite_after_branch(struct strm *s, uint64_t ptw)
{
	uint8_t b[256];
	size_t span;

	if (s->blk_ninsn < 2 || ptw != s->last_ip)
		return;
	span = 15 * (size_t)(s->blk_ninsn - 1);
	/* In windows that overlap by an instruction's length, so that a
	 * long straight run before the branch is read whole. */
	for (size_t base = 0; base < span; base += sizeof(b) - 15) {
		size_t n = read_code(s, s->last_isid, s->blk_ip + base, b,
				     sizeof(b));

		for (size_t at = 0;
		     at < n && at < sizeof(b) - 15 && base + at < span; at++) {
			uint64_t pa = s->blk_ip + base + at, to;
			unsigned len;

			if (!img_direct_target(b + at, n - at, pa, &to) ||
			    to != ptw)
				continue;
			len = img_call_len(b + at, n - at);
			if (len) {
				strm_held_push(s, s->pend_time, DEC_CALL, ptw,
					       pa + len);
				set_range(s, ptw);
				strm_inline_told(s, ptw);
			} else if (s->cur_lo <= s->cur_hi &&
				   (ptw < s->cur_lo || ptw >= s->cur_hi)) {
				strm_held_push(s, s->pend_time, DEC_JUMP, ptw,
					       pa);
				set_range(s, ptw);
				strm_inline_told(s, ptw);
			}
			return;
		}
		if (n < sizeof(b))
			return; /* the code ends here */
	}
}

static void on_event(struct strm *s, const struct pt_event *ev)
{
	uint64_t before = s->last_time, before_pos = s->mark_pos;
	uint64_t t, ip;
	bool off;

	/* Before the clock moves to the overflow's end. */
	if (ev->type == ptev_overflow)
		libipt_hides_target_at_overflow(s);
	t = strm_event_time(s, ev);

	switch (ev->type) {
	case ptev_enabled:
		if (!s->rc)
			s->rc = follow_exec(s, t);
		if (!s->synced) {
			sync_at(s, t, ev->variant.enabled.ip);
		} else {
			strm_emit(s, t, DEC_RESUME, ev->variant.enabled.ip, 0);
		}
		s->tracing = true;
		s->pend = PEND_NONE;
		set_range(s, ev->variant.enabled.ip);
		strm_inline_told(s, ev->variant.enabled.ip);
		break;
	case ptev_disabled:
	case ptev_async_disabled:
		if (s->synced && s->tracing) {
			/* aux 1: it went into a kernel that ran traced. */
			bool kern =
				!ev->ip_suppressed &&
				img_is_kernel_ip(
					ev->type == ptev_async_disabled
						? ev->variant.async_disabled.ip
						: ev->variant.disabled.ip);

			settle_at_stop(s, ev);
			if (ev->type == ptev_disabled && at_syscall(s))
				strm_emit(s, t, DEC_SYSCALL, s->last_ip, kern);
			else
				strm_emit(
					s, t, DEC_STOP,
					ev->type == ptev_async_disabled
						? ev->variant.async_disabled.at
						: s->last_ip,
					kern);
		}
		s->tracing = false;
		s->pend = PEND_NONE;
		forget_range(s);
		break;
	case ptev_overflow:
		/* Tracing was off when the overflow ended (its IP is
		 * suppressed): the gap runs until a TIP.PGE or a PSB+ names
		 * where tracing is again, which starts decoding afresh. */
		off = ev->ip_suppressed;
		ip = off ? 0 : ev->variant.overflow.ip;
		/* Trace was lost before the first instruction too: a gap,
		 * not a plain start. */
		if (!s->synced) {
			if (s->lost) {
				strm_emit(s, t, DEC_LOST, ip, s->lost);
				s->lost = 0;
			}
			s->synced = true;
		}
		/* What ran before it keeps its times; what comes after may
		 * have to move. */
		strm_settle(s);
		strm_overflow_unanchors(s);
		if (t > before || !before) {
			/* A CYC times the OVF: it covers the overflow. */
			strm_emit(s, t, DEC_OVERFLOW, ip, before ? before : t);
		} else {
			s->ovf_pending = true;
			s->ovf_ip = ip;
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
		s->n_overflows++;
		s->pend = PEND_NONE;
		if (off) {
			s->synced = false;
			s->tracing = false;
			forget_range(s);
		} else {
			/* (it resumes at ip, as an enable would) */
			if (!s->rc)
				s->rc = follow_exec(s, t);
			s->tracing = true;
			set_range(s, ip);
			strm_inline_told(s, ip);
		}
		break;
	case ptev_tsx:
		s->tsx_aborted = ev->variant.tsx.aborted;
		break;
	case ptev_async_branch:
		on_async_branch(s, ev);
		break;
	case ptev_ptwrite:
		if (s->synced && s->tracing && !ev->ip_suppressed)
			ptwrite_after_branch(s, ev->variant.ptwrite.ip);
		strm_emit(s, t, DEC_PTWRITE, ev->variant.ptwrite.ip,
			  ev->variant.ptwrite.payload);
		break;
	case ptev_tick:
		s->ticked = true;
		break;
	default:
		/* Mode, paging and power events change nothing in a
		 * user-space call tree. */
		break;
	}
}

void strm_config(const struct dec_capture *c, struct pt_config *cfg,
		 const uint8_t *buf, size_t len)
{

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
}

/* True when the decoder has done too much work since it last read a
 * packet (see MAX_BLOCKS_STUCK). */
static bool no_progress(struct strm *s, const struct pt_block *b)
{
	uint64_t off;

	if (pt_blk_get_offset(s->dec, &off) < 0 || off != s->prog_off) {
		s->prev_off = s->prog_off;
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

/*
 * A PSB+ whose FUP says IP 0 (an empty trace: tracing was enabled, no
 * instruction ran traced before the next PSB) leaves libipt at address
 * 0, where nothing is ever mapped.  That is no code and no lost trace:
 * nothing to show, not a segment rooted at 0.
 */
static bool no_ip_at_sync(const struct strm *s, const struct pt_block *b,
			  int status)
{
	return !s->synced && !b->ninsn && !b->ip &&
	       pt_errcode(status) == pte_nomap;
}

/*
 * Where to pick up after a decode error: the first PSB after the one
 * decoding last synced at that the instructions had not passed yet.
 * libipt reads packets ahead of the instructions it returns, so when an
 * instruction fails (no code mapped at a jump's target, say) it may
 * already be past the next PSB, and its own sync_forward() would skip
 * to the one after, or to the end: a whole stretch of good trace lost.
 * The instructions are past every packet read before the decoder's
 * offset last moved (prev_off).  Returns false to let libipt search.
 */
static bool resync_point(struct strm *s, const uint8_t *buf, size_t len,
			 uint64_t *out)
{
	uint64_t sync, from;

	if (pt_blk_get_sync_offset(s->dec, &sync) < 0)
		return false;
	from = sync + 1 > s->prev_off ? sync + 1 : s->prev_off;
	return dec_find_psb(buf, len, from, out);
}

/*
 * Past the last packet, the last traced transfer went where no code is
 * mapped (a jump through a bad pointer, a binary missing): that much the
 * trace says for sure, and it is an error to report, not the end.
 */
static bool unmapped_last_target(const struct strm *s, const struct pt_block *b,
				 int status)
{
	return status < 0 && !b->ninsn && s->synced && s->pend != PEND_NONE &&
	       pt_errcode(status) == pte_nomap;
}

uint64_t strm_offset(const struct strm *s)
{
	uint64_t off = 0;

	pt_blk_get_offset(s->dec, &off);
	return off;
}

int strm_decode(struct strm *s, const uint8_t *buf, size_t len, uint64_t start,
		struct pt_image *image)
{
	struct pt_config cfg;
	struct pt_block blk;
	uint64_t code, resync_at = start;
	bool eos, stuck, resync = start != STRM_FROM_START, stop = false;
	int status;

	strm_config(s->c, &cfg, buf, len);
	if (s->io.addr_filter)
		s->io.addr_filter(s->io.ctx, s->pid, &cfg.addr_filter);
	s->buf = buf;
	s->len = len;
	s->dec = pt_blk_alloc_decoder(&cfg);
	if (!s->dec)
		return -ENOMEM;
	/* No image (a process never seen) is the decoder's own, empty
	 * one. */
	status = pt_blk_set_image(s->dec, image);
	if (status < 0)
		goto out;
	for (;;) {
		if (resync) {
			status = pt_blk_sync_set(s->dec, resync_at);
			resync = false;
		} else {
			status = pt_blk_sync_forward(s->dec);
		}
		if (status < 0)
			break;
		if (!s->rc)
			s->rc = follow_exec_at_sync(s);
		strm_settle(s);
		strm_flush(s);
		s->have_mark = false;
		s->synced = false;
		s->tracing = false;
		s->pend = PEND_NONE;
		forget_range(s);
		s->inl_top = NULL;
		s->inl_told = false;
		s->stuck_blocks = 0;
		s->stuck_calls = 0;
		pt_blk_get_offset(s->dec, &s->prog_off);
		pt_blk_get_sync_offset(s->dec, &s->prev_off);
		s->psb_next = s->prev_off;
		if (!s->have_first) {
			s->first_off = s->prog_off;
			s->have_first = true;
		}
		eos = false;
		stuck = false;
		for (;;) {
			s->ticked = false;
			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(s->dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				on_event(s, &ev);
			}
			if (status < 0)
				break;
			if (s->ticked && s->out.tick && !s->rc &&
			    s->out.tick(s->out.ctx, s)) {
				stop = true;
				break;
			}
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
				if (!unmapped_last_target(s, &blk, status))
					status = -pte_eos;
				break;
			}
			on_block(s, &blk);
			if (s->out.check && !(s->n_blocks & 255) &&
			    s->out.check(s->out.ctx, s)) {
				stop = true;
				break;
			}
			if (status < 0)
				break;
			eos = status & pts_eos;
			if (no_progress(s, &blk)) {
				stuck = true;
				break;
			}
		}
		if (s->rc || stop)
			break;
		if (status == -pte_eos || (stuck && eos)) {
			if (s->synced) {
				/* The last transfer has no destination in
				 * the trace: nothing to report for it.  A
				 * program spinning at the end (for (;;);)
				 * ends here too. */
				s->pend = PEND_NONE;
				strm_emit(s, strm_now(s), DEC_END, s->last_ip,
					  0);
			}
			status = -pte_eos;
			continue; /* sync_forward reports the real end */
		}
		if (no_ip_at_sync(s, &blk, status))
			continue;
		/* A decode error: the segment ends here; resync at the next
		 * PSB. */
		if (!s->synced)
			sync_at(s, strm_now(s),
				blk.ninsn ? blk.end_ip : blk.ip);
		code = stuck ? DEC_ERR_NO_PROGRESS
			     : (uint64_t)pt_errcode(status);
		if (code == (uint64_t)pte_nomap && s->io.no_code)
			s->io.no_code(s->io.ctx, s->pid,
				      blk.ninsn ? blk.end_ip : blk.ip);
		strm_emit(s, strm_now(s), DEC_ERROR,
			  blk.ninsn ? blk.end_ip : blk.ip, code);
		s->n_errors++;
		resync = resync_point(s, buf, len, &resync_at);
	}
	/* A run that stopped hands what waits to the next piece's run,
	 * which has the same. */
	if (!stop) {
		strm_settle(s);
		strm_flush(s);
		strm_end_gap(s);
	}
	s->at_end = status == -pte_eos && !stop && !s->rc;
	if (status == -pte_eos || stop)
		status = 0;
out:
	pt_blk_free_decoder(s->dec);
	s->dec = NULL;
	pt_image_free(s->exec_image);
	s->exec_image = NULL;
	if (s->rc)
		return s->rc;
	return status < 0 ? img_pt_error(status, NULL, 0, NULL, "decoder") : 0;
}

void strm_free(struct strm *s)
{
	if (!s)
		return;
	free(s->held);
	free(s->win);
	free(s->aq);
	if (s->cache.have_cs)
		cs_close(&s->cache.cs);
	free(s);
}

void strm_init(struct strm *s, struct dec_capture *c, const struct strm_io *io,
	       const struct strm_out *out, uint32_t cpu,
	       struct dec_thread *thread, uint32_t pid)
{
	struct held *held = s->held;
	struct timed *win = s->win, *aq = s->aq;
	size_t cap = s->held_cap, win_cap = s->win_cap, aq_cap = s->aq_cap;
	bool same = s->c == c;

	memset(s, 0, offsetof(struct strm, cache));
	s->held = held;
	s->held_cap = cap;
	s->win = win;
	s->win_cap = win_cap;
	s->aq = aq;
	s->aq_cap = aq_cap;
	s->c = c;
	s->io = *io;
	s->out = *out;
	s->cpu = cpu;
	s->thread = thread;
	s->pid = pid;
	s->proc = pid;
	s->mtc_span = strm_mtc_span(c);
	s->mtc_wrap = strm_mtc_wrap(c);
	if (!same || !s->cache.valid || s->cache.pid != s->pid)
		cache_reset(s);
}
