/* SPDX-License-Identifier: MIT */
/*
 * Internal to the emulation backend: its state, shared by the step loop
 * (emulate.c), the writing of the capture (emu_capture.c) and the call
 * log it keeps for --truth (emu_truth.c).
 */
#ifndef MT_EMU_INTERNAL_H
#define MT_EMU_INTERNAL_H

#include "capture/capfile_internal.h"
#include "capture/capture.h"
#include "capture/gort_internal.h"
#include "capture/sideband_internal.h"
#include "ptenc/ptenc.h"
#include "symbols/symbols.h"
#include "util/err.h"

#include <capstone/capstone.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define EMU_PMU_TYPE   8
#define EMU_TSC_CTC    40 /* "TSC" 1 GHz, crystal 25 MHz */
#define EMU_NONTURBO   10 /* 1 GHz = 10 x 100 MHz */
#define EMU_MTC_PERIOD 9  /* 20 us: a step takes about as long */
#define ICACHE	       65536

enum iclass {
	IC_PLAIN,
	IC_COND,
	IC_JMP,	  /* direct jump */
	IC_IJMP,  /* indirect jump */
	IC_CALL,  /* direct call */
	IC_ICALL, /* indirect call */
	IC_RET,
	IC_SYSCALL, /* syscall, sysenter, int */
	IC_FAR,	    /* far transfers: treated as indirect */
};

struct insn {
	uint64_t ip;
	uint8_t len, cls;
	bool valid;
};

/* A truth row: one call (or [syscall]) of one thread. */
struct trow {
	uint64_t start, end;
	const char *name; /* owned by a sym_file, or static */
	uint64_t target;  /* where it was entered; 0 when not seen */
	uint32_t parent;  /* row index, UINT32_MAX for a root */
	uint32_t depth;
	uint8_t flags;
	uint64_t goid; /* the goroutine the thread ran when it began */
};

/* The flags of truth.tsv (synth/README.md). */
enum {
	TR_CLIP_START = 1,
	TR_CLIP_END = 2,
	TR_TAIL = 4,
	TR_SYSCALL = 8,
	TR_TAIL_OUT = 16, /* left by a jump to another function */
	TR_UNWOUND = 32,  /* left by a longjmp-like jump to an ancestor */
	TR_SIGNAL = 64,	  /* entered by the kernel delivering a signal */
	TR_EXEC = 128,	  /* the new program's entry, after an exec */
};

struct tframe {
	uint32_t row;
	uint64_t ret, lo, hi;
	/* the function whose frame it took by a jump, 0 and 0: called */
	uint64_t took_lo, took_hi;
	bool async; /* a signal handler, or the trampoline it returns to */
};

/* A binary of the target, for naming functions in the truth. */
struct edso {
	uint64_t lo, hi, pgoff;
	char *path;
	struct sym_file *sf;
	bool tried;
};

struct thr {
	pid_t tid;
	struct ptenc *enc;
	bool started;	 /* tracing began for it */
	bool new_thread; /* waiting for its first stop */
	bool exited;
	bool async; /* a signal is being delivered: PGE next stop */
	/* It mapped code in its system call: where it resumes, a PSB+ (a
	 * TSC) dates the new code after the mapping, as MTC alone may not,
	 * for a decoder that reads which code is where by time. */
	bool mapped;
	uint64_t step_ip; /* the instruction in flight */
	struct insn step;
	uint64_t step_tsc;
	/* The return addresses of the calls it is in, as the CPU sees them:
	 * the stack an unwinder would report at the snapshot. */
	uint64_t *shadow;
	size_t depth, cap_shadow;
	/* The stack unwound at the trigger (leaf first), when it could be:
	 * it knows the callers from before tracing began. */
	uint64_t *unwound;
	size_t nr_unwound;
	uint64_t last_ip;
	/* --truth: every call it made, and the calls it is in. */
	struct trow *rows;
	size_t nr_rows, cap_rows;
	struct tframe *tstack;
	size_t tdepth, cap_tstack;
	uint64_t t0;
	/* Overflow emulation: branches still to lose, and the gap so far. */
	uint64_t dropping, gap_after, gap_end, gap_stop, last_pkt_tsc;
	uint64_t last_pkt_ip; /* where the last packet left it (Valgrind) */
	/* Its process when not the first as it began (a fork of it, or it
	 * after an exec): its FORK and COMM are among e->tasks.  0: e->pid,
	 * named at the start. */
	pid_t pid;
	uint32_t untraced_row; /* the truth's row for a signal's delivery */
	bool left;	       /* its last syscall, which never returns, seen */
	size_t snap_end;       /* --multi-snapshot: trace bytes already taken */
	uint64_t g, goid;      /* a Go thread's goroutine (0: none seen) */
};

/* --multi-snapshot: one thread's ring at one hit, and the hits. */
struct snap {
	size_t thread;
	uint8_t *data;
	size_t len;
	uint64_t time;
};

struct ehit {
	uint64_t time, mark, ip;
	pid_t tid;
	long arg;
};

/* A task event of a process after the start (the Valgrind backend's
 * forks and execs), dated as the kernel's sideband would date it. */
enum etask_kind { ET_FORK, ET_COMM, ET_EXEC, ET_MMAP };

struct etask {
	uint64_t time;
	pid_t pid, tid, ppid, ptid;
	uint8_t kind;
	char *text; /* the command name, or the maps line (ET_MMAP) */
};

struct egap {
	pid_t tid;
	uint64_t after, end, resume, stop_ip, resume_ip;
};

struct emu {
	const struct emu_opts *o;
	pid_t pid;
	csh cs;
	struct insn *icache;
	struct thr *thr;
	size_t nr_thr, cap_thr;
	size_t live;
	bool found; /* attach(): a thread seized in this reading */
	char exe[4096];
	char comm[16];
	uint64_t start_time;
	char **maps;	    /* executable lines of /proc/PID/maps seen */
	uint64_t *map_time; /* when each was first seen mapped */
	size_t nr_maps, cap_maps, cap_map_time;
	/* maps[] before it are an earlier program's: an exec maps its code
	 * anew, as the kernel's MMAP2 records after the exec say */
	size_t maps_from;
	uint64_t trigger; /* snapshot when a thread gets here; 0: none */
	/* A FILE:LINE trigger: every address the line begins at; a
	 * function of a library: its address in each one mapped. */
	uint64_t *triggers;
	size_t nr_triggers;
	/* --trigger in no file mapped yet: looked for as files come. */
	struct symwatch *trigger_watch;
	uint64_t hit_time, hit_mark, hit_ip;
	pid_t hit_tid;
	long hit_arg;
	uint64_t mark_addr; /* the program's mt_mark_start_ns, 0: none */
	uint64_t ptw_addr;  /* its mt_ptwrite (--ptwrite), 0: none */
	struct snap *snaps;
	size_t nr_snaps, cap_snaps;
	struct ehit *hits;
	size_t nr_hits, cap_hits;
	uint8_t *vdso; /* the [vdso] image, read from the target */
	uint64_t vdso_start, vdso_len;
	struct edso *edsos;
	size_t nr_edsos, cap_edsos;
	struct egap *gaps;
	size_t nr_gaps, cap_gaps;
	struct etask *tasks;
	size_t nr_tasks, cap_tasks;
	uint64_t rng;
	struct sb_ring *sb; /* the kernel's sideband, one ring per CPU */
	uint64_t *sb_ids;
	int nr_sb;
	bool have_sb;
	/* A Go program's runtime, and its threads' goroutine switches. */
	struct go_rt go;
	uint64_t go_bias; /* its runtime addresses less its ELF vaddrs */
	struct pd_ext_goroutine *gos;
	size_t nr_gos, cap_gos;
	/* The Valgrind tool compresses the returns itself, reports no
	 * direct call, and says where a PSB+ goes (vg_calls_kept()): a
	 * pack's returns are taken bits as they are, the encoder's PSBs
	 * only those asked for, and no thread's stack of calls is known. */
	bool tool_rets;
	struct emu_stats *st;
	char *err; /* mt_fail()'s: one line naming what failed */
	size_t errlen;
};

/* emu_state.c: what both emulate backends keep the same way. */
/* Thread tid, or NULL when it has none yet. */
struct thr *emu_thr_find(struct emu *e, pid_t tid);
/* A new thread with its encoder (e->thr may move), or NULL: no memory. */
struct thr *emu_thr_add(struct emu *e, pid_t tid);
/* A call's return address on the thread's return stack. */
int emu_shadow_push(struct thr *t, uint64_t ret);
/* --multi-snapshot: keep what each thread's ring holds now (what it
 * gained since the last snapshot, at most the ring's size), and go on. */
int emu_snapshot(struct emu *e, uint64_t when);
/* A binary of the target, for naming functions in the truth. */
int emu_edso_add(struct emu *e, uint64_t lo, uint64_t hi, uint64_t off,
		 const char *path);
/* The capture and, as asked, the truth and the gaps, all ending at end,
 * after a run that returned rc: rc when that failed (its error stays in
 * e->err), else 0 or -EIO with why in e->err. */
int emu_write_all(struct emu *e, uint64_t end, int rc);
/* One more of e->tasks (text copied, may be NULL); 0 or -ENOMEM. */
int emu_task_add(struct emu *e, uint8_t kind, uint64_t time, pid_t pid,
		 pid_t tid, pid_t ppid, pid_t ptid, const char *text);
/* The process thread tid is of. */
pid_t emu_thr_pid(const struct emu *e, pid_t tid);
/* --drop-every: a pseudo-random number below n (e->rng, seeded by
 * --drop-seed). */
uint64_t emu_drop_rand(struct emu *e, uint64_t n);
/* Everything e owns. */
void emu_free(struct emu *e);
/* Thread t runs the goroutine at g (id goid) from ip at time on, when
 * that is another than it ran: an item of the capture.  0 or -ENOMEM. */
int emu_go_switch(struct emu *e, struct thr *t, uint64_t time, uint64_t ip,
		  uint64_t g, uint64_t goid);

/* emulate.c: the step loop (the ptrace backend) */
/* Thread tid, made if new (e->thr may move), or NULL: no memory. */
struct thr *emu_thr_get(struct emu *e, pid_t tid);

/* emu_ptrace.c: the ptrace backend's control of the target's threads */
/* CLOCK_MONOTONIC in ns: the "TSC" of an emulated capture. */
uint64_t emu_now_ns(void);
/* Up to len bytes of pid's memory at addr: how many, or -errno. */
int emu_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);
/* The IP of stopped thread tid. */
uint64_t emu_get_ip(pid_t tid);
/* Every thread still ours is let go. */
void emu_detach_all(struct emu *e);
/* The runtime address of symbol sym of the executable: 0, -ENOENT (err
 * says so), or another negative code. */
int emu_exe_symbol(struct emu *e, const char *sym, uint64_t *out);
/* The runtime address of a data object of the executable, or 0. */
uint64_t emu_exe_object(struct emu *e, const char *name);
/* Did the system call stopped at (or stepped over) with r map code? */
bool emu_syscall_mapped_code(const struct user_regs_struct *r);
/* Did the system call stepped over with r exec another program? */
bool emu_syscall_execd(const struct user_regs_struct *r);
/* Run the target until a thread reaches sym, every thread held there. */
int emu_run_to(struct emu *e, const char *sym);
/* Start argv under ptrace, stopped at its exec. */
int emu_launch(struct emu *e, char *const argv[]);
/* Seize every thread of process pid and stop it. */
int emu_attach(struct emu *e, int pid);

/* emu_capture.c */
/*
 * The target's executable mappings, read while it lives (after reaching
 * the start, after each system call that maps code, and when a thread
 * exits), for the MMAP2 records: those new since the last look are
 * stamped time.  1 when there were new ones, 0, or -ENOMEM.
 */
int emu_collect_maps(struct emu *e, uint64_t time);
/* One mapping as a line of /proc/PID/maps, mapped at time, unless the
 * newest mapping known at its addresses is the same line (then 0; 1
 * when added; -ENOMEM). */
int emu_add_map(struct emu *e, const char *line, uint64_t time);
/* The capture, its trace ending at end; 0, or -1 with why in e->err. */
int emu_write_capture(struct emu *e, uint64_t end);

/* emu_truth.c */
int emu_edsos_from_maps(struct emu *e);
int emu_truth_row_add(struct thr *t, uint64_t start, const char *name,
		      uint32_t parent, uint8_t flags);
int emu_truth_push(struct emu *e, struct thr *t, uint64_t when, uint64_t ip,
		   uint64_t ret, uint8_t flags);
void emu_truth_pop_to(struct thr *t, size_t n, uint64_t when);
int emu_truth_transfer(struct emu *e, struct thr *t, uint64_t to, uint64_t next,
		       uint64_t back);
int emu_truth_write(struct emu *e, uint64_t end);
/* --drop-every's gaps: one more, and all of them as gaps.tsv (--gaps). */
int emu_add_gap(struct emu *e, struct thr *t, uint64_t resume,
		uint64_t resume_ip);
int emu_write_gaps(struct emu *e);

#endif
