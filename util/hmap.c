/* SPDX-License-Identifier: MIT */
/*
 * The one hash table: open addressing with linear probing over slots of
 * a key and a value side by side, so that a probe reads one cache line.
 * At most half full, so that a probe ends soon.  The slot is the top bits
 * of the key times 2^64 / phi (Fibonacci hashing): consecutive keys, the
 * usual case (thread ids, slice indexes), spread over the whole table,
 * and a weak hash of an outside key gets mixed once more for the price of
 * a multiply.
 */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

#define HMAP_MIN_CAP 64

static size_t slot_of(const struct mt_hmap *m, uint64_t stored)
{
	return (size_t)((stored * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* Where stored is, or the empty slot that ends its probe. */
static size_t probe(const struct mt_hmap *m, uint64_t stored)
{
	size_t i = slot_of(m, stored);

	while (m->slot[i].key && m->slot[i].key != stored)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int grow(struct mt_hmap *m)
{
	struct mt_hmap g = {.cap = m->cap ? 2 * m->cap : HMAP_MIN_CAP};
	unsigned bits = 0;

	if (g.cap > SIZE_MAX / 2 / sizeof(*g.slot))
		return -ENOMEM;
	while ((size_t)1 << bits < g.cap)
		bits++;
	g.shift = 64 - bits;
	g.slot = calloc(g.cap, sizeof(*g.slot));
	if (!g.slot)
		return -ENOMEM;
	/* Every key is new to g: no compare, the first empty slot. */
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].key) {
			size_t k = slot_of(&g, m->slot[i].key);

			while (g.slot[k].key)
				k = (k + 1) & (g.cap - 1);
			g.slot[k] = m->slot[i];
		}
	g.n = m->n;
	free(m->slot);
	*m = g;
	return 0;
}

bool mt_hmap_find(const struct mt_hmap *m, uint64_t key, uint64_t *val)
{
	size_t i;

	if (!m->n)
		return false;
	i = probe(m, key + 1);
	if (!m->slot[i].key)
		return false;
	*val = m->slot[i].val;
	return true;
}

int mt_hmap_set(struct mt_hmap *m, uint64_t key, uint64_t val)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap && grow(m))
		return -ENOMEM;
	i = probe(m, key + 1);
	if (!m->slot[i].key) {
		m->slot[i].key = key + 1;
		m->n++;
	}
	m->slot[i].val = val;
	return 0;
}

/* An outside key's hash as stored: its top bit goes so that the + 1 of
 * the empty-slot encoding cannot wrap it to 0. */
static uint64_t ext_stored(uint64_t hash)
{
	return (hash & (UINT64_MAX >> 1)) + 1;
}

bool mt_hmap_find_ext(const struct mt_hmap *m, uint64_t hash,
		      bool (*same)(const void *ctx, uint64_t val),
		      const void *ctx, uint64_t *val)
{
	uint64_t stored = ext_stored(hash);
	size_t i;

	if (!m->n)
		return false;
	/* Equal hashes go on probing until the key itself matches. */
	for (i = slot_of(m, stored); m->slot[i].key; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == stored && same(ctx, m->slot[i].val)) {
			*val = m->slot[i].val;
			return true;
		}
	return false;
}

int mt_hmap_add_ext(struct mt_hmap *m, uint64_t hash, uint64_t val)
{
	uint64_t stored = ext_stored(hash);
	size_t i;

	if (2 * (m->n + 1) > m->cap && grow(m))
		return -ENOMEM;
	for (i = slot_of(m, stored); m->slot[i].key; i = (i + 1) & (m->cap - 1))
		;
	m->slot[i].key = stored;
	m->slot[i].val = val;
	m->n++;
	return 0;
}

void mt_hmap_free(struct mt_hmap *m)
{
	free(m->slot);
	*m = (struct mt_hmap){0};
}

uint64_t mt_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}
