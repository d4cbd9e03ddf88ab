/* SPDX-License-Identifier: MIT */
/*
 * writers/perfetto: models written, then read back two ways.  protoc
 * decodes the plain output against tests/proto/perfetto_subset.proto (the
 * framing and field numbers); our own reader (pftrace_read.c) replays the
 * packets the way Perfetto's importer does, and the slices it rebuilds
 * must be exactly the model's.
 */
#include "model/model.h"
#include "tests/unit/check.h"
#include "tests/unit/pftrace_read.h"
#include "tests/unit/testfs.h"
#include "util/util.h"
#include "util/version.h"
#include "writers/pf_internal.h"
#include "writers/writers.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

/* Files in dir whose name contains part. */
static int count_files(const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strstr(e->d_name, part))
			n++;
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Building models                                                     */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static uint32_t str_id(struct mt_trace *t, const char *s)
{
	uint32_t id = mt_str_intern(&t->strs, s);

	if (id == MT_NONE) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return id;
}

/* Appends a slice; parent is found from depth and the thread's stack. */
struct builder {
	struct mt_thread *th;
	uint32_t stack[4096];
	uint32_t sp;
};

static struct mt_slice *add(struct mt_trace *t, struct builder *b,
			    uint32_t depth, uint64_t ts, uint64_t dur,
			    const char *name, uint32_t flags)
{
	struct mt_slice s = {0}, *r;

	b->sp = depth;
	s.ts = ts;
	s.dur = dur;
	{
		uint32_t n = str_id(t, name);

		s.frame = mt_frame_intern(
			t, n,
			str_id(t,
			       depth % 2 ? "/usr/lib/libc.so.6" : "/bin/prog"),
			0x400000 + (uint64_t)n * 0x40);
	}
	s.depth = depth;
	s.parent = depth ? b->stack[depth - 1] : MT_NONE;
	s.flags = flags;
	r = mt_thread_push(b->th, &s);
	if (!r) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	b->stack[depth] = (uint32_t)(b->th->nr_slices - 1);
	return r;
}

static void add_hit(struct mt_trace *t, uint64_t mark, uint64_t ts,
		    uint32_t tid, const char *name, int64_t arg)
{
	struct mt_hit h = {0};

	h.ts = ts;
	h.mark_start = mark;
	h.pid = 100;
	h.tid = tid;
	h.ip = 0x401234 + ts;
	h.arg = arg;
	if (!mt_trace_add_named_hit(t, &h, name))
		exit(2);
}

/*
 * Two processes, three threads, nesting, zero-duration slices (leaves,
 * parents, siblings meeting end to start), a decode gap, flags, names
 * that need escaping, a thread with no slices, overlapping hits, source
 * positions and an inlined call.
 */
static void model_basic(struct mt_trace *t)
{
	struct builder b = {0};
	const uint64_t T = 1000000000ull;

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 100, "/bin/prog --flag") ||
	    !mt_trace_add_process(t, 200, "other"))
		exit(2);

	b.th = mt_trace_add_thread(t, 100, 100, "main-thread");
	add(t, &b, 0, T + 0, 1000, "main", MT_SLICE_INFERRED_START);
	add(t, &b, 1, T + 10, 100, "foo", 0);
	add(t, &b, 2, T + 20, 0, "leaf0", 0);
	add(t, &b, 2, T + 20, 30, "bar", MT_SLICE_TAIL);
	add(t, &b, 3, T + 50, 0, "zero-parent", 0);
	add(t, &b, 4, T + 50, 0, "zero-child", 0);
	add(t, &b, 2, T + 50, 60, "after-bar", 0);
	/* Source positions, and a call the compiler inlined. */
	t->frames[b.th->slices[b.th->nr_slices - 1].frame].source =
		str_id(t, "/src/prog.c:12");
	b.th->slices[b.th->nr_slices - 1].site = str_id(t, "/src/prog.c:40");
	add(t, &b, 3, T + 60, 10, "inlined-fn", MT_SLICE_INLINED)->site =
		str_id(t, "/src/prog.c:14");
	add(t, &b, 1, T + 110, 200, "[decode gap: overflow]", MT_SLICE_GAP);
	add(t, &b, 1, T + 310, 400, "joined \"quoted\" \\ back\nline",
	    MT_SLICE_JOINED | MT_SLICE_DEPTH_GUESSED);
	add(t, &b, 2, T + 310, 400, "na\xc3\xafve \xe2\x86\x92 utf8",
	    MT_SLICE_INFERRED_END);
	add(t, &b, 0, T + 1000, 5, "main", 0);
	add(t, &b, 0, T + 2000, 0, "last-zero", 0);

	b.th = mt_trace_add_thread(t, 100, 101, "worker");
	add(t, &b, 0, T + 5, 50, "main", 0);
	add(t, &b, 1, T + 6, 4, "foo", 0);
	add(t, &b, 1, T + 10, 4, "foo", 0);
	add(t, &b, 0, T + 55, 10, "", 0);
	b.th->slices[b.th->nr_slices - 1].frame =
		mt_frame_intern(t, str_id(t, ""), 0, 0);

	b.th = mt_trace_add_thread(t, 200, 200, "");
	b.th = mt_trace_add_thread(t, 200, 201, "busy");
	/* Groups of three: a root, a child, a zero-length grandchild. */
	for (int i = 0; i < 200; i++) {
		uint64_t pos = (uint64_t)(i % 3), g = (uint64_t)(i / 3);

		add(t, &b, (uint32_t)pos, T + 30 * g + pos,
		    pos == 2 ? 0 : 10 - 5 * pos, i % 5 ? "loop" : "loop-5", 0);
	}

	add_hit(t, T + 100, T + 900, 100, "mt_take_snapshot", -1);
	add_hit(t, 0, T + 950, 101, "mt_take_snapshot", 42);
	add_hit(t, T + 500, T + 1200, 100, "", 7);
	add_hit(t, T + 600, T + 700, 100, "nested", 0);
	add_hit(t, T + 600, T + 600, 100, "zero", 0);
}

/*
 * One thread: a call chain n deep whose frames end 10 ns apart, then
 * leaves and siblings at the bottom, half way up and near the top.
 */
static void model_deep(struct mt_trace *t, uint32_t n)
{
	struct builder b = {0};
	const uint64_t T = 5000000ull;
	char name[32];

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 7, "deep"))
		exit(2);
	b.th = mt_trace_add_thread(t, 7, 7, "deep");
	for (uint32_t d = 0; d < n; d++) {
		snprintf(name, sizeof(name), "f%u", d % 37);
		add(t, &b, d, T + d, n + 10 * (uint64_t)(n - d) - d, name, 0);
	}
	add(t, &b, n, T + n, 0, "leaf", 0);
	add(t, &b, n, T + n, 1, "leaf", 0);
	add(t, &b, n - 1, T + n + 11, 3, "sib", 0);
	add(t, &b, n / 2, T + n + 10 * (uint64_t)(n - n / 2) + 2, 1, "mid", 0);
	add(t, &b, 1, T + n + 10 * (uint64_t)(n - 1) + 1, 2, "top", 0);
	if (!mt_trace_add_hit(t, &(struct mt_hit){.ts = T + 10, .tid = 7}))
		exit(2);
}

/* Random nesting up to 40 deep, 2000 names of about 30 characters, a few
 * dsos, 1-300 ns between events: what a real capture looks like. */
static void model_random(struct mt_trace *t, size_t nslices, uint32_t nthreads,
			 uint64_t seed)
{
	struct rng r = {seed};
	uint32_t names[2000], dsos[5];
	char buf[64];

	mt_trace_init(t);
	if (!mt_trace_add_process(t, 1000, "/usr/bin/server --port 80"))
		exit(2);
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "ns::module%02d::function_%d_impl",
			 i % 50, i);
		names[i] = str_id(t, buf);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(buf, sizeof(buf), "/usr/lib/x86_64-linux-gnu/lib%d.so",
			 i);
		dsos[i] = str_id(t, buf);
	}
	for (uint32_t k = 0; k < nthreads; k++) {
		struct mt_thread *th;
		uint32_t stack[40], sp = 0;
		uint64_t ts = 1000000;
		size_t want = nslices / nthreads;

		snprintf(buf, sizeof(buf), "worker-%u", k);
		th = mt_trace_add_thread(t, 1000, 1000 + k, buf);
		if (!th)
			exit(2);
		while (th->nr_slices < want || sp) {
			uint64_t x = rng_next(&r);

			if (th->nr_slices < want && sp < 40 &&
			    (sp == 0 || x % 100 < 50)) {
				uint32_t n = (uint32_t)((x >> 8) % 2000);
				struct mt_slice s = {0};

				/* Skew: some functions are called far more
				 * often than others. */
				if ((x >> 20) % 4)
					n %= 64;
				s.ts = ts;
				s.frame = mt_frame_intern(
					t, names[n], dsos[n % 5],
					0x7f3a12000000ull + n * 0x80);
				s.depth = sp;
				s.parent = sp ? stack[sp - 1] : MT_NONE;
				s.flags = x % 1000 == 0 ? MT_SLICE_TAIL : 0;
				if (!mt_thread_push(th, &s))
					exit(2);
				stack[sp++] = (uint32_t)(th->nr_slices - 1);
			} else {
				struct mt_slice *s = &th->slices[stack[--sp]];

				s->dur = ts - s->ts;
			}
			ts += 1 + (x >> 40) % 300;
		}
	}
}

static void write_ok(struct check_state *st, const struct mt_trace *t,
		     const char *path, uint32_t max_depth, int no_compress,
		     struct wr_stats *ws)
{
	struct wr_perfetto_opts o = {.no_compress = no_compress,
				     .max_depth = max_depth};
	char err[512] = "";
	int rc = wr_perfetto(t, path, &o, ws, err, sizeof(err));

	CHECKF(st, rc == 0, "wr_perfetto: %d: %s", rc, err);
}

static size_t model_slices(const struct mt_trace *t)
{
	size_t n = t->nr_hits;

	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	return n;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void test_basic(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/basic%d.pftrace", dir, nc);
		memset(&ws, 0xff, sizeof(ws));
		write_ok(st, &t, path, 0, nc, &ws);
		check_file(st, &t, path, 512, !nc);
		CHECK(st, ws.slices == model_slices(&t));
		CHECK(st, ws.tracks == 4);
		CHECK(st, ws.bytes > 0);
	}
	/* A small limit splits even this model across tracks. */
	snprintf(path, sizeof(path), "%s/basic-d2.pftrace", dir);
	write_ok(st, &t, path, 2, 0, &ws);
	check_file(st, &t, path, 2, 1);
	CHECK(st, count_files(dir, ".tmp.") == 0);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/* Go: a track per goroutine under its process with its turns, a
 * "goroutines" child track of the thread, and the resumed flags as args;
 * the thread's own slices as ever. */
static void test_goroutines(struct check_state *st)
{
	struct mt_trace t;
	struct builder b = {0};
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128];
	uint64_t proc = 0, thread = 0, gtrack = 0, ttrack = 0;
	size_t on_g = 0, on_t = 0, resumed = 0;

	tmpdir_make(dir, sizeof(dir));
	mt_trace_init(&t);
	if (!mt_trace_add_process(&t, 100, "gofib"))
		exit(2);
	b.th = mt_trace_add_thread(&t, 100, 100, "gofib");
	for (uint32_t i = 0; i < 3; i++) {
		struct mt_segment g = {.tid = 100,
				       .start = 1000 + 100 * i,
				       .end = 1100 + 100 * i,
				       .goroutine = i == 1 ? 0 : 1};

		if (!mt_trace_add_segment(&t, &g))
			exit(2);
		add(&t, &b, 0, 1000 + 100 * i, 50,
		    i == 1 ? "park_m" : "main.work",
		    i == 2 ? MT_SLICE_RESUMED : 0)
			->segment = i;
	}
	{
		struct mt_goroutine g = {.pid = 100,
					 .goid = 7,
					 .start = str_id(&t, "main.work"),
					 .first = 1000,
					 .last = 1300};

		if (!mt_trace_add_goroutine(&t, &g))
			exit(2);
	}
	snprintf(path, sizeof(path), "%s/go.pftrace", dir);
	write_ok(st, &t, path, 0, 0, &ws);
	CHECK(st, rd_file(&r, path) == 0);
	for (size_t i = 0; i < r.nr_tracks; i++) {
		const struct rd_track *k = &r.tracks[i];
		const char *name =
			k->name == MT_NONE ? "" : mt_str(&r.strs, k->name);

		if (k->is_thread)
			thread = k->uuid;
		else if (!strcmp(name, "goroutine 7 (main.work)"))
			gtrack = k->uuid, proc = k->parent;
		else if (!strcmp(name, "goroutines"))
			ttrack = k->uuid;
	}
	CHECK(st, gtrack && ttrack && thread && proc == 1);
	for (size_t i = 0; i < r.nr_tracks; i++)
		if (r.tracks[i].uuid == ttrack)
			CHECK(st, r.tracks[i].parent == thread);
	for (size_t i = 0; i < r.nr_slices; i++) {
		const struct rd_slice *s = &r.slices[i];
		const char *name =
			s->o.name == MT_NONE ? "" : mt_str(&r.strs, s->o.name);

		if (s->track == gtrack)
			on_g += !strcmp(name, "on thread 100") &&
				(s->ts == 1000 || s->ts == 1200) &&
				s->dur == 100;
		if (s->track == ttrack)
			on_t += !strcmp(name, "goroutine 7 (main.work)");
		resumed += !!(s->o.flags & MT_SLICE_RESUMED);
	}
	CHECKF(st, on_g == 2 && on_t == 2 && resumed == 1,
	       "%zu turns on the goroutine's track, %zu on the thread's, "
	       "%zu resumed",
	       on_g, on_t, resumed);
	rd_free(&r);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/* The trace says what made it, and from what capture. */
static void test_made_by(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128], line[128], want[320];

	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);
	snprintf(path, sizeof(path), "%s/made.pftrace", dir);
	mt_version_line("mt-convert", line, sizeof(line));
	write_ok(st, &t, path, 0, 0, &ws);
	CHECK(st, rd_file(&r, path) == 0);
	CHECKF(st, !strcmp(r.made_by, line), "made_by '%s'", r.made_by);
	rd_free(&r);
	snprintf(t.recorded_by, sizeof(t.recorded_by), "%s",
		 "mt-capture 9.9 (commit abc)");
	snprintf(want, sizeof(want), "%s, from a capture by %s", line,
		 t.recorded_by);
	write_ok(st, &t, path, 0, 1, &ws);
	CHECK(st, rd_file(&r, path) == 0);
	CHECKF(st, !strcmp(r.made_by, want), "made_by '%s'", r.made_by);
	CHECK(st, !strncmp(r.made_by, "mt-convert " MT_VERSION " (commit ",
			   strlen("mt-convert " MT_VERSION " (commit ")));
	rd_free(&r);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static void test_deep(struct check_state *st)
{
	static const uint32_t limits[] = {0, 512, 4, 1, 700};
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	model_deep(&t, 2000);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		uint32_t md = limits[i] ? limits[i] : 512;

		for (int nc = 0; nc < 2; nc++) {
			snprintf(path, sizeof(path), "%s/deep%zu-%d.pftrace",
				 dir, i, nc);
			write_ok(st, &t, path, limits[i], nc, &ws);
			check_file(st, &t, path, md, !nc);
			/* The deepest slices are at depth 2000. */
			CHECKF(st, ws.tracks == 2000 / md + 1,
			       "max_depth %u: %u tracks", md, ws.tracks);
		}
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/*
 * The threads' sequences are encoded side by side with jobs: the file
 * must be the one a single thread writes, byte for byte, compressed or
 * not.  Seven threads, one of them empty and one 300 deep, written with
 * a depth limit of 4 as well, so that every thread makes level tracks;
 * and batches that end in the middle of a thread.  With 2 and 3 jobs a
 * job is a thread, with 8 a piece.
 */
static void test_jobs_same(struct check_state *st)
{
	static const unsigned jobs[] = {1, 2, 3, 8};
	static const uint32_t limits[] = {0, 4};
	struct mt_trace t;
	struct builder b = {0};
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	model_random(&t, 120000, 5, 7);
	if (!mt_trace_add_thread(&t, 1000, 1900, "idle"))
		exit(2);
	b.th = mt_trace_add_thread(&t, 1000, 1901, "deep");
	if (!b.th)
		exit(2);
	for (uint32_t d = 0; d < 300; d++)
		add(&t, &b, d, 2000000 + d, 1000 - d, d % 2 ? "down" : "up", 0);
	for (size_t l = 0; l < 2; l++)
		for (int nc = 0; nc < 2; nc++) {
			uint8_t *ref = NULL;
			size_t ref_len = 0;
			struct wr_stats ref_ws = {0};

			for (size_t k = 0; k < sizeof(jobs) / sizeof(jobs[0]);
			     k++) {
				struct wr_perfetto_opts o = {.no_compress = nc,
							     .max_depth =
								     limits[l],
							     .jobs = jobs[k]};
				struct wr_stats ws = {0};
				char err[512] = "";
				uint8_t *got;
				size_t len = 0;

				snprintf(path, sizeof(path),
					 "%s/j%u-%zu-%d.pftrace", dir, jobs[k],
					 l, nc);
				CHECKF(st,
				       wr_perfetto(&t, path, &o, &ws, err,
						   sizeof(err)) == 0,
				       "-j %u: %s", jobs[k], err);
				got = slurp(path, &len);
				CHECK(st, got);
				if (!ref) {
					ref = got;
					ref_len = len;
					ref_ws = ws;
					check_file(st, &t, path,
						   limits[l] ? limits[l] : 512,
						   !nc);
					continue;
				}
				CHECKF(st,
				       got && len == ref_len &&
					       !memcmp(got, ref, len),
				       "-j %u, depth %u, %s: not the bytes "
				       "of -j 1",
				       jobs[k], limits[l],
				       nc ? "plain" : "compressed");
				CHECK(st, ws.slices == ref_ws.slices &&
						  ws.tracks == ref_ws.tracks);
				/* Its pools' threads did work the caller's
				 * clock does not see. */
				CHECK(st, ws.cpu_s > 0);
				free(got);
			}
			free(ref);
		}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/*
 * Slices of the given depths (each at most one deeper than the one
 * before) on a new thread, 1 ns between events and every slice ending
 * before the next one that is not inside it starts, named from 300
 * names so that each piece interns its own.
 */
static struct mt_thread *thread_of_depths(struct mt_trace *t, uint32_t tid,
					  const uint32_t *depth, size_t n)
{
	struct builder b = {0};
	uint64_t ts = 1000000;
	char name[32];

	b.th = mt_trace_add_thread(t, 1000, tid, "pieces");
	if (!b.th)
		exit(2);
	for (size_t i = 0; i <= n; i++) {
		/* Those that end here get their durations: the rest of the
		 * stack above the next slice's depth (all of it at the end). */
		uint32_t to = i < n ? depth[i] : 0;

		while (b.sp > to) {
			struct mt_slice *s = &b.th->slices[b.stack[--b.sp]];

			s->dur = ts++ - s->ts;
		}
		if (i == n)
			break;
		snprintf(name, sizeof(name), "piece_fn_%zu", i % 300);
		add(t, &b, depth[i], ts++, 0, name, 0);
		b.sp = depth[i] + 1;
	}
	return b.th;
}

/* Each file as the first, byte for byte, for each job count. */
static void check_jobs_same(struct check_state *st, const struct mt_trace *t,
			    const char *dir, uint32_t max_depth, int nc,
			    int exact)
{
	static const unsigned jobs[] = {1, 2, 4};
	uint8_t *ref = NULL;
	size_t ref_len = 0;
	struct wr_stats ref_ws = {0};
	char path[128];

	for (size_t k = 0; k < sizeof(jobs) / sizeof(jobs[0]); k++) {
		struct wr_perfetto_opts o = {.no_compress = nc,
					     .max_depth = max_depth,
					     .jobs = jobs[k]};
		struct wr_stats ws = {0};
		char err[512] = "";
		uint8_t *got;
		size_t len = 0;

		snprintf(path, sizeof(path), "%s/p%u-%u-%d-%d.pftrace", dir,
			 jobs[k], max_depth, nc, exact);
		CHECKF(st, wr_perfetto(t, path, &o, &ws, err, sizeof(err)) == 0,
		       "-j %u: %s", jobs[k], err);
		got = slurp(path, &len);
		CHECK(st, got);
		if (exact) {
			check_file(st, t, path, max_depth ? max_depth : 512,
				   !nc);
		} else {
			struct rd r;

			/* Clamped, so not the model's slices, but all of
			 * them, replayed cleanly. */
			CHECKF(st, rd_file(&r, path) == 0,
			       "-j %u: %d errors, first: %s", jobs[k], r.errors,
			       r.first_error);
			CHECK(st, r.nr_slices == model_slices(t));
			rd_free(&r);
		}
		if (!ref) {
			ref = got;
			ref_len = len;
			ref_ws = ws;
			continue;
		}
		CHECKF(st, got && len == ref_len && !memcmp(got, ref, len),
		       "-j %u, depth %u, %s: not the bytes of -j 1", jobs[k],
		       max_depth, nc ? "plain" : "compressed");
		CHECK(st,
		      ws.slices == ref_ws.slices && ws.tracks == ref_ws.tracks);
		free(got);
	}
	free(ref);
}

/*
 * One thread's slices are encoded in pieces of PF_PIECE_SLICES, side by
 * side with jobs, each from what a scan of the pieces before found.  A
 * thread of three and a half pieces: its root open across every cut,
 * calls of depth 1-3 popped at the start of a piece, a chain 10 deep
 * that crosses the first cut and makes its level tracks (depth limit 4)
 * in the second piece, one 14 deep open 9 deep across the second cut
 * whose deepest level track is made in the third; a second thread with
 * a level track of its own.  Then a thread that breaks its
 * order at a cut (a start before the previous one, a depth jump, a slice
 * outliving its parent), whose clamped times the next piece must start
 * from.  With 1, 2 (whole threads) and 4 jobs (pieces), compressed or
 * not: the same bytes, and the slices replayed cleanly (exactly the
 * model's, where it is sound).
 */
static void test_pieces_joined(struct check_state *st)
{
	const size_t P = PF_PIECE_SLICES, n = 3 * P + P / 2;
	static const uint32_t limits[] = {0, 4};
	uint32_t *depth = calloc(n, sizeof(*depth));
	uint32_t small[20];
	struct mt_trace t;
	struct mt_thread *th;
	char dir[64];

	if (!depth)
		exit(2);
	tmpdir_make(dir, sizeof(dir));
	for (size_t i = 1; i < n; i++)
		depth[i] = 1 + (uint32_t)((i - 1) % 3);
	for (size_t i = P - 3; i < P + 7; i++)
		depth[i] = 1 + (uint32_t)(i - (P - 3));
	for (size_t i = 2 * P - 8; i < 2 * P + 6; i++)
		depth[i] = 1 + (uint32_t)(i - (2 * P - 8));
	for (size_t i = 0; i < 20; i++)
		small[i] = (uint32_t)(i < 7 ? i : i % 3);

	mt_trace_init(&t);
	if (!mt_trace_add_process(&t, 1000, "pieces"))
		exit(2);
	thread_of_depths(&t, 1001, depth, n);
	thread_of_depths(&t, 1002, small, 20);
	CHECK(st, t.threads[0].nr_slices == n &&
			  pf_thread_pieces(&t.threads[0]) == 4);
	for (size_t l = 0; l < 2; l++)
		for (int nc = 0; nc < 2; nc++)
			check_jobs_same(st, &t, dir, limits[l], nc, 1);
	mt_trace_free(&t);

	mt_trace_init(&t);
	if (!mt_trace_add_process(&t, 1000, "pieces"))
		exit(2);
	th = thread_of_depths(&t, 1001, depth, P + 50);
	th->slices[P - 1].ts -= 5000;
	th->slices[P - 2].dur += 100000;
	th->slices[P + 1].depth += 3;
	thread_of_depths(&t, 1002, small, 20);
	for (int nc = 0; nc < 2; nc++)
		check_jobs_same(st, &t, dir, 2, nc, 0);
	mt_trace_free(&t);
	free(depth);
	tmpdir_remove(dir);
}

static void test_empty(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	mt_trace_init(&t);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/empty%d.pftrace", dir, nc);
		write_ok(st, &t, path, 0, nc, &ws);
		CHECK(st, ws.bytes == 0 && ws.slices == 0 && ws.tracks == 0);
	}
	/* Threads with no slices: just their descriptors. */
	if (!mt_trace_add_thread(&t, 3, 3, "idle"))
		exit(2);
	write_ok(st, &t, path, 0, 0, &ws);
	CHECK(st, rd_file(&r, path) == 0);
	CHECK(st, r.nr_tracks == 1 && r.nr_slices == 0);
	rd_free(&r);
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/*
 * A model that breaks its own rules (siblings overlapping, a child
 * outliving its parent, a start before the previous one, a depth that
 * jumps) must still give a file that replays cleanly: balanced, nested,
 * time never going backwards.  Its slices are not expected to survive
 * exactly.
 */
static void test_bad_model(struct check_state *st)
{
	struct mt_trace t;
	struct builder b = {0};
	struct wr_stats ws;
	struct rd r;
	char dir[64], path[128];

	tmpdir_make(dir, sizeof(dir));
	mt_trace_init(&t);
	b.th = mt_trace_add_thread(&t, 1, 1, "bad");
	if (!b.th)
		exit(2);
	add(&t, &b, 0, 100, 50, "root", 0);
	add(&t, &b, 1, 110, 100, "outlives-parent", 0);
	add(&t, &b, 1, 120, 10, "overlaps-sibling", 0);
	add(&t, &b, 1, 90, 5, "starts-too-early", 0);
	add(&t, &b, 3, 130, 5, "depth-jumps", 0);
	add(&t, &b, 0, 125, 1, "second-root-early", 0);
	for (int nc = 0; nc < 2; nc++) {
		snprintf(path, sizeof(path), "%s/bad%d.pftrace", dir, nc);
		write_ok(st, &t, path, 2, nc, &ws);
		CHECKF(st, rd_file(&r, path) == 0, "%d errors, first: %s",
		       r.errors, r.first_error);
		CHECK(st, r.nr_slices == 6);
		for (size_t i = 0; i < r.nr_tracks; i++)
			CHECK(st, r.tracks[i].max_open <= 2);
		rd_free(&r);
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static void test_errors(struct check_state *st)
{
	struct mt_trace t;
	struct wr_stats ws = {0};
	char dir[64], path[160], err[512];
	int rc;

	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);

	/* No such directory. */
	snprintf(path, sizeof(path), "%s/missing/out.pftrace", dir);
	err[0] = 0;
	rc = wr_perfetto(&t, path, NULL, &ws, err, sizeof(err));
	CHECK(st, rc < 0);
	CHECKF(st, strstr(err, path) != NULL, "message: %s", err);
	CHECK(st, !strchr(err, '\n'));
	CHECK(st, ws.bytes == 0);

	/* The name is taken by a directory: everything is written, and the
	 * final rename fails; the temporary file must go. */
	snprintf(path, sizeof(path), "%s/isdir.pftrace", dir);
	if (mkdir(path, 0755))
		exit(2);
	err[0] = 0;
	rc = wr_perfetto(&t, path, NULL, &ws, err, sizeof(err));
	CHECK(st, rc < 0);
	CHECKF(st, strstr(err, path) != NULL, "message: %s", err);
	CHECK(st, !strchr(err, '\n'));
	CHECK(st, count_files(dir, ".tmp.") == 0);

	/* A message buffer that is too short, or none at all. */
	rc = wr_perfetto(&t, path, NULL, NULL, err, 8);
	CHECK(st, rc < 0 && strlen(err) < 8);
	rc = wr_perfetto(&t, path, NULL, NULL, NULL, 0);
	CHECK(st, rc < 0);
	CHECK(st, count_files(dir, ".tmp.") == 0);

	mt_trace_free(&t);
	tmpdir_remove(dir);
}

/*
 * A file that cannot grow past 1 MiB (a full disk, a quota): the write
 * that fails is one of many batches, done on the writer's own thread
 * while the next fills.  The error still comes back as one line naming
 * the file, and nothing is left behind.  In a child, as the limit is the
 * process's.
 */
static int write_limited(const struct mt_trace *t, const char *dir,
			 int no_compress, unsigned jobs)
{
	struct wr_perfetto_opts o = {.no_compress = no_compress, .jobs = jobs};
	struct rlimit lim = {1u << 20, 1u << 20};
	char path[160], err[512] = "";
	int bad = 0, rc;

	snprintf(path, sizeof(path), "%s/limited%d.pftrace", dir, no_compress);
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim))
		return 100;
	rc = wr_perfetto(t, path, &o, NULL, err, sizeof(err));
	if (rc != -EFBIG)
		bad |= 1;
	if (!strstr(err, path) || !strstr(err, "write: ") ||
	    !strstr(err, strerror(EFBIG)) || strchr(err, '\n'))
		bad |= 2;
	if (access(path, F_OK) == 0 || count_files(dir, ".tmp.") != 0)
		bad |= 4;
	if (bad)
		fprintf(stderr, "# rc %d, message: %s\n", rc, err);
	return bad;
}

static void test_write_error(struct check_state *st)
{
	struct mt_trace t;
	char dir[64];

	tmpdir_make(dir, sizeof(dir));
	/* about 12 MB plain, 1.5 MB compressed: several batches; with
	 * jobs, the threads encoded side by side stop too. */
	model_random(&t, 300000, 4, 42);
	for (int k = 0; k < 4; k++) {
		int nc = k & 1;
		unsigned jobs = k & 2 ? 4 : 1;
		pid_t pid = fork();
		int status = 0;

		if (pid == 0)
			_exit(write_limited(&t, dir, nc, jobs));
		CHECK(st, pid > 0 && waitpid(pid, &status, 0) == pid);
		CHECKF(st, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "%s, -j %u: status %d", nc ? "plain" : "compressed",
		       jobs, status);
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

static int run_protoc(const char *proto_dir, const char *in, const char *out)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path='%s' --decode=perfetto.protos.Trace "
		 "'%s/perfetto_subset.proto' <'%s' >'%s' 2>&1",
		 proto_dir, proto_dir, in, out);
	return system(cmd);
}

static void test_protoc_decode(struct check_state *st)
{
	static const char *const want[] = {
		"trusted_packet_sequence_id: 2",
		"sequence_flags: 1",
		"sequence_flags: 2",
		"type: TYPE_SLICE_BEGIN",
		"type: TYPE_SLICE_END",
		"type: TYPE_INSTANT",
		"thread_name: \"main-thread\"",
		"process_name: \"/bin/prog --flag\"",
		"pid: 100",
		"tid: 101",
		"name: \"Snapshot symbol hits\"",
		"name: \"Snapshot symbol hits (2)\"",
		"name: \"[decode gap: overflow]\"",
		"name: \"main\"",
		"clock_id: 64",
		"is_incremental: true",
		"timestamp_clock_id: 64",
		"pointer_value: ",
		"string_value_iid: ",
		"bool_value: true",
		"int_value: -1",
		"name: \"inferred_start\"",
		"str: \"/usr/lib/libc.so.6\"",
		"track_uuid: ",
		"parent_uuid: ",
		"name: \"deep (depth 4+)\"",
	};
	struct mt_trace t, d;
	struct wr_stats ws;
	const char *root = getenv("MT_ROOT");
	char dir[64], path[128], out[128], proto[512];
	size_t len;
	char *text;

	snprintf(proto, sizeof(proto), "%s/tests/proto", root ? root : ".");
	tmpdir_make(dir, sizeof(dir));
	model_basic(&t);
	model_deep(&d, 20);
	snprintf(path, sizeof(path), "%s/basic.pftrace", dir);
	snprintf(out, sizeof(out), "%s/basic.txt", dir);
	write_ok(st, &t, path, 0, 1, &ws);
	CHECK(st, run_protoc(proto, path, out) == 0);
	text = (char *)slurp(out, &len);
	CHECK(st, text != NULL);
	if (text) {
		text[len] = 0;
		/* Append the deep model's decoding. */
		snprintf(path, sizeof(path), "%s/deep.pftrace", dir);
		write_ok(st, &d, path, 4, 1, &ws);
		CHECK(st, run_protoc(proto, path, out) == 0);
	}
	if (text) {
		size_t len2;
		char *t2 = (char *)slurp(out, &len2);
		char *all = t2 ? malloc(len + len2 + 1) : NULL;

		CHECK(st, all != NULL);
		if (all) {
			memcpy(all, text, len);
			memcpy(all + len, t2, len2);
			all[len + len2] = 0;
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]);
			     i++)
				CHECKF(st, strstr(all, want[i]),
				       "protoc output lacks '%s'", want[i]);
			/* protoc prints fields it does not know by number:
			 * every field we write must be in the subset. */
			for (char *l = all; l; l = strchr(l + 1, '\n')) {
				char *p = l + (*l == '\n');

				p += strspn(p, " ");
				CHECKF(st, !(*p >= '0' && *p <= '9'),
				       "unknown field: %.40s", p);
			}
		}
		free(all);
		free(t2);
	}
	free(text);
	mt_trace_free(&t);
	mt_trace_free(&d);
	tmpdir_remove(dir);
}

/* Size and speed on a capture-like model; printed, not asserted. */
static void test_size(struct check_state *st)
{
	const char *env = getenv("MT_PERFETTO_SLICES");
	size_t n = env ? strtoul(env, NULL, 10) : 1000000;
	struct mt_trace t;
	struct wr_stats ws;
	char dir[64], path[128];
	double t0, t1;

	tmpdir_make(dir, sizeof(dir));
	model_random(&t, n, 4, 0x9e3779b97f4a7c15ull);
	for (int nc = 1; nc >= 0; nc--) {
		snprintf(path, sizeof(path), "%s/size%d.pftrace", dir, nc);
		t0 = now_s();
		write_ok(st, &t, path, 0, nc, &ws);
		t1 = now_s();
		printf("# %s: %" PRIu64 " slices, %" PRIu64
		       " bytes, %.2f bytes/slice, %.3f s\n",
		       nc ? "uncompressed" : "compressed", ws.slices, ws.bytes,
		       (double)ws.bytes / (double)ws.slices, t1 - t0);
		check_file(st, &t, path, 512, !nc);
	}
	mt_trace_free(&t);
	tmpdir_remove(dir);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_basic);
	RUN(&st, test_made_by);
	RUN(&st, test_goroutines);
	RUN(&st, test_deep);
	RUN(&st, test_jobs_same);
	RUN(&st, test_pieces_joined);
	RUN(&st, test_empty);
	RUN(&st, test_bad_model);
	RUN(&st, test_errors);
	RUN(&st, test_write_error);
	if (system("command -v protoc >/dev/null 2>&1") == 0)
		RUN(&st, test_protoc_decode);
	else
		printf("SKIP test_protoc_decode (no protoc)\n");
	RUN(&st, test_size);
	return CHECK_DONE(&st);
}
