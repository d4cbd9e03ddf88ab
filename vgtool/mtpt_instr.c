// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mtpt's instrumentation: what each superblock's last instruction does
 * to control flow, the code added to the block to report it, and the
 * helpers that code calls.
 *
 * Copyright (C) the mt authors.
 *
 * This program is free software; you can redistribute it and/or modify
 * it under the terms of the GNU General Public License as published by
 * the Free Software Foundation; either version 2 of the License, or (at
 * your option) any later version.  See vgtool/COPYING.
 */
#include "mtpt.h"

/* A word of the program's memory at a, or 0 when it is not readable. */
static ULong peek64(Addr a)
{
	if (!a || !VG_(am_is_valid_for_client)(a, 8, VKI_PROT_READ))
		return 0;
	return *(const ULong *)a;
}

/* The g thread tid runs: the runtime's TLS slot (R14 mirrors it in Go
 * code, but not right after systemstack returns or in morestack). */
static ULong go_g(ThreadId tid)
{
	ULong fs = 0;

	VG_(get_shadow_regs_area)
	(tid, (UChar *)&fs, 0, offsetof(VexGuestAMD64State, guest_FS_CONST),
	 sizeof(fs));
	return fs ? peek64((Addr)(fs + (ULong)mtpt_opt_go_tls)) : 0;
}

/* The running thread, from ip on, runs the g in its slot: a record when
 * that is another than before.  g0 and gsignal have id 0. */
static void go_say(ULong ip)
{
	ULong g = go_g(mtpt_cur);

	if (g == mtpt_th[mtpt_cur].g)
		return;
	mtpt_th[mtpt_cur].g = g;
	rec(R_GO, mtpt_cur);
	put64(ip);
	put64(g);
	put64(g && mtpt_opt_go_goid ? peek64((Addr)(g + mtpt_opt_go_goid)) : 0);
}

/* A transfer out of a function that switches goroutines goes to ip. */
static VG_REGPARM(1) void h_go(ULong ip)
{
	if (live())
		go_say(ip);
}

/* ---- helpers called from the instrumented code ---- */

/* With --mt-truth, a conditional branch went (taken) to target or fell
 * through to next: a record of its own. */
static void h_cond(ULong guard, ULong sense, ULong target, ULong next)
{
	Bool taken = (guard != 0) == (sense != 0);

	if (!live())
		return;
	rec(R_COND, mtpt_cur);
	put8(taken);
	put64(target);
	put64(next);
}

/*
 * With --mt-calls=no, mt-capture knows no call, so it cannot tell which
 * return a PSB+ (where a decoder's stack of calls empties) keeps from
 * compressing: the tool says where each goes, after a record of the
 * running thread, and compresses none across it.
 */
static inline void psb_tick(void)
{
	struct th *th = &mtpt_th[mtpt_cur];

	if (mtpt_opt_calls)
		return;
	if (mtpt_stacks_due)
		mtpt_answer_stacks();
	if (++th->psb_n < mtpt_opt_psb)
		return;
	th->psb_n = 0;
	th->rs_n = 0;
	put8(R_PSB);
}

/* The pack holds 64 bits. */
static void h_tnt_full(void)
{
	Bool l = live();

	flush_tnt();
	if (l)
		psb_tick();
}

/* Room for one more frame on the thread's stack: the oldest half is
 * forgotten past 64Ki frames. */
static void ss_grow(struct th *th)
{
	if (th->ss_cap >= 65536) {
		VG_(memmove)
		(th->ss, th->ss + th->ss_cap / 2,
		 th->ss_cap / 2 * sizeof(*th->ss));
		th->ss_n -= th->ss_cap / 2;
		return;
	}
	th->ss_cap = th->ss_cap ? 2 * th->ss_cap : 64;
	th->ss = VG_(realloc)("mtpt.stack", th->ss,
			      th->ss_cap * sizeof(*th->ss));
}

/* A call: its return address on the thread's stack, the newest of those
 * a return may compress against (the hardware keeps RS_MAX). */
static inline void ss_push(ULong ret)
{
	struct th *th = &mtpt_th[mtpt_cur];

	if (th->ss_n == th->ss_cap)
		ss_grow(th);
	th->ss[th->ss_n++] = ret;
	if (th->rs_n < RS_MAX)
		th->rs_n++;
}

/*
 * A return to target: the stack down to the call it returns from
 * (longjmp-like returns skip several; one to no call leaves it).  True
 * when it compresses: target is the return address of the newest call
 * not returned from, and one of the RS_MAX newest since the stack of
 * compressible calls was last emptied.  Otherwise, as the hardware
 * does, no return compresses again until calls are made anew.  (With
 * --mt-calls=yes, mt-capture knows the target from its own stack of
 * calls, and makes the bit a TIP where its encoder cannot compress the
 * return.)
 */
static inline Bool ss_pop(ULong target)
{
	struct th *th = &mtpt_th[mtpt_cur];
	UInt n = th->ss_n;

	if (n && th->ss[n - 1] == target) {
		th->ss_n = n - 1;
		if (th->rs_n) {
			th->rs_n--;
			return True;
		}
		return False;
	}
	th->rs_n = 0;
	while (n-- > 0)
		if (th->ss[n] == target) {
			th->ss_n = n;
			break;
		}
	return False;
}

/* A compressed return to target: a taken bit of the pack, a record
 * fewer (a third of a call-heavy program's). */
static inline void pack_ret(ULong target)
{
	if (mtpt_tnt == TNT_EMPTY)
		mtpt_tnt_t0 = mtpt_icount;
	mtpt_tnt_rets |= 1ull << (63 - __builtin_clzll(mtpt_tnt));
	mtpt_tnt = mtpt_tnt << 1 | 1;
	mtpt_tnt_t1 = mtpt_icount;
	mtpt_tnt_ip = target;
	/* 63 bits: the leading 1 is the sign bit (add_tnt()). */
	if ((Long)mtpt_tnt < 0) {
		flush_tnt();
		psb_tick();
	}
}

static VG_REGPARM(2) void h_call(ULong ret, ULong target)
{
	if (!live())
		return;
	ss_push(ret);
	rec_end(w64(w64(rec_room(R_CALL, 16), ret), target));
}

static VG_REGPARM(2) void h_icall(ULong ret, ULong target)
{
	if (!live())
		return;
	ss_push(ret);
	rec_end(w64(w64(rec_room(R_ICALL, 16), ret), target));
	psb_tick();
}

/* A direct call with --mt-calls=no: no record (it makes no packet), its
 * return address kept for its return. */
static VG_REGPARM(1) void h_dcall(ULong ret)
{
	if (live())
		ss_push(ret);
}

static VG_REGPARM(1) void h_ijmp(ULong target)
{
	if (!live())
		return;
	rec_end(w64(rec_room(R_IJMP, 8), target));
	psb_tick();
}

static VG_REGPARM(1) void h_jmp(ULong target)
{
	if (!live())
		return;
	flush_tnt(); /* (none with --mt-truth) */
	rec_end(w64(rec_room(R_JMP, 8), target));
}

static VG_REGPARM(1) void h_ret(ULong target)
{
	if (!live())
		return;
	if (ss_pop(target) && mtpt_opt_retcomp) {
		pack_ret(target);
		return;
	}
	rec_end(w64(rec_room(R_RET, 8), target));
	psb_tick();
}

static VG_REGPARM(1) void h_syscall(ULong next)
{
	if (!live())
		return;
	rec(R_SYSCALL, mtpt_cur);
	put64(next);
	mtpt_pend |= P_ENABLE;
	/* mt-capture's TIP.PGD empties its encoder's stack of calls. */
	mtpt_th[mtpt_cur].rs_n = 0;
}

/* The running thread's tracing begins at ip: no return compresses
 * against the calls before (its stack keeps them, for its callers). */
static void begin_here(ULong ip)
{
	tnt_reset();
	mtpt_th[mtpt_cur].rs_n = 0;
	mtpt_th[mtpt_cur].psb_n = 0;
	mtpt_th[mtpt_cur].started = True;
	/* Its goroutine first: the truth's first rows are its. */
	if (mtpt_opt_go_fns)
		go_say(ip);
	rec(R_BEGIN, mtpt_cur);
	put64(ip);
}

/* A block of a thread that had stopped being traced (a system call, a
 * signal) or has not begun: it says where it is. */
static VG_REGPARM(1) void h_enter(ULong ip)
{
	UWord p = mtpt_pend;

	mtpt_pend = 0;
	if (!mtpt_tracing || mtpt_dead)
		return;
	if (p & P_BEGIN) {
		begin_here(ip);
	} else if (p & P_ENABLE) {
		rec(R_ENABLE, mtpt_cur);
		put64(ip);
		/* A thread that runs from one system call to the next has
		 * its PSBs here. */
		psb_tick();
	}
}

/* The start symbol's first instruction: tracing begins, for this thread
 * here and for every other at its next block. */
static VG_REGPARM(1) void h_start(ULong ip)
{
	if (mtpt_tracing || mtpt_dead)
		return;
	mtpt_tracing = True;
	for (ThreadId t = 1; t < VG_N_THREADS; t++)
		if (mtpt_th[t].lwp && !mtpt_th[t].exited && t != mtpt_cur)
			mtpt_th[t].pend |= P_BEGIN;
	mtpt_pend = 0;
	begin_here(ip);
}

static VG_REGPARM(3) void h_hit(ULong ip, ULong arg, ULong mark)
{
	Addr ips[MAX_FRAMES];
	UInt n;

	if (!live())
		return;
	n = VG_(get_StackTrace)(mtpt_cur, ips, MAX_FRAMES, NULL, NULL, 0);
	/* The capture may end here: the other threads' stacks.  It may
	 * not (--multi-snapshot, --duration-thresh): the next part of each
	 * thread's trace begins at a PSB, after its next record, which
	 * mt-capture cannot place without the calls. */
	mtpt_put_stacks(mtpt_cur);
	for (ThreadId t = 1; t < VG_N_THREADS; t++)
		mtpt_th[t].psb_n = mtpt_opt_psb;
	rec(R_HIT, mtpt_cur);
	put64(ip);
	put64(arg);
	put64(mark);
	put64(mtpt_wall_ns());
	put16((UShort)n);
	for (UInt i = 0; i < n; i++)
		put64(ips[i]);
	/* mt-capture decides at once whether this ends the capture. */
	mtpt_flush_out();
}

static VG_REGPARM(2) void h_ptw(ULong value, ULong ip)
{
	if (!live())
		return;
	rec(R_PTW, mtpt_cur);
	put64(value);
	put64(ip);
}

/* ---- instrumentation ---- */

/* What the instruction at p (len bytes) does to control flow. */
static Int classify(const UChar *p, UInt len)
{
	UInt i = 0;

	while (i < len &&
	       (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0x2e || p[i] == 0x3e ||
		p[i] == 0x26 || p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65 ||
		p[i] == 0xf0 || p[i] == 0xf2 || p[i] == 0xf3 ||
		(p[i] & 0xf0) == 0x40))
		i++;
	if (i >= len)
		return K_PLAIN;
	switch (p[i]) {
	case 0x70 ... 0x7f:
	case 0xe0 ... 0xe3: /* loopne, loope, loop, jrcxz */
		return K_COND;
	case 0xe9:
	case 0xeb:
		return K_JMP;
	case 0xe8:
		return K_CALL;
	case 0xc2:
	case 0xc3:
		return K_RET;
	case 0xcd:
		return K_SYSCALL;
	case 0xff:
		if (i + 1 < len)
			switch ((p[i + 1] >> 3) & 7) {
			case 2:
			case 3:
				return K_ICALL;
			case 4:
			case 5:
				return K_IJMP;
			}
		return K_PLAIN;
	case 0x0f:
		if (i + 1 < len) {
			if (p[i + 1] >= 0x80 && p[i + 1] <= 0x8f)
				return K_COND;
			if (p[i + 1] == 0x05 || p[i + 1] == 0x34)
				return K_SYSCALL;
		}
		return K_PLAIN;
	default:
		return K_PLAIN;
	}
}

/* The target of the conditional branch at p (len bytes): rel8 or
 * rel32 after the opcode. */
static ULong jcc_target(Addr p, UInt len)
{
	const UChar *b = (const UChar *)p;

	if (len >= 6 && b[len - 6] == 0x0f)
		return p + len +
		       (ULong)(Long)(Int)(b[len - 4] | b[len - 3] << 8 |
					  b[len - 2] << 16 |
					  (UInt)b[len - 1] << 24);
	return p + len + (ULong)(Long)(signed char)b[len - 1];
}

static IRExpr *c64(ULong v)
{
	return IRExpr_Const(IRConst_U64(v));
}

static void dirty(IRSB *sb, const HChar *name, void *fn, Int regparms,
		  IRExpr **args)
{
	IRDirty *d = unsafeIRDirty_0_N(regparms, name,
				       VG_(fnptr_to_fnentry)(fn), args);

	addStmtToIRSB(sb, IRStmt_Dirty(d));
}

/* An expression of sb as a 64-bit temporary. */
static IRExpr *as_tmp(IRSB *sb, IRExpr *e)
{
	IRTemp t = newIRTemp(sb->tyenv, Ity_I64);

	addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
	return IRExpr_RdTmp(t);
}

static IRExpr *ld64(IRSB *sb, void *addr)
{
	return as_tmp(sb,
		      IRExpr_Load(Iend_LE, Ity_I64, c64((ULong)(Addr)addr)));
}

static void st64(IRSB *sb, void *addr, IRExpr *e)
{
	addStmtToIRSB(sb, IRStmt_Store(Iend_LE, c64((ULong)(Addr)addr), e));
}

/*
 * The bit of a conditional branch into the pack, by the instrumented
 * code itself (a helper call for each branch would cost more than the
 * rest): taken is guard, or its negation when the exit is the fall
 * through.  A full pack calls h_tnt_full().
 */
static void add_tnt(IRSB *sb, IRExpr *guard, Bool exit_taken, ULong target,
		    ULong next, IRExpr *ic)
{
	IRTemp tk = newIRTemp(sb->tyenv, Ity_I1);
	IRTemp first = newIRTemp(sb->tyenv, Ity_I1);
	IRTemp full = newIRTemp(sb->tyenv, Ity_I1);
	IRExpr *w, *w1;
	IRDirty *d;

	addStmtToIRSB(sb, IRStmt_WrTmp(tk, exit_taken ? guard
						      : IRExpr_Unop(Iop_Not1,
								    guard)));
	/* One word: shifted up, the bit in below; the count is where the
	 * leading 1 is (mtpt_flush_tnt_now()). */
	w = ld64(sb, &mtpt_tnt);
	w1 = as_tmp(sb,
		    IRExpr_Binop(Iop_Shl64, w, IRExpr_Const(IRConst_U8(1))));
	w1 = as_tmp(sb,
		    IRExpr_Binop(Iop_Or64, w1,
				 as_tmp(sb, IRExpr_Unop(Iop_1Uto64,
							IRExpr_RdTmp(tk)))));
	st64(sb, &mtpt_tnt, w1);
	st64(sb, &mtpt_tnt_ip,
	     as_tmp(sb, IRExpr_ITE(IRExpr_RdTmp(tk), c64(target), c64(next))));
	/* The time of the pack's first bit, stored only then; ic is the
	 * block's count, already in a temporary. */
	addStmtToIRSB(sb, IRStmt_WrTmp(first, IRExpr_Binop(Iop_CmpEQ64, w,
							   c64(TNT_EMPTY))));
	addStmtToIRSB(sb, IRStmt_StoreG(Iend_LE, c64((ULong)(Addr)&mtpt_tnt_t0),
					ic, IRExpr_RdTmp(first)));
	st64(sb, &mtpt_tnt_t1, ic);
	/* 63 bits: the leading 1 is the sign bit. */
	addStmtToIRSB(
		sb, IRStmt_WrTmp(full, IRExpr_Binop(Iop_CmpLT64S, w1, c64(0))));
	d = unsafeIRDirty_0_N(0, "h_tnt_full",
			      VG_(fnptr_to_fnentry)(h_tnt_full),
			      mkIRExprVec_0());
	d->guard = IRExpr_RdTmp(full);
	addStmtToIRSB(sb, IRStmt_Dirty(d));
}

/* Is a the first instruction of function name (Valgrind's symbols)? */
static Bool entry_of(Addr a, const HChar *name)
{
	const HChar *fn;

	return name && name[0] &&
	       VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), a, &fn) &&
	       !VG_(strcmp)(fn, name);
}

/* Is a one of the file offsets of --mt-trigger-offs in the file
 * --mt-trigger-file? */
static Bool at_trigger_off(Addr a)
{
	NSegment const *seg;
	const HChar *path, *p = mtpt_opt_trigger_offs;
	ULong off;

	if (!mtpt_opt_trigger_file || !p)
		return False;
	seg = VG_(am_find_nsegment)(a);
	path = seg && seg->kind == SkFileC ? VG_(am_get_filename)(seg) : NULL;
	if (!path || VG_(strcmp)(path, mtpt_opt_trigger_file))
		return False;
	off = (ULong)seg->offset + (a - seg->start);
	while (*p) {
		HChar *end;

		if (VG_(strtoull16)(p, &end) == off)
			return True;
		if (end == p)
			break;
		p = *end == ',' ? end + 1 : end;
	}
	return False;
}

/* Is a the trigger? */
static Bool is_trigger(Addr a)
{
	return entry_of(a, mtpt_opt_trigger) ||
	       (mtpt_opt_trigger_addr && a == mtpt_opt_trigger_addr) ||
	       at_trigger_off(a);
}

/* Is a where tracing begins? */
static Bool is_start(Addr a)
{
	NSegment const *seg;
	const HChar *path;

	if (!mtpt_opt_start_file)
		return entry_of(a, mtpt_opt_start);
	seg = VG_(am_find_nsegment)(a);
	path = seg && seg->kind == SkFileC ? VG_(am_get_filename)(seg) : NULL;
	return path &&
	       (ULong)seg->offset + (a - seg->start) == mtpt_opt_start_off &&
	       !VG_(strcmp)(path, mtpt_opt_start_file);
}

/* Is a in one of the functions of --mt-go-fns? */
static Bool in_go_switch(Addr a)
{
	const HChar *fn, *p = mtpt_opt_go_fns;
	UInt n;

	if (!p || !VG_(get_fnname)(VG_(current_DiEpoch)(), a, &fn))
		return False;
	n = VG_(strlen)(fn);
	while (*p) {
		const HChar *end = VG_(strchr)(p, ',');
		UInt len = end ? (UInt)(end - p) : VG_(strlen)(p);

		if (len == n && !VG_(strncmp)(p, fn, n))
			return True;
		if (!end)
			break;
		p = end + 1;
	}
	return False;
}

IRSB *mtpt_instrument(VgCallbackClosure *closure, IRSB *in,
		      const VexGuestLayout *layout, const VexGuestExtents *vge,
		      const VexArchInfo *archinfo_host, IRType gWordTy,
		      IRType hWordTy)
{
	IRSB *out;
	Int i = 0, ninsn = 0, kind = K_PLAIN, cur_kind = K_PLAIN;
	Addr last = 0, first = 0, cur = 0;
	UInt last_len = 0, cur_len = 0;
	IRExpr *ic = NULL; /* mtpt_icount after this block */

	(void)closure;
	(void)layout;
	(void)vge;
	(void)archinfo_host;
	(void)gWordTy;
	(void)hWordTy;
	if (gWordTy != Ity_I64)
		VG_(tool_panic)("mtpt: 64-bit guests only");
	out = deepCopyIRSBExceptStmts(in);
	while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark)
		addStmtToIRSB(out, in->stmts[i++]);
	for (Int k = i; k < in->stmts_used; k++)
		if (in->stmts[k]->tag == Ist_IMark) {
			ninsn++;
			if (!first)
				first = (Addr)in->stmts[k]->Ist.IMark.addr;
			last = (Addr)in->stmts[k]->Ist.IMark.addr;
			last_len = in->stmts[k]->Ist.IMark.len;
		}
	if (first) {
		/* if (mtpt_pend) h_enter(first); mtpt_icount += ninsn */
		IRExpr *p =
			as_tmp(out, IRExpr_Load(Iend_LE, Ity_I64,
						c64((ULong)(Addr)&mtpt_pend)));
		IRTemp c = newIRTemp(out->tyenv, Ity_I1);
		IRDirty *d = unsafeIRDirty_0_N(1, "h_enter",
					       VG_(fnptr_to_fnentry)(h_enter),
					       mkIRExprVec_1(c64(first)));
		IRExpr *n;

		addStmtToIRSB(out, IRStmt_WrTmp(c, IRExpr_Binop(Iop_CmpNE64, p,
								c64(0))));
		d->guard = IRExpr_RdTmp(c);
		addStmtToIRSB(out, IRStmt_Dirty(d));
		n = as_tmp(out, IRExpr_Load(Iend_LE, Ity_I64,
					    c64((ULong)(Addr)&mtpt_icount)));
		n = as_tmp(out, IRExpr_Binop(Iop_Add64, n, c64((ULong)ninsn)));
		addStmtToIRSB(out,
			      IRStmt_Store(Iend_LE,
					   c64((ULong)(Addr)&mtpt_icount), n));
		ic = n;
	}
	for (; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];

		if (st->tag == Ist_IMark) {
			Addr a = (Addr)st->Ist.IMark.addr;

			addStmtToIRSB(out, st);
			cur = a;
			cur_len = st->Ist.IMark.len;
			cur_kind = classify((const UChar *)a, cur_len);
			if (!mtpt_tracing && is_start(a))
				dirty(out, "h_start", h_start, 1,
				      mkIRExprVec_1(c64(a)));
			if (is_trigger(a))
				dirty(out, "h_hit", h_hit, 3,
				      mkIRExprVec_3(
					      c64(a),
					      as_tmp(out,
						     IRExpr_Get(
							     OFFSET_amd64_RDI,
							     Ity_I64)),
					      as_tmp(out,
						     IRExpr_Get(
							     OFFSET_amd64_RSI,
							     Ity_I64))));
			if (entry_of(a, mtpt_opt_ptwrite))
				dirty(out, "h_ptw", h_ptw, 2,
				      mkIRExprVec_2(
					      as_tmp(out,
						     IRExpr_Get(
							     OFFSET_amd64_RDI,
							     Ity_I64)),
					      c64(a)));
			continue;
		}
		/* A conditional branch's exit (not the exit to itself of a
		 * rep-prefixed instruction, nor one of Valgrind's own):
		 * which way it went, before the exit that may leave the
		 * block.  Its other way is the block's end, or, when
		 * Valgrind unrolled a loop, the next copy of it. */
		if (st->tag == Ist_Exit && cur_kind == K_COND &&
		    st->Ist.Exit.jk == Ijk_Boring &&
		    st->Ist.Exit.dst->tag == Ico_U64 &&
		    st->Ist.Exit.dst->Ico.U64 != cur) {
			ULong dst = st->Ist.Exit.dst->Ico.U64;
			ULong next = cur + cur_len;
			Bool exit_taken = dst != next;
			ULong target =
				exit_taken ? dst : jcc_target(cur, cur_len);

			if (mtpt_opt_truth)
				dirty(out, "h_cond", h_cond, 0,
				      mkIRExprVec_4(
					      as_tmp(out,
						     IRExpr_Unop(
							     Iop_1Uto64,
							     st->Ist.Exit
								     .guard)),
					      c64(exit_taken), c64(target),
					      c64(next)));
			else
				add_tnt(out, st->Ist.Exit.guard, exit_taken,
					target, next, ic);
			cur_kind = K_PLAIN; /* one bit per branch */
		}
		addStmtToIRSB(out, st);
	}
	kind = cur == last ? cur_kind : K_PLAIN;
	/* Where the runtime may have changed goroutines: before the
	 * transfer's record, which is the new goroutine's. */
	if (mtpt_opt_go_fns && kind != K_PLAIN && kind != K_COND &&
	    kind != K_SYSCALL && in_go_switch(last))
		dirty(out, "h_go", h_go, 1, mkIRExprVec_1(in->next));
	switch (kind) {
	case K_CALL:
		if (in->next->tag == Iex_Const && !mtpt_opt_calls)
			dirty(out, "h_dcall", h_dcall, 1,
			      mkIRExprVec_1(c64(last + last_len)));
		else if (in->next->tag == Iex_Const)
			dirty(out, "h_call", h_call, 2,
			      mkIRExprVec_2(c64(last + last_len), in->next));
		else
			dirty(out, "h_icall", h_icall, 2,
			      mkIRExprVec_2(c64(last + last_len), in->next));
		break;
	case K_ICALL:
		dirty(out, "h_icall", h_icall, 2,
		      mkIRExprVec_2(c64(last + last_len), in->next));
		break;
	case K_RET:
		dirty(out, "h_ret", h_ret, 1, mkIRExprVec_1(in->next));
		break;
	case K_IJMP:
		dirty(out, "h_ijmp", h_ijmp, 1, mkIRExprVec_1(in->next));
		break;
	case K_JMP:
		if (mtpt_opt_truth && in->next->tag == Iex_Const)
			dirty(out, "h_jmp", h_jmp, 1, mkIRExprVec_1(in->next));
		break;
	case K_SYSCALL:
		if (in->jumpkind == Ijk_Sys_syscall ||
		    in->jumpkind == Ijk_Sys_int128 ||
		    in->jumpkind == Ijk_Sys_sysenter)
			dirty(out, "h_syscall", h_syscall, 1,
			      mkIRExprVec_1(c64(last + last_len)));
		break;
	default:
		break;
	}
	return out;
}
