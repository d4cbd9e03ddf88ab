/* SPDX-License-Identifier: MIT */
/*
 * kcore: the kernel's code as perf record --kcore keeps it, read from
 * procfs at the end of a capture that traced the kernel: the text of
 * kallsyms and modules, and the kernel's and each module's code from
 * kcore, at the addresses it runs at.
 */
#ifndef MT_KCORE_INTERNAL_H
#define MT_KCORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capfile_internal.h"

struct kcore_seg {
	uint64_t start, len;
	uint8_t *bytes;
};

struct kcore_text {
	char *kallsyms, *modules; /* as read; modules NULL when absent */
	size_t kallsyms_len, modules_len;
	uint64_t text_start, text_end; /* _stext.._etext */
	struct kcore_seg *segs;	       /* the kernel's first, then modules' */
	size_t nr_segs, cap_segs;
};

/*
 * Read kallsyms, modules and kcore under proc_root ("/proc", or a fake
 * tree for tests).  Returns 0, or with one line in why that says what is
 * missing: -ENODATA when kallsyms hides the addresses (all zero), -ENOENT
 * when a file is absent (no kcore: a kernel built without it), -EACCES
 * without the permission (kcore needs root), -EINVAL for a file that is
 * not what it should be, -ENOMEM.  k is empty after a failure.
 */
int kcore_read(const char *proc_root, struct kcore_text *k, char *why,
	       size_t whylen);
void kcore_free(struct kcore_text *k);

/* k into the capture: the MMAP of [kernel.kallsyms] that perf writes for
 * the kernel's text (with sid, which must name an event of the file),
 * and the extras perf has no record for. */
int kcore_add(struct capfile *c, const struct kcore_text *k,
	      const struct pd_sample_id *sid);

#endif
