/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: one capture through mt-convert's own pipeline,
 * mt_convert() (convert/), with the seed binaries as its code: the
 * perf.data reader, the Intel PT decoder, segments, stitching with the
 * code's checks, trigger hits, and the text, Perfetto and SQLite
 * writers, whose outputs are committed together (into a private
 * directory on tmpfs).
 *
 * Any outcome but a crash, a sanitizer report, a leak or a hang is fine:
 * a bad capture is supposed to fail with a message.  tests/unit/
 * test_convert.c runs this entry without libFuzzer beside mt-convert.
 */
#include "convert/convert.h"
#include "tests/fuzz/fuzz_env.h"
#include "writers/writers.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_env env;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	wr_sqlite_setup();
	if (fuzz_env_init(&env, "convert"))
		abort();
	return 0;
}

/* What mt-convert CAPTURE -o t.pftrace --text t.txt --binaries B
 * --debug-root B --jit-dir B [--no-compress] does. */
static void convert(const char *path, bool no_compress)
{
	struct mt_convert_opts o = {.capture = path,
				    .perfetto = env.perfetto,
				    .sqlite = env.sqlite,
				    .text = env.text,
				    .no_compress = no_compress,
				    .binary_dirs = env.bin_dirs,
				    .nr_binary_dirs = 1,
				    .debug_root = env.binaries,
				    .jit_dir = env.binaries};
	struct mt_convert_result r;
	char err[1024];

	if (!mt_convert_result_init(&r))
		(void)mt_convert(&o, &r, err, sizeof(err));
	mt_convert_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_env_load(&env, data, size))
		abort();
	/* Both Perfetto encodings, chosen by something the fuzzer varies
	 * anyway, so that no input byte changes meaning. */
	convert(env.input, size & 1);
	return 0;
}
