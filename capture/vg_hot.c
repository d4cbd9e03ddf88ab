/* SPDX-License-Identifier: MIT */
/*
 * The Valgrind backend's hot path: the records most of the stream is,
 * read with fewer checks than vg_record.c's, and the loop over what was
 * read that hands every other record to vg_record().
 */
#include "capture/emu_internal.h"
#include "capture/vg_internal.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* A pack of n branches (none: n 0) from t0 over dt, into t's packets. */
static inline int vg_pack(struct vg *v, struct thr *t, uint64_t t0, uint64_t dt,
			  unsigned n, uint64_t bits)
{
	if (!n)
		return 0;
	v->e.st->branches += n;
	return ptenc_conds(t->enc, t0, dt, n, bits);
}

/* The longest record vg_hot() reads: a packed call. */
#define HOT_MAX (1 + 1 + 8 + 3 * 10 + 8 + 8)

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

/*
 * The records most of the stream is (branches, calls, returns, indirect
 * jumps, and the last three with a pack of branches before them) without
 * --truth or --drop-every, each as vg_record() takes it, with less to
 * check: r holds HOT_MAX bytes at least, so that the fields are read
 * without a bound each, and all of them are read before anything is done
 * with them.  Returns what vg_record() does, or 2 when the record is not
 * one of these (or not as it should be: vg_record() says what is wrong).
 */
static int vg_hot(struct vg *v, struct rd *r)
{
	struct emu *e = &v->e;
	struct thr *t = v->cur < e->nr_thr ? &e->thr[v->cur] : NULL;
	const uint8_t *p = r->p;
	int type = *p++, rc = 0;
	unsigned n = 0;
	uint64_t bits = 0, t0 = 0, dt = 0, now = v->now, ip, a = 0, x;

	if (!t || !v->hello)
		return 2;
	if (type == R_TNT || (type & R_PACKED)) {
		n = *p++;
		bits = hot_u64(&p);
		if (n > 64 || !hot_leb(&p, &x) || !hot_leb(&p, &dt))
			return 2;
		t0 = now + x;
		now = t0 + dt;
	}
	/* One switch: each case reads its fields, then acts (the pack
	 * first). */
	switch (type) {
	case R_TNT:
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		break;
	case R_CALL:
	case R_ICALL:
	case R_CALL | R_PACKED:
	case R_ICALL | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		a = hot_u64(&p);
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		if (!rc && (type & ~R_PACKED) == R_ICALL)
			rc = ptenc_indirect(t->enc, now, ip);
		ptenc_call(t->enc, a);
		if (!rc && t->depth < t->cap_shadow)
			t->shadow[t->depth++] = a;
		else if (!rc)
			rc = emu_shadow_push(t, a);
		e->st->branches++;
		break;
	case R_RET:
	case R_RET | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		for (size_t i = t->depth; i-- > 0;)
			if (t->shadow[i] == ip) {
				t->depth = i;
				break;
			}
		if (!rc)
			rc = ptenc_ret(t->enc, now, ip);
		e->st->branches++;
		break;
	case R_IJMP:
	case R_IJMP | R_PACKED:
		if (!hot_leb(&p, &x))
			return 2;
		now += x;
		ip = hot_u64(&p);
		rc = vg_pack(v, t, t0, dt, n, bits);
		if (!rc)
			rc = ptenc_indirect(t->enc, now, ip);
		e->st->branches++;
		break;
	default:
		return 2;
	}
	r->p = p;
	v->now = now;
	v->exec_pending = false;
	if (rc < 0)
		return mt_fail(e, rc, "out of memory encoding trace");
	if ((type & ~R_PACKED) != R_CALL) {
		t->last_pkt_tsc = now;
		t->last_pkt_ip = ip;
	}
	if (ip && vg_psb_at(v, t, now, ip))
		return -ENOMEM;
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

	while (off < v->len && !v->hit && !v->ended) {
		struct rd r = {v->buf + off, v->buf + v->len, false};
		uint64_t now = v->now;

		/* Every record is 2 bytes at least. */
		rc = v->len - off < 2		      ? SHORT
		     : hot && v->len - off >= HOT_MAX ? vg_hot(v, &r)
						      : 2;
		if (rc == 2) {
			r.p = v->buf + off;
			r.bad = false;
			rc = vg_record(v, &r);
		}
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
