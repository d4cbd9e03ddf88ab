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
 * talks to mt-capture only through the socket named by --mt-sock and the
 * ring of shared memory mt-capture answers it with there: a stream of
 * records whose layout docs/capture.md describes.  mt-capture encodes
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

#include "mtpt.h"

/* Valgrind's core offers these to its own parts; a tool may call them. */
extern Int VG_(safe_fd)(Int oldfd);
extern SysRes VG_(do_syscall)(UWord sysno, RegWord a1, RegWord a2, RegWord a3,
			      RegWord a4, RegWord a5, RegWord a6, RegWord a7,
			      RegWord a8);
/* --trace-children: a child that is not traced execs without Valgrind. */
extern Bool VG_(clo_trace_children);

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
Bool mtpt_opt_retcomp = False;
Bool mtpt_opt_calls = True;
UInt mtpt_opt_psb = PSB_RECORDS;
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
ULong mtpt_tnt = TNT_EMPTY;
ULong mtpt_tnt_t0, mtpt_tnt_t1;
ULong mtpt_tnt_ip;
ULong mtpt_tnt_rets; /* which of its bits are returns (wpack()) */
/* mt-capture asked for the stacks (it stops): they go after the next
 * record of a branch, where the stream and the stacks agree. */
Bool mtpt_stacks_due;
static Bool stacks_sent;
struct th *mtpt_th; /* VG_N_THREADS of them */
/* What is not given to mt-capture yet: a buffer that stays in the
 * cache, copied into the ring at once when full (the ring's lines go
 * between the cores in one run, not a record at a time), and small
 * enough that a reader stopped at any moment (Ctrl-C) misses little. */
UChar mtpt_buf[1 << 16];
UInt mtpt_len;

/*
 * The shared ring mt-capture hands each process's tool with its answer
 * (docs/capture.md, "The stream of the Valgrind tool"): a page of
 * positions, then the ring, which mt-capture maps twice in a row, so
 * that it reads a record over the ring's end whole.  mtpt_buf is copied
 * in when full and where mtpt_flush_out() is called; the socket carries
 * only a byte that wakes a side that said it sleeps.
 */
struct ring_hdr {
	ULong wpos;  /* bytes published: ours */
	ULong rwake; /* the reader, asleep, wants waking at this wpos */
	UInt rsleep; /* the reader sleeps */
	UInt closed; /* the reader reads no more */
	ULong size;  /* of the ring: mt-capture's */
	UInt stacks; /* the reader asks for every thread's stack */
	UChar pad[28];
	ULong rpos;  /* bytes read: the reader's */
	ULong wwake; /* we wait for this rpos */
	UInt wsleep; /* we wait */
};
#define RING_HDR	4096u
#define MT_MSG_DONTWAIT 0x40
#define MT_POLLERR	0x8
#define MT_POLLHUP	0x10
#define MT_POLLNVAL	0x20

static struct ring_hdr *ring; /* NULL: none */
static SizeT ring_maplen;
static UInt ring_size;
static ULong ring_w; /* bytes published */

extern SysRes VG_(am_shared_mmap_file_float_valgrind)(SizeT length, UInt prot,
						      Int fd, Off64T offset);

static UChar *ring_data; /* the ring, in the mapping */

/* A byte on the socket: the other side, asleep, wakes (one there
 * already does as well). */
static void wake(void)
{
	UChar b = 0;
	SysRes r;

	do
		r = VG_(do_syscall)(__NR_sendto, mtpt_fd, (RegWord)&b, 1,
				    VKI_MSG_NOSIGNAL | MT_MSG_DONTWAIT, 0, 0, 0,
				    0);
	while (sr_isError(r) && sr_Err(r) == VKI_EINTR);
	if (sr_isError(r) && sr_Err(r) != VKI_EAGAIN)
		mtpt_dead = True;
}

/* The reader, if it sleeps and wants what there is (force: whatever it
 * wants), is woken. */
static void ring_wake_reader(Bool force)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ring->closed, __ATOMIC_RELAXED)) {
		mtpt_dead = True;
		return;
	}
	if (__atomic_load_n(&ring->rsleep, __ATOMIC_RELAXED) &&
	    (force ||
	     ring_w >= __atomic_load_n(&ring->rwake, __ATOMIC_RELAXED)) &&
	    __atomic_exchange_n(&ring->rsleep, 0, __ATOMIC_SEQ_CST))
		wake();
}

/* How many bytes of the ring are free (0: the reader is not as it
 * should be: we are done). */
static ULong ring_free(void)
{
	ULong r = __atomic_load_n(&ring->rpos, __ATOMIC_ACQUIRE);

	if (r > ring_w || ring_w - r > ring_size) {
		mtpt_dead = True;
		return 0;
	}
	return ring_size - (ring_w - r);
}

/* The ring is full: wait, the reader woken first, until it has read up
 * to need, or is gone (the socket closes). */
static void ring_wait(ULong need)
{
	struct vki_pollfd p = {.fd = mtpt_fd, .events = VKI_POLLIN};
	UChar b[64];
	SysRes r;

	__atomic_store_n(&ring->wwake, need, __ATOMIC_RELAXED);
	__atomic_store_n(&ring->wsleep, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ring->rpos, __ATOMIC_ACQUIRE) >= need) {
		__atomic_store_n(&ring->wsleep, 0, __ATOMIC_RELAXED);
		return;
	}
	ring_wake_reader(True);
	if (mtpt_dead)
		return;
	do
		r = VG_(do_syscall)(__NR_poll, (RegWord)&p, 1, -1, 0, 0, 0, 0,
				    0);
	while (sr_isError(r) && sr_Err(r) == VKI_EINTR);
	if (sr_isError(r) ||
	    (p.revents & (MT_POLLERR | MT_POLLHUP | MT_POLLNVAL))) {
		mtpt_dead = True;
		return;
	}
	do
		r = VG_(do_syscall)(__NR_recvfrom, mtpt_fd, (RegWord)b,
				    sizeof(b), MT_MSG_DONTWAIT, 0, 0, 0, 0);
	while (sr_isError(r) && sr_Err(r) == VKI_EINTR);
	if (sr_isError(r) ? sr_Err(r) != VKI_EAGAIN : sr_Res(r) == 0)
		mtpt_dead = True;
}

/* A copy as the CPU does it fastest (VG_(memcpy) goes a word at a
 * time). */
static void copy(UChar *d, const UChar *s, SizeT n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

/* What was written is the reader's: into the ring when it has room. */
static void ring_publish(Bool force)
{
	UInt len = mtpt_len, o, first;

	while (!mtpt_dead && len) {
		if (ring_free() >= len)
			break;
		if (!mtpt_dead)
			ring_wait(ring_w + len - ring_size);
	}
	mtpt_len = 0;
	if (mtpt_dead || !len)
		return;
	o = (UInt)(ring_w % ring_size);
	first = len < ring_size - o ? len : ring_size - o;
	copy(ring_data + o, mtpt_buf, first);
	copy(ring_data, mtpt_buf + first, len - first);
	ring_w += len;
	__atomic_store_n(&ring->wpos, ring_w, __ATOMIC_RELEASE);
	ring_wake_reader(force);
	if (!stacks_sent && !mtpt_opt_calls &&
	    __atomic_load_n(&ring->stacks, __ATOMIC_RELAXED))
		mtpt_stacks_due = True;
}

/* room() found too little: what there is goes to mt-capture, which is
 * woken if it sleeps and wants that much. */
void mtpt_flush_full(void)
{
	if (ring)
		ring_publish(False);
	else
		mtpt_flush_out();
}

ULong mtpt_wall_ns(void)
{
	struct vki_timespec ts;

	VG_(clock_gettime)(&ts, VKI_CLOCK_MONOTONIC);
	return (ULong)ts.tv_sec * 1000000000ull + (ULong)ts.tv_nsec;
}

/* The virtual clock: instructions at the nominal rate, plus the wall
 * time system calls took. */
void mtpt_flush_out(void)
{
	UInt off = 0;

	if (ring) {
		ring_publish(True);
		return;
	}
	/* Before the ring: the hello, on the socket. */
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

/* Bytes are written that mt-capture has not been given. */
static Bool unsent(void)
{
	return mtpt_len != 0;
}

static void ring_unmap(void)
{
	if (ring)
		VG_(am_munmap_valgrind)((Addr)ring, ring_maplen);
	ring = NULL;
	mtpt_len = 0;
}

/* The ring mt-capture sent, as its file fd says it is. */
static Bool ring_map(Int fd)
{
	struct vg_stat st;
	SysRes r;
	struct ring_hdr *h;

	if (VG_(fstat)(fd, &st) ||
	    st.size < (Long)(RING_HDR + 2 * sizeof(mtpt_buf)))
		return False;
	r = VG_(am_shared_mmap_file_float_valgrind)(
		(SizeT)st.size, VKI_PROT_READ | VKI_PROT_WRITE, fd, 0);
	if (sr_isError(r))
		return False;
	h = (struct ring_hdr *)sr_Res(r);
	if (h->size < 2 * sizeof(mtpt_buf) || h->size > (1u << 30) ||
	    h->size + RING_HDR != (ULong)st.size || h->wpos) {
		VG_(am_munmap_valgrind)((Addr)h, (SizeT)st.size);
		return False;
	}
	ring = h;
	ring_maplen = (SizeT)st.size;
	ring_size = (UInt)h->size;
	ring_data = (UChar *)h + RING_HDR;
	ring_w = 0;
	mtpt_len = 0;
	return True;
}

/* mt-capture's answer to the hello: a byte, and with 'S' and 'T' the
 * ring's file. */
static UChar answer(void)
{
	UChar c = 0;
	ULong ctl[4];
	struct vki_iovec io = {.iov_base = &c, .iov_len = 1};
	struct vki_msghdr m = {.msg_iov = &io,
			       .msg_iovlen = 1,
			       .msg_control = ctl,
			       .msg_controllen = sizeof(ctl)};
	struct vki_cmsghdr *cm;
	Int fd = -1;
	SysRes r;

	do
		r = VG_(do_syscall)(__NR_recvmsg, mtpt_fd, (RegWord)&m, 0, 0, 0,
				    0, 0, 0);
	while (sr_isError(r) && sr_Err(r) == VKI_EINTR);
	if (sr_isError(r) || sr_Res(r) != 1)
		return 0;
	cm = VKI_CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_level == VKI_SOL_SOCKET &&
	    cm->cmsg_type == VKI_SCM_RIGHTS &&
	    cm->cmsg_len >= sizeof(*cm) + sizeof(fd))
		VG_(memcpy)(&fd, VKI_CMSG_DATA(cm), sizeof(fd));
	if ((c == 'S' || c == 'T') && (fd < 0 || !ring_map(fd)))
		c = 0;
	if (fd >= 0)
		VG_(close)(fd);
	return c;
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

	ring_unmap();
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
	if (!mtpt_dead)
		c = answer();
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

/* The R_STACK of thread tid, if it is traced: the newest frames when
 * they are more than a record holds. */
void mtpt_put_stack(ThreadId tid)
{
	const struct th *th = &mtpt_th[tid];
	UInt n = th->ss_n < 4096 ? th->ss_n : 4096;
	UChar *p;

	if (mtpt_opt_calls || !mtpt_tracing || mtpt_dead || !th->started ||
	    th->exited || !th->lwp)
		return;
	flush_tnt();
	p = room(1 + 4 + 4 + 8 * n);
	*p++ = R_STACK;
	*(UInt *)p = (UInt)th->lwp;
	*(UInt *)(p + 4) = n;
	p += 8;
	for (UInt i = 0; i < n; i++)
		p = w64(p, th->ss[th->ss_n - 1 - i]);
	mtpt_len = (UInt)(p - mtpt_buf);
}

/* The stacks of every traced thread but except (0: none). */
void mtpt_put_stacks(ThreadId except)
{
	if (!mtpt_tracing || mtpt_dead || mtpt_opt_calls)
		return;
	for (ThreadId t = 1; t < VG_N_THREADS; t++)
		if (t != except)
			mtpt_put_stack(t);
}

/* mt-capture's question answered: every stack, then R_STACKS, at once. */
void mtpt_answer_stacks(void)
{
	mtpt_stacks_due = False;
	stacks_sent = True;
	mtpt_put_stacks(0);
	put8(R_STACKS);
	mtpt_flush_out();
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
	tnt_reset();
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
	mtpt_th[tid].ss_n = 0;
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
	/* It may block: what happened so far is sent first, and its
	 * stack, which is then the one where it stays. */
	if (mtpt_th[tid].sys_wall) {
		flush_tnt();
		mtpt_put_stack(tid);
	}
	if (mtpt_th[tid].sys_wall && unsent())
		mtpt_flush_out();
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
	/* mt-capture's TIP.PGD: no return compresses against the calls
	 * before it (mtpt_instr.c, rs_clear()). */
	mtpt_th[tid].rs_n = 0;
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
	} else if VG_BOOL_CLO (arg, "--mt-retcomp", mtpt_opt_retcomp) {
	} else if VG_BOOL_CLO (arg, "--mt-truth", mtpt_opt_truth) {
	} else if VG_BOOL_CLO (arg, "--mt-calls", mtpt_opt_calls) {
	} else if VG_STR_CLO (arg, "--mt-psb", s) {
		mtpt_opt_psb = (UInt)VG_(strtoull10)(s, NULL);
		if (mtpt_opt_psb < 16 || mtpt_opt_psb > 65536)
			VG_(fmsg_bad_option)(arg, "16 to 65536 records\n");
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
	 "    --mt-retcomp=yes|no   returns to the newest call as taken "
	 "bits [no]\n"
	 "    --mt-truth=yes|no     also report direct jumps\n"
	 "    --mt-calls=yes|no     report direct calls; no: place the "
	 "PSBs [yes]\n"
	 "    --mt-psb=N            with --mt-calls=no, a PSB every N "
	 "records [512]\n"
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

	/* The ring is the parent's: none of its bytes are ours. */
	ring_unmap();
	tnt_reset();
	mtpt_dead = True;
	if (mtpt_fd >= 0)
		VG_(close)(mtpt_fd);
	mtpt_fd = -1;
	if (!mtpt_opt_follow || was_dead) {
		VG_(clo_trace_children) = False;
		return;
	}
	for (ThreadId t = 1; t < VG_N_THREADS; t++)
		if (t != tid) {
			if (mtpt_th[t].ss)
				VG_(free)(mtpt_th[t].ss);
			VG_(memset)(&mtpt_th[t], 0, sizeof(mtpt_th[t]));
		}
	/* (Its stack of calls is its parent's, which it may return
	 * into: it stays.) */
	mtpt_stacks_due = False;
	stacks_sent = False;
	mtpt_th[tid].lwp = VG_(gettid)();
	mtpt_th[tid].started = False;
	mtpt_th[tid].pend = 0;
	mtpt_th[tid].g = 0;
	/* Its calls are its parent's: none it returns to compresses. */
	mtpt_th[tid].rs_n = 0;
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
		mtpt_put_stacks(0);
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
