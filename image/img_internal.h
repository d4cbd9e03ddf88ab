/* SPDX-License-Identifier: MIT */
/*
 * Internal state of image/: the binaries, mappings and processes the
 * capture's sideband named, the kernel code it carries, and the libipt
 * objects built from them.
 */
#ifndef MT_IMG_INTERNAL_H
#define MT_IMG_INTERNAL_H

#include <intel-pt.h>
#include <pthread.h>
#include <stdatomic.h>

#include "image/image.h"
#include "perfdata/perfdata.h"
#include "symbols/symbols.h"

/* A binary named by one or more mappings. */
struct img_dso {
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
	bool dwarf_short; /* it could not be opened for want of memory */
	/* dwarf is final: read without the lock (set last, under it) */
	_Atomic bool dwarf_done;
};

/* A [vdso] image the capture carries. */
struct img_vdso {
	uint32_t pid;
	uint64_t start, len;
	const uint8_t *bytes;
};

/* An executable mapping of a process. */
struct img_map {
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

struct img_proc {
	uint32_t pid, ppid;
	char *comm;
	struct pt_image *image;
	/* the sections of image, in the order added (img_view_image()) */
	int *isids;
	size_t nr_isids, cap_isids;
	struct sym_map *jit; /* /tmp/perf-PID.map, when there is one */
	bool jit_tried;	     /* jit read (under jit_lock) */
};

/* A section of the code, as pt_iscache_add_file() took it. */
struct img_sec {
	char *path;
	uint64_t offset, size, laddr;
	int isid;
};

struct img_bound {
	uint32_t pid;
	uint64_t time;
	bool exec; /* else code mapped where other code was */
};

struct img {
	char *path; /* the capture, for messages */
	struct img_opts opts;
	struct pd_file *pd; /* the capture (img_build()'s) */
	struct pd_pt_info pt;
	bool have_pt;

	struct img_dso *dsos;
	size_t nr_dsos, cap_dsos;
	struct img_map *maps;
	size_t nr_maps, cap_maps;
	struct img_proc *procs;
	size_t nr_procs, cap_procs;
	/* When each process's spaces begin (img_space()): its execs, and
	 * code mapped where other code was; by pid, then time */
	struct img_bound *bounds;
	size_t nr_bounds, cap_bounds;
	struct img_vdso *vdsos;
	size_t nr_vdsos, cap_vdsos;
	char **missing;
	size_t nr_missing, cap_missing;
	struct img_kernel *kernel; /* kernel.c: its code and symbols */

	/* The missing binaries' notes: the decoder and a builder thread
	 * (segments/pipe.c) both add to them. */
	pthread_mutex_t note_lock;
	pthread_mutex_t dwarf_lock; /* the dsos' dwarf */
	pthread_mutex_t jit_lock;   /* the procs' jit */
	/* img_capstone_serialized() */
	pthread_mutex_t cs_lock;

	struct pt_image_section_cache *iscache;
	/* every section added to iscache, in order: a view adds them to
	 * its own in the same order, so its isids are these */
	struct img_sec *secs;
	size_t nr_secs, cap_secs;
	struct img_reach_ent *reach; /* reach.c's answers, NULL until asked */
	/* The answers, for the threads that stitch at once. */
	pthread_mutex_t reach_lock;
	atomic_bool reach_short; /* a walk had no answer for want of memory */
};

/* image.c */
int img_add_missing(struct img *c, const char *line);
/* pt_iscache_add_file() into c's cache, remembered for the views: the
 * isid, or a negative libipt error code. */
int img_add_section(struct img *c, const char *path, uint64_t offset,
		    uint64_t size, uint64_t laddr);
/* Section isid of c's cache into p's image: 0, or a negative libipt
 * error code. */
int img_proc_add(struct img *c, struct img_proc *p, int isid);
/* The index in procs of the process whose image pid's code is read
 * from (img_image_of()), -1 when none. */
long img_proc_of(const struct img *c, uint32_t pid);
/* The process whose mappings pid uses: itself, or the parent it forked
 * from when it has none of its own. */
uint32_t img_map_owner(const struct img *c, uint32_t pid);
/* facts.c: the key of the space of key's process after key's (key when
 * there is none). */
uint32_t img_next_space(const struct img *c, uint32_t key);

/*
 * The code of the 64-bit function (a symbol with its size) that ip is in, as
 * reach.c reads it: runtime [lo, hi) in section isid, and its call sites
 * with a landing pad (ELF vaddrs: runtime = vaddr + bias), eh_known
 * false when they cannot be told.  False when there is no such function
 * or its code is not in the image.
 */
struct img_fn_code {
	uint64_t lo, hi;
	int isid;
	bool eh_known;
	const struct sym_lp *lps;
	size_t nr_lps;
	uint64_t bias;
};
bool img_fn_code(struct img *c, uint32_t pid, uint64_t ip,
		 struct img_fn_code *out);

/*
 * kernel.c: the kernel's code and symbols the capture carries (what
 * perf record --kcore keeps).  img_kernel_load() reads them (after the
 * section cache exists) and says in one line, as a missing binary, what
 * is lacking when the kernel was traced; img_kernel_image() adds the
 * code to a process's image; img_kernel_symbolize() and
 * img_kernel_range() answer for kernel addresses (false for others).
 */
struct img_kernel;
int img_kernel_load(struct img *c, char *err, size_t errlen);
int img_kernel_image(struct img *c, struct img_proc *p);
bool img_kernel_symbolize(const struct img *c, uint64_t ip,
			  struct img_sym *out);
bool img_kernel_range(const struct img *c, uint64_t ip, uint64_t *lo,
		      uint64_t *hi);
void img_kernel_free(struct img *c);

#endif
