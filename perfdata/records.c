/* SPDX-License-Identifier: MIT */
/*
 * perf.data records: pd_next() and the bodies of the records mt reads,
 * each checked against its size before a field is read, and the
 * sample_id trailer that ties a record to its attr.
 */
#include "perfdata/pd_internal.h"

#include <inttypes.h>

static const char *const kernel_names[] = {
	[PERF_RECORD_MMAP] = "MMAP",
	[PERF_RECORD_LOST] = "LOST",
	[PERF_RECORD_COMM] = "COMM",
	[PERF_RECORD_EXIT] = "EXIT",
	[PERF_RECORD_THROTTLE] = "THROTTLE",
	[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
	[PERF_RECORD_FORK] = "FORK",
	[PERF_RECORD_READ] = "READ",
	[PERF_RECORD_SAMPLE] = "SAMPLE",
	[PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX",
	[PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
	[PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
	[PERF_RECORD_NAMESPACES] = "NAMESPACES",
	[PERF_RECORD_KSYMBOL] = "KSYMBOL",
	[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
	[PERF_RECORD_CGROUP] = "CGROUP",
	[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	[PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
};

static const char *const user_names[] = {
	[PD_RECORD_HEADER_ATTR - 64] = "HEADER_ATTR",
	[PD_RECORD_HEADER_EVENT_TYPE - 64] = "HEADER_EVENT_TYPE",
	[PD_RECORD_HEADER_TRACING_DATA - 64] = "HEADER_TRACING_DATA",
	[PD_RECORD_HEADER_BUILD_ID - 64] = "HEADER_BUILD_ID",
	[PD_RECORD_FINISHED_ROUND - 64] = "FINISHED_ROUND",
	[PD_RECORD_ID_INDEX - 64] = "ID_INDEX",
	[PD_RECORD_AUXTRACE_INFO - 64] = "AUXTRACE_INFO",
	[PD_RECORD_AUXTRACE - 64] = "AUXTRACE",
	[PD_RECORD_AUXTRACE_ERROR - 64] = "AUXTRACE_ERROR",
	[PD_RECORD_THREAD_MAP - 64] = "THREAD_MAP",
	[PD_RECORD_CPU_MAP - 64] = "CPU_MAP",
	[PD_RECORD_STAT_CONFIG - 64] = "STAT_CONFIG",
	[PD_RECORD_STAT - 64] = "STAT",
	[PD_RECORD_STAT_ROUND - 64] = "STAT_ROUND",
	[PD_RECORD_EVENT_UPDATE - 64] = "EVENT_UPDATE",
	[PD_RECORD_TIME_CONV - 64] = "TIME_CONV",
	[PD_RECORD_HEADER_FEATURE - 64] = "HEADER_FEATURE",
	[PD_RECORD_COMPRESSED - 64] = "COMPRESSED",
	[PD_RECORD_FINISHED_INIT - 64] = "FINISHED_INIT",
};

const char *pd_record_name(uint32_t type)
{
	const char *n = NULL;

	if (type < sizeof(kernel_names) / sizeof(kernel_names[0]))
		n = kernel_names[type];
	else if (type >= 64 &&
		 type - 64 < sizeof(user_names) / sizeof(user_names[0]))
		n = user_names[type - 64];
	return n ? n : "UNKNOWN";
}

/* The attr whose trailer layout a non-sample record carries. */
static const struct pd_attr *trailer_attr(const struct pd_file *f,
					  const uint8_t *r, uint16_t size)
{
	const struct pd_attr *a;
	uint64_t id;

	if (!f->nr_attrs)
		return NULL;
	if (f->uniform)
		return f->attrs[0];
	/* Layouts differ: the IDENTIFIER, always last, names the attr. */
	if (size < 16)
		return NULL;
	id = pd_get64(r + size - 8);
	/*
	 * perf synthesises sideband with a zeroed trailer in the first
	 * attr's layout, and reads an id of 0 the same way.
	 */
	if (!id)
		return f->attrs[0];
	a = pd_attr_by_id(f, id);
	if (a && !(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
		return NULL;
	return a;
}

static size_t trailer_len(const struct pd_attr *a)
{
	if (!a || !a->attr.sample_id_all)
		return 0;
	return 8 * (size_t)__builtin_popcountll(a->attr.sample_type &
						PD_TRAILER_BITS);
}

static void parse_trailer(const uint8_t *p, uint64_t st,
			  struct pd_sample_id *sid)
{
	if (st & PERF_SAMPLE_TID) {
		sid->pid = pd_get32(p);
		sid->tid = pd_get32(p + 4);
		sid->have_tid = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		sid->time = pd_get64(p);
		sid->have_time = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		sid->id = pd_get64(p);
		sid->have_id = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		sid->stream_id = pd_get64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		sid->cpu = pd_get32(p);
		sid->have_cpu = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		sid->id = pd_get64(p);
		sid->have_id = true;
	}
}

/*
 * Attrs that share a layout all parse with the first one, but the record
 * belongs to the attr its id names.
 */
static const struct pd_attr *owner(const struct pd_file *f,
				   const struct pd_attr *a,
				   const struct pd_sample_id *sid)
{
	const struct pd_attr *b;

	if (!sid->have_id)
		return a;
	b = pd_attr_by_id(f, sid->id);
	return b ? b : a;
}

struct rec_ctx {
	struct pd_file *f;
	const uint8_t *r; /* the record */
	const uint8_t *b; /* its body */
	size_t blen;	  /* body bytes before the trailer */
	uint64_t off;
	const char *name;
	char *err;
	size_t errlen;
};

static int too_short(struct rec_ctx *c, size_t need)
{
	return pd_fail(c->err, c->errlen, -EBADMSG, c->f->path, c->off,
		       "%s record body is %zu bytes, expected at least %zu",
		       c->name, c->blen, need);
}

/* A NUL-terminated string filling the body from FROM up to the trailer. */
static int body_string(struct rec_ctx *c, size_t from, const char *what,
		       const char **out)
{
	if (c->blen <= from || !memchr(c->b + from, 0, c->blen - from))
		return pd_fail(c->err, c->errlen, -EBADMSG, c->f->path,
			       c->off + 8 + from,
			       "%s of the %s record is not NUL-terminated "
			       "within the record",
			       what, c->name);
	*out = (const char *)c->b + from;
	return 0;
}

static int parse_mmap(struct rec_ctx *c, struct pd_event *ev)
{
	struct pd_mmap *m = &ev->u.mmap;
	const uint8_t *b = c->b;
	size_t fixed = ev->type == PERF_RECORD_MMAP2 ? 64 : 32;

	if (c->blen < fixed + 1)
		return too_short(c, fixed + 1);
	m->pid = pd_get32(b);
	m->tid = pd_get32(b + 4);
	m->start = pd_get64(b + 8);
	m->len = pd_get64(b + 16);
	m->pgoff = pd_get64(b + 24);
	if (ev->type == PERF_RECORD_MMAP2) {
		m->is_mmap2 = true;
		if (ev->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m->has_build_id = true;
			m->build_id_size = b[32];
			if (m->build_id_size > sizeof(m->build_id))
				return pd_fail(c->err, c->errlen, -EBADMSG,
					       c->f->path, c->off + 40,
					       "MMAP2 build id size %u, at "
					       "most 20",
					       m->build_id_size);
			memcpy(m->build_id, b + 36, sizeof(m->build_id));
		} else {
			m->maj = pd_get32(b + 32);
			m->min = pd_get32(b + 36);
			m->ino = pd_get64(b + 40);
			m->ino_generation = pd_get64(b + 48);
		}
		m->prot = pd_get32(b + 56);
		m->flags = pd_get32(b + 60);
	}
	return body_string(c, fixed, "filename", &m->filename);
}

static int parse_sample(struct rec_ctx *c, struct pd_event *ev)
{
	struct pd_file *f = c->f;
	const struct pd_attr *a = NULL;
	const uint8_t *p = c->b, *end = c->r + ev->size;
	uint64_t st;

	if (f->nr_attrs && f->uniform)
		a = f->attrs[0];
	else if (f->nr_attrs &&
		 (f->attrs[0]->attr.sample_type & PERF_SAMPLE_IDENTIFIER) &&
		 ev->size >= 16)
		a = pd_attr_by_id(f, pd_get64(c->b));
	ev->attr = a;
	if (!a)
		return 0; /* nothing says how to read it: leave it raw */
	st = a->attr.sample_type;
#define TAKE(n)                                                                \
	do {                                                                   \
		if ((size_t)(end - p) < (n))                                   \
			return pd_fail(c->err, c->errlen, -EBADMSG, f->path,   \
				       c->off,                                 \
				       "SAMPLE record of %u bytes is shorter " \
				       "than its sample_type 0x%llx says",     \
				       ev->size, (unsigned long long)st);      \
	} while (0)
	if (st & PERF_SAMPLE_IDENTIFIER) {
		TAKE(8);
		ev->sid.id = pd_get64(p);
		ev->sid.have_id = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		TAKE(8);
		ev->u.sample.ip = pd_get64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		TAKE(8);
		ev->sid.pid = pd_get32(p);
		ev->sid.tid = pd_get32(p + 4);
		ev->sid.have_tid = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		TAKE(8);
		ev->sid.time = pd_get64(p);
		ev->sid.have_time = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_ADDR) {
		TAKE(8);
		ev->u.sample.addr = pd_get64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		TAKE(8);
		ev->sid.id = pd_get64(p);
		ev->sid.have_id = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		TAKE(8);
		ev->sid.stream_id = pd_get64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		TAKE(8);
		ev->sid.cpu = pd_get32(p);
		ev->sid.have_cpu = true;
		p += 8;
	}
	if (st & PERF_SAMPLE_PERIOD) {
		TAKE(8);
		ev->u.sample.period = pd_get64(p);
	}
#undef TAKE
	ev->attr = owner(f, a, &ev->sid);
	return 0;
}

int pd_parse_pt_info(const uint8_t *priv, size_t len, struct pd_pt_info *pt,
		     const char **why)
{
	size_t n = len / 8, pos;
	uint64_t flen;

	memset(pt, 0, sizeof(*pt));
	if (n <= PD_PT_PER_CPU_MMAPS) {
		*why = "fewer than the 10 required private fields";
		return -1;
	}
	pt->pmu_type = (uint32_t)pd_get64(priv + 8 * PD_PT_PMU_TYPE);
	/* The kernel's shifts are far below 64; a larger one cannot turn
	 * TSC into time, and every user of the field would have to guard
	 * its shift against undefined behaviour. */
	if (pd_get64(priv + 8 * PD_PT_TIME_SHIFT) >= 64) {
		*why = "time_shift is 64 or more";
		return -1;
	}
	pt->time_shift = (uint16_t)pd_get64(priv + 8 * PD_PT_TIME_SHIFT);
	pt->time_mult = (uint32_t)pd_get64(priv + 8 * PD_PT_TIME_MULT);
	pt->time_zero = pd_get64(priv + 8 * PD_PT_TIME_ZERO);
	pt->cap_user_time_zero =
		pd_get64(priv + 8 * PD_PT_CAP_USER_TIME_ZERO) != 0;
	pt->tsc_bit = pd_get64(priv + 8 * PD_PT_TSC_BIT);
	pt->noretcomp_bit = pd_get64(priv + 8 * PD_PT_NORETCOMP_BIT);
	pt->have_sched_switch =
		(uint32_t)pd_get64(priv + 8 * PD_PT_HAVE_SCHED_SWITCH);
	pt->snapshot_mode = pd_get64(priv + 8 * PD_PT_SNAPSHOT_MODE) != 0;
	pt->per_cpu_mmaps = pd_get64(priv + 8 * PD_PT_PER_CPU_MMAPS) != 0;
	if (n > PD_PT_CYC_BIT) {
		pt->have_mtc_group = true;
		pt->mtc_bit = pd_get64(priv + 8 * PD_PT_MTC_BIT);
		pt->mtc_freq_bits = pd_get64(priv + 8 * PD_PT_MTC_FREQ_BITS);
		pt->tsc_ctc_n = (uint32_t)pd_get64(priv + 8 * PD_PT_TSC_CTC_N);
		pt->tsc_ctc_d = (uint32_t)pd_get64(priv + 8 * PD_PT_TSC_CTC_D);
		pt->cyc_bit = pd_get64(priv + 8 * PD_PT_CYC_BIT);
	}
	if (n > PD_PT_MAX_NONTURBO_RATIO) {
		pt->have_max_nonturbo = true;
		pt->max_nonturbo_ratio =
			(uint32_t)pd_get64(priv + 8 * PD_PT_MAX_NONTURBO_RATIO);
	}
	if (n <= PD_PT_FILTER_STR_LEN)
		return 0;
	pos = 8 * PD_PT_NR_FIXED;
	flen = pd_get64(priv + 8 * PD_PT_FILTER_STR_LEN);
	if (flen) {
		size_t room = len - pos, copy;

		if (flen >= room || pd_align8(flen + 1) > room) {
			*why = "the address-filter string runs past the record";
			return -1;
		}
		copy = flen < sizeof(pt->filter) - 1 ? flen
						     : sizeof(pt->filter) - 1;
		memcpy(pt->filter, priv + pos, copy);
		pt->filter[copy] = 0;
		pos += pd_align8(flen + 1);
	}
	if (len - pos >= 8) {
		pt->have_cap_event_trace = true;
		pt->cap_event_trace = pd_get64(priv + pos);
	}
	return 0;
}

static int parse_header_attr(struct rec_ctx *c, struct pd_event *ev,
			     uint64_t next)
{
	struct pd_file *f = c->f;
	uint32_t asz, eff;
	size_t rem;
	int rc;

	if (c->blen < PERF_ATTR_SIZE_VER0)
		return too_short(c, PERF_ATTR_SIZE_VER0);
	asz = pd_get32(c->b + 4);
	eff = asz ? asz : PERF_ATTR_SIZE_VER0;
	if (eff < PERF_ATTR_SIZE_VER0 || eff > c->blen)
		return pd_fail(c->err, c->errlen, -EBADMSG, f->path,
			       c->off + 12,
			       "HEADER_ATTR attr.size %u does not fit its "
			       "%zu-byte body",
			       asz, c->blen);
	rem = c->blen - eff;
	if (rem % 8)
		return pd_fail(c->err, c->errlen, -EBADMSG, f->path, c->off,
			       "HEADER_ATTR has %zu bytes of ids, not a "
			       "multiple of 8",
			       rem);
	/* A second pass over the records must not add the attrs twice. */
	if (!f->piped || c->off < f->attr_scan_end)
		return 0;
	rc = pd_add_attr(f, c->b, eff, c->b + eff, rem / 8, c->err, c->errlen,
			 c->off);
	if (rc)
		return rc;
	f->attr_scan_end = next;
	ev->attr = f->attrs[f->nr_attrs - 1];
	return 0;
}

static int parse_body(struct rec_ctx *c, struct pd_event *ev, uint64_t *next)
{
	struct pd_file *f = c->f;
	const uint8_t *b = c->b;
	struct pd_buildid bid;
	const char *why;

	switch (ev->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return parse_mmap(c, ev);
	case PERF_RECORD_COMM:
		if (c->blen < 9)
			return too_short(c, 9);
		ev->u.comm.pid = pd_get32(b);
		ev->u.comm.tid = pd_get32(b + 4);
		ev->u.comm.exec = ev->misc & PERF_RECORD_MISC_COMM_EXEC;
		return body_string(c, 8, "comm", &ev->u.comm.comm);
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		if (c->blen < 24)
			return too_short(c, 24);
		ev->u.task.pid = pd_get32(b);
		ev->u.task.ppid = pd_get32(b + 4);
		ev->u.task.tid = pd_get32(b + 8);
		ev->u.task.ptid = pd_get32(b + 12);
		ev->u.task.time = pd_get64(b + 16);
		return 0;
	case PERF_RECORD_LOST:
		if (c->blen < 16)
			return too_short(c, 16);
		ev->u.lost.id = pd_get64(b);
		ev->u.lost.lost = pd_get64(b + 8);
		return 0;
	case PERF_RECORD_SAMPLE:
		return parse_sample(c, ev);
	case PERF_RECORD_AUX:
		if (c->blen < 24)
			return too_short(c, 24);
		ev->u.aux.aux_offset = pd_get64(b);
		ev->u.aux.aux_size = pd_get64(b + 8);
		ev->u.aux.flags = pd_get64(b + 16);
		return 0;
	case PERF_RECORD_ITRACE_START:
		if (c->blen < 8)
			return too_short(c, 8);
		ev->u.itrace_start.pid = pd_get32(b);
		ev->u.itrace_start.tid = pd_get32(b + 4);
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (c->blen < 8)
			return too_short(c, 8);
		ev->u.sw.cpu_wide = true;
		ev->u.sw.next_prev_pid = pd_get32(b);
		ev->u.sw.next_prev_tid = pd_get32(b + 4);
		/* fall through */
	case PERF_RECORD_SWITCH:
		ev->u.sw.out = ev->misc & PERF_RECORD_MISC_SWITCH_OUT;
		ev->u.sw.preempt =
			ev->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		return 0;
	case PD_RECORD_AUXTRACE_INFO:
		if (c->blen < 8)
			return too_short(c, 8);
		ev->auxtrace_info_type = pd_get32(b);
		if (ev->auxtrace_info_type != PD_AUXTRACE_INTEL_PT)
			return 0;
		if (pd_parse_pt_info(b + 8, c->blen - 8, &ev->u.pt_info, &why))
			return pd_fail(c->err, c->errlen, -EBADMSG, f->path,
				       c->off,
				       "Intel PT AUXTRACE_INFO of %u bytes: %s",
				       ev->size, why);
		return 0;
	case PD_RECORD_AUXTRACE: {
		struct pd_auxtrace *a = &ev->u.auxtrace;

		if (ev->size < PD_AUXTRACE_REC)
			return too_short(c, PD_AUXTRACE_REC - 8);
		a->size = pd_get64(b);
		a->offset = pd_get64(b + 8);
		a->reference = pd_get64(b + 16);
		a->idx = pd_get32(b + 24);
		a->tid = pd_get32(b + 28);
		a->cpu = pd_get32(b + 32);
		a->data = c->r + ev->size;
		/* The trace bytes follow the record, outside header.size. */
		if (a->size > f->data_end - *next)
			return pd_fail(c->err, c->errlen,
				       f->data_end == f->size ? -EOVERFLOW
							      : -EBADMSG,
				       f->path, c->off,
				       "AUXTRACE data of %" PRIu64
				       " bytes runs past the end of the data "
				       "section (%" PRIu64 " bytes left)",
				       a->size, f->data_end - *next);
		*next += a->size;
		return 0;
	}
	case PD_RECORD_TIME_CONV: {
		struct pd_time_conv *t = &ev->u.time_conv;

		if (c->blen < 24)
			return too_short(c, 24);
		t->time_shift = pd_get64(b);
		t->time_mult = pd_get64(b + 8);
		t->time_zero = pd_get64(b + 16);
		if (c->blen >= 48) {
			t->have_ext = true;
			t->time_cycles = pd_get64(b + 24);
			t->time_mask = pd_get64(b + 32);
			t->cap_user_time_zero = b[40];
			t->cap_user_time_short = b[41];
		}
		return 0;
	}
	case PD_RECORD_HEADER_ATTR:
		return parse_header_attr(c, ev, *next);
	case PD_RECORD_HEADER_FEATURE:
		if (c->blen < 8)
			return too_short(c, 8);
		return 0;
	case PD_RECORD_HEADER_BUILD_ID:
		return pd_parse_buildid(f, c->r, ev->size, &bid, c->err,
					c->errlen);
	default:
		return 0;
	}
}

static bool is_known_kernel(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
	case PERF_RECORD_LOST:
	case PERF_RECORD_AUX:
	case PERF_RECORD_ITRACE_START:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return true;
	default:
		return false;
	}
}

int pd_next(struct pd_file *f, uint64_t *cursor, struct pd_event *ev, char *err,
	    size_t errlen)
{
	uint64_t off = *cursor ? *cursor : f->data_off, left, next;
	struct rec_ctx c = {.f = f, .off = off, .err = err, .errlen = errlen};
	const uint8_t *r;
	size_t tlen = 0;
	int rc;

	memset(ev, 0, sizeof(*ev));
	ev->sid.pid = ev->sid.tid = ev->sid.cpu = UINT32_MAX;
	if (off < f->data_off || off > f->data_end)
		return pd_fail(err, errlen, -EINVAL, f->path, off,
			       "cursor outside the data section [%" PRIu64
			       ", %" PRIu64 ")",
			       f->data_off, f->data_end);
	if (off == f->data_end)
		return 0;
	if (f->ids_dirty && pd_rebuild_index(f))
		return pd_fail(err, errlen, -ENOMEM, f->path, off,
			       "out of memory for the id index");
	left = f->data_end - off;
	if (left < 8)
		return pd_fail(err, errlen,
			       f->data_end == f->size ? -EOVERFLOW : -EBADMSG,
			       f->path, off,
			       "record header cut short: %" PRIu64
			       " bytes left in the data section, a header "
			       "needs 8",
			       left);
	r = f->map + off;
	ev->type = pd_get32(r);
	ev->misc = pd_get16(r + 4);
	ev->size = pd_get16(r + 6);
	ev->file_offset = off;
	ev->raw = r;
	c.r = r;
	c.b = r + 8;
	c.name = pd_record_name(ev->type);
	if (ev->size < 8)
		return pd_fail(err, errlen, -EBADMSG, f->path, off,
			       "record type %u (%s) has size %u, less than "
			       "its 8-byte header",
			       ev->type, c.name, ev->size);
	if (ev->size > left)
		return pd_fail(err, errlen,
			       f->data_end == f->size ? -EOVERFLOW : -EBADMSG,
			       f->path, off,
			       "%s record of %u bytes runs past the end of the "
			       "data section (%" PRIu64 " bytes left)",
			       c.name, ev->size, left);
	next = off + ev->size;

	/* Kernel records other than samples end in the sample_id trailer. */
	if (ev->type != PERF_RECORD_SAMPLE && ev->type < 64) {
		const struct pd_attr *a = trailer_attr(f, r, ev->size);

		tlen = trailer_len(a);
		if (tlen > ev->size - 8u) {
			if (is_known_kernel(ev->type))
				return pd_fail(err, errlen, -EBADMSG, f->path,
					       off,
					       "%s record of %u bytes is too "
					       "short for its %zu-byte "
					       "sample_id trailer",
					       c.name, ev->size, tlen);
			tlen = 0;
		} else if (tlen) {
			ev->attr = a;
			parse_trailer(r + ev->size - tlen, a->attr.sample_type,
				      &ev->sid);
			ev->attr = owner(f, ev->attr, &ev->sid);
		}
	}
	c.blen = ev->size - 8u - tlen;
	rc = parse_body(&c, ev, &next);
	if (rc)
		return rc;
	*cursor = next;
	return 1;
}
