/* SPDX-License-Identifier: MIT */
/*
 * Internal state of decode/: what the capture's sideband says of its
 * threads, AUX chunks and context switches, and the program's code
 * (image/) built from the rest of it.
 */
#ifndef MT_DEC_INTERNAL_H
#define MT_DEC_INTERNAL_H

#include <intel-pt.h>
#include <pthread.h>

#include "decode/decode.h"
#include "image/image.h"
#include "model/model.h"
#include "perfdata/perfdata.h"
#include "symbols/symbols.h"

/* Snapshot trigger hits recorded in the capture. */
struct dec_hit {
	uint32_t pid, tid;
	uint64_t time, ip, mark_start;
	int64_t arg;
	const char *name;
};

struct dec_chunk { /* one AUXTRACE record */
	uint32_t idx, tid, cpu;
	uint64_t offset, size, reference;
	const uint8_t *data;
	uint64_t order; /* position in the file */
};

struct dec_switch { /* who runs on a CPU from a time on */
	uint32_t cpu;
	uint64_t time;
	uint32_t pid, tid; /* out: the thread that left; else the one in */
	bool out;	   /* from then on, no thread of ours */
};

struct dec_capture {
	struct pd_file *pd;
	char *path;
	struct dec_opts opts;

	struct pd_pt_info pt;
	bool have_pt;
	uint64_t pt_config; /* the intel_pt event's attr.config */
	struct pt_cpu cpu;
	uint8_t mtc_freq;

	struct img *img; /* the program's code, owned */
	struct dec_thread *threads;
	size_t nr_threads, cap_threads;
	char **comms; /* per thread, owned */
	struct dec_chunk *chunks;
	size_t nr_chunks, cap_chunks;
	struct dec_switch *switches;
	size_t nr_switches, cap_switches;
	struct dec_hit *hits; /* names point into the capture */
	size_t nr_hits, cap_hits;

	dec_sink_fn sink;
	void *sink_ctx;

	struct pt_image_section_cache *iscache; /* img's */
	uint64_t base;	      /* perf time that event times count from */
	uint64_t first, last; /* span of decoded events */
	struct dec_stats stats;
};

/*
 * The decoder's names for what image/ answers (image/image.h), for the
 * decoding core (stream.c, strm.h).
 */
#define dec_inl_span img_inl_span
static inline int dec_pt_error(int status, char *err, size_t errlen,
			       const char *path, const char *what)
{
	return img_pt_error(status, err, errlen, path, what);
}
static inline struct pt_image *dec_image_of(struct dec_capture *c, uint32_t pid)
{
	return img_image_of(c->img, pid);
}
static inline bool dec_range(struct dec_capture *c, uint32_t pid, uint64_t ip,
			     uint64_t *lo, uint64_t *hi,
			     struct img_inl_span *inl)
{
	return img_range(c->img, pid, ip, lo, hi, inl);
}
static inline void dec_note_use(struct dec_capture *c, uint32_t pid,
				uint64_t ip)
{
	img_note_use(c->img, pid, ip);
}
static inline void dec_addr_filter(const struct dec_capture *c, uint32_t pid,
				   struct pt_conf_addr_filter *f)
{
	img_addr_filter(c->img, pid, f);
}
static inline bool dec_is_kernel_ip(uint64_t ip)
{
	return img_is_kernel_ip(ip);
}
static inline int dec_kernel_strip(const struct dec_capture *c,
				   const uint8_t **buf, size_t len,
				   uint8_t **owned)
{
	return img_kernel_strip(c->img, buf, len, owned);
}
#define dec_call_len	       img_call_len
#define dec_direct_target      img_direct_target
#define dec_is_indirect_jump   img_is_indirect_jump
#define dec_is_syscall	       img_is_syscall
#define dec_is_far_return      img_is_far_return
#define dec_soft_interrupt_len img_soft_interrupt_len

/* session.c */
struct dec_thread *dec_thread_get(struct dec_capture *c, uint32_t pid,
				  uint32_t tid);
int dec_thread_push(struct dec_thread *t, uint64_t base, uint64_t time,
		    enum dec_kind kind, uint64_t ip, uint64_t aux);

/* stream.c */
int dec_streams(struct dec_capture *c, char *err, size_t errlen);

#endif
