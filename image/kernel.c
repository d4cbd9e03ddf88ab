/* SPDX-License-Identifier: MIT */
/*
 * Kernel code: what perf record --kcore keeps, carried in the capture's
 * extension section (the text of kallsyms and modules, and the code of
 * the kernel and its modules at their addresses).  The code goes into
 * every process's libipt image, since every process runs the same
 * kernel; kallsyms names it, as [kernel.kallsyms] or [module].
 *
 * A capture that traced the kernel but carries no code for it cannot be
 * decoded there, and libipt would stop at every system call and lose the
 * trace to the next PSB.  Its kernel stretches are taken out of the
 * packets instead (img_kernel_strip), so that the trace reads as the
 * user-only trace it contains, and the kernel's time shows as [kernel].
 */
#include "image/img_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct img_kseg {
	uint64_t start, len;
	char path[32]; /* our temporary copy, for libipt */
	int isid;
};

struct img_kernel {
	bool traced; /* the intel_pt event did not exclude the kernel */
	struct sym_kallsyms *syms;
	struct img_kseg *segs;
	size_t nr_segs, cap_segs;
	bool strip; /* traced, and no code to decode it with */
};

bool img_is_kernel_ip(uint64_t ip)
{
	/* The upper half of the canonical address space. */
	return (int64_t)ip < 0;
}

/* libipt reads sections from files: the code goes to a temporary one.
 * Returns 0, or a negative errno value with one line in err. */
static int add_seg(struct img *c, struct img_kernel *k,
		   const struct pd_ext_kcode *kc, char *err, size_t errlen)
{
	struct img_kseg *s;
	int fd, isid;
	bool ok;

	if (!kc->len)
		return 0;
	if (mt_grow((void **)&k->segs, &k->cap_segs, k->nr_segs + 1,
		    sizeof(*k->segs))) {
		snprintf(err, errlen, "%s: out of memory", c->path);
		return -ENOMEM;
	}
	s = &k->segs[k->nr_segs];
	snprintf(s->path, sizeof(s->path), "/tmp/mt-kcode.XXXXXX");
	fd = mkstemp(s->path);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen,
			 "%s: a temporary file for kernel code: %s", c->path,
			 strerror(e));
		return -e;
	}
	ok = write(fd, kc->bytes, kc->len) == (ssize_t)kc->len;
	close(fd);
	if (!ok) {
		unlink(s->path);
		snprintf(err, errlen, "%s: %s: cannot write kernel code",
			 c->path, s->path);
		return -EIO;
	}
	s->start = kc->start;
	s->len = kc->len;
	k->nr_segs++;
	isid = img_add_section(c, s->path, 0, kc->len, kc->start);
	if (isid < 0)
		return img_pt_error(isid, err, errlen, c->path, "kernel code");
	s->isid = isid;
	return 0;
}

static bool kernel_traced(const struct img *c)
{
	for (size_t i = 0; i < pd_nr_attrs(c->pd); i++) {
		const struct pd_attr *a = pd_get_attr(c->pd, i);

		if (c->have_pt && a->attr.type == c->pt.pmu_type)
			return !a->attr.exclude_kernel;
	}
	return false;
}

/* Says once what kernel code lacks, when the kernel was traced. */
static int say_missing(struct img *c, const char *why)
{
	char line[640];

	snprintf(line, sizeof(line),
		 "%s: the kernel was traced but %s: kernel time shows as "
		 "[kernel] (capture as root on a kernel with /proc/kcore)",
		 c->path, why);
	return img_add_missing(c, line);
}

int img_kernel_load(struct img *c, char *err, size_t errlen)
{
	struct img_kernel *k = calloc(1, sizeof(*k));
	const char *text = NULL;
	uint64_t text_len = 0;
	size_t cur = 0;
	uint32_t type, size;
	const uint8_t *payload;
	char why[512] = "";
	int rc;

	if (!k)
		goto nomem;
	c->kernel = k;
	k->traced = kernel_traced(c);
	while ((rc = pd_ext_next(c->pd, &cur, &type, &payload, &size, err,
				 errlen)) > 0) {
		struct pd_ext_kcode kc;

		if (type == PD_EXT_KALLSYMS) {
			if (pd_ext_parse_text(payload, size, &text, &text_len))
				goto bad;
		} else if (type == PD_EXT_KCODE) {
			if (pd_ext_parse_kcode(payload, size, &kc))
				goto bad;
			rc = add_seg(c, k, &kc, err, errlen);
			if (rc)
				return rc;
		}
	}
	if (rc < 0)
		return rc;
	if (text) {
		char what[600];

		snprintf(what, sizeof(what), "%s: kallsyms", c->path);
		rc = sym_kallsyms_parse(text, (size_t)text_len, what, &k->syms,
					why, sizeof(why));
		if (rc == -ENOMEM)
			goto nomem;
		if (rc && rc != -ENODATA) {
			snprintf(err, errlen, "%s", why);
			return rc;
		}
	}
	if (!k->traced)
		return 0;
	if (!k->nr_segs) {
		k->strip = true;
		return say_missing(c, "the capture has no kernel code");
	}
	if (!k->syms)
		return say_missing(c, text ? "its symbols are hidden (all "
					     "zero: kptr_restrict)"
					   : "the capture has no kallsyms");
	return 0;
bad:
	snprintf(err, errlen,
		 "%s: malformed kernel item in the extension "
		 "section",
		 c->path);
	return -EINVAL;
nomem:
	snprintf(err, errlen, "%s: out of memory", c->path);
	return -ENOMEM;
}

int img_kernel_image(struct img *c, struct img_proc *p)
{
	const struct img_kernel *k = c->kernel;

	for (size_t i = 0; k && i < k->nr_segs; i++) {
		int rc = img_proc_add(c, p, k->segs[i].isid);
		if (rc < 0)
			return rc;
	}
	return 0;
}

bool img_kernel_needs_strip(const struct img *c)
{
	return c->kernel && c->kernel->strip;
}

void img_kernel_free(struct img *c)
{
	struct img_kernel *k = c->kernel;

	if (!k)
		return;
	for (size_t i = 0; i < k->nr_segs; i++)
		unlink(k->segs[i].path);
	free(k->segs);
	sym_kallsyms_free(k->syms);
	free(k);
	c->kernel = NULL;
}

bool img_kernel_symbolize(const struct img *c, uint64_t ip, struct img_sym *out)
{
	const struct img_kernel *k = c->kernel;
	const struct sym *s;
	const char *dso;

	if (!img_is_kernel_ip(ip) || !k)
		return false;
	s = k->syms ? sym_kallsyms_lookup(k->syms, ip, &dso) : NULL;
	if (!s) {
		snprintf(out->buf, sizeof(out->buf), "[unknown @ %#llx (%s)]",
			 (unsigned long long)ip, SYM_KERNEL_DSO);
		out->name = out->buf;
		out->dso = SYM_KERNEL_DSO;
		out->known = out->entry_known = false;
		out->start = ip;
		out->end = ip + 1;
		return true;
	}
	out->name = s->name;
	out->dso = dso;
	out->known = out->entry_known = true;
	out->start = s->addr;
	out->end = sym_kallsyms_end(k->syms, s);
	/* kallsyms has no sizes: a function ends where its code does at
	 * the latest (the kernel's last, a module's last). */
	for (size_t i = 0; i < k->nr_segs; i++) {
		const struct img_kseg *g = &k->segs[i];

		if (ip >= g->start && ip - g->start < g->len &&
		    out->end - g->start > g->len)
			out->end = g->start + g->len;
	}
	return true;
}

bool img_kernel_range(const struct img *c, uint64_t ip, uint64_t *lo,
		      uint64_t *hi)
{
	struct img_sym s;

	if (!img_kernel_symbolize(c, ip, &s))
		return false;
	*lo = s.start;
	*hi = s.end;
	return true;
}
