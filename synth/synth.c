/* SPDX-License-Identifier: MIT */
/*
 * synth_generate: program, walks, capture file and truth.tsv.
 *
 * The capture is what `perf record -e intel_pt//u` writes for a per-thread
 * recording (research/pt-formats.md §3.5): one intel_pt attr with ids,
 * AUXTRACE_INFO, TIME_CONV, COMM/FORK/MMAP2 sideband timed before the
 * trace, one AUXTRACE per thread whose reference is the TSC at the end of
 * the window (perf 6.1 crashes on 0), and the AUXTRACE, BUILD_ID and
 * CPUID features.
 */
#include "capture/capture.h"
#include "perfdata/perfdata.h"
#include "synth/sched.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The synthetic machine: a 2.4 GHz TSC, 24 MHz crystal clock. */
#define SYNTH_PMU_TYPE	 8
#define SYNTH_NONTURBO	 24
#define SYNTH_TSC_CTC_N	 200
#define SYNTH_TSC_CTC_D	 2
#define SYNTH_TIME_SHIFT 31
#define SYNTH_TIME_MULT	 894784853u /* 2^31 / 2.4 */
#define SYNTH_START_TSC	 0x0000123400000000ull
#define SYNTH_PID	 4242

void synth_opts_init(struct synth_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->branches = 100000;
	o->threads = 1;
	o->timing = PTENC_MTC;
	o->psb_period = 3;
	o->mtc_period = 3;
	o->deep = true;
	o->cc = "cc";
}

static uint64_t pt_config_bits(const struct synth_opts *o)
{
	uint64_t c = 1 | (1ull << 13) | (1ull << 10); /* pt, branch, tsc */

	if (o->timing != PTENC_TSC)
		c |= (1ull << 9) | ((uint64_t)o->mtc_period << 14);
	if (o->timing == PTENC_CYC)
		c |= 1ull << 1; /* cyc, cyc_thresh 0 */
	if (o->noretcomp)
		c |= 1ull << 11;
	c |= (uint64_t)o->psb_period << 24;
	return c;
}

static void fill_pt_info(struct pd_pt_info *pt, const struct synth_opts *o)
{
	memset(pt, 0, sizeof(*pt));
	pt->pmu_type = SYNTH_PMU_TYPE;
	pt->time_shift = SYNTH_TIME_SHIFT;
	pt->time_mult = SYNTH_TIME_MULT;
	pt->time_zero = 0;
	pt->cap_user_time_zero = true;
	capfile_pt_format(pt);
	/* 3: SWITCH_CPU_WIDE; 2: SWITCH, from the event's context_switch */
	pt->have_sched_switch = !o->cpus ? 0 : o->task_switches ? 2 : 3;
	pt->snapshot_mode = o->start_depth > 0;
	pt->per_cpu_mmaps = o->per_cpu;
	pt->tsc_ctc_n = SYNTH_TSC_CTC_N;
	pt->tsc_ctc_d = SYNTH_TSC_CTC_D;
	pt->have_max_nonturbo = true;
	pt->max_nonturbo_ratio = SYNTH_NONTURBO;
}

static const char *flag_names[] = {"clipped_start", "clipped_end", "tail",
				   "tail_out",	    "unwound",	   "syscall",
				   "untraced"};

static const char *row_name(const struct program *p, const struct truth_row *r)
{
	if (r->func == TRUTH_SYSCALL_FUNC)
		return "[syscall]";
	if (r->func == TRUTH_UNTRACED_FUNC)
		return "[untraced]";
	if (r->func >= TRUTH_KERNEL_FUNC)
		return kprog_func_name(r->func);
	return p->funcs[r->func].name;
}

static int write_truth(const char *path, const struct program *p,
		       struct walk_thread *th, unsigned nth,
		       const struct pd_pt_info *pt, char *err, size_t errlen)
{
	struct mt_outfile out;
	FILE *o = mt_outfile_fopen(&out, path, err, errlen);

	if (!o)
		return -1;
	fprintf(o, "tid\tdepth\tname\tstart_ns\tend_ns\tflags\n");
	for (unsigned t = 0; t < nth; t++) {
		for (size_t i = 0; i < th[t].nr_rows; i++) {
			const struct truth_row *r = &th[t].rows[i];
			const char *name = row_name(p, r);
			bool any = false;
			fprintf(o, "%u\t%u\t%s\t%llu\t%llu\t", SYNTH_PID + t,
				r->depth, name,
				(unsigned long long)pd_tsc_to_perf_time(
					r->start, pt),
				(unsigned long long)pd_tsc_to_perf_time(r->end,
									pt));
			for (unsigned b = 0; b < 7; b++) {
				if (!(r->flags & (1u << b)))
					continue;
				fprintf(o, "%s%s", any ? "," : "",
					flag_names[b]);
				any = true;
			}
			fputs(any ? "\n" : "-\n", o);
		}
	}
	return mt_outfile_commit(&out, err, errlen);
}

/*
 * gaps.tsv: one line per injected overflow, in time order per thread.
 * A call or return of truth.tsv was lost in a gap when after_ns < its
 * time <= end_ns: every instruction takes at least 3 TSC ticks (1.25 ns),
 * so distinct instructions never share a perf-time nanosecond and the
 * bounds separate them exactly.
 */
static int write_gaps(const char *path, struct walk_thread *th, unsigned nth,
		      const struct pd_pt_info *pt, char *err, size_t errlen)
{
	struct mt_outfile out;
	FILE *o = mt_outfile_fopen(&out, path, err, errlen);

	if (!o)
		return -1;
	fprintf(o, "tid\tfirst_branch\tlast_branch\tafter_ns\tend_ns\t"
		   "resume_ns\tstop_ip\tresume_ip\n");
	for (unsigned t = 0; t < nth; t++) {
		for (size_t i = 0; i < th[t].nr_gaps; i++) {
			const struct walk_gap *g = &th[t].gap_list[i];
			fprintf(o,
				"%u\t%llu\t%llu\t%llu\t%llu\t%llu\t%#llx\t"
				"%#llx\n",
				SYNTH_PID + t,
				(unsigned long long)g->first_branch,
				(unsigned long long)g->last_branch,
				(unsigned long long)pd_tsc_to_perf_time(
					g->after_tsc, pt),
				(unsigned long long)pd_tsc_to_perf_time(
					g->end_tsc, pt),
				(unsigned long long)pd_tsc_to_perf_time(
					g->resume_tsc, pt),
				(unsigned long long)g->stop_ip,
				(unsigned long long)g->resume_ip);
		}
	}
	return mt_outfile_commit(&out, err, errlen);
}

/* A switch record or an ITRACE_START, to be written in time order. */
struct side {
	uint64_t tsc;
	const struct sched_switch *sw; /* NULL: ITRACE_START */
	uint32_t cpu, thread;
};

static int cmp_side(const void *a, const void *b)
{
	const struct side *x = a, *y = b;

	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	return (x->sw != NULL) - (y->sw != NULL);
}

/*
 * Per CPU: ITRACE_START for the thread its stream begins with, then every
 * SWITCH_CPU_WIDE (the idle task is pid 0), all in time order.
 */
static int write_switches(struct pd_writer *w, const struct sched_result *sr,
			  const struct pd_pt_info *pt, struct pd_sample_id sid,
			  bool task)
{
	size_t n = 0, cap = sr->nr_sw + sr->nr_cpus;
	struct side *v = calloc(cap ? cap : 1, sizeof(*v));
	int rc = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t c = 0; c < sr->nr_cpus; c++)
		if (sr->cpus[c].first != UINT32_MAX)
			v[n++] = (struct side){sr->cpus[c].start_tsc - 50, NULL,
					       c, sr->cpus[c].first};
	for (size_t i = 0; i < sr->nr_sw; i++)
		v[n++] = (struct side){sr->sw[i].tsc, &sr->sw[i], sr->sw[i].cpu,
				       sr->sw[i].thread};
	qsort(v, n, sizeof(*v), cmp_side);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct sched_switch *x = v[i].sw;
		uint32_t tid =
			v[i].thread == SCHED_IDLE ? 0 : SYNTH_PID + v[i].thread;
		uint32_t pid = v[i].thread == SCHED_IDLE ? 0 : SYNTH_PID;
		struct pd_sample_id s = sid;

		s.pid = pid;
		s.tid = tid;
		s.cpu = v[i].cpu;
		s.id = v[i].cpu + 1;
		s.time = pd_tsc_to_perf_time(v[i].tsc, pt);
		if (!x) {
			struct pd_itrace_start is = {.pid = pid, .tid = tid};

			rc = pd_write_itrace_start(w, &is, &s);
		} else if (task && x->thread == SCHED_IDLE) {
			continue; /* the idle task is not ours */
		} else {
			bool idle = x->other == SCHED_IDLE;
			struct pd_switch sw = {
				.out = x->out,
				.preempt = x->out && x->thread != SCHED_IDLE,
				.cpu_wide = !task,
				.next_prev_pid = idle ? 0 : SYNTH_PID,
				.next_prev_tid =
					idle ? 0 : SYNTH_PID + x->other};

			rc = pd_write_switch(w, &sw, &s);
		}
	}
	free(v);
	return rc;
}

static int write_capture(const char *path, const struct synth_opts *o,
			 const struct program *p, const struct kprog *kp,
			 struct walk_thread *th, const struct sched_result *sr,
			 const struct pd_pt_info *pt, char *err, size_t errlen)
{
	struct pd_writer *w = NULL;
	int rc;
	struct perf_event_attr attr;
	uint64_t ids[64];
	unsigned nth = o->threads, nids = sr ? sr->nr_cpus : nth;
	uint64_t t0 = pd_tsc_to_perf_time(SYNTH_START_TSC, pt) - 20000;
	struct pd_sample_id sid =
		capfile_sample_id(SYNTH_PID, SYNTH_PID, t0, 1);
	struct pd_ext_buf ext = {0};
	uint64_t page = 4096, end_tsc = 0;

	rc = pd_writer_open(&w, path, PD_WRITE_FILE, err, errlen);
	if (rc)
		goto pderr;
	/* As perf record opens it: disabled until the exec. */
	capfile_pt_attr(&attr, SYNTH_PMU_TYPE, pt_config_bits(o));
	attr.disabled = attr.enable_on_exec = attr.exclude_guest = 1;
	attr.context_switch = sr != NULL;
	attr.exclude_kernel = !o->kernel;
	for (unsigned i = 0; i < nids && i < 64; i++)
		ids[i] = i + 1;
	if (pd_writer_add_attr(w, &attr, ids, nids < 64 ? nids : 64))
		goto werr;

	{
		struct pd_time_conv tc = {.time_shift = SYNTH_TIME_SHIFT,
					  .time_mult = SYNTH_TIME_MULT,
					  .time_zero = 0,
					  .have_ext = true,
					  .cap_user_time_zero = true};
		if (pd_write_time_conv(w, &tc) ||
		    pd_write_auxtrace_info(w, pt, PD_PT_NR_FIXED, true))
			goto werr;
	}
	{
		struct pd_comm c = {.pid = SYNTH_PID,
				    .tid = SYNTH_PID,
				    .exec = true,
				    .comm = "prog"};
		struct pd_mmap m = {0};
		uint64_t lo = p->text_vaddr & ~(page - 1);
		uint64_t hi =
			(p->text_vaddr + p->text_size + page - 1) & ~(page - 1);
		if (pd_write_comm(w, &c, &sid))
			goto werr;
		m.pid = SYNTH_PID;
		m.tid = SYNTH_PID;
		m.start = lo;
		m.len = hi - lo;
		m.pgoff = p->text_offset & ~(page - 1);
		m.is_mmap2 = true;
		m.prot = 5;  /* PROT_READ | PROT_EXEC */
		m.flags = 2; /* MAP_PRIVATE */
		m.filename = p->path;
		sid.time += 1000;
		if (pd_write_mmap2(w, &m, &sid))
			goto werr;
	}
	if (kp) {
		/* The kernel's map as perf writes it, and (unless left
		 * out) what perf record --kcore keeps of it. */
		struct pd_sample_id ks = sid;

		ks.pid = UINT32_MAX;
		ks.tid = 0;
		if (kprog_write_mmap(kp, w, &ks))
			goto werr;
		if (!o->no_kernel_code && kprog_add_ext(kp, &ext))
			goto nomem;
	}
	for (unsigned t = 1; t < nth; t++) {
		struct pd_task fk = {.pid = SYNTH_PID,
				     .ppid = SYNTH_PID,
				     .tid = SYNTH_PID + t,
				     .ptid = SYNTH_PID,
				     .time = sid.time + t * 10};
		struct pd_comm c = {
			.pid = SYNTH_PID, .tid = SYNTH_PID + t, .comm = "prog"};
		struct pd_sample_id s2 = sid;
		s2.tid = SYNTH_PID + t;
		s2.time = fk.time;
		s2.id = t % nids + 1;
		if (pd_write_task(w, PERF_RECORD_FORK, &fk, &s2))
			goto werr;
		s2.time += 1;
		if (pd_write_comm(w, &c, &s2))
			goto werr;
	}
	/* Per-CPU recording: each CPU's stream says which thread it traces
	 * with ITRACE_START (thread t runs on CPU t, alone). */
	if (sr && write_switches(w, sr, pt, sid, o->task_switches))
		goto werr;
	for (unsigned t = 0; o->per_cpu && !sr && t < nth; t++) {
		struct pd_itrace_start is = {.pid = SYNTH_PID,
					     .tid = SYNTH_PID + t};
		struct pd_sample_id s3 = sid;

		s3.tid = SYNTH_PID + t;
		s3.cpu = t;
		s3.id = t + 1;
		s3.time = sid.time + 100 + t;
		if (pd_write_itrace_start(w, &is, &s3))
			goto werr;
	}
	if (pd_write_finished_round(w))
		goto werr;
	for (unsigned t = 0; t < nth; t++)
		if (th[t].window_end > end_tsc)
			end_tsc = th[t].window_end;
	for (unsigned c = 0; sr && c < sr->nr_cpus; c++) {
		struct pd_auxtrace a = {.size = sr->cpus[c].aux_len,
					.reference = end_tsc + 1000,
					.idx = c,
					.tid = UINT32_MAX,
					.cpu = c};
		if (sr->cpus[c].aux &&
		    pd_write_auxtrace(w, &a, sr->cpus[c].aux))
			goto werr;
	}
	for (unsigned t = 0; t < nth; t++) {
		struct pd_auxtrace a = {.size = th[t].aux_len,
					.offset = 0,
					.reference = end_tsc + 1000,
					.idx = t,
					.tid = o->per_cpu ? UINT32_MAX
							  : SYNTH_PID + t,
					.cpu = o->per_cpu ? t : UINT32_MAX};
		if (!sr && pd_write_auxtrace(w, &a, th[t].aux))
			goto werr;
		if (o->final_stack) {
			struct pd_ext_stack s = {.pid = SYNTH_PID,
						 .tid = SYNTH_PID + t,
						 .time = pd_tsc_to_perf_time(
							 th[t].window_end, pt),
						 .nr = th[t].nr_final_stack,
						 .ips = th[t].final_stack};
			if (pd_ext_add_stack(&ext, &s))
				goto nomem;
		}
	}
	if (pd_write_finished_round(w))
		goto werr;
	{
		struct pd_buildid b = {.pid = UINT32_MAX,
				       .misc = PERF_RECORD_MISC_USER,
				       .size = p->build_id_size,
				       .filename = p->path};
		memcpy(b.id, p->build_id, sizeof(b.id));
		if (p->build_id_size && pd_writer_add_buildid(w, &b))
			goto werr;
	}
	if (pd_writer_set_feature_string(w, PD_FEAT_CPUID,
					 "GenuineIntel,6,85,4") ||
	    pd_writer_set_feature_string(w, PD_FEAT_HOSTNAME, "mt-synth"))
		goto werr;
	if (ext.len &&
	    pd_writer_set_feature(w, PD_FEAT_MT_EXT, ext.data, ext.len))
		goto werr;
	pd_ext_buf_free(&ext);
	return pd_writer_finish(w, err, errlen);
nomem:
	pd_ext_buf_free(&ext);
	pd_writer_abort(w);
	return mt_err(err, errlen, -ENOMEM, "out of memory writing %s", path);
werr:
	rc = pd_writer_error(w, err, errlen);
	pd_writer_abort(w);
pderr:
	pd_ext_buf_free(&ext);
	return rc;
}

int synth_generate(const struct synth_opts *o, struct synth_stats *st,
		   char *err, size_t errlen)
{
	struct program prog;
	struct kprog *kp = NULL;
	struct rng r;
	struct walk_thread *th = NULL;
	struct walk_cfg *cfgs = NULL;
	struct sched_result sr;
	bool have_sr = false;
	struct pd_pt_info pt;
	char path[4200];
	int rc = -1;

	if (!o->threads || o->threads > 64) {
		snprintf(err, errlen, "--threads must be 1..64");
		return -1;
	}
	if (o->cpus && (!o->per_cpu || o->cpus > 64)) {
		snprintf(err, errlen, "--cpus must be 1..64, with --per-cpu");
		return -1;
	}
	if (o->psb_period > 15 || o->mtc_period > 15) {
		snprintf(err, errlen, "psb/mtc period must be 0..15");
		return -1;
	}
	if (mkdir(o->outdir, 0777) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", o->outdir, strerror(errno));
		return -1;
	}
	rng_seed(&r, o->seed);
	if (program_generate(&prog, &r, o->threads, o->deep, err, errlen))
		return -1;
	if (program_build(&prog, o->outdir, o->cc, err, errlen))
		goto out;
	if (o->kernel && kprog_build(&kp, o->outdir, o->cc, err, errlen))
		goto out;
	th = calloc(o->threads, sizeof(*th));
	if (!th) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	fill_pt_info(&pt, o);
	memset(st, 0, sizeof(*st));
	cfgs = calloc(o->threads, sizeof(*cfgs));
	if (!cfgs) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (unsigned t = 0; t < o->threads; t++) {
		cfgs[t] = (struct walk_cfg){
			.seed = o->seed * 1000003 + t,
			.branches = o->branches,
			.root = t,
			.start_depth = o->start_depth,
			.gap_every = o->gap_every,
			.gap_at = o->gap_at,
			.start_tsc = SYNTH_START_TSC + t * 977,
			.pt = {.timing = o->timing,
			       .noretcomp = o->noretcomp,
			       .psb_period = o->psb_period,
			       .mtc_period = o->mtc_period,
			       .tsc_ctc_ratio =
				       SYNTH_TSC_CTC_N / SYNTH_TSC_CTC_D,
			       .cbr = SYNTH_NONTURBO,
			       .tnt_max = (o->seed + t) % 3 ? 6 : 47,
			       .pad_chance = 8},
			.kernel = kp};
		if (!o->cpus &&
		    walk_thread_run(&prog, &cfgs[t], &th[t], err, errlen))
			goto out;
	}
	if (o->cpus) {
		if (sched_run(&prog, cfgs, th, o->threads, o->cpus, o->seed,
			      &sr, err, errlen))
			goto out;
		have_sr = true;
		st->switches = sr.switches;
		st->lost_switches = sr.lost_switches;
		for (unsigned c = 0; c < sr.nr_cpus; c++)
			st->packets_bytes += sr.cpus[c].aux_len;
	}
	for (unsigned t = 0; t < o->threads; t++) {
		st->branches += th[t].branches;
		st->packets_bytes += th[t].aux_len;
		st->calls += th[t].calls;
		st->returns += th[t].returns;
		st->syscalls += th[t].syscalls;
		st->gaps += th[t].gaps;
		st->truth_rows += th[t].nr_rows;
		if (th[t].max_depth > st->max_depth)
			st->max_depth = th[t].max_depth;
	}
	snprintf(path, sizeof(path), "%s/raw.bin", o->outdir);
	if (write_capture(path, o, &prog, kp, th, have_sr ? &sr : NULL, &pt,
			  err, errlen))
		goto out;
	snprintf(path, sizeof(path), "%s/truth.tsv", o->outdir);
	if (write_truth(path, &prog, th, o->threads, &pt, err, errlen))
		goto out;
	snprintf(path, sizeof(path), "%s/gaps.tsv", o->outdir);
	if (write_gaps(path, th, o->threads, &pt, err, errlen))
		goto out;
	rc = 0;
out:
	for (unsigned t = 0; th && t < o->threads; t++)
		walk_thread_free(&th[t]);
	free(th);
	free(cfgs);
	if (have_sr)
		sched_free(&sr);
	kprog_free(kp);
	program_free(&prog);
	return rc;
}
