/* SPDX-License-Identifier: MIT */
/*
 * segments: a thread's branch events to trace segments and their slices.
 *
 * A segment is one error-free run of a thread's trace.  Its call stack
 * is rooted in a sentinel: a return that climbs above every frame seen so
 * far reveals the caller (a real frame whose start is the segment start,
 * flagged inferred) and every earlier frame of the segment gains it as an
 * ancestor, so depths are only final when the segment closes.  Returns are
 * matched by return address first, by function second, which keeps
 * recursion, longjmp, exceptions and trampolines straight.  Tracing that
 * stops shows as a [syscall] or [untraced] frame; an error, an overflow or
 * lost data closes the segment, its open frames end there (flagged
 * inferred end), and a [decode gap: reason] slice covers the gap.  An
 * exec (DEC_EXEC) ends every open frame at its time, and the new program
 * begins a segment of its own (flagged exec) with a new root.
 *
 * The stack unwound when the capture stopped (when the capture has one)
 * anchors the last segment's roots: ancestors that no return revealed.
 */
#ifndef MT_SEGMENTS_H
#define MT_SEGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/decode.h"
#include "image/image.h"
#include "model/model.h"

struct seg_opts {
	int no_final_stack;   /* ignore the unwound stacks of the capture */
	int no_goroutine_ids; /* ignore its Go goroutine items */
};

/*
 * What stitching needs of a segment, found as the segment closes and kept
 * apart from the model: the frames open when it began, root first, with
 * the address each was seen at (the return that revealed it; the resume
 * IP for the leaf), and the frames open when it ended, root first, with
 * the return address into each from its open child (0 where unknown).
 * Slice indexes in the thread's array.
 */
struct seg_ends {
	uint32_t *start_chain, *end_chain;
	uint64_t *start_ips, *end_rets;
	uint32_t nr_start, nr_end;
	/* where control last came into the end chain's leaf (its entry, a
	 * return from its child, a resume); from there it ran only its
	 * own code until the segment ended.  0: unknown */
	uint64_t end_at;
};

/*
 * Every segment's ends, by segment id (the index in t->segments); a
 * segment not closed has none.  Zeroed by its owner, filled by the
 * builders it is given to, read by stitch_trace(), freed by
 * seg_ends_free().
 */
struct seg_ends_table {
	struct seg_ends *v;
	size_t nr, cap;
};

void seg_ends_free(struct seg_ends_table *e);

/* How the builder names an address: fills out as img_symbolize() does. */
typedef void (*seg_symbolize_fn)(void *ctx, uint64_t ip, struct img_sym *out);

struct seg_builder;

/*
 * A builder appends the slices of one thread (t->threads[thread]) and its
 * segments to t, and each segment's ends to ends (NULL: not kept).
 * Threads must not be added to t while it lives.
 */
int seg_builder_new(struct seg_builder **out, struct mt_trace *t, size_t thread,
		    struct seg_ends_table *ends, seg_symbolize_fn sym,
		    void *ctx);
void seg_builder_free(struct seg_builder *b);
/* The code at the thread's addresses changed (another program, or a
 * library loaded where another was): sym names them anew from now on. */
void seg_builder_forget_names(struct seg_builder *b);

/*
 * A Go program's builder: p holds its process's goroutines that are not
 * running (shared by the process's builders; NULL: the builder keeps its
 * own), items the thread's switches as the capture recorded them (in
 * time order; they name each goroutine; may be none).  Both must outlive
 * the builder.
 */
struct go_proc;
/* Whether the builder has seen Go's scheduler (go.h). */
bool seg_builder_is_go(const struct seg_builder *b);
void seg_builder_go(struct seg_builder *b, struct go_proc *p,
		    const struct dec_goroutine *items, size_t nr);

/* One event, in time order.  Returns 0 or -ENOMEM. */
int seg_feed(struct seg_builder *b, uint64_t time, enum dec_kind kind,
	     uint64_t ip, uint64_t aux);

/*
 * No more events.  final (may be NULL or empty) is the stack unwound at
 * the end of the trace.  Closes what is open.
 */
int seg_finish(struct seg_builder *b, const struct dec_stack *final);

/*
 * The open stack, root first, as names (pointers into t's strings) and
 * depths relative to the current root: for tests.  Returns the number of
 * frames (at most max are stored).
 */
size_t seg_stack(const struct seg_builder *b, const char **names, size_t max);

/*
 * Every thread of a capture, one builder each, naming addresses with im.
 * Give seg_all_sink (with the seg_all as context) to dec_set_sink() before
 * dec_run() to build as the decoder goes; seg_all_finish() then takes what
 * the decoder left in its threads' arrays (threads, nr: dec_threads())
 * and closes every thread.  Processes (named as t's proc_names say),
 * threads, slices and segments go to t, the segments' ends to ends
 * (NULL: not kept).
 */
struct seg_all;
int seg_all_new(struct seg_all **out, struct img *im, struct mt_trace *t,
		struct seg_ends_table *ends, const struct seg_opts *o);
/*
 * Before the first event: the threads' builders run on up to workers
 * threads of their own (par.c).  A thread's events are built in pieces
 * of about piece_events (0: 65536) at once, joined in order (pieces.c);
 * the threads of a program that may be Go's are built together, in
 * order (their goroutines move between them).  The sinks then only hand
 * events over, and seg_all_finish() merges what the builders made: the
 * model is the one the builders make on the caller's thread, ids and
 * order alike.  Returns 0, -ENOMEM, or -EINVAL after the first event.
 */
int seg_all_par(struct seg_all *a, unsigned workers, size_t piece_events);
/* How the pieces went: built, events decided by the thread's builder
 * (touches), events it rebuilt. */
void seg_all_par_stats(const struct seg_all *a, uint64_t *pieces,
		       uint64_t *touches, uint64_t *rebuilt);
/* The threads seg_all_par()'s builders ran on (0: none). */
unsigned seg_all_par_threads(const struct seg_all *a);
/* The CPU seconds of the busiest of them, after seg_all_finish(). */
double seg_all_par_busiest_cpu(const struct seg_all *a);
int seg_all_sink(void *ctx, struct dec_thread *t, uint64_t time,
		 enum dec_kind kind, uint64_t ip, uint64_t aux);
/* The same for a run of t's events (dec_set_sink_run()). */
int seg_all_sink_run(void *ctx, struct dec_thread *t,
		     const struct dec_sink_ev *ev, size_t n,
		     struct dec_hold *hold);
int seg_all_finish(struct seg_all *a, struct dec_thread *threads, size_t nr,
		   char *err, size_t errlen);
void seg_all_free(struct seg_all *a);

/*
 * The same builders on a thread of their own (pipe.c): give seg_pipe_sink
 * (with the seg_pipe as context) to dec_set_sink() instead, and call
 * seg_pipe_end() after dec_run() and before seg_all_finish().  The events
 * reach seg_all_sink() in their order, so the model is the same.  Each
 * returns 0 or a negative errno value: the builders' first error, which
 * seg_pipe_sink() passes back to the decoder once it is known.
 */
struct seg_pipe;
int seg_pipe_start(struct seg_pipe **out, struct seg_all *a);
int seg_pipe_sink(void *ctx, struct dec_thread *t, uint64_t time,
		  enum dec_kind kind, uint64_t ip, uint64_t aux);
int seg_pipe_end(struct seg_pipe *p);

#endif
