/* SPDX-License-Identifier: MIT */
/*
 * The state of one stream's decode, shared by stream.c (what libipt's
 * blocks and events mean for a call tree) and timing.c (when each event
 * happened, and which thread it belongs to).
 */
#ifndef MT_DEC_STRM_H
#define MT_DEC_STRM_H

#include "decode/dec_internal.h"

#include <capstone/capstone.h>

enum pend { PEND_NONE, PEND_CALL, PEND_RET, PEND_JUMP };

#define LEN_CACHE   4096
#define RANGE_CACHE 1024
#define COUNT_CACHE 1024
#define CODE_CACHE  512

struct range_ent {
	uint64_t ip, lo, hi;
	struct img_inl_span inl; /* tab NULL: nothing inlined there */
};

/* A call, return or jump waiting for its time. */
struct held {
	uint64_t pos; /* instructions decoded up to the transfer */
	uint64_t t, ip, aux;
	enum dec_kind k;
	bool fixed; /* t is final (pend_timed()) */
};

/* An event timed but not yet delivered (timing.c's step window). */
struct timed {
	uint64_t t, ip, aux;
	enum dec_kind k;
};

struct strm;

/*
 * What the core (stream.c, timing.c) reads through its caller: it opens
 * no file and knows no other stream.  The callbacks take ctx first.
 */
struct strm_io {
	void *ctx;
	/* The libipt image of pid's code (NULL: none, the decoder's own
	 * empty one); libipt reads the code to decode from it. */
	struct pt_image *(*image)(void *ctx, uint32_t pid);
	/* The address space pid runs at perf time t after its execs and
	 * reloads: the key image and range take (img_space()).  May be
	 * NULL: pid. */
	uint32_t (*space)(void *ctx, uint32_t pid, uint64_t t);
	/* Up to n bytes of the code at ip in section isid of that image
	 * (pt_block.isid): how many, 0 when there are none. */
	size_t (*read_code)(void *ctx, int isid, uint64_t ip, uint8_t *b,
			    size_t n);
	/* The function pid's code at ip is in: runtime [*lo, *hi), lo > hi
	 * when unknown, and its inlined calls (inl->tab NULL: none). */
	void (*range)(void *ctx, uint32_t pid, uint64_t ip, uint64_t *lo,
		      uint64_t *hi, struct img_inl_span *inl);
	/* Decoding stopped at ip: pid's image has no code there.  May be
	 * NULL. */
	void (*no_code)(void *ctx, uint32_t pid, uint64_t ip);
	/* The thread tid (of pid, or -1 when not known) a switch record
	 * names, made when new: NULL when out of memory. */
	struct dec_thread *(*thread)(void *ctx, uint32_t pid, uint32_t tid);
	/* The capture's address filter for pid's mappings, as libipt
	 * takes it.  May be NULL: no filter. */
	void (*addr_filter)(void *ctx, uint32_t pid,
			    struct pt_conf_addr_filter *f);
	/* Bytes of a buffer being decoded that are never read again: their
	 * memory may go.  May be NULL. */
	void (*forget)(void *ctx, const uint8_t *p, size_t len);
};

/* Where the core's events go, and when it stops. */
struct strm_out {
	void *ctx;
	/*
	 * An event of th, timed and placed.  counted: one of the stream's
	 * own events, in order (own: the stream is th's own, not a CPU's);
	 * else only pushed to th's events (the gap of a thread that left a
	 * CPU).  Returns 0 or a negative errno value, which ends the
	 * decode and is strm_decode()'s.
	 */
	int (*deliver)(void *ctx, struct dec_thread *th, bool counted, bool own,
		       uint64_t t, enum dec_kind k, uint64_t ip, uint64_t aux);
	/* n counted events of th's own stream, in order, as deliver would
	 * take them one by one.  NULL: through deliver.  (The parallel
	 * decode's hand-over calls it; a stream never does.) */
	int (*deliver_run)(void *ctx, struct dec_thread *th,
			   const struct dec_sink_ev *ev, size_t n,
			   struct dec_hold *hold);
	/* At a time point (a tick), and now and then between them: true
	 * when decoding stops here (strm_decode() returns 0, with what
	 * waits for a time point kept).  NULL: never. */
	bool (*tick)(void *ctx, struct strm *s);
	bool (*check)(void *ctx, struct strm *s);
};

struct strm {
	struct dec_capture *c; /* its configuration and switch records */
	struct strm_io io;
	struct strm_out out;
	struct pt_block_decoder *dec;
	const uint8_t *buf; /* what dec decodes, while strm_decode() runs */
	size_t len;
	uint32_t pid;  /* the space whose code is decoded (io.space()) */
	uint32_t proc; /* the process */
	/* A copy of the image of a space the process went on to (libipt's
	 * image is for one decoder at a time), owned */
	struct pt_image *exec_image;
	/* where events go: a thread, or a CPU's switch timeline */
	struct dec_thread *thread;
	uint32_t cpu;
	size_t sw_cur; /* index into c->switches (per-CPU) */
	struct dec_thread *sw_thread;
	bool sw_valid;
	uint64_t sw_since; /* time of the switch record in force */
	bool sw_gap;	   /* a decode error waits for the next sync */
	uint64_t end_time; /* when the buffer was read (perf ns), or 0 */

	uint64_t last_time; /* perf ns, never decreasing */
	uint64_t icount;    /* instructions decoded in this buffer */
	uint64_t mark_pos;  /* icount where last_time was read */
	bool have_mark;
	bool mark_tick;	   /* the mark is a tick: a timing packet bound there */
	struct held *held; /* owned by dec_streams(), kept across buffers */
	size_t nheld, held_cap;
	uint64_t rate_dt, rate_dp; /* the last stretch between time points */
	/* Events of the last two MTC periods wait here in case the clock
	 * steps back (libipt_cyc_rate_after_psb); owned like held. */
	struct timed *win;
	size_t win_head, win_n, win_cap;
	uint64_t win_floor; /* time of the last event delivered */
	uint64_t mtc_span;  /* one MTC period in ns; 0: no window */
	/* After a PSB libipt's clock may run many times too fast for an
	 * MTC period (timing.c, psb_hold_scan): until it reads hold_until, or
	 * steps back at hold_back or later, the window keeps every event
	 * after hold_from, the PSB's time.  hold_until 0: no hold. */
	uint64_t psb_next; /* offset of the next PSB to look at */
	uint64_t hold_from, hold_back, hold_until;
	/* an overflow whose resume time waits for the next time point */
	bool ovf_pending;
	uint64_t ovf_ip, ovf_before, ovf_pos, ovf_fwd;
	/* Since an overflow, MTC times may be short by whole wraps of the
	 * MTC's CTC bits (mtc_wrap ns): events wait in aq for the next TSC
	 * (timing.c, mtc_wraps_lost_in_overflow); aq owned like held. */
	bool unanchored;
	uint64_t mtc_wrap; /* 0: no MTC */
	uint64_t wrap_fix; /* wraps libipt's clock is short by */
	struct timed *aq;
	size_t aq_n, aq_cap;
	bool synced;  /* SYNC emitted for this sync point */
	bool tracing; /* between a stop and a resume: false */
	enum pend pend;
	uint64_t pend_time, pend_from, pend_ret, pend_pos;
	bool pend_fixed;  /* pend_time is final: a time point came first */
	uint64_t last_ip; /* last instruction decoded */
	uint64_t blk_ip;  /* the last block's first instruction */
	uint32_t blk_ninsn;
	int last_isid;
	bool last_far;		 /* the last block ended in a far transfer */
	bool tsx_aborted;	 /* the async branch coming is the abort's */
	uint64_t cur_lo, cur_hi; /* function of last_ip; lo > hi: unknown */
	/* inline.c: the inlined calls of that function (tab NULL: none),
	 * the innermost one open at last_ip, and the ip of an event that
	 * named where the next block begins (segments/ opens the calls
	 * there itself). */
	struct img_inl_span inl_span;
	const struct sym_inline *inl_top;
	bool inl_told;
	uint64_t inl_told_ip;

	uint64_t lost; /* AUX bytes lost before this buffer */
	int rc;	       /* first sink error */

	uint64_t prog_off;     /* decoder offset when last seen moving */
	uint64_t prev_off;     /* the offset before that */
	uint32_t stuck_blocks; /* blocks since then */
	uint32_t stuck_calls;  /* calls among them */

	/* What this stream decoded (dec_stats), added to the capture's by
	 * whoever knows which part of it counts. */
	uint64_t n_blocks, n_errors, n_overflows;
	bool ticked;	    /* a tick among the events just read */
	bool have_first;    /* first_off is known */
	bool at_end;	    /* strm_decode() went to the buffer's end */
	uint64_t first_off; /* the decoder's offset after the first sync */
	uint64_t tick_off;  /* the decoder's offset at the last tick */
	uint32_t tick_nth;  /* ticks before it at that offset */

	/* What the code of pid says, kept by strm_init() while the next
	 * buffer is the same process's: it stays true for the whole capture.
	 * Last, for strm_init(). */
	struct strm_cache {
		bool valid;
		uint32_t pid;
		uint64_t len_ip[LEN_CACHE];
		uint8_t len_val[LEN_CACHE];
		struct range_ent ranges[RANGE_CACHE];
		/* inline.c: instructions from one address to another */
		struct count_ent {
			uint64_t from, to, n;
		} counts[COUNT_CACHE];
		/* stream.c: code bytes read from the image (isid 0: empty),
		 * which takes libipt's locks */
		struct code_ent {
			uint64_t ip;
			int isid;
			uint8_t n, b[15];
		} code[CODE_CACHE];
		csh cs; /* opened when first needed */
		bool have_cs;
	} cache;
	/* The decoding thread's own sections (image/view.c), or NULL: the
	 * images io.image() gives.  Kept by strm_init(); the thread's. */
	struct img_view *view;
};

/* stream.c */
/* strm_decode()'s start: sync at the first PSB of the buffer. */
#define STRM_FROM_START UINT64_MAX
/* A stream's state for a buffer of pid's trace on CPU cpu, thread's
 * own (or a CPU's: thread NULL); held, win and (for the same process)
 * the cache are kept. */
void strm_init(struct strm *s, struct dec_capture *c, const struct strm_io *io,
	       const struct strm_out *out, uint32_t cpu,
	       struct dec_thread *thread, uint32_t pid);
/* Free what s holds, and s (which may be NULL). */
void strm_free(struct strm *s);
/* Decode buf from the PSB at start (or STRM_FROM_START) with the code
 * of image (NULL: none): sync, decode until an error, resync, ... until
 * its end or until s->out says stop.  Returns 0 or a negative errno
 * value. */
int strm_decode(struct strm *s, const uint8_t *buf, size_t len, uint64_t start,
		struct pt_image *image);
/* The decoder's offset in its buffer. */
uint64_t strm_offset(const struct strm *s);
/* libipt's configuration for decoding len bytes at buf of the capture's
 * trace, without an address filter (strm_io.addr_filter). */
void strm_config(const struct dec_capture *c, struct pt_config *cfg,
		 const uint8_t *buf, size_t len);

/* inline.c */
/* An event just named ip as where decoding goes on. */
static inline void strm_inline_told(struct strm *s, uint64_t ip)
{
	/* Code with no inlined calls (most) has nothing to learn. */
	s->inl_told = s->inl_span.tab || s->inl_top;
	s->inl_told_ip = ip;
}
/* The inlined calls block b (decoded from instruction count pos on)
 * passes through: DEC_INLINE where the innermost open one changes. */
void strm_inline_block(struct strm *s, const struct pt_block *b, uint64_t pos);

/* timing.c */
bool dec_tid_chosen(const struct dec_capture *c, uint32_t tid);
/* An event now, at time t, to the thread running. */
void strm_emit_now(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		   uint64_t aux);
/* An event that is no transfer: what waits goes first, as it was. */
void strm_emit(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
	       uint64_t aux);
/* A call, return or jump: it waits for the next time point. */
void strm_held_push(struct strm *s, uint64_t t, enum dec_kind k, uint64_t ip,
		    uint64_t aux);
/* The same for an event pos instructions into the buffer (the transfer
 * pending is at s->pend_pos). */
void strm_held_push_at(struct strm *s, uint64_t pos, uint64_t t,
		       enum dec_kind k, uint64_t ip, uint64_t aux);
/* Whatever waits goes out with the last time known. */
void strm_settle(struct strm *s);
/* Everything timed goes to its thread: at a sync point and at the end. */
void strm_flush(struct strm *s);
/* The buffer ended in a decode error: who ran on the CPU until it was
 * read still gets its share of the gap. */
void strm_end_gap(struct strm *s);
/* One MTC period in ns when the capture has CYC and MTC, else 0. */
uint64_t strm_mtc_span(const struct dec_capture *c);
uint64_t strm_mtc_wrap(const struct dec_capture *c);
void strm_overflow_unanchors(struct strm *s);
/* The time of what is being decoded. */
uint64_t strm_now(const struct strm *s);
/* The time of an event; a time point moves the clock. */
uint64_t strm_event_time(struct strm *s, const struct pt_event *ev);

#endif
