/* SPDX-License-Identifier: MIT */
/*
 * perf.data reader: opening a file, its header, attrs and id index.  The
 * file is mapped read-only and every offset and size that comes from it
 * is checked against the mapping before use: a capture is untrusted input
 * (a perf that died mid-write, a truncated copy, a different tool's idea
 * of the format).  The records are read in records.c, the feature
 * sections in features.c.
 */
#include "perfdata/pd_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pd_fail(char *err, size_t errlen, int code, const char *path, uint64_t off,
	    const char *fmt, ...)
{
	char where[4096];
	va_list ap;

	if (!err || !errlen)
		return code;
	if (off == UINT64_MAX)
		snprintf(where, sizeof(where), "%s", path);
	else
		snprintf(where, sizeof(where), "%s: offset %" PRIu64, path,
			 off);
	va_start(ap, fmt);
	mt_verr_prefixed(err, errlen, code, where, fmt, ap);
	va_end(ap);
	return code;
}

static bool in_file(const struct pd_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
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

int pd_rebuild_index(struct pd_file *f)
{
	size_t n = 0, k = 0;
	struct pd_id_ent *ids;

	for (size_t i = 0; i < f->nr_attrs; i++)
		n += f->attrs[i]->nr_ids;
	ids = n ? calloc(n, sizeof(*ids)) : NULL;
	if (n && !ids)
		return -ENOMEM;
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
int pd_add_attr(struct pd_file *f, const uint8_t *a, uint32_t asz,
		const uint8_t *ids, size_t nr, char *err, size_t errlen,
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
		return pd_fail(err, errlen, -EBADMSG, f->path, off,
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
	return pd_fail(err, errlen, -ENOMEM, f->path, off,
		       "out of memory for attrs");
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

/* ------------------------------------------------------------------ */
/* Opening                                                             */

static int open_regular(struct pd_file *f, char *err, size_t errlen)
{
	const uint8_t *h = f->map;
	uint64_t hsize = pd_get64(h + 8);
	uint64_t attr_size, attrs_off, attrs_size, data_off, data_size;
	unsigned nr_feat = 0, k = 0;
	uint64_t table;

	if (hsize != PD_HEADER_SIZE && hsize != PD_HEADER_SIZE_OLD)
		return pd_fail(err, errlen, -EBADMSG, f->path, 8,
			       "header size %" PRIu64 ", expected %d (or %d "
			       "for a piped file)",
			       hsize, PD_HEADER_SIZE, PD_PIPE_HEADER_SIZE);
	if (f->size < hsize)
		return pd_fail(err, errlen, -EOVERFLOW, f->path, 0,
			       "file is %zu bytes, shorter than its %" PRIu64
			       "-byte header",
			       f->size, hsize);
	attr_size = pd_get64(h + 16);
	attrs_off = pd_get64(h + 24);
	attrs_size = pd_get64(h + 32);
	data_off = pd_get64(h + 40);
	data_size = pd_get64(h + 48);

	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size - 16 > UINT32_MAX)
		return pd_fail(err, errlen, -EBADMSG, f->path, 16,
			       "attr_size %" PRIu64 ", expected at least %d (a "
			       "%d-byte attr and its ids section)",
			       attr_size, PERF_ATTR_SIZE_VER0 + 16,
			       PERF_ATTR_SIZE_VER0);
	if (!in_file(f, attrs_off, attrs_size))
		return pd_fail(err, errlen, -EOVERFLOW, f->path, 24,
			       "attr section [%" PRIu64 ", +%" PRIu64
			       ") ends past the end of the file (%zu bytes)",
			       attrs_off, attrs_size, f->size);
	if (attrs_size % attr_size)
		return pd_fail(err, errlen, -EBADMSG, f->path, 32,
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
			return pd_fail(err, errlen, -EBADMSG, f->path, e + 4,
				       "attr %" PRIu64 " has size %u but the "
				       "header's attr_size %" PRIu64
				       " means %" PRIu64,
				       i, asz, attr_size, attr_size - 16);
		ids_off = pd_get64(f->map + e + eff);
		ids_size = pd_get64(f->map + e + eff + 8);
		if (ids_size % 8)
			return pd_fail(
				err, errlen, -EBADMSG, f->path, e + eff + 8,
				"ids section of attr %" PRIu64
				" has size %" PRIu64 ", not a multiple of 8",
				i, ids_size);
		if (!in_file(f, ids_off, ids_size))
			return pd_fail(
				err, errlen, -EOVERFLOW, f->path, e + eff,
				"ids section of attr %" PRIu64 " [%" PRIu64
				", +%" PRIu64 ") ends past the end of the file "
				"(%zu bytes)",
				i, ids_off, ids_size, f->size);
		rc = pd_add_attr(f, f->map + e, eff, f->map + ids_off,
				 ids_size / 8, err, errlen, e);
		if (rc)
			return rc;
	}
	if (pd_rebuild_index(f))
		return pd_fail(err, errlen, -ENOMEM, f->path, 24,
			       "out of memory for the id index");
	if (data_off < hsize)
		return pd_fail(err, errlen, -EBADMSG, f->path, 40,
			       "data section starts at %" PRIu64
			       ", inside the %" PRIu64 "-byte header",
			       data_off, hsize);
	if (!in_file(f, data_off, data_size))
		return pd_fail(err, errlen, -EOVERFLOW, f->path, 40,
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
		return pd_fail(err, errlen, -EOVERFLOW, f->path, table,
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
			return pd_fail(err, errlen, -EOVERFLOW, f->path, e,
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
static int prescan_piped(struct pd_file *f, char *err, size_t errlen)
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
					return pd_fail(err, errlen, -ENOMEM,
						       f->path, off,
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

int pd_open(struct pd_file **out, const char *path, char *err, size_t errlen)
{
	struct pd_file *f;
	struct stat st;
	int fd = -1, rc;
	uint64_t magic;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return pd_fail(err, errlen, -ENOMEM, path, UINT64_MAX,
			       "out of memory");
	f->path = strdup(path);
	if (!f->path) {
		rc = pd_fail(err, errlen, -ENOMEM, path, UINT64_MAX,
			     "out of memory");
		goto fail;
	}
	fd = mt_open_regular(path, &st);
	if (fd == -EINVAL) {
		rc = pd_fail(err, errlen, -EIO, path, UINT64_MAX,
			     "not a regular file (to read a pipe, save it to "
			     "a file first)");
		goto fail;
	}
	if (fd < 0) {
		rc = pd_fail(err, errlen, -EIO, path, UINT64_MAX,
			     "cannot open: %s", strerror(-fd));
		goto fail;
	}
	f->size = (size_t)st.st_size;
	if (f->size) {
		void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			rc = pd_fail(err, errlen, -EIO, path, UINT64_MAX,
				     "cannot map: %s", strerror(errno));
			goto fail;
		}
		f->map = m;
	}
	close(fd);
	fd = -1;

	if (f->size < 8) {
		rc = pd_fail(err, errlen, -EOVERFLOW, path, 0,
			     "file is %zu bytes, too short for a perf.data "
			     "header",
			     f->size);
		goto fail;
	}
	magic = pd_get64(f->map);
	if (magic != PD_MAGIC) {
		if (!memcmp(f->map, "PERFFILE", 8))
			rc = pd_fail(err, errlen, -EBADMSG, path, 0,
				     "old PERFFILE (version 1) format is not "
				     "supported");
		else if (magic == __builtin_bswap64(PD_MAGIC))
			rc = pd_fail(err, errlen, -EBADMSG, path, 0,
				     "big-endian perf.data is not supported");
		else
			rc = pd_fail(err, errlen, -EBADMSG, path, 0,
				     "not a perf.data file (no PERFILE2 "
				     "magic)");
		goto fail;
	}
	if (f->size < 16) {
		rc = pd_fail(err, errlen, -EOVERFLOW, path, 8,
			     "file is %zu bytes, the header size field is cut",
			     f->size);
		goto fail;
	}
	if (pd_get64(f->map + 8) == PD_PIPE_HEADER_SIZE) {
		f->piped = true;
		f->data_off = PD_PIPE_HEADER_SIZE;
		f->data_end = f->size;
		rc = prescan_piped(f, err, errlen);
	} else {
		rc = open_regular(f, err, errlen);
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

void pd_forget(struct pd_file *f, const void *p, size_t len)
{
	if (f->map && (const uint8_t *)p >= f->map &&
	    (const uint8_t *)p + len <= f->map + f->size)
		mt_forget(p, len);
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
