/* SPDX-License-Identifier: MIT */
/*
 * writers: the converted trace (model/) to files people open.
 *
 * wr_X(path) writes to a temporary name beside path and renames it into
 * place only when complete, so a failed run never leaves a half-written
 * output.  wr_X_to(f) writes into the temporary file of an mt_outfile
 * begun by the caller and leaves the rename to it, so that outputs that
 * belong together are put in place together (mt_outfile_commit_all).
 * Errors return a negative code with one line (naming the file) in err.
 */
#ifndef MT_WRITERS_H
#define MT_WRITERS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/util.h"

struct wr_perfetto_opts {
	int no_compress;    /* write packets plainly, not in zlib batches */
	uint32_t max_depth; /* nesting per track before a continuation
			       track; 0 means Perfetto's limit, 512 */
	unsigned jobs;	    /* threads compressing batches (at most 4
			       are used); 0: one */
};

struct wr_stats {
	uint64_t bytes;	 /* size of the file written */
	uint64_t slices; /* slices written */
	uint32_t tracks; /* thread tracks, continuation ones included */
	double cpu_s;	 /* CPU seconds of the writer's own threads, which
			    the caller's thread clock does not see */
	double write_s;	 /* seconds the writes to the disk took on the
			    thread that makes them in order (the database's
			    slice table), which no more cores shorten */
};

int wr_perfetto(const struct mt_trace *t, const char *path,
		const struct wr_perfetto_opts *o, struct wr_stats *st,
		char *err, size_t errlen);

int wr_perfetto_to(const struct mt_trace *t, const struct mt_outfile *f,
		   const struct wr_perfetto_opts *o, struct wr_stats *st,
		   char *err, size_t errlen);

int wr_sqlite(const struct mt_trace *t, const char *path, struct wr_stats *st,
	      char *err, size_t errlen);
int wr_sqlite_to(const struct mt_trace *t, const struct mt_outfile *f,
		 struct wr_stats *st, char *err, size_t errlen);

struct wr_sqlite_opts {
	/* threads that may build the slice table, its indexes and the
	 * function figures side by side (2 or more: they are); 0: one.
	 * The file is the same for any number. */
	unsigned jobs;
	/* slices a part of the function figures summed on those threads
	 * (0: 262144): for tests, which cut threads in many parts */
	unsigned fn_part;
};
/* wr_sqlite_to() with options (o may be NULL: the defaults). */
int wr_sqlite_to_opts(const struct mt_trace *t, const struct mt_outfile *f,
		      const struct wr_sqlite_opts *o, struct wr_stats *st,
		      char *err, size_t errlen);

/*
 * Process-wide SQLite settings for speed (no allocation statistics, which
 * cost a global mutex per allocation).  Call once from main(), before
 * any other SQLite use; optional.
 */
void wr_sqlite_setup(void);

/*
 * The slice tree as text, one slice per line in the truth.tsv format of
 * mt-synth (tid, depth, name, start_ns, end_ns, flags), threads by tid,
 * each in pre-order.  path "-" writes to standard output.
 */
int wr_text(const struct mt_trace *t, const char *path, struct wr_stats *st,
	    char *err, size_t errlen);
int wr_text_to(const struct mt_trace *t, const struct mt_outfile *f,
	       struct wr_stats *st, char *err, size_t errlen);

#endif
