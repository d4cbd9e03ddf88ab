/*
 * util/: the hash table (hmap.c).
 */
#include "tests/unit/check.h"
#include "util/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_hmap_basics(struct check_state *cs)
{
	struct mt_hmap m = {0};
	uint64_t v = 7;

	CHECK(cs, !mt_hmap_find(&m, 0, &v) && v == 7);
	CHECK(cs, mt_hmap_get(&m, 12) == 0);
	CHECK(cs, !mt_hmap_set(&m, 0, 100));
	CHECK(cs, !mt_hmap_set(&m, UINT64_MAX - 1, 200));
	CHECK(cs, !mt_hmap_set(&m, 5, 0));
	CHECK(cs, m.n == 3);
	CHECK(cs, mt_hmap_find(&m, 0, &v) && v == 100);
	CHECK(cs, mt_hmap_get(&m, UINT64_MAX - 1) == 200);
	/* A value of 0 is there all the same. */
	CHECK(cs, mt_hmap_find(&m, 5, &v) && v == 0);
	CHECK(cs, !mt_hmap_find(&m, 6, &v));
	CHECK(cs, !mt_hmap_set(&m, 0, 101));
	CHECK(cs, m.n == 3 && mt_hmap_get(&m, 0) == 101);
	mt_hmap_free(&m);
	CHECK(cs, !m.slot && !m.n && !m.cap);
	CHECK(cs, !mt_hmap_find(&m, 0, &v));
	CHECK(cs, !mt_hmap_set(&m, 1, 1) && mt_hmap_get(&m, 1) == 1);
	mt_hmap_free(&m);
}

/* Keys in runs and strides, as thread ids and indexes come; every one
 * stays found through the doublings. */
static void test_hmap_many(struct check_state *cs)
{
	enum { N = 200000 };
	struct mt_hmap m = {0};
	int bad = 0;

	for (uint64_t i = 0; i < N; i++)
		if (mt_hmap_set(&m, i * 4096, i) ||
		    mt_hmap_set(&m, (i << 40) + 3, ~i))
			bad++;
	CHECK(cs, bad == 0);
	CHECK(cs, m.n == 2 * N);
	CHECK(cs, m.cap >= 2 * m.n && (m.cap & (m.cap - 1)) == 0);
	for (uint64_t i = 0; i < N && bad < 10; i++) {
		uint64_t v;

		if (!mt_hmap_find(&m, i * 4096, &v) || v != i)
			bad++;
		if (!mt_hmap_find(&m, (i << 40) + 3, &v) || v != ~i)
			bad++;
		if (mt_hmap_find(&m, i * 4096 + 1, &v))
			bad++;
	}
	CHECKF(cs, bad == 0, "%d keys lost", bad);
	mt_hmap_free(&m);
}

struct words {
	const char *const *w;
};

static bool same_word(const void *ctx, uint64_t i)
{
	const struct words *k = ctx;

	return !strcmp(k->w[0], k->w[1 + i]);
}

/* Keys kept outside: equal hashes must not make equal keys. */
static void test_hmap_ext(struct check_state *cs)
{
	static const char *const dict[] = {"alpha", "beta", "gamma", "delta"};
	const char *w[5] = {NULL, "alpha", "beta", "gamma", "delta"};
	struct words k = {w};
	struct mt_hmap m = {0}, c = {0};
	uint64_t v;

	for (uint64_t i = 0; i < 4; i++) {
		uint64_t h = mt_hash_bytes(dict[i], strlen(dict[i]));

		w[0] = dict[i];
		CHECK(cs, !mt_hmap_find_ext(&m, h, same_word, &k, &v));
		CHECK(cs, !mt_hmap_add_ext(&m, h, i));
		/* All on one hash (and its top bit, which is dropped). */
		CHECK(cs, !mt_hmap_find_ext(&c, i << 63, same_word, &k, &v));
		CHECK(cs, !mt_hmap_add_ext(&c, i << 63, i));
	}
	for (uint64_t i = 0; i < 4; i++) {
		w[0] = dict[i];
		CHECK(cs,
		      mt_hmap_find_ext(&m, mt_hash_bytes(w[0], strlen(w[0])),
				       same_word, &k, &v) &&
			      v == i);
		CHECK(cs, mt_hmap_find_ext(&c, 0, same_word, &k, &v) && v == i);
	}
	w[0] = "epsilon";
	CHECK(cs, !mt_hmap_find_ext(&c, 0, same_word, &k, &v));
	CHECK(cs, m.n == 4 && c.n == 4);
	mt_hmap_free(&m);
	mt_hmap_free(&c);
}

static void test_hash_bytes(struct check_state *cs)
{
	/* FNV-1a's published values: the hash must not drift. */
	CHECK(cs, mt_hash_bytes("", 0) == 0xcbf29ce484222325ull);
	CHECK(cs, mt_hash_bytes("a", 1) == 0xaf63dc4c8601ec8cull);
	CHECK(cs, mt_hash_bytes("foobar", 6) == 0x85944171f73967e8ull);
	CHECK(cs, mt_hash_bytes("ab", 1) == mt_hash_bytes("a", 1));
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_hmap_basics);
	RUN(&st, test_hmap_many);
	RUN(&st, test_hmap_ext);
	RUN(&st, test_hash_bytes);
	return CHECK_DONE(&st);
}
