/* SPDX-License-Identifier: MIT */
/*
 * mt-ptt-check: does mt-convert's call tree say what Intel's reference
 * decoder says?
 *
 *   mt-ptt-check --ours OURS.tsv
 *                (--ptxed NAME-ptxed.exp --lst NAME.lst [--bin NAME.bin] |
 *                 --exp NAME.exp)
 *                [--perf PERF.txt] [--name NAME] [--print]
 *
 * Both sides become one list of events, compared in order:
 *
 *   root NAME DEPTH   a frame whose start was not seen: where a segment
 *                     begins, or a caller a return climbed into
 *   call NAME DEPTH   a call (or an interrupt, a system call) entered NAME
 *   ret               a return closed a frame
 *   stop              tracing stopped ([untraced])
 *   syscall           tracing stopped at a system call ([syscall])
 *   gap               a decode gap: an overflow or a decode error
 *
 * DEPTH is the depth in the tree: 0 for the outermost frame of a segment
 * (the segment's first frame, or the outermost caller a return revealed).
 * A NAME of ? matches any name (code no label names, or a target the
 * expectation cannot know).
 *
 * Expected, from libipt's test case: ptxed's instruction flow and events
 * (NAME-ptxed.exp), with the listing (NAME.lst: where instructions are,
 * the labels) and the code (NAME.bin, by default beside the listing:
 * what each instruction is).  The wrapper makes one function per label.
 * A near or far call, INT, SYSCALL, SYSENTER and an asynchronous
 * [interrupt] (other than a transaction abort's) enter the function of
 * the next instruction; RET, RETF, IRET, SYSRET and SYSEXIT return.  A
 * call to the next instruction only reads the IP: libipt keeps no return
 * address for it, and it is no call here either.  [disabled] is a stop (a
 * syscall when the last instruction was one); a near call or return just
 * before it still happened (a direct call's callee is known from the
 * code), while a far one went where tracing is off and is the stop's
 * frame.  [overflow] and decode errors are gaps; a new segment begins with
 * the next instruction or [enabled].  Or expected from our own case:
 * NAME.exp holds the event list itself.
 *
 * Ours, from mt-convert --text (run with --no-stitch): walking the slices
 * in order, a slice flagged clipped_start is a root, an [untraced] or
 * [syscall] slice a stop, a [decode gap: ...] slice a gap, a tail slice
 * (a jump to another label) continues its frame, and any other slice is
 * a call; a function slice that ends without clipped_end, and is not
 * replaced by a tail slice, was closed by a return.
 *
 * --perf: perf script --itrace=cre -F ip,sym,flags,addr output for the same
 * capture, turned into events the same way (call, syscall, int and hw int
 * lines are calls; return, sysret and iret returns; tr end stops, after
 * the call or return it ends with; trace errors gaps), as a third
 * opinion.  Roots are left out of that comparison: perf prints branches,
 * so where its segments begin is a guess.
 *
 * Prints one line: "agree NAME", "differ NAME: first difference (counts)"
 * or "noflow NAME: ..." when ptxed printed statistics only, then with
 * --perf "perf NAME: ..." saying which side perf takes.  Exit status 0
 * agree, 1 differ, 3 no flow to compare, 2 on bad input.
 */
#include "tests/conformance/ptt_files.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128

enum ev_kind { EV_ROOT, EV_CALL, EV_RET, EV_STOP, EV_SYSCALL, EV_GAP };

static const char *const ev_names[] = {"root", "call",	  "ret",
				       "stop", "syscall", "gap"};

struct ev {
	enum ev_kind k;
	int depth;
	char name[NAME_MAX_LEN];
};

struct evlist {
	struct ev *v;
	size_t n, cap;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("mt-ptt-check: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 64;
	if (*cap < need)
		*cap = need;
	p = realloc(p, *cap * size);
	if (!p)
		die("out of memory");
	return p;
}

static void add(struct evlist *l, enum ev_kind k, const char *name, int depth)
{
	struct ev *e;

	l->v = grow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
	e = &l->v[l->n++];
	e->k = k;
	e->depth = depth;
	snprintf(e->name, sizeof(e->name), "%s", name ? name : "?");
}

static void ev_str(const struct ev *e, char *buf, size_t len)
{
	if (e->k == EV_ROOT || e->k == EV_CALL)
		snprintf(buf, len, "%s %s %d", ev_names[e->k], e->name,
			 e->depth);
	else
		snprintf(buf, len, "%s", ev_names[e->k]);
}

static void print_list(const char *title, const struct evlist *l)
{
	char buf[NAME_MAX_LEN + 32];

	printf("# %s (%zu events)\n", title, l->n);
	for (size_t i = 0; i < l->n; i++) {
		ev_str(&l->v[i], buf, sizeof(buf));
		printf("%s\n", buf);
	}
}

/* ------------------------------------------------------------------ */
/* A segment being built: levels until it closes, then depths          */

struct seg {
	bool open;
	int level, rmin;
	struct evlist ev;     /* calls with levels in depth */
	struct evlist reveal; /* revealed callers, in order of discovery */
	char root[NAME_MAX_LEN];
	bool pending_root;   /* opened at [enabled]: the next insn names it */
	bool pending_reveal; /* the last return climbed: name it next */
};

static void seg_open(struct seg *s, const char *root)
{
	s->open = true;
	s->level = 0;
	s->rmin = 0;
	s->ev.n = 0;
	s->reveal.n = 0;
	s->pending_reveal = false;
	s->pending_root = !root;
	snprintf(s->root, sizeof(s->root), "%s", root ? root : "?");
}

/* Levels to depths, roots in front: outermost revealed caller first. */
static void seg_close(struct seg *s, struct evlist *out)
{
	if (!s->open)
		return;
	for (size_t i = s->reveal.n; i-- > 0;)
		add(out, EV_ROOT, s->reveal.v[i].name,
		    (int)(s->reveal.n - 1 - i));
	add(out, EV_ROOT, s->root, -s->rmin);
	for (size_t i = 0; i < s->ev.n; i++) {
		struct ev *e = &s->ev.v[i];

		add(out, e->k, e->name,
		    e->k == EV_CALL ? e->depth - s->rmin : 0);
	}
	s->open = false;
}

static void seg_call(struct seg *s, const char *name)
{
	s->pending_root = false;
	s->level++;
	add(&s->ev, EV_CALL, name, s->level);
}

static void seg_ret(struct seg *s)
{
	s->pending_root = false;
	add(&s->ev, EV_RET, NULL, 0);
	s->level--;
	if (s->level < s->rmin) {
		s->rmin = s->level;
		add(&s->reveal, EV_ROOT, "?", 0);
		s->pending_reveal = true;
	}
}

/* The next instruction after a return that revealed a caller names it. */
static void seg_at(struct seg *s, const char *name)
{
	if (s->pending_root) {
		snprintf(s->root, sizeof(s->root), "%s", name ? name : "?");
		s->pending_root = false;
	}
	if (s->pending_reveal) {
		snprintf(s->reveal.v[s->reveal.n - 1].name,
			 sizeof(s->reveal.v[0].name), "%s", name ? name : "?");
		s->pending_reveal = false;
	}
}

/* ------------------------------------------------------------------ */
/* The listing: instructions and labels                                 */

enum iclass {
	IC_OTHER,
	IC_CALL,    /* near call */
	IC_FARCALL, /* far call, INT n, INT3, INTO */
	IC_SYSCALL, /* SYSCALL, SYSENTER, INT 80h */
	IC_RET,	    /* near return */
	IC_FARRET,  /* RETF, IRET, SYSRET, SYSEXIT */
};

struct insn {
	uint64_t addr;
	unsigned len;
	enum iclass cls;
	bool has_target; /* a direct call: target known */
	uint64_t target;
};

struct label {
	uint64_t addr;
	char name[64];
};

struct listing {
	struct insn *in;
	size_t nr_in, cap_in;
	struct label *lab;
	size_t nr_lab, cap_lab;
};

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* What the instruction in bytes b (n of them) is, for a call tree. */
static void classify(struct insn *in, const uint8_t *b, unsigned n)
{
	unsigned i = 0;
	bool opsize = false;

	in->cls = IC_OTHER;
	in->has_target = false;
	/* legacy prefixes, then REX */
	while (i < n &&
	       (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 ||
		b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36 ||
		b[i] == 0x64 || b[i] == 0x65)) {
		opsize |= b[i] == 0x66;
		i++;
	}
	if (i < n && (b[i] & 0xf0) == 0x40 && i + 1 < n)
		i++;
	if (i >= n)
		return;
	switch (b[i]) {
	case 0xe8: /* call rel */
		in->cls = IC_CALL;
		if (!opsize && i + 5 == n) {
			int32_t rel = (int32_t)((uint32_t)b[i + 1] |
						(uint32_t)b[i + 2] << 8 |
						(uint32_t)b[i + 3] << 16 |
						(uint32_t)b[i + 4] << 24);
			in->has_target = true;
			in->target = in->addr + n + (uint64_t)(int64_t)rel;
			/* A call to the next instruction reads the IP
			 * (position-independent code): libipt keeps no
			 * return address for it, and it is no call. */
			if (!rel)
				in->cls = IC_OTHER;
		}
		break;
	case 0x9a: /* call far ptr */
	case 0xcc: /* int3 */
	case 0xce: /* into */
	case 0xf1: /* int1 */
		in->cls = IC_FARCALL;
		break;
	case 0xcd: /* int n */
		in->cls =
			i + 1 < n && b[i + 1] == 0x80 ? IC_SYSCALL : IC_FARCALL;
		break;
	case 0xc2:
	case 0xc3: /* ret */
		in->cls = IC_RET;
		break;
	case 0xca:
	case 0xcb: /* retf */
	case 0xcf: /* iret */
		in->cls = IC_FARRET;
		break;
	case 0xff: /* call r/m (/2), call far m (/3) */
		if (i + 1 < n && ((b[i + 1] >> 3) & 7) == 2)
			in->cls = IC_CALL;
		else if (i + 1 < n && ((b[i + 1] >> 3) & 7) == 3)
			in->cls = IC_FARCALL;
		break;
	case 0x0f:
		if (i + 1 >= n)
			break;
		if (b[i + 1] == 0x05 ||
		    b[i + 1] == 0x34) /* syscall, sysenter */
			in->cls = IC_SYSCALL;
		else if (b[i + 1] == 0x07 || b[i + 1] == 0x35) /* sysret/exit */
			in->cls = IC_FARRET;
		break;
	default:
		break;
	}
}

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The code: BIN, or NAME.bin beside NAME.lst. */
static uint8_t *read_bin(const char *lst, const char *bin, size_t *len)
{
	char path[4096];
	size_t n = strlen(lst);
	uint8_t *buf;

	if (!bin) {
		if (n < 4 || strcmp(lst + n - 4, ".lst"))
			die("%s: name the code with --bin", lst);
		snprintf(path, sizeof(path), "%.*s.bin", (int)(n - 4), lst);
		bin = path;
	}
	buf = ptt_slurp(bin, len);
	if (!buf)
		die("%s: %s", bin, strerror(errno));
	return buf;
}

struct listing_ctx {
	struct listing *L;
	const uint8_t *code;
	size_t code_len;
};

/* One instruction (and the label it may have). */
static int listing_line(void *ctx, const struct lst_line *l)
{
	struct listing_ctx *x = ctx;
	struct listing *L = x->L;
	struct insn in = {.addr = l->addr};
	uint8_t b[16];
	unsigned nb = 0;

	for (const char *c = l->bytes;
	     isxdigit((unsigned char)c[0]) && isxdigit((unsigned char)c[1]) &&
	     nb < sizeof(b);
	     c += 2)
		b[nb++] = (uint8_t)(hexval(c[0]) << 4 | hexval(c[1]));
	if (l->off + nb <= x->code_len)
		memcpy(b, x->code + l->off, nb);
	in.len = nb;
	if (!strstr(l->bytes, "<rept>"))
		classify(&in, b, nb);
	L->in = grow(L->in, &L->cap_in, L->nr_in + 1, sizeof(*L->in));
	L->in[L->nr_in++] = in;
	if (l->label && l->label_len < 64) {
		struct label *lab;

		L->lab = grow(L->lab, &L->cap_lab, L->nr_lab + 1,
			      sizeof(*L->lab));
		lab = &L->lab[L->nr_lab++];
		lab->addr = in.addr;
		memcpy(lab->name, l->label, l->label_len);
		lab->name[l->label_len] = 0;
	}
	return 0;
}

/*
 * The listing says where each instruction is, how long it is and which
 * labels there are; the bytes come from the code itself, as the listing
 * shows relative branches before their displacements were resolved.
 */
static void read_listing(const char *path, const char *bin_path,
			 struct listing *L)
{
	struct listing_ctx x = {.L = L};
	uint64_t org = 0;
	uint8_t *code = read_bin(path, bin_path, &x.code_len);

	x.code = code;
	if (ptt_read_lst(path, &org, listing_line, &x))
		die("%s: %s", path, strerror(errno));
	free(code);
	if (L->nr_lab) /* qsort's base may not be NULL */
		qsort(L->lab, L->nr_lab, sizeof(*L->lab), cmp_label);
}

static const struct insn *insn_at(const struct listing *L, uint64_t addr)
{
	for (size_t i = 0; i < L->nr_in; i++)
		if (L->in[i].addr == addr && L->in[i].len)
			return &L->in[i];
	return NULL;
}

/* The label whose function holds addr (the last label at or below it). */
static const char *label_of(const struct listing *L, uint64_t addr)
{
	const char *name = NULL;

	for (size_t i = 0; i < L->nr_lab && L->lab[i].addr <= addr; i++)
		name = L->lab[i].name;
	return name ? name : "?";
}

/* ------------------------------------------------------------------ */
/* Expected: ptxed's output                                             */

/*
 * The transfer of the last instruction, settled by the next one: a near
 * or far call, a return, or an interrupt.  Far ones into or out of code
 * not traced (tracing stops right after them) are the stop's [syscall]
 * or [untraced] frame, not a call or return of their own.
 */
enum pend { P_NONE, P_CALL, P_FARCALL, P_RET, P_FARRET, P_ASYNC };

struct xstate {
	const struct listing *L;
	struct seg s;
	struct evlist *out;
	bool tracing;
	enum pend pend;
	const struct insn *last; /* the last instruction, NULL if unknown */
	bool aborted;		 /* [aborted]: the [interrupt] is a jump */
};

/*
 * The transfer of the last instruction ends without a next instruction
 * (tracing stopped, an interrupt came): a direct call's callee is known
 * from the code, an indirect one's is not.  A far transfer is dropped
 * (see enum pend).
 */
static void settle_unseen(struct xstate *x)
{
	if (x->pend == P_CALL)
		seg_call(&x->s, x->last && x->last->has_target
					? label_of(x->L, x->last->target)
					: "?");
	else if (x->pend == P_RET)
		seg_ret(&x->s);
	x->pend = P_NONE;
}

static void x_insn(struct xstate *x, uint64_t addr)
{
	const struct insn *in = insn_at(x->L, addr);
	const char *name = label_of(x->L, addr);

	if (!x->s.open)
		seg_open(&x->s, name);
	else if (x->pend == P_CALL || x->pend == P_FARCALL ||
		 x->pend == P_ASYNC)
		seg_call(&x->s, name);
	else if (x->pend == P_RET || x->pend == P_FARRET)
		seg_ret(&x->s);
	x->pend = P_NONE;
	seg_at(&x->s, name);
	x->tracing = true;
	x->last = in;
	if (in && in->cls == IC_CALL)
		x->pend = P_CALL;
	else if (in && (in->cls == IC_FARCALL || in->cls == IC_SYSCALL))
		x->pend = P_FARCALL;
	else if (in && in->cls == IC_RET)
		x->pend = P_RET;
	else if (in && in->cls == IC_FARRET)
		x->pend = P_FARRET;
}

static void x_gap(struct xstate *x)
{
	x->pend = P_NONE;
	seg_close(&x->s, x->out);
	add(x->out, EV_GAP, NULL, 0);
	x->tracing = false;
	x->last = NULL;
}

/* One bracketed event of ptxed, without the brackets. */
static void x_event(struct xstate *x, const char *e)
{
	/* --event:time puts the time first: "000000000000a048  disabled" */
	if (strlen(e) > 18 && isxdigit((unsigned char)e[0]) && e[16] == ' ')
		e += 18;
	if (!strncmp(e, "overflow", 8)) {
		x_gap(x);
	} else if (strstr(e, "config error")) {
		/* the decoder runs on without errata */
	} else if (strstr(e, "error:")) {
		x_gap(x);
	} else if (!strncmp(e, "disabled", 8)) {
		if (x->s.open && x->tracing) {
			bool sys = x->last && x->last->cls == IC_SYSCALL;

			settle_unseen(x);
			add(&x->s.ev, sys ? EV_SYSCALL : EV_STOP, NULL, 0);
		}
		x->tracing = false;
		x->pend = P_NONE;
	} else if (!strncmp(e, "enabled", 7) || !strncmp(e, "resumed", 7)) {
		if (!x->s.open)
			seg_open(&x->s, NULL);
		x->tracing = true;
		x->pend = P_NONE;
		x->last = NULL;
	} else if (!strncmp(e, "aborted", 7)) {
		x->aborted = true;
	} else if (!strncmp(e, "interrupt", 9)) {
		if (x->s.open) {
			settle_unseen(x);
			x->pend = x->aborted ? P_NONE : P_ASYNC;
		}
		x->aborted = false;
	}
}

/*
 * Returns 0, or 3 when the output has no instruction flow (ptxed --quiet
 * printed statistics only).
 */
static int read_ptxed(const char *path, const struct listing *L,
		      struct evlist *out)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	struct xstate x = {.L = L, .out = out};
	bool flow = false, stats = false;

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		size_t n;
		uint64_t addr;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(p, "? ", 2))
			p += 2; /* speculative, in a transaction */
		n = strlen(p);
		if (n == 16 && strspn(p, "0123456789abcdef") == 16) {
			sscanf(p, "%" SCNx64, &addr);
			x_insn(&x, addr);
			flow = true;
		} else if (n >= 2 && p[0] == '[' && p[n - 1] == ']') {
			p[n - 1] = 0;
			x_event(&x, p + 1);
			flow = true;
		} else if (!strncmp(p, "insn:", 5) ||
			   !strncmp(p, "blocks:", 7)) {
			stats = true;
		} else if (*p) {
			die("%s: cannot read: %s", path, line);
		}
	}
	fclose(f);
	/* A transfer at the very end has no destination in the output. */
	seg_close(&x.s, out);
	free(x.s.ev.v);
	free(x.s.reveal.v);
	return !flow && stats ? 3 : 0;
}

/* ------------------------------------------------------------------ */
/* Expected: our own NAME.exp                                           */

static void read_exp(const char *path, struct evlist *out)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int no = 0;

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char kind[16], name[NAME_MAX_LEN];
		int depth, n;
		size_t k;

		no++;
		line[strcspn(line, "#\n")] = 0;
		n = sscanf(line, "%15s %127s %d", kind, name, &depth);
		if (n <= 0)
			continue;
		for (k = 0; k < sizeof(ev_names) / sizeof(*ev_names); k++)
			if (!strcmp(kind, ev_names[k]))
				break;
		if (k == sizeof(ev_names) / sizeof(*ev_names) ||
		    ((k == EV_ROOT || k == EV_CALL) ? n != 3 : n != 1))
			die("%s:%d: expected root/call NAME DEPTH, ret, stop, "
			    "syscall or gap",
			    path, no);
		add(out, (enum ev_kind)k, n == 3 ? name : NULL,
		    n == 3 ? depth : 0);
	}
	fclose(f);
}

/* ------------------------------------------------------------------ */
/* Ours: mt-convert --text                                              */

struct orow {
	int depth;
	bool fn, clipped_end;
};

/* "[unknown @ 0x.. (dso)]" and the like: code without a name. */
static const char *norm_name(const char *n)
{
	return !strncmp(n, "[unknown", 8) ? "?" : n;
}

static void read_ours(const char *path, struct evlist *out)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	struct orow *st = NULL;
	size_t n = 0, cap = 0;
	bool header = true;
	unsigned tid0 = 0;

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (;;) {
		char name[1024], flags[256];
		unsigned tid, depth;
		bool eof = !fgets(line, sizeof(line), f), tail = false;
		bool cs = false, ce = false, gap = false, untr = false,
		     sys = false;

		if (!eof && header) {
			header = false;
			if (!strncmp(line, "tid\t", 4))
				continue;
		}
		if (!eof) {
			if (sscanf(line, "%u\t%u\t%1023[^\t]\t%*u\t%*u\t%255s",
				   &tid, &depth, name, flags) != 4)
				die("%s: cannot read: %s", path, line);
			if (!tid0)
				tid0 = tid;
			if (tid != tid0)
				die("%s: more than one thread", path);
			for (char *t = strtok(flags, ","); t;
			     t = strtok(NULL, ",")) {
				cs |= !strcmp(t, "clipped_start");
				ce |= !strcmp(t, "clipped_end");
				tail |= !strcmp(t, "tail");
				gap |= !strcmp(t, "gap");
				untr |= !strcmp(t, "untraced");
				sys |= !strcmp(t, "syscall");
			}
		}
		/* Frames this row closes (all, at the end). */
		while (n && (eof || st[n - 1].depth >= (int)depth)) {
			const struct orow *o = &st[--n];

			if (o->fn && !o->clipped_end &&
			    !(!eof && tail && o->depth == (int)depth))
				add(out, EV_RET, NULL, 0);
		}
		if (eof)
			break;
		if (gap)
			add(out, EV_GAP, NULL, 0);
		else if (untr)
			add(out, EV_STOP, NULL, 0);
		else if (sys)
			add(out, EV_SYSCALL, NULL, 0);
		else if (cs)
			add(out, EV_ROOT, norm_name(name), (int)depth);
		else if (!tail)
			add(out, EV_CALL, norm_name(name), (int)depth);
		st = grow(st, &cap, n + 1, sizeof(*st));
		st[n++] = (struct orow){.depth = (int)depth,
					.fn = !gap && !untr && !sys,
					.clipped_end = ce};
	}
	free(st);
	fclose(f);
}

/* ------------------------------------------------------------------ */
/* perf script --itrace=cre -F ip,sym,flags,addr                        */

static bool has_word(const char *flags, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = strstr(flags, w); p; p = strstr(p + 1, w))
		if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

/* Returns false when perf printed nothing to go by. */
static bool read_perf(const char *path, struct evlist *out)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	struct seg s = {0};
	bool any = false;

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=>"), *tok[16], to[NAME_MAX_LEN];
		char flags[256] = "", *p;
		int nt = 0;

		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "instruction trace error type")) {
			seg_close(&s, out);
			add(out, EV_GAP, NULL, 0);
			any = true;
			continue;
		}
		if (!arrow)
			continue;
		*arrow = 0;
		for (p = strtok(line, " \t"); p && nt < 16;
		     p = strtok(NULL, " \t"))
			tok[nt++] = p;
		if (nt < 3)
			continue;
		/* flags..., ip, sym */
		for (int i = 0; i < nt - 2; i++) {
			if (i)
				strcat(flags, " ");
			strncat(flags, tok[i], 32);
		}
		to[0] = 0;
		sscanf(arrow + 2, "%*s %127s", to);
		if (!to[0] || !strcmp(to, "[unknown]"))
			strcpy(to, "?");
		any = true;
		if (!s.open && !strstr(flags, "tr strt"))
			seg_open(&s, norm_name(tok[nt - 1]));
		if (strstr(flags, "tr end")) {
			/* A near call or return whose destination is not
			 * traced: perf knows a direct call's target. */
			if (s.open && has_word(flags, "call") &&
			    strcmp(to, "?"))
				seg_call(&s, to);
			else if (s.open && has_word(flags, "return"))
				seg_ret(&s);
			if (s.open)
				add(&s.ev,
				    has_word(flags, "syscall") ? EV_SYSCALL
							       : EV_STOP,
				    NULL, 0);
			if (!strstr(flags, "tr strt"))
				continue;
		}
		if (strstr(flags, "tr strt")) {
			if (!s.open)
				seg_open(&s, to);
			continue;
		}
		if (!s.open)
			seg_open(&s, norm_name(tok[nt - 1]));
		if (has_word(flags, "call") || has_word(flags, "syscall") ||
		    has_word(flags, "int")) {
			seg_call(&s, to);
		} else if (has_word(flags, "return") ||
			   has_word(flags, "sysret") ||
			   has_word(flags, "iret")) {
			int before = s.rmin;

			seg_ret(&s);
			if (s.rmin < before)
				seg_at(&s, to);
		}
	}
	fclose(f);
	seg_close(&s, out);
	free(s.ev.v);
	free(s.reveal.v);
	return any;
}

/* ------------------------------------------------------------------ */
/* Comparison                                                           */

static bool same(const struct ev *want, const struct ev *got)
{
	if (want->k != got->k)
		return false;
	if (want->k != EV_ROOT && want->k != EV_CALL)
		return true;
	return want->depth == got->depth &&
	       (!strcmp(want->name, "?") || !strcmp(want->name, got->name));
}

static void counts(const struct evlist *l, unsigned c[6])
{
	memset(c, 0, 6 * sizeof(*c));
	for (size_t i = 0; i < l->n; i++)
		c[l->v[i].k]++;
}

/* NULL when they agree, else what differs first, and the counts. */
static const char *compare(const struct evlist *want, const struct evlist *got,
			   const char *wname, const char *gname, char *buf,
			   size_t len)
{
	size_t i;
	char a[NAME_MAX_LEN + 32] = "nothing", b[NAME_MAX_LEN + 32] = "nothing";
	unsigned cw[6], cg[6];

	for (i = 0; i < want->n && i < got->n; i++)
		if (!same(&want->v[i], &got->v[i]))
			break;
	if (i == want->n && i == got->n)
		return NULL;
	if (i < want->n)
		ev_str(&want->v[i], a, sizeof(a));
	if (i < got->n)
		ev_str(&got->v[i], b, sizeof(b));
	counts(want, cw);
	counts(got, cg);
	snprintf(buf, len,
		 "event %zu: %s `%s`, %s `%s` (%s/%s: roots %u/%u calls "
		 "%u/%u rets %u/%u stops %u/%u gaps %u/%u)",
		 i + 1, wname, a, gname, b, wname, gname, cw[EV_ROOT],
		 cg[EV_ROOT], cw[EV_CALL], cg[EV_CALL], cw[EV_RET], cg[EV_RET],
		 cw[EV_STOP] + cw[EV_SYSCALL], cg[EV_STOP] + cg[EV_SYSCALL],
		 cw[EV_GAP], cg[EV_GAP]);
	return buf;
}

/*
 * The same without roots: perf prints branches, not the first instruction,
 * so where its segments begin is only a guess (the first branch's source).
 */
static void strip_roots(const struct evlist *in, struct evlist *out)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->v[i].k != EV_ROOT)
			add(out, in->v[i].k, in->v[i].name, in->v[i].depth);
}

static void usage(void)
{
	fputs("usage: mt-ptt-check --ours OURS.tsv (--ptxed NAME-ptxed.exp "
	      "--lst NAME.lst [--bin NAME.bin] | --exp NAME.exp)\n"
	      "                    [--perf PERF.txt] [--name NAME] [--print]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *ours = NULL, *ptxed = NULL, *lst = NULL, *exp = NULL;
	const char *bin = NULL;
	const char *perf = NULL, *name = "case";
	struct evlist want = {0}, got = {0}, pf = {0};
	struct listing L = {0};
	bool print = false;
	char buf[1024], buf2[1024];
	const char *d;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		const char **opt = !strcmp(argv[i], "--ours")	 ? &ours
				   : !strcmp(argv[i], "--ptxed") ? &ptxed
				   : !strcmp(argv[i], "--lst")	 ? &lst
				   : !strcmp(argv[i], "--bin")	 ? &bin
				   : !strcmp(argv[i], "--exp")	 ? &exp
				   : !strcmp(argv[i], "--perf")	 ? &perf
				   : !strcmp(argv[i], "--name")	 ? &name
								 : NULL;

		if (!strcmp(argv[i], "--print"))
			print = true;
		else if (opt && i + 1 < argc)
			*opt = argv[++i];
		else
			usage();
	}
	if (!ours || (!exp && (!ptxed || !lst)) || (exp && ptxed))
		usage();
	if (exp) {
		read_exp(exp, &want);
	} else {
		read_listing(lst, bin, &L);
		rc = read_ptxed(ptxed, &L, &want);
	}
	read_ours(ours, &got);
	if (print) {
		print_list(exp ? "expected (own case)" : "expected (ptxed)",
			   &want);
		print_list("ours (mt-convert)", &got);
	}
	if (rc == 3) {
		printf("noflow %s: ptxed printed statistics only\n", name);
	} else {
		d = compare(&want, &got, "expected", "ours", buf, sizeof(buf));
		if (d)
			printf("differ %s: %s\n", name, d);
		else
			printf("agree %s\n", name);
		rc = d ? 1 : 0;
	}
	if (perf) {
		struct evlist w = {0}, g = {0}, p = {0};
		bool any = read_perf(perf, &pf);
		const char *vs_want, *vs_ours;

		if (print)
			print_list("perf", &pf);
		strip_roots(&want, &w);
		strip_roots(&got, &g);
		strip_roots(&pf, &p);
		vs_want = compare(&w, &p, "expected", "perf", buf, sizeof(buf));
		vs_ours = compare(&g, &p, "ours", "perf", buf2, sizeof(buf2));
		if (!any)
			printf("perf %s: no output\n", name);
		else if (rc == 3)
			printf("perf %s: %s\n", name,
			       vs_ours ? vs_ours : "agrees with ours");
		else if (!vs_want && !vs_ours)
			printf("perf %s: agrees\n", name);
		else if (!vs_want)
			printf("perf %s: agrees with the expectation, not "
			       "ours\n",
			       name);
		else if (!vs_ours)
			printf("perf %s: agrees with ours, not the "
			       "expectation\n",
			       name);
		else
			printf("perf %s: agrees with neither: %s\n", name,
			       vs_want);
		free(w.v);
		free(g.v);
		free(p.v);
	}
	free(want.v);
	free(got.v);
	free(pf.v);
	free(L.in);
	free(L.lab);
	return rc;
}
