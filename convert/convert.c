/* SPDX-License-Identifier: MIT */
/*
 * The conversion, step by step:
 *
 *   outputs begun -> decode (pass 1) -> segments -> stitch (pass 2) ->
 *   hits -> regions -> text, Perfetto | SQLite -> commit
 */
#include "convert/convert.h"

#include "decode/decode.h"
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "util/err.h"
#include "writers/writers.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

const char *mt_convert_stage_name(enum mt_convert_stage s)
{
	static const char *const names[MT_STAGE_NR] = {
		[MT_STAGE_OUTPUTS] = "outputs",
		[MT_STAGE_READ] = "read",
		[MT_STAGE_DECODE] = "decode",
		[MT_STAGE_SEGMENTS] = "segments",
		[MT_STAGE_STITCH] = "stitch",
		[MT_STAGE_HITS] = "hits",
		[MT_STAGE_REGIONS] = "regions",
		[MT_STAGE_TEXT] = "text",
		[MT_STAGE_PERFETTO] = "perfetto",
		[MT_STAGE_SQLITE] = "sqlite",
		[MT_STAGE_COMMIT] = "commit",
	};

	return (unsigned)s < MT_STAGE_NR ? names[s] : "?";
}

void mt_convert_result_init(struct mt_convert_result *r)
{
	memset(r, 0, sizeof(*r));
	mt_trace_init(&r->trace);
}

void mt_convert_result_free(struct mt_convert_result *r)
{
	mt_trace_free(&r->trace);
}

/*
 * The line for a callee that writes none: those that return only 0 or
 * -ENOMEM (segments' builders, the hits, the cuts of regions/) have run
 * out of memory in step; any other code is said as what it is.
 */
static int step_failed(int rc, const char *capture, const char *step, char *err,
		       size_t errlen)
{
	if (rc == -ENOMEM)
		return mt_err(err, errlen, rc, "%s: out of memory %s", capture,
			      step);
	return mt_err(err, errlen, rc < 0 ? rc : -EIO, "%s: %s: %s", capture,
		      step, strerror(rc < 0 ? -rc : EIO));
}

/*
 * Every --tid names a thread of the capture: one that is not there would
 * make an empty trace of a typo.  The line names those it has.
 */
static int check_tids(struct dec_capture *dc, const struct mt_convert_opts *o,
		      char *err, size_t errlen)
{
	size_t n = dec_nr_threads(dc), nr = 0, at;
	uint32_t *have = malloc((n ? n : 1) * sizeof(*have));

	if (!have)
		return step_failed(-ENOMEM, o->capture, "checking --tid", err,
				   errlen);
	/* A thread may be there twice: seen by its trace before its
	 * process was known. */
	for (size_t k = 0; k < n; k++)
		if (dec_thread_at(dc, k)->tid != (uint32_t)-1)
			have[nr++] = dec_thread_at(dc, k)->tid;
	qsort(have, nr, sizeof(*have), mt_cmp_u32);
	for (size_t i = 0; i < o->nr_tids; i++) {
		if (nr &&
		    bsearch(&o->tids[i], have, nr, sizeof(*have), mt_cmp_u32))
			continue;
		at = (size_t)snprintf(err, errlen,
				      "%s: --tid %u: no such thread in the "
				      "capture; its threads:",
				      o->capture, o->tids[i]);
		for (size_t k = 0, shown = 0; k < nr && at < errlen; k++) {
			if (k && have[k] == have[k - 1])
				continue;
			if (shown++ == 20) {
				snprintf(err + at, errlen - at, " ...");
				break;
			}
			at += (size_t)snprintf(err + at, errlen - at, " %u",
					       have[k]);
		}
		if (!nr && at < errlen)
			snprintf(err + at, errlen - at, " none");
		free(have);
		return -ENOENT;
	}
	free(have);
	return 0;
}

/* The trace has a slice of a thread --tid chose. */
static bool any_slice(const struct mt_trace *t)
{
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].nr_slices)
			return true;
	return false;
}

/*
 * Peak memory per AUX byte, measured on dense synthetic captures (39
 * bytes; real ones with longer blocks need less: 15 on the benchmark):
 * decoding keeps every slice, about 110 bytes each, until the writers
 * are done.
 */
#define PEAK_BYTES_PER_AUX_BYTE 40
#define PEAK_FIXED_BYTES	(64ull << 20)

/* What this process may still use: MemAvailable, or less under a
 * ulimit -v or -d.  0 when unknown. */
static uint64_t memory_available(void)
{
	uint64_t avail = 0;
	struct rlimit rl;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
				avail = (uint64_t)kb * 1024;
				break;
			}
		}
		fclose(f);
	}
	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (!avail || rl.rlim_cur < avail))
		avail = rl.rlim_cur;
	if (!getrlimit(RLIMIT_DATA, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (!avail || rl.rlim_cur < avail))
		avail = rl.rlim_cur;
	return avail;
}

/* Said before decoding, rather than found by the kernel's OOM killer
 * after minutes of it. */
static int check_memory(struct dec_capture *dc, const struct mt_convert_opts *o,
			char *err, size_t errlen)
{
	uint64_t aux = dec_aux_bytes(dc);
	uint64_t need = aux * PEAK_BYTES_PER_AUX_BYTE + PEAK_FIXED_BYTES;
	uint64_t avail = memory_available();

	if (o->max_memory && (!avail || o->max_memory < avail))
		avail = o->max_memory;

	if (o->no_memory_check || !avail || need <= avail)
		return 0;
	snprintf(err, errlen,
		 "%s: %.1f MB of trace%s needs about %.1f GB of memory to "
		 "convert and %.1f GB is available; convert some threads "
		 "with --tid TID,... (mt-convert --info lists them), or try "
		 "anyway with --no-memory-check",
		 o->capture, (double)aux / 1e6,
		 o->nr_tids ? " of those threads" : "", (double)need / 1e9,
		 (double)avail / 1e9);
	return -ENOMEM;
}

/* The SQLite database is written on a second thread while the Perfetto
 * trace is written on the first: both only read the model. */
struct sqlite_job {
	const struct mt_trace *t;
	struct mt_outfile *f;
	int rc;
	char err[512];
};

static void *write_sqlite(void *arg)
{
	struct sqlite_job *j = arg;

	j->rc = wr_sqlite_to(j->t, j->f, NULL, j->err, sizeof(j->err));
	if (!j->rc)
		j->rc = mt_outfile_sync(j->f, j->err, sizeof(j->err));
	return NULL;
}

enum { OUT_PERFETTO, OUT_SQLITE, OUT_TEXT, NR_OUTS };

static void tell_outputs(const struct mt_convert_opts *o,
			 const struct mt_outfile *f, size_t n, bool parts)
{
	if (o->on_outputs)
		o->on_outputs(o->ctx, f, n, parts);
}

static void stage_done(const struct mt_convert_opts *o, enum mt_convert_stage s)
{
	if (o->on_stage)
		o->on_stage(o->ctx, s);
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

/*
 * split: the trace cut into parts (regions/), each begun as an output
 * of its own and written and synced in turn; committed with the other
 * outputs by the caller, which aborts them on failure.
 */
static int write_parts(const struct mt_trace *t,
		       const struct mt_convert_opts *o,
		       const struct wr_perfetto_opts *po,
		       struct mt_outfile **parts, size_t *nr_parts, char *err,
		       size_t errlen)
{
	uint64_t *cuts = NULL;
	size_t n = 0;
	int rc = rg_split_plan(t, o->split, &cuts, &n, err, errlen);

	/* Its other failure, -ERANGE, has its line. */
	if (rc == -ENOMEM)
		step_failed(rc, o->capture, "planning the --split parts", err,
			    errlen);
	if (!rc && !(*parts = calloc(n + 1, sizeof(**parts))))
		rc = step_failed(-ENOMEM, o->capture,
				 "planning the --split parts", err, errlen);
	for (size_t k = 0; !rc && k < n; k++) {
		struct mt_trace view;
		char *path = part_path(o->perfetto, k + 1);

		if (!path) {
			rc = step_failed(-ENOMEM, o->capture,
					 "naming a --split part", err, errlen);
			break;
		}
		rc = mt_outfile_begin(&(*parts)[k], path, err, errlen);
		free(path);
		if (rc)
			break;
		*nr_parts = k + 1;
		tell_outputs(o, *parts, *nr_parts, true);
		rc = rg_part(t, cuts[k], cuts[k + 1], &view);
		if (rc) {
			step_failed(rc, o->capture, "cutting a --split part",
				    err, errlen);
			break;
		}
		rc = wr_perfetto_to(&view, &(*parts)[k], po, NULL, err, errlen);
		rg_part_free(&view);
		if (!rc)
			rc = mt_outfile_sync(&(*parts)[k], err, errlen);
	}
	free(cuts);
	return rc;
}

/* One line when the trace is more than the UI loads, with the ways
 * through. */
static void warn_big(const struct mt_trace *t, const struct mt_convert_opts *o)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	if (o->warn && o->ui_max_slices && n > o->ui_max_slices)
		fprintf(o->warn,
			"mt-convert: %s: %" PRIu64 " slices, more than the "
			"Perfetto UI loads on a typical machine (about "
			"%" PRIu64 "): open it through trace_processor "
			"--httpd, or write it in parts with --split %" PRIu64
			"\n",
			o->perfetto, n, o->ui_max_slices, o->ui_max_slices);
}

/* Stitching asks the decoder's code whether a frame can be seen again,
 * and whether it can make a call. */
static bool never_reaches(void *capture, uint32_t pid, uint64_t from,
			  uint64_t to, bool ret_to)
{
	return dec_never_reaches(capture, pid, from, to, ret_to);
}

static enum stitch_calls calls_to(void *capture, uint32_t pid, uint64_t from,
				  uint64_t callee)
{
	switch (dec_calls_to(capture, pid, from, callee)) {
	case DEC_CALLS_NEVER:
		return STITCH_CALLS_NEVER;
	case DEC_CALLS_SURE:
		return STITCH_CALLS_SURE;
	default:
		return STITCH_CALLS_MAYBE;
	}
}

/* Joins that do not make a tree are our fault, not the capture's: the
 * thread is shown unstitched rather than the conversion failed. */
static void warn_unstitched(void *ctx, uint32_t tid, const char *why)
{
	const struct mt_convert_opts *o = ctx;

	if (o->warn)
		fprintf(o->warn,
			"mt-convert: %s: stitching made an inconsistent tree "
			"(%s: a bug worth reporting); thread %u left "
			"unstitched\n",
			o->capture, why, tid);
}

int mt_convert(const struct mt_convert_opts *o, struct mt_convert_result *r,
	       char *err, size_t errlen)
{
	struct dec_opts dopts = {0};
	struct seg_opts sopts = {0};
	struct dec_capture *dc = NULL;
	struct seg_all *segs = NULL;
	struct seg_pipe *sp = NULL;
	struct seg_ends_table ends = {0};
	struct mt_trace *t = &r->trace;
	struct mt_outfile outs[NR_OUTS] = {0};
	const char *out_names[NR_OUTS] = {0};
	size_t nr_outs = 0;
	struct mt_outfile *parts = NULL;
	size_t nr_parts = 0;
	int rc = 0;

	/* With split the parts are written instead, named after it. */
	out_names[OUT_PERFETTO] = o->split ? NULL : o->perfetto;
	out_names[OUT_SQLITE] = o->sqlite;
	out_names[OUT_TEXT] = o->text && strcmp(o->text, "-") ? o->text : NULL;
	/* Every output is created (empty, under its temporary name) before
	 * the conversion, so that one that cannot be written is found now,
	 * and a signal from here on takes them away. */
	r->failed = MT_STAGE_OUTPUTS;
	tell_outputs(o, outs, 0, false);
	for (size_t i = 0; i < NR_OUTS; i++) {
		if (!out_names[i])
			continue;
		/* The database is written with seeks; the trace and the
		 * text go out in order, into a pipe or a device too. */
		rc = i == OUT_SQLITE
			     ? mt_outfile_begin(&outs[i], out_names[i], err,
						errlen)
			     : mt_outfile_begin_stream(&outs[i], out_names[i],
						       err, errlen);
		if (rc)
			goto out;
		nr_outs = i + 1;
		tell_outputs(o, outs, nr_outs, false);
	}
	dopts.binary_dirs = o->binary_dirs;
	dopts.nr_binary_dirs = o->nr_binary_dirs;
	dopts.debug_root = o->debug_root;
	dopts.jit_dir = o->jit_dir;
	dopts.progress = o->progress;
	dopts.progress_ctx = o->ctx;
	dopts.warn = o->warn;
	dopts.tids = o->tids;
	dopts.nr_tids = o->nr_tids;
	dopts.jobs = o->jobs;
	dopts.piece_size = o->piece_size;
	dopts.no_inline = o->no_inline;
	sopts.no_final_stack = o->no_final_stack;

	r->failed = MT_STAGE_READ;
	if ((rc = dec_open(&dc, o->capture, &dopts, err, errlen)))
		goto out;
	snprintf(t->recorded_by, sizeof(t->recorded_by), "%s",
		 dec_recorded_by(dc));
	if ((rc = check_tids(dc, o, err, errlen)))
		goto out;
	if ((rc = check_memory(dc, o, err, errlen)))
		goto out;
	/* The segments' ends are kept for stitching only. */
	if ((rc = seg_all_new(&segs, dc, t, o->no_stitch ? NULL : &ends,
			      &sopts))) {
		step_failed(rc, o->capture, "building the call tree", err,
			    errlen);
		goto out;
	}
	/* Building on a core of its own while this thread decodes, or on
	 * this one when no thread can be had.  Where the decode runs on
	 * threads of its own, this thread only hands their events over and
	 * builds from them itself: a third thread would only copy each
	 * event once more (on the bench capture, 8% more time and 7% more
	 * CPU with it). */
	if (dec_runs_aside(dc) || seg_pipe_start(&sp, segs))
		dec_set_sink(dc, seg_all_sink, segs);
	else
		dec_set_sink(dc, seg_pipe_sink, sp);
	stage_done(o, MT_STAGE_READ);
	r->failed = MT_STAGE_DECODE;
	{
		int drc = dec_run(dc, err, errlen), prc = seg_pipe_end(sp);

		sp = NULL;
		stage_done(o, MT_STAGE_DECODE);
		if ((rc = drc))
			goto out;
		if ((rc = prc)) {
			step_failed(rc, o->capture, "building the call tree",
				    err, errlen);
			goto out;
		}
	}
	r->failed = MT_STAGE_SEGMENTS;
	if ((rc = seg_all_finish(segs, err, errlen)))
		goto out;
	seg_all_free(segs);
	segs = NULL;
	stage_done(o, MT_STAGE_SEGMENTS);
	if (!o->no_stitch) {
		struct stitch_opts so = {.unstitched = warn_unstitched,
					 .ctx = (void *)o,
					 .never_reaches = never_reaches,
					 .calls_to = calls_to,
					 .code_ctx = dc};

		r->failed = MT_STAGE_STITCH;
		if ((rc = stitch_trace(t, &ends, &so, err, errlen)))
			goto out;
		seg_ends_free(&ends);
		stage_done(o, MT_STAGE_STITCH);
	}
	r->failed = MT_STAGE_HITS;
	if ((rc = seg_add_hits(dc, t))) {
		step_failed(rc, o->capture, "adding the trigger hits", err,
			    errlen);
		goto out;
	}
	/* A filter that leaves nothing says why, rather than replace the
	 * outputs with an empty trace. */
	if (o->nr_tids && !any_slice(t)) {
		int at = snprintf(err, errlen, "%s: --tid", o->capture);

		for (size_t i = 0; i < o->nr_tids && at < (int)errlen; i++)
			at += snprintf(err + at, errlen - (size_t)at, "%s%u",
				       i ? "," : " ", o->tids[i]);
		if (at < (int)errlen)
			snprintf(err + at, errlen - (size_t)at,
				 ": the capture has no trace of th%s",
				 o->nr_tids == 1 ? "at thread" : "ose threads");
		rc = -ENOENT;
		goto out;
	}
	stage_done(o, MT_STAGE_HITS);
	r->failed = MT_STAGE_REGIONS;
	if (o->window) {
		if ((rc = rg_keep_time(t, o->window, &r->rg))) {
			step_failed(rc, o->capture,
				    "cutting the trace to --time", err, errlen);
			goto out;
		}
		if (!r->rg.regions && r->rg.slices_before) {
			snprintf(err, errlen,
				 "%s: --time %s: the window starts after the "
				 "trace ends (it lasts %.3f ms)",
				 o->capture, o->time,
				 (double)(r->rg.end - r->rg.first) / 1e6);
			rc = -ERANGE;
			goto out;
		}
		if (!r->rg.regions) {
			snprintf(err, errlen,
				 "%s: --time %s: the trace has no slices",
				 o->capture, o->time);
			rc = -ENOENT;
			goto out;
		}
	}
	if (o->between) {
		/* The name the trace lacks, START or STOP. */
		bool stop = false;

		if ((rc = rg_keep_between(t, o->between, o->until, &r->rg))) {
			step_failed(rc, o->capture,
				    "cutting the trace to --between", err,
				    errlen);
			goto out;
		}
		stop = r->rg.start_calls && !r->rg.stop_calls;
		if (!r->rg.regions) {
			snprintf(err, errlen,
				 "%s: %s %s: no call of %s in the trace%s",
				 o->capture, stop ? "--until" : "--between",
				 stop ? o->until : o->between,
				 stop ? o->until : o->between,
				 o->nr_tids ? " of the threads chosen" : "");
			rc = -ENOENT;
			goto out;
		}
	}
	if (o->window || o->between)
		stage_done(o, MT_STAGE_REGIONS);
	if (o->text) {
		r->failed = MT_STAGE_TEXT;
		rc = out_names[OUT_TEXT]
			     ? wr_text_to(t, &outs[OUT_TEXT], NULL, err, errlen)
			     : wr_text(t, "-", NULL, err, errlen);
		if (rc)
			goto out;
		stage_done(o, MT_STAGE_TEXT);
	}
	if (o->perfetto && !o->split)
		warn_big(t, o);
	{
		struct wr_perfetto_opts po = {.no_compress = o->no_compress};
		struct sqlite_job job = {.t = t, .f = &outs[OUT_SQLITE]};
		pthread_t th;
		bool threaded = false;

		r->failed = MT_STAGE_PERFETTO;
		if (o->sqlite) {
			threaded =
				!pthread_create(&th, NULL, write_sqlite, &job);
			if (!threaded)
				write_sqlite(&job);
		}
		/* Each output is synced as soon as it is written, while the
		 * other is still being written, rather than both after. */
		if (o->perfetto && !o->split)
			rc = wr_perfetto_to(t, &outs[OUT_PERFETTO], &po, NULL,
					    err, errlen);
		else if (o->split)
			rc = write_parts(t, o, &po, &parts, &nr_parts, err,
					 errlen);
		if (o->perfetto && !o->split && !rc)
			rc = mt_outfile_sync(&outs[OUT_PERFETTO], err, errlen);
		if (threaded)
			pthread_join(th, NULL);
		if (o->perfetto)
			stage_done(o, MT_STAGE_PERFETTO);
		if (o->sqlite)
			stage_done(o, MT_STAGE_SQLITE);
		/* The outputs belong together: one that failed keeps the
		 * others from replacing what was there before. */
		if (rc)
			goto out;
		if (o->sqlite && job.rc) {
			r->failed = MT_STAGE_SQLITE;
			snprintf(err, errlen, "%s", job.err);
			rc = job.rc;
			goto out;
		}
	}
	{
		/* Only the outputs written, in order, without gaps. */
		struct mt_outfile *done =
			calloc(NR_OUTS + nr_parts, sizeof(*done));
		size_t n = 0;

		r->failed = MT_STAGE_COMMIT;
		if (!done) {
			rc = step_failed(-ENOMEM, o->capture,
					 "committing the outputs", err, errlen);
			goto out;
		}
		for (size_t i = 0; i < nr_outs; i++)
			if (outs[i].path)
				done[n++] = outs[i];
		for (size_t i = 0; i < nr_parts; i++)
			done[n++] = parts[i];
		/* A signal now would find some outputs renamed and others
		 * not: the caller holds it until all are in place (or all
		 * gone). */
		if (o->on_commit)
			o->on_commit(o->ctx, true);
		tell_outputs(o, NULL, 0, false);
		tell_outputs(o, NULL, 0, true);
		memset(outs, 0, sizeof(outs));
		nr_outs = 0;
		free(parts);
		parts = NULL;
		nr_parts = 0;
		rc = mt_outfile_commit_all(done, n, err, errlen);
		if (o->on_commit)
			o->on_commit(o->ctx, false);
		free(done);
		if (rc)
			goto out;
		stage_done(o, MT_STAGE_COMMIT);
	}
	{
		const struct dec_stats *ds = dec_stats(dc);

		r->aux_bytes = ds->aux_bytes;
		r->pieces = ds->pieces;
		r->joined = ds->joined;
		r->dec_threads = ds->threads;
		dec_span(dc, &r->first, &r->last);
		r->nr_missing = dec_nr_missing(dc);
	}
out:
	tell_outputs(o, NULL, 0, false);
	for (size_t i = 0; i < nr_outs; i++)
		mt_outfile_abort(&outs[i]);
	tell_outputs(o, NULL, 0, true);
	for (size_t i = 0; i < nr_parts; i++)
		mt_outfile_abort(&parts[i]);
	free(parts);
	seg_all_free(segs);
	seg_ends_free(&ends);
	dec_free(dc);
	/* A callee that failed without a code still failed. */
	if (rc > 0)
		rc = -EIO;
	return rc;
}
