/* SPDX-License-Identifier: MIT */
/*
 * The generated program: a random call graph of small functions with
 * loops, conditional code, direct and indirect calls, recursion, tail
 * calls, PLT-style trampolines, syscalls and longjmp-like jumps.
 *
 * The program is never run: the walker decides every branch.  What matters
 * is that every instruction has a known address and a fixed encoding, so
 * that the packets we emit are exactly what the hardware would emit for
 * that code.  After linking we check our layout against the ELF.
 */
#include "synth/synth_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const uint8_t insn_size[] = {
	[I_FILL] = 4,  [I_MOVEAX] = 5, [I_JCC] = 6,	[I_JMP] = 5,
	[I_CALL] = 5,  [I_LEA] = 7,    [I_ICALL] = 2,	[I_TAIL] = 5,
	[I_ITAIL] = 2, [I_PLTJMP] = 6, [I_SYSCALL] = 2, [I_NLR] = 2,
	[I_RET] = 1,
};

/* The first opcode byte(s) of each kind, checked against the ELF. */
static const uint8_t insn_op[][2] = {
	[I_FILL] = {0x48, 0x83},    [I_MOVEAX] = {0xb8, 0x27},
	[I_JCC] = {0x0f, 0x85},	    [I_JMP] = {0xe9, 0},
	[I_CALL] = {0xe8, 0},	    [I_LEA] = {0x48, 0x8d},
	[I_ICALL] = {0xff, 0xd0},   [I_TAIL] = {0xe9, 0},
	[I_ITAIL] = {0xff, 0xe0},   [I_PLTJMP] = {0xff, 0x25},
	[I_SYSCALL] = {0x0f, 0x05}, [I_NLR] = {0xff, 0xe2},
	[I_RET] = {0xc3, 0},
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64) : 0;
}

bool rng_chance(struct rng *r, unsigned num, unsigned den)
{
	return rng_below(r, den) < num;
}

/* A growable instruction list for the function being generated. */
struct body {
	struct insn *v;
	uint32_t n, cap;
};

static int emit(struct body *b, enum insn_kind k, uint8_t role, uint32_t target)
{
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 32;
		struct insn *v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -1;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = (struct insn){.kind = k,
				     .role = role,
				     .size = insn_size[k],
				     .target = target};
	return 0;
}

/* Functions a call site may target: normal and deep ones, never roots. */
static uint32_t pick_callee(struct rng *r, const struct program *p)
{
	uint32_t lo = p->nr_roots;
	for (;;) {
		uint32_t f = lo + (uint32_t)rng_below(r, p->nr_funcs - lo);
		if (p->funcs[f].kind == F_NORMAL)
			return f;
	}
}

/* A plt trampoline index for callee f, or f itself if it has none. */
static uint32_t plt_of(const struct program *p, uint32_t f)
{
	for (uint32_t i = 0; i < p->nr_funcs; i++)
		if (p->funcs[i].kind == F_PLT && p->funcs[i].insns &&
		    p->funcs[i].insns[0].target == f)
			return i;
	return f;
}

/* One guarded call site: jne skip; <call>; skip: */
static int gen_call_site(struct body *b, struct rng *r, const struct program *p,
			 unsigned self)
{
	uint32_t guard = b->n, callee;
	unsigned kind = (unsigned)rng_below(r, 10);

	if (emit(b, I_JCC, JCC_GUARD, 0))
		return -1;
	/* Roots never return, so they must not recurse. */
	if (p->funcs[self].kind != F_ROOT && rng_chance(r, 1, 8))
		callee = self;
	else
		callee = pick_callee(r, p);
	if (kind < 6) {
		if (emit(b, I_CALL, 0, callee))
			return -1;
	} else if (kind < 8) {
		if (emit(b, I_LEA, 0, callee) || emit(b, I_ICALL, 0, callee))
			return -1;
	} else {
		uint32_t t = plt_of(p, callee);
		if (emit(b, I_CALL, 0, t))
			return -1;
	}
	b->v[guard].target = b->n;
	return 0;
}

static int gen_straight(struct body *b, struct rng *r)
{
	unsigned n = 1 + (unsigned)rng_below(r, 3);
	for (unsigned i = 0; i < n; i++)
		if (emit(b, I_FILL, 0, 0))
			return -1;
	return 0;
}

/* A sequence of blocks; loops contain a smaller sequence. */
static int gen_blocks(struct body *b, struct rng *r, const struct program *p,
		      unsigned self, unsigned nblocks, int depth,
		      bool allow_sys)
{
	for (unsigned i = 0; i < nblocks; i++) {
		unsigned k = (unsigned)rng_below(r, 100);
		if (k < 25) {
			if (gen_straight(b, r))
				return -1;
		} else if (k < 40) { /* if (...) { straight } */
			uint32_t j = b->n;
			if (emit(b, I_JCC, JCC_IF, 0) || gen_straight(b, r))
				return -1;
			b->v[j].target = b->n;
		} else if (k < 50 && depth == 0) { /* loop */
			uint32_t top = b->n;
			if (gen_straight(b, r) ||
			    gen_blocks(b, r, p, self,
				       1 + (unsigned)rng_below(r, 3), 1,
				       allow_sys) ||
			    emit(b, I_JCC, JCC_LOOP, top))
				return -1;
		} else if (k < 53 && allow_sys) {
			if (emit(b, I_MOVEAX, 0, 0) || emit(b, I_SYSCALL, 0, 0))
				return -1;
		} else if (k < 56) { /* longjmp to an ancestor */
			uint32_t g = b->n;
			if (emit(b, I_JCC, JCC_GUARD, 0) ||
			    emit(b, I_NLR, 0, 0))
				return -1;
			b->v[g].target = b->n;
		} else if (k < 60) { /* jump over code within the function */
			uint32_t j = b->n;
			if (emit(b, I_JMP, 0, 0) || gen_straight(b, r))
				return -1;
			b->v[j].target = b->n;
		} else {
			if (gen_call_site(b, r, p, self))
				return -1;
		}
	}
	return 0;
}

static int gen_normal(struct func *f, struct rng *r, const struct program *p,
		      unsigned self)
{
	struct body b = {0};
	bool sys = rng_chance(r, 1, 4);

	if (emit(&b, I_FILL, 0, 0) ||
	    gen_blocks(&b, r, p, self, 1 + (unsigned)rng_below(r, 6), 0, sys))
		goto fail;
	if (rng_chance(r, 1, 4)) { /* a guarded tail call */
		uint32_t g = b.n, callee = pick_callee(r, p);

		/* Not to itself: a jump to one's own entry is a loop (that
		 * is what compilers make of tail recursion), and no trace
		 * can tell the two apart. */
		for (int tries = 0; callee == self && tries < 64; tries++)
			callee = pick_callee(r, p);
		if (emit(&b, I_JCC, JCC_GUARD, 0))
			goto fail;
		if (rng_chance(r, 1, 2)) {
			if (emit(&b, I_TAIL, 0, callee))
				goto fail;
		} else if (emit(&b, I_LEA, 0, callee) ||
			   emit(&b, I_ITAIL, 0, callee)) {
			goto fail;
		}
		b.v[g].target = b.n;
	}
	f->land = b.n;
	if (emit(&b, I_FILL, 0, 0) || emit(&b, I_RET, 0, 0))
		goto fail;
	f->insns = b.v;
	f->nr_insns = b.n;
	return 0;
fail:
	free(b.v);
	return -1;
}

/* main / worker: an endless loop of call sites. */
static int gen_root(struct func *f, struct rng *r, const struct program *p,
		    unsigned self)
{
	struct body b = {0};
	uint32_t top;

	if (emit(&b, I_FILL, 0, 0))
		goto fail;
	top = b.n;
	if (emit(&b, I_FILL, 0, 0))
		goto fail;
	for (unsigned i = 0, n = 3 + (unsigned)rng_below(r, 4); i < n; i++)
		if (gen_call_site(&b, r, p, self))
			goto fail;
	/* The call site of the deep recursion, if any. */
	if (p->deep != UINT32_MAX) {
		uint32_t g = b.n;
		if (emit(&b, I_JCC, JCC_GUARD, 0) ||
		    emit(&b, I_CALL, 0, p->deep))
			goto fail;
		b.v[g].target = b.n;
	}
	if (emit(&b, I_MOVEAX, 0, 0) || emit(&b, I_SYSCALL, 0, 0) ||
	    emit(&b, I_JMP, 0, top))
		goto fail;
	f->land = top;
	f->insns = b.v;
	f->nr_insns = b.n;
	return 0;
fail:
	free(b.v);
	return -1;
}

static int gen_deep(struct func *f, unsigned self)
{
	struct body b = {0};
	uint32_t g;

	if (emit(&b, I_FILL, 0, 0))
		goto fail;
	g = b.n;
	if (emit(&b, I_JCC, JCC_GUARD, 0) || emit(&b, I_CALL, 0, self))
		goto fail;
	b.v[g].target = b.n;
	f->land = b.n;
	if (emit(&b, I_FILL, 0, 0) || emit(&b, I_RET, 0, 0))
		goto fail;
	f->insns = b.v;
	f->nr_insns = b.n;
	return 0;
fail:
	free(b.v);
	return -1;
}

int program_generate(struct program *p, struct rng *r, unsigned nr_roots,
		     bool deep, char *err, size_t errlen)
{
	uint32_t nr_normal = 24 + (uint32_t)rng_below(r, 40);
	uint32_t nr_plt = 2 + (uint32_t)rng_below(r, 4);
	uint32_t n = nr_roots + nr_normal + nr_plt + (deep ? 1 : 0);

	memset(p, 0, sizeof(*p));
	p->deep = UINT32_MAX;
	p->funcs = calloc(n, sizeof(*p->funcs));
	if (!p->funcs)
		goto nomem;
	p->nr_funcs = n;
	p->nr_roots = nr_roots;

	/* Names and kinds first: call sites refer to any function. */
	for (uint32_t i = 0; i < n; i++) {
		struct func *f = &p->funcs[i];
		if (i == 0) {
			f->kind = F_ROOT;
			snprintf(f->name, sizeof(f->name), "main");
		} else if (i < nr_roots) {
			f->kind = F_ROOT;
			snprintf(f->name, sizeof(f->name), "worker%u", i);
		} else if (i < nr_roots + nr_normal) {
			f->kind = F_NORMAL;
			snprintf(f->name, sizeof(f->name), "fn_%u_%s",
				 i - nr_roots,
				 (const char *[]){"parse", "lookup", "hash",
						  "emit", "step", "visit",
						  "merge", "scan"}[i % 8]);
		} else if (i < nr_roots + nr_normal + nr_plt) {
			f->kind = F_PLT;
		} else {
			f->kind = F_DEEP;
			p->deep = i;
			snprintf(f->name, sizeof(f->name), "deep_recurse");
		}
	}
	/* Trampolines: each jumps to a distinct normal function. */
	for (uint32_t i = nr_roots + nr_normal;
	     i < nr_roots + nr_normal + nr_plt; i++) {
		struct func *f = &p->funcs[i];
		uint32_t t =
			nr_roots + (i - nr_roots - nr_normal) * 3 % nr_normal;
		f->insns = calloc(1, sizeof(*f->insns));
		if (!f->insns)
			goto nomem;
		f->insns[0] = (struct insn){.kind = I_PLTJMP,
					    .size = insn_size[I_PLTJMP],
					    .target = t};
		f->nr_insns = 1;
		char base[sizeof(f->name)];
		memcpy(base, p->funcs[t].name, sizeof(base));
		base[sizeof(base) - 5] = 0;
		snprintf(f->name, sizeof(f->name), "%s@plt", base);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct func *f = &p->funcs[i];
		int rc = 0;
		if (f->kind == F_ROOT)
			rc = gen_root(f, r, p, i);
		else if (f->kind == F_NORMAL)
			rc = gen_normal(f, r, p, i);
		else if (f->kind == F_DEEP)
			rc = gen_deep(f, i);
		if (rc)
			goto nomem;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct func *f = &p->funcs[i];
		uint32_t off = 0;
		for (uint32_t j = 0; j < f->nr_insns; j++) {
			f->insns[j].offset = off;
			off += f->insns[j].size;
			if (f->insns[j].kind == I_JCC &&
			    f->insns[j].role == JCC_GUARD)
				f->nr_guards++;
		}
		f->size = off;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory generating the program");
	program_free(p);
	return -1;
}

void program_free(struct program *p)
{
	if (!p->funcs)
		return;
	for (uint32_t i = 0; i < p->nr_funcs; i++)
		free(p->funcs[i].insns);
	free(p->funcs);
	p->funcs = NULL;
}

/* Symbol names as the assembler sees them (quoted: "x@plt" is legal). */
static void write_insn(FILE *o, const struct program *p, uint32_t fi,
		       uint32_t j)
{
	const struct func *f = &p->funcs[fi];
	const struct insn *in = &f->insns[j];
	uint32_t tn = in->target; /* referenced through .LfnN: see below */

	switch (in->kind) {
	case I_FILL:
		fprintf(o, "\tadd $1, %%rax\n");
		break;
	case I_MOVEAX:
		fprintf(o, "\tmov $39, %%eax\n");
		break;
	case I_JCC:
		fprintf(o, "\t{disp32} jne .Lf%u_%u\n", fi, in->target);
		break;
	case I_JMP:
		fprintf(o, "\t{disp32} jmp .Lf%u_%u\n", fi, in->target);
		break;
	case I_CALL:
		fprintf(o, "\tcall .Lfn%u\n", tn);
		break;
	case I_LEA:
		fprintf(o, "\tlea .Lfn%u(%%rip), %%rax\n", tn);
		break;
	case I_ICALL:
		fprintf(o, "\tcall *%%rax\n");
		break;
	case I_TAIL:
		fprintf(o, "\t{disp32} jmp .Lfn%u\n", tn);
		break;
	case I_ITAIL:
		fprintf(o, "\tjmp *%%rax\n");
		break;
	case I_PLTJMP:
		fprintf(o, "\tjmp *.Lslot%u(%%rip)\n", fi);
		break;
	case I_SYSCALL:
		fprintf(o, "\tsyscall\n");
		break;
	case I_NLR:
		fprintf(o, "\tjmp *%%rdx\n");
		break;
	case I_RET:
		fprintf(o, "\tret\n");
		break;
	}
}

static int write_asm(const struct program *p, const char *path)
{
	FILE *o = fopen(path, "w");
	if (!o)
		return -1;
	fprintf(o, "# Generated by mt-synth: never run, only traced.\n"
		   "\t.text\n");
	for (uint32_t i = 0; i < p->nr_funcs; i++) {
		const struct func *f = &p->funcs[i];
		/*
		 * Code refers to functions by local label: "x@plt" in an
		 * operand would read as symbol x with a PLT relocation.
		 */
		fprintf(o,
			"\t.p2align 4\n\t.globl \"%s\"\n"
			"\t.type \"%s\", @function\n\"%s\":\n.Lfn%u:\n",
			f->name, f->name, f->name, i);
		for (uint32_t j = 0; j < f->nr_insns; j++) {
			fprintf(o, ".Lf%u_%u:\n", i, j);
			write_insn(o, p, i, j);
		}
		fprintf(o, ".Lf%u_%u:\n\t.size \"%s\", .-\"%s\"\n", i,
			f->nr_insns, f->name, f->name);
	}
	fprintf(o, "\t.data\n\t.p2align 3\n");
	for (uint32_t i = 0; i < p->nr_funcs; i++)
		if (p->funcs[i].kind == F_PLT)
			fprintf(o, ".Lslot%u:\n\t.quad .Lfn%u\n", i,
				p->funcs[i].insns[0].target);
	fprintf(o, "\t.section .note.GNU-stack,\"\",@progbits\n");
	return fclose(o) ? -1 : 0;
}

int program_cc(const char *cc, const char *src, const char *out,
	       const char *entry, const char *text_addr, char *err,
	       size_t errlen)
{
	char e[128], t[128];
	pid_t pid;
	int status;

	snprintf(e, sizeof(e), "-Wl,-e,%s", entry);
	snprintf(t, sizeof(t), "-Wl,-Ttext=%s", text_addr ? text_addr : "");
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execlp(cc, cc, "-nostdlib", "-static", "-no-pie",
		       "-Wl,--build-id=sha1", e, "-o", out, src,
		       text_addr ? t : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "%s could not build %s (status %d)", cc,
			 src, status);
		return -1;
	}
	return 0;
}

/* Read symbols, the executable segment and the build id; check layout. */
static int verify_elf(struct program *p, char *err, size_t errlen)
{
	int fd = open(p->path, O_RDONLY), rc = -1;
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	size_t nph, found = 0;
	uint8_t *text = NULL;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "%s: %s", p->path, strerror(errno));
		goto out;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getphdrnum(e, &nph)) {
		snprintf(err, errlen, "%s: %s", p->path, elf_errmsg(-1));
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X)) {
			p->text_vaddr = ph.p_vaddr;
			p->text_offset = ph.p_offset;
			p->text_size = ph.p_filesz;
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_NOTE && (d = elf_getdata(scn, NULL))) {
			size_t off = 0, no, doff;
			GElf_Nhdr nh;
			while ((off = gelf_getnote(d, off, &nh, &no, &doff))) {
				if (nh.n_type == NT_GNU_BUILD_ID &&
				    nh.n_descsz <= 20) {
					memcpy(p->build_id,
					       (uint8_t *)d->d_buf + doff,
					       nh.n_descsz);
					p->build_id_size = (uint8_t)nh.n_descsz;
				}
			}
		}
		if (sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;
			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			for (uint32_t k = 0; nm && k < p->nr_funcs; k++) {
				struct func *f = &p->funcs[k];
				if (strcmp(f->name, nm))
					continue;
				if (s.st_size != f->size) {
					snprintf(err, errlen,
						 "%s: %s is %lu bytes, "
						 "expected %u",
						 p->path, nm,
						 (unsigned long)s.st_size,
						 f->size);
					goto out;
				}
				f->addr = s.st_value;
				found++;
			}
		}
	}
	if (found != p->nr_funcs || !p->text_size) {
		snprintf(err, errlen, "%s: found %zu of %u functions", p->path,
			 found, p->nr_funcs);
		goto out;
	}
	/* Every instruction starts with the opcode bytes we meant. */
	text = malloc(p->text_size);
	if (!text || pread(fd, text, p->text_size, (off_t)p->text_offset) !=
			     (ssize_t)p->text_size) {
		snprintf(err, errlen, "%s: cannot read text", p->path);
		goto out;
	}
	for (uint32_t k = 0; k < p->nr_funcs; k++) {
		const struct func *f = &p->funcs[k];
		for (uint32_t j = 0; j < f->nr_insns; j++) {
			const struct insn *in = &f->insns[j];
			uint64_t at = insn_addr(f, j) - p->text_vaddr;
			const uint8_t *op = insn_op[in->kind];
			if (at + in->size > p->text_size || text[at] != op[0] ||
			    (op[1] && text[at + 1] != op[1])) {
				snprintf(err, errlen,
					 "%s: %s+%u is not the expected "
					 "instruction",
					 p->path, f->name, in->offset);
				goto out;
			}
		}
	}
	rc = 0;
out:
	free(text);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return rc;
}

int program_build(struct program *p, const char *dir, const char *cc, char *err,
		  size_t errlen)
{
	char src[4096];
	char abs[4096];

	if (!realpath(dir, abs)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(src, sizeof(src), "%s/prog.s", abs);
	snprintf(p->path, sizeof(p->path), "%s/prog", abs);
	if (write_asm(p, src)) {
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
		return -1;
	}
	if (program_cc(cc, src, p->path, "main", NULL, err, errlen))
		return -1;
	return verify_elf(p, err, errlen);
}
