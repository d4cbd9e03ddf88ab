/*
 * writers/perfetto: models written, then read back two ways.  protoc
 * decodes the plain output against tests/proto/perfetto_subset.proto (the
 * framing and field numbers); our own reader below replays the packets the
 * way Perfetto's importer does (sequences, incremental state, interning,
 * the incremental clock, BEGIN/END nesting per track, compressed batches)
 * and the slices it rebuilds must be exactly the model's.
 */
#include "model/model.h"
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"
#include "util/util.h"
#include "writers/writers.h"

#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

/* Files in dir whose name contains part. */
static int count_files(const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strstr(e->d_name, part))
			n++;
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Building models                                                     */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static uint32_t str_id(struct mt_trace *t, const char *s)
{
	uint32_t id = mt_str_intern(&t->strs, s);

	if (id == MT_NONE) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return id;
}

/* Appends a slice; parent is found from depth and the thread's stack. */
struct builder {
	struct mt_thread *th;
	uint32_t stack[4096];
	uint32_t sp;
};

static struct mt_slice *add(struct mt_trace *t, struct builder *b,
			    uint32_t depth, uint64_t ts, uint64_t dur,
			    const char *name, uint32_t flags)
{
	struct mt_slice s = {0}, *r;

	b->sp = depth;
	s.ts = ts;
	s.dur = dur;
	s.name = str_id(t, name);
	s.depth = depth;
	s.parent = depth ? b->stack[depth - 1] : MT_NONE;
	s.flags = flags;
	s.addr = 0x400000 + (uint64_t)s.name * 0x40;
	s.dso = str_id(t, depth % 2 ? "/usr/lib/libc.so.6" : "/bin/prog");
	r = mt_thread_push(b->th, &s);
	if (!r) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	b->stack[depth] = (uint32_t)(b->th->nr_slices - 1);
	return r;
}

static void add_hit(struct mt_trace *t, uint64_t mark, uint64_t ts,
		    uint32_t tid, const char *name, int64_t arg)
{
	struct mt_hit h = {0};

	h.ts = ts;
	h.mark_start = mark;
	h.pid = 100;
	h.tid = tid;
	h.ip = 0x401234 + ts;
	h.arg = arg;
	h.name = str_id(t, name);
	if (!mt_trace_add_hit(t, &h))
		exit(2);
}

/*
 * Two processes, three threads, nesting, zero-duration slices (leaves,
 * parents, siblings meeting end to start), a decode gap, flags, names
 * that need escaping, a thread with no slices, overlapping hits.
 */
static void model_basic(struct mt_trace *t)
{
	struct builder b = {0};
	const uint64_t T = 1000000000ull;

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 100, "/bin/prog --flag") ||
	    !mt_trace_add_process(t, 200, "other"))
		exit(2);

	b.th = mt_trace_add_thread(t, 100, 100, "main-thread");
	add(t, &b, 0, T + 0, 1000, "main", MT_SLICE_INFERRED_START);
	add(t, &b, 1, T + 10, 100, "foo", 0);
	add(t, &b, 2, T + 20, 0, "leaf0", 0);
	add(t, &b, 2, T + 20, 30, "bar", MT_SLICE_TAIL);
	add(t, &b, 3, T + 50, 0, "zero-parent", 0);
	add(t, &b, 4, T + 50, 0, "zero-child", 0);
	add(t, &b, 2, T + 50, 60, "after-bar", 0);
	add(t, &b, 1, T + 110, 200, "[decode gap: overflow]", MT_SLICE_GAP);
	add(t, &b, 1, T + 310, 400, "joined \"quoted\" \\ back\nline",
	    MT_SLICE_JOINED | MT_SLICE_DEPTH_GUESSED);
	add(t, &b, 2, T + 310, 400, "na\xc3\xafve \xe2\x86\x92 utf8",
	    MT_SLICE_INFERRED_END);
	add(t, &b, 0, T + 1000, 5, "main", 0);
	add(t, &b, 0, T + 2000, 0, "last-zero", 0);

	b.th = mt_trace_add_thread(t, 100, 101, "worker");
	add(t, &b, 0, T + 5, 50, "main", 0);
	add(t, &b, 1, T + 6, 4, "foo", 0);
	add(t, &b, 1, T + 10, 4, "foo", 0);
	add(t, &b, 0, T + 55, 10, "", 0);
	b.th->slices[b.th->nr_slices - 1].addr = 0;
	b.th->slices[b.th->nr_slices - 1].dso = 0;

	b.th = mt_trace_add_thread(t, 200, 200, "");
	b.th = mt_trace_add_thread(t, 200, 201, "busy");
	/* Groups of three: a root, a child, a zero-length grandchild. */
	for (int i = 0; i < 200; i++) {
		uint64_t pos = (uint64_t)(i % 3), g = (uint64_t)(i / 3);

		add(t, &b, (uint32_t)pos, T + 30 * g + pos,
		    pos == 2 ? 0 : 10 - 5 * pos, i % 5 ? "loop" : "loop-5", 0);
	}

	add_hit(t, T + 100, T + 900, 100, "mt_take_snapshot", -1);
	add_hit(t, 0, T + 950, 101, "mt_take_snapshot", 42);
	add_hit(t, T + 500, T + 1200, 100, "", 7);
	add_hit(t, T + 600, T + 700, 100, "nested", 0);
	add_hit(t, T + 600, T + 600, 100, "zero", 0);
}

/*
 * One thread: a call chain n deep whose frames end 10 ns apart, then
 * leaves and siblings at the bottom, half way up and near the top.
 */
static void model_deep(struct mt_trace *t, uint32_t n)
{
	struct builder b = {0};
	const uint64_t T = 5000000ull;
	char name[32];

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 7, "deep"))
		exit(2);
	b.th = mt_trace_add_thread(t, 7, 7, "deep");
	for (uint32_t d = 0; d < n; d++) {
		snprintf(name, sizeof(name), "f%u", d % 37);
		add(t, &b, d, T + d, n + 10 * (uint64_t)(n - d) - d, name, 0);
	}
	add(t, &b, n, T + n, 0, "leaf", 0);
	add(t, &b, n, T + n, 1, "leaf", 0);
	add(t, &b, n - 1, T + n + 11, 3, "sib", 0);
	add(t, &b, n / 2, T + n + 10 * (uint64_t)(n - n / 2) + 2, 1, "mid", 0);
	add(t, &b, 1, T + n + 10 * (uint64_t)(n - 1) + 1, 2, "top", 0);
	if (!mt_trace_add_hit(t, &(struct mt_hit){.ts = T + 10, .tid = 7}))
		exit(2);
}

/* Random nesting up to 40 deep, 2000 names of about 30 characters, a few
 * dsos, 1-300 ns between events: what a real capture looks like. */
static void model_random(struct mt_trace *t, size_t nslices, uint32_t nthreads,
			 uint64_t seed)
{
	struct rng r = {seed};
	uint32_t names[2000], dsos[5];
	char buf[64];

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 1000, "/usr/bin/server --port 80"))
		exit(2);
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "ns::module%02d::function_%d_impl",
			 i % 50, i);
		names[i] = str_id(t, buf);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(buf, sizeof(buf), "/usr/lib/x86_64-linux-gnu/lib%d.so",
			 i);
		dsos[i] = str_id(t, buf);
	}
	for (uint32_t k = 0; k < nthreads; k++) {
		struct mt_thread *th;
		uint32_t stack[40], sp = 0;
		uint64_t ts = 1000000;
		size_t want = nslices / nthreads;

		snprintf(buf, sizeof(buf), "worker-%u", k);
		th = mt_trace_add_thread(t, 1000, 1000 + k, buf);
		if (!th)
			exit(2);
		while (th->nr_slices < want || sp) {
			uint64_t x = rng_next(&r);

			if (th->nr_slices < want && sp < 40 &&
			    (sp == 0 || x % 100 < 50)) {
				uint32_t n = (uint32_t)((x >> 8) % 2000);
				struct mt_slice s = {0};

				/* Skew: some functions are called far more
				 * often than others. */
				if ((x >> 20) % 4)
					n %= 64;
				s.ts = ts;
				s.name = names[n];
				s.depth = sp;
				s.parent = sp ? stack[sp - 1] : MT_NONE;
				s.addr = 0x7f3a12000000ull + n * 0x80;
				s.dso = dsos[n % 5];
				s.flags = x % 1000 == 0 ? MT_SLICE_TAIL : 0;
				if (!mt_thread_push(th, &s))
					exit(2);
				stack[sp++] = (uint32_t)(th->nr_slices - 1);
			} else {
				struct mt_slice *s = &th->slices[stack[--sp]];

				s->dur = ts - s->ts;
			}
			ts += 1 + (x >> 40) % 300;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Reading it back                                                     */

struct rd_open {
	uint64_t ts;
	uint32_t name; /* in the reader's string table */
	uint32_t dso;
	uint64_t addr, ip;
	int64_t arg, tid;
	uint32_t flags;
};

struct rd_track {
	uint64_t uuid, parent;
	uint32_t name;
	int is_thread;
	uint32_t tid;
	struct rd_open *open;
	size_t nr_open, cap_open, max_open;
};

struct rd_seq {
	uint32_t id;
	int valid; /* incremental state cleared once */
	uint32_t def_clock;
	uint64_t def_track;
	uint64_t clock64; /* running value of the incremental clock */
	int clock64_incr;
	uint64_t last_ts;
	uint32_t *names, *annots, *strs; /* iid -> string id */
	size_t cap_names, cap_annots, cap_strs;
};

struct rd_slice {
	uint64_t track;
	uint64_t ts, dur;
	uint32_t depth;
	int instant;
	struct rd_open o;
};

struct rd {
	struct mt_strtab strs;
	struct rd_seq *seqs;
	size_t nr_seqs, cap_seqs;
	struct rd_track *tracks;
	size_t nr_tracks, cap_tracks;
	struct rd_slice *slices;
	size_t nr_slices, cap_slices;
	uint64_t packets, bundles, max_bundle;
	int errors;
	char first_error[256];
};

static void rd_error(struct rd *r, const char *msg, uint64_t v)
{
	if (!r->errors++)
		snprintf(r->first_error, sizeof(r->first_error),
			 "%s (%" PRIu64 ")", msg, v);
}

struct cur {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t cur_varint(struct cur *c)
{
	uint64_t v = 0;

	for (int sh = 0; sh < 64; sh += 7) {
		if (c->p >= c->end) {
			c->bad = 1;
			return 0;
		}
		v |= (uint64_t)(*c->p & 0x7f) << sh;
		if (!(*c->p++ & 0x80))
			return v;
	}
	c->bad = 1;
	return 0;
}

/* Next field: 1, or 0 at the end, or -1 on malformed input. */
static int cur_field(struct cur *c, uint32_t *field, uint64_t *v,
		     struct cur *sub)
{
	uint64_t key, len;

	if (c->p >= c->end)
		return 0;
	key = cur_varint(c);
	*field = (uint32_t)(key >> 3);
	sub->p = sub->end = NULL;
	sub->bad = 0;
	switch (key & 7) {
	case 0:
		*v = cur_varint(c);
		break;
	case 1:
		if (c->end - c->p < 8)
			return -1;
		memcpy(v, c->p, 8);
		c->p += 8;
		break;
	case 2:
		len = cur_varint(c);
		if (c->bad || len > (uint64_t)(c->end - c->p))
			return -1;
		sub->p = c->p;
		sub->end = c->p + len;
		c->p += len;
		*v = len;
		break;
	case 5:
		if (c->end - c->p < 4)
			return -1;
		*v = 0;
		memcpy(v, c->p, 4);
		c->p += 4;
		break;
	default:
		return -1;
	}
	return c->bad ? -1 : 1;
}

static uint32_t rd_str(struct rd *r, const struct cur *s)
{
	uint32_t id = mt_str_intern_len(&r->strs, (const char *)s->p,
					(size_t)(s->end - s->p));

	if (id == MT_NONE)
		exit(2);
	return id;
}

static struct rd_seq *rd_seq(struct rd *r, uint32_t id)
{
	for (size_t i = 0; i < r->nr_seqs; i++)
		if (r->seqs[i].id == id)
			return &r->seqs[i];
	if (mt_grow((void **)&r->seqs, &r->cap_seqs, r->nr_seqs + 1,
		    sizeof(*r->seqs)))
		exit(2);
	memset(&r->seqs[r->nr_seqs], 0, sizeof(r->seqs[0]));
	r->seqs[r->nr_seqs].id = id;
	return &r->seqs[r->nr_seqs++];
}

static struct rd_track *rd_track(struct rd *r, uint64_t uuid)
{
	for (size_t i = r->nr_tracks; i-- > 0;)
		if (r->tracks[i].uuid == uuid)
			return &r->tracks[i];
	return NULL;
}

static void iid_set(uint32_t **a, size_t *cap, uint64_t iid, uint32_t sid)
{
	size_t old = *cap;

	if (mt_grow((void **)a, cap, iid + 1, sizeof(**a)))
		exit(2);
	if (*cap > old)
		memset(*a + old, 0xff, (*cap - old) * sizeof(**a));
	(*a)[iid] = sid;
}

static uint32_t iid_get(uint32_t *a, size_t cap, uint64_t iid)
{
	return iid < cap ? a[iid] : MT_NONE;
}

/* An {iid = 1, name = 2} entry of InternedData. */
static void rd_interned_entry(struct rd *r, struct cur *c, uint32_t **a,
			      size_t *cap)
{
	struct cur sub, name = {0};
	uint64_t v, iid = 0;
	uint32_t f;
	int k;

	while ((k = cur_field(c, &f, &v, &sub)) == 1) {
		if (f == 1)
			iid = v;
		else if (f == 2)
			name = sub;
	}
	if (k < 0 || !iid || !name.p)
		rd_error(r, "bad interned entry", iid);
	else
		iid_set(a, cap, iid, rd_str(r, &name));
}

static void rd_interned(struct rd *r, struct rd_seq *s, struct cur *c)
{
	struct cur sub;
	uint64_t v;
	uint32_t f;

	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f == 2)
			rd_interned_entry(r, &sub, &s->names, &s->cap_names);
		else if (f == 3)
			rd_interned_entry(r, &sub, &s->annots, &s->cap_annots);
		else if (f == 29)
			rd_interned_entry(r, &sub, &s->strs, &s->cap_strs);
		else
			rd_error(r, "unexpected interned field", f);
	}
}

static void rd_clock_snapshot(struct rd *r, struct rd_seq *s, struct cur *c)
{
	struct cur sub, cs;
	uint64_t v, id, ts, incr;
	uint32_t f, g;

	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f != 1)
			continue;
		id = ts = incr = 0;
		while (cur_field(&sub, &g, &v, &cs) == 1) {
			if (g == 1)
				id = v;
			else if (g == 2)
				ts = v;
			else if (g == 3)
				incr = v;
		}
		if (id == 64) {
			s->clock64 = ts;
			s->clock64_incr = (int)incr;
		} else if (id != 6) {
			rd_error(r, "unexpected clock", id);
		}
	}
}

static void rd_defaults(struct rd *r, struct rd_seq *s, struct cur *c)
{
	struct cur sub, t;
	uint64_t v;
	uint32_t f, g;

	(void)r;
	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f == 58)
			s->def_clock = (uint32_t)v;
		else if (f == 11)
			while (cur_field(&sub, &g, &v, &t) == 1)
				if (g == 11)
					s->def_track = v;
	}
}

static void rd_descriptor(struct rd *r, struct cur *c)
{
	struct rd_track tr = {0};
	struct cur sub, t;
	uint64_t v;
	uint32_t f, g;

	tr.name = MT_NONE;
	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f == 1)
			tr.uuid = v;
		else if (f == 5)
			tr.parent = v;
		else if (f == 2)
			tr.name = rd_str(r, &sub);
		else if (f == 4) {
			uint64_t pid = 0, tid = 0;

			tr.is_thread = 1;
			while (cur_field(&sub, &g, &v, &t) == 1) {
				if (g == 1)
					pid = v;
				else if (g == 2)
					tid = v;
				else if (g == 5)
					tr.name = rd_str(r, &t);
			}
			if (!pid || !tid)
				rd_error(r, "thread without pid/tid", tid);
			tr.tid = (uint32_t)tid;
		} else if (f == 3) {
			uint64_t pid = 0;

			while (cur_field(&sub, &g, &v, &t) == 1)
				if (g == 1)
					pid = v;
			if (!pid)
				rd_error(r, "process without pid", 0);
		}
	}
	if (!tr.uuid || rd_track(r, tr.uuid)) {
		rd_error(r, "track uuid missing or repeated", tr.uuid);
		return;
	}
	if (mt_grow((void **)&r->tracks, &r->cap_tracks, r->nr_tracks + 1,
		    sizeof(*r->tracks)))
		exit(2);
	r->tracks[r->nr_tracks++] = tr;
}

static void rd_annotation(struct rd *r, struct rd_seq *s, struct cur *c,
			  struct rd_open *o)
{
	struct cur sub;
	uint64_t v, name_iid = 0, val = 0;
	uint32_t f, vf = 0, name;
	const char *n;

	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f == 1)
			name_iid = v;
		else {
			vf = f;
			val = v;
		}
	}
	name = iid_get(s->annots, s->cap_annots, name_iid);
	if (name == MT_NONE) {
		rd_error(r, "unknown annotation name iid", name_iid);
		return;
	}
	n = mt_str(&r->strs, name);
	if (!strcmp(n, "address") && vf == 7)
		o->addr = val;
	else if (!strcmp(n, "ip") && vf == 7)
		o->ip = val;
	else if (!strcmp(n, "arg") && vf == 4)
		o->arg = (int64_t)val;
	else if (!strcmp(n, "tid") && vf == 4)
		o->tid = (int64_t)val;
	else if (!strcmp(n, "dso") && vf == 17) {
		o->dso = iid_get(s->strs, s->cap_strs, val);
		if (o->dso == MT_NONE)
			rd_error(r, "unknown string iid", val);
	} else if (vf == 2 && val == 1) {
		static const char *const fl[] = {"inferred_start",
						 "inferred_end", "joined",
						 "tail", "depth_guessed"};
		static const uint32_t fv[] = {
			MT_SLICE_INFERRED_START, MT_SLICE_INFERRED_END,
			MT_SLICE_JOINED, MT_SLICE_TAIL, MT_SLICE_DEPTH_GUESSED};

		for (int i = 0; i < 5; i++)
			if (!strcmp(n, fl[i]))
				o->flags |= fv[i];
	} else {
		rd_error(r, "unexpected annotation", vf);
	}
}

static void rd_push_slice(struct rd *r, uint64_t track, uint64_t ts,
			  uint64_t dur, uint32_t depth, int instant,
			  const struct rd_open *o)
{
	if (mt_grow((void **)&r->slices, &r->cap_slices, r->nr_slices + 1,
		    sizeof(*r->slices)))
		exit(2);
	r->slices[r->nr_slices++] = (struct rd_slice){
		.track = track,
		.ts = ts,
		.dur = dur,
		.depth = depth,
		.instant = instant,
		.o = *o,
	};
}

static void rd_event(struct rd *r, struct rd_seq *s, struct cur *c, uint64_t ts)
{
	struct rd_open o = {0};
	struct rd_track *tr;
	struct cur sub;
	uint64_t v, type = 0, track = s->def_track, name_iid = 0;
	uint32_t f;

	o.name = o.dso = MT_NONE;
	o.ts = ts;
	while (cur_field(c, &f, &v, &sub) == 1) {
		if (f == 9)
			type = v;
		else if (f == 10)
			name_iid = v;
		else if (f == 23)
			o.name = rd_str(r, &sub);
		else if (f == 11)
			track = v;
		else if (f == 4)
			rd_annotation(r, s, &sub, &o);
		else
			rd_error(r, "unexpected track event field", f);
	}
	if (name_iid) {
		o.name = iid_get(s->names, s->cap_names, name_iid);
		if (o.name == MT_NONE)
			rd_error(r, "unknown name iid", name_iid);
	}
	tr = rd_track(r, track);
	if (!tr) {
		rd_error(r, "event on an undescribed track", track);
		return;
	}
	switch (type) {
	case 1:
		if (o.name == MT_NONE)
			rd_error(r, "BEGIN without a name", ts);
		if (mt_grow((void **)&tr->open, &tr->cap_open, tr->nr_open + 1,
			    sizeof(*tr->open)))
			exit(2);
		tr->open[tr->nr_open++] = o;
		if (tr->nr_open > tr->max_open)
			tr->max_open = tr->nr_open;
		break;
	case 2:
		if (!tr->nr_open) {
			rd_error(r, "END with nothing open", ts);
			break;
		}
		tr->nr_open--;
		rd_push_slice(r, track, tr->open[tr->nr_open].ts,
			      ts - tr->open[tr->nr_open].ts,
			      (uint32_t)tr->nr_open, 0, &tr->open[tr->nr_open]);
		break;
	case 3:
		rd_push_slice(r, track, ts, 0, (uint32_t)tr->nr_open, 1, &o);
		if (tr->nr_open + 1 > tr->max_open)
			tr->max_open = tr->nr_open + 1;
		break;
	default:
		rd_error(r, "unexpected event type", type);
	}
}

static void rd_trace(struct rd *r, struct cur *c, int nested);

static void rd_compressed(struct rd *r, struct cur *c)
{
	size_t cap = 1 << 20, len = 0;
	uint8_t *out = malloc(cap);
	z_stream z = {0};
	struct cur in;
	int zr;

	r->bundles++;
	if ((uint64_t)(c->end - c->p) > r->max_bundle)
		r->max_bundle = (uint64_t)(c->end - c->p);
	if (!out || inflateInit(&z) != Z_OK)
		exit(2);
	z.next_in = (uint8_t *)c->p;
	z.avail_in = (uInt)(c->end - c->p);
	do {
		if (len == cap) {
			uint8_t *n = realloc(out, cap *= 2);

			if (!n)
				exit(2);
			out = n;
		}
		z.next_out = out + len;
		z.avail_out = (uInt)(cap - len);
		zr = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
	} while (zr == Z_OK);
	if (zr != Z_STREAM_END || z.avail_in)
		rd_error(r, "bad zlib stream", (uint64_t)zr);
	else {
		in.p = out;
		in.end = out + len;
		in.bad = 0;
		rd_trace(r, &in, 1);
	}
	inflateEnd(&z);
	free(out);
}

static void rd_packet(struct rd *r, struct cur *c, int nested)
{
	struct cur sub, interned = {0}, defaults = {0}, snapshot = {0},
			event = {0}, desc = {0}, comp = {0};
	uint64_t v, ts = 0, flags = 0, seq_id = 0, clock_id = 0;
	int has_ts = 0;
	struct rd_seq *s = NULL;
	uint32_t f;
	int k;

	r->packets++;
	while ((k = cur_field(c, &f, &v, &sub)) == 1) {
		switch (f) {
		case 8:
			ts = v, has_ts = 1;
			break;
		case 58:
			clock_id = v;
			break;
		case 10:
			seq_id = v;
			break;
		case 13:
			flags = v;
			break;
		case 12:
			interned = sub;
			break;
		case 59:
			defaults = sub;
			break;
		case 6:
			snapshot = sub;
			break;
		case 11:
			event = sub;
			break;
		case 60:
			desc = sub;
			break;
		case 50:
			comp = sub;
			break;
		default:
			rd_error(r, "unexpected packet field", f);
		}
	}
	if (k < 0) {
		rd_error(r, "malformed packet", r->packets);
		return;
	}
	if (comp.p) {
		if (nested)
			rd_error(r, "compressed packets inside a bundle", 0);
		else
			rd_compressed(r, &comp);
		return;
	}
	if (desc.p) {
		rd_descriptor(r, &desc);
		return;
	}
	if (!seq_id) {
		rd_error(r, "packet without a sequence id", r->packets);
		return;
	}
	s = rd_seq(r, (uint32_t)seq_id);
	/* The importer's order: flags, defaults, interned data, clocks. */
	if (flags & 1) {
		s->valid = 1;
		s->def_clock = 0;
		s->def_track = 0;
		s->clock64_incr = 0;
		free(s->names);
		free(s->annots);
		free(s->strs);
		s->names = s->annots = s->strs = NULL;
		s->cap_names = s->cap_annots = s->cap_strs = 0;
	}
	if ((flags & 2) && !s->valid) {
		rd_error(r, "needs incremental state before it was cleared",
			 seq_id);
		return;
	}
	if (defaults.p)
		rd_defaults(r, s, &defaults);
	if (interned.p)
		rd_interned(r, s, &interned);
	if (snapshot.p)
		rd_clock_snapshot(r, s, &snapshot);
	if (has_ts) {
		if (!clock_id)
			clock_id = s->def_clock;
		if (clock_id == 64) {
			if (!s->clock64_incr)
				rd_error(r, "clock 64 is not incremental", 0);
			s->clock64 += ts;
			ts = s->clock64;
		}
		if (ts < s->last_ts)
			rd_error(r, "time went backwards on a sequence", ts);
		s->last_ts = ts;
	}
	if (event.p) {
		if (!has_ts)
			rd_error(r, "event without a timestamp", r->packets);
		if (!(flags & 2))
			rd_error(r, "event without SEQ_NEEDS_INCREMENTAL_STATE",
				 r->packets);
		rd_event(r, s, &event, ts);
	}
}

static void rd_trace(struct rd *r, struct cur *c, int nested)
{
	struct cur sub;
	uint64_t v;
	uint32_t f;
	int k;

	while ((k = cur_field(c, &f, &v, &sub)) == 1) {
		if (f != 1) {
			rd_error(r, "Trace field other than packet", f);
			continue;
		}
		rd_packet(r, &sub, nested);
	}
	if (k < 0)
		rd_error(r, "malformed trace", 0);
}

static void rd_free(struct rd *r)
{
	for (size_t i = 0; i < r->nr_seqs; i++) {
		free(r->seqs[i].names);
		free(r->seqs[i].annots);
		free(r->seqs[i].strs);
	}
	for (size_t i = 0; i < r->nr_tracks; i++)
		free(r->tracks[i].open);
	free(r->seqs);
	free(r->tracks);
	free(r->slices);
	mt_strtab_free(&r->strs);
}

/* Reads path into r; returns 0 when it read without errors. */
static int rd_file(struct rd *r, const char *path)
{
	struct cur c;
	size_t len;
	uint8_t *d = slurp(path, &len);

	memset(r, 0, sizeof(*r));
	mt_strtab_init(&r->strs);
	if (!d) {
		rd_error(r, "cannot read the file", 0);
		return -1;
	}
	if (!len || d[0] != 0x0a)
		rd_error(r, "does not start with a packet (0x0a)", len);
	c.p = d;
	c.end = d + len;
	c.bad = 0;
	rd_trace(r, &c, 0);
	free(d);
	for (size_t i = 0; i < r->nr_tracks; i++)
		if (r->tracks[i].nr_open)
			rd_error(r, "slice never ended", r->tracks[i].uuid);
	return r->errors ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Comparing with the model                                            */

struct rec {
	uint32_t tid, level; /* level UINT32_MAX: a snapshot hit */
	uint64_t ts, dur;
	uint32_t depth;
	const char *name, *dso;
	uint64_t addr;
	uint32_t flags;
	int64_t arg;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c;

#define ORDER(f)                                                               \
	if (x->f != y->f)                                                      \
		return x->f < y->f ? -1 : 1;
	ORDER(tid) ORDER(level) ORDER(ts) ORDER(depth) ORDER(dur);
	ORDER(addr) ORDER(flags) ORDER(arg);
#undef ORDER
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->dso, y->dso);
}

static const char *hits_prefix = "Snapshot symbol hits";

/* The records of what was read back, levels from the track names. */
static struct rec *rd_records(struct rd *r, uint32_t max_depth, size_t *n)
{
	struct rec *v = calloc(r->nr_slices + 1, sizeof(*v));

	if (!v)
		exit(2);
	for (size_t i = 0; i < r->nr_slices; i++) {
		const struct rd_slice *s = &r->slices[i];
		const struct rd_track *tr = rd_track(r, s->track), *th = tr;
		const char *tn =
			tr->name == MT_NONE ? "" : mt_str(&r->strs, tr->name);
		struct rec *e = &v[i];
		const char *p;

		e->ts = s->ts;
		e->dur = s->dur;
		e->depth = s->depth;
		e->name = mt_str(&r->strs, s->o.name);
		e->dso = s->o.dso == MT_NONE ? "" : mt_str(&r->strs, s->o.dso);
		e->addr = s->o.addr;
		e->flags = s->o.flags;
		if (!strncmp(tn, hits_prefix, strlen(hits_prefix))) {
			e->level = UINT32_MAX;
			e->tid = (uint32_t)s->o.tid;
			e->addr = s->o.ip;
			e->arg = s->o.arg;
			e->depth = 0;
			e->flags = (uint32_t)s->instant;
			continue;
		}
		if (!tr->is_thread) {
			unsigned long d;

			th = rd_track(r, tr->parent);
			p = strstr(tn, " (depth ");
			if (!th || !th->is_thread || !p ||
			    sscanf(p, " (depth %lu+)", &d) != 1 ||
			    d % max_depth) {
				rd_error(r, "bad continuation track", tr->uuid);
				continue;
			}
			e->level = (uint32_t)(d / max_depth);
		}
		e->tid = th->tid;
	}
	*n = r->nr_slices;
	return v;
}

static struct rec *model_records(const struct mt_trace *t, uint32_t max_depth,
				 size_t *n)
{
	size_t total = t->nr_hits, k = 0;
	struct rec *v;

	for (size_t i = 0; i < t->nr_threads; i++)
		total += t->threads[i].nr_slices;
	v = calloc(total + 1, sizeof(*v));
	if (!v)
		exit(2);
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		for (size_t j = 0; j < th->nr_slices; j++) {
			const struct mt_slice *s = &th->slices[j];
			struct rec *e = &v[k++];

			e->tid = th->tid;
			e->level = s->depth / max_depth;
			e->depth = s->depth % max_depth;
			e->ts = s->ts;
			e->dur = s->dur;
			e->name = mt_str(&t->strs, s->name);
			e->dso = mt_str(&t->strs, s->dso);
			e->addr = s->addr;
			e->flags = s->flags &
				   (MT_SLICE_INFERRED_START |
				    MT_SLICE_INFERRED_END | MT_SLICE_JOINED |
				    MT_SLICE_TAIL | MT_SLICE_DEPTH_GUESSED);
		}
	}
	for (size_t i = 0; i < t->nr_hits; i++) {
		const struct mt_hit *h = &t->hits[i];
		struct rec *e = &v[k++];
		int instant = !h->mark_start || h->mark_start >= h->ts;
		const char *name = mt_str(&t->strs, h->name);

		e->tid = h->tid;
		e->level = UINT32_MAX;
		e->ts = instant ? h->ts : h->mark_start;
		e->dur = h->ts - e->ts;
		e->name = *name ? name : "snapshot";
		e->dso = "";
		e->addr = h->ip;
		e->arg = h->arg;
		e->flags = (uint32_t)instant;
	}
	*n = k;
	return v;
}

static void print_rec(const char *what, const struct rec *e)
{
	fprintf(stderr,
		"    %s: tid %u level %u ts %" PRIu64 " dur %" PRIu64
		" depth %u name '%s' dso '%s' addr %#" PRIx64 " flags %#x\n",
		what, e->tid, e->level, e->ts, e->dur, e->depth, e->name,
		e->dso, e->addr, e->flags);
}

/*
 * Reads path back and checks it against t: a clean replay, nesting within
 * max_depth on every track, and exactly the model's slices.
 */
static void check_file(struct check_state *st, const struct mt_trace *t,
		       const char *path, uint32_t max_depth, int compressed)
{
	struct rd r;
	struct rec *a, *b;
	size_t na, nb, i;

	CHECKF(st, rd_file(&r, path) == 0, "%s: %d errors, first: %s", path,
	       r.errors, r.first_error);
	for (i = 0; i < r.nr_tracks; i++)
		CHECKF(st, r.tracks[i].max_open <= max_depth,
		       "track %" PRIu64 " nests %zu deep", r.tracks[i].uuid,
		       r.tracks[i].max_open);
	if (compressed)
		CHECKF(st, r.bundles > 0 && r.max_bundle < (512u << 10),
		       "%" PRIu64 " bundles, largest %" PRIu64, r.bundles,
		       r.max_bundle);
	else
		CHECK(st, r.bundles == 0);

	a = rd_records(&r, max_depth, &na);
	b = model_records(t, max_depth, &nb);
	qsort(a, na, sizeof(*a), rec_cmp);
	qsort(b, nb, sizeof(*b), rec_cmp);
	CHECKF(st, na == nb, "read %zu slices, model has %zu", na, nb);
	for (i = 0; i < na && i < nb; i++)
		if (rec_cmp(&a[i], &b[i]))
			break;
	CHECKF(st, i == (na < nb ? na : nb), "slice %zu differs", i);
	if (i < na && i < nb) {
		print_rec("read ", &a[i]);
		print_rec("model", &b[i]);
	}
	free(a);
	free(b);
	rd_free(&r);
}

static void write_ok(struct check_state *st, const struct mt_trace *t,
		     const char *path, uint32_t max_depth, int no_compress,
		     struct wr_stats *ws)
{
	struct wr_perfetto_opts o = {.no_compress = no_compress,
				     .max_depth = max_depth};
	char err[512] = "";
	int rc = wr_perfetto(t, path, &o, ws, err, sizeof(err));

	CHECKF(st, rc == 0, "wr_perfetto: %d: %s", rc, err);
}

static size_t model_slices(const struct mt_trace *t)
{
	size_t n = t->nr_hits;

	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	return n;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void test_basic(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/basic%d.pftrace", dir, nc);
		memset(&ws, 0xff, sizeof(ws));
		write_ok(st, &t, path, 0, nc, &ws);
		check_file(st, &t, path, 512, !nc);
		CHECK(st, ws.slices == model_slices(&t));
		CHECK(st, ws.tracks == 4);
		CHECK(st, ws.bytes > 0);
	}
	/* A small limit splits even this model across tracks. */
	snprintf(path, sizeof(path), "%s/basic-d2.pftrace", dir);
	write_ok(st, &t, path, 2, 0, &ws);
	check_file(st, &t, path, 2, 1);
	CHECK(st, count_files(dir, ".tmp.") == 0);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static void test_deep(struct check_state *st)
{
	static const uint32_t limits[] = {0, 512, 4, 1, 700};
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	model_deep(&t, 2000);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		uint32_t md = limits[i] ? limits[i] : 512;

		for (int nc = 0; nc < 2; nc++) {
			snprintf(path, sizeof(path), "%s/deep%zu-%d.pftrace",
				 dir, i, nc);
			write_ok(st, &t, path, limits[i], nc, &ws);
			check_file(st, &t, path, md, !nc);
			/* The deepest slices are at depth 2000. */
			CHECKF(st, ws.tracks == 2000 / md + 1,
			       "max_depth %u: %u tracks", md, ws.tracks);
		}
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static void test_empty(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	mt_trace_init(&t);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/empty%d.pftrace", dir, nc);
		write_ok(st, &t, path, 0, nc, &ws);
		CHECK(st, ws.bytes == 0 && ws.slices == 0 && ws.tracks == 0);
	}
	/* Threads with no slices: just their descriptors. */
	if (!mt_trace_add_thread(&t, 3, 3, "idle"))
		exit(2);
	write_ok(st, &t, path, 0, 0, &ws);
	CHECK(st, rd_file(&r, path) == 0);
	CHECK(st, r.nr_tracks == 1 && r.nr_slices == 0);
	rd_free(&r);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/*
 * A model that breaks its own rules (siblings overlapping, a child
 * outliving its parent, a start before the previous one, a depth that
 * jumps) must still give a file that replays cleanly: balanced, nested,
 * time never going backwards.  Its slices are not expected to survive
 * exactly.
 */
static void test_bad_model(struct check_state *st)
{
	struct mt_trace t;
	struct builder b = {0};
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	mt_trace_init(&t);
	b.th = mt_trace_add_thread(&t, 1, 1, "bad");
	if (!b.th)
		exit(2);
	add(&t, &b, 0, 100, 50, "root", 0);
	add(&t, &b, 1, 110, 100, "outlives-parent", 0);
	add(&t, &b, 1, 120, 10, "overlaps-sibling", 0);
	add(&t, &b, 1, 90, 5, "starts-too-early", 0);
	add(&t, &b, 3, 130, 5, "depth-jumps", 0);
	add(&t, &b, 0, 125, 1, "second-root-early", 0);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/bad%d.pftrace", dir, nc);
		write_ok(st, &t, path, 2, nc, &ws);
		CHECKF(st, rd_file(&r, path) == 0, "%d errors, first: %s",
		       r.errors, r.first_error);
		CHECK(st, r.nr_slices == 6);
		for (size_t i = 0; i < r.nr_tracks; i++)
			CHECK(st, r.tracks[i].max_open <= 2);
		rd_free(&r);
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static void test_errors(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws = {0};
	char dir[64], path[160], err[512];
	int rc;

	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);

	/* No such directory. */
	snprintf(path, sizeof(path), "%s/missing/out.pftrace", dir);
	err[0] = 0;
	rc = wr_perfetto(&t, path, NULL, &ws, err, sizeof(err));
	CHECK(st, rc < 0);
	CHECKF(st, strstr(err, path) != NULL, "message: %s", err);
	CHECK(st, !strchr(err, '\n'));
	CHECK(st, ws.bytes == 0);

	/* The name is taken by a directory: everything is written, and the
	 * final rename fails; the temporary file must go. */
	snprintf(path, sizeof(path), "%s/isdir.pftrace", dir);
	if (mkdir(path, 0755))
		exit(2);
	err[0] = 0;
	rc = wr_perfetto(&t, path, NULL, &ws, err, sizeof(err));
	CHECK(st, rc < 0);
	CHECKF(st, strstr(err, path) != NULL, "message: %s", err);
	CHECK(st, !strchr(err, '\n'));
	CHECK(st, count_files(dir, ".tmp.") == 0);

	/* A message buffer that is too short, or none at all. */
	rc = wr_perfetto(&t, path, NULL, NULL, err, 8);
	CHECK(st, rc < 0 && strlen(err) < 8);
	rc = wr_perfetto(&t, path, NULL, NULL, NULL, 0);
	CHECK(st, rc < 0);
	CHECK(st, count_files(dir, ".tmp.") == 0);

	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static int run_protoc(const char *proto_dir, const char *in, const char *out)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path='%s' --decode=perfetto.protos.Trace "
		 "'%s/perfetto_subset.proto' <'%s' >'%s' 2>&1",
		 proto_dir, proto_dir, in, out);
	return system(cmd);
}

static void test_protoc_decode(struct check_state *st)
{
	static const char *const want[] = {
		"trusted_packet_sequence_id: 2",
		"sequence_flags: 1",
		"sequence_flags: 2",
		"type: TYPE_SLICE_BEGIN",
		"type: TYPE_SLICE_END",
		"type: TYPE_INSTANT",
		"thread_name: \"main-thread\"",
		"process_name: \"/bin/prog --flag\"",
		"pid: 100",
		"tid: 101",
		"name: \"Snapshot symbol hits\"",
		"name: \"Snapshot symbol hits (2)\"",
		"name: \"[decode gap: overflow]\"",
		"name: \"main\"",
		"clock_id: 64",
		"is_incremental: true",
		"timestamp_clock_id: 64",
		"pointer_value: ",
		"string_value_iid: ",
		"bool_value: true",
		"int_value: -1",
		"name: \"inferred_start\"",
		"str: \"/usr/lib/libc.so.6\"",
		"track_uuid: ",
		"parent_uuid: ",
		"name: \"deep (depth 4+)\"",
	};
	struct mt_trace t, d;
	struct wr_stats ws;
	const char *root = getenv("MT_ROOT");
	char dir[64], path[128], out[128], proto[512];
	size_t len;
	char *text;

	snprintf(proto, sizeof(proto), "%s/tests/proto", root ? root : ".");
	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);
	model_deep(&d, 20);
	snprintf(path, sizeof(path), "%s/basic.pftrace", dir);
	snprintf(out, sizeof(out), "%s/basic.txt", dir);
	write_ok(st, &t, path, 0, 1, &ws);
	CHECK(st, run_protoc(proto, path, out) == 0);
	text = (char *)slurp(out, &len);
	CHECK(st, text != NULL);
	if (text) {
		text[len] = 0;
		/* Append the deep model's decoding. */
		snprintf(path, sizeof(path), "%s/deep.pftrace", dir);
		write_ok(st, &d, path, 4, 1, &ws);
		CHECK(st, run_protoc(proto, path, out) == 0);
	}
	if (text) {
		size_t len2;
		char *t2 = (char *)slurp(out, &len2);
		char *all = t2 ? malloc(len + len2 + 1) : NULL;

		CHECK(st, all != NULL);
		if (all) {
			memcpy(all, text, len);
			memcpy(all + len, t2, len2);
			all[len + len2] = 0;
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]);
			     i++)
				CHECKF(st, strstr(all, want[i]),
				       "protoc output lacks '%s'", want[i]);
			/* protoc prints fields it does not know by number:
			 * every field we write must be in the subset. */
			for (char *l = all; l; l = strchr(l + 1, '\n')) {
				char *p = l + (*l == '\n');

				p += strspn(p, " ");
				CHECKF(st, !(*p >= '0' && *p <= '9'),
				       "unknown field: %.40s", p);
			}
		}
		free(all);
		free(t2);
	}
	free(text);
	mt_trace_free(&t);
	mt_trace_free(&d);
	tmpdir_remove(dir);
}

/* Size and speed on a capture-like model; printed, not asserted. */
static void test_size(struct check_state *st)
{
	const char *env = getenv("MT_PERFETTO_SLICES");
	size_t n = env ? strtoul(env, NULL, 10) : 1000000;
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];
	double t0, t1;

	tmpdir_make(dir, sizeof(dir));
	model_random(&t, n, 4, 0x9e3779b97f4a7c15ull);
	for (int nc = 1; nc >= 0; nc--) {
		snprintf(path, sizeof(path), "%s/size%d.pftrace", dir, nc);
		t0 = now_s();
		write_ok(st, &t, path, 0, nc, &ws);
		t1 = now_s();
		printf("# %s: %" PRIu64 " slices, %" PRIu64
		       " bytes, %.2f bytes/slice, %.3f s\n",
		       nc ? "uncompressed" : "compressed", ws.slices, ws.bytes,
		       (double)ws.bytes / (double)ws.slices, t1 - t0);
		check_file(st, &t, path, 512, !nc);
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_basic);
	RUN(&st, test_deep);
	RUN(&st, test_empty);
	RUN(&st, test_bad_model);
	RUN(&st, test_errors);
	if (system("command -v protoc >/dev/null 2>&1") == 0)
		RUN(&st, test_protoc_decode);
	else
		printf("SKIP test_protoc_decode (no protoc)\n");
	RUN(&st, test_size);
	return CHECK_DONE(&st);
}
