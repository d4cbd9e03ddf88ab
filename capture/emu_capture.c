/* SPDX-License-Identifier: MIT */
/*
 * The emulator's capture file: the emulated PMU's event, the target's
 * threads and mappings (as the kernel would have announced them, or as
 * its sideband did), each thread's trace as ptenc wrote it, and the
 * extras only we can know: the stacks at the end, the vDSO, the hits.
 */
#include "capture/capfile_internal.h"
#include "capture/emu_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The address range of a line of /proc/PID/maps; false if it has none. */
static bool map_range(const char *line, unsigned long long *lo,
		      unsigned long long *hi)
{
	return sscanf(line, "%llx-%llx", lo, hi) == 2 && *lo < *hi;
}

int emu_add_map(struct emu *e, const char *line, uint64_t time)
{
	unsigned long long lo, hi, a, b;
	char *copy;

	/* Known when the newest mapping at these addresses is this one: a
	 * library mapped again where another took its place since (dlclose,
	 * then dlopen) is new again, as the kernel's MMAP2 record is. */
	if (map_range(line, &lo, &hi)) {
		for (size_t i = e->nr_maps; i-- > e->maps_from;)
			if (map_range(e->maps[i], &a, &b) && a < hi && lo < b) {
				if (!strcmp(e->maps[i], line))
					return 0;
				break;
			}
	} else {
		for (size_t i = e->maps_from; i < e->nr_maps; i++)
			if (!strcmp(e->maps[i], line))
				return 0;
	}
	copy = strdup(line);
	if (!copy ||
	    mt_grow((void **)&e->maps, &e->cap_maps, e->nr_maps + 1,
		    sizeof(*e->maps)) ||
	    mt_grow((void **)&e->map_time, &e->cap_map_time, e->nr_maps + 1,
		    sizeof(*e->map_time))) {
		free(copy);
		return -ENOMEM;
	}
	e->map_time[e->nr_maps] = time;
	e->maps[e->nr_maps++] = copy;
	return 1;
}

/* What emu_collect_maps() hands each line of /proc/PID/maps. */
struct collect {
	struct emu *e;
	uint64_t time;
	bool added;
};

/* One executable mapping, kept unless seen already. */
static int keep_exec_map(const struct mt_map *m, const char *line, void *arg)
{
	struct collect *c = arg;
	int rc;

	if (!(m->prot & PROT_EXEC))
		return 0;
	rc = emu_add_map(c->e, line, c->time);
	if (rc > 0)
		c->added = true;
	return rc < 0 ? rc : 0;
}

int emu_collect_maps(struct emu *e, uint64_t time)
{
	struct collect c = {e, time, false};
	int rc = mt_maps_each(e->pid, keep_exec_map, &c, NULL, 0);

	return rc == -ENOMEM ? rc : c.added;
}

/* The emulated PMU: a Skylake's intel_pt with its TSC, MTC and CPU
 * frequencies as EMU_* say, tracing user space with branches, TSC and
 * MTC on. */
static void emu_pt_event(const struct emu *e, struct perf_event_attr *attr,
			 struct pd_pt_info *pt)
{
	capfile_pt_attr(attr, EMU_PMU_TYPE,
			1 | (1ull << 13) | (1ull << 10) | (1ull << 9) |
				((uint64_t)EMU_MTC_PERIOD << 14) |
				(1ull << 24) |
				(e->o->noretcomp ? 1ull << 11 : 0) |
				(e->o->ptwrite ? 1ull << 12 | 1ull << 5 : 0));
	memset(pt, 0, sizeof(*pt));
	capfile_pt_format(pt);
	pt->pmu_type = EMU_PMU_TYPE;
	pt->time_shift = 0;
	pt->time_mult = 1;
	pt->cap_user_time_zero = true;
	pt->tsc_ctc_n = EMU_TSC_CTC;
	pt->tsc_ctc_d = 1;
	pt->have_max_nonturbo = true;
	pt->max_nonturbo_ratio = EMU_NONTURBO;
	pt->snapshot_mode =
		e->o->cap.snapshot_size != 0 || e->o->cap.multi_snapshot;
}

/* A fork, exec or mapping after the start, at its time. */
static int write_task(struct capfile *c, const struct etask *k)
{
	struct pd_sample_id sid = capfile_sample_id(
		(uint32_t)k->pid, (uint32_t)k->tid, k->time, 1);
	struct pd_task fk = {.pid = (uint32_t)k->pid,
			     .ppid = (uint32_t)k->ppid,
			     .tid = (uint32_t)k->tid,
			     .ptid = (uint32_t)k->ptid,
			     .time = k->time};
	struct pd_comm cm = {.pid = (uint32_t)k->pid,
			     .tid = (uint32_t)k->tid,
			     .exec = k->kind == ET_EXEC,
			     .comm = k->text};
	char path[4096];
	struct mt_map m;

	switch (k->kind) {
	case ET_FORK:
		return pd_write_task(c->w, PERF_RECORD_FORK, &fk, &sid);
	case ET_COMM:
	case ET_EXEC:
		return pd_write_comm(c->w, &cm, &sid);
	default:
		if (mt_map_parse(k->text, &m, path, sizeof(path)))
			return 0;
		return capfile_mapping(c, &m, (uint32_t)k->pid, &sid, false);
	}
}

/* The threads: the first as the exec named it, with the mappings seen,
 * then each other one as a fork of it. */
static int write_threads(struct emu *e, struct capfile *c,
			 const struct pd_sample_id *sid)
{
	struct pd_comm cm = {.pid = (uint32_t)e->pid,
			     .tid = (uint32_t)e->pid,
			     .exec = true,
			     .comm = e->comm};
	char path[4096];
	int rc = pd_write_comm(c->w, &cm, sid);

	/* Each mapping at the time it was seen made: perf switches images
	 * by time (a library unloaded and another loaded at its address). */
	for (size_t i = 0; i < e->nr_maps && !rc; i++) {
		struct mt_map m;
		struct pd_sample_id ms = *sid;

		if (e->map_time[i] > ms.time)
			ms.time = e->map_time[i];
		if (!mt_map_parse(e->maps[i], &m, path, sizeof(path)))
			rc = capfile_mapping(c, &m, (uint32_t)e->pid, &ms,
					     false);
	}
	for (size_t i = 0; i < e->nr_thr && !rc; i++) {
		struct thr *t = &e->thr[i];
		struct pd_sample_id s2 = *sid;
		struct pd_task fk = {.pid = (uint32_t)e->pid,
				     .ppid = (uint32_t)e->pid,
				     .tid = (uint32_t)t->tid,
				     .ptid = (uint32_t)e->pid,
				     .time = sid->time};
		struct pd_comm tc = {.pid = (uint32_t)e->pid,
				     .tid = (uint32_t)t->tid,
				     .comm = e->comm};

		if (t->tid == e->pid || t->pid)
			continue;
		s2.tid = (uint32_t)t->tid;
		rc = pd_write_task(c->w, PERF_RECORD_FORK, &fk, &s2);
		if (!rc)
			rc = pd_write_comm(c->w, &tc, &s2);
	}
	for (size_t i = 0; i < e->nr_tasks && !rc; i++)
		rc = write_task(c, &e->tasks[i]);
	return rc;
}

/* The trace: the snapshots taken at hits (--multi-snapshot) in order,
 * then each thread's ring at the end. */
static int write_trace(struct emu *e, struct capfile *c, uint64_t end)
{
	int rc;

	for (size_t k = 0; k < e->nr_snaps; k++) {
		const struct snap *sn = &e->snaps[k];
		struct pd_auxtrace a = {.size = sn->len,
					.reference = sn->time,
					.idx = (uint32_t)sn->thread,
					.tid = (uint32_t)e->thr[sn->thread].tid,
					.cpu = UINT32_MAX};

		e->st->aux_bytes += sn->len;
		rc = pd_write_auxtrace(c->w, &a, sn->data);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < e->nr_thr; i++) {
		struct thr *t = &e->thr[i];
		struct pd_auxtrace a = {.reference = end,
					.idx = (uint32_t)i,
					.tid = (uint32_t)t->tid,
					.cpu = UINT32_MAX};
		const uint8_t *data;
		size_t len;

		if (!t->started)
			continue;
		if (ptenc_finish(t->enc, end))
			return -ENOMEM;
		data = ptenc_data(t->enc, &len);
		/* What the snapshots at hits took is not written again. */
		data += t->snap_end;
		len -= t->snap_end;
		/* Snapshot mode: the ring kept the newest bytes only; the
		 * decoder starts at the first PSB in them, as with
		 * hardware. */
		if (e->o->cap.snapshot_size && len > e->o->cap.snapshot_size) {
			data += len - e->o->cap.snapshot_size;
			len = e->o->cap.snapshot_size;
		}
		a.size = len;
		e->st->aux_bytes += len;
		if (len && (rc = pd_write_auxtrace(c->w, &a, data)))
			return rc;
	}
	return 0;
}

/* Each thread's stack at the end, leaf first: it anchors the roots that
 * no return in the kept trace reveals. */
static int add_stacks(struct emu *e, struct capfile *c, uint64_t end)
{
	for (size_t i = 0; i < e->nr_thr; i++) {
		struct thr *t = &e->thr[i];
		uint64_t *ips;
		struct pd_ext_stack es = {
			.pid = (uint32_t)(t->pid ? t->pid : e->pid),
			.tid = (uint32_t)t->tid,
			.time = end};
		int rc;

		if (!t->started || t->exited || !t->last_ip)
			continue;
		if (t->nr_unwound) {
			es.nr = t->nr_unwound;
			es.ips = t->unwound;
			rc = pd_ext_add_stack(&c->ext, &es);
			if (rc)
				return rc;
			continue;
		}
		ips = malloc((t->depth + 1) * sizeof(*ips));
		if (!ips)
			return -ENOMEM;
		ips[0] = t->last_ip;
		for (size_t k = 0; k < t->depth; k++)
			ips[k + 1] = t->shadow[t->depth - 1 - k];
		es.nr = t->depth + 1;
		es.ips = ips;
		rc = pd_ext_add_stack(&c->ext, &es);
		free(ips);
		if (rc)
			return rc;
	}
	return 0;
}

/* The hits: those --multi-snapshot took, then the one that ended the
 * capture. */
static int add_hits(struct emu *e, struct capfile *c)
{
	const char *name =
		e->o->cap.trigger ? e->o->cap.trigger : "mt_snapshot_point";
	int rc = 0;

	for (size_t k = 0; k <= e->nr_hits && !rc; k++) {
		const struct ehit *x = k < e->nr_hits ? &e->hits[k] : NULL;
		struct pd_ext_hit h = {
			.pid = (uint32_t)emu_thr_pid(e,
						     x ? x->tid : e->hit_tid),
			.tid = (uint32_t)(x ? x->tid : e->hit_tid),
			.time = x ? x->time : e->hit_time,
			.ip = x ? x->ip : e->hit_ip,
			.arg = x ? x->arg : e->hit_arg,
			.mark_start = x ? x->mark : e->hit_mark,
			.name = name,
		};

		if (x || e->hit_time)
			rc = pd_ext_add_hit(&c->ext, &h);
	}
	return rc;
}

/* The goroutine switches the emulator saw, thread by thread in time
 * order. */
static int add_goroutines(struct emu *e, struct capfile *c)
{
	int rc = 0;

	for (size_t i = 0; i < e->nr_gos && !rc; i++)
		rc = pd_ext_add_goroutine(&c->ext, &e->gos[i]);
	return rc;
}

/* The build ids of the files mapped, once the sideband is in: reading
 * them takes a while. */
static int add_buildids(struct emu *e, struct capfile *c)
{
	char path[4096];
	int rc = 0;

	for (size_t i = 0; i < e->nr_maps && !rc; i++) {
		struct mt_map m;

		if (!mt_map_parse(e->maps[i], &m, path, sizeof(path)))
			rc = capfile_buildid(c, (uint32_t)e->pid, path);
	}
	for (size_t i = 0; i < e->nr_tasks && !rc; i++) {
		const struct etask *k = &e->tasks[i];
		struct mt_map m;

		if (k->kind == ET_MMAP &&
		    !mt_map_parse(k->text, &m, path, sizeof(path)))
			rc = capfile_buildid(c, (uint32_t)k->pid, path);
	}
	return rc;
}

/* What emu_write_capture()'s steps need. */
struct emu_out {
	struct emu *e;
	uint64_t end;
};

/* The threads and mappings, then what the kernel's sideband said. */
static int emu_sideband(struct capfile *c, void *arg)
{
	struct emu *e = ((struct emu_out *)arg)->e;
	struct pd_sample_id sid = capfile_sample_id(
		(uint32_t)e->pid, (uint32_t)e->pid, e->start_time, 1);
	int rc = write_threads(e, c, &sid);

	for (int k = 0; !rc && e->have_sb && k < e->nr_sb; k++)
		rc = sb_copy(c->w, e->sb[k].page, SB_DATA_PAGES);
	return rc;
}

static int emu_trace(struct capfile *c, void *arg)
{
	struct emu_out *x = arg;

	return write_trace(x->e, c, x->end);
}

/* The stacks at the end, the vDSO, the hits, the build ids. */
static int emu_extras(struct capfile *c, void *arg)
{
	struct emu_out *x = arg;
	struct emu *e = x->e;
	int rc = add_stacks(e, c, x->end);

	if (!rc)
		rc = capfile_vdso(c, (uint32_t)e->pid, e->vdso_start,
				  e->vdso_len, e->vdso);
	if (!rc)
		rc = add_hits(e, c);
	if (!rc)
		rc = add_goroutines(e, c);
	return rc ? rc : add_buildids(e, c);
}

int emu_write_capture(struct emu *e, uint64_t end)
{
	struct perf_event_attr attr;
	const uint64_t ids[1] = {1};
	struct emu_out x = {e, end};
	struct capfile_parts p = {
		.output = e->o->cap.output,
		.attr = {&attr, e->have_sb ? &e->sb[0].attr : NULL},
		.ids = {ids, e->sb_ids},
		.nr_ids = {1, e->have_sb ? (size_t)e->nr_sb : 0},
		.tc = {.time_mult = 1,
		       .have_ext = true,
		       .cap_user_time_zero = true},
		.cpuid = "GenuineIntel,6,85,4",
		.hostname = "mt-capture",
		.sideband = emu_sideband,
		.trace = emu_trace,
		.extras = emu_extras,
		.arg = &x};

	emu_pt_event(e, &attr, &p.pt);
	return capfile_write(&p, e->err, e->errlen);
}
