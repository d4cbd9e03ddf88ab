/* SPDX-License-Identifier: MIT */
/*
 * The fuzz target (tests/fuzz/fuzz_convert.c, linked here without
 * libFuzzer) and mt-convert run one pipeline: a capture given to both
 * comes out as the same bytes, the Perfetto trace, the database and the
 * text.  The capture is mt-synth's, with decode gaps that stitching
 * joins by asking the code, and its binary is the code of both.  Needs
 * MT_BUILD (the programs); skipped without it.
 */
#include "tests/unit/check.h"

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

static void test_fuzz_entry_same_as_mt_convert(struct check_state *st)
{
	const char *build = getenv("MT_BUILD");
	char dir[] = "/tmp/mt-test-convert.XXXXXX";
	char cmd[4 * PATH_MAX + 512], path[PATH_MAX], caps[PATH_MAX];
	const char *scratch, *outs[] = {"t.pftrace", "t.sqlite", "t.txt"};
	uint8_t *cap = NULL;
	size_t n = 0;

	if (!build || !*build) {
		SKIP(st, "MT_BUILD not set");
		return;
	}
	if (!mkdtemp(dir)) {
		CHECK(st, 0);
		return;
	}
	snprintf(caps, sizeof(caps), "%s/s", dir);
	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/mt-synth' --seed 9 --branches 20000 --threads 2 "
		 "--final-stack --start-depth 3 --gap-every 5000 -o '%s' "
		 ">/dev/null",
		 build, caps);
	CHECK(st, system(cmd) == 0);
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
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		CHECK(st, 0);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_fuzz_entry_same_as_mt_convert);
	return st.failed ? 1 : 0;
}
