/* SPDX-License-Identifier: MIT */
/*
 * The emulation backend: Intel PT without Intel PT.
 *
 * The target runs under ptrace and every thread is single-stepped.  Before
 * each step the instruction at the IP is classified (Capstone, cached by
 * address); after it, the new IP says where control went, and ptenc turns
 * that into the packets the hardware would have written for a user-only
 * trace: TNT bits for conditional branches and compressed returns, TIPs
 * for indirect branches, TIP.PGD/TIP.PGE around syscalls, FUP+TIP.PGD and
 * TIP.PGE around signal delivery, PSB+ every PSB period, and MTC timing
 * from CLOCK_MONOTONIC.  The result is the same perf.data file the real
 * backend writes, so everything downstream cannot tell the difference.
 *
 * The "TSC" of an emulated capture is CLOCK_MONOTONIC in nanoseconds: the
 * capture's time conversion is the identity, and perf time is the kernel's
 * monotonic clock, as perf's own is.
 *
 * Around the trace: the program is started or attached to (-p, every
 * thread) and run to the start (emu_ptrace.c); its mappings come from
 * /proc/PID/maps and, where the kernel allows a dummy event, its sideband
 * from perf_event_open's rings (sideband.c); the vDSO's bytes are read
 * from it, since no file holds them.  --snapshot-size keeps the newest
 * bytes of each thread as the hardware's ring does; a trigger
 * (mt_snapshot_point, a symbol or FILE:LINE) ends the capture or, with
 * --multi-snapshot, takes a snapshot at every hit.  --truth and
 * --drop-every serve the tests: the calls the emulator saw (emu_truth.c),
 * and overflows it made up.
 */
#include "capture/capture.h"
#include "capture/emu_internal.h"
#include "capture/symaddr_internal.h"
#include "capture/unwind_internal.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The instruction at ip, decoded once. */
static const struct insn *decode(struct emu *e, pid_t tid, uint64_t ip)
{
	struct insn *c = &e->icache[(ip ^ (ip >> 13)) & (ICACHE - 1)];
	uint8_t b[16];
	cs_insn *in = NULL;
	const uint8_t *code = b;
	size_t size;
	uint64_t addr = ip;
	int n;

	if (c->valid && c->ip == ip)
		return c;
	memset(c, 0, sizeof(*c));
	c->ip = ip;
	c->valid = true;
	c->len = 1;
	n = emu_read_mem(tid, ip, b, sizeof(b));
	if (n <= 0)
		return c;
	size = (size_t)n;
	in = cs_malloc(e->cs);
	if (!in)
		return c;
	if (cs_disasm_iter(e->cs, &code, &size, &addr, in)) {
		const cs_detail *d = in->detail;
		bool imm = d && d->x86.op_count > 0 &&
			   d->x86.operands[0].type == X86_OP_IMM;

		c->len = (uint8_t)in->size;
		if (in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER ||
		    in->id == X86_INS_INT || in->id == X86_INS_INT3)
			c->cls = IC_SYSCALL;
		else if (cs_insn_group(e->cs, in, CS_GRP_CALL))
			c->cls = in->id == X86_INS_LCALL ? IC_FAR
				 : imm			 ? IC_CALL
							 : IC_ICALL;
		else if (cs_insn_group(e->cs, in, CS_GRP_RET))
			c->cls = in->id == X86_INS_RET ? IC_RET : IC_FAR;
		else if (cs_insn_group(e->cs, in, CS_GRP_IRET))
			c->cls = IC_FAR;
		else if (cs_insn_group(e->cs, in, CS_GRP_JUMP))
			c->cls = in->id == X86_INS_LJMP	 ? IC_FAR
				 : in->id != X86_INS_JMP ? IC_COND
				 : imm			 ? IC_JMP
							 : IC_IJMP;
	}
	cs_free(in, 1);
	return c;
}

/* Thread tid, made if new (e->thr may move), or NULL: no memory. */
struct thr *emu_thr_get(struct emu *e, pid_t tid)
{
	struct thr *t = emu_thr_find(e, tid);

	if (t)
		return t;
	t = emu_thr_add(e, tid);
	if (t)
		t->new_thread = true;
	return t;
}

static int packets(struct thr *t, uint8_t cls, uint64_t to, uint64_t next,
		   uint64_t tsc)
{
	switch (cls) {
	case IC_COND:
		return ptenc_cond(t->enc, t->step_tsc, to != next);
	case IC_CALL:
		ptenc_call(t->enc, next);
		return 0;
	case IC_ICALL:
		if (ptenc_indirect(t->enc, t->step_tsc, to))
			return -ENOMEM;
		ptenc_call(t->enc, next);
		return 0;
	case IC_IJMP:
	case IC_FAR:
		return ptenc_indirect(t->enc, t->step_tsc, to);
	case IC_RET:
		return ptenc_ret(t->enc, t->step_tsc, to);
	case IC_SYSCALL:
		/* User-only tracing stops in the kernel. */
		return ptenc_pgd(t->enc, t->step_tsc) ||
				       ptenc_pge(t->enc, tsc, to)
			       ? -ENOMEM
			       : 0;
	default:
		return 0; /* a direct jump needs none */
	}
}

/*
 * A thread ends inside a syscall (exit, exit_group, or blocked in one
 * when another thread exits): the CPU stopped tracing as it entered the
 * kernel, so the trace ends with TIP.PGD there, after the direct calls
 * that led to it.  No later stop settles that instruction, so settle it
 * here.
 */
static int leave_in_syscall(struct emu *e, struct thr *t)
{
	if (!t->started || t->left || t->step.cls != IC_SYSCALL)
		return 0;
	t->left = true;
	if (!t->dropping && ptenc_pgd(t->enc, t->step_tsc))
		return mt_fail(e, -ENOMEM, "out of memory encoding trace");
	if (e->o->truth &&
	    emu_truth_row_add(t, t->step_tsc, "[syscall]",
			      t->tdepth ? t->tstack[t->tdepth - 1].row
					: UINT32_MAX,
			      TR_SYSCALL))
		return mt_fail(e, -ENOMEM, "out of memory");
	return 0;
}

/*
 * A Go thread may have changed goroutines (see capture/gort.c): the g in
 * the runtime's TLS slot and its id, an item when it is another than
 * before, its first instruction ip.
 */
static int go_look(struct emu *e, struct thr *t, uint64_t ip, uint64_t when)
{
	uint64_t fs, g = 0, goid = 0;

	errno = 0;
	fs = (uint64_t)ptrace(PTRACE_PEEKUSER, t->tid,
			      offsetof(struct user_regs_struct, fs_base), NULL);
	if (errno || !fs ||
	    emu_read_mem(t->tid, fs + (uint64_t)e->go.tls_off, &g, sizeof(g)) !=
		    sizeof(g))
		g = 0;
	if (g == t->g)
		return 0;
	if (g && e->go.goid_off &&
	    emu_read_mem(t->tid, g + e->go.goid_off, &goid, sizeof(goid)) !=
		    sizeof(goid))
		goid = 0;
	if (emu_go_switch(e, t, when, ip, g, goid))
		return mt_fail(e, -ENOMEM, "out of memory");
	return 0;
}

/* Where the step of t's instruction went: the packets for it (unless an
 * emulated overflow is losing them), the shadow stack, the truth. */
static int transfer(struct emu *e, struct thr *t, uint64_t to)
{
	const struct insn *in = &t->step;
	uint64_t from = t->step_ip, next = from + in->len, tsc = emu_now_ns();
	int rc = 0;

	if (in->cls == IC_PLAIN)
		return 0;
	if (in->cls == IC_CALL || in->cls == IC_ICALL) {
		rc = emu_shadow_push(t, next);
	} else if (in->cls == IC_RET) {
		/* Pop to the frame it returns into (longjmp-like returns
		 * skip several). */
		for (size_t i = t->depth; i-- > 0;)
			if (t->shadow[i] == to) {
				t->depth = i;
				break;
			}
	}
	if (!rc && !t->dropping && e->o->drop_every &&
	    !emu_drop_rand(e, e->o->drop_every)) {
		/* The CPU outruns the trace: the packets of the next 1..48
		 * branches are lost, then OVF and FUP where it resumes. */
		t->dropping = 1 + emu_drop_rand(e, 48);
		t->gap_after = t->last_pkt_tsc;
		t->gap_stop = from;
		rc = ptenc_finish(t->enc, t->step_tsc);
	}
	if (!rc && t->dropping) {
		t->gap_end = t->step_tsc;
		if (!--t->dropping) {
			rc = ptenc_overflow(t->enc, tsc, to) ||
			     emu_add_gap(e, t, tsc, to);
		}
	} else if (!rc) {
		rc = packets(t, in->cls, to, next, tsc);
		if (in->cls != IC_JMP && in->cls != IC_CALL)
			t->last_pkt_tsc = t->step_tsc;
		if (!rc && ptenc_maybe_psb(t->enc, tsc, to) < 0)
			rc = -ENOMEM;
	}
	e->st->branches++;
	/* Before the truth: the frame the transfer enters is the new
	 * goroutine's. */
	if (!rc && e->go.is_go && go_rt_switches(&e->go, from - e->go_bias) &&
	    go_look(e, t, to, tsc))
		return -ENOMEM;
	if (!rc && e->o->truth && emu_truth_transfer(e, t, to, next, tsc))
		rc = -ENOMEM;
	return rc ? mt_fail(e, -ENOMEM, "out of memory encoding trace") : 0;
}

static int step(struct emu *e, struct thr *t, int sig)
{
	uint64_t ip = emu_get_ip(t->tid);

	if (errno)
		return 0; /* gone: its exit is on its way */
	t->step_ip = ip;
	t->step = *decode(e, t->tid, ip);
	t->step_tsc = emu_now_ns();
	e->st->insns++;
	if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return mt_fail(e, -errno, "ptrace(SINGLESTEP, %d): %s", t->tid,
			       strerror(errno));
	return 0;
}

/* Tracing starts for t at its current IP. */
static int start_thread(struct emu *e, struct thr *t)
{
	uint64_t ip = emu_get_ip(t->tid);

	if (errno)
		return 0;
	t->new_thread = false;
	t->started = true;
	t->t0 = emu_now_ns();
	if (ptenc_start(t->enc, t->t0, ip, false))
		return mt_fail(e, -ENOMEM, "out of memory encoding trace");
	if (e->go.is_go && go_look(e, t, ip, t->t0))
		return -ENOMEM;
	if (e->o->truth && emu_truth_push(e, t, t->t0, ip, 0, TR_CLIP_START))
		return mt_fail(e, -ENOMEM, "out of memory");
	e->st->threads++;
	return 0;
}

/*
 * mt_ptwrite(value) is entered: its value (in rdi) goes into the trace
 * where the hardware's PTWRITE in it would put it.  The CPU here may have
 * no PTWRITE, so the function's entry stands for the instruction.
 */
static int emu_ptwrite(struct emu *e, struct thr *t, pid_t tid, uint64_t ip)
{
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user_regs_struct, rdi),
		   NULL);
	if (errno)
		return mt_fail(e, -errno, "ptrace: %s", strerror(errno));
	if (ptenc_ptwrite(t->enc, emu_now_ns(), (uint64_t)v, ip))
		return mt_fail(e, -ENOMEM, "out of memory");
	return 0;
}

static bool at_trigger(const struct emu *e, uint64_t ip)
{
	if (ip == e->trigger)
		return true;
	for (size_t i = 0; i < e->nr_triggers; i++)
		if (ip == e->triggers[i])
			return true;
	return false;
}

/*
 * The hit thread is stopped at the trigger: its real stack, callers from
 * before tracing began included, replaces the shadow stack in the capture.
 * Without it (no CFI, unreadable memory) the shadow stack stays, and the
 * user is told why in one line.
 */
static void unwind_at_hit(struct emu *e, struct thr *t)
{
	enum { MAX_FRAMES = 4096 };
	char why[256];
	size_t n = 0;
	uint64_t *ips = malloc(MAX_FRAMES * sizeof(*ips));
	int rc = ips ? unwind_thread(e->pid, t->tid, ips, MAX_FRAMES, &n, why,
				     sizeof(why))
		     : -ENOMEM;

	if (rc) {
		size_t len = strlen(e->st->warning);

		free(ips);
		snprintf(e->st->warning + len, sizeof(e->st->warning) - len,
			 "%sthe stack at the trigger is the calls traced "
			 "(unwinding failed: %s)",
			 len ? "; " : "",
			 rc == -ENOMEM ? "out of memory" : why);
		return;
	}
	t->unwound = ips;
	t->nr_unwound = n;
}

/* The addresses the trigger's watch found become triggers. */
static int take_trigger_addrs(struct emu *e)
{
	size_t n;
	const uint64_t *a = symwatch_addrs(e->trigger_watch, &n);
	uint64_t *v = realloc(e->triggers, (n ? n : 1) * sizeof(*v));

	if (!v)
		return mt_fail(e, -ENOMEM, "out of memory");
	memcpy(v, a, n * sizeof(*v));
	e->triggers = v;
	e->nr_triggers = n;
	e->trigger = n ? v[0] : 0;
	return 0;
}

/*
 * --trigger FUNC: a function of the executable, or else of any library it
 * maps, now or later (dlopen): looked for again after each system call
 * that maps code (after_syscall).
 */
static int resolve_trigger(struct emu *e, const char *sym)
{
	int rc = emu_exe_symbol(e, sym, &e->trigger);

	if (rc != -ENOENT || !strncmp(sym, "addr:", 5))
		return rc;
	e->err[0] = 0;
	e->trigger_watch = symwatch_new(sym);
	if (!e->trigger_watch)
		return mt_fail(e, -ENOMEM, "out of memory");
	rc = symwatch_scan(e->trigger_watch, e->pid, e->err, e->errlen);
	return rc < 0 ? rc : rc > 0 ? take_trigger_addrs(e) : 0;
}

/* A system call was stepped over: code it mapped goes into the capture's
 * mappings at this time, and may hold the trigger. */
static int after_syscall(struct emu *e, struct thr *t)
{
	struct user_regs_struct r;
	int rc;

	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &r) < 0)
		return 0;
	if (emu_syscall_execd(&r))
		e->maps_from = e->nr_maps;
	else if (!emu_syscall_mapped_code(&r))
		return 0;
	if (emu_collect_maps(e, emu_now_ns()) < 0)
		return mt_fail(e, -ENOMEM, "out of memory");
	if (!e->trigger_watch)
		return 0;
	rc = symwatch_scan(e->trigger_watch, e->pid, e->err, e->errlen);
	return rc < 0 ? rc : rc > 0 ? take_trigger_addrs(e) : 0;
}

/* The trigger named a function no file the program mapped has: traced
 * to the end, and the user is told. */
static void trigger_never_mapped(struct emu *e)
{
	char why[512];
	size_t len = strlen(e->st->warning);

	symwatch_missing(e->trigger_watch, e->exe, why, sizeof(why));
	snprintf(e->st->warning + len, sizeof(e->st->warning) - len,
		 "%s--trigger: %s; traced to the end", len ? "; " : "", why);
}

/* A Go program: its runtime's switching functions, where it maps them. */
static void go_setup(struct emu *e)
{
	uint64_t at;

	go_rt_read(e->exe, &e->go);
	for (size_t i = 0; i < e->go.nr_fns; i++)
		if (!symaddr_resolve(e->pid, e->exe, e->go.fns[i].name, &at,
				     e->err, e->errlen)) {
			e->go_bias = at - e->go.fns[i].lo;
			break;
		}
	e->err[0] = 0;
}

/* The step loop: until every thread has exited or we are told to stop. */
static int trace(struct emu *e)
{
	struct thr *t;
	int rc, status;

	if (!e->nr_thr && !emu_thr_get(e, e->pid))
		return mt_fail(e, -ENOMEM, "out of memory");
	/* Every thread there is now (one, unless we attached or a Go
	 * runtime started more before the start) begins. */
	for (size_t i = 0; i < e->nr_thr; i++) {
		t = &e->thr[i];
		if (t->exited)
			continue;
		if ((!t->started && (rc = start_thread(e, t))) ||
		    (rc = step(e, &e->thr[i], 0)))
			return rc;
	}
	while (e->live && !*e->o->cap.stop) {
		pid_t tid = waitpid(-1, &status, __WALL);
		int sig, event;

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			return mt_fail(e, -errno, "waitpid: %s",
				       strerror(errno));
		}
		t = emu_thr_get(e, tid);
		if (!t)
			return mt_fail(e, -ENOMEM, "out of memory");
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == e->pid && WIFSIGNALED(status))
				e->st->killed_by = WTERMSIG(status);
			if (!t->exited) {
				t->exited = true;
				e->live--;
			}
			continue;
		}
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (event == PTRACE_EVENT_CLONE) {
			unsigned long child;

			if (!ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) &&
			    !emu_thr_get(e, (pid_t)child))
				return mt_fail(e, -ENOMEM, "out of memory");
			/* The clone finishes in this thread's step. */
			ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL);
			continue;
		}
		if (event) {
			if (event == PTRACE_EVENT_EXIT &&
			    ((rc = leave_in_syscall(e, t)) ||
			     emu_collect_maps(e, emu_now_ns()) < 0))
				return rc ? rc
					  : mt_fail(e, -ENOMEM,
						    "out of memory");
			ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL);
			continue;
		}
		if (t->new_thread) {
			/* A new thread's first stop (SIGSTOP): it begins. */
			if ((rc = start_thread(e, t)) || (rc = step(e, t, 0)))
				return rc;
			continue;
		}
		if (sig == SIGTRAP) {
			uint64_t ip = emu_get_ip(tid);

			if (errno)
				continue;
			if (t->async) {
				/* The handler's first instruction. */
				t->async = false;
				if (e->o->truth && t->untraced_row < t->nr_rows)
					t->rows[t->untraced_row].end =
						emu_now_ns();
				if (ptenc_pge(t->enc, emu_now_ns(), ip))
					return mt_fail(e, -ENOMEM,
						       "out of memory");
				if (e->o->truth && t->tdepth &&
				    !(ip >= t->tstack[t->tdepth - 1].lo &&
				      ip < t->tstack[t->tdepth - 1].hi)) {
					if (emu_truth_push(e, t, emu_now_ns(),
							   ip, 0, TR_SIGNAL))
						return mt_fail(e, -ENOMEM,
							       "out of memory");
					t->tstack[t->tdepth - 1].async = true;
				}
			} else if ((rc = transfer(e, t, ip))) {
				return rc;
			}
			if (t->step.cls == IC_SYSCALL &&
			    (rc = after_syscall(e, t)))
				return rc;
			t->last_ip = ip;
			if (e->ptw_addr && ip == e->ptw_addr &&
			    (rc = emu_ptwrite(e, t, tid, ip)))
				return rc;
			if (e->trigger && at_trigger(e, ip)) {
				/* The snapshot point: stop here.  The stub's
				 * argument is in rdi. */
				uint64_t when = emu_now_ns(), mark = 0;

				if (e->mark_addr &&
				    emu_read_mem(e->pid, e->mark_addr, &mark,
						 sizeof(mark)) != sizeof(mark))
					mark = 0;
				/* --duration-thresh: only when it took that
				 * long since mt_mark_start(). */
				if (!e->o->cap.duration_thresh || !mark ||
				    when - mark >= e->o->cap.duration_thresh) {
					long arg = ptrace(
						PTRACE_PEEKUSER, tid,
						offsetof(
							struct user_regs_struct,
							rdi),
						NULL);

					if (e->o->cap.multi_snapshot) {
						/* Keep this one, trace on. */
						if (mt_grow((void **)&e->hits,
							    &e->cap_hits,
							    e->nr_hits + 1,
							    sizeof(*e->hits)) ||
						    emu_snapshot(e, when))
							return mt_fail(
								e, -ENOMEM,
								"out of "
								"memory");
						e->hits[e->nr_hits++] =
							(struct ehit){when,
								      mark, ip,
								      tid, arg};
						if ((rc = step(e, t, 0)))
							return rc;
						continue;
					}
					e->hit_time = when;
					e->hit_mark = mark;
					e->hit_tid = tid;
					e->hit_arg = arg;
					e->hit_ip = ip;
					unwind_at_hit(e, t);
					break;
				}
			}
			if ((rc = step(e, t, 0)))
				return rc;
			continue;
		}
		/*
		 * A signal for the target.  If the instruction in flight
		 * completed first, account for it; then tracing stops where
		 * the signal interrupts (FUP, TIP.PGD) and starts again where
		 * the kernel sends the thread.
		 */
		{
			uint64_t ip = emu_get_ip(tid);

			if (errno)
				continue;
			if (ip != t->step_ip && (rc = transfer(e, t, ip)))
				return rc;
			if (ptenc_async_pgd(t->enc, emu_now_ns(), ip))
				return mt_fail(e, -ENOMEM, "out of memory");
			t->async = true;
			/* The kernel's time delivering it, as a decoder
			 * shows it. */
			if (e->o->truth &&
			    emu_truth_row_add(
				    t, emu_now_ns(), "[untraced]",
				    t->tdepth ? t->tstack[t->tdepth - 1].row
					      : UINT32_MAX,
				    0))
				return mt_fail(e, -ENOMEM, "out of memory");
			t->untraced_row = (uint32_t)t->nr_rows - 1;
			if ((rc = step(e, t, sig)))
				return rc;
		}
	}
	return 0;
}

/* Did tracing begin for a thread? */
static bool traced_any(const struct emu *e)
{
	for (size_t i = 0; i < e->nr_thr; i++)
		if (e->thr[i].started)
			return true;
	return false;
}

int emu_run(char *const argv[], const struct emu_opts *o, struct emu_stats *st,
	    char *err, size_t errlen)
{
	struct emu e = {.o = o, .st = st, .err = err, .errlen = errlen};
	const char *start = o->start_at;
	int rc;

	memset(st, 0, sizeof(*st));
	if (o->follow_children)
		return mt_fail(&e, -EINVAL,
			       "--follow-children needs --emulate=valgrind");
	e.rng = o->drop_seed ? o->drop_seed : 1;
	e.icache = calloc(ICACHE, sizeof(*e.icache));
	if (!e.icache)
		return mt_fail(&e, -ENOMEM, "out of memory");
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &e.cs) != CS_ERR_OK) {
		free(e.icache);
		return mt_fail(&e, -EINVAL, "capstone: cannot open x86-64");
	}
	cs_option(e.cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (o->cap.pid > 0 && *o->cap.stop) {
		rc = mt_fail(&e, -EINTR,
			     "stopped before attaching to process %d: nothing "
			     "traced",
			     o->cap.pid);
	} else if (o->cap.pid > 0) {
		rc = emu_attach(&e, o->cap.pid);
	} else {
		rc = emu_launch(&e, argv);
		/* A Go program's own code begins at main.main. */
		if (!rc)
			go_setup(&e);
		if (!start)
			start = e.go.is_go ? "main.main" : "main";
		if (!rc && *start)
			rc = emu_run_to(&e, start);
	}
	if (!rc && emu_collect_maps(&e, emu_now_ns()) < 0)
		rc = mt_fail(&e, -ENOMEM, "out of memory");
	if (!rc)
		mt_vdso_read(e.pid, &e.vdso, &e.vdso_start, &e.vdso_len);
	if (!rc) {
		/* Mappings, threads and switches from now on, from the kernel;
		 * without it, /proc/PID/maps read at start and at exits. */
		int n = (int)sysconf(_SC_NPROCESSORS_ONLN);

		e.sb = calloc((size_t)n, sizeof(*e.sb));
		e.sb_ids = calloc((size_t)n, sizeof(*e.sb_ids));
		e.have_sb = e.sb && e.sb_ids;
		for (int c = 0; e.have_sb && c < n; c++) {
			e.have_sb =
				!sb_open_dummy(&e.sb[c], e.pid, c, st->warning,
					       sizeof(st->warning));
			if (e.have_sb) {
				e.sb_ids[c] = e.sb[c].id;
				e.nr_sb = c + 1;
			}
		}
	}
	if (!rc && o->cap.pid > 0)
		go_setup(&e);
	if (!rc && o->truth)
		rc = emu_edsos_from_maps(&e);
	if (!rc && o->cap.trigger &&
	    line_trigger_spec(o->cap.trigger, NULL, 0, &(unsigned){0})) {
		rc = line_trigger_resolve(e.pid, e.exe, o->cap.trigger,
					  &e.triggers, &e.nr_triggers, err,
					  errlen);
		if (!rc)
			e.trigger = e.triggers[0];
	} else if (!rc && o->cap.trigger)
		rc = resolve_trigger(&e, o->cap.trigger);
	else if (!rc && emu_exe_symbol(&e, "mt_snapshot_point", &e.trigger))
		e.trigger = 0; /* no stub in the program: no trigger */
	if (!rc && (e.trigger || e.trigger_watch))
		e.mark_addr = emu_exe_object(&e, "mt_mark_start_ns");
	/* A program without mt_ptwrite() writes nothing. */
	if (!rc && o->ptwrite && emu_exe_symbol(&e, "mt_ptwrite", &e.ptw_addr))
		e.ptw_addr = 0;
	e.start_time = emu_now_ns();
	if (!rc)
		rc = trace(&e);
	st->seconds = mt_since_s(CLOCK_MONOTONIC, e.start_time);
	if (!rc && e.trigger_watch && !e.trigger)
		trigger_never_mapped(&e);
	if (e.pid > 0)
		emu_detach_all(&e);
	/* Whatever was traced is written, even after an error (threads
	 * emu_run_to() saw before the start were not traced). */
	if (traced_any(&e))
		rc = emu_write_all(&e, e.hit_time ? e.hit_time : emu_now_ns(),
				   rc);
	if (e.pid > 0)
		waitpid(e.pid, NULL, __WALL | WNOHANG);
	emu_free(&e);
	return rc;
}
