/* SPDX-License-Identifier: MIT */
/*
 * pmu: the intel_pt PMU's fields, its address filters and the copy of
 * its AUX ring (the PMU and its config are in capture.h).
 */
#ifndef MT_PMU_INTERNAL_H
#define MT_PMU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"

const struct pt_field *pmu_field(const struct pt_pmu *p, const char *name);
/* nranges address ranges (--filter, --stop-at-trigger): what the caps
 * allow? */
int pmu_check_filters(const struct pt_pmu *p, unsigned nranges, char *err,
		      size_t errlen);
/* Copy an AUX ring of size bytes whose aux_head is head (a position, in
 * overwrite mode) into out, oldest byte first; returns the bytes copied. */
size_t pmu_ring_copy(const uint8_t *ring, size_t size, uint64_t head,
		     uint8_t *out);
/* The same for the bytes written since position since only (at most
 * the ring's size): --multi-snapshot takes only what is new. */
size_t pmu_ring_copy_since(const uint8_t *ring, size_t size, uint64_t head,
			   uint64_t since, uint8_t *out);

#endif
