/* SPDX-License-Identifier: MIT */
/*
 * convert: the whole conversion of a capture, from reading it to its
 * outputs in place: decode -> segments -> stitch -> hits -> regions ->
 * writers, and the commit of every output together.  mt-convert and the
 * fuzz target run it; they differ only in the options they pass.
 *
 * Every output is written under a temporary name and renamed into place
 * with the others only when all are complete, so a failed run leaves the
 * previous outputs as they were and nothing half-written.  The library
 * installs no signal handler: a caller that removes the temporary files
 * on a fatal signal learns of them through on_outputs and on_commit.
 */
#ifndef MT_CONVERT_H
#define MT_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "regions/regions.h"
#include "util/util.h"

/* The steps, in order, for the failure and the timings of a result. */
enum mt_convert_stage {
	MT_STAGE_OUTPUTS, /* the outputs begun, empty, before any work */
	MT_STAGE_READ,	  /* the capture opened (its processes and hits into
			     the model), its code found, checked */
	MT_STAGE_DECODE,
	MT_STAGE_SEGMENTS,
	MT_STAGE_STITCH,
	MT_STAGE_REGIONS, /* --time, --between */
	MT_STAGE_TEXT,
	MT_STAGE_PERFETTO, /* the trace, or its parts, written and synced */
	MT_STAGE_SQLITE,
	MT_STAGE_COMMIT,
	MT_STAGE_NR
};

/* "read", "decode", ...: the name --stages prints. */
const char *mt_convert_stage_name(enum mt_convert_stage s);

struct mt_convert_opts {
	const char *capture;
	/* The outputs; NULL: not written.  text "-" is standard output.
	 * The Perfetto trace and the text are written in order (a pipe or
	 * a device will do), the database with seeks. */
	const char *perfetto, *sqlite, *text;
	uint64_t split; /* the trace as parts of at most split slices
			 * (perfetto names them); 0: whole */
	bool no_compress;

	/* Where the code is (decode/'s dec_opts). */
	const char *const *binary_dirs;
	size_t nr_binary_dirs;
	const char *debug_root, *jit_dir;
	bool no_inline;
	unsigned jobs;	   /* 0: one a core */
	size_t piece_size; /* 0: the decoder's default */
	/* events a piece of a thread's call tree has (0: segments/'s) */
	size_t piece_events;

	/* Only these threads (nr_tids 0: all); a --tid with no such thread
	 * or no trace fails. */
	const uint32_t *tids;
	size_t nr_tids;
	/* Refuse a capture that looks as if it needs more memory than is
	 * available, or than max_memory (0: what the system has). */
	bool no_memory_check;
	uint64_t max_memory;

	bool no_final_stack, no_stitch;
	/* Go: resumes picked from the code alone, as a hardware trace's. */
	bool no_goroutine_ids;

	/* Cuts (regions/): window when non-NULL, time its text as given,
	 * for messages; or between (and until) when non-NULL. */
	const struct rg_window *window;
	const char *time;
	const char *between, *until;

	/* More slices than this in the Perfetto trace draws one line to
	 * warn (0: no limit). */
	uint64_t ui_max_slices;

	/* Called with one line (no newline) per missing binary, per thread
	 * left unstitched, per trace too big for the UI; from one thread at
	 * a time.  NULL: none. */
	void (*warn)(void *ctx, const char *line);

	/* Called now and then while decoding; non-zero stops it. */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	/* Called as each stage ends, whether or not it succeeded; its time
	 * is in the result by then. */
	void (*on_stage)(void *ctx, enum mt_convert_stage s);
	/*
	 * The outputs begun so far, under their temporary names (f[i].tmp):
	 * the named ones (parts false) and the parts of split (parts true),
	 * each set called again whenever it grows, and with n 0 before its
	 * files are renamed or removed.  The arrays stay where they are
	 * until then: a signal handler may remove their tmp files.
	 */
	void (*on_outputs)(void *ctx, const struct mt_outfile *f, size_t n,
			   bool parts);
	/* Called with true just before the outputs are renamed into place,
	 * and false once they all are (or none is): a signal in between
	 * would find some renamed and others not. */
	void (*on_commit)(void *ctx, bool start);
	void *ctx;
};

/*
 * The wall and CPU time of one stage (ran false: it did not run; a
 * stage that failed has the time until it did).  Stages that run one
 * after the other count the process's CPU time, their threads' too (a
 * parallel decode's CPU time exceeds its wall time).  Two pairs
 * overlap: the segments are built while the capture is decoded (on a
 * thread of their own, or on this one from the decode threads' events),
 * so decode's times hold that building and segments' only what is left
 * after the decode (the events of per-CPU traces, closing every
 * thread); the Perfetto trace and the database are written on two
 * threads at once, so each counts its own wall time and its own
 * thread's CPU time, and together they took the longer of the two.
 * hits also holds the check that --tid left a trace.
 */
struct mt_convert_time {
	bool ran;
	double wall_s, cpu_s;
	/* The process's peak RSS at the stage's end (KiB): the stage
	 * that raised it is where the memory went. */
	long peak_kb;
	/* The CPU time of the thread that ran the stage (not its pools'
	 * or workers'): work no more cores can share, such as handing the
	 * events the decode's workers make over in order.  The decode's
	 * is the longer of that and the busiest builder thread's (which
	 * builds the segments of its threads, as the events come: in the
	 * longest thread's time at best). */
	double own_cpu_s;
	/* The seconds the writes of its output took on the one thread
	 * that makes them in order (the database's slice table: most of
	 * the bytes written), waiting on the disk: what more cores do not
	 * shorten either, and no CPU clock sees. */
	double write_s;
};

struct mt_convert_result {
	struct mt_trace trace; /* what was written */
	/* The decode: AUX bytes decoded, and with a parallel decode its
	 * pieces, the threads that decoded them and the pieces joined to
	 * the piece before, and how often a run waited for the hand-over
	 * (decode/'s dec_stats). */
	uint64_t aux_bytes, pieces, joined, waits;
	unsigned dec_threads;
	/* The threads the threads' call trees were built on, 0 when on the
	 * decode's own (segments/'s seg_all_par()) */
	unsigned build_threads;
	/* Its threads' events were built in pieces at once: how many, the
	 * events the thread's own builder decided as it joined them, and
	 * those it built again (a piece's guess that did not hold) */
	uint64_t build_pieces, build_joined_events, build_rebuilt;
	uint64_t first, last; /* perf time span of the trace */
	size_t nr_missing;    /* binaries not found */
	struct rg_stats rg;   /* --time, --between */
	/* On failure, the stage that failed. */
	enum mt_convert_stage failed;
	struct mt_convert_time stages[MT_STAGE_NR];
};

/* Before mt_convert(); mt_convert_result_free() after, failed or not.
 * The process calls wr_sqlite_setup() (writers/) once before.  0, or
 * -ENOMEM. */
int mt_convert_result_init(struct mt_convert_result *r);
void mt_convert_result_free(struct mt_convert_result *r);

/*
 * Converts o->capture into the outputs o names, all committed together.
 * Returns 0, or a negative errno value with one line in err (r->failed
 * says where): -ESPIPE from MT_STAGE_OUTPUTS is an output that cannot be
 * written as it must be (a database on a pipe), found before any work.
 */
int mt_convert(const struct mt_convert_opts *o, struct mt_convert_result *r,
	       char *err, size_t errlen);

#endif
