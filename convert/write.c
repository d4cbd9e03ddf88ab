/* SPDX-License-Identifier: MIT */
/*
 * Writing what the conversion made: the database on a thread of its
 * own, the Perfetto trace in parts, and the line for a trace too big
 * for the UI.
 */
#include "convert/convert_internal.h"

#include "writers/writers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

void cv_clock_start(struct cv_clock *c, clockid_t cpu_id)
{
	c->cpu_id = cpu_id;
	c->wall = mt_clock_ns(CLOCK_MONOTONIC);
	c->cpu = mt_clock_ns(cpu_id);
	c->own = mt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void cv_clock_stop(const struct cv_clock *c, struct mt_convert_time *out)
{
	struct rusage ru;

	out->ran = true;
	out->wall_s = mt_since_s(CLOCK_MONOTONIC, c->wall);
	out->cpu_s = mt_since_s(c->cpu_id, c->cpu);
	out->own_cpu_s = mt_since_s(CLOCK_THREAD_CPUTIME_ID, c->own);
	out->peak_kb = getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
}

void *cv_write_sqlite(void *arg)
{
	struct cv_sqlite_job *j = arg;
	struct cv_clock c;

	struct wr_stats st = {0};

	cv_clock_start(&c, CLOCK_THREAD_CPUTIME_ID);
	j->rc = wr_sqlite_to_opts(j->t, j->f, &j->o, &st, j->err,
				  sizeof(j->err));
	if (!j->rc)
		j->rc = mt_outfile_sync(j->f, j->err, sizeof(j->err));
	cv_clock_stop(&c, &j->time);
	j->time.write_s = st.write_s;
	return NULL;
}

/* trace.pftrace -> trace.K.pftrace; other names get .K appended. */
static char *part_path(const char *out, size_t k)
{
	size_t n = strlen(out);
	char *p;

	if (n > 8 && !strcmp(out + n - 8, ".pftrace"))
		return asprintf(&p, "%.*s.%zu.pftrace", (int)(n - 8), out, k) <
				       0
			       ? NULL
			       : p;
	return asprintf(&p, "%s.%zu", out, k) < 0 ? NULL : p;
}

int cv_write_parts(const struct mt_trace *t, const struct mt_convert_opts *o,
		   const struct wr_perfetto_opts *po, struct mt_outfile **parts,
		   size_t *nr_parts, double *cpu_s, char *err, size_t errlen)
{
	uint64_t *cuts = NULL;
	size_t n = 0;
	int rc = rg_split_plan(t, o->split, &cuts, &n, err, errlen);

	if (!rc && !(*parts = calloc(n + 1, sizeof(**parts))))
		rc = cv_step_failed(-ENOMEM, o->capture,
				    "planning the --split parts", err, errlen);
	for (size_t k = 0; !rc && k < n; k++) {
		struct mt_trace view;
		struct wr_stats st = {0};
		char *path = part_path(o->perfetto, k + 1);

		if (!path) {
			rc = cv_step_failed(-ENOMEM, o->capture,
					    "naming a --split part", err,
					    errlen);
			break;
		}
		rc = mt_outfile_begin(&(*parts)[k], path, err, errlen);
		free(path);
		if (rc)
			break;
		*nr_parts = k + 1;
		if (o->on_outputs)
			o->on_outputs(o->ctx, *parts, *nr_parts, true);
		rc = rg_part(t, cuts[k], cuts[k + 1], &view, err, errlen);
		if (rc)
			break;
		rc = wr_perfetto_to(&view, &(*parts)[k], po, &st, err, errlen);
		*cpu_s += st.cpu_s;
		rg_part_free(&view);
		if (!rc)
			rc = mt_outfile_sync(&(*parts)[k], err, errlen);
	}
	free(cuts);
	return rc;
}

void cv_warn_big(const struct mt_trace *t, const struct mt_convert_opts *o)
{
	uint64_t n = 0;
	char line[1024];

	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	if (!o->warn || !o->ui_max_slices || n <= o->ui_max_slices)
		return;
	snprintf(line, sizeof(line),
		 "mt-convert: %s: %" PRIu64 " slices, more than the Perfetto "
		 "UI loads on a typical machine (about %" PRIu64 "): open it "
		 "through trace_processor --httpd, or write it in parts with "
		 "--split %" PRIu64,
		 o->perfetto, n, o->ui_max_slices, o->ui_max_slices);
	o->warn(o->ctx, line);
}
