/* SPDX-License-Identifier: MIT */
/*
 * capfile: the capture file, a perf.data file as perf record writes it
 * for Intel PT plus mt's extras, built the same way by both backends
 * and by the tools that make captures without a CPU (mt-synth,
 * mt-ptt-wrap).  Records go out in the order the calls come; the
 * extras (stacks, the vDSO, hits) and the build ids are header features
 * written at capfile_finish().
 */
#ifndef MT_CAPFILE_INTERNAL_H
#define MT_CAPFILE_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "perfdata/perfdata.h"
#include "util/util.h"

struct capfile {
	struct pd_writer *w;
	struct pd_ext_buf ext; /* the MT_EXT feature */
	/* The binaries whose build id is in, once each: mt-convert then
	 * refuses a binary rebuilt since the capture instead of decoding
	 * the wrong code. */
	char **seen;
	size_t nr_seen, cap_seen;
	char *err;
	size_t errlen;
};

/* Open path for writing.  Every function here returns 0 or a negative
 * errno value; the line naming the file goes to err at once from
 * capfile_open() and capfile_finish(), and from capfile_fail() for the
 * others. */
int capfile_open(struct capfile *c, const char *path, char *err, size_t errlen);
/* What comes first: the time conversion, then the AUXTRACE_INFO. */
int capfile_begin(struct capfile *c, const struct pd_time_conv *tc,
		  const struct pd_pt_info *pt);
/* Mapping m of pid as the MMAP2 record the kernel would have written;
 * with buildid, capfile_buildid() of its file too. */
int capfile_mapping(struct capfile *c, const struct mt_map *m, uint32_t pid,
		    const struct pd_sample_id *sid, bool buildid);
/* The build id of file path mapped by pid, if it has one and is new
 * (reading the file takes a while: a backend whose target may still be
 * running does this after what must be read while it runs). */
int capfile_buildid(struct capfile *c, uint32_t pid, const char *path);
/* The build ids of the files of the executable MMAP2 records among len
 * bytes of records as the kernel wrote them. */
int capfile_buildids_of_records(struct capfile *c, const uint8_t *rec,
				size_t len);
/* The [vdso] image of pid, which no file holds, as an extra. */
int capfile_vdso(struct capfile *c, uint32_t pid, uint64_t start, uint64_t len,
		 const uint8_t *bytes);
/* The extras, the last FINISHED_ROUND, the cpuid and (if not NULL) the
 * hostname features; the file is complete then.  On failure it is
 * removed. */
int capfile_finish(struct capfile *c, const char *cpuid, const char *hostname);
/* After a failure: the writer's error into err, the file removed. */
void capfile_fail(struct capfile *c);
/* Free what is left; a file not finished is removed. */
void capfile_free(struct capfile *c);

/*
 * One capture file, the same sequence for every backend: the events, the
 * time conversion and AUXTRACE_INFO, the sideband (threads, mappings,
 * what the kernel said), a FINISHED_ROUND, the trace, the extras, the
 * features.  Each step gets the open capfile and arg; one that fails with
 * the writer's error has it said, one that fails on its own says why in
 * err itself.
 */
struct capfile_parts {
	const char *output;
	/* The intel_pt event, then any sideband event (attr[1] or NULL). */
	const struct perf_event_attr *attr[2];
	const uint64_t *ids[2];
	size_t nr_ids[2];
	struct pd_time_conv tc;
	struct pd_pt_info pt;
	const char *cpuid, *hostname; /* hostname: NULL for none */
	int (*sideband)(struct capfile *c, void *arg);
	int (*trace)(struct capfile *c, void *arg);
	int (*extras)(struct capfile *c, void *arg);
	void *arg;
};

/* Write p to p->output, complete or not at all: 0 or a negative errno
 * value with one line in err. */
int capfile_write(const struct capfile_parts *p, char *err, size_t errlen);

#endif
