/* SPDX-License-Identifier: MIT */
/*
 * symbols: source lines to addresses through the DWARF line tables
 * (FILE:LINE triggers).
 */
#include "symbols/symbols.h"
#include "tests/unit/check.h"
#include "tests/unit/symtest.h"
#include "tests/unit/testfs.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(text, f) >= 0;
	return !fclose(f) && ok;
}

/*
 * Source lines: a header's inline function compiled into two callers gives
 * one address in each; a line of the .c file its own function's; a line
 * without code, a file that is not there and a name that fits two files
 * are refused with the candidates; a stripped binary finds its lines in
 * its separate debug file.
 */
static void test_lines(struct check_state *st)
{
	char dir[300], prog[400], bin[400], err[512];
	struct sym_file *sf = NULL;
	uint64_t *a = NULL;
	int n;

	snprintf(dir, sizeof(dir), "%s/lines", tmp);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(bin, sizeof(bin), "%s/stripped", dir);
	CHECK(st, sh("mkdir -p %s/x %s/y", dir, dir));
	CHECK(st, put_file(dir, "inl.h",
			   "static inline int twice(int v)\n{\n"
			   "\treturn v * 2 + 1;\n}\n"));
	CHECK(st, put_file(dir, "m.c",
			   "#include \"inl.h\"\n"
			   "__attribute__((noinline)) int f1(int v)\n{\n"
			   "\treturn twice(v) + 3;\n}\n\n"
			   "__attribute__((noinline)) int f2(int v)\n{\n"
			   "\treturn twice(v) - 7;\n}\n"
			   "int main(int c, char **v)\n{\n"
			   "\treturn f1(c) + f2(c);\n}\n"));
	CHECK(st, put_file(dir, "x/same.c", "int one(void) { return 1; }\n"));
	CHECK(st, put_file(dir, "y/same.c", "int two(void) { return 2; }\n"));
	CHECK(st, sh("cd %s && cc -O2 -g -o prog m.c x/same.c y/same.c", dir));
	CHECK(st, !sym_file_open(prog, NULL, &sf, err, sizeof(err)));
	if (!sf)
		return;
	n = sym_line_addrs(prog, "inl.h", 3, &a, err, sizeof(err));
	CHECKF(st, n == 2, "inl.h:3: %d (%s)", n, n < 0 ? err : "");
	if (n == 2) {
		const struct sym *s0 = sym_file_lookup(sf, a[0]);
		const struct sym *s1 = sym_file_lookup(sf, a[1]);

		CHECK(st, s0 && s1 && s0 != s1);
		CHECK(st, s0 && s1 &&
				  ((!strcmp(s0->name, "f1") &&
				    !strcmp(s1->name, "f2")) ||
				   (!strcmp(s0->name, "f2") &&
				    !strcmp(s1->name, "f1"))));
	}
	free(a);
	a = NULL;
	n = sym_line_addrs(prog, "m.c", 8, &a, err, sizeof(err));
	CHECKF(st, n == 1, "m.c:8: %d (%s)", n, n < 0 ? err : "");
	if (n == 1) {
		const struct sym *s = sym_file_lookup(sf, a[0]);

		CHECK(st, s && !strcmp(s->name, "f2"));
	}
	free(a);
	a = NULL;
	n = sym_line_addrs(prog, "m.c", 6, &a, err, sizeof(err));
	CHECKF(st,
	       n == -ERANGE && strstr(err, "nearest lines that do: 5 and 8"),
	       "m.c:6: %d (%s)", n, err);
	n = sym_line_addrs(prog, "nope.c", 1, &a, err, sizeof(err));
	CHECK(st, n == -ENOENT && strstr(err, "no source file 'nope.c'"));
	n = sym_line_addrs(prog, "same.c", 1, &a, err, sizeof(err));
	CHECKF(st,
	       n == -EINVAL && strstr(err, "x/same.c") &&
		       strstr(err, "y/same.c"),
	       "same.c: %d (%s)", n, err);
	n = sym_line_addrs(prog, "x/same.c", 1, &a, err, sizeof(err));
	CHECKF(st, n == 1, "x/same.c: %d (%s)", n, n < 0 ? err : "");
	free(a);
	a = NULL;
	/* Stripped, with its DWARF in a file found by .gnu_debuglink. */
	CHECK(st,
	      sh("cd %s && objcopy --only-keep-debug prog stripped.debug && "
		 "objcopy --strip-all --add-gnu-debuglink=stripped.debug "
		 "prog stripped",
		 dir));
	n = sym_line_addrs(bin, "m.c", 8, &a, err, sizeof(err));
	CHECKF(st, n == 1, "stripped m.c:8: %d (%s)", n, n < 0 ? err : "");
	free(a);
	sym_file_free(sf);
}

/*
 * A binary's DWARF a unit at a time: three functions inlined two deep
 * give, at the code of the innermost, the chain inner < middle < (outer's
 * own code) with the lines of the calls the compiler replaced, and the
 * line addr2line gives; the ranges are sorted and disjoint; a stripped
 * binary reads them from its debug file; a binary without DWARF has none.
 */
static void test_dwarf_units(struct check_state *st)
{
	char dir[300], prog[400], err[512];
	struct sym_dwarf *d = NULL;
	const struct sym_inline_range *r;
	const struct sym_inline *in;
	const char *file;
	unsigned line;
	uint64_t *a = NULL;
	size_t nr;
	int n, rc;

	snprintf(dir, sizeof(dir), "%s/inl", tmp);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	CHECK(st, sh("mkdir -p %s", dir));
	CHECK(st, put_file(dir, "n.c",
			   "static inline __attribute__((always_inline)) "
			   "int inner(int v)\n{\n"
			   "\treturn v * 3 + 1;\n}\n"
			   "static inline __attribute__((always_inline)) "
			   "int middle(int v)\n{\n"
			   "\treturn inner(v) ^ 5;\n}\n"
			   "__attribute__((noinline)) int outer(int v)\n{\n"
			   "\treturn middle(v) + 2;\n}\n"
			   "int main(int c, char **v)\n{\n"
			   "\t(void)v;\n\treturn outer(c);\n}\n"));
	CHECK(st, put_file(dir, "other.c",
			   "int other(int v)\n{\n"
			   "\treturn v - 1;\n}\n"));
	CHECK(st, sh("cd %s && cc -O2 -g -o prog n.c other.c && "
		     "cc -O2 -o plain n.c && "
		     "objcopy --only-keep-debug prog prog.debug && "
		     "objcopy --strip-all --add-gnu-debuglink=prog.debug "
		     "prog stripped",
		     dir));
	n = sym_line_addrs(prog, "n.c", 3, &a, err, sizeof(err));
	CHECKF(st, n >= 1, "n.c:3: %d (%s)", n, n < 0 ? err : "");
	if (n < 1)
		return;
	for (int k = 0; k < 2; k++) {
		char path[400];

		snprintf(path, sizeof(path), "%s/%s", dir,
			 k ? "stripped" : "prog");
		rc = sym_dwarf_open(path, NULL, &d, err, sizeof(err));
		CHECKF(st, !rc && d, "%s: %d (%s)", path, rc, err);
		if (!d)
			break;
		CHECK(st, sym_dwarf_line(d, a[0], &file, &line) && line == 3 &&
				  strstr(file, "/inl/n.c"));
		r = sym_dwarf_inlines(d, a[0], &nr);
		CHECK(st, r && nr > 0);
		for (size_t i = 0; i < nr; i++)
			CHECK(st, r[i].lo < r[i].hi &&
					  (!i || r[i - 1].hi <= r[i].lo));
		in = sym_inline_at(r, nr, a[0]);
		CHECKF(st,
		       in && !strcmp(in->name, "inner") && in->call_line == 7 &&
			       in->depth == 1 && in->decl_line == 1 &&
			       strstr(in->call_file, "/inl/n.c"),
		       "at n.c:3: %s, called at line %u, depth %u",
		       in ? in->name : "nothing", in ? in->call_line : 0,
		       in ? in->depth : 0);
		in = in ? in->up : NULL;
		CHECKF(st,
		       in && !strcmp(in->name, "middle") &&
			       in->call_line == 11 && !in->up && !in->depth,
		       "around it: %s, called at line %u",
		       in ? in->name : "nothing", in ? in->call_line : 0);
		/* Below the code, and the other unit's code, inline
		 * nothing. */
		CHECK(st, !sym_inline_at(r, nr, 0));
		CHECK(st, !sym_dwarf_inlines(d, 0, &nr) && !nr);
		sym_dwarf_free(d);
		d = NULL;
	}
	free(a);
	snprintf(prog, sizeof(prog), "%s/plain", dir);
	rc = sym_dwarf_open(prog, NULL, &d, err, sizeof(err));
	CHECKF(st, rc == -ENOENT && !d, "plain: %d (%s)", rc, err);
}

int main(void)
{
	struct check_state st = {0};

	if (!symtest_start())
		return 2;
	if (symtest_have_cc())
		RUN(&st, test_lines);
	else
		printf("SKIP test_lines (needs cc and binutils)\n");
	if (symtest_have_cc())
		RUN(&st, test_dwarf_units);
	else
		printf("SKIP test_dwarf_units (needs cc and binutils)\n");
	symtest_end();
	return CHECK_DONE(&st);
}
