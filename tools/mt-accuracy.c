/* SPDX-License-Identifier: MIT */
/*
 * mt-accuracy TRUTH.tsv OURS.tsv GAPS.tsv [--tol-ns N] [--wrong]
 *
 * How much of the truth a conversion got right, as numbers:
 *
 *   calls   share of true calls (outside the gaps) found with the right
 *           name, depth and parent;
 *   stack   share of traced time whose whole stack, root to leaf, is right
 *           (each true call's own time, children and gaps excluded, counts
 *           when it and every ancestor were found at the right depths);
 *   root    the same for the root frame only;
 *   shape   the same for the stack with each run of one function (a
 *           recursion) counted as one frame: right but for the depth
 *           inside recursions, which a gap in a recursion through one
 *           call site leaves unknowable;
 *   marked  share of that time shown under a slice marked depth_guessed;
 *   sure    the stack figure over the rest, the time we claimed to know
 *           (a true call we did not find at all counts as claimed);
 *   false   joined slices whose true call returned inside a gap they
 *           span (two activations glued together): must be 0.  Counted
 *           apart: "recalled", where the same caller called the function
 *           again inside the gap (from the same call site, no trace can
 *           tell that from one activation), and "false_guessed", among
 *           the "guessed" slices, those the converter marked
 *           depth_guessed (several depths fitted as well).
 *
 * Calls are paired per function, keeping order: of the pairings where a
 * call earlier than another has the earlier slice and each pair starts
 * within the tolerance, the one with the most pairs, then the least time
 * between them, then the most at the same depth.  Times are
 * compared only within the tolerance, so the figures measure structure,
 * not the timing resolution.  Two allowances follow from what a trace
 * can know: after an overflow the decoder has no time until the next
 * timing packet, so a call that starts shortly after a gap may read as
 * early as the gap's start (the tolerance grows by the gap's length);
 * and a call that began inside a gap is paired with a slice that starts
 * when tracing resumed after that gap, at the same height above the leaf
 * there, so that the calls under it can be judged, but is not itself
 * counted (its start was never traced; if it also returned inside the
 * gap, the trace never saw it at all and it pairs with nothing).
 * Conversely, a slice whose start was never seen (a segment's root,
 * clipped_start) pairs only with such a call, or with one that began as
 * the trace did or before: a call the trace saw begin is a slice of its
 * own; nor is it judged as spanning the gap it begins after.
 *
 * Prints one line: "calls=P stack=P root=P shape=P marked=P sure=P
 * false=N recalled=N guessed=N false_guessed=N joined=N unjudged=N
 * rows=N claimed_ns=N claimed_ok_ns=N" (the last two: the time sure is
 * the share of, and its right part, so that captures can be pooled).  --wrong
 * also lists, on stderr, each true call whose own time counts as claimed and
 * wrong (not under a depth_guessed slice, stack not right), with the slice it
 * paired with: where `sure` is lost.
 */
#include "tools/treefile.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long after a gap the decoder may still lack a timing packet. */
#define STALE_NS 10000

struct row {
	unsigned tid, depth;
	char name[1024];
	uint64_t start, end;
	bool gap, joined, clipped, guessed;
	long parent; /* index in the same table, -1 for roots */
	long match;  /* truth -> ours */
	/* ours: begins where one of our gaps ends (a segment's root) */
	bool resumed;
	/* truth: began inside a gap; resume: when tracing resumed after it */
	bool lost;
	uint64_t resume;
	/* resumed or lost: the thread's n-th gap (from 1) it follows, and
	 * how many levels above the leaf it was when tracing resumed */
	size_t gap_no;
	unsigned height;
};

struct table {
	struct row *r;
	size_t n, cap;
	size_t gaps; /* gap rows, which are not kept */
};

struct gap {
	unsigned tid;
	uint64_t after, end, resume;
	size_t no; /* the thread's n-th gap, from 1 */
};

/*
 * Whether true call b, begun inside gap g, stands where a stood: the same
 * function under the same caller, or under a caller that itself replaced
 * a's inside the gap (a longjmp out of both, and the caller called again
 * from the same place).
 */
static bool replaces(const struct table *tt, long a, long b,
		     const struct gap *g)
{
	const struct row *x = &tt->r[a], *y = &tt->r[b];

	if (!tf_same_name(x->name, y->name) || y->start < g->after ||
	    y->start >= g->resume)
		return false;
	if (x->parent == y->parent)
		return true;
	return x->parent >= 0 && y->parent >= 0 &&
	       tt->r[x->parent].end < g->resume &&
	       replaces(tt, x->parent, y->parent, g);
}

/*
 * Whether true call x, which returned inside gap g, was called again
 * there by the same caller (or by one that replaced it there): a join of
 * the two cannot be told from one activation when the second call came
 * from the same call site (the truth does not say which site; this
 * counts both).
 */
static bool recalled(const struct table *tt, long x, const struct gap *g)
{
	const struct row *a = &tt->r[x];

	for (size_t k = (size_t)x + 1;
	     k < tt->n && tt->r[k].tid == a->tid && tt->r[k].start < g->resume;
	     k++)
		if (replaces(tt, x, (long)k, g))
			return true;
	return false;
}

/* Whether the chains from truth row x and our row y up to their roots
 * name the same functions once runs of one function are folded. */
static bool same_shape(const struct table *tt, long x, const struct table *ot,
		       long y)
{
	const char *fx = NULL, *fy = NULL;

	for (;;) {
		while (x >= 0 && fx && tf_same_name(tt->r[x].name, fx))
			x = tt->r[x].parent;
		while (y >= 0 && fy && tf_same_name(ot->r[y].name, fy))
			y = ot->r[y].parent;
		if (x < 0 || y < 0)
			return x < 0 && y < 0;
		if (!tf_same_name(tt->r[x].name, ot->r[y].name))
			return false;
		fx = tt->r[x].name;
		fy = ot->r[y].name;
		x = tt->r[x].parent;
		y = ot->r[y].parent;
	}
}

/* What loading a table knows of the rows before the next one. */
struct loading {
	struct table *t;
	/* the last row at each depth (a recursion may be thousands deep):
	 * stack[0 .. top) are the last row's ancestors and itself */
	long *stack;
	size_t cap, top;
	unsigned gap_tid;
	uint64_t gap_end; /* the last gap row's end, on gap_tid */
	size_t gap_no;	  /* gap rows seen on gap_tid */
};

static int add_row(const struct tf_row *x, void *arg)
{
	struct loading *l = arg;
	struct table *t = l->t;
	struct row r = {.parent = -1, .match = -1};

	r.tid = x->tid;
	r.depth = x->depth;
	memcpy(r.name, x->name, sizeof(r.name));
	r.start = x->start;
	r.end = x->end;
	r.gap = x->flags & TF_GAP;
	r.joined = x->flags & TF_JOINED;
	r.guessed = x->flags & TF_DEPTH_GUESSED;
	r.clipped = x->flags & TF_CLIP_START;
	if (r.gap) {
		l->gap_no = r.tid == l->gap_tid ? l->gap_no + 1 : 1;
		l->gap_tid = r.tid;
		l->gap_end = r.end;
		t->gaps++;
		return 0;
	}
	r.resumed = r.clipped && r.tid == l->gap_tid && r.start == l->gap_end;
	r.gap_no = r.resumed ? l->gap_no : 0;
	if (mt_grow((void **)&t->r, &t->cap, t->n + 1, sizeof(*t->r))) {
		fprintf(stderr, "mt-accuracy: out of memory\n");
		return -1;
	}
	if (mt_grow((void **)&l->stack, &l->cap, (size_t)r.depth + 1,
		    sizeof(*l->stack))) {
		fprintf(stderr, "mt-accuracy: out of memory\n");
		return -1;
	}
	/* pre-order: the parent is the last row one level up */
	if (r.depth > 0 && r.depth <= l->top && t->n &&
	    t->r[t->n - 1].tid == r.tid)
		r.parent = l->stack[r.depth - 1];
	l->stack[r.depth] = (long)t->n;
	l->top = (size_t)r.depth + 1;
	t->r[t->n++] = r;
	return 0;
}

static int load(const char *path, struct table *t)
{
	struct loading *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -1;
	l->t = t;
	rc = tf_load(path, add_row, l);
	free(l->stack);
	free(l);
	if (rc)
		return rc;
	/* The slices a segment begins with nest, one row after another:
	 * the deepest is the leaf where tracing resumed. */
	for (size_t i = t->n; i-- > 0;) {
		struct row *r = &t->r[i], *n = i + 1 < t->n ? r + 1 : NULL;

		if (!r->resumed)
			continue;
		r->height = n && n->resumed && n->tid == r->tid &&
					    n->gap_no == r->gap_no &&
					    n->depth == r->depth + 1
				    ? n->height + 1
				    : 0;
	}
	return 0;
}

/* The depth of the deepest true call live at time at, or -1. */
static long leaf_depth(const struct table *tt, unsigned tid, uint64_t at)
{
	size_t lo = 0, hi = tt->n;

	/* rows are by thread, then by start */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct row *r = &tt->r[mid];

		if (r->tid < tid || (r->tid == tid && r->start <= at))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the last call begun by then that is still live is the leaf: any
	 * live call begun later would be its descendant */
	while (lo-- > 0 && tt->r[lo].tid == tid)
		if (tt->r[lo].end > at)
			return tt->r[lo].depth;
	return -1;
}

static int cmp_gap(const void *pa, const void *pb)
{
	const struct gap *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->after < b->after ? -1 : a->after > b->after;
}

static struct gap *load_gaps(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[512];
	struct gap *g = NULL;
	size_t cap = 0;

	*n = 0;
	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		struct gap x;
		unsigned long long a, b, c;
		char rest[256];

		if (sscanf(line, "%u\t%*s\t%*s\t%llu\t%llu\t%llu%255[^\n]",
			   &x.tid, &a, &b, &c, rest) < 4)
			continue;
		x.after = a;
		x.end = b;
		x.resume = c;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			g = realloc(g, cap * sizeof(*g));
			if (!g)
				break;
		}
		g[(*n)++] = x;
	}
	fclose(f);
	/* by thread, then in time: the n-th of a thread is its n-th gap */
	if (g)
		qsort(g, *n, sizeof(*g), cmp_gap);
	for (size_t i = 0; i < *n; i++)
		g[i].no = i && g[i - 1].tid == g[i].tid ? g[i - 1].no + 1 : 1;
	return g;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* ------------------------------------------------------------------ */
/* Pairing true calls with our slices                                 */

/* A name's key: every unknown-code frame is one function here. */
static const char *name_key(const char *name)
{
	return strncmp(name, "[unknown", 8) ? name : "[unknown";
}

/* Rows by thread, function and start. */
static int cmp_rows(const void *pa, const void *pb, void *ctx)
{
	const struct table *t = ctx;
	const struct row *a = &t->r[*(const size_t *)pa];
	const struct row *b = &t->r[*(const size_t *)pb];
	int c;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	c = strcmp(name_key(a->name), name_key(b->name));
	if (c)
		return c;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

static int cmp_group(const struct row *a, const struct row *b)
{
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return strcmp(name_key(a->name), name_key(b->name));
}

static size_t *by_group(struct table *t)
{
	size_t *v = malloc((t->n ? t->n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		v[i] = i;
	qsort_r(v, t->n, sizeof(*v), cmp_rows, t);
	return v;
}

/* What may pair: true call a (its start off by up to slack) and our
 * slice b of the same function.  A call begun inside a gap pairs with a
 * slice that tracing resumed in (the same gap and height when the gaps
 * are numbered); a clipped slice pairs with a call that began before
 * the thread's first traced moment (first) or inside a gap. */
struct pair_rules {
	uint64_t tol;
	bool numbered;
};

static bool may_pair(const struct row *a, const struct row *b, uint64_t slack,
		     uint64_t first, const struct pair_rules *pr)
{
	if (diff(a->start, b->start) > slack)
		return false;
	if (a->lost &&
	    (!b->clipped || a->end < a->resume ||
	     (pr->numbered ? b->gap_no != a->gap_no || b->height != a->height
			   : b->start > a->resume + pr->tol)))
		return false;
	return !(b->clipped && !a->lost && !a->clipped &&
		 a->start > first + pr->tol);
}

/* A pair on the best chain so far that ends in it. */
struct pnode {
	long prev;
	size_t i, j;
};

struct fen {
	int64_t val;
	long node;
};

static struct fen fen_best(const struct fen *f, size_t j)
{
	struct fen b = {0, -1};

	for (; j; j &= j - 1)
		if (f[j].val > b.val)
			b = f[j];
	return b;
}

static void fen_put(struct fen *f, size_t n, size_t j, struct fen v)
{
	for (; j <= n; j += j & -j)
		if (v.val > f[j].val)
			f[j] = v;
}

/* Candidates a true call weighs on each side of its start: a recursion's
 * neighbouring levels start a few ns apart, and the pair wanted is among
 * the nearest. */
#define PAIR_NEAR 64

/*
 * One function on one thread: its true calls T[0..tn) and our slices
 * O[0..on), each by start.  Pairs keep both orders (a call earlier than
 * another has the earlier slice): of such pairings, the one with the
 * most pairs, then the least time between the starts paired, then the
 * most at the same depth.  Greedy pairing (each call the first slice
 * free within the tolerance) slips where a call has no slice: it takes
 * the next call's, and in a recursion the slip runs on for hundreds of
 * calls.
 */
static int pair_group(struct table *tt, const struct table *ot, const size_t *T,
		      size_t tn, const size_t *O, size_t on,
		      const uint64_t *slack, const uint64_t *first, int64_t w0,
		      const struct pair_rules *pr)
{
	struct fen *fen = calloc(on + 1, sizeof(*fen));
	struct pnode *nodes = NULL;
	size_t nn = 0, cap = 0;
	struct fen best;

	if (!fen)
		return -1;
	for (size_t i = 0; i < tn; i++) {
		const struct row *a = &tt->r[T[i]];
		size_t lo = 0, hi = on, from, to;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ot->r[O[mid]].start < a->start)
				lo = mid + 1;
			else
				hi = mid;
		}
		from = lo > PAIR_NEAR ? lo - PAIR_NEAR : 0;
		to = lo + PAIR_NEAR < on ? lo + PAIR_NEAR : on;
		/* from the last: a pair of this call must not extend a chain
		 * that ends in another pair of it */
		for (size_t j = to; j-- > from;) {
			const struct row *b = &ot->r[O[j]];
			struct fen prev;
			int64_t w;

			if (!may_pair(a, b, slack[T[i]], first[T[i]], pr))
				continue;
			w = 2 * (w0 - (int64_t)diff(a->start, b->start)) +
			    (a->depth == b->depth);
			prev = fen_best(fen, j);
			if (mt_grow((void **)&nodes, &cap, nn + 1,
				    sizeof(*nodes))) {
				free(fen);
				free(nodes);
				return -1;
			}
			nodes[nn] = (struct pnode){prev.node, i, j};
			fen_put(fen, on, j + 1,
				(struct fen){prev.val + w, (long)nn});
			nn++;
		}
	}
	best = fen_best(fen, on);
	for (long k = best.node; k >= 0; k = nodes[k].prev)
		tt->r[T[nodes[k].i]].match = (long)O[nodes[k].j];
	free(fen);
	free(nodes);
	return 0;
}

/* Every true call's slice (match), or none (-1). */
static int pair_calls(struct table *tt, struct table *ot, const uint64_t *slack,
		      uint64_t max_slack, uint64_t tol, bool numbered)
{
	size_t *T = by_group(tt), *O = by_group(ot);
	uint64_t *first = malloc((tt->n ? tt->n : 1) * sizeof(*first));
	struct pair_rules pr = {tol, numbered};
	/* above any time between a pair's starts: one pair more outweighs
	 * every saving in time */
	int64_t w0 = 2 * (int64_t)max_slack + 2;
	size_t i = 0, j = 0;
	int rc = 0;

	if (!T || !O || !first) {
		rc = -1;
		goto out;
	}
	/* the thread's first traced moment: its first call's start */
	for (size_t k = 0; k < tt->n; k++)
		first[k] = k && tt->r[k].tid == tt->r[k - 1].tid
				   ? first[k - 1]
				   : tt->r[k].start;
	while (i < tt->n && !rc) {
		const struct row *g = &tt->r[T[i]];
		size_t ti = i, oj;

		while (i < tt->n && !cmp_group(&tt->r[T[i]], g))
			i++;
		while (j < ot->n && cmp_group(&ot->r[O[j]], g) < 0)
			j++;
		oj = j;
		while (j < ot->n && !cmp_group(&ot->r[O[j]], g))
			j++;
		if (j > oj)
			rc = pair_group(tt, ot, T + ti, i - ti, O + oj, j - oj,
					slack, first, w0, &pr);
	}
out:
	free(T);
	free(O);
	free(first);
	return rc;
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/*
 * A true call's own time: its span less its children's and less the
 * gaps, but only where the gap fell in its own time.  A gap while a
 * child ran is the child's (or its descendant's) to lose; charging it to
 * every ancestor as well would zero their own time and leave the figures
 * weighted by where the gaps happened to fall.
 */
static uint64_t own_time(const struct table *tt, size_t i,
			 const struct gap *gaps, size_t ng, size_t *kids)
{
	const struct row *a = &tt->r[i];
	uint64_t self = a->end - a->start;
	size_t nk = 0;

	/* The children, in start order, which is also end order (kids has room
	 * for every row). */
	for (size_t k = i + 1;
	     k < tt->n && tt->r[k].tid == a->tid && tt->r[k].depth > a->depth;
	     k++) {
		if (tt->r[k].depth != a->depth + 1)
			continue;
		kids[nk++] = k;
		self -= self < tt->r[k].end - tt->r[k].start
				? self
				: tt->r[k].end - tt->r[k].start;
	}
	for (size_t g = 0; g < ng; g++) {
		const struct gap *x = &gaps[g];
		uint64_t c;
		size_t lo = 0, hi = nk;

		if (x->tid != a->tid)
			continue;
		c = overlap(x->after, x->resume, a->start, a->end);
		if (!c)
			continue;
		while (lo <
		       hi) { /* the first child ending after the gap began */
			size_t mid = lo + (hi - lo) / 2;

			if (tt->r[kids[mid]].end <= x->after)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo;
		     k < nk && tt->r[kids[k]].start < x->resume && c; k++) {
			const struct row *ch = &tt->r[kids[k]];
			uint64_t o = overlap(x->after, x->resume, ch->start,
					     ch->end);

			c -= o < c ? o : c;
		}
		self -= c < self ? c : self;
	}
	return self;
}

int main(int argc, char **argv)
{
	struct table tt = {0}, ot = {0};
	struct gap *gaps;
	size_t ng, rows = 0, right = 0, joined = 0, false_joins = 0;
	size_t false_recalled = 0, guessed = 0, false_guessed = 0;
	size_t unjudged = 0;
	uint64_t tol = 2000;
	double total = 0, stack_ok = 0, root_ok = 0, shape_ok = 0;
	double sure = 0, sure_ok = 0;
	size_t *kids; /* scratch for own_time() */
	bool numbered, wrong = false;

	if (argc < 4) {
		fprintf(stderr, "usage: mt-accuracy TRUTH OURS GAPS [--tol-ns "
				"N] [--wrong]\n");
		return 2;
	}
	for (int i = 4; i < argc; i++) {
		char why[256];

		if (!strcmp(argv[i], "--wrong")) {
			wrong = true;
		} else if (!strcmp(argv[i], "--tol-ns") && i + 1 < argc) {
			if (mt_parse_arg("--tol-ns", argv[++i], 10, UINT64_MAX,
					 &tol, why, sizeof(why))) {
				fprintf(stderr, "mt-accuracy: %s\n", why);
				return 2;
			}
		} else {
			fprintf(stderr, "mt-accuracy: unknown option %s\n",
				argv[i]);
			return 2;
		}
	}
	if (load(argv[1], &tt) || load(argv[2], &ot))
		return 2;
	gaps = load_gaps(argv[3], &ng);
	kids = malloc((tt.n ? tt.n : 1) * sizeof(*kids));
	if (!kids)
		return 2;
	/* Our gaps and the true ones, one for one: then a slice's gap is
	 * known by number, not guessed from times that may be stale. */
	numbered = ot.gaps == ng;

	/* Per true call: was it begun inside a gap, and how far may its
	 * time be off (a gap just before it adds its length). */
	{
		uint64_t *slack = calloc(tt.n ? tt.n : 1, sizeof(*slack));
		uint64_t max_slack = tol;

		if (!slack)
			return 2;
		for (size_t i = 0; i < tt.n; i++) {
			slack[i] = tol;
			for (size_t g = 0; g < ng; g++) {
				const struct gap *x = &gaps[g];
				uint64_t t = tt.r[i].start;

				if (x->tid != tt.r[i].tid)
					continue;
				if (t > x->after && t <= x->end) {
					long d = leaf_depth(&tt, x->tid,
							    x->resume);

					tt.r[i].lost = true;
					tt.r[i].resume = x->resume;
					tt.r[i].gap_no = x->no;
					tt.r[i].height =
						d > (long)tt.r[i].depth
							? (unsigned)d -
								  tt.r[i].depth
							: 0;
				}
				if (t > x->after && t <= x->resume + STALE_NS)
					slack[i] = tol + (x->resume - x->after);
			}
			if (slack[i] > max_slack)
				max_slack = slack[i];
		}
		/* Each true call and the slice of ours it is. */
		if (pair_calls(&tt, &ot, slack, max_slack, tol, numbered))
			return 2;
		free(slack);
	}

	for (size_t i = 0; i < tt.n; i++) {
		const struct row *a = &tt.r[i];
		uint64_t self;
		bool stack = true, root;
		long x, y;

		if (a->lost)
			continue;
		rows++;
		self = own_time(&tt, i, gaps, ng, kids);
		if (a->match >= 0 && ot.r[a->match].depth == a->depth &&
		    ((a->parent < 0 && ot.r[a->match].parent < 0) ||
		     (a->parent >= 0 &&
		      tt.r[a->parent].match == ot.r[a->match].parent)))
			right++;
		/* the whole chain, root to leaf, and the root alone */
		x = (long)i;
		y = a->match;
		while (x >= 0) {
			if (y < 0 || tt.r[x].match != y ||
			    ot.r[y].depth != tt.r[x].depth) {
				stack = false;
				break;
			}
			x = tt.r[x].parent;
			y = ot.r[y].parent;
		}
		if (stack && y >= 0)
			stack = false; /* ours has more above */
		x = (long)i;
		while (tt.r[x].parent >= 0)
			x = tt.r[x].parent;
		y = a->match;
		while (y >= 0 && ot.r[y].parent >= 0)
			y = ot.r[y].parent;
		root = y >= 0 && tt.r[x].match == y;
		total += (double)self;
		stack_ok += stack ? (double)self : 0;
		root_ok += root ? (double)self : 0;
		/* time where we claimed to know: the slice we showed is not
		 * marked a guess (a call we missed counts as claimed) */
		if (a->match < 0 || !ot.r[a->match].guessed) {
			sure += (double)self;
			sure_ok += stack ? (double)self : 0;
			if (wrong && !stack && self && a->match < 0)
				fprintf(stderr,
					"wrong %u %s depth %u at %" PRIu64
					" own %" PRIu64 " ns: not found\n",
					a->tid, a->name, a->depth, a->start,
					self);
			else if (wrong && !stack && self)
				fprintf(stderr,
					"wrong %u %s depth %u at %" PRIu64
					" own %" PRIu64
					" ns: ours at depth %u from %" PRIu64
					"\n",
					a->tid, a->name, a->depth, a->start,
					self, ot.r[a->match].depth,
					ot.r[a->match].start);
		}
		if (a->match >= 0 && same_shape(&tt, (long)i, &ot, a->match))
			shape_ok += (double)self;
	}

	/* Joined slices: the true call paired with a joined slice must still
	 * be live when each gap it spans ends; if it returned inside the gap,
	 * the join glued two activations.  (A joined slice that pairs with
	 * no true call cannot be judged and is counted apart.) */
	{
		long *rev = malloc((ot.n ? ot.n : 1) * sizeof(*rev));

		for (size_t k = 0; k < ot.n; k++)
			rev[k] = -1;
		for (size_t i = 0; i < tt.n; i++)
			if (tt.r[i].match >= 0)
				rev[tt.r[i].match] = (long)i;
		for (size_t k = 0; k < ot.n; k++) {
			const struct row *b = &ot.r[k];

			if (!b->joined)
				continue;
			joined++;
			guessed += b->guessed;
			if (rev[k] < 0) {
				unjudged++;
				continue;
			}
			/* A slice that begins where tracing resumed bears the
			 * time of the last timing packet before the gap, which
			 * may be earlier than the gap's true start: the first
			 * gap that seems to lie inside it is the one it begins
			 * after, not one it spans. */
			bool skip = b->resumed;

			for (size_t g = 0; g < ng; g++) {
				if (gaps[g].tid != b->tid ||
				    gaps[g].after < b->start ||
				    gaps[g].resume > b->end)
					continue;
				if (skip &&
				    (!numbered || gaps[g].no == b->gap_no)) {
					skip = false;
					continue;
				}
				if (tt.r[rev[k]].end >= gaps[g].resume)
					continue;
				if (b->guessed)
					false_guessed++;
				else if (recalled(&tt, rev[k], &gaps[g]))
					false_recalled++;
				else
					false_joins++;
				break;
			}
		}
		free(rev);
	}
	printf("calls=%.2f stack=%.2f root=%.2f shape=%.2f marked=%.2f "
	       "sure=%.2f false=%zu recalled=%zu guessed=%zu "
	       "false_guessed=%zu joined=%zu unjudged=%zu rows=%zu "
	       "claimed_ns=%.0f claimed_ok_ns=%.0f\n",
	       rows ? 100.0 * (double)right / (double)rows : 100.0,
	       total > 0 ? 100.0 * stack_ok / total : 100.0,
	       total > 0 ? 100.0 * root_ok / total : 100.0,
	       total > 0 ? 100.0 * shape_ok / total : 100.0,
	       total > 0 ? 100.0 * (total - sure) / total : 0.0,
	       sure > 0 ? 100.0 * sure_ok / sure : 100.0, false_joins,
	       false_recalled, guessed, false_guessed, joined, unjudged, rows,
	       sure, sure_ok);
	free(tt.r);
	free(ot.r);
	free(gaps);
	free(kids);
	return 0;
}
