/* SPDX-License-Identifier: MIT */
/*
 * The conversion, step by step:
 *
 *   outputs begun -> decode (pass 1) -> segments -> stitch (pass 2) ->
 *   hits -> regions -> text, Perfetto | SQLite -> commit
 */
#include "convert/convert_internal.h"

#include "decode/decode.h"
#include "image/image.h"
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "util/err.h"
#include "writers/writers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *mt_convert_stage_name(enum mt_convert_stage s)
{
	static const char *const names[MT_STAGE_NR] = {
		[MT_STAGE_OUTPUTS] = "outputs",
		[MT_STAGE_READ] = "read",
		[MT_STAGE_DECODE] = "decode",
		[MT_STAGE_SEGMENTS] = "segments",
		[MT_STAGE_STITCH] = "stitch",
		[MT_STAGE_REGIONS] = "regions",
		[MT_STAGE_TEXT] = "text",
		[MT_STAGE_PERFETTO] = "perfetto",
		[MT_STAGE_SQLITE] = "sqlite",
		[MT_STAGE_COMMIT] = "commit",
	};

	return (unsigned)s < MT_STAGE_NR ? names[s] : "?";
}

int mt_convert_result_init(struct mt_convert_result *r)
{
	memset(r, 0, sizeof(*r));
	return mt_trace_init(&r->trace);
}

void mt_convert_result_free(struct mt_convert_result *r)
{
	mt_trace_free(&r->trace);
}

enum { OUT_PERFETTO, OUT_SQLITE, OUT_TEXT, NR_OUTS };

/* One conversion's state, from the outputs begun to their commit. */
struct conv {
	const struct mt_convert_opts *o;
	struct mt_convert_result *r;
	struct dec_capture *dc;
	struct seg_ends_table ends;
	struct mt_outfile outs[NR_OUTS];
	const char *out_names[NR_OUTS];
	size_t nr_outs;
	struct mt_outfile *parts;
	size_t nr_parts;
	/* The stage running (r->failed), since clock. */
	struct cv_clock clock;
	bool in_stage;
	double pool_cpu_s; /* its pools' threads', which the clock misses */
};

static void tell_outputs(const struct conv *c, const struct mt_outfile *f,
			 size_t n, bool parts)
{
	if (c->o->on_outputs)
		c->o->on_outputs(c->o->ctx, f, n, parts);
}

static void stage_begin(struct conv *c, enum mt_convert_stage s,
			clockid_t cpu_id)
{
	c->r->failed = s;
	c->in_stage = true;
	cv_clock_start(&c->clock, cpu_id);
}

/* The stage running ends, as it went. */
static void stage_end(struct conv *c)
{
	if (!c->in_stage)
		return;
	c->in_stage = false;
	cv_clock_stop(&c->clock, &c->r->stages[c->r->failed]);
	c->r->stages[c->r->failed].cpu_s += c->pool_cpu_s;
	c->pool_cpu_s = 0;
	if (c->o->on_stage)
		c->o->on_stage(c->o->ctx, c->r->failed);
}

/* Joins that do not make a tree are our fault, not the capture's: the
 * thread is shown unstitched rather than the conversion failed. */
static void warn_unstitched(void *ctx, uint32_t tid, const char *why)
{
	const struct mt_convert_opts *o = ctx;

	char line[1024];

	if (!o->warn)
		return;
	snprintf(line, sizeof(line),
		 "mt-convert: %s: stitching made an inconsistent tree (%s: a "
		 "bug worth reporting); thread %u left unstitched",
		 o->capture, why, tid);
	o->warn(o->ctx, line);
}

/* Every output is created (empty, under its temporary name) before the
 * conversion, so that one that cannot be written is found now, and a
 * signal from here on takes them away. */
static int begin_outputs(struct conv *c, char *err, size_t errlen)
{
	const struct mt_convert_opts *o = c->o;
	int rc;

	/* With split the parts are written instead, named after it. */
	c->out_names[OUT_PERFETTO] = o->split ? NULL : o->perfetto;
	c->out_names[OUT_SQLITE] = o->sqlite;
	c->out_names[OUT_TEXT] =
		o->text && strcmp(o->text, "-") ? o->text : NULL;
	tell_outputs(c, c->outs, 0, false);
	for (size_t i = 0; i < NR_OUTS; i++) {
		if (!c->out_names[i])
			continue;
		/* The database is written with seeks; the trace and the
		 * text go out in order, into a pipe or a device too. */
		rc = i == OUT_SQLITE
			     ? mt_outfile_begin(&c->outs[i], c->out_names[i],
						err, errlen)
			     : mt_outfile_begin_stream(&c->outs[i],
						       c->out_names[i], err,
						       errlen);
		if (rc)
			return rc;
		c->nr_outs = i + 1;
		tell_outputs(c, c->outs, c->nr_outs, false);
	}
	return 0;
}

/* The capture opened and checked, its decode set up to build the
 * segments as it goes: on *sp when it has a thread of its own. */
static int read_capture(struct conv *c, struct seg_all **segs,
			struct seg_pipe **sp, char *err, size_t errlen)
{
	const struct mt_convert_opts *o = c->o;
	struct dec_opts dopts = {.binary_dirs = o->binary_dirs,
				 .nr_binary_dirs = o->nr_binary_dirs,
				 .debug_root = o->debug_root,
				 .jit_dir = o->jit_dir,
				 .model = &c->r->trace,
				 .progress = o->progress,
				 .progress_ctx = o->ctx,
				 .warn = o->warn,
				 .warn_ctx = o->ctx,
				 .tids = o->tids,
				 .nr_tids = o->nr_tids,
				 .jobs = o->jobs,
				 .piece_size = o->piece_size,
				 .no_inline = o->no_inline};
	struct seg_opts sopts = {.no_final_stack = o->no_final_stack,
				 .no_goroutine_ids = o->no_goroutine_ids};
	struct mt_trace *t = &c->r->trace;
	int rc;

	if ((rc = dec_open(&c->dc, o->capture, &dopts, err, errlen)))
		return rc;
	snprintf(t->recorded_by, sizeof(t->recorded_by), "%s",
		 dec_recorded_by(c->dc));
	if ((rc = cv_check_tids(c->dc, o, err, errlen)) ||
	    (rc = cv_check_memory(c->dc, o, err, errlen)))
		return rc;
	/* The segments' ends are kept for stitching only. */
	if ((rc = seg_all_new(segs, dec_image(c->dc), t,
			      o->no_stitch ? NULL : &c->ends, &sopts)))
		return cv_step_failed(rc, o->capture, "building the call tree",
				      err, errlen);
	/* Building on a core of its own while this thread decodes, or on
	 * this one when no thread can be had.  Where the decode runs on
	 * threads of its own, this thread only hands their events over, in
	 * runs, to the threads' builders on threads of their own: what
	 * stays on one thread is the handing over (on a quarter of the
	 * bench capture, 0.12 s of this thread's CPU where it built as
	 * well took 0.50 s; the same wall and CPU on two cores). */
	if (dec_runs_aside(c->dc) || seg_pipe_start(sp, *segs)) {
		if (dec_runs_aside(c->dc) &&
		    (rc = seg_all_par(*segs, mt_nr_cores(o->jobs),
				      o->piece_events)))
			return cv_step_failed(rc, o->capture,
					      "building the call tree", err,
					      errlen);
		dec_set_sink(c->dc, seg_all_sink, *segs);
		dec_set_sink_run(c->dc, seg_all_sink_run);
	} else
		dec_set_sink(c->dc, seg_pipe_sink, *sp);
	return 0;
}

/* --time, --between: what is kept, and a line when it is nothing. */
static int cut(struct conv *c, char *err, size_t errlen)
{
	const struct mt_convert_opts *o = c->o;
	struct mt_trace *t = &c->r->trace;
	struct rg_stats *rg = &c->r->rg;
	int rc;

	if (o->window) {
		if ((rc = rg_keep_time(t, o->window, rg, err, errlen)))
			return rc;
		if (!rg->regions && rg->slices_before)
			return mt_err(err, errlen, -ERANGE,
				      "%s: --time %s: the window starts after "
				      "the trace ends (it lasts %.3f ms)",
				      o->capture, o->time,
				      (double)(rg->end - rg->first) / 1e6);
		if (!rg->regions)
			return mt_err(err, errlen, -ENOENT,
				      "%s: --time %s: the trace has no slices",
				      o->capture, o->time);
	}
	if (o->between) {
		/* The name the trace lacks, START or STOP. */
		bool stop;

		if ((rc = rg_keep_between(t, o->between, o->until, rg, err,
					  errlen)))
			return rc;
		stop = rg->start_calls && !rg->stop_calls;
		if (!rg->regions)
			return mt_err(
				err, errlen, -ENOENT,
				"%s: %s %s: no call of %s in the "
				"trace%s",
				o->capture, stop ? "--until" : "--between",
				stop ? o->until : o->between,
				stop ? o->until : o->between,
				o->nr_tids ? " of the threads chosen" : "");
	}
	return 0;
}

/* The CPU seconds the process has spent (0 where there is no clock). */
static double process_cpu_s(void)
{
	return (double)mt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9;
}

#define CV_WRITER_JOBS 8

/* The Perfetto trace (or its parts) on this thread, the database on a
 * second one, each synced as soon as it is written, while the other is
 * still being written, rather than both after.  Each stage's CPU is its
 * own threads': Perfetto's is this thread's and its pool's, SQLite's
 * what the process spent meanwhile beyond that, as nothing else runs. */
static int write_both(struct conv *c, char *err, size_t errlen)
{
	const struct mt_convert_opts *o = c->o;
	const struct mt_trace *t = &c->r->trace;
	/* The two writers run side by side: 8 threads each keep 16 cores
	 * busy, and every thread more holds a batch, a range of pages and
	 * a compressor (a few MB) while it works. */
	unsigned wj = mt_nr_cores(o->jobs) < CV_WRITER_JOBS
			      ? mt_nr_cores(o->jobs)
			      : CV_WRITER_JOBS;
	struct wr_perfetto_opts po = {.no_compress = o->no_compress,
				      .jobs = wj};
	struct cv_sqlite_job job = {
		.t = t, .f = &c->outs[OUT_SQLITE], .o.jobs = wj};
	struct wr_stats st = {0};
	double cpu0 = process_cpu_s(), pf_cpu = 0;
	pthread_t th;
	bool threaded = false;
	int rc = 0;

	if (o->sqlite) {
		threaded = !pthread_create(&th, NULL, cv_write_sqlite, &job);
		if (!threaded)
			cv_write_sqlite(&job);
	}
	if (o->perfetto) {
		stage_begin(c, MT_STAGE_PERFETTO, CLOCK_THREAD_CPUTIME_ID);
		if (o->split)
			rc = cv_write_parts(t, o, &po, &c->parts, &c->nr_parts,
					    &st.cpu_s, err, errlen);
		else
			rc = wr_perfetto_to(t, &c->outs[OUT_PERFETTO], &po, &st,
					    err, errlen);
		if (!o->split && !rc)
			rc = mt_outfile_sync(&c->outs[OUT_PERFETTO], err,
					     errlen);
		c->pool_cpu_s = st.cpu_s;
		stage_end(c);
		pf_cpu = c->r->stages[MT_STAGE_PERFETTO].cpu_s;
	}
	if (threaded)
		pthread_join(th, NULL);
	if (o->sqlite) {
		double rest = process_cpu_s() - cpu0 - pf_cpu;

		c->r->stages[MT_STAGE_SQLITE] = job.time;
		if (rest > job.time.cpu_s)
			c->r->stages[MT_STAGE_SQLITE].cpu_s = rest;
		if (o->on_stage)
			o->on_stage(o->ctx, MT_STAGE_SQLITE);
	}
	/* The outputs belong together: one that failed keeps the others
	 * from replacing what was there before. */
	if (rc)
		return rc;
	if (o->sqlite && job.rc) {
		c->r->failed = MT_STAGE_SQLITE;
		return mt_err(err, errlen, job.rc < 0 ? job.rc : -EIO, "%s",
			      job.err);
	}
	return 0;
}

/* Every output renamed into place, or none. */
static int commit(struct conv *c, char *err, size_t errlen)
{
	const struct mt_convert_opts *o = c->o;
	/* Only the outputs written, in order, without gaps. */
	struct mt_outfile *done = calloc(NR_OUTS + c->nr_parts, sizeof(*done));
	size_t n = 0;
	int rc;

	if (!done)
		return cv_step_failed(-ENOMEM, o->capture,
				      "committing the outputs", err, errlen);
	for (size_t i = 0; i < c->nr_outs; i++)
		if (c->outs[i].path)
			done[n++] = c->outs[i];
	for (size_t i = 0; i < c->nr_parts; i++)
		done[n++] = c->parts[i];
	/* A signal now would find some outputs renamed and others not: the
	 * caller holds it until all are in place (or all gone). */
	if (o->on_commit)
		o->on_commit(o->ctx, true);
	tell_outputs(c, NULL, 0, false);
	tell_outputs(c, NULL, 0, true);
	memset(c->outs, 0, sizeof(c->outs));
	c->nr_outs = 0;
	free(c->parts);
	c->parts = NULL;
	c->nr_parts = 0;
	rc = mt_outfile_commit_all(done, n, err, errlen);
	if (o->on_commit)
		o->on_commit(o->ctx, false);
	free(done);
	return rc;
}

int mt_convert(const struct mt_convert_opts *o, struct mt_convert_result *r,
	       char *err, size_t errlen)
{
	struct conv c = {.o = o, .r = r};
	struct mt_trace *t = &r->trace;
	struct seg_all *segs = NULL;
	struct seg_pipe *sp = NULL;
	const clockid_t process = CLOCK_PROCESS_CPUTIME_ID;
	int rc;

	stage_begin(&c, MT_STAGE_OUTPUTS, process);
	if ((rc = begin_outputs(&c, err, errlen)))
		goto out;
	stage_end(&c);
	stage_begin(&c, MT_STAGE_READ, process);
	if ((rc = read_capture(&c, &segs, &sp, err, errlen)))
		goto out;
	stage_end(&c);
	stage_begin(&c, MT_STAGE_DECODE, process);
	{
		int drc = dec_run(c.dc, err, errlen), prc = seg_pipe_end(sp);

		sp = NULL;
		if ((rc = drc))
			goto out;
		if ((rc = prc)) {
			cv_step_failed(rc, o->capture, "building the call tree",
				       err, errlen);
			goto out;
		}
	}
	stage_end(&c);
	stage_begin(&c, MT_STAGE_SEGMENTS, process);
	{
		size_t nr;
		struct dec_thread *th = dec_threads(c.dc, &nr);

		if ((rc = seg_all_finish(segs, th, nr, err, errlen)))
			goto out;
	}
	r->build_threads = seg_all_par_threads(segs);
	seg_all_par_stats(segs, &r->build_pieces, &r->build_joined_events,
			  &r->build_rebuilt);
	{
		double b = seg_all_par_busiest_cpu(segs);
		struct mt_convert_time *d = &r->stages[MT_STAGE_DECODE];

		d->own_cpu_s = d->own_cpu_s > b ? d->own_cpu_s : b;
	}
	seg_all_free(segs);
	segs = NULL;
	stage_end(&c);
	if (!o->no_stitch) {
		struct stitch_opts so = {.unstitched = warn_unstitched,
					 .ctx = (void *)o,
					 .code = img_reach_of(dec_image(c.dc)),
					 .jobs = mt_nr_cores(o->jobs)};

		stage_begin(&c, MT_STAGE_STITCH, process);
		if ((rc = stitch_trace(t, &c.ends, &so, err, errlen)))
			goto out;
		seg_ends_free(&c.ends);
		stage_end(&c);
	}
	if ((rc = cv_check_tid_trace(t, o, err, errlen)) ||
	    (rc = img_short_of_memory(dec_image(c.dc), err, errlen)))
		goto out;
	if (o->window || o->between) {
		stage_begin(&c, MT_STAGE_REGIONS, process);
		if ((rc = cut(&c, err, errlen)))
			goto out;
		stage_end(&c);
	}
	if (o->text) {
		stage_begin(&c, MT_STAGE_TEXT, process);
		rc = c.out_names[OUT_TEXT] ? wr_text_to(t, &c.outs[OUT_TEXT],
							NULL, err, errlen)
					   : wr_text(t, "-", NULL, err, errlen);
		if (rc)
			goto out;
		stage_end(&c);
	}
	if (o->perfetto && !o->split)
		cv_warn_big(t, o);
	if ((rc = write_both(&c, err, errlen)))
		goto out;
	stage_begin(&c, MT_STAGE_COMMIT, process);
	if ((rc = commit(&c, err, errlen)))
		goto out;
	stage_end(&c);
	{
		const struct dec_stats *ds = dec_stats(c.dc);

		r->aux_bytes = ds->aux_bytes;
		r->pieces = ds->pieces;
		r->joined = ds->joined;
		r->waits = ds->waits;
		r->dec_threads = ds->threads;
		dec_span(c.dc, &r->first, &r->last);
		r->nr_missing = dec_nr_missing(c.dc);
	}
out:
	stage_end(&c);
	tell_outputs(&c, NULL, 0, false);
	for (size_t i = 0; i < c.nr_outs; i++)
		mt_outfile_abort(&c.outs[i]);
	tell_outputs(&c, NULL, 0, true);
	for (size_t i = 0; i < c.nr_parts; i++)
		mt_outfile_abort(&c.parts[i]);
	free(c.parts);
	seg_pipe_end(sp);
	seg_all_free(segs);
	seg_ends_free(&c.ends);
	dec_free(c.dc);
	/* A callee that failed without a code still failed. */
	if (rc > 0)
		rc = -EIO;
	return rc;
}
