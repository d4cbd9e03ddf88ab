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

/* Code without a symbol: each side names it its own way. */
static inline int tf_same_name(const char *a, const char *b)
{
	return !strcmp(a, b) ||
	       (!strncmp(a, "[unknown", 8) && !strncmp(b, "[unknown", 8));
}

#endif
