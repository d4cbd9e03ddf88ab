/* SPDX-License-Identifier: MIT */
/*
 * model/ and util/grow.c: string interning across rehashes, the trace's
 * arrays as they grow, thread lookup, and mt_grow's refusal to overflow.
 */
#include "model/model.h"
#include "tests/unit/check.h"
#include "util/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_strtab_basics(struct check_state *cs)
{
	struct mt_strtab s;
	uint32_t a, b, c;

	mt_strtab_init(&s);
	CHECK(cs, s.nr == 1);
	CHECK(cs, !strcmp(mt_str(&s, 0), ""));
	CHECK(cs, mt_str_intern(&s, "") == 0);
	CHECK(cs, mt_str_intern_len(&s, "xyz", 0) == 0);

	a = mt_str_intern(&s, "main");
	b = mt_str_intern(&s, "mai");
	c = mt_str_intern(&s, "mainly");
	CHECK(cs, a != 0 && a != MT_NONE);
	CHECK(cs, a != b && b != c && a != c);
	CHECK(cs, mt_str_intern(&s, "main") == a);
	CHECK(cs, mt_str_intern(&s, "mai") == b);
	CHECK(cs, !strcmp(mt_str(&s, a), "main"));
	CHECK(cs, !strcmp(mt_str(&s, b), "mai"));
	CHECK(cs, !strcmp(mt_str(&s, c), "mainly"));
	CHECK(cs, s.nr == 4);

	/* A length cuts the string: no NUL is needed after it. */
	CHECK(cs, mt_str_intern_len(&s, "mainframe", 4) == a);
	CHECK(cs, mt_str_intern_len(&s, "mainframe", 3) == b);
	CHECK(cs, mt_str_intern_len(&s, "mainframe", 9) ==
			  mt_str_intern(&s, "mainframe"));
	CHECK(cs,
	      !strcmp(mt_str(&s, mt_str_intern(&s, "mainframe")), "mainframe"));

	/* Bytes beyond ASCII are just bytes. */
	a = mt_str_intern(&s, "ünïcødé 🙂");
	CHECK(cs, mt_str_intern(&s, "ünïcødé 🙂") == a);
	CHECK(cs, !strcmp(mt_str(&s, a), "ünïcødé 🙂"));

	mt_strtab_free(&s);
	CHECK(cs, s.buf == NULL && s.nr == 0);
	/* A freed table can be initialised again. */
	mt_strtab_init(&s);
	CHECK(cs, s.nr == 1 && mt_str_intern(&s, "x") == 1);
	mt_strtab_free(&s);
}

/* Enough strings to rehash many times; every id must stay put. */
static void test_strtab_many(struct check_state *cs)
{
	enum { N = 100000 };
	struct mt_strtab s;
	uint32_t *ids = calloc(N, sizeof(*ids));
	char buf[64];
	int bad = 0;

	if (!ids)
		exit(2);
	mt_strtab_init(&s);
	for (uint32_t i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "sym_%u_%x", i, i * 2654435761u);
		ids[i] = mt_str_intern(&s, buf);
		if (ids[i] != i + 1)
			bad++;
	}
	CHECKF(cs, bad == 0, "%d ids not in order", bad);
	CHECK(cs, s.nr == N + 1);
	/* The hash stays at most half full. */
	CHECK(cs, s.index.n == s.nr);
	CHECK(cs, s.index.cap >= 2 * s.nr);
	CHECK(cs, (s.index.cap & (s.index.cap - 1)) == 0);
	for (uint32_t i = 0; i < N && bad < 10; i++) {
		snprintf(buf, sizeof(buf), "sym_%u_%x", i, i * 2654435761u);
		if (mt_str_intern(&s, buf) != ids[i] ||
		    strcmp(mt_str(&s, ids[i]), buf))
			bad++;
	}
	CHECKF(cs, bad == 0, "%d strings lost after rehashing", bad);
	CHECK(cs, s.nr == N + 1);
	CHECK(cs, mt_str_intern(&s, "") == 0);
	mt_strtab_free(&s);
	free(ids);
}

static void test_trace_add(struct check_state *cs)
{
	struct mt_trace t;
	struct mt_process *p;
	struct mt_thread *th;
	struct mt_hit h = {.ts = 10,
			   .mark_start = 5,
			   .pid = 1,
			   .tid = 2,
			   .ip = 0x401000,
			   .arg = -3};
	struct mt_stitch st = {.tid = 2,
			       .seg_a = 0,
			       .seg_b = 1,
			       .frames_joined = 3,
			       .score = 0.5};
	struct mt_segment g = {.tid = 2, .start = 1, .end = 9, .end_ip = 7};
	struct mt_hit *hp;
	struct mt_stitch *sp;
	struct mt_segment *gp;

	mt_trace_init(&t);
	CHECK(cs, t.strs.nr == 1 && t.nr_threads == 0);

	p = mt_trace_add_process(&t, 1, "/bin/prog --x");
	CHECK(cs, p && p->pid == 1 &&
			  !strcmp(mt_str(&t.strs, p->name), "/bin/prog --x"));
	CHECK(cs, t.nr_procs == 1 && p == &t.procs[0]);

	th = mt_trace_add_thread(&t, 1, 2, "prog");
	CHECK(cs, th && th->pid == 1 && th->tid == 2 && th->nr_slices == 0 &&
			  !strcmp(mt_str(&t.strs, th->name), "prog"));
	/* The same name is one string. */
	CHECK(cs, th && mt_trace_add_thread(&t, 1, 3, "prog") &&
			  t.threads[1].name == t.threads[0].name);

	h.name = mt_str_intern(&t.strs, "mt_take_snapshot");
	hp = mt_trace_add_hit(&t, &h);
	CHECK(cs, hp && t.nr_hits == 1 && !memcmp(hp, &h, sizeof(h)));
	st.reason = mt_str_intern(&t.strs, "match");
	sp = mt_trace_add_stitch(&t, &st);
	CHECK(cs, sp && t.nr_stitches == 1 && sp->score == 0.5 &&
			  sp->reason == st.reason && sp->frames_joined == 3);
	g.end_reason = mt_str_intern(&t.strs, "overflow");
	gp = mt_trace_add_segment(&t, &g);
	CHECK(cs, gp && t.nr_segments == 1 && gp->start == 1 && gp->end == 9 &&
			  gp->end_reason == g.end_reason && gp->end_ip == 7);

	/* Growth keeps what was there. */
	for (uint32_t i = 0; i < 1000; i++) {
		g.start = i;
		h.ts = i;
		if (!mt_trace_add_segment(&t, &g) ||
		    !mt_trace_add_hit(&t, &h) ||
		    !mt_trace_add_stitch(&t, &st) ||
		    !mt_trace_add_process(&t, 100 + i, "p"))
			exit(2);
	}
	CHECK(cs, t.nr_segments == 1001 && t.segments[0].start == 1 &&
			  t.segments[1000].start == 999);
	CHECK(cs, t.nr_hits == 1001 && t.hits[0].ts == 10 &&
			  t.hits[1000].ts == 999);
	CHECK(cs, t.nr_stitches == 1001 && t.nr_procs == 1001 &&
			  t.procs[1000].pid == 1099);
	CHECK(cs, t.cap_hits >= t.nr_hits && t.cap_segments >= t.nr_segments);

	mt_trace_free(&t);
	CHECK(cs, t.threads == NULL && t.nr_threads == 0 && t.strs.buf == NULL);
	/* Freeing twice is harmless: free leaves an empty trace. */
	mt_trace_free(&t);
}

static void test_thread_push(struct check_state *cs)
{
	struct mt_trace t;
	struct mt_thread *th;
	int bad = 0;

	mt_trace_init(&t);
	th = mt_trace_add_thread(&t, 1, 1, "a");
	CHECK(cs, th != NULL);
	if (!th)
		return;
	for (uint32_t i = 0; i < 5000; i++) {
		struct mt_slice s = {
			.ts = i,
			.dur = 1,
			.frame = mt_frame_intern(&t, 0, 0, 0x1000 + i),
			.depth = i ? 1 : 0,
			.parent = i ? 0 : MT_NONE};
		struct mt_slice *r = mt_thread_push(th, &s);

		if (!r || r != &th->slices[i] || memcmp(r, &s, sizeof(s)))
			bad++;
	}
	CHECK(cs, bad == 0);
	CHECK(cs, th->nr_slices == 5000 && th->cap_slices >= 5000);
	CHECK(cs, th->slices[0].parent == MT_NONE &&
			  mt_slice_frame(&t, &th->slices[4999])->addr ==
				  0x1000 + 4999);
	/* One frame per (name, dso, address), the all-zero one first. */
	CHECK(cs, t.nr_frames == 5001 && th->slices[7].frame == 8 &&
			  mt_frame_intern(&t, 0, 0, 0x1000 + 7) == 8 &&
			  mt_frame_intern(&t, 0, 0, 0) == 0 &&
			  t.nr_frames == 5001);
	/* A string that could not be interned names no frame (the merge of
	 * the threads' models indexes by it). */
	CHECK(cs, mt_frame_intern(&t, MT_NONE, 0, 0x42) == MT_NONE &&
			  mt_frame_intern(&t, 0, MT_NONE, 0x42) == MT_NONE &&
			  t.nr_frames == 5001);
	mt_trace_free(&t);
}

static void test_thread_lookup(struct check_state *cs)
{
	struct mt_trace t;
	struct mt_thread *th;
	int bad = 0;

	mt_trace_init(&t);
	CHECK(cs, mt_trace_thread(&t, 1) == NULL);
	for (uint32_t i = 0; i < 300; i++)
		if (!mt_trace_add_thread(&t, 7, 1000 + 3 * i, "w"))
			exit(2);
	/* Looked up after the array moved while growing. */
	for (uint32_t i = 0; i < 300; i++) {
		th = mt_trace_thread(&t, 1000 + 3 * i);
		if (!th || th != &t.threads[i] || th->tid != 1000 + 3 * i)
			bad++;
	}
	CHECK(cs, bad == 0);
	CHECK(cs, mt_trace_thread(&t, 1001) == NULL);
	CHECK(cs, mt_trace_thread(&t, 0) == NULL);
	/* A repeated tid (a reused one): the first thread is returned. */
	CHECK(cs, mt_trace_add_thread(&t, 8, 1000, "again") != NULL);
	CHECK(cs, mt_trace_thread(&t, 1000) == &t.threads[0]);
	mt_trace_free(&t);
}

/*
 * What the capture says before any trace: a process keeps the first name
 * given for it, an unknown one has "", and none of it is in strs; hits'
 * names are interned apart, and mt_str_find() finds without adding.
 */
static void test_capture_facts(struct check_state *cs)
{
	struct mt_trace t;
	uint32_t strs, id = 0;
	const struct mt_hit *h;

	mt_trace_init(&t);
	strs = t.strs.nr;
	CHECK(cs, mt_trace_name_process(&t, 7, "prog") == 0);
	CHECK(cs, mt_trace_name_process(&t, 7, "other") == 0);
	CHECK(cs, mt_trace_name_process(&t, 8, "") == 0);
	CHECK(cs, !strcmp(mt_trace_process_name(&t, 7), "prog"));
	CHECK(cs, !strcmp(mt_trace_process_name(&t, 8), ""));
	CHECK(cs, !strcmp(mt_trace_process_name(&t, 9), ""));
	h = mt_trace_add_named_hit(&t, &(struct mt_hit){.ts = 5}, "trig");
	CHECK(cs, h && h->ts == 5 &&
			  !strcmp(mt_str(&t.hit_names, h->name), "trig"));
	CHECK(cs, t.strs.nr == strs);
	CHECK(cs, !mt_str_find(&t.strs, "prog", &id) && t.strs.nr == strs);
	CHECK(cs, mt_str_find(&t.hit_names, "trig", &id) && id == h->name);
	mt_trace_free(&t);
}

static void test_grow(struct check_state *cs)
{
	uint32_t *v = NULL, *old;
	size_t cap = 0;

	/* Nothing needed, nothing done. */
	CHECK(cs, mt_grow((void **)&v, &cap, 0, sizeof(*v)) == 0);
	CHECK(cs, v == NULL && cap == 0);

	CHECK(cs, mt_grow((void **)&v, &cap, 1, sizeof(*v)) == 0);
	CHECK(cs, v != NULL && cap == 16);
	v[0] = 42;
	old = v;
	CHECK(cs, mt_grow((void **)&v, &cap, 16, sizeof(*v)) == 0);
	CHECK(cs, v == old && cap == 16);
	CHECK(cs, mt_grow((void **)&v, &cap, 17, sizeof(*v)) == 0);
	CHECK(cs, cap == 32 && v[0] == 42);
	CHECK(cs, mt_grow((void **)&v, &cap, 1000, sizeof(*v)) == 0);
	CHECK(cs, cap == 1024 && v[0] == 42);

	/* Sizes that overflow are refused and leave the array alone. */
	old = v;
	CHECK(cs, mt_grow((void **)&v, &cap, SIZE_MAX, sizeof(*v)) == -ENOMEM);
	CHECK(cs, v == old && cap == 1024);
	CHECK(cs, mt_grow((void **)&v, &cap, SIZE_MAX / 2 + 2, 1) == -ENOMEM);
	CHECK(cs, v == old && cap == 1024);
	CHECK(cs, mt_grow((void **)&v, &cap, 2048, SIZE_MAX / 1024) == -ENOMEM);
	CHECK(cs, v == old && cap == 1024);
	CHECK(cs,
	      mt_grow((void **)&v, &cap, 1025, SIZE_MAX / 2048 + 1) == -ENOMEM);
	CHECK(cs, v == old && cap == 1024 && v[0] == 42);
	free(v);

	/* From empty, an element size whose 16 would overflow. */
	v = NULL;
	cap = 0;
	CHECK(cs, mt_grow((void **)&v, &cap, 1, SIZE_MAX / 8) == -ENOMEM);
	CHECK(cs, v == NULL && cap == 0);
}

/* The duration shares a word with the flags: the longest one saturates
 * and neither spills into the other. */
static void test_slice_word(struct check_state *cs)
{
	struct mt_slice s = {.ts = 5, .flags = MT_SLICE_RESUME_GUESSED};

	s.dur = mt_dur_fit(UINT64_C(1) << 60);
	CHECK(cs, s.dur == MT_DUR_MAX && s.flags == MT_SLICE_RESUME_GUESSED);
	s.dur = mt_dur_fit(MT_DUR_MAX);
	s.flags |= MT_SLICE_GAP;
	CHECK(cs, s.dur == MT_DUR_MAX &&
			  s.flags == (MT_SLICE_RESUME_GUESSED | MT_SLICE_GAP));
	s.flags = 0;
	s.dur = mt_dur_fit(123);
	CHECK(cs, s.dur == 123 && s.flags == 0 && s.ts == 5);
	/* What the model's arrays hold: 36 bytes, 4-aligned. */
	CHECK(cs,
	      sizeof(struct mt_slice) == 36 && _Alignof(struct mt_slice) == 4);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_strtab_basics);
	RUN(&st, test_strtab_many);
	RUN(&st, test_trace_add);
	RUN(&st, test_thread_push);
	RUN(&st, test_thread_lookup);
	RUN(&st, test_capture_facts);
	RUN(&st, test_grow);
	RUN(&st, test_slice_word);
	return CHECK_DONE(&st);
}
