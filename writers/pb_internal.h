/* SPDX-License-Identifier: MIT */
/*
 * pb: the little protobuf encoder the writers share.
 *
 * Messages are appended to one growable buffer.  A nested message is opened
 * with one byte reserved for its length and closed by pb_end(), which moves
 * the body only in the rare case the length needs more than one byte; trace
 * packets are almost all shorter than 128 bytes, so this costs nothing in
 * the common case and keeps every length minimal.
 *
 * Allocation failure is sticky: the first failed growth sets b->oom, later
 * writes do nothing, and the caller checks b->oom once per batch rather than
 * after every field.
 */
#ifndef MT_PB_INTERNAL_H
#define MT_PB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum pb_wire {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LEN = 2,
	PB_FIXED32 = 5,
};

/* The longest varint: 64 bits in groups of 7. */
#define PB_VARINT_MAX 10

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

void pb_init(struct pb_buf *b);
void pb_free(struct pb_buf *b);
/* Slow path of pb_room(): grows the buffer to hold n more bytes. */
uint8_t *pb_grow(struct pb_buf *b, size_t n);
/* pb_end() of a message of 128 bytes or more: its length needs more than
 * the byte pb_begin() left, and the message moves up. */
void pb_end_long(struct pb_buf *b, size_t mark);

static inline void pb_reset(struct pb_buf *b)
{
	b->len = 0;
}

/* Where n more bytes may be written, or NULL (and b->oom) when out of
 * memory. */
static inline uint8_t *pb_room(struct pb_buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return b->p + b->len;
	return pb_grow(b, n);
}

static inline size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Encodes v at p, returns the bytes used. */
static inline size_t pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* A varint field at p, whose room the caller made sure of; returns the
 * end. */
static inline uint8_t *pb_put_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	p += pb_put_varint(p, (uint64_t)field << 3 | PB_VARINT);
	return p + pb_put_varint(p, v);
}

/*
 * A message at p known to stay under 128 bytes: its key, and one byte for
 * its length, set by pb_put_short_end() from where its fields end.
 * Returns where its fields go; *len_at is the length byte.
 */
static inline uint8_t *pb_put_short_begin(uint8_t *p, uint32_t field,
					  uint8_t **len_at)
{
	p += pb_put_varint(p, (uint64_t)field << 3 | PB_LEN);
	*len_at = p;
	return p + 1;
}

static inline void pb_put_short_end(uint8_t *len_at, const uint8_t *end)
{
	*len_at = (uint8_t)(end - len_at - 1);
}

static inline void pb_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t *p = pb_room(b, PB_VARINT_MAX);

	if (p)
		b->len += pb_put_varint(p, v);
}

static inline void pb_key(struct pb_buf *b, uint32_t field, enum pb_wire w)
{
	pb_varint(b, (uint64_t)field << 3 | w);
}

/* uint32/uint64/bool/enum, and int32/int64 as two's complement. */
static inline void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	uint8_t *p = pb_room(b, 2 * PB_VARINT_MAX);

	if (p) {
		size_t n = pb_put_varint(p, (uint64_t)field << 3 | PB_VARINT);
		b->len += n + pb_put_varint(p + n, v);
	}
}

static inline void pb_bytes(struct pb_buf *b, uint32_t field, const void *d,
			    size_t len)
{
	uint8_t *p = pb_room(b, 2 * PB_VARINT_MAX + len);

	if (p) {
		size_t n = pb_put_varint(p, (uint64_t)field << 3 | PB_LEN);
		n += pb_put_varint(p + n, len);
		if (len)
			memcpy(p + n, d, len);
		b->len += n + len;
	}
}

static inline void pb_str(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Bytes with no key: the pieces of a field opened with pb_begin(). */
static inline void pb_raw(struct pb_buf *b, const void *d, size_t len)
{
	uint8_t *p = pb_room(b, len);

	if (p && len) {
		memcpy(p, d, len);
		b->len += len;
	}
}

/*
 * Opens a nested message (or any length-delimited field written piecewise)
 * and returns the mark to hand to pb_end().
 */
static inline size_t pb_begin(struct pb_buf *b, uint32_t field)
{
	size_t mark;

	pb_key(b, field, PB_LEN);
	mark = b->len;
	if (pb_room(b, 1))
		b->len++;
	return mark;
}

/* Closes the message pb_begin() opened at mark: most are short, their
 * length one byte where pb_begin() left room for it. */
static inline void pb_end(struct pb_buf *b, size_t mark)
{
	size_t len = b->len - mark - 1;

	if (!b->oom && len < 0x80)
		b->p[mark] = (uint8_t)len;
	else
		pb_end_long(b, mark);
}

#endif
