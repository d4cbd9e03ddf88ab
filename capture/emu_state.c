/* SPDX-License-Identifier: MIT */
/*
 * The emulated capture's state that both emulate backends (the ptrace
 * stepper and the Valgrind tool's reader) keep the same way: threads and
 * their encoders, the CPU's return stack, --multi-snapshot's chunks, and
 * the teardown.
 */
#include "capture/emu_internal.h"
#include "capture/symaddr_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct thr *emu_thr_find(struct emu *e, pid_t tid)
{
	for (size_t i = 0; i < e->nr_thr; i++)
		if (e->thr[i].tid == tid)
			return &e->thr[i];
	return NULL;
}

struct thr *emu_thr_add(struct emu *e, pid_t tid)
{
	struct ptenc_cfg cfg = {.timing = PTENC_MTC,
				.noretcomp = e->o->noretcomp,
				.psb_period = 1, /* 4 KiB */
				.mtc_period = EMU_MTC_PERIOD,
				.tsc_ctc_ratio = EMU_TSC_CTC,
				.cbr = EMU_NONTURBO,
				.tnt_max = 6,
				.psb_forced_only = e->tool_rets};
	struct thr *t;

	if (mt_grow((void **)&e->thr, &e->cap_thr, e->nr_thr + 1,
		    sizeof(*e->thr)))
		return NULL;
	t = &e->thr[e->nr_thr];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->enc = ptenc_new(&cfg, (uint64_t)tid);
	if (!t->enc)
		return NULL;
	e->nr_thr++;
	e->live++;
	return t;
}

int emu_shadow_push(struct thr *t, uint64_t ret)
{
	if (mt_grow((void **)&t->shadow, &t->cap_shadow, t->depth + 1,
		    sizeof(*t->shadow)))
		return -ENOMEM;
	t->shadow[t->depth++] = ret;
	return 0;
}

int emu_snapshot(struct emu *e, uint64_t when)
{
	for (size_t i = 0; i < e->nr_thr; i++) {
		struct thr *t = &e->thr[i];
		const uint8_t *d;
		size_t len, from;
		struct snap *sn;

		if (!t->started || t->exited)
			continue;
		if (ptenc_finish(t->enc, when))
			return -ENOMEM;
		d = ptenc_data(t->enc, &len);
		from = t->snap_end;
		if (e->o->cap.snapshot_size &&
		    len - from > e->o->cap.snapshot_size)
			from = len - e->o->cap.snapshot_size;
		if (from >= len)
			continue;
		if (mt_grow((void **)&e->snaps, &e->cap_snaps, e->nr_snaps + 1,
			    sizeof(*e->snaps)))
			return -ENOMEM;
		sn = &e->snaps[e->nr_snaps];
		sn->data = malloc(len - from);
		if (!sn->data)
			return -ENOMEM;
		memcpy(sn->data, d + from, len - from);
		sn->len = len - from;
		sn->thread = i;
		sn->time = when;
		e->nr_snaps++;
		t->snap_end = len;
		/* The next chunk must start at a sync point to decode (the
		 * Valgrind tool places it when it compresses the returns:
		 * after each thread's next record). */
		if (!e->tool_rets)
			ptenc_force_psb(t->enc);
	}
	return 0;
}

int emu_edso_add(struct emu *e, uint64_t lo, uint64_t hi, uint64_t off,
		 const char *path)
{
	struct edso *d;

	if (mt_grow((void **)&e->edsos, &e->cap_edsos, e->nr_edsos + 1,
		    sizeof(*e->edsos)))
		return -ENOMEM;
	d = &e->edsos[e->nr_edsos];
	memset(d, 0, sizeof(*d));
	d->lo = lo;
	d->hi = hi;
	d->pgoff = off;
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	e->nr_edsos++;
	return 0;
}

int emu_write_all(struct emu *e, uint64_t end, int rc)
{
	char werr[512] = "";
	char *keep = e->err;
	size_t keeplen = e->errlen;
	int wrc;

	/* A run that failed still writes what it traced, but its own
	 * error stays the one reported. */
	e->err = werr;
	e->errlen = sizeof(werr);
	wrc = emu_write_capture(e, end);
	if (!wrc && e->o->truth)
		wrc = emu_truth_write(e, end);
	if (!wrc && e->o->gaps)
		wrc = emu_write_gaps(e);
	e->err = keep;
	e->errlen = keeplen;
	if (rc)
		return rc;
	if (wrc)
		snprintf(e->err, e->errlen, "%s", werr);
	return wrc ? -EIO : 0;
}

void emu_free(struct emu *e)
{
	for (size_t i = 0; i < e->nr_thr; i++) {
		ptenc_free(e->thr[i].enc);
		free(e->thr[i].shadow);
		free(e->thr[i].unwound);
		free(e->thr[i].rows);
		free(e->thr[i].tstack);
	}
	for (size_t i = 0; i < e->nr_tasks; i++)
		free(e->tasks[i].text);
	free(e->tasks);
	for (size_t i = 0; i < e->nr_edsos; i++) {
		free(e->edsos[i].path);
		sym_file_free(e->edsos[i].sf);
	}
	free(e->edsos);
	free(e->gaps);
	for (size_t k = 0; k < e->nr_snaps; k++)
		free(e->snaps[k].data);
	free(e->snaps);
	free(e->hits);
	free(e->gos);
	free(e->triggers);
	for (int c = 0; c < e->nr_sb; c++)
		sb_close(&e->sb[c]);
	free(e->sb);
	free(e->sb_ids);
	for (size_t i = 0; i < e->nr_maps; i++)
		free(e->maps[i]);
	symwatch_free(e->trigger_watch);
	free(e->maps);
	free(e->map_time);
	free(e->vdso);
	free(e->thr);
	free(e->icache);
	if (e->cs)
		cs_close(&e->cs);
}

uint64_t emu_drop_rand(struct emu *e, uint64_t n)
{
	e->rng = e->rng * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (e->rng >> 33) % n : 0;
}

int emu_task_add(struct emu *e, uint8_t kind, uint64_t time, pid_t pid,
		 pid_t tid, pid_t ppid, pid_t ptid, const char *text)
{
	char *copy = text ? strdup(text) : NULL;

	if ((text && !copy) || mt_grow((void **)&e->tasks, &e->cap_tasks,
				       e->nr_tasks + 1, sizeof(*e->tasks))) {
		free(copy);
		return -ENOMEM;
	}
	e->tasks[e->nr_tasks++] =
		(struct etask){time, pid, tid, ppid, ptid, kind, copy};
	return 0;
}

pid_t emu_thr_pid(const struct emu *e, pid_t tid)
{
	for (size_t i = 0; i < e->nr_thr; i++)
		if (e->thr[i].tid == tid && e->thr[i].pid)
			return e->thr[i].pid;
	return e->pid;
}

int emu_go_switch(struct emu *e, struct thr *t, uint64_t time, uint64_t ip,
		  uint64_t g, uint64_t goid)
{
	if (g == t->g)
		return 0;
	if (mt_grow((void **)&e->gos, &e->cap_gos, e->nr_gos + 1,
		    sizeof(*e->gos)))
		return -ENOMEM;
	e->gos[e->nr_gos++] = (struct pd_ext_goroutine){
		.pid = (uint32_t)(t->pid ? t->pid : e->pid),
		.tid = (uint32_t)t->tid,
		.time = time,
		.ip = ip,
		.g = g,
		.goid = goid};
	t->g = g;
	t->goid = goid;
	return 0;
}
