// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the parts of mtpt share: the records, the state, and the
 * output channel's inline writers.
 *
 * Copyright (C) the mt authors.
 *
 * This program is free software; you can redistribute it and/or modify
 * it under the terms of the GNU General Public License as published by
 * the Free Software Foundation; either version 2 of the License, or (at
 * your option) any later version.  See vgtool/COPYING.
 */
#ifndef MTPT_H
#define MTPT_H

#include "libvex_guest_amd64.h"
#include "libvex_guest_offsets.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* The records (docs/capture.md, "The stream of the Valgrind tool"). */
enum {
	R_HELLO = 'H',	 /* u32 magic, u32 pid, u64 t0, u32 ppid, u32 ptid */
	R_SWITCH = 'S',	 /* u32 tid: the records after are its own */
	R_BEGIN = 'B',	 /* dt, u64 ip: tracing begins for the thread */
	R_TNT = 'N',	 /* u64 pack, dt, dt2, u64 ip */
	R_COND = 'C',	 /* dt, u8 taken, u64 target, u64 next (--mt-truth) */
	R_JMP = 'J',	 /* dt, u64 target: a direct jump (--mt-truth) */
	R_CALL = 'c',	 /* dt, u64 ret, u64 target */
	R_ICALL = 'i',	 /* dt, u64 ret, u64 target */
	R_IJMP = 'j',	 /* dt, u64 target */
	R_RET = 'r',	 /* dt, u64 target */
	R_SYSCALL = 'y', /* dt, u64 next */
	R_ASYNC = 'a',	 /* dt, u8 user, u64 ip: a signal is delivered */
	R_ENABLE = 'e',	 /* dt, u64 ip: tracing resumes at ip */
	R_EXIT = 'x',	 /* dt: the thread is gone */
	R_MMAP = 'm',	 /* dt, u64 addr, len, pgoff, u8 prot, u16 n, path */
	R_HIT = 'h',	 /* dt, u64 ip, arg, mark, wall, u16 n, u64 ips[n] */
	R_PTW = 'w',	 /* dt, u64 value, u64 ip */
	R_END = 'E',	 /* dt, u64 instructions */
	R_EXEC = 'X',	 /* u16 n, path: the program execs path */
	R_GO = 'g',	 /* dt, u64 ip, g, goid: it runs goroutine g from ip */
	R_PSB = 'P',	 /* (--mt-calls=no) a PSB+ here: no call before it
			  * is compressed against after it */
	R_STACK = 'k',	 /* u32 lwp, u32 n, u64 ret[n], the newest first:
			  * the return addresses of its calls not returned
			  * from (--mt-calls=no) */
	R_STACKS = 'K',	 /* the stacks mt-capture asked for are all sent */
	/* With c, i, j, r: a pack's fields (an N record's, less its ip)
	 * come before the record's own. */
	R_PACKED = 0x80,
};
/* The most bytes a pack's fields take. */
#define PACK_MAX   (8 + 10 + 10 + 10)
#define MAGIC	   0x6d747074u /* "mtpt" */
#define TIME_SHIFT 0	       /* 1 instruction a nanosecond */
#define MAX_FRAMES 256

enum { K_PLAIN, K_COND, K_JMP, K_CALL, K_ICALL, K_IJMP, K_RET, K_SYSCALL };

/* Why a thread's next block must say where it is (mtpt_pend bits). */
enum { P_BEGIN = 1, P_ENABLE = 2 };

/* The returns whose target is the return address of the newest call
 * not yet returned from go into the pack as its bits (taken), as the
 * hardware compresses them: the return addresses of the calls, as many
 * as the hardware keeps (RETSTACK_MAX in ptenc/ptenc_fast.h). */
#define RS_MAX 64

/* With --mt-calls=no the tool says where mt-capture puts a PSB+ (and
 * empties its stack of calls there): after --mt-psb records of the
 * thread, [512], about the hardware's 4 KiB of packets (a record makes
 * 20 bytes at most). */
#define PSB_RECORDS 512

struct th {
	Int lwp;
	Bool started, exited;
	UWord pend;
	ULong sys_vt, sys_wall; /* at the last system call's entry */
	ULong g;		/* the goroutine it runs (Go), 0: none seen */
	/* Of the return addresses on ss, how many of the newest a return
	 * may compress against (RS_MAX at most: the hardware's). */
	UInt rs_n;
	UInt psb_n; /* records since its last PSB (--mt-calls=no) */
	/* The return addresses of its calls not returned from, the
	 * newest last (with --mt-calls=no mt-capture, which sees no direct
	 * call, gets them where a capture may end). */
	ULong *ss;
	UInt ss_n, ss_cap;
};

#define TNT_EMPTY 1ull

/* mtpt.c: the options, */
extern const HChar *mtpt_opt_sock;
extern Bool mtpt_opt_follow;
extern const HChar *mtpt_opt_start;
extern const HChar *mtpt_opt_start_file;
extern ULong mtpt_opt_start_off;
extern const HChar *mtpt_opt_trigger;
extern ULong mtpt_opt_trigger_addr;
extern const HChar *mtpt_opt_trigger_file;
extern const HChar *mtpt_opt_trigger_offs;
extern const HChar *mtpt_opt_ptwrite;
extern Bool mtpt_opt_truth;
extern Bool mtpt_opt_retcomp;
extern Bool mtpt_opt_calls;
extern UInt mtpt_opt_psb;
extern const HChar *mtpt_opt_go_fns;
extern Long mtpt_opt_go_tls;
extern ULong mtpt_opt_go_goid;

/* the state (Valgrind runs one thread at a time: see mtpt.c), */
extern Int mtpt_fd;
extern Bool mtpt_tracing;
extern Bool mtpt_dead;
extern ULong mtpt_icount;
extern ULong mtpt_extra;
extern ULong mtpt_t0;
extern ULong mtpt_last_vt;
extern UWord mtpt_pend;
extern ThreadId mtpt_cur;
extern ThreadId mtpt_said;
extern ULong mtpt_tnt;
extern ULong mtpt_tnt_t0, mtpt_tnt_t1;
extern ULong mtpt_tnt_ip;
extern ULong mtpt_tnt_rets;
extern Bool mtpt_stacks_due;
extern struct th *mtpt_th;
extern UChar mtpt_buf[1 << 16];
extern UInt mtpt_len;

/* and the output channel's functions that are not inline. */
ULong mtpt_wall_ns(void);
void mtpt_flush_out(void);
void mtpt_flush_full(void);
UChar mtpt_open_stream(UInt ppid, UInt ptid);
void mtpt_say_thread(ThreadId tid);
void mtpt_flush_tnt_now(void);
void mtpt_put_stack(ThreadId tid);
void mtpt_put_stacks(ThreadId except);
void mtpt_answer_stacks(void);

/* mtpt_instr.c: the instrumentation, and the helpers it calls. */
IRSB *mtpt_instrument(VgCallbackClosure *closure, IRSB *in,
		      const VexGuestLayout *layout, const VexGuestExtents *vge,
		      const VexArchInfo *archinfo_host, IRType gWordTy,
		      IRType hWordTy);

/* The virtual clock: inline, as every call, return and jump reads it. */
static inline ULong mtpt_vt_now(void)
{
	return mtpt_t0 + (mtpt_icount >> TIME_SHIFT) + mtpt_extra;
}

/* Room for n more bytes (n <= sizeof(mtpt_buf)): where they go. */
static inline UChar *room(UInt n)
{
	if (mtpt_len + n > sizeof(mtpt_buf))
		mtpt_flush_full();
	return mtpt_buf + mtpt_len;
}

/* The fields are stored in place, not copied through VG_(memcpy): the
 * records of a call-heavy program are most of what the tool does. */
static inline void put(const void *p, UInt n)
{
	VG_(memcpy)(room(n), p, n);
	mtpt_len += n;
}

static inline void put8(UChar v)
{
	*room(1) = v;
	mtpt_len++;
}

static inline void put16(UShort v)
{
	*(UShort *)room(2) = v;
	mtpt_len += 2;
}

static inline void put32(UInt v)
{
	*(UInt *)room(4) = v;
	mtpt_len += 4;
}

static inline void put64(ULong v)
{
	*(ULong *)room(8) = v;
	mtpt_len += 8;
}

static inline void put_leb(ULong v)
{
	UChar *b = room(10);

	while (v >= 0x80) {
		*b++ = (UChar)(v | 0x80);
		v >>= 7;
		mtpt_len++;
	}
	*b = (UChar)v;
	mtpt_len++;
}

/* The time field of a record: nanoseconds since the previous one. */
static inline void put_time(ULong vt)
{
	put_leb(vt >= mtpt_last_vt ? vt - mtpt_last_vt : 0);
	if (vt > mtpt_last_vt)
		mtpt_last_vt = vt;
}

/* Fields written at p, for a record whose room is reserved at once. */
static inline UChar *w64(UChar *p, ULong v)
{
	*(ULong *)p = v;
	return p + 8;
}

static inline UChar *wleb(UChar *p, ULong v)
{
	while (v >= 0x80) {
		*p++ = (UChar)(v | 0x80);
		v >>= 7;
	}
	*p++ = (UChar)v;
	return p;
}

/* The time field at p: nanoseconds since the previous record. */
static inline UChar *wtime(UChar *p, ULong vt)
{
	p = wleb(p, vt >= mtpt_last_vt ? vt - mtpt_last_vt : 0);
	if (vt > mtpt_last_vt)
		mtpt_last_vt = vt;
	return p;
}

/* The pack is empty. */
static inline void tnt_reset(void)
{
	mtpt_tnt = TNT_EMPTY;
	mtpt_tnt_rets = 0;
}

/* The fields of a pack at p: u64 word (the branches below its leading
 * 1, the first highest: the shift register as the instrumented code
 * leaves it, so that neither side turns it around), dt of the first,
 * span, which of them are returns (bit k: the k-th, the first 0). */
static inline UChar *wpack(UChar *p)
{
	p = w64(p, mtpt_tnt);
	p = wtime(p, mtpt_t0 + mtpt_extra + (mtpt_tnt_t0 >> TIME_SHIFT));
	p = wleb(p, (mtpt_tnt_t1 - mtpt_tnt_t0) >> TIME_SHIFT);
	return wleb(p, mtpt_tnt_rets);
}

static inline void flush_tnt(void)
{
	if (mtpt_tnt != TNT_EMPTY)
		mtpt_flush_tnt_now();
}

/* Records of thread tid follow. */
static inline void to_thread(ThreadId tid)
{
	flush_tnt();
	mtpt_say_thread(tid);
}

/* A record of the running thread starts: type, then its time. */
static inline void rec(UChar type, ThreadId tid)
{
	to_thread(tid);
	flush_tnt();
	/* (Counted, but a PSB goes only where the thread is traced, after
	 * a branch's record: psb_tick().) */
	mtpt_th[tid].psb_n++;
	put8(type);
	put_time(mtpt_vt_now());
}

/* A call, return or indirect jump of the running thread (traced):
 * its type, the pending pack's fields before its own when there is one
 * (R_PACKED: a record fewer a transfer, most of a call-heavy program's
 * stream), and its time; room for n bytes of fields after: where they
 * go.  Inlined in each helper: a call fewer a transfer. */
static inline __attribute__((always_inline)) UChar *rec_room(UChar type, UInt n)
{
	UChar *p;

	/* The thread changes seldom: no call when it did not. */
	if (mtpt_cur != mtpt_said)
		mtpt_say_thread(mtpt_cur);
	p = room(1 + PACK_MAX + 10 + n);
	if (mtpt_tnt != TNT_EMPTY) {
		*p++ = type | R_PACKED;
		p = wpack(p);
		tnt_reset();
	} else {
		*p++ = type;
	}
	return wtime(p, mtpt_vt_now());
}

/* The fields from rec_room() end at p. */
static inline void rec_end(UChar *p)
{
	mtpt_len = (UInt)(p - mtpt_buf);
}

static inline Bool live(void)
{
	return mtpt_tracing && !mtpt_dead && mtpt_th[mtpt_cur].started;
}

#endif
