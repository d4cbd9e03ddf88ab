/* SPDX-License-Identifier: MIT */
/*
 * symbols: names for code addresses.
 *
 * A sym_file is one ELF image (a file on disk, or bytes such as a captured
 * [vdso]) with its function symbols sorted by address, its loadable
 * segments and its build id.  Addresses here are the ELF's own (link-time)
 * virtual addresses; the caller maps runtime addresses to them with the
 * mapping's start and file offset (sym_file_off_to_vaddr).
 *
 * Symbols come from .symtab, else .dynsym, merged with a separate debug
 * file (found by build id under a debug root, or .gnu_debuglink) and the
 * MiniDebugInfo in .gnu_debugdata when present.  PLT entries are named
 * "name@plt".  C++ and Rust names are demangled.
 *
 * Source lines map to addresses through the DWARF line tables
 * (sym_line_addrs, libdw).
 */
#ifndef MT_SYMBOLS_H
#define MT_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest build id kept (GNU ld's --build-id=0xHEX can be long). */
#define SYM_BUILD_ID_MAX 64

struct sym {
	uint64_t addr;	  /* ELF virtual address */
	uint64_t size;	  /* 0 when unknown: it then ends at the next */
	const char *name; /* demangled; owned by the sym_file */
};

/* A loadable (PT_LOAD) segment. */
struct sym_load {
	uint64_t offset; /* in the file */
	uint64_t vaddr;
	uint64_t filesz, memsz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
};

struct sym_file;

struct sym_opts {
	/* Root of build-id debug files ("/usr/lib/debug" when NULL;
	 * "" to disable). */
	const char *debug_root;
	/* Keep mangled names. */
	int no_demangle;
};

/*
 * Open the ELF at path.  Returns 0, or a negative errno-style code with a
 * one-line reason (naming the file) in err.  o may be NULL.
 */
int sym_file_open(const char *path, const struct sym_opts *o,
		  struct sym_file **out, char *err, size_t errlen);
/* The same for an ELF image held in memory (copied); name is for messages. */
int sym_file_open_mem(const void *buf, size_t len, const char *name,
		      const struct sym_opts *o, struct sym_file **out,
		      char *err, size_t errlen);
void sym_file_free(struct sym_file *f);

/* The function containing vaddr, or NULL. */
const struct sym *sym_file_lookup(const struct sym_file *f, uint64_t vaddr);
/*
 * The function of the unwind tables (.eh_frame_hdr and its FDEs) that
 * vaddr is in, for code without symbols: [*start, *end).  False when
 * none has it (code without unwind information, or no tables).
 */
bool sym_file_fde(const struct sym_file *f, uint64_t vaddr, uint64_t *start,
		  uint64_t *end);
/* A call site of a function's LSDA that has a landing pad (ELF vaddrs):
 * an exception out of [lo, hi) lands at pad, where no instruction of the
 * function may lead. */
struct sym_lp {
	uint64_t lo, hi, pad;
};

/*
 * The call sites with a landing pad in the code [lo, hi), sorted, in
 * *out (f's memory) and *n: 0; -1 when that cannot be told (the unwind
 * tables, or an LSDA there, could not be read).  Code without an FDE (or
 * a file without .eh_frame) has none: no unwinder passes through it.
 */
int sym_file_landing_pads(const struct sym_file *f, uint64_t lo, uint64_t hi,
			  const struct sym_lp **out, size_t *n);
/* Whether it is a 64-bit ELF file (its code 64-bit code). */
bool sym_file_is_64bit(const struct sym_file *f);
/* All symbols, sorted by address. */
const struct sym *sym_file_syms(const struct sym_file *f, size_t *nr);
const struct sym_load *sym_file_loads(const struct sym_file *f, size_t *nr);
/* Build id bytes (NULL, *len = 0 when the file has none). */
const uint8_t *sym_file_build_id(const struct sym_file *f, size_t *len);
/*
 * The build id of the ELF file at path, found as sym_file_open() finds it
 * (note sections, else PT_NOTE segments) without reading anything else:
 * 0 with id (SYM_BUILD_ID_MAX bytes of room) and *len filled; 1 for an ELF
 * without a build id; 2 for a file that is not ELF; -1 when it cannot be
 * opened (errno says why).
 */
int sym_build_id(const char *path, uint8_t *id, size_t *len);
/* The size of the file (of the image, for sym_file_open_mem()): where
 * its segments' bytes must end. */
uint64_t sym_file_size(const struct sym_file *f);
/* ELF e_type: ET_EXEC, ET_DYN, ... */
int sym_file_type(const struct sym_file *f);
/* A file offset to the vaddr it is loaded at; -1 when no segment has it. */
int sym_file_off_to_vaddr(const struct sym_file *f, uint64_t off,
			  uint64_t *vaddr);

/*
 * JIT symbols from a perf map file (/tmp/perf-PID.map: "START SIZE name"
 * per line, hex).  Addresses are runtime addresses.  Returns 0, or a
 * negative errno with one line in err: -ENOENT when there is no such
 * file, -EINVAL when it is no regular file or a line is malformed.
 */
struct sym_map;
int sym_map_open(const char *path, struct sym_map **out, char *err,
		 size_t errlen);
void sym_map_free(struct sym_map *m);
const struct sym *sym_map_lookup(const struct sym_map *m, uint64_t addr);

/*
 * Kernel symbols from the text of /proc/kallsyms (len bytes, not
 * NUL-ended; what names it in messages): code symbols only, each running
 * to the next, the last one to the end of the address space.  Returns 0, or
 * -ENODATA when every address is 0 (hidden by kptr_restrict), -EINVAL for a
 * malformed line, -ENOMEM, with one line in err.
 */
#define SYM_KERNEL_DSO "[kernel.kallsyms]"
struct sym_kallsyms;
int sym_kallsyms_parse(const char *text, size_t len, const char *what,
		       struct sym_kallsyms **out, char *err, size_t errlen);
void sym_kallsyms_free(struct sym_kallsyms *k);
/* The function at addr, or NULL; *dso: SYM_KERNEL_DSO or "[module]". */
const struct sym *sym_kallsyms_lookup(const struct sym_kallsyms *k,
				      uint64_t addr, const char **dso);
/* Where s, a symbol of k, ends (exclusive). */
uint64_t sym_kallsyms_end(const struct sym_kallsyms *k, const struct sym *s);
/* Where the kernel's text is (_stext or _text to _etext); -ENOENT when
 * kallsyms does not say. */
int sym_kallsyms_text(const struct sym_kallsyms *k, uint64_t *start,
		      uint64_t *end);

/*
 * Where source line `line` of `file` begins in the ELF at path (or its
 * separate debug file): in each function with code for the line (one per
 * inlined copy), the lowest address of a line-table row that starts a
 * statement there.  file is the table's name or its last components
 * ("demo.c", "examples/demo.c") or an absolute path.  Returns the number
 * of addresses (ELF vaddrs, ascending) with them in *addrs (malloc'd, the
 * caller frees), or a negative code with one line in err: -ENOENT when no
 * line table names such a file (or the ELF has none), -ERANGE when the
 * line has no code (err names the nearest lines that do), -EINVAL when
 * the name fits several files (err lists them), -ENOMEM.
 */
int sym_line_addrs(const char *path, const char *file, unsigned line,
		   uint64_t **addrs, char *err, size_t errlen);

/* A source file and the lines where a statement of it begins. */
struct sym_src {
	char *file; /* whole and normalized, as sym_line_addrs takes it */
	unsigned *lines;
	size_t nr_lines, cap_lines;
};

/*
 * Every source file of the DWARF line tables of the ELF at path (or its
 * separate debug file), sorted by name, with its lines that have code,
 * ascending: what a FILE:LINE trigger can name.  Returns 0 with *nr files
 * in *out (free with sym_src_free), or a negative code with one line in
 * err (-ENOENT: no line tables).
 */
int sym_src_list(const char *path, struct sym_src **out, size_t *nr, char *err,
		 size_t errlen);
void sym_src_free(struct sym_src *v, size_t n);

/*
 * libdwfl's find_debuginfo callback (Dwfl_Callbacks), for every user of
 * libdwfl: dwfl_standard_find_debuginfo() on this machine's files only,
 * never a debuginfod server (dwarf.c says why), and never a place that
 * holds a FIFO.
 */
struct Dwfl_Module;
int sym_find_debuginfo(struct Dwfl_Module *mod, void **userdata,
		       const char *modname, uint64_t base,
		       const char *file_name, const char *debuglink_file,
		       uint32_t debuglink_crc, char **debuginfo_file_name);

/*
 * A binary's DWARF (its own, or its separate debug file), read one
 * compilation unit at a time, the first time code of the unit is asked
 * about: a trace runs through a few units of a big library, and reading
 * them all (glibc's debug file has some 1,500) would cost more than the
 * conversion.  Safe to ask from several threads at once.
 */
struct sym_dwarf;
/* Returns 0, or a negative code with one line in err (-ENOENT: the binary
 * has no DWARF, -ENOMEM). */
int sym_dwarf_open(const char *path, const char *debug_root,
		   struct sym_dwarf **out, char *err, size_t errlen);
void sym_dwarf_free(struct sym_dwarf *d);
/* Whether a unit could not be read for want of memory: its lines and
 * inlined calls were missing from what was asked. */
bool sym_dwarf_short(const struct sym_dwarf *d);

/* The file (whole, normalized) and line of the line-table row covering
 * vaddr (an ELF vaddr), as addr2line says them; false when no row does. */
bool sym_dwarf_line(struct sym_dwarf *d, uint64_t vaddr, const char **file,
		    unsigned *line);

/*
 * The calls the compiler inlined (DW_TAG_inlined_subroutine with code):
 * the function inlined, where it is defined, the line of the call it
 * replaced, and the call it is itself inlined in.
 */
struct sym_inline {
	const char *name;      /* the function inlined (demangled) */
	const char *decl_file; /* where it is defined, NULL unknown */
	const char *call_file; /* the call the compiler replaced, NULL */
	unsigned decl_line, call_line;
	uint64_t entry;		     /* its lowest address (ELF vaddr) */
	const struct sym_inline *up; /* the inlined call it is inside,
				      * NULL: inside a real function */
	unsigned depth;		     /* 0 when up is NULL */
};

/* Code [lo, hi) whose innermost inlined call is in. */
struct sym_inline_range {
	uint64_t lo, hi; /* ELF vaddrs */
	const struct sym_inline *in;
};

/*
 * The inlined calls in the unit of the code at vaddr: nr ranges, sorted
 * and disjoint (NULL, 0: none).  Addresses no range covers are their
 * function's own code.  They live as long as d.
 */
const struct sym_inline_range *sym_dwarf_inlines(struct sym_dwarf *d,
						 uint64_t vaddr, size_t *nr);
/* The index of the first of the nr ranges r that ends after vaddr (nr:
 * none). */
size_t sym_inlines_from(const struct sym_inline_range *r, size_t nr,
			uint64_t vaddr);
/* The innermost inlined call covering vaddr, NULL for none. */
const struct sym_inline *sym_inline_at(const struct sym_inline_range *r,
				       size_t nr, uint64_t vaddr);

/* Demangle a C++ or Rust name into buf; returns buf, or name when it is
 * not mangled (or does not fit). */
const char *sym_demangle(const char *name, char *buf, size_t len);

#endif
