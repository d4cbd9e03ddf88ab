/* SPDX-License-Identifier: MIT */
/*
 * The helpers of the symbols tests (symtest.h).
 */
#include "tests/unit/symtest.h"
#include "tests/unit/testfs.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char tmp[256];

bool sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd) - 20, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd) - 20)
		return false;
	strcat(cmd, " >/dev/null 2>&1");
	return system(cmd) == 0;
}

bool have_tool(const char *name)
{
	return sh("command -v %s", name);
}

static void ents_add(struct ents *e, uint64_t addr, char type, const char *name)
{
	struct ent *n = realloc(e->v, (e->nr + 1) * sizeof(*n));

	if (!n)
		abort();
	e->v = n;
	n[e->nr].addr = addr;
	n[e->nr].type = type;
	snprintf(n[e->nr].name, sizeof(n[e->nr].name), "%s", name);
	e->nr++;
}

/* Trim blanks at both ends of s, in place. */
static char *trim(char *s)
{
	size_t n;

	while (*s == ' ')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/*
 * nm's code symbols, by our rule: functions (FUNC, IFUNC), and untyped
 * labels in code sections, without .L temporaries; symbol versions
 * ("@@GLIBC_2.2.5") cut off.  nm's System V format gives type and section.
 */
struct ents nm_funcs(const char *opts, const char *path)
{
	struct ents e = {0};
	char cmd[1024], line[2048];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "nm %s -f sysv --defined-only '%s' 2>/dev/null", opts, path);
	p = popen(cmd, "r");
	if (!p)
		return e;
	while (fgets(line, sizeof(line), p)) {
		char *f[7], *save = NULL, *tok = strtok_r(line, "|", &save);
		int n = 0;

		for (; tok && n < 7; tok = strtok_r(NULL, "|", &save))
			f[n++] = trim(tok);
		if (n != 7)
			continue;
		f[0][strcspn(f[0], "@")] = '\0';
		if (!f[0][0] || !strncmp(f[0], ".L", 2))
			continue;
		/* nm prints IFUNC as "<OS specific>: 10" here. */
		if (strcmp(f[3], "FUNC") && strcmp(f[2], "i") &&
		    !(!strcmp(f[3], "NOTYPE") &&
		      (!strncmp(f[6], ".text", 5) || !strcmp(f[6], ".init") ||
		       !strcmp(f[6], ".fini") || !strcmp(f[6], ".mytext"))))
			continue;
		ents_add(&e, strtoull(f[1], NULL, 16), f[2][0], f[0]);
	}
	pclose(p);
	return e;
}

/* objdump -d's "<name@plt>:" labels. */
struct ents objdump_plt(const char *path)
{
	struct ents e = {0};
	char cmd[1024], line[1024], name[512];
	uint64_t addr;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' "
		 "2>/dev/null",
		 path);
	p = popen(cmd, "r");
	if (!p)
		return e;
	while (fgets(line, sizeof(line), p)) {
		char *end;

		if (sscanf(line, "%" SCNx64 " <%511[^>]>:", &addr, name) != 2)
			continue;
		end = strstr(name, "@plt");
		if (end && !end[4])
			ents_add(&e, addr, 'P', name);
	}
	pclose(p);
	return e;
}

const struct ent *ents_find(const struct ents *e, const char *name)
{
	for (size_t i = 0; i < e->nr; i++)
		if (!strcmp(e->v[i].name, name))
			return &e->v[i];
	return NULL;
}

bool ents_has_at(const struct ents *e, uint64_t addr, const char *name)
{
	for (size_t i = 0; i < e->nr; i++)
		if (e->v[i].addr == addr && !strcmp(e->v[i].name, name))
			return true;
	return false;
}

const struct sym *find_sym(const struct sym_file *f, const char *name)
{
	size_t n;
	const struct sym *s = sym_file_syms(f, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

struct sym_file *open_or_report(struct check_state *st, const char *path,
				const struct sym_opts *o)
{
	struct sym_file *f = NULL;
	char err[512];
	int rc = sym_file_open(path, o, &f, err, sizeof(err));

	CHECKF(st, rc == 0, "%s", err);
	return f;
}

/* A debug root with nothing in it, so that the host's debug files do not
 * decide what the tests see. */
const struct sym_opts no_root = {.debug_root = ""};

/*
 * Flip a few bytes of d per round, half of them in [lo, hi): every outcome
 * must be a clean load or a clean error naming the image.  Returns the
 * number of rounds that broke that rule.
 */
size_t fuzz_flips(const uint8_t *d, size_t len, size_t lo, size_t hi,
		  int rounds, uint32_t seed)
{
	uint8_t *c = malloc(len);
	size_t bad = 0;
	char err[512];

	if (!c)
		abort();
	for (int it = 0; it < rounds; it++) {
		struct sym_file *f;
		int flips;

		memcpy(c, d, len);
		seed = seed * 1103515245 + 12345;
		flips = 1 + (int)(seed >> 16) % 4;
		for (int k = 0; k < flips; k++) {
			size_t at;

			seed = seed * 1103515245 + 12345;
			at = k & 1 ? (seed >> 4) % len
				   : lo + (seed >> 4) % (hi - lo);
			seed = seed * 1103515245 + 12345;
			c[at] ^= (uint8_t)(1u << ((seed >> 16) & 7)) |
				 (uint8_t)(seed >> 24);
		}
		if (sym_file_open_mem(c, len, "flipped", &no_root, &f, err,
				      sizeof(err)) == 0) {
			size_t n;
			const struct sym *s = sym_file_syms(f, &n);

			/* Whatever loaded must be usable. */
			for (size_t i = 0; i < n; i++)
				bad += sym_file_lookup(f, s[i].addr) == NULL;
			sym_file_free(f);
		} else {
			bad += !strstr(err, "flipped");
		}
	}
	free(c);
	return bad;
}

static const char prog_c[] =
	"#include <stdio.h>\n"
	"static int __attribute__((noinline)) local_helper(int x)\n"
	"{ return x * 3 + 1; }\n"
	"int __attribute__((noinline)) global_work(int x)\n"
	"{ return local_helper(x) + 2; }\n"
	/* Labels without .type, as hand-written assembly has; one .L
	 * label that -Wa,-L keeps in the symbol table. */
	"__asm__(\".text\\n.globl asm_global\\nasm_global:\\n"
	"\\tmov $1, %eax\\n\\tret\\nasm_local:\\n\\txor %eax, %eax\\n"
	"\\tnop\\n.Lnot_a_function:\\n\\tnop\\n\\tret\\n\");\n"
	/* A label alone in a section of its own: it must not run on to
	 * whatever symbol comes next in another section. */
	"__asm__(\".section .mytext,\\\"ax\\\",@progbits\\nasm_tail:\\n"
	"\\tnop\\n\\tret\\n\\t.text\\n\");\n"
	"int asm_global(void);\n"
	"int main(int argc, char **argv)\n"
	"{ (void)argv; puts(\"hello\"); printf(\"%d\\n\", global_work(argc));\n"
	"  return asm_global(); }\n";

/* Build prog_c as tmp/name with extra cc flags. */
bool build_prog(const char *name, const char *flags)
{
	char src[300];

	snprintf(src, sizeof(src), "%s/prog.c", tmp);
	if (spit(src, prog_c, sizeof(prog_c) - 1))
		return false;
	return sh("cc -O1 -Wa,-L -Wl,--build-id=sha1 %s -o %s/%s %s", flags,
		  tmp, name, src);
}

/* Every nm code symbol resolves to a symbol starting there, with the
 * name nm gives (one of them, when several share the address). */
void check_against_nm(struct check_state *st, const char *path,
		      const struct sym_file *f, const char *nm_opts)
{
	struct ents e = nm_funcs(nm_opts, path);
	size_t bad = 0;

	CHECKF(st, e.nr > 0, "nm %s %s found nothing", nm_opts, path);
	for (size_t i = 0; i < e.nr; i++) {
		const struct sym *s = sym_file_lookup(f, e.v[i].addr);

		if (s && s->addr == e.v[i].addr &&
		    ents_has_at(&e, s->addr, s->name))
			continue;
		if (bad++ < 5)
			fprintf(stderr, "  %s: nm %" PRIx64 " %s; we: %s\n",
				path, e.v[i].addr, e.v[i].name,
				s ? s->name : "(none)");
	}
	CHECKF(st, bad == 0, "%zu of %zu nm symbols differ in %s", bad, e.nr,
	       path);
	free(e.v);
}

void check_plt(struct check_state *st, const char *path,
	       const struct sym_file *f, const char *must)
{
	struct ents e = objdump_plt(path);
	size_t bad = 0;

	CHECKF(st, !must || ents_find(&e, must), "objdump shows no %s in %s",
	       must, path);
	for (size_t i = 0; i < e.nr; i++) {
		const struct sym *s = sym_file_lookup(f, e.v[i].addr);

		if (s && s->addr == e.v[i].addr &&
		    !strcmp(s->name, e.v[i].name))
			continue;
		/* objdump calls IRELATIVE slots "*ABS*+0xADDR@plt";
		 * checked in test_libc. */
		if (!strncmp(e.v[i].name, "*ABS*", 5))
			continue;
		if (bad++ < 5)
			fprintf(stderr,
				"  %s: objdump %" PRIx64 " %s; we: %s\n", path,
				e.v[i].addr, e.v[i].name,
				s ? s->name : "(none)");
	}
	CHECKF(st, bad == 0, "%zu of %zu PLT entries differ in %s", bad, e.nr,
	       path);
	free(e.v);
}

bool symtest_start(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/test_symbols.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return false;
	}
	return true;
}

void symtest_end(void)
{
	nftw(tmp, testfs_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

bool symtest_have_cc(void)
{
	return have_tool("cc") && have_tool("nm") && have_tool("objdump") &&
	       have_tool("objcopy") && have_tool("strip") &&
	       have_tool("readelf");
}
