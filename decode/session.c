/* SPDX-License-Identifier: MIT */
/*
 * Pass 1, first half: a decoding session.  dec_open() reads the capture's
 * sideband into dec_capture, dec_free() ends it; and the getters.
 * dec_run() (sched.c) decodes it.
 *
 * Records are read once, in file order.  Threads are known from COMM,
 * FORK, ITRACE_START, SWITCH and AUXTRACE records (a COMM record with
 * the exec flag also dates an exec of the thread); a thread named only by
 * an AUXTRACE record still gets its events.  Times of events are kept
 * relative to one base for the whole capture (the earliest sideband time),
 * so that a thread whose trace comes from several CPUs sorts in one array.
 */
#include "decode/dec_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct dec_thread *dec_thread_get(struct dec_capture *c, uint32_t pid,
				  uint32_t tid)
{
	size_t cap;

	for (size_t i = 0; i < c->nr_threads; i++) {
		if (c->threads[i].tid != tid)
			continue;
		/* The AUXTRACE record of a per-thread stream knows only the
		 * tid; sideband fills the pid in. */
		if (c->threads[i].pid == (uint32_t)-1 && pid != (uint32_t)-1)
			c->threads[i].pid = pid;
		return &c->threads[i];
	}
	cap = c->cap_threads;
	if (mt_grow((void **)&c->threads, &c->cap_threads, c->nr_threads + 1,
		    sizeof(*c->threads)) ||
	    mt_grow((void **)&c->comms, &cap, c->nr_threads + 1,
		    sizeof(*c->comms)))
		return NULL;
	c->threads[c->nr_threads] =
		(struct dec_thread){.pid = pid, .tid = tid, .comm = ""};
	c->comms[c->nr_threads] = NULL;
	return &c->threads[c->nr_threads++];
}

int dec_thread_push(struct dec_thread *t, uint64_t base, uint64_t time,
		    enum dec_kind kind, uint64_t ip, uint64_t aux)
{
	uint64_t rel = time > base ? time - base : 0;

	if (rel >= UINT64_C(1) << 56)
		rel = (UINT64_C(1) << 56) - 1;
	if (mt_grow((void **)&t->ev, &t->cap, t->nr + 1, sizeof(*t->ev)))
		return -ENOMEM;
	t->ev[t->nr++] = (struct dec_event){
		.tk = rel << 8 | (uint64_t)kind, .ip = ip, .aux = aux};
	return 0;
}

static int set_comm(struct dec_capture *c, uint32_t pid, uint32_t tid,
		    const char *comm)
{
	struct dec_thread *t = dec_thread_get(c, pid, tid);
	char *s = strdup(comm);
	size_t i;

	if (!t || !s) {
		free(s);
		return -ENOMEM;
	}
	i = (size_t)(t - c->threads);
	free(c->comms[i]);
	c->comms[i] = s;
	t->comm = s;
	return pid == tid ? img_set_comm(c->img, pid, comm) : 0;
}

/* An exec, dated: segments/ ends the old program's frames there, and
 * the image gives the process a space of its own from then on.  One
 * without a time cannot be placed among the thread's events.  Sorted
 * once all are read (sort_execs()). */
static int add_exec(struct dec_capture *c, const struct pd_event *ev)
{
	struct dec_thread *t;

	if (!ev->u.comm.exec || !ev->sid.have_time)
		return 0;
	t = dec_thread_get(c, ev->u.comm.pid, ev->u.comm.tid);
	if (!t || mt_grow((void **)&t->execs, &t->cap_execs, t->nr_execs + 1,
			  sizeof(*t->execs)))
		return -ENOMEM;
	t->execs[t->nr_execs++] = ev->sid.time;
	return img_add_exec(c->img, ev->u.comm.pid, ev->sid.time);
}

/*
 * A mapping or a fork, kept until every exec is read: which of its
 * process's spaces it is of goes by its time (per-CPU sideband comes a
 * CPU at a time, so a later exec may come first in the file).
 */
struct later {
	bool is_fork, have_time;
	uint64_t time;
	union {
		struct pd_mmap map; /* its file name is the capture's */
		struct pd_task task;
	} u;
};

static int keep_for_later(struct dec_capture *c, struct later **l, size_t *n,
			  size_t *cap, const struct pd_event *ev)
{
	struct later *x;

	if (ev->type != PERF_RECORD_FORK &&
	    (ev->u.mmap.is_mmap2 ? !(ev->u.mmap.prot & PROT_EXEC)
				 : (ev->misc & PERF_RECORD_MISC_MMAP_DATA)))
		return 0;
	if (ev->type == PERF_RECORD_FORK &&
	    !dec_thread_get(c, ev->u.task.pid, ev->u.task.tid))
		return -ENOMEM;
	if (mt_grow((void **)l, cap, *n + 1, sizeof(**l)))
		return -ENOMEM;
	x = &(*l)[(*n)++];
	x->is_fork = ev->type == PERF_RECORD_FORK;
	x->have_time = ev->sid.have_time;
	x->time = ev->sid.time;
	if (x->is_fork) {
		x->u.task = ev->u.task;
		/* (FORK records carry their own time) */
		x->have_time = true;
		x->time = ev->u.task.time;
	} else {
		x->u.map = ev->u.mmap;
	}
	return 0;
}

static int cmp_later(const void *a, const void *b)
{
	const struct later *x = a, *y = b;
	uint64_t tx = x->have_time ? x->time : 0,
		 ty = y->have_time ? y->time : 0;

	return tx < ty ? -1 : tx > ty;
}

/* Each into the image in time order (the file's among equals; one
 * without a time first), under the key of its process's space then. */
static int add_later(struct dec_capture *c, struct later *l, size_t n)
{
	if (mt_stable_sort(l, n, sizeof(*l), cmp_later))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct later *x = &l[i];
		int rc;

		if (x->is_fork && x->u.task.pid == x->u.task.ppid) {
			rc = 0; /* a thread of the process */
		} else if (x->is_fork) {
			rc = img_set_parent(
				c->img, x->u.task.pid,
				img_space(c->img, x->u.task.ppid, x->time));
		} else {
			const struct pd_mmap *m = &x->u.map;

			rc = img_map_at(c->img, m->pid, x->have_time, x->time,
					m->start, m->len, m->pgoff, m->filename,
					m->build_id,
					m->has_build_id ? m->build_id_size : 0);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Each CPU's sideband comes as a run of its own: a thread's execs in
 * time order. */
static void sort_execs(struct dec_capture *c)
{
	for (size_t i = 0; i < c->nr_threads; i++)
		if (c->threads[i].nr_execs > 1)
			qsort(c->threads[i].execs, c->threads[i].nr_execs,
			      sizeof(*c->threads[i].execs), mt_cmp_u64);
}

static int add_switch(struct dec_capture *c, uint32_t cpu, uint64_t time,
		      uint32_t pid, uint32_t tid, bool out)
{
	if (cpu == (uint32_t)-1)
		return 0;
	/* Every thread the decoder may name is made now: while it runs,
	 * the threads' array must not move (a builder thread holds
	 * pointers into it, segments/pipe.c). */
	if (!dec_thread_get(c, pid, tid))
		return -ENOMEM;
	if (mt_grow((void **)&c->switches, &c->cap_switches, c->nr_switches + 1,
		    sizeof(*c->switches)))
		return -ENOMEM;
	c->switches[c->nr_switches++] =
		(struct dec_switch){cpu, time, pid, tid, out};
	return 0;
}

static int add_chunk(struct dec_capture *c, const struct pd_event *ev)
{
	const struct pd_auxtrace *a = &ev->u.auxtrace;

	if (!a->size)
		return 0;
	if (mt_grow((void **)&c->chunks, &c->cap_chunks, c->nr_chunks + 1,
		    sizeof(*c->chunks)))
		return -ENOMEM;
	c->chunks[c->nr_chunks] = (struct dec_chunk){
		.idx = a->idx,
		.tid = a->tid,
		.cpu = a->cpu,
		.offset = a->offset,
		.size = a->size,
		.reference = a->reference,
		.data = a->data,
		.order = c->nr_chunks,
	};
	c->nr_chunks++;
	if (a->tid != (uint32_t)-1 && !dec_thread_get(c, (uint32_t)-1, a->tid))
		return -ENOMEM;
	return 0;
}

/* "GenuineIntel,6,85,4" -> family, model, stepping. */
static void parse_cpuid(struct dec_capture *c)
{
	const char *s = pd_feature_string(c->pd, PD_FEAT_CPUID);
	unsigned fam, model, step;

	memset(&c->cpu, 0, sizeof(c->cpu));
	if (!s || strncmp(s, "GenuineIntel,", 13) ||
	    sscanf(s + 13, "%u,%u,%u", &fam, &model, &step) != 3)
		return;
	c->cpu.vendor = pcv_intel;
	c->cpu.family = (uint16_t)fam;
	c->cpu.model = (uint8_t)model;
	c->cpu.stepping = (uint8_t)step;
}

/* A Go switch the emulator saw: to its thread's list, which the segment
 * builder reads with the thread's events. */
static int read_goroutine(struct dec_capture *c, const uint8_t *payload,
			  uint32_t size, char *err, size_t errlen)
{
	struct pd_ext_goroutine g;
	struct dec_thread *t;

	if (pd_ext_parse_goroutine(payload, size, &g)) {
		snprintf(err, errlen, "%s: malformed goroutine item", c->path);
		return -EINVAL;
	}
	t = dec_thread_get(c, g.pid, g.tid);
	if (!t || mt_grow((void **)&t->gos, &t->cap_gos, t->nr_gos + 1,
			  sizeof(*t->gos)))
		return -ENOMEM;
	if (t->nr_gos && g.time < t->gos[t->nr_gos - 1].time) {
		snprintf(err, errlen,
			 "%s: goroutine items of thread %u out of time order",
			 c->path, g.tid);
		return -EINVAL;
	}
	t->gos[t->nr_gos++] = (struct dec_goroutine){g.time, g.ip, g.g, g.goid};
	return 0;
}

static int read_stacks(struct dec_capture *c, char *err, size_t errlen)
{
	size_t cur = 0;
	uint32_t type, size;
	const uint8_t *payload;
	int rc;

	if (!pd_has_feature(c->pd, PD_FEAT_MT_EXT))
		return 0;
	while ((rc = pd_ext_next(c->pd, &cur, &type, &payload, &size, err,
				 errlen)) > 0) {
		struct pd_ext_stack s;
		struct dec_thread *t;

		if (type == PD_EXT_VDSO) {
			struct pd_ext_vdso v;

			if (pd_ext_parse_vdso(payload, size, &v)) {
				snprintf(err, errlen, "%s: malformed vdso item",
					 c->path);
				return -EINVAL;
			}
			if (img_add_vdso(c->img, v.pid, v.start, v.len,
					 v.bytes))
				return -ENOMEM;
			continue;
		}
		if (type == PD_EXT_HIT) {
			struct pd_ext_hit h;

			if (pd_ext_parse_hit(payload, size, &h)) {
				snprintf(err, errlen, "%s: malformed hit item",
					 c->path);
				return -EINVAL;
			}
			if (mt_grow((void **)&c->hits, &c->cap_hits,
				    c->nr_hits + 1, sizeof(*c->hits)))
				return -ENOMEM;
			c->hits[c->nr_hits++] = (struct dec_hit){
				.pid = h.pid,
				.tid = h.tid,
				.time = h.time,
				.ip = h.ip,
				.mark_start = h.mark_start,
				.arg = h.arg,
				.name = h.name,
			};
			continue;
		}
		if (type == PD_EXT_GOROUTINE) {
			rc = read_goroutine(c, payload, size, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		if (type != PD_EXT_STACK)
			continue;
		if (pd_ext_parse_stack(payload, size, &s)) {
			snprintf(err, errlen, "%s: malformed stack item",
				 c->path);
			return -EINVAL;
		}
		t = dec_thread_get(c, s.pid, s.tid);
		if (!t)
			return -ENOMEM;
		free(t->final.ips);
		t->final.ips = calloc(s.nr ? s.nr : 1, sizeof(uint64_t));
		if (!t->final.ips)
			return -ENOMEM;
		for (uint64_t i = 0; i < s.nr; i++)
			t->final.ips[i] = pd_ext_stack_ip(&s, i);
		t->final.nr = s.nr;
		t->final.time = s.time;
	}
	return rc < 0 ? rc : 0;
}

static int read_records(struct dec_capture *c, char *err, size_t errlen)
{
	struct pd_event ev;
	uint64_t cur = 0, min_time = UINT64_MAX;
	struct later *later = NULL;
	size_t nr_later = 0, cap_later = 0;
	int rc;

	while ((rc = pd_next(c->pd, &cur, &ev, err, errlen)) > 0) {
		const struct pd_sample_id *sid = &ev.sid;

		rc = 0;
		if (sid->have_time && sid->time && sid->time < min_time)
			min_time = sid->time;
		switch (ev.type) {
		case PD_RECORD_AUXTRACE_INFO:
			if (ev.auxtrace_info_type == PD_AUXTRACE_INTEL_PT) {
				c->pt = ev.u.pt_info;
				c->have_pt = true;
			}
			break;
		case PERF_RECORD_COMM:
			rc = set_comm(c, ev.u.comm.pid, ev.u.comm.tid,
				      ev.u.comm.comm);
			if (!rc)
				rc = add_exec(c, &ev);
			break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			rc = keep_for_later(c, &later, &nr_later, &cap_later,
					    &ev);
			break;
		case PERF_RECORD_ITRACE_START:
			if (!dec_thread_get(c, ev.u.itrace_start.pid,
					    ev.u.itrace_start.tid))
				rc = -ENOMEM;
			else
				rc = add_switch(c, sid->cpu, sid->time,
						ev.u.itrace_start.pid,
						ev.u.itrace_start.tid, false);
			break;
		case PERF_RECORD_SWITCH:
		case PERF_RECORD_SWITCH_CPU_WIDE:
			if (!sid->have_tid || !sid->have_time)
				break;
			if (ev.u.sw.out) {
				rc = add_switch(c, sid->cpu, sid->time,
						sid->pid, sid->tid, true);
				/* CPU-wide: what the CPU runs from now on is
				 * the next task's, the kernel's switch code
				 * included (as perf attributes it). */
				if (!rc && ev.u.sw.cpu_wide)
					rc = dec_thread_get(
						     c, ev.u.sw.next_prev_pid,
						     ev.u.sw.next_prev_tid)
						     ? add_switch(
							       c, sid->cpu,
							       sid->time,
							       ev.u.sw.next_prev_pid,
							       ev.u.sw.next_prev_tid,
							       false)
						     : -ENOMEM;
			} else if (!dec_thread_get(c, sid->pid, sid->tid))
				rc = -ENOMEM;
			else
				rc = add_switch(c, sid->cpu, sid->time,
						sid->pid, sid->tid, false);
			break;
		case PD_RECORD_AUXTRACE:
			rc = add_chunk(c, &ev);
			break;
		default:
			break;
		}
		if (rc) {
			snprintf(err, errlen, "%s: out of memory", c->path);
			free(later);
			return rc;
		}
	}
	if (rc >= 0 && add_later(c, later, nr_later)) {
		snprintf(err, errlen, "%s: out of memory", c->path);
		rc = -ENOMEM;
	}
	free(later);
	if (rc < 0)
		return rc;
	if (!c->have_pt) {
		snprintf(err, errlen,
			 "%s: not an Intel PT capture (no intel_pt "
			 "AUXTRACE_INFO record)",
			 c->path);
		return -EINVAL;
	}
	/* Ten seconds of slack: per-CPU trace may start before the first
	 * sideband record. */
	c->base = min_time == UINT64_MAX      ? 0
		  : min_time > 10000000000ull ? min_time - 10000000000ull
					      : 0;
	for (size_t i = 0; i < pd_nr_attrs(c->pd); i++) {
		const struct pd_attr *a = pd_get_attr(c->pd, i);

		if (a->attr.type == c->pt.pmu_type) {
			c->pt_config = a->attr.config;
			break;
		}
	}
	if (c->pt.mtc_freq_bits) {
		uint64_t mask = c->pt.mtc_freq_bits;

		c->mtc_freq = (uint8_t)((c->pt_config & mask) >>
					__builtin_ctzll(mask));
	}
	parse_cpuid(c);
	sort_execs(c);
	return read_stacks(c, err, errlen);
}

/* The name of the process (its command), "" if unknown: its own, else
 * that of its main thread. */
static const char *process_name(const struct dec_capture *c, uint32_t pid)
{
	const char *n = img_process_name(c->img, pid);

	if (n)
		return n;
	for (size_t i = 0; i < c->nr_threads; i++)
		if (c->threads[i].tid == pid)
			return c->threads[i].comm;
	return "";
}

/* What the capture says of its processes and hits, into t.  Every
 * process's name: those a thread names too, then threads' alone. */
static int to_model(const struct dec_capture *c, struct mt_trace *t)
{
	for (size_t i = 0; i < c->nr_threads; i++) {
		uint32_t pid = c->threads[i].pid;

		if (mt_trace_name_process(t, pid, process_name(c, pid)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < c->nr_hits; i++) {
		const struct dec_hit *h = &c->hits[i];
		struct mt_hit m = {.ts = h->time,
				   .mark_start = h->mark_start,
				   .pid = h->pid,
				   .tid = h->tid,
				   .ip = h->ip,
				   .arg = h->arg};

		if (!mt_trace_add_named_hit(t, &m, h->name))
			return -ENOMEM;
	}
	return 0;
}

int dec_open(struct dec_capture **out, const char *path,
	     const struct dec_opts *o, char *err, size_t errlen)
{
	struct dec_capture *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c || !(c->path = strdup(path)))
		goto no_memory;
	if (o)
		c->opts = *o;
	{
		struct img_opts io = {
			.binary_dirs = c->opts.binary_dirs,
			.nr_binary_dirs = c->opts.nr_binary_dirs,
			.debug_root = c->opts.debug_root,
			.jit_dir = c->opts.jit_dir,
			.warn = c->opts.warn,
			.warn_ctx = c->opts.warn_ctx,
			.no_inline = c->opts.no_inline,
		};

		if (img_new(&c->img, path, &io))
			goto no_memory;
	}
	rc = pd_open(&c->pd, path, err, errlen);
	if (rc)
		goto fail;
	rc = read_records(c, err, errlen);
	if (rc)
		goto fail;
	rc = img_build(c->img, c->pd, &c->pt, err, errlen);
	if (rc)
		goto fail;
	c->iscache = img_iscache(c->img);
	if (c->opts.model && to_model(c, c->opts.model)) {
		snprintf(err, errlen, "%s: out of memory", c->path);
		rc = -ENOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	dec_free(c);
	return rc < 0 ? rc : -EINVAL;
no_memory:
	if (c)
		free(c->path);
	free(c);
	snprintf(err, errlen, "%s: out of memory", path);
	return -ENOMEM;
}

void dec_free(struct dec_capture *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_threads; i++) {
		free(c->threads[i].ev);
		free(c->threads[i].final.ips);
		free(c->threads[i].execs);
		free(c->threads[i].gos);
		free(c->comms[i]);
	}
	img_free(c->img);
	free(c->hits);
	free(c->threads);
	free(c->comms);
	free(c->chunks);
	free(c->switches);
	pd_close(c->pd);
	free(c->path);
	free(c);
}

void dec_set_sink(struct dec_capture *c, dec_sink_fn fn, void *ctx)
{
	c->sink = fn;
	c->sink_ctx = ctx;
	/* A run form was for the context before. */
	c->sink_run = NULL;
}

void dec_set_sink_run(struct dec_capture *c, dec_sink_run_fn fn)
{
	c->sink_run = fn;
}

size_t dec_nr_threads(const struct dec_capture *c)
{
	return c->nr_threads;
}

struct dec_thread *dec_thread_at(struct dec_capture *c, size_t i)
{
	return i < c->nr_threads ? &c->threads[i] : NULL;
}

void dec_thread_free_events(struct dec_thread *t)
{
	free(t->ev);
	t->ev = NULL;
	t->nr = t->cap = 0;
}

const struct dec_stats *dec_stats(const struct dec_capture *c)
{
	return &c->stats;
}

const char *dec_recorded_by(const struct dec_capture *c)
{
	const char *v = pd_feature_string(c->pd, PD_FEAT_VERSION);

	return v ? v : "";
}

void dec_span(const struct dec_capture *c, uint64_t *first, uint64_t *last)
{
	*first = c->first;
	*last = c->last;
}

size_t dec_nr_missing(const struct dec_capture *c)
{
	return img_nr_missing(c->img);
}

const char *dec_missing_at(const struct dec_capture *c, size_t i)
{
	return img_missing_at(c->img, i);
}

struct img *dec_image(struct dec_capture *c)
{
	return c->img;
}

struct dec_thread *dec_threads(struct dec_capture *c, size_t *nr)
{
	*nr = c->nr_threads;
	return c->threads;
}
