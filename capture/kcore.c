/* SPDX-License-Identifier: MIT */
/*
 * The kernel's code for the decoder, as perf record --kcore copies it:
 * kallsyms says where the kernel's text is (_stext.._etext), modules
 * where each module is loaded, and kcore, an ELF core file whose PT_LOAD
 * segments are the kernel's memory at its virtual addresses, holds the
 * bytes.  Read at the end of the capture: the kernel patches its own code
 * (static keys, alternatives), and a snapshot keeps the newest trace.
 */
#include "capture/kcore_internal.h"

#include "symbols/symbols.h"
#include "util/err.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* No kernel's text or module is this big: a larger span is a bad file. */
#define KCORE_MAX_SEG	(256ull << 20)
#define KCORE_MAX_PHDRS 4096

static int file_text(const char *root, const char *name, char **text,
		     size_t *len, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	rc = mt_file_text(path, text, len);
	if (rc)
		return mt_err(why, whylen, rc, "%s: %s", path, strerror(-rc));
	return 0;
}

/* The load address and size of each module of /proc/modules' text
 * ("NAME SIZE REFS DEPS STATE ADDR ..."), to fn. */
static int each_module(const char *text,
		       int (*fn)(uint64_t addr, uint64_t size, void *arg),
		       void *arg)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[512], *f[7] = {0}, *save = NULL;
		uint64_t size, addr;
		int nf = 0, rc;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = 0;
			for (char *t = strtok_r(line, " \t", &save);
			     t && nf < 7; t = strtok_r(NULL, " \t", &save))
				f[nf++] = t;
			/* A line we cannot read costs that module only. */
			if (nf >= 6 &&
			    !mt_parse_u64(f[1], 10, UINT64_MAX, &size) &&
			    !mt_parse_u64(f[5], 16, UINT64_MAX, &addr) &&
			    addr && size) {
				rc = fn(addr, size, arg);
				if (rc)
					return rc;
			}
		}
		p += n + (nl ? 1 : 0);
	}
	return 0;
}

struct kcore_file {
	int fd;
	const char *path;
	Elf64_Phdr *ph;
	size_t nr_ph;
	struct kcore_text *k;
};

static int read_phdrs(struct kcore_file *f, char *why, size_t whylen)
{
	Elf64_Ehdr eh;
	size_t bytes;

	if (pread(f->fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_CORE ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > KCORE_MAX_PHDRS)
		return mt_err(why, whylen, -EINVAL,
			      "%s: not a 64-bit ELF core file", f->path);
	bytes = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	f->ph = malloc(bytes);
	if (!f->ph)
		return mt_err(why, whylen, -ENOMEM, "out of memory");
	if (pread(f->fd, f->ph, bytes, (off_t)eh.e_phoff) != (ssize_t)bytes)
		return mt_err(why, whylen, -EINVAL,
			      "%s: program headers cut short", f->path);
	f->nr_ph = eh.e_phnum;
	return 0;
}

/* Copy [start, start+len) out of the segment that holds it whole;
 * -ERANGE when none does. */
static int copy_range(struct kcore_file *f, uint64_t start, uint64_t len)
{
	struct kcore_text *k = f->k;

	if (!len || len > KCORE_MAX_SEG || start + len < start)
		return -ERANGE;
	for (size_t i = 0; i < f->nr_ph; i++) {
		const Elf64_Phdr *p = &f->ph[i];
		uint8_t *b;

		if (p->p_type != PT_LOAD || start < p->p_vaddr ||
		    start - p->p_vaddr > p->p_filesz ||
		    len > p->p_filesz - (start - p->p_vaddr))
			continue;
		if (mt_grow((void **)&k->segs, &k->cap_segs, k->nr_segs + 1,
			    sizeof(*k->segs)))
			return -ENOMEM;
		b = malloc(len);
		if (!b)
			return -ENOMEM;
		if (pread(f->fd, b, len,
			  (off_t)(p->p_offset + (start - p->p_vaddr))) !=
		    (ssize_t)len) {
			free(b);
			return -EIO;
		}
		k->segs[k->nr_segs++] = (struct kcore_seg){
			.start = start, .len = len, .bytes = b};
		return 0;
	}
	return -ERANGE;
}

/* A module kcore does not show (it went away) costs that module only. */
static int copy_module(uint64_t addr, uint64_t size, void *arg)
{
	int rc = copy_range(arg, addr, size);

	return rc == -ERANGE ? 0 : rc;
}

/* Where the kernel's text is, from the symbols. */
static int text_span(struct kcore_text *k, const char *root, char *why,
		     size_t whylen)
{
	struct sym_kallsyms *ks;
	char what[PATH_MAX];
	int rc;

	snprintf(what, sizeof(what), "%s/kallsyms", root);
	rc = sym_kallsyms_parse(k->kallsyms, k->kallsyms_len, what, &ks, why,
				whylen);
	if (rc)
		return rc;
	rc = sym_kallsyms_text(ks, &k->text_start, &k->text_end);
	sym_kallsyms_free(ks);
	if (rc)
		return mt_err(why, whylen, -EINVAL,
			      "%s: no _stext.._etext: where the kernel's "
			      "code is cannot be told",
			      what);
	return 0;
}

int kcore_read(const char *root, struct kcore_text *k, char *why, size_t whylen)
{
	struct kcore_file f = {.fd = -1, .k = k};
	char path[PATH_MAX];
	int rc;

	memset(k, 0, sizeof(*k));
	rc = file_text(root, "kallsyms", &k->kallsyms, &k->kallsyms_len, why,
		       whylen);
	if (!rc)
		rc = text_span(k, root, why, whylen);
	if (rc)
		goto fail;
	/* Without modules, the kernel's own code still decodes. */
	if (file_text(root, "modules", &k->modules, &k->modules_len, NULL, 0)) {
		k->modules = NULL;
		k->modules_len = 0;
	}
	snprintf(path, sizeof(path), "%s/kcore", root);
	f.path = path;
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f.fd < 0) {
		rc = mt_err(why, whylen, -errno, "%s: %s%s", path,
			    strerror(errno),
			    errno == EACCES ? " (it needs root)" : "");
		goto fail;
	}
	rc = read_phdrs(&f, why, whylen);
	if (rc)
		goto fail;
	rc = copy_range(&f, k->text_start, k->text_end - k->text_start);
	if (rc == -ERANGE)
		rc = mt_err(why, whylen, -EINVAL,
			    "%s: no segment holds the kernel's text "
			    "(%#llx..%#llx)",
			    path, (unsigned long long)k->text_start,
			    (unsigned long long)k->text_end);
	else if (rc)
		rc = mt_err(why, whylen, rc, "%s: %s", path, strerror(-rc));
	if (!rc && k->modules) {
		rc = each_module(k->modules, copy_module, &f);
		if (rc)
			rc = mt_err(why, whylen, rc, "%s: %s", path,
				    strerror(-rc));
	}
	if (rc)
		goto fail;
	close(f.fd);
	free(f.ph);
	return 0;
fail:
	if (f.fd >= 0)
		close(f.fd);
	free(f.ph);
	kcore_free(k);
	return rc;
}

void kcore_free(struct kcore_text *k)
{
	for (size_t i = 0; i < k->nr_segs; i++)
		free(k->segs[i].bytes);
	free(k->segs);
	free(k->kallsyms);
	free(k->modules);
	memset(k, 0, sizeof(*k));
}

int kcore_add(struct capfile *c, const struct kcore_text *k,
	      const struct pd_sample_id *sid)
{
	struct pd_mmap m = {.pid = UINT32_MAX,
			    .tid = 0,
			    .start = k->text_start,
			    .len = k->text_end - k->text_start,
			    .pgoff = k->text_start,
			    .filename = SYM_KERNEL_DSO "_text"};
	int rc;

	rc = pd_ext_add_text(&c->ext, PD_EXT_KALLSYMS, k->kallsyms,
			     k->kallsyms_len);
	if (!rc && k->modules)
		rc = pd_ext_add_text(&c->ext, PD_EXT_MODULES, k->modules,
				     k->modules_len);
	for (size_t i = 0; i < k->nr_segs && !rc; i++) {
		struct pd_ext_kcode kc = {.start = k->segs[i].start,
					  .len = k->segs[i].len,
					  .bytes = k->segs[i].bytes};

		rc = pd_ext_add_kcode(&c->ext, &kc);
	}
	if (!rc)
		rc = pd_write_mmap2(c->w, &m, sid);
	return rc;
}
