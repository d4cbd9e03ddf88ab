/*
 * mt-accuracy TRUTH.tsv OURS.tsv GAPS.tsv [--tol-ns N]
 *
 * How much of the truth a conversion got right, as numbers:
 *
 *   calls   share of true calls (outside the gaps) found with the right
 *           name, depth and parent;
 *   stack   share of traced time whose whole stack, root to leaf, is right
 *           (each true call's own time, children and gaps excluded, counts
 *           when it and every ancestor were found at the right depths);
 *   root    the same for the root frame only;
 *   false   joined slices that span a gap but were two activations in
 *           truth (or another function): must be 0.
 *
 * Calls are paired in order: a true call pairs with the next unpaired
 * slice of the same name that starts within the tolerance.  Times are
 * compared only within the tolerance, so the figures measure structure,
 * not the timing resolution.
 *
 * Prints one line: "calls=P stack=P root=P false=N joined=N rows=N".
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	unsigned tid, depth;
	char name[96];
	uint64_t start, end;
	bool gap, joined;
	long parent;   /* index in the same table, -1 for roots */
	long match;    /* truth -> ours */
	bool lost;     /* truth: began inside a gap */
};

struct table {
	struct row *r;
	size_t n, cap;
};

struct gap {
	unsigned tid;
	uint64_t after, end, resume;
};

static int load(const char *path, struct table *t)
{
	FILE *f = fopen(path, "r");
	char line[1024], flags[256];
	long stack[4096];

	if (!f || !fgets(line, sizeof(line), f)) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct row r = {.parent = -1, .match = -1};

		if (sscanf(line, "%u\t%u\t%95[^\t]\t%" SCNu64 "\t%" SCNu64
				 "\t%255s",
			   &r.tid, &r.depth, r.name, &r.start, &r.end,
			   flags) != 6) {
			fprintf(stderr, "%s: bad line: %s", path, line);
			fclose(f);
			return -1;
		}
		for (char *tok = strtok(flags, ","); tok;
		     tok = strtok(NULL, ",")) {
			r.gap |= !strcmp(tok, "gap");
			r.joined |= !strcmp(tok, "joined");
		}
		if (r.gap)
			continue;
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 4096;
			t->r = realloc(t->r, t->cap * sizeof(*t->r));
			if (!t->r) {
				fclose(f);
				return -1;
			}
		}
		/* pre-order: the parent is the last row one level up */
		if (r.depth > 0 && r.depth < 4096 && t->n &&
		    t->r[t->n - 1].tid == r.tid)
			r.parent = stack[r.depth - 1];
		if (r.depth < 4096)
			stack[r.depth] = (long)t->n;
		t->r[t->n++] = r;
	}
	fclose(f);
	return 0;
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
	return g;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The truth row of tid at depth d live at time t, or -1. */
static long live_at(const struct table *t, unsigned tid, unsigned d,
		    uint64_t when)
{
	long best = -1;

	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->r[i];

		if (r->tid == tid && r->depth == d && r->start <= when &&
		    when < r->end)
			best = (long)i;
	}
	return best;
}

int main(int argc, char **argv)
{
	struct table tt = {0}, ot = {0};
	struct gap *gaps;
	size_t ng, rows = 0, right = 0, joined = 0, false_joins = 0;
	uint64_t tol = 2000;
	double total = 0, stack_ok = 0, root_ok = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: mt-accuracy TRUTH OURS GAPS [--tol-ns N]\n");
		return 2;
	}
	if (argc == 6 && !strcmp(argv[4], "--tol-ns"))
		tol = strtoull(argv[5], NULL, 10);
	if (load(argv[1], &tt) || load(argv[2], &ot))
		return 2;
	gaps = load_gaps(argv[3], &ng);

	for (size_t i = 0; i < tt.n; i++)
		for (size_t g = 0; g < ng; g++)
			if (gaps[g].tid == tt.r[i].tid &&
			    tt.r[i].start > gaps[g].after &&
			    tt.r[i].start <= gaps[g].end)
				tt.r[i].lost = true;

	/* Pair in order, per thread. */
	{
		size_t j = 0;
		bool *used = calloc(ot.n ? ot.n : 1, 1);

		for (size_t i = 0; i < tt.n; i++) {
			struct row *a = &tt.r[i];

			if (a->lost)
				continue;
			while (j < ot.n && (ot.r[j].tid < a->tid ||
					    (ot.r[j].tid == a->tid && used[j])))
				j++;
			for (size_t k = j; k < ot.n && k < j + 256; k++) {
				const struct row *b = &ot.r[k];

				if (b->tid != a->tid)
					break;
				if (used[k] || strcmp(a->name, b->name) ||
				    diff(a->start, b->start) > tol)
					continue;
				a->match = (long)k;
				used[k] = true;
				break;
			}
		}
		free(used);
	}

	for (size_t i = 0; i < tt.n; i++) {
		const struct row *a = &tt.r[i];
		uint64_t self = a->end - a->start;
		bool stack = true, root;
		long x, y;

		if (a->lost)
			continue;
		rows++;
		/* own time: minus the children's */
		for (size_t k = i + 1; k < tt.n && tt.r[k].tid == a->tid &&
				       tt.r[k].depth > a->depth;
		     k++)
			if (tt.r[k].depth == a->depth + 1) {
				uint64_t c = tt.r[k].end - tt.r[k].start;

				self = c < self ? self - c : 0;
			}
		for (size_t g = 0; g < ng; g++)
			if (gaps[g].tid == a->tid && gaps[g].after >= a->start &&
			    gaps[g].resume <= a->end) {
				uint64_t c = gaps[g].resume - gaps[g].after;

				self = c < self ? self - c : 0;
			}
		if (a->match >= 0 &&
		    ot.r[a->match].depth == a->depth &&
		    ((a->parent < 0 && ot.r[a->match].parent < 0) ||
		     (a->parent >= 0 &&
		      tt.r[a->parent].match == ot.r[a->match].parent)))
			right++;
		/* the whole chain, root to leaf */
		x = (long)i;
		y = a->match;
		root = false;
		while (x >= 0) {
			if (y < 0 || tt.r[x].match != y ||
			    ot.r[y].depth != tt.r[x].depth) {
				stack = false;
				break;
			}
			if (tt.r[x].parent < 0) {
				root = ot.r[y].parent < 0;
				stack = root;
				break;
			}
			x = tt.r[x].parent;
			y = ot.r[y].parent;
		}
		if (!stack) {
			/* the root alone */
			x = (long)i;
			while (tt.r[x].parent >= 0)
				x = tt.r[x].parent;
			y = tt.r[x].match;
			root = y >= 0 && ot.r[y].parent < 0 &&
			       ot.r[y].depth == 0;
		}
		total += (double)self;
		stack_ok += stack ? (double)self : 0;
		root_ok += root ? (double)self : 0;
	}

	/* Joined slices: the same truth activation on both sides of each
	 * gap they span. */
	for (size_t k = 0; k < ot.n; k++) {
		const struct row *b = &ot.r[k];

		if (!b->joined)
			continue;
		joined++;
		for (size_t g = 0; g < ng; g++) {
			long before, after;

			if (gaps[g].tid != b->tid || gaps[g].after < b->start ||
			    gaps[g].resume > b->end)
				continue;
			before = live_at(&tt, b->tid, b->depth, gaps[g].after);
			after = live_at(&tt, b->tid, b->depth, gaps[g].resume);
			if (before < 0 || before != after ||
			    strcmp(tt.r[before].name, b->name)) {
				false_joins++;
				break;
			}
		}
	}
	printf("calls=%.2f stack=%.2f root=%.2f false=%zu joined=%zu rows=%zu\n",
	       rows ? 100.0 * (double)right / (double)rows : 100.0,
	       total > 0 ? 100.0 * stack_ok / total : 100.0,
	       total > 0 ? 100.0 * root_ok / total : 100.0, false_joins, joined,
	       rows);
	free(tt.r);
	free(ot.r);
	free(gaps);
	return 0;
}
