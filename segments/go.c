/* SPDX-License-Identifier: MIT */
/*
 * Go's scheduler switches: their names, and the goroutines not running.
 */
#include "segments/go.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum go_fn go_switch_fn(const char *name)
{
	static const struct {
		const char *name;
		enum go_fn fn;
	} names[] = {
		/* gogo is the assembly behind runtime.gogo's ABI wrapper
		 * since Go 1.17; before, runtime.gogo was all of it */
		{"gogo", GO_GOGO},
		{"runtime.gogo", GO_GOGO},
		{"runtime.gogo.abi0", GO_GOGO},
		{"runtime.mcall", GO_MCALL},
		{"runtime.mcall.abi0", GO_MCALL},
		{"runtime.systemstack", GO_SYSTEMSTACK},
		{"runtime.systemstack.abi0", GO_SYSTEMSTACK},
		{"runtime.morestack", GO_MORESTACK},
		{"runtime.morestack.abi0", GO_MORESTACK},
		{"runtime.newstack", GO_NEWSTACK},
		{"runtime.newstack.abi0", GO_NEWSTACK},
		{"runtime.goexit0", GO_GOEXIT0},
		{"runtime.goexit0.abi0", GO_GOEXIT0},
		{"gosave_systemstack_switch", GO_SWITCH_HELPER},
		{"runtime.gosave_systemstack_switch", GO_SWITCH_HELPER},
		{"runtime.badsystemstack", GO_SWITCH_HELPER},
		{"runtime.badsystemstack.abi0", GO_SWITCH_HELPER},
	};

	/* Most names are not the runtime's: one compare for them. */
	if (strncmp(name, "runtime.", 8) && strcmp(name, "gogo") &&
	    strcmp(name, "gosave_systemstack_switch"))
		return GO_NONE;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return names[i].fn;
	return GO_NONE;
}

bool go_runtime_switch(const char *name)
{
	return !strncmp(name, "runtime.", 8) && go_switch_fn(name) != GO_NONE;
}

struct go_proc *go_proc_new(uint32_t pid)
{
	struct go_proc *p = calloc(1, sizeof(*p));

	if (p)
		p->pid = pid;
	return p;
}

void go_proc_free(struct go_proc *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr; i++)
		free(p->v[i].frames);
	free(p->v);
	mt_hmap_free(&p->by_goid);
	free(p);
}

int go_switch_suspend(struct go_proc *p, struct go_susp *s)
{
	/* A goroutine is suspended once: an older stack of the same one
	 * (its resume was never seen) goes. */
	for (size_t i = 0; s->goid && i < p->nr; i++)
		if (p->v[i].goid == s->goid) {
			free(p->v[i].frames);
			p->v[i] = p->v[--p->nr];
			break;
		}
	if (mt_grow((void **)&p->v, &p->cap, p->nr + 1, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->nr++] = *s;
	s->frames = NULL;
	s->nr = 0;
	return 0;
}

bool go_switch_resume(struct go_proc *p, uint64_t ip, uint64_t goid,
		      struct go_susp *out, bool *several)
{
	size_t best = p->nr, n = 0;

	for (size_t i = 0; i < p->nr; i++) {
		const struct go_susp *s = &p->v[i];

		if (goid ? s->goid != goid : s->resume != ip)
			continue;
		n++;
		if (best == p->nr || s->time >= p->v[best].time)
			best = i;
	}
	*several = n > 1;
	if (best == p->nr)
		return false;
	*out = p->v[best];
	/* The order of the others does not matter: the pick is by time. */
	p->v[best] = p->v[--p->nr];
	return true;
}

static int go_susp_newest_first(const void *a, const void *b)
{
	const struct go_susp *x = a, *y = b;

	return x->time > y->time ? -1 : x->time < y->time;
}

long go_switch_take(struct go_proc *p, uint64_t ip, struct go_susp **out)
{
	size_t n = 0, k = 0;
	struct go_susp *v;

	*out = NULL;
	for (size_t i = 0; i < p->nr; i++)
		n += p->v[i].resume == ip;
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr;)
		if (p->v[i].resume == ip) {
			v[k++] = p->v[i];
			p->v[i] = p->v[--p->nr];
		} else {
			i++;
		}
	qsort(v, n, sizeof(*v), go_susp_newest_first);
	*out = v;
	return (long)n;
}

uint32_t go_switch_goroutine(struct mt_trace *t, struct go_proc *p,
			     uint64_t goid, uint32_t start, uint64_t time)
{
	struct mt_goroutine g = {.pid = p->pid,
				 .goid = goid,
				 .start = start,
				 .first = time,
				 .last = time};
	uint64_t v;

	if (goid && goid != UINT64_MAX && mt_hmap_find(&p->by_goid, goid, &v))
		return (uint32_t)v;
	if (!goid)
		g.nr = ++p->nr_anon;
	if (!mt_trace_add_goroutine(t, &g))
		return 0;
	if (goid && goid != UINT64_MAX &&
	    mt_hmap_set(&p->by_goid, goid, t->nr_goroutines))
		return 0;
	return (uint32_t)t->nr_goroutines;
}

void go_switch_ran(struct mt_trace *t, uint32_t gor, uint64_t time)
{
	struct mt_goroutine *g;

	if (!gor || gor > t->nr_goroutines)
		return;
	g = &t->goroutines[gor - 1];
	if (time < g->first)
		g->first = time;
	if (time > g->last)
		g->last = time;
}
