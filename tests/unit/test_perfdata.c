/*
 * perfdata: writer/reader round trips in both file modes, truncation and
 * corruption at every byte, the two real Intel PT captures, perf's own
 * verdict on what we write, and time conversion.
 */
#include "perfdata/perfdata.h"
#include "report/report.h"
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Opens and walks everything; returns 0 on a clean walk, else the error. */
static int walk_all(const char *path, struct pd_err *err, size_t *nrec)
{
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t n;
	int rc;

	*nrec = 0;
	rc = pd_open(&f, path, err);
	if (rc)
		return rc;
	while ((rc = pd_next(f, &cur, &ev, err)) == 1)
		(*nrec)++;
	if (!rc)
		rc = pd_buildids(f, &b, &n, err);
	if (!rc)
		rc = pd_auxtrace_index(f, &x, &n, err);
	for (unsigned i = 0; i < 32; i++)
		(void)pd_feature_string(f, i);
	if (!rc) {
		size_t c = 0;
		uint32_t t, sz;
		const uint8_t *p;

		while ((rc = pd_ext_next(f, &c, &t, &p, &sz, err)) == 1) {
			struct pd_ext_stack s;

			if (t == PD_EXT_STACK && !pd_ext_parse_stack(p, sz, &s))
				for (uint64_t i = 0; i < s.nr; i++)
					(void)pd_ext_stack_ip(&s, i);
		}
	}
	pd_close(f);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The sample capture: one record of every kind                        */

enum kind {
	K_TC_SHORT,
	K_TC_LONG,
	K_INFO_FULL,
	K_INFO_OLD,
	K_COMM_EXEC,
	K_COMM,
	K_MMAP,
	K_MMAP2_INO,
	K_MMAP2_BID,
	K_FORK,
	K_EXIT,
	K_ITRACE,
	K_AUX,
	K_SW_OUT,
	K_SW_CPU,
	K_AUXTRACE,
	K_AUXTRACE0,
	K_ROUND,
	K_LOST,
	K_SAMPLE,
	K_UNKNOWN_USER,
	K_UNKNOWN_KERNEL,
	K_NR
};

enum variant {
	V_ALL,	 /* every kind */
	V_SMALL, /* a few, for the byte-by-byte truncation */
	V_PERF,	 /* what perf 6.1 accepts: no unknown types, one info */
};

static const enum kind small_kinds[] = {K_TC_SHORT,  K_INFO_FULL, K_COMM_EXEC,
					K_MMAP2_BID, K_AUXTRACE,  K_ROUND};

#define PMU 8
#define PID 100
#define TID 101
#define CPU 2

/* PSB, PSBEND: a valid if empty Intel PT stream. */
static const uint8_t pt_bytes[] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x02, 0x82, 0x02, 0x23};

static const uint8_t bid_a[20] = {0xde, 0xad, 0xbe, 0xef, 1,  2, 3,
				  4,	5,    6,    7,	  8,  9, 10,
				  11,	12,   13,   14,	  15, 16};

static void sample_pt(struct pd_pt_info *pt, bool full)
{
	memset(pt, 0, sizeof(*pt));
	pt->pmu_type = PMU;
	pt->time_shift = 31;
	pt->time_mult = 1789569706;
	pt->time_zero = 0xfffffff86343cb91ull;
	pt->cap_user_time_zero = true;
	pt->tsc_bit = 0x400;
	pt->noretcomp_bit = 0x800;
	pt->have_sched_switch = 2;
	pt->snapshot_mode = !full;
	pt->per_cpu_mmaps = full;
	if (!full)
		return;
	pt->have_mtc_group = true;
	pt->mtc_bit = 0x200;
	pt->mtc_freq_bits = 0x3c000;
	pt->tsc_ctc_n = 100;
	pt->tsc_ctc_d = 2;
	pt->cyc_bit = 2;
	pt->have_max_nonturbo = true;
	pt->max_nonturbo_ratio = 12;
	snprintf(pt->filter, sizeof(pt->filter), "filter 0x10/0x20@/bin/prog");
	pt->have_cap_event_trace = true;
	pt->cap_event_trace = 1;
}

static struct pd_sample_id sample_sid(enum kind k)
{
	struct pd_sample_id s = {.pid = PID,
				 .tid = TID,
				 .time = 1000 + 10 * (uint64_t)k,
				 .id = 11,
				 .cpu = CPU,
				 .have_tid = true,
				 .have_time = true,
				 .have_id = true,
				 .have_cpu = true};
	return s;
}

static void sample_attrs(struct perf_event_attr *a, struct perf_event_attr *b)
{
	memset(a, 0, sizeof(*a));
	a->type = PMU;
	a->config = 0x2401;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->sample_id_all = 1;
	a->context_switch = 1;
	*b = *a;
	b->type = PERF_TYPE_SOFTWARE;
	b->config = PERF_COUNT_SW_DUMMY;
	b->mmap = 1;
	b->comm = 1;
	b->task = 1;
	b->mmap2 = 1;
	b->comm_exec = 1;
}

/* Trailer in the sample attrs' layout: TID TIME CPU IDENTIFIER. */
static size_t put_trailer(uint8_t *p, uint64_t time, uint64_t id)
{
	put32(p, PID);
	put32(p + 4, TID);
	put64(p + 8, time);
	put32(p + 16, CPU);
	put32(p + 20, 0);
	put64(p + 24, id);
	return 32;
}

static int write_kind(struct pd_writer *w, enum kind k)
{
	struct pd_sample_id sid = sample_sid(k);
	struct pd_pt_info pt;
	uint8_t r[128] = {0};

	switch (k) {
	case K_TC_SHORT: {
		struct pd_time_conv tc = {31, 1789569706,
					  0xfffffff86343cb91ull};
		return pd_write_time_conv(w, &tc);
	}
	case K_TC_LONG: {
		struct pd_time_conv tc = {.time_shift = 10,
					  .time_mult = 1000,
					  .time_zero = 7,
					  .time_cycles = 5,
					  .time_mask = 0xffff,
					  .have_ext = true,
					  .cap_user_time_zero = true,
					  .cap_user_time_short = true};
		return pd_write_time_conv(w, &tc);
	}
	case K_INFO_FULL:
		sample_pt(&pt, true);
		return pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED, true);
	case K_INFO_OLD:
		sample_pt(&pt, false);
		return pd_write_auxtrace_info(w, &pt, 10, false);
	case K_COMM_EXEC: {
		struct pd_comm c = {PID, TID, true, "prog"};
		return pd_write_comm(w, &c, &sid);
	}
	case K_COMM: {
		struct pd_comm c = {PID, TID, false, "worker-thread-1"};
		return pd_write_comm(w, &c, &sid);
	}
	case K_MMAP: {
		struct pd_mmap m = {.pid = PID,
				    .tid = TID,
				    .start = 0x400000,
				    .len = 0x1000,
				    .pgoff = 0,
				    .filename = "/bin/prog-mmap1"};
		return pd_write_mmap2(w, &m, &sid);
	}
	case K_MMAP2_INO: {
		struct pd_mmap m = {.pid = PID,
				    .tid = TID,
				    .start = 0x7f0000001000,
				    .len = 0x2000,
				    .pgoff = 0x1000,
				    .is_mmap2 = true,
				    .maj = 8,
				    .min = 1,
				    .ino = 123456,
				    .ino_generation = 9,
				    .prot = 5,
				    .flags = 2,
				    .filename = "/lib/libfoo.so.1"};
		return pd_write_mmap2(w, &m, &sid);
	}
	case K_MMAP2_BID: {
		struct pd_mmap m = {.pid = PID,
				    .tid = TID,
				    .start = 0x401000,
				    .len = 0x3000,
				    .pgoff = 0x1000,
				    .is_mmap2 = true,
				    .has_build_id = true,
				    .build_id_size = 20,
				    .prot = 5,
				    .flags = 2,
				    .filename = "/bin/prog"};
		memcpy(m.build_id, bid_a, 20);
		return pd_write_mmap2(w, &m, &sid);
	}
	case K_FORK:
	case K_EXIT: {
		struct pd_task t = {PID, 1, TID, PID, 5000 + (uint64_t)k};
		return pd_write_task(
			w, k == K_FORK ? PERF_RECORD_FORK : PERF_RECORD_EXIT,
			&t, &sid);
	}
	case K_ITRACE: {
		struct pd_itrace_start s = {PID, TID};
		return pd_write_itrace_start(w, &s, &sid);
	}
	case K_AUX: {
		struct pd_aux a = {4096, 8192,
				   PERF_AUX_FLAG_TRUNCATED |
					   PERF_AUX_FLAG_PARTIAL};
		return pd_write_aux(w, &a, &sid);
	}
	case K_SW_OUT: {
		struct pd_switch s = {.out = true, .preempt = true};
		return pd_write_switch(w, &s, &sid);
	}
	case K_SW_CPU: {
		struct pd_switch s = {.cpu_wide = true,
				      .next_prev_pid = 200,
				      .next_prev_tid = 201};
		return pd_write_switch(w, &s, &sid);
	}
	case K_AUXTRACE: {
		struct pd_auxtrace a = {.size = sizeof(pt_bytes),
					.offset = 4096,
					.reference = 808742885798ull,
					.idx = 1,
					.tid = TID,
					.cpu = CPU};
		return pd_write_auxtrace(w, &a, pt_bytes);
	}
	case K_AUXTRACE0: {
		struct pd_auxtrace a = {.size = 0,
					.offset = 4096 + 24,
					.reference = 808742885799ull,
					.idx = 1,
					.tid = TID,
					.cpu = CPU};
		return pd_write_auxtrace(w, &a, NULL);
	}
	case K_ROUND:
		return pd_write_finished_round(w);
	case K_LOST: {
		size_t n = 24;

		put32(r, PERF_RECORD_LOST);
		put64(r + 8, 13);
		put64(r + 16, 7);
		n += put_trailer(r + n, sid.time, 13);
		put16(r + 6, (uint16_t)n);
		return pd_writer_raw(w, r, n);
	}
	case K_SAMPLE:
		put32(r, PERF_RECORD_SAMPLE);
		put16(r + 4, PERF_RECORD_MISC_USER);
		put64(r + 8, 12);	 /* IDENTIFIER */
		put64(r + 16, 0x401234); /* IP */
		put32(r + 24, PID);	 /* TID */
		put32(r + 28, TID);
		put64(r + 32, sid.time); /* TIME */
		put32(r + 40, CPU);	 /* CPU */
		put16(r + 6, 48);
		return pd_writer_raw(w, r, 48);
	case K_UNKNOWN_USER:
		put32(r, 99);
		put16(r + 4, 0x55);
		put64(r + 8, 0x1122334455667788ull);
		put16(r + 6, 16);
		return pd_writer_raw(w, r, 16);
	case K_UNKNOWN_KERNEL:
		put32(r, 40);
		put64(r + 8, 42);
		put16(r + 6, 16);
		return pd_writer_raw(w, r, 16);
	case K_NR:
		break;
	}
	return -1;
}

static bool sid_ok(const struct pd_sample_id *s, enum kind k, uint64_t id)
{
	return s->have_tid && s->have_time && s->have_id && s->have_cpu &&
	       s->pid == PID && s->tid == TID &&
	       s->time == 1000 + 10 * (uint64_t)k && s->cpu == CPU &&
	       s->id == id;
}

static bool sid_absent(const struct pd_sample_id *s)
{
	return !s->have_tid && !s->have_time && !s->have_id && !s->have_cpu &&
	       s->pid == UINT32_MAX && s->tid == UINT32_MAX &&
	       s->cpu == UINT32_MAX;
}

static bool pt_equal(const struct pd_pt_info *a, const struct pd_pt_info *b)
{
	return a->pmu_type == b->pmu_type && a->time_shift == b->time_shift &&
	       a->time_mult == b->time_mult && a->time_zero == b->time_zero &&
	       a->cap_user_time_zero == b->cap_user_time_zero &&
	       a->tsc_bit == b->tsc_bit &&
	       a->noretcomp_bit == b->noretcomp_bit &&
	       a->have_sched_switch == b->have_sched_switch &&
	       a->snapshot_mode == b->snapshot_mode &&
	       a->per_cpu_mmaps == b->per_cpu_mmaps &&
	       a->have_mtc_group == b->have_mtc_group &&
	       a->mtc_bit == b->mtc_bit &&
	       a->mtc_freq_bits == b->mtc_freq_bits &&
	       a->tsc_ctc_n == b->tsc_ctc_n && a->tsc_ctc_d == b->tsc_ctc_d &&
	       a->cyc_bit == b->cyc_bit &&
	       a->have_max_nonturbo == b->have_max_nonturbo &&
	       a->max_nonturbo_ratio == b->max_nonturbo_ratio &&
	       !strcmp(a->filter, b->filter) &&
	       a->have_cap_event_trace == b->have_cap_event_trace &&
	       a->cap_event_trace == b->cap_event_trace;
}

static void check_kind(struct check_state *st, struct pd_file *f, enum kind k,
		       const struct pd_event *ev)
{
	const struct pd_attr *a0 = pd_get_attr(f, 0), *a1 = pd_get_attr(f, 1);
	struct pd_pt_info pt;

	CHECKF(st, ev->raw && ev->file_offset, "kind %d", k);
	switch (k) {
	case K_TC_SHORT:
		CHECK(st, ev->type == PD_RECORD_TIME_CONV && ev->size == 32);
		CHECK(st, ev->u.time_conv.time_shift == 31 &&
				  ev->u.time_conv.time_mult == 1789569706 &&
				  ev->u.time_conv.time_zero ==
					  0xfffffff86343cb91ull &&
				  !ev->u.time_conv.have_ext);
		CHECK(st, sid_absent(&ev->sid));
		break;
	case K_TC_LONG:
		CHECK(st, ev->type == PD_RECORD_TIME_CONV && ev->size == 56);
		CHECK(st, ev->u.time_conv.time_shift == 10 &&
				  ev->u.time_conv.time_mult == 1000 &&
				  ev->u.time_conv.time_zero == 7 &&
				  ev->u.time_conv.time_cycles == 5 &&
				  ev->u.time_conv.time_mask == 0xffff &&
				  ev->u.time_conv.have_ext &&
				  ev->u.time_conv.cap_user_time_zero &&
				  ev->u.time_conv.cap_user_time_short);
		break;
	case K_INFO_FULL:
	case K_INFO_OLD:
		sample_pt(&pt, k == K_INFO_FULL);
		CHECK(st, ev->type == PD_RECORD_AUXTRACE_INFO);
		CHECK(st, ev->auxtrace_info_type == PD_AUXTRACE_INTEL_PT);
		CHECKF(st, pt_equal(&ev->u.pt_info, &pt), "kind %d", k);
		/* 17 fields + "filter ...@/bin/prog" (26+1 -> 32) + cap */
		CHECK(st, ev->size == (k == K_INFO_FULL ? 16 + 136 + 32 + 8
							: 16 + 80));
		CHECK(st, sid_absent(&ev->sid));
		break;
	case K_COMM_EXEC:
	case K_COMM:
		CHECK(st, ev->type == PERF_RECORD_COMM);
		CHECK(st, ev->u.comm.pid == PID && ev->u.comm.tid == TID);
		CHECK(st, ev->u.comm.exec == (k == K_COMM_EXEC));
		CHECK(st, !strcmp(ev->u.comm.comm,
				  k == K_COMM ? "worker-thread-1" : "prog"));
		CHECK(st, ev->size == (k == K_COMM ? 8 + 8 + 16 + 32
						   : 8 + 8 + 8 + 32));
		CHECK(st, sid_ok(&ev->sid, k, 11) && ev->attr == a0);
		break;
	case K_MMAP:
		CHECK(st, ev->type == PERF_RECORD_MMAP &&
				  ev->misc == PERF_RECORD_MISC_USER);
		CHECK(st, !ev->u.mmap.is_mmap2 && !ev->u.mmap.has_build_id);
		CHECK(st, ev->u.mmap.pid == PID && ev->u.mmap.tid == TID &&
				  ev->u.mmap.start == 0x400000 &&
				  ev->u.mmap.len == 0x1000 &&
				  ev->u.mmap.pgoff == 0);
		CHECK(st, !strcmp(ev->u.mmap.filename, "/bin/prog-mmap1"));
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_MMAP2_INO:
		CHECK(st, ev->type == PERF_RECORD_MMAP2 &&
				  ev->misc == PERF_RECORD_MISC_USER);
		CHECK(st, ev->u.mmap.is_mmap2 && !ev->u.mmap.has_build_id);
		CHECK(st, ev->u.mmap.start == 0x7f0000001000 &&
				  ev->u.mmap.len == 0x2000 &&
				  ev->u.mmap.pgoff == 0x1000);
		CHECK(st, ev->u.mmap.maj == 8 && ev->u.mmap.min == 1 &&
				  ev->u.mmap.ino == 123456 &&
				  ev->u.mmap.ino_generation == 9);
		CHECK(st, ev->u.mmap.prot == 5 && ev->u.mmap.flags == 2);
		CHECK(st, !strcmp(ev->u.mmap.filename, "/lib/libfoo.so.1"));
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_MMAP2_BID:
		CHECK(st, ev->type == PERF_RECORD_MMAP2 &&
				  ev->misc == (PERF_RECORD_MISC_USER |
					       PERF_RECORD_MISC_MMAP_BUILD_ID));
		CHECK(st, ev->u.mmap.is_mmap2 && ev->u.mmap.has_build_id);
		CHECK(st, ev->u.mmap.build_id_size == 20 &&
				  !memcmp(ev->u.mmap.build_id, bid_a, 20));
		CHECK(st, ev->u.mmap.start == 0x401000 &&
				  ev->u.mmap.len == 0x3000 &&
				  ev->u.mmap.pgoff == 0x1000 &&
				  ev->u.mmap.prot == 5 &&
				  ev->u.mmap.flags == 2);
		CHECK(st, ev->u.mmap.ino == 0 && ev->u.mmap.maj == 0);
		CHECK(st, !strcmp(ev->u.mmap.filename, "/bin/prog"));
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_FORK:
	case K_EXIT:
		CHECK(st, ev->type == (k == K_FORK ? PERF_RECORD_FORK
						   : PERF_RECORD_EXIT));
		CHECK(st, ev->u.task.pid == PID && ev->u.task.ppid == 1 &&
				  ev->u.task.tid == TID &&
				  ev->u.task.ptid == PID &&
				  ev->u.task.time == 5000 + (uint64_t)k);
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_ITRACE:
		CHECK(st, ev->type == PERF_RECORD_ITRACE_START);
		CHECK(st, ev->u.itrace_start.pid == PID &&
				  ev->u.itrace_start.tid == TID);
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_AUX:
		CHECK(st, ev->type == PERF_RECORD_AUX);
		CHECK(st, ev->u.aux.aux_offset == 4096 &&
				  ev->u.aux.aux_size == 8192 &&
				  ev->u.aux.flags == (PERF_AUX_FLAG_TRUNCATED |
						      PERF_AUX_FLAG_PARTIAL));
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_SW_OUT:
		CHECK(st, ev->type == PERF_RECORD_SWITCH && ev->size == 40);
		CHECK(st,
		      ev->u.sw.out && ev->u.sw.preempt && !ev->u.sw.cpu_wide);
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_SW_CPU:
		CHECK(st, ev->type == PERF_RECORD_SWITCH_CPU_WIDE);
		CHECK(st, !ev->u.sw.out && !ev->u.sw.preempt &&
				  ev->u.sw.cpu_wide &&
				  ev->u.sw.next_prev_pid == 200 &&
				  ev->u.sw.next_prev_tid == 201);
		CHECK(st, sid_ok(&ev->sid, k, 11));
		break;
	case K_AUXTRACE:
		CHECK(st, ev->type == PD_RECORD_AUXTRACE && ev->size == 48);
		CHECK(st, ev->u.auxtrace.size == 24); /* 18 padded to 8 */
		CHECK(st, ev->u.auxtrace.offset == 4096 &&
				  ev->u.auxtrace.reference == 808742885798ull &&
				  ev->u.auxtrace.idx == 1 &&
				  ev->u.auxtrace.tid == TID &&
				  ev->u.auxtrace.cpu == CPU);
		CHECK(st, ev->u.auxtrace.data == ev->raw + 48 &&
				  !memcmp(ev->u.auxtrace.data, pt_bytes,
					  sizeof(pt_bytes)) &&
				  !ev->u.auxtrace.data[18] &&
				  !ev->u.auxtrace.data[23]);
		CHECK(st, sid_absent(&ev->sid));
		break;
	case K_AUXTRACE0:
		CHECK(st, ev->type == PD_RECORD_AUXTRACE &&
				  ev->u.auxtrace.size == 0 &&
				  ev->u.auxtrace.offset == 4096 + 24 &&
				  ev->u.auxtrace.reference == 808742885799ull);
		break;
	case K_ROUND:
		CHECK(st,
		      ev->type == PD_RECORD_FINISHED_ROUND && ev->size == 8);
		break;
	case K_LOST:
		CHECK(st, ev->type == PERF_RECORD_LOST);
		CHECK(st, ev->u.lost.id == 13 && ev->u.lost.lost == 7);
		CHECK(st, sid_ok(&ev->sid, k, 13) && ev->attr == a1);
		break;
	case K_SAMPLE:
		CHECK(st, ev->type == PERF_RECORD_SAMPLE);
		CHECK(st, ev->u.sample.ip == 0x401234);
		CHECK(st, sid_ok(&ev->sid, k, 12) && ev->attr == a0);
		break;
	case K_UNKNOWN_USER:
		CHECK(st, ev->type == 99 && ev->misc == 0x55 &&
				  ev->size == 16 &&
				  get64(ev->raw + 8) == 0x1122334455667788ull);
		CHECK(st, sid_absent(&ev->sid));
		break;
	case K_UNKNOWN_KERNEL:
		CHECK(st, ev->type == 40 && ev->size == 16 &&
				  get64(ev->raw + 8) == 42);
		CHECK(st, sid_absent(&ev->sid));
		break;
	case K_NR:
		break;
	}
}

static size_t variant_kinds(enum variant v, enum kind *out)
{
	size_t n = 0;

	if (v == V_SMALL) {
		memcpy(out, small_kinds, sizeof(small_kinds));
		return sizeof(small_kinds) / sizeof(small_kinds[0]);
	}
	for (int k = 0; k < K_NR; k++) {
		if (v == V_PERF && (k == K_UNKNOWN_USER ||
				    k == K_UNKNOWN_KERNEL || k == K_INFO_OLD))
			continue;
		out[n++] = (enum kind)k;
	}
	return n;
}

static void stack_ext(struct pd_ext_buf *ext)
{
	static const uint64_t ips[3] = {0x401234, 0x401100, 0x401000};
	struct pd_ext_stack s = {
		.pid = PID, .tid = TID, .time = 1234, .nr = 3, .ips = ips};

	pd_ext_add_stack(ext, &s);
}

/*
 * Writes the sample capture.  The hostname and the first build id come
 * before the first record, the cpuid, the extension and the second build
 * id after it: in a piped file they land on both sides of the data.
 */
static int write_sample(const char *path, enum pd_write_mode mode,
			enum variant v, struct pd_err *err)
{
	struct pd_writer *w;
	struct perf_event_attr a, b;
	static const uint64_t ids_a[] = {11, 12}, ids_b[] = {13};
	struct pd_buildid b1 = {.pid = UINT32_MAX,
				.misc = PERF_RECORD_MISC_USER,
				.size = 20,
				.filename = "/bin/prog"};
	struct pd_buildid b2 = {.pid = UINT32_MAX,
				.misc = PERF_RECORD_MISC_KERNEL,
				.size = 16,
				.filename = "[kernel.kallsyms]"};
	struct pd_ext_buf ext = {0};
	enum kind kinds[K_NR];
	size_t n = variant_kinds(v, kinds);
	int rc;

	memcpy(b1.id, bid_a, 20);
	for (int i = 0; i < 20; i++)
		b2.id[i] = (uint8_t)(i < 16 ? 0xa0 + i : 0);
	rc = pd_writer_open(&w, path, mode, err);
	if (rc)
		return rc;
	sample_attrs(&a, &b);
	if ((rc = pd_writer_add_attr(w, &a, ids_a, 2)) ||
	    (rc = pd_writer_add_attr(w, &b, ids_b, 1)) ||
	    (rc = pd_writer_set_feature_string(w, PD_FEAT_HOSTNAME,
					       "testhost")) ||
	    (rc = pd_writer_add_buildid(w, &b1)))
		goto fail;
	for (size_t i = 0; i < n; i++)
		if ((rc = write_kind(w, kinds[i])))
			goto fail;
	if (v != V_SMALL) {
		stack_ext(&ext);
		if ((rc = pd_writer_set_feature_string(
			     w, PD_FEAT_CPUID, "GenuineIntel,6,85,4")) ||
		    (rc = pd_writer_add_buildid(w, &b2)))
			goto fail;
		rc = pd_writer_set_feature(w, PD_FEAT_MT_EXT, ext.data,
					   ext.len);
		/* perf stops at feature ids it does not know in a pipe */
		if (mode == PD_WRITE_PIPED && rc == -PD_EINVAL)
			rc = 0;
		else if (mode == PD_WRITE_PIPED)
			rc = -PD_EINVAL;
		if (rc)
			goto fail;
	}
	pd_ext_buf_free(&ext);
	return pd_writer_finish(w, err);
fail:
	pd_ext_buf_free(&ext);
	*err = *pd_writer_error(w);
	pd_writer_abort(w);
	return rc;
}

static void check_sample(struct check_state *st, const char *path,
			 enum pd_write_mode mode, enum variant v)
{
	struct pd_file *f;
	struct pd_err err = {0};
	struct pd_event ev;
	uint64_t cur = 0;
	enum kind kinds[K_NR];
	size_t n = variant_kinds(v, kinds), i = 0, nfeat = 0, nattr = 0,
	       nbid = 0;
	const struct pd_buildid *bids;
	const struct pd_auxtrace_index *idx;
	size_t nb, nx;
	int rc;

	rc = pd_open(&f, path, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK(st, pd_is_piped(f) == (mode == PD_WRITE_PIPED));
	CHECK(st, !strcmp(pd_path(f), path));
	/* Piped features are found by the pre-scan, before any pd_next. */
	CHECK(st, pd_feature_string(f, PD_FEAT_HOSTNAME) &&
			  !strcmp(pd_feature_string(f, PD_FEAT_HOSTNAME),
				  "testhost"));
	while ((rc = pd_next(f, &cur, &ev, &err)) == 1) {
		if (ev.type == PD_RECORD_HEADER_FEATURE) {
			nfeat++;
			continue;
		}
		if (ev.type == PD_RECORD_HEADER_ATTR) {
			nattr++;
			CHECK(st, ev.attr == pd_get_attr(f, nattr - 1));
			continue;
		}
		if (ev.type == PD_RECORD_HEADER_BUILD_ID) {
			nbid++;
			continue;
		}
		CHECKF(st, i < n, "extra record type %u", ev.type);
		if (i < n)
			check_kind(st, f, kinds[i], &ev);
		i++;
	}
	CHECKF(st, rc == 0, "%s", err.msg);
	CHECKF(st, i == n, "%zu records, expected %zu", i, n);
	if (mode == PD_WRITE_PIPED) {
		CHECK(st, nattr == 2);
		CHECK(st, nfeat == (v == V_SMALL ? 1u : 2u));
		CHECK(st, nbid == (v == V_SMALL ? 1u : 2u));
	} else {
		CHECK(st, nattr == 0 && nfeat == 0 && nbid == 0);
	}

	CHECK(st, pd_nr_attrs(f) == 2);
	if (pd_nr_attrs(f) == 2) {
		struct perf_event_attr a, b;
		const struct pd_attr *x = pd_get_attr(f, 0);
		const struct pd_attr *y = pd_get_attr(f, 1);

		sample_attrs(&a, &b);
		a.size = b.size = sizeof(a);
		CHECK(st, !memcmp(&x->attr, &a, sizeof(a)));
		CHECK(st, !memcmp(&y->attr, &b, sizeof(b)));
		CHECK(st, x->file_attr_size == sizeof(a));
		CHECK(st, x->nr_ids == 2 && x->ids[0] == 11 && x->ids[1] == 12);
		CHECK(st, y->nr_ids == 1 && y->ids[0] == 13);
		CHECK(st,
		      pd_attr_by_id(f, 12) == x && pd_attr_by_id(f, 13) == y &&
			      !pd_attr_by_id(f, 14) && !pd_attr_by_id(f, 0));
		CHECK(st, !pd_get_attr(f, 2));
	}

	rc = pd_buildids(f, &bids, &nb, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	CHECK(st, nb == (v == V_SMALL ? 1u : 2u));
	if (!rc && nb >= 1) {
		CHECK(st,
		      bids[0].pid == UINT32_MAX && bids[0].size == 20 &&
			      !memcmp(bids[0].id, bid_a, 20) &&
			      !strcmp(bids[0].filename, "/bin/prog") &&
			      (bids[0].misc & 0x7fff) == PERF_RECORD_MISC_USER);
	}
	if (!rc && nb >= 2) {
		CHECK(st,
		      bids[1].size == 16 && bids[1].id[0] == 0xa0 &&
			      bids[1].id[15] == 0xaf &&
			      !strcmp(bids[1].filename, "[kernel.kallsyms]") &&
			      (bids[1].misc & 0x7fff) ==
				      PERF_RECORD_MISC_KERNEL);
	}

	rc = pd_auxtrace_index(f, &idx, &nx, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (mode == PD_WRITE_PIPED) {
		CHECK(st, nx == 0 && !pd_has_feature(f, PD_FEAT_AUXTRACE));
	} else {
		size_t want = v == V_SMALL ? 1 : 2;

		CHECK(st, nx == want);
		for (size_t k = 0; k < nx && k < want; k++) {
			uint64_t c = idx[k].offset;

			CHECK(st, idx[k].size == 48);
			CHECK(st, pd_next(f, &c, &ev, &err) == 1 &&
					  ev.type == PD_RECORD_AUXTRACE &&
					  ev.file_offset == idx[k].offset);
		}
	}

	if (v != V_SMALL) {
		CHECK(st, pd_feature_string(f, PD_FEAT_CPUID) &&
				  !strcmp(pd_feature_string(f, PD_FEAT_CPUID),
					  "GenuineIntel,6,85,4"));
	}
	if (v != V_SMALL && mode == PD_WRITE_FILE) {
		size_t c = 0;
		uint32_t t, sz;
		const uint8_t *p;
		struct pd_ext_stack s;

		CHECK(st, pd_ext_next(f, &c, &t, &p, &sz, &err) == 1 &&
				  t == PD_EXT_STACK &&
				  !pd_ext_parse_stack(p, sz, &s) && s.nr == 3 &&
				  s.pid == PID && s.time == 1234 &&
				  pd_ext_stack_ip(&s, 0) == 0x401234 &&
				  pd_ext_stack_ip(&s, 2) == 0x401000);
		CHECK(st, pd_ext_next(f, &c, &t, &p, &sz, &err) == 0);
	}
	CHECK(st, !pd_feature_string(f, PD_FEAT_OSRELEASE));
	pd_close(f);
}

static void roundtrip(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128];
	struct pd_err err = {0};
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.data", dir);
	rc = write_sample(path, mode, V_ALL, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (!rc)
		check_sample(st, path, mode, V_ALL);
	/* Only the final file is left: the temporary one was renamed. */
	{
		char tmp[160];

		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
		CHECK(st, access(tmp, F_OK) != 0);
	}
	tmpdir_remove(dir);
}

static void test_roundtrip_file(struct check_state *st)
{
	roundtrip(st, PD_WRITE_FILE);
}

static void test_roundtrip_piped(struct check_state *st)
{
	roundtrip(st, PD_WRITE_PIPED);
}

/* Records whose trailer layouts differ: the IDENTIFIER picks the attr. */
static void test_trailer_by_identifier(struct check_state *st)
{
	char dir[64], path[128];
	struct pd_err err = {0};
	struct pd_writer *w;
	struct perf_event_attr a, b;
	static const uint64_t ids_a[] = {1}, ids_b[] = {2};
	uint8_t r[64] = {0};
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ident.data", dir);
	memset(&a, 0, sizeof(a));
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_IDENTIFIER;
	b = a;
	b.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_STREAM_ID |
			PERF_SAMPLE_IDENTIFIER;
	rc = pd_writer_open(&w, path, PD_WRITE_FILE, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc)
		goto out;
	CHECK(st, !pd_writer_add_attr(w, &a, ids_a, 1));
	CHECK(st, !pd_writer_add_attr(w, &b, ids_b, 1));
	/* ITRACE_START in b's layout: TIME STREAM_ID IDENTIFIER */
	put32(r, PERF_RECORD_ITRACE_START);
	put32(r + 8, 7);
	put32(r + 12, 8);
	put64(r + 16, 777);
	put64(r + 24, 55);
	put64(r + 32, 2);
	put16(r + 6, 40);
	CHECK(st, !pd_writer_raw(w, r, 40));
	/* and in a's layout: TID TIME CPU IDENTIFIER */
	put64(r + 16, ((uint64_t)8 << 32) | 7);
	put64(r + 24, 888);
	put64(r + 32, 3);
	put64(r + 40, 1);
	put16(r + 6, 48);
	CHECK(st, !pd_writer_raw(w, r, 48));
	/* An id nobody owns: the trailer cannot be read, the body can. */
	put64(r + 40, 99);
	CHECK(st, !pd_writer_raw(w, r, 48));
	rc = pd_writer_finish(w, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc)
		goto out;
	rc = pd_open(&f, path, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc)
		goto out;
	CHECK(st, pd_next(f, &cur, &ev, &err) == 1);
	CHECK(st, ev.attr == pd_get_attr(f, 1) && ev.sid.time == 777 &&
			  ev.sid.stream_id == 55 && ev.sid.id == 2 &&
			  !ev.sid.have_tid && !ev.sid.have_cpu &&
			  ev.u.itrace_start.pid == 7);
	CHECK(st, pd_next(f, &cur, &ev, &err) == 1);
	CHECK(st, ev.attr == pd_get_attr(f, 0) && ev.sid.time == 888 &&
			  ev.sid.pid == 7 && ev.sid.tid == 8 &&
			  ev.sid.cpu == 3 && ev.sid.id == 1 &&
			  ev.u.itrace_start.tid == 8);
	CHECK(st, pd_next(f, &cur, &ev, &err) == 1);
	CHECK(st, !ev.attr && !ev.sid.have_time && ev.u.itrace_start.pid == 7);
	CHECK(st, pd_next(f, &cur, &ev, &err) == 0);
	pd_close(f);
out:
	tmpdir_remove(dir);
}

/* AUX data larger than the writer's buffer goes around it, in order. */
static void test_big_auxtrace(struct check_state *st)
{
	static const size_t sizes[] = {5u << 20, 1, (6u << 20) + 3, 4095};
	char dir[64], path[128];
	struct pd_err err = {0};
	struct pd_writer *w;
	struct pd_file *f;
	struct pd_event ev;
	const struct pd_auxtrace_index *idx;
	size_t nx, k = 0;
	uint64_t cur = 0;
	uint8_t *data = malloc((6u << 20) + 16);
	int rc;

	CHECK(st, data != NULL);
	if (!data)
		return;
	for (size_t i = 0; i < (6u << 20) + 16; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 13));
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/big.data", dir);
	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_FILE, &err));
	if (err.code)
		goto out;
	for (size_t i = 0; i < 4; i++) {
		struct pd_auxtrace a = {.size = sizes[i],
					.reference = 1000 + i,
					.idx = (uint32_t)i,
					.tid = 7,
					.cpu = UINT32_MAX};

		CHECK(st, !pd_write_auxtrace(w, &a, data + i));
		CHECK(st, !pd_write_finished_round(w));
	}
	CHECK(st, !pd_writer_finish(w, &err));
	rc = pd_open(&f, path, &err);
	CHECKF(st, !rc, "%s", err.msg);
	if (rc)
		goto out;
	CHECK(st, !pd_auxtrace_index(f, &idx, &nx, &err) && nx == 4);
	while ((rc = pd_next(f, &cur, &ev, &err)) == 1) {
		if (ev.type != PD_RECORD_AUXTRACE)
			continue;
		CHECK(st, k < 4);
		if (k >= 4)
			break;
		CHECK(st, ev.u.auxtrace.size == ((sizes[k] + 7) & ~(size_t)7));
		CHECK(st, ev.u.auxtrace.idx == k &&
				  ev.u.auxtrace.reference == 1000 + k);
		CHECK(st, !memcmp(ev.u.auxtrace.data, data + k, sizes[k]));
		CHECK(st, k >= nx || idx[k].offset == ev.file_offset);
		k++;
	}
	CHECKF(st, rc == 0 && k == 4, "%s", err.msg);
	pd_close(f);
out:
	free(data);
	tmpdir_remove(dir);
}

/* ------------------------------------------------------------------ */
/* Truncation and corruption                                           */

static void truncate_all(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128], cut[128];
	struct pd_err err = {0};
	uint8_t *d;
	size_t len, nrec, full_nrec = 0;
	uint64_t *starts = NULL;
	size_t nstarts = 0;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/small.data", dir);
	snprintf(cut, sizeof(cut), "%s/cut.data", dir);
	rc = write_sample(path, mode, V_SMALL, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	d = slurp(path, &len);
	CHECK(st, d && len > 200);
	if (rc || !d)
		goto out;
	CHECK(st, walk_all(path, &err, &full_nrec) == 0);

	/* Record boundaries: a piped file cut exactly there just ends. */
	{
		struct pd_file *f;
		struct pd_event ev;
		uint64_t c = 0;

		starts = calloc(full_nrec + 2, sizeof(*starts));
		if (starts && !pd_open(&f, path, &err)) {
			starts[nstarts++] = 16;
			while (pd_next(f, &c, &ev, &err) == 1)
				starts[nstarts++] = c;
			pd_close(f);
		}
	}
	for (size_t l = 0; l < len; l++) {
		bool boundary = false;

		if (spit(cut, d, l)) {
			CHECK(st, !"cannot write the cut file");
			break;
		}
		memset(&err, 0, sizeof(err));
		rc = walk_all(cut, &err, &nrec);
		for (size_t k = 0; k < nstarts; k++)
			if (starts[k] == l)
				boundary = true;
		if (rc) {
			CHECKF(st,
			       err.code == -rc && err.msg[0] &&
				       strstr(err.msg, cut),
			       "length %zu: rc %d code %d msg '%s'", l, rc,
			       err.code, err.msg);
			CHECKF(st, rc == -PD_ETRUNC || rc == -PD_EFORMAT,
			       "length %zu: rc %d: %s", l, rc, err.msg);
		}
		if (mode == PD_WRITE_FILE)
			CHECKF(st, rc != 0,
			       "regular file cut at %zu/%zu read "
			       "cleanly",
			       l, len);
		else if (!boundary)
			CHECKF(st, rc != 0,
			       "piped file cut inside a record at "
			       "%zu/%zu read cleanly",
			       l, len);
		else
			CHECKF(st, rc == 0 && nrec < full_nrec,
			       "piped file cut at record boundary %zu: rc %d "
			       "%s",
			       l, rc, err.msg);
	}
out:
	free(starts);
	free(d);
	tmpdir_remove(dir);
}

static void test_truncate_file(struct check_state *st)
{
	truncate_all(st, PD_WRITE_FILE);
}

static void test_truncate_piped(struct check_state *st)
{
	truncate_all(st, PD_WRITE_PIPED);
}

struct corruption {
	const char *what;
	size_t off; /* where to write; SIZE_MAX: see below */
	int width;  /* 2, 4 or 8 */
	uint64_t value;
	int code;     /* expected PD_E*, or 0 for "either" */
	bool at_open; /* the error comes from pd_open */
};

/* Offset of the first record of TYPE with all of MISC set. */
static size_t rec_off(const char *path, uint32_t type, uint16_t misc)
{
	struct pd_file *f;
	struct pd_err err;
	struct pd_event ev;
	uint64_t c = 0;
	size_t off = 0;

	if (pd_open(&f, path, &err))
		return 0;
	while (pd_next(f, &c, &ev, &err) == 1)
		if (ev.type == type && (ev.misc & misc) == misc) {
			off = ev.file_offset;
			break;
		}
	pd_close(f);
	return off;
}

static void test_corrupt(struct check_state *st)
{
	char dir[64], path[128], bad[128];
	struct pd_err err = {0};
	uint8_t *d = NULL, *c;
	size_t len, nrec;
	size_t comm, mmap2, info, aux, attr_off, ids_off, feat_tbl;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/all.data", dir);
	snprintf(bad, sizeof(bad), "%s/bad.data", dir);
	rc = write_sample(path, PD_WRITE_FILE, V_PERF, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (!rc)
		d = slurp(path, &len);
	if (!d)
		goto out;
	comm = rec_off(path, PERF_RECORD_COMM, 0);
	mmap2 = rec_off(path, PERF_RECORD_MMAP2,
			PERF_RECORD_MISC_MMAP_BUILD_ID);
	info = rec_off(path, PD_RECORD_AUXTRACE_INFO, 0);
	aux = rec_off(path, PD_RECORD_AUXTRACE, 0);
	attr_off = get64(d + 24);
	ids_off = get64(d + attr_off + 128);
	feat_tbl = get64(d + 40) + get64(d + 48);
	CHECK(st, comm && mmap2 && info && aux && ids_off);
	{
		const struct corruption cs[] = {
			{"magic", 0, 8, 0x4c4946524550ull, PD_EFORMAT, true},
			{"old magic", 0, 8, 0x454c494646524550ull, PD_EFORMAT,
			 true},
			{"swapped magic", 0, 8, 0x50455246494c4532ull,
			 PD_EFORMAT, true},
			{"header size", 8, 8, 105, PD_EFORMAT, true},
			{"attr_size 0", 16, 8, 0, PD_EFORMAT, true},
			{"attr_size huge", 16, 8, 1ull << 40, PD_EFORMAT, true},
			{"attr_size odd", 16, 8, 143, PD_EFORMAT, true},
			{"attrs offset", 24, 8, 1ull << 62, PD_ETRUNC, true},
			{"attrs size", 32, 8, ~0ull, PD_ETRUNC, true},
			{"attrs size partial", 32, 8, 144 + 7, PD_EFORMAT,
			 true},
			{"attr.size", attr_off + 4, 4, 120, PD_EFORMAT, true},
			{"ids offset", attr_off + 128, 8, ~0ull - 3, PD_ETRUNC,
			 true},
			{"ids size", attr_off + 136, 8, 12, PD_EFORMAT, true},
			{"ids size huge", attr_off + 136, 8, 1ull << 50,
			 PD_ETRUNC, true},
			{"data offset", 40, 8, 50, PD_EFORMAT, true},
			{"data offset huge", 40, 8, ~0ull, PD_ETRUNC, true},
			{"data size huge", 48, 8, len, PD_ETRUNC, true},
			{"feature bits", 72 + 31, 1, 0xff, PD_ETRUNC, true},
			{"feature offset", feat_tbl, 8, len - 2, PD_ETRUNC,
			 true},
			{"feature size", feat_tbl + 8, 8, 1ull << 63, PD_ETRUNC,
			 true},
			{"record size 0", comm + 6, 2, 0, PD_EFORMAT, false},
			{"record size 4", comm + 6, 2, 4, PD_EFORMAT, false},
			{"record size huge", comm + 6, 2, 65535, PD_EFORMAT,
			 false},
			{"record size short", comm + 6, 2, 16, PD_EFORMAT,
			 false},
			{"comm not terminated", comm + 16, 8,
			 0x4141414141414141ull, PD_EFORMAT, false},
			{"mmap2 build id size", mmap2 + 40, 1, 21, PD_EFORMAT,
			 false},
			{"info too short", info + 6, 2, 16 + 72, PD_EFORMAT,
			 false},
			{"info filter length", info + 16 + 8 * 16, 8, 1000,
			 PD_EFORMAT, false},
			{"auxtrace size", aux + 8, 8, 1ull << 40, PD_EFORMAT,
			 false},
			{"auxtrace header size", aux + 6, 2, 40, PD_EFORMAT,
			 false},
		};

		for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
			struct pd_file *f;

			c = malloc(len);
			if (!c)
				break;
			memcpy(c, d, len);
			if (cs[i].width == 1)
				c[cs[i].off] = (uint8_t)cs[i].value;
			else if (cs[i].width == 2)
				put16(c + cs[i].off, (uint16_t)cs[i].value);
			else if (cs[i].width == 4)
				put32(c + cs[i].off, (uint32_t)cs[i].value);
			else
				put64(c + cs[i].off, cs[i].value);
			CHECK(st, !spit(bad, c, len));
			free(c);
			memset(&err, 0, sizeof(err));
			rc = pd_open(&f, bad, &err);
			if (!rc)
				pd_close(f);
			CHECKF(st, (rc != 0) == cs[i].at_open,
			       "%s: open rc %d: %s", cs[i].what, rc, err.msg);
			rc = walk_all(bad, &err, &nrec);
			CHECKF(st, rc == -cs[i].code && err.code == cs[i].code,
			       "%s: rc %d: %s", cs[i].what, rc, err.msg);
			CHECKF(st,
			       strstr(err.msg, bad) && strchr(err.msg, ':') &&
				       !strchr(err.msg, '\n'),
			       "%s: message '%s'", cs[i].what, err.msg);
		}
	}
	/* Random damage: any outcome but a crash or a sanitizer report. */
	{
		uint64_t seed = 12345;

		for (int round = 0; round < 300; round++) {
			c = malloc(len);
			if (!c)
				break;
			memcpy(c, d, len);
			for (int k = 0; k < 1 + round % 4; k++) {
				seed = seed * 6364136223846793005ull +
				       1442695040888963407ull;
				c[(seed >> 33) % len] ^= (uint8_t)(seed >> 20);
			}
			CHECK(st, !spit(bad, c, len));
			free(c);
			rc = walk_all(bad, &err, &nrec);
			CHECK(st, rc == 0 || (err.msg[0] && err.code == -rc));
		}
	}
	/* Not a file we can map, an empty file, a missing file. */
	CHECK(st, walk_all(dir, &err, &nrec) == -PD_EIO &&
			  strstr(err.msg, "not a regular file"));
	CHECK(st, !spit(bad, "", 0));
	CHECK(st, walk_all(bad, &err, &nrec) == -PD_ETRUNC);
	CHECK(st, !spit(bad, "PERFILE2", 8));
	CHECK(st, walk_all(bad, &err, &nrec) == -PD_ETRUNC);
	CHECK(st, !spit(bad, "hello, world, this is text", 26));
	CHECK(st, walk_all(bad, &err, &nrec) == -PD_EFORMAT &&
			  strstr(err.msg, "not a perf.data file"));
	snprintf(bad, sizeof(bad), "%s/missing.data", dir);
	CHECK(st, walk_all(bad, &err, &nrec) == -PD_EIO &&
			  strstr(err.msg, "No such file"));
out:
	free(d);
	tmpdir_remove(dir);
}

/* A perf that died never wrote data.size: the records run to EOF. */
static void test_data_size_zero(struct check_state *st)
{
	char dir[64], path[128];
	struct pd_err err = {0};
	uint8_t *d = NULL;
	size_t len, n_full = 0, n_cut = 0;
	uint64_t data_end;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/died.data", dir);
	CHECK(st, !write_sample(path, PD_WRITE_FILE, V_ALL, &err));
	CHECK(st, !walk_all(path, &err, &n_full));
	d = slurp(path, &len);
	if (!d)
		goto out;
	data_end = get64(d + 40) + get64(d + 48);
	put64(d + 48, 0);
	memset(d + 72, 0, 32);
	CHECK(st, !spit(path, d, data_end));
	CHECKF(st, !walk_all(path, &err, &n_cut), "%s", err.msg);
	CHECK(st, n_cut == n_full && n_full > 10);
	/* and a record cut by the crash is reported as truncation */
	CHECK(st, !spit(path, d, data_end - 5));
	CHECK(st, walk_all(path, &err, &n_cut) == -PD_ETRUNC);
out:
	free(d);
	tmpdir_remove(dir);
}

static void test_writer_errors(struct check_state *st)
{
	char dir[64], path[128], tmp[160];
	struct pd_err err = {0};
	struct pd_writer *w;
	struct perf_event_attr a;
	struct pd_pt_info pt;
	uint8_t big[70000] = {0};
	uint8_t rec[16] = {0};

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/w.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	memset(&a, 0, sizeof(a));
	sample_pt(&pt, true);

	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_PIPED, &err));
	CHECK(st, access(tmp, F_OK) == 0 && access(path, F_OK) != 0);
	a.size = 10;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -PD_EINVAL);
	a.size = 0;
	CHECK(st, !pd_writer_add_attr(w, &a, NULL, 0));
	a.size = PERF_ATTR_SIZE_VER5;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -PD_EINVAL);
	CHECK(st, strstr(pd_writer_error(w)->msg, path) != NULL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 12, false) == -PD_EINVAL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 16, true) == -PD_EINVAL);
	CHECK(st, pd_write_auxtrace_info(w, &pt, 15, false) == -PD_EINVAL);
	CHECK(st, pd_writer_set_feature(w, 0, "x", 1) == -PD_EINVAL);
	CHECK(st, pd_writer_set_feature(w, 256, "x", 1) == -PD_EINVAL);
	CHECK(st,
	      pd_writer_set_feature(w, PD_FEAT_AUXTRACE, "x", 1) == -PD_EINVAL);
	CHECK(st, pd_writer_set_feature(w, PD_FEAT_MT_EXT, big, sizeof(big)) ==
			  -PD_EINVAL);
	CHECK(st, pd_write_task(w, PERF_RECORD_COMM, &(struct pd_task){0},
				NULL) == -PD_EINVAL);
	put32(rec, PD_RECORD_AUXTRACE);
	put16(rec + 6, 16);
	CHECK(st, pd_writer_raw(w, rec, 16) == -PD_EINVAL);
	put32(rec, PD_RECORD_FINISHED_ROUND);
	CHECK(st, pd_writer_raw(w, rec, 8) == -PD_EINVAL);
	CHECK(st, !pd_writer_raw(w, rec, 16));
	a.size = 0;
	CHECK(st, pd_writer_add_attr(w, &a, NULL, 0) == -PD_EINVAL);
	pd_writer_abort(w);
	CHECK(st, access(tmp, F_OK) != 0 && access(path, F_OK) != 0);

	/* A long feature is fine in a regular file. */
	CHECK(st, !pd_writer_open(&w, path, PD_WRITE_FILE, &err));
	CHECK(st, !pd_writer_set_feature(w, PD_FEAT_MT_EXT, big, sizeof(big)));
	CHECK(st, !pd_writer_finish(w, &err));
	CHECK(st, access(path, F_OK) == 0 && access(tmp, F_OK) != 0);
	{
		struct pd_file *f;
		size_t n = 0;

		CHECK(st, !pd_open(&f, path, &err));
		if (!err.code) {
			CHECK(st, pd_feature(f, PD_FEAT_MT_EXT, &n) &&
					  n == sizeof(big));
			CHECK(st, pd_nr_attrs(f) == 0);
			pd_close(f);
			/* the empty data section holds one FINISHED_ROUND */
			CHECK(st, !walk_all(path, &err, &n) && n == 1);
		}
	}

	snprintf(path, sizeof(path), "%s/no/such/dir/w.data", dir);
	CHECK(st, pd_writer_open(&w, path, PD_WRITE_FILE, &err) == -PD_EIO &&
			  strstr(err.msg, path));
	tmpdir_remove(dir);
}

/* ------------------------------------------------------------------ */
/* The real captures                                                   */

static void shared_path(char *buf, size_t n, const char *name)
{
	const char *s = getenv("MT_SHARED");

	snprintf(buf, n, "%s/testdata/%s", s && *s ? s : "../shared", name);
}

/*
 * The real captures live outside the tree (MT_SHARED, else ../shared);
 * a checkout without them skips the tests that read them.
 */
static bool shared_missing(struct check_state *st)
{
	static const char *const names[] = {
		"perf.data.intel_pt-4.14",
		"perf.data.intel_pt-4.14.buildids",
		"perf.data.piped.intel_pt-4.14",
	};
	char path[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		shared_path(path, sizeof(path), names[i]);
		if (access(path, R_OK)) {
			SKIP(st, "no real captures in $MT_SHARED/testdata");
			return true;
		}
	}
	return false;
}

struct real_stats {
	unsigned count[128];
	unsigned total;
	struct pd_pt_info pt;
	struct pd_time_conv tc;
	uint64_t aux_bytes[8]; /* AUX records' sizes per cpu */
	unsigned aux_recs[8];
	uint64_t auxtrace_bytes[8]; /* AUXTRACE sizes per cpu */
	unsigned auxtrace_recs[8];
	uint32_t auxtrace_tid;
	char comms[4][16];
	unsigned nr_comms;
	char mmap2[10][64];
	unsigned nr_mmap2;
	uint64_t first_sample_time, last_sample_time;
	unsigned samples_by_attr[4];
};

static int read_real(struct check_state *st, const char *path,
		     struct real_stats *rs, struct pd_file **fp)
{
	struct pd_err err = {0};
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	int rc;

	memset(rs, 0, sizeof(*rs));
	rc = pd_open(&f, path, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc)
		return rc;
	while ((rc = pd_next(f, &cur, &ev, &err)) == 1) {
		rs->count[ev.type < 128 ? ev.type : 127]++;
		rs->total++;
		switch (ev.type) {
		case PD_RECORD_AUXTRACE_INFO:
			rs->pt = ev.u.pt_info;
			break;
		case PD_RECORD_TIME_CONV:
			rs->tc = ev.u.time_conv;
			break;
		case PERF_RECORD_AUX:
			CHECK(st, ev.sid.have_cpu && ev.sid.cpu < 8);
			if (ev.sid.cpu < 8) {
				rs->aux_bytes[ev.sid.cpu] += ev.u.aux.aux_size;
				rs->aux_recs[ev.sid.cpu]++;
			}
			break;
		case PD_RECORD_AUXTRACE:
			CHECK(st,
			      ev.u.auxtrace.cpu < 8 &&
				      ev.u.auxtrace.idx == ev.u.auxtrace.cpu);
			if (ev.u.auxtrace.cpu < 8) {
				rs->auxtrace_bytes[ev.u.auxtrace.cpu] +=
					ev.u.auxtrace.size;
				rs->auxtrace_recs[ev.u.auxtrace.cpu]++;
			}
			rs->auxtrace_tid = ev.u.auxtrace.tid;
			break;
		case PERF_RECORD_COMM:
			if (rs->nr_comms < 4)
				snprintf(rs->comms[rs->nr_comms++], 16, "%s%s",
					 ev.u.comm.exec ? "+" : "",
					 ev.u.comm.comm);
			break;
		case PERF_RECORD_MMAP2:
			if (rs->nr_mmap2 < 10)
				snprintf(rs->mmap2[rs->nr_mmap2++], 64, "%s",
					 ev.u.mmap.filename);
			break;
		case PERF_RECORD_SAMPLE:
			CHECK(st, ev.attr && ev.sid.have_time);
			if (!rs->first_sample_time)
				rs->first_sample_time = ev.sid.time;
			rs->last_sample_time = ev.sid.time;
			for (size_t i = 0; i < 4; i++)
				if (ev.attr == pd_get_attr(f, i))
					rs->samples_by_attr[i]++;
			break;
		default:
			break;
		}
		/* Every kernel record in these files has a trailer. */
		if (ev.type < 64 && ev.type != PERF_RECORD_SAMPLE)
			CHECKF(st,
			       ev.sid.have_time && ev.sid.have_id && ev.attr,
			       "record at %" PRIu64, ev.file_offset);
	}
	CHECKF(st, rc == 0, "%s", err.msg);
	*fp = f;
	return rc;
}

static void check_real_common(struct check_state *st, struct pd_file *f,
			      const struct real_stats *rs)
{
	static const uint32_t types[4] = {
		6, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE};

	CHECK(st, pd_nr_attrs(f) == 4);
	for (size_t i = 0; i < pd_nr_attrs(f) && i < 4; i++) {
		const struct pd_attr *a = pd_get_attr(f, i);

		CHECK(st, a->file_attr_size == 112 && a->attr.size == 112);
		CHECK(st, a->attr.type == types[i] && a->nr_ids == 4);
		CHECK(st, a->attr.sample_id_all);
		/* zero-extended past the 112 bytes in the file */
		CHECK(st,
		      a->attr.aux_sample_size == 0 && a->attr.sig_data == 0);
	}
	if (pd_nr_attrs(f) == 4) {
		CHECK(st, pd_get_attr(f, 0)->attr.config == 0x300e601);
		CHECK(st, pd_get_attr(f, 2)->attr.context_switch);
		CHECK(st, pd_get_attr(f, 3)->attr.mmap2 &&
				  pd_get_attr(f, 3)->attr.comm_exec);
	}
	CHECK(st, rs->pt.pmu_type == 6);
	CHECK(st, rs->pt.time_mult == 1789569706 && rs->pt.time_shift == 31);
	CHECK(st, rs->pt.time_zero == 0xfffffff86343cb91ull);
	CHECK(st, rs->pt.cap_user_time_zero);
	CHECK(st, rs->pt.tsc_bit == 0x400 && rs->pt.noretcomp_bit == 0x800);
	CHECK(st, rs->pt.have_sched_switch == 3);
	CHECK(st, !rs->pt.snapshot_mode && rs->pt.per_cpu_mmaps);
	CHECK(st, rs->pt.have_mtc_group && rs->pt.mtc_bit == 0x200 &&
			  rs->pt.mtc_freq_bits == 0x3c000 &&
			  rs->pt.cyc_bit == 2);
	CHECK(st, rs->pt.tsc_ctc_n == 100 && rs->pt.tsc_ctc_d == 2);
	CHECK(st, rs->pt.have_max_nonturbo && rs->pt.max_nonturbo_ratio == 12);
	CHECK(st, rs->pt.filter[0] == 0 && !rs->pt.have_cap_event_trace);
	CHECK(st, rs->tc.time_shift == 31 && rs->tc.time_mult == 1789569706 &&
			  rs->tc.time_zero == 0xfffffff86343cb91ull &&
			  !rs->tc.have_ext);
	/* Only cpus 0 and 3 ran the traced echo. */
	CHECK(st, rs->auxtrace_recs[0] == 1 && rs->auxtrace_recs[3] == 1);
	CHECK(st, rs->auxtrace_recs[1] == 0 && rs->auxtrace_recs[2] == 0);
	/* AUX records account for exactly the bytes in AUXTRACE. */
	for (int c = 0; c < 8; c++)
		CHECKF(st, rs->aux_bytes[c] == rs->auxtrace_bytes[c],
		       "cpu %d: AUX %" PRIu64 " AUXTRACE %" PRIu64, c,
		       rs->aux_bytes[c], rs->auxtrace_bytes[c]);
	CHECK(st, rs->nr_mmap2 == 10 &&
			  !strcmp(rs->mmap2[0], "/usr/bin/coreutils") &&
			  !strcmp(rs->mmap2[1], "/lib64/ld-2.23.so") &&
			  !strcmp(rs->mmap2[9], "/lib64/libdl-2.23.so"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_HOSTNAME), "localhost"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_OSRELEASE), "4.14.18"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_ARCH), "x86_64"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_CPUID),
			  "GenuineIntel,6,78,3"));
	CHECK(st, !strcmp(pd_feature_string(f, PD_FEAT_CPUDESC),
			  "Intel(R) Core(TM) m7-6Y75 CPU @ 1.20GHz"));
	CHECK(st, pd_feature_string(f, PD_FEAT_VERSION) &&
			  !*pd_feature_string(f, PD_FEAT_VERSION));
}

/*
 * Counts from `perf report -D --stats` (perf 6.1): 257 records.  The
 * piped copy is a different run of the same command; through stdin
 * (`perf report -D -i - < FILE`) perf counts 667 records.
 */
static void test_real_regular(struct check_state *st)
{
	char path[512], bpath[512];
	struct real_stats rs;
	struct pd_file *f;
	struct pd_err err = {0};
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t nb, nx;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	shared_path(bpath, sizeof(bpath), "perf.data.intel_pt-4.14.buildids");
	if (read_real(st, path, &rs, &f))
		return;
	CHECK(st, !pd_is_piped(f));
	CHECK(st, rs.total == 257);
	CHECK(st, rs.count[PERF_RECORD_MMAP] == 56);
	CHECK(st, rs.count[PERF_RECORD_COMM] == 3);
	CHECK(st, rs.count[PERF_RECORD_EXIT] == 1);
	CHECK(st, rs.count[PERF_RECORD_SAMPLE] == 15);
	CHECK(st, rs.count[PERF_RECORD_MMAP2] == 10);
	CHECK(st, rs.count[PERF_RECORD_AUX] == 10);
	CHECK(st, rs.count[PERF_RECORD_ITRACE_START] == 2);
	CHECK(st, rs.count[PERF_RECORD_SWITCH_CPU_WIDE] == 152);
	CHECK(st, rs.count[PD_RECORD_FINISHED_ROUND] == 4);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE_INFO] == 1);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE] == 2);
	CHECK(st, rs.count[PD_RECORD_TIME_CONV] == 1);
	/* all samples are the cycles event's */
	CHECK(st, rs.samples_by_attr[1] == 15);
	check_real_common(st, f, &rs);
	CHECK(st, rs.auxtrace_bytes[0] == 0x2fd0 &&
			  rs.auxtrace_bytes[3] == 0x21a00);
	CHECK(st, rs.aux_recs[0] == 1 && rs.aux_recs[3] == 9);
	CHECK(st, rs.auxtrace_tid == 3174);
	CHECK(st, rs.nr_comms == 3 && !strcmp(rs.comms[0], "perf") &&
			  !strcmp(rs.comms[1], "+echo") &&
			  !strcmp(rs.comms[2], "echo"));
	CHECK(st, rs.first_sample_time > 641256000000ull &&
			  rs.last_sample_time < 641259000000ull);

	CHECK(st, !pd_auxtrace_index(f, &x, &nx, &err) && nx == 2);
	if (nx == 2) {
		struct pd_event ev;
		uint64_t c = x[1].offset;

		CHECK(st, x[0].offset == 0x29c0 && x[1].offset == 0x7788 &&
				  x[0].size == 48);
		CHECK(st, pd_next(f, &c, &ev, &err) == 1 &&
				  ev.type == PD_RECORD_AUXTRACE &&
				  ev.u.auxtrace.cpu == 3);
	}

	/* The build ids are the ones perf buildid-list prints. */
	CHECK(st, !pd_buildids(f, &b, &nb, &err));
	CHECK(st, nb == 66);
	{
		size_t len, i = 0;
		uint8_t *txt = slurp(bpath, &len);
		char *save = NULL, *line;

		CHECKF(st, txt != NULL, "cannot read %s", bpath);
		if (txt) {
			txt[len] = 0;
			for (line = strtok_r((char *)txt, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save), i++) {
				char hex[41];

				if (i >= nb)
					break;
				for (int k = 0; k < 20; k++)
					sprintf(hex + 2 * k, "%02x",
						b[i].id[k]);
				CHECKF(st,
				       !strncmp(line, hex, 40) &&
					       !strcmp(line + 41,
						       b[i].filename) &&
					       b[i].size == 20,
				       "build id %zu: '%s' vs %s %s", i, line,
				       hex, b[i].filename);
			}
			CHECK(st, i == 66);
		}
		free(txt);
	}
	CHECK(st, nb && (b[0].misc & 7) == PERF_RECORD_MISC_KERNEL &&
			  !strcmp(b[0].filename, "[kernel.kallsyms]"));
	pd_close(f);
}

static void test_real_piped(struct check_state *st)
{
	char path[512];
	struct real_stats rs;
	struct pd_file *f;
	struct pd_err err = {0};
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t nb, nx;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	if (read_real(st, path, &rs, &f))
		return;
	CHECK(st, pd_is_piped(f));
	CHECK(st, rs.total == 667);
	CHECK(st, rs.count[PD_RECORD_HEADER_FEATURE] == 12);
	CHECK(st, rs.count[PD_RECORD_HEADER_ATTR] == 4);
	CHECK(st, rs.count[PERF_RECORD_MMAP] == 56);
	CHECK(st, rs.count[PERF_RECORD_COMM] == 3);
	CHECK(st, rs.count[PERF_RECORD_EXIT] == 1);
	CHECK(st, rs.count[PERF_RECORD_SAMPLE] == 11);
	CHECK(st, rs.count[PERF_RECORD_MMAP2] == 10);
	CHECK(st, rs.count[PERF_RECORD_AUX] == 8);
	CHECK(st, rs.count[PERF_RECORD_ITRACE_START] == 2);
	CHECK(st, rs.count[PERF_RECORD_SWITCH_CPU_WIDE] == 552);
	CHECK(st, rs.count[PD_RECORD_FINISHED_ROUND] == 4);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE_INFO] == 1);
	CHECK(st, rs.count[PD_RECORD_AUXTRACE] == 2);
	CHECK(st, rs.count[PD_RECORD_TIME_CONV] == 1);
	CHECK(st, rs.samples_by_attr[1] == 11);
	check_real_common(st, f, &rs);
	CHECK(st, rs.auxtrace_bytes[0] == 0x12a70 &&
			  rs.auxtrace_bytes[3] == 0x10a60);
	CHECK(st, rs.aux_recs[0] == 1 && rs.aux_recs[3] == 7);
	CHECK(st, rs.auxtrace_tid == 3587);
	CHECK(st, pd_get_attr(f, 0)->ids[0] == 148);
	/* A piped file has neither build ids nor an AUXTRACE index. */
	CHECK(st, !pd_buildids(f, &b, &nb, &err) && nb == 0);
	CHECK(st, !pd_auxtrace_index(f, &x, &nx, &err) && nx == 0);
	CHECK(st, pd_has_feature(f, PD_FEAT_NRCPUS) &&
			  !pd_has_feature(f, PD_FEAT_BUILD_ID));
	pd_close(f);
}

/* Two runs of the same command, one to a file, one to a pipe. */
static void test_real_agree(struct check_state *st)
{
	static const unsigned feats[] = {PD_FEAT_HOSTNAME, PD_FEAT_OSRELEASE,
					 PD_FEAT_VERSION,  PD_FEAT_ARCH,
					 PD_FEAT_CPUDESC,  PD_FEAT_CPUID};
	char path[512];
	struct real_stats *a = calloc(2, sizeof(*a)), *b = a + 1;
	struct pd_file *fa = NULL, *fb = NULL;

	if (!a)
		return;
	if (shared_missing(st)) {
		free(a);
		return;
	}
	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	if (read_real(st, path, a, &fa))
		goto out;
	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	if (read_real(st, path, b, &fb))
		goto out;
	CHECK(st, pt_equal(&a->pt, &b->pt));
	CHECK(st, !memcmp(&a->tc, &b->tc, sizeof(a->tc)));
	CHECK(st, pd_nr_attrs(fa) == pd_nr_attrs(fb));
	for (size_t i = 0; i < pd_nr_attrs(fa) && i < pd_nr_attrs(fb); i++) {
		struct perf_event_attr x = pd_get_attr(fa, i)->attr;
		struct perf_event_attr y = pd_get_attr(fb, i)->attr;

		CHECKF(st, !memcmp(&x, &y, sizeof(x)), "attr %zu", i);
	}
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++) {
		const char *x = pd_feature_string(fa, feats[i]);
		const char *y = pd_feature_string(fb, feats[i]);

		CHECKF(st, x && y && !strcmp(x, y), "feature %u", feats[i]);
	}
	CHECK(st, a->nr_mmap2 == b->nr_mmap2);
	for (unsigned i = 0; i < a->nr_mmap2 && i < b->nr_mmap2; i++)
		CHECK(st, !strcmp(a->mmap2[i], b->mmap2[i]));
	CHECK(st, a->count[PERF_RECORD_MMAP] == b->count[PERF_RECORD_MMAP]);
	CHECK(st, a->nr_comms == b->nr_comms);
out:
	pd_close(fa);
	pd_close(fb);
	free(a);
}

/* ------------------------------------------------------------------ */
/* perf's verdict                                                      */

static bool have_perf(void)
{
	return system("perf version >/dev/null 2>&1") == 0;
}

/* Runs CMD, keeps the start of its output in OUT; returns the status. */
static int run_cmd(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	char sink[4096];
	size_t len = 0, k;
	int status;

	out[0] = 0;
	if (!p)
		return -1;
	while (len + 1 < n && (k = fread(out + len, 1, n - 1 - len, p)) > 0)
		len += k;
	out[len] = 0;
	/* read the rest so that perf does not die of SIGPIPE */
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static unsigned perf_stat(const char *out, const char *name)
{
	char key[64];
	const char *p;
	unsigned v = 0;

	snprintf(key, sizeof(key), " %s events:", name);
	p = strstr(out, "Aggregated stats");
	if (p)
		p = strstr(p, key);
	if (p)
		sscanf(p + strlen(key), "%u", &v);
	return v;
}

static void perf_accepts(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128], cmd[512], in[200];
	struct pd_err err = {0};
	size_t n = 1 << 20;
	char *out = malloc(n);
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	rc = write_sample(path, mode, V_PERF, &err);
	CHECKF(st, rc == 0, "%s", err.msg);
	if (rc || !out)
		goto out;
	/*
	 * perf 6.1 reads a piped file correctly only from a real pipe: from
	 * a file (even as stdin) it seeks to offsets that leave out the
	 * 16-byte header and loses its place after the first AUXTRACE.
	 */
	if (mode == PD_WRITE_PIPED)
		snprintf(in, sizeof(in), "cat %s | perf", path);
	else
		snprintf(in, sizeof(in), "perf");
	snprintf(cmd, sizeof(cmd), "%s report --stats -i %s 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	CHECKF(st,
	       perf_stat(out, "COMM") == 2 && perf_stat(out, "MMAP") == 1 &&
		       perf_stat(out, "MMAP2") == 2 &&
		       perf_stat(out, "FORK") == 1 &&
		       perf_stat(out, "EXIT") == 1 &&
		       perf_stat(out, "AUX") == 1 &&
		       perf_stat(out, "ITRACE_START") == 1 &&
		       perf_stat(out, "SWITCH") == 1 &&
		       perf_stat(out, "SWITCH_CPU_WIDE") == 1 &&
		       perf_stat(out, "LOST") == 1 &&
		       perf_stat(out, "SAMPLE") == 1 &&
		       perf_stat(out, "AUXTRACE_INFO") == 1 &&
		       perf_stat(out, "AUXTRACE") == 2 &&
		       perf_stat(out, "TIME_CONV") == 2 &&
		       perf_stat(out, "FINISHED_ROUND") == 1,
	       "%s: unexpected counts:\n%.3000s", cmd,
	       strstr(out, "Aggregated") ? strstr(out, "Aggregated") : out);
	if (mode == PD_WRITE_PIPED)
		CHECKF(st,
		       perf_stat(out, "ATTR") == 2 &&
			       perf_stat(out, "FEATURE") == 2 &&
			       perf_stat(out, "BUILD_ID") == 2,
		       "%s: unexpected counts:\n%.3000s", cmd, out);
	snprintf(cmd, sizeof(cmd), "%s report -D -i %s 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	CHECKF(st,
	       strstr(out, "PERF_RECORD_MMAP2 100/101: [0x401000(0x3000) "
			   "@ 0x1000 <deadbeef0102030405060708090a0b0c0d0e"
			   "0f10>]: r-xp /bin/prog"),
	       "%s: no build-id MMAP2 in the dump", cmd);
	CHECKF(st, strstr(out, "PSBEND") != NULL,
	       "%s: perf decoded no PT packets", cmd);
	CHECKF(st,
	       strstr(out, "Filter string       filter 0x10/0x20@/bin/prog"),
	       "%s: AUXTRACE_INFO not as written", cmd);
	snprintf(cmd, sizeof(cmd), "%s script -i %s --itrace=cre 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	if (mode == PD_WRITE_FILE) {
		snprintf(cmd, sizeof(cmd),
			 "perf report --header-only -i %s 2>&1", path);
		rc = run_cmd(cmd, out, n);
		CHECKF(st,
		       rc == 0 && strstr(out, "hostname : testhost") &&
			       strstr(out, "cpuid : GenuineIntel,6,85,4"),
		       "%s: exit %d:\n%.2000s", cmd, rc, out);
		snprintf(cmd, sizeof(cmd), "perf buildid-list -i %s 2>&1",
			 path);
		rc = run_cmd(cmd, out, n);
		CHECKF(st,
		       rc == 0 && strstr(out, "deadbeef0102030405060708090"
					      "a0b0c0d0e0f10 /bin/prog"),
		       "%s: exit %d:\n%.2000s", cmd, rc, out);
	}
out:
	free(out);
	tmpdir_remove(dir);
}

static void test_perf_accepts_file(struct check_state *st)
{
	perf_accepts(st, PD_WRITE_FILE);
}

static void test_perf_accepts_piped(struct check_state *st)
{
	perf_accepts(st, PD_WRITE_PIPED);
}

/* ------------------------------------------------------------------ */
/* Time conversion                                                     */

static void test_timeconv(struct check_state *st)
{
	struct pd_pt_info pt;
	static const uint64_t tscs[] = {0,
					1,
					2,
					1199,
					808742885798ull,
					808742913218ull,
					1ull << 40,
					4016188169984ull,
					4016188233530ull,
					(1ull << 47) + 12345,
					(1ull << 55) - 1};

	sample_pt(&pt, true);
	/* The real captures: AUXTRACE references against sample times. */
	CHECK(st, pd_tsc_to_perf_time(808742885798ull, &pt) == 641258053621ull);
	CHECK(st, pd_tsc_to_perf_time(808742913218ull, &pt) == 641258076471ull);
	CHECK(st,
	      pd_tsc_to_perf_time(4016188169984ull, &pt) == 3314129122780ull);
	/* time_zero is negative: tsc 0 is ~32.7 s before perf's zero */
	CHECK(st, (int64_t)pd_tsc_to_perf_time(0, &pt) ==
			  (int64_t)0xfffffff86343cb91ull);
	/*
	 * Both directions take the floor, as the kernel and perf do, so a
	 * round trip may lose one unit of the finer side (a tick is
	 * 0.83 ns here): tsc -> ns -> tsc lands at most 2 ticks early,
	 * ns -> tsc -> ns at most 1 ns early.
	 */
	for (size_t i = 0; i < sizeof(tscs) / sizeof(tscs[0]); i++) {
		uint64_t ns = pd_tsc_to_perf_time(tscs[i], &pt);
		uint64_t back = pd_perf_time_to_tsc(ns, &pt);
		int64_t d = (int64_t)(ns - pd_tsc_to_perf_time(back, &pt));

		CHECKF(st, back <= tscs[i] && tscs[i] - back <= 2,
		       "tsc %" PRIu64 " -> %" PRIu64 " -> %" PRIu64, tscs[i],
		       ns, back);
		CHECKF(st, d == 0 || d == 1, "tsc %" PRIu64, tscs[i]);
		if (i)
			CHECK(st,
			      (int64_t)(ns - pd_tsc_to_perf_time(tscs[i - 1],
								 &pt)) >= 0);
	}
	for (uint64_t ns = 641258000000ull; ns < 641258000000ull + 5000;
	     ns += 7) {
		uint64_t tsc = pd_perf_time_to_tsc(ns, &pt);
		uint64_t again = pd_tsc_to_perf_time(tsc, &pt);

		CHECKF(st, again <= ns && ns - again <= 1,
		       "ns %" PRIu64 " -> %" PRIu64 " -> %" PRIu64, ns, tsc,
		       again);
		/* and tsc is the last tick at or before ns */
		CHECK(st, pd_tsc_to_perf_time(tsc + 2, &pt) > again);
	}
	/* Identity parameters, and no conversion at all. */
	memset(&pt, 0, sizeof(pt));
	pt.time_mult = 1;
	CHECK(st, pd_tsc_to_perf_time(123456789, &pt) == 123456789);
	CHECK(st, pd_perf_time_to_tsc(123456789, &pt) == 123456789);
	pt.time_mult = 0;
	CHECK(st, pd_tsc_to_perf_time(42, &pt) == 42);
	/* A 3 GHz TSC, with a shift above 32. */
	pt.time_shift = 33;
	pt.time_mult = (uint32_t)((1ull << 33) / 3);
	pt.time_zero = 1000;
	CHECK(st,
	      pd_tsc_to_perf_time(3000000000ull, &pt) >= 999999999ull + 1000 &&
		      pd_tsc_to_perf_time(3000000000ull, &pt) <=
			      1000000000ull + 1000);
	CHECK(st,
	      pd_perf_time_to_tsc(1000000000ull + 1000, &pt) >= 2999999997ull &&
		      pd_perf_time_to_tsc(1000000000ull + 1000, &pt) <=
			      3000000003ull);
}

/* ------------------------------------------------------------------ */
/* mt-convert --info                                                   */

static char *info_of(const char *path, int *rc, struct pd_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	*rc = report_print(m, path, err);
	fclose(m);
	return buf;
}

static void test_info(struct check_state *st)
{
	static const char *const want[] = {
		"format     perf.data (PERFILE2)",
		"on localhost, kernel 4.14.18, x86_64",
		"cpuid GenuineIntel,6,78,3), 4 of 4 cpus online",
		"records    257: SWITCH_CPU_WIDE 152 MMAP 56 SAMPLE 15",
		"intel_pt//     type 6 (intel_pt) config 0x300e601",
		"config     0x300e601: pt branch tsc mtc\n",
		"MTC every 2^3 = 8 CTC ticks, no CYC",
		"PSB        every 2^(3+11) = 16 KiB",
		"mode       full trace, per-CPU buffers",
		"time_mult 1789569706, time_shift 31, time_zero "
		"0xfffffff86343cb91",
		"(1.200 GHz)",
		"tsc:ctc    100/2",
		"max ratio 12",
		"switches   3 (cpu-wide",
		"pid 3174    tid 3174    perf -> echo (exec), traced, exited",
		"/usr/bin/coreutils build id "
		"c0a88cf4408ddef75343a69e41602f4d3de"
		"34e68",
		"kernel: 56 mappings",
		"AUX data   149968 bytes in 2 AUXTRACE chunks",
		"cpu 0      12240 bytes, 1 chunk",
		"cpu 3      137728 bytes, 1 chunk",
		"AUX records: 10, announcing 149968 bytes\n",
		"records   641.255848111 s .. 641.258090053 s",
		"AUX read  641.258053621 s .. 641.258076471 s",
		"binaries (9 files mapped in user space)",
		"/lib64/libc-2.23.so: ",
	};
	char path[512], dir[64], cap[128], self[512];
	struct pd_err err = {0};
	char *out;
	int rc;
	ssize_t n;

	if (shared_missing(st))
		return;

	shared_path(path, sizeof(path), "perf.data.intel_pt-4.14");
	out = info_of(path, &rc, &err);
	CHECKF(st, rc == 0 && out, "%s", err.msg);
	for (size_t i = 0; out && i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(st, strstr(out, want[i]), "missing '%s' in:\n%s",
		       want[i], out);
	free(out);

	shared_path(path, sizeof(path), "perf.data.piped.intel_pt-4.14");
	out = info_of(path, &rc, &err);
	CHECKF(st,
	       rc == 0 && out && strstr(out, "format     piped") &&
		       strstr(out, "cpu 0      76400 bytes") &&
		       strstr(out, "-o - -- echo Hello, World!"),
	       "%s", out ? out : err.msg);
	free(out);

	/*
	 * Binaries: this test program itself (present, a build id that is
	 * not its own), the capture (no ELF), and a missing file.
	 */
	tmpdir_make(dir, sizeof(dir));
	snprintf(cap, sizeof(cap), "%s/info.data", dir);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(st, n > 0);
	if (n > 0) {
		struct pd_writer *w;
		struct pd_mmap m = {.pid = PID,
				    .tid = PID,
				    .start = 0x400000,
				    .len = 0x1000,
				    .is_mmap2 = true,
				    .has_build_id = true,
				    .build_id_size = 20,
				    .filename = self};
		struct pd_mmap m2 = {.pid = PID,
				     .tid = PID,
				     .start = 0x500000,
				     .len = 0x1000,
				     .is_mmap2 = true,
				     .filename = cap};
		struct pd_mmap m3 = m2;

		self[n] = 0;
		m3.filename = "/nonexistent/libgone.so";
		memcpy(m.build_id, bid_a, 20);
		CHECK(st, !pd_writer_open(&w, cap, PD_WRITE_FILE, &err));
		/* the capture maps itself: present, and not an ELF file */
		if (!err.code) {
			CHECK(st, !pd_write_mmap2(w, &m, NULL));
			CHECK(st, !pd_write_mmap2(w, &m2, NULL));
			CHECK(st, !pd_write_mmap2(w, &m3, NULL));
			CHECK(st, !pd_writer_finish(w, &err));
		}
		out = info_of(cap, &rc, &err);
		CHECKF(st, rc == 0 && out, "%s", err.msg);
		if (out) {
			CHECKF(st,
			       strstr(out, "present, build id DIFFERS (file "
					   "has "),
			       "%s", out);
			CHECKF(st,
			       strstr(out, "/nonexistent/libgone.so: "
					   "missing\n"),
			       "%s", out);
			CHECKF(st, strstr(out, "no AUXTRACE_INFO record"), "%s",
			       out);
			CHECKF(st, strstr(out, "present, not an ELF file"),
			       "%s", out);
			CHECKF(st, strstr(out, "1 of 3 missing"), "%s", out);
		}
		free(out);
	}
	/* A corrupt capture: an error naming it and nothing printed. */
	{
		size_t len;
		uint8_t *d = slurp(cap, &len);

		if (d) {
			CHECK(st, !spit(cap, d, len / 2));
			out = info_of(cap, &rc, &err);
			CHECKF(st,
			       rc < 0 && strstr(err.msg, cap) && out && !*out,
			       "rc %d: %s", rc, err.msg);
			free(out);
		}
		free(d);
	}
	tmpdir_remove(dir);
}

/* A capture whose AUXTRACE_INFO has the given time_shift. */
static int write_shift(const char *path, uint16_t shift, struct pd_err *err)
{
	struct pd_writer *w;
	struct perf_event_attr a, b;
	static const uint64_t ids[] = {11};
	struct pd_pt_info pt;
	int rc;

	rc = pd_writer_open(&w, path, PD_WRITE_FILE, err);
	if (rc)
		return rc;
	sample_attrs(&a, &b);
	sample_pt(&pt, true);
	pt.time_shift = shift;
	if ((rc = pd_writer_add_attr(w, &a, ids, 1)) ||
	    (rc = pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED, true))) {
		pd_writer_abort(w);
		return rc;
	}
	return pd_writer_finish(w, err);
}

/* Shifting a 64-bit value by 64 or more is undefined, and no kernel
 * reports such a shift: the record is refused as malformed, by the
 * reader and so by --info, instead of each user guarding its shifts. */
static void test_bad_time_shift(struct check_state *st)
{
	char dir[64], path[128];
	struct pd_err err = {0};
	size_t n;
	char *out;
	int rc = 0;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/shift.data", dir);
	CHECK(st, !write_shift(path, 64, &err));
	CHECK(st, walk_all(path, &err, &n) == -PD_EFORMAT);
	CHECKF(st, strstr(err.msg, "time_shift is 64 or more"), "%s", err.msg);
	out = info_of(path, &rc, &err);
	CHECK(st, rc == -PD_EFORMAT && strstr(err.msg, "time_shift"));
	free(out);
	CHECK(st, !write_shift(path, 0xffff, &err));
	CHECK(st, walk_all(path, &err, &n) == -PD_EFORMAT);
	/* the largest valid shift still converts and prints */
	CHECK(st, !write_shift(path, 63, &err));
	CHECKF(st, !walk_all(path, &err, &n), "%s", err.msg);
	out = info_of(path, &rc, &err);
	CHECKF(st, rc == 0 && out && strstr(out, "time_shift 63,"), "%s",
	       rc ? err.msg : "no time_shift 63 in the report");
	free(out);
	tmpdir_remove(dir);
}

static void test_record_names(struct check_state *st)
{
	CHECK(st, !strcmp(pd_record_name(PERF_RECORD_MMAP2), "MMAP2"));
	CHECK(st, !strcmp(pd_record_name(PD_RECORD_AUXTRACE), "AUXTRACE"));
	CHECK(st, !strcmp(pd_record_name(PD_RECORD_FINISHED_INIT),
			  "FINISHED_INIT"));
	CHECK(st, !strcmp(pd_record_name(0), "UNKNOWN"));
	CHECK(st, !strcmp(pd_record_name(63), "UNKNOWN"));
	CHECK(st, !strcmp(pd_record_name(1000), "UNKNOWN"));
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_roundtrip_file);
	RUN(&st, test_roundtrip_piped);
	RUN(&st, test_trailer_by_identifier);
	RUN(&st, test_big_auxtrace);
	RUN(&st, test_truncate_file);
	RUN(&st, test_truncate_piped);
	RUN(&st, test_corrupt);
	RUN(&st, test_data_size_zero);
	RUN(&st, test_writer_errors);
	RUN(&st, test_real_regular);
	RUN(&st, test_real_piped);
	RUN(&st, test_real_agree);
	if (have_perf()) {
		RUN(&st, test_perf_accepts_file);
		RUN(&st, test_perf_accepts_piped);
	} else {
		printf("SKIP test_perf_accepts_file (perf not installed)\n");
		printf("SKIP test_perf_accepts_piped (perf not installed)\n");
	}
	RUN(&st, test_timeconv);
	RUN(&st, test_info);
	RUN(&st, test_bad_time_shift);
	RUN(&st, test_record_names);
	return CHECK_DONE(&st);
}
