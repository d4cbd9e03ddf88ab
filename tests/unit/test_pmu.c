/* SPDX-License-Identifier: MIT */
/*
 * The intel_pt PMU from fake sysfs trees (Skylake-, Ice Lake- and
 * Atom-like caps), the config built from format files, the refusals with
 * their exact messages, and the AUX ring copy at every wrap position.
 */
#include "capture/pmu_internal.h"
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct fake {
	const char *name;
	const char *type;
	bool psb_cyc, mtc;
	const char *mtc_periods, *cycle_thresholds, *psb_periods;
	const char *nonturbo;
};

/* perf's own intel_pt format files, as the kernel writes them. */
static const char *const formats[][2] = {
	{"pt", "config:0"},
	{"cyc", "config:1"},
	{"pwr_evt", "config:4"},
	{"fup_on_ptw", "config:5"},
	{"mtc", "config:9"},
	{"tsc", "config:10"},
	{"noretcomp", "config:11"},
	{"ptw", "config:12"},
	{"branch", "config:13"},
	{"mtc_period", "config:14-17"},
	{"cyc_thresh", "config:19-22"},
	{"psb_period", "config:24-27"},
};

static void put(const char *dir, const char *name, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	spit(path, text, strlen(text));
}

static void make_fake(const char *root, const struct fake *f)
{
	char sub[4096];

	put(root, "type", f->type);
	put(root, "max_nonturbo_ratio", f->nonturbo);
	snprintf(sub, sizeof(sub), "%s/format", root);
	mkdir(sub, 0755);
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
		put(sub, formats[i][0], formats[i][1]);
	snprintf(sub, sizeof(sub), "%s/caps", root);
	mkdir(sub, 0755);
	put(sub, "psb_cyc", f->psb_cyc ? "1\n" : "0\n");
	put(sub, "mtc", f->mtc ? "1\n" : "0\n");
	put(sub, "mtc_periods", f->mtc_periods);
	put(sub, "cycle_thresholds", f->cycle_thresholds);
	put(sub, "psb_periods", f->psb_periods);
}

static const struct fake skylake = {"skylake", "8\n",	 true,	 true,
				    "249\n",   "3fff\n", "3f\n", "24\n"};
static const struct fake icelake = {"icelake", "9\n",	 true,	 true,
				    "249\n",   "3fff\n", "3f\n", "20\n"};
static const struct fake atom = {"atom", "7\n", false, false,
				 "0\n",	 "0\n", "1\n", "16\n"};

static void test_probe_and_config(struct check_state *st)
{
	char dir[64], err[256];
	struct pt_pmu p;
	struct pt_request r = {.timing = PT_TIMING_NORMAL};
	uint64_t config;

	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &skylake);
	CHECKF(st, !pmu_probe(dir, &p, err, sizeof(err)), "%s", err);
	CHECK(st, p.type == 8 && p.psb_cyc && p.mtc);
	CHECK(st, p.mtc_periods == 0x249 && p.cycle_thresholds == 0x3fff);
	CHECK(st, p.max_nonturbo_ratio == 24);
	CHECK(st, pmu_field(&p, "mtc_period") &&
			  pmu_field(&p, "mtc_period")->lo == 14 &&
			  pmu_field(&p, "mtc_period")->hi == 17);
	/* normal: pt, branch, tsc, mtc (period 3), cyc (threshold 1) */
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECKF(st,
	       config == (1ull | 1ull << 13 | 1ull << 10 | 1ull << 9 |
			  3ull << 14 | 1ull << 1 | 1ull << 19),
	       "%llx", (unsigned long long)config);
	r.timing = PT_TIMING_LOW;
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, config == (1ull | 1ull << 13 | 1ull << 10));
	r.timing = PT_TIMING_HIGH;
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, config & 1ull << 11);
	/* --ptwrite: ptw and fup_on_ptw, where caps/ptwrite says so. */
	r.timing = PT_TIMING_LOW;
	r.ptwrite = true;
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st, strstr(err, "caps/ptwrite is 0") != NULL, "%s", err);
	{
		char caps[4096];

		snprintf(caps, sizeof(caps), "%s/caps", dir);
		put(caps, "ptwrite", "1\n");
	}
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)) && p.ptwrite);
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECKF(st,
	       config == (1ull | 1ull << 13 | 1ull << 10 | 1ull << 12 |
			  1ull << 5),
	       "%llx", (unsigned long long)config);
	r.ptwrite = false;
	tmpdir_remove(dir);

	/* Another layout of the same fields is followed, not assumed. */
	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &icelake);
	{
		char fmt[4096];

		snprintf(fmt, sizeof(fmt), "%s/format", dir);
		put(fmt, "tsc", "config:40");
	}
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)) && p.type == 9);
	r.timing = PT_TIMING_LOW;
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, config == (1ull | 1ull << 13 | 1ull << 40));
	tmpdir_remove(dir);
}

static void test_refusals(struct check_state *st)
{
	char dir[64], err[256];
	struct pt_pmu p;
	struct pt_request r = {.timing = PT_TIMING_NORMAL};
	uint64_t config;

	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &atom);
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) < 0);
	CHECKF(st,
	       !strcmp(err, "this CPU's Intel PT cannot count cycles "
			    "(caps/psb_cyc is 0): use --timing low"),
	       "%s", err);
	r.timing = PT_TIMING_LOW;
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	/* custom: an MTC period the caps do not list */
	tmpdir_remove(dir);
	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &skylake);
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	r = (struct pt_request){
		.custom = true, .tsc = true, .mtc = true, .mtc_period = 4};
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) < 0);
	CHECKF(st,
	       !strcmp(err, "mtc_period=4 is not one this CPU offers "
			    "(caps/mtc_periods is 249)"),
	       "%s", err);
	r.mtc_period = 6;
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, (config >> 14 & 0xf) == 6);
	r = (struct pt_request){.custom = true, .cyc = true, .cyc_thresh = 16};
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) < 0);
	CHECKF(st, strstr(err, "cyc_thresh=16") != NULL, "%s", err);
	tmpdir_remove(dir);

	/* No PMU at all: the one line that says why and what to do. */
	CHECK(st, pmu_probe("/nonexistent/intel_pt", &p, err, sizeof(err)) < 0);
	CHECKF(st,
	       !strcmp(err, "no intel_pt PMU (/nonexistent/intel_pt/type "
			    "is missing): a virtual machine, an AMD CPU or "
			    "a CPU older than Broadwell?; use --emulate"),
	       "%s", err);
}

/* --timing-custom: the syntax, then each field against the caps. */
static void test_custom(struct check_state *st)
{
	char dir[64], err[256];
	struct pt_pmu p;
	struct pt_request r;
	uint64_t config;
	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{"tsc=1,foo=2",
		 "--timing-custom: unknown field 'foo' (tsc, mtc, "
		 "cyc, noretcomp, mtc_period, cyc_thresh, "
		 "psb_period)"},
		{"tsc", "--timing-custom: tsc wants a value (tsc=N)"},
		{"tsc=", "--timing-custom: tsc wants a value (tsc=N)"},
		{"tsc=2", "--timing-custom: tsc=2 is not a value of tsc (0 to "
			  "1)"},
		{"tsc=1,mtc_period=16", "--timing-custom: mtc_period=16 is not "
					"a value of mtc_period (0 to 15)"},
		{"tsc=1x", "--timing-custom: tsc=1x is not a value of tsc (0 "
			   "to 1)"},
		{"tsc=1,", "--timing-custom: 'tsc=1,' ends in a comma"},
		{"noretcomp=1", "--timing-custom: 'noretcomp=1' has no timing "
				"at all (set tsc=1, mtc=1 or cyc=1)"},
		{"", "--timing-custom: '' has no timing at all (set tsc=1, "
		     "mtc=1 or cyc=1)"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = 0;
		CHECKF(st,
		       pmu_parse_custom(bad[i].spec, &r, err, sizeof(err)) ==
			       -EINVAL,
		       "%s", bad[i].spec);
		CHECKF(st, !strcmp(err, bad[i].msg), "%s: %s", bad[i].spec,
		       err);
	}
	CHECK(st, !pmu_parse_custom("tsc=1,mtc=1,mtc_period=3,cyc=1,"
				    "cyc_thresh=2,noretcomp=1,psb_period=0x2",
				    &r, err, sizeof(err)));
	CHECK(st, r.custom && r.tsc && r.mtc && r.cyc && r.noretcomp &&
			  r.mtc_period == 3 && r.cyc_thresh == 2 &&
			  r.psb_period == 2);

	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &skylake);
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECKF(st,
	       config == (1ull | 1ull << 13 | 1ull << 10 | 1ull << 9 |
			  3ull << 14 | 1ull << 1 | 2ull << 19 | 1ull << 11 |
			  2ull << 24),
	       "%llx", (unsigned long long)config);
	/* Fields not named are off. */
	CHECK(st, !pmu_parse_custom("tsc=1", &r, err, sizeof(err)));
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, config == (1ull | 1ull << 13 | 1ull << 10));
	/* A period or threshold without its packets is a mistake. */
	CHECK(st,
	      !pmu_parse_custom("tsc=1,mtc_period=3", &r, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -EINVAL);
	CHECKF(st, !strcmp(err, "mtc_period=3 without mtc=1 has no effect"),
	       "%s", err);
	CHECK(st,
	      !pmu_parse_custom("tsc=1,cyc_thresh=3", &r, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -EINVAL);
	CHECKF(st, !strcmp(err, "cyc_thresh=3 without cyc=1 has no effect"),
	       "%s", err);
	/* Values the caps do not list. */
	CHECK(st,
	      !pmu_parse_custom("tsc=1,psb_period=7", &r, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st,
	       !strcmp(err, "psb_period=7 is not one this CPU offers "
			    "(caps/psb_periods is 3f)"),
	       "%s", err);
	CHECK(st,
	      !pmu_parse_custom("cyc=1,cyc_thresh=13", &r, err, sizeof(err)));
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	tmpdir_remove(dir);

	/* A CPU without CYC, MTC or a configurable PSB period. */
	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &atom);
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	CHECK(st, !pmu_parse_custom("tsc=1,mtc=1", &r, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st,
	       !strcmp(err, "this CPU's Intel PT has no MTC timing packets "
			    "(caps/mtc is 0): use --timing low"),
	       "%s", err);
	CHECK(st,
	      !pmu_parse_custom("tsc=1,psb_period=1", &r, err, sizeof(err)));
	CHECK(st, pmu_config(&p, &r, &config, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st,
	       !strcmp(err, "psb_period=1: this CPU's PSB period is fixed "
			    "(caps/psb_cyc is 0)"),
	       "%s", err);
	CHECK(st, !pmu_parse_custom("tsc=1,noretcomp=1", &r, err, sizeof(err)));
	CHECK(st, !pmu_config(&p, &r, &config, err, sizeof(err)));
	CHECK(st, config == (1ull | 1ull << 13 | 1ull << 10 | 1ull << 11));
	tmpdir_remove(dir);
}

/* Address ranges against caps/ip_filtering and num_address_ranges. */
static void test_filter_caps(struct check_state *st)
{
	char dir[64], caps[4096], err[256];
	struct pt_pmu p;

	tmpdir_make(dir, sizeof(dir));
	make_fake(dir, &skylake);
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	CHECK(st, !pmu_check_filters(&p, 0, err, sizeof(err)));
	CHECK(st, pmu_check_filters(&p, 1, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st,
	       !strcmp(err, "this CPU's Intel PT cannot filter by address "
			    "(caps/ip_filtering is 0)"),
	       "%s", err);
	snprintf(caps, sizeof(caps), "%s/caps", dir);
	put(caps, "ip_filtering", "1\n");
	put(caps, "num_address_ranges", "2\n");
	CHECK(st, !pmu_probe(dir, &p, err, sizeof(err)));
	CHECK(st, p.ip_filtering && p.num_address_ranges == 2);
	CHECK(st, !pmu_check_filters(&p, 2, err, sizeof(err)));
	CHECK(st, pmu_check_filters(&p, 3, err, sizeof(err)) == -ENOTSUP);
	CHECKF(st,
	       !strcmp(err, "3 address ranges asked for, this CPU's Intel PT "
			    "has 2 (caps/num_address_ranges)"),
	       "%s", err);
	tmpdir_remove(dir);
}

/* --include-kernel: perf_event_paranoid and the capabilities. */
static void test_kernel_check(struct check_state *st)
{
	char dir[64], path[4096], err[512], want[4200];

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/perf_event_paranoid", dir);
	put(dir, "perf_event_paranoid", "2\n");
	CHECK(st, pmu_check_kernel(path, 0, err, sizeof(err)) == -EACCES);
	snprintf(want, sizeof(want),
		 "--include-kernel: %s is 2 (kernel tracing needs 1 or less) "
		 "and this process lacks CAP_PERFMON: run as root, or lower "
		 "it",
		 path);
	CHECKF(st, !strcmp(err, want), "%s", err);
	/* CAP_PERFMON (38) or CAP_SYS_ADMIN (21) overrides it. */
	CHECK(st, !pmu_check_kernel(path, 1ull << 38, err, sizeof(err)));
	CHECK(st, !pmu_check_kernel(path, 1ull << 21, err, sizeof(err)));
	CHECK(st, pmu_check_kernel(path, 1ull << 20, err, sizeof(err)) < 0);
	put(dir, "perf_event_paranoid", "1\n");
	CHECK(st, !pmu_check_kernel(path, 0, err, sizeof(err)));
	put(dir, "perf_event_paranoid", "-1\n");
	CHECK(st, !pmu_check_kernel(path, 0, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK(st, pmu_check_kernel(path, 0, err, sizeof(err)) == -EACCES);
	snprintf(want, sizeof(want),
		 "--include-kernel: cannot read %s, and this process lacks "
		 "CAP_PERFMON: run as root",
		 path);
	CHECKF(st, !strcmp(err, want), "%s", err);
	tmpdir_remove(dir);
}

static void test_ring_copy(struct check_state *st)
{
	enum { SIZE = 64 };
	uint8_t ring[SIZE], out[SIZE];

	/* A ring that never wrapped: what was written, from the start. */
	for (size_t i = 0; i < SIZE; i++)
		ring[i] = (uint8_t)i;
	CHECK(st, pmu_ring_copy(ring, SIZE, 0, out) == 0);
	CHECK(st, pmu_ring_copy(ring, SIZE, 10, out) == 10 &&
			  !memcmp(out, ring, 10));
	/* Every wrap position: the stream written byte by byte as 0, 1, 2...
	 * (mod 256) must come out as its newest SIZE bytes, in order. */
	for (uint64_t head = SIZE; head < 5 * SIZE; head++) {
		bool ok = true;

		for (uint64_t pos = head - SIZE; pos < head; pos++)
			ring[pos % SIZE] = (uint8_t)pos;
		if (pmu_ring_copy(ring, SIZE, head, out) != SIZE)
			ok = false;
		for (size_t i = 0; i < SIZE && ok; i++)
			ok = out[i] == (uint8_t)(head - SIZE + i);
		CHECKF(st, ok, "head %llu", (unsigned long long)head);
	}
}

/* --multi-snapshot: only what the ring gained since the last one. */
static void test_ring_copy_since(struct check_state *st)
{
	enum { SIZE = 64 };
	uint8_t ring[SIZE], out[SIZE];

	for (uint64_t head = 1; head < 5 * SIZE; head += 3)
		for (uint64_t since = 0; since <= head; since += 5) {
			uint64_t from =
				head - since > SIZE ? head - SIZE : since;
			size_t n;
			bool ok;

			for (uint64_t pos = head > SIZE ? head - SIZE : 0;
			     pos < head; pos++)
				ring[pos % SIZE] = (uint8_t)pos;
			n = pmu_ring_copy_since(ring, SIZE, head, since, out);
			ok = n == head - from;
			for (size_t i = 0; i < n && ok; i++)
				ok = out[i] == (uint8_t)(from + i);
			CHECKF(st, ok, "head %llu since %llu: %zu bytes",
			       (unsigned long long)head,
			       (unsigned long long)since, n);
		}
	CHECK(st, pmu_ring_copy_since(ring, SIZE, 10, 10, out) == 0);
	CHECK(st, pmu_ring_copy_since(ring, 0, 10, 0, out) == 0);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_probe_and_config);
	RUN(&st, test_refusals);
	RUN(&st, test_custom);
	RUN(&st, test_filter_caps);
	RUN(&st, test_kernel_check);
	RUN(&st, test_ring_copy_since);
	RUN(&st, test_ring_copy);
	return CHECK_DONE(&st);
}
