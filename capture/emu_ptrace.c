/* SPDX-License-Identifier: MIT */
/*
 * The ptrace backend's hold on the target: starting or attaching to it,
 * its threads' stops and how each is let go, and running it to the start
 * with every thread held there.  The step loop that follows is
 * emulate.c's.
 */
#include "capture/capture.h"
#include "capture/emu_internal.h"
#include "capture/symaddr_internal.h"
#include "capture/target_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t emu_now_ns(void)
{
	return mt_clock_ns(CLOCK_MONOTONIC);
}

int emu_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n < 0 ? -errno : (int)n;
}

/*
 * waitpid, resumed after a signal to mt-capture (Ctrl-C, SIGTERM) breaks
 * into it: those only set the stop flag, which the step loop reads.
 */
static pid_t wait_for(pid_t pid, int *status, int flags)
{
	pid_t r;

	do
		r = waitpid(pid, status, flags);
	while (r < 0 && errno == EINTR);
	return r;
}

uint64_t emu_get_ip(pid_t tid)
{
	errno = 0;
	return (uint64_t)ptrace(PTRACE_PEEKUSER, tid,
				offsetof(struct user_regs_struct, rip), NULL);
}

/* What /proc/PID/task/TID/status says of a thread. */
struct task_state {
	char state;	   /* R, S, Z... */
	pid_t tracer;	   /* 0: none */
	bool trap_pending; /* a SIGTRAP queued for it (SigPnd) */
};

static int task_field(const char *key, const char *val, void *arg)
{
	struct task_state *ts = arg;
	unsigned long long mask = 0;
	int tracer = 0;

	if (!strcmp(key, "State"))
		ts->state = val[0];
	else if (!strcmp(key, "TracerPid") && sscanf(val, "%d", &tracer) == 1)
		ts->tracer = tracer;
	else if (!strcmp(key, "SigPnd")) {
		if (sscanf(val, "%llx", &mask) == 1)
			ts->trap_pending = mask & (1ull << (SIGTRAP - 1));
		return 1; /* nothing after it is wanted */
	}
	return 0;
}

/* 0, or -ENOENT when the thread is gone. */
static int task_state(pid_t pid, pid_t tid, struct task_state *ts)
{
	int rc;

	memset(ts, 0, sizeof(*ts));
	rc = mt_proc_status(pid, tid, task_field, ts);
	return rc < 0 ? -ENOENT : 0;
}

/*
 * The signal that thread tid, if in a ptrace stop, stopped with and is to
 * be given when let go: 0 for a SIGTRAP (a step's trap, or one of
 * ptrace's own stops) or a group-stop, where PTRACE_GETSIGINFO says
 * EINVAL.  -1 when it is not stopped.
 */
static int stop_signal(pid_t tid)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
		return errno == EINVAL ? 0 : -1;
	return si.si_signo == SIGTRAP ? 0 : si.si_signo;
}

/*
 * Wait for thread tid's next stop, or its end: 0 with *status, or -1 when
 * it is gone, or is a zombie (an exited thread-group leader, whose end
 * waitpid reports only after the other threads'), or keeps running for
 * seconds.  Polled, so that a thread that ends meanwhile cannot hang us.
 */
static int wait_stop(const struct emu *e, pid_t tid, int *status)
{
	for (int i = 0; i < 5000; i++) {
		struct task_state ts;
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (task_state(e->pid, tid, &ts) || ts.state == 'Z' ||
		    ts.state == 'X')
			return -1;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return -1;
}

/*
 * Let thread tid of e->pid go, to run on untraced.  It must be stopped
 * for that: one still single-stepping stops within an instruction; one
 * in a long system call (the stop flag broke the loop's wait, or a Go
 * thread parked in a futex) is stopped by PTRACE_INTERRUPT when it was
 * seized (-p), else by a SIGSTOP of ours, which it does not keep (a stop
 * that comes before that one's passes its signal on, and ours is waited
 * for).  A SIGTRAP queued behind its stop (a step just done, or the
 * system call it broke off ending, behind the interrupt's stop) would
 * kill it once let go: it is taken first.  Bounded: a thread that keeps
 * changing is let go as it is.  first: the thread is at (or before) its
 * first stop, whose SIGSTOP (a new thread's, or ours that stopped
 * emu_run_to()) is not the program's.  A zombie is let be.
 */
static void let_go(struct emu *e, pid_t tid, bool first)
{
	bool ours = false; /* our SIGSTOP is on its way */

	for (int round = 0; round < 16; round++) {
		struct task_state ts;
		int status, sig = stop_signal(tid);

		if ((first || ours) && sig == SIGSTOP) {
			sig = 0;
			first = ours = false;
		}
		if (sig < 0) {
			if (task_state(e->pid, tid, &ts) || ts.state == 'Z' ||
			    ts.state == 'X')
				return;
			/* A new thread's first stop is on its way. */
			if (!first && !ours &&
			    ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
				if (syscall(SYS_tgkill, e->pid, tid, SIGSTOP))
					return;
				ours = true;
			}
			if (wait_stop(e, tid, &status) || !WIFSTOPPED(status))
				return; /* gone */
			continue;
		}
		if (ours) {
			if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) <
				    0 ||
			    wait_stop(e, tid, &status) || !WIFSTOPPED(status))
				return;
			continue;
		}
		if (round < 15 && !task_state(e->pid, tid, &ts) &&
		    ts.trap_pending) {
			if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) <
				    0 ||
			    wait_stop(e, tid, &status) || !WIFSTOPPED(status))
				return;
			continue;
		}
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
		return;
	}
}

/*
 * Leave the target running on its own (or let it finish): every thread
 * known, then any other still ours, at its first stop: one whose
 * creation the step loop had not seen yet, or all of them when the start
 * was never reached.
 */
/* A thread still ours that the step loop had not seen. */
static int let_go_stray(pid_t tid, void *arg)
{
	struct emu *e = arg;
	struct task_state ts;

	if (!task_state(e->pid, tid, &ts) && ts.tracer == getpid())
		let_go(e, tid, true);
	return 0;
}

void emu_detach_all(struct emu *e)
{
	for (size_t i = 0; i < e->nr_thr; i++)
		if (!e->thr[i].exited)
			let_go(e, e->thr[i].tid, e->thr[i].new_thread);
	target_tasks(e->pid, let_go_stray, e);
}

/*
 * The runtime address of symbol sym of the executable ("addr:0x..." is an
 * address already).  Returns 0, -ENOENT when there is no such symbol
 * (err says so), or another negative code.
 */
int emu_exe_symbol(struct emu *e, const char *sym, uint64_t *out)
{
	return symaddr_resolve(e->pid, e->exe, sym, out, e->err, e->errlen);
}

/* The runtime address of a data object of the executable (the stub API's
 * mt_mark_start_ns), or 0. */
uint64_t emu_exe_object(struct emu *e, const char *name)
{
	return symaddr_object(e->pid, e->exe, name);
}

/* The options of a program started under ptrace: its threads are traced
 * (and it is killed should mt-capture die: it is ours). */
#define LAUNCH_OPTS                                                            \
	(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

/*
 * A child forked before the start is reached holds a copy of the start's
 * breakpoint (fork copies the int3 with the rest of memory) and is not
 * traced: it would die of the SIGTRAP on reaching the start.  The kernel
 * attached it to us (PTRACE_O_TRACEFORK) before it ran; the start's code
 * is put back in its memory and it is let go, to run on untraced.
 */
static void release_forked(pid_t parent, uint64_t addr, uint64_t word)
{
	unsigned long msg;
	pid_t child;
	int status;

	if (ptrace(PTRACE_GETEVENTMSG, parent, NULL, &msg) < 0)
		return;
	child = (pid_t)msg;
	/* Its first stop (its SIGSTOP) may come after the fork's event. */
	if (wait_for(child, &status, __WALL) != child || !WIFSTOPPED(status))
		return;
	ptrace(PTRACE_POKETEXT, child, (void *)addr, (void *)word);
	ptrace(PTRACE_DETACH, child, NULL, NULL);
}

/* The target is stopped at the start's breakpoint, which has run: back to
 * the start's first byte. */
static int rewind_to(struct emu *e, pid_t tid, uint64_t addr)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r) < 0)
		return mt_fail(e, -errno, "ptrace: %s", strerror(errno));
	r.rip = addr;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r) < 0)
		return mt_fail(e, -errno, "ptrace: %s", strerror(errno));
	return 0;
}

/*
 * After a system call (its stop, or the step over it): did it map code?
 * An mmap or mprotect that made memory executable and succeeded (at a
 * system call's entry rax is -ENOSYS).
 */
bool emu_syscall_mapped_code(const struct user_regs_struct *r)
{
	return (r->orig_rax == SYS_mmap || r->orig_rax == SYS_mprotect) &&
	       (r->rdx & PROT_EXEC) && (int64_t)r->rax >= 0;
}

/* After a system call: did it exec another program (whose mappings are
 * all new, even where the old program had the same)? */
bool emu_syscall_execd(const struct user_regs_struct *r)
{
	return (r->orig_rax == SYS_execve || r->orig_rax == SYS_execveat) &&
	       r->rax == 0;
}

/* The start's breakpoint at addr: its code's word into *word. */
static int set_breakpoint(struct emu *e, const char *sym, uint64_t addr,
			  uint64_t *word)
{
	errno = 0;
	*word = (uint64_t)ptrace(PTRACE_PEEKTEXT, e->pid, (void *)addr, NULL);
	if (errno)
		return mt_fail(e, -errno, "reading %s at %#llx: %s", sym,
			       (unsigned long long)addr, strerror(errno));
	if (ptrace(PTRACE_POKETEXT, e->pid, (void *)addr,
		   (void *)((*word & ~0xffull) | 0xcc)) < 0)
		return mt_fail(e, -errno, "ptrace: %s", strerror(errno));
	return 0;
}

/*
 * sym is no function of the executable: look in the libraries mapped now
 * (the loader) and, while there is none, at every system call that maps
 * code.  Its first address into *addr, or 0 for not yet.
 */
static int watch_start(struct emu *e, struct symwatch *w, uint64_t *addr)
{
	size_t n;
	int rc = symwatch_scan(w, e->pid, e->err, e->errlen);

	if (rc < 0)
		return rc;
	*addr = rc > 0 ? symwatch_addrs(w, &n)[0] : 0;
	return 0;
}

/* Thread tid stopped: a thread it created (PTRACE_EVENT_CLONE) is known
 * from now on, its first stop awaited. */
static int take_clone(struct emu *e, pid_t tid)
{
	unsigned long child;

	if (!ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) &&
	    !emu_thr_get(e, (pid_t)child))
		return mt_fail(e, -ENOMEM, "out of memory");
	return 0;
}

/*
 * The start is reached by thread `hit`, which is stopped there: every
 * other thread of the program (a Go program's runtime starts several
 * before main.main) is stopped too, by a SIGSTOP of ours that it does not
 * keep, to be traced from where it is (one whose first stop is on its way
 * only waits for it).  What comes before that SIGSTOP's stop goes on: a
 * signal is passed on (the thread stops at its handler's first
 * instruction), a thread it creates is stopped as well, one that hit the
 * start's breakpoint (now gone) goes back to it.  One that ends
 * meanwhile, or is a zombie (a leader that exited while the others run),
 * is not traced.
 */
static int hold_threads(struct emu *e, pid_t hit, uint64_t addr)
{
	for (size_t i = 0; i < e->nr_thr; i++) {
		struct thr *t = &e->thr[i];
		pid_t tid = t->tid;

		if (t->exited || tid == hit)
			continue;
		if (!t->new_thread && syscall(SYS_tgkill, e->pid, tid, SIGSTOP))
			goto gone;
		for (;;) {
			int status, sig, event, rc;

			if (wait_stop(e, tid, &status) || !WIFSTOPPED(status))
				goto gone;
			sig = WSTOPSIG(status);
			event = status >> 16;
			if (sig == SIGSTOP && !event)
				break;
			if (event == PTRACE_EVENT_CLONE &&
			    (rc = take_clone(e, tid)))
				return rc;
			if (sig == SIGTRAP && !event &&
			    emu_get_ip(tid) == addr + 1 &&
			    (rc = rewind_to(e, tid, addr)))
				return rc;
			if (sig == SIGTRAP || event || sig == (SIGTRAP | 0x80))
				sig = 0;
			if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) <
			    0)
				goto gone;
		}
		t = &e->thr[i];
		t->new_thread = false;
		ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)(long)LAUNCH_OPTS);
		continue;
	gone:
		t = &e->thr[i];
		if (!t->exited) {
			t->exited = true;
			e->live--;
		}
	}
	return 0;
}

/*
 * Run the target to the first instruction of function sym of the
 * executable, or of a library it maps (then at each system call that
 * maps code until one has it), with a breakpoint there.  Its threads run
 * freely meanwhile (their creation is seen: they are traced from the
 * start on, see hold_threads()), and whichever reaches the start first
 * begins there.  Told to stop (Ctrl-C, SIGTERM) before it gets there, the
 * target is stopped by a SIGSTOP of ours (taken back before it is let
 * go), its code put back and it runs on untraced: -EINTR, with why in
 * err.
 */
int emu_run_to(struct emu *e, const char *sym)
{
	uint64_t addr = 0, word = 0;
	struct symwatch *w = NULL;
	int status, rc = emu_exe_symbol(e, sym, &addr);
	bool stopping = false;
	pid_t tid = e->pid;
	struct thr *t;

	/* main is the program's own (symaddr_resolve() finds it stripped). */
	if (rc == -ENOENT && strncmp(sym, "addr:", 5) && strcmp(sym, "main")) {
		if (!(w = symwatch_new(sym)))
			return mt_fail(e, -ENOMEM, "out of memory");
		rc = watch_start(e, w, &addr);
	}
	/* The first thread, stopped at its exec: known before the start's
	 * breakpoint is in its code, which a failure here would leave
	 * there. */
	if (!rc && !(t = emu_thr_get(e, e->pid)))
		rc = mt_fail(e, -ENOMEM, "out of memory");
	if (!rc && addr)
		rc = set_breakpoint(e, sym, addr, &word);
	if (rc)
		goto out;
	t->new_thread = false;
	if (ptrace(PTRACE_SETOPTIONS, e->pid, NULL,
		   (void *)(long)(LAUNCH_OPTS | PTRACE_O_TRACEFORK |
				  PTRACE_O_TRACESYSGOOD)) < 0 ||
	    ptrace(addr ? PTRACE_CONT : PTRACE_SYSCALL, e->pid, NULL, NULL) <
		    0) {
		rc = mt_fail(e, -errno, "ptrace: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		int sig, event;

		if (!stopping && *e->o->cap.stop) {
			stopping = true;
			if (kill(e->pid, SIGSTOP) < 0) {
				rc = mt_fail(e, -errno, "kill: %s",
					     strerror(errno));
				goto out;
			}
		}
		/* A signal to mt-capture breaks the wait to be seen. */
		if ((tid = waitpid(-1, &status, __WALL)) < 0) {
			if (errno != EINTR) {
				rc = mt_fail(e, -errno, "waitpid: %s",
					     strerror(errno));
				goto out;
			}
			continue;
		}
		if (!(t = emu_thr_get(e, tid))) {
			rc = mt_fail(e, -ENOMEM, "out of memory");
			goto out;
		}
		if ((WIFEXITED(status) || WIFSIGNALED(status)) &&
		    tid != e->pid) {
			if (!t->exited) {
				t->exited = true;
				e->live--;
			}
			continue;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (!addr && !stopping) {
				/* In no file it mapped: say what there is. */
				size_t len;

				rc = symwatch_missing(w, e->exe, e->err,
						      e->errlen);
				len = strlen(e->err);
				snprintf(e->err + len, e->errlen - len,
					 "; --start-at '' traces from exec");
				goto out;
			}
			rc = mt_fail(e, stopping ? -EINTR : -ESRCH,
				     "%s exited before reaching %s", e->exe,
				     sym);
			goto out;
		}
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (t->new_thread && sig == SIGSTOP && !event) {
			/* A thread's first stop: it runs on. */
			t->new_thread = false;
			sig = 0;
		}
		if (sig == (SIGTRAP | 0x80)) {
			/* A system call's stop: is sym mapped now? */
			struct user_regs_struct r;

			if (!addr && !ptrace(PTRACE_GETREGS, tid, NULL, &r) &&
			    emu_syscall_mapped_code(&r) &&
			    (rc = watch_start(e, w, &addr)) == 0 && addr)
				rc = set_breakpoint(e, sym, addr, &word);
			if (rc)
				goto out;
			sig = 0;
		}
		if (event == PTRACE_EVENT_FORK)
			release_forked(tid, addr, word);
		if (event == PTRACE_EVENT_CLONE) {
			if ((rc = take_clone(e, tid)))
				goto out;
			t = emu_thr_find(e, tid); /* e->thr may have moved */
		}
		/* A leader that exits while its threads run stays a zombie
		 * until they end: it is not waited for. */
		if (event == PTRACE_EVENT_EXIT && tid == e->pid && !t->exited) {
			t->exited = true;
			e->live--;
		}
		if (sig == SIGTRAP && !event) {
			/* The breakpoint: the start is reached. */
			if ((rc = rewind_to(e, tid, addr)))
				goto out;
			if (!stopping)
				break;
		} else if (stopping && sig == SIGSTOP && !event) {
			/* Ours: not the program's when it is let go. */
			t->new_thread = true;
			break;
		}
		/* Other stops before it: pass signals on. */
		if (ptrace(addr ? PTRACE_CONT : PTRACE_SYSCALL, tid, NULL,
			   (void *)(long)(sig == SIGTRAP || event ? 0 : sig)) <
			    0 &&
		    errno != ESRCH) {
			rc = mt_fail(e, -errno, "ptrace: %s", strerror(errno));
			goto out;
		}
	}
	if ((addr &&
	     ptrace(PTRACE_POKETEXT, tid, (void *)addr, (void *)word) < 0) ||
	    ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)(long)LAUNCH_OPTS) <
		    0) {
		rc = mt_fail(e, -errno, "ptrace: %s", strerror(errno));
		goto out;
	}
	if (stopping) {
		emu_detach_all(e);
		rc = mt_fail(e, -EINTR,
			     "stopped before %s reached %s: nothing traced (it "
			     "runs on)",
			     e->exe, sym);
		goto out;
	}
	rc = hold_threads(e, tid, addr);
out:
	if (rc == -ENOENT && !w) {
		size_t len = strlen(e->err);

		snprintf(e->err + len, e->errlen - len,
			 "; --start-at '' traces from exec");
	}
	symwatch_free(w);
	return rc;
}

int emu_launch(struct emu *e, char *const argv[])
{
	const struct target_how how = {.traced = true};
	struct target t;
	int rc;

	/* Told to stop already: better never started than started and let
	 * go at once. */
	if (*e->o->cap.stop)
		return mt_fail(e, -EINTR,
			       "stopped before %s was started: nothing traced",
			       argv[0]);
	rc = target_fork(&t, argv, &how, e->err, e->errlen);
	if (!rc) {
		e->pid = t.pid;
		rc = target_exec(&t, argv[0], e->err, e->errlen);
		e->pid = t.pid;
	}
	if (rc)
		return rc;
	ptrace(PTRACE_SETOPTIONS, e->pid, NULL, (void *)(long)LAUNCH_OPTS);
	rc = capture_exe(e->pid, e->exe, sizeof(e->exe), e->comm,
			 sizeof(e->comm));
	if (rc)
		return mt_fail(e, rc, "/proc/%d/exe: %s", e->pid,
			       strerror(-rc));
	return 0;
}

/*
 * A thread that could not be seized because it is ending (ESRCH, or EPERM
 * for one already a zombie), or because the seize of a thread in clone()
 * already made its new thread ours (EPERM, its tracer us): either way no
 * reason to give up the capture.  Returns 1 when tid is ours already, 0
 * when it is gone or going, -1 when the error stands.
 */
static int seize_refused_benignly(pid_t pid, pid_t tid, int err)
{
	struct task_state ts;

	if (err == ESRCH)
		return 0;
	if (err != EPERM)
		return -1;
	if (task_state(pid, tid, &ts))
		return 0;
	if (ts.tracer == getpid())
		return 1;
	return ts.state == 'Z' || ts.state == 'X' ? 0 : -1;
}

/* Seize thread tid of e->pid and stop it where it is: 0 (also when it
 * ended meanwhile: then it is not traced), or a negative code. */
static int seize_thread(struct emu *e, pid_t tid)
{
	struct thr *t;
	int status, ours = 0;

	if (ptrace(PTRACE_SEIZE, tid, NULL,
		   (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT)) <
	    0) {
		int err = errno;

		ours = seize_refused_benignly(e->pid, tid, err);
		if (ours < 0)
			return mt_fail(e, -err, "cannot attach to %d: %s%s",
				       tid, strerror(err),
				       err == EPERM
					       ? " (see /proc/sys/kernel/yama/"
						 "ptrace_scope, or run as root)"
					       : "");
		if (!ours)
			return 0;
	}
	t = emu_thr_get(e, tid);
	if (!t)
		return mt_fail(e, -ENOMEM, "out of memory");
	/* A thread the kernel attached for us stops by itself; its first
	 * stop, in the step loop, starts it. */
	if (ours)
		return 0;
	/* Stop it where it is; from there it is single-stepped. */
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && errno != ESRCH)
		return mt_fail(e, -errno, "cannot stop thread %d: %s", tid,
			       strerror(errno));
	if (wait_for(tid, &status, __WALL) != tid) {
		if (errno != ECHILD)
			return mt_fail(e, -errno, "cannot stop thread %d: %s",
				       tid, strerror(errno));
		status = 0; /* reaped already: gone */
	}
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		t->exited = true;
		e->live--;
	}
	return 0;
}

/*
 * Seize every thread of a running process and stop it.  Threads come and
 * go meanwhile: one that ends first is simply not traced, and one that a
 * thread not yet stopped creates shows in the next reading of the task
 * list, so it is read until a reading finds none new.
 */
static int seize_new(pid_t tid, void *arg)
{
	struct emu *e = arg;

	for (size_t i = 0; i < e->nr_thr; i++)
		if (e->thr[i].tid == tid)
			return 0;
	e->found = true;
	return seize_thread(e, tid);
}

int emu_attach(struct emu *e, int pid)
{
	int rc;

	e->pid = pid;
	rc = capture_exe(pid, e->exe, sizeof(e->exe), e->comm, sizeof(e->comm));
	if (rc)
		return mt_fail(e, rc, "no process %d (%s)", pid, strerror(-rc));
	do {
		e->found = false;
		rc = target_tasks(pid, seize_new, e);
		if (rc && !e->found) /* only seizing sets found */
			return mt_fail(e, rc, "/proc/%d/task: %s", pid,
				       strerror(-rc));
		if (rc)
			return rc;
	} while (e->found);
	if (!e->live)
		return mt_fail(e, -ESRCH, "no process %d (it ended)", pid);
	return 0;
}
