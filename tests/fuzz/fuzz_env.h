/* SPDX-License-Identifier: MIT */
/*
 * What both fuzz targets share: the input handed to the library as a
 * file (the library takes paths), and where the binaries that the seed
 * captures map are found.
 *
 * The environment is set up once, in LLVMFuzzerInitialize, and only read
 * afterwards.
 */
#ifndef MT_FUZZ_ENV_H
#define MT_FUZZ_ENV_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct fuzz_env {
	int fd;			  /* memfd holding the current input */
	char input[64];		  /* /proc/self/fd/N */
	char binaries[PATH_MAX];  /* tests/fuzz/binaries */
	char scratch[PATH_MAX];	  /* private directory for outputs */
	const char *bin_dirs[1];  /* binaries, as dec_opts wants it */
	char text[PATH_MAX + 16]; /* outputs inside scratch */
	char perfetto[PATH_MAX + 16];
	char sqlite[PATH_MAX + 16];
};

/* Prints why and returns -1 if the environment cannot be set up. */
int fuzz_env_init(struct fuzz_env *e, const char *name);
/* Replaces the memfd's content with the input; -1 on failure. */
int fuzz_env_load(const struct fuzz_env *e, const uint8_t *data, size_t size);

#endif
