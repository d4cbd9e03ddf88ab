/* SPDX-License-Identifier: MIT */
/*
 * perfdata: the two real Intel PT captures (regular and piped), read
 * record by record, and what they must agree on.
 */
#include "perfdata/perfdata.h"
#include "tests/unit/check.h"
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct real_stats {
	unsigned count[128];
	unsigned total;
	struct pd_pt_info pt;
	struct pd_time_conv tc;
	uint64_t aux_bytes[8]; /* AUX records' sizes per cpu */
	unsigned aux_recs[8];
	uint64_t auxtrace_bytes[8]; /* AUXTRACE sizes per cpu */
	unsigned auxtrace_recs[8];
	uint32_t auxtrace_tid;
	char comms[4][16];
	unsigned nr_comms;
	char mmap2[10][64];
	unsigned nr_mmap2;
	uint64_t first_sample_time, last_sample_time;
	unsigned samples_by_attr[4];
};

static int read_real(struct check_state *st, const char *path,
		     struct real_stats *rs, struct pd_file **fp)
{
	char err[512] = "";
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	int rc;

	memset(rs, 0, sizeof(*rs));
	rc = pd_open(&f, path, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		return rc;
	while ((rc = pd_next(f, &cur, &ev, err, sizeof(err))) == 1) {
		rs->count[ev.type < 128 ? ev.type : 127]++;
		rs->total++;
		switch (ev.type) {
		case PD_RECORD_AUXTRACE_INFO:
			rs->pt = ev.u.pt_info;
			break;
		case PD_RECORD_TIME_CONV:
			rs->tc = ev.u.time_conv;
			break;
		case PERF_RECORD_AUX:
			CHECK(st, ev.sid.have_cpu && ev.sid.cpu < 8);
			if (ev.sid.cpu < 8) {
				rs->aux_bytes[ev.sid.cpu] += ev.u.aux.aux_size;
				rs->aux_recs[ev.sid.cpu]++;
			}
			break;
		case PD_RECORD_AUXTRACE:
			CHECK(st,
			      ev.u.auxtrace.cpu < 8 &&
				      ev.u.auxtrace.idx == ev.u.auxtrace.cpu);
			if (ev.u.auxtrace.cpu < 8) {
				rs->auxtrace_bytes[ev.u.auxtrace.cpu] +=
					ev.u.auxtrace.size;
				rs->auxtrace_recs[ev.u.auxtrace.cpu]++;
			}
			rs->auxtrace_tid = ev.u.auxtrace.tid;
			break;
		case PERF_RECORD_COMM:
			if (rs->nr_comms < 4)
				snprintf(rs->comms[rs->nr_comms++], 16, "%s%s",
					 ev.u.comm.exec ? "+" : "",
					 ev.u.comm.comm);
			break;
		case PERF_RECORD_MMAP2:
			if (rs->nr_mmap2 < 10)
				snprintf(rs->mmap2[rs->nr_mmap2++], 64, "%s",
					 ev.u.mmap.filename);
			break;
		case PERF_RECORD_SAMPLE:
			CHECK(st, ev.attr && ev.sid.have_time);
			if (!rs->first_sample_time)
				rs->first_sample_time = ev.sid.time;
			rs->last_sample_time = ev.sid.time;
			for (size_t i = 0; i < 4; i++)
				if (ev.attr == pd_get_attr(f, i))
					rs->samples_by_attr[i]++;
			break;
		default:
			break;
		}
		/* Every kernel record in these files has a trailer. */
		if (ev.type < 64 && ev.type != PERF_RECORD_SAMPLE)
			CHECKF(st,
			       ev.sid.have_time && ev.sid.have_id && ev.attr,
			       "record at %" PRIu64, ev.file_offset);
	}
	CHECKF(st, rc == 0, "%s", err);
	*fp = f;
	return rc;
}

static void check_real_common(struct check_state *st, struct pd_file *f,
			      const struct real_stats *rs)
{
	static const uint32_t types[4] = {
		6, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE};

	CHECK(st, pd_nr_attrs(f) == 4);
	for (size_t i = 0; i < pd_nr_attrs(f) && i < 4; i++) {
		const struct pd_attr *a = pd_get_attr(f, i);

		CHECK(st, a->file_attr_size == 112 && a->attr.size == 112);
		CHECK(st, a->attr.type == types[i] && a->nr_ids == 4);
		CHECK(st, a->attr.sample_id_all);
		/* zero-extended past the 112 bytes in the file */
		CHECK(st,
		      a->attr.aux_sample_size == 0 && a->attr.sig_data == 0);
	}
	if (pd_nr_attrs(f) == 4) {
		CHECK(st, pd_get_attr(f, 0)->attr.config == 0x300e601);
		CHECK(st, pd_get_attr(f, 2)->attr.context_switch);
		CHECK(st, pd_get_attr(f, 3)->attr.mmap2 &&
				  pd_get_attr(f, 3)->attr.comm_exec);
	}
	CHECK(st, rs->pt.pmu_type == 6);
	CHECK(st, rs->pt.time_mult == 1789569706 && rs->pt.time_shift == 31);
	CHECK(st, rs->pt.time_zero == 0xfffffff86343cb91ull);
	CHECK(st, rs->pt.cap_user_time_zero);
	CHECK(st, rs->pt.tsc_bit == 0x400 && rs->pt.noretcomp_bit == 0x800);
	CHECK(st, rs->pt.have_sched_switch == 3);
	CHECK(st, !rs->pt.snapshot_mode && rs->pt.per_cpu_mmaps);
	CHECK(st, rs->pt.have_mtc_group && rs->pt.mtc_bit == 0x200 &&
			  rs->pt.mtc_freq_bits == 0x3c000 &&
			  rs->pt.cyc_bit == 2);
	CHECK(st, rs->pt.tsc_ctc_n == 100 && rs->pt.tsc_ctc_d == 2);
	CHECK(st, rs->pt.have_max_nonturbo && rs->pt.max_nonturbo_ratio == 12);
	CHECK(st, rs->pt.filter[0] == 0 && !rs->pt.have_cap_event_trace);
	CHECK(st, rs->tc.time_shift == 31 && rs->tc.time_mult == 1789569706 &&
			  rs->tc.time_zero == 0xfffffff86343cb91ull &&
			  !rs->tc.have_ext);
	/* Only cpus 0 and 3 ran the traced echo. */
	CHECK(st, rs->auxtrace_recs[0] == 1 && rs->auxtrace_recs[3] == 1);
	CHECK(st, rs->auxtrace_recs[1] == 0 && rs->auxtrace_recs[2] == 0);
	/* AUX records account for exactly the bytes in AUXTRACE. */
	for (int c = 0; c < 8; c++)
		CHECKF(st, rs->aux_bytes[c] == rs->auxtrace_bytes[c],
		       "cpu %d: AUX %" PRIu64 " AUXTRACE %" PRIu64, c,
		       rs->aux_bytes[c], rs->auxtrace_bytes[c]);
	CHECK(st, rs->nr_mmap2 == 10 &&
			  !strcmp(rs->mmap2[0], "/usr/bin/coreutils") &&
			  !strcmp(rs->mmap2[1], "/lib64/ld-2.23.so") &&
			  !strcmp(rs->mmap2[9], "/lib64/libdl-2.23.so"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_HOSTNAME), "localhost"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_OSRELEASE), "4.14.18"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_ARCH), "x86_64"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_CPUID),
			  "GenuineIntel,6,78,3"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_CPUDESC),
			  "Intel(R) Core(TM) m7-6Y75 CPU @ 1.20GHz"));
	CHECK(st, pd_feature_string(f, PD_FEAT_VERSION) &&
			  !*pd_feature_string(f, PD_FEAT_VERSION));
}

/*
 * Counts from `perf report -D --stats` (perf 6.1): 257 records.  The
 * piped copy is a different run of the same command; through stdin
 * (`perf report -D -i - < FILE`) perf counts 667 records.
 */
static void test_real_regular(struct check_state *st)
{
	char path[512], bpath[512];
	struct real_stats rs;
	struct pd_file *f;
	char err[512] = "";
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t nb, nx;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	shared_path(bpath, sizeof(bpath), "perf.data.intel_pt-4.14.buildids");
	if (read_real(st, path, &rs, &f))
		return;
	CHECK(st, !pd_is_piped(f));
	CHECK(st, rs.total == 257);
	CHECK(st, rs.count[PERF_RECORD_MMAP] == 56);
	CHECK(st, rs.count[PERF_RECORD_COMM] == 3);
	CHECK(st, rs.count[PERF_RECORD_EXIT] == 1);
	CHECK(st, rs.count[PERF_RECORD_SAMPLE] == 15);
	CHECK(st, rs.count[PERF_RECORD_MMAP2] == 10);
	CHECK(st, rs.count[PERF_RECORD_AUX] == 10);
	CHECK(st, rs.count[PERF_RECORD_ITRACE_START] == 2);
	CHECK(st, rs.count[PERF_RECORD_SWITCH_CPU_WIDE] == 152);
	CHECK(st, rs.count[PD_RECORD_FINISHED_ROUND] == 4);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE_INFO] == 1);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE] == 2);
	CHECK(st, rs.count[PD_RECORD_TIME_CONV] == 1);
	/* all samples are the cycles event's */
	CHECK(st, rs.samples_by_attr[1] == 15);
	check_real_common(st, f, &rs);
	CHECK(st, rs.auxtrace_bytes[0] == 0x2fd0 &&
			  rs.auxtrace_bytes[3] == 0x21a00);
	CHECK(st, rs.aux_recs[0] == 1 && rs.aux_recs[3] == 9);
	CHECK(st, rs.auxtrace_tid == 3174);
	CHECK(st, rs.nr_comms == 3 && !strcmp(rs.comms[0], "perf") &&
			  !strcmp(rs.comms[1], "+echo") &&
			  !strcmp(rs.comms[2], "echo"));
	CHECK(st, rs.first_sample_time > 641256000000ull &&
			  rs.last_sample_time < 641259000000ull);

	CHECK(st, !pd_auxtrace_index(f, &x, &nx, err, sizeof(err)) && nx == 2);
	if (nx == 2) {
		struct pd_event ev;
		uint64_t c = x[1].offset;

		CHECK(st, x[0].offset == 0x29c0 && x[1].offset == 0x7788 &&
				  x[0].size == 48);
		CHECK(st, pd_next(f, &c, &ev, err, sizeof(err)) == 1 &&
				  ev.type == PD_RECORD_AUXTRACE &&
				  ev.u.auxtrace.cpu == 3);
	}

	/* The build ids are the ones perf buildid-list prints. */
	CHECK(st, !pd_buildids(f, &b, &nb, err, sizeof(err)));
	CHECK(st, nb == 66);
	{
		size_t len, i = 0;
		uint8_t *txt = slurp(bpath, &len);
		char *save = NULL, *line;

		CHECKF(st, txt != NULL, "cannot read %s", bpath);
		if (txt) {
			txt[len] = 0;
			for (line = strtok_r((char *)txt, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save), i++) {
				char hex[41];

				if (i >= nb)
					break;
				for (int k = 0; k < 20; k++)
					sprintf(hex + 2 * k, "%02x",
						b[i].id[k]);
				CHECKF(st,
				       !strncmp(line, hex, 40) &&
					       !strcmp(line + 41,
						       b[i].filename) &&
					       b[i].size == 20,
				       "build id %zu: '%s' vs %s %s", i, line,
				       hex, b[i].filename);
			}
			CHECK(st, i == 66);
		}
		free(txt);
	}
	CHECK(st, nb && (b[0].misc & 7) == PERF_RECORD_MISC_KERNEL &&
			  !strcmp(b[0].filename, "[kernel.kallsyms]"));
	pd_close(f);
}

static void test_real_piped(struct check_state *st)
{
	char path[512];
	struct real_stats rs;
	struct pd_file *f;
	char err[512] = "";
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t nb, nx;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	if (read_real(st, path, &rs, &f))
		return;
	CHECK(st, pd_is_piped(f));
	CHECK(st, rs.total == 667);
	CHECK(st, rs.count[PD_RECORD_HEADER_FEATURE] == 12);
	CHECK(st, rs.count[PD_RECORD_HEADER_ATTR] == 4);
	CHECK(st, rs.count[PERF_RECORD_MMAP] == 56);
	CHECK(st, rs.count[PERF_RECORD_COMM] == 3);
	CHECK(st, rs.count[PERF_RECORD_EXIT] == 1);
	CHECK(st, rs.count[PERF_RECORD_SAMPLE] == 11);
	CHECK(st, rs.count[PERF_RECORD_MMAP2] == 10);
	CHECK(st, rs.count[PERF_RECORD_AUX] == 8);
	CHECK(st, rs.count[PERF_RECORD_ITRACE_START] == 2);
	CHECK(st, rs.count[PERF_RECORD_SWITCH_CPU_WIDE] == 552);
	CHECK(st, rs.count[PD_RECORD_FINISHED_ROUND] == 4);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE_INFO] == 1);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE] == 2);
	CHECK(st, rs.count[PD_RECORD_TIME_CONV] == 1);
	CHECK(st, rs.samples_by_attr[1] == 11);
	check_real_common(st, f, &rs);
	CHECK(st, rs.auxtrace_bytes[0] == 0x12a70 &&
			  rs.auxtrace_bytes[3] == 0x10a60);
	CHECK(st, rs.aux_recs[0] == 1 && rs.aux_recs[3] == 7);
	CHECK(st, rs.auxtrace_tid == 3587);
	CHECK(st, pd_get_attr(f, 0)->ids[0] == 148);
	/* A piped file has neither build ids nor an AUXTRACE index. */
	CHECK(st, !pd_buildids(f, &b, &nb, err, sizeof(err)) && nb == 0);
	CHECK(st, !pd_auxtrace_index(f, &x, &nx, err, sizeof(err)) && nx == 0);
	CHECK(st, pd_has_feature(f, PD_FEAT_NRCPUS) &&
			  !pd_has_feature(f, PD_FEAT_BUILD_ID));
	pd_close(f);
}

/* Two runs of the same command, one to a file, one to a pipe. */
static void test_real_agree(struct check_state *st)
{
	static const unsigned feats[] = {PD_FEAT_HOSTNAME, PD_FEAT_OSRELEASE,
					 PD_FEAT_VERSION,  PD_FEAT_ARCH,
					 PD_FEAT_CPUDESC,  PD_FEAT_CPUID};
	char path[512];
	struct real_stats *a = calloc(2, sizeof(*a)), *b = a + 1;
	struct pd_file *fa = NULL, *fb = NULL;

	if (!a)
		return;
	if (shared_missing(st)) {
		free(a);
		return;
	}
	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	if (read_real(st, path, a, &fa))
		goto out;
	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	if (read_real(st, path, b, &fb))
		goto out;
	CHECK(st, pt_equal(&a->pt, &b->pt));
	CHECK(st, !memcmp(&a->tc, &b->tc, sizeof(a->tc)));
	CHECK(st, pd_nr_attrs(fa) == pd_nr_attrs(fb));
	for (size_t i = 0; i < pd_nr_attrs(fa) && i < pd_nr_attrs(fb); i++) {
		struct perf_event_attr x = pd_get_attr(fa, i)->attr;
		struct perf_event_attr y = pd_get_attr(fb, i)->attr;

		CHECKF(st, !memcmp(&x, &y, sizeof(x)), "attr %zu", i);
	}
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++) {
		const char *x = pd_feature_string(fa, feats[i]);
		const char *y = pd_feature_string(fb, feats[i]);

		CHECKF(st, x && y && !strcmp(x, y), "feature %u", feats[i]);
	}
	CHECK(st, a->nr_mmap2 == b->nr_mmap2);
	for (unsigned i = 0; i < a->nr_mmap2 && i < b->nr_mmap2; i++)
		CHECK(st, !strcmp(a->mmap2[i], b->mmap2[i]));
	CHECK(st, a->count[PERF_RECORD_MMAP] == b->count[PERF_RECORD_MMAP]);
	CHECK(st, a->nr_comms == b->nr_comms);
out:
	pd_close(fa);
	pd_close(fb);
	free(a);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_real_regular);
	RUN(&st, test_real_piped);
	RUN(&st, test_real_agree);
	return CHECK_DONE(&st);
}
