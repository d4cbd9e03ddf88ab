/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: one capture through what mt-convert does with it:
 * the perf.data reader, the Intel PT decoder over the seed binaries,
 * segments, stitching, trigger hits, and the text, Perfetto and SQLite
 * writers (into a private directory on tmpfs).
 *
 * Any outcome but a crash, a sanitizer report, a leak or a hang is fine:
 * a bad capture is supposed to fail with a message.  A thread whose
 * joins make an inconsistent tree comes back unstitched from
 * stitch_trace() itself; mt-convert warns about it, the target need not.
 */
#include "decode/decode.h"
#include "model/model.h"
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "tests/fuzz/fuzz_env.h"
#include "writers/writers.h"

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

static void convert(const char *path, int no_compress)
{
	struct dec_opts dopts = {.binary_dirs = env.bin_dirs,
				 .nr_binary_dirs = 1,
				 .debug_root = env.binaries,
				 .jit_dir = env.binaries};
	struct seg_opts sopts = {0};
	struct wr_perfetto_opts popts = {.no_compress = no_compress};
	struct dec_capture *dc = NULL;
	struct seg_all *segs = NULL;
	struct seg_ends_table ends = {0};
	struct mt_trace t;
	char err[1024];

	mt_trace_init(&t);
	dopts.model = &t;
	if (dec_open(&dc, path, &dopts, err, sizeof(err)))
		goto out;
	if (seg_all_new(&segs, dec_image(dc), &t, &ends, &sopts))
		goto out;
	dec_set_sink(dc, seg_all_sink, segs);
	if (dec_run(dc, err, sizeof(err)))
		goto out;
	{
		size_t nr;
		struct dec_thread *th = dec_threads(dc, &nr);

		if (seg_all_finish(segs, th, nr, err, sizeof(err)))
			goto out;
	}
	seg_all_free(segs);
	segs = NULL;
	if (stitch_trace(&t, &ends, NULL, err, sizeof(err)))
		goto out;
	if (wr_text(&t, env.text, NULL, err, sizeof(err)))
		goto out;
	if (wr_perfetto(&t, env.perfetto, &popts, NULL, err, sizeof(err)))
		goto out;
	(void)wr_sqlite(&t, env.sqlite, NULL, err, sizeof(err));
out:
	seg_all_free(segs);
	seg_ends_free(&ends);
	dec_free(dc);
	mt_trace_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_env_load(&env, data, size))
		abort();
	/* Both Perfetto encodings, chosen by something the fuzzer varies
	 * anyway, so that no input byte changes meaning. */
	convert(env.input, (int)(size & 1));
	return 0;
}
