/* SPDX-License-Identifier: MIT */
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
	{MT_SLICE_INLINED, "inlined"},
	{MT_SLICE_RESUMED, "resumed"},
	{MT_SLICE_RESUME_GUESSED, "resume_guessed"},
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
			mt_slice_str(t, s), (unsigned long long)s->ts,
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

/* Writes to o, which is standard output or the file named path. */
static int text_write(const struct mt_trace *t, FILE *o, const char *path,
		      struct wr_stats *st, char *err, size_t errlen)
{
	const struct mt_thread **order;
	uint64_t n = 0;

	order = malloc((t->nr_threads ? t->nr_threads : 1) * sizeof(*order));
	if (!order) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nr_threads; i++)
		order[i] = &t->threads[i];
	qsort(order, t->nr_threads, sizeof(*order), cmp_tid);
	fprintf(o, "tid\tdepth\tname\tstart_ns\tend_ns\tflags\n");
	for (size_t i = 0; i < t->nr_threads; i++)
		write_tree(o, t, order[i], &n);
	free(order);
	if (fflush(o) || ferror(o)) {
		snprintf(err, errlen, "%s: cannot write: %s", path,
			 strerror(errno));
		return -EIO;
	}
	if (st) {
		st->slices = n;
		st->tracks = (uint32_t)t->nr_threads;
		st->bytes = 0;
	}
	return 0;
}

int wr_text_to(const struct mt_trace *t, const struct mt_outfile *f,
	       struct wr_stats *st, char *err, size_t errlen)
{
	int fd = mt_outfile_open(f), rc;
	FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!o) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: cannot write: %s", f->path,
			 strerror(-rc));
		return rc;
	}
	rc = text_write(t, o, f->path, st, err, errlen);
	if (fclose(o) && !rc) {
		snprintf(err, errlen, "%s: cannot write: %s", f->path,
			 strerror(errno));
		rc = -EIO;
	}
	return rc;
}

int wr_text(const struct mt_trace *t, const char *path, struct wr_stats *st,
	    char *err, size_t errlen)
{
	struct mt_outfile f;
	int rc;

	if (!strcmp(path, "-"))
		return text_write(t, stdout, "standard output", st, err,
				  errlen);
	rc = mt_outfile_begin_stream(&f, path, err, errlen);
	if (rc)
		return rc;
	rc = wr_text_to(t, &f, st, err, errlen);
	if (rc)
		mt_outfile_abort(&f);
	else
		rc = mt_outfile_commit(&f, err, errlen);
	return rc;
}
