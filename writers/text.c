/*
 * The slice tree as text: the format of mt-synth's truth.tsv, so that a
 * conversion compares line by line with the truth, and golden files are
 * readable diffs.
 */
#include "writers/writers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	uint32_t flag;
	const char *name;
} flag_names[] = {
	{MT_SLICE_INFERRED_START, "clipped_start"},
	{MT_SLICE_INFERRED_END, "clipped_end"},
	{MT_SLICE_TAIL, "tail"},
	{MT_SLICE_SYSCALL, "syscall"},
	{MT_SLICE_UNTRACED, "untraced"},
	{MT_SLICE_GAP, "gap"},
	{MT_SLICE_JOINED, "joined"},
	{MT_SLICE_UNKNOWN, "unknown"},
	{MT_SLICE_DEPTH_GUESSED, "depth_guessed"},
};

static int cmp_tid(const void *a, const void *b)
{
	const struct mt_thread *x = *(const struct mt_thread *const *)a;
	const struct mt_thread *y = *(const struct mt_thread *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void write_tree(FILE *o, const struct mt_trace *t,
		       const struct mt_thread *th, uint64_t *n)
{
	for (size_t i = 0; i < th->nr_slices; i++) {
		const struct mt_slice *s = &th->slices[i];
		int any = 0;

		fprintf(o, "%u\t%u\t%s\t%llu\t%llu\t", th->tid, s->depth,
			mt_str(&t->strs, s->name), (unsigned long long)s->ts,
			(unsigned long long)(s->ts + s->dur));
		for (size_t f = 0; f < sizeof(flag_names) / sizeof(*flag_names);
		     f++) {
			if (!(s->flags & flag_names[f].flag))
				continue;
			fprintf(o, "%s%s", any ? "," : "", flag_names[f].name);
			any = 1;
		}
		fputs(any ? "\n" : "-\n", o);
	}
	*n += th->nr_slices;
}

int wr_text(const struct mt_trace *t, const char *path, struct wr_stats *st,
	    char *err, size_t errlen)
{
	const struct mt_thread **order = NULL;
	char *tmp = NULL;
	FILE *o = stdout;
	uint64_t n = 0;
	int fd = -1;

	order = malloc((t->nr_threads ? t->nr_threads : 1) * sizeof(*order));
	if (!order)
		goto oom;
	for (size_t i = 0; i < t->nr_threads; i++)
		order[i] = &t->threads[i];
	qsort(order, t->nr_threads, sizeof(*order), cmp_tid);
	if (strcmp(path, "-")) {
		size_t len = strlen(path) + 16;

		tmp = malloc(len);
		if (!tmp)
			goto oom;
		snprintf(tmp, len, "%s.tmp.XXXXXX", path);
		fd = mkstemp(tmp);
		/* mkstemp makes it 0600; an output file is for reading. */
		if (fd >= 0)
			fchmod(fd, 0644);
		if (fd < 0 || !(o = fdopen(fd, "w"))) {
			snprintf(err, errlen, "%s: cannot create: %s", path,
				 strerror(errno));
			goto fail;
		}
		fd = -1;
	}
	fprintf(o, "tid\tdepth\tname\tstart_ns\tend_ns\tflags\n");
	for (size_t i = 0; i < t->nr_threads; i++)
		write_tree(o, t, order[i], &n);
	if (o == stdout) {
		if (fflush(o)) {
			snprintf(err, errlen, "standard output: %s",
				 strerror(errno));
			goto fail;
		}
	} else {
		int bad = ferror(o);

		bad |= fclose(o);
		o = NULL;
		if (bad || rename(tmp, path)) {
			snprintf(err, errlen, "%s: cannot write: %s", path,
				 strerror(errno));
			goto fail;
		}
		free(tmp);
		tmp = NULL;
	}
	if (st) {
		st->slices = n;
		st->tracks = (uint32_t)t->nr_threads;
		st->bytes = 0;
	}
	free(order);
	return 0;
oom:
	snprintf(err, errlen, "%s: out of memory", path);
fail:
	if (o && o != stdout)
		fclose(o);
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(order);
	return -1;
}
