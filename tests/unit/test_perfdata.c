/* SPDX-License-Identifier: MIT */
/*
 * perfdata: writer/reader round trips in both file modes, records whose
 * trailers differ, a big AUXTRACE, the writer's errors, time conversion
 * and record names.  (Damaged files, the real captures, perf's verdict:
 * test_perfdata_*.c; the --info report: test_report.c.)
 */
#include "perfdata/perfdata.h"
#include "tests/unit/check.h"
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void roundtrip(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128];
	char err[512] = "";
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.data", dir);
	rc = write_sample(path, mode, V_ALL, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (!rc)
		check_sample(st, path, mode, V_ALL);
	/* Only the final file is left: the temporary one was renamed. */
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.0", path,
			 (long)getpid());
		CHECK(st, access(tmp, F_OK) != 0);
	}
	tmpdir_remove(dir);
}

static void test_roundtrip_file(struct check_state *st)
{
	roundtrip(st, PD_WRITE_FILE);
}

static void test_roundtrip_piped(struct check_state *st)
{
	roundtrip(st, PD_WRITE_PIPED);
}

/* Records whose trailer layouts differ: the IDENTIFIER picks the attr. */
static void test_trailer_by_identifier(struct check_state *st)
{
	char dir[64], path[128];
	char err[512] = "";
	struct pd_writer *w;
	struct perf_event_attr a, b;
	static const uint64_t ids_a[] = {1}, ids_b[] = {2};
	uint8_t r[64] = {0};
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ident.data", dir);
	memset(&a, 0, sizeof(a));
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_IDENTIFIER;
	b = a;
	b.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_STREAM_ID |
			PERF_SAMPLE_IDENTIFIER;
	rc = pd_writer_open(&w, path, PD_WRITE_FILE, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		goto out;
	CHECK(st, !pd_writer_add_attr(w, &a, ids_a, 1));
	CHECK(st, !pd_writer_add_attr(w, &b, ids_b, 1));
	/* ITRACE_START in b's layout: TIME STREAM_ID IDENTIFIER */
	put32(r, PERF_RECORD_ITRACE_START);
	put32(r + 8, 7);
	put32(r + 12, 8);
	put64(r + 16, 777);
	put64(r + 24, 55);
	put64(r + 32, 2);
	put16(r + 6, 40);
	CHECK(st, !pd_writer_raw(w, r, 40));
	/* and in a's layout: TID TIME CPU IDENTIFIER */
	put64(r + 16, ((uint64_t)8 << 32) | 7);
	put64(r + 24, 888);
	put64(r + 32, 3);
	put64(r + 40, 1);
	put16(r + 6, 48);
	CHECK(st, !pd_writer_raw(w, r, 48));
	/* An id nobody owns: the trailer cannot be read, the body can. */
	put64(r + 40, 99);
	CHECK(st, !pd_writer_raw(w, r, 48));
	rc = pd_writer_finish(w, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		goto out;
	rc = pd_open(&f, path, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		goto out;
	CHECK(st, pd_next(f, &cur, &ev, err, sizeof(err)) == 1);
	CHECK(st, ev.attr == pd_get_attr(f, 1) && ev.sid.time == 777 &&
			  ev.sid.stream_id == 55 && ev.sid.id == 2 &&
			  !ev.sid.have_tid && !ev.sid.have_cpu &&
			  ev.u.itrace_start.pid == 7);
	CHECK(st, pd_next(f, &cur, &ev, err, sizeof(err)) == 1);
	CHECK(st, ev.attr == pd_get_attr(f, 0) && ev.sid.time == 888 &&
			  ev.sid.pid == 7 && ev.sid.tid == 8 &&
			  ev.sid.cpu == 3 && ev.sid.id == 1 &&
			  ev.u.itrace_start.tid == 8);
	CHECK(st, pd_next(f, &cur, &ev, err, sizeof(err)) == 1);
	CHECK(st, !ev.attr && !ev.sid.have_time && ev.u.itrace_start.pid == 7);
	CHECK(st, pd_next(f, &cur, &ev, err, sizeof(err)) == 0);
	pd_close(f);
out:
	tmpdir_remove(dir);
}

/* AUX data larger than the writer's buffer goes around it, in order. */
static void test_big_auxtrace(struct check_state *st)
{
	static const size_t sizes[] = {5u << 20, 1, (6u << 20) + 3, 4095};
	char dir[64], path[128];
	char err[512] = "";
	struct pd_writer *w;
	struct pd_file *f;
	struct pd_event ev;
	const struct pd_auxtrace_index *idx;
	size_t nx, k = 0;
	uint64_t cur = 0;
	uint8_t *data = malloc((6u << 20) + 16);
	int rc;

	CHECK(st, data != NULL);
	if (!data)
		return;
	for (size_t i = 0; i < (6u << 20) + 16; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 13));
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/big.data", dir);
	rc = pd_writer_open(&w, path, PD_WRITE_FILE, err, sizeof(err));
	CHECK(st, !rc);
	if (rc)
		goto out;
	for (size_t i = 0; i < 4; i++) {
		struct pd_auxtrace a = {.size = sizes[i],
					.reference = 1000 + i,
					.idx = (uint32_t)i,
					.tid = 7,
					.cpu = UINT32_MAX};

		CHECK(st, !pd_write_auxtrace(w, &a, data + i));
		CHECK(st, !pd_write_finished_round(w));
	}
	CHECK(st, !pd_writer_finish(w, err, sizeof(err)));
	rc = pd_open(&f, path, err, sizeof(err));
	CHECKF(st, !rc, "%s", err);
	if (rc)
		goto out;
	CHECK(st,
	      !pd_auxtrace_index(f, &idx, &nx, err, sizeof(err)) && nx == 4);
	while ((rc = pd_next(f, &cur, &ev, err, sizeof(err))) == 1) {
		if (ev.type != PD_RECORD_AUXTRACE)
			continue;
		CHECK(st, k < 4);
		if (k >= 4)
			break;
		CHECK(st, ev.u.auxtrace.size == ((sizes[k] + 7) & ~(size_t)7));
		CHECK(st, ev.u.auxtrace.idx == k &&
				  ev.u.auxtrace.reference == 1000 + k);
		CHECK(st, !memcmp(ev.u.auxtrace.data, data + k, sizes[k]));
		CHECK(st, k >= nx || idx[k].offset == ev.file_offset);
		k++;
	}
	CHECKF(st, rc == 0 && k == 4, "%s", err);
	pd_close(f);
out:
	free(data);
	tmpdir_remove(dir);
}

static void test_writer_errors(struct check_state *st)
{
	char dir[64], path[128], tmp[160];
	char err[512] = "";
	struct pd_writer *w;
	struct perf_event_attr a;
	struct pd_pt_info pt;
	uint8_t big[70000] = {0};
	uint8_t rec[16] = {0};

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/w.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.0", path, (long)getpid());
	memset(&a, 0, sizeof(a));
	sample_pt(&pt, true);

	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_PIPED, err, sizeof(err)));
	CHECK(st, access(tmp, F_OK) == 0 && access(path, F_OK) != 0);
	a.size = 10;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -EINVAL);
	a.size = 0;
	CHECK(st, !pd_writer_add_attr(w, &a, NULL, 0));
	a.size = PERF_ATTR_SIZE_VER5;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -EINVAL);
	CHECK(st, pd_writer_error(w, err, sizeof(err)) == -EINVAL &&
			  strstr(err, path) != NULL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 12, false) == -EINVAL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 16, true) == -EINVAL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 15, false) == -EINVAL);
	CHECK(st, pd_writer_set_feature(w, 0, "x", 1) == -EINVAL);
	CHECK(st, pd_writer_set_feature(w, 256, "x", 1) == -EINVAL);
	CHECK(st,
	      pd_writer_set_feature(w, PD_FEAT_AUXTRACE, "x", 1) == -EINVAL);
	CHECK(st, pd_writer_set_feature(w, PD_FEAT_MT_EXT, big, sizeof(big)) ==
			  -EINVAL);
	CHECK(st, pd_write_task(w, PERF_RECORD_COMM, &(struct pd_task){0},
				NULL) == -EINVAL);
	put32(rec, PD_RECORD_AUXTRACE);
	put16(rec + 6, 16);
	CHECK(st, pd_writer_raw(w, rec, 16) == -EINVAL);
	put32(rec, PD_RECORD_FINISHED_ROUND);
	CHECK(st, pd_writer_raw(w, rec, 8) == -EINVAL);
	CHECK(st, !pd_writer_raw(w, rec, 16));
	a.size = 0;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -EINVAL);
	pd_writer_abort(w);
	CHECK(st, access(tmp, F_OK) != 0 && access(path, F_OK) != 0);

	/* A long feature is fine in a regular file. */
	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_FILE, err, sizeof(err)));
	CHECK(st, !pd_writer_set_feature(w, PD_FEAT_MT_EXT, big, sizeof(big)));
	CHECK(st, !pd_writer_finish(w, err, sizeof(err)));
	CHECK(st, access(path, F_OK) == 0 && access(tmp, F_OK) != 0);
	{
		struct pd_file *f;
		size_t n = 0;

		int orc = pd_open(&f, path, err, sizeof(err));

		CHECK(st, !orc);
		if (!orc) {
			CHECK(st, pd_feature(f, PD_FEAT_MT_EXT, &n) &&
					  n == sizeof(big));
			CHECK(st, pd_nr_attrs(f) == 0);
			pd_close(f);
			/* the empty data section holds one FINISHED_ROUND */
			CHECK(st,
			      !walk_all(path, err, sizeof(err), &n) && n == 1);
		}
	}

	snprintf(path, sizeof(path), "%s/no/such/dir/w.data", dir);
	CHECK(st, pd_writer_open(&w, path, PD_WRITE_FILE, err, sizeof(err)) ==
				  -EIO &&
			  strstr(err, path));
	tmpdir_remove(dir);
}

static void test_timeconv(struct check_state *st)
{
	struct pd_pt_info pt;
	static const uint64_t tscs[] = {0,
					1,
					2,
					1199,
					808742885798ull,
					808742913218ull,
					1ull << 40,
					4016188169984ull,
					4016188233530ull,
					(1ull << 47) + 12345,
					(1ull << 55) - 1};

	sample_pt(&pt, true);
	/* The real captures: AUXTRACE references against sample times. */
	CHECK(st, pd_tsc_to_perf_time(808742885798ull, &pt) == 641258053621ull);
	CHECK(st, pd_tsc_to_perf_time(808742913218ull, &pt) == 641258076471ull);
	CHECK(st,
	      pd_tsc_to_perf_time(4016188169984ull, &pt) == 3314129122780ull);
	/* time_zero is negative: tsc 0 is ~32.7 s before perf's zero */
	CHECK(st, (int64_t)pd_tsc_to_perf_time(0, &pt) ==
			  (int64_t)0xfffffff86343cb91ull);
	/*
	 * Both directions take the floor, as the kernel and perf do, so a
	 * round trip may lose one unit of the finer side (a tick is
	 * 0.83 ns here): tsc -> ns -> tsc lands at most 2 ticks early,
	 * ns -> tsc -> ns at most 1 ns early.
	 */
	for (size_t i = 0; i < sizeof(tscs) / sizeof(tscs[0]); i++) {
		uint64_t ns = pd_tsc_to_perf_time(tscs[i], &pt);
		uint64_t back = pd_perf_time_to_tsc(ns, &pt);
		int64_t d = (int64_t)(ns - pd_tsc_to_perf_time(back, &pt));

		CHECKF(st, back <= tscs[i] && tscs[i] - back <= 2,
		       "tsc %" PRIu64 " -> %" PRIu64 " -> %" PRIu64, tscs[i],
		       ns, back);
		CHECKF(st, d == 0 || d == 1, "tsc %" PRIu64, tscs[i]);
		if (i)
			CHECK(st,
			      (int64_t)(ns - pd_tsc_to_perf_time(tscs[i - 1],
								 &pt)) >= 0);
	}
	for (uint64_t ns = 641258000000ull; ns < 641258000000ull + 5000;
	     ns += 7) {
		uint64_t tsc = pd_perf_time_to_tsc(ns, &pt);
		uint64_t again = pd_tsc_to_perf_time(tsc, &pt);

		CHECKF(st, again <= ns && ns - again <= 1,
		       "ns %" PRIu64 " -> %" PRIu64 " -> %" PRIu64, ns, tsc,
		       again);
		/* and tsc is the last tick at or before ns */
		CHECK(st, pd_tsc_to_perf_time(tsc + 2, &pt) > again);
	}
	/* Identity parameters, and no conversion at all. */
	memset(&pt, 0, sizeof(pt));
	pt.time_mult = 1;
	CHECK(st, pd_tsc_to_perf_time(123456789, &pt) == 123456789);
	CHECK(st, pd_perf_time_to_tsc(123456789, &pt) == 123456789);
	pt.time_mult = 0;
	CHECK(st, pd_tsc_to_perf_time(42, &pt) == 42);
	/* A 3 GHz TSC, with a shift above 32. */
	pt.time_shift = 33;
	pt.time_mult = (uint32_t)((1ull << 33) / 3);
	pt.time_zero = 1000;
	CHECK(st,
	      pd_tsc_to_perf_time(3000000000ull, &pt) >= 999999999ull + 1000 &&
		      pd_tsc_to_perf_time(3000000000ull, &pt) <=
			      1000000000ull + 1000);
	CHECK(st,
	      pd_perf_time_to_tsc(1000000000ull + 1000, &pt) >= 2999999997ull &&
		      pd_perf_time_to_tsc(1000000000ull + 1000, &pt) <=
			      3000000003ull);
}

static void test_record_names(struct check_state *st)
{
	CHECK(st, !strcmp(pd_record_name(PERF_RECORD_MMAP2), "MMAP2"));
	CHECK(st, !strcmp(pd_record_name(PD_RECORD_AUXTRACE), "AUXTRACE"));
	CHECK(st, !strcmp(pd_record_name(PD_RECORD_FINISHED_INIT),
			  "FINISHED_INIT"));
	CHECK(st, !strcmp(pd_record_name(0), "UNKNOWN"));
	CHECK(st, !strcmp(pd_record_name(63), "UNKNOWN"));
	CHECK(st, !strcmp(pd_record_name(1000), "UNKNOWN"));
}

/* A goroutine switch item reads back as written; a short one is refused. */
static void test_ext_goroutine(struct check_state *st)
{
	struct pd_ext_buf b = {0};
	struct pd_ext_goroutine in = {.pid = 7,
				      .tid = 9,
				      .time = 1234,
				      .ip = 0x401000,
				      .g = 0xc000006000,
				      .goid = 18},
				out = {0};
	uint32_t type = 0, size = 0;

	CHECK(st, pd_ext_add_goroutine(&b, &in) == 0);
	CHECK(st, b.len == 48);
	if (b.len == 48) {
		memcpy(&type, b.data, 4);
		memcpy(&size, b.data + 4, 4);
		CHECK(st, type == PD_EXT_GOROUTINE && size == 40);
		CHECK(st, pd_ext_parse_goroutine(b.data + 8, size, &out) == 0);
		CHECK(st, !memcmp(&in, &out, sizeof(in)));
		CHECK(st,
		      pd_ext_parse_goroutine(b.data + 8, 32, &out) == -EBADMSG);
	}
	pd_ext_buf_free(&b);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_roundtrip_file);
	RUN(&st, test_roundtrip_piped);
	RUN(&st, test_trailer_by_identifier);
	RUN(&st, test_big_auxtrace);
	RUN(&st, test_writer_errors);
	RUN(&st, test_timeconv);
	RUN(&st, test_record_names);
	RUN(&st, test_ext_goroutine);
	return CHECK_DONE(&st);
}
