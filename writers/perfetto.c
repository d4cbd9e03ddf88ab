/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto writer: the model as a TrackEvent protobuf trace.
 *
 * Layout (field numbers in tests/proto/perfetto_subset.proto):
 *
 *   sequence 1        track descriptors: processes, threads, continuation
 *                     tracks, the snapshot hit tracks, the depth guessed
 *                     tracks (no incremental state)
 *   sequence 2 + i    thread i: a first packet that clears incremental state,
 *                     sets the default track and clock 64 (incremental,
 *                     started at the thread's first timestamp by a clock
 *                     snapshot) and interns the argument names; then one
 *                     packet per SLICE_BEGIN / SLICE_END with a delta
 *                     timestamp and interned event names and dso strings;
 *                     such a first packet again every PF_PIECE_SLICES
 *                     slices, the clock from the last time put down
 *   sequence 2 + T    the snapshot symbol hits, the same way
 *   sequence 3 + T    the values the program wrote (PTWRITE), instants on
 *                     their threads' tracks
 *   sequence 4 + T    where stitching guessed the depth: slices on a
 *                     "depth guessed" child track of each such thread
 *
 * Perfetto's importer keeps 512 nesting levels per track and, past them,
 * drops BEGINs but still pops on the nameless ENDs, shortening every
 * surviving slice.  So a frame at depth d goes to track d / max_depth of
 * its thread: level 0 is the thread track, the others are child tracks of
 * it, made when first needed.  Each track then holds at most max_depth
 * levels, and nothing is dropped.
 *
 * Packets accumulate in one buffer that goes out (plainly, or as one zlib
 * stream in a compressed_packets packet) whenever it passes a few hundred
 * KB, while the next fills, so memory stays flat whatever the trace size.
 * Each batch is compressed on its own, on one of opts->jobs threads, and
 * the batches are written in order: the file does not depend on how many
 * threads there were.  With jobs, the threads' sequences are encoded
 * side by side too, in pieces of PF_PIECE_SLICES slices (pf_threads.c):
 * a piece's packets are batches of their own, whatever the jobs, so
 * that an encoder cuts them as the single thread does.
 *
 * Size, on the bench capture: a BEGIN and its END are 42.5 bytes, 16 of
 * them the address and dso arguments (a 47-bit address is a 7-byte
 * varint); deflate at level 1 takes the whole to 3.25 bytes, as they
 * repeat with the name and each packet's time comes last.
 */
#include "writers/writers.h"

#include "util/err.h"
#include "util/util.h"
#include "util/version.h"
#include "writers/pb_internal.h"
#include "writers/pf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const an_names[] = {
	"address",
	"dso",
	"inferred_start",
	"inferred_end",
	"joined",
	"tail",
	"ip",
	"arg",
	"tid",
	"depth_guessed",
	"gap",
	"syscall",
	"untraced",
	"unknown",
	"value",
	"source",
	"call_site",
	"inlined",
	"resumed",
	"resume_guessed",
};

static const struct {
	uint32_t flag, an;
} flag_args[] = {
	{MT_SLICE_INFERRED_START, AN_INFERRED_START},
	{MT_SLICE_INFERRED_END, AN_INFERRED_END},
	{MT_SLICE_JOINED, AN_JOINED},
	{MT_SLICE_TAIL, AN_TAIL},
	{MT_SLICE_DEPTH_GUESSED, AN_DEPTH_GUESSED},
	{MT_SLICE_GAP, AN_GAP},
	{MT_SLICE_SYSCALL, AN_SYSCALL},
	{MT_SLICE_UNTRACED, AN_UNTRACED},
	{MT_SLICE_UNKNOWN, AN_UNKNOWN},
	{MT_SLICE_INLINED, AN_INLINED},
	{MT_SLICE_RESUMED, AN_RESUMED},
	{MT_SLICE_RESUME_GUESSED, AN_RESUME_GUESSED},
};

/* One line in the caller's buffer, kept in w->code for the callers
 * that only learn that something below them failed. */
int pf_fail(struct pf *w, int code, const char *fmt, ...)
{
	char where[4096];
	va_list ap;

	snprintf(where, sizeof(where), "perfetto: %s", w->path);
	va_start(ap, fmt);
	mt_verr_prefixed(w->err, w->errlen, code, where, fmt, ap);
	va_end(ap);
	w->code = code;
	return code;
}

/* What to return once something below has failed (and said why). */
int pf_failed(const struct pf *w)
{
	return w->code ? w->code : -EIO;
}

/* n bytes at p to the file: 0 or -errno (on the jobs' thread). */
static int pf_write(struct pf *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(w->fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			w->io_what = "write";
			return -errno;
		}
		p += r;
		n -= (size_t)r;
		w->bytes += (uint64_t)r;
	}
	mt_writeback(&w->wb, w->fd, w->bytes);
	return 0;
}

/*
 * A batch of packets as one zlib stream in a compressed_packets packet,
 * into the batch's own output: on one of the pool's threads, with its
 * compressor.  What fails is kept in the batch for pf_batch_out().
 */
static int pf_batch_deflate(void *ctx, unsigned worker, void *job)
{
	struct pf *w = ctx;
	struct pf_batch *b = job;
	const struct pb_buf *pk = &b->pk;
	struct libdeflate_compressor *z;
	uint8_t hdr[2 + 2 * PB_VARINT_MAX];
	size_t hl, clen, bound;

	b->rc = 0;
	if (!w->compress)
		return 0;
	z = w->z[worker];
	/* Room for the longest header in front of the stream, so that
	 * header and stream go out in one write. */
	bound = libdeflate_zlib_compress_bound(z, pk->len) + sizeof(hdr);
	if (mt_grow((void **)&b->zout, &b->zcap, bound, 1)) {
		b->what = "deflate";
		b->rc = -ENOMEM;
		return 0;
	}
	clen = libdeflate_zlib_compress(
		z, pk->p, pk->len, b->zout + sizeof(hdr), bound - sizeof(hdr));
	if (!clen) {
		b->what = "deflate"; /* no room for the stream */
		b->rc = -ENOBUFS;
		return 0;
	}

	/* Trace.packet { compressed_packets = stream }: the key of field 50
	 * is two bytes, 0x92 0x03.  The header goes right before the
	 * stream. */
	hl = 0;
	hdr[hl++] = F_TRACE_PACKET << 3 | PB_LEN;
	hl += pb_put_varint(hdr + hl, 2 + pb_varint_size(clen) + clen);
	hl += pb_put_varint(hdr + hl, (uint64_t)F_COMPRESSED << 3 | PB_LEN);
	hl += pb_put_varint(hdr + hl, clen);
	b->zoff = sizeof(hdr) - hl;
	memcpy(b->zout + b->zoff, hdr, hl);
	b->zlen = hl + clen;
	return 0;
}

/* A batch into the file, compressed or plainly: batches come here one
 * at a time and in order, and only here is the file written. */
static int pf_batch_out(void *ctx, void *job)
{
	struct pf *w = ctx;
	struct pf_batch *b = job;

	if (b->rc) {
		w->io_what = b->what;
		return b->rc;
	}
	if (!w->compress)
		return pf_write(w, b->pk.p, b->pk.len);
	return pf_write(w, b->zout + b->zoff, b->zlen);
}

/* What the pool's threads said of a failure, as one line. */
static int pf_fail_out(struct pf *w, int rc)
{
	return pf_fail(w, rc, "%s: %s", w->io_what ? w->io_what : "write",
		       strerror(-rc));
}

/*
 * The packets so far go to the pool; the next ones fill the buffer of
 * the batch nr_batches before, which has gone out by then (the pool
 * holds nr_batches - 1).
 */
int pf_flush(struct pf *w)
{
	struct pf_batch *b;
	struct pb_buf full;
	int rc;

	if (w->pk.oom)
		return pf_fail(w, -ENOMEM, "out of memory");
	if (!w->pk.len)
		return 0;
	if (w->par)
		return pf_par_flush(w);
	if (w->compress && w->pk.len > UINT32_MAX)
		return pf_fail(w, -EFBIG, "packet batch too large to compress");
	b = &w->batch[w->nr_put % w->nr_batches];
	full = w->pk;
	w->pk = b->pk;
	b->pk = full;
	pb_reset(&w->pk);
	rc = mt_pool_put(w->out, b);
	w->nr_put++;
	return rc ? pf_fail_out(w, rc) : 0;
}

static size_t pf_packet(struct pf *w, uint32_t flags)
{
	size_t m = pb_begin(&w->pk, F_TRACE_PACKET);

	pb_uint(&w->pk, F_SEQ_ID, w->seq);
	if (flags)
		pb_uint(&w->pk, F_SEQ_FLAGS, flags);
	return m;
}

int pf_packet_end(struct pf *w, size_t m)
{
	pb_end(&w->pk, m);
	if (w->pk.len >= w->flush_at || w->pk.oom)
		return pf_flush(w);
	return 0;
}

/* An event packet's first fields at p (room made sure of): its
 * sequence.  Returns where they end. */
static uint8_t *pf_put_event_head(const struct pf *w, uint8_t *p)
{
	p = pb_put_uint(p, F_SEQ_ID, w->seq);
	return pb_put_uint(p, F_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
}

/*
 * An event packet's last field at p (room made sure of): its timestamp,
 * a delta.  Last, so that all but the time of two events alike (an END
 * and the next, two calls of one function) is one run of equal bytes,
 * which deflate takes as one match: 7% less compressed, and faster.
 */
static uint8_t *pf_put_event_time(struct pf *w, uint8_t *p, uint64_t ts)
{
	p = pb_put_uint(p, F_TIMESTAMP, ts - w->clock);
	w->clock = ts;
	return p;
}

/* An event packet on the current sequence, at ts; pf_event_end() puts
 * the time down and closes it. */
size_t pf_event_packet(struct pf *w, uint64_t ts)
{
	struct pb_buf *b = &w->pk;
	size_t m = pb_begin(b, F_TRACE_PACKET);
	uint8_t *p = pb_room(b, 4 * PB_VARINT_MAX);

	if (p)
		b->len = (size_t)(pf_put_event_head(w, p) - b->p);
	w->ev_ts = ts;
	return m;
}

int pf_event_end(struct pf *w, size_t m)
{
	struct pb_buf *b = &w->pk;
	uint8_t *p = pb_room(b, 2 * PB_VARINT_MAX);

	if (p)
		b->len = (size_t)(pf_put_event_time(w, p, w->ev_ts) - b->p);
	return pf_packet_end(w, m);
}

/* Returns the iid of string sid on this sequence; *fresh when new. */
static uint32_t pf_intern(struct pf *w, struct pf_intern *in, uint32_t sid,
			  int *fresh)
{
	if (in->gen[sid] == w->gen) {
		*fresh = 0;
		return in->iid[sid];
	}
	in->gen[sid] = w->gen;
	in->iid[sid] = ++in->next;
	*fresh = 1;
	return in->iid[sid];
}

/*
 * Starts sequence seq: clears its incremental state, makes clock 64 count
 * from t0 in deltas, and makes track (if non-zero) the default track.
 */
int pf_seq_start(struct pf *w, uint32_t seq, uint64_t t0, uint64_t track)
{
	struct pb_buf *b = &w->pk;
	size_t pkt, m, c;

	w->seq = seq;
	w->clock = t0;
	w->gen++;
	w->names.next = 0;
	w->strs.next = 0;

	pkt = pf_packet(w, SEQ_INCREMENTAL_STATE_CLEARED);
	m = pb_begin(b, F_CLOCK_SNAPSHOT);
	c = pb_begin(b, F_CS_CLOCKS);
	pb_uint(b, F_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	pb_uint(b, F_CLOCK_TIMESTAMP, t0);
	pb_end(b, c);
	c = pb_begin(b, F_CS_CLOCKS);
	pb_uint(b, F_CLOCK_ID, CLOCK_SEQ);
	pb_uint(b, F_CLOCK_TIMESTAMP, t0);
	pb_uint(b, F_CLOCK_INCREMENTAL, 1);
	pb_end(b, c);
	pb_end(b, m);

	m = pb_begin(b, F_PACKET_DEFAULTS);
	pb_uint(b, F_DEF_CLOCK_ID, CLOCK_SEQ);
	if (track) {
		c = pb_begin(b, F_DEF_TRACK_EVENT);
		pb_uint(b, F_TRACK_EVENT_DEF_TRACK, track);
		pb_end(b, c);
	}
	pb_end(b, m);

	m = pb_begin(b, F_INTERNED_DATA);
	for (size_t i = 0; i < AN_EAGER; i++) {
		c = pb_begin(b, F_ID_ANNOT_NAMES);
		pb_uint(b, F_IID, i + 1);
		pb_str(b, F_INTERNED_NAME, an_names[i]);
		pb_end(b, c);
	}
	pb_end(b, m);
	return pf_packet_end(w, pkt);
}

/* A debug annotation at p (room made sure of) under 128 bytes. */
static uint8_t *pf_put_arg(uint8_t *p, uint32_t an, uint32_t field, uint64_t v)
{
	uint8_t *len;

	p = pb_put_short_begin(p, F_TE_ANNOTATION, &len);
	p = pb_put_uint(p, F_DA_NAME_IID, an);
	p = pb_put_uint(p, field, v);
	pb_put_short_end(len, p);
	return p;
}

/* A debug annotation: short enough that its length is one byte, so it
 * is put down in one go. */
void pf_arg_uint(struct pb_buf *b, uint32_t an, uint32_t field, uint64_t v)
{
	uint8_t *p = pb_room(b, 2 + 4 * PB_VARINT_MAX);

	if (p)
		b->len = (size_t)(pf_put_arg(p, an, field, v) - b->p);
}

/* An interned string value (debug_annotation_string_values). */
static void pf_intern_value(struct pb_buf *b, uint32_t iid, const char *str)
{
	size_t e = pb_begin(b, F_ID_ANNOT_VALUES);

	pb_uint(b, F_IID, iid);
	pb_str(b, F_INTERNED_NAME, str);
	pb_end(b, e);
}

/*
 * A BEGIN's or an END's packet at p (room made sure of), up to its track
 * event's type; *pkt and *te are their length bytes for pf_event_close().
 * Under 128 bytes, each length is one byte.
 */
static uint8_t *pf_event_open(struct pf *w, uint8_t *p, uint32_t type,
			      uint8_t **pkt, uint8_t **te)
{
	p = pb_put_short_begin(p, F_TRACE_PACKET, pkt);
	p = pf_put_event_head(w, p);
	p = pb_put_short_begin(p, F_TRACK_EVENT, te);
	return pb_put_uint(p, F_TE_TYPE, type);
}

/* The packet opened by pf_event_open() ends at p with its time. */
static int pf_event_close(struct pf *w, uint8_t *p, uint8_t *pkt, uint8_t *te,
			  uint64_t ts)
{
	pb_put_short_end(te, p);
	p = pf_put_event_time(w, p, ts);
	pb_put_short_end(pkt, p);
	w->pk.len = (size_t)(p - w->pk.p);
	if (w->pk.len >= w->flush_at)
		return pf_flush(w);
	return 0;
}

/*
 * The usual BEGIN, of a frame whose strings are interned already, with
 * no source, call site or flag: the bytes the encoders would write, put
 * down at once, as an END is.
 */
static int pf_slice_begin_plain(struct pf *w, uint64_t ts, uint64_t track,
				uint32_t name, uint64_t addr, uint32_t dso)
{
	uint8_t *p = pb_room(&w->pk, 4 + 14 * PB_VARINT_MAX), *pkt, *te;

	if (!p)
		return pf_flush(w);
	p = pf_event_open(w, p, TYPE_SLICE_BEGIN, &pkt, &te);
	p = pb_put_uint(p, F_TE_NAME_IID, name);
	if (track)
		p = pb_put_uint(p, F_TE_TRACK, track);
	if (addr)
		p = pf_put_arg(p, AN_ADDRESS, F_DA_POINTER, addr);
	if (dso)
		p = pf_put_arg(p, AN_DSO, F_DA_STR_IID, dso);
	return pf_event_close(w, p, pkt, te, ts);
}

static int pf_slice_begin(struct pf *w, uint64_t ts, uint64_t track,
			  const struct mt_slice *s)
{
	const struct mt_strtab *st = &w->t->strs;
	const struct mt_frame *fr = mt_slice_frame(w->t, s);
	struct pb_buf *b = &w->pk;
	uint32_t name, dso = 0, src = 0, site = 0;
	int name_new, dso_new = 0, src_new = 0, site_new = 0, pos_new, go_new;
	size_t pkt, m, e;

	name = pf_intern(w, &w->names, fr->name, &name_new);
	if (fr->dso)
		dso = pf_intern(w, &w->strs, fr->dso, &dso_new);
	if (fr->source)
		src = pf_intern(w, &w->strs, fr->source, &src_new);
	if (s->site)
		site = pf_intern(w, &w->strs, s->site, &site_new);
	pos_new = (src || site || (s->flags & MT_SLICE_INLINED)) &&
		  w->pos_gen != w->gen;
	if (pos_new)
		w->pos_gen = w->gen;
	go_new = (s->flags & (MT_SLICE_RESUMED | MT_SLICE_RESUME_GUESSED)) &&
		 w->go_gen != w->gen;
	if (go_new)
		w->go_gen = w->gen;
	if (!(name_new | dso_new | src | site | pos_new | go_new) &&
	    !(s->flags & w->flag_mask))
		return pf_slice_begin_plain(w, ts, track, name, fr->addr, dso);

	pkt = pf_event_packet(w, ts);
	if (name_new || dso_new || src_new || site_new || pos_new || go_new) {
		m = pb_begin(b, F_INTERNED_DATA);
		if (name_new) {
			e = pb_begin(b, F_ID_EVENT_NAMES);
			pb_uint(b, F_IID, name);
			pb_str(b, F_INTERNED_NAME, mt_str(st, fr->name));
			pb_end(b, e);
		}
		if (dso_new)
			pf_intern_value(b, dso, mt_str(st, fr->dso));
		if (src_new)
			pf_intern_value(b, src, mt_str(st, fr->source));
		if (site_new)
			pf_intern_value(b, site, mt_str(st, s->site));
		for (uint32_t an = AN_SOURCE; pos_new && an <= AN_INLINED;
		     an++) {
			e = pb_begin(b, F_ID_ANNOT_NAMES);
			pb_uint(b, F_IID, an);
			pb_str(b, F_INTERNED_NAME, an_names[an - 1]);
			pb_end(b, e);
		}
		for (uint32_t an = AN_RESUMED;
		     go_new && an <= AN_RESUME_GUESSED; an++) {
			e = pb_begin(b, F_ID_ANNOT_NAMES);
			pb_uint(b, F_IID, an);
			pb_str(b, F_INTERNED_NAME, an_names[an - 1]);
			pb_end(b, e);
		}
		pb_end(b, m);
	}

	m = pb_begin(b, F_TRACK_EVENT);
	pb_uint(b, F_TE_TYPE, TYPE_SLICE_BEGIN);
	pb_uint(b, F_TE_NAME_IID, name);
	if (track)
		pb_uint(b, F_TE_TRACK, track);
	if (fr->addr)
		pf_arg_uint(b, AN_ADDRESS, F_DA_POINTER, fr->addr);
	if (dso)
		pf_arg_uint(b, AN_DSO, F_DA_STR_IID, dso);
	if (src)
		pf_arg_uint(b, AN_SOURCE, F_DA_STR_IID, src);
	if (site)
		pf_arg_uint(b, AN_CALL_SITE, F_DA_STR_IID, site);
	for (size_t i = 0; (s->flags & w->flag_mask) &&
			   i < sizeof(flag_args) / sizeof(flag_args[0]);
	     i++)
		if (s->flags & flag_args[i].flag)
			pf_arg_uint(b, flag_args[i].an, F_DA_BOOL, 1);
	pb_end(b, m);
	return pf_event_end(w, pkt);
}

/*
 * An END, the bytes pf_event_packet() and the encoders would write, put
 * down at once: half the slices' events are ENDs, and they are all
 * alike but for the time.  Under 128 bytes, each length is one byte.
 */
static int pf_slice_end(struct pf *w, uint64_t ts, uint64_t track)
{
	uint8_t *p = pb_room(&w->pk, 2 + 8 * PB_VARINT_MAX), *pkt, *te;

	if (!p)
		return pf_flush(w);
	p = pf_event_open(w, p, TYPE_SLICE_END, &pkt, &te);
	if (track)
		p = pb_put_uint(p, F_TE_TRACK, track);
	return pf_event_close(w, p, pkt, te, ts);
}

/* A track descriptor's packet begun: its uuid and parent (0: none);
 * *m is the descriptor, to end before the packet. */
static size_t pf_desc_begin(struct pf *w, uint64_t uuid, uint64_t parent,
			    size_t *m)
{
	struct pb_buf *b = &w->pk;
	size_t pkt;

	w->seq = DESC_SEQ;
	pkt = pf_packet(w, 0);
	*m = pb_begin(b, F_TRACK_DESC);
	pb_uint(b, F_TD_UUID, uuid);
	if (parent)
		pb_uint(b, F_TD_PARENT, parent);
	return pkt;
}

/* A track descriptor with no process or thread: a named child track. */
int pf_desc_track(struct pf *w, uint64_t uuid, uint64_t parent,
		  const char *name, const char *suffix)
{
	struct pb_buf *b = &w->pk;
	size_t m, n, pkt = pf_desc_begin(w, uuid, parent, &m);

	n = pb_begin(b, F_TD_NAME);
	pb_raw(b, name, strlen(name));
	pb_raw(b, suffix, strlen(suffix));
	pb_end(b, n);
	pb_end(b, m);
	return pf_packet_end(w, pkt);
}

/*
 * What made the trace, in SystemInfo.tracing_service_version (field 4),
 * which trace_processor keeps in its metadata table and the UI shows on
 * its info page.
 */
static int pf_made_by(struct pf *w)
{
	struct pb_buf *b = &w->pk;
	char line[128], str[320];
	size_t pkt, m;

	mt_version_line("mt-convert", line, sizeof(line));
	if (w->t->recorded_by[0])
		snprintf(str, sizeof(str), "%s, from a capture by %s", line,
			 w->t->recorded_by);
	else
		snprintf(str, sizeof(str), "%s", line);
	w->seq = DESC_SEQ;
	pkt = pf_packet(w, 0);
	m = pb_begin(b, F_SYSTEM_INFO);
	pb_str(b, F_SI_SERVICE_VERSION, str);
	pb_end(b, m);
	return pf_packet_end(w, pkt);
}

static int pf_desc_process(struct pf *w, uint64_t uuid,
			   const struct mt_process *p)
{
	struct pb_buf *b = &w->pk;
	size_t m, d, pkt = pf_desc_begin(w, uuid, 0, &m);

	d = pb_begin(b, F_TD_PROCESS);
	pb_uint(b, F_PD_PID, p->pid);
	if (p->name)
		pb_str(b, F_PD_NAME, mt_str(&w->t->strs, p->name));
	pb_end(b, d);
	pb_end(b, m);
	return pf_packet_end(w, pkt);
}

static int pf_desc_thread(struct pf *w, uint64_t uuid, uint64_t parent,
			  const struct mt_thread *th)
{
	struct pb_buf *b = &w->pk;
	size_t m, d, pkt = pf_desc_begin(w, uuid, parent, &m);

	d = pb_begin(b, F_TD_THREAD);
	pb_uint(b, F_THD_PID, th->pid);
	pb_uint(b, F_THD_TID, th->tid);
	if (th->name)
		pb_str(b, F_THD_NAME, mt_str(&w->t->strs, th->name));
	pb_end(b, d);
	pb_end(b, m);
	return pf_packet_end(w, pkt);
}

/*
 * The track of nesting level lvl of thread th, whose own track is lvl 0;
 * deeper ones are described when first used.  Returns 0 on error.
 */
static uint64_t pf_level(struct pf *w, const struct mt_thread *th, size_t lvl)
{
	char suffix[48];
	char tidname[24];
	const char *name;

	while (w->nr_lvl <= lvl) {
		uint64_t uuid = pf_level_uuid(w, w->lvl[0], w->nr_lvl);

		if (mt_grow((void **)&w->lvl, &w->cap_lvl, w->nr_lvl + 1,
			    sizeof(*w->lvl))) {
			pf_fail(w, -ENOMEM, "out of memory");
			return 0;
		}
		name = mt_str(&w->t->strs, th->name);
		if (!*name) {
			snprintf(tidname, sizeof(tidname), "tid %u", th->tid);
			name = tidname;
		}
		snprintf(suffix, sizeof(suffix), " (depth %zu+)",
			 w->nr_lvl * (size_t)w->max_depth);
		if (pf_desc_track(w, uuid, w->lvl[0], name, suffix))
			return 0;
		w->lvl[w->nr_lvl++] = uuid;
		w->tracks++;
	}
	return w->lvl[lvl];
}

/*
 * Piece k of thread th's slices as BEGIN/END pairs, from the state the
 * pieces before it left (w->stack and sp, last, the level tracks).  The
 * slices are in pre-order, so a stack of open ones gives each its END
 * just before the next slice that is not inside it starts: ENDs at the
 * time of the next BEGIN come first, and every BEGIN gets its END, the
 * last piece putting down those still open.  A model that breaks
 * its own ordering (a start before the previous event, an end past the
 * next start) is clamped rather than written with time going backwards
 * or slices overlapping, which Perfetto would drop or mis-nest.
 *
 * Each piece starts by clearing the sequence's incremental state, the
 * clock 64 counting from the last time put down: its packets depend on
 * nothing before it but that state, which pf_thread_scan() finds without
 * writing, so the pieces may be encoded side by side (pf_threads.c).
 */
int pf_thread_piece(struct pf *w, const struct mt_thread *th, uint64_t uuid,
		    uint32_t seq, size_t k)
{
	const struct mt_slice *sl = th->slices;
	size_t from = k * PF_PIECE_SLICES, to = th->nr_slices, sp, lvl;
	uint64_t last;
	int rc;

	if (to - from > PF_PIECE_SLICES)
		to = from + PF_PIECE_SLICES;
	if (!k) {
		w->nr_lvl = 0;
		if (mt_grow((void **)&w->lvl, &w->cap_lvl, 1, sizeof(*w->lvl)))
			return pf_fail(w, -ENOMEM, "out of memory");
		w->lvl[w->nr_lvl++] = uuid;
		w->sp = 0;
		w->last = sl[0].ts;
	}
	sp = w->sp;
	last = w->last;
	/* A piece's packets are batches of their own (pf_threads.c). */
	rc = pf_flush(w);
	if (!rc)
		rc = pf_seq_start(w, seq, last, uuid);
	if (rc)
		return rc;
	for (size_t i = from; i < to; i++) {
		const struct mt_slice *s = &sl[i];
		uint64_t beg = s->ts > last ? s->ts : last;

		while (sp > s->depth) {
			const struct mt_slice *o = &sl[w->stack[--sp]];
			uint64_t end = o->ts + o->dur;

			end = end < beg ? end : beg;
			end = end > last ? end : last;
			lvl = sp / w->max_depth;
			rc = pf_slice_end(w, end, lvl ? w->lvl[lvl] : 0);
			if (rc)
				return rc;
			last = end;
		}

		lvl = sp / w->max_depth;
		if (lvl >= w->nr_lvl) {
			/* Its descriptor goes out on sequence 1. */
			if (!pf_level(w, th, lvl))
				return pf_failed(w);
			w->seq = seq;
		}

		if (mt_grow((void **)&w->stack, &w->cap_stack, sp + 1,
			    sizeof(*w->stack)))
			return pf_fail(w, -ENOMEM, "out of memory");
		rc = pf_slice_begin(w, beg, lvl ? w->lvl[lvl] : 0, s);
		if (rc)
			return rc;
		w->stack[sp++] = (uint32_t)i;
		last = beg;
	}
	while (to == th->nr_slices && sp) {
		const struct mt_slice *o = &sl[w->stack[--sp]];
		uint64_t end = o->ts + o->dur;

		end = end > last ? end : last;
		lvl = sp / w->max_depth;
		rc = pf_slice_end(w, end, lvl ? w->lvl[lvl] : 0);
		if (rc)
			return rc;
		last = end;
	}
	w->sp = sp;
	w->last = last;
	if (w->nr_lvl > w->most_lvl)
		w->most_lvl = w->nr_lvl;
	w->slices += to - from;
	return pf_flush(w);
}

size_t pf_thread_pieces(const struct mt_thread *th)
{
	return (th->nr_slices + PF_PIECE_SLICES - 1) / PF_PIECE_SLICES;
}

int pf_thread(struct pf *w, const struct mt_thread *th, uint64_t uuid,
	      uint32_t seq)
{
	size_t n = pf_thread_pieces(th);

	for (size_t k = 0; k < n; k++) {
		int rc = pf_thread_piece(w, th, uuid, seq, k);

		if (rc)
			return rc;
	}
	return 0;
}

/*
 * What pf_thread_piece() leaves after piece k, found from what the
 * pieces before left in c without writing: the stack as it has it,
 * the last BEGIN's time (every END before a BEGIN is clamped to it, and
 * it to the time before), the level tracks it makes.  A BEGIN's time
 * being the most of the slices' starts so far, last is that.
 */
int pf_thread_scan(const struct pf *w, const struct mt_thread *th, size_t k,
		   struct pf_cut *c)
{
	const struct mt_slice *sl = th->slices;
	size_t from = k * PF_PIECE_SLICES, to = th->nr_slices;
	size_t sp;

	if (to - from > PF_PIECE_SLICES)
		to = from + PF_PIECE_SLICES;
	if (!k) {
		c->sp = 0;
		c->nr_lvl = 1;
		c->last = sl[0].ts;
	}
	/* At most one more open slice a slice. */
	if (mt_grow((void **)&c->stack, &c->cap, c->sp + (to - from),
		    sizeof(*c->stack)))
		return -ENOMEM;
	sp = c->sp;
	for (size_t i = from; i < to; i++) {
		size_t lvl;

		if (sp > sl[i].depth)
			sp = sl[i].depth;
		lvl = sp / w->max_depth;
		if (lvl >= c->nr_lvl)
			c->nr_lvl = lvl + 1;
		if (sl[i].ts > c->last)
			c->last = sl[i].ts;
		c->stack[sp++] = (uint32_t)i;
	}
	c->sp = sp;
	return 0;
}

static uint64_t pf_process_uuid(const struct mt_trace *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nr_procs; i++)
		if (t->procs[i].pid == pid)
			return 1 + i;
	return 0;
}

/* Only ever written forwards: a special file takes it as a stream. */
static int pf_open(struct pf *w, const struct mt_outfile *f)
{
	w->fd = mt_outfile_open(f);
	if (w->fd < 0) {
		int e = w->fd;

		w->fd = -1;
		return pf_fail(w, e, "cannot write: %s", strerror(-e));
	}
	return 0;
}

static int pf_after_threads(struct pf *w, size_t nth);

static int pf_write_all(struct pf *w)
{
	const struct mt_trace *t = w->t;
	size_t nth = t->nr_threads;

	/* uuids: processes 1..P, threads P+1..P+T, their level tracks
	 * (pf_level_uuid()), then hits and the rest. */
	w->next_uuid = 1 + t->nr_procs + nth;
	/* An empty trace stays an empty file. */
	if ((t->nr_procs || nth) && pf_made_by(w))
		return pf_failed(w);
	for (size_t i = 0; i < t->nr_procs; i++)
		if (pf_desc_process(w, 1 + i, &t->procs[i]))
			return pf_failed(w);
	for (size_t i = 0; i < nth; i++) {
		const struct mt_thread *th = &t->threads[i];

		if (pf_desc_thread(w, 1 + t->nr_procs + i,
				   pf_process_uuid(t, th->pid), th))
			return pf_failed(w);
		w->tracks++;
	}
	if (nth + 5 > UINT32_MAX)
		return pf_fail(w, -E2BIG, "too many threads");
	/* The threads or their pieces side by side, in the same bytes. */
	if (w->jobs > 1) {
		int rc = pf_threads_par(w, w->jobs);

		if (rc != 1)
			return rc ? pf_failed(w) : pf_after_threads(w, nth);
	}
	for (size_t i = 0; i < nth; i++)
		if (pf_thread(w, &t->threads[i], 1 + t->nr_procs + i,
			      (uint32_t)(2 + i)))
			return pf_failed(w);
	return pf_after_threads(w, nth);
}

/* The sequences after the threads', and the last batch. */
static int pf_after_threads(struct pf *w, size_t nth)
{
	w->next_uuid = 1 + w->t->nr_procs +
		       (uint64_t)nth * (w->most_lvl ? w->most_lvl : 1);
	if (pf_hits(w, (uint32_t)(2 + nth)))
		return pf_failed(w);
	if (pf_ptwrites(w, (uint32_t)(3 + nth)))
		return pf_failed(w);
	if (pf_guesses(w, (uint32_t)(4 + nth)))
		return pf_failed(w);
	if (pf_goroutines(w, (uint32_t)(5 + nth)))
		return pf_failed(w);
	return pf_flush(w);
}

int wr_perfetto_to(const struct mt_trace *t, const struct mt_outfile *f,
		   const struct wr_perfetto_opts *o, struct wr_stats *st,
		   char *err, size_t errlen)
{
	const char *path = f->path;
	struct pf w;
	size_t nstr = t->strs.nr;
	int rc = -1;

	memset(&w, 0, sizeof(w));
	w.t = t;
	w.path = path;
	w.err = err;
	w.errlen = errlen;
	w.fd = -1;
	w.max_depth = o && o->max_depth ? o->max_depth : DEFAULT_MAX_DEPTH;
	for (size_t i = 0; i < sizeof(flag_args) / sizeof(flag_args[0]); i++)
		w.flag_mask |= flag_args[i].flag;
	w.compress = !(o && o->no_compress);
	w.flush_at = w.compress ? FLUSH_COMPRESSED : FLUSH_PLAIN;
	pb_init(&w.pk);
	if (errlen)
		err[0] = 0;

	w.names.iid = calloc(nstr ? nstr : 1, sizeof(uint32_t));
	w.names.gen = calloc(nstr ? nstr : 1, sizeof(uint32_t));
	w.strs.iid = calloc(nstr ? nstr : 1, sizeof(uint32_t));
	w.strs.gen = calloc(nstr ? nstr : 1, sizeof(uint32_t));
	if (!w.names.iid || !w.names.gen || !w.strs.iid || !w.strs.gen) {
		pf_fail(&w, -ENOMEM, "out of memory");
		goto fail;
	}
	/* One compressor a thread; plainly, one thread only writes.  A
	 * batch compresses in about twice the time it took to encode (on
	 * the bench capture 4.0 s against 2.1), and the pieces of the
	 * threads, even of one, are encoded side by side: up to
	 * PF_MAX_COMPRESSORS are fed. */
	w.jobs = o && o->jobs > 1 ? o->jobs : 1;
	w.nr_z = w.compress ? w.jobs : 1;
	if (w.nr_z > PF_MAX_COMPRESSORS)
		w.nr_z = PF_MAX_COMPRESSORS;
	/* Every thread busy, one batch waiting to be written, one filling. */
	w.nr_batches = (size_t)w.nr_z + 2;
	w.batch = calloc(w.nr_batches, sizeof(*w.batch));
	w.z = calloc(w.nr_z, sizeof(*w.z));
	if (!w.batch || !w.z) {
		pf_fail(&w, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; w.compress && i < w.nr_z; i++) {
		/* libdeflate at level 1: on 6M slices 3.5 B a slice in
		 * 0.52 s, where zlib's level 1 took 0.91 s for 3.8 B (and
		 * level 6 of either twice to four times as long for 2.6). */
		w.z[i] = libdeflate_alloc_compressor(1);
		if (!w.z[i]) {
			pf_fail(&w, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (pf_open(&w, f))
		goto fail;
	/* A batch is compressed on its own, whichever thread does it: the
	 * file is the same for any number of them. */
	rc = mt_pool_start(&w.out, w.nr_z, pf_batch_deflate, pf_batch_out, &w,
			   (unsigned)w.nr_batches - 1);
	if (rc) {
		pf_fail(&w, rc, "out of memory");
		goto fail;
	}
	if (pf_write_all(&w))
		goto fail;
	rc = mt_pool_end_cpu(w.out, &w.cpu_s);
	w.out = NULL;
	if (rc) {
		pf_fail_out(&w, rc);
		goto fail;
	}
	if (close(w.fd)) {
		w.fd = -1;
		pf_fail(&w, -errno, "close: %s", strerror(errno));
		goto fail;
	}
	w.fd = -1;
	if (st) {
		st->bytes = w.bytes;
		st->slices = w.slices;
		st->tracks = w.tracks;
		st->cpu_s = w.cpu_s;
	}
	rc = 0;
	goto out;
fail:
	/* The jobs' thread writes into w.err only through what it returns,
	 * and must be done with the buffers before they go. */
	mt_pool_end(w.out);
	w.out = NULL;
	rc = pf_failed(&w);
	if (w.fd >= 0)
		close(w.fd);
out:
	for (size_t i = 0; w.batch && i < w.nr_batches; i++) {
		pb_free(&w.batch[i].pk);
		free(w.batch[i].zout);
	}
	free(w.batch);
	for (unsigned i = 0; w.z && i < w.nr_z; i++)
		if (w.z[i])
			libdeflate_free_compressor(w.z[i]);
	free(w.z);
	pb_free(&w.pk);
	free(w.names.iid);
	free(w.names.gen);
	free(w.strs.iid);
	free(w.strs.gen);
	free(w.stack);
	free(w.lvl);
	return rc;
}

int wr_perfetto(const struct mt_trace *t, const char *path,
		const struct wr_perfetto_opts *o, struct wr_stats *st,
		char *err, size_t errlen)
{
	struct mt_outfile f;
	int rc = mt_outfile_begin_stream(&f, path, err, errlen);

	if (rc)
		return rc;
	rc = wr_perfetto_to(t, &f, o, st, err, errlen);
	if (rc)
		mt_outfile_abort(&f);
	else
		rc = mt_outfile_commit(&f, err, errlen);
	return rc;
}
