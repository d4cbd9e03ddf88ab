/* SPDX-License-Identifier: MIT */
/*
 * perf.data feature sections (after the data, or HEADER_FEATURE records
 * of a piped file): build ids, the AUXTRACE index, strings.
 */
#include "perfdata/pd_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t at(const struct pd_file *f, const uint8_t *p)
{
	return (uint64_t)(p - f->map);
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

int pd_parse_buildid(struct pd_file *f, const uint8_t *p, size_t sz,
		     struct pd_buildid *b, char *err, size_t errlen)
{
	uint64_t off = at(f, p);

	if (sz < PD_BUILDID_REC + 1 ||
	    !memchr(p + PD_BUILDID_REC, 0, sz - PD_BUILDID_REC))
		return pd_fail(err, errlen, -EBADMSG, f->path, off,
			       "build id entry of %zu bytes has no "
			       "NUL-terminated file name",
			       sz);
	memset(b, 0, sizeof(*b));
	b->misc = pd_get16(p + 4);
	b->pid = pd_get32(p + 8);
	memcpy(b->id, p + 12, sizeof(b->id));
	b->size = (b->misc & PD_MISC_BUILD_ID_SIZE) ? p[12 + 20] : 20;
	if (b->size > sizeof(b->id))
		return pd_fail(err, errlen, -EBADMSG, f->path, off + 32,
			       "build id size %u, at most 20", b->size);
	b->filename = (const char *)p + PD_BUILDID_REC;
	return 0;
}

static int add_bid(struct pd_file *f, size_t *cap, const uint8_t *p, size_t sz,
		   char *err, size_t errlen)
{
	int rc;

	if (f->nr_bids == *cap) {
		size_t nc = *cap ? 2 * *cap : 32;
		struct pd_buildid *n = realloc(f->bids, nc * sizeof(*n));

		if (!n)
			return pd_fail(err, errlen, -ENOMEM, f->path, at(f, p),
				       "out of memory for build ids");
		f->bids = n;
		*cap = nc;
	}
	rc = pd_parse_buildid(f, p, sz, &f->bids[f->nr_bids], err, errlen);
	if (rc)
		return rc;
	f->nr_bids++;
	return 0;
}

int pd_buildids(struct pd_file *f, const struct pd_buildid **out, size_t *n,
		char *err, size_t errlen)
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
				     pd_get16(f->bid_recs[i] + 6), err, errlen);
	} else {
		d = pd_feature(f, PD_FEAT_BUILD_ID, &len);
		while (d && pos < len && !rc) {
			uint16_t sz;

			if (len - pos < 8) {
				rc = pd_fail(err, errlen, -EBADMSG, f->path,
					     at(f, d + pos),
					     "build id entry header cut: %zu "
					     "bytes left in the section",
					     len - pos);
				break;
			}
			sz = pd_get16(d + pos + 6);
			if (sz < 8 || sz > len - pos) {
				rc = pd_fail(err, errlen, -EBADMSG, f->path,
					     at(f, d + pos),
					     "build id entry of %u bytes, %zu "
					     "bytes left in the section",
					     sz, len - pos);
				break;
			}
			rc = add_bid(f, &cap, d + pos, sz, err, errlen);
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
		      size_t *n, char *err, size_t errlen)
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
			return pd_fail(err, errlen, -EBADMSG, f->path, at(f, d),
				       "AUXTRACE index section of %zu bytes "
				       "has no entry count",
				       len);
		nr = pd_get64(d);
		if (nr > (len - 8) / 16)
			return pd_fail(err, errlen, -EBADMSG, f->path, at(f, d),
				       "AUXTRACE index claims %" PRIu64
				       " entries, its %zu bytes hold %zu",
				       nr, len, (len - 8) / 16);
		if (nr) {
			f->aux_idx = calloc(nr, sizeof(*f->aux_idx));
			if (!f->aux_idx)
				return pd_fail(err, errlen, -ENOMEM, f->path,
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
