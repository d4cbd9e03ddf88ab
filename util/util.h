/*
 * util: the few helpers every module needs.  Nothing here knows about
 * tracing.
 */
#ifndef MT_UTIL_H
#define MT_UTIL_H

#include <stddef.h>

/*
 * Make *v (an array of *cap elements of size sz) hold at least need
 * elements, doubling so that n appends cost O(n).  Returns 0, or -1 when
 * out of memory or when the size would overflow; *v is untouched then.
 */
int mt_grow(void **v, size_t *cap, size_t need, size_t sz);

/*
 * A stable merge sort (qsort is not stable): returns 0, or -1 when the
 * scratch buffer cannot be allocated (base is untouched then).
 */
int mt_stable_sort(void *base, size_t n, size_t sz,
		   int (*cmp)(const void *, const void *));

#endif
