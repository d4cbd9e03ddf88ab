/* SPDX-License-Identifier: MIT */
/*
 * What the perfdata and report tests share (pd_sample.c): the sample
 * capture, one record of every kind, written in either file mode and
 * checked when read back; a walk through everything the reader offers;
 * where the real captures are.
 */
#ifndef MT_PD_SAMPLE_H
#define MT_PD_SAMPLE_H

#include "perfdata/perfdata.h"
#include "tests/unit/check.h"

#include <stdbool.h>
#include <stdint.h>

/* The sample capture's PMU type, process, thread and CPU. */
#define PMU 8
#define PID 100
#define TID 101
#define CPU 2

enum variant {
	V_ALL,	 /* every kind */
	V_SMALL, /* a few, for the byte-by-byte truncation */
	V_PERF,	 /* what perf 6.1 accepts: no unknown types, one info */
};

/* The build id of /bin/prog in the sample capture. */
extern const uint8_t bid_a[20];

/* Little-endian fields of a record being built or checked. */
uint64_t get64(const uint8_t *p);
void put64(uint8_t *p, uint64_t v);
void put32(uint8_t *p, uint32_t v);
void put16(uint8_t *p, uint16_t v);

/* Opens and walks everything; returns 0 on a clean walk, else the error. */
int walk_all(const char *path, char *err, size_t errlen, size_t *nrec);

/* The sample capture's Intel PT fields (full: every optional one too). */
void sample_pt(struct pd_pt_info *pt, bool full);
/* Its two event attrs: intel_pt and a sampling one. */
void sample_attrs(struct perf_event_attr *a, struct perf_event_attr *b);
bool pt_equal(const struct pd_pt_info *a, const struct pd_pt_info *b);

int write_sample(const char *path, enum pd_write_mode mode, enum variant v,
		 char *err, size_t errlen);
/* Reads path back and checks every record write_sample() wrote. */
void check_sample(struct check_state *st, const char *path,
		  enum pd_write_mode mode, enum variant v);

/* NAME under $MT_SHARED/testdata (else ../shared/testdata). */
void shared_path(char *buf, size_t n, const char *name);
/* Whether the real captures are absent (then the test is skipped). */
bool shared_missing(struct check_state *st);

#endif
