/* SPDX-License-Identifier: MIT */
/*
 * "name@plt" symbols for the PLT stubs of x86-64 ELF files.
 *
 * Rather than assume that PLT slot i belongs to relocation i (which breaks
 * with IRELATIVE slots, .plt.got and linkers that order them otherwise),
 * each stub is decoded: the indirect jump "jmp *disp(%rip)" names the GOT
 * slot it goes through, and the JUMP_SLOT or GLOB_DAT relocation of that
 * slot names the function.  The lazy stubs of IBT binaries (whose jump
 * goes to PLT0) are named by the relocation index they push instead.
 *
 * Layouts handled (GNU ld and lld):
 *   .plt      PLT0 (16 bytes), then 16-byte entries
 *             "jmp *GOT(%rip); push $i; jmp PLT0", or with IBT
 *             "endbr64; push $i; bnd jmp PLT0" (the lazy stubs)
 *   .plt.sec  16-byte "endbr64; bnd jmp *GOT(%rip); nop" entries
 *             (.plt.bnd is the same thing from the MPX days)
 *   .plt.got  8-byte "jmp *GOT(%rip); xchg %ax,%ax" entries, or 16-byte
 *             ones like .plt.sec's with IBT; their GOT slots carry
 *             GLOB_DAT relocations (in .rela.dyn)
 */
#include "symbols/sym_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef R_X86_64_JUMP_SLOT
#define R_X86_64_JUMP_SLOT 7
#endif
#ifndef R_X86_64_GLOB_DAT
#define R_X86_64_GLOB_DAT 6
#endif
#ifndef R_X86_64_IRELATIVE
#define R_X86_64_IRELATIVE 37
#endif

/*
 * What a GOT slot holds: a named function, or (IRELATIVE, in static
 * binaries and for libc's internal calls to its own IFUNCs) the value of
 * an IFUNC resolver, which we name after the IFUNC symbol there.
 */
struct got_name {
	uint64_t got;
	const char *name;  /* in libelf's string table: valid until elf_end */
	uint64_t resolver; /* when name is NULL */
};

struct plt_ctx {
	Elf *e;
	struct got_name *gots;
	size_t nr_gots, cap_gots;
	/* The .rela.plt entries, by index. */
	struct got_name *slots;
	size_t nr_slots, cap_slots;
	struct sym_arena *arena;
	struct sym_cands *c;
	bool raw;
};

static int got_cmp(const void *pa, const void *pb)
{
	const struct got_name *a = pa, *b = pb;

	return a->got < b->got ? -1 : a->got > b->got;
}

static const struct got_name *got_lookup(const struct plt_ctx *p, uint64_t got)
{
	size_t lo = 0, hi = p->nr_gots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->gots[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nr_gots && p->gots[lo].got == got ? &p->gots[lo] : NULL;
}

/* The name of dynamic symbol idx (symd: the table, strndx: its strings). */
static const char *dynsym_name(Elf *e, Elf_Data *symd, size_t strndx,
			       size_t idx)
{
	GElf_Sym s;
	const char *n;

	if (!idx || !gelf_getsym(symd, (int)idx, &s))
		return NULL;
	n = elf_strptr(e, strndx, s.st_name);
	return n && n[0] ? n : NULL;
}

/* Record the GOT slots that one SHT_RELA section names. */
static int read_relocs(struct plt_ctx *p, Elf_Scn *scn, const GElf_Shdr *sh,
		       bool is_rela_plt)
{
	Elf *e = p->e;
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	GElf_Shdr symsh;
	Elf_Data *d, *symd;
	size_t i, n, relsz = gelf_fsize(e, ELF_T_RELA, 1, EV_CURRENT);

	if (!symscn || !gelf_getshdr(symscn, &symsh) ||
	    symsh.sh_type != SHT_DYNSYM || !relsz)
		return 0;
	d = elf_getdata(scn, NULL);
	symd = elf_getdata(symscn, NULL);
	if (!d || !symd)
		return 0;
	n = d->d_size / relsz;
	for (i = 0; i < n; i++) {
		struct got_name g = {0};
		GElf_Rela r;
		uint64_t type;

		if (!gelf_getrela(d, (int)i, &r))
			break;
		type = GELF_R_TYPE(r.r_info);
		g.got = r.r_offset;
		if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT)
			g.name = dynsym_name(e, symd, symsh.sh_link,
					     GELF_R_SYM(r.r_info));
		else if (type == R_X86_64_IRELATIVE)
			g.resolver = (uint64_t)r.r_addend;
		if (is_rela_plt) {
			if (mt_grow((void **)&p->slots, &p->cap_slots,
				    p->nr_slots + 1, sizeof(*p->slots)))
				return -ENOMEM;
			p->slots[p->nr_slots++] = g;
		}
		if (!g.name && !g.resolver)
			continue;
		if (mt_grow((void **)&p->gots, &p->cap_gots, p->nr_gots + 1,
			    sizeof(*p->gots)))
			return -ENOMEM;
		p->gots[p->nr_gots++] = g;
	}
	return 0;
}

/* The name of the IFUNC whose resolver is at addr, from the symbols
 * collected so far (the file's own table), or NULL. */
static const char *ifunc_name(const struct plt_ctx *p, uint64_t addr)
{
	const struct sym_cand *best = NULL;
	size_t i;

	for (i = 0; i < p->c->nr; i++) {
		const struct sym_cand *c = &p->c->v[i];

		if (c->addr != addr || (c->flags & SYM_F_PLT))
			continue;
		if (!best || ((c->flags & SYM_F_GLOBAL) &&
			      !(best->flags & SYM_F_GLOBAL)))
			best = c;
	}
	return best ? best->name : NULL;
}

static const char *slot_name(const struct plt_ctx *p, const struct got_name *g)
{
	if (!g)
		return NULL;
	return g->name ? g->name : ifunc_name(p, g->resolver);
}

/*
 * The function a stub at addr (bytes b, n of them) goes to, or NULL.
 */
static const char *stub_target(const struct plt_ctx *p, const uint8_t *b,
			       size_t n, uint64_t addr)
{
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	size_t i = 0;
	int32_t disp;
	uint32_t idx;

	if (n >= 4 && !memcmp(b, endbr64, 4))
		i = 4;
	if (i < n && b[i] == 0xf2) /* bnd prefix */
		i++;
	if (i + 6 <= n && b[i] == 0xff && b[i + 1] == 0x25) {
		memcpy(&disp, b + i + 2, 4);
		/* rip-relative: from the end of the 6-byte jump */
		return slot_name(
			p,
			got_lookup(p, addr + i + 6 + (uint64_t)(int64_t)disp));
	}
	if (i + 5 <= n && b[i] == 0x68) {
		memcpy(&idx, b + i + 1, 4);
		return idx < p->nr_slots ? slot_name(p, &p->slots[idx]) : NULL;
	}
	return NULL;
}

static int name_stubs(struct plt_ctx *p, const char *secname, size_t first,
		      size_t entsize)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(p->e, secname, &sh);
	Elf_Data *d;
	const uint8_t *b;
	size_t off;
	uint64_t end;

	if (!scn || sh.sh_type != SHT_PROGBITS)
		return 0;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	b = d->d_buf;
	if (!entsize) {
		/* .plt.got: 16-byte entries when they start with endbr64. */
		entsize = sh.sh_entsize == 8 || sh.sh_entsize == 16
				  ? sh.sh_entsize
			  : d->d_size >= 4 && b[0] == 0xf3 && b[1] == 0x0f ? 16
									   : 8;
	}
	end = sh.sh_addr + sh.sh_size;
	for (off = first; off + entsize <= d->d_size; off += entsize) {
		struct sym_cand c = {0};
		const char *target;

		target = stub_target(p, b + off, entsize, sh.sh_addr + off);
		if (!target)
			continue;
		c.addr = sh.sh_addr + off;
		c.size = entsize;
		c.limit = end;
		c.flags = SYM_F_PLT | SYM_F_FUNC;
		c.name = sym_name_store(p->arena, target, strlen(target),
					"@plt", p->raw);
		if (!c.name || sym_cands_add(p->c, &c))
			return -ENOMEM;
	}
	return 0;
}

int sym_plt_collect(Elf *e, struct sym_arena *a, struct sym_cands *c, bool raw)
{
	struct plt_ctx p = {.e = e, .arena = a, .c = c, .raw = raw};
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t shstrndx;
	int rc = 0;

	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		n = elf_strptr(e, shstrndx, sh.sh_name);
		rc = read_relocs(&p, scn, &sh, n && !strcmp(n, ".rela.plt"));
		if (rc)
			goto out;
	}
	if (!p.nr_gots && !p.nr_slots)
		goto out;
	if (p.nr_gots)
		qsort(p.gots, p.nr_gots, sizeof(*p.gots), got_cmp);
	rc = name_stubs(&p, ".plt", 16, 16);
	if (!rc)
		rc = name_stubs(&p, ".plt.sec", 0, 16);
	if (!rc)
		rc = name_stubs(&p, ".plt.bnd", 0, 16);
	if (!rc)
		rc = name_stubs(&p, ".plt.got", 0, 0);
out:
	free(p.gots);
	free(p.slots);
	return rc;
}
