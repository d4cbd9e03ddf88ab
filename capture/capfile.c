/* SPDX-License-Identifier: MIT */
/*
 * The capture file: what both backends (and the tools that make
 * captures without a CPU) write around the trace itself.  Whatever a
 * new item needs in the file is written here once.
 */
#include "capture/capfile_internal.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct pd_sample_id capfile_sample_id(uint32_t pid, uint32_t tid, uint64_t time,
				      uint64_t id)
{
	return (struct pd_sample_id){.pid = pid,
				     .tid = tid,
				     .time = time,
				     .id = id,
				     .cpu = 0,
				     .have_tid = true,
				     .have_time = true,
				     .have_id = true,
				     .have_cpu = true};
}

void capfile_pt_attr(struct perf_event_attr *attr, uint32_t type,
		     uint64_t config)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = type;
	attr->size = sizeof(*attr);
	attr->config = config;
	attr->sample_period = 1;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			    PERF_SAMPLE_IDENTIFIER;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
	attr->mmap = attr->comm = attr->task = attr->mmap2 = 1;
	attr->comm_exec = 1;
	attr->sample_id_all = 1;
}

void capfile_pt_format(struct pd_pt_info *pt)
{
	pt->tsc_bit = 1ull << 10;
	pt->noretcomp_bit = 1ull << 11;
	pt->have_mtc_group = true;
	pt->mtc_bit = 1ull << 9;
	pt->mtc_freq_bits = 0xfull << 14;
	pt->cyc_bit = 1ull << 1;
}

int capfile_open(struct capfile *c, const char *path, char *err, size_t errlen)
{
	*c = (struct capfile){.err = err, .errlen = errlen};
	return pd_writer_open(&c->w, path, PD_WRITE_FILE, err, errlen);
}

int capfile_begin(struct capfile *c, const struct pd_time_conv *tc,
		  const struct pd_pt_info *pt)
{
	int rc = pd_write_time_conv(c->w, tc);

	return rc ? rc : pd_write_auxtrace_info(c->w, pt, PD_PT_NR_FIXED, true);
}

int capfile_buildid(struct capfile *c, uint32_t pid, const char *path)
{
	struct pd_buildid b = {.pid = pid, .misc = PERF_RECORD_MISC_USER};
	struct sym_file *sf;
	const uint8_t *id;
	char err[256];
	size_t n;
	int rc = 0;

	if (path[0] != '/')
		return 0;
	for (size_t i = 0; i < c->nr_seen; i++)
		if (!strcmp(c->seen[i], path))
			return 0;
	if (mt_grow((void **)&c->seen, &c->cap_seen, c->nr_seen + 1,
		    sizeof(*c->seen)) ||
	    !(c->seen[c->nr_seen] = strdup(path)))
		return -ENOMEM;
	c->nr_seen++;
	/* A file that cannot be read now is simply not vouched for. */
	if (sym_file_open(path, NULL, &sf, err, sizeof(err)))
		return 0;
	id = sym_file_build_id(sf, &n);
	if (id && n && n <= sizeof(b.id)) {
		memcpy(b.id, id, n);
		b.size = (uint8_t)n;
		b.filename = path;
		rc = pd_writer_add_buildid(c->w, &b);
	}
	sym_file_free(sf);
	return rc;
}

int capfile_mapping(struct capfile *c, const struct mt_map *m, uint32_t pid,
		    const struct pd_sample_id *sid, bool buildid)
{
	struct pd_mmap r = {
		.pid = pid,
		.tid = pid,
		.start = m->lo,
		.len = m->hi - m->lo,
		.pgoff = m->pgoff,
		.is_mmap2 = true,
		.maj = m->maj,
		.min = m->min,
		.ino = m->ino,
		.prot = (uint32_t)m->prot,
		.flags = m->shared ? MAP_SHARED : MAP_PRIVATE,
		.filename = m->path[0] ? m->path : "//anon",
	};
	int rc = pd_write_mmap2(c->w, &r, sid);

	return !rc && buildid ? capfile_buildid(c, pid, m->path) : rc;
}

/* PERF_RECORD_MMAP2: the header, pid, tid, addr, len, pgoff, 24 bytes of
 * device or build id, prot, flags, then the file name. */
#define MMAP2_PROT 64
#define MMAP2_NAME 72

int capfile_buildids_of_records(struct capfile *c, const uint8_t *rec,
				size_t len)
{
	for (size_t off = 0; off + sizeof(struct perf_event_header) <= len;) {
		struct perf_event_header eh;
		uint32_t pid, prot;
		char path[4096];
		size_t max;

		memcpy(&eh, rec + off, sizeof(eh));
		if (eh.size < sizeof(eh) || eh.size > len - off)
			break;
		if (eh.type == PERF_RECORD_MMAP2 && eh.size > MMAP2_NAME) {
			memcpy(&pid, rec + off + 8, 4);
			memcpy(&prot, rec + off + MMAP2_PROT, 4);
			max = eh.size - MMAP2_NAME;
			if (max >= sizeof(path))
				max = sizeof(path) - 1;
			memcpy(path, rec + off + MMAP2_NAME, max);
			path[max] = 0;
			if (prot & PROT_EXEC) {
				int rc = capfile_buildid(c, pid, path);

				if (rc)
					return rc;
			}
		}
		off += eh.size;
	}
	return 0;
}

int capfile_vdso(struct capfile *c, uint32_t pid, uint64_t start, uint64_t len,
		 const uint8_t *bytes)
{
	struct pd_ext_vdso v = {
		.pid = pid, .start = start, .len = len, .bytes = bytes};

	return bytes ? pd_ext_add_vdso(&c->ext, &v) : 0;
}

int capfile_finish(struct capfile *c, const char *cpuid, const char *hostname)
{
	struct pd_writer *w = c->w;
	char line[128];
	int rc = 0;

	if (c->ext.len)
		rc = pd_writer_set_feature(w, PD_FEAT_MT_EXT, c->ext.data,
					   c->ext.len);
	if (!rc)
		rc = pd_write_finished_round(w);
	if (!rc)
		rc = pd_writer_set_feature_string(w, PD_FEAT_CPUID, cpuid);
	if (!rc && hostname)
		rc = pd_writer_set_feature_string(w, PD_FEAT_HOSTNAME,
						  hostname);
	/* perf keeps its own version here; ours says what made the
	 * capture (mt-convert --info shows it, perf report -D too). */
	if (!rc)
		rc = pd_writer_set_feature_string(
			w, PD_FEAT_VERSION,
			mt_version_line("mt-capture", line, sizeof(line)));
	if (rc) {
		capfile_fail(c);
		return rc;
	}
	c->w = NULL;
	return pd_writer_finish(w, c->err, c->errlen);
}

void capfile_fail(struct capfile *c)
{
	if (!c->w)
		return;
	pd_writer_error(c->w, c->err, c->errlen);
	pd_writer_abort(c->w);
	c->w = NULL;
}

void capfile_free(struct capfile *c)
{
	pd_writer_abort(c->w);
	c->w = NULL;
	pd_ext_buf_free(&c->ext);
	for (size_t i = 0; i < c->nr_seen; i++)
		free(c->seen[i]);
	free(c->seen);
	c->seen = NULL;
	c->nr_seen = c->cap_seen = 0;
}

int capfile_write(const struct capfile_parts *p, char *err, size_t errlen)
{
	struct capfile c;
	int rc;

	rc = capfile_open(&c, p->output, err, errlen);
	if (rc)
		return rc;
	for (int k = 0; k < 2 && !rc; k++)
		if (p->attr[k])
			rc = pd_writer_add_attr(c.w, p->attr[k], p->ids[k],
						p->nr_ids[k]);
	if (!rc)
		rc = capfile_begin(&c, &p->tc, &p->pt);
	if (!rc && p->sideband)
		rc = p->sideband(&c, p->arg);
	if (!rc)
		rc = pd_write_finished_round(c.w);
	if (!rc && p->trace)
		rc = p->trace(&c, p->arg);
	if (!rc && p->extras)
		rc = p->extras(&c, p->arg);
	if (!rc) {
		rc = capfile_finish(&c, p->cpuid, p->hostname);
	} else if (pd_writer_error(c.w, NULL, 0)) {
		capfile_fail(&c);
	} else if (rc == -ENOMEM) {
		mt_err(err, errlen, rc, "%s: out of memory", p->output);
	}
	/* else the step said why */
	capfile_free(&c);
	return rc;
}
