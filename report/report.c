/* SPDX-License-Identifier: MIT */
/*
 * mt-convert --info: what a person needs to know about a capture before
 * decoding it.  Everything is gathered first and printed at the end, so
 * that a corrupt file produces one error line and no half-printed report.
 */
#include "report/report.h"
#include "symbols/symbols.h"
#include "util/version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct info_thread {
	uint32_t pid, tid;
	char comms[80]; /* "perf -> echo": the names it had, in order */
	char last[17];
	bool exec, exited, traced;
};

struct info_map {
	uint32_t pid;
	uint64_t start, len, pgoff;
	const char *path; /* points into the mapped capture */
	bool kernel;
	bool has_bid;
	uint8_t bid_size;
	uint8_t bid[20];
};

struct info_stream {
	uint32_t key; /* cpu or tid */
	uint64_t bytes;
	unsigned chunks;
};

struct info {
	struct pd_file *f;
	unsigned counts[PD_RECORD_MAX];
	unsigned other, total;
	bool have_pt;
	struct pd_pt_info pt;
	unsigned nr_info;
	uint32_t other_info_type;
	bool have_tc;
	struct pd_time_conv tc;
	struct info_thread *threads;
	size_t nr_threads, cap_threads;
	struct info_map *maps;
	size_t nr_maps, cap_maps;
	struct info_stream *streams;
	size_t nr_streams, cap_streams;
	bool streams_by_cpu;
	uint64_t aux_bytes, auxtrace_bytes;
	unsigned aux_recs, auxtrace_recs;
	unsigned aux_flag[4]; /* TRUNCATED OVERWRITE PARTIAL COLLISION */
	uint64_t lost_recs, lost_events;
	uint64_t tmin, tmax;
	bool have_t;
	uint64_t rmin, rmax;
	bool have_r;
	const struct pd_buildid *bids;
	size_t nr_bids;
};

/* A 32-bit field of a feature section (little-endian, as we are). */
static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* ARR with room for one more than NR items, or NULL (ARR kept). */
static void *room(void *arr, size_t nr, size_t *cap, size_t elem)
{
	size_t nc;
	void *n;

	if (nr < *cap)
		return arr;
	nc = *cap ? 2 * *cap : 16;
	n = realloc(arr, nc * elem);
	if (n)
		*cap = nc;
	return n;
}

static struct info_thread *thread_get(struct info *in, uint32_t pid,
				      uint32_t tid)
{
	struct info_thread *t;

	for (size_t i = 0; i < in->nr_threads; i++)
		if (in->threads[i].pid == pid && in->threads[i].tid == tid)
			return &in->threads[i];
	t = room(in->threads, in->nr_threads, &in->cap_threads, sizeof(*t));
	if (!t)
		return NULL;
	in->threads = t;
	t += in->nr_threads++;
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	return t;
}

static void thread_comm(struct info_thread *t, const char *comm, bool exec)
{
	size_t n = strlen(t->comms);

	t->exec |= exec;
	if (!strcmp(t->last, comm))
		return;
	snprintf(t->last, sizeof(t->last), "%s", comm);
	if (n + 4 + strlen(comm) >= sizeof(t->comms))
		return;
	snprintf(t->comms + n, sizeof(t->comms) - n, "%s%s", n ? " -> " : "",
		 comm);
}

static int stream_add(struct info *in, uint32_t key, uint64_t bytes)
{
	struct info_stream *s = NULL;

	for (size_t i = 0; i < in->nr_streams && !s; i++)
		if (in->streams[i].key == key)
			s = &in->streams[i];
	if (!s) {
		s = room(in->streams, in->nr_streams, &in->cap_streams,
			 sizeof(*s));
		if (!s)
			return -1;
		in->streams = s;
		s += in->nr_streams++;
		memset(s, 0, sizeof(*s));
		s->key = key;
	}
	s->bytes += bytes;
	s->chunks++;
	return 0;
}

static void note_time(struct info *in, const struct pd_sample_id *sid)
{
	/* perf synthesises the sideband of running processes at time 0 */
	if (!sid->have_time || !sid->time)
		return;
	if (!in->have_t || sid->time < in->tmin)
		in->tmin = sid->time;
	if (!in->have_t || sid->time > in->tmax)
		in->tmax = sid->time;
	in->have_t = true;
}

static int gather_event(struct info *in, const struct pd_event *ev)
{
	struct info_thread *t = NULL;
	struct info_map *m;

	in->total++;
	if (ev->type < PD_RECORD_MAX)
		in->counts[ev->type]++;
	else
		in->other++;
	note_time(in, &ev->sid);
	switch (ev->type) {
	case PD_RECORD_AUXTRACE_INFO:
		in->nr_info++;
		if (ev->auxtrace_info_type != PD_AUXTRACE_INTEL_PT)
			in->other_info_type = ev->auxtrace_info_type;
		else if (!in->have_pt) {
			in->pt = ev->u.pt_info;
			in->have_pt = true;
		}
		break;
	case PD_RECORD_TIME_CONV:
		in->tc = ev->u.time_conv;
		in->have_tc = true;
		break;
	case PERF_RECORD_COMM:
		t = thread_get(in, ev->u.comm.pid, ev->u.comm.tid);
		if (!t)
			return -1;
		thread_comm(t, ev->u.comm.comm, ev->u.comm.exec);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		t = thread_get(in, ev->u.task.pid, ev->u.task.tid);
		if (!t)
			return -1;
		if (ev->type == PERF_RECORD_EXIT)
			t->exited = true;
		break;
	case PERF_RECORD_ITRACE_START:
		t = thread_get(in, ev->u.itrace_start.pid,
			       ev->u.itrace_start.tid);
		if (!t)
			return -1;
		t->traced = true;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		unsigned mode = ev->misc & PERF_RECORD_MISC_CPUMODE_MASK;

		m = room(in->maps, in->nr_maps, &in->cap_maps, sizeof(*m));
		if (!m)
			return -1;
		in->maps = m;
		m += in->nr_maps++;
		memset(m, 0, sizeof(*m));
		m->pid = ev->u.mmap.pid;
		m->start = ev->u.mmap.start;
		m->len = ev->u.mmap.len;
		m->pgoff = ev->u.mmap.pgoff;
		m->path = ev->u.mmap.filename;
		m->kernel = mode == PERF_RECORD_MISC_KERNEL ||
			    mode == PERF_RECORD_MISC_GUEST_KERNEL;
		m->has_bid = ev->u.mmap.has_build_id;
		m->bid_size = ev->u.mmap.build_id_size;
		memcpy(m->bid, ev->u.mmap.build_id, sizeof(m->bid));
		return 0;
	}
	case PERF_RECORD_AUX:
		in->aux_recs++;
		in->aux_bytes += ev->u.aux.aux_size;
		for (int b = 0; b < 4; b++)
			if (ev->u.aux.flags & (1u << b))
				in->aux_flag[b]++;
		break;
	case PD_RECORD_AUXTRACE: {
		const struct pd_auxtrace *a = &ev->u.auxtrace;
		bool by_cpu = in->have_pt ? in->pt.per_cpu_mmaps
					  : a->cpu != UINT32_MAX;

		in->auxtrace_recs++;
		in->auxtrace_bytes += a->size;
		in->streams_by_cpu = by_cpu;
		if (stream_add(in, by_cpu ? a->cpu : a->tid, a->size))
			return -1;
		if (a->reference) {
			if (!in->have_r || a->reference < in->rmin)
				in->rmin = a->reference;
			if (!in->have_r || a->reference > in->rmax)
				in->rmax = a->reference;
			in->have_r = true;
		}
		break;
	}
	case PERF_RECORD_LOST:
		in->lost_recs++;
		in->lost_events += ev->u.lost.lost;
		break;
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Printing helpers                                                    */

static void print_ns(FILE *o, uint64_t ns)
{
	fprintf(o, "%" PRIu64 ".%09" PRIu64 " s", ns / 1000000000u,
		ns % 1000000000u);
}

static void print_span(FILE *o, uint64_t a, uint64_t b)
{
	print_ns(o, a);
	fputs(" .. ", o);
	print_ns(o, b);
	if (b - a >= 1000000)
		fprintf(o, " (%.3f ms)", (double)(b - a) / 1e6);
	else
		fprintf(o, " (%.3f us)", (double)(b - a) / 1e3);
}

static void print_hex(FILE *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%02x", p[i]);
}

static const char *type_name(uint32_t type)
{
	switch (type) {
	case PERF_TYPE_HARDWARE:
		return "hardware";
	case PERF_TYPE_SOFTWARE:
		return "software";
	case PERF_TYPE_TRACEPOINT:
		return "tracepoint";
	case PERF_TYPE_HW_CACHE:
		return "hw-cache";
	case PERF_TYPE_RAW:
		return "raw";
	case PERF_TYPE_BREAKPOINT:
		return "breakpoint";
	default:
		return NULL;
	}
}

/*
 * Event names from the EVENT_DESC feature: u32 nr, u32 attr_size, then
 * per event the attr, u32 nr_ids, a length-prefixed name and the ids.
 * Returns the name of event I, or NULL when the section says nothing.
 */
static const char *event_name(struct pd_file *f, size_t want)
{
	size_t len, pos = 8;
	const uint8_t *d = pd_feature(f, PD_FEAT_EVENT_DESC, &len);
	uint32_t nr, asz;

	if (!d || len < 8)
		return NULL;
	nr = get32(d);
	asz = get32(d + 4);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids, slen;
		const char *name;

		if (asz > len - pos || len - pos - asz < 8)
			return NULL;
		pos += asz;
		nr_ids = get32(d + pos);
		slen = get32(d + pos + 4);
		pos += 8;
		if (slen > len - pos || !memchr(d + pos, 0, slen))
			return NULL;
		name = (const char *)d + pos;
		pos += slen;
		if ((uint64_t)nr_ids * 8 > len - pos)
			return NULL;
		pos += (size_t)nr_ids * 8;
		if (i == want)
			return name;
	}
	return NULL;
}

static void print_header(FILE *o, struct info *in)
{
	struct pd_file *f = in->f;
	const char *host = pd_feature_string(f, PD_FEAT_HOSTNAME);
	const char *osr = pd_feature_string(f, PD_FEAT_OSRELEASE);
	const char *ver = pd_feature_string(f, PD_FEAT_VERSION);
	const char *arch = pd_feature_string(f, PD_FEAT_ARCH);
	const char *desc = pd_feature_string(f, PD_FEAT_CPUDESC);
	const char *cpuid = pd_feature_string(f, PD_FEAT_CPUID);
	const uint8_t *d;
	char line[128];
	size_t len;

	fprintf(o, "capture    %s\n", pd_path(f));
	fprintf(o, "format     %s\n",
		pd_is_piped(f) ? "piped perf.data (perf record -o -): header "
				 "records inline, no feature table"
			       : "perf.data (PERFILE2) with attr and feature "
				 "sections");
	/* Ours write "mt-capture VERSION (commit C)" where perf writes its
	 * version. */
	if (ver && !strncmp(ver, "mt-", 3))
		fprintf(o, "recorded   by %s", ver);
	else
		fprintf(o, "recorded   by perf %s",
			ver && *ver ? ver : "(version not recorded)");
	if (host && *host)
		fprintf(o, " on %s", host);
	if (osr && *osr)
		fprintf(o, ", kernel %s", osr);
	if (arch && *arch)
		fprintf(o, ", %s", arch);
	fputc('\n', o);
	fprintf(o, "read       by %s\n",
		mt_version_line("mt-convert", line, sizeof(line)));
	if ((desc && *desc) || (cpuid && *cpuid)) {
		fprintf(o, "cpu        %s", desc && *desc ? desc : "");
		if (cpuid && *cpuid)
			fprintf(o, "%s(cpuid %s)", desc && *desc ? " " : "",
				cpuid);
		d = pd_feature(f, PD_FEAT_NRCPUS, &len);
		if (d && len >= 8)
			fprintf(o, ", %u of %u cpus online", get32(d + 4),
				get32(d));
		fputc('\n', o);
	}
	d = pd_feature(f, PD_FEAT_CMDLINE, &len);
	if (d && len >= 4) {
		uint32_t nr = get32(d);
		size_t pos = 4;

		fputs("command   ", o);
		for (uint32_t i = 0; i < nr && len - pos >= 4; i++) {
			uint32_t sl = get32(d + pos);

			pos += 4;
			if (sl > len - pos || !memchr(d + pos, 0, sl))
				break;
			fprintf(o, " %s", (const char *)d + pos);
			pos += sl;
		}
		fputc('\n', o);
	}
}

static void print_records(FILE *o, struct info *in)
{
	bool done[PD_RECORD_MAX] = {0};

	fprintf(o, "records    %u:", in->total);
	/* most frequent first */
	for (;;) {
		unsigned best = 0;
		int bt = -1;

		for (int t = 0; t < PD_RECORD_MAX; t++)
			if (!done[t] && in->counts[t] > best) {
				best = in->counts[t];
				bt = t;
			}
		if (bt < 0)
			break;
		done[bt] = true;
		fprintf(o, " %s %u", pd_record_name((uint32_t)bt), best);
	}
	if (in->other)
		fprintf(o, " (unknown types) %u", in->other);
	fputc('\n', o);
}

static void print_events(FILE *o, struct info *in)
{
	size_t n = pd_nr_attrs(in->f);

	fprintf(o, "\nevents (%zu)\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct pd_attr *a = pd_get_attr(in->f, i);
		const char *name = event_name(in->f, i);
		const char *tn = type_name(a->attr.type);

		fprintf(o, "  %-14s type %u", name ? name : "?", a->attr.type);
		if (in->have_pt && a->attr.type == in->pt.pmu_type)
			fputs(" (intel_pt)", o);
		else if (tn)
			fprintf(o, " (%s)", tn);
		fprintf(o, " config %#llx, %zu id%s, sample_type %#llx%s%s\n",
			(unsigned long long)a->attr.config, a->nr_ids,
			a->nr_ids == 1 ? "" : "s",
			(unsigned long long)a->attr.sample_type,
			a->attr.exclude_kernel ? ", user only" : "",
			a->attr.exclude_user ? ", kernel only" : "");
	}
}

static const struct pd_attr *pt_attr(struct info *in)
{
	for (size_t i = 0; i < pd_nr_attrs(in->f); i++)
		if (pd_get_attr(in->f, i)->attr.type == in->pt.pmu_type)
			return pd_get_attr(in->f, i);
	return NULL;
}

static unsigned field(uint64_t config, unsigned lo, unsigned bits)
{
	return (unsigned)((config >> lo) & ((1u << bits) - 1));
}

static void print_pt(FILE *o, struct info *in)
{
	const struct pd_pt_info *pt = &in->pt;
	const struct pd_attr *a;
	uint64_t c;

	fputs("\nIntel PT\n", o);
	if (!in->have_pt) {
		if (in->nr_info)
			fprintf(o,
				"  the AUXTRACE_INFO is of type %u, not "
				"Intel PT (1)\n",
				in->other_info_type);
		else
			fputs("  no AUXTRACE_INFO record: this capture has no "
			      "Intel PT trace\n",
			      o);
		return;
	}
	a = pt_attr(in);
	if (!a) {
		fprintf(o,
			"  no event has type %u, the intel_pt PMU named by "
			"AUXTRACE_INFO\n",
			pt->pmu_type);
	} else {
		c = a->attr.config;
		fprintf(o, "  config     %#llx:%s%s%s%s%s%s%s%s\n",
			(unsigned long long)c, (c & 1) ? " pt" : "",
			(c & (1u << 13)) ? " branch" : "",
			(c & (1u << 10)) ? " tsc" : "",
			(c & (1u << 9)) ? " mtc" : "", (c & 2) ? " cyc" : "",
			(c & (1u << 11)) ? " noretcomp" : "",
			(c & (1u << 12)) ? " ptw" : "",
			(c & (1u << 4)) ? " pwr_evt" : "");
		fprintf(o, "  timing     TSC packets %s",
			(c & (1u << 10)) ? "on" : "off");
		if (c & (1u << 9))
			fprintf(o, ", MTC every 2^%u = %u CTC ticks",
				field(c, 14, 4), 1u << field(c, 14, 4));
		else
			fputs(", no MTC", o);
		if (c & 2)
			fprintf(o, ", CYC on (threshold %u)", field(c, 19, 4));
		else
			fputs(", no CYC", o);
		fputc('\n', o);
		fprintf(o, "  returns    %s\n",
			(c & (1u << 11))
				? "not compressed (noretcomp): every RET is a "
				  "TIP"
				: "compressed: a RET to its call site is one "
				  "TNT bit");
		fprintf(o, "  PSB        every 2^(%u+11) = %u KiB of trace\n",
			field(c, 24, 4), 2u << field(c, 24, 4));
		fprintf(o, "  traced     %s\n",
			a->attr.exclude_kernel
				? (a->attr.exclude_user ? "nothing?"
							: "user space only")
				: (a->attr.exclude_user ? "kernel only"
							: "user space and "
							  "kernel"));
	}
	fprintf(o, "  mode       %s, %s buffers\n",
		pt->snapshot_mode ? "snapshot (ring buffer, overwritten)"
				  : "full trace",
		pt->per_cpu_mmaps ? "per-CPU" : "per-thread");
	fprintf(o,
		"  time       time_mult %u, time_shift %u, time_zero %#" PRIx64
		" (%" PRId64 " ns), cap_user_time_zero %d",
		pt->time_mult, pt->time_shift, pt->time_zero,
		(int64_t)pt->time_zero, pt->cap_user_time_zero);
	if (pt->time_shift >= 64)
		fputs(": invalid time_shift", o);
	else if (pt->time_mult)
		fprintf(o, ": %.4f ns per TSC tick (%.3f GHz)",
			(double)pt->time_mult /
				(double)(1ull << pt->time_shift),
			(double)(1ull << pt->time_shift) /
				(double)pt->time_mult);
	else
		fputs(": no TSC conversion (timeless)", o);
	fputc('\n', o);
	if (pt->have_mtc_group)
		fprintf(o, "  tsc:ctc    %u/%u\n", pt->tsc_ctc_n,
			pt->tsc_ctc_d);
	if (pt->have_max_nonturbo)
		fprintf(o, "  non-turbo  max ratio %u (%u MHz)\n",
			pt->max_nonturbo_ratio, pt->max_nonturbo_ratio * 100);
	fprintf(o, "  switches   %u (%s)\n", pt->have_sched_switch,
		pt->have_sched_switch == 0   ? "none recorded"
		: pt->have_sched_switch == 1 ? "sched:sched_switch tracepoint"
		: pt->have_sched_switch == 2 ? "per-thread SWITCH records"
					     : "cpu-wide SWITCH_CPU_WIDE "
					       "records");
	fprintf(o, "  filter     %s\n", pt->filter[0] ? pt->filter : "none");
	if (in->nr_info > 1)
		fprintf(o,
			"  note       %u AUXTRACE_INFO records; the first "
			"is shown\n",
			in->nr_info);
}

static void print_threads(FILE *o, struct info *in)
{
	fprintf(o, "\nthreads (%zu)\n", in->nr_threads);
	for (size_t i = 0; i < in->nr_threads; i++) {
		const struct info_thread *t = &in->threads[i];

		fprintf(o, "  pid %-7d tid %-7d %s%s%s%s\n", (int)t->pid,
			(int)t->tid, t->comms[0] ? t->comms : "(no name)",
			t->exec ? " (exec)" : "", t->traced ? ", traced" : "",
			t->exited ? ", exited" : "");
	}
}

/* The build id the capture records for PATH, from MMAP2 or the feature. */
static bool recorded_bid(struct info *in, const char *path, uint8_t *id,
			 size_t *len)
{
	for (size_t i = 0; i < in->nr_maps; i++)
		if (in->maps[i].has_bid && !strcmp(in->maps[i].path, path)) {
			*len = in->maps[i].bid_size;
			memcpy(id, in->maps[i].bid, *len);
			return true;
		}
	for (size_t i = 0; i < in->nr_bids; i++)
		if (!strcmp(in->bids[i].filename, path)) {
			*len = in->bids[i].size;
			memcpy(id, in->bids[i].id, *len);
			return true;
		}
	return false;
}

static void print_maps(FILE *o, struct info *in)
{
	size_t nk = 0, nu = 0;
	const char *first_kernel = NULL;

	for (size_t i = 0; i < in->nr_maps; i++) {
		if (in->maps[i].kernel) {
			nk++;
			if (!first_kernel)
				first_kernel = in->maps[i].path;
		} else {
			nu++;
		}
	}
	fprintf(o, "\nmappings (%zu user, %zu kernel)\n", nu, nk);
	for (size_t i = 0; i < in->nr_maps; i++) {
		const struct info_map *m = &in->maps[i];
		uint8_t id[20];
		size_t idl;

		if (m->kernel)
			continue;
		fprintf(o,
			"  pid %-7d %#" PRIx64 "-%#" PRIx64 " pgoff %#" PRIx64
			" %s",
			(int)m->pid, m->start, m->start + m->len, m->pgoff,
			m->path);
		if (recorded_bid(in, m->path, id, &idl)) {
			fputs(" build id ", o);
			print_hex(o, id, idl);
		}
		fputc('\n', o);
	}
	if (nk)
		fprintf(o, "  kernel: %zu mapping%s (%s%s)\n", nk,
			nk == 1 ? "" : "s", first_kernel,
			nk > 1 ? " and modules" : "");
}

static void print_aux(FILE *o, struct info *in)
{
	static const char *const flag[4] = {"truncated (data lost)",
					    "overwrite (snapshot)",
					    "partial (gaps)", "collision"};
	bool any = false;

	fprintf(o, "\nAUX data   %" PRIu64 " bytes in %u AUXTRACE chunk%s\n",
		in->auxtrace_bytes, in->auxtrace_recs,
		in->auxtrace_recs == 1 ? "" : "s");
	for (size_t i = 0; i < in->nr_streams; i++) {
		const struct info_stream *s = &in->streams[i];

		fprintf(o, "  %s %-6d %" PRIu64 " bytes, %u chunk%s\n",
			in->streams_by_cpu ? "cpu" : "tid", (int)s->key,
			s->bytes, s->chunks, s->chunks == 1 ? "" : "s");
	}
	fprintf(o, "  AUX records: %u, announcing %" PRIu64 " bytes",
		in->aux_recs, in->aux_bytes);
	for (int b = 0; b < 4; b++) {
		if (!in->aux_flag[b])
			continue;
		fprintf(o, "%s%u %s", any ? ", " : "; ", in->aux_flag[b],
			flag[b]);
		any = true;
	}
	fputc('\n', o);
	if (in->lost_recs)
		fprintf(o,
			"  lost: %" PRIu64 " LOST records, %" PRIu64
			" sideband records lost\n",
			in->lost_recs, in->lost_events);
	else
		fputs("  lost: no sideband records lost\n", o);
}

static void print_time(FILE *o, struct info *in)
{
	fputs("\ntime span\n", o);
	if (in->have_t) {
		fputs("  records   ", o);
		print_span(o, in->tmin, in->tmax);
		fputc('\n', o);
	} else {
		fputs("  records   no timestamps\n", o);
	}
	if (in->have_r && in->have_pt && in->pt.time_mult) {
		uint64_t a = pd_tsc_to_perf_time(in->rmin, &in->pt);
		uint64_t b = pd_tsc_to_perf_time(in->rmax, &in->pt);

		fputs("  AUX read  ", o);
		print_span(o, a, b);
		fprintf(o, " (TSC %#" PRIx64 " .. %#" PRIx64 ")\n", in->rmin,
			in->rmax);
	} else if (in->have_r) {
		fprintf(o,
			"  AUX read  TSC %#" PRIx64 " .. %#" PRIx64
			" (no conversion to perf time)\n",
			in->rmin, in->rmax);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int print_binaries(FILE *o, struct info *in)
{
	const char **paths =
		calloc(in->nr_maps ? in->nr_maps : 1, sizeof(*paths));
	size_t n = 0, uniq = 0, missing = 0;

	if (!paths)
		return -1;
	for (size_t i = 0; i < in->nr_maps; i++) {
		const char *p = in->maps[i].path;

		/* [vdso], [stack], //anon: nothing on disk to look for */
		if (in->maps[i].kernel || p[0] != '/' || p[1] == '/')
			continue;
		paths[n++] = p;
	}
	qsort(paths, n, sizeof(*paths), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (!i || strcmp(paths[i], paths[i - 1]))
			paths[uniq++] = paths[i];
	fprintf(o, "\nbinaries (%zu file%s mapped in user space)\n", uniq,
		uniq == 1 ? "" : "s");
	for (size_t i = 0; i < uniq; i++) {
		uint8_t want[20], have[SYM_BUILD_ID_MAX];
		size_t wl = 0, hl = 0;
		bool rec = recorded_bid(in, paths[i], want, &wl);
		struct stat st;
		int rc;

		fprintf(o, "  %s: ", paths[i]);
		if (stat(paths[i], &st)) {
			missing++;
			fprintf(o, "missing%s%s", errno == ENOENT ? "" : " (",
				errno == ENOENT ? "" : strerror(errno));
			if (errno != ENOENT)
				fputc(')', o);
		} else if (!S_ISREG(st.st_mode)) {
			/* A FIFO or a device named by a corrupt capture
			 * would block the open or never end the read. */
			fputs("present, not a regular file", o);
		} else if ((rc = sym_build_id(paths[i], have, &hl)) < 0) {
			fprintf(o, "present but unreadable (%s)",
				strerror(errno));
		} else if (rc == 2) {
			fputs("present, not an ELF file", o);
		} else if (!rec) {
			fputs("present, no build id recorded to compare", o);
		} else if (rc == 1) {
			fputs("present, but the file has no build id", o);
		} else if (hl == wl && !memcmp(have, want, wl)) {
			fputs("present, build id matches", o);
		} else {
			fputs("present, build id DIFFERS (file has ", o);
			print_hex(o, have, hl);
			fputc(')', o);
		}
		fputc('\n', o);
	}
	if (missing)
		fprintf(o,
			"  %zu of %zu missing: instructions in them cannot "
			"be decoded on this machine\n",
			missing, uniq);
	free(paths);
	return 0;
}

/* What our own section holds: trigger hits, stacks unwound at them,
 * vDSO images, the kernel's code and symbols. */
static int print_ext(FILE *o, struct info *in, struct pd_err *err)
{
	size_t cur = 0, nr = 0, nr_go = 0, nr_gotid = 0;
	uint32_t go_tids[64];
	const uint8_t *p;
	uint32_t type, size;
	int rc;

	while ((rc = pd_ext_next(in->f, &cur, &type, &p, &size, err)) == 1) {
		struct pd_ext_goroutine gi;
		struct pd_ext_hit h;
		struct pd_ext_stack st;
		struct pd_ext_vdso v;
		struct pd_ext_kcode kc;
		const char *text;
		uint64_t len;

		if (!nr++)
			fprintf(o, "\nsnapshot extras\n");
		/* A switch an item: thousands of them, said in one line. */
		if (type == PD_EXT_GOROUTINE &&
		    !pd_ext_parse_goroutine(p, size, &gi)) {
			size_t k = 0;

			while (k < nr_gotid && go_tids[k] != gi.tid)
				k++;
			if (k == nr_gotid && k < 64)
				go_tids[nr_gotid++] = gi.tid;
			nr_go++;
			continue;
		}
		if (type == PD_EXT_HIT && !pd_ext_parse_hit(p, size, &h)) {
			fprintf(o, "  hit     tid %-7u %s arg %lld at ",
				(unsigned)h.tid, h.name ? h.name : "?",
				(long long)h.arg);
			print_ns(o, h.time);
			fprintf(o, "\n");
		} else if (type == PD_EXT_STACK &&
			   !pd_ext_parse_stack(p, size, &st)) {
			fprintf(o,
				"  stack   tid %-7u %llu frame%s, leaf %#llx\n",
				(unsigned)st.tid, (unsigned long long)st.nr,
				st.nr == 1 ? "" : "s",
				st.nr ? (unsigned long long)pd_ext_stack_ip(&st,
									    0)
				      : 0ull);
		} else if (type == PD_EXT_VDSO &&
			   !pd_ext_parse_vdso(p, size, &v)) {
			fprintf(o, "  vdso    pid %-7u %llu bytes at %#llx\n",
				(unsigned)v.pid, (unsigned long long)v.len,
				(unsigned long long)v.start);
		} else if ((type == PD_EXT_KALLSYMS ||
			    type == PD_EXT_MODULES) &&
			   !pd_ext_parse_text(p, size, &text, &len)) {
			fprintf(o, "  %-7s %llu bytes of text\n",
				type == PD_EXT_KALLSYMS ? "kallsyms"
							: "modules",
				(unsigned long long)len);
		} else if (type == PD_EXT_KCODE &&
			   !pd_ext_parse_kcode(p, size, &kc)) {
			fprintf(o, "  kcode   %llu bytes at %#llx\n",
				(unsigned long long)kc.len,
				(unsigned long long)kc.start);
		} else {
			fprintf(o, "  item    type %u, %u bytes\n", type, size);
		}
	}
	if (nr_go)
		fprintf(o, "  goroutine switches %zu, on %zu%s thread%s\n",
			nr_go, nr_gotid, nr_gotid == 64 ? "+" : "",
			nr_gotid == 1 ? "" : "s");
	return rc;
}

int report_print(FILE *out, const char *path, struct pd_err *err)
{
	struct info in;
	struct pd_event ev;
	uint64_t cur = 0;
	int rc;

	memset(&in, 0, sizeof(in));
	rc = pd_open(&in.f, path, err);
	if (rc)
		return rc;
	while ((rc = pd_next(in.f, &cur, &ev, err)) == 1) {
		if (gather_event(&in, &ev)) {
			rc = pd_fail(err, -ENOMEM, path, ev.file_offset,
				     "out of memory");
			goto out;
		}
	}
	if (rc)
		goto out;
	rc = pd_buildids(in.f, &in.bids, &in.nr_bids, err);
	if (rc)
		goto out;

	print_header(out, &in);
	print_records(out, &in);
	print_events(out, &in);
	print_pt(out, &in);
	print_threads(out, &in);
	print_maps(out, &in);
	print_aux(out, &in);
	print_time(out, &in);
	if (print_binaries(out, &in)) {
		rc = pd_fail(err, -ENOMEM, path, UINT64_MAX, "out of memory");
		goto out;
	}
	if ((rc = print_ext(out, &in, err)))
		goto out;
	if (fflush(out) || ferror(out))
		rc = pd_fail(err, -EIO, path, UINT64_MAX,
			     "cannot write the summary: %s", strerror(errno));
out:
	free(in.threads);
	free(in.maps);
	free(in.streams);
	pd_close(in.f);
	return rc;
}
