/* SPDX-License-Identifier: MIT */
/*
 * The Valgrind backend's hot path: the records most of the stream is,
 * read with fewer checks than vg_record.c's, and the loop over what was
 * read that hands every other record to vg_record().
 */
#include "capture/emu_internal.h"
#include "capture/vg_internal.h"
#include "ptenc/ptenc_fast.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* The longest record vg_hot() reads: a packed call. */
#define HOT_MAX (1 + 8 + 4 * 10 + 8 + 8)

/* A LEB128 number at *pp, of 10 bytes at most (false: longer). */
static inline bool hot_leb(const uint8_t **pp, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t x = 0;

	/* Most times are a few ns: one byte. */
	if (!(*p & 0x80)) {
		*v = *p;
		*pp = p + 1;
		return true;
	}
	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b = *p++;

		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			*pp = p;
			return true;
		}
	}
	return false;
}

static inline uint64_t hot_u64(const uint8_t **pp)
{
	uint64_t v;

	memcpy(&v, *pp, 8);
	*pp += 8;
	return v;
}

/* A pack's branches, and the returns among them: out of the stack of
 * calls (-EPROTO: they return above it), or as they are where the tool
 * compressed them knowing where the decoder's stack empties. */
static inline int hot_pack(struct thr *t, struct ptenc *g, bool tool_rets,
			   uint64_t t0, uint64_t dt, uint64_t word,
			   uint64_t rets)
{
	unsigned nr;
	int rc;

	if (!rets || tool_rets)
		return ptenc_fast_tnt_word(g, t0, dt, word);
	rc = ptenc_fast_tnt_rets(g, t0, dt, word, rets, t->shadow, t->depth);
	nr = ptenc_nbits(rets);
	t->depth -= nr <= t->depth ? nr : t->depth;
	return rc;
}

/*
 * The records most of the stream is (branches, calls, returns, indirect
 * jumps, and the last three with a pack of branches before them) without
 * --truth or --drop-every, each as vg_record() takes it, with less to
 * check, from *pp on while at least HOT_MAX bytes are left (the fields
 * are read without a bound each, and all of them before anything is
 * done with them), into the encoder's inline paths, the thread and the
 * clock kept in locals.  *pp moves past the records done; one that is
 * not of these (or not as it should be: vg_record() says what is wrong)
 * is left to vg_record().  Returns 0 or a negative code.
 */
static int vg_hot(struct vg *v, const uint8_t **pp, const uint8_t *end)
{
	struct emu *e = &v->e;
	struct thr *t;
	struct ptenc *g;
	const uint8_t *p = *pp;
	uint64_t now = v->now, branches = 0;
	bool tool_rets = e->tool_rets;
	int rc = 0;

	if (v->cur >= e->nr_thr || !v->hello)
		return 0;
	t = &e->thr[v->cur];
	g = t->enc;
	while (end - p >= HOT_MAX) {
		const uint8_t *q = p;
		int type = *q++;
		uint64_t word = 1, t0 = 0, dt = 0, at = now, ip, a, x;
		uint64_t rets = 0;

		if (type == R_TNT || (type & R_PACKED)) {
			word = hot_u64(&q);
			if (!word || !hot_leb(&q, &x) || !hot_leb(&q, &dt) ||
			    !hot_leb(&q, &rets))
				break;
			t0 = now + x;
			at = t0 + dt;
			branches += vg_pack_n(word);
		}
		/* One switch: each case reads its fields, then acts (the
		 * pack first). */
		switch (type) {
		case R_TNT:
			ip = hot_u64(&q);
			rc = hot_pack(t, g, tool_rets, t0, dt, word, rets);
			break;
		case R_CALL:
		case R_ICALL:
		case R_CALL | R_PACKED:
		case R_ICALL | R_PACKED:
			if (!hot_leb(&q, &x))
				goto out;
			at += x;
			a = hot_u64(&q);
			ip = hot_u64(&q);
			rc = hot_pack(t, g, tool_rets, t0, dt, word, rets);
			if (!rc && (type & ~R_PACKED) == R_ICALL)
				rc = ptenc_fast_tip(g, at, ip);
			/* (The tool keeps the calls itself when it
			 * compresses the returns.) */
			if (!tool_rets) {
				ptenc_fast_call(g, a);
				if (!rc && t->depth < t->cap_shadow)
					t->shadow[t->depth++] = a;
				else if (!rc)
					rc = emu_shadow_push(t, a);
			}
			branches++;
			break;
		case R_RET:
		case R_RET | R_PACKED:
			if (!hot_leb(&q, &x))
				goto out;
			at += x;
			ip = hot_u64(&q);
			rc = hot_pack(t, g, tool_rets, t0, dt, word, rets);
			if (tool_rets) {
				/* Not compressed: the tool knew it could not.
				 */
				if (!rc)
					rc = ptenc_fast_tip(g, at, ip);
				branches++;
				break;
			}
			for (size_t i = t->depth; i-- > 0;)
				if (t->shadow[i] == ip) {
					t->depth = i;
					break;
				}
			if (!rc)
				rc = ptenc_fast_ret(g, at, ip);
			branches++;
			break;
		case R_IJMP:
		case R_IJMP | R_PACKED:
			if (!hot_leb(&q, &x))
				goto out;
			at += x;
			ip = hot_u64(&q);
			rc = hot_pack(t, g, tool_rets, t0, dt, word, rets);
			if (!rc)
				rc = ptenc_fast_tip(g, at, ip);
			branches++;
			break;
		default:
			goto out;
		}
		p = q;
		now = at;
		v->exec_pending = false;
		if (rc < 0) {
			rc = rc == -EPROTO ? vg_ret_above(e)
					   : mt_fail(e, rc,
						     "out of memory encoding "
						     "trace");
			break;
		}
		if ((type & ~R_PACKED) != R_CALL) {
			t->last_pkt_tsc = now;
			t->last_pkt_ip = ip;
		}
		if (ip) {
			t->last_ip = ip;
			if (ptenc_fast_psb_due(g) &&
			    (rc = vg_psb_at(v, t, now, ip)))
				break;
		}
	}
out:
	*pp = p;
	v->now = now;
	e->st->branches += branches;
	return rc;
}

/* Every whole record read so far (v->used bytes); what is cut short
 * waits for more. */
int vg_parse(struct vg *v)
{
	size_t off = 0;
	int rc = 0;
	/* (--drop-every: vg_record() loses a transfer and its pack
	 * together.) */
	bool hot = !v->e.o->truth && !v->e.o->drop_every;

	while (off < v->len && !v->hit && !v->ended && !v->stacked) {
		struct rd r = {v->buf + off, v->buf + v->len, false};
		uint64_t now = v->now;

		if (hot && v->len - off >= HOT_MAX) {
			rc = vg_hot(v, &r.p, r.end);
			if (rc < 0)
				break;
			if (r.p != v->buf + off) {
				off = (size_t)(r.p - v->buf);
				continue;
			}
		}
		/* Every record is 2 bytes at least. */
		rc = v->len - off < 2 ? SHORT : vg_record(v, &r);
		if (rc == SHORT) {
			/* Read again whole, from the clock it began at. */
			v->now = now;
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		off = (size_t)(r.p - v->buf);
	}
	v->used = off;
	return rc < 0 ? rc : 0;
}
