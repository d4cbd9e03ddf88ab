/* SPDX-License-Identifier: MIT */
/*
 * model: the converted trace in memory, as the writers see it.
 *
 * segments/ and stitch/ build it; writers/ only read it.  A trace is a
 * string table, processes, threads with their slices, and the snapshot
 * trigger hits.  Each thread's slices are in pre-order: sorted by start
 * time, a parent before its children (so depth never jumps by more than
 * one from a slice to the next that starts inside it).
 */
#ifndef MT_MODEL_H
#define MT_MODEL_H

#include "util/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_NONE UINT32_MAX

/* Interned strings: id 0 is always "". */
struct mt_strtab {
	char *buf; /* NUL-separated strings */
	size_t len, cap;
	uint32_t *off; /* id -> offset in buf */
	uint32_t nr, cap_ids;
	struct mt_hmap index; /* a string's hash -> its id */
};

/* An empty table but for "" (id 0): 0, or -ENOMEM (then freeing it is
 * all that may be done with it). */
int mt_strtab_init(struct mt_strtab *s);
void mt_strtab_free(struct mt_strtab *s);
/* Returns the id of s (adding it if new), or MT_NONE when out of memory. */
uint32_t mt_str_intern(struct mt_strtab *s, const char *str);
uint32_t mt_str_intern_len(struct mt_strtab *s, const char *str, size_t len);
/* Whether str is in s (its id in *id), without adding it. */
bool mt_str_find(const struct mt_strtab *s, const char *str, uint32_t *id);
static inline const char *mt_str(const struct mt_strtab *s, uint32_t id)
{
	return s->buf + s->off[id];
}

enum mt_slice_flags {
	MT_SLICE_INFERRED_START = 1 << 0, /* began before what we saw */
	MT_SLICE_INFERRED_END = 1 << 1,	  /* ended at a gap or the end */
	MT_SLICE_JOINED = 1 << 2,	  /* one activation across a gap */
	MT_SLICE_GAP = 1 << 3,		  /* a [decode gap: reason] slice */
	MT_SLICE_SYSCALL = 1 << 4,	  /* [syscall]: in the kernel */
	MT_SLICE_UNTRACED = 1 << 5,	  /* [untraced]: tracing was off */
	MT_SLICE_TAIL = 1 << 6,		  /* entered by a jump */
	MT_SLICE_UNKNOWN = 1 << 7,	  /* code without a symbol/binary */
	/* joined where several depths fitted as well (a recursion through
	 * one call site): the least change was taken */
	MT_SLICE_DEPTH_GUESSED = 1 << 8,
	/* a call the compiler inlined: its first to its last instruction
	 * traced, inside its caller's slice */
	MT_SLICE_INLINED = 1 << 9,
	/* a frame of a Go goroutine that a scheduler switch resumed: the
	 * activation began in an earlier slice of that goroutine */
	MT_SLICE_RESUMED = 1 << 10,
	/* resumed where several suspended goroutines could have been (no
	 * goroutine identity in the capture): the pick is a guess */
	MT_SLICE_RESUME_GUESSED = 1 << 11,
};

/*
 * What slices of one function share: its name, binary and address, kept
 * once per trace (mt_frame_intern) so that a slice is 36 bytes.
 */
struct mt_frame {
	uint64_t addr;	 /* symbol (or entry) address, 0 if none */
	uint32_t name;	 /* string id */
	uint32_t dso;	 /* string id of the binary's path, 0 if none */
	uint32_t source; /* string id of "FILE:LINE" of its entry, 0 if
			  * unknown (no line table) */
};

/*
 * 36 bytes, aligned to 4: the model holds one for every call of the
 * trace, and it is most of the conversion's memory.  The flags share a
 * word with the duration, which needs 52 bits only (52 days): a
 * duration computed from times goes through mt_dur_fit(), so that a
 * capture with a wild clock saturates instead of wrapping.  Arithmetic
 * on the field alone is done in 52 bits (s->dur - 1 of 0 is 2^52 - 1):
 * cast it to uint64_t first.
 */
#define MT_DUR_MAX ((UINT64_C(1) << 52) - 1)

static inline uint64_t mt_dur_fit(uint64_t dur)
{
	return dur > MT_DUR_MAX ? MT_DUR_MAX : dur;
}

struct __attribute__((packed, aligned(4))) mt_slice {
	uint64_t ts;	     /* perf time, ns */
	uint64_t dur : 52;   /* ns, at most MT_DUR_MAX */
	uint64_t flags : 12; /* enum mt_slice_flags */
	uint32_t frame;	     /* index in the trace's frames */
	uint32_t depth;	     /* 0 = root */
	uint32_t parent;     /* index in the thread's slices, or MT_NONE */
	uint32_t segment;    /* the trace segment it came from */
	uint32_t site;	     /* string id of "FILE:LINE" of the call that made
			      * it, 0 if unknown */
};

_Static_assert(sizeof(struct mt_slice) == 36, "a slice is 36 bytes");
_Static_assert(MT_SLICE_RESUME_GUESSED < 1 << 12, "the flags fit 12 bits");

struct mt_thread {
	uint32_t pid, tid;
	uint32_t name; /* string id (comm) */
	struct mt_slice *slices;
	size_t nr_slices, cap_slices;
};

struct mt_process {
	uint32_t pid;
	uint32_t name; /* string id (command line or comm) */
};

/* A snapshot trigger hit (mt_take_snapshot and friends). */
struct mt_hit {
	uint64_t ts;	     /* perf time of the hit */
	uint64_t mark_start; /* perf time of mt_mark_start, 0 if none */
	uint32_t pid, tid;
	uint64_t ip;
	int64_t arg;
	uint32_t name; /* id in the trace's hit_names: the trigger symbol */
};

/* A process's name as the capture gave it (mt_trace.proc_names). */
struct mt_proc_name {
	uint32_t pid;
	char *name;
};

/* A value the program wrote into the trace (PTWRITE, mt_ptwrite()). */
struct mt_ptwrite {
	uint64_t ts; /* perf time */
	uint32_t tid;
	uint64_t ip; /* the PTWRITE instruction, 0 when not known */
	uint64_t value;
};

/*
 * A trace segment: one error-free run of a thread's trace.  Slices carry
 * the index of their segment (joined slices the first one's).
 */
struct mt_segment {
	uint32_t tid;
	uint64_t start, end; /* perf time, ns */
	uint32_t end_reason; /* string id: why it ended ("end of trace",
				"overflow", "decode error: ...") */
	uint64_t end_ip;     /* where decoding stopped, 0 if unknown */
	/* It began in a program an exec started after the thread's last
	 * segment, or on another stack than the last one's (a Go scheduler
	 * switch): no frame of an earlier one can be its caller */
	bool exec;
	/* The Go goroutine whose stack it ran on: 1 + its index in the
	 * trace's goroutines; 0 for none (not Go, a thread's system stack,
	 * or unknown).  Every slice of a segment runs on its goroutine. */
	uint32_t goroutine;
};

/* A Go goroutine that ran in the window. */
struct mt_goroutine {
	uint32_t pid;
	uint64_t goid;	      /* the runtime's id, 0 when the capture did
				 not say (hardware trace): then ids are ours */
	uint32_t start;	      /* string id of the function it started in,
				 or of its oldest frame seen when it began
				 before the trace */
	uint64_t first, last; /* perf time it first and last ran */
	uint32_t nr;	      /* its number among its process's goroutines
				 without a goid, from 1 (0 when goid) */
};

/* A stitch decision, kept for the audit table. */
struct mt_stitch {
	uint32_t tid;
	uint32_t seg_a, seg_b;
	uint32_t frames_joined;
	double score;
	uint32_t reason; /* string id */
};

/*
 * A span of a thread's time in which the frames at depth and below were
 * placed by a stitching guess (stitch/guess.c): the slices that overlap
 * it at or below that depth are the thread's MT_SLICE_DEPTH_GUESSED ones
 * from joins.  A thread's spans do not overlap and come in time order.
 */
struct mt_guess {
	uint32_t tid;
	uint32_t depth;
	uint64_t ts, dur;
};

struct mt_trace {
	struct mt_strtab strs;
	struct mt_frame *frames; /* index = frame id; frame 0 is all zero */
	uint32_t nr_frames, cap_frames;
	struct mt_hmap frame_index; /* a frame's hash -> its id */
	struct mt_process *procs;
	size_t nr_procs, cap_procs;
	struct mt_thread *threads;
	size_t nr_threads, cap_threads;
	struct mt_hit *hits;
	size_t nr_hits, cap_hits;
	struct mt_ptwrite *ptwrites; /* in time order per thread */
	size_t nr_ptwrites, cap_ptwrites;
	struct mt_stitch *stitches;
	size_t nr_stitches, cap_stitches;
	struct mt_guess *guesses; /* by thread, in time order */
	size_t nr_guesses, cap_guesses;
	struct mt_segment *segments; /* index = segment id */
	size_t nr_segments, cap_segments;
	struct mt_goroutine *goroutines;
	size_t nr_goroutines, cap_goroutines;
	/* What wrote the capture ("mt-capture VERSION (commit C)", or
	 * perf's version), for the outputs' metadata; "" when unknown. */
	char recorded_by[128];
	/*
	 * What the capture says before any trace is built, put in when it
	 * is read (decode/).  Its processes' names stay text until the
	 * trace uses one (a process gets its name in strs with its first
	 * traced thread), and its hits' names are a table of their own:
	 * so strs holds the trace's strings in the order the trace first
	 * used them, whatever the capture said first.  A writer that lists
	 * strs lists after them the hits' names that are not among them.
	 */
	struct mt_proc_name *proc_names;
	size_t nr_proc_names, cap_proc_names;
	struct mt_strtab hit_names;
};

/* An empty trace with its string "" and its frame 0: 0, or -ENOMEM
 * (then freeing it is all that may be done with it). */
int mt_trace_init(struct mt_trace *t);
void mt_trace_free(struct mt_trace *t);
/* Each returns NULL when out of memory; pointers move when arrays grow. */
struct mt_process *mt_trace_add_process(struct mt_trace *t, uint32_t pid,
					const char *name);
struct mt_thread *mt_trace_add_thread(struct mt_trace *t, uint32_t pid,
				      uint32_t tid, const char *name);
struct mt_slice *mt_thread_push_slow(struct mt_thread *th,
				     const struct mt_slice *s);
/* Append a slice: the common case inline, growth out of line. */
static inline struct mt_slice *mt_thread_push(struct mt_thread *th,
					      const struct mt_slice *s)
{
	if (th->nr_slices == th->cap_slices)
		return mt_thread_push_slow(th, s);
	th->slices[th->nr_slices] = *s;
	return &th->slices[th->nr_slices++];
}
/* h->name is an id in t->hit_names (mt_trace_add_named_hit interns it). */
struct mt_hit *mt_trace_add_hit(struct mt_trace *t, const struct mt_hit *h);
struct mt_hit *mt_trace_add_named_hit(struct mt_trace *t,
				      const struct mt_hit *h, const char *name);
/* pid's name, the first given for it kept.  Returns 0 or -ENOMEM. */
int mt_trace_name_process(struct mt_trace *t, uint32_t pid, const char *name);
/* The name the capture gave pid, "" if none. */
const char *mt_trace_process_name(const struct mt_trace *t, uint32_t pid);
struct mt_ptwrite *mt_trace_add_ptwrite(struct mt_trace *t,
					const struct mt_ptwrite *p);
struct mt_stitch *mt_trace_add_stitch(struct mt_trace *t,
				      const struct mt_stitch *s);
struct mt_segment *mt_trace_add_segment(struct mt_trace *t,
					const struct mt_segment *s);
struct mt_guess *mt_trace_add_guess(struct mt_trace *t,
				    const struct mt_guess *g);
struct mt_goroutine *mt_trace_add_goroutine(struct mt_trace *t,
					    const struct mt_goroutine *g);
/* The thread with this tid, or NULL. */
struct mt_thread *mt_trace_thread(struct mt_trace *t, uint32_t tid);

/* The id of the frame (name, dso, addr), added if new; MT_NONE when out
 * of memory, or when name or dso is MT_NONE (a string that could not be
 * interned: a frame never names one). */
uint32_t mt_frame_intern(struct mt_trace *t, uint32_t name, uint32_t dso,
			 uint64_t addr);
static inline const struct mt_frame *mt_slice_frame(const struct mt_trace *t,
						    const struct mt_slice *s)
{
	return &t->frames[s->frame];
}
/* The goroutine a slice ran on (1 + index in t->goroutines), 0: none. */
static inline uint32_t mt_slice_goroutine(const struct mt_trace *t,
					  const struct mt_slice *s)
{
	return s->segment < t->nr_segments ? t->segments[s->segment].goroutine
					   : 0;
}
/* "goroutine 7 (main.work)", or "goroutine ~2 (main.work)" for one whose
 * id the capture did not give. */
void mt_goroutine_name(const struct mt_trace *t, const struct mt_goroutine *g,
		       char *buf, size_t len);
/* The slice's name as a string id, and as a string. */
static inline uint32_t mt_slice_name(const struct mt_trace *t,
				     const struct mt_slice *s)
{
	return t->frames[s->frame].name;
}
static inline const char *mt_slice_str(const struct mt_trace *t,
				       const struct mt_slice *s)
{
	return mt_str(&t->strs, t->frames[s->frame].name);
}

#endif
