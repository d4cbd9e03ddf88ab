/* SPDX-License-Identifier: MIT */
/*
 * mt-synth-check TRUTH.TSV PERF.TXT [GAPS.TSV] [--aliases FILE]
 *
 * The independent check of a synthetic capture: does perf's own Intel PT
 * decoder (which shares no code with libipt) report exactly the calls and
 * returns of the truth?  PERF.TXT is the output of
 *
 *   perf script -i raw.bin --itrace=cre --ns -F
 * tid,time,flags,ip,sym,symoff,addr
 *
 * From the truth we derive, per thread and in time order, the call events
 * (caller -> callee, for every row entered by a call) and the return events
 * (function -> caller, for every row left by its own ret), and the
 * syscalls.  GAPS.TSV (synth/README.md) lists the injected overflows:
 * the events inside a gap are dropped from the expected sequence and one
 * overflow error takes their place, which must carry the IP where the
 * packets ran out and be followed by a `tr strt` at the resume IP.  perf's
 * sequence, errors included, must then equal the expected one, except for
 * a couple of calls at a thread's end that need no packet (TAIL_SLACK_*).
 *
 * Prints "ok: ..." and exits 0, or explains the first difference and
 * exits 1.
 */
#include "tools/treefile.h"
#include "util/util.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_ERR, EV_RET, EV_CALL, EV_SYSCALL };

/*
 * At a thread's end, at most this many calls of each list may be left
 * unmatched: a walk can end with direct calls after its last packet, which
 * no decoder can see, and a decoder may run on through direct calls past
 * the last packet.  Returns and syscalls always need a packet.
 */
#define TAIL_SLACK_TRUTH 2
#define TAIL_SLACK_PERF	 2

struct ev {
	uint32_t tid;
	uint8_t kind;
	uint64_t time;
	char *from, *to;    /* interned; NULL for errors */
	uint64_t ip;	    /* errors: where decoding stopped */
	uint64_t resume;    /* errors: the `tr strt` target that follows */
	const char *errmsg; /* perf errors: not an overflow */
};

struct evs {
	struct ev *v;
	size_t n, cap;
};

struct gap {
	uint32_t tid;
	uint64_t after, end; /* lost: after < time <= end */
	uint64_t resume;
	uint64_t stop_ip, resume_ip;
};

struct gaps {
	struct gap *v;
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
	F_SIGNAL = 64,
	F_EXEC = 128, /* a program's entry after an exec: no call */
};

/*
 * Interned names, so that names compare by pointer; each knows the
 * representative of its alias group (--aliases), itself when it has none.
 */
struct name {
	char *s;
	size_t rep;
};

struct names {
	struct name *v;
	size_t n, cap;
	struct mt_hmap index; /* a name's hash -> its index in v */
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "mt-synth-check: out of memory\n");
		exit(2);
	}
	return p;
}

struct name_key {
	const struct names *t;
	const char *s;
};

static bool same_name(const void *ctx, uint64_t i)
{
	const struct name_key *k = ctx;

	return !strcmp(k->t->v[i].s, k->s);
}

static size_t intern_idx(struct names *t, const char *s)
{
	struct name_key k = {t, s};
	uint64_t h = mt_hash_bytes(s, strlen(s)), i;

	if (mt_hmap_find_ext(&t->index, h, same_name, &k, &i))
		return (size_t)i;
	if (mt_hmap_add_ext(&t->index, h, t->n)) {
		fprintf(stderr, "mt-synth-check: out of memory\n");
		exit(2);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n].s = xrealloc(NULL, strlen(s) + 1);
	strcpy(t->v[t->n].s, s);
	t->v[t->n].rep = t->n;
	return t->n++;
}

static size_t find_rep(struct names *t, size_t i)
{
	while (t->v[i].rep != i) {
		size_t up = t->v[t->v[i].rep].rep;

		t->v[i].rep = up; /* halve the path */
		i = up;
	}
	return i;
}

/*
 * The name a function is compared under.  perf appends the symbol version
 * of a dynamic symbol ("clock_gettime@@GLIBC_2.17") where the truth has
 * the bare name; and where a binary has several names for one address
 * (ssignal and __bsd_signal), perf and the truth may choose differently:
 * --aliases lists those groups, and every name of a group compares as
 * its representative.
 */
static const char *unversioned(const char *s, char *buf, size_t len)
{
	const char *at = strchr(s, '@');

	if (!at || at == s || !strcmp(at, "@plt"))
		return s;
	snprintf(buf, len, "%.*s", (int)(at - s), s);
	return buf;
}

static char *intern(struct names *t, const char *s)
{
	char buf[1024];

	s = unversioned(s, buf, sizeof(buf));
	size_t i = find_rep(t, intern_idx(t, s)); /* t->v may move */

	return t->v[i].s;
}

/* Every name of a group ("KEY\tNAME" lines, one key per address) becomes
 * one. */
static int load_aliases(const char *path, struct names *t)
{
	FILE *f = fopen(path, "r");
	char line[2048], key[1024] = "", name[1024];
	size_t first = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t'), *nl = strchr(line, '\n');
		size_t i;

		if (!tab)
			continue;
		if (nl)
			*nl = 0;
		*tab = 0;
		i = find_rep(t, intern_idx(t, unversioned(tab + 1, name,
							  sizeof(name))));
		if (strcmp(key, line)) {
			snprintf(key, sizeof(key), "%s", line);
			first = i;
		} else if (i != first) {
			t->v[i].rep = first;
		}
	}
	fclose(f);
	return 0;
}

static void push_ev(struct evs *e, struct ev x)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4096;
		e->v = xrealloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n++] = x;
}

static unsigned parse_flags(const char *s)
{
	static const char *const names[] = {
		"clipped_start", "clipped_end", "tail",	  "tail_out",
		"unwound",	 "syscall",	"signal", "exec"};
	unsigned f = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		for (unsigned i = 0; i < 8; i++)
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
	/* At one time: a frame ends (ret) before the next begins (call). */
	return (int)x->kind - (int)y->kind;
}

static int add_gap(const char *line, void *arg)
{
	struct gaps *out = arg;
	unsigned long long fb, lb, after, end, resume, stop, rip;
	unsigned tid;

	if (sscanf(line, "%u\t%llu\t%llu\t%llu\t%llu\t%llu\t%llx\t%llx", &tid,
		   &fb, &lb, &after, &end, &resume, &stop, &rip) != 8)
		return TF_BAD;
	if (out->n == out->cap) {
		out->cap = out->cap ? out->cap * 2 : 64;
		out->v = xrealloc(out->v, out->cap * sizeof(*out->v));
	}
	out->v[out->n++] = (struct gap){.tid = tid,
					.after = after,
					.end = end,
					.resume = resume,
					.stop_ip = stop,
					.resume_ip = rip};
	return 0;
}

static int load_gaps(const char *path, struct gaps *out)
{
	return tf_each_line(path, add_gap, out);
}

static const struct gap *in_gap(const struct gaps *g, uint32_t tid, uint64_t t)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].tid == tid && g->v[i].after < t && t <= g->v[i].end)
			return &g->v[i];
	return NULL;
}

/* Adds x to out unless a gap swallowed it; counts what was swallowed. */
static void push_truth(struct evs *out, const struct gaps *g, struct ev x,
		       uint64_t *lost)
{
	if (in_gap(g, x.tid, x.time)) {
		(*lost)++;
		return;
	}
	push_ev(out, x);
}

/* truth.tsv's rows as they are read. */
struct truth_rows {
	struct names *nt;
	struct row *v;
	size_t n, cap, maxdepth;
};

static int add_truth_row(const char *line, void *arg)
{
	struct truth_rows *t = arg;
	char name[512], flags[256];
	struct row r;
	unsigned long long s, e;

	/* Names are tab-delimited: C++ names hold spaces. */
	if (sscanf(line, "%u\t%u\t%511[^\t]\t%llu\t%llu\t%255s", &r.tid,
		   &r.depth, name, &s, &e, flags) != 6)
		return TF_BAD;
	r.start = s;
	r.end = e;
	r.name = intern(t->nt, name);
	r.flags = parse_flags(flags);
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4096;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n++] = r;
	if (r.depth > t->maxdepth)
		t->maxdepth = r.depth;
	return 0;
}

/* Expected events from truth.tsv and the gaps. */
static int load_truth(const char *path, const struct gaps *g, struct names *nt,
		      struct evs *out, uint64_t *lost)
{
	struct truth_rows t = {.nt = nt};
	struct row *rows;
	size_t n, maxdepth;
	size_t *open;
	uint32_t tid = UINT32_MAX;

	if (tf_each_line(path, add_truth_row, &t)) {
		free(t.v);
		return -1;
	}
	rows = t.v;
	n = t.n;
	maxdepth = t.maxdepth;

	/*
	 * Rows are sorted by tid and start; the parent of a row is the
	 * nearest earlier row of the same thread one level up that is live.
	 * A stack of open rows per depth finds it.
	 */
	open = xrealloc(NULL, (maxdepth + 1) * sizeof(size_t));
	for (size_t i = 0; i < n; i++) {
		struct row *r = &rows[i];
		struct row *parent = NULL;
		char *ret_to = NULL;
		if (r->tid != tid) {
			tid = r->tid;
			memset(open, 0xff, (maxdepth + 1) * sizeof(size_t));
		}
		if (r->depth > 0 && open[r->depth - 1] != SIZE_MAX)
			parent = &rows[open[r->depth - 1]];
		if (r->flags & F_SYSCALL) {
			push_truth(out, g,
				   (struct ev){.tid = r->tid,
					       .kind = EV_SYSCALL,
					       .time = r->start,
					       .from = parent ? parent->name
							      : NULL},
				   lost);
			continue;
		}
		/* The kernel delivering a signal: perf shows a `tr end
		 * async` and the `tr strt` in the handler, no call. */
		if (!strcmp(r->name, "[untraced]"))
			continue;
		open[r->depth] = i;
		if (!parent)
			continue;
		/* A handler returns into the signal trampoline, the row that
		 * takes its place when it ends. */
		if (r->flags & F_SIGNAL)
			for (size_t k = i + 1; k < n && rows[k].tid == r->tid &&
					       rows[k].start <= r->end;
			     k++)
				if (rows[k].depth == r->depth &&
				    rows[k].start == r->end) {
					ret_to = rows[k].name;
					break;
				}
		if (!(r->flags & (F_TAIL | F_CLIP_START | F_SIGNAL | F_EXEC)))
			push_truth(out, g,
				   (struct ev){.tid = r->tid,
					       .kind = EV_CALL,
					       .time = r->start,
					       .from = parent->name,
					       .to = r->name},
				   lost);
		if (!(r->flags & (F_TAIL_OUT | F_UNWOUND | F_CLIP_END)))
			push_truth(out, g,
				   (struct ev){.tid = r->tid,
					       .kind = EV_RET,
					       .time = r->end,
					       .from = r->name,
					       .to = ret_to ? ret_to
							    : parent->name},
				   lost);
	}
	free(open);
	free(rows);
	/*
	 * One overflow error per gap, after everything before it and before
	 * everything after it: end is later than every swallowed event.
	 */
	for (size_t i = 0; i < g->n; i++)
		push_ev(out, (struct ev){.tid = g->v[i].tid,
					 .kind = EV_ERR,
					 .time = g->v[i].end,
					 .ip = g->v[i].stop_ip,
					 .resume = g->v[i].resume_ip});
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

/*
 * "instruction trace error type 1 time S.NS cpu C pid P tid T ip 0xIP
 * code 7: Overflow packet"
 */
static int parse_error(const char *line, struct ev *e)
{
	const char *p;
	unsigned long long sec, nsec;
	uint64_t v;

	memset(e, 0, sizeof(*e));
	e->kind = EV_ERR;
	p = strstr(line, " time ");
	if (p && sscanf(p + 6, "%llu.%llu", &sec, &nsec) == 2)
		e->time = sec * 1000000000ull + nsec;
	p = strstr(line, " tid ");
	if (!p)
		return -1;
	p += 5;
	if (mt_scan_u64(&p, 10, UINT32_MAX, &v))
		return -1;
	e->tid = (uint32_t)v;
	p = strstr(line, " ip ");
	if (p) {
		p += 4;
		if (mt_scan_u64(&p, 16, UINT64_MAX, &e->ip))
			return -1;
	}
	if (!strstr(line, "code 7: Overflow packet"))
		e->errmsg = "not an overflow";
	return 0;
}

/* perf's events, in its output order (per thread, time order). */
static int load_perf(const char *path, struct names *nt, struct evs *out,
		     uint64_t *errors)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t lcap = 0;
	/*
	 * Per thread: the index of its error on the line before, if any;
	 * only a `tr strt` right after an error is where it resumed.
	 */
	uint32_t *tids = NULL;
	size_t *pending = NULL, ntids = 0;
	char why[1024];
	int rc = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (!rc && getline(&line, &lcap, f) > 0) {
		char *tok[32], *save = NULL;
		int ntok = 0, i = 0;
		char flags[128] = "", from_sym[1024] = "";
		char *to_sym = NULL, *to_addr = NULL;
		uint32_t tid;
		unsigned long long sec, nsec;
		size_t k, err;
		struct ev e = {0};
		uint64_t v;

		bool is_err = strstr(line, "instruction trace error");

		if (is_err) {
			if (parse_error(line, &e)) {
				fprintf(stderr, "cannot parse: %s", line);
				continue;
			}
			(*errors)++;
			tid = e.tid;
		} else {
			/*
			 * "tid time: flags ip sym+off => addr sym+off": split
			 * at the arrow, since a C++ name holds spaces.
			 */
			char *arrow = strstr(line, " => "), *nl;

			if (!arrow)
				continue;
			*arrow = 0;
			to_sym = arrow + 4;
			if ((nl = strchr(to_sym, '\n')))
				*nl = 0;
			while (*to_sym == ' ')
				to_sym++;
			to_addr = to_sym;
			to_sym += strcspn(to_sym, " ");
			if (*to_sym)
				*to_sym++ = 0;
			while (*to_sym == ' ')
				to_sym++;
			for (char *t = strtok_r(line, " \t", &save);
			     t && ntok < 32; t = strtok_r(NULL, " \t", &save))
				tok[ntok++] = t;
			if (ntok < 3)
				continue;
			if (mt_parse_arg("thread id", tok[0], 10, UINT32_MAX,
					 &v, why, sizeof(why))) {
				fprintf(stderr, "mt-synth-check: %s: %s\n",
					path, why);
				rc = -1;
				break;
			}
			tid = (uint32_t)v;
			if (sscanf(tok[1], "%llu.%llu:", &sec, &nsec) != 2)
				continue;
			e.tid = tid;
			e.time = sec * 1000000000ull + nsec;
			for (i = 2; i < ntok && !is_hex(tok[i]); i++) {
				strncat(flags, tok[i],
					sizeof(flags) - strlen(flags) - 2);
				strcat(flags, " ");
			}
			if (i + 1 >= ntok) {
				fprintf(stderr,
					"cannot parse perf line for tid %u\n",
					tid);
				continue;
			}
			/* The name is the rest, spaces and all. */
			from_sym[0] = 0;
			for (int k2 = i + 1; k2 < ntok; k2++) {
				strncat(from_sym, tok[k2],
					sizeof(from_sym) - strlen(from_sym) -
						2);
				if (k2 + 1 < ntok)
					strcat(from_sym, " ");
			}
		}
		for (k = 0; k < ntids && tids[k] != tid; k++)
			;
		if (k == ntids) {
			ntids++;
			tids = xrealloc(tids, ntids * sizeof(*tids));
			pending = xrealloc(pending, ntids * sizeof(*pending));
			tids[k] = tid;
			pending[k] = SIZE_MAX;
		}
		err = pending[k];
		pending[k] = SIZE_MAX;
		if (is_err) {
			push_ev(out, e);
			pending[k] = out->n - 1;
			continue;
		}
		if (!strncmp(flags, "tr strt", 7)) {
			if (err != SIZE_MAX &&
			    mt_parse_arg("address", to_addr, 16, UINT64_MAX,
					 &out->v[err].resume, why,
					 sizeof(why))) {
				fprintf(stderr, "mt-synth-check: %s: %s\n",
					path, why);
				rc = -1;
			}
			continue;
		}
		if (strstr(flags, "syscall") && strstr(flags, "tr end")) {
			e.kind = EV_SYSCALL;
			e.from = intern(nt, strip_off(from_sym));
		} else if (!strncmp(flags, "call", 4) ||
			   !strncmp(flags, "return", 6) ||
			   !strncmp(flags, "syscall", 7) ||
			   !strncmp(flags, "sysret", 6)) {
			/* A traced kernel: the system call and its return
			 * nest like a call (mt-synth --kernel). */
			e.kind = flags[0] == 'c' || flags[4] == 'a' ? EV_CALL
								    : EV_RET;
			e.from = intern(nt, strip_off(from_sym));
			e.to = intern(nt, strip_off(to_sym));
		} else {
			continue;
		}
		push_ev(out, e);
	}
	free(line);
	fclose(f);
	free(pending);
	if (rc) {
		free(tids);
		return rc;
	}
	/* perf prints queues in time order; keep each thread's order. */
	{
		struct ev *tmp = xrealloc(NULL, (out->n + 1) * sizeof(*tmp));
		size_t n = 0;
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
					tmp[n++] = out->v[b];
		if (n) /* out->v is NULL without events */
			memcpy(out->v, tmp, n * sizeof(*tmp));
		free(tmp);
		free(tids);
	}
	return 0;
}

static const char *kind_name(int k)
{
	static const char *const names[] = {"overflow error", "return", "call",
					    "syscall"};
	return names[k];
}

/*
 * perf 6.1 names the entries of some PLTs after the symbol before them,
 * "_init" (a .plt of few entries), as "@plt" (libc's IRELATIVE ones), or
 * not at all; and it numbers the entries in .rela.plt order, which
 * libc's IRELATIVE relocations disorder, so that its name for one entry
 * can be another's (objdump agrees with the truth).  The truth names each
 * "name@plt" after its own relocation.  A PLT entry matches a PLT entry.
 */
static bool same_fn(const char *truth, const char *perf)
{
	size_t n = truth ? strlen(truth) : 0;

	if (truth == perf)
		return true;
	size_t m = perf ? strlen(perf) : 0;

	if (!truth || !perf || n < 4 || strcmp(truth + n - 4, "@plt"))
		return false;
	return !strcmp(perf, "_init") || !strcmp(perf, "[unknown]") ||
	       (m >= 4 && !strcmp(perf + m - 4, "@plt"));
}

static bool same(const struct ev *a, const struct ev *b)
{
	if (a->tid != b->tid || a->kind != b->kind)
		return false;
	if (a->kind == EV_ERR)
		return !a->errmsg && !b->errmsg && a->ip == b->ip &&
		       a->resume == b->resume;
	return same_fn(a->from, b->from) && same_fn(a->to, b->to);
}

static void describe(const char *who, size_t idx, const struct ev *e)
{
	if (!e) {
		printf("%s has nothing left", who);
		return;
	}
	printf("%s event %zu is %s ", who, idx, kind_name(e->kind));
	if (e->kind == EV_ERR)
		printf("at ip %#llx resuming at %#llx%s%s",
		       (unsigned long long)e->ip, (unsigned long long)e->resume,
		       e->errmsg ? ", " : "", e->errmsg ? e->errmsg : "");
	else
		printf("%s -> %s", e->from ? e->from : "?",
		       e->to ? e->to : "?");
	printf(" at %llu ns", (unsigned long long)e->time);
}

struct tally {
	uint64_t matched, syscalls, errors, tail_truth, tail_perf;
	int64_t dmin, dmax; /* perf's time minus the truth's, ns */
	uint64_t *err;	    /* |perf's time - the truth's| of each event */
	size_t nerr, cap;
};

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

enum timing { T_NONE, T_TSC, T_MTC, T_CYC };

/*
 * How far perf's time (--ns) of a call, return or syscall may be from the
 * truth's.  The synthetic machine's CTC tick is 100 TSC ticks at 2.4 GHz
 * (synth/README.md), so an MTC period is 2^mtc_period * 41.67 ns.
 * perf stamps an event with the time of the last timing packet it has
 * read when it decodes it (synth/README.md, findings):
 *  - tsc: TSC packets come only in PSB+, so perf's time is the last PSB's
 *    and lags by up to the time between PSBs, which depends on how dense
 *    the trace is; only "never late" is checked;
 *  - mtc: the last MTC (a CTC period boundary) before the event, so up to
 *    one period early; the MTCs of boundaries inside a gap are missing, so
 *    after one it may be as early as a period before the gap began (and
 *    before the gap before that, if it came within a period); never late;
 *  - cyc: the CYC before the packet that decides the event, or before
 *    the last packet ahead of it (a direct call needs none); a TNT's CYC
 *    times its first branch (SDM, "Cycle Packet Semantics"), so a later
 *    branch in it reads early; a TNT never spans a CTC period boundary
 *    (an MTC flushes it), so at most one period early; never late.
 * SLACK_NS covers the instructions between an event that needs no packet
 * (a direct call) and the next packet, and perf's rounding; observed: 4.
 */
#define SLACK_NS 50

struct timecheck {
	enum timing mode;
	double period_ns;
	const struct gaps *gaps;
};

static bool time_ok(const struct timecheck *tc, const struct ev *t, int64_t d,
		    int64_t *lo, int64_t *hi)
{
	int64_t period = (int64_t)tc->period_ns;

	*lo = INT64_MIN;
	*hi = SLACK_NS;
	switch (tc->mode) {
	case T_NONE:
		return true;
	case T_TSC:
		break;
	case T_MTC: {
		/*
		 * The last period boundary before x whose MTC was written is
		 * in (x - period, x] unless a gap overlaps that stretch;
		 * then look before the gap.  Gaps are in time order.
		 */
		uint64_t x = t->time;
		for (size_t k = tc->gaps->n; k-- > 0;) {
			const struct gap *g = &tc->gaps->v[k];
			if (g->tid == t->tid && g->after < x &&
			    g->resume + period + SLACK_NS > x)
				x = g->after;
		}
		*lo = -(int64_t)(t->time - x) - period - SLACK_NS;
		break;
	}
	case T_CYC:
		*lo = -period - SLACK_NS;
		break;
	}
	return d >= *lo && d <= *hi;
}

/*
 * Compare one thread: t[0..nt) expected, p[0..np) perf.  Returns 0 or 1
 * after printing the first difference.
 */
static int check_thread(const struct ev *t, size_t nt, const struct ev *p,
			size_t np, const struct timecheck *tc, struct tally *ty)
{
	size_t i = 0, j = 0;

	for (; i < nt && j < np; i++, j++) {
		if (same(&t[i], &p[j])) {
			int64_t d = (int64_t)(p[j].time - t[i].time), lo, hi;
			if (t[i].kind != EV_ERR) {
				if (!time_ok(tc, &t[i], d, &lo, &hi)) {
					printf("FAIL: tid %u: ", t[i].tid);
					describe("the truth's", i, &t[i]);
					printf(", perf's time is %+lld ns off, "
					       "outside [%lld, %lld]\n",
					       (long long)d, (long long)lo,
					       (long long)hi);
					return 1;
				}
				ty->dmin = d < ty->dmin ? d : ty->dmin;
				ty->dmax = d > ty->dmax ? d : ty->dmax;
				if (ty->nerr == ty->cap) {
					size_t c = ty->cap ? 2 * ty->cap : 1024;
					uint64_t *n = realloc(ty->err,
							      c * sizeof(*n));
					if (!n)
						return 1;
					ty->err = n;
					ty->cap = c;
				}
				ty->err[ty->nerr++] =
					(uint64_t)(d < 0 ? -d : d);
			}
			ty->matched++;
			ty->syscalls += t[i].kind == EV_SYSCALL;
			ty->errors += t[i].kind == EV_ERR;
			continue;
		}
		/* Near the end, the rest is the tail check's business. */
		if (nt - i <= TAIL_SLACK_TRUTH && np - j <= TAIL_SLACK_PERF)
			break;
		printf("FAIL: tid %u: ", t[i].tid);
		describe("the truth's", i, &t[i]);
		printf("; ");
		describe("perf's", j, &p[j]);
		printf("\n");
		return 1;
	}
	for (size_t k = i; k < nt; k++)
		if (t[k].kind != EV_CALL || nt - i > TAIL_SLACK_TRUTH) {
			printf("FAIL: tid %u: perf ends early: ", t[k].tid);
			describe("the truth's", k, &t[k]);
			printf(" is missing (%zu left)\n", nt - i);
			return 1;
		}
	for (size_t k = j; k < np; k++)
		if (p[k].kind != EV_CALL || np - j > TAIL_SLACK_PERF) {
			printf("FAIL: tid %u: perf has more: ", p[k].tid);
			describe("perf's", k, &p[k]);
			printf(" (%zu left)\n", np - j);
			return 1;
		}
	ty->tail_truth += nt - i;
	ty->tail_perf += np - j;
	return 0;
}

int main(int argc, char **argv)
{
	struct names nt = {0};
	struct evs truth = {0}, perf = {0};
	struct gaps gaps = {0};
	struct tally ty = {.dmin = INT64_MAX, .dmax = INT64_MIN};
	struct timecheck tc = {.mode = T_NONE, .gaps = &gaps};
	const char *files[3] = {NULL, NULL, NULL};
	unsigned nfiles = 0, mtc_period = 3;
	uint64_t p_err = 0, lost = 0;
	size_t i = 0, j = 0;
	int rc = 0;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--timing") && a + 1 < argc) {
			/* enum timing's, after T_NONE */
			static const char *const modes[] = {"tsc", "mtc",
							    "cyc"};
			char why[128];
			int k = mt_parse_word("--timing", argv[++a], modes, 3,
					      why, sizeof(why));

			if (k < 0)
				goto usage;
			tc.mode = (enum timing)(T_TSC + k);
		} else if (!strcmp(argv[a], "--aliases") && a + 1 < argc) {
			if (load_aliases(argv[++a], &nt))
				return 2;
		} else if (!strcmp(argv[a], "--mtc-period") && a + 1 < argc) {
			uint64_t v;
			char why[256];

			if (mt_parse_arg("--mtc-period", argv[++a], 10, 15, &v,
					 why, sizeof(why))) {
				fprintf(stderr, "mt-synth-check: %s\n", why);
				return 2;
			}
			mtc_period = (unsigned)v;
		} else if (argv[a][0] != '-' && nfiles < 3) {
			files[nfiles++] = argv[a];
		} else {
			goto usage;
		}
	}
	if (nfiles < 2)
		goto usage;
	tc.period_ns = (double)(100u << mtc_period) / 2.4;
	if ((files[2] && load_gaps(files[2], &gaps)) ||
	    load_truth(files[0], &gaps, &nt, &truth, &lost) ||
	    load_perf(files[1], &nt, &perf, &p_err))
		return 2;
	/* Both lists are grouped by thread, threads in ascending order. */
	while (!rc && (i < truth.n || j < perf.n)) {
		uint32_t tid = i < truth.n ? truth.v[i].tid : UINT32_MAX;
		size_t ie = i, je = j;
		if (j < perf.n && perf.v[j].tid < tid)
			tid = perf.v[j].tid;
		while (ie < truth.n && truth.v[ie].tid == tid)
			ie++;
		while (je < perf.n && perf.v[je].tid == tid)
			je++;
		if (ie == i || je == j) {
			printf("FAIL: tid %u: %zu truth events, %zu perf "
			       "events\n",
			       tid, ie - i, je - j);
			rc = 1;
			break;
		}
		rc = check_thread(truth.v + i, ie - i, perf.v + j, je - j, &tc,
				  &ty);
		i = ie;
		j = je;
	}
	if (!rc && ty.errors != p_err) {
		printf("FAIL: perf reported %llu errors, %zu gaps matched\n",
		       (unsigned long long)p_err, gaps.n);
		rc = 1;
	}
	if (!rc)
		printf("ok: %llu events agree (%llu syscalls, %llu overflow "
		       "errors for %zu gaps, %llu truth events lost in "
		       "gaps); unmatched calls at the ends: %llu of the "
		       "truth, %llu of perf; perf's times %+lld..%+lld ns "
		       "off\n",
		       (unsigned long long)ty.matched,
		       (unsigned long long)ty.syscalls,
		       (unsigned long long)ty.errors, gaps.n,
		       (unsigned long long)lost,
		       (unsigned long long)ty.tail_truth,
		       (unsigned long long)ty.tail_perf, (long long)ty.dmin,
		       (long long)ty.dmax);
	if (!rc && ty.nerr) {
		qsort(ty.err, ty.nerr, sizeof(*ty.err), cmp_u64);
		printf("perf's time error over %zu calls, returns and "
		       "syscalls: median %llu ns, p99 %llu ns, worst %llu "
		       "ns\n",
		       ty.nerr, (unsigned long long)ty.err[ty.nerr / 2],
		       (unsigned long long)ty.err[ty.nerr * 99 / 100],
		       (unsigned long long)ty.err[ty.nerr - 1]);
	}
	free(ty.err);
	for (size_t k = 0; k < nt.n; k++)
		free(nt.v[k].s);
	free(nt.v);
	mt_hmap_free(&nt.index);
	free(truth.v);
	free(perf.v);
	free(gaps.v);
	return rc;
usage:
	fprintf(stderr, "usage: mt-synth-check TRUTH.TSV PERF.TXT [GAPS.TSV] "
			"[--timing tsc|mtc|cyc] [--mtc-period N] "
			"[--aliases FILE]\n");
	return 2;
}
