/* SPDX-License-Identifier: MIT */
/*
 * pmu: the intel_pt PMU as sysfs describes it, the config a recording
 * asks of it, and the copy of its AUX ring.
 */
#ifndef MT_PMU_H
#define MT_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PMU_MAX_FIELDS 48

struct pt_field {
	char name[32];
	uint8_t lo, hi; /* bits of perf_event_attr.config */
};

struct pt_pmu {
	uint32_t type;
	struct pt_field fields[PMU_MAX_FIELDS];
	size_t nr_fields;
	bool psb_cyc, mtc, ptwrite, ip_filtering;
	uint32_t mtc_periods, cycle_thresholds, psb_periods; /* bitmaps */
	uint32_t num_address_ranges;
	uint32_t max_nonturbo_ratio;
};

enum pt_timing {
	PT_TIMING_LOW,	  /* TSC only */
	PT_TIMING_NORMAL, /* + MTC and CYC */
	PT_TIMING_HIGH,	  /* + no compressed returns */
};

struct pt_request {
	enum pt_timing timing;
	bool custom; /* use the fields below as they are */
	bool tsc, mtc, cyc, noretcomp;
	unsigned mtc_period, cyc_thresh, psb_period;
	/* --ptwrite: PTW packets with the FUP that gives their IP (any
	 * timing, custom or not) */
	bool ptwrite;
};

/* Read the PMU at dir (/sys/bus/event_source/devices/intel_pt).
 * Returns 0, or a negative code with one line in err. */
int pmu_probe(const char *dir, struct pt_pmu *p, char *err, size_t errlen);
const struct pt_field *pmu_field(const struct pt_pmu *p, const char *name);
/*
 * --timing-custom "tsc=1,mtc=1,mtc_period=3,cyc=1,cyc_thresh=2": the raw
 * fields into r (custom set; fields not named are 0).  Only the syntax
 * is checked here; pmu_config() checks the values against the caps.
 */
int pmu_parse_custom(const char *spec, struct pt_request *r, char *err,
		     size_t errlen);
/* The config for a request, checked against the caps. */
int pmu_config(const struct pt_pmu *p, const struct pt_request *r,
	       uint64_t *config, char *err, size_t errlen);
/* nranges address ranges (--filter, --stop-at-trigger): what the caps
 * allow? */
int pmu_check_filters(const struct pt_pmu *p, unsigned nranges, char *err,
		      size_t errlen);
/*
 * --include-kernel: may this process trace the kernel?  paranoid is
 * the path of perf_event_paranoid, cap_eff the effective capability set
 * (pmu_effective_caps()).  Returns 0, or -EACCES with what is missing.
 */
int pmu_check_kernel(const char *paranoid, uint64_t cap_eff, char *err,
		     size_t errlen);
uint64_t pmu_effective_caps(void);
/* Copy an AUX ring of size bytes whose aux_head is head (a position, in
 * overwrite mode) into out, oldest byte first; returns the bytes copied. */
size_t pmu_ring_copy(const uint8_t *ring, size_t size, uint64_t head,
		     uint8_t *out);
/* The same for the bytes written since position since only (at most
 * the ring's size): --multi-snapshot takes only what is new. */
size_t pmu_ring_copy_since(const uint8_t *ring, size_t size, uint64_t head,
			   uint64_t since, uint8_t *out);

#endif
