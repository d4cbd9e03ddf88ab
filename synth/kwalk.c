/* SPDX-License-Identifier: MIT */
/*
 * A small kernel for --kernel: a few functions linked where x86-64 Linux
 * puts its text (0xffffffff81000000), entered by the walk's system calls
 * as traced kernel code is: the SYSCALL's TIP goes to the entry, the
 * kernel's calls and returns are traced like the program's (they share
 * the compressed-return stack, and leave it as they found it), and
 * SYSRET's TIP comes back to the instruction after the SYSCALL.  The
 * truth then has the kernel's frames under the frame that made the call
 * instead of a [syscall] row.
 *
 * The capture carries what perf record --kcore would have: the kernel's
 * code at its address, and kallsyms naming it (_stext and _etext
 * around it, as the kernel's own).
 */
#include "synth/walk.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KPROG_BASE  0xffffffff81000000ull
#define KPROG_ALIGN 64 /* each function at KPROG_BASE + 64 * index */

enum kshape {
	KS_ENTRY,    /* call do_syscall_64; sysretq */
	KS_DISPATCH, /* add; call *%rax (to a handler); ret */
	KS_GUARDED,  /* add; {disp32} jne 1f; call callee; 1: ret */
	KS_LOOP,     /* add; 1: add; {disp32} jne 1b; ret */
};

struct kfunc {
	const char *name;
	uint8_t shape;
	int8_t callee; /* KS_GUARDED: the function it calls */
};

static const struct kfunc kfuncs[] = {
	{"entry_SYSCALL_64", KS_ENTRY, -1}, {"do_syscall_64", KS_DISPATCH, -1},
	{"__x64_sys_read", KS_GUARDED, 5},  {"__x64_sys_write", KS_GUARDED, 6},
	{"__x64_sys_getpid", KS_LOOP, -1},  {"ksys_read", KS_GUARDED, 7},
	{"ksys_write", KS_GUARDED, 7},	    {"copy_user_generic", KS_LOOP, -1},
};
#define NR_KFUNCS     (sizeof(kfuncs) / sizeof(kfuncs[0]))
#define FIRST_HANDLER 2
#define NR_HANDLERS   3

struct kprog {
	char path[4200];
	uint8_t *text; /* the code of the linked kernel, at KPROG_BASE */
	uint64_t text_len;
	char *kallsyms;
	size_t kallsyms_len;
};

static uint64_t kaddr(unsigned i)
{
	return KPROG_BASE + (uint64_t)KPROG_ALIGN * i;
}

static int write_asm(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "\t.text\n");
	for (unsigned i = 0; i < NR_KFUNCS; i++) {
		const struct kfunc *k = &kfuncs[i];

		fprintf(f,
			"\t.p2align 6\n\t.globl %s\n\t.type "
			"%s,@function\n%s:\n",
			k->name, k->name, k->name);
		switch (k->shape) {
		case KS_ENTRY:
			fprintf(f, "\tcall do_syscall_64\n\tsysretq\n");
			break;
		case KS_DISPATCH:
			fprintf(f, "\tadd $1,%%rax\n\tcall *%%rax\n\tret\n");
			break;
		case KS_GUARDED:
			fprintf(f,
				"\tadd $1,%%rax\n\t{disp32} jne 1f\n\tcall "
				"%s\n1:\tret\n",
				kfuncs[k->callee].name);
			break;
		default:
			fprintf(f,
				"\tadd $1,%%rax\n1:\tadd $1,%%rax\n\t{disp32} "
				"jne 1b\n\tret\n");
			break;
		}
		fprintf(f, "\t.size %s, .-%s\n", k->name, k->name);
	}
	return fclose(f) ? -1 : 0;
}

/* The linked kernel's code, and each function where we put it. */
static int read_back(struct kprog *k, char *err, size_t errlen)
{
	int fd = open(k->path, O_RDONLY | O_CLOEXEC), rc = -1;
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	size_t nph, found = 0;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_getphdrnum(e, &nph))
		goto bad;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || ph.p_vaddr != KPROG_BASE)
			continue;
		k->text = malloc(ph.p_filesz ? ph.p_filesz : 1);
		if (!k->text ||
		    pread(fd, k->text, ph.p_filesz, (off_t)ph.p_offset) !=
			    (ssize_t)ph.p_filesz)
			goto bad;
		k->text_len = ph.p_filesz;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !(nm = elf_strptr(e, sh.sh_link, s.st_name)))
				continue;
			for (unsigned j = 0; j < NR_KFUNCS; j++)
				if (!strcmp(nm, kfuncs[j].name) &&
				    s.st_value == kaddr(j))
					found++;
		}
	}
	if (found != NR_KFUNCS || !k->text_len) {
		snprintf(err, errlen,
			 "%s: found %zu of %zu kernel functions where they "
			 "belong",
			 k->path, found, (size_t)NR_KFUNCS);
		goto out;
	}
	rc = 0;
	goto out;
bad:
	snprintf(err, errlen, "%s: cannot read the linked kernel", k->path);
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* kallsyms as the kernel prints it: "ADDR TYPE NAME", by address. */
static int make_kallsyms(struct kprog *k)
{
	size_t cap = 64 * (NR_KFUNCS + 2), len = 0;
	char *t = malloc(cap);

	if (!t)
		return -1;
	len += (size_t)snprintf(t + len, cap - len, "%016llx T _stext\n",
				(unsigned long long)KPROG_BASE);
	for (unsigned i = 0; i < NR_KFUNCS; i++)
		len += (size_t)snprintf(t + len, cap - len, "%016llx %c %s\n",
					(unsigned long long)kaddr(i),
					i < 2 ? 'T' : 't', kfuncs[i].name);
	len += (size_t)snprintf(t + len, cap - len, "%016llx T _etext\n",
				(unsigned long long)(KPROG_BASE + k->text_len));
	k->kallsyms = t;
	k->kallsyms_len = len;
	return 0;
}

int kprog_build(struct kprog **out, const char *dir, const char *cc, char *err,
		size_t errlen)
{
	struct kprog *k = calloc(1, sizeof(*k));
	char src[4200], abs[4096], base[32];

	*out = NULL;
	if (!k) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!realpath(dir, abs)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	snprintf(src, sizeof(src), "%s/vmlinux.s", abs);
	snprintf(k->path, sizeof(k->path), "%s/vmlinux", abs);
	snprintf(base, sizeof(base), "%#llx", (unsigned long long)KPROG_BASE);
	if (write_asm(src)) {
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
		goto fail;
	}
	if (program_cc(cc, src, k->path, kfuncs[0].name, base, err, errlen) ||
	    read_back(k, err, errlen))
		goto fail;
	if (make_kallsyms(k)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	*out = k;
	return 0;
fail:
	kprog_free(k);
	return -1;
}

void kprog_free(struct kprog *k)
{
	if (!k)
		return;
	free(k->text);
	free(k->kallsyms);
	free(k);
}

const char *kprog_func_name(uint32_t func)
{
	uint32_t i = func - TRUTH_KERNEL_FUNC;

	return i < NR_KFUNCS ? kfuncs[i].name : "[kernel?]";
}

int kprog_add_ext(const struct kprog *k, struct pd_ext_buf *ext)
{
	struct pd_ext_kcode kc = {
		.start = KPROG_BASE, .len = k->text_len, .bytes = k->text};

	if (pd_ext_add_text(ext, PD_EXT_KALLSYMS, k->kallsyms, k->kallsyms_len))
		return -ENOMEM;
	return pd_ext_add_kcode(ext, &kc);
}

int kprog_write_mmap(const struct kprog *k, struct pd_writer *w,
		     const struct pd_sample_id *sid)
{
	struct pd_mmap m = {.pid = UINT32_MAX,
			    .tid = 0,
			    .start = KPROG_BASE,
			    .len = k->text_len,
			    .pgoff = KPROG_BASE,
			    .filename = "[kernel.kallsyms]_text"};

	return pd_write_mmap2(w, &m, sid);
}

/* ------------------------------------------------------------------ */
/* The walk through it                                                 */

static int row(struct kwalk *kw, unsigned f, uint32_t depth, size_t *idx)
{
	*idx = SIZE_MAX;
	if (!kw->rows)
		return 0;
	return walk_add_row(kw->t, TRUTH_KERNEL_FUNC + f, depth, kw->tsc, 0,
			    idx);
}

static void row_end(struct kwalk *kw, size_t idx)
{
	if (idx != SIZE_MAX)
		kw->t->rows[idx].end = kw->tsc;
}

/* One instruction's time: 3..8 ticks, as the program's. */
static void tick(struct kwalk *kw)
{
	kw->tsc += 3 + rng_below(kw->rng, 6);
}

/* A PSB+ may follow a branch, at its destination, as the period says. */
static int psb(struct kwalk *kw, uint64_t ip)
{
	return kw->emit && ptenc_maybe_psb(kw->g, kw->tsc, ip) < 0 ? -1 : 0;
}

/*
 * Run function f, entered at kw->tsc, up to and including its return to
 * ret_ip; its callee's row is at depth + 1.  Returns 0, -1 when encoding
 * failed, -2 when out of memory.
 */
static int run_func(struct kwalk *kw, unsigned f, uint32_t depth,
		    uint64_t ret_ip)
{
	const struct kfunc *k = &kfuncs[f];
	uint64_t at = kaddr(f);

	if (k->shape == KS_GUARDED) {
		bool skip = rng_chance(kw->rng, 1, 3);

		tick(kw); /* add */
		tick(kw); /* jne, taken to skip the call */
		if (kw->emit && ptenc_cond(kw->g, kw->tsc, skip))
			return -1;
		if (psb(kw, skip ? at + 15 : at + 10))
			return -1;
		if (!skip) {
			unsigned callee = (unsigned)k->callee;
			size_t idx;
			int rc;

			tick(kw); /* call */
			if (kw->emit)
				ptenc_call(kw->g, at + 15);
			if (row(kw, callee, depth + 1, &idx))
				return -2;
			rc = run_func(kw, callee, depth + 1, at + 15);
			if (rc)
				return rc;
			row_end(kw, idx);
		}
	} else {
		unsigned n = (unsigned)rng_below(kw->rng, 6);

		tick(kw); /* add */
		for (unsigned i = 0; i <= n; i++) {
			tick(kw); /* add */
			tick(kw); /* jne, taken to go round again */
			if (kw->emit && ptenc_cond(kw->g, kw->tsc, i < n))
				return -1;
			if (psb(kw, i < n ? at + 4 : at + 14))
				return -1;
		}
	}
	tick(kw); /* ret */
	if (kw->emit && ptenc_ret(kw->g, kw->tsc, ret_ip))
		return -1;
	return psb(kw, ret_ip);
}

int kwalk_syscall(struct kwalk *kw, uint32_t depth, uint64_t back_ip)
{
	unsigned h = FIRST_HANDLER + (unsigned)rng_below(kw->rng, NR_HANDLERS);
	size_t entry, disp, hr;
	int rc;

	/* SYSCALL: a far call, its TIP at the kernel's entry. */
	if (row(kw, 0, depth, &entry))
		return -2;
	if (kw->emit && ptenc_indirect(kw->g, kw->tsc, kaddr(0)))
		return -1;
	if (psb(kw, kaddr(0)))
		return -1;
	tick(kw); /* call do_syscall_64 */
	if (kw->emit)
		ptenc_call(kw->g, kaddr(0) + 5);
	if (row(kw, 1, depth + 1, &disp))
		return -2;
	tick(kw); /* add */
	tick(kw); /* call *%rax, to a handler */
	if (kw->emit) {
		if (ptenc_indirect(kw->g, kw->tsc, kaddr(h)))
			return -1;
		ptenc_call(kw->g, kaddr(1) + 6);
	}
	if (psb(kw, kaddr(h)))
		return -1;
	if (row(kw, h, depth + 2, &hr))
		return -2;
	rc = run_func(kw, h, depth + 2, kaddr(1) + 6);
	if (rc)
		return rc;
	row_end(kw, hr);
	tick(kw); /* ret */
	row_end(kw, disp);
	if (kw->emit && ptenc_ret(kw->g, kw->tsc, kaddr(0) + 5))
		return -1;
	if (psb(kw, kaddr(0) + 5))
		return -1;
	tick(kw); /* sysretq: a far return, its TIP in user space */
	row_end(kw, entry);
	if (kw->emit && ptenc_indirect(kw->g, kw->tsc, back_ip))
		return -1;
	return 0;
}
