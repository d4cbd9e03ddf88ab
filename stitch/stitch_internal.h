/* SPDX-License-Identifier: MIT */
/*
 * stitch: what its files share.  stitch.h is the interface; this is not.
 *
 * tree.c      the thread's slices: aliases, parents, chains, joins, the
 *             rebuild, and the undo log that makes a thread all or
 *             nothing
 * align.c     B's start chain against A's end chain: every alignment
 * rollout.c   later segments' word on alignments that tie
 * decide.c    whether, and how, a pair is joined, and why
 * guess.c     the spans of time whose depth a join guessed
 * stitch.c    the passes over a thread's pairs, and the threads
 */
#ifndef MT_STITCH_INTERNAL_H
#define MT_STITCH_INTERNAL_H

#include "model/model.h"
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "util/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a join may change of a slice, as it was before the thread's
 * first edit of it (depths change only in stitch_rebuild()'s new array). */
struct undo_entry {
	uint64_t ts, dur;
	uint32_t idx, parent, flags;
};

/*
 * What a thread's stitching edited, to give the thread back as it was
 * when the joins do not make a tree.  Only slices edited are kept, once
 * each, and only until stitch_rebuild() knows the tree is one: a copy of every
 * slice would double the memory of a conversion.
 */
struct undo_log {
	uint8_t *saved; /* one bit per slice: in log already */
	struct undo_entry *log;
	size_t n, cap;
};

/* From B's start (from) until a later join settled it (to, or
 * UINT64_MAX), the depth of x (a frame of A's chain, at pos on it when
 * the guess was made) and below was a guess; when until is a slice, only
 * as long as that slice lived, too. */
struct guess_span {
	uint32_t x, until;
	size_t pos;
	uint64_t from, to;
};

struct thread_state {
	struct mt_trace *t;
	const struct stitch_opts *o; /* may be NULL */
	/* The side table of segments: the frames open at each one's ends,
	 * by segment id, as segments/ handed them over (ends_of()). */
	const struct seg_ends_table *ends;
	struct mt_thread *th;
	/*
	 * What a slice returns to: the call site in its parent, where a
	 * segment saw it (the call's return address, or the address a
	 * return into the parent landed at).  Only the frames of segment
	 * chains have one, so a map keyed by slice index.
	 */
	struct mt_hmap rets_of;
	uint32_t *alias; /* slice -> the slice it is (itself if kept) */
	uint32_t *chain; /* scratch: A's end chain, root first */
	uint64_t *rets;
	uint32_t *xs; /* scratch: B's extended chain, root first */
	uint64_t *xi;
	size_t cap_xs;
	size_t cap_chain;
	/* The run being stitched, segment ids [run_lo, run_hi): one
	 * program's, since an exec begins another run (the segment's exec
	 * flag) and nothing joins across it */
	uint32_t run_lo, run_hi;
	uint32_t space; /* whose code the run ran: the pid o's code takes */
	uint32_t first_segment; /* the run's first of the thread's */
	uint32_t root_name;	/* its root's function, MT_NONE if none */
	bool root_open;		/* which was still open when it ended */
	size_t joins;		/* pairs joined: the tree must be rebuilt */
	struct guess_span *spans;
	size_t nr_spans, cap_spans;
	uint32_t *tops; /* scratch: the run's slices with no parent */
	size_t nr_tops, cap_tops;
	/* threads for a pass over every slice: the thread is stitched
	 * alone (a capture of one thread), so its passes are what stays on
	 * one thread; 0 or 1: on this one */
	unsigned scan_jobs;
	struct undo_log undo;
	/* why stitch_rebuild() refused the joins' tree (-EINVAL), for the
	 * caller */
	const char *fault;
};

/*
 * A chain of frames, root first, with an address per frame: on the side
 * that ends (A), the call site into the frame's open child; on the side
 * that begins (B), where the return from its child landed (the leaf's is
 * where B resumed).  0 where unknown.
 */
struct chainv {
	const uint32_t *sl;
	const uint64_t *ip;
	size_t n;
	uint64_t at; /* A: where control last came into its leaf, 0 unknown */
};

/*
 * An alignment: B's start chain b[] against A's end chain a[].  With
 * ahead = 0, b[0] sits at a[off] (B never climbed as far as A's roots);
 * with ahead > 0, a[0] sits at b[ahead] (B revealed callers A never saw).
 */
#define MAX_STEPS 16
#define MAX_SKIPS 4

struct match {
	size_t off, ahead, len, confirmed;
	bool leaf; /* A's leaf is among the joined frames */
	double score;
	/* The depth was a guess: A's frames from chain[sure] up are joined
	 * or kept on the guess's word. */
	bool guessed;
	size_t sure;
	/* and so is the last bguess of B's callers above A's root: another
	 * alignment puts them elsewhere */
	size_t bguess;
	/*
	 * Frames of A that B's chain steps over.  A caller that B learnt of
	 * from a jump landing in it (a longjmp or an exception) is an
	 * ancestor, not a parent: B knows nothing of the frames between it
	 * and the next, so B's next frame may sit higher in A.  B frame
	 * skip_at[k] (counted from ahead) sits skip_len[k] frames higher
	 * than it would; skip_guess when a later frame of A would have
	 * fitted as well (from A frame skip_from up): a guess apart from
	 * guessed, which lasts only until the jump unwinds those frames
	 * (guess.c).
	 */
	size_t nr_skips, skipped;
	uint32_t skip_at[MAX_SKIPS], skip_len[MAX_SKIPS];
	bool skip_guess;
	size_t skip_from;
	/* The deepest pair it puts together, the same function at the same
	 * depth, is two activations by the code's word (decide.c,
	 * handle_other_activation()): B's frame is a new call beside A's,
	 * not A's frame again.  Joined are len - split frames; the
	 * recalled frames above it were dropped from len, new calls too. */
	bool split;
	size_t recalled;
};

/* Alignments that explain as many frames, and confirm about as many
 * call sites, as the best: only the depth change tells them apart. */
#define MAX_NEAR    16
#define MAX_CAND    8	/* the best alignments, kept to roll forward */
#define CAND_MARGIN 6.0 /* below the best score: not kept */

struct alignment {
	struct match best;
	size_t ties; /* others with the best's very score */
	/* Of the alignments a call site backs, the two with the highest
	 * first joined frame (off) at distinct depths: other_depth(). */
	struct match backed[2];
	size_t nr_backed;
	struct match at_root; /* the one that joins the roots, if any */
	struct match near[MAX_NEAR];
	size_t nr_near;
	struct match cand[MAX_CAND]; /* by score, best first */
	size_t nr_cand;
};

static inline uint64_t end_of(const struct mt_slice *s)
{
	return s->ts + s->dur;
}

/* Segment i's open frames at its two ends; none for a segment the
 * builders did not close (or when none were handed over). */
static inline const struct seg_ends *ends_of(const struct thread_state *s,
					     uint32_t i)
{
	static const struct seg_ends none;

	return s->ends && i < s->ends->nr ? &s->ends->v[i] : &none;
}

/* Whether segment i is one of the thread's in the run being stitched. */
static inline bool in_run(const struct thread_state *s, size_t i)
{
	return i >= s->run_lo && i < s->run_hi &&
	       s->t->segments[i].tid == s->th->tid;
}

/* tree.c */
uint32_t stitch_resolve(const struct thread_state *s, uint32_t i);
uint32_t stitch_parent_of(const struct thread_state *s, uint32_t i);
uint64_t stitch_ret_of(const struct thread_state *s, uint32_t slice);
int stitch_ret_set(struct thread_state *s, uint32_t slice, uint64_t ret);
int stitch_end_chain(struct thread_state *s, const struct seg_ends *a,
		     size_t *n);
size_t stitch_extended_chain(struct thread_state *s, const struct seg_ends *b);
uint32_t stitch_gap_before(const struct thread_state *s,
			   const struct seg_ends *b);
struct mt_slice *stitch_slice_edit(struct thread_state *s, uint32_t i);
int stitch_slice_set_parent(struct thread_state *s, uint32_t i, uint32_t p);
int stitch_slice_add_flags(struct thread_state *s, uint32_t i, uint32_t flags);
/* x and y are one activation: y becomes x (joined). */
int stitch_merge(struct thread_state *s, uint32_t x, uint32_t y);
bool stitch_ahead_fits(const struct thread_state *s, const struct chainv *bv,
		       const struct match *m);
bool stitch_callers_fit(const struct thread_state *s, const struct chainv *bv,
			const struct match *m);
int stitch_apply_join(struct thread_state *s, uint32_t ib, uint64_t at,
		      size_t na, const struct chainv *bv,
		      const struct match *m);
/* The deepest frame m keeps joined (B's first frame then hangs under
 * it), MT_NONE when none. */
uint32_t stitch_join_deepest(const struct thread_state *s,
			     const struct chainv *bv, const struct match *m);
int stitch_rebuild(struct thread_state *s);
void stitch_undo_edits(struct thread_state *s);
void stitch_undo_free(struct undo_log *u);

/* guess.c */
int stitch_guess_at_join(struct thread_state *s, uint64_t at, size_t na,
			 const struct chainv *bv, size_t nr_own,
			 const struct match *m);
int stitch_guess_mark(const struct thread_state *s, struct mt_slice *out,
		      size_t n, const uint32_t *where);

/* align.c */
size_t stitch_a_pos(const struct match *m, size_t i);
long stitch_depth_of(const struct match *m);
/* sl: the thread's slices; fr: the trace's frames (their names). */
struct match stitch_try_align(const struct mt_slice *sl,
			      const struct mt_frame *fr, const struct chainv *a,
			      const struct chainv *b, size_t off, size_t ahead);
void stitch_align(const struct mt_slice *sl, const struct mt_frame *fr,
		  const struct chainv *a, const struct chainv *b,
		  struct alignment *r);
/* An alignment by where it puts B (struct match's off and ahead). */
struct align_at {
	size_t off, ahead;
};
/* The same but for the nskip alignments in skip, which the code ruled
 * out. */
void stitch_align_except(const struct mt_slice *sl, const struct mt_frame *fr,
			 const struct chainv *a, const struct chainv *b,
			 const struct align_at *skip, size_t nskip,
			 struct alignment *r);
bool stitch_at_thread_root(const struct thread_state *s,
			   const struct chainv *a);
/* Whether a caller in b is known from a jump landing in it (ip 0), not
 * from the call it made. */
bool stitch_jump_link(const struct chainv *b);
bool stitch_weak_match(const struct thread_state *s, const struct chainv *a,
		       const struct match *m);

/* rollout.c */
int stitch_look_ahead(struct thread_state *s, const struct chainv *a,
		      uint32_t ib, const struct alignment *r, bool *pinned);
int stitch_roll_pick(const struct thread_state *s, const struct chainv *a,
		     uint32_t ib, const struct match *cand, size_t nc,
		     double *gain, bool *pinned);

/* decide.c */
int stitch_decide(struct thread_state *s, const struct chainv *av,
		  const struct chainv *bv, uint32_t ib, struct match *m,
		  char *why, size_t len);

#endif
