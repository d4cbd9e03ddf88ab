/* SPDX-License-Identifier: MIT */
/*
 * TSC <-> perf time, the kernel's way (uapi perf_event_mmap_page).  The
 * quotient/remainder split gives the exact floor of tsc * mult / 2^shift
 * (the remainder product in 128 bits, so any shift works), and additions
 * wrap modulo 2^64 as the kernel's do: time_zero is negative when the TSC
 * started before the clock's zero.
 */
#include "perfdata/pd_internal.h"

uint64_t pd_tsc_to_perf_time(uint64_t tsc, const struct pd_pt_info *pt)
{
	uint64_t shift = pt->time_shift, mult = pt->time_mult, quot, rem;

	/* mult 0 means the capture had no conversion: keep raw ticks. */
	if (!mult)
		return tsc;
	if (shift >= 64)
		return pt->time_zero;
	quot = tsc >> shift;
	rem = tsc & ((UINT64_C(1) << shift) - 1);
	return pt->time_zero + quot * mult +
	       (uint64_t)(((unsigned __int128)rem * mult) >> shift);
}

uint64_t pd_perf_time_to_tsc(uint64_t ns, const struct pd_pt_info *pt)
{
	uint64_t shift = pt->time_shift, mult = pt->time_mult;
	uint64_t t, quot, rem;

	if (!mult)
		return ns;
	if (shift >= 64)
		return 0;
	t = ns - pt->time_zero;
	quot = t / mult;
	rem = t % mult;
	return (quot << shift) +
	       (uint64_t)(((unsigned __int128)rem << shift) / mult);
}
