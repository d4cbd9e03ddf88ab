/* SPDX-License-Identifier: MIT */
/*
 * Our extension section (PD_FEAT_MT_EXT): items perf.data has no record
 * for.  Kept apart from the reader and writer so that the perf formats and
 * ours never mix.
 */
#include "perfdata/perfdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ext_reserve(struct pd_ext_buf *b, size_t more)
{
	size_t cap;
	uint8_t *d;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

int pd_ext_add_stack(struct pd_ext_buf *b, const struct pd_ext_stack *s)
{
	size_t size = 24 + 8 * (size_t)s->nr;
	uint8_t *p;

	if (s->nr > (UINT32_MAX - 24) / 8)
		return -EINVAL;
	if (ext_reserve(b, 8 + size))
		return -ENOMEM;
	p = b->data + b->len;
	put_u32(p, PD_EXT_STACK);
	put_u32(p + 4, (uint32_t)size);
	put_u32(p + 8, s->pid);
	put_u32(p + 12, s->tid);
	put_u64(p + 16, s->time);
	put_u64(p + 24, s->nr);
	if (s->nr)
		memcpy(p + 32, s->ips, 8 * (size_t)s->nr);
	b->len += 8 + size;
	return 0;
}

void pd_ext_buf_free(struct pd_ext_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int pd_ext_next(struct pd_file *f, size_t *cursor, uint32_t *type,
		const uint8_t **payload, uint32_t *size, char *err,
		size_t errlen)
{
	size_t len, at = *cursor;
	const uint8_t *d = pd_feature(f, PD_FEAT_MT_EXT, &len);
	uint32_t sz;

	if (!d || at >= len)
		return 0;
	if (len - at < 8) {
		return pd_fail(err, errlen, -EOVERFLOW, pd_path(f), UINT64_MAX,
			       "extension section: item header cut at byte %zu",
			       at);
	}
	memcpy(type, d + at, 4);
	memcpy(&sz, d + at + 4, 4);
	if (sz % 8 || sz > len - at - 8) {
		return pd_fail(err, errlen, -EBADMSG, pd_path(f), UINT64_MAX,
			       "extension section: item at byte %zu has size "
			       "%u, %zu bytes remain",
			       at, sz, len - at - 8);
	}
	*payload = d + at + 8;
	*size = sz;
	*cursor = at + 8 + sz;
	return 1;
}

int pd_ext_parse_stack(const uint8_t *payload, uint32_t size,
		       struct pd_ext_stack *s)
{
	if (size < 24)
		return -EBADMSG;
	memcpy(&s->pid, payload, 4);
	memcpy(&s->tid, payload + 4, 4);
	memcpy(&s->time, payload + 8, 8);
	memcpy(&s->nr, payload + 16, 8);
	if (s->nr != (size - 24) / 8 || (size - 24) % 8)
		return -EBADMSG;
	s->ips = NULL;
	s->raw_ips = payload + 24;
	return 0;
}

int pd_ext_add_hit(struct pd_ext_buf *b, const struct pd_ext_hit *h)
{
	size_t n = strlen(h->name ? h->name : "") + 1;
	size_t size = 40 + ((n + 7) & ~(size_t)7);
	uint8_t *p;

	if (size > UINT32_MAX)
		return -EINVAL;
	if (ext_reserve(b, 8 + size))
		return -ENOMEM;
	p = b->data + b->len;
	memset(p, 0, 8 + size);
	put_u32(p, PD_EXT_HIT);
	put_u32(p + 4, (uint32_t)size);
	put_u32(p + 8, h->pid);
	put_u32(p + 12, h->tid);
	put_u64(p + 16, h->time);
	put_u64(p + 24, h->ip);
	put_u64(p + 32, (uint64_t)h->arg);
	put_u64(p + 40, h->mark_start);
	memcpy(p + 48, h->name ? h->name : "", n);
	b->len += 8 + size;
	return 0;
}

int pd_ext_parse_hit(const uint8_t *payload, uint32_t size,
		     struct pd_ext_hit *h)
{
	uint64_t arg;

	if (size < 48 || !memchr(payload + 40, 0, size - 40))
		return -EBADMSG;
	memcpy(&h->pid, payload, 4);
	memcpy(&h->tid, payload + 4, 4);
	memcpy(&h->time, payload + 8, 8);
	memcpy(&h->ip, payload + 16, 8);
	memcpy(&arg, payload + 24, 8);
	h->arg = (int64_t)arg;
	memcpy(&h->mark_start, payload + 32, 8);
	h->name = (const char *)payload + 40;
	return 0;
}

int pd_ext_add_goroutine(struct pd_ext_buf *b, const struct pd_ext_goroutine *g)
{
	uint8_t *p;

	if (ext_reserve(b, 8 + 40))
		return -ENOMEM;
	p = b->data + b->len;
	put_u32(p, PD_EXT_GOROUTINE);
	put_u32(p + 4, 40);
	put_u32(p + 8, g->pid);
	put_u32(p + 12, g->tid);
	put_u64(p + 16, g->time);
	put_u64(p + 24, g->ip);
	put_u64(p + 32, g->g);
	put_u64(p + 40, g->goid);
	b->len += 8 + 40;
	return 0;
}

int pd_ext_parse_goroutine(const uint8_t *payload, uint32_t size,
			   struct pd_ext_goroutine *g)
{
	if (size < 40)
		return -EBADMSG;
	memcpy(&g->pid, payload, 4);
	memcpy(&g->tid, payload + 4, 4);
	memcpy(&g->time, payload + 8, 8);
	memcpy(&g->ip, payload + 16, 8);
	memcpy(&g->g, payload + 24, 8);
	memcpy(&g->goid, payload + 32, 8);
	return 0;
}

int pd_ext_add_vdso(struct pd_ext_buf *b, const struct pd_ext_vdso *v)
{
	size_t size = 24 + ((v->len + 7) & ~(uint64_t)7);
	uint8_t *p;

	if (v->len > UINT32_MAX - 32)
		return -EINVAL;
	if (ext_reserve(b, 8 + size))
		return -ENOMEM;
	p = b->data + b->len;
	memset(p, 0, 8 + size);
	put_u32(p, PD_EXT_VDSO);
	put_u32(p + 4, (uint32_t)size);
	put_u32(p + 8, v->pid);
	put_u64(p + 16, v->start);
	put_u64(p + 24, v->len);
	memcpy(p + 32, v->bytes, v->len);
	b->len += 8 + size;
	return 0;
}

int pd_ext_parse_vdso(const uint8_t *payload, uint32_t size,
		      struct pd_ext_vdso *v)
{
	if (size < 24)
		return -EBADMSG;
	memcpy(&v->pid, payload, 4);
	memcpy(&v->start, payload + 8, 8);
	memcpy(&v->len, payload + 16, 8);
	if (v->len > size - 24)
		return -EBADMSG;
	v->bytes = payload + 24;
	return 0;
}

/* One item of type: u64 len, then len bytes, zero-padded to 8. */
static int add_bytes(struct pd_ext_buf *b, uint32_t type, uint64_t head,
		     bool have_head, const void *bytes, uint64_t len)
{
	uint64_t fixed = have_head ? 16 : 8;
	uint64_t size = fixed + ((len + 7) & ~(uint64_t)7);
	uint8_t *p;

	/* The item's size is a u32. */
	if (len > UINT32_MAX - 32)
		return -EINVAL;
	if (ext_reserve(b, 8 + (size_t)size))
		return -ENOMEM;
	p = b->data + b->len;
	memset(p, 0, 8 + (size_t)size);
	put_u32(p, type);
	put_u32(p + 4, (uint32_t)size);
	if (have_head)
		put_u64(p + 8, head);
	put_u64(p + fixed, len);
	if (len)
		memcpy(p + 8 + fixed, bytes, (size_t)len);
	b->len += 8 + (size_t)size;
	return 0;
}

int pd_ext_add_text(struct pd_ext_buf *b, uint32_t type, const char *text,
		    uint64_t len)
{
	return add_bytes(b, type, 0, false, text, len);
}

int pd_ext_parse_text(const uint8_t *payload, uint32_t size, const char **text,
		      uint64_t *len)
{
	if (size < 8)
		return -EBADMSG;
	memcpy(len, payload, 8);
	if (*len > size - 8)
		return -EBADMSG;
	*text = (const char *)payload + 8;
	return 0;
}

int pd_ext_add_kcode(struct pd_ext_buf *b, const struct pd_ext_kcode *k)
{
	return add_bytes(b, PD_EXT_KCODE, k->start, true, k->bytes, k->len);
}

int pd_ext_parse_kcode(const uint8_t *payload, uint32_t size,
		       struct pd_ext_kcode *k)
{
	if (size < 16)
		return -EBADMSG;
	memcpy(&k->start, payload, 8);
	memcpy(&k->len, payload + 8, 8);
	if (k->len > size - 16 || k->start + k->len < k->start)
		return -EBADMSG;
	k->bytes = payload + 16;
	return 0;
}
