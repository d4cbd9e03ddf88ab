/* SPDX-License-Identifier: MIT */
/*
 * Sorted arrays: a bottom-up merge sort over bytes (stable, O(n log n),
 * one scratch buffer: used where equal keys must keep their order, events
 * of one thread that share a timestamp), and the search of sorted tables
 * of address ranges.
 */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mt_stable_sort(void *base, size_t n, size_t sz,
		   int (*cmp)(const void *, const void *))
{
	unsigned char *a = base, *b, *src, *dst;

	if (n < 2)
		return 0;
	b = malloc(n * sz);
	if (!b)
		return -ENOMEM;
	src = a;
	dst = b;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi) {
				if (cmp(src + j * sz, src + i * sz) < 0)
					memcpy(dst + k++ * sz, src + j++ * sz,
					       sz);
				else
					memcpy(dst + k++ * sz, src + i++ * sz,
					       sz);
			}
			memcpy(dst + k * sz, src + i * sz, (mid - i) * sz);
			k += mid - i;
			memcpy(dst + k * sz, src + j * sz, (hi - j) * sz);
		}
		unsigned char *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sz);
	free(b);
	return 0;
}

int mt_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int mt_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many elements of v start at or below at. */
static size_t starting_by(const void *v, size_t nr, size_t size, uint64_t at)
{
	const char *base = v;
	size_t lo = 0, hi = nr;
	struct mt_range r;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		memcpy(&r, base + mid * size, sizeof(r));
		if (r.lo <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long mt_range_at(const void *v, size_t nr, size_t size, uint64_t at)
{
	size_t n = starting_by(v, nr, size, at);
	struct mt_range r;

	if (!n)
		return -1;
	memcpy(&r, (const char *)v + (n - 1) * size, sizeof(r));
	return at < r.hi ? (long)(n - 1) : -1;
}

size_t mt_range_from(const void *v, size_t nr, size_t size, uint64_t at)
{
	return at ? starting_by(v, nr, size, at - 1) : 0;
}
