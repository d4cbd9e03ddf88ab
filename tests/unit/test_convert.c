/* SPDX-License-Identifier: MIT */
/*
 * convert/: mt_convert() as its callers see it (the outputs it tells of,
 * the stages it times, a failure that leaves nothing), mt-convert
 * --stages, and the fuzz target (tests/fuzz/fuzz_convert.c, linked here
 * without libFuzzer) beside mt-convert: one pipeline, so a capture given
 * to both comes out as the same bytes, the Perfetto trace, the database
 * and the text.  The capture is mt-synth's, with decode gaps that
 * stitching joins by asking the code, and its binary is the code of
 * both.  Needs MT_BUILD (the programs); skipped without it.
 */
#include "convert/convert.h"
#include "tests/unit/check.h"
#include "writers/writers.h"

#include <errno.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file into *out (malloc'd); -1 when it cannot be read. */
static int slurp(const char *path, uint8_t **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	size_t cap = 0, len = 0;

	if (!f)
		return -1;
	for (;;) {
		size_t got;

		if (len == cap) {
			uint8_t *nb = realloc(b, cap ? cap * 2 : 65536);

			if (!nb) {
				free(b);
				fclose(f);
				return -1;
			}
			b = nb;
			cap = cap ? cap * 2 : 65536;
		}
		got = fread(b + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*out = b;
	*n = len;
	return 0;
}

static void check_same(struct check_state *st, const char *a, const char *b)
{
	uint8_t *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;

	CHECKF(st, !slurp(a, &x, &nx), "%s", a);
	CHECKF(st, !slurp(b, &y, &ny), "%s", b);
	if (x && y)
		CHECKF(st, nx == ny && !memcmp(x, y, nx),
		       "%s (%zu bytes) and %s (%zu bytes) differ", a, nx, b,
		       ny);
	CHECKF(st, nx > 0, "%s is empty", a);
	free(x);
	free(y);
}

/* A scratch directory dir with mt-synth's capture in dir/s; 0, or -1
 * (with the test skipped or failed). */
static int make_capture(struct check_state *st, char *dir, const char **build)
{
	char cmd[2 * PATH_MAX + 256];

	*build = getenv("MT_BUILD");
	if (!*build || !**build) {
		SKIP(st, "MT_BUILD not set");
		return -1;
	}
	if (!mkdtemp(dir)) {
		CHECK(st, 0);
		return -1;
	}
	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/mt-synth' --seed 9 --branches 20000 --threads 2 "
		 "--final-stack --start-depth 3 --gap-every 5000 -o '%s/s' "
		 ">/dev/null",
		 *build, dir);
	CHECK(st, system(cmd) == 0);
	return 0;
}

static void remove_dir(struct check_state *st, const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(st, system(cmd) == 0);
}

/* What the callbacks saw, in order: "o2" the named outputs grown to 2,
 * "p0" the parts emptied, "c+" the commit begun, "c-" ended, "s:NAME"
 * a stage ended; and whether each output told of was there under its
 * temporary name. */
struct seen {
	char log[1024];
	size_t at;
	int missing;
};

static void seen_add(struct seen *s, const char *what)
{
	if (s->at < sizeof(s->log))
		s->at += (size_t)snprintf(s->log + s->at,
					  sizeof(s->log) - s->at, "%s ", what);
}

static void saw_outputs(void *ctx, const struct mt_outfile *f, size_t n,
			bool parts)
{
	struct seen *s = ctx;
	char what[32];

	snprintf(what, sizeof(what), "%c%zu", parts ? 'p' : 'o', n);
	seen_add(s, what);
	for (size_t i = 0; i < n; i++)
		if (f[i].tmp && access(f[i].tmp, F_OK))
			s->missing++;
}

static void saw_commit(void *ctx, bool start)
{
	seen_add(ctx, start ? "c+" : "c-");
}

static void saw_stage(void *ctx, enum mt_convert_stage stage)
{
	char what[32];

	snprintf(what, sizeof(what), "s:%s", mt_convert_stage_name(stage));
	seen_add(ctx, what);
}

/* The outputs are told of as they are begun and before they are
 * renamed, with the commit around the renames; every stage that ran is
 * timed, and those not asked for did not run. */
static void test_outputs_and_stages(struct check_state *st)
{
	char dir[] = "/tmp/mt-test-convert.XXXXXX";
	char caps[PATH_MAX], path[PATH_MAX], pf[PATH_MAX], db[PATH_MAX];
	const char *build, *bins[1];
	struct seen seen = {0};
	struct mt_convert_result r;
	char err[1024] = "";

	if (make_capture(st, dir, &build))
		return;
	snprintf(caps, sizeof(caps), "%s/s", dir);
	snprintf(path, sizeof(path), "%s/raw.bin", caps);
	snprintf(pf, sizeof(pf), "%s/o.pftrace", dir);
	snprintf(db, sizeof(db), "%s/o.sqlite", dir);
	bins[0] = caps;
	struct mt_convert_opts o = {.capture = path,
				    .perfetto = pf,
				    .sqlite = db,
				    .binary_dirs = bins,
				    .nr_binary_dirs = 1,
				    .on_outputs = saw_outputs,
				    .on_commit = saw_commit,
				    .on_stage = saw_stage,
				    .ctx = &seen};

	mt_convert_result_init(&r);
	CHECKF(st, mt_convert(&o, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(st,
	       strstr(seen.log,
		      "o0 o1 o2 s:outputs s:read s:decode "
		      "s:segments s:stitch s:perfetto "
		      "s:sqlite c+ o0 p0 c- s:commit o0 p0 ") == seen.log,
	       "%s", seen.log);
	CHECK(st, seen.missing == 0);
	CHECK(st, !access(pf, F_OK) && !access(db, F_OK));
	for (int s = 0; s < MT_STAGE_NR; s++) {
		bool want = s != MT_STAGE_REGIONS && s != MT_STAGE_TEXT;

		CHECKF(st, r.stages[s].ran == want, "%s",
		       mt_convert_stage_name((enum mt_convert_stage)s));
		CHECK(st, r.stages[s].wall_s >= 0 && r.stages[s].cpu_s >= 0);
	}
	CHECK(st, r.trace.nr_threads == 2 && r.aux_bytes > 0);
	mt_convert_result_free(&r);

	/* A cut that keeps nothing fails in its stage, with the outputs
	 * taken away before the code comes back. */
	remove(pf);
	remove(db);
	memset(&seen, 0, sizeof(seen));
	o.between = "no_such_function";
	mt_convert_result_init(&r);
	CHECK(st, mt_convert(&o, &r, err, sizeof(err)) == -ENOENT);
	CHECKF(st, strstr(err, "no call of no_such_function"), "%s", err);
	CHECK(st, r.failed == MT_STAGE_REGIONS && r.stages[r.failed].ran);
	CHECK(st, access(pf, F_OK) && access(db, F_OK));
	CHECKF(st, strstr(seen.log, "s:regions o0 p0 ") != NULL, "%s",
	       seen.log);
	CHECKF(st, !strstr(seen.log, "c+"), "%s", seen.log);
	mt_convert_result_free(&r);
	remove_dir(st, dir);
}

/* mt-convert --stages: a line per stage that ran, after the summary. */
static void test_mt_convert_stages(struct check_state *st)
{
	char dir[] = "/tmp/mt-test-convert.XXXXXX";
	char cmd[3 * PATH_MAX + 256], line[256], path[PATH_MAX + 16];
	const char *build;
	int lines = 0, decode = 0;
	FILE *f;

	if (make_capture(st, dir, &build))
		return;
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && '%s/bin/mt-convert' s/raw.bin -o t.pftrace "
		 "--binaries s -q --stages 2>stages",
		 dir, build);
	CHECK(st, system(cmd) == 0);
	snprintf(path, sizeof(path), "%s/stages", dir);
	f = fopen(path, "r");
	CHECK(st, f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		char name[32];
		double wall, cpu, own, wr;
		long peak;

		CHECKF(st,
		       sscanf(line, "stage %31s %lf %lf %ld %lf %lf", name,
			      &wall, &cpu, &peak, &own, &wr) == 6 &&
			       wall >= 0 && cpu >= 0 && own >= 0 && wr >= 0,
		       "%s", line);
		/* Only the database's pages are written on a thread of
		 * their own (and only when it has pages past SQLite's). */
		CHECKF(st, !wr || !strcmp(name, "sqlite"), "%s", line);
		/* (The Perfetto trace and the database end in either
		 * order: the peaks are not in order.) */
		CHECKF(st, peak > 1024, "%s", line);
		decode += !strcmp(name, "decode");
		lines++;
	}
	if (f)
		fclose(f);
	CHECK(st, lines == 8 && decode == 1);
	remove_dir(st, dir);
}

static void test_fuzz_entry_same_as_mt_convert(struct check_state *st)
{
	char dir[] = "/tmp/mt-test-convert.XXXXXX";
	char cmd[4 * PATH_MAX + 512], path[PATH_MAX], caps[PATH_MAX];
	const char *build, *scratch;
	const char *outs[] = {"t.pftrace", "t.sqlite", "t.txt"};
	uint8_t *cap = NULL;
	size_t n = 0;

	if (make_capture(st, dir, &build))
		return;
	snprintf(caps, sizeof(caps), "%s/s", dir);
	snprintf(path, sizeof(path), "%s/raw.bin", caps);
	CHECK(st, !slurp(path, &cap, &n));
	/* The fuzz entry picks the Perfetto encoding by the size. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && '%s/bin/mt-convert' '%s' -o t.pftrace --text "
		 "t.txt --binaries '%s' --debug-root '%s' --jit-dir '%s' -q%s",
		 dir, build, path, caps, caps, caps,
		 n & 1 ? " --no-compress" : "");
	CHECK(st, system(cmd) == 0);

	setenv("MT_FUZZ_BINARIES", caps, 1);
	CHECK(st, !LLVMFuzzerInitialize(NULL, NULL));
	if (cap)
		CHECK(st, !LLVMFuzzerTestOneInput(cap, n));
	scratch = getenv("MT_FUZZ_SCRATCH_DIR");
	CHECK(st, scratch != NULL);
	for (size_t i = 0; scratch && i < sizeof(outs) / sizeof(*outs); i++) {
		char mine[PATH_MAX + 32], theirs[PATH_MAX + 32];

		snprintf(mine, sizeof(mine), "%s/%s", scratch, outs[i]);
		snprintf(theirs, sizeof(theirs), "%s/%s", dir, outs[i]);
		check_same(st, mine, theirs);
	}
	free(cap);
	remove_dir(st, dir);
}

int main(void)
{
	struct check_state st = {0};

	wr_sqlite_setup();
	RUN(&st, test_outputs_and_stages);
	RUN(&st, test_mt_convert_stages);
	/* Last: the fuzz target's environment stays set up until exit. */
	RUN(&st, test_fuzz_entry_same_as_mt_convert);
	return st.failed ? 1 : 0;
}
