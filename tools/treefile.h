/*
 * A slice tree as text (mt-synth's truth.tsv, mt-convert --text, the
 * emulator's --truth): a header line, then one line per slice, "tid depth
 * name start_ns end_ns flags", flags comma-separated or "-".  Read one
 * way by the tools that compare trees.
 */
#ifndef MT_TREEFILE_H
#define MT_TREEFILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
	TF_CLIP_START = 1,
	TF_CLIP_END = 2,
	TF_TAIL = 4,
	TF_SYSCALL = 8,
	TF_GAP = 16,
	TF_JOINED = 32,
	TF_DEPTH_GUESSED = 64,
};

struct tf_row {
	unsigned tid, depth;
	char name[1024];
	uint64_t start, end;
	unsigned flags; /* TF_* */
};

struct tf_reader {
	FILE *f;
	const char *path;
	char line[4096];
};

/* Opens path and reads past its header.  Returns 0, or -1 said on
 * stderr. */
int tf_open(struct tf_reader *rd, const char *path);
/* The next row: 1, 0 at the end, -1 (said on stderr) on a line that is
 * no row. */
int tf_next(struct tf_reader *rd, struct tf_row *r);
void tf_close(struct tf_reader *rd);

/* Room for n elements of size bytes in *p (*cap of them now), doubling.
 * Returns 0, or -1 when out of memory (*p is then unchanged). */
int tf_grow(void **p, size_t *cap, size_t n, size_t size);

/* Code without a symbol: each side names it its own way. */
static inline int tf_same_name(const char *a, const char *b)
{
	return !strcmp(a, b) ||
	       (!strncmp(a, "[unknown", 8) && !strncmp(b, "[unknown", 8));
}

#endif
