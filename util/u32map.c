#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

static size_t u32map_slot(const struct mt_u32map *m, uint32_t key)
{
	size_t h = ((size_t)key * 0x9E3779B1u) & (m->cap - 1);

	while (m->key[h] && m->key[h] != key + 1)
		h = (h + 1) & (m->cap - 1);
	return h;
}

uint64_t mt_u32map_get(const struct mt_u32map *m, uint32_t key)
{
	size_t h;

	if (!m->cap)
		return 0;
	h = u32map_slot(m, key);
	return m->key[h] ? m->val[h] : 0;
}

/* Half full at most, so that a probe ends soon. */
static int u32map_grow(struct mt_u32map *m)
{
	struct mt_u32map g = {.cap = m->cap ? 2 * m->cap : 64};

	g.key = calloc(g.cap, sizeof(*g.key));
	g.val = malloc(g.cap * sizeof(*g.val));
	if (!g.key || !g.val) {
		mt_u32map_free(&g);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->key[i]) {
			size_t k = u32map_slot(&g, m->key[i] - 1);

			g.key[k] = m->key[i];
			g.val[k] = m->val[i];
			g.n++;
		}
	mt_u32map_free(m);
	*m = g;
	return 0;
}

int mt_u32map_set(struct mt_u32map *m, uint32_t key, uint64_t val)
{
	size_t h;

	if (2 * (m->n + 1) > m->cap && u32map_grow(m))
		return -ENOMEM;
	h = u32map_slot(m, key);
	if (!m->key[h]) {
		m->key[h] = key + 1;
		m->n++;
	}
	m->val[h] = val;
	return 0;
}

void mt_u32map_free(struct mt_u32map *m)
{
	free(m->key);
	free(m->val);
	m->key = NULL;
	m->val = NULL;
	m->cap = m->n = 0;
}
