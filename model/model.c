/* SPDX-License-Identifier: MIT */
/*
 * The converted trace in memory.  Arrays grow by doubling; the string
 * table interns through a hash table so that names repeated millions of
 * times cost one lookup each and one copy in memory.
 */
#include "model/model.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_strtab_init(struct mt_strtab *s)
{
	memset(s, 0, sizeof(*s));
	return mt_str_intern(s, "") == MT_NONE ? -ENOMEM : 0;
}

void mt_strtab_free(struct mt_strtab *s)
{
	free(s->buf);
	free(s->off);
	mt_hmap_free(&s->index);
	memset(s, 0, sizeof(*s));
}

/* The string sought, which need not end in a NUL. */
struct str_key {
	const struct mt_strtab *s;
	const char *str;
	size_t len;
};

static bool same_str(const void *ctx, uint64_t id)
{
	const struct str_key *k = ctx;
	const char *o = k->s->buf + k->s->off[id];

	return !strncmp(o, k->str, k->len) && o[k->len] == 0;
}

uint32_t mt_str_intern_len(struct mt_strtab *s, const char *str, size_t len)
{
	struct str_key k = {s, str, len};
	uint64_t h = mt_hash_bytes(str, len), id;
	size_t cap_ids = s->cap_ids;

	if (mt_hmap_find_ext(&s->index, h, same_str, &k, &id))
		return (uint32_t)id;
	/* Room first, so that a failure leaves the table as it was. */
	if (mt_grow((void **)&s->buf, &s->cap, s->len + len + 1, 1) ||
	    mt_grow((void **)&s->off, &cap_ids, (size_t)s->nr + 1,
		    sizeof(*s->off)))
		return MT_NONE;
	s->cap_ids = (uint32_t)cap_ids;
	if (mt_hmap_add_ext(&s->index, h, s->nr))
		return MT_NONE;
	memcpy(s->buf + s->len, str, len);
	s->buf[s->len + len] = 0;
	s->off[s->nr] = (uint32_t)s->len;
	s->len += len + 1;
	return s->nr++;
}

bool mt_str_find(const struct mt_strtab *s, const char *str, uint32_t *id)
{
	size_t len = strlen(str);
	struct str_key k = {s, str, len};
	uint64_t v;

	if (!mt_hmap_find_ext(&s->index, mt_hash_bytes(str, len), same_str, &k,
			      &v))
		return false;
	*id = (uint32_t)v;
	return true;
}

uint32_t mt_str_intern(struct mt_strtab *s, const char *str)
{
	return mt_str_intern_len(s, str, strlen(str));
}

int mt_trace_init(struct mt_trace *t)
{
	memset(t, 0, sizeof(*t));
	if (mt_strtab_init(&t->strs) || mt_strtab_init(&t->hit_names) ||
	    mt_frame_intern(t, 0, 0, 0) == MT_NONE)
		return -ENOMEM;
	return 0;
}

struct frame_key {
	const struct mt_trace *t;
	struct mt_frame f;
};

static bool same_frame(const void *ctx, uint64_t id)
{
	const struct frame_key *k = ctx;
	const struct mt_frame *o = &k->t->frames[id];

	return o->addr == k->f.addr && o->name == k->f.name &&
	       o->dso == k->f.dso;
}

uint32_t mt_frame_intern(struct mt_trace *t, uint32_t name, uint32_t dso,
			 uint64_t addr)
{
	struct frame_key k = {t, {.addr = addr, .name = name, .dso = dso}};
	uint64_t h = mt_hash_bytes(&k.f, sizeof(k.f)), id;
	size_t cap = t->cap_frames;

	if (name == MT_NONE || dso == MT_NONE)
		return MT_NONE;
	if (mt_hmap_find_ext(&t->frame_index, h, same_frame, &k, &id))
		return (uint32_t)id;
	if (t->nr_frames == MT_NONE ||
	    mt_grow((void **)&t->frames, &cap, (size_t)t->nr_frames + 1,
		    sizeof(*t->frames)))
		return MT_NONE;
	t->cap_frames = (uint32_t)cap;
	if (mt_hmap_add_ext(&t->frame_index, h, t->nr_frames))
		return MT_NONE;
	t->frames[t->nr_frames] = k.f;
	return t->nr_frames++;
}

void mt_trace_free(struct mt_trace *t)
{
	for (size_t i = 0; i < t->nr_threads; i++)
		free(t->threads[i].slices);
	free(t->threads);
	free(t->procs);
	free(t->hits);
	free(t->ptwrites);
	free(t->stitches);
	free(t->guesses);
	free(t->segments);
	free(t->goroutines);
	free(t->frames);
	mt_hmap_free(&t->frame_index);
	mt_strtab_free(&t->strs);
	for (size_t i = 0; i < t->nr_proc_names; i++)
		free(t->proc_names[i].name);
	free(t->proc_names);
	mt_strtab_free(&t->hit_names);
	memset(t, 0, sizeof(*t));
}

struct mt_process *mt_trace_add_process(struct mt_trace *t, uint32_t pid,
					const char *name)
{
	uint32_t n = mt_str_intern(&t->strs, name);

	if (n == MT_NONE || mt_grow((void **)&t->procs, &t->cap_procs,
				    t->nr_procs + 1, sizeof(*t->procs)))
		return NULL;
	t->procs[t->nr_procs] = (struct mt_process){.pid = pid, .name = n};
	return &t->procs[t->nr_procs++];
}

struct mt_thread *mt_trace_add_thread(struct mt_trace *t, uint32_t pid,
				      uint32_t tid, const char *name)
{
	uint32_t n = mt_str_intern(&t->strs, name);

	if (n == MT_NONE || mt_grow((void **)&t->threads, &t->cap_threads,
				    t->nr_threads + 1, sizeof(*t->threads)))
		return NULL;
	t->threads[t->nr_threads] =
		(struct mt_thread){.pid = pid, .tid = tid, .name = n};
	return &t->threads[t->nr_threads++];
}

struct mt_slice *mt_thread_push_slow(struct mt_thread *th,
				     const struct mt_slice *s)
{
	if (mt_grow((void **)&th->slices, &th->cap_slices, th->nr_slices + 1,
		    sizeof(*th->slices)))
		return NULL;
	th->slices[th->nr_slices] = *s;
	return &th->slices[th->nr_slices++];
}

struct mt_hit *mt_trace_add_hit(struct mt_trace *t, const struct mt_hit *h)
{
	if (mt_grow((void **)&t->hits, &t->cap_hits, t->nr_hits + 1,
		    sizeof(*t->hits)))
		return NULL;
	t->hits[t->nr_hits] = *h;
	return &t->hits[t->nr_hits++];
}

struct mt_hit *mt_trace_add_named_hit(struct mt_trace *t,
				      const struct mt_hit *h, const char *name)
{
	struct mt_hit m = *h;

	m.name = mt_str_intern(&t->hit_names, name);
	return m.name == MT_NONE ? NULL : mt_trace_add_hit(t, &m);
}

int mt_trace_name_process(struct mt_trace *t, uint32_t pid, const char *name)
{
	char *s;

	for (size_t i = 0; i < t->nr_proc_names; i++)
		if (t->proc_names[i].pid == pid)
			return 0;
	if (mt_grow((void **)&t->proc_names, &t->cap_proc_names,
		    t->nr_proc_names + 1, sizeof(*t->proc_names)) ||
	    !(s = strdup(name)))
		return -ENOMEM;
	t->proc_names[t->nr_proc_names++] =
		(struct mt_proc_name){.pid = pid, .name = s};
	return 0;
}

const char *mt_trace_process_name(const struct mt_trace *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nr_proc_names; i++)
		if (t->proc_names[i].pid == pid)
			return t->proc_names[i].name;
	return "";
}

struct mt_ptwrite *mt_trace_add_ptwrite(struct mt_trace *t,
					const struct mt_ptwrite *p)
{
	if (mt_grow((void **)&t->ptwrites, &t->cap_ptwrites, t->nr_ptwrites + 1,
		    sizeof(*t->ptwrites)))
		return NULL;
	t->ptwrites[t->nr_ptwrites] = *p;
	return &t->ptwrites[t->nr_ptwrites++];
}

struct mt_stitch *mt_trace_add_stitch(struct mt_trace *t,
				      const struct mt_stitch *s)
{
	if (mt_grow((void **)&t->stitches, &t->cap_stitches, t->nr_stitches + 1,
		    sizeof(*t->stitches)))
		return NULL;
	t->stitches[t->nr_stitches] = *s;
	return &t->stitches[t->nr_stitches++];
}

struct mt_guess *mt_trace_add_guess(struct mt_trace *t,
				    const struct mt_guess *g)
{
	if (mt_grow((void **)&t->guesses, &t->cap_guesses, t->nr_guesses + 1,
		    sizeof(*t->guesses)))
		return NULL;
	t->guesses[t->nr_guesses] = *g;
	return &t->guesses[t->nr_guesses++];
}

struct mt_goroutine *mt_trace_add_goroutine(struct mt_trace *t,
					    const struct mt_goroutine *g)
{
	if (mt_grow((void **)&t->goroutines, &t->cap_goroutines,
		    t->nr_goroutines + 1, sizeof(*t->goroutines)))
		return NULL;
	t->goroutines[t->nr_goroutines] = *g;
	return &t->goroutines[t->nr_goroutines++];
}

void mt_goroutine_name(const struct mt_trace *t, const struct mt_goroutine *g,
		       char *buf, size_t len)
{
	const char *fn = g->start ? mt_str(&t->strs, g->start) : "?";

	if (g->goid)
		snprintf(buf, len, "goroutine %llu (%s)",
			 (unsigned long long)g->goid, fn);
	else
		snprintf(buf, len, "goroutine ~%u (%s)", g->nr, fn);
}

struct mt_segment *mt_trace_add_segment(struct mt_trace *t,
					const struct mt_segment *s)
{
	if (mt_grow((void **)&t->segments, &t->cap_segments, t->nr_segments + 1,
		    sizeof(*t->segments)))
		return NULL;
	t->segments[t->nr_segments] = *s;
	return &t->segments[t->nr_segments++];
}

struct mt_thread *mt_trace_thread(struct mt_trace *t, uint32_t tid)
{
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}
