/* SPDX-License-Identifier: MIT */
/*
 * symaddr: where triggers and filters land in a running program, for
 * both backends: symbols, FILE:LINE and addresses as runtime addresses,
 * and the kernel's address filters as file offsets (symaddr.c,
 * line_trigger.c).
 */
#ifndef MT_SYMADDR_INTERNAL_H
#define MT_SYMADDR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The runtime address of function sym of exe as process pid maps it, or
 * else of a library it maps now (the first that has it); "addr:0x..." is
 * an address already.  Returns 0, -ENOENT when there is no such symbol
 * (err lists the executable's near names), -EINVAL when several
 * functions of exe share the name (err lists their addresses), or
 * another negative code.
 */
int symaddr_resolve(pid_t pid, const char *exe, const char *sym, uint64_t *out,
		    char *err, size_t errlen);
/*
 * Where main is in exe (an ELF vaddr) when no symbol says: what its entry
 * point (_start) hands __libc_start_main, and its file offset (off may be
 * NULL).  -ENOENT with one line in err
 * when it hands none we can see.  symaddr_resolve() falls back on it for
 * "main".
 */
int symaddr_main_vaddr(const char *exe, uint64_t *vaddr, uint64_t *off,
		       char *err, size_t errlen);
/*
 * A function looked for in every file a process maps, as the files come
 * (--trigger and --start-at name any function of the program or of a
 * library it loads, at start or later by dlopen).  symwatch_new(): NULL
 * when out of memory.
 */
struct symwatch;
struct symwatch *symwatch_new(const char *sym);
/*
 * Look in the files of the executable mappings of pid not looked in yet
 * (a file mapped again elsewhere is looked in again).  Returns how many
 * new addresses of the function it found (all of them: symwatch_addrs),
 * 0, or a negative code with one line in err.
 */
int symwatch_scan(struct symwatch *w, pid_t pid, char *err, size_t errlen);
/* Look in file path only by name (no process): symwatch_in_files() says
 * whether it has the function; -ENOMEM, else 0. */
int symwatch_file(struct symwatch *w, const char *path);
bool symwatch_in_files(const struct symwatch *w);
const uint64_t *symwatch_addrs(const struct symwatch *w, size_t *n);
/* -ENOENT, and the line saying that no file looked in has the function,
 * with the names like it there are. */
int symwatch_missing(const struct symwatch *w, const char *exe, char *err,
		     size_t errlen);
void symwatch_free(struct symwatch *w);
/* The runtime address of data object name of exe in pid, or 0. */
uint64_t symaddr_object(pid_t pid, const char *exe, const char *name);
/*
 * --filter: "START-STOP@FILE[,...]" (START and STOP each a function of
 * FILE or a hex address as nm shows it; FUNC@FILE alone is that
 * function) as the kernel's address-filter string, file offsets and
 * absolute paths ("filter 0x1130/0x40@/path,...").  *nranges: how many.
 */
int symaddr_filters(const char *spec, char *out, size_t outlen,
		    unsigned *nranges, char *err, size_t errlen);
/* The file runtime address addr of pid comes from, and its offset there. */
int symaddr_file_offset(pid_t pid, uint64_t addr, char *path, size_t pathlen,
			uint64_t *off, char *err, size_t errlen);
/* --stop-at-trigger: a TraceStop range on runtime address addr of pid
 * ("stop 0x1139/1@/path"). */
int symaddr_stop_filter(pid_t pid, uint64_t addr, char *out, size_t outlen,
			char *err, size_t errlen);

/*
 * Is spec a FILE:LINE trigger ("demo.c:42")?  If so, its parts go to
 * file (filelen bytes; NULL: only *line) and *line.  "addr:0x..." and symbols
 * are not.
 */
bool line_trigger_spec(const char *spec, char *file, size_t filelen,
		       unsigned *line);
/*
 * The runtime addresses in process pid where FILE:LINE spec begins (see
 * sym_line_addrs), from the DWARF line tables of its executable exe, or,
 * when those know no such file, of the one shared library mapped now that
 * does.  Returns 0 with *n > 0 addresses in *addrs (malloc'd, the caller
 * frees), or a negative code with one line in err that lists the
 * candidates (the nearest lines with code, or the files the name fits).
 */
int line_trigger_resolve(pid_t pid, const char *exe, const char *spec,
			 uint64_t **addrs, size_t *n, char *err, size_t errlen);
/*
 * The same from the executable exe's line tables alone, before any
 * process runs it: the file offsets (of exe) where spec begins.
 */
int line_trigger_offsets(const char *exe, const char *spec, uint64_t **offs,
			 size_t *n, char *err, size_t errlen);

#endif
