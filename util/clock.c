/* SPDX-License-Identifier: MIT */
#include "util/util.h"

uint64_t mt_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double mt_since_s(clockid_t id, uint64_t start_ns)
{
	uint64_t now = mt_clock_ns(id);

	/* A clock that failed now but not at the start (or the reverse)
	 * says nothing of the time between. */
	if (!now || !start_ns || now < start_ns)
		return 0;
	return (double)(now - start_ns) / 1e9;
}
