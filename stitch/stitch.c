/*
 * Stitching, one thread at a time.
 *
 * Pairs are decided with slice indexes fixed: a joined frame of B gets an
 * alias (the A frame it is), parents are rewired, times extended.  One
 * rebuild at the end drops the aliases and lays the thread's slices out
 * again in pre-order, walking the tree from its roots, children by start
 * time, with depths recomputed from the parents.  So a join may attach
 * B's frames anywhere in A's tree, and B's revealed callers may become
 * callers of A's roots, without moving anything by hand.
 *
 * A segment joined to its predecessor still offers its end chain to its
 * successor: the chain is rebuilt by walking parents through the aliases.
 */
#include "stitch/stitch.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * What a slice returns to: the call site in its parent, where a segment
 * saw it (the call's return address, or the address a return into the
 * parent landed at).  Only the frames of segment chains have one, so a
 * small map keyed by slice index.
 */
struct ret_map {
	uint32_t *key; /* slice + 1; 0 = empty */
	uint64_t *ret;
	size_t cap; /* a power of two */
	size_t n;
};

static size_t ret_slot(const struct ret_map *m, uint32_t slice)
{
	size_t h = ((size_t)slice * 0x9E3779B1u) & (m->cap - 1);

	while (m->key[h] && m->key[h] != slice + 1)
		h = (h + 1) & (m->cap - 1);
	return h;
}

static uint64_t ret_get(const struct ret_map *m, uint32_t slice)
{
	size_t h;

	if (!m->cap)
		return 0;
	h = ret_slot(m, slice);
	return m->key[h] ? m->ret[h] : 0;
}

static int ret_set(struct ret_map *m, uint32_t slice, uint64_t ret)
{
	size_t h;

	if (!ret)
		return 0;
	if (2 * (m->n + 1) > m->cap) {
		struct ret_map g = {.cap = m->cap ? 2 * m->cap : 64};

		g.key = calloc(g.cap, sizeof(*g.key));
		g.ret = malloc(g.cap * sizeof(*g.ret));
		if (!g.key || !g.ret) {
			free(g.key);
			free(g.ret);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->key[i]) {
				size_t k = ret_slot(&g, m->key[i] - 1);

				g.key[k] = m->key[i];
				g.ret[k] = m->ret[i];
				g.n++;
			}
		free(m->key);
		free(m->ret);
		*m = g;
	}
	h = ret_slot(m, slice);
	if (!m->key[h]) {
		m->key[h] = slice + 1;
		m->n++;
	}
	m->ret[h] = ret;
	return 0;
}

struct thread_state {
	struct mt_trace *t;
	struct mt_thread *th;
	struct ret_map rets_of;
	uint32_t *alias; /* slice -> the slice it is (itself if kept) */
	uint32_t *chain; /* scratch: A's end chain, root first */
	uint64_t *rets;
	uint32_t *xs; /* scratch: B's extended chain, root first */
	uint64_t *xi;
	size_t cap_xs;
	size_t cap_chain;
	uint32_t first_segment; /* the thread's first */
	uint32_t root_name;	/* its root's function, MT_NONE if none */
	size_t joins;		/* pairs joined: the tree must be rebuilt */
};

static uint32_t resolve(const struct thread_state *s, uint32_t i)
{
	while (s->alias[i] != i)
		i = s->alias[i];
	return i;
}

/*
 * The parent of slice i, through aliases.  A segment's roots share one
 * unknown parent: a tail call from the topmost frame makes a second root
 * beside the first (the segment's start chain root), so once that first
 * root is joined, all of them hang under its parent.
 */
static uint32_t parent_of(const struct thread_state *s, uint32_t i)
{
	const struct mt_slice *x = &s->th->slices[i];
	uint32_t r;

	if (x->parent != MT_NONE)
		return resolve(s, x->parent);
	if (x->flags & MT_SLICE_GAP || x->segment >= s->t->nr_segments ||
	    !s->t->segments[x->segment].nr_start)
		return MT_NONE;
	r = resolve(s, s->t->segments[x->segment].start_chain[0]);
	if (r == i || s->th->slices[r].parent == MT_NONE)
		return MT_NONE;
	return resolve(s, s->th->slices[r].parent);
}

static uint64_t end_of(const struct mt_slice *s)
{
	return s->ts + s->dur;
}

/* A's open frames at its end, root first, through aliases; with the
 * return address into each where A knew it. */
static int end_chain(struct thread_state *s, const struct mt_segment *a,
		     size_t *n)
{
	size_t len = 0;
	uint32_t x;

	*n = 0;
	if (!a->nr_end)
		return 0;
	x = resolve(s, a->end_chain[a->nr_end - 1]);
	for (;;) {
		if (mt_grow((void **)&s->chain, &s->cap_chain, len + 1,
			    sizeof(*s->chain)))
			return -ENOMEM;
		s->chain[len++] = x;
		x = parent_of(s, x);
		if (x == MT_NONE || len > (1u << 24))
			break;
	}
	free(s->rets);
	s->rets = calloc(len, sizeof(*s->rets));
	if (!s->rets)
		return -ENOMEM;
	for (size_t i = 0; i < len / 2; i++) {
		uint32_t t = s->chain[i];

		s->chain[i] = s->chain[len - 1 - i];
		s->chain[len - 1 - i] = t;
	}
	/* The call site into each frame's open child, wherever it was
	 * seen: in A, or in an earlier segment joined to it. */
	for (size_t i = 0; i + 1 < len; i++)
		s->rets[i] = ret_get(&s->rets_of, s->chain[i + 1]);
	*n = len;
	return 0;
}

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
	 * fitted as well (from A frame skip_from up).
	 */
	size_t nr_skips, skipped;
	uint32_t skip_at[MAX_SKIPS], skip_len[MAX_SKIPS];
	bool skip_guess;
	size_t skip_from;
};

/* Where in A's chain B's frame ahead + i sits. */
static size_t a_pos(const struct match *m, size_t i)
{
	size_t p = m->off + i;

	for (size_t k = 0; k < m->nr_skips; k++)
		if (m->skip_at[k] <= i)
			p += m->skip_len[k];
	return p;
}

static struct match try_align(const struct mt_slice *sl, const struct chainv *a,
			      const struct chainv *b, size_t off, size_t ahead)
{
	struct match m = {.off = off, .ahead = ahead};
	size_t na = a->n, nb = b->n, change, p = off;
	/* The frames of B under one a jump revealed, where in A they went,
	 * and the frames joined and call sites confirmed before them. */
	size_t nst = 0, st_p[MAX_STEPS], st_len[MAX_STEPS], st_conf[MAX_STEPS];

	for (size_t i = 0; p < na && ahead + i < nb; i++, p++) {
		const struct mt_slice *x = &sl[a->sl[p]];
		const struct mt_slice *y = &sl[b->sl[ahead + i]];
		uint64_t ra;
		/* The leaf's address is where B resumed, not a return. */
		uint64_t rb = ahead + i + 1 < nb ? b->ip[ahead + i] : 0;
		size_t from = p; /* before any step */

		/* B's previous frame was revealed by a jump (no call site
		 * into its child): its child may be further up. */
		if (x->name != y->name && i && !ahead && !b->ip[i - 1] &&
		    m.nr_skips < MAX_SKIPS) {
			size_t q = p + 1;

			while (q < na && sl[a->sl[q]].name != y->name)
				q++;
			if (q == na)
				break;
			for (size_t r = q + 1; r < na && !m.skip_guess; r++)
				if (sl[a->sl[r]].name == y->name) {
					m.skip_guess = true;
					m.skip_from = p;
				}
			m.skip_at[m.nr_skips] = (uint32_t)i;
			m.skip_len[m.nr_skips++] = (uint32_t)(q - p);
			m.skipped += q - p;
			p = q;
			x = &sl[a->sl[p]];
		}
		if (x->name != y->name)
			break;
		if (i && !ahead && !b->ip[i - 1] && nst < MAX_STEPS) {
			st_p[nst] = from;
			st_len[nst] = m.len;
			st_conf[nst++] = m.confirmed;
		}
		m.len++;
		ra = a->ip[p];
		/* A different call site: this frame is the same, its child
		 * returned in the gap and it called another. */
		if (ra && rb) {
			if (ra != rb)
				break;
			m.confirmed++;
		}
		/*
		 * B resumed right where A's frame gets its child's return:
		 * the child returned inside the gap.  (That B resumed where
		 * A's leaf stopped says less: a loop inside the gap, or the
		 * function called again, comes back there too.)
		 */
		if (ahead + i + 1 == nb && ra && b->ip[ahead + i] == ra)
			m.confirmed++;
	}
	m.leaf = m.len && off + m.skipped + m.len == na;
	/*
	 * A frame of B under one a jump revealed sits somewhere below it,
	 * whether A's frames are stepped over or not: the jump may have
	 * unwound them and the function been called afresh.  Unless a call
	 * site at or below it backs it, or B's jumps landed in A's frames
	 * down to A's leaf, names alone put it there.  B's leaf alone is not
	 * enough: a fresh call comes back to the same places (the same
	 * system call, say).
	 */
	for (size_t k = 0; k < nst; k++)
		if (m.confirmed == st_conf[k] &&
		    !(m.leaf && m.len - st_len[k] >= 2)) {
			if (!m.skip_guess || st_p[k] < m.skip_from) {
				m.skip_guess = true;
				m.skip_from = st_p[k];
			}
			break;
		}
	/*
	 * Recursion repeats the same frames at many depths, so names alone
	 * often fit several alignments.  A gap is short next to a stack's
	 * life: prefer the alignment that keeps A's leaf and changes the
	 * depth least, then the one with more call sites confirmed.  A
	 * frame stepped over is a claim B cannot back: it costs a little.
	 */
	p = off + m.skipped + nb;
	change = p > na + ahead ? p - na - ahead : na + ahead - p;
	m.score = (double)m.len + 2.0 * (double)m.confirmed +
		  (m.leaf ? 3.0 : 0.0) - 0.25 * (double)change -
		  0.5 * (double)m.nr_skips;
	return m;
}

/* Alignments that explain as many frames, and confirm about as many
 * call sites, as the best: only the depth change tells them apart. */
#define MAX_NEAR    16
#define MAX_CAND    8	/* the best alignments, kept to roll forward */
#define CAND_MARGIN 6.0 /* below the best score: not kept */

/* The depth at which an alignment puts B's frames, relative to A's. */
static long depth_of(const struct match *m)
{
	return (long)m->off - (long)m->ahead;
}

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

/* Keep m among the MAX_CAND best. */
static void keep_cand(struct alignment *r, const struct match *m)
{
	size_t i = r->nr_cand < MAX_CAND ? r->nr_cand++ : MAX_CAND;

	if (i == MAX_CAND) {
		if (m->score <= r->cand[MAX_CAND - 1].score)
			return;
		i = MAX_CAND - 1;
	}
	for (; i > 0 && r->cand[i - 1].score < m->score; i--)
		r->cand[i] = r->cand[i - 1];
	r->cand[i] = *m;
}

static void keep_backed(struct alignment *r, const struct match *m)
{
	if (!m->off && !m->ahead)
		r->at_root = *m;
	if (!m->confirmed)
		return;
	/* the loops visit off in rising order: the first seen is the
	 * highest at its depth */
	for (size_t i = 0; i < r->nr_backed; i++)
		if (depth_of(&r->backed[i]) == depth_of(m))
			return;
	if (r->nr_backed < 2)
		r->backed[r->nr_backed++] = *m;
}

static void align(const struct mt_slice *sl, const struct chainv *a,
		  const struct chainv *b, struct alignment *r)
{
	struct match m;

	memset(r, 0, sizeof(*r));
	for (size_t off = 0; off < a->n; off++)
		for (size_t ahead = 0; ahead < b->n; ahead++) {
			if (off && ahead)
				break; /* one side starts at its root */
			m = try_align(sl, a, b, off, ahead);
			if (!m.len)
				continue;
			keep_cand(r, &m);
			keep_backed(r, &m);
			if (!r->best.len || m.score > r->best.score + 1e-9) {
				r->best = m;
				r->ties = 0;
			} else if (m.score > r->best.score - 1e-9) {
				r->ties++;
			}
		}
	if (!r->best.len)
		return;
	while (r->nr_cand &&
	       r->cand[r->nr_cand - 1].score < r->best.score - CAND_MARGIN)
		r->nr_cand--;
	for (size_t off = 0; off < a->n && r->nr_near < MAX_NEAR; off++) {
		m = try_align(sl, a, b, off, 0);
		/* one call site more or less: B's leaf resuming at the
		 * return site confirms every level of a recursion through
		 * one site but A's leaf */
		if (m.len == r->best.len &&
		    m.confirmed <= r->best.confirmed + 1 &&
		    m.confirmed + 1 >= r->best.confirmed)
			r->near[r->nr_near++] = m;
	}
}

/* Try each near alignment again with ext (the callers above B's roots,
 * root first) on top of B's start chain; the index into r->near of the
 * one they confirm best, if exactly one, else -1. */
static int pick_near(const struct mt_slice *sl, const struct chainv *a,
		     const struct mt_segment *b, const uint32_t *xs,
		     const uint64_t *xi, size_t e, const struct alignment *r)
{
	struct chainv ext = {xs, xi, e + b->nr_start};
	size_t bestlen = 0, bestconf = 0, n = 0;
	int pick = -1;

	for (size_t k = 0; k < r->nr_near; k++) {
		size_t off = r->near[k].off;
		struct match m = off >= e ? try_align(sl, a, &ext, off - e, 0)
					  : try_align(sl, a, &ext, 0, e - off);

		if (m.len > bestlen ||
		    (m.len == bestlen && m.confirmed > bestconf)) {
			bestlen = m.len;
			bestconf = m.confirmed;
			pick = (int)k;
			n = 1;
		} else if (m.len == bestlen && m.confirmed == bestconf) {
			n++;
		}
	}
	return n == 1 ? pick : -1;
}

#define LOOK_AHEAD 16

/*
 * The callers above B's roots that later segments revealed.  Each
 * following segment is placed against the one before it, where that is
 * certain; one that returned above B's roots revealed the frames there,
 * which sit above B's start chain too.  xs/xi hold them, root first,
 * then B's start chain: e + nr_start frames.
 */
struct ext_walk {
	const struct mt_segment *b, *cur;
	size_t next, steps;
	long level; /* of cur's roots, B's being 0 */
	uint32_t *xs;
	uint64_t *xi;
	size_t e, cap;
};

static void ext_init(struct ext_walk *w, const struct thread_state *s,
		     uint32_t ib)
{
	memset(w, 0, sizeof(*w));
	w->b = w->cur = &s->t->segments[ib];
	w->next = ib + 1;
}

static void ext_free(struct ext_walk *w)
{
	free(w->xs);
	free(w->xi);
}

/* Walk on to the next segment that reveals more callers above B's
 * roots: 1 when xs/xi grew, 0 when the walk can go no further. */
static int ext_next(const struct thread_state *s, struct ext_walk *w)
{
	const struct mt_slice *sl = s->th->slices;
	const struct mt_segment *b = w->b;

	for (; w->next < s->t->nr_segments && w->steps < LOOK_AHEAD;
	     w->next++) {
		const struct mt_segment *c = &s->t->segments[w->next];
		struct chainv cl = {w->cur->end_chain, w->cur->end_rets,
				    w->cur->nr_end};
		struct chainv cv = {c->start_chain, c->start_ips, c->nr_start};
		struct alignment rc;
		long top;

		if (c->tid != b->tid)
			continue;
		w->steps++;
		align(sl, &cl, &cv, &rc);
		if (!rc.best.len || rc.ties || !rc.best.confirmed ||
		    rc.nr_near > 1)
			return 0;
		top = rc.best.ahead ? w->level - (long)rc.best.ahead
				    : w->level + (long)rc.best.off;
		w->level = top;
		w->cur = c;
		if (top < -(long)w->e) {
			size_t add = (size_t)(-(long)w->e - top);
			size_t need = add + w->e + b->nr_start;

			if (need > w->cap) {
				uint32_t *ns =
					realloc(w->xs, need * sizeof(*ns));
				uint64_t *ni;

				if (!ns)
					return 0;
				w->xs = ns;
				ni = realloc(w->xi, need * sizeof(*ni));
				if (!ni)
					return 0;
				w->xi = ni;
				w->cap = need;
			}
			memmove(w->xs + add, w->xs, w->e * sizeof(*w->xs));
			memmove(w->xi + add, w->xi, w->e * sizeof(*w->xi));
			memcpy(w->xs, c->start_chain, add * sizeof(*w->xs));
			memcpy(w->xi, c->start_ips, add * sizeof(*w->xi));
			w->e += add;
			memcpy(w->xs + w->e, b->start_chain,
			       b->nr_start * sizeof(*w->xs));
			memcpy(w->xi + w->e, b->start_ips,
			       b->nr_start * sizeof(*w->xi));
			w->next++;
			return 1;
		}
	}
	return 0;
}

/*
 * When alignments one level apart explain B equally well (recursion),
 * try them again with the callers later segments revealed on top.
 * Returns the index into r->near of the one they pick, or -1; *pinned
 * when those callers reach A's root, so that no other depth is left.
 */
static int look_ahead(struct thread_state *s, const struct chainv *a,
		      uint32_t ib, const struct alignment *r, bool *pinned)
{
	struct ext_walk w;
	int pick = -1;

	*pinned = false;
	ext_init(&w, s, ib);
	while (pick < 0 && ext_next(s, &w))
		pick = pick_near(s->th->slices, a, w.b, w.xs, w.xi, w.e, r);
	if (pick >= 0)
		*pinned = r->near[pick].off <= w.e;
	ext_free(&w);
	return pick;
}

/*
 * Rolling a choice forward.  A wrong depth at one gap is inherited by
 * every later join (each aligns against the stack the last one built),
 * and in recursion a segment that knows few frames fits several depths.
 * A later segment that knows many frames tells them apart, so each
 * plausible alignment is carried forward over the next segments without
 * touching the slices: a virtual stack stands for A's end chain, each
 * later segment is aligned against it greedily, and candidates that
 * trail drop out (roll_pick()).  Only where the local evidence ties: a
 * clearly better alignment is not second-guessed by a future that may
 * differ for reasons of its own.
 */
#define ROLL_SEGMENTS 8	    /* how far */
#define ROLL_MAX_WORK 65536 /* frames na * nb above which it is skipped */
#define ROLL_DROP     3.0   /* behind the leader: out */

/* A chain as A's side reads it: ip[i] the call site in sl[i] into
 * sl[i + 1], 0 where unknown and at the leaf. */
struct vstack {
	uint32_t *sl;
	uint64_t *ip;
	size_t n, cap;
};

static int vs_reserve(struct vstack *v, size_t n)
{
	size_t c1 = v->cap, c2 = v->cap;

	/* Both grow from the same capacity to the same one. */
	if (mt_grow((void **)&v->sl, &c1, n, sizeof(*v->sl)) ||
	    mt_grow((void **)&v->ip, &c2, n, sizeof(*v->ip)))
		return -ENOMEM;
	v->cap = c1 < c2 ? c1 : c2;
	return 0;
}

static void vs_free(struct vstack *v)
{
	free(v->sl);
	free(v->ip);
}

/*
 * The stack at C's end once C is joined to h as m says (m NULL: not
 * joined, C's own frames alone), into out.  As apply_join() would leave
 * it: frames below the join stay; C's end chain sits on the joined
 * frames, which keep A's call sites where A knew them.
 */
static int vs_after(const struct vstack *h, const struct mt_segment *c,
		    const struct match *m, struct vstack *out)
{
	size_t base = m && !m->ahead ? m->off : 0, n, j = 0, last = 0;

	/* C's leading end-chain frames that are joined frames of h. */
	while (m && j < m->len && j < c->nr_end &&
	       c->end_chain[j] == c->start_chain[j])
		j++;
	if (m && !m->ahead && j)
		base = (last = a_pos(m, j - 1)) + 1;
	else
		j = 0;
	n = base + c->nr_end - j;
	out->n = 0;
	if (vs_reserve(out, n + 1))
		return -ENOMEM;
	for (size_t i = 0; i < base; i++) {
		out->sl[i] = h->sl[i];
		out->ip[i] = h->ip[i];
	}
	/* Call sites C knew where h did not, between joined frames. */
	for (size_t k = 0; k + 1 < j; k++)
		if (!out->ip[a_pos(m, k)] && a_pos(m, k + 1) == a_pos(m, k) + 1)
			out->ip[a_pos(m, k)] = c->end_rets[k];
	if (j)
		out->ip[last] = c->end_rets[j - 1];
	for (size_t k = j; k < c->nr_end; k++) {
		/* ahead > 0: C's frames from ahead up are joined to h's */
		size_t lo = m ? m->ahead : 0, hk = 0;
		bool joined = m && m->ahead && k >= lo && k < lo + m->len &&
			      c->end_chain[k] == c->start_chain[k];
		bool child = joined && k + 1 < lo + m->len &&
			     k + 1 < c->nr_end &&
			     c->end_chain[k + 1] == c->start_chain[k + 1];

		if (joined)
			hk = k - lo;
		out->sl[base + k - j] = joined ? h->sl[hk] : c->end_chain[k];
		out->ip[base + k - j] =
			child && h->ip[hk] ? h->ip[hk] : c->end_rets[k];
	}
	if (n)
		out->ip[n - 1] = 0;
	out->n = n;
	return 0;
}

/*
 * Whether A's chain starts at the thread's root: the first segment's
 * root, or the same function (revealed again by a segment that returned
 * to it after an unjoined gap) where it occurs once on the chain, so
 * that it cannot be a recursion's other activation.
 */
static bool at_thread_root(const struct thread_state *s, const struct chainv *a)
{
	const struct mt_slice *sl = s->th->slices;
	uint32_t name = sl[a->sl[0]].name;

	if (sl[a->sl[0]].segment == s->first_segment)
		return true;
	if (name != s->root_name || parent_of(s, a->sl[0]) != MT_NONE)
		return false;
	for (size_t i = 1; i < a->n; i++)
		if (sl[a->sl[i]].name == name)
			return false;
	return true;
}

/* Names alone are weak evidence (recursion repeats them, and a function
 * may return and be called again inside a gap): a join needs a call site
 * that confirms it, or both stacks starting at the thread's root, the
 * one the trace began under. */
static bool weak_match(const struct thread_state *s, const struct chainv *a,
		       const struct match *m)
{
	return !m->confirmed &&
	       (m->off > 0 || m->ahead > 0 || !at_thread_root(s, a));
}

/* A joined to B in a rollout: the best alignment, if confirmed (among
 * equals, the first: what is measured is how well B fits at all); 0
 * when not. */
static int greedy_join(const struct thread_state *s, const struct chainv *a,
		       const struct chainv *b, struct match *m)
{
	struct alignment r;

	align(s->th->slices, a, b, &r);
	*m = r.best;
	return m->len && !weak_match(s, a, m);
}

/*
 * Of the candidate alignments of A -> B (cand, nc), the one the next
 * segments bear out: each candidate's stack is carried forward in step,
 * every later segment joined greedily to it, and a candidate falls out
 * once its score trails the leader's by ROLL_DROP.  Only the first
 * segments that fit the candidates differently count: after that their
 * futures differ for reasons of their own.  Returns the index of the one
 * left, or -1 (none stands out, or out of memory); *gain is its lead.
 */
static int roll_pick(const struct thread_state *s, const struct chainv *a,
		     uint32_t ib, const struct match *cand, size_t nc,
		     double *gain, bool *pinned)
{
	bool rooted[MAX_CAND] = {false};
	const struct mt_segment *b = &s->t->segments[ib];
	const struct vstack h = {
		.sl = (uint32_t *)a->sl, .ip = (uint64_t *)a->ip, .n = a->n};
	struct vstack v[MAX_CAND][2];
	double total[MAX_CAND];
	bool alive[MAX_CAND];
	size_t left = nc, done = 0;
	int cur = 0, pick = -1;

	*gain = 0;
	*pinned = false;
	if (nc < 2 || !b->nr_end || a->n * b->nr_start > ROLL_MAX_WORK)
		return -1;
	memset(v, 0, sizeof(v));
	for (size_t k = 0; k < nc; k++) {
		alive[k] = true;
		total[k] = cand[k].score;
		if (vs_after(&h, b, &cand[k], &v[k][0]))
			goto out;
	}
	for (size_t i = ib + 1;
	     i < s->t->nr_segments && left > 1 && done < ROLL_SEGMENTS; i++) {
		const struct mt_segment *c = &s->t->segments[i];
		struct chainv cv = {c->start_chain, c->start_ips, c->nr_start};
		double lead = -1e300;

		if (c->tid != s->th->tid)
			continue;
		done++;
		if (!c->nr_start || !c->nr_end)
			break;
		for (size_t k = 0; k < nc; k++) {
			const struct vstack *x = &v[k][cur];
			struct chainv av = {x->sl, x->ip, x->n};
			struct match m;
			int joined;

			if (!alive[k])
				continue;
			if (x->n * c->nr_start > ROLL_MAX_WORK)
				goto out;
			joined = greedy_join(s, &av, &cv, &m);
			if (joined)
				total[k] += m.score;
			/* a later segment that knows every frame from the
			 * root down, and fits them all: no other depth */
			if (joined && !m.off && !m.ahead && m.len == cv.n)
				rooted[k] = true;
			if (vs_after(x, c, joined ? &m : NULL, &v[k][cur ^ 1]))
				goto out;
			if (total[k] > lead)
				lead = total[k];
		}
		cur ^= 1;
		for (size_t k = 0; k < nc; k++)
			if (alive[k] && total[k] < lead - ROLL_DROP) {
				alive[k] = false;
				left--;
			}
	}
	if (left == 1) {
		double second = -1e300;

		for (size_t k = 0; k < nc; k++)
			if (alive[k])
				pick = (int)k;
		for (size_t k = 0; k < nc; k++)
			if (!alive[k] && total[k] > second)
				second = total[k];
		*gain = total[pick] - second;
		*pinned = rooted[pick];
	}
out:
	for (size_t k = 0; k < nc; k++) {
		vs_free(&v[k][0]);
		vs_free(&v[k][1]);
	}
	return pick;
}

static int record(struct mt_trace *t, uint32_t tid, uint32_t a, uint32_t b,
		  uint32_t joined, double score, const char *why)
{
	struct mt_stitch st = {.tid = tid,
			       .seg_a = a,
			       .seg_b = b,
			       .frames_joined = joined,
			       .score = score};

	st.reason = mt_str_intern(&t->strs, why);
	if (st.reason == MT_NONE || !mt_trace_add_stitch(t, &st))
		return -ENOMEM;
	return 0;
}

/* The same activation on both sides: x stays, y becomes x. */
static int merge(struct thread_state *s, uint32_t x, uint32_t y)
{
	struct mt_slice *sl = s->th->slices;
	uint64_t r = ret_get(&s->rets_of, x);

	if (end_of(&sl[y]) > end_of(&sl[x]))
		sl[x].dur = end_of(&sl[y]) - sl[x].ts;
	sl[x].flags = (sl[x].flags & ~MT_SLICE_INFERRED_END) |
		      (sl[y].flags & MT_SLICE_INFERRED_END) | MT_SLICE_JOINED;
	s->alias[y] = x;
	return r ? 0 : ret_set(&s->rets_of, x, ret_get(&s->rets_of, y));
}

/* The [decode gap] slice before B: the builder puts it just before B's
 * first slice (its start chain's root). */
static uint32_t gap_before(const struct thread_state *s,
			   const struct mt_segment *b)
{
	uint32_t g = b->nr_start ? b->start_chain[0] : 0;

	if (g == 0 || !(s->th->slices[g - 1].flags & MT_SLICE_GAP))
		return MT_NONE;
	return g - 1;
}

/*
 * A's frames chain[from..n) are callers of B's frame y: they live at
 * least as long as it.  For B's root, that is all of B (a root of B that
 * returned would have revealed its caller).
 */
static void live_through(struct thread_state *s, const struct mt_segment *b,
			 uint32_t y, size_t from, size_t n)
{
	struct mt_slice *sl = s->th->slices;
	uint64_t end = end_of(&sl[y]);
	uint32_t flags = sl[y].flags;

	if (y == b->start_chain[0] && end < b->end) {
		end = b->end;
		flags = MT_SLICE_INFERRED_END;
	}

	for (size_t j = from; j < n; j++) {
		struct mt_slice *x = &sl[s->chain[j]];

		if (end > end_of(x))
			x->dur = end - x->ts;
		x->flags = (x->flags & ~MT_SLICE_INFERRED_END) |
			   (flags & MT_SLICE_INFERRED_END) | MT_SLICE_JOINED;
	}
}

/* Join B (its frames bv, root first) to A (s->chain) as m says. */
static int apply_join(struct thread_state *s, const struct mt_segment *b,
		      const struct chainv *bv, const struct match *m)
{
	struct mt_slice *sl = s->th->slices;
	uint32_t deepest = s->chain[a_pos(m, m->len - 1)];
	uint32_t gap = gap_before(s, b);
	int rc = 0;

	s->joins++;
	for (size_t i = 0; i < m->len && !rc; i++)
		rc = merge(s, s->chain[a_pos(m, i)], bv->sl[m->ahead + i]);
	if (rc)
		return rc;
	/* A's callers above the join live at least as long. */
	live_through(s, b, b->start_chain[0], 0, m->off);
	/* and so do the frames B stepped over, between joined ones */
	for (size_t k = 0; k < m->nr_skips; k++) {
		size_t to = a_pos(m, m->skip_at[k]);

		live_through(s, b, bv->sl[m->ahead + m->skip_at[k]],
			     to - m->skip_len[k], to);
	}
	/* The frames a guess kept alive say so. */
	for (size_t j = m->sure; m->guessed && j <= a_pos(m, m->len - 1); j++)
		sl[s->chain[j]].flags |= MT_SLICE_DEPTH_GUESSED;
	/* B's callers above A's root were there before A began: they
	 * become A's root's callers, from A's start. */
	if (m->ahead) {
		uint32_t aroot = s->chain[0];
		uint32_t seg = sl[aroot].segment;
		uint64_t from = sl[aroot].ts;

		sl[aroot].parent = bv->sl[m->ahead - 1];
		/* and of its segment's first root, whose parent the other
		 * roots share (parent_of()) */
		if (seg < s->t->nr_segments && s->t->segments[seg].nr_start) {
			uint32_t r0 =
				resolve(s, s->t->segments[seg].start_chain[0]);

			if (sl[r0].parent == MT_NONE && r0 != aroot) {
				sl[r0].parent = bv->sl[m->ahead - 1];
				if (sl[r0].ts < from)
					from = sl[r0].ts;
			}
		}
		for (size_t j = 0; j < m->ahead; j++) {
			struct mt_slice *y = &sl[bv->sl[j]];
			uint64_t e = end_of(y);

			if (from < y->ts) {
				y->ts = from;
				y->dur = e - y->ts;
			}
			y->flags |= MT_SLICE_JOINED;
			if (j + m->bguess >= m->ahead)
				y->flags |= MT_SLICE_DEPTH_GUESSED;
		}
	}
	/* The gap between sits under the deepest joined frame. */
	if (gap != MT_NONE)
		sl[gap].parent = deepest;
	return 0;
}

/*
 * Another alignment that a call site backs, at another depth: in a
 * recursion the gap may have added or removed levels, and whatever
 * picked m (the least change, the call sites, the next segments short
 * of the root) only made it likelier.  Returns where in A the two part
 * ways, with the other in *alt; SIZE_MAX when there is none.
 */
static size_t other_depth(const struct thread_state *s, const struct chainv *av,
			  const struct alignment *r, const struct match *m,
			  struct match *alt)
{
	size_t from = SIZE_MAX;

	for (size_t i = 0; i < r->nr_backed && from == SIZE_MAX; i++)
		if (depth_of(&r->backed[i]) != depth_of(m)) {
			from = r->backed[i].off;
			*alt = r->backed[i];
		}
	/* joining the roots needs no call site at the thread's root */
	if (r->at_root.len && depth_of(m) != 0 && at_thread_root(s, av)) {
		from = 0;
		*alt = r->at_root;
	}
	return from == SIZE_MAX || m->off > from ? from : m->off;
}

/*
 * Whether B's chain bv joins A's (s->chain): 1 with m and why filled, 0
 * with why saying why not.  ib is B, whose later segments may settle a
 * recursion's depth (MT_NONE: bv already holds what they revealed).
 */
static int decide(struct thread_state *s, const struct chainv *av,
		  const struct chainv *bv, uint32_t ib, struct match *m,
		  char *why, size_t len)
{
	const struct mt_slice *sl = s->th->slices;
	struct alignment r;
	bool ahead_used = false, shifted, pinned = false;
	size_t guessed = 0; /* alignments that fit as well */
	double gain = 0;
	char how[96] = "";

	align(sl, av, bv, &r);
	*m = r.best;
	if (!m->len) {
		snprintf(why, len, "no common frames");
		return 0;
	}
	if (ib != MT_NONE && (r.ties || r.nr_near > 1)) {
		struct match c[MAX_CAND];
		size_t nc = 0;
		int k;

		for (size_t i = 0; i < r.nr_cand; i++)
			if (!weak_match(s, av, &r.cand[i]))
				c[nc++] = r.cand[i];
		k = roll_pick(s, av, ib, c, nc, &gain, &pinned);
		if (k >= 0) {
			*m = c[k];
			goto joined;
		}
		gain = 0;
	}
	if (r.ties) {
		snprintf(why, len,
			 "ambiguous: %zu alignments explain %zu frames",
			 r.ties + 1, m->len);
		return 0;
	}
	if (!m->ahead && r.nr_near > 1) {
		int k = ib != MT_NONE ? look_ahead(s, av, ib, &r, &pinned) : -1;

		/* The later callers' pick stands when a call site backs
		 * it; one that names alone back is no better than the
		 * least change, and is taken as that guess. */
		if (k >= 0 && !weak_match(s, av, &r.near[k])) {
			ahead_used = r.near[k].off != m->off;
			*m = r.near[k];
		} else {
			pinned = false;
			guessed = r.nr_near;
			m->guessed = true;
			m->sure = m->off;
			for (size_t i = 0; i < r.nr_near; i++)
				if (r.near[i].off < m->sure)
					m->sure = r.near[i].off;
		}
	}
	/*
	 * No call site confirms it, but alignments a level apart fit as
	 * well: a recursion through one call site, which no trace can
	 * place after a gap.  Joined at the least change, marked as a
	 * guess, rather than left to float without its callers.
	 */
	if (weak_match(s, av, m) && !guessed) {
		snprintf(why, len, "weak: no call site confirms the frames");
		return 0;
	}
joined:
	shifted = false;
	if (!pinned) {
		struct match alt, c[2];
		size_t from = other_depth(s, av, &r, m, &alt);
		double g;

		/* a later segment that climbs to the root may still tell */
		c[0] = *m;
		c[1] = alt;
		if (from != SIZE_MAX && ib != MT_NONE && gain <= 0 &&
		    roll_pick(s, av, ib, c, 2, &g, &pinned) == 0 && pinned)
			from = SIZE_MAX;
		if (from != SIZE_MAX) {
			shifted = !m->guessed;
			if (m->ahead > alt.ahead &&
			    m->ahead - alt.ahead > m->bguess)
				m->bguess = m->ahead - alt.ahead;
			if (!m->guessed || from < m->sure) {
				m->guessed = true;
				m->sure = from;
			}
		}
	}
	if (m->skip_guess && (!m->guessed || m->skip_from < m->sure)) {
		m->guessed = true;
		m->sure = m->skip_from;
	}
	if (gain > 0)
		snprintf(how, sizeof(how),
			 "; chosen by the next segments (+%.1f)", gain);
	else if (ahead_used)
		snprintf(how, sizeof(how),
			 "; depth from a later segment's callers");
	else if (guessed)
		snprintf(how, sizeof(how), "; depth guessed (least change)");
	if (shifted)
		snprintf(how + strlen(how), sizeof(how) - strlen(how),
			 "; depth guessed (another depth fits)");
	snprintf(why, len,
		 "%zu frame%s by name, %zu by call site, %zu ancestor%s kept, "
		 "%zu revealed%s%s",
		 m->len, m->len == 1 ? "" : "s", m->confirmed, m->off,
		 m->off == 1 ? "" : "s", m->ahead, how,
		 m->nr_skips && m->skip_guess
			 ? "; frames stepped over below a longjmp target "
			   "(guessed)"
		 : m->nr_skips ? "; frames stepped over below a longjmp target"
		 : m->skip_guess ? "; a frame below a longjmp target (guessed)"
				 : "");
	return 1;
}

/* Decide A -> B and join what is the same. */
static int stitch_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       bool join)
{
	struct mt_trace *t = s->t;
	const struct mt_segment *a = &t->segments[ia], *b = &t->segments[ib];
	struct match m;
	struct chainv av, bv;
	size_t na;
	char why[256];
	int rc = end_chain(s, a, &na);

	if (rc)
		return rc;
	if (!na || !b->nr_start)
		return record(t, s->th->tid, ia, ib, 0, 0,
			      "no frames on one side");
	av = (struct chainv){s->chain, s->rets, na};
	bv = (struct chainv){b->start_chain, b->start_ips, b->nr_start};
	if (!decide(s, &av, &bv, ib, &m, why, sizeof(why)))
		return record(t, s->th->tid, ia, ib, 0, m.len ? m.score : 0,
			      why);
	rc = record(t, s->th->tid, ia, ib, join ? (uint32_t)m.len : 0, m.score,
		    why);
	if (rc || !join)
		return rc;
	return apply_join(s, b, &bv, &m);
}

/*
 * B's start chain with the callers above its roots that the first pass
 * learnt from later segments (joined to B, they revealed B's callers),
 * root first, resolved, with where each child returned to: into
 * s->xs/s->xi.  Returns the length, 0 when out of memory.
 */
static size_t extended_chain(struct thread_state *s, const struct mt_segment *b)
{
	size_t up = 0, n;
	uint32_t x = parent_of(s, resolve(s, b->start_chain[0]));

	for (uint32_t p = x; p != MT_NONE && up < (1u << 20);
	     p = parent_of(s, p))
		up++;
	n = up + b->nr_start;
	if (mt_grow((void **)&s->xs, &s->cap_xs, n, sizeof(*s->xs)))
		return 0;
	free(s->xi);
	s->xi = malloc(n * sizeof(*s->xi));
	if (!s->xi)
		return 0;
	for (size_t i = up; i-- > 0; x = parent_of(s, x))
		s->xs[i] = x;
	for (size_t i = 0; i < b->nr_start; i++) {
		s->xs[up + i] = resolve(s, b->start_chain[i]);
		s->xi[up + i] = b->start_ips[i];
	}
	for (size_t i = 0; i < up; i++)
		s->xi[i] = ret_get(&s->rets_of, s->xs[i + 1]);
	return n;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A decision the first pass recorded, made again: now a join as m says. */
static int amend(struct mt_trace *t, struct mt_stitch *st, const char *why,
		 const struct match *m)
{
	st->reason = mt_str_intern(&t->strs, why);
	if (st->reason == MT_NONE)
		return -ENOMEM;
	st->frames_joined = (uint32_t)m->len;
	st->score = m->score;
	return 0;
}

/*
 * A segment X that joined neither neighbour (a sliver between two
 * overflows, say, that saw one frame of a recursion) must not cut the
 * thread in two: the segment after it, B, is compared with the one
 * before it, A, as if X were part of the gap.  When they join, X goes
 * under the deepest joined frame, its depth a guess.  X may be a run of
 * segments joined to one another but to neither side (an island: a
 * longjmp landed where no frame of A confirms it, and the island's own
 * returns never climbed to a frame of A's).  Records k (A -> the
 * island's first) to rec (its last -> B): rec says so.
 */
static int join_across(struct thread_state *s, size_t k, size_t rec)
{
	struct mt_trace *t = s->t;
	uint32_t ia = t->stitches[k].seg_a, ib = t->stitches[rec].seg_b;
	uint32_t ix = t->stitches[k].seg_b;
	const struct mt_segment *a = &t->segments[ia], *b = &t->segments[ib];
	const struct mt_segment *x = &t->segments[ix];
	struct mt_stitch *st = &t->stitches[rec];
	struct chainv av, bv;
	struct match m;
	size_t na;
	uint32_t top = MT_NONE, deepest;
	char why[320];
	int rc = end_chain(s, a, &na);

	if (rc || !na || !b->nr_start)
		return rc;
	av = (struct chainv){s->chain, s->rets, na};
	bv = (struct chainv){b->start_chain, b->start_ips, b->nr_start};
	if (x->nr_start) {
		/* the island's top: callers its later segments revealed
		 * above its first root */
		top = resolve(s, x->start_chain[0]);
		for (size_t n = 0; s->th->slices[top].parent != MT_NONE &&
				   n < s->th->nr_slices;
		     n++)
			top = resolve(s, s->th->slices[top].parent);
		/* A frame of another segment: the island hangs under A
		 * already (across an earlier sliver), or under callers a
		 * later segment revealed (the second pass): not an island. */
		bool own = false;

		for (size_t q = k; q < rec && !own; q++)
			own = s->th->slices[top].segment ==
			      t->stitches[q].seg_b;
		if (!own)
			return 0;
		/* B hangs under it already (a later segment tied them) */
		for (uint32_t up = resolve(s, b->start_chain[0]), n = 0;
		     up != MT_NONE && n <= s->th->nr_slices;
		     up = parent_of(s, up), n++)
			if (up == top)
				return 0;
	}
	if (!decide(s, &av, &bv, ib, &m, why, sizeof(why)))
		return 0;
	deepest = s->chain[a_pos(&m, m.len - 1)];
	if (top != MT_NONE) {
		/* X ran while the joined frames were live, somewhere under
		 * the deepest of them: at a depth nobody can tell.  Unless
		 * X is among them (hung there by an earlier join). */
		for (size_t i = 0; i <= a_pos(&m, m.len - 1); i++)
			if (s->chain[i] == top)
				return 0;
		s->th->slices[top].parent = deepest;
		s->th->slices[top].flags |= MT_SLICE_DEPTH_GUESSED;
	}
	/* Two gaps and a segment that fits neither side: under the first
	 * joined frame, a function may have returned and been called again
	 * from the same place in between, which nothing here can rule out. */
	if (m.len > 1 && (!m.guessed || m.sure > m.off + 1)) {
		m.guessed = true;
		m.sure = m.off + 1;
	}
	if (ix == st->seg_a)
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; to segment %u, across %u, which joins neither%s",
			 ia, ix,
			 m.len > 1 ? " (a guess below the first frame)" : "");
	else
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; to segment %u, across %u to %u, which join "
			 "neither%s",
			 ia, ix, st->seg_a,
			 m.len > 1 ? " (a guess below the first frame)" : "");
	if (amend(t, st, why, &m))
		return -ENOMEM;
	{
		uint32_t g = gap_before(s, x);

		if (g != MT_NONE)
			s->th->slices[g].parent = deepest;
	}
	return apply_join(s, b, &bv, &m);
}

/*
 * Second pass, for a pair the first left apart: the segments after B
 * were joined to B by then, and those that returned above B's roots
 * revealed its callers.  With them on top, B may share frames with A
 * after all (a gap in the dynamic linker's lazy binding, say, whose
 * caller only a later segment returned to).
 */
static int rejoin_pair(struct thread_state *s, uint32_t ia, uint32_t ib,
		       size_t rec)
{
	struct mt_trace *t = s->t;
	const struct mt_segment *a = &t->segments[ia], *b = &t->segments[ib];
	struct mt_stitch *st = &t->stitches[rec];
	struct chainv av, bv;
	struct match m;
	uint32_t *sorted;
	size_t na, nb;
	char why[320], was[256];
	bool shared = false;
	int rc = end_chain(s, a, &na);

	if (rc || !na || !b->nr_start)
		return rc;
	nb = extended_chain(s, b);
	if (!nb)
		return -ENOMEM;
	if (nb == b->nr_start)
		return 0; /* nothing learnt */
	/* Already one tree (joined around this pair): nothing to do. */
	sorted = malloc(na * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, s->chain, na * sizeof(*sorted));
	qsort(sorted, na, sizeof(*sorted), cmp_u32);
	for (size_t i = 0; i < nb && !shared; i++)
		shared = bsearch(&s->xs[i], sorted, na, sizeof(*sorted),
				 cmp_u32) != NULL;
	free(sorted);
	if (shared)
		return 0;
	av = (struct chainv){s->chain, s->rets, na};
	bv = (struct chainv){s->xs, s->xi, nb};
	if (!decide(s, &av, &bv, MT_NONE, &m, why, sizeof(why)))
		return 0;
	snprintf(was, sizeof(was), "%s", mt_str(&t->strs, st->reason));
	snprintf(why + strlen(why), sizeof(why) - strlen(why),
		 " with %zu caller%s later segments revealed (first: %s)",
		 nb - b->nr_start, nb - b->nr_start == 1 ? "" : "s", was);
	if (amend(t, st, why, &m))
		return -ENOMEM;
	return apply_join(s, b, &bv, &m);
}

struct order {
	uint64_t ts;
	uint32_t idx;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Lay the kept slices out again: the tree from its roots, children by
 * start time (then by their old order), depths from the parents.
 */
static int rebuild(struct thread_state *s)
{
	struct mt_thread *th = s->th;
	size_t n = th->nr_slices, kept = 0, at = 0, sp = 0;
	struct order *ord = malloc((n ? n : 1) * sizeof(*ord));
	uint32_t *first = malloc((n + 1) * sizeof(*first));
	uint32_t *kids = malloc((n ? n : 1) * sizeof(*kids));
	uint32_t *fill = calloc(n + 1, sizeof(*fill));
	uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
	uint32_t *newidx = malloc((n ? n : 1) * sizeof(*newidx));
	struct mt_slice *out = malloc((n ? n : 1) * sizeof(*out));
	int rc = -ENOMEM;

	if (!ord || !first || !kids || !fill || !stack || !newidx || !out)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mt_slice *x = &th->slices[i];

		if (s->alias[i] != i)
			continue;
		ord[kept++] = (struct order){x->ts, (uint32_t)i};
	}
	/* Parents are all settled before any is rewritten: parent_of()
	 * reads a root's start-chain root, which may come later. */
	for (size_t k = 0; k < kept; k++)
		newidx[ord[k].idx] = parent_of(s, ord[k].idx);
	for (size_t k = 0; k < kept; k++) {
		struct mt_slice *x = &th->slices[ord[k].idx];

		x->parent = newidx[ord[k].idx];
	}
	qsort(ord, kept, sizeof(*ord), cmp_order);
	/* Children lists (slot n holds the roots), in start order. */
	memset(first, 0, (n + 1) * sizeof(*first));
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = th->slices[ord[k].idx].parent;

		fill[p == MT_NONE ? n : p]++;
	}
	for (size_t i = 0, sum = 0; i <= n; i++) {
		first[i] = (uint32_t)sum;
		sum += fill[i];
		fill[i] = 0;
	}
	for (size_t k = 0; k < kept; k++) {
		uint32_t p = th->slices[ord[k].idx].parent;
		size_t slot = p == MT_NONE ? n : p;

		kids[first[slot] + fill[slot]++] = ord[k].idx;
	}
	/* Depth-first, roots in order; push children in reverse. */
	for (size_t k = fill[n]; k-- > 0;)
		stack[sp++] = kids[first[n] + k];
	while (sp) {
		uint32_t i = stack[--sp];
		struct mt_slice x = th->slices[i];

		newidx[i] = (uint32_t)at;
		if (x.parent == MT_NONE) {
			x.depth = 0;
		} else {
			x.depth = out[newidx[x.parent]].depth + 1;
			x.parent = newidx[x.parent];
		}
		out[at++] = x;
		for (size_t k = fill[i]; k-- > 0;)
			stack[sp++] = kids[first[i] + k];
	}
	if (at != kept) {
		/* A cycle would leave slices unreached: keep the old array
		 * rather than lose them. */
		rc = -EINVAL;
		goto out;
	}
	/*
	 * A caller spans its callees.  A join extends A's callers through
	 * B, but not through the segments already joined under B (the
	 * second pass joins whole runs): children after parents in
	 * pre-order, so one backward sweep carries every end up.
	 */
	/* Below a frame whose depth was guessed, every depth is. */
	for (size_t i = 0; i < at; i++)
		if (out[i].parent != MT_NONE &&
		    (out[out[i].parent].flags & MT_SLICE_DEPTH_GUESSED))
			out[i].flags |= MT_SLICE_DEPTH_GUESSED;
	for (size_t i = at; i-- > 0;) {
		struct mt_slice *x = &out[i], *p;

		if (x->parent == MT_NONE)
			continue;
		p = &out[x->parent];
		if (end_of(x) > end_of(p)) {
			p->dur = end_of(x) - p->ts;
			p->flags = (p->flags & ~MT_SLICE_INFERRED_END) |
				   (x->flags & MT_SLICE_INFERRED_END);
		}
	}
	memcpy(th->slices, out, at * sizeof(*out));
	th->nr_slices = at;
	rc = 0;
out:
	free(ord);
	free(first);
	free(kids);
	free(fill);
	free(stack);
	free(newidx);
	free(out);
	return rc;
}

static int stitch_thread(struct mt_trace *t, struct mt_thread *th, bool join)
{
	struct thread_state s = {.t = t, .th = th, .root_name = MT_NONE};
	uint32_t prev = MT_NONE;
	size_t first_rec;
	int rc = 0;

	s.alias =
		malloc((th->nr_slices ? th->nr_slices : 1) * sizeof(*s.alias));
	if (!s.alias)
		return -ENOMEM;
	for (size_t i = 0; i < th->nr_slices; i++)
		s.alias[i] = (uint32_t)i;
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		const struct mt_segment *g = &t->segments[i];

		if (g->tid != th->tid)
			continue;
		for (size_t k = 0; k + 1 < g->nr_end && !rc; k++)
			rc = ret_set(&s.rets_of, g->end_chain[k + 1],
				     g->end_rets[k]);
		for (size_t k = 0; k + 1 < g->nr_start && !rc; k++)
			rc = ret_set(&s.rets_of, g->start_chain[k + 1],
				     g->start_ips[k]);
	}
	first_rec = t->nr_stitches;
	for (size_t i = 0; i < t->nr_segments && !rc; i++) {
		if (t->segments[i].tid != th->tid)
			continue;
		if (prev != MT_NONE) {
			size_t rec = t->nr_stitches;

			rc = stitch_pair(&s, prev, (uint32_t)i, join);
			/* prev joined neither side: try across it */
			if (!rc && join && rec > first_rec &&
			    !t->stitches[rec].frames_joined &&
			    !t->stitches[rec - 1].frames_joined)
				rc = join_across(&s, rec - 1, rec);
		} else {
			s.first_segment = (uint32_t)i;
			s.root_name =
				t->segments[i].nr_start
					? th->slices[t->segments[i]
							     .start_chain[0]]
						  .name
					: MT_NONE;
		}
		prev = (uint32_t)i;
	}
	/* The pairs left apart, again, knowing what the first pass joined. */
	for (size_t k = first_rec; join && !rc && k < t->nr_stitches; k++)
		if (!t->stitches[k].frames_joined)
			rc = rejoin_pair(&s, t->stitches[k].seg_a,
					 t->stitches[k].seg_b, k);
	/* Runs of segments joined to one another that still join neither
	 * side: across them, as across a single one. */
	for (size_t r = first_rec + 1; join && !rc && r < t->nr_stitches; r++) {
		size_t k = r - 1;

		if (t->stitches[r].frames_joined)
			continue;
		while (k > first_rec && t->stitches[k].frames_joined)
			k--;
		if (k + 1 < r && !t->stitches[k].frames_joined)
			rc = join_across(&s, k, r);
	}
	if (!rc && s.joins)
		rc = rebuild(&s);
	free(s.alias);
	free(s.rets_of.key);
	free(s.rets_of.ret);
	free(s.chain);
	free(s.rets);
	free(s.xs);
	free(s.xi);
	return rc;
}

int stitch_trace(struct mt_trace *t, const struct stitch_opts *o, char *err,
		 size_t errlen)
{
	bool join = !(o && o->record_only);

	for (size_t i = 0; i < t->nr_threads; i++) {
		int rc = stitch_thread(t, &t->threads[i], join);

		if (rc) {
			snprintf(err, errlen, "%s while stitching",
				 rc == -ENOMEM ? "out of memory"
					       : "an inconsistent tree");
			return rc;
		}
	}
	return 0;
}
