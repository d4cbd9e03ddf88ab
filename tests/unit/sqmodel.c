/* SPDX-License-Identifier: MIT */
/*
 * A model to write and read back (the SQLite writer's tests): random call
 * trees, odd names, a chain DEEP levels deep, gaps and empty threads;
 * and the queries that read a database back.
 */
#include "tests/unit/sqmodel.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* xorshift64*: tests must not depend on the C library's rand(). */
uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/*
 * Appends n slices to thread ti as a random call tree in pre-order: each
 * step opens a child of the innermost open slice or closes it.  Durations
 * are fixed when a slice closes, so the model is exactly what the
 * segments pass produces.
 */
void gen_tree(struct mt_trace *t, size_t ti, size_t n, uint32_t depth,
	      const uint32_t *names, size_t nr_names, const uint32_t *dsos,
	      size_t nr_dsos, uint64_t seed)
{
	struct mt_thread *th = &t->threads[ti];
	uint32_t *stack = calloc(depth + 1, sizeof(*stack));
	uint32_t sp = 0;
	uint64_t now = 1000000 + seed * 7, r = seed * 0x9e3779b9u + 1;

	if (!stack)
		exit(2);
	while (n || sp) {
		now += 1 + rnd(&r) % 300;
		if (n && sp < depth && (sp == 0 || rnd(&r) % 100 < 52)) {
			size_t k = rnd(&r) % nr_names;
			uint64_t fl = rnd(&r) % 64;
			struct mt_slice s = {
				.ts = now,
				.frame = mt_frame_intern(t, names[k],
							 dsos[k % nr_dsos],
							 0x400000 + k * 0x40),
				.depth = sp,
				.parent = sp ? stack[sp - 1] : MT_NONE,
				.segment = (uint32_t)(now / 50000),
			};
			if (fl == 0)
				s.flags = MT_SLICE_INFERRED_START;
			else if (fl == 1)
				s.flags = MT_SLICE_INFERRED_END |
					  MT_SLICE_JOINED |
					  (k % 3 ? 0 : MT_SLICE_DEPTH_GUESSED);
			else if (fl == 2)
				s.flags = MT_SLICE_TAIL | MT_SLICE_UNKNOWN;
			else if (fl == 3)
				s.flags = MT_SLICE_INLINED;
			if (!mt_thread_push(th, &s))
				exit(2);
			stack[sp++] = (uint32_t)(th->nr_slices - 1);
			n--;
		} else {
			struct mt_slice *s = &th->slices[stack[--sp]];

			s->dur = now - s->ts;
		}
	}
	free(stack);
}

/* ------------------------------------------------------------------ */
/* The hand-built model                                                */

const char *const odd_names[] = {
	"main",
	"foo(int, char const*)",
	"it's \"quoted\"",
	"ünïcødé_函数_🙂",
	"semi;colon -- DROP TABLE slice;",
	"tab\there",
	"[syscall]",
	"std::vector<int, std::allocator<int> >::push_back(int const&)",
};

const char *const dso_names[] = {
	"/usr/bin/prog",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/opt/it's here/libü.so",
};

/*
 * Four threads in three processes (one with no process entry): two random
 * trees, one chain DEEP levels deep, one with gaps, an empty-named slice
 * and the longest slice; plus segments, stitches and hits.
 */
void build_model(struct mt_trace *t)
{
	uint32_t names[sizeof(odd_names) / sizeof(*odd_names)];
	uint32_t dsos[sizeof(dso_names) / sizeof(*dso_names)];
	struct mt_thread *th;
	uint64_t ts;

	mt_trace_init(t);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		names[i] = mt_str_intern(&t->strs, odd_names[i]);
	for (size_t i = 0; i < sizeof(dsos) / sizeof(*dsos); i++)
		dsos[i] = mt_str_intern(&t->strs, dso_names[i]);
	if (!mt_trace_add_process(t, 100, "/usr/bin/prog --flag 'x'") ||
	    !mt_trace_add_process(t, 300, "other") ||
	    !mt_trace_add_thread(t, 100, 100, "prog") ||
	    !mt_trace_add_thread(t, 100, 101, "worker \"1\"") ||
	    !mt_trace_add_thread(t, 200, 201, "nøproc") ||
	    !mt_trace_add_thread(t, 300, 300, ""))
		exit(2);

	gen_tree(t, 0, 3000, 40, names, 8, dsos, 3, 1);
	gen_tree(t, 1, 2500, 12, names, 8, dsos, 3, 2);

	/* A chain DEEP deep, every slice one ns inside its parent. */
	th = &t->threads[2];
	for (uint32_t d = 0; d < DEEP; d++) {
		struct mt_slice s = {
			.ts = 5000 + d,
			.dur = 2 * (DEEP - d),
			.frame = mt_frame_intern(t, names[d % 8], 0,
						 0x401000 + d % 8),
			.depth = d,
			.parent = d ? d - 1 : MT_NONE,
			.segment = 3,
		};
		if (!mt_thread_push(th, &s))
			exit(2);
	}

	/* Roots with a gap between them, and the longest slice. */
	th = &t->threads[3];
	ts = 100;
	{
		struct mt_slice s[] = {
			{.ts = ts,
			 .dur = 50,
			 .frame = mt_frame_intern(t, names[0], 0, 0),
			 .parent = MT_NONE,
			 .flags = MT_SLICE_INFERRED_START |
				  MT_SLICE_INFERRED_END,
			 .segment = 0},
			{.ts = ts + 10,
			 .dur = 5,
			 .frame = 0,
			 .depth = 1,
			 .parent = 0,
			 .flags = MT_SLICE_UNKNOWN,
			 .segment = 0},
			{.ts = ts + 50,
			 .dur = 30,
			 .frame = mt_frame_intern(
				 t,
				 mt_str_intern(&t->strs,
					       "[decode gap: overflow]"),
				 0, 0),
			 .parent = MT_NONE,
			 .flags = MT_SLICE_GAP,
			 .segment = MT_NONE},
			{.ts = ts + 80,
			 .dur = 900000000000ull,
			 .frame = mt_frame_intern(t, names[1], dsos[2],
						  0xffffffff81000000ull),
			 .parent = MT_NONE,
			 .flags = MT_SLICE_JOINED,
			 .segment = 1},
			{.ts = ts + 90,
			 .dur = 10,
			 .frame = mt_frame_intern(t, names[6], 0, 0),
			 .depth = 1,
			 .parent = 3,
			 .flags = MT_SLICE_SYSCALL,
			 .segment = 1},
			{.ts = ts + 100,
			 .dur = 10,
			 .frame = mt_frame_intern(
				 t, mt_str_intern(&t->strs, "[untraced]"), 0,
				 0),
			 .depth = 1,
			 .parent = 3,
			 .flags = MT_SLICE_UNTRACED,
			 .segment = 1},
			{.ts = ts + 200,
			 .dur = 7,
			 .frame = mt_frame_intern(
				 t, mt_str_intern(&t->strs, "odd gap"), 0, 0),
			 .depth = 1,
			 .parent = 3,
			 .flags = MT_SLICE_GAP,
			 .segment = 1},
		};
		for (size_t i = 0; i < sizeof(s) / sizeof(*s); i++)
			if (!mt_thread_push(th, &s[i]))
				exit(2);
	}

	{
		struct mt_segment g[] = {
			{.tid = 300,
			 .start = 100,
			 .end = 150,
			 .end_reason = mt_str_intern(&t->strs, "overflow"),
			 .end_ip = 0x401234},
			{.tid = 300,
			 .start = 180,
			 .end = 900000000180ull,
			 .end_reason = mt_str_intern(&t->strs, "end of trace")},
			{.tid = 999,
			 .start = 1,
			 .end = 2,
			 .end_reason =
				 mt_str_intern(&t->strs, "decode error: 'x'")},
		};
		struct mt_stitch s = {
			.tid = 300,
			.seg_a = 0,
			.seg_b = 1,
			.frames_joined = 1,
			.score = 0.75,
			.reason = mt_str_intern(&t->strs, "stack match")};
		struct mt_hit h[] = {
			{.ts = 5000,
			 .mark_start = 4000,
			 .pid = 100,
			 .tid = 101,
			 .ip = 0x401500,
			 .arg = -7,
			 .name = mt_str_intern(&t->hit_names,
					       "mt_take_snapshot")},
			{.ts = 6000,
			 .pid = 7,
			 .tid = 7,
			 .ip = 1,
			 .name = mt_str_intern(&t->hit_names,
					       "mt_take_snapshot")},
		};
		for (size_t i = 0; i < sizeof(g) / sizeof(*g); i++)
			if (!mt_trace_add_segment(t, &g[i]))
				exit(2);
		if (!mt_trace_add_stitch(t, &s))
			exit(2);
		if (!mt_trace_add_guess(t, &(struct mt_guess){.tid = 300,
							      .depth = 2,
							      .ts = 120,
							      .dur = 30}))
			exit(2);
		for (size_t i = 0; i < sizeof(h) / sizeof(*h); i++)
			if (!mt_trace_add_hit(t, &h[i]))
				exit(2);
	}
}

size_t total_slices(const struct mt_trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	return n;
}

/* ------------------------------------------------------------------ */

/* Entries in dir, "." and ".." aside. */
int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One integer from a query, or def when it returns no row. */
int64_t q_int(sqlite3 *db, const char *sql, int64_t def)
{
	sqlite3_stmt *st;
	int64_t v = def;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "  query failed: %s: %s\n", sql,
			sqlite3_errmsg(db));
		return def;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

sqlite3 *db_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* PRAGMA integrity_check says ok: the indexes hold every row, in order. */
int integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;
	int ok;

	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	ok = sqlite3_step(st) == SQLITE_ROW &&
	     !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	return ok;
}
