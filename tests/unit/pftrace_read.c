/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto reader of the writer's tests (pftrace_read.h): protobuf
 * fields walked by hand, each packet applied as Perfetto's importer
 * applies it, and the slices compared with the model's.
 */
#include "tests/unit/pftrace_read.h"
#include "tests/unit/testfs.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
	else if ((!strcmp(n, "dso") || !strcmp(n, "source") ||
		  !strcmp(n, "call_site")) &&
		 vf == 17) {
		uint32_t id = iid_get(s->strs, s->cap_strs, val);

		if (id == MT_NONE)
			rd_error(r, "unknown string iid", val);
		*(n[0] == 'd'	? &o->dso
		  : n[0] == 's' ? &o->source
				: &o->site) = id;
	} else if (vf == 2 && val == 1) {
		static const char *const fl[] = {
			"inferred_start", "inferred_end",  "joined",
			"tail",		  "depth_guessed", "gap",
			"syscall",	  "untraced",	   "unknown",
			"inlined",	  "resumed",	   "resume_guessed"};
		static const uint32_t fv[] = {
			MT_SLICE_INFERRED_START, MT_SLICE_INFERRED_END,
			MT_SLICE_JOINED,	 MT_SLICE_TAIL,
			MT_SLICE_DEPTH_GUESSED,	 MT_SLICE_GAP,
			MT_SLICE_SYSCALL,	 MT_SLICE_UNTRACED,
			MT_SLICE_UNKNOWN,	 MT_SLICE_INLINED,
			MT_SLICE_RESUMED,	 MT_SLICE_RESUME_GUESSED};

		for (size_t i = 0; i < sizeof(fl) / sizeof(*fl); i++)
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

	o.name = o.dso = o.source = o.site = MT_NONE;
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

/* SystemInfo: only its tracing_service_version (4) is written. */
static void rd_system_info(struct rd *r, struct cur *c)
{
	struct cur sub;
	uint64_t v;
	uint32_t f;
	int k;

	while ((k = cur_field(c, &f, &v, &sub)) == 1) {
		if (f != 4 || !sub.p || v >= sizeof(r->made_by)) {
			rd_error(r, "unexpected system_info field", f);
			continue;
		}
		memcpy(r->made_by, sub.p, (size_t)v);
		r->made_by[v] = 0;
	}
	if (k < 0)
		rd_error(r, "malformed system_info", r->packets);
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
		case 45:
			rd_system_info(r, &sub);
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

void rd_free(struct rd *r)
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

int rd_file(struct rd *r, const char *path)
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
	const char *name, *dso, *source, *site;
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
	if (!c)
		c = strcmp(x->dso, y->dso);
	if (!c)
		c = strcmp(x->source, y->source);
	return c ? c : strcmp(x->site, y->site);
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
		e->source = s->o.source == MT_NONE
				    ? ""
				    : mt_str(&r->strs, s->o.source);
		e->site =
			s->o.site == MT_NONE ? "" : mt_str(&r->strs, s->o.site);
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
			e->name = mt_slice_str(t, s);
			e->dso = mt_str(&t->strs, mt_slice_frame(t, s)->dso);
			e->source =
				mt_str(&t->strs, mt_slice_frame(t, s)->source);
			e->site = mt_str(&t->strs, s->site);
			e->addr = mt_slice_frame(t, s)->addr;
			e->flags = s->flags; /* every flag is an arg */
		}
	}
	for (size_t i = 0; i < t->nr_hits; i++) {
		const struct mt_hit *h = &t->hits[i];
		struct rec *e = &v[k++];
		int instant = !h->mark_start || h->mark_start >= h->ts;
		const char *name = mt_str(&t->hit_names, h->name);

		e->tid = h->tid;
		e->level = UINT32_MAX;
		e->ts = instant ? h->ts : h->mark_start;
		e->dur = h->ts - e->ts;
		e->name = *name ? name : "snapshot";
		e->dso = e->source = e->site = "";
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
		" depth %u name '%s' dso '%s' source '%s' call_site '%s'"
		" addr %#" PRIx64 " flags %#x\n",
		what, e->tid, e->level, e->ts, e->dur, e->depth, e->name,
		e->dso, e->source, e->site, e->addr, e->flags);
}

void check_file(struct check_state *st, const struct mt_trace *t,
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
