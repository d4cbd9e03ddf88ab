// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mtpt: a Valgrind tool that reports a program's control flow, the
 * events Intel PT hardware turns into packets, to mt-capture.
 *
 * Copyright (C) the mt authors.
 *
 * This program is free software; you can redistribute it and/or modify
 * it under the terms of the GNU General Public License as published by
 * the Free Software Foundation; either version 2 of the License, or (at
 * your option) any later version.  See vgtool/COPYING.
 *
 * It runs inside Valgrind (linked with its libraries, hence the GPL) and
 * talks to mt-capture only through the socket named by --mt-sock: a stream
 * of records whose layout docs/capture.md describes.  mt-capture encodes
 * the packets; this side only says what happened, as cheaply as it can:
 *
 *  - each superblock is one straight run of guest instructions ending at
 *    its first control transfer (mt-capture runs Valgrind with
 *    --vex-guest-chase=no, so no branch is folded into a block), and the
 *    last instruction's bytes say what that transfer is: only a real
 *    conditional branch (Jcc, JrCXZ, LOOP) gives a taken/not-taken bit,
 *    whatever exits Valgrind made for rep prefixes or other idioms;
 *  - taken bits are packed here, 63 to a record; calls, returns,
 *    indirect branches, system calls, signals, thread switches, mappings
 *    and hits are records of their own;
 *  - time is virtual: one instruction a nanosecond (a 1 GHz CPU that
 *    retires one instruction a cycle), plus the wall time a system call
 *    took (see mtpt_vt_now()): every instruction has a time of its own.
 *
 * Valgrind runs one thread at a time and calls a tool without a closure,
 * so the state is global; the thread that runs owns mtpt_pend and the TNT
 * pack.
 */
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

/* Valgrind's core offers these to its own parts; a tool may call them. */
extern Int VG_(safe_fd)(Int oldfd);
extern SysRes VG_(do_syscall)(UWord sysno, RegWord a1, RegWord a2, RegWord a3,
			      RegWord a4, RegWord a5, RegWord a6, RegWord a7,
			      RegWord a8);
/* --trace-children: a child that is not traced execs without Valgrind. */
extern Bool VG_(clo_trace_children);

/* The records (docs/capture.md, "The stream of the Valgrind tool"). */
enum {
	R_HELLO = 'H',	 /* u32 magic, u32 pid, u64 t0, u32 ppid, u32 ptid */
	R_SWITCH = 'S',	 /* u32 tid: the records after are its own */
	R_BEGIN = 'B',	 /* dt, u64 ip: tracing begins for the thread */
	R_TNT = 'N',	 /* u8 n, u64 bits, dt, dt2, u64 ip */
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
	/* With c, i, j, r: a pack's fields (an N record's, less its ip)
	 * come before the record's own. */
	R_PACKED = 0x80,
};
/* The most bytes a pack's fields take. */
#define PACK_MAX   (1 + 8 + 10 + 10)
#define MAGIC	   0x6d747074u /* "mtpt" */
#define TIME_SHIFT 0	       /* 1 instruction a nanosecond */
#define MAX_FRAMES 256

enum { K_PLAIN, K_COND, K_JMP, K_CALL, K_ICALL, K_IJMP, K_RET, K_SYSCALL };

/* Why a thread's next block must say where it is (mtpt_pend bits). */
enum { P_BEGIN = 1, P_ENABLE = 2 };

struct th {
	Int lwp;
	Bool started, exited;
	UWord pend;
	ULong sys_vt, sys_wall; /* at the last system call's entry */
	ULong g;		/* the goroutine it runs (Go), 0: none seen */
};

/* Options. */
const HChar *mtpt_opt_sock; /* mt-capture's abstract socket address */
Bool mtpt_opt_follow;	    /* children forked are traced */
const HChar *mtpt_opt_start = "main";
/* A program without symbols: its start is this offset of this file. */
const HChar *mtpt_opt_start_file;
ULong mtpt_opt_start_off;
const HChar *mtpt_opt_trigger = "mt_snapshot_point";
/* A trigger that is no function: an address, or where a source line
 * begins (offsets of a file, comma-separated). */
ULong mtpt_opt_trigger_addr;
const HChar *mtpt_opt_trigger_file;
const HChar *mtpt_opt_trigger_offs;
const HChar *mtpt_opt_ptwrite = NULL;
Bool mtpt_opt_truth = False;
/* A Go program: the functions a thread changes goroutines in
 * (comma-separated names), where its g is from the FS base, and where a g
 * holds its id (0: not known). */
const HChar *mtpt_opt_go_fns;
Long mtpt_opt_go_tls = -8;
ULong mtpt_opt_go_goid;

Int mtpt_fd = -1;
Bool mtpt_tracing;  /* the start symbol was reached */
Bool mtpt_dead;	    /* mt-capture went away: say nothing more */
ULong mtpt_icount;  /* guest instructions run, all threads */
ULong mtpt_extra;   /* ns added for system calls */
ULong mtpt_t0;	    /* CLOCK_MONOTONIC at start */
ULong mtpt_last_vt; /* the time of the last record */
UWord mtpt_pend;    /* the running thread's P_* */
ThreadId mtpt_cur;  /* the running thread */
ThreadId mtpt_said; /* the thread the last R_SWITCH named */
/* The running thread's pending bits, packed by the instrumented code
 * itself (see add_tnt()): the bits, newest lowest, above a 1 that says
 * how many (TNT_EMPTY: none); mtpt_icount at the first and the last, and
 * where the last branch went. */
#define TNT_EMPTY 1ull
ULong mtpt_tnt = TNT_EMPTY;
ULong mtpt_tnt_t0, mtpt_tnt_t1;
ULong mtpt_tnt_ip;
struct th *mtpt_th; /* VG_N_THREADS of them */
/* What is not sent yet: a buffer small enough that a reader stopped
 * at any moment (Ctrl-C) misses little. */
UChar mtpt_buf[1 << 16];
UInt mtpt_len;

ULong mtpt_wall_ns(void)
{
	struct vki_timespec ts;

	VG_(clock_gettime)(&ts, VKI_CLOCK_MONOTONIC);
	return (ULong)ts.tv_sec * 1000000000ull + (ULong)ts.tv_nsec;
}

/* The virtual clock: instructions at the nominal rate, plus the wall
 * time system calls took. */
ULong mtpt_vt_now(void)
{
	return mtpt_t0 + (mtpt_icount >> TIME_SHIFT) + mtpt_extra;
}

void mtpt_flush_out(void)
{
	UInt off = 0;

	while (off < mtpt_len && !mtpt_dead) {
		/* MSG_NOSIGNAL: a write to a closed socket must not raise
		 * SIGPIPE, which would be delivered to the program. */
		SysRes r = VG_(do_syscall)(
			__NR_sendto, mtpt_fd, (RegWord)(mtpt_buf + off),
			mtpt_len - off, VKI_MSG_NOSIGNAL, 0, 0, 0, 0);

		if (sr_isError(r)) {
			if (sr_Err(r) == VKI_EINTR || sr_Err(r) == VKI_EAGAIN)
				continue;
			mtpt_dead = True;
			break;
		}
		off += (UInt)sr_Res(r);
	}
	mtpt_len = 0;
}

/* Room for n more bytes (n <= sizeof(mtpt_buf)): where they go. */
static inline UChar *room(UInt n)
{
	if (mtpt_len + n > sizeof(mtpt_buf))
		mtpt_flush_out();
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

/*
 * A stream of this process's own to mt-capture (each process, the first,
 * one it forked or one that exec'd, connects anew): the hello (with a
 * fork's parent process and thread, else 0), and mt-capture's answer,
 * returned: 'S' trace from the start symbol, 'T'
 * from here on, anything else (or none) not at all.
 */
UChar mtpt_open_stream(UInt ppid, UInt ptid)
{
	struct vki_sockaddr_un a;
	UInt n = mtpt_opt_sock ? VG_(strlen)(mtpt_opt_sock) : 0;
	SysRes r;
	UChar c = 0;
	Int fd;

	mtpt_len = 0;
	mtpt_dead = True;
	if (!n || n + 1 >= sizeof(a.sun_path))
		return 0;
	r = VG_(do_syscall)(__NR_socket, VKI_AF_UNIX, VKI_SOCK_STREAM, 0, 0, 0,
			    0, 0, 0);
	if (sr_isError(r))
		return 0;
	fd = (Int)sr_Res(r);
	VG_(memset)(&a, 0, sizeof(a));
	a.sun_family = VKI_AF_UNIX;
	VG_(memcpy)(a.sun_path + 1, mtpt_opt_sock, n); /* abstract: no file */
	r = VG_(do_syscall)(__NR_connect, fd, (RegWord)&a,
			    sizeof(a.sun_family) + 1 + n, 0, 0, 0, 0, 0);
	if (sr_isError(r)) {
		VG_(close)(fd);
		return 0;
	}
	/* Out of the program's reach: it may close or reuse low fds. */
	mtpt_fd = VG_(safe_fd)(fd);
	mtpt_dead = False;
	put8(R_HELLO);
	put32(MAGIC);
	put32((UInt)VG_(getpid)());
	put64(mtpt_last_vt);
	put32(ppid);
	put32(ptid);
	mtpt_flush_out();
	do
		r = VG_(do_syscall)(__NR_read, mtpt_fd, (RegWord)&c, 1, 0, 0, 0,
				    0, 0);
	while (sr_isError(r) && sr_Err(r) == VKI_EINTR);
	if (mtpt_dead || sr_isError(r) || sr_Res(r) != 1)
		c = 0;
	if (c != 'T' && c != 'S')
		mtpt_dead = True;
	return c;
}

void mtpt_say_thread(ThreadId tid)
{
	if (tid == mtpt_said)
		return;
	mtpt_said = tid;
	put8(R_SWITCH);
	put32((UInt)mtpt_th[tid].lwp);
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

static inline ULong bit_reverse(ULong x)
{
	x = (x >> 1 & 0x5555555555555555ull) | (x & 0x5555555555555555ull) << 1;
	x = (x >> 2 & 0x3333333333333333ull) | (x & 0x3333333333333333ull) << 2;
	x = (x >> 4 & 0x0f0f0f0f0f0f0f0full) | (x & 0x0f0f0f0f0f0f0f0full) << 4;
	return __builtin_bswap64(x);
}

/* The fields of a pack at p: u8 n, u64 bits, dt of the first, span. */
static inline UChar *wpack(UChar *p)
{
	UInt n = 63 - (UInt)__builtin_clzll(mtpt_tnt);

	*p++ = (UChar)n;
	/* The record's bit k is the k-th branch. */
	p = w64(p, bit_reverse(mtpt_tnt) >> (64 - n));
	p = wtime(p, mtpt_t0 + mtpt_extra + (mtpt_tnt_t0 >> TIME_SHIFT));
	return wleb(p, (mtpt_tnt_t1 - mtpt_tnt_t0) >> TIME_SHIFT);
}

/* The pack of the running thread's bits as a record, if it is traced
 * (bits packed before tracing began are dropped). */
void mtpt_flush_tnt_now(void)
{
	if (mtpt_tracing && !mtpt_dead && mtpt_cur &&
	    mtpt_th[mtpt_cur].started) {
		UChar *p;

		mtpt_say_thread(mtpt_cur);
		p = room(1 + PACK_MAX + 8);
		*p++ = R_TNT;
		p = wpack(p);
		p = w64(p, mtpt_tnt_ip);
		mtpt_len = (UInt)(p - mtpt_buf);
	}
	mtpt_tnt = TNT_EMPTY;
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

	mtpt_say_thread(mtpt_cur);
	p = room(1 + PACK_MAX + 10 + n);
	if (mtpt_tnt != TNT_EMPTY) {
		*p++ = type | R_PACKED;
		p = wpack(p);
		mtpt_tnt = TNT_EMPTY;
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

/* The pack holds 64 bits. */
static void h_tnt_full(void)
{
	flush_tnt();
}

static VG_REGPARM(2) void h_call(ULong ret, ULong target)
{
	if (!live())
		return;
	rec_end(w64(w64(rec_room(R_CALL, 16), ret), target));
}

static VG_REGPARM(2) void h_icall(ULong ret, ULong target)
{
	if (!live())
		return;
	rec_end(w64(w64(rec_room(R_ICALL, 16), ret), target));
}

static VG_REGPARM(1) void h_ijmp(ULong target)
{
	if (!live())
		return;
	rec_end(w64(rec_room(R_IJMP, 8), target));
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
	rec_end(w64(rec_room(R_RET, 8), target));
}

static VG_REGPARM(1) void h_syscall(ULong next)
{
	if (!live())
		return;
	rec(R_SYSCALL, mtpt_cur);
	put64(next);
	mtpt_pend |= P_ENABLE;
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
		mtpt_tnt = TNT_EMPTY;
		mtpt_th[mtpt_cur].started = True;
		/* Its goroutine first: the truth's first rows are its. */
		if (mtpt_opt_go_fns)
			go_say(ip);
		rec(R_BEGIN, mtpt_cur);
		put64(ip);
	} else if (p & P_ENABLE) {
		rec(R_ENABLE, mtpt_cur);
		put64(ip);
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
	mtpt_tnt = TNT_EMPTY;
	mtpt_th[mtpt_cur].started = True;
	if (mtpt_opt_go_fns)
		go_say(ip);
	rec(R_BEGIN, mtpt_cur);
	put64(ip);
}

static VG_REGPARM(3) void h_hit(ULong ip, ULong arg, ULong mark)
{
	Addr ips[MAX_FRAMES];
	UInt n;

	if (!live())
		return;
	n = VG_(get_StackTrace)(mtpt_cur, ips, MAX_FRAMES, NULL, NULL, 0);
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
		if (in->next->tag == Iex_Const)
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

/* ---- events Valgrind reports ---- */

static void on_start_client(ThreadId tid, ULong blocks)
{
	(void)blocks;
	if (tid == mtpt_cur)
		return;
	flush_tnt();
	if (mtpt_cur)
		mtpt_th[mtpt_cur].pend = mtpt_pend;
	mtpt_cur = tid;
	mtpt_pend = mtpt_th[tid].pend;
	mtpt_th[tid].pend = 0;
	if (!mtpt_th[tid].lwp)
		mtpt_th[tid].lwp = VG_(gettid)();
}

/* Set why for tid, the running thread or another. */
static void pend(ThreadId tid, UWord why)
{
	if (tid == mtpt_cur)
		mtpt_pend |= why;
	else
		mtpt_th[tid].pend |= why;
}

static void on_first_insn(ThreadId tid)
{
	mtpt_th[tid].lwp = VG_(gettid)();
	mtpt_th[tid].g = 0;
	mtpt_th[tid].exited = False;
	mtpt_th[tid].started = False;
	if (mtpt_tracing)
		pend(tid, P_BEGIN);
}

static void on_thread_exit(ThreadId tid)
{
	if (mtpt_tracing && !mtpt_dead && mtpt_th[tid].started) {
		rec(R_EXIT, tid);
	}
	mtpt_th[tid].exited = True;
	mtpt_th[tid].started = False;
	mtpt_th[tid].pend = 0;
	if (tid == mtpt_cur)
		mtpt_pend = 0;
}

/* System calls whose time is Valgrind's, not the kernel's: mapping
 * memory (Valgrind reads the debug information of each file mapped
 * then), creating processes and threads.  They take no time. */
static Bool untimed(UInt sysno)
{
	switch (sysno) {
	case __NR_mmap:
	case __NR_mprotect:
	case __NR_munmap:
	case __NR_brk:
	case __NR_mremap:
	case __NR_madvise:
	case __NR_shmat:
	case __NR_shmdt:
	case __NR_clone:
	case __NR_fork:
	case __NR_vfork:
	case __NR_execve:
	case __NR_arch_prctl:
	case __NR_set_tid_address:
		return True;
	default:
		return False;
	}
}

static void on_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
	(void)nargs;
	mtpt_th[tid].sys_vt = mtpt_vt_now();
	mtpt_th[tid].sys_wall = untimed(sysno) ? 0 : mtpt_wall_ns();
	/* Valgrind runs what the program execs without us, and the socket
	 * closes with the exec: mt-capture says why the trace ends. */
	if (sysno == __NR_execve && args[0] && !mtpt_dead) {
		const HChar *path = (const HChar *)args[0];
		UInt n = VG_(strlen)(path);

		flush_tnt();
		put8(R_EXEC);
		put16((UShort)(n > 4095 ? 4095 : n));
		put(path, n > 4095 ? 4095 : n);
		mtpt_flush_out();
	}
	/* It may block: what happened so far is sent first. */
	if (mtpt_th[tid].sys_wall && mtpt_len) {
		flush_tnt();
		mtpt_flush_out();
	}
}

/* The call took w ns of wall time: the clock shows at least that much
 * since it began (other threads may have moved it on meanwhile). */
static void on_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs,
			    SysRes res)
{
	ULong w = mtpt_wall_ns() - mtpt_th[tid].sys_wall;
	ULong want = mtpt_th[tid].sys_vt + w, now = mtpt_vt_now();

	(void)sysno;
	(void)args;
	(void)nargs;
	(void)res;
	if (mtpt_th[tid].sys_wall && want > now)
		mtpt_extra += want - now;
	mtpt_th[tid].sys_wall = 0;
}

static void on_signal(ThreadId tid, Int sig, Bool alt)
{
	UWord p = tid == mtpt_cur ? mtpt_pend : mtpt_th[tid].pend;

	(void)sig;
	(void)alt;
	if (!mtpt_tracing || mtpt_dead || !mtpt_th[tid].started)
		return;
	if (p & P_BEGIN)
		return;
	/* Interrupted in user code: FUP and TIP.PGD there (1); or in a
	 * system call, where tracing had stopped already (0). */
	rec(R_ASYNC, tid);
	put8(!(p & P_ENABLE));
	put64(VG_(get_IP)(tid));
	pend(tid, P_ENABLE);
}

/* An executable file mapping, for mt-capture's MMAP2 records (the page
 * of Valgrind's own text the program runs to return from a signal
 * handler included). */
static void on_map(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di)
{
	NSegment const *seg = VG_(am_find_nsegment)(a);
	const HChar *path = seg ? VG_(am_get_filename)(seg) : NULL;
	UInt n;

	(void)di;
	if (!xx || mtpt_dead)
		return;
	/* Valgrind gives the program no vDSO: code mapped without a file
	 * is generated code, which no trace of ours decodes. */
	if (!path || !VG_IS_PAGE_ALIGNED(a))
		return;
	n = VG_(strlen)(path);
	if (n > 4095)
		n = 4095;
	flush_tnt();
	put8(R_MMAP);
	put_time(mtpt_vt_now());
	put64(a);
	put64(len);
	put64((ULong)seg->offset + (a - seg->start));
	put8((rr ? 1 : 0) | (ww ? 2 : 0) | (xx ? 4 : 0));
	put16((UShort)n);
	put(path, n);
}

static void on_startup_map(Addr a, SizeT len, Bool rr, Bool ww, Bool xx,
			   ULong di)
{
	on_map(a, len, rr, ww, xx, di);
}

/* ---- options and the tool's life ---- */

static Bool mt_option(const HChar *arg)
{
	const HChar *s;

	if VG_STR_CLO (arg, "--mt-sock", mtpt_opt_sock) {
	} else if VG_BOOL_CLO (arg, "--mt-follow", mtpt_opt_follow) {
	} else if VG_STR_CLO (arg, "--mt-start", s) {
		mtpt_opt_start = s;
	} else if VG_STR_CLO (arg, "--mt-start-file", s) {
		mtpt_opt_start_file = s;
	} else if VG_STR_CLO (arg, "--mt-start-off", s) {
		mtpt_opt_start_off = VG_(strtoull16)(s, NULL);
	} else if VG_STR_CLO (arg, "--mt-trigger", s) {
		mtpt_opt_trigger = s;
	} else if VG_STR_CLO (arg, "--mt-trigger-addr", s) {
		mtpt_opt_trigger_addr = VG_(strtoull16)(s, NULL);
	} else if VG_STR_CLO (arg, "--mt-trigger-file", s) {
		mtpt_opt_trigger_file = s;
	} else if VG_STR_CLO (arg, "--mt-trigger-offs", s) {
		mtpt_opt_trigger_offs = s;
	} else if VG_STR_CLO (arg, "--mt-ptwrite", s) {
		mtpt_opt_ptwrite = s;
	} else if VG_BOOL_CLO (arg, "--mt-truth", mtpt_opt_truth) {
	} else if VG_STR_CLO (arg, "--mt-go-fns", s) {
		mtpt_opt_go_fns = s[0] ? s : NULL;
	} else if VG_STR_CLO (arg, "--mt-go-tls", s) {
		mtpt_opt_go_tls = VG_(strtoll10)(s, NULL);
	} else if VG_STR_CLO (arg, "--mt-go-goid", s) {
		mtpt_opt_go_goid = VG_(strtoull10)(s, NULL);
	} else
		return False;
	return True;
}

static void mt_usage(void)
{
	VG_(printf)
	("    --mt-sock=NAME        mt-capture's abstract socket\n"
	 "    --mt-follow=yes|no    trace the children forked\n"
	 "    --mt-start=SYMBOL     begin tracing there ('' at "
	 "once) [main]\n"
	 "    --mt-start-file=PATH  --mt-start-off=HEX  or there, "
	 "an offset of a file\n"
	 "    --mt-trigger=SYMBOL   report reaching it "
	 "[mt_snapshot_point]\n"
	 "    --mt-trigger-addr=HEX  or this address\n"
	 "    --mt-trigger-file=PATH --mt-trigger-offs=HEX,...  or "
	 "these offsets of a file\n"
	 "    --mt-ptwrite=SYMBOL   report its argument\n"
	 "    --mt-truth=yes|no     also report direct jumps\n"
	 "    --mt-go-fns=F,...     Go: report goroutine switches out of "
	 "these\n"
	 "    --mt-go-tls=N         Go: g's slot from the FS base [-8]\n"
	 "    --mt-go-goid=N        Go: the offset of a g's id [0: none]\n");
}

static void mt_debug_usage(void)
{
}

static void mt_post_clo_init(void)
{
	if (!mtpt_opt_sock)
		VG_(fmsg_bad_option)("--mt-sock", "mtpt talks to mt-capture\n");
	mtpt_th = VG_(calloc)("mtpt.threads", VG_N_THREADS, sizeof(*mtpt_th));
	mtpt_t0 = mtpt_wall_ns();
	mtpt_last_vt = mtpt_t0;
	/* A program this one execs runs under Valgrind too (mt-capture asks
	 * --trace-children=yes): it connects as this one did, and mt-capture
	 * says it is traced from its first instruction. */
	mtpt_tracing = mtpt_open_stream(0, 0) == 'T' || !mtpt_opt_start[0];
}

/* A child the program forks: the socket and what is not sent yet are the
 * parent's.  With --mt-follow it says so (its hello names its parent) on
 * a stream of its own and goes
 * on as its parent was, its one thread beginning where the fork returns;
 * without, it runs on untraced, and so does whatever it execs. */
static void on_fork_child(ThreadId tid)
{
	UInt ptid = (UInt)mtpt_th[tid].lwp;
	Bool was_dead = mtpt_dead;

	mtpt_len = 0;
	mtpt_tnt = TNT_EMPTY;
	mtpt_dead = True;
	if (mtpt_fd >= 0)
		VG_(close)(mtpt_fd);
	mtpt_fd = -1;
	if (!mtpt_opt_follow || was_dead) {
		VG_(clo_trace_children) = False;
		return;
	}
	for (ThreadId t = 1; t < VG_N_THREADS; t++)
		if (t != tid)
			VG_(memset)(&mtpt_th[t], 0, sizeof(mtpt_th[t]));
	mtpt_th[tid].lwp = VG_(gettid)();
	mtpt_th[tid].started = False;
	mtpt_th[tid].pend = 0;
	mtpt_th[tid].g = 0;
	mtpt_cur = tid;
	mtpt_said = 0;
	mtpt_pend = 0;
	/* Traced as its parent was (mt-capture may not have read yet that
	 * its parent's tracing began). */
	mtpt_open_stream((UInt)VG_(getppid)(), ptid);
	if (mtpt_dead)
		VG_(clo_trace_children) = False;
	else if (mtpt_tracing)
		mtpt_pend = P_BEGIN;
}

static void mt_fini(Int exitcode)
{
	(void)exitcode;
	if (!mtpt_dead) {
		flush_tnt();
		put8(R_END);
		put_time(mtpt_vt_now());
		put64(mtpt_icount);
		mtpt_flush_out();
	}
}

static void mt_pre_clo_init(void)
{
	VG_(details_name)("mtpt");
	VG_(details_version)(NULL);
	VG_(details_description)("Intel PT events for mt-capture");
	VG_(details_copyright_author)("Copyright (C) the mt authors.");
	VG_(details_bug_reports_to)("the mt project");
	VG_(basic_tool_funcs)(mt_post_clo_init, mtpt_instrument, mt_fini);
	VG_(needs_command_line_options)(mt_option, mt_usage, mt_debug_usage);
	VG_(needs_syscall_wrapper)(on_pre_syscall, on_post_syscall);
	VG_(track_start_client_code)(on_start_client);
	VG_(track_pre_thread_first_insn)(on_first_insn);
	VG_(track_pre_thread_ll_exit)(on_thread_exit);
	VG_(track_pre_deliver_signal)(on_signal);
	VG_(track_new_mem_startup)(on_startup_map);
	VG_(track_new_mem_mmap)(on_map);
	VG_(atfork)(NULL, NULL, on_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(mt_pre_clo_init)
