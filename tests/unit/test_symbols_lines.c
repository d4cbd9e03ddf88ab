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

int main(void)
{
	struct check_state st = {0};

	if (!symtest_start())
		return 2;
	if (symtest_have_cc())
		RUN(&st, test_lines);
	else
		printf("SKIP test_lines (needs cc and binutils)\n");
	symtest_end();
	return CHECK_DONE(&st);
}
