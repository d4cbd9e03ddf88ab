/* SPDX-License-Identifier: MIT */
/*
 * Internals of symbols/: the name arena, the candidate list that every
 * symbol source (symtab, dynsym, debug file, MiniDebugInfo, PLT) appends
 * to, and the finishing step that sorts and deduplicates it.  Nothing here
 * is part of the folder's interface (symbols.h is).
 */
#ifndef MT_SYM_INTERNAL_H
#define MT_SYM_INTERNAL_H

#include "symbols/symbols.h"
#include "util/util.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>

/*
 * Names live in a chain of blocks that are never moved, so that the
 * pointers handed out in struct sym stay valid for the sym_file's life.
 */
struct sym_arena_block;
struct sym_arena {
	struct sym_arena_block *head;
};

char *sym_arena_alloc(struct sym_arena *a, size_t n);
void sym_arena_free(struct sym_arena *a);

/*
 * Copy name (len bytes, then suffix, which may be NULL) into the arena,
 * demangled unless raw.  NULL when out of memory.
 */
const char *sym_name_store(struct sym_arena *a, const char *name, size_t len,
			   const char *suffix, bool raw);

/* What dedup ranks a symbol by when several share an address. */
enum {
	SYM_F_GLOBAL = 1 << 0, /* STB_GLOBAL or STB_WEAK */
	SYM_F_WEAK = 1 << 1,
	SYM_F_FUNC = 1 << 2,  /* STT_FUNC / STT_GNU_IFUNC, not a bare label */
	SYM_F_PLT = 1 << 3,   /* synthesised "name@plt" */
	SYM_F_JIT = 1 << 4,   /* perf map entry: only recency (seq) ranks */
	SYM_F_IFUNC = 1 << 5, /* STT_GNU_IFUNC: its value is the resolver */
};

struct sym_cand {
	uint64_t addr, size;
	/* Where a size-0 symbol must stop: the end of its section. */
	uint64_t limit;
	const char *name; /* in the arena */
	uint32_t flags;
	uint32_t seq; /* insertion order, to make the sort stable */
};

struct sym_cands {
	struct sym_cand *v;
	size_t nr, cap;
};

int sym_cands_add(struct sym_cands *c, const struct sym_cand *s);

/*
 * Sort c by address, keep the best symbol of each address and compute
 * where each one ends.  Fills *syms and *ends (both malloc'd, nr entries;
 * the caller owns them) and frees nothing of c.  Returns 0 or -ENOMEM.
 */
int sym_cands_finish(struct sym_cands *c, struct sym **syms, uint64_t **ends,
		     size_t *nr);

/*
 * The index of the symbol containing addr, or -1.  syms sorted by address;
 * ends[i] is where syms[i] stops (exclusive).
 */
long sym_search(const struct sym *syms, const uint64_t *ends, size_t nr,
		uint64_t addr);

/*
 * Append "name@plt" for the PLT entries of an x86-64 ELF.  Sections that
 * cannot be read are skipped: the PLT names are a convenience, never a
 * reason to fail the file.  Returns 0 or -ENOMEM.
 */
int sym_plt_collect(Elf *e, struct sym_arena *a, struct sym_cands *c, bool raw);

/* What an exception may do in a function of the unwind tables. */
enum { SYM_EH_NONE, SYM_EH_PADS, SYM_EH_UNREAD };

struct sym_fde {
	struct mt_range r; /* ELF vaddrs */
	uint8_t eh;
};

/* The unwind tables: their functions, sorted, and the call sites with a
 * landing pad, sorted (struct sym_lp, symbols.h). */
struct sym_eh {
	bool have; /* .eh_frame is there, read or not */
	struct sym_fde *fdes;
	size_t nr_fdes;
	struct sym_lp *lps;
	size_t nr_lps;
};

/*
 * The functions of e's unwind tables (.eh_frame_hdr's FDEs with their
 * ranges), sorted by start, and the landing pads of their LSDAs
 * (.gcc_except_table), malloc'd into *out; none when it has no such
 * table or one in an encoding not read.  Returns 0 or -ENOMEM.
 */
int sym_fde_collect(Elf *e, struct sym_eh *out);

/* The section named name, or NULL. */
Elf_Scn *sym_elf_section(Elf *e, const char *name, GElf_Shdr *sh);

/*
 * dwarf.c.  What an offline Dwfl finds separate debug files through:
 * libdwfl keeps a pointer to it, so it lives as long as the Dwfl.
 */
struct sym_dwfl_cb {
	Dwfl_Callbacks cb;
	char *search;		  /* cb.debuginfo_path points here */
	char path[PATH_MAX + 16]; /* ":.debug:" and the root */
};
/*
 * The DWARF of the ELF at path, or of its separate debug file (build id,
 * .gnu_debuglink) under debug_root (NULL: /usr/lib/debug), through an
 * offline Dwfl (reading through cb) that the caller ends
 * (dwfl_end(*dwflp), also on failure).  Returns 0, or a negative code
 * with one line in err (-ENOENT: no DWARF).
 */
int sym_dwarf_begin(const char *path, const char *debug_root,
		    struct sym_dwfl_cb *cb, Dwfl **dwflp, Dwarf **dwp,
		    char *err, size_t errlen);
/* Collapse "." and "dir/.." in path, in place (size: its buffer). */
void sym_path_normalize(char *path, size_t size);

/*
 * What sym_dwarf keeps of one compilation unit once read: its line
 * table's rows (lines.c) and its inlined calls (inlines.c), and every
 * name they use, kept once.
 */
struct sym_unit {
	struct sym_row {
		uint64_t addr;
		uint32_t file; /* index in strs; UINT32_MAX: a sequence ends */
		uint32_t line;
	} * rows; /* sorted by address */
	size_t nr_rows, cap_rows;
	struct sym_inline *calls;
	size_t nr_calls, cap_calls;
	struct sym_inline_range *ranges; /* sorted, disjoint */
	size_t nr_ranges, cap_ranges;
	char **strs;
	size_t nr_strs, cap_strs;
	struct mt_hmap str_index; /* while it is read: a name -> its index */
};

/* The index of s among u's names, added when new; -1: out of memory. */
int64_t sym_unit_str(struct sym_unit *u, const char *s);
/* Read the unit of cu into u: 0 or -ENOMEM. */
int sym_unit_rows(struct sym_unit *u, Dwarf_Die *cu);
int sym_unit_inlines(struct sym_unit *u, Dwarf_Die *cu);

#endif
