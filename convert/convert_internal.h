/* SPDX-License-Identifier: MIT */
/*
 * What convert/'s files share: the checks that refuse a conversion
 * (checks.c), the writing of the outputs (write.c), and the clocks of
 * the stages.  Not part of the interface (convert.h).
 */
#ifndef MT_CONVERT_INTERNAL_H
#define MT_CONVERT_INTERNAL_H

#include "convert/convert.h"
#include "writers/writers.h"

#include <time.h>

struct dec_capture;
struct wr_perfetto_opts;

/* A stage's start on the wall clock and on a CPU clock: the process's,
 * or the thread's for the stages that run beside another. */
struct cv_clock {
	uint64_t wall, cpu, own; /* mt_clock_ns() readings */
	clockid_t cpu_id;
};

void cv_clock_start(struct cv_clock *c, clockid_t cpu_id);
void cv_clock_stop(const struct cv_clock *c, struct mt_convert_time *out);

/*
 * The line for a callee that writes none: those that return only 0 or
 * -ENOMEM (segments' builders, the hits, the cuts of regions/) have run
 * out of memory in step; any other code is said as what it is.  Returns
 * the code (negative).
 */
int cv_step_failed(int rc, const char *capture, const char *step, char *err,
		   size_t errlen);

/* Each returns 0, or a negative errno value with one line in err. */
/* Every o->tids is a thread of the capture. */
int cv_check_tids(struct dec_capture *dc, const struct mt_convert_opts *o,
		  char *err, size_t errlen);
/* The capture looks as if it fits in the memory there is. */
int cv_check_memory(struct dec_capture *dc, const struct mt_convert_opts *o,
		    char *err, size_t errlen);
/* The threads o->tids chose left a slice in t. */
int cv_check_tid_trace(const struct mt_trace *t,
		       const struct mt_convert_opts *o, char *err,
		       size_t errlen);

/* The database, written on a thread of its own (cv_write_sqlite is its
 * start routine) while the Perfetto trace is written on the caller's:
 * both only read the model.  time: its wall time and its thread's CPU
 * time. */
struct cv_sqlite_job {
	const struct mt_trace *t;
	struct mt_outfile *f;
	struct wr_sqlite_opts o;
	int rc;
	char err[512];
	struct mt_convert_time time;
};

void *cv_write_sqlite(void *job);

/*
 * o->split: the trace cut into parts (regions/), each begun as an
 * output of its own (told to o->on_outputs) and written and synced in
 * turn; *parts (calloc'd, *nr_parts begun) is the caller's to commit or
 * abort, failed or not.  The CPU the writer's own threads spent is
 * added to *cpu_s.
 */
int cv_write_parts(const struct mt_trace *t, const struct mt_convert_opts *o,
		   const struct wr_perfetto_opts *po, struct mt_outfile **parts,
		   size_t *nr_parts, double *cpu_s, char *err, size_t errlen);

/* One line to o->warn when the trace is more than the UI loads, with
 * the ways through. */
void cv_warn_big(const struct mt_trace *t, const struct mt_convert_opts *o);

#endif
