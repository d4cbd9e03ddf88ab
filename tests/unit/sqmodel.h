/* SPDX-License-Identifier: MIT */
/*
 * sqmodel: a model to write and read back, for the SQLite writer's tests
 * (sqmodel.c).
 */
#ifndef MT_TEST_SQMODEL_H
#define MT_TEST_SQMODEL_H

#include "model/model.h"

#include <sqlite3.h>

#include <stddef.h>
#include <stdint.h>

#define DEEP 2000

extern const char *const odd_names[8];
extern const char *const dso_names[3];

/* xorshift64*: tests must not depend on the C library's rand(). */
uint64_t rnd(uint64_t *s);
/* Appends n slices to thread ti as a random call tree in pre-order. */
void gen_tree(struct mt_trace *t, size_t ti, size_t n, uint32_t depth,
	      const uint32_t *names, size_t nr_names, const uint32_t *dsos,
	      size_t nr_dsos, uint64_t seed);
/* The model every round-trip test writes. */
void build_model(struct mt_trace *t);
size_t total_slices(const struct mt_trace *t);

/* Entries in dir, "." and ".." aside. */
int dir_entries(const char *dir);
double now_s(void);
/* One integer from a query, or def when it returns no row. */
int64_t q_int(sqlite3 *db, const char *sql, int64_t def);
sqlite3 *db_open(const char *path);
/* PRAGMA integrity_check says ok: the indexes hold every row, in order. */
int integrity_ok(sqlite3 *db);

#endif
