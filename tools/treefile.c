/*
 * Reading a slice tree as text: see treefile.h.
 */
#include "tools/treefile.h"

#include <inttypes.h>
#include <stdlib.h>

int tf_open(struct tf_reader *rd, const char *path)
{
	rd->path = path;
	rd->f = fopen(path, "r");
	if (!rd->f) {
		perror(path);
		return -1;
	}
	if (!fgets(rd->line, sizeof(rd->line), rd->f)) {
		fprintf(stderr, "%s: no header line\n", path);
		tf_close(rd);
		return -1;
	}
	return 0;
}

/* Returns 0, or -1 when the line is not a tree row. */
static int parse(const char *line, struct tf_row *r)
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

int tf_next(struct tf_reader *rd, struct tf_row *r)
{
	if (!fgets(rd->line, sizeof(rd->line), rd->f))
		return 0;
	if (parse(rd->line, r)) {
		fprintf(stderr, "%s: bad line: %s", rd->path, rd->line);
		return -1;
	}
	return 1;
}

void tf_close(struct tf_reader *rd)
{
	if (rd->f)
		fclose(rd->f);
	rd->f = NULL;
}

int tf_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap : 1024;
	void *q;

	if (n <= *cap)
		return 0;
	while (c < n)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}
