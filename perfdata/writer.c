/* SPDX-License-Identifier: MIT */
/*
 * perf.data writer.  Output goes through one large buffer because a
 * capture carries hundreds of MB of AUX data; the file is written under a
 * temporary name next to the final one so that a crash or an error never
 * leaves a half-written capture where a reader would find it.
 *
 * Regular layout: header | ids | attr entries | data | feature table |
 * feature contents.  Piped layout (perf record -o -): 16-byte header,
 * then the features and build ids known so far, the attrs as HEADER_ATTR
 * records, the data records, and whatever features and build ids arrived
 * after the first record.
 */
#include "perfdata/pd_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WBUF_SIZE	  (4u << 20)
#define REC_MAX		  65535u /* header.size is a u16 */
#define PD_PIPE_FEAT_LAST 31	 /* HEADER_PMU_CAPS, perf 6.1's last feature */

struct wattr {
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t nr_ids;
	uint64_t ids_off;
};

struct wfeat {
	uint8_t *data;
	size_t len;
	bool set, emitted;
};

struct wbid {
	struct pd_buildid b;
	char *filename;
	bool emitted;
};

struct pd_writer {
	struct mt_outfile out; /* appears at its path when finished */
	int fd;
	enum pd_write_mode mode;
	uint8_t *buf;
	size_t buf_len;
	uint64_t off; /* file offset of the next byte, buffered ones counted */
	bool started, failed;
	struct wattr *attrs;
	size_t nr_attrs;
	uint32_t attr_size;
	uint64_t attrs_off, data_off;
	struct wfeat feat[PD_FEAT_MAX];
	struct wbid *bids;
	size_t nr_bids;
	struct pd_auxtrace_index *idx;
	size_t nr_idx, cap_idx;
	int err_code;	   /* of the last failed call, 0 when none */
	char err_msg[512]; /* its line */
	/*
	 * Scratch for one record: rec for the caller's records, hrec for
	 * the header records that start() may emit while rec is in use.
	 */
	uint8_t rec[REC_MAX + 1];
	uint8_t hrec[REC_MAX + 1];
};

static const uint8_t zeros[PD_NAME_ALIGN];

static int wfail(struct pd_writer *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int wfail(struct pd_writer *w, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(w->err_msg, sizeof(w->err_msg), code, w->out.path, fmt,
			 ap);
	va_end(ap);
	w->err_code = code;
	/* After a failed write the file is unusable; bad arguments are not. */
	if (code == -EIO)
		w->failed = true;
	return code;
}

static int write_all(struct pd_writer *w, const void *p, size_t n)
{
	const uint8_t *c = p;

	while (n) {
		ssize_t k = write(w->fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return wfail(w, -EIO, "write to %s failed: %s",
				     w->out.tmp,
				     k < 0 ? strerror(errno) : "no progress");
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int flush(struct pd_writer *w)
{
	int rc = 0;

	if (w->buf_len)
		rc = write_all(w, w->buf, w->buf_len);
	w->buf_len = 0;
	return rc;
}

static int out(struct pd_writer *w, const void *p, size_t n)
{
	int rc;

	if (w->failed)
		return w->err_code;
	if (w->buf_len + n > WBUF_SIZE) {
		rc = flush(w);
		if (rc)
			return rc;
	}
	if (n >= WBUF_SIZE) {
		rc = write_all(w, p, n);
		if (rc)
			return rc;
	} else if (n) {
		memcpy(w->buf + w->buf_len, p, n);
		w->buf_len += n;
	}
	w->off += n;
	return 0;
}

int pd_writer_open(struct pd_writer **outp, const char *path,
		   enum pd_write_mode mode, char *err, size_t errlen)
{
	struct pd_writer *w;
	char why[512];
	int rc;

	*outp = NULL;
	if (mode != PD_WRITE_FILE && mode != PD_WRITE_PIPED)
		return pd_fail(err, errlen, -EINVAL, path, UINT64_MAX,
			       "unknown write mode %d", (int)mode);
	w = calloc(1, sizeof(*w));
	if (!w)
		return pd_fail(err, errlen, -ENOMEM, path, UINT64_MAX,
			       "out of memory");
	w->fd = -1;
	w->mode = mode;
	w->buf = malloc(WBUF_SIZE);
	if (!w->buf) {
		rc = pd_fail(err, errlen, -ENOMEM, path, UINT64_MAX,
			     "out of memory");
		goto fail;
	}
	rc = mt_outfile_begin(&w->out, path, why, sizeof(why));
	if (rc) {
		rc = pd_fail(err, errlen, rc == -ENOMEM ? -ENOMEM : -EIO, path,
			     UINT64_MAX, "cannot create: %s",
			     rc == -ESPIPE ? "a special file (device, FIFO, "
					     "socket) cannot take a capture"
					   : strerror(-rc));
		goto fail;
	}
	w->fd = open(w->out.tmp, O_WRONLY | O_CLOEXEC);
	if (w->fd < 0) {
		rc = pd_fail(err, errlen, -EIO, path, UINT64_MAX,
			     "cannot create %s: %s", w->out.tmp,
			     strerror(errno));
		mt_outfile_abort(&w->out);
		goto fail;
	}
	*outp = w;
	return 0;
fail:
	free(w->buf);
	free(w);
	return rc;
}

static void free_writer(struct pd_writer *w)
{
	for (size_t i = 0; i < w->nr_attrs; i++)
		free(w->attrs[i].ids);
	free(w->attrs);
	for (unsigned i = 0; i < PD_FEAT_MAX; i++)
		free(w->feat[i].data);
	for (size_t i = 0; i < w->nr_bids; i++)
		free(w->bids[i].filename);
	free(w->bids);
	free(w->idx);
	free(w->buf);
	mt_outfile_abort(&w->out);
	free(w);
}

void pd_writer_abort(struct pd_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free_writer(w);
}

int pd_writer_error(const struct pd_writer *w, char *err, size_t errlen)
{
	if (w->err_code)
		mt_err(err, errlen, w->err_code, "%s", w->err_msg);
	return w->err_code;
}

int pd_writer_add_attr(struct pd_writer *w, const struct perf_event_attr *attr,
		       const uint64_t *ids, size_t nr_ids)
{
	struct perf_event_attr a = *attr;
	struct wattr *na;

	if (w->failed)
		return w->err_code;
	if (w->started)
		return wfail(w, -EINVAL,
			     "attrs must all be added before the first record");
	if (!a.size)
		a.size = sizeof(a);
	if (a.size < PERF_ATTR_SIZE_VER0 || a.size > sizeof(a))
		return wfail(w, -EINVAL, "attr.size %u, expected %d..%zu",
			     a.size, PERF_ATTR_SIZE_VER0, sizeof(a));
	/* One attr_size in the header covers every entry. */
	if (w->nr_attrs && a.size != w->attr_size)
		return wfail(w, -EINVAL,
			     "attr.size %u differs from the first attr's %u",
			     a.size, w->attr_size);
	if (nr_ids > (REC_MAX - 8 - a.size) / 8)
		return wfail(w, -EINVAL, "%zu ids are too many for one attr",
			     nr_ids);
	na = realloc(w->attrs, (w->nr_attrs + 1) * sizeof(*na));
	if (!na)
		return wfail(w, -ENOMEM, "out of memory");
	w->attrs = na;
	na = &w->attrs[w->nr_attrs];
	memset(na, 0, sizeof(*na));
	na->attr = a;
	if (nr_ids) {
		na->ids = malloc(nr_ids * sizeof(uint64_t));
		if (!na->ids)
			return wfail(w, -ENOMEM, "out of memory");
		memcpy(na->ids, ids, nr_ids * sizeof(uint64_t));
		na->nr_ids = nr_ids;
	}
	w->attr_size = a.size;
	w->nr_attrs++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Building records in w->rec                                          */

struct rb {
	uint8_t *p;
	size_t len;
	bool overflow;
};

static struct rb rb_begin(uint8_t *buf)
{
	struct rb b = {.p = buf, .len = 8};

	return b;
}

static void rb_bytes(struct rb *b, const void *d, size_t n)
{
	if (b->overflow || n > REC_MAX - b->len) {
		b->overflow = true;
		return;
	}
	if (n)
		memcpy(b->p + b->len, d ? d : zeros, n);
	b->len += n;
}

static void rb_u32(struct rb *b, uint32_t v)
{
	rb_bytes(b, &v, 4);
}

static void rb_u64(struct rb *b, uint64_t v)
{
	rb_bytes(b, &v, 8);
}

/* NUL-terminated and zero-padded to ALIGN bytes. */
static void rb_str(struct rb *b, const char *s, size_t align)
{
	size_t n = strlen(s), padded = (n + 1 + align - 1) / align * align;

	rb_bytes(b, s, n);
	while (!b->overflow && padded > n) {
		size_t k =
			padded - n < sizeof(zeros) ? padded - n : sizeof(zeros);

		rb_bytes(b, NULL, k);
		n += k;
	}
}

static void rb_trailer(struct pd_writer *w, struct rb *b,
		       const struct pd_sample_id *sid)
{
	const struct perf_event_attr *a;
	uint64_t st, id;

	if (!w->nr_attrs || !w->attrs[0].attr.sample_id_all)
		return;
	a = &w->attrs[0].attr;
	st = a->sample_type;
	id = sid ? sid->id : (w->attrs[0].nr_ids ? w->attrs[0].ids[0] : 0);
	if (st & PERF_SAMPLE_TID) {
		rb_u32(b, sid ? sid->pid : 0);
		rb_u32(b, sid ? sid->tid : 0);
	}
	if (st & PERF_SAMPLE_TIME)
		rb_u64(b, sid ? sid->time : 0);
	if (st & PERF_SAMPLE_ID)
		rb_u64(b, id);
	if (st & PERF_SAMPLE_STREAM_ID)
		rb_u64(b, sid ? sid->stream_id : 0);
	if (st & PERF_SAMPLE_CPU) {
		rb_u32(b, sid ? sid->cpu : 0);
		rb_u32(b, 0);
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		rb_u64(b, id);
}

static int start(struct pd_writer *w);

static int put_record(struct pd_writer *w, const void *rec, size_t n)
{
	int rc = start(w);

	return rc ? rc : out(w, rec, n);
}

static int rb_emit(struct pd_writer *w, struct rb *b, uint32_t type,
		   uint16_t misc)
{
	if (b->overflow)
		return wfail(w, -EINVAL, "%s record would exceed %u bytes",
			     pd_record_name(type), REC_MAX);
	pd_put32(b->p, type);
	pd_put16(b->p + 4, misc);
	pd_put16(b->p + 6, (uint16_t)b->len);
	return put_record(w, b->p, b->len);
}

/* ------------------------------------------------------------------ */
/* Header parts                                                        */

static int emit_feature_rec(struct pd_writer *w, unsigned bit)
{
	struct wfeat *ft = &w->feat[bit];
	uint8_t h[16];
	int rc;

	pd_put32(h, PD_RECORD_HEADER_FEATURE);
	pd_put16(h + 4, 0);
	pd_put16(h + 6, (uint16_t)(16 + ft->len));
	pd_put64(h + 8, bit);
	rc = out(w, h, sizeof(h));
	if (!rc)
		rc = out(w, ft->data, ft->len);
	ft->emitted = true;
	return rc;
}

/* A build-id entry as perf lays it out, in w->hrec; returns its size. */
static size_t build_bid(struct pd_writer *w, const struct wbid *e,
			uint32_t type)
{
	struct rb b = rb_begin(w->hrec);
	uint8_t id[24] = {0};

	memcpy(id, e->b.id, sizeof(e->b.id));
	id[20] = e->b.size;
	rb_u32(&b, e->b.pid);
	rb_bytes(&b, id, sizeof(id));
	rb_str(&b, e->filename, PD_NAME_ALIGN);
	pd_put32(b.p, type);
	pd_put16(b.p + 4, e->b.misc | PD_MISC_BUILD_ID_SIZE);
	pd_put16(b.p + 6, (uint16_t)b.len);
	return b.len;
}

/* Piped files: what is known now goes out now, the rest at finish. */
static int emit_pending(struct pd_writer *w)
{
	int rc = 0;

	for (unsigned i = 0; i < PD_FEAT_MAX && !rc; i++)
		if (w->feat[i].set && !w->feat[i].emitted)
			rc = emit_feature_rec(w, i);
	for (size_t i = 0; i < w->nr_bids && !rc; i++) {
		if (w->bids[i].emitted)
			continue;
		rc = out(w, w->hrec,
			 build_bid(w, &w->bids[i], PD_RECORD_HEADER_BUILD_ID));
		w->bids[i].emitted = true;
	}
	return rc;
}

static int start(struct pd_writer *w)
{
	uint8_t h[PD_HEADER_SIZE] = {0};
	int rc = 0;

	if (w->failed)
		return w->err_code;
	if (w->started)
		return 0;
	w->started = true;
	if (w->mode == PD_WRITE_PIPED) {
		pd_put64(h, PD_MAGIC);
		pd_put64(h + 8, PD_PIPE_HEADER_SIZE);
		rc = out(w, h, PD_PIPE_HEADER_SIZE);
		if (!rc)
			rc = emit_pending(w);
		for (size_t i = 0; i < w->nr_attrs && !rc; i++) {
			struct rb b = rb_begin(w->hrec);

			rb_bytes(&b, &w->attrs[i].attr, w->attr_size);
			rb_bytes(&b, w->attrs[i].ids, 8 * w->attrs[i].nr_ids);
			rc = rb_emit(w, &b, PD_RECORD_HEADER_ATTR, 0);
		}
		w->data_off = w->off;
		return rc;
	}
	/* The real header is written by finish, once the sizes are known. */
	rc = out(w, h, sizeof(h));
	for (size_t i = 0; i < w->nr_attrs && !rc; i++) {
		w->attrs[i].ids_off = w->off;
		rc = out(w, w->attrs[i].ids, 8 * w->attrs[i].nr_ids);
	}
	w->attrs_off = w->off;
	for (size_t i = 0; i < w->nr_attrs && !rc; i++) {
		uint8_t sec[16];

		pd_put64(sec, w->attrs[i].ids_off);
		pd_put64(sec + 8, 8 * w->attrs[i].nr_ids);
		rc = out(w, &w->attrs[i].attr, w->attr_size);
		if (!rc)
			rc = out(w, sec, sizeof(sec));
	}
	w->data_off = w->off;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */

int pd_writer_raw(struct pd_writer *w, const void *rec, size_t size)
{
	const uint8_t *r = rec;

	if (size < 8 || size > REC_MAX || pd_get16(r + 6) != size)
		return wfail(w, -EINVAL,
			     "raw record of %zu bytes: size must be 8..%u and "
			     "match its header",
			     size, REC_MAX);
	if (pd_get32(r) == PD_RECORD_AUXTRACE)
		return wfail(w, -EINVAL,
			     "AUXTRACE records carry data: use "
			     "pd_write_auxtrace");
	return put_record(w, rec, size);
}

int pd_write_comm(struct pd_writer *w, const struct pd_comm *c,
		  const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);

	if (!c->comm)
		return wfail(w, -EINVAL, "COMM without a name");
	rb_u32(&b, c->pid);
	rb_u32(&b, c->tid);
	rb_str(&b, c->comm, 8);
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b, PERF_RECORD_COMM,
		       c->exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
}

int pd_write_mmap2(struct pd_writer *w, const struct pd_mmap *m,
		   const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);
	/* Only kernel addresses have the top bit set on x86-64. */
	uint16_t misc = (m->start >> 63) ? PERF_RECORD_MISC_KERNEL
					 : PERF_RECORD_MISC_USER;

	if (!m->filename)
		return wfail(w, -EINVAL, "mapping without a file name");
	if (m->is_mmap2 && m->has_build_id &&
	    m->build_id_size > sizeof(m->build_id))
		return wfail(w, -EINVAL, "build id size %u, at most 20",
			     m->build_id_size);
	rb_u32(&b, m->pid);
	rb_u32(&b, m->tid);
	rb_u64(&b, m->start);
	rb_u64(&b, m->len);
	rb_u64(&b, m->pgoff);
	if (m->is_mmap2) {
		if (m->has_build_id) {
			uint8_t u[4] = {m->build_id_size, 0, 0, 0};

			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
			rb_bytes(&b, u, 4);
			rb_bytes(&b, m->build_id, sizeof(m->build_id));
		} else {
			rb_u32(&b, m->maj);
			rb_u32(&b, m->min);
			rb_u64(&b, m->ino);
			rb_u64(&b, m->ino_generation);
		}
		rb_u32(&b, m->prot);
		rb_u32(&b, m->flags);
	}
	rb_str(&b, m->filename, 8);
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b,
		       m->is_mmap2 ? PERF_RECORD_MMAP2 : PERF_RECORD_MMAP,
		       misc);
}

int pd_write_task(struct pd_writer *w, uint32_t type, const struct pd_task *t,
		  const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);

	if (type != PERF_RECORD_FORK && type != PERF_RECORD_EXIT)
		return wfail(w, -EINVAL,
			     "task record type %u, expected "
			     "FORK or EXIT",
			     type);
	rb_u32(&b, t->pid);
	rb_u32(&b, t->ppid);
	rb_u32(&b, t->tid);
	rb_u32(&b, t->ptid);
	rb_u64(&b, t->time);
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b, type, 0);
}

int pd_write_itrace_start(struct pd_writer *w, const struct pd_itrace_start *s,
			  const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);

	rb_u32(&b, s->pid);
	rb_u32(&b, s->tid);
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b, PERF_RECORD_ITRACE_START, 0);
}

int pd_write_aux(struct pd_writer *w, const struct pd_aux *a,
		 const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);

	rb_u64(&b, a->aux_offset);
	rb_u64(&b, a->aux_size);
	rb_u64(&b, a->flags);
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b, PERF_RECORD_AUX, 0);
}

int pd_write_switch(struct pd_writer *w, const struct pd_switch *s,
		    const struct pd_sample_id *sid)
{
	struct rb b = rb_begin(w->rec);
	uint16_t misc = 0;

	if (s->out)
		misc |= PERF_RECORD_MISC_SWITCH_OUT;
	if (s->preempt)
		misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	if (s->cpu_wide) {
		rb_u32(&b, s->next_prev_pid);
		rb_u32(&b, s->next_prev_tid);
	}
	rb_trailer(w, &b, sid);
	return rb_emit(w, &b,
		       s->cpu_wide ? PERF_RECORD_SWITCH_CPU_WIDE
				   : PERF_RECORD_SWITCH,
		       misc);
}

int pd_write_auxtrace_info(struct pd_writer *w, const struct pd_pt_info *pt,
			   unsigned nr_fields, bool with_cap_event_trace)
{
	struct rb b = rb_begin(w->rec);
	uint64_t v[PD_PT_NR_FIXED] = {0};
	size_t flen = strnlen(pt->filter, sizeof(pt->filter));

	if (nr_fields != 10 && nr_fields != 15 && nr_fields != 16 &&
	    nr_fields != PD_PT_NR_FIXED)
		return wfail(w, -EINVAL,
			     "AUXTRACE_INFO with %u fields: perf wrote 10, "
			     "15, 16 or 17",
			     nr_fields);
	/* perf reads cap_event_trace only after the filter string. */
	if (with_cap_event_trace && nr_fields != PD_PT_NR_FIXED)
		return wfail(w, -EINVAL, "cap_event_trace needs all 17 fields");
	if (flen && nr_fields != PD_PT_NR_FIXED)
		return wfail(w, -EINVAL,
			     "an address filter needs all 17 fields");
	if (flen == sizeof(pt->filter))
		return wfail(w, -EINVAL,
			     "address filter is not NUL-terminated");
	v[PD_PT_PMU_TYPE] = pt->pmu_type;
	v[PD_PT_TIME_SHIFT] = pt->time_shift;
	v[PD_PT_TIME_MULT] = pt->time_mult;
	v[PD_PT_TIME_ZERO] = pt->time_zero;
	v[PD_PT_CAP_USER_TIME_ZERO] = pt->cap_user_time_zero;
	v[PD_PT_TSC_BIT] = pt->tsc_bit;
	v[PD_PT_NORETCOMP_BIT] = pt->noretcomp_bit;
	v[PD_PT_HAVE_SCHED_SWITCH] = pt->have_sched_switch;
	v[PD_PT_SNAPSHOT_MODE] = pt->snapshot_mode;
	v[PD_PT_PER_CPU_MMAPS] = pt->per_cpu_mmaps;
	v[PD_PT_MTC_BIT] = pt->mtc_bit;
	v[PD_PT_MTC_FREQ_BITS] = pt->mtc_freq_bits;
	v[PD_PT_TSC_CTC_N] = pt->tsc_ctc_n;
	v[PD_PT_TSC_CTC_D] = pt->tsc_ctc_d;
	v[PD_PT_CYC_BIT] = pt->cyc_bit;
	v[PD_PT_MAX_NONTURBO_RATIO] = pt->max_nonturbo_ratio;
	v[PD_PT_FILTER_STR_LEN] = flen;
	rb_u32(&b, PD_AUXTRACE_INTEL_PT);
	rb_u32(&b, 0);
	rb_bytes(&b, v, 8 * (size_t)nr_fields);
	if (flen)
		rb_str(&b, pt->filter, 8);
	if (with_cap_event_trace)
		rb_u64(&b, pt->cap_event_trace);
	return rb_emit(w, &b, PD_RECORD_AUXTRACE_INFO, 0);
}

int pd_write_auxtrace(struct pd_writer *w, const struct pd_auxtrace *a,
		      const uint8_t *data)
{
	uint8_t r[PD_AUXTRACE_REC] = {0};
	uint64_t padded = pd_align8(a->size);
	int rc;

	if (a->size && !data)
		return wfail(w, -EINVAL,
			     "AUXTRACE of %" PRIu64 " bytes without data",
			     a->size);
	rc = start(w);
	if (rc)
		return rc;
	if (w->nr_idx == w->cap_idx) {
		size_t cap = w->cap_idx ? 2 * w->cap_idx : 64;
		struct pd_auxtrace_index *n = realloc(w->idx, cap * sizeof(*n));

		if (!n)
			return wfail(w, -ENOMEM, "out of memory");
		w->idx = n;
		w->cap_idx = cap;
	}
	w->idx[w->nr_idx].offset = w->off;
	w->idx[w->nr_idx].size = PD_AUXTRACE_REC;
	pd_put32(r, PD_RECORD_AUXTRACE);
	pd_put16(r + 6, PD_AUXTRACE_REC);
	/* perf pads the data to 8 and counts the padding (PAD packets). */
	pd_put64(r + 8, padded);
	pd_put64(r + 16, a->offset);
	pd_put64(r + 24, a->reference);
	pd_put32(r + 32, a->idx);
	pd_put32(r + 36, a->tid);
	pd_put32(r + 40, a->cpu);
	rc = out(w, r, sizeof(r));
	if (!rc)
		rc = out(w, data, a->size);
	if (!rc)
		rc = out(w, zeros, padded - a->size);
	if (!rc)
		w->nr_idx++;
	return rc;
}

int pd_write_time_conv(struct pd_writer *w, const struct pd_time_conv *tc)
{
	struct rb b = rb_begin(w->rec);

	rb_u64(&b, tc->time_shift);
	rb_u64(&b, tc->time_mult);
	rb_u64(&b, tc->time_zero);
	if (tc->have_ext) {
		uint8_t caps[8] = {tc->cap_user_time_zero,
				   tc->cap_user_time_short};

		rb_u64(&b, tc->time_cycles);
		rb_u64(&b, tc->time_mask);
		rb_bytes(&b, caps, sizeof(caps));
	}
	return rb_emit(w, &b, PD_RECORD_TIME_CONV, 0);
}

int pd_write_finished_round(struct pd_writer *w)
{
	struct rb b = rb_begin(w->rec);

	return rb_emit(w, &b, PD_RECORD_FINISHED_ROUND, 0);
}

/* ------------------------------------------------------------------ */
/* Features                                                            */

int pd_writer_set_feature(struct pd_writer *w, unsigned bit, const void *data,
			  size_t len)
{
	uint8_t *copy = NULL;

	if (w->failed)
		return w->err_code;
	if (!bit || bit >= PD_FEAT_MAX)
		return wfail(w, -EINVAL, "feature bit %u, expected 1..%d", bit,
			     PD_FEAT_MAX - 1);
	if (bit == PD_FEAT_AUXTRACE || bit == PD_FEAT_BUILD_ID)
		return wfail(w, -EINVAL,
			     "feature %u is written by pd_writer_finish", bit);
	/*
	 * perf reads a piped file's HEADER_FEATURE records as it meets them
	 * and stops at an id it does not know; a regular file's feature
	 * table it just skips.
	 */
	if (w->mode == PD_WRITE_PIPED && bit > PD_PIPE_FEAT_LAST)
		return wfail(w, -EINVAL,
			     "feature %u cannot go into a piped file: perf "
			     "stops at feature ids above %d there",
			     bit, PD_PIPE_FEAT_LAST);
	if (w->mode == PD_WRITE_PIPED && len > REC_MAX - 16)
		return wfail(w, -EINVAL,
			     "feature %u of %zu bytes does not fit a piped "
			     "file's HEADER_FEATURE record",
			     bit, len);
	if (len) {
		copy = malloc(len);
		if (!copy)
			return wfail(w, -ENOMEM, "out of memory");
		memcpy(copy, data, len);
	}
	free(w->feat[bit].data);
	w->feat[bit].data = copy;
	w->feat[bit].len = len;
	w->feat[bit].set = true;
	w->feat[bit].emitted = false;
	return 0;
}

int pd_writer_set_feature_string(struct pd_writer *w, unsigned bit,
				 const char *s)
{
	size_t n = strlen(s), padded;
	uint8_t *d;
	int rc;

	padded = (n + 1 + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
	if (padded > UINT32_MAX)
		return wfail(w, -EINVAL, "feature string too long");
	d = calloc(1, 4 + padded);
	if (!d)
		return wfail(w, -ENOMEM, "out of memory");
	pd_put32(d, (uint32_t)padded);
	memcpy(d + 4, s, n);
	rc = pd_writer_set_feature(w, bit, d, 4 + padded);
	free(d);
	return rc;
}

int pd_writer_add_buildid(struct pd_writer *w, const struct pd_buildid *b)
{
	struct wbid *n;

	if (w->failed)
		return w->err_code;
	if (!b->filename || b->size > sizeof(b->id))
		return wfail(w, -EINVAL,
			     "build id needs a file name and at most 20 bytes");
	if (strlen(b->filename) + PD_BUILDID_REC + PD_NAME_ALIGN > REC_MAX)
		return wfail(w, -EINVAL, "build id file name too long");
	n = realloc(w->bids, (w->nr_bids + 1) * sizeof(*n));
	if (!n)
		return wfail(w, -ENOMEM, "out of memory");
	w->bids = n;
	n = &w->bids[w->nr_bids];
	memset(n, 0, sizeof(*n));
	n->b = *b;
	if (!n->b.size)
		n->b.size = 20;
	n->filename = strdup(b->filename);
	if (!n->filename)
		return wfail(w, -ENOMEM, "out of memory");
	n->b.filename = n->filename;
	w->nr_bids++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Finish                                                              */

static int finish_regular(struct pd_writer *w)
{
	uint8_t h[PD_HEADER_SIZE] = {0};
	uint64_t data_size, table, at;
	uint8_t *aux = NULL, *bid = NULL;
	size_t aux_len = 0, bid_len = 0;
	int rc;

	/*
	 * A data size of 0 is how a reader recognises a writer that died
	 * before it wrote the header; never write it for a capture that is
	 * merely empty.
	 */
	if (w->off == w->data_off) {
		rc = pd_write_finished_round(w);
		if (rc)
			return rc;
	}
	data_size = w->off - w->data_off;
	table = w->off;

	if (w->nr_idx) {
		aux_len = 8 + 16 * w->nr_idx;
		aux = malloc(aux_len);
		if (!aux)
			return wfail(w, -ENOMEM, "out of memory");
		pd_put64(aux, w->nr_idx);
		for (size_t i = 0; i < w->nr_idx; i++) {
			pd_put64(aux + 8 + 16 * i, w->idx[i].offset);
			pd_put64(aux + 16 + 16 * i, w->idx[i].size);
		}
		w->feat[PD_FEAT_AUXTRACE].data = aux;
		w->feat[PD_FEAT_AUXTRACE].len = aux_len;
		w->feat[PD_FEAT_AUXTRACE].set = true;
	}
	for (size_t i = 0; i < w->nr_bids; i++)
		bid_len += build_bid(w, &w->bids[i], 0);
	if (bid_len) {
		bid = malloc(bid_len);
		if (!bid)
			return wfail(w, -ENOMEM, "out of memory");
		bid_len = 0;
		for (size_t i = 0; i < w->nr_bids; i++) {
			size_t n = build_bid(w, &w->bids[i], 0);

			memcpy(bid + bid_len, w->hrec, n);
			bid_len += n;
		}
		w->feat[PD_FEAT_BUILD_ID].data = bid;
		w->feat[PD_FEAT_BUILD_ID].len = bid_len;
		w->feat[PD_FEAT_BUILD_ID].set = true;
	}

	at = table;
	for (unsigned i = 0; i < PD_FEAT_MAX; i++)
		if (w->feat[i].set)
			at += 16;
	rc = 0;
	for (unsigned i = 0; i < PD_FEAT_MAX && !rc; i++) {
		uint8_t sec[16];

		if (!w->feat[i].set)
			continue;
		pd_put64(sec, at);
		pd_put64(sec + 8, w->feat[i].len);
		rc = out(w, sec, sizeof(sec));
		at += w->feat[i].len;
		h[72 + i / 8] |= (uint8_t)(1u << (i % 8));
	}
	for (unsigned i = 0; i < PD_FEAT_MAX && !rc; i++)
		if (w->feat[i].set)
			rc = out(w, w->feat[i].data, w->feat[i].len);
	if (!rc)
		rc = flush(w);
	if (rc)
		return rc;

	pd_put64(h, PD_MAGIC);
	pd_put64(h + 8, PD_HEADER_SIZE);
	pd_put64(h + 16,
		 (uint64_t)(w->nr_attrs ? w->attr_size
					: sizeof(struct perf_event_attr)) +
			 16);
	pd_put64(h + 24, w->attrs_off);
	pd_put64(h + 32, w->nr_attrs * ((uint64_t)w->attr_size + 16));
	pd_put64(h + 40, w->data_off);
	pd_put64(h + 48, data_size);
	if (pwrite(w->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return wfail(w, -EIO, "writing the header of %s failed: %s",
			     w->out.tmp, strerror(errno));
	return 0;
}

int pd_writer_finish(struct pd_writer *w, char *err, size_t errlen)
{
	char why[512];
	int rc = start(w), e;

	if (!rc && w->mode == PD_WRITE_PIPED) {
		rc = emit_pending(w);
		if (!rc)
			rc = flush(w);
	} else if (!rc) {
		rc = finish_regular(w);
	}
	if (!rc) {
		int fd = w->fd;

		w->fd = -1;
		if (close(fd))
			rc = wfail(w, -EIO, "closing %s failed: %s", w->out.tmp,
				   strerror(errno));
		else if ((e = mt_outfile_commit(&w->out, why, sizeof(why))))
			rc = wfail(w, -EIO, "cannot put in place: %s",
				   strerror(-e));
	}
	if (rc)
		pd_writer_error(w, err, errlen);
	if (w->fd >= 0)
		close(w->fd);
	/* The temporary file goes with the writer unless committed. */
	free_writer(w);
	return rc;
}
