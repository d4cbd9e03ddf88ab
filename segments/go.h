/* SPDX-License-Identifier: MIT */
/*
 * Go's scheduler, as a quirk of the segment builder: each goroutine runs
 * on a stack of its own, and the runtime switches between them (and the
 * thread's system stack, g0) with jumps and calls that are no calls and
 * returns of the program's.  These functions name the switch points (by
 * symbol, as libipt names errata) and keep the stacks of the goroutines
 * that are not running, per process, until one is resumed.
 *
 * The switches (Go 1.17 and later on amd64, the register ABI):
 * - runtime.mcall(fn) saves the goroutine's resume point (its caller,
 *   as if mcall returned), moves to g0's stack and calls fn there
 *   (park_m, gosched_m, goexit0...), which never returns;
 * - runtime.systemstack(fn) moves to g0, calls fn, moves back and
 *   returns (already on g0, it jumps to fn: no switch);
 * - runtime.morestack moves to g0 and calls runtime.newstack, which
 *   copies the stack and resumes the goroutine where morestack would
 *   have returned (the function that overflowed then jumps to its own
 *   start: its prologue runs again, no new call);
 * - gogo (reached from runtime.gogo) loads a goroutine's registers and
 *   jumps to its resume point, or to a new goroutine's function;
 * - mcall(goexit0), from runtime.goexit1, ends the goroutine.
 */
#ifndef MT_SEGMENTS_GO_H
#define MT_SEGMENTS_GO_H

#include "model/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum go_fn {
	GO_NONE,
	GO_GOGO,	  /* gogo, runtime.gogo: jumps to a goroutine */
	GO_MCALL,	  /* runtime.mcall: calls fn on g0 */
	GO_SYSTEMSTACK,	  /* runtime.systemstack: calls fn on g0, comes back */
	GO_MORESTACK,	  /* runtime.morestack: calls newstack on g0 */
	GO_NEWSTACK,	  /* runtime.newstack */
	GO_GOEXIT0,	  /* runtime.goexit0: mcall'ed when a goroutine ends */
	GO_SWITCH_HELPER, /* systemstack's own callees (gosave, bad...) */
};

/* What a function of the runtime is to the switches, by its name. */
enum go_fn go_switch_fn(const char *name);
/* A switch point of Go's runtime, by its full name: a program that has
 * one may be Go (a plain "gogo" may be anything's). */
bool go_runtime_switch(const char *name);

/* A goroutine not running: its stack, as the builder saved it. */
struct go_susp {
	uint64_t resume; /* where it resumes */
	uint64_t goid;	 /* 0: unknown */
	uint64_t time;	 /* when it was suspended */
	uint32_t gor;	 /* 1 + index in the trace's goroutines */
	bool guessed;	 /* which goroutine it is was a guess */
	void *frames;	 /* the builder's saved frames, root first */
	size_t nr;
};

/* The suspended goroutines of one process, shared by its threads'
 * builders. */
struct go_proc {
	uint32_t pid;
	struct go_susp *v;
	size_t nr, cap;
	uint32_t nr_anon; /* goroutines numbered by us */
	bool held;	  /* its threads' events wait to be built in time order
			     (segments/build.c) */
	struct mt_hmap by_goid; /* goid -> 1 + index in t->goroutines */
};

struct go_proc *go_proc_new(uint32_t pid);
void go_proc_free(struct go_proc *p);

/* Keep s (its frames become p's).  -ENOMEM. */
int go_switch_suspend(struct go_proc *p, struct go_susp *s);

/*
 * The suspended goroutine to resume at ip: the one with goid when given,
 * else the one most recently suspended with that resume point (*several:
 * others could resume there as well).  Takes it out of p into *out (its
 * frames become the caller's).  false: none.
 */
bool go_switch_resume(struct go_proc *p, uint64_t ip, uint64_t goid,
		      struct go_susp *out, bool *several);

/*
 * Every suspended goroutine that resumes at ip, taken out of p into *out
 * (an array the caller frees, with the frames), the most recently
 * suspended first.  Returns how many, or -ENOMEM.
 */
long go_switch_take(struct go_proc *p, uint64_t ip, struct go_susp **out);

/*
 * The goroutine goid of p's process in t (1 + its index), added with
 * start (a string id) if new; goid 0 adds one numbered by us.  It ran
 * at time.  0: out of memory.
 */
uint32_t go_switch_goroutine(struct mt_trace *t, struct go_proc *p,
			     uint64_t goid, uint32_t start, uint64_t time);

/* Goroutine gor (1 + index) ran until time. */
void go_switch_ran(struct mt_trace *t, uint32_t gor, uint64_t time);

#endif
