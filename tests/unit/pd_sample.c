/* SPDX-License-Identifier: MIT */
/*
 * The sample capture the perfdata tests share: one record of every kind
 * written in either file mode, and the checks that read it back; the
 * reader walked end to end; where the real captures are.
 */
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Opens and walks everything; returns 0 on a clean walk, else the error. */
int walk_all(const char *path, char *err, size_t errlen, size_t *nrec)
{
	struct pd_file *f;
	struct pd_event ev;
	uint64_t cur = 0;
	const struct pd_buildid *b;
	const struct pd_auxtrace_index *x;
	size_t n;
	int rc;

	*nrec = 0;
	rc = pd_open(&f, path, err, errlen);
	if (rc)
		return rc;
	while ((rc = pd_next(f, &cur, &ev, err, errlen)) == 1)
		(*nrec)++;
	if (!rc)
		rc = pd_buildids(f, &b, &n, err, errlen);
	if (!rc)
		rc = pd_auxtrace_index(f, &x, &n, err, errlen);
	for (unsigned i = 0; i < 32; i++)
		(void)pd_feature_string(f, i);
	if (!rc) {
		size_t c = 0;
		uint32_t t, sz;
		const uint8_t *p;

		while ((rc = pd_ext_next(f, &c, &t, &p, &sz, err, errlen)) ==
		       1) {
			struct pd_ext_stack s;

			if (t == PD_EXT_STACK && !pd_ext_parse_stack(p, sz, &s))
				for (uint64_t i = 0; i < s.nr; i++)
					(void)pd_ext_stack_ip(&s, i);
		}
	}
	pd_close(f);
	return rc;
}

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

static const enum kind small_kinds[] = {K_TC_SHORT,  K_INFO_FULL, K_COMM_EXEC,
					K_MMAP2_BID, K_AUXTRACE,  K_ROUND};

/* PSB, PSBEND: a valid if empty Intel PT stream. */
static const uint8_t pt_bytes[] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x02, 0x82, 0x02, 0x23};

const uint8_t bid_a[20] = {0xde, 0xad, 0xbe, 0xef, 1,  2,  3,  4,  5,  6,
			   7,	 8,    9,    10,   11, 12, 13, 14, 15, 16};

void sample_pt(struct pd_pt_info *pt, bool full)
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

void sample_attrs(struct perf_event_attr *a, struct perf_event_attr *b)
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

bool pt_equal(const struct pd_pt_info *a, const struct pd_pt_info *b)
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
int write_sample(const char *path, enum pd_write_mode mode, enum variant v,
		 char *err, size_t errlen)
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
	rc = pd_writer_open(&w, path, mode, err, errlen);
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
		if (mode == PD_WRITE_PIPED && rc == -EINVAL)
			rc = 0;
		else if (mode == PD_WRITE_PIPED)
			rc = -EINVAL;
		if (rc)
			goto fail;
	}
	pd_ext_buf_free(&ext);
	return pd_writer_finish(w, err, errlen);
fail:
	pd_ext_buf_free(&ext);
	pd_writer_error(w, err, errlen);
	pd_writer_abort(w);
	return rc;
}

void check_sample(struct check_state *st, const char *path,
		  enum pd_write_mode mode, enum variant v)
{
	struct pd_file *f;
	char err[512] = "";
	struct pd_event ev;
	uint64_t cur = 0;
	enum kind kinds[K_NR];
	size_t n = variant_kinds(v, kinds), i = 0, nfeat = 0, nattr = 0,
	       nbid = 0;
	const struct pd_buildid *bids;
	const struct pd_auxtrace_index *idx;
	size_t nb, nx;
	int rc;

	rc = pd_open(&f, path, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		return;
	CHECK(st, pd_is_piped(f) == (mode == PD_WRITE_PIPED));
	CHECK(st, !strcmp(pd_path(f), path));
	/* Piped features are found by the pre-scan, before any pd_next. */
	CHECK(st, pd_feature_string(f, PD_FEAT_HOSTNAME) &&
			  !strcmp(pd_feature_string(f, PD_FEAT_HOSTNAME),
				  "testhost"));
	while ((rc = pd_next(f, &cur, &ev, err, sizeof(err))) == 1) {
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
	CHECKF(st, rc == 0, "%s", err);
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

	rc = pd_buildids(f, &bids, &nb, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
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

	rc = pd_auxtrace_index(f, &idx, &nx, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (mode == PD_WRITE_PIPED) {
		CHECK(st, nx == 0 && !pd_has_feature(f, PD_FEAT_AUXTRACE));
	} else {
		size_t want = v == V_SMALL ? 1 : 2;

		CHECK(st, nx == want);
		for (size_t k = 0; k < nx && k < want; k++) {
			uint64_t c = idx[k].offset;

			CHECK(st, idx[k].size == 48);
			CHECK(st, pd_next(f, &c, &ev, err, sizeof(err)) == 1 &&
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

		CHECK(st,
		      pd_ext_next(f, &c, &t, &p, &sz, err, sizeof(err)) == 1 &&
			      t == PD_EXT_STACK &&
			      !pd_ext_parse_stack(p, sz, &s) && s.nr == 3 &&
			      s.pid == PID && s.time == 1234 &&
			      pd_ext_stack_ip(&s, 0) == 0x401234 &&
			      pd_ext_stack_ip(&s, 2) == 0x401000);
		CHECK(st,
		      pd_ext_next(f, &c, &t, &p, &sz, err, sizeof(err)) == 0);
	}
	CHECK(st, !pd_feature_string(f, PD_FEAT_OSRELEASE));
	pd_close(f);
}

void shared_path(char *buf, size_t n, const char *name)
{
	const char *s = getenv("MT_SHARED");

	snprintf(buf, n, "%s/testdata/%s", s && *s ? s : "../shared", name);
}

/*
 * The real captures live outside the tree (MT_SHARED, else ../shared);
 * a checkout without them skips the tests that read them.
 */
bool shared_missing(struct check_state *st)
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
