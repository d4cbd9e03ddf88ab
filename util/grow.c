/* SPDX-License-Identifier: MIT */
#include "util/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int mt_grow_to(void **v, size_t *cap, size_t need, size_t sz)
{
	size_t c = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (sz && c > SIZE_MAX / sz)
		return -ENOMEM;
	n = realloc(*v, c * sz);
	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

size_t mt_page_size(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (size_t)page : 4096;
}

size_t mt_forget(const void *p, size_t len)
{
	uintptr_t page = mt_page_size();
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(page - 1);

	if (hi > lo && !madvise((void *)lo, hi - lo, MADV_DONTNEED))
		return hi - lo;
	return 0;
}
