/*
 * mt-synth-check TRUTH.TSV PERF.TXT [--gaps]
 *
 * The independent check of a synthetic capture: does perf's own Intel PT
 * decoder (which shares no code with libipt) report exactly the calls and
 * returns of the truth?  PERF.TXT is the output of
 *
 *   perf script -i raw.bin --itrace=cre --ns -F tid,time,flags,ip,sym,symoff,addr
 *
 * From the truth we derive, per thread and in time order, the call events
 * (caller -> callee, for every row entered by a call) and the return events
 * (function -> caller, for every row left by its own ret), and the number
 * of syscalls.  Without gaps the two sequences must be equal; at each end
 * the trace window may cut one event.  With --gaps, after each error perf
 * reports (an overflow), the truth may skip the events that were lost.
 *
 * Prints "ok: ..." and exits 0, or explains the first difference and
 * exits 1.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_CALL, EV_RET };

struct ev {
	uint32_t tid;
	uint8_t kind;
	bool after_error; /* perf: first event after an error */
	uint64_t time;
	char *from, *to;  /* interned */
};

struct evs {
	struct ev *v;
	size_t n, cap;
};

struct row {
	uint32_t tid, depth;
	uint64_t start, end;
	char *name;
	unsigned flags;
};

enum {
	F_CLIP_START = 1,
	F_CLIP_END = 2,
	F_TAIL = 4,
	F_TAIL_OUT = 8,
	F_UNWOUND = 16,
	F_SYSCALL = 32,
};

/* A tiny intern table so names compare by pointer. */
struct names {
	char **v;
	size_t n, cap;
};

static char *intern(struct names *t, const char *s)
{
	for (size_t i = t->n; i-- > 0;)
		if (!strcmp(t->v[i], s))
			return t->v[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v)
			abort();
	}
	t->v[t->n] = strdup(s);
	if (!t->v[t->n])
		abort();
	return t->v[t->n++];
}

static void push_ev(struct evs *e, struct ev x)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4096;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		if (!e->v)
			abort();
	}
	e->v[e->n++] = x;
}

static unsigned parse_flags(const char *s)
{
	static const char *names[] = {"clipped_start", "clipped_end", "tail",
				      "tail_out",      "unwound",     "syscall"};
	unsigned f = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		for (unsigned i = 0; i < 6; i++)
			if (!strcmp(t, names[i]))
				f |= 1u << i;
	return f;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	/* A return at t precedes a call at t: a frame ends first. */
	return (int)y->kind - (int)x->kind;
}

/* Expected events from truth.tsv. */
static int load_truth(const char *path, struct names *nt, struct evs *out,
		      uint64_t *syscalls)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	struct row *rows = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "tid\t", 4)) {
		fprintf(stderr, "%s: no header line\n", path);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[512], flags[256];
		struct row r;
		unsigned long long s, e;
		if (sscanf(line, "%u\t%u\t%511s\t%llu\t%llu\t%255s", &r.tid,
			   &r.depth, name, &s, &e, flags) != 6) {
			fprintf(stderr, "%s: bad line: %s", path, line);
			fclose(f);
			free(rows);
			return -1;
		}
		r.start = s;
		r.end = e;
		r.name = intern(nt, name);
		r.flags = parse_flags(flags);
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			rows = realloc(rows, cap * sizeof(*rows));
			if (!rows)
				abort();
		}
		rows[n++] = r;
	}
	fclose(f);

	/*
	 * Rows are sorted by tid and start; the parent of a row is the
	 * nearest earlier row of the same thread one level up that is live.
	 * A stack of open rows per depth finds it.
	 */
	{
		size_t *open = calloc(4096, sizeof(size_t));
		uint32_t tid = UINT32_MAX;
		if (!open)
			abort();
		for (size_t i = 0; i < n; i++) {
			struct row *r = &rows[i];
			struct row *parent = NULL;
			if (r->tid != tid) {
				tid = r->tid;
				memset(open, 0xff, 4096 * sizeof(size_t));
			}
			if (r->depth >= 4096)
				continue;
			if (r->depth > 0 && open[r->depth - 1] != SIZE_MAX)
				parent = &rows[open[r->depth - 1]];
			if (r->flags & F_SYSCALL) {
				*syscalls += 1;
				continue;
			}
			open[r->depth] = i;
			if (!parent)
				continue;
			if (!(r->flags & (F_TAIL | F_CLIP_START)))
				push_ev(out,
					(struct ev){.tid = r->tid,
						    .kind = EV_CALL,
						    .time = r->start,
						    .from = parent->name,
						    .to = r->name});
			if (!(r->flags & (F_TAIL_OUT | F_UNWOUND | F_CLIP_END)))
				push_ev(out, (struct ev){.tid = r->tid,
							 .kind = EV_RET,
							 .time = r->end,
							 .from = r->name,
							 .to = parent->name});
		}
		free(open);
	}
	free(rows);
	qsort(out->v, out->n, sizeof(*out->v), cmp_ev);
	return 0;
}

static bool is_hex(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

static char *strip_off(char *s)
{
	char *p = strstr(s, "+0x");
	if (p)
		*p = 0;
	return s;
}

/* perf's events, in its output order (per thread, time order). */
static int load_perf(const char *path, struct names *nt, struct evs *out,
		     uint64_t *syscalls, uint64_t *errors)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t lcap = 0;
	bool err_pending[65536 / 64 * 64] = {0};

	if (!f) {
		perror(path);
		return -1;
	}
	while (getline(&line, &lcap, f) > 0) {
		char *tok[32], *save = NULL;
		int nt_ = 0, i;
		char flags[128] = "";
		uint32_t tid;
		unsigned long long sec, nsec;
		uint64_t time;
		char *from, *to;

		if (strstr(line, "instruction trace error")) {
			char *p = strstr(line, " tid ");
			(*errors)++;
			if (p)
				err_pending[strtoul(p + 5, NULL, 10) % 4096] =
					true;
			continue;
		}
		for (char *t = strtok_r(line, " \t\n", &save); t && nt_ < 32;
		     t = strtok_r(NULL, " \t\n", &save))
			tok[nt_++] = t;
		if (nt_ < 3)
			continue;
		tid = (uint32_t)strtoul(tok[0], NULL, 10);
		if (sscanf(tok[1], "%llu.%llu:", &sec, &nsec) != 2)
			continue;
		time = sec * 1000000000ull + nsec;
		for (i = 2; i < nt_ && !is_hex(tok[i]); i++) {
			strncat(flags, tok[i], sizeof(flags) - strlen(flags) - 2);
			strcat(flags, " ");
		}
		if (strstr(flags, "syscall") && strstr(flags, "tr end"))
			(*syscalls)++;
		if (strncmp(flags, "call", 4) && strncmp(flags, "return", 6))
			continue;
		/* ip sym => addr sym */
		if (i + 4 >= nt_ || strcmp(tok[i + 2], "=>")) {
			fprintf(stderr, "cannot parse perf line for tid %u\n",
				tid);
			continue;
		}
		from = intern(nt, strip_off(tok[i + 1]));
		to = intern(nt, strip_off(tok[i + 4]));
		push_ev(out, (struct ev){.tid = tid,
					 .kind = flags[0] == 'c' ? EV_CALL
								 : EV_RET,
					 .after_error = err_pending[tid % 4096],
					 .time = time,
					 .from = from,
					 .to = to});
		err_pending[tid % 4096] = false;
	}
	free(line);
	fclose(f);
	/* perf prints queues in time order; keep each thread's order. */
	{
		struct ev *tmp = malloc((out->n + 1) * sizeof(*tmp));
		size_t k = 0;
		uint32_t *tids = NULL;
		size_t ntids = 0;
		if (!tmp)
			abort();
		for (size_t a = 0; a < out->n; a++) {
			bool seen = false;
			for (size_t b = 0; b < ntids; b++)
				seen |= tids[b] == out->v[a].tid;
			if (!seen) {
				tids = realloc(tids, (ntids + 1) * 4);
				tids[ntids++] = out->v[a].tid;
			}
		}
		/* Sort thread ids, then stable-gather. */
		for (size_t a = 0; a < ntids; a++)
			for (size_t b = a + 1; b < ntids; b++)
				if (tids[b] < tids[a]) {
					uint32_t x = tids[a];
					tids[a] = tids[b];
					tids[b] = x;
				}
		for (size_t a = 0; a < ntids; a++)
			for (size_t b = 0; b < out->n; b++)
				if (out->v[b].tid == tids[a])
					tmp[k++] = out->v[b];
		memcpy(out->v, tmp, k * sizeof(*tmp));
		free(tmp);
		free(tids);
	}
	return 0;
}

static const char *kind_name(int k)
{
	return k == EV_CALL ? "call" : "return";
}

static bool same(const struct ev *a, const struct ev *b)
{
	return a->tid == b->tid && a->kind == b->kind && a->from == b->from &&
	       a->to == b->to;
}

int main(int argc, char **argv)
{
	struct names nt = {0};
	struct evs truth = {0}, perf = {0};
	uint64_t t_sys = 0, p_sys = 0, p_err = 0, skipped = 0;
	bool gaps = argc > 3 && !strcmp(argv[3], "--gaps");
	size_t i = 0, j = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: mt-synth-check TRUTH.TSV PERF.TXT "
				"[--gaps]\n");
		return 2;
	}
	if (load_truth(argv[1], &nt, &truth, &t_sys) ||
	    load_perf(argv[2], &nt, &perf, &p_sys, &p_err))
		return 2;
	if (!gaps && p_err) {
		printf("FAIL: perf reported %llu decode errors\n",
		       (unsigned long long)p_err);
		return 1;
	}
	while (i < truth.n && j < perf.n) {
		const struct ev *t = &truth.v[i], *p = &perf.v[j];
		if (same(t, p)) {
			i++, j++;
			continue;
		}
		/* A thread's first or last event may be cut by the window. */
		if (t->tid != p->tid || (i + 1 < truth.n &&
					 truth.v[i + 1].tid != t->tid)) {
			if (t->tid < p->tid || t->tid == p->tid) {
				i++;
				skipped++;
			} else {
				j++;
			}
			continue;
		}
		if (gaps && p->after_error) {
			size_t k = i;
			while (k < truth.n && k < i + 400 &&
			       truth.v[k].tid == p->tid && !same(&truth.v[k], p))
				k++;
			if (k < truth.n && same(&truth.v[k], p)) {
				skipped += k - i;
				i = k;
				continue;
			}
		}
		printf("FAIL: tid %u: event %zu of the truth is %s %s -> %s "
		       "at %llu ns; perf's event %zu is %s %s -> %s at %llu "
		       "ns\n",
		       t->tid, i, kind_name(t->kind), t->from, t->to,
		       (unsigned long long)t->time, j, kind_name(p->kind),
		       p->from, p->to, (unsigned long long)p->time);
		return 1;
	}
	/* The tail: at most a couple of events per end of each window. */
	if (truth.n - i > 2 || perf.n - j > 4) {
		printf("FAIL: %zu truth events and %zu perf events left "
		       "unmatched at the end\n",
		       truth.n - i, perf.n - j);
		return 1;
	}
	if (!gaps && skipped > 4) {
		printf("FAIL: %llu truth events missing from perf's output\n",
		       (unsigned long long)skipped);
		return 1;
	}
	if (!gaps && p_sys + 2 < t_sys) {
		printf("FAIL: truth has %llu syscalls, perf %llu\n",
		       (unsigned long long)t_sys, (unsigned long long)p_sys);
		return 1;
	}
	printf("ok: %zu calls and returns agree, %llu syscalls, %llu errors, "
	       "%llu truth events inside gaps\n",
	       j, (unsigned long long)p_sys, (unsigned long long)p_err,
	       (unsigned long long)skipped);
	for (size_t k = 0; k < nt.n; k++)
		free(nt.v[k]);
	free(nt.v);
	free(truth.v);
	free(perf.v);
	return 0;
}
