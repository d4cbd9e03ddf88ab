/* SPDX-License-Identifier: MIT */
/*
 * report: what mt-convert --info prints about the sample capture and the
 * real ones, and its refusal of a time_shift no shift can take.
 */
#include "perfdata/perfdata.h"
#include "report/report.h"
#include "tests/unit/check.h"
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *info_of(const char *path, int *rc, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	*rc = report_print(m, path, err, errlen);
	fclose(m);
	return buf;
}

static void test_info(struct check_state *st)
{
	static const char *const want[] = {
		"format     perf.data (PERFILE2)",
		"on localhost, kernel 4.14.18, x86_64",
		"cpuid GenuineIntel,6,78,3), 4 of 4 cpus online",
		"records    257: SWITCH_CPU_WIDE 152 MMAP 56 SAMPLE 15",
		"intel_pt//     type 6 (intel_pt) config 0x300e601",
		"config     0x300e601: pt branch tsc mtc\n",
		"MTC every 2^3 = 8 CTC ticks, no CYC",
		"PSB        every 2^(3+11) = 16 KiB",
		"mode       full trace, per-CPU buffers",
		"time_mult 1789569706, time_shift 31, time_zero "
		"0xfffffff86343cb91",
		"(1.200 GHz)",
		"tsc:ctc    100/2",
		"max ratio 12",
		"switches   3 (cpu-wide",
		"pid 3174    tid 3174    perf -> echo (exec), traced, exited",
		"/usr/bin/coreutils build id "
		"c0a88cf4408ddef75343a69e41602f4d3de"
		"34e68",
		"kernel: 56 mappings",
		"AUX data   149968 bytes in 2 AUXTRACE chunks",
		"cpu 0      12240 bytes, 1 chunk",
		"cpu 3      137728 bytes, 1 chunk",
		"AUX records: 10, announcing 149968 bytes\n",
		"records   641.255848111 s .. 641.258090053 s",
		"AUX read  641.258053621 s .. 641.258076471 s",
		"binaries (9 files mapped in user space)",
		"/lib64/libc-2.23.so: ",
	};
	char path[512], dir[64], cap[128], self[512];
	char err[512] = "";
	char *out;
	int rc;
	ssize_t n;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	out = info_of(path, &rc, err, sizeof(err));
	CHECKF(st, rc == 0 && out, "%s", err);
	for (size_t i = 0; out && i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(st, strstr(out, want[i]), "missing '%s' in:\n%s",
		       want[i], out);
	free(out);

	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	out = info_of(path, &rc, err, sizeof(err));
	CHECKF(st,
	       rc == 0 && out && strstr(out, "format     piped") &&
		       strstr(out, "cpu 0      76400 bytes") &&
		       strstr(out, "-o - -- echo Hello, World!"),
	       "%s", out ? out : err);
	free(out);

	/*
	 * Binaries: this test program itself (present, a build id that is
	 * not its own), the capture (no ELF), and a missing file.
	 */
	tmpdir_make(dir, sizeof(dir));
	snprintf(cap, sizeof(cap), "%s/info.data", dir);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(st, n > 0);
	if (n > 0) {
		struct pd_writer *w;
		struct pd_mmap m = {.pid = PID,
				    .tid = PID,
				    .start = 0x400000,
				    .len = 0x1000,
				    .is_mmap2 = true,
				    .has_build_id = true,
				    .build_id_size = 20,
				    .filename = self};
		struct pd_mmap m2 = {.pid = PID,
				     .tid = PID,
				     .start = 0x500000,
				     .len = 0x1000,
				     .is_mmap2 = true,
				     .filename = cap};
		struct pd_mmap m3 = m2;

		self[n] = 0;
		m3.filename = "/nonexistent/libgone.so";
		memcpy(m.build_id, bid_a, 20);
		rc = pd_writer_open(&w, cap, PD_WRITE_FILE, err, sizeof(err));
		CHECK(st, !rc);
		/* the capture maps itself: present, and not an ELF file */
		if (!rc) {
			CHECK(st, !pd_write_mmap2(w, &m, NULL));
			CHECK(st, !pd_write_mmap2(w, &m2, NULL));
			CHECK(st, !pd_write_mmap2(w, &m3, NULL));
			CHECK(st, !pd_writer_finish(w, err, sizeof(err)));
		}
		out = info_of(cap, &rc, err, sizeof(err));
		CHECKF(st, rc == 0 && out, "%s", err);
		if (out) {
			CHECKF(st,
			       strstr(out, "present, build id DIFFERS (file "
					   "has "),
			       "%s", out);
			CHECKF(st,
			       strstr(out, "/nonexistent/libgone.so: "
					   "missing\n"),
			       "%s", out);
			CHECKF(st, strstr(out, "no AUXTRACE_INFO record"), "%s",
			       out);
			CHECKF(st, strstr(out, "present, not an ELF file"),
			       "%s", out);
			CHECKF(st, strstr(out, "1 of 3 missing"), "%s", out);
		}
		free(out);
	}
	/* A corrupt capture: an error naming it and nothing printed. */
	{
		size_t len;
		uint8_t *d = slurp(cap, &len);

		if (d) {
			CHECK(st, !spit(cap, d, len / 2));
			out = info_of(cap, &rc, err, sizeof(err));
			CHECKF(st, rc < 0 && strstr(err, cap) && out && !*out,
			       "rc %d: %s", rc, err);
			free(out);
		}
		free(d);
	}
	tmpdir_remove(dir);
}

/* A capture whose AUXTRACE_INFO has the given time_shift. */
static int write_shift(const char *path, uint16_t shift, char *err,
		       size_t errlen)
{
	struct pd_writer *w;
	struct perf_event_attr a, b;
	static const uint64_t ids[] = {11};
	struct pd_pt_info pt;
	int rc;

	rc = pd_writer_open(&w, path, PD_WRITE_FILE, err, errlen);
	if (rc)
		return rc;
	sample_attrs(&a, &b);
	sample_pt(&pt, true);
	pt.time_shift = shift;
	if ((rc = pd_writer_add_attr(w, &a, ids, 1)) ||
	    (rc = pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED, true))) {
		pd_writer_abort(w);
		return rc;
	}
	return pd_writer_finish(w, err, errlen);
}

/* Shifting a 64-bit value by 64 or more is undefined, and no kernel
 * reports such a shift: the record is refused as malformed, by the
 * reader and so by --info, instead of each user guarding its shifts. */
static void test_bad_time_shift(struct check_state *st)
{
	char dir[64], path[128];
	char err[512] = "";
	size_t n;
	char *out;
	int rc = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/shift.data", dir);
	CHECK(st, !write_shift(path, 64, err, sizeof(err)));
	CHECK(st, walk_all(path, err, sizeof(err), &n) == -EBADMSG);
	CHECKF(st, strstr(err, "time_shift is 64 or more"), "%s", err);
	out = info_of(path, &rc, err, sizeof(err));
	CHECK(st, rc == -EBADMSG && strstr(err, "time_shift"));
	free(out);
	CHECK(st, !write_shift(path, 0xffff, err, sizeof(err)));
	CHECK(st, walk_all(path, err, sizeof(err), &n) == -EBADMSG);
	/* the largest valid shift still converts and prints */
	CHECK(st, !write_shift(path, 63, err, sizeof(err)));
	CHECKF(st, !walk_all(path, err, sizeof(err), &n), "%s", err);
	out = info_of(path, &rc, err, sizeof(err));
	CHECKF(st, rc == 0 && out && strstr(out, "time_shift 63,"), "%s",
	       rc ? err : "no time_shift 63 in the report");
	free(out);
	tmpdir_remove(dir);
}

/* An emulated Go capture's goroutine switches, thousands of items: one
 * line that counts them and their threads, none a switch. */
static void test_goroutine_items(struct check_state *st)
{
	char dir[64], path[128];
	char err[512] = "";
	struct pd_writer *w = NULL;
	struct perf_event_attr a, b;
	static const uint64_t ids[] = {11};
	struct pd_pt_info pt;
	struct pd_ext_buf ext = {0};
	char *out;
	int rc = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/go.data", dir);
	for (uint32_t i = 0; i < 3000 && !rc; i++) {
		struct pd_ext_goroutine g = {.pid = 7,
					     .tid = 7 + i % 3,
					     .time = 1000 + i,
					     .ip = 0x401000 + i,
					     .g = 0xc000000000 +
						  (i % 11) * 0x1000,
					     .goid = i % 11};

		rc = pd_ext_add_goroutine(&ext, &g);
	}
	CHECK(st, !rc);
	sample_attrs(&a, &b);
	sample_pt(&pt, true);
	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_FILE, err, sizeof(err)));
	CHECK(st,
	      w && !pd_writer_add_attr(w, &a, ids, 1) &&
		      !pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED, true) &&
		      !pd_writer_set_feature(w, PD_FEAT_MT_EXT, ext.data,
					     ext.len));
	CHECKF(st, w && !pd_writer_finish(w, err, sizeof(err)), "%s", err);
	pd_ext_buf_free(&ext);
	out = info_of(path, &rc, err, sizeof(err));
	CHECKF(st,
	       rc == 0 && out &&
		       strstr(out, "goroutine switches 3000, on 3 threads\n") &&
		       !strstr(out, "item    type"),
	       "%s",
	       rc    ? err
	       : out ? out
		     : "no report");
	free(out);
	tmpdir_remove(dir);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_info);
	RUN(&st, test_bad_time_shift);
	RUN(&st, test_goroutine_items);
	return CHECK_DONE(&st);
}
