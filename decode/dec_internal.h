/* SPDX-License-Identifier: MIT */
/*
 * Internal state of decode/: what the capture's sideband says (threads,
 * processes, mappings, binaries, AUX chunks, context switches) and the
 * libipt objects built from it.
 */
#ifndef MT_DEC_INTERNAL_H
#define MT_DEC_INTERNAL_H

#include <intel-pt.h>
#include <pthread.h>

#include "decode/decode.h"
#include "perfdata/perfdata.h"
#include "symbols/symbols.h"

/* A binary named by one or more mappings. */
struct dec_dso {
	char *path;	     /* as recorded */
	char *found;	     /* the file we read, NULL when missing */
	struct sym_file *sf; /* NULL when missing */
	uint8_t build_id[20];
	uint8_t build_id_len;
	bool is_vdso;
	char *missing; /* why it is missing, said once when used */
	bool tmp;      /* found is our temporary copy: unlink it */
	/* Its DWARF (source positions, inlined calls), opened when first
	 * asked for, by a decoding thread or the one that names addresses
	 * (under dwarf_lock); NULL when it has none. */
	struct sym_dwarf *dwarf;
	bool dwarf_tried;
};

/* A [vdso] image the capture carries. */
struct dec_vdso {
	uint32_t pid;
	uint64_t start, len;
	const uint8_t *bytes;
};

/* An executable mapping of a process. */
struct dec_map {
	uint32_t pid;
	uint64_t start, end, pgoff;
	uint32_t dso; /* index in dsos */
	int64_t bias; /* runtime = ELF vaddr + bias */
	bool have_bias;
	/* its first executable part in the section cache (runtime
	 * [code_lo, code_hi)); isid 0 when none was added */
	int isid;
	uint64_t code_lo, code_hi;
};

struct dec_proc {
	uint32_t pid, ppid;
	char *comm;
	struct pt_image *image;
	struct sym_map *jit; /* /tmp/perf-PID.map, when there is one */
	bool jit_tried;	     /* jit read (under jit_lock) */
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

	struct dec_dso *dsos;
	size_t nr_dsos, cap_dsos;
	struct dec_map *maps;
	size_t nr_maps, cap_maps;
	struct dec_proc *procs;
	size_t nr_procs, cap_procs;
	struct dec_thread *threads;
	size_t nr_threads, cap_threads;
	char **comms; /* per thread, owned */
	struct dec_chunk *chunks;
	size_t nr_chunks, cap_chunks;
	struct dec_switch *switches;
	size_t nr_switches, cap_switches;
	char **missing;
	size_t nr_missing, cap_missing;
	struct dec_hit *hits; /* names point into the capture */
	size_t nr_hits, cap_hits;
	struct dec_vdso *vdsos;
	size_t nr_vdsos, cap_vdsos;
	struct dec_kernel *kernel; /* kernel.c: its code and symbols */

	dec_sink_fn sink;
	void *sink_ctx;
	/* The missing binaries' notes: the decoder and a builder thread
	 * (segments/pipe.c) both add to them. */
	pthread_mutex_t note_lock;
	pthread_mutex_t dwarf_lock; /* the dsos' dwarf */
	pthread_mutex_t jit_lock;   /* the procs' jit */
	/* dec_capstone_serialized(): capstone, used by the decoding
	 * threads (inline.c), is used one at a time. */
	pthread_mutex_t cs_lock;

	struct pt_image_section_cache *iscache;
	struct dec_reach_ent *reach; /* reach.c's answers, NULL until asked */
	uint64_t base;		     /* perf time that event times count from */
	uint64_t first, last;	     /* span of decoded events */
	struct dec_stats stats;
};

/*
 * pterr.c: a libipt status (a negative pt_error_code) as our errno value,
 * returned, with "PATH: libipt WHAT: libipt's words" in err (which may
 * be NULL).  Every libipt failure goes through it, and dec_error_str()
 * takes its words from the same place.
 */
int dec_pt_error(int status, char *err, size_t errlen, const char *path,
		 const char *what);
/* pterr.c: a warning, printf-style, to the opts' warn callback. */
void dec_warn(const struct dec_capture *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* image.c */
int dec_image_build(struct dec_capture *c, char *err, size_t errlen);
struct pt_image *dec_image_of(struct dec_capture *c, uint32_t pid);
/*
 * The inlined calls in a function's code: the ranges of its unit, the
 * indexes [from, to) of those that fall in the function, and the bias
 * (runtime = ELF vaddr + bias); tab NULL when there are none (or
 * --no-inline).
 */
struct dec_inl_span {
	const struct sym_inline_range *tab; /* the unit's ranges */
	size_t from, to;
	uint64_t bias;
};
/* The function range around ip (runtime), for telling jumps inside a
 * function from jumps out of it, and the calls inlined in it.  Returns
 * false when ip is unmapped. */
bool dec_range(struct dec_capture *c, uint32_t pid, uint64_t ip, uint64_t *lo,
	       uint64_t *hi, struct dec_inl_span *inl);
int dec_add_missing(struct dec_capture *c, const char *line);
/* The process whose mappings pid uses: itself, or the parent it forked
 * from when it has none of its own. */
uint32_t dec_map_owner(const struct dec_capture *c, uint32_t pid);

/*
 * The code of the 64-bit function (a symbol with its size) that ip is in, as
 * reach.c reads it: runtime [lo, hi) in section isid, and its call sites
 * with a landing pad (ELF vaddrs: runtime = vaddr + bias), eh_known
 * false when they cannot be told.  False when there is no such function
 * or its code is not in the image.
 */
struct dec_fn_code {
	uint64_t lo, hi;
	int isid;
	bool eh_known;
	const struct sym_lp *lps;
	size_t nr_lps;
	uint64_t bias;
};
bool dec_fn_code(struct dec_capture *c, uint32_t pid, uint64_t ip,
		 struct dec_fn_code *out);

/* inline.c: capstone 4.0's first use of a table races between threads:
 * start true takes the turn, false gives it back. */
void dec_capstone_serialized(struct dec_capture *c, bool start);

/* filter.c: the capture's address filter for pid's mappings (all ranges
 * off when there is none). */
void dec_addr_filter(const struct dec_capture *c, uint32_t pid,
		     struct pt_conf_addr_filter *f);
/* Code at ip is being used: report its binary if that is missing. */
void dec_note_use(struct dec_capture *c, uint32_t pid, uint64_t ip);

/*
 * kernel.c: the kernel's code and symbols the capture carries (what
 * perf record --kcore keeps).  dec_kernel_load() reads them (after the
 * section cache exists) and says in one line, as a missing binary, what
 * is lacking when the kernel was traced; dec_kernel_image() adds the
 * code to a process's image; dec_kernel_symbolize() and
 * dec_kernel_range() answer for kernel addresses (false for others).
 */
struct dec_kernel;
bool dec_is_kernel_ip(uint64_t ip);
int dec_kernel_load(struct dec_capture *c, char *err, size_t errlen);
int dec_kernel_image(struct dec_capture *c, struct pt_image *img);
bool dec_kernel_symbolize(const struct dec_capture *c, uint64_t ip,
			  struct dec_sym *out);
bool dec_kernel_range(const struct dec_capture *c, uint64_t ip, uint64_t *lo,
		      uint64_t *hi);
/* The kernel was traced and the capture has no code for it. */
bool dec_kernel_needs_strip(const struct dec_capture *c);
void dec_kernel_free(struct dec_capture *c);
/*
 * kstrip.c: when dec_kernel_needs_strip(), *buf (len bytes of trace)
 * replaced by a copy (*owned, for the caller to free) with the kernel's
 * stretches taken out, as user-only tracing would have written it.
 * Returns 0 or -ENOMEM.
 */
int dec_kernel_strip(const struct dec_capture *c, const uint8_t **buf,
		     size_t len, uint8_t **owned);

/* session.c */
struct dec_proc *dec_proc_get(struct dec_capture *c, uint32_t pid);
struct dec_thread *dec_thread_get(struct dec_capture *c, uint32_t pid,
				  uint32_t tid);
int dec_thread_push(struct dec_thread *t, uint64_t base, uint64_t time,
		    enum dec_kind kind, uint64_t ip, uint64_t aux);

#endif
