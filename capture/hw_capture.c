/* SPDX-License-Identifier: MIT */
/*
 * The hardware backend's capture file: the intel_pt event as opened,
 * what happened before an attach (from /proc), the sideband the rings
 * gave in time order, the spooled trace, and the extras (hits, the
 * stack at the last one, the vDSO).
 */
#include "capture/capfile_internal.h"
#include "capture/hw_internal.h"
#include "capture/kcore_internal.h"
#include "capture/target_internal.h"
#include "util/util.h"

#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* perf stores the config bits of a field as a mask. */
static uint64_t field_mask(const struct pt_pmu *p, const char *name)
{
	const struct pt_field *f = pmu_field(p, name);
	unsigned w;

	if (!f)
		return 0;
	w = (unsigned)(f->hi - f->lo + 1);
	return (w == 64 ? ~0ull : (1ull << w) - 1) << f->lo;
}

void hw_pt_info(const struct hw *h, struct pd_pt_info *pt)
{
	const struct pt_pmu *p = &h->pmu;
	const struct perf_event_mmap_page *pg = h->rings[0].page;
	unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;

	memset(pt, 0, sizeof(*pt));
	pt->pmu_type = p->type;
	pt->time_shift = pg->time_shift;
	pt->time_mult = pg->time_mult;
	pt->time_zero = pg->time_zero;
	pt->cap_user_time_zero = pg->cap_user_time_zero;
	pt->tsc_bit = field_mask(p, "tsc");
	pt->noretcomp_bit = field_mask(p, "noretcomp");
	/* Per CPU, PERF_RECORD_SWITCH from the event's context_switch
	 * says who ran; per thread, the ring says it. */
	pt->have_sched_switch = h->o->per_cpu ? 2 : 0;
	pt->snapshot_mode = !h->o->full;
	pt->per_cpu_mmaps = h->o->per_cpu;
	pt->have_mtc_group = true;
	pt->mtc_bit = field_mask(p, "mtc");
	pt->mtc_freq_bits = field_mask(p, "mtc_period");
	/* CPUID.15H: TSC / core crystal clock ratio, for MTC. */
	if (__get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx)) {
		pt->tsc_ctc_d = eax;
		pt->tsc_ctc_n = ebx;
	}
	pt->cyc_bit = field_mask(p, "cyc");
	pt->have_max_nonturbo = true;
	pt->max_nonturbo_ratio = p->max_nonturbo_ratio;
	snprintf(pt->filter, sizeof(pt->filter), "%s", h->filter);
}

/* "GenuineIntel,6,85,4", as perf writes the CPUID feature. */
static void cpuid_string(char *buf, size_t len)
{
	unsigned a, b, c, d, fam, model;
	char vendor[13];

	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	__cpuid(1, a, b, c, d);
	fam = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	if (fam == 6 || fam == 15)
		model += ((a >> 16) & 0xf) << 4;
	if (fam == 15)
		fam += (a >> 20) & 0xff;
	snprintf(buf, len, "%s,%u,%u,%u", vendor, fam, model, a & 0xf);
}

struct hw_existing {
	struct hw *h;
	struct capfile *c;
	struct pd_sample_id sid;
	int failed;
};

/* An executable file mapping (or the vDSO) of an attached process. */
static int existing_mapping(const struct mt_map *m, const char *line, void *arg)
{
	struct hw_existing *x = arg;

	(void)line;
	if (!(m->prot & PROT_EXEC) ||
	    (m->path[0] != '/' && strcmp(m->path, "[vdso]")))
		return 0;
	x->failed =
		capfile_mapping(x->c, m, (uint32_t)x->h->pid, &x->sid, true);
	return x->failed;
}

/* Attached: what the kernel will not tell, because it happened before
 * (the threads' names and the executable mappings), from /proc. */
static int write_existing(struct hw *h, struct capfile *c)
{
	struct hw_existing x = {h, c,
				capfile_sample_id((uint32_t)h->pid,
						  (uint32_t)h->pid, 0,
						  h->ids[0])};
	char comm[32];

	target_comm(h->pid, comm, sizeof(comm));
	for (size_t i = 0; i < h->nr_tids; i++) {
		struct pd_comm cm = {.pid = (uint32_t)h->pid,
				     .tid = (uint32_t)h->tids[i],
				     .comm = comm};

		int rc;

		x.sid.tid = (uint32_t)h->tids[i];
		rc = pd_write_comm(c->w, &cm, &x.sid);
		if (rc)
			return rc;
	}
	x.sid.tid = (uint32_t)h->pid;
	/* A process whose maps cannot be read has none to tell. */
	mt_maps_each(h->pid, existing_mapping, &x, NULL, 0);
	return x.failed;
}

/* The sideband's time: our sample_type puts it 24 bytes before the end
 * of every non-sample record (TIME, CPU, IDENTIFIER follow TID). */
struct sb_at {
	size_t off;
	uint64_t time;
};

static int by_time(const void *a, const void *b)
{
	const struct sb_at *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static int write_sideband(struct hw *h, struct capfile *c)
{
	struct sb_at *at = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (size_t off = 0; off < h->sb_len;) {
		struct perf_event_header eh;

		memcpy(&eh, h->sb + off, sizeof(eh));
		if (mt_grow((void **)&at, &cap, n + 1, sizeof(*at))) {
			free(at);
			return -ENOMEM;
		}
		at[n].off = off;
		at[n].time = 0;
		if (eh.size >= sizeof(eh) + 24)
			memcpy(&at[n].time, h->sb + off + eh.size - 24, 8);
		n++;
		off += eh.size;
	}
	/* Rings drained one after the other: merge them in time. */
	if (n && mt_stable_sort(at, n, sizeof(*at), by_time)) {
		free(at);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct perf_event_header eh;

		memcpy(&eh, h->sb + at[i].off, sizeof(eh));
		rc = pd_writer_raw(c->w, h->sb + at[i].off, eh.size);
	}
	free(at);
	/* The binaries mapped after the start (libraries, dlopen). */
	return rc ? rc : capfile_buildids_of_records(c, h->sb, h->sb_len);
}

static int hit_by_time(const void *a, const void *b)
{
	const struct pd_ext_hit *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* The trace chunks, from the spool, in the order they came. */
static int write_trace(struct hw *h, struct capfile *c)
{
	if (h->spool && fflush(h->spool))
		return mt_fail(h, -EIO, "the temporary trace file: %s",
			       strerror(errno));
	for (size_t i = 0; i < h->nr_chunks; i++) {
		const struct chunk *k = &h->chunks[i];
		int rc;

		if (fseek(h->spool, k->at, SEEK_SET) ||
		    fread(h->copy, 1, k->a.size, h->spool) != k->a.size)
			return mt_fail(h, -EIO,
				       "reading the temporary trace file: %s",
				       strerror(errno));
		rc = pd_write_auxtrace(c->w, &k->a, h->copy);
		if (rc)
			return rc;
	}
	return 0;
}

/* The extras: the hits, the stack at the last one, the vDSO. */
static int add_extras(struct hw *h, struct capfile *c)
{
	struct pd_ext_stack es = {.pid = (uint32_t)h->pid,
				  .tid = (uint32_t)h->final_tid,
				  .time = h->final_time,
				  .nr = h->nr_final,
				  .ips = h->final_ips};

	int rc = 0;

	/* Rings are read one after the other: hits in time order. */
	if (h->nr_hits &&
	    mt_stable_sort(h->hits, h->nr_hits, sizeof(*h->hits), hit_by_time))
		return -ENOMEM;
	for (size_t i = 0; i < h->nr_hits && !rc; i++)
		rc = pd_ext_add_hit(&c->ext, &h->hits[i]);
	if (!rc && h->nr_final)
		rc = pd_ext_add_stack(&c->ext, &es);
	if (!rc)
		rc = capfile_vdso(c, (uint32_t)h->pid, h->vdso_start,
				  h->vdso_len, h->vdso);
	return rc;
}

/*
 * With the kernel traced, its code as perf record --kcore keeps it;
 * without it (no root, no kcore, hidden addresses) the capture is still
 * written, and one line says what is missing.
 */
static int add_kernel(struct hw *h, struct capfile *c)
{
	struct pd_sample_id sid =
		capfile_sample_id(UINT32_MAX, 0, 0, h->ids[0]);
	struct kcore_text k;
	char why[256];
	int rc;

	if (!h->o->include_kernel)
		return 0;
	rc = kcore_read(h->o->proc_root ? h->o->proc_root : "/proc", &k, why,
			sizeof(why));
	if (rc == -ENOMEM)
		return mt_fail(h, rc, "out of memory");
	if (rc) {
		snprintf(h->st->kernel_note, sizeof(h->st->kernel_note),
			 "%s: kernel code will show as [kernel]", why);
		return 0;
	}
	rc = kcore_add(c, &k, &sid);
	kcore_free(&k);
	return rc;
}

/* Before the trace: the kernel's code, what an attach missed, the
 * sideband. */
static int hw_sideband(struct capfile *c, void *arg)
{
	struct hw *h = arg;
	int rc = add_kernel(h, c);

	if (!rc && !h->launched)
		rc = write_existing(h, c);
	return rc ? rc : write_sideband(h, c);
}

static int hw_trace(struct capfile *c, void *arg)
{
	return write_trace(arg, c);
}

static int hw_extras(struct capfile *c, void *arg)
{
	return add_extras(arg, c);
}

int hw_write_capture(struct hw *h)
{
	struct capfile_parts p = {.output = h->o->cap.output,
				  .attr = {&h->attr},
				  .ids = {h->ids},
				  .nr_ids = {h->nr_ids},
				  .sideband = hw_sideband,
				  .trace = hw_trace,
				  .extras = hw_extras,
				  .arg = h};
	char cpuid[64];

	hw_pt_info(h, &p.pt);
	p.tc = (struct pd_time_conv){.time_shift = p.pt.time_shift,
				     .time_mult = p.pt.time_mult,
				     .time_zero = p.pt.time_zero,
				     .cap_user_time_zero =
					     p.pt.cap_user_time_zero};
	cpuid_string(cpuid, sizeof(cpuid));
	p.cpuid = cpuid;
	return capfile_write(&p, h->err, h->errlen);
}
