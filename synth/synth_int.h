/* SPDX-License-Identifier: MIT */
/* Internal to synth/: the program model, the PT emitter, the walker. */
#ifndef MT_SYNTH_INT_H
#define MT_SYNTH_INT_H

#include "perfdata/perfdata.h"
#include "ptenc/ptenc.h"
#include "synth/synth.h"

#include <stdio.h>

/* A small fast PRNG (splitmix64 seeded xoshiro256**). */
struct rng {
	uint64_t s[4];
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n). */
uint64_t rng_below(struct rng *r, uint64_t n);
/* True with probability num/den. */
bool rng_chance(struct rng *r, unsigned num, unsigned den);

/*
 * Instructions of the generated program.  Each kind has one fixed
 * encoding, so the generator knows every address before linking and
 * checks them against the linked ELF afterwards.
 */
enum insn_kind {
	I_FILL,	   /* add $1,%rax                 48 83 c0 01 */
	I_MOVEAX,  /* mov $39,%eax                b8 27 00 00 00 */
	I_JCC,	   /* {disp32} jne label          0f 85 rel32 */
	I_JMP,	   /* {disp32} jmp label          e9 rel32 (same function) */
	I_CALL,	   /* call f                      e8 rel32 */
	I_LEA,	   /* lea f(%rip),%rax            48 8d 05 rel32 */
	I_ICALL,   /* call *%rax                  ff d0 */
	I_TAIL,	   /* {disp32} jmp f              e9 rel32 (other function) */
	I_ITAIL,   /* jmp *%rax                   ff e0 */
	I_PLTJMP,  /* jmp *slot(%rip)             ff 25 rel32 */
	I_SYSCALL, /* syscall                     0f 05 */
	I_NLR,	   /* jmp *%rdx (longjmp-like)    ff e2 */
	I_RET,	   /* ret                         c3 */
};

enum jcc_role {
	JCC_IF,	   /* forward skip of plain code */
	JCC_LOOP,  /* backward: taken = iterate again */
	JCC_GUARD, /* forward skip of the call/tail/nlr that follows */
};

struct insn {
	uint8_t kind; /* enum insn_kind */
	uint8_t role; /* enum jcc_role for I_JCC */
	uint8_t size;
	uint32_t target; /* insn index (JCC/JMP) or function index */
	uint32_t offset; /* from the function start */
};

enum func_kind {
	F_NORMAL,
	F_ROOT, /* main or a thread entry: loops forever */
	F_DEEP, /* self-recursion to >1000 frames */
	F_PLT,	/* name@plt trampoline */
};

struct func {
	char name[48];
	uint8_t kind;
	struct insn *insns;
	uint32_t nr_insns;
	uint32_t land; /* landing pad insn index (epilogue) */
	uint32_t size;
	uint64_t addr;	    /* from the linked ELF */
	unsigned nr_guards; /* guarded sites, for the call probability */
};

struct program {
	struct func *funcs;
	uint32_t nr_funcs;
	uint32_t nr_roots; /* funcs[0..nr_roots) are main, worker1, ... */
	uint32_t deep;	   /* index of the F_DEEP function, or UINT32_MAX */
	char path[4096];   /* the linked ELF */
	uint64_t text_vaddr, text_offset, text_size; /* executable PT_LOAD */
	uint8_t build_id[20];
	uint8_t build_id_size;
};

int program_generate(struct program *p, struct rng *r, unsigned nr_roots,
		     bool deep, char *err, size_t errlen);
/* Write DIR/prog.s, assemble and link DIR/prog, read addresses back. */
int program_build(struct program *p, const char *dir, const char *cc, char *err,
		  size_t errlen);
void program_free(struct program *p);
/* Assemble and link src into out with cc, entered at entry, with .text
 * at text_addr (NULL: the linker's choice); 0 or -1 with err. */
int program_cc(const char *cc, const char *src, const char *out,
	       const char *entry, const char *text_addr, char *err,
	       size_t errlen);

static inline uint64_t insn_addr(const struct func *f, uint32_t i)
{
	return f->addr + f->insns[i].offset;
}

#endif
