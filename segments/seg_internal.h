/* SPDX-License-Identifier: MIT */
/* What the files of the segment builder share: segments.h is the public
 * interface, this is its state and the steps each file lends the others. */
#ifndef MT_SEG_INTERNAL_H
#define MT_SEG_INTERNAL_H

#include "segments/go.h"
#include "segments/segments.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LEVEL_BIAS (UINT32_C(1) << 30)
/* How far a Go switch item's time may be from its event's (go_item) */
#define GO_ITEM_EARLY_NS 10000
#define GO_ITEM_LATE_NS	 10000000
#define SYM_CACHE	 4096

enum frame_kind {
	FR_FUNC,   /* a function activation */
	FR_PSEUDO, /* [syscall] / [untraced]: tracing is off */
	FR_INLINE, /* a call the compiler inlined, above its function's
		      frame (and above those inlined around it) */
};

struct frame {
	uint32_t slice;
	uint32_t fid; /* its slice's frame (what names it: the builder reads
			 names from here, not from the slice) */
	int32_t level;
	uint64_t ret;	 /* return address, 0 if unknown */
	uint64_t at;	 /* where control last came into it (seg_inl_at()) */
	uint64_t lo, hi; /* the function's range; lo > hi for pseudo */
	/* the range of the function whose frame it took by a jump (a tail
	 * call, a cold part of a function), 0 and 0 when it was called */
	uint64_t took_lo, took_hi;
	uint8_t kind;
	bool async;    /* entered by the kernel (a signal handler) */
	bool inl_code; /* the function has inlined calls */
	uint8_t go;    /* enum go_fn: a Go switch point */
	/* speculation (spec.c): control came into it (at) since it became
	 * one of the frames below what the builder decides alone */
	bool arrived;
	const struct sym_inline *in; /* FR_INLINE: the call */
};

struct sym_ent {
	uint64_t ip;
	uint64_t lo, hi;
	uint32_t name, dso;
	uint32_t frame; /* (name, dso, lo or the ip when unknown) */
	uint32_t site;	/* "FILE:LINE" of ip itself, 0 unknown */
	bool valid, known;
	bool entry_known; /* lo is the function's entry (struct img_sym) */
	bool fn_inl;	  /* its function has inlined calls */
	uint8_t go;	  /* enum go_fn of its function */
	const struct sym_inline *inl; /* innermost inlined call at ip */
};

/* What the running stack of a Go thread is (go.h). */
enum go_on { GS_UNKNOWN, GS_G, GS_G0 };

/* A frame of a stack not running, kept to be resumed. */
struct go_frame {
	struct frame f;
	uint32_t frame, site, flags; /* of its slice */
};

struct seg_builder {
	struct mt_trace *t;
	size_t thread;
	/* its thread's slice array's watch by a pager (pieces.c): the array
	 * grows under its lock; NULL: not watched */
	struct mt_ahead *ahead;
	struct seg_ends_table *ends; /* NULL: not kept */
	seg_symbolize_fn sym;
	void *ctx;

	struct frame *stack;
	size_t depth, cap;

	bool open;	  /* a segment is open */
	bool any;	  /* one was: seg_id is valid */
	bool ended;	  /* it saw DEC_END: closes at finish or next sync */
	uint64_t stop_ip; /* where the open [untraced] frame began */
	uint32_t paused;  /* reason of a gap paused while off the CPU */
	uint32_t seg_id;
	uint64_t seg_start, last_time;
	/* The thread's first time: no time goes past it + MT_DUR_MAX
	 * (seg_time_cap()) */
	uint64_t time0;
	bool have_time0;
	size_t first;	 /* its first slice */
	int32_t rmin;	 /* lowest level so far */
	uint32_t *roots; /* slices at level rmin (parent unknown) */
	size_t nr_roots, cap_roots;
	uint32_t *reveals;    /* revealed callers, in order of discovery */
	uint64_t *reveal_ips; /* the address each was revealed at */
	size_t nr_reveals, cap_reveals;
	uint64_t sync_ip; /* where the segment began */

	bool exec_next; /* an exec since the last segment: the next one
			   begins in another program */

	bool have_gap; /* a gap is pending since gap_start */
	uint64_t gap_start;
	uint32_t gap_reason;

	uint32_t frame_syscall, frame_untraced, frame_kernel;
	struct sym_ent cache[SYM_CACHE];
	/* return address -> string id of its call's "FILE:LINE" + 1 */
	struct mt_hmap sites;
	/* an inlined call -> its frame id, and "FILE:LINE" of the call
	 * the compiler replaced << 32 */
	struct mt_hmap inl_frames;

	/* Go (go.h): on once the runtime's switch points are seen */
	bool go_seen;
	struct go_proc *go;    /* the process's goroutines not running */
	bool go_own;	       /* go is the builder's */
	uint8_t go_on;	       /* enum go_on */
	uint32_t go_cur;       /* the running goroutine (1 + index), 0 none */
	uint64_t go_goid;      /* its id, 0 unknown */
	uint32_t go_first_seg; /* the first segment of the running stack */
	struct go_susp go_sys; /* the goroutine systemstack left */
	bool have_sys;
	const struct dec_goroutine *go_items; /* the capture's switches */
	size_t nr_go_items, next_go_item;
	/* A resume that several suspended goroutines fitted: they are
	 * told apart by where the resumed stack returns to (amb_climb
	 * returns above its amb_k frames so far); slices from amb_slice
	 * are the resumed goroutine's */
	struct go_susp *amb;
	size_t nr_amb, amb_k, amb_climb, amb_slice;
	uint64_t amb_time; /* of the resume */
	/* The running goroutine's identity is a guess: its slices from
	 * guess_slice are flagged when its turn ends */
	bool go_guess;
	size_t guess_slice;

	/* Speculation (spec.c): the builder began where another's events
	 * stopped.  Frames [0, spec_base) are those it began with, or had
	 * when the last event came that it could not decide alone: below
	 * them are frames it never saw, and what they return to and how
	 * they were entered are the other builder's to say. */
	bool spec;
	size_t spec_base;
	/* An event the other builder decides too, or the opening: what the
	 * builder looks up then stays out of its caches (spec.c) */
	bool spec_nocache;
	struct sym_ent scratch[4];
	unsigned next_scratch;
	/* by frame id: its source was given at such an event */
	bool *src_spec;
	size_t nr_src_spec, cap_src_spec;
	/* told of every string (frame: false) and frame (true) it interns,
	 * new or not (pieces.c dates them) */
	void (*noted)(void *ctx, bool frame, uint32_t id);
	void *noted_ctx;
};

static inline uint32_t seg_noted(struct seg_builder *b, bool frame, uint32_t id)
{
	if (b->noted && id != MT_NONE)
		b->noted(b->noted_ctx, frame, id);
	return id;
}

/* Room for need slices in b's thread's array th, or a slice onto it: the
 * array grown under its pager's watch. */
int seg_slices_room(struct seg_builder *b, struct mt_thread *th, size_t need);
struct mt_slice *seg_add_slice_grow(struct seg_builder *b, struct mt_thread *th,
				    const struct mt_slice *s);
static inline struct mt_slice *seg_add_slice(struct seg_builder *b,
					     struct mt_thread *th,
					     const struct mt_slice *s)
{
	if (th->nr_slices < th->cap_slices)
		return mt_thread_push(th, s);
	return seg_add_slice_grow(b, th, s);
}

/* frames.c: the frame stack */
struct mt_thread *seg_thr(struct seg_builder *b);
const struct sym_ent *seg_lookup(struct seg_builder *b, uint64_t ip);
struct frame *seg_top(struct seg_builder *b);
struct mt_slice *seg_slice_of(struct seg_builder *b, const struct frame *f);
static inline const char *seg_frame_str(const struct seg_builder *b,
					const struct frame *f)
{
	return mt_str(&b->t->strs, b->t->frames[f->fid].name);
}
int seg_push(struct seg_builder *b, uint64_t time, int32_t lv, uint32_t frame,
	     uint32_t flags, uint64_t ret, uint64_t lo, uint64_t hi,
	     uint8_t kind);
int seg_push_fn(struct seg_builder *b, uint64_t time, int32_t lv, uint64_t ip,
		uint64_t ret, uint32_t flags);
size_t seg_host_at(const struct seg_builder *b);
size_t seg_with_inlined(const struct seg_builder *b, size_t i);
int seg_inl_open(struct seg_builder *b, uint64_t time,
		 const struct sym_inline *leaf, uint32_t flags);
int seg_inl_at(struct seg_builder *b, uint64_t time, uint64_t ip,
	       uint32_t flags);
int seg_then_inl(struct seg_builder *b, int rc, uint64_t time, uint64_t ip,
		 uint32_t flags);
void seg_end_frame(struct seg_builder *b, const struct frame *f, uint64_t time,
		   uint32_t flags);
void seg_pop_to(struct seg_builder *b, size_t n, uint64_t time);
int seg_reveal(struct seg_builder *b, uint64_t ip);
int seg_reveal_at(struct seg_builder *b, uint64_t ip, uint64_t call);

/*
 * A direct jump back into the function whose frame f took by a jump: the
 * compiler split the function's cold part off (foo.cold, or a stripped
 * binary's unnamed code in .text.unlikely) and its hot part jumps there
 * and back.  It is the same activation, however many others of that
 * function lie below (recursion): none of them is where the jump lands.
 */
static inline bool back_from_cold_part(const struct frame *f, uint64_t to,
				       bool indirect)
{
	return !indirect && f && f->kind == FR_FUNC &&
	       f->took_lo < f->took_hi && to >= f->took_lo && to < f->took_hi;
}

/*
 * The other way: a direct jump from f into the code of a frame below that
 * took f's function by a jump, another activation of it running its cold
 * part (recursion, the cold part calling back into the function): f goes
 * to its own cold part, which has no entry of its own for it.
 */
static inline bool into_cold_part(const struct frame *f,
				  const struct frame *below, bool indirect)
{
	return !indirect && f && f->kind == FR_FUNC && f->lo < f->hi &&
	       below->took_lo == f->lo && below->took_hi == f->hi;
}

/* flow.c: returns, jumps and resumes */
int seg_on_return(struct seg_builder *b, uint64_t time, uint64_t to);
int seg_on_jump(struct seg_builder *b, uint64_t time, uint64_t to,
		bool indirect);
int seg_on_resume(struct seg_builder *b, uint64_t time, uint64_t ip);

/* segment.c: segments opening and closing */
int seg_end_segment(struct seg_builder *b, uint64_t time, const char *reason,
		    uint64_t ip, uint32_t end_flags);
int seg_open_bare(struct seg_builder *b, uint64_t time, uint64_t ip);
int seg_open_segment(struct seg_builder *b, uint64_t time, uint64_t ip,
		     bool resumed);

/* spec.c: a builder that begins in the middle of a thread's events */
enum seg_spec {
	SPEC_OWN,   /* the event is the builder's alone to decide */
	SPEC_TOUCH, /* it may read or change what is below spec_base */
	SPEC_STOP,  /* it ends or begins a segment: the builder stops */
};
int seg_spec_open(struct seg_builder *b, uint64_t time, uint64_t ip,
		  uint64_t time0);
void seg_spec_rebase(struct seg_builder *b);
/* What the event is to a speculating builder (-ENOMEM in *err). */
enum seg_spec seg_spec_check(struct seg_builder *b, enum dec_kind kind,
			     uint64_t ip, int *err);

/* go_turn.c: the switches between goroutines' stacks */
int go_hook(struct seg_builder *b, uint64_t time, enum dec_kind kind,
	    uint64_t ip, uint64_t aux);
int go_reopen(struct seg_builder *b, uint64_t time, uint64_t ip, bool resumed);
int go_turn_end(struct seg_builder *b);
int go_climbed(struct seg_builder *b, uint64_t time, uint64_t to);
void go_label(struct seg_builder *b, uint32_t gor);
uint32_t go_root_name(struct seg_builder *b);

/*
 * build.c and par.c: every thread's builder.
 */

/* An event held back (a Go process's: see take()). */
struct seg_held {
	uint64_t time, ip, aux;
	enum dec_kind kind;
};

struct seg_group;

struct seg_one {
	struct dec_thread *d; /* the decoder's thread */
	uint32_t pid;
	/* whose code its addresses are named from: the process's space
	 * (img_space()) at its last event, and when the next one begins */
	uint32_t space;
	uint64_t space_until;
	struct seg_builder *b; /* NULL until its group's thread makes it */
	struct seg_all *all;
	size_t next_exec; /* d->execs before it are fed */
	struct go_proc *go;
	struct seg_held *held;
	size_t nr_held, cap_held, next_held;
	/* par.c: its group, its index in all->one and its model thread's
	 * in all->t (its builder's is in the group's own) */
	struct seg_group *g;
	size_t idx, thread;
	/* pieces.c: the piece being filled, how many were, the last event
	 * put and the first one's time */
	struct seg_piece *cur;
	size_t nr_pieces;
	struct dec_sink_ev last;
	uint64_t time0;
	/* its pieces join in order, on whichever thread built the one the
	 * joins wait for (under the par's live_lock): the next to join,
	 * whether a thread is joining them, and their CPU */
	size_t next_join;
	bool joining;
	double join_cpu_s;
};

/* Go: each process's goroutines not running, shared by its threads'
 * builders, made as its threads' are */
struct seg_gos {
	struct go_proc **v;
	size_t nr, cap;
};

struct seg_par;

struct seg_all {
	struct img *im;
	struct mt_trace *t;
	struct seg_ends_table *ends;
	struct seg_opts opts;
	struct seg_one **one; /* each is a builder's context: never moves */
	size_t nr, cap;
	struct mt_hmap by_tid; /* tid -> index in one */
	struct seg_one *last;  /* events come in runs of one thread */
	struct seg_gos go;
	struct seg_par *par; /* NULL: every builder on the caller's thread */
};

void seg_symbolize_pid(void *ctx, uint64_t ip, struct img_sym *out);
/* The builder of o (in t, its thread there, its segments' ends in ends),
 * sharing Go's state with its process's others in gos. */
int seg_one_builder(struct seg_one *o, struct mt_trace *t, size_t thread,
		    struct seg_ends_table *ends, struct seg_gos *gos);
int seg_take(struct seg_one *o, uint64_t time, enum dec_kind kind, uint64_t ip,
	     uint64_t aux);
/* The held events of these threads, merged by time; after each, tag()
 * (when not NULL) with its number. */
int seg_held_feed(struct seg_one **one, size_t nr,
		  void (*tag)(void *ctx, uint64_t n), void *ctx);

/*
 * par.c and pieces.c: the threads' builders on threads of their own.
 */

/* The order of what comes after the events: held ones, then closing. */
#define TAG_HELD   (UINT64_C(1) << 62)
#define TAG_FINISH (UINT64_C(2) << 62)
/* A piece's entry made only as it opened, or at an event the thread's
 * builder decided (pieces.c): not the thread's */
#define TAG_SPEC (UINT64_C(1) << 61)
/* Event seq's date; below it, the order of what a piece's builder made
 * there (pieces.c: its entries need not be new in the order they are) */
#define TAG_EV(seq) ((uint64_t)(seq) << 16)
#define TAG_SUB_MAX 0xffff

/* The tag of each entry of a table, by id. */
struct tags {
	uint64_t *v;
	size_t nr, cap;
};

enum { T_STR, T_FRAME, T_SEG, T_GOR, T_PTW, NR_T };

struct seg_group {
	struct mt_trace t; /* its own model: no processes */
	struct seg_ends_table ends;
	struct seg_gos gos;
	struct tags tag[NR_T];
	uint32_t *map[NR_T]; /* its ids -> the merged model's (T_PTW: none) */
	bool same;	     /* every map is the identity */
	struct seg_one **ones;
	size_t nr_ones, cap_ones;
	unsigned worker;
	bool worker_mode; /* its events go to a worker of its own (Go) */
	/* A piece's model (pieces.c): its entries made as it opened, at
	 * the events another builder decided (tagged TAG_SPEC), or from
	 * weak_from on, are not the thread's (it decided them as well, or
	 * went wrong there) */
	bool piece;
	uint64_t weak_from;
};

struct par_worker;
struct seg_par {
	struct seg_all *a;
	unsigned max_workers, nr_w;
	struct par_worker *w;
	size_t nr_wg; /* the groups given a worker */
	struct seg_group **g;
	size_t nr_g, cap_g;
	struct seg_group *go_group;
	struct mt_hmap may_go; /* pid -> 1 + whether it may be Go */
	struct tags main_str;  /* of a->t's strings */
	uint32_t *main_map;
	uint64_t seq; /* the next event's number */
	/* pieces.c: every thread not Go's is built in pieces at once */
	struct mt_pool *pieces;
	unsigned piece_threads; /* the threads it got (1: none) */
	struct mt_pager *pager; /* the threads' slice arrays' pages */
	size_t nr_watched;	/* the arrays it watches (atomic) */
	size_t piece_events;
	struct seg_group **pm; /* the pieces' models, for the merge */
	size_t nr_pm, cap_pm;
	double join_cpu_s;	/* the busiest thread's joins' */
	struct seg_piece *live; /* put, not finished (under live_lock) */
	struct seg_spare {
		struct dec_sink_ev *ev;
		uint64_t *seq;
	} * spare; /* finished pieces' event arrays (under live_lock) */
	size_t nr_spare, cap_spare;
	struct seg_spare_slices {
		struct mt_slice *v;
		size_t cap;
	} * spare_sl; /* and their models' slice arrays (under live_lock) */
	size_t nr_spare_sl, cap_spare_sl;
	pthread_mutex_t live_lock;
	pthread_cond_t joined; /* a piece was joined, or the joins stop */
	bool have_live_lock;
	int join_err; /* the first join's or build's error: joins stop */
	uint64_t nr_pieces, nr_touches, nr_rebuilt; /* events rebuilt */
};

int seg_tag_new(struct tags *tg, size_t nr, uint64_t tag);
/* Tags what g's tables gained since with tag. */
int seg_group_tag_new(struct seg_group *g, uint64_t tag);
static inline int seg_group_tag(struct seg_group *g, uint64_t tag)
{
	/* Most events make nothing new. */
	if (g->t.strs.nr == g->tag[T_STR].nr &&
	    g->t.nr_frames == g->tag[T_FRAME].nr &&
	    g->t.nr_segments == g->tag[T_SEG].nr &&
	    g->t.nr_goroutines == g->tag[T_GOR].nr &&
	    g->t.nr_ptwrites == g->tag[T_PTW].nr)
		return 0;
	return seg_group_tag_new(g, tag);
}
struct seg_group *seg_group_new(const struct seg_par *p);
void seg_group_free(struct seg_group *g);
/* seg_held_feed()'s tag: dates what held event n made in g. */
struct seg_held_tag {
	struct seg_group *g;
	int rc;
};
void seg_tag_held(void *ctx, uint64_t n);
/* o's first event: its model thread and builder in its group's model. */
int seg_one_start(struct seg_one *o);

/* pieces.c */
int seg_pieces_start(struct seg_par *p);
/* hold: as the decode's sink has it (a piece keeps the events in their
 * block until a builder takes them), or NULL */
int seg_pieces_put(struct seg_par *p, struct seg_one *o,
		   const struct dec_sink_ev *ev, size_t n,
		   struct dec_hold *hold);
/* Every event is in: the pieces are built and joined, and their threads
 * end.  0 or a negative errno value. */
int seg_pieces_end(struct seg_par *p);
void seg_piece_free(struct seg_piece *pc);
/* The pool ends, the pieces it left go. */
void seg_pieces_free(struct seg_par *p);

/* par.c: the builders of the threads on threads of their own */
int seg_par_new(struct seg_par **out, struct seg_all *a, unsigned workers,
		size_t piece_events);
void seg_par_free(struct seg_par *p);
unsigned seg_par_threads(const struct seg_par *p);
double seg_par_busiest_cpu(const struct seg_par *p);
/* o is new (one_of() has made its model thread): its group */
int seg_par_adopt(struct seg_par *p, struct seg_one *o);
int seg_par_put(struct seg_par *p, struct seg_one *o,
		const struct dec_sink_ev *ev, size_t n, struct dec_hold *hold);
/* Every event is in: the threads close, the groups' models merge into
 * all->t.  0 or a negative errno value. */
int seg_par_finish(struct seg_par *p);

#endif
