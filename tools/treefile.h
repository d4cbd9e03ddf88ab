/* SPDX-License-Identifier: MIT */
/*
 * One line of a slice tree as text (mt-synth's truth.tsv, mt-convert
 * --text, the emulator's --truth): "tid depth name start_ns end_ns flags",
 * flags comma-separated or "-".  Shared by the tools that compare trees.
 */
#ifndef MT_TREEFILE_H
#define MT_TREEFILE_H

#include <inttypes.h>
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
	TF_INLINED = 128,
};

struct tf_row {
	unsigned tid, depth;
	char name[1024];
	uint64_t start, end;
	unsigned flags; /* TF_* */
};

/* Returns 0, or -1 when the line is not a tree row. */
static inline int tf_parse(const char *line, struct tf_row *r)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{"clipped_start", TF_CLIP_START},
		{"clipped_end", TF_CLIP_END},
		{"tail", TF_TAIL},
		{"syscall", TF_SYSCALL},
		{"gap", TF_GAP},
		{"joined", TF_JOINED},
		{"depth_guessed", TF_DEPTH_GUESSED},
		{"inlined", TF_INLINED},
	};
	char flags[256];

	if (sscanf(line, "%u\t%u\t%1023[^\t]\t%" SCNu64 "\t%" SCNu64 "\t%255s",
		   &r->tid, &r->depth, r->name, &r->start, &r->end, flags) != 6)
		return -1;
	r->flags = 0;
	for (char *tok = strtok(flags, ","); tok; tok = strtok(NULL, ","))
		for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
			if (!strcmp(tok, names[i].name))
				r->flags |= names[i].bit;
	return 0;
}

/*
 * The lines of one of our tables (truth.tsv, gaps.tsv, mt-convert
 * --text): a header that starts with "tid\t", then a row a line, each to
 * fn with ctx.  fn returns 0 to go on, TF_BAD for a line it cannot read
 * (said here, with the file's name), or -1 after saying why itself.
 * Returns 0, or -1 when the file cannot be read, has no header, or fn
 * stopped.
 */
#define TF_BAD 1

static inline int tf_each_line(const char *path,
			       int (*fn)(const char *line, void *ctx),
			       void *ctx)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int rc = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "tid\t", 4)) {
		fprintf(stderr, "%s: no header line\n", path);
		fclose(f);
		return -1;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		rc = fn(line, ctx);
		if (rc == TF_BAD)
			fprintf(stderr, "%s: bad line: %s", path, line);
	}
	fclose(f);
	return rc ? -1 : 0;
}

struct tf_load_ctx {
	int (*fn)(const struct tf_row *r, void *ctx);
	void *ctx;
	/* the thread's inlined calls around the row, by depth */
	unsigned tid, inl[256];
	size_t nr_inl;
};

static inline int tf_load_line(const char *line, void *arg)
{
	struct tf_load_ctx *l = arg;
	struct tf_row r;

	if (tf_parse(line, &r))
		return TF_BAD;
	if (r.tid != l->tid)
		l->nr_inl = 0;
	l->tid = r.tid;
	while (l->nr_inl && l->inl[l->nr_inl - 1] >= r.depth)
		l->nr_inl--;
	if (r.flags & TF_INLINED) {
		if (l->nr_inl < sizeof(l->inl) / sizeof(l->inl[0]))
			l->inl[l->nr_inl++] = r.depth;
		return 0;
	}
	r.depth -= (unsigned)l->nr_inl;
	return l->fn(&r, l->ctx);
}

/*
 * Each row of a slice tree file to fn, as tf_each_line, but for the
 * calls a compiler inlined: the truth of a program knows only its real
 * calls, so those rows go and the rows under them move up.
 */
static inline int tf_load(const char *path,
			  int (*fn)(const struct tf_row *r, void *ctx),
			  void *ctx)
{
	struct tf_load_ctx l = {.fn = fn, .ctx = ctx, .tid = UINT32_MAX};

	return tf_each_line(path, tf_load_line, &l);
}

/* Code without a symbol: each side names it its own way. */
static inline int tf_same_name(const char *a, const char *b)
{
	return !strcmp(a, b) ||
	       (!strncmp(a, "[unknown", 8) && !strncmp(b, "[unknown", 8));
}

#endif
