/* SPDX-License-Identifier: MIT */
/*
 * File helpers the unit tests share: a scratch directory and whole-file
 * reads and writes.  Static inline, so a test uses what it needs.
 */
#ifndef MT_TESTFS_H
#define MT_TESTFS_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static inline int testfs_rm_one(const char *p, const struct stat *sb, int flag,
				struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* A fresh directory under /tmp; the test cannot go on without it. */
static inline void tmpdir_make(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/mt-unit.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
}

static inline void tmpdir_remove(const char *dir)
{
	nftw(dir, testfs_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The whole file, NUL-terminated past *len; NULL if unreadable. */
static inline uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *d = NULL;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		d = malloc((size_t)n + 1);
		if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
			free(d);
			d = NULL;
		}
		if (d) {
			d[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return d;
}

static inline int spit(const char *path, const void *d, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return -1;
	if (len && fwrite(d, 1, len, f) != len)
		rc = -1;
	if (fclose(f))
		rc = -1;
	return rc;
}

#endif
