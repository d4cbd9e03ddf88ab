/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: mt-convert --info over one capture, the report
 * written to /dev/null, then the reader's remaining accessors (the
 * AUXTRACE index and the string features) that the report does not use.
 */
#include "perfdata/perfdata.h"
#include "report/report.h"
#include "tests/fuzz/fuzz_env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_env env;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull || fuzz_env_init(&env, "info"))
		abort();
	return 0;
}

static void accessors(const char *path)
{
	struct pd_file *f;
	char err[512];
	const struct pd_auxtrace_index *x;
	size_t n;

	if (pd_open(&f, path, err, sizeof(err)))
		return;
	(void)pd_auxtrace_index(f, &x, &n, err, sizeof(err));
	for (unsigned bit = 0; bit < 32; bit++)
		(void)pd_feature_string(f, bit);
	pd_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];

	if (fuzz_env_load(&env, data, size))
		abort();
	(void)report_print(devnull, env.input, err, sizeof(err));
	clearerr(devnull);
	accessors(env.input);
	return 0;
}
