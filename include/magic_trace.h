/*
 * magic_trace.h: ask mt-capture for a snapshot from inside your program.
 *
 *   #include "magic_trace.h"
 *   ...
 *   mt_mark_start();
 *   handle_request();
 *   mt_take_snapshot_if_longer(5000000);   // only when it took >= 5 ms
 *
 * Every call ends in mt_snapshot_point(), one exact function that is
 * never inlined: mt-capture puts its trigger there (the default trigger
 * when the program has this function).  Without mt-capture attached the
 * calls cost a function call and, for the timed ones, a clock read.
 * Header-only: the function is a weak symbol, so every translation unit
 * may include this and the program still has exactly one.
 */
#ifndef MAGIC_TRACE_H
#define MAGIC_TRACE_H

#include <time.h>

/*
 * The snapshot point.  arg and mark_start_ns reach the trigger as the
 * first two arguments (the registers a hardware breakpoint samples).
 */
__attribute__((weak, noinline, used)) void
mt_snapshot_point(long arg, long long mark_start_ns)
{
	/* Keeps the call from being optimised away. */
	__asm__ volatile("" : : "r"(arg), "r"(mark_start_ns) : "memory");
}

/* When mt_mark_start() was last called, in CLOCK_MONOTONIC ns. */
__attribute__((weak)) long long mt_mark_start_ns;

static inline long long mt_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void mt_take_snapshot(void)
{
	mt_snapshot_point(0, mt_mark_start_ns);
}

static inline void mt_take_snapshot_with_arg(long arg)
{
	mt_snapshot_point(arg, mt_mark_start_ns);
}

static inline void mt_mark_start(void)
{
	mt_mark_start_ns = mt_now_ns();
}

/* Snapshot only when at least min_ns passed since mt_mark_start(). */
static inline void mt_take_snapshot_if_longer(long long min_ns)
{
	long long d = mt_now_ns() - mt_mark_start_ns;

	if (mt_mark_start_ns && d >= min_ns)
		mt_snapshot_point((long)d, mt_mark_start_ns);
}

#endif
