/* SPDX-License-Identifier: MIT */
/*
 * A thread's buffer decoded in pieces on every core, its events those of
 * the serial decode.
 *
 * The buffer is cut at PSBs into pieces.  Each piece's run syncs at its
 * PSB with a decoder and a stream of its own, and decodes on past its
 * piece's end until it finds itself in the state the next piece's run
 * was in at the same place: from there both would decode alike, so the
 * first run stops and the next one's events go on.  The same place is a
 * tick (a timing packet bound in the instruction flow) with the decoder
 * at the same offset and the same tick there; the same state is every
 * field of the stream that decides what comes next (the clock and its
 * last stretch, the pending transfer, the current function, what the
 * CYC window holds), with nothing waiting for a time point.  A piece's
 * run records such checkpoints over the first CP_ZONE bytes it decodes.
 * When none matches, the run before goes on through the piece itself
 * (it is the serial decode) and the piece's own run is dropped: a match
 * only saves time, it never decides what is decoded.
 *
 * What the state leaves out is libipt's own: its return stack may hold
 * calls from before the PSB, but hardware never compresses a return
 * across a PSB (it flushes its call stack there, and perf's decoder
 * does the same); its cycle-to-time ratio is the same again two MTCs
 * after the PSB, and a clock that still differed would show in the
 * times of the CYC window's events.
 *
 * Runs deliver into buffers of their own; the calling thread hands the
 * used part of each piece's events to the sink, in order, a thread's in
 * runs (strm_out.deliver_run): what is left of a thread's conversion on
 * that thread is then the segment builders' own work.
 */
#include "decode/par.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PIECE_DEFAULT (256u << 10) /* bytes of AUX a piece */
#define CP_ZONE	      (32u << 10)  /* checkpoints this far into a piece */
#define CP_MAX	      512
#define MAX_JOBS      64
#define BLOCK_BYTES   ((size_t)1 << 20)		/* a block of a run's output */
#define EV_BLOCK      ((BLOCK_BYTES - 32) / 32) /* its events, at most */
#define SPARE_BLOCKS  16 /* blocks kept for reuse, at most */
/* The runs ahead of the hand-over hold this many pieces' worth of
 * events at most (ahead_max()). */
#define AHEAD_PIECES 16
/* A run wakes the hand-over each time it has delivered this many. */
#define HAND_STEP 2048

/*
 * A run's events are a list of blocks, so that the thread handing them
 * over can read the first while the run appends to the last.  They wait
 * in the form the sink takes, with a note of their thread and whether
 * they were delivered, not only pushed (struct strm_out), so that a run
 * of them goes to the sink straight from the block: the thread that
 * hands them over, a part of the decode that does not spread over the
 * cores, only reads the notes.  32 bytes: the events waiting are most of
 * what a parallel decode adds to the memory (nthreads + 2 pieces' worth).
 */
struct ev_block {
	struct dec_hold {
		/* the run's while it is read, and each consumer's that
		 * kept the events (dec_hold_take()) */
		atomic_uint refs;
		struct ev_home *home;
	} hold;
	struct ev_block *next;
	struct dec_sink_ev e[EV_BLOCK];
};

_Static_assert(sizeof(struct ev_block) <= BLOCK_BYTES, "a block in its map");

/*
 * A block is a mapping of its own, unmapped when it goes (but for a few
 * spares): blocks are taken on the decoding threads and let go on the
 * builders', and from the allocator's arenas, 64 KiB at a time, they
 * left each arena holding the most it ever held (at the end of the
 * bench capture's decode at -j 64, 305 MiB free in the arenas, 120 MiB at
 * -j 16).  A mapped block costs only the pages its events were written
 * into.
 *
 * It takes about an eighth of a piece's bytes in events (a piece makes
 * up to an event a byte): a few blocks a piece, so that a small piece's
 * blocks touch few pages, and the hand-over still crosses blocks in the
 * small pieces the tests cut.
 */
static size_t block_events(size_t piece_size)
{
	size_t n = piece_size / 8;

	return n < 256 ? 256 : n > EV_BLOCK ? EV_BLOCK : n;
}

/*
 * The blocks the runs of the pieces after the one being handed over may
 * hold before the furthest of them waits (room()).  The window of
 * pieces (next_piece()) already bounds them to a piece a thread, about
 * 4 MB each on the bench capture: at -j 64 that was 290 blocks at its
 * height, 290 MiB, where -j 16 held 72, and peak RSS went past 48 bytes
 * a slice.  AHEAD_PIECES pieces' worth, at 16 bytes of events a byte of
 * AUX (an event every 2 bytes, as the bench capture makes them), keeps
 * -j 16's runs going untouched: about half a piece each, with the few
 * done pieces the hand-over has not reached.  Beyond that the nearest
 * runs go on and the furthest wait: their events would only wait for
 * the hand-over longer.
 */
static size_t ahead_max(size_t piece_size, size_t block_events)
{
	size_t per_piece = piece_size * 16 / (block_events * 32);

	return AHEAD_PIECES * (per_piece ? per_piece : 1);
}

/*
 * Where blocks come from and go back to.  A consumer may keep a block
 * past the decode (the segment builders keep theirs until a builder
 * takes the events), so the home outlives the par that made it: closed,
 * it frees each block as the last hold on it goes, and itself with the
 * last block.
 */
struct ev_home {
	pthread_mutex_t lock;
	struct ev_block *spare; /* for the runs to fill again */
	size_t nr_spare;
	size_t out; /* blocks allocated and not freed, spares too */
	bool closed;
};

static void home_free(struct ev_home *h)
{
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A block for a run: a spare (fresh memory costs a page fault a 4 KiB,
 * and a block freed to the allocator goes back to the system) or new. */
static struct ev_block *block_get(struct ev_home *h)
{
	struct ev_block *b;

	pthread_mutex_lock(&h->lock);
	b = h->spare;
	if (b) {
		h->spare = b->next;
		h->nr_spare--;
	} else {
		b = mmap(NULL, BLOCK_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			b = NULL;
		else
			h->out++;
	}
	pthread_mutex_unlock(&h->lock);
	if (b) {
		atomic_init(&b->hold.refs, 1);
		b->hold.home = h;
		b->next = NULL;
	}
	return b;
}

void dec_hold_take(struct dec_hold *hd)
{
	atomic_fetch_add_explicit(&hd->refs, 1, memory_order_relaxed);
}

void dec_hold_drop(struct dec_hold *hd)
{
	struct ev_block *b = (struct ev_block *)hd; /* (its first member) */
	struct ev_home *h = hd->home;
	bool last = false;

	if (atomic_fetch_sub_explicit(&hd->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&h->lock);
	if (!h->closed && h->nr_spare < SPARE_BLOCKS) {
		b->next = h->spare;
		h->spare = b;
		h->nr_spare++;
		b = NULL;
	} else {
		h->out--;
		last = h->closed && !h->out;
	}
	pthread_mutex_unlock(&h->lock);
	if (b)
		munmap(b, BLOCK_BYTES);
	if (last)
		home_free(h);
}

/* The run's hold on a list of blocks let go. */
static void blocks_drop(struct ev_block *b)
{
	while (b) {
		struct ev_block *next = b->next;

		dec_hold_drop(&b->hold);
		b = next;
	}
}

/* The par is gone: its spares freed, the blocks still held freed as
 * they are let go. */
static void home_close(struct ev_home *h)
{
	bool last;

	pthread_mutex_lock(&h->lock);
	while (h->spare) {
		struct ev_block *b = h->spare;

		h->spare = b->next;
		munmap(b, BLOCK_BYTES);
		h->out--;
	}
	h->nr_spare = 0;
	h->closed = true;
	last = !h->out;
	pthread_mutex_unlock(&h->lock);
	if (last)
		home_free(h);
}

_Static_assert(sizeof(struct dec_sink_ev) == 32, "an event waits in 32 bytes");

/* What decides a stream's next events, at a tick: compared whole, so
 * every byte of it is set (no padding). */
struct strm_key {
	uint64_t off;
	uint64_t last_time, since_mark, rate_dt, rate_dp, win_floor;
	uint64_t pend_time, pend_since, pend_from, pend_ret;
	uint64_t last_ip, blk_ip, cur_lo, cur_hi;
	uint64_t prog_off, prev_off, win_n;
	uint64_t hold_from, hold_back, hold_until;
	uint64_t inl_top, inl_told_ip;
	uint32_t nth, blk_ninsn, stuck_blocks, stuck_calls;
	int32_t last_isid;
	uint32_t pend, flags;
	uint32_t space; /* whose code it decodes: the program after an exec */
};

enum { ST_BLOCKS, ST_ERRORS, ST_OVERFLOWS, NR_ST };

struct ckpt {
	struct strm_key key;
	struct timed *win; /* the CYC window's events, win_n of them */
	size_t nev;	   /* events the run had delivered */
	uint64_t st[NR_ST];
};

struct piece {
	const struct par_buf *b; /* its buffer */
	size_t buf_end;		 /* index of the first piece of the next */
	bool first;		 /* the buffer's first piece */
	uint64_t start, end;	 /* its bytes; start is a PSB's offset */
	bool taken;		 /* a run has it */
	bool done;		 /* its run has ended */
	bool absorbed;		 /* decoded by the run before: not used */
	atomic_bool cancel;	 /* its run may stop */
	bool joined;		 /* its run stopped in the next piece's */
	bool cp_final;		 /* the checkpoints may be read */
	struct ckpt *cp;
	size_t ncp, cap_cp;
	/* Its run's events: nev of them, published as they come. */
	struct ev_block *ev_first, *ev_last;
	size_t fill; /* events in ev_last: the run's alone */
	size_t nblk; /* blocks its run took (under the lock) */
	atomic_size_t nev;
	/* The used events are [from, nev): those before are the run
	 * before's; after the run stopped, the next run's come. */
	size_t from;
	uint64_t from_st[NR_ST], end_st[NR_ST];
	/* Its run's range ends at span_end, where piece next begins. */
	size_t next;
	uint64_t span_end;
};

struct prun {
	struct par *p;
	size_t idx;
};

struct par {
	struct dec_capture *c;
	struct strm_io io;  /* what the runs read through */
	struct strm_out to; /* where the used events go */
	size_t piece_size;
	size_t block_events; /* the events a block takes (EV_BLOCK at most) */
	unsigned nthreads, started;
	pthread_t *th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* The hand-over waits for a run's events on a condition of its
	 * own: each HAND_STEP more events wake it, not every run waiting
	 * for a piece or a checkpoint. */
	pthread_cond_t more;
	bool hand_waits;
	bool quit;
	bool cut_ok; /* the trace has ticks to join pieces at */
	/* the buffers being decoded, in pieces */
	struct piece *pc;
	size_t npc, cap_pc;
	size_t fed;	  /* pieces handed over */
	size_t ahead_max; /* blocks the runs after it may hold */
	uint64_t waits;	  /* times a run waited for room() */
	unsigned busy;	  /* runs going on */
	int rc;		  /* a run's error */
	struct ev_home *home;
};

/* An event's note: its thread's index in the capture's, and bit 0 (the
 * capture's threads stay where they are while it decodes).  */
static uint32_t ev_note(const struct par *p, const struct dec_thread *th,
			bool counted)
{
	return (uint32_t)(th - p->c->threads) << 1 | (uint32_t)counted;
}

static void stats_of(const struct strm *s, uint64_t st[NR_ST])
{
	st[ST_BLOCKS] = s->n_blocks;
	st[ST_ERRORS] = s->n_errors;
	st[ST_OVERFLOWS] = s->n_overflows;
}

/* Nothing waits for a time point: the stream's future is its state. */
static bool settled(const struct strm *s)
{
	return s->synced && !s->ovf_pending && !s->unanchored && !s->nheld &&
	       !s->rc;
}

static void key_of(const struct strm *s, struct strm_key *k)
{
	memset(k, 0, sizeof(*k));
	k->off = s->tick_off;
	k->nth = s->tick_nth;
	k->last_time = s->last_time;
	k->since_mark = s->icount - s->mark_pos;
	k->rate_dt = s->rate_dt;
	k->rate_dp = s->rate_dp;
	k->win_floor = s->win_floor;
	k->win_n = s->win_n;
	/* (psb_next is the first PSB at or after off, whoever looks) */
	if (s->hold_until) {
		k->hold_from = s->hold_from;
		k->hold_back = s->hold_back;
		k->hold_until = s->hold_until;
	}
	k->pend = (uint32_t)s->pend;
	k->pend_time = s->pend_time;
	k->pend_since = s->icount - s->pend_pos;
	k->pend_from = s->pend_from;
	k->pend_ret = s->pend_ret;
	k->last_ip = s->last_ip;
	k->blk_ip = s->blk_ip;
	k->blk_ninsn = s->blk_ninsn;
	k->last_isid = s->last_isid;
	k->cur_lo = s->cur_lo;
	k->cur_hi = s->cur_hi;
	k->space = s->pid;
	k->prog_off = s->prog_off;
	k->prev_off = s->prev_off;
	k->stuck_blocks = s->stuck_blocks;
	k->stuck_calls = s->stuck_calls;
	k->inl_top = (uint64_t)(uintptr_t)s->inl_top;
	k->inl_told_ip = s->inl_told ? s->inl_told_ip : 0;
	k->flags = (uint32_t)s->have_mark | (uint32_t)s->mark_tick << 1 |
		   (uint32_t)s->synced << 2 | (uint32_t)s->tracing << 3 |
		   (uint32_t)s->last_far << 4 | (uint32_t)s->tsx_aborted << 5 |
		   (uint32_t)(s->lost != 0) << 6 | (uint32_t)s->inl_told << 7 |
		   (uint32_t)s->pend_fixed << 8;
}

static bool same_win(const struct strm *s, const struct ckpt *cp)
{
	for (size_t i = 0; i < s->win_n; i++) {
		const struct timed *a = &s->win[s->win_head + i];
		const struct timed *b = &cp->win[i];

		if (a->t != b->t || a->ip != b->ip || a->aux != b->aux ||
		    a->k != b->k)
			return false;
	}
	return true;
}

static int record(struct piece *pc, const struct strm *s)
{
	struct ckpt *cp;

	if (mt_grow((void **)&pc->cp, &pc->cap_cp, pc->ncp + 1,
		    sizeof(*pc->cp)))
		return -ENOMEM;
	cp = &pc->cp[pc->ncp];
	key_of(s, &cp->key);
	cp->win = NULL;
	if (s->win_n) {
		cp->win = malloc(s->win_n * sizeof(*cp->win));
		if (!cp->win)
			return -ENOMEM;
		memcpy(cp->win, s->win + s->win_head,
		       s->win_n * sizeof(*cp->win));
	}
	cp->nev = atomic_load_explicit(&pc->nev, memory_order_relaxed);
	stats_of(s, cp->st);
	pc->ncp++;
	return 0;
}

static void publish(struct par *p, struct piece *pc)
{
	pthread_mutex_lock(&p->lock);
	pc->cp_final = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/*
 * pc's run takes over piece q's range too (under the lock).  A run that
 * was itself given up takes nothing: the piece may be one the live run
 * joined.  Returns false then, and the run stops.
 */
static bool absorb(struct par *p, struct piece *pc, size_t q)
{
	struct piece *qc = &p->pc[q];

	if (atomic_load(&pc->cancel))
		return false;
	qc->absorbed = true;
	atomic_store(&qc->cancel, true);
	pthread_cond_broadcast(&p->cond);
	pc->next = q + 1;
	pc->span_end = qc->end;
	return true;
}

/* The checkpoint of qc at the tick s is at, or NULL; *past: s is past
 * the last of them. */
static const struct ckpt *find_ckpt(const struct piece *qc,
				    const struct strm *s, bool *past)
{
	size_t lo = 0, hi = qc->ncp;

	*past = !qc->ncp || qc->cp[qc->ncp - 1].key.off < s->tick_off ||
		(qc->cp[qc->ncp - 1].key.off == s->tick_off &&
		 qc->cp[qc->ncp - 1].key.nth < s->tick_nth);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct strm_key *k = &qc->cp[mid].key;

		if (k->off < s->tick_off ||
		    (k->off == s->tick_off && k->nth < s->tick_nth))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < qc->ncp && qc->cp[lo].key.off == s->tick_off &&
	    qc->cp[lo].key.nth == s->tick_nth)
		return &qc->cp[lo];
	return NULL;
}

/*
 * pc's run takes piece q as its own (the lock held, and let go here).
 * Returns 1 when the run must stop (it was given up itself), 0 when the
 * tick s is at is now inside its range, -1 when it is past that too.
 */
static int take_over(struct strm *s, struct par *p, struct piece *pc, size_t q)
{
	bool ok = absorb(p, pc, q);

	pthread_mutex_unlock(&p->lock);
	if (!ok)
		return 1;
	return s->tick_off < pc->span_end ? 0 : -1;
}

/* In the join zone: true when the run stops here. */
static bool join(struct strm *s, struct par *p, struct piece *pc)
{
	for (;;) {
		struct strm_key key;
		const struct ckpt *cp;
		struct piece *qc;
		size_t q;
		bool past;
		int rc;

		pthread_mutex_lock(&p->lock);
		q = pc->next;
		if (q >= pc->buf_end) {
			pthread_mutex_unlock(&p->lock);
			return false; /* the last piece: on to the end */
		}
		qc = &p->pc[q];
		/* A piece no run has, or one already given up, is decoded
		 * here. */
		if (!qc->taken || qc->absorbed) {
			if ((rc = take_over(s, p, pc, q)) >= 0)
				return rc;
			continue;
		}
		while (!qc->cp_final && !p->quit)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		if (p->quit)
			return true;
		cp = find_ckpt(qc, s, &past);
		key_of(s, &key);
		if (cp && !memcmp(&key, &cp->key, sizeof(key)) &&
		    same_win(s, cp)) {
			bool stop = true;

			pthread_mutex_lock(&p->lock);
			if (!atomic_load(&pc->cancel)) {
				pc->joined = true;
				stats_of(s, pc->end_st);
				qc->from = cp->nev;
				memcpy(qc->from_st, cp->st, sizeof(cp->st));
			}
			pthread_mutex_unlock(&p->lock);
			return stop;
		}
		if (!past)
			return false;
		/* No state of the next run's is ours: its piece is ours. */
		pthread_mutex_lock(&p->lock);
		if ((rc = take_over(s, p, pc, q)) >= 0)
			return rc;
	}
}

/* At a time point of a run: true when the run stops here (its output
 * goes on in the next piece's, or it is not needed). */
static bool prun_tick(void *ctx, struct strm *s)
{
	struct prun *r = ctx;
	struct par *p = r->p;
	struct piece *pc = &p->pc[r->idx];
	uint64_t off = strm_offset(s);

	if (off == s->tick_off && s->tick_nth != UINT32_MAX) {
		s->tick_nth++;
	} else {
		s->tick_off = off;
		s->tick_nth = 0;
	}
	if (atomic_load_explicit(&pc->cancel, memory_order_relaxed))
		return true;
	if (!settled(s))
		return false;
	if (!pc->cp_final) {
		/* Not before the decoder's offset has moved past the PSB it
		 * synced at: until then a resync after an error would start
		 * its search from there, where the serial decode, synced
		 * earlier, searches from past it. */
		if (off > s->first_off && off - s->first_off < CP_ZONE &&
		    pc->ncp < CP_MAX && s->prev_off > pc->start) {
			if (record(pc, s)) {
				s->rc = -ENOMEM;
				return false;
			}
		} else if (off > s->first_off) {
			publish(p, pc);
		}
	}
	if (off < pc->span_end)
		return false;
	if (!pc->cp_final)
		publish(p, pc);
	return join(s, p, pc);
}

/* Behind the last of qc's checkpoints, where no tick can match. */
static bool past_ckpts(const struct piece *qc, uint64_t off)
{
	return qc->cp_final && (!qc->ncp || qc->cp[qc->ncp - 1].key.off < off);
}

/* Now and then between ticks: true when the run's output is not needed
 * any more; a run past its piece takes over pieces it cannot join. */
static bool prun_check(void *ctx, struct strm *s)
{
	struct prun *r = ctx;
	struct par *p = r->p;
	struct piece *pc = &p->pc[r->idx];
	uint64_t off;

	if (atomic_load_explicit(&pc->cancel, memory_order_relaxed))
		return true;
	off = strm_offset(s);
	if (off < pc->span_end)
		return false;
	/* A trace with few ticks goes on without waiting for one. */
	pthread_mutex_lock(&p->lock);
	while (pc->next < pc->buf_end && off >= pc->span_end) {
		struct piece *qc = &p->pc[pc->next];

		if (qc->taken && !qc->absorbed && !past_ckpts(qc, off))
			break;
		if (!absorb(p, pc, pc->next)) {
			pthread_mutex_unlock(&p->lock);
			return true;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return false;
}

/* Blocks held by the runs of the pieces after the one being handed
 * over, up to piece end (the lock held). */
static size_t blocks_ahead(const struct par *p, size_t end)
{
	size_t n = 0;

	for (size_t i = p->fed + 1; i <= end; i++)
		n += p->pc[i].nblk;
	return n;
}

/*
 * Before piece i's run takes a block more: it waits while the runs from
 * the hand-over's up to its own hold ahead_max() blocks, so that the
 * nearest runs go on and the furthest wait.  The run being handed over
 * never waits, nor a run whose checkpoints are not yet published (the
 * run before may be waiting for them in join()), nor one given up: each
 * of them goes on to where the hand-over moves on or frees blocks.
 */
static void room(struct par *p, size_t i)
{
	struct piece *pc = &p->pc[i];
	bool waited = false;

	pthread_mutex_lock(&p->lock);
	while (i > p->fed && pc->cp_final && !p->quit &&
	       !atomic_load_explicit(&pc->cancel, memory_order_relaxed) &&
	       blocks_ahead(p, i) >= p->ahead_max) {
		waited = true;
		pthread_cond_wait(&p->cond, &p->lock);
	}
	p->waits += waited;
	pc->nblk++;
	pthread_mutex_unlock(&p->lock);
}

/* An event of a run, kept for the thread that hands the run's events
 * over (own is its buffer's).  0 or -ENOMEM. */
static int prun_deliver(void *ctx, struct dec_thread *th, bool counted,
			bool own, uint64_t t, enum dec_kind k, uint64_t ip,
			uint64_t aux)
{
	struct prun *r = ctx;
	struct par *p = r->p;
	struct piece *pc = &p->pc[r->idx];
	size_t n = atomic_load_explicit(&pc->nev, memory_order_relaxed);

	(void)own; /* hand_over() has it from the piece's buffer */

	/* Whoever hands the events over may be waiting. */
	if (n && n % HAND_STEP == 0) {
		pthread_mutex_lock(&p->lock);
		if (p->hand_waits)
			pthread_cond_signal(&p->more);
		pthread_mutex_unlock(&p->lock);
	}
	if (!pc->ev_last || pc->fill == p->block_events) {
		struct ev_block *b;

		room(p, r->idx);
		b = block_get(p->home);

		if (!b)
			return -ENOMEM;
		if (pc->ev_last)
			pc->ev_last->next = b;
		else
			pc->ev_first = b;
		pc->ev_last = b;
		pc->fill = 0;
	}
	pc->ev_last->e[pc->fill++] =
		(struct dec_sink_ev){.time = t,
				     .ip = ip,
				     .aux = aux,
				     .kind = k,
				     .note = ev_note(p, th, counted)};
	atomic_store_explicit(&pc->nev, n + 1, memory_order_release);
	return 0;
}

static void piece_free(struct piece *pc);

static int run_piece(struct par *p, struct strm *s, size_t i)
{
	struct piece *pc = &p->pc[i];
	struct prun r = {p, i};
	const struct strm_out out = {.ctx = &r,
				     .deliver = prun_deliver,
				     .tick = prun_tick,
				     .check = prun_check};
	struct pt_image *image = NULL, *own = NULL, *src;
	int rc = 0;

	strm_init(s, p->c, &p->io, &out, pc->b->k->cpu, pc->b->own, pc->b->pid);
	s->lost = pc->first ? pc->b->lost : 0;
	s->end_time = pc->b->end_time;
	/* A first piece's checkpoints are never looked at. */
	if (pc->first)
		publish(p, pc);
	/* libipt's image is not for two threads at once (its section list
	 * is kept in the order of use): a run reads its thread's own, or a
	 * copy of the shared one. */
	src = s->view ? img_view_image(s->view, pc->b->pid) : NULL;
	if (src)
		own = src;
	else
		src = p->io.image(p->io.ctx, pc->b->pid);
	if (src && !own) {
		int status = -pte_nomem;

		image = pt_image_alloc(NULL);
		if (image)
			status = pt_image_copy(image, src);
		if (status < 0)
			rc = img_pt_error(status, NULL, 0, NULL, "decoder");
	}
	if (!rc)
		rc = strm_decode(s, pc->b->data, pc->b->len,
				 pc->first ? STRM_FROM_START : pc->start,
				 own ? own : image);
	pt_image_free(image);
	pthread_mutex_lock(&p->lock);
	pc->cp_final = true;
	if (!pc->joined) {
		stats_of(s, pc->end_st);
		/* It decoded to the end: every piece after is in it.  (A
		 * run that could not even sync at its PSB has nothing: the
		 * run before takes its piece and goes on to the next.) */
		for (size_t q = pc->next; s->at_end && q < pc->buf_end; q++)
			if (!absorb(p, pc, q))
				break;
	}
	/* Nobody reads a dropped run's events. */
	if (pc->absorbed)
		piece_free(pc);
	pc->done = true;
	if (rc == -ENOMEM && !p->rc)
		p->rc = rc;
	p->busy--;
	pthread_cond_broadcast(&p->cond);
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* The next piece to run, under the lock, or SIZE_MAX: the first free
 * one not too far ahead of what is handed over, so that the events
 * waiting stay a few pieces' worth.  A piece a thread and two more
 * keep every thread busy while the hand-over keeps up; when it does
 * not, more pieces ahead would only wait, at about 4 MB each. */
static size_t next_piece(const struct par *p)
{
	size_t end = p->fed + (size_t)p->nthreads + 2;

	if (end > p->npc)
		end = p->npc;
	for (size_t i = p->fed; i < end; i++)
		if (!p->pc[i].taken && !p->pc[i].absorbed)
			return i;
	return SIZE_MAX;
}

static void *worker(void *arg)
{
	struct par *p = arg;
	struct strm *s = calloc(1, sizeof(*s));

	/* Without a view of its own (out of memory, a binary changed) the
	 * thread reads the shared sections, as a thread of one does. */
	if (s)
		(void)img_view_new(dec_image(p->c), &s->view);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		size_t i;

		if (p->quit)
			break;
		i = next_piece(p);
		if (i == SIZE_MAX) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		p->pc[i].taken = true;
		p->busy++;
		pthread_mutex_unlock(&p->lock);
		if (s) {
			run_piece(p, s, i);
		} else {
			pthread_mutex_lock(&p->lock);
			p->pc[i].cp_final = true;
			p->pc[i].done = true;
			p->rc = -ENOMEM;
			p->busy--;
			pthread_cond_broadcast(&p->cond);
			pthread_cond_signal(&p->more);
			pthread_mutex_unlock(&p->lock);
		}
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	if (s)
		img_view_free(s->view);
	strm_free(s);
	return NULL;
}

/* Threads to decode on: the option's, else one a core. */
static unsigned nr_jobs(const struct dec_capture *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n =
		c->opts.jobs ? c->opts.jobs : (cores > 0 ? (unsigned)cores : 1);

	return n > MAX_JOBS ? MAX_JOBS : n;
}

bool dec_runs_aside(const struct dec_capture *c)
{
	return nr_jobs(c) >= 2;
}

int dec_par_new(struct par **out, struct dec_capture *c,
		const struct strm_io *io, const struct strm_out *to)
{
	unsigned n = nr_jobs(c);
	struct par *p;

	*out = NULL;
	if (n < 2)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->c = c;
	p->io = *io;
	p->to = *to;
	p->nthreads = n;
	/* Pieces join at ticks: a trace timed by TSC alone has them only
	 * at its PSBs, and would be decoded twice over for nothing. */
	p->cut_ok = c->pt_config & (c->pt.mtc_bit | c->pt.cyc_bit);
	p->piece_size = c->opts.piece_size ? c->opts.piece_size : PIECE_DEFAULT;
	p->block_events = block_events(p->piece_size);
	p->ahead_max = ahead_max(p->piece_size, p->block_events);
	p->th = calloc(n, sizeof(*p->th));
	p->home = calloc(1, sizeof(*p->home));
	if (!p->home || pthread_mutex_init(&p->home->lock, NULL))
		goto no_home;
	if (!p->th || pthread_mutex_init(&p->lock, NULL))
		goto no_lock;
	if (pthread_cond_init(&p->cond, NULL))
		goto no_cond;
	if (pthread_cond_init(&p->more, NULL))
		goto no_more;
	/* Threads start with the first buffers to decode. */
	*out = p;
	return 0;
no_more:
	pthread_cond_destroy(&p->cond);
no_cond:
	pthread_mutex_destroy(&p->lock);
no_lock:
	pthread_mutex_destroy(&p->home->lock);
no_home:
	free(p->home);
	free(p->th);
	free(p);
	return -ENOMEM;
}

void dec_par_free(struct par *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->quit = true;
	pthread_cond_broadcast(&p->cond);
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->cond);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->lock);
	home_close(p->home);
	free(p->pc);
	free(p->th);
	free(p);
}

unsigned dec_par_group(const struct par *p)
{
	return p ? 4 * p->nthreads : 1;
}

/* A piece more, at index n: 0 or -ENOMEM. */
static int add_piece(struct par *p, size_t n, const struct par_buf *b,
		     bool first, uint64_t start)
{
	if (mt_grow((void **)&p->pc, &p->cap_pc, n + 1, sizeof(*p->pc)))
		return -ENOMEM;
	memset(&p->pc[n], 0, sizeof(p->pc[n]));
	p->pc[n].b = b;
	p->pc[n].first = first;
	p->pc[n].start = start;
	p->pc[n].next = n + 1;
	return 0;
}

/*
 * The pieces of b from index n on: a thread's own buffer of two pieces'
 * worth or more is cut at the first PSB at or after each multiple of the
 * piece size, any other is one piece.  Returns the index after its last,
 * or 0 on -ENOMEM.
 */
static size_t plan(struct par *p, const struct par_buf *b, size_t n)
{
	bool cut = p->cut_ok && b->own && b->len >= 2 * p->piece_size;
	size_t first = n;
	uint64_t at = 0;

	for (;;) {
		uint64_t next;

		if (add_piece(p, n, b, n == first, at))
			return 0;
		n++;
		if (!cut ||
		    !dec_find_psb(b->data, b->len, at + p->piece_size, &next)) {
			p->pc[n - 1].end = b->len;
			break;
		}
		at = next;
		p->pc[n - 1].end = at;
	}
	for (size_t i = first; i < n; i++) {
		p->pc[i].span_end = p->pc[i].end;
		p->pc[i].buf_end = n;
	}
	return n;
}

/* As many of the threads as can be had (a limit on threads or
 * processes may leave fewer): -EAGAIN when not one. */
static int start_threads(struct par *p)
{
	while (p->started < p->nthreads) {
		if (pthread_create(&p->th[p->started], NULL, worker, p))
			return p->started ? 0 : -EAGAIN;
		p->started++;
	}
	return 0;
}

/* The thread of an event's note. */
static struct dec_thread *note_thread(const struct par *p, uint32_t note)
{
	return &p->c->threads[note >> 1];
}

/* Event i of pc's block b on its way through deliver. */
static int hand_one(const struct par *p, const struct piece *pc,
		    const struct ev_block *b, size_t i)
{
	const struct dec_sink_ev *e = &b->e[i];

	return p->to.deliver(p->to.ctx, note_thread(p, b->e[i].note),
			     b->e[i].note & 1, pc->b->own != NULL, e->time,
			     e->kind, e->ip, e->aux);
}

/* Used events [i, end) of pc's block b on their way: consecutive counted
 * events of one thread, in a thread's own buffer, in one call of the
 * sink (from the block), any other one by one. */
static int hand_range(const struct par *p, const struct piece *pc,
		      struct ev_block *b, size_t i, size_t end)
{
	int rc = 0;

	if (!p->to.deliver_run || !pc->b->own) {
		for (; !rc && i < end; i++)
			rc = hand_one(p, pc, b, i);
		return rc;
	}
	while (!rc && i < end) {
		uint32_t note = b->e[i].note;
		size_t j = i + 1;

		if (!(note & 1)) {
			rc = hand_one(p, pc, b, i);
			i = j;
			continue;
		}
		while (j < end && b->e[j].note == note)
			j++;
		rc = p->to.deliver_run(p->to.ctx, note_thread(p, note),
				       b->e + i, j - i, &b->hold);
		i = j;
	}
	return rc;
}

/*
 * Piece pc's used events to the thread, as its run delivers them (under
 * the lock, which this lets go while it hands over); its counts at the
 * end.  The run before has stopped, so from is known.
 */
static int hand_over(struct par *p, struct piece *pc)
{
	struct dec_capture *c = p->c;
	struct ev_block *read = NULL; /* blocks read whole */
	const size_t be = p->block_events;
	size_t pos = 0;

	for (;;) {
		size_t avail =
			atomic_load_explicit(&pc->nev, memory_order_acquire);
		bool done = pc->done;
		int rc = 0;

		if (pos == avail) {
			if (done || p->rc)
				break;
			p->hand_waits = true;
			pthread_cond_wait(&p->more, &p->lock);
			p->hand_waits = false;
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		while (pos < avail && !rc) {
			size_t end = pos - pos % be + be;

			/* A block read whole is not the run's any more (it
			 * appends to the last one). */
			if (pos && pos % be == 0) {
				struct ev_block *b = pc->ev_first;

				pc->ev_first = b->next;
				b->next = read;
				read = b;
			}
			if (end > avail)
				end = avail;
			if (pos < pc->from) {
				pos = pc->from < end ? pc->from : end;
				continue;
			}
			rc = hand_range(p, pc, pc->ev_first, pos % be,
					(end - 1) % be + 1);
			pos = end;
		}
		blocks_drop(read);
		read = NULL;
		pthread_mutex_lock(&p->lock);
		if (rc)
			return rc;
	}
	if (p->rc)
		return p->rc;
	c->stats.blocks += pc->end_st[ST_BLOCKS] - pc->from_st[ST_BLOCKS];
	c->stats.errors += pc->end_st[ST_ERRORS] - pc->from_st[ST_ERRORS];
	c->stats.overflows +=
		pc->end_st[ST_OVERFLOWS] - pc->from_st[ST_OVERFLOWS];
	return 0;
}

static void piece_free(struct piece *pc)
{
	for (size_t i = 0; i < pc->ncp; i++)
		free(pc->cp[i].win);
	free(pc->cp);
	blocks_drop(pc->ev_first);
	pc->ev_first = NULL;
	pc->nblk = 0;
	pc->cp = NULL;
	pc->ev_last = NULL;
	pc->ncp = pc->cap_cp = 0;
}

int dec_par_decode(struct par *p, const struct par_buf *bufs, size_t nbufs,
		   uint64_t done, uint64_t total)
{
	struct dec_capture *c = p->c;
	size_t n = 0;
	int rc = 0;

	if ((rc = start_threads(p)))
		return rc;
	for (size_t b = 0; b < nbufs; b++)
		if (!(n = plan(p, &bufs[b], n)))
			return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	p->npc = n;
	p->fed = 0;
	p->rc = 0;
	pthread_cond_broadcast(&p->cond);
	for (size_t i = 0; i < n && !rc; i++) {
		struct piece *pc = &p->pc[i];

		/* The run before has ended (or it is the first): whether the
		 * piece is used, and from where, is known. */
		rc = p->rc;
		if (rc)
			break;
		if (!pc->absorbed)
			rc = hand_over(p, pc);
		/* Its run has ended: the block it ended in is let go now,
		 * not with the rest at the end (a block a piece). */
		if (!rc && !pc->absorbed && pc->done) {
			blocks_drop(pc->ev_first);
			pc->ev_first = pc->ev_last = NULL;
		}
		/* Runs before it have stopped and those after it began
		 * past it: its bytes are done with (an absorbed piece's
		 * own run may still read them, until the end). */
		if (!rc && !pc->absorbed && p->io.forget) {
			pthread_mutex_unlock(&p->lock);
			p->io.forget(p->io.ctx, pc->b->data + pc->start,
				     pc->end - pc->start);
			pthread_mutex_lock(&p->lock);
		}
		p->fed = i + 1;
		pthread_cond_broadcast(&p->cond);
		if (!rc && c->opts.progress &&
		    (i + 1 == n || pc->b != p->pc[i + 1].b)) {
			done += pc->b->len;
			pthread_mutex_unlock(&p->lock);
			if (c->opts.progress(c->opts.progress_ctx, done, total))
				rc = -EINTR;
			pthread_mutex_lock(&p->lock);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct piece *pc = &p->pc[i];

		if (pc->first && pc->buf_end == i + 1)
			continue; /* a buffer in one piece */
		c->stats.pieces++;
		c->stats.joined += !pc->first && !pc->absorbed;
	}
	c->stats.threads = p->started;
	c->stats.waits = p->waits;
	/* Runs still going (dropped, or all after an error) stop at their
	 * next tick. */
	for (size_t i = 0; i < n; i++)
		atomic_store(&p->pc[i].cancel, true);
	p->fed = n;
	pthread_cond_broadcast(&p->cond);
	while (p->busy)
		pthread_cond_wait(&p->cond, &p->lock);
	for (size_t i = 0; i < n; i++)
		piece_free(&p->pc[i]);
	p->npc = 0;
	pthread_mutex_unlock(&p->lock);
	return rc;
}
