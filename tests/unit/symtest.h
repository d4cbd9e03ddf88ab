/* SPDX-License-Identifier: MIT */
/*
 * What the symbols tests share (symtest.c): a scratch directory, shell
 * commands, a small C program built with any flags, the functions nm and
 * objdump list, and checks of a sym_file against them.
 */
#ifndef MT_SYMTEST_H
#define MT_SYMTEST_H

#include "symbols/symbols.h"
#include "tests/unit/check.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The scratch directory of the test program (symtest_start). */
extern char tmp[256];

/* A debug root with nothing in it, so that the host's debug files do not
 * decide what the tests see. */
extern const struct sym_opts no_root;

/* One line of nm or objdump output: an address and a name. */
struct ent {
	uint64_t addr;
	char type;
	char name[256];
};

struct ents {
	struct ent *v;
	size_t nr;
};

/* Make the scratch directory; false (said on stderr) when it cannot be. */
bool symtest_start(void);
void symtest_end(void);
/* Whether cc and the binutils the tests compare with are installed. */
bool symtest_have_cc(void);

/* Run a shell command quietly; true when it exits 0. */
bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

bool have_tool(const char *name);

/*
 * nm's code symbols, by our rule: functions (FUNC, IFUNC), and untyped
 * labels in code sections, without .L temporaries; symbol versions
 * ("@@GLIBC_2.2.5") cut off.  nm's System V format gives type and section.
 */
struct ents nm_funcs(const char *opts, const char *path);

/* objdump -d's "<name@plt>:" labels. */
struct ents objdump_plt(const char *path);

const struct ent *ents_find(const struct ents *e, const char *name);

bool ents_has_at(const struct ents *e, uint64_t addr, const char *name);

const struct sym *find_sym(const struct sym_file *f, const char *name);

struct sym_file *open_or_report(struct check_state *st, const char *path,
				const struct sym_opts *o);

/*
 * Flip a few bytes of d per round, half of them in [lo, hi): every outcome
 * must be a clean load or a clean error naming the image.  Returns the
 * number of rounds that broke that rule.
 */
size_t fuzz_flips(const uint8_t *d, size_t len, size_t lo, size_t hi,
		  int rounds, uint32_t seed);

/* Build symtest.c's small C program as tmp/name with extra cc flags. */
bool build_prog(const char *name, const char *flags);

/* Every nm code symbol resolves to a symbol starting there, with the
 * name nm gives (one of them, when several share the address). */
void check_against_nm(struct check_state *st, const char *path,
		      const struct sym_file *f, const char *nm_opts);

void check_plt(struct check_state *st, const char *path,
	       const struct sym_file *f, const char *must);

#endif
