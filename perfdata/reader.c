/*
 * perf.data reader.  The file is mapped read-only and every offset and
 * size that comes from it is checked against the mapping before use: a
 * capture is untrusted input (a perf that died mid-write, a truncated
 * copy, a different tool's idea of the format).
 */
#include "perfdata/pd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pd_fail(struct pd_err *err, int code, const char *path, uint64_t off,
	    const char *fmt, ...)
{
	char what[400];
	va_list ap;

	if (!err)
		return -code;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	err->code = code;
	if (off == UINT64_MAX)
		snprintf(err->msg, sizeof(err->msg), "%s: %s", path, what);
	else
		snprintf(err->msg, sizeof(err->msg),
			 "%s: offset %" PRIu64 ": %s", path, off, what);
	return -code;
}

static bool in_file(const struct pd_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static uint64_t at(const struct pd_file *f, const uint8_t *p)
{
	return (uint64_t)(p - f->map);
}

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

/* ------------------------------------------------------------------ */
/* Attrs and the id index                                              */

static int cmp_id(const void *a, const void *b)
{
	const struct pd_id_ent *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int rebuild_index(struct pd_file *f)
{
	size_t n = 0, k = 0;
	struct pd_id_ent *ids;

	for (size_t i = 0; i < f->nr_attrs; i++)
		n += f->attrs[i]->nr_ids;
	ids = n ? calloc(n, sizeof(*ids)) : NULL;
	if (n && !ids)
		return -PD_ENOMEM;
	for (size_t i = 0; i < f->nr_attrs; i++) {
		for (size_t j = 0; j < f->attrs[i]->nr_ids; j++) {
			ids[k].id = f->attrs[i]->ids[j];
			ids[k].idx = i;
			ids[k].attr = f->attrs[i];
			k++;
		}
	}
	if (n)
		qsort(ids, n, sizeof(*ids), cmp_id);
	free(f->ids);
	f->ids = ids;
	f->nr_ids = n;
	f->ids_dirty = false;
	return 0;
}

/* A: the attr bytes as stored (asz of them); IDS: nr u64s, maybe unaligned. */
static int add_attr(struct pd_file *f, const uint8_t *a, uint32_t asz,
		    const uint8_t *ids, size_t nr, struct pd_err *err,
		    uint64_t off)
{
	struct pd_attr *pa = calloc(1, sizeof(*pa));
	size_t n = asz < sizeof(pa->attr) ? asz : sizeof(pa->attr);

	if (!pa)
		goto nomem;
	memcpy(&pa->attr, a, n);
	pa->file_attr_size = asz;
	if (nr) {
		pa->ids = malloc(nr * sizeof(uint64_t));
		if (!pa->ids)
			goto nomem;
		memcpy(pa->ids, ids, nr * sizeof(uint64_t));
		pa->nr_ids = nr;
	}
	if (f->nr_attrs == PD_MAX_ATTRS) {
		free(pa->ids);
		free(pa);
		return pd_fail(err, PD_EFORMAT, f->path, off,
			       "more than %d attrs", PD_MAX_ATTRS);
	}
	if (f->nr_attrs == f->cap_attrs) {
		size_t cap = f->cap_attrs ? 2 * f->cap_attrs : 8;
		struct pd_attr **na = realloc(f->attrs, cap * sizeof(*na));

		if (!na)
			goto nomem;
		f->attrs = na;
		f->cap_attrs = cap;
	}
	f->attrs[f->nr_attrs++] = pa;
	/* The id index is rebuilt once, when the next lookup needs it. */
	f->ids_dirty = true;
	if (f->nr_attrs == 1)
		f->uniform = true;
	else if (pa->attr.sample_type != f->attrs[0]->attr.sample_type ||
		 pa->attr.sample_id_all != f->attrs[0]->attr.sample_id_all)
		f->uniform = false;
	return 0;
nomem:
	if (pa)
		free(pa->ids);
	free(pa);
	return pd_fail(err, PD_ENOMEM, f->path, off, "out of memory for attrs");
}

const struct pd_attr *pd_attr_by_id(const struct pd_file *f, uint64_t id)
{
	size_t lo = 0, hi = f->nr_ids;

	if (f->ids_dirty) {
		for (size_t i = 0; i < f->nr_attrs; i++)
			for (size_t j = 0; j < f->attrs[i]->nr_ids; j++)
				if (f->attrs[i]->ids[j] == id)
					return f->attrs[i];
		return NULL;
	}

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo is the first entry >= id: the earliest attr of duplicates. */
	if (lo < f->nr_ids && f->ids[lo].id == id)
		return f->ids[lo].attr;
	return NULL;
}

size_t pd_nr_attrs(const struct pd_file *f)
{
	return f->nr_attrs;
}

const struct pd_attr *pd_get_attr(const struct pd_file *f, size_t i)
{
	return i < f->nr_attrs ? f->attrs[i] : NULL;
}

const char *pd_path(const struct pd_file *f)
{
	return f->path;
}

bool pd_is_piped(const struct pd_file *f)
{
	return f->piped;
}

bool pd_has_feature(const struct pd_file *f, unsigned bit)
{
	return bit < PD_FEAT_MAX && f->feat[bit].present;
}

const uint8_t *pd_feature(const struct pd_file *f, unsigned bit, size_t *len)
{
	*len = 0;
	if (!pd_has_feature(f, bit))
		return NULL;
	*len = f->feat[bit].len;
	return f->feat[bit].data;
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */

static int open_regular(struct pd_file *f, struct pd_err *err)
{
	const uint8_t *h = f->map;
	uint64_t hsize = pd_get64(h + 8);
	uint64_t attr_size, attrs_off, attrs_size, data_off, data_size;
	unsigned nr_feat = 0, k = 0;
	uint64_t table;

	if (hsize != PD_HEADER_SIZE && hsize != PD_HEADER_SIZE_OLD)
		return pd_fail(err, PD_EFORMAT, f->path, 8,
			       "header size %" PRIu64 ", expected %d (or %d "
			       "for a piped file)",
			       hsize, PD_HEADER_SIZE, PD_PIPE_HEADER_SIZE);
	if (f->size < hsize)
		return pd_fail(err, PD_ETRUNC, f->path, 0,
			       "file is %zu bytes, shorter than its %" PRIu64
			       "-byte header",
			       f->size, hsize);
	attr_size = pd_get64(h + 16);
	attrs_off = pd_get64(h + 24);
	attrs_size = pd_get64(h + 32);
	data_off = pd_get64(h + 40);
	data_size = pd_get64(h + 48);

	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size - 16 > UINT32_MAX)
		return pd_fail(err, PD_EFORMAT, f->path, 16,
			       "attr_size %" PRIu64 ", expected at least %d (a "
			       "%d-byte attr and its ids section)",
			       attr_size, PERF_ATTR_SIZE_VER0 + 16,
			       PERF_ATTR_SIZE_VER0);
	if (!in_file(f, attrs_off, attrs_size))
		return pd_fail(err, PD_ETRUNC, f->path, 24,
			       "attr section [%" PRIu64 ", +%" PRIu64
			       ") ends past the end of the file (%zu bytes)",
			       attrs_off, attrs_size, f->size);
	if (attrs_size % attr_size)
		return pd_fail(err, PD_EFORMAT, f->path, 32,
			       "attr section size %" PRIu64
			       " is not a multiple of attr_size %" PRIu64,
			       attrs_size, attr_size);
	for (uint64_t i = 0; i < attrs_size / attr_size; i++) {
		uint64_t e = attrs_off + i * attr_size;
		uint32_t asz = pd_get32(f->map + e + 4);
		/* perf reads an attr.size of 0 as the first ABI, 64 bytes. */
		uint32_t eff = asz ? asz : PERF_ATTR_SIZE_VER0;
		uint64_t ids_off, ids_size;
		int rc;

		if (eff != attr_size - 16)
			return pd_fail(err, PD_EFORMAT, f->path, e + 4,
				       "attr %" PRIu64 " has size %u but the "
				       "header's attr_size %" PRIu64
				       " means %" PRIu64,
				       i, asz, attr_size, attr_size - 16);
		ids_off = pd_get64(f->map + e + eff);
		ids_size = pd_get64(f->map + e + eff + 8);
		if (ids_size % 8)
			return pd_fail(err, PD_EFORMAT, f->path, e + eff + 8,
				       "ids section of attr %" PRIu64
				       " has size %" PRIu64
				       ", not a multiple of 8",
				       i, ids_size);
		if (!in_file(f, ids_off, ids_size))
			return pd_fail(err, PD_ETRUNC, f->path, e + eff,
				       "ids section of attr %" PRIu64
				       " [%" PRIu64 ", +%" PRIu64
				       ") ends past the end of the file "
				       "(%zu bytes)",
				       i, ids_off, ids_size, f->size);
		rc = add_attr(f, f->map + e, eff, f->map + ids_off,
			      ids_size / 8, err, e);
		if (rc)
			return rc;
	}
	if (rebuild_index(f))
		return pd_fail(err, PD_ENOMEM, f->path, 24,
			       "out of memory for the id index");
	if (data_off < hsize)
		return pd_fail(err, PD_EFORMAT, f->path, 40,
			       "data section starts at %" PRIu64
			       ", inside the %" PRIu64 "-byte header",
			       data_off, hsize);
	if (!in_file(f, data_off, data_size))
		return pd_fail(err, PD_ETRUNC, f->path, 40,
			       "data section [%" PRIu64 ", +%" PRIu64
			       ") ends past the end of the file (%zu bytes)",
			       data_off, data_size, f->size);
	f->data_off = data_off;
	/* A perf that died never wrote the size: the records run to EOF. */
	f->data_end = data_size ? data_off + data_size : f->size;

	if (hsize != PD_HEADER_SIZE || !data_size)
		return 0;
	for (unsigned bit = 0; bit < PD_FEAT_MAX; bit++)
		if (h[72 + bit / 8] & (1u << (bit % 8)))
			nr_feat++;
	table = f->data_end;
	if (!in_file(f, table, (uint64_t)nr_feat * 16))
		return pd_fail(err, PD_ETRUNC, f->path, table,
			       "feature table (%u entries of 16 bytes) ends "
			       "past the end of the file (%zu bytes)",
			       nr_feat, f->size);
	for (unsigned bit = 0; bit < PD_FEAT_MAX; bit++) {
		uint64_t e = table + 16 * (uint64_t)k, off, len;

		if (!(h[72 + bit / 8] & (1u << (bit % 8))))
			continue;
		off = pd_get64(f->map + e);
		len = pd_get64(f->map + e + 8);
		if (!in_file(f, off, len))
			return pd_fail(err, PD_ETRUNC, f->path, e,
				       "feature %u section [%" PRIu64
				       ", +%" PRIu64 ") ends past the end of "
				       "the file (%zu bytes)",
				       bit, off, len, f->size);
		f->feat[bit].data = f->map + off;
		f->feat[bit].len = len;
		f->feat[bit].present = true;
		k++;
	}
	return 0;
}

/*
 * Piped files keep features and build ids in the record stream, in
 * front of the data (perf record -o -) or behind it (our writer when they
 * arrive late).  A walk over the record headers finds them so that the
 * feature getters work right after pd_open(); a malformed record just
 * ends the walk, and pd_next() reports it when it gets there.
 */
static int prescan_piped(struct pd_file *f, struct pd_err *err)
{
	uint64_t off = f->data_off;
	size_t cap = 0;

	while (f->data_end - off >= 8) {
		const uint8_t *r = f->map + off;
		uint32_t type = pd_get32(r);
		uint16_t sz = pd_get16(r + 6);
		uint64_t next = off + sz;

		if (sz < 8 || sz > f->data_end - off)
			break;
		if (type == PD_RECORD_AUXTRACE) {
			uint64_t dsz;

			if (sz < PD_AUXTRACE_REC)
				break;
			dsz = pd_get64(r + 8);
			if (dsz > f->data_end - next)
				break;
			next += dsz;
		} else if (type == PD_RECORD_HEADER_FEATURE && sz >= 16) {
			uint64_t id = pd_get64(r + 8);

			if (id < PD_FEAT_MAX) {
				f->feat[id].data = r + 16;
				f->feat[id].len = sz - 16u;
				f->feat[id].present = true;
			}
		} else if (type == PD_RECORD_HEADER_BUILD_ID) {
			if (f->nr_bid_recs == cap) {
				size_t nc = cap ? 2 * cap : 16;
				const uint8_t **n =
					realloc(f->bid_recs, nc * sizeof(*n));

				if (!n)
					return pd_fail(err, PD_ENOMEM, f->path,
						       off,
						       "out of memory for "
						       "build ids");
				f->bid_recs = n;
				cap = nc;
			}
			f->bid_recs[f->nr_bid_recs++] = r;
		}
		off = next;
	}
	return 0;
}

int pd_open(struct pd_file **out, const char *path, struct pd_err *err)
{
	struct pd_file *f;
	struct stat st;
	int fd = -1, rc;
	uint64_t magic;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return pd_fail(err, PD_ENOMEM, path, UINT64_MAX,
			       "out of memory");
	f->path = strdup(path);
	if (!f->path) {
		rc = pd_fail(err, PD_ENOMEM, path, UINT64_MAX, "out of memory");
		goto fail;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = pd_fail(err, PD_EIO, path, UINT64_MAX, "cannot open: %s",
			     strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st)) {
		rc = pd_fail(err, PD_EIO, path, UINT64_MAX, "cannot stat: %s",
			     strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = pd_fail(err, PD_EIO, path, UINT64_MAX,
			     "not a regular file (to read a pipe, save it to "
			     "a file first)");
		goto fail;
	}
	f->size = (size_t)st.st_size;
	if (f->size) {
		void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			rc = pd_fail(err, PD_EIO, path, UINT64_MAX,
				     "cannot map: %s", strerror(errno));
			goto fail;
		}
		f->map = m;
	}
	close(fd);
	fd = -1;

	if (f->size < 8) {
		rc = pd_fail(err, PD_ETRUNC, path, 0,
			     "file is %zu bytes, too short for a perf.data "
			     "header",
			     f->size);
		goto fail;
	}
	magic = pd_get64(f->map);
	if (magic != PD_MAGIC) {
		if (!memcmp(f->map, "PERFFILE", 8))
			rc = pd_fail(err, PD_EFORMAT, path, 0,
				     "old PERFFILE (version 1) format is not "
				     "supported");
		else if (magic == __builtin_bswap64(PD_MAGIC))
			rc = pd_fail(err, PD_EFORMAT, path, 0,
				     "big-endian perf.data is not supported");
		else
			rc = pd_fail(err, PD_EFORMAT, path, 0,
				     "not a perf.data file (no PERFILE2 "
				     "magic)");
		goto fail;
	}
	if (f->size < 16) {
		rc = pd_fail(err, PD_ETRUNC, path, 8,
			     "file is %zu bytes, the header size field is cut",
			     f->size);
		goto fail;
	}
	if (pd_get64(f->map + 8) == PD_PIPE_HEADER_SIZE) {
		f->piped = true;
		f->data_off = PD_PIPE_HEADER_SIZE;
		f->data_end = f->size;
		rc = prescan_piped(f, err);
	} else {
		rc = open_regular(f, err);
	}
	if (rc)
		goto fail;
	*out = f;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	pd_close(f);
	return rc;
}

void pd_close(struct pd_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap((void *)f->map, f->size);
	for (size_t i = 0; i < f->nr_attrs; i++) {
		free(f->attrs[i]->ids);
		free(f->attrs[i]);
	}
	free(f->attrs);
	free(f->ids);
	free(f->bid_recs);
	free(f->bids);
	free(f->aux_idx);
	free(f->path);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */

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
	struct pd_err *err;
};

static int too_short(struct rec_ctx *c, size_t need)
{
	return pd_fail(c->err, PD_EFORMAT, c->f->path, c->off,
		       "%s record body is %zu bytes, expected at least %zu",
		       c->name, c->blen, need);
}

/* A NUL-terminated string filling the body from FROM up to the trailer. */
static int body_string(struct rec_ctx *c, size_t from, const char *what,
		       const char **out)
{
	if (c->blen <= from || !memchr(c->b + from, 0, c->blen - from))
		return pd_fail(c->err, PD_EFORMAT, c->f->path,
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
				return pd_fail(c->err, PD_EFORMAT, c->f->path,
					       c->off + 40,
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
			return pd_fail(c->err, PD_EFORMAT, f->path, c->off,    \
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
		return pd_fail(c->err, PD_EFORMAT, f->path, c->off + 12,
			       "HEADER_ATTR attr.size %u does not fit its "
			       "%zu-byte body",
			       asz, c->blen);
	rem = c->blen - eff;
	if (rem % 8)
		return pd_fail(c->err, PD_EFORMAT, f->path, c->off,
			       "HEADER_ATTR has %zu bytes of ids, not a "
			       "multiple of 8",
			       rem);
	/* A second pass over the records must not add the attrs twice. */
	if (!f->piped || c->off < f->attr_scan_end)
		return 0;
	rc = add_attr(f, c->b, eff, c->b + eff, rem / 8, c->err, c->off);
	if (rc)
		return rc;
	f->attr_scan_end = next;
	ev->attr = f->attrs[f->nr_attrs - 1];
	return 0;
}

static int parse_buildid_rec(struct pd_file *f, const uint8_t *p, size_t sz,
			     struct pd_buildid *b, struct pd_err *err)
{
	uint64_t off = at(f, p);

	if (sz < PD_BUILDID_REC + 1 ||
	    !memchr(p + PD_BUILDID_REC, 0, sz - PD_BUILDID_REC))
		return pd_fail(err, PD_EFORMAT, f->path, off,
			       "build id entry of %zu bytes has no "
			       "NUL-terminated file name",
			       sz);
	memset(b, 0, sizeof(*b));
	b->misc = pd_get16(p + 4);
	b->pid = pd_get32(p + 8);
	memcpy(b->id, p + 12, sizeof(b->id));
	b->size = (b->misc & PD_MISC_BUILD_ID_SIZE) ? p[12 + 20] : 20;
	if (b->size > sizeof(b->id))
		return pd_fail(err, PD_EFORMAT, f->path, off + 32,
			       "build id size %u, at most 20", b->size);
	b->filename = (const char *)p + PD_BUILDID_REC;
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
			return pd_fail(c->err, PD_EFORMAT, f->path, c->off,
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
			return pd_fail(c->err,
				       f->data_end == f->size ? PD_ETRUNC
							      : PD_EFORMAT,
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
		return parse_buildid_rec(f, c->r, ev->size, &bid, c->err);
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

int pd_next(struct pd_file *f, uint64_t *cursor, struct pd_event *ev,
	    struct pd_err *err)
{
	uint64_t off = *cursor ? *cursor : f->data_off, left, next;
	struct rec_ctx c = {.f = f, .off = off, .err = err};
	const uint8_t *r;
	size_t tlen = 0;
	int rc;

	memset(ev, 0, sizeof(*ev));
	ev->sid.pid = ev->sid.tid = ev->sid.cpu = UINT32_MAX;
	if (off < f->data_off || off > f->data_end)
		return pd_fail(err, PD_EINVAL, f->path, off,
			       "cursor outside the data section [%" PRIu64
			       ", %" PRIu64 ")",
			       f->data_off, f->data_end);
	if (off == f->data_end)
		return 0;
	if (f->ids_dirty && rebuild_index(f))
		return pd_fail(err, PD_ENOMEM, f->path, off,
			       "out of memory for the id index");
	left = f->data_end - off;
	if (left < 8)
		return pd_fail(err,
			       f->data_end == f->size ? PD_ETRUNC : PD_EFORMAT,
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
		return pd_fail(err, PD_EFORMAT, f->path, off,
			       "record type %u (%s) has size %u, less than "
			       "its 8-byte header",
			       ev->type, c.name, ev->size);
	if (ev->size > left)
		return pd_fail(err,
			       f->data_end == f->size ? PD_ETRUNC : PD_EFORMAT,
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
				return pd_fail(err, PD_EFORMAT, f->path, off,
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

/* ------------------------------------------------------------------ */
/* Features                                                            */

static int add_bid(struct pd_file *f, size_t *cap, const uint8_t *p, size_t sz,
		   struct pd_err *err)
{
	int rc;

	if (f->nr_bids == *cap) {
		size_t nc = *cap ? 2 * *cap : 32;
		struct pd_buildid *n = realloc(f->bids, nc * sizeof(*n));

		if (!n)
			return pd_fail(err, PD_ENOMEM, f->path, at(f, p),
				       "out of memory for build ids");
		f->bids = n;
		*cap = nc;
	}
	rc = parse_buildid_rec(f, p, sz, &f->bids[f->nr_bids], err);
	if (rc)
		return rc;
	f->nr_bids++;
	return 0;
}

int pd_buildids(struct pd_file *f, const struct pd_buildid **out, size_t *n,
		struct pd_err *err)
{
	size_t cap = 0, len, pos = 0;
	const uint8_t *d;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (f->bids_done)
		goto done;
	if (f->piped) {
		for (size_t i = 0; i < f->nr_bid_recs && !rc; i++)
			rc = add_bid(f, &cap, f->bid_recs[i],
				     pd_get16(f->bid_recs[i] + 6), err);
	} else {
		d = pd_feature(f, PD_FEAT_BUILD_ID, &len);
		while (d && pos < len && !rc) {
			uint16_t sz;

			if (len - pos < 8) {
				rc = pd_fail(err, PD_EFORMAT, f->path,
					     at(f, d + pos),
					     "build id entry header cut: %zu "
					     "bytes left in the section",
					     len - pos);
				break;
			}
			sz = pd_get16(d + pos + 6);
			if (sz < 8 || sz > len - pos) {
				rc = pd_fail(err, PD_EFORMAT, f->path,
					     at(f, d + pos),
					     "build id entry of %u bytes, %zu "
					     "bytes left in the section",
					     sz, len - pos);
				break;
			}
			rc = add_bid(f, &cap, d + pos, sz, err);
			pos += sz;
		}
	}
	if (rc) {
		free(f->bids);
		f->bids = NULL;
		f->nr_bids = 0;
		return rc;
	}
	f->bids_done = true;
done:
	*out = f->bids;
	*n = f->nr_bids;
	return 0;
}

int pd_auxtrace_index(struct pd_file *f, const struct pd_auxtrace_index **out,
		      size_t *n, struct pd_err *err)
{
	size_t len;
	const uint8_t *d;
	uint64_t nr;

	*out = NULL;
	*n = 0;
	if (f->aux_idx_done)
		goto done;
	d = pd_feature(f, PD_FEAT_AUXTRACE, &len);
	if (d) {
		if (len < 8)
			return pd_fail(err, PD_EFORMAT, f->path, at(f, d),
				       "AUXTRACE index section of %zu bytes "
				       "has no entry count",
				       len);
		nr = pd_get64(d);
		if (nr > (len - 8) / 16)
			return pd_fail(err, PD_EFORMAT, f->path, at(f, d),
				       "AUXTRACE index claims %" PRIu64
				       " entries, its %zu bytes hold %zu",
				       nr, len, (len - 8) / 16);
		if (nr) {
			f->aux_idx = calloc(nr, sizeof(*f->aux_idx));
			if (!f->aux_idx)
				return pd_fail(err, PD_ENOMEM, f->path,
					       at(f, d),
					       "out of memory for the "
					       "AUXTRACE index");
		}
		for (uint64_t i = 0; i < nr; i++) {
			f->aux_idx[i].offset = pd_get64(d + 8 + 16 * i);
			f->aux_idx[i].size = pd_get64(d + 16 + 16 * i);
		}
		f->nr_aux_idx = nr;
	}
	f->aux_idx_done = true;
done:
	*out = f->aux_idx;
	*n = f->nr_aux_idx;
	return 0;
}

const char *pd_feature_string(struct pd_file *f, unsigned bit)
{
	size_t len;
	const uint8_t *d = pd_feature(f, bit, &len);
	uint32_t slen;

	if (!d || len < 4)
		return NULL;
	slen = pd_get32(d);
	if (slen > len - 4 || !memchr(d + 4, 0, slen))
		return NULL;
	return (const char *)d + 4;
}
