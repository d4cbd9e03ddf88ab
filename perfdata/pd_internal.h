/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the files of perfdata/: the reader (reader.c,
 * records.c, features.c) and the writer.  Nothing here is part of the
 * folder's interface (perfdata.h is).
 */
#ifndef MT_PD_INTERNAL_H
#define MT_PD_INTERNAL_H

#include "perfdata/perfdata.h"

#include <stdarg.h>
#include <string.h>

#define PD_MAGIC	      0x32454c4946524550ULL /* "PERFILE2" read little-endian */
#define PD_HEADER_SIZE	      104
#define PD_HEADER_SIZE_OLD    72 /* before adds_features existed */
#define PD_PIPE_HEADER_SIZE   16
#define PD_AUXTRACE_REC	      48 /* PERF_RECORD_AUXTRACE without its data */
#define PD_BUILDID_REC	      36 /* header, pid, 24 build-id bytes */
#define PD_NAME_ALIGN	      64 /* perf pads feature strings to this */
#define PD_MISC_BUILD_ID_SIZE (1u << 15)
/* Far above any real evlist; bounds the work a hostile file can cause. */
#define PD_MAX_ATTRS 4096

/* Fields of the sample_id_all trailer, in the order they are stored. */
#define PD_TRAILER_BITS                                                        \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |                 \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

struct pd_feat_ref {
	const uint8_t *data;
	size_t len;
	bool present;
};

struct pd_id_ent {
	uint64_t id;
	size_t idx; /* position in attrs[], to keep the first of duplicates */
	const struct pd_attr *attr;
};

struct pd_file {
	char *path;
	const uint8_t *map;
	size_t size;
	bool piped;
	uint64_t data_off, data_end;

	/* Each attr is its own allocation so that pointers survive growth. */
	struct pd_attr **attrs;
	size_t nr_attrs, cap_attrs;
	bool ids_dirty;	       /* attrs added since ids was sorted */
	bool uniform;	       /* every attr has the same trailer layout */
	struct pd_id_ent *ids; /* sorted by id */
	size_t nr_ids;
	uint64_t attr_scan_end; /* piped: HEADER_ATTRs before this are known */

	struct pd_feat_ref feat[PD_FEAT_MAX];

	/* Piped files: HEADER_BUILD_ID records found by the pre-scan. */
	const uint8_t **bid_recs;
	size_t nr_bid_recs;

	struct pd_buildid *bids;
	size_t nr_bids;
	bool bids_done;
	struct pd_auxtrace_index *aux_idx;
	size_t nr_aux_idx;
	bool aux_idx_done;
};

static inline uint16_t pd_get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t pd_get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t pd_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline void pd_put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline void pd_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void pd_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint64_t pd_align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

/* reader.c: an attr as stored (asz bytes at a) with its nr ids (maybe
 * unaligned) joins f's attrs; the id index is rebuilt when next needed. */
int pd_add_attr(struct pd_file *f, const uint8_t *a, uint32_t asz,
		const uint8_t *ids, size_t nr, char *err, size_t errlen,
		uint64_t off);
/* reader.c: the id index, sorted anew.  Returns 0 or -ENOMEM. */
int pd_rebuild_index(struct pd_file *f);

/* features.c: one build id entry (a HEADER_BUILD_ID record, or an entry
 * of the feature section) of sz bytes at p, into b. */
int pd_parse_buildid(struct pd_file *f, const uint8_t *p, size_t sz,
		     struct pd_buildid *b, char *err, size_t errlen);

/* records.c: decode the Intel PT private fields of an AUXTRACE_INFO body. */
int pd_parse_pt_info(const uint8_t *priv, size_t len, struct pd_pt_info *pt,
		     const char **why);

#endif
