/* SPDX-License-Identifier: MIT
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

/* Whether the CPU has PTWRITE: -1 until mt_ptwrite() first asks. */
__attribute__((weak)) int mt_ptwrite_ok = -1;

/*
 * Write value into the trace (mt-capture --ptwrite): it shows as a
 * "ptwrite" instant on the thread's track and a row of the ptwrite table,
 * tied to the call it was made in.  The PTWRITE instruction where the CPU
 * has it (a no-op while nothing traces), nothing otherwise; the emulator
 * (--emulate) records the call itself.
 */
__attribute__((weak, noinline, used)) void mt_ptwrite(unsigned long long value)
{
#if defined(__x86_64__)
	if (mt_ptwrite_ok < 0) {
		unsigned a, b, c, d;

		/* CPUID.7:EBX[25] Intel PT, then CPUID.14H:EBX[4] PTWRITE. */
		__asm__ volatile("cpuid"
				 : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
				 : "a"(0), "c"(0));
		mt_ptwrite_ok = 0;
		if (a >= 0x14) {
			__asm__ volatile("cpuid"
					 : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
					 : "a"(7), "c"(0));
			if (b >> 25 & 1) {
				__asm__ volatile("cpuid"
						 : "=a"(a), "=b"(b), "=c"(c),
						   "=d"(d)
						 : "a"(0x14), "c"(0));
				mt_ptwrite_ok = b >> 4 & 1;
			}
		}
	}
	if (mt_ptwrite_ok) {
		/* ptwrite %rdi, spelled out for assemblers that lack it */
		__asm__ volatile(".byte 0xf3, 0x48, 0x0f, 0xae, 0xe7"
				 :
				 : "D"(value)
				 : "memory");
		return;
	}
#endif
	__asm__ volatile("" : : "r"(value) : "memory");
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
