/* SPDX-License-Identifier: MIT */
/*
 * mt-report: what the functions of a trace cost, from the database
 * mt-convert wrote.  The whole trace's figures come from its tables
 * function and caller; a region, a database written before them, a
 * histogram, the slowest calls and the folded stacks come from a scan
 * of slice_raw.
 */
#include "regions/regions.h"
#include "stats/db.h"
#include "stats/show.h"
#include "stats/stats.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int st_parse_call(const char *s, struct st_region *r, char *err, size_t errlen)
{
	const char *hash = strrchr(s, '#');
	size_t len = hash ? (size_t)(hash - s) : strlen(s);
	int64_t n = 0;

	if (!len ||
	    (hash &&
	     (mt_parse_i64(hash + 1, 10, INT64_MIN + 1, INT64_MAX, &n) || !n)))
		return mt_err(err, errlen, -EINVAL,
			      "--between %s: expected NAME or NAME#N (N: 1 "
			      "the first call, -1 the last)",
			      s);
	if (len >= sizeof(r->name))
		return mt_err(err, errlen, -EINVAL,
			      "--between %s: name too long", s);
	memset(r, 0, sizeof(*r));
	r->kind = ST_CALL;
	r->nth = n;
	r->spec = s;
	memcpy(r->name, s, len);
	return 0;
}

int st_parse_time(const char *s, struct st_region *r, char *err, size_t errlen)
{
	struct rg_window w;
	int rc = rg_parse_window(s, &w, err, errlen);

	if (rc)
		return rc;
	memset(r, 0, sizeof(*r));
	r->kind = ST_TIME;
	r->from = w.from;
	r->to = w.to;
	r->spec = s;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Cells */

#define CELL 32

struct cells {
	char self[CELL], total[CELL], calls[CELL], inferred[CELL], p50[CELL],
		p90[CELL], p99[CELL], max[CELL], fn[512], dso[512], inl[4];
};

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p ? p : "";
}

static void dur_cell(char *buf, size_t len, double ns, bool csv, bool sign)
{
	if (csv)
		snprintf(buf, len, "%.0f", ns);
	else
		st_fmt_dur(buf, len, ns, sign);
}

static void fn_cells(struct cells *c, const struct st_fn *fn, bool csv)
{
	if (csv) {
		snprintf(c->fn, sizeof(c->fn), "%s", fn->name ? fn->name : "");
		snprintf(c->dso, sizeof(c->dso), "%s", fn->dso ? fn->dso : "");
	} else {
		snprintf(c->fn, sizeof(c->fn), "%s%s",
			 fn->name ? fn->name : "[no name]",
			 fn->inlined ? " (inlined)" : "");
		snprintf(c->dso, sizeof(c->dso), "%s", base_name(fn->dso));
	}
	snprintf(c->inl, sizeof(c->inl), "%d", fn->inlined);
}

/* A figure's cells; the percentiles "-" (CSV: empty) when no call was
 * seen whole. */
static void fig_cells(struct cells *c, const struct st_fig *f,
		      const struct st_fn *fn, bool csv)
{
	bool whole = f->calls > f->inferred;
	const uint64_t p[4] = {f->p50, f->p90, f->p99, f->max};
	char *out[4] = {c->p50, c->p90, c->p99, c->max};

	dur_cell(c->self, CELL, (double)f->self, csv, false);
	dur_cell(c->total, CELL, (double)f->total, csv, false);
	snprintf(c->calls, CELL, "%" PRIu64, f->calls);
	snprintf(c->inferred, CELL, "%" PRIu64, f->inferred);
	for (int i = 0; i < 4; i++)
		if (whole)
			dur_cell(out[i], CELL, (double)p[i], csv, false);
		else
			snprintf(out[i], CELL, "%s", csv ? "" : "-");
	fn_cells(c, fn, csv);
}

static int nomem(struct st_db *d)
{
	return st_db_fail(d, -ENOMEM, "out of memory");
}

/* A table whose rows went in (rc: st_tab_row()'s, non-zero when memory
 * ran out) printed, and freed with the ids it was ranked by. */
static int tab_done(struct st_db *d, struct st_tab *t, uint32_t *ids, int rc,
		    FILE *out, bool csv)
{
	if (!rc)
		st_tab_print(t, out, csv);
	else
		rc = nomem(d);
	st_tab_free(t);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The top functions */

static int cmp_desc(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b;
}

struct order_ctx {
	const struct st_agg *g;
	bool total;
};

static int fn_order_ctx(const void *a, const void *b, void *ctx)
{
	const struct order_ctx *o = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	int c = o->total ? cmp_desc((int64_t)o->g->fns[i].total,
				    (int64_t)o->g->fns[j].total)
			 : cmp_desc(o->g->fns[i].self, o->g->fns[j].self);

	return c ? c : (i < j ? -1 : 1);
}

/* The ids of the functions with calls, in order; *n of them. */
static uint32_t *ranked(const struct st_agg *g, bool total, size_t *n)
{
	struct order_ctx o = {g, total};
	uint32_t *ids = malloc((g->nr_fns + 1) * sizeof(*ids));

	*n = 0;
	if (!ids)
		return NULL;
	for (uint32_t i = 0; i < g->nr_fns; i++)
		if (g->fns[i].calls)
			ids[(*n)++] = i;
	qsort_r(ids, *n, sizeof(*ids), fn_order_ctx, &o);
	return ids;
}

static const char *const top_head[] = {"self",	   "self%",    "total", "calls",
				       "inferred", "p50",      "p90",	"p99",
				       "max",	   "function", "dso",	NULL};
static const char *const top_csv_head[] = {
	"name",	   "dso",    "inlined", "calls",  "inferred", "total_ns",
	"self_ns", "p50_ns", "p90_ns",	"p99_ns", "max_ns",   NULL};

static int64_t self_sum(const struct st_agg *g)
{
	int64_t s = 0;

	for (uint32_t i = 0; i < g->nr_fns; i++)
		s += g->fns[i].self;
	return s;
}

/*
 * The functions ranked, one row each: for the terminal (by self or total
 * time, limit rows, with a share of self time) or as CSV (every row, by
 * self time, exact figures).
 */
static int top_rows(struct st_db *d, const struct st_agg *g, bool total,
		    size_t limit, bool csv, FILE *out)
{
	struct st_tab t;
	size_t n;
	uint32_t *ids = ranked(g, total, &n);
	int64_t sum = self_sum(g);
	int rc = 0;

	if (!ids)
		return nomem(d);
	st_tab_init(&t, csv ? top_csv_head : top_head,
		    csv ? "" : "rrrrrrrrrll");
	for (size_t k = 0; k < n && k < limit && !rc; k++) {
		const struct st_fig *f = &g->fns[ids[k]];
		struct cells c;
		char pct[CELL];

		fig_cells(&c, f, &d->fns[ids[k]], csv);
		snprintf(pct, sizeof(pct), "%.1f%%",
			 sum > 0 ? 100.0 * (double)f->self / (double)sum : 0.0);
		rc = csv ? st_tab_row(&t, c.fn, c.dso, c.inl, c.calls,
				      c.inferred, c.total, c.self, c.p50, c.p90,
				      c.p99, c.max)
			 : st_tab_row(&t, c.self, pct, c.total, c.calls,
				      c.inferred, c.p50, c.p90, c.p99, c.max,
				      c.fn, c.dso);
	}
	return tab_done(d, &t, ids, rc, out, csv);
}

static const char *region_name(const struct st_region *r)
{
	return r && r->kind != ST_ALL ? r->spec : "the whole trace";
}

static int do_top(struct st_db *d, const struct st_opts *o, FILE *out)
{
	struct st_agg g;
	int rc = st_db_figures(d, &o->r[0], &g, false);
	uint64_t calls = 0, inferred = 0;
	size_t fns = 0;
	char sum[CELL];

	if (rc)
		goto out;
	if (o->csv) {
		rc = top_rows(d, &g, false, SIZE_MAX, true, out);
		goto out;
	}
	for (uint32_t i = 0; i < g.nr_fns; i++) {
		calls += g.fns[i].calls;
		inferred += g.fns[i].inferred;
		fns += g.fns[i].calls != 0;
	}
	st_fmt_dur(sum, sizeof(sum), (double)self_sum(&g), false);
	fprintf(out,
		"%s, %s: %" PRIu64 " calls of %zu functions, %s of self time"
		" summed over threads; %" PRIu64
		" calls inferred (cut at an edge: their times are bounds,"
		" not in the percentiles)\n\n",
		d->path, region_name(&o->r[0]), calls, fns, sum, inferred);
	fprintf(out, "By self time (time in the function itself, not in "
		     "what it called):\n");
	rc = top_rows(d, &g, false, o->limit, false, out);
	if (!rc) {
		fprintf(out, "\nBy total time (with what it called):\n");
		rc = top_rows(d, &g, true, o->limit, false, out);
	}
out:
	st_free(&g);
	return rc;
}

/* ------------------------------------------------------------------ */
/* One function: its figures, its histogram, its callers and callees */

/* A bar per power of two, from the shortest call's to the longest's. */
static int histogram(struct st_db *d, struct st_tab *csv, const uint64_t *h,
		     const struct st_fn *fn, bool use_csv, FILE *out)
{
	uint64_t most = 0;
	unsigned lo = ST_HIST, hi = 0;

	for (unsigned b = 0; b < ST_HIST; b++)
		if (h[b]) {
			lo = b < lo ? b : lo;
			hi = b;
			most = h[b] > most ? h[b] : most;
		}
	if (!most) {
		if (!use_csv)
			fprintf(out, "  no call seen whole: no histogram\n");
		return 0;
	}
	for (unsigned b = lo; b <= hi; b++) {
		double from = b ? (double)(1ull << (b - 1)) : 0,
		       to = b ? (double)(1ull << (b - 1)) * 2 : 0;
		char f[CELL], t[CELL], n[CELL];

		snprintf(n, sizeof(n), "%" PRIu64, h[b]);
		if (use_csv) {
			char fl[CELL], tl[CELL];

			snprintf(fl, sizeof(fl), "%.0f", from);
			snprintf(tl, sizeof(tl), "%.0f", to);
			if (st_tab_row(csv, "histogram", fn->name, fn->dso,
				       fn->inlined ? "1" : "0", n, "", "", "",
				       "", "", "", "", fl, tl))
				return nomem(d);
			continue;
		}
		st_fmt_dur(f, sizeof(f), from, false);
		st_fmt_dur(t, sizeof(t), to, false);
		fprintf(out, "  %9s .. %-9s %8s  ", b ? f : "0 ns", b ? t : "",
			n);
		for (uint64_t k = 0; k < (h[b] * 50 + most - 1) / most; k++)
			fputc('#', out);
		fputc('\n', out);
	}
	return 0;
}

static const char *const rel_head[] = {"calls", "inferred", "total", "self",
				       "p50",	"p99",	    "max",   NULL,
				       "dso",	NULL};

/* The callers (callee side false) or callees of fn, by total time. */
static int relations(struct st_db *d, const struct st_agg *g, uint32_t fn,
		     bool callees, size_t limit, FILE *out)
{
	const char *head[sizeof(rel_head) / sizeof(*rel_head)];
	struct st_tab t;
	uint32_t *ids = malloc((g->nr_pairs + 1) * sizeof(*ids));
	size_t n = 0;
	int rc = 0;

	if (!ids)
		return nomem(d);
	memcpy(head, rel_head, sizeof(head));
	head[7] = callees ? "callee" : "caller";
	for (size_t i = 0; i < g->nr_pairs; i++)
		if ((callees ? g->pairs[i].caller : g->pairs[i].callee) == fn)
			ids[n++] = (uint32_t)i;
	/* By total time, most first: a small list, insertion sort. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i;
		     j > 0 && g->pairs[ids[j]].fig.total >
				      g->pairs[ids[j - 1]].fig.total;
		     j--) {
			uint32_t x = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = x;
		}
	fprintf(out, "\n%s (%zu):\n", callees ? "Callees" : "Callers", n);
	if (!n) {
		free(ids);
		return 0;
	}
	st_tab_init(&t, head, "rrrrrrrll");
	for (size_t k = 0; k < n && k < limit && !rc; k++) {
		const struct st_pair *p = &g->pairs[ids[k]];
		struct cells c;

		fig_cells(&c, &p->fig, &d->fns[callees ? p->callee : p->caller],
			  false);
		rc = st_tab_row(&t, c.calls, c.inferred, c.total, c.self, c.p50,
				c.p99, c.max, c.fn, c.dso);
	}
	return tab_done(d, &t, ids, rc, out, false);
}

static const char *const func_csv_head[] = {
	"kind",	    "name",	"dso",	   "inlined", "calls",
	"inferred", "total_ns", "self_ns", "p50_ns",  "p90_ns",
	"p99_ns",   "max_ns",	"from_ns", "to_ns",   NULL};

static int func_csv_row(struct st_tab *t, const char *kind,
			const struct st_fig *f, const struct st_fn *fn)
{
	struct cells c;

	fig_cells(&c, f, fn, true);
	return st_tab_row(t, kind, c.fn, c.dso, c.inl, c.calls, c.inferred,
			  c.total, c.self, c.p50, c.p90, c.p99, c.max, "", "");
}

static int do_function(struct st_db *d, const struct st_opts *o, FILE *out)
{
	struct st_agg g = {0};
	struct st_tab csv;
	uint8_t *want = NULL;
	int rc, shown = 0;

	st_tab_init(&csv, func_csv_head, "");
	rc = st_db_named(d, o->function, &want);
	if (rc == 0)
		rc = st_db_fail(d, -ENOENT, "no function named %s",
				o->function);
	if (rc < 0)
		goto out;
	rc = st_db_figures(d, &o->r[0], &g, false);
	for (uint32_t fn = 0; !rc && fn < g.nr_fns; fn++) {
		const struct st_fig *f = &g.fns[fn];
		struct cells c;

		if (!want[fn] || !f->calls)
			continue;
		shown++;
		if (o->csv) {
			rc = func_csv_row(&csv, "function", f, &d->fns[fn]);
			for (size_t i = 0; !rc && i < g.nr_pairs; i++)
				if (g.pairs[i].callee == fn)
					rc = func_csv_row(
						&csv, "caller", &g.pairs[i].fig,
						&d->fns[g.pairs[i].caller]);
				else if (g.pairs[i].caller == fn)
					rc = func_csv_row(
						&csv, "callee", &g.pairs[i].fig,
						&d->fns[g.pairs[i].callee]);
			if (rc)
				rc = nomem(d);
			else
				rc = histogram(d, &csv, g.hist[fn], &d->fns[fn],
					       true, out);
			continue;
		}
		fig_cells(&c, f, &d->fns[fn], false);
		fprintf(out,
			"%s%s (%s), %s: %s calls (%s inferred), total %s, "
			"self %s\n  whole calls: p50 %s, p90 %s, p99 %s, "
			"max %s\n\nDuration of the whole calls:\n",
			shown > 1 ? "\n" : "", c.fn,
			d->fns[fn].dso ? d->fns[fn].dso : "no dso",
			region_name(&o->r[0]), c.calls, c.inferred, c.total,
			c.self, c.p50, c.p90, c.p99, c.max);
		rc = histogram(d, NULL, g.hist[fn], &d->fns[fn], false, out);
		if (!rc)
			rc = relations(d, &g, fn, false, o->limit, out);
		if (!rc)
			rc = relations(d, &g, fn, true, o->limit, out);
	}
	if (!rc && !shown)
		rc = st_db_fail(d, -ENOENT, "%s: no call of %s",
				region_name(&o->r[0]), o->function);
	if (!rc && o->csv)
		st_tab_print(&csv, out, true);
out:
	st_tab_free(&csv);
	st_free(&g);
	free(want);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The slowest calls */

struct slowest {
	const uint8_t *want; /* NULL: every function */
	struct st_row *v;    /* longest first */
	size_t n, limit;
};

static int keep_slow(void *ctx, const struct st_row *row)
{
	struct slowest *s = ctx;
	size_t i;

	if (s->want && !s->want[row->fn])
		return 0;
	if (s->n == s->limit && s->v[s->n - 1].dur >= row->dur)
		return 0;
	if (s->n < s->limit)
		s->n++;
	for (i = s->n - 1; i > 0 && s->v[i - 1].dur < row->dur; i--)
		s->v[i] = s->v[i - 1];
	s->v[i] = *row;
	return 0;
}

static const char *const slow_head[] = {"dur",	    "at",    "tid",
					"inferred", "stack", NULL};

static int do_slowest(struct st_db *d, const struct st_opts *o, FILE *out)
{
	struct slowest s = {NULL, NULL, 0, o->limit};
	uint8_t *want = NULL;
	struct st_tab t;
	int rc = 0;

	st_tab_init(&t, slow_head, "rrrrl");
	if (o->function) {
		rc = st_db_named(d, o->function, &want);
		if (rc == 0)
			rc = st_db_fail(d, -ENOENT, "no function named %s",
					o->function);
		if (rc < 0)
			goto out;
		s.want = want;
	}
	s.v = calloc(s.limit + 1, sizeof(*s.v));
	if (!s.v) {
		rc = nomem(d);
		goto out;
	}
	/* The table keeps each function's ST_KEPT slowest: enough for the
	 * whole trace's N slowest, of one function or of all. */
	if (d->has_slowest && o->r[0].kind == ST_ALL && s.limit <= ST_KEPT)
		rc = st_db_slowest(d, o->function, keep_slow, &s);
	else
		rc = st_db_scan(d, &o->r[0], keep_slow, &s);
	for (size_t i = 0; !rc && i < s.n; i++) {
		char dur[CELL], at[CELL], tid[CELL], *stack = NULL;

		rc = st_db_stack(d, s.v[i].id, &stack);
		if (rc)
			break;
		dur_cell(dur, CELL, (double)s.v[i].dur, o->csv, false);
		dur_cell(at, CELL, (double)(s.v[i].ts - d->first_ts), o->csv,
			 false);
		snprintf(tid, CELL, "%" PRId64, st_db_tid(d, s.v[i].track));
		rc = st_tab_row(&t, dur, at, tid, s.v[i].inferred ? "1" : "0",
				stack);
		free(stack);
		if (rc)
			rc = nomem(d);
	}
	if (!rc && !o->csv)
		fprintf(out,
			"%s, %s: the %zu slowest calls%s%s (at: from the "
			"trace's first slice)\n",
			d->path, region_name(&o->r[0]), s.n,
			o->function ? " of " : "",
			o->function ? o->function : "");
	if (!rc)
		st_tab_print(&t, out, o->csv);
out:
	st_tab_free(&t);
	free(s.v);
	free(want);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Folded stacks: "main;handle;fib N", N the ns of self time */

/* A frame's name as the folded format allows it: ';' separates frames
 * and a line ends the stack. */
static void put_frame(const struct st_fn *fn, FILE *out)
{
	const char *name = fn->name ? fn->name : "[no name]";

	for (; *name; name++)
		fputc(*name == ';' ? ':' : *name == '\n' ? ' ' : *name, out);
	if (fn->inlined)
		fputs(" (inlined)", out);
}

/* Each call path with self time, in the order the paths were found. */
static int do_folded(struct st_db *d, const struct st_opts *o, FILE *out)
{
	struct st_agg g = {0};
	uint32_t *chain = NULL;
	size_t cap = 0;
	int rc = st_db_figures(d, &o->r[0], &g, false);

	for (size_t p = 0; !rc && p < g.nr_paths; p++) {
		size_t n = 0;

		if (g.paths[p].self <= 0)
			continue;
		for (uint32_t q = (uint32_t)p; q != ST_NONE;
		     q = g.paths[q].parent) {
			if (n > g.nr_paths) {
				rc = st_db_fail(
					d, -EINVAL,
					"call path %zu: its callers run "
					"in a loop",
					p);
				break;
			}
			if (mt_grow((void **)&chain, &cap, n + 1,
				    sizeof(*chain))) {
				rc = nomem(d);
				break;
			}
			chain[n++] = q;
		}
		while (!rc && n--) {
			put_frame(&d->fns[g.paths[chain[n]].fn], out);
			fputc(n ? ';' : ' ', out);
		}
		if (!rc)
			fprintf(out, "%" PRId64 "\n", g.paths[p].self);
	}
	free(chain);
	st_free(&g);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Two parts compared, function by function */

struct delta {
	const struct st_fn *fn;
	const struct st_fig *a, *b; /* NULL where the part had no call */
	int64_t dself, dtotal;
};

static int delta_order(const void *x, const void *y)
{
	const struct delta *p = x, *q = y;
	int64_t a = p->dself < 0 ? -p->dself : p->dself,
		b = q->dself < 0 ? -q->dself : q->dself;
	int c = cmp_desc(a, b);

	if (!c)
		c = cmp_desc(p->dtotal < 0 ? -p->dtotal : p->dtotal,
			     q->dtotal < 0 ? -q->dtotal : q->dtotal);
	if (!c)
		c = strcmp(p->fn->name ? p->fn->name : "",
			   q->fn->name ? q->fn->name : "");
	return c;
}

static bool same_fn(const struct st_fn *x, const struct st_fn *y)
{
	return x->inlined == y->inlined &&
	       !strcmp(x->name ? x->name : "", y->name ? y->name : "") &&
	       !strcmp(x->dso ? x->dso : "", y->dso ? y->dso : "");
}

static uint64_t key_hash(const struct st_fn *f)
{
	return st_fn_hash(f->name, f->dso, f->inlined);
}

struct match_ctx {
	const struct st_db *d;
	const struct st_fn *want;
};

static bool match_fn(const void *ctx, uint64_t v)
{
	const struct match_ctx *m = ctx;

	return same_fn(&m->d->fns[v], m->want);
}

static const char *const cmp_head[] = {
	"d self", "self A", "self B",	"d total", "calls A", "calls B",
	"p99 A",  "p99 B",  "function", "dso",	   NULL};
static const char *const cmp_csv_head[] = {
	"name",	     "dso",	  "inlined",	"calls_a",    "calls_b",
	"self_a_ns", "self_b_ns", "total_a_ns", "total_b_ns", "p99_a_ns",
	"p99_b_ns",  "d_self_ns", "d_total_ns", NULL};

static int compare_print(struct st_db *da, struct st_db *db,
			 const struct st_agg *ga, const struct st_agg *gb,
			 const struct st_opts *o, FILE *out)
{
	static const struct st_fig none = {0};
	struct mt_hmap index = {0};
	struct delta *v = calloc(ga->nr_fns + gb->nr_fns + 1, sizeof(*v));
	uint8_t *matched = calloc(gb->nr_fns + 1, 1);
	struct st_tab t;
	size_t n = 0;
	int rc = 0;

	st_tab_init(&t, o->csv ? cmp_csv_head : cmp_head,
		    o->csv ? "" : "rrrrrrrrll");
	if (!v || !matched)
		goto nomem;
	for (uint32_t i = 0; i < gb->nr_fns; i++)
		if (gb->fns[i].calls &&
		    mt_hmap_add_ext(&index, key_hash(&db->fns[i]), i))
			goto nomem;
	for (uint32_t i = 0; i < ga->nr_fns; i++) {
		struct match_ctx m = {db, &da->fns[i]};
		uint64_t j;

		if (!ga->fns[i].calls)
			continue;
		v[n] = (struct delta){&da->fns[i], &ga->fns[i], NULL, 0, 0};
		if (mt_hmap_find_ext(&index, key_hash(&da->fns[i]), match_fn,
				     &m, &j)) {
			v[n].b = &gb->fns[j];
			matched[j] = 1;
		}
		n++;
	}
	for (uint32_t j = 0; j < gb->nr_fns; j++)
		if (gb->fns[j].calls && !matched[j])
			v[n++] = (struct delta){&db->fns[j], NULL, &gb->fns[j],
						0, 0};
	for (size_t i = 0; i < n; i++) {
		const struct st_fig *a = v[i].a ? v[i].a : &none,
				    *b = v[i].b ? v[i].b : &none;

		v[i].dself = b->self - a->self;
		v[i].dtotal = (int64_t)b->total - (int64_t)a->total;
	}
	qsort(v, n, sizeof(*v), delta_order);
	for (size_t i = 0; i < n && !rc && (o->csv || i < o->limit); i++) {
		const struct st_fig *a = v[i].a ? v[i].a : &none,
				    *b = v[i].b ? v[i].b : &none;
		char c[13][CELL];
		struct cells fc;

		fn_cells(&fc, v[i].fn, o->csv);
		dur_cell(c[0], CELL, (double)v[i].dself, o->csv, true);
		dur_cell(c[1], CELL, (double)a->self, o->csv, false);
		dur_cell(c[2], CELL, (double)b->self, o->csv, false);
		dur_cell(c[3], CELL, (double)v[i].dtotal, o->csv, true);
		snprintf(c[4], CELL, "%" PRIu64, a->calls);
		snprintf(c[5], CELL, "%" PRIu64, b->calls);
		dur_cell(c[6], CELL, (double)a->p99, o->csv, false);
		dur_cell(c[7], CELL, (double)b->p99, o->csv, false);
		if (a->calls <= a->inferred)
			snprintf(c[6], CELL, "%s", o->csv ? "" : "-");
		if (b->calls <= b->inferred)
			snprintf(c[7], CELL, "%s", o->csv ? "" : "-");
		dur_cell(c[8], CELL, (double)a->total, o->csv, false);
		dur_cell(c[9], CELL, (double)b->total, o->csv, false);
		if (o->csv)
			rc = st_tab_row(&t, fc.fn, fc.dso, fc.inl, c[4], c[5],
					c[1], c[2], c[8], c[9], c[6], c[7],
					c[0], c[3]);
		else
			rc = st_tab_row(&t, c[0], c[1], c[2], c[3], c[4], c[5],
					c[6], c[7], fc.fn, fc.dso);
		if (rc)
			goto nomem;
	}
	if (!o->csv) {
		char sa[CELL], sb[CELL], sd[CELL];
		int64_t xa = self_sum(ga), xb = self_sum(gb);

		st_fmt_dur(sa, CELL, (double)xa, false);
		st_fmt_dur(sb, CELL, (double)xb, false);
		st_fmt_dur(sd, CELL, (double)(xb - xa), true);
		fprintf(out,
			"A: %s, %s: %s\nB: %s, %s: %s\nB - A: %s of self "
			"time; by function, what explains the difference "
			"most first (d: B - A):\n",
			da->path, region_name(&o->r[0]), sa, db->path,
			region_name(o->r[1].kind != ST_ALL ? &o->r[1]
							   : &o->r[0]),
			sb, sd);
	}
	st_tab_print(&t, out, o->csv);
	goto out;
nomem:
	rc = nomem(da);
out:
	st_tab_free(&t);
	mt_hmap_free(&index);
	free(v);
	free(matched);
	return rc;
}

static int do_compare(struct st_db *da, const struct st_opts *o, FILE *out,
		      char *err, size_t errlen)
{
	struct st_db other, *db = da;
	struct st_agg ga = {0}, gb = {0};
	const struct st_region *rb = &o->r[1];
	int rc = 0;

	if (o->db[1]) {
		rc = st_db_open(&other, o->db[1], err, errlen);
		if (rc)
			return rc;
		db = &other;
		if (rb->kind == ST_ALL)
			rb = &o->r[0];
	}
	rc = st_db_figures(da, &o->r[0], &ga, false);
	if (!rc)
		rc = st_db_figures(db, rb, &gb, false);
	if (!rc)
		rc = compare_print(da, db, &ga, &gb, o, out);
	st_free(&ga);
	st_free(&gb);
	if (db != da)
		st_db_close(db);
	return rc;
}

int st_report(const struct st_opts *o, FILE *out, char *err, size_t errlen)
{
	struct st_db d;
	int rc;

	if (o->mode == ST_COMPARE && !o->db[1] && o->r[1].kind == ST_ALL)
		return mt_err(err, errlen, -EINVAL,
			      "--compare needs two databases, or two "
			      "regions (--between, --time) of one");
	rc = st_db_open(&d, o->db[0], err, errlen);
	if (rc)
		return rc;
	switch (o->mode) {
	case ST_FUNC:
		rc = do_function(&d, o, out);
		break;
	case ST_SLOWEST:
		rc = do_slowest(&d, o, out);
		break;
	case ST_COMPARE:
		rc = do_compare(&d, o, out, err, errlen);
		break;
	case ST_FOLDED:
		rc = do_folded(&d, o, out);
		break;
	default:
		rc = do_top(&d, o, out);
		break;
	}
	st_db_close(&d);
	return rc;
}
