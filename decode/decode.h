/* SPDX-License-Identifier: MIT */
/*
 * decode: a capture's Intel PT streams to branch events per thread.
 *
 * dec_open() reads the capture (perfdata/), learns its threads, commands
 * and mappings, finds the binaries the mappings name and builds one
 * libipt image per process over a shared section cache.  dec_run() runs
 * libipt's block decoder over every AUX stream and leaves, per thread, a
 * compact array of the control transfers that matter to a call tree:
 * calls, returns, jumps that leave a function, tracing stopping and
 * starting, overflows and errors.  Jumps inside a function never leave
 * the decoder.
 *
 * The program's code is image/'s (image/image.h): dec_open() builds it
 * from the sideband, the decoder reads the code through it, and the steps
 * after this one take it (dec_image()) to name addresses and to ask what
 * the code can reach; they need nothing else of the session.  What the
 * capture says of its processes and hits goes into the model when it is
 * read (dec_opts.model).
 *
 * Addresses are runtime addresses of the traced process.
 */
#ifndef MT_DECODE_H
#define MT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum dec_kind {
	DEC_CALL = 1, /* ip: call target; aux: return address */
	DEC_RET,      /* ip: where the return went, 0 if unknown */
	DEC_JUMP,     /* ip: target in another function; aux: source */
	DEC_IJUMP,    /* the same, by an indirect jump */
	DEC_SYSCALL,  /* tracing stopped at a syscall; ip: the syscall */
	DEC_STOP,     /* tracing stopped otherwise; ip: where, 0 if unknown */
		      /* (both: aux 1 when it went into a kernel that ran
			 traced, with no code to decode it with) */
	DEC_RESUME,   /* tracing (re)started; ip: first instruction */
	DEC_SYNC,     /* decoding (re)started at a PSB; ip: first insn */
	DEC_OVERFLOW, /* the CPU dropped trace; ip: where it resumed (0:
			 tracing was off then, a DEC_SYNC follows where it
			 is on again), the event's time: when; aux: the perf
			 time of the last instruction the trace accounts
			 for before it (0: none: the overflow came first) */
	DEC_ERROR,    /* decoding failed; aux: libipt error code or one of
			 dec_error below; ip: last */
	DEC_LOST,     /* AUX bytes lost between chunks; aux: bytes */
	DEC_PTWRITE,  /* aux: payload; ip: instruction */
	DEC_END,      /* the stream ended; ip: last instruction */
	DEC_SWITCH,   /* while a shared CPU's trace could not be decoded,
			 the thread left it (aux 0) or came onto it (aux
			 1): its gap pauses or goes on */
	DEC_INLINE,   /* the inlined calls open change, inside a function:
			 aux: the innermost (a const struct sym_inline *,
			 0: none), ip: the first instruction in it.  (After
			 any other event with an ip, the open ones are
			 those at that ip: sym_inline_at().) */
	DEC_EXEC,     /* the thread's process ran execve(): the program and
			 its stack are gone, the next one begins afresh.
			 Not the decoder's: segments/ puts the execs the
			 sideband dated (dec_thread.execs) among the events */
};

/*
 * Decode errors of our own, beyond libipt's codes (which are small), in
 * the aux of a DEC_ERROR.
 */
enum dec_error {
	/* Too many blocks without reading a packet: a jump cycle that needs
	 * no trace (jmp .; l1: call l1), which real code reaches only
	 * through a wrong binary or a decoder out of step with the
	 * packets.  perf calls it a never-ending loop. */
	DEC_ERR_NO_PROGRESS = 0x10000,
};

/* A DEC_ERROR's reason in words ("never-ending loop ..." or libipt's). */
const char *dec_error_str(uint64_t code);

/*
 * 24 bytes.  The time is perf time (ns) relative to the thread's base, in
 * the high 56 bits of tk; the kind is in the low 8.
 */
struct dec_event {
	uint64_t tk;
	uint64_t ip;
	uint64_t aux;
};

static inline enum dec_kind dec_event_kind(const struct dec_event *e)
{
	return (enum dec_kind)(e->tk & 0xff);
}

static inline uint64_t dec_event_time(const struct dec_event *e, uint64_t base)
{
	return base + (e->tk >> 8);
}

struct dec_stack {
	uint64_t time; /* perf time of the unwind */
	size_t nr;
	uint64_t *ips; /* leaf first: the IP, then return addresses */
};

/* A Go scheduler switch the capture recorded (PD_EXT_GOROUTINE): from
 * the instruction at ip, at perf time time, the thread runs goroutine
 * goid (0: its system stack). */
struct dec_goroutine {
	uint64_t time, ip, g, goid;
};

struct dec_thread {
	uint32_t pid, tid;
	const char *comm; /* last command name seen, "" if none */
	uint64_t base;	  /* perf time that event times count from */
	struct dec_event *ev;
	size_t nr, cap;
	struct dec_stack final; /* nr = 0 when the capture has none */
	/* The perf times of its execs (COMM records with the exec flag), in
	 * file order */
	uint64_t *execs;
	size_t nr_execs, cap_execs;
	/* Its Go switches, in time order (none: not Go, or not recorded) */
	struct dec_goroutine *gos;
	size_t nr_gos, cap_gos;
};

struct dec_stats {
	uint64_t aux_bytes; /* AUX bytes decoded */
	uint64_t blocks;    /* libipt blocks */
	uint64_t events;    /* events kept */
	uint64_t errors;    /* decode errors */
	uint64_t overflows;
	uint64_t streams;
	/* Buffers decoded in parallel: their pieces, and those whose own
	 * run's events were used (the others were decoded by the run of
	 * the piece before); threads: how many decoded; waits: how often
	 * a run waited for the hand-over to catch up (its events would
	 * have outgrown what the runs ahead may hold). */
	uint64_t pieces, joined, waits;
	unsigned threads;
};

struct mt_trace;

struct dec_opts {
	const char *const *binary_dirs; /* searched before recorded paths */
	size_t nr_binary_dirs;
	const char *debug_root; /* build-id tree; NULL: /usr/lib/debug */
	const char *jit_dir;	/* where perf-PID.map files are; NULL: /tmp */
	/* Called now and then; return non-zero to stop. */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* Called with each warning (a binary missing, a JIT map not
	 * read): one line, no newline; maybe from a decoding thread, one
	 * call at a time per warning.  May be NULL. */
	void (*warn)(void *ctx, const char *line);
	void *warn_ctx;
	/* Decode only these threads (nr_tids 0: all of them). */
	const uint32_t *tids;
	size_t nr_tids;
	/* Threads that decode (0: one a core; 1: this one alone), and the
	 * bytes of trace each piece of a buffer has (0: the default). */
	unsigned jobs;
	size_t piece_size;
	bool no_inline; /* no inlined calls (DEC_INLINE, img_sym.inl) */
	/* Where dec_open() puts what the capture says of its processes
	 * (their names) and its snapshot trigger hits; may be NULL. */
	struct mt_trace *model;
};

struct dec_capture;
struct img;

/*
 * A consumer that takes events as they are decoded, instead of the
 * per-thread arrays: for per-thread streams, which arrive in time order,
 * this keeps only what the consumer keeps.  (Per-CPU streams still go
 * through the arrays: a thread's runs from different CPUs must be merged
 * first.)  Returns 0, or a negative code that stops decoding.
 */
typedef int (*dec_sink_fn)(void *ctx, struct dec_thread *t, uint64_t time,
			   enum dec_kind kind, uint64_t ip, uint64_t aux);

/*
 * The same consumer taking a run of t's events at once, in time order,
 * as it would take them one by one: where the decode runs aside
 * (dec_runs_aside()), the thread handing the events over then calls it
 * once a run instead of once an event.  Same context and returns.
 */
struct dec_sink_ev {
	uint64_t time, ip, aux;
	enum dec_kind kind;
	/* the decoder's note while the event waits to be handed over (in
	 * what would be padding): consumers leave it alone */
	uint32_t note;
};
/*
 * hold: what keeps the run's events where they are after the call (the
 * block they waited in).  A consumer that keeps the pointer instead of
 * copying the events takes the hold, and drops it when done with them,
 * on any thread, before or after dec_close().  NULL: the events are the
 * consumer's during the call only.
 */
struct dec_hold;
typedef int (*dec_sink_run_fn)(void *ctx, struct dec_thread *t,
			       const struct dec_sink_ev *ev, size_t n,
			       struct dec_hold *hold);
void dec_hold_take(struct dec_hold *h);
void dec_hold_drop(struct dec_hold *h);

/* Returns 0, or a negative code with one line in err. */
int dec_open(struct dec_capture **out, const char *path,
	     const struct dec_opts *o, char *err, size_t errlen);
int dec_run(struct dec_capture *c, char *err, size_t errlen);
/* Set before dec_run(); clears the run form. */
void dec_set_sink(struct dec_capture *c, dec_sink_fn fn, void *ctx);
/* Set after dec_set_sink(), for its context; NULL: one event a call. */
void dec_set_sink_run(struct dec_capture *c, dec_sink_run_fn fn);
/*
 * Whether dec_run() decodes on threads of its own, the caller's thread
 * only handing their events to the sink in order (more than one core, or
 * the jobs asked for): a sink then has that thread to itself.
 */
bool dec_runs_aside(const struct dec_capture *c);
void dec_free(struct dec_capture *c);

/*
 * Bytes of AUX data dec_run() would decode: a thread's own streams only
 * when some threads are chosen, every per-CPU stream (threads share
 * them).
 */
uint64_t dec_aux_bytes(const struct dec_capture *c);

size_t dec_nr_threads(const struct dec_capture *c);
struct dec_thread *dec_thread_at(struct dec_capture *c, size_t i);
/* Every thread, in an array of *nr: where dec_run() leaves the events of
 * per-CPU streams (and of all, without a sink). */
struct dec_thread *dec_threads(struct dec_capture *c, size_t *nr);
/* The program's code the session decodes with, for the steps after it
 * (image/image.h); it lives until dec_free(). */
struct img *dec_image(struct dec_capture *c);
/* Frees the events dec_run() left in t's array, once taken (the thread,
 * its names and its final stack stay until dec_free()). */
void dec_thread_free_events(struct dec_thread *t);
const struct dec_stats *dec_stats(const struct dec_capture *c);
/* What wrote the capture: its perf.data VERSION feature ("" if none). */
const char *dec_recorded_by(const struct dec_capture *c);
/* Perf time span of the capture's trace (0, 0 when empty). */
void dec_span(const struct dec_capture *c, uint64_t *first, uint64_t *last);

/*
 * The offset of the first PSB of buf at or after from, in *at; false when
 * there is none.  A packet whose payload ends in 02 82 just before a PSB
 * makes the pattern begin early: the PSB is the run's last 16 bytes.
 */
bool dec_find_psb(const uint8_t *buf, size_t len, uint64_t from, uint64_t *at);
/* The offset of the last PSB of buf that begins at or before end (as
 * dec_find_psb() tells a PSB from a payload ending in 02 82). */
bool dec_find_psb_before(const uint8_t *buf, size_t len, uint64_t end,
			 uint64_t *at);
/*
 * The address of the TIP that is the last control-flow packet (TNT, TIP,
 * FUP, TIP.PGE/PGD) before the last OVF of buf at or before offset end
 * (where libipt stands when it reports that overflow), in *ip; false when
 * a TNT, another IP packet or a PSB came between, or no OVF is found
 * within a few PSBs back.
 */
bool dec_tip_before_overflow(const uint8_t *buf, size_t len, uint64_t end,
			     uint64_t *ip);

/* Binaries that could not be found or did not match, among those the
 * trace ran into, one line each. */
size_t dec_nr_missing(const struct dec_capture *c);
const char *dec_missing_at(const struct dec_capture *c, size_t i);

/*
 * For benchmarks: libipt's block decoder alone over every stream, with
 * the configuration and image dec_run() uses, keeping nothing.  Returns
 * the number of blocks, or a negative code.
 */
int64_t dec_bare_loop(struct dec_capture *c);

#endif
