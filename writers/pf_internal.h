/* SPDX-License-Identifier: MIT */
/*
 * What the Perfetto writer's rooms share: perfetto.c (the file, the
 * sequences, the threads' slices), pf_threads.c (the threads' sequences
 * encoded side by side) and pf_marks.c (the trigger hits and the values
 * the program wrote, on tracks and sequences of their own).
 * Field numbers are those of tests/proto/perfetto_subset.proto.
 */
#ifndef MT_PF_INTERNAL_H
#define MT_PF_INTERNAL_H

#include "model/model.h"
#include "writers/pb_internal.h"

#include <libdeflate.h>
#include <stddef.h>
#include <stdint.h>

/* Trace */
#define F_TRACE_PACKET 1

/* TracePacket */
#define F_CLOCK_SNAPSHOT  6
#define F_TIMESTAMP	  8
#define F_SEQ_ID	  10
#define F_TRACK_EVENT	  11
#define F_INTERNED_DATA	  12
#define F_SEQ_FLAGS	  13
#define F_COMPRESSED	  50
#define F_TS_CLOCK_ID	  58
#define F_PACKET_DEFAULTS 59
#define F_TRACK_DESC	  60
#define F_SYSTEM_INFO	  45

#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2

/* ClockSnapshot, ClockSnapshot.Clock */
#define F_CS_CLOCKS	       1
#define F_CLOCK_ID	       1
#define F_CLOCK_TIMESTAMP      2
#define F_CLOCK_INCREMENTAL    3
#define BUILTIN_CLOCK_BOOTTIME 6  /* Perfetto's, not <time.h>'s */
#define CLOCK_SEQ	       64 /* the first sequence-scoped clock id */

/* SystemInfo */
#define F_SI_SERVICE_VERSION 4

/* TracePacketDefaults, TrackEventDefaults */
#define F_DEF_CLOCK_ID		58
#define F_DEF_TRACK_EVENT	11
#define F_TRACK_EVENT_DEF_TRACK 11

/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define F_TD_UUID    1
#define F_TD_NAME    2
#define F_TD_PROCESS 3
#define F_TD_THREAD  4
#define F_TD_PARENT  5
#define F_PD_PID     1
#define F_PD_NAME    6
#define F_THD_PID    1
#define F_THD_TID    2
#define F_THD_NAME   5

/* TrackEvent */
#define F_TE_ANNOTATION	 4
#define F_TE_TYPE	 9
#define F_TE_NAME_IID	 10
#define F_TE_TRACK	 11
#define F_TE_NAME	 23
#define TYPE_SLICE_BEGIN 1
#define TYPE_SLICE_END	 2
#define TYPE_INSTANT	 3

/* InternedData and its entries (all {iid = 1, name/str = 2}) */
#define F_ID_EVENT_NAMES  2
#define F_ID_ANNOT_NAMES  3
#define F_ID_ANNOT_VALUES 29
#define F_IID		  1
#define F_INTERNED_NAME	  2

/* DebugAnnotation */
#define F_DA_NAME_IID 1
#define F_DA_BOOL     2
#define F_DA_UINT     3
#define F_DA_INT      4
#define F_DA_POINTER  7
#define F_DA_STR_IID  17

/*
 * Argument names, interned once per sequence in its first packet: the iid
 * of an_names[i] is i + 1.
 */
enum {
	AN_ADDRESS = 1,
	AN_DSO,
	AN_INFERRED_START,
	AN_INFERRED_END,
	AN_JOINED,
	AN_TAIL,
	AN_IP,
	AN_ARG,
	AN_TID,
	AN_DEPTH_GUESSED,
	AN_GAP,
	AN_SYSCALL,
	AN_UNTRACED,
	AN_UNKNOWN,
	AN_VALUE,
	/* Interned when first used in a sequence: a trace without source
	 * positions or inlined calls stays as it was. */
	AN_SOURCE,
	AN_CALL_SITE,
	AN_INLINED,
	/* Interned when first used in a sequence: Go's goroutine flags */
	AN_RESUMED,
	AN_RESUME_GUESSED,
};
#define AN_EAGER AN_VALUE /* the last name interned up front */

#define DEFAULT_MAX_DEPTH 512
#define DESC_SEQ	  1

/*
 * Pending packets are written out past this size.  A compressed batch is
 * one zlib stream in one packet, and Perfetto asks for those to stay under
 * 512 KB; our packets compress 3-4 times, so this leaves a wide margin
 * while the 32 KB deflate window never notices the batch boundaries.
 */
#define FLUSH_COMPRESSED (448u << 10)
#define FLUSH_PLAIN	 (1u << 20)
/* The most threads compressing batches (writers.h's jobs).  Each holds
 * about 1 MB of batches, and a batch compresses in about twice the time
 * it took to encode, the packets being encoded side by side
 * (pf_threads.c). */
#define PF_MAX_COMPRESSORS 8

/*
 * A thread's slices are encoded in pieces of this many, each from a
 * cleared incremental state, so that the pieces of one thread are
 * encoded side by side too.  Fixed, so that the file does not depend on
 * -j.  Each piece costs its first packet and the names it uses interned
 * again: 0.8% more bytes on the bench capture at 32768 slices (1.7% at
 * 16384, 0.4% at 65536), while pf_threads.c holds up to a piece's
 * packets, about 1.4 MB, an encoder.
 */
#define PF_PIECE_SLICES (1u << 15)

/* A full batch, its compressed stream and what failed making it. */
struct pf_batch {
	struct pb_buf pk;
	uint8_t *zout; /* the packet of the stream at zoff, header first */
	size_t zcap, zoff, zlen;
	int rc;
	const char *what;
};

#define HITS_TRACK_NAME "Snapshot symbol hits"

/*
 * Per-sequence interning of model string ids.  An entry is valid only if
 * its generation is the current sequence's, so starting a sequence forgets
 * every entry in O(1) rather than clearing arrays as large as the string
 * table once per thread.
 */
struct pf_intern {
	uint32_t *iid;
	uint32_t *gen;
	uint32_t next;
};

struct pf {
	const struct mt_trace *t;
	const char *path;
	char *err;
	size_t errlen;

	uint32_t max_depth;
	int compress;
	int fd;
	uint64_t bytes;
	struct mt_writeback wb;

	struct pb_buf pk; /* packets not yet written */
	size_t flush_at;
	/* Full batches are compressed on the pool's threads (out), each
	 * with its own compressor, z[worker], and written in order by
	 * whichever finishes them, which alone touches the file.  Batch k
	 * fills batch[k % nr_batches]: all but one may be in the pool. */
	struct pf_batch *batch;
	size_t nr_batches;
	uint64_t nr_put;
	struct mt_pool *out;
	const char *io_what;		  /* what failed there */
	struct libdeflate_compressor **z; /* nr_z of them; NULL: plain */
	unsigned nr_z;

	uint32_t gen;	  /* of the current sequence */
	uint32_t go_gen;  /* gen when AN_RESUMED and AN_RESUME_GUESSED
			     were interned */
	uint32_t pos_gen; /* gen when AN_SOURCE to AN_INLINED were
			   * interned */
	struct pf_intern names, strs;
	uint32_t flag_mask; /* the slice flags that are args */
	uint32_t seq;	    /* current sequence id */
	uint64_t clock;	    /* its clock 64, running value */
	uint64_t ev_ts;	    /* the open event packet's time */

	uint64_t next_uuid;
	uint32_t *stack; /* open slices of the current thread, sp of them */
	size_t sp, cap_stack;
	uint64_t last; /* the current thread's latest time put down */
	uint64_t *lvl; /* the current thread's track per level */
	size_t nr_lvl, cap_lvl;
	size_t most_lvl; /* the most levels of a thread so far */

	uint64_t slices;
	uint32_t tracks;
	double cpu_s; /* of the pools' threads */
	int code;     /* the last failure's errno value, for pf_failed() */
	unsigned jobs;

	/* An encoder on a pool thread (pf_threads.c): its packets go to
	 * par, for job, now at piece, rather than to the file. */
	struct pf_par *par;
	struct pf_tjob *job;
	size_t piece;
};

/* One line in the caller's buffer (errors as util/err.h says), kept in
 * w->code; returns code. */
int pf_fail(struct pf *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The failure below, for callers that only learn that something failed. */
int pf_failed(const struct pf *w);
/* The packets so far out, as a batch (or, on an encoder, to par). */
int pf_flush(struct pf *w);
/* A packet of the current sequence at ts (clock 64, deltas), with what
 * it needs of the incremental state; pf_event_end() puts the time down,
 * last, and closes it (pf_packet_end() closes any other packet). */
size_t pf_event_packet(struct pf *w, uint64_t ts);
int pf_event_end(struct pf *w, size_t m);
int pf_packet_end(struct pf *w, size_t m);
/* Starts sequence seq: clears its incremental state, clock 64 from t0,
 * track (if non-zero) the default track, the argument names interned. */
int pf_seq_start(struct pf *w, uint32_t seq, uint64_t t0, uint64_t track);
/* A debug annotation an (AN_*) of value v in field (F_DA_*). */
void pf_arg_uint(struct pb_buf *b, uint32_t an, uint32_t field, uint64_t v);
/* A track uuid under parent, named name and suffix. */
int pf_desc_track(struct pf *w, uint64_t uuid, uint64_t parent,
		  const char *name, const char *suffix);

/* Thread th's sequence seq, on track uuid and the level tracks below
 * it, in pf_thread_pieces() pieces of PF_PIECE_SLICES slices; piece k
 * alone, after the pieces before it (or what pf_thread_scan() found they
 * leave: see pf_threads.c). */
int pf_thread(struct pf *w, const struct mt_thread *th, uint64_t uuid,
	      uint32_t seq);
size_t pf_thread_pieces(const struct mt_thread *th);
int pf_thread_piece(struct pf *w, const struct mt_thread *th, uint64_t uuid,
		    uint32_t seq, size_t k);

/* What a thread's pieces leave for the next one: its open slices, the
 * time last put down, its tracks so far (its own included). */
struct pf_cut {
	uint32_t *stack;
	size_t sp, cap;
	uint64_t last;
	size_t nr_lvl;
};
/* The uuid of level lvl's track of the thread whose track is uuid: the
 * threads' tracks are level 0, and level l's follow level l - 1's, a
 * uuid for each thread, so that no thread's depend on what the others
 * make. */
static inline uint64_t pf_level_uuid(const struct pf *w, uint64_t uuid,
				     size_t lvl)
{
	return uuid + (uint64_t)lvl * w->t->nr_threads;
}
/* c, after the pieces before k, as pf_thread_piece() leaves it after k;
 * 0 or -ENOMEM. */
int pf_thread_scan(const struct pf *w, const struct mt_thread *th, size_t k,
		   struct pf_cut *c);

/*
 * pf_threads.c: every thread's sequence, in order, encoded on up to
 * workers pool threads; slices and tracks as after the same pf_thread()
 * calls in turn.  1: no threads could be started, or there is nothing
 * to share, nothing done.  An encoder hands its full buffer over with
 * pf_par_flush().
 */
int pf_threads_par(struct pf *w, unsigned workers);
int pf_par_flush(struct pf *e);

/*
 * pf_marks.c: spans of time as slices on tracks of their own (depth
 * guessed, goroutine turns): sequence seq gets a BEGIN at each span's ts,
 * named by name(ctx, i, ...), and an END at its end, in time order (ENDs
 * first at one time, then in span order).  Returns 0 or pf_failed().
 */
struct pf_span {
	uint64_t ts, end, track;
};
int pf_spans(struct pf *w, uint32_t seq, const struct pf_span *sp, size_t n,
	     void (*name)(void *ctx, size_t i, char *buf, size_t len),
	     void *ctx);

/* pf_marks.c: the sequences after the threads'. */
int pf_hits(struct pf *w, uint32_t seq);
int pf_ptwrites(struct pf *w, uint32_t seq);
int pf_guesses(struct pf *w, uint32_t seq);
int pf_goroutines(struct pf *w, uint32_t seq);

#endif
