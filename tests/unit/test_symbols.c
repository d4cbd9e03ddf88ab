/*
 * symbols: programs compiled here (pie and no-pie, with and without IBT)
 * checked against nm and objdump, separate debug files found by build id
 * and by .gnu_debuglink, MiniDebugInfo, C++ and Rust demangling, perf
 * maps, libc and the vDSO, and corrupt or truncated ELF files.
 */
#include "symbols/symbols.h"
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"

#include <elf.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static char tmp[256];

/* Run a shell command quietly; true when it exits 0. */
static bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool sh(const char *fmt, ...)
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

static bool have_tool(const char *name)
{
	return sh("command -v %s", name);
}

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
static struct ents nm_funcs(const char *opts, const char *path)
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
static struct ents objdump_plt(const char *path)
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

static const struct ent *ents_find(const struct ents *e, const char *name)
{
	for (size_t i = 0; i < e->nr; i++)
		if (!strcmp(e->v[i].name, name))
			return &e->v[i];
	return NULL;
}

static bool ents_has_at(const struct ents *e, uint64_t addr, const char *name)
{
	for (size_t i = 0; i < e->nr; i++)
		if (e->v[i].addr == addr && !strcmp(e->v[i].name, name))
			return true;
	return false;
}

static const struct sym *find_sym(const struct sym_file *f, const char *name)
{
	size_t n;
	const struct sym *s = sym_file_syms(f, &n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

static struct sym_file *open_or_report(struct check_state *st, const char *path,
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
static const struct sym_opts no_root = {.debug_root = ""};

/*
 * Flip a few bytes of d per round, half of them in [lo, hi): every outcome
 * must be a clean load or a clean error naming the image.  Returns the
 * number of rounds that broke that rule.
 */
static size_t fuzz_flips(const uint8_t *d, size_t len, size_t lo, size_t hi,
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
static bool build_prog(const char *name, const char *flags)
{
	char src[300];

	snprintf(src, sizeof(src), "%s/prog.c", tmp);
	if (spit(src, prog_c, sizeof(prog_c) - 1))
		return false;
	return sh("cc -O1 -Wa,-L -Wl,--build-id=sha1 %s -o %s/%s %s", flags,
		  tmp, name, src);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

/* Every nm code symbol resolves to a symbol starting there, with the
 * name nm gives (one of them, when several share the address). */
static void check_against_nm(struct check_state *st, const char *path,
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

static void check_plt(struct check_state *st, const char *path,
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

static void check_prog(struct check_state *st, const char *name,
		       const char *flags)
{
	char path[300];
	struct sym_file *f;
	struct ents e;
	const struct sym *s, *w;
	const struct ent *n;
	size_t nr;

	if (!build_prog(name, flags)) {
		CHECKF(st, 0, "cc %s failed", flags);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	f = open_or_report(st, path, &no_root);
	if (!f)
		return;
	check_against_nm(st, path, f, "");
	check_plt(st, path, f, "puts@plt");

	e = nm_funcs("", path);
	/* Untyped labels in .text count; .L ones do not. */
	for (const char *want = "asm_global"; want;
	     want = strcmp(want, "asm_global") ? NULL : "asm_local") {
		n = ents_find(&e, want);
		s = n ? sym_file_lookup(f, n->addr) : NULL;
		CHECKF(st, n && s && !strcmp(s->name, want), "%s: %s", path,
		       want);
	}
	s = sym_file_syms(f, &nr);
	for (size_t i = 0; i < nr; i++)
		CHECKF(st, strncmp(s[i].name, ".L", 2), "%s: kept %s", path,
		       s[i].name);
	/* asm_local has no size: it runs to the next symbol, so its last
	 * byte (past the .L label) is still its. */
	n = ents_find(&e, "asm_local");
	if (n) {
		s = sym_file_lookup(f, n->addr + 4);
		CHECKF(st, s && !strcmp(s->name, "asm_local"), "%s: +4 is %s",
		       path, s ? s->name : "(none)");
	}
	n = ents_find(&e, "asm_tail");
	s = n ? sym_file_lookup(f, n->addr + 1) : NULL;
	CHECKF(st, s && !strcmp(s->name, "asm_tail"), "%s: asm_tail", path);
	s = n ? sym_file_lookup(f, n->addr + 2) : NULL;
	CHECKF(st, !s || strcmp(s->name, "asm_tail"),
	       "%s: asm_tail runs past its section", path);
	/* Inside, at the last byte, and just past a sized function. */
	w = find_sym(f, "global_work");
	CHECKF(st, w && w->size > 0, "%s: global_work", path);
	if (w && w->size) {
		CHECK(st, sym_file_lookup(f, w->addr + 1) == w);
		CHECK(st, sym_file_lookup(f, w->addr + w->size - 1) == w);
		CHECK(st, sym_file_lookup(f, w->addr + w->size) != w);
	}
	CHECK(st, find_sym(f, "local_helper") != NULL);
	CHECK(st, sym_file_lookup(f, 0) == NULL);
	CHECK(st, sym_file_lookup(f, 0xffffffff00000000ull) == NULL);
	CHECK(st, sym_file_type(f) ==
			  (strstr(flags, "-no-pie") ? ET_EXEC : ET_DYN));
	free(e.v);
	sym_file_free(f);
}

static void test_prog_pie(struct check_state *st)
{
	check_prog(st, "pie", "-fPIE -pie -fcf-protection=none");
}

static void test_prog_nopie(struct check_state *st)
{
	check_prog(st, "nopie", "-fno-PIE -no-pie -fcf-protection=none");
}

static void test_prog_pie_ibt(struct check_state *st)
{
	char p[300];

	check_prog(st, "pie_ibt",
		   "-fPIE -pie -fcf-protection=full -Wl,-z,ibtplt");
	snprintf(p, sizeof(p), "objdump -h %s/pie_ibt | grep -q plt.sec", tmp);
	CHECKF(st, sh("%s", p), "no .plt.sec in the -fcf-protection build");
}

static void test_prog_nopie_ibt(struct check_state *st)
{
	check_prog(st, "nopie_ibt",
		   "-fno-PIE -no-pie -fcf-protection=full -Wl,-z,ibtplt");
}

static void test_prog_now(struct check_state *st)
{
	check_prog(st, "now",
		   "-fPIE -pie -Wl,-z,now -fcf-protection=full -Wl,-z,ibtplt");
}

/* Real binaries of this machine: the dynamic symbols and the PLT. */
static void test_system_binaries(struct check_state *st)
{
	const char *bins[] = {"/bin/ls", "/bin/sh", "/usr/bin/true"};

	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		struct sym_file *f;

		if (access(bins[i], R_OK))
			continue;
		f = open_or_report(st, bins[i], &no_root);
		if (!f)
			continue;
		check_plt(st, bins[i], f, NULL);
		sym_file_free(f);
	}
}

/* The build id that readelf shows, as hex. */
static bool readelf_build_id(const char *path, char *out, size_t len)
{
	char cmd[512], line[512];
	FILE *p;
	bool ok = false;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");

		if (b && sscanf(b + 10, "%127s", out) == 1 && len > 128)
			ok = true;
	}
	pclose(p);
	return ok;
}

static void test_build_id_debug_root(struct check_state *st)
{
	char prog[300], stripped[300], want[256], hex[130], dir[300];
	struct sym_opts o = {.debug_root = dir};
	struct sym_file *f;
	const uint8_t *id;
	size_t len;

	snprintf(prog, sizeof(prog), "%s/bid", tmp);
	snprintf(stripped, sizeof(stripped), "%s/bid.stripped", tmp);
	snprintf(dir, sizeof(dir), "%s/debugroot", tmp);
	if (!build_prog("bid", "-g")) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	CHECK(st, readelf_build_id(prog, want, sizeof(want)));
	f = open_or_report(st, prog, &no_root);
	if (!f)
		return;
	id = sym_file_build_id(f, &len);
	CHECK(st, id && len == 20);
	for (size_t i = 0; id && i < len && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	CHECKF(st, id && !strcmp(hex, want), "build id %s, readelf %s", hex,
	       want);
	sym_file_free(f);
	if (!id)
		return;

	CHECK(st, sh("mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug "
		     "%s %s/.build-id/%.2s/%s.debug",
		     dir, hex, prog, dir, hex, hex + 2));
	CHECK(st, sh("strip --strip-all -o %s %s", stripped, prog));

	/* Stripped, without the root: the local functions are gone. */
	f = open_or_report(st, stripped, &no_root);
	if (f) {
		CHECK(st, find_sym(f, "local_helper") == NULL);
		CHECK(st, find_sym(f, "puts@plt") != NULL);
		sym_file_free(f);
	}
	f = open_or_report(st, stripped, &o);
	if (f) {
		check_against_nm(st, prog, f, "");
		CHECK(st, find_sym(f, "local_helper") != NULL);
		CHECK(st, find_sym(f, "asm_local") != NULL);
		CHECK(st, find_sym(f, "puts@plt") != NULL);
		sym_file_free(f);
	}
	/* A debug file of another build under this build's id (a stale
	 * one: the program was rebuilt) is not used. */
	if (!build_prog("bid2", "-g -fno-omit-frame-pointer -O0")) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	CHECK(st, sh("objcopy --only-keep-debug %s2 %s/.build-id/%.2s/%s.debug",
		     prog, dir, hex, hex + 2));
	f = open_or_report(st, stripped, &o);
	if (f) {
		CHECK(st, find_sym(f, "local_helper") == NULL);
		sym_file_free(f);
	}
}

static void test_debuglink(struct check_state *st)
{
	char prog[300], dir[300], lone[300];
	struct sym_opts o = {.debug_root = "/nonexistent-debug-root"};
	struct sym_file *f;

	snprintf(dir, sizeof(dir), "%s/dl", tmp);
	snprintf(prog, sizeof(prog), "%s/dl/prog", tmp);
	snprintf(lone, sizeof(lone), "%s/dl/lone", tmp);
	if (!sh("mkdir -p %s/.debug", dir) || !build_prog("dl/prog.full", "")) {
		CHECKF(st, 0, "setup failed");
		return;
	}
	/* In .debug/ beside the file, named by .gnu_debuglink. */
	CHECK(st, sh("cd %s && objcopy --only-keep-debug prog.full "
		     ".debug/prog.debug && strip --strip-all -o prog prog.full "
		     "&& cd .debug && objcopy --add-gnu-debuglink=prog.debug "
		     "../prog",
		     dir));
	f = open_or_report(st, prog, &o);
	if (f) {
		CHECK(st, find_sym(f, "local_helper") != NULL);
		sym_file_free(f);
	}
	/* Beside the file. */
	CHECK(st, sh("cd %s && mv .debug/prog.debug . ", dir));
	f = open_or_report(st, prog, &o);
	if (f) {
		CHECK(st, find_sym(f, "local_helper") != NULL);
		sym_file_free(f);
	}
	/* No debug file anywhere: just the dynamic symbols. */
	CHECK(st, sh("cp %s %s && rm %s/prog.debug", prog, lone, dir));
	f = open_or_report(st, lone, &o);
	if (f) {
		CHECK(st, find_sym(f, "local_helper") == NULL);
		sym_file_free(f);
	}
}

/* Flip bytes in one section of the ELF at path (see fuzz_flips). */
static void fuzz_section(struct check_state *st, const char *path,
			 const char *section)
{
	char cmd[600], line[512];
	uint64_t off = 0, size = 0;
	uint8_t *d;
	size_t len;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *at = strstr(line, section);

		if (at && at[strlen(section)] == ' ')
			sscanf(at + strlen(section),
			       " %*s %*s %" SCNx64 " %" SCNx64, &off, &size);
	}
	if (p)
		pclose(p);
	d = slurp(path, &len);
	CHECKF(st, d && size && off + size <= len, "%s: no %s", path, section);
	if (d && size && off + size <= len)
		CHECKF(st, fuzz_flips(d, len, off, off + size, 300, 777) == 0,
		       "%s: bad outcomes flipping %s", path, section);
	free(d);
}

static void test_minidebuginfo(struct check_state *st)
{
	char prog[300], mini[300];
	struct sym_file *f;
	const struct sym *s;
	struct ents e;
	const struct ent *n;

	snprintf(prog, sizeof(prog), "%s/mdi", tmp);
	snprintf(mini, sizeof(mini), "%s/mdi.mini", tmp);
	if (!build_prog("mdi.full", "")) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	/* gdb's MiniDebugInfo recipe, keeping the whole symtab. */
	CHECK(st, sh("cd %s && objcopy --only-keep-debug mdi.full mdi.dbg && "
		     "strip --strip-all -o mdi mdi.full && "
		     "xz -c mdi.dbg > mdi.dbg.xz && "
		     "objcopy --add-section .gnu_debugdata=mdi.dbg.xz mdi",
		     tmp));
	CHECK(st, sh("readelf -S %s | grep -q gnu_debugdata", prog));
	CHECK(st, sh("readelf -S %s | grep -q '] .symtab'", prog) == false);
	f = open_or_report(st, prog, &no_root);
	if (!f)
		return;
	snprintf(mini, sizeof(mini), "%s/mdi.full", tmp);
	check_against_nm(st, mini, f, "");
	e = nm_funcs("", mini);
	n = ents_find(&e, "local_helper");
	s = n ? sym_file_lookup(f, n->addr) : NULL;
	CHECKF(st, s && !strcmp(s->name, "local_helper"), "local_helper");
	CHECK(st, find_sym(f, "puts@plt") != NULL);
	free(e.v);
	sym_file_free(f);
	fuzz_section(st, prog, ".gnu_debugdata");
	/* The inner image itself (sections without bytes, as in every
	 * debug file) under the same abuse. */
	snprintf(mini, sizeof(mini), "%s/mdi.dbg", tmp);
	fuzz_section(st, mini, ".symtab");
}

static const char cxx_src[] =
	"namespace ns {\n"
	"struct Foo { int bar(int x); };\n"
	"int __attribute__((noinline)) Foo::bar(int x) { return x + 1; }\n"
	"}\n"
	"template <typename T> __attribute__((noinline)) T twice(T x)\n"
	"{ return x + x; }\n"
	"int main(int argc, char **)\n"
	"{ ns::Foo f; return f.bar(argc) + twice<int>(argc) +\n"
	"  (int)twice<long>(argc); }\n";

static void test_cxx(struct check_state *st)
{
	static const struct {
		const char *mangled, *plain;
	} want[] = {
		{"_ZN2ns3Foo3barEi", "ns::Foo::bar(int)"},
		{"_Z5twiceIiET_S0_", "int twice<int>(int)"},
		{"_Z5twiceIlET_S0_", "long twice<long>(long)"},
	};
	struct sym_opts raw = {.debug_root = "", .no_demangle = 1};
	char src[300], prog[300];
	struct sym_file *f, *fr;
	struct ents e;

	snprintf(src, sizeof(src), "%s/cxx.cc", tmp);
	snprintf(prog, sizeof(prog), "%s/cxx", tmp);
	CHECK(st, spit(src, cxx_src, sizeof(cxx_src) - 1) == 0);
	if (!sh("c++ -O1 -o %s %s", prog, src)) {
		CHECKF(st, 0, "c++ failed");
		return;
	}
	f = open_or_report(st, prog, &no_root);
	fr = open_or_report(st, prog, &raw);
	e = nm_funcs("", prog);
	for (size_t i = 0; f && fr && i < sizeof(want) / sizeof(want[0]); i++) {
		const struct ent *n = ents_find(&e, want[i].mangled);
		const struct sym *s = n ? sym_file_lookup(f, n->addr) : NULL;
		const struct sym *r = n ? sym_file_lookup(fr, n->addr) : NULL;

		CHECKF(st, n, "nm has no %s", want[i].mangled);
		CHECKF(st, s && !strcmp(s->name, want[i].plain), "%s: %s",
		       want[i].plain, s ? s->name : "(none)");
		CHECKF(st, r && !strcmp(r->name, want[i].mangled), "%s: %s",
		       want[i].mangled, r ? r->name : "(none)");
	}
	free(e.v);
	sym_file_free(f);
	sym_file_free(fr);
}

static void test_demangle_strings(struct check_state *st)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		/* C++ */
		{"_ZN2ns3Foo3barEi", "ns::Foo::bar(int)"},
		{"_ZNKSt6vectorIiSaIiEE4sizeEv",
		 "std::vector<int, std::allocator<int> >::size() const"},
		/* Rust legacy: the hash goes, the $-escapes are decoded */
		{"_ZN3std2rt10lang_start17h0123456789abcdefE",
		 "std::rt::lang_start"},
		{"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$"
		 "RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0a1b2c3d4e5f6789E",
		 "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}"
		 "}>"},
		/* Rust v0 */
		{"_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar"},
		{"_RINvNtC3std3mem8align_ofdE", "std::mem::align_of::<f64>"},
		/* Not mangled: unchanged */
		{"main", "main"},
		{"_start", "_start"},
		{"_Znot_really", "_Znot_really"},
	};
	char buf[512], tiny[8];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *r = sym_demangle(t[i].in, buf, sizeof(buf));

		CHECKF(st, !strcmp(r, t[i].out), "%s -> %s, want %s", t[i].in,
		       r, t[i].out);
	}
	/* Does not fit: the name comes back. */
	CHECK(st, !strcmp(sym_demangle("_ZN2ns3Foo3barEi", tiny, sizeof(tiny)),
			  "_ZN2ns3Foo3barEi"));
}

static void test_perf_map(struct check_state *st)
{
	static const char good[] =
		"7f0000001000 40 jit_one\n"
		"0x7f0000001040 0x20 LazyCompile: *two file.js:12\r\n"
		"\n"
		"7F0000002000 100 old_name\n"
		"7f0000002000 100 new_name\n"
		"7f0000003000 0 sizeless\n"
		"7f0000004000 10 last\n";
	static const char bad[] = "1000 10 ok\n"
				  "2000 10 ok2\n"
				  "zz00 10 broken\n";
	char path[300], err[512];
	struct sym_map *m;
	const struct sym *s;
	int rc;

	snprintf(path, sizeof(path), "%s/perf-123.map", tmp);
	CHECK(st, spit(path, good, sizeof(good) - 1) == 0);
	rc = sym_map_open(path, &m, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc)
		return;
	s = sym_map_lookup(m, 0x7f0000001000);
	CHECK(st, s && !strcmp(s->name, "jit_one") && s->size == 0x40);
	s = sym_map_lookup(m, 0x7f000000103f);
	CHECK(st, s && !strcmp(s->name, "jit_one"));
	s = sym_map_lookup(m, 0x7f0000001050);
	CHECKF(st, s && !strcmp(s->name, "LazyCompile: *two file.js:12"), "%s",
	       s ? s->name : "(none)");
	CHECK(st, sym_map_lookup(m, 0x7f0000001060) == NULL);
	CHECK(st, sym_map_lookup(m, 0x7f0000000fff) == NULL);
	s = sym_map_lookup(m, 0x7f0000002080);
	CHECKF(st, s && !strcmp(s->name, "new_name"), "%s",
	       s ? s->name : "(none)");
	s = sym_map_lookup(m, 0x7f0000003800);
	CHECK(st, s && !strcmp(s->name, "sizeless"));
	CHECK(st, sym_map_lookup(m, 0x7f0000004010) == NULL);
	sym_map_free(m);

	CHECK(st, spit(path, bad, sizeof(bad) - 1) == 0);
	rc = sym_map_open(path, &m, err, sizeof(err));
	CHECK(st, rc < 0 && m == NULL);
	CHECKF(st, strstr(err, "perf-123.map:3:") != NULL, "%s", err);

	rc = sym_map_open("/nonexistent/perf-1.map", &m, err, sizeof(err));
	CHECK(st, rc < 0 && strstr(err, "/nonexistent/perf-1.map"));
}

static void test_open_mem(struct check_state *st)
{
	char path[300], err[512];
	struct sym_file *f, *g = NULL;
	const struct sym *a, *b;
	const struct sym_load *la, *lb;
	size_t len, na, nb, nla, nlb, ia, ib;
	uint8_t *d;
	int rc;

	snprintf(path, sizeof(path), "%s/pie", tmp);
	if (access(path, R_OK) && !build_prog("pie", "-fPIE -pie")) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	d = slurp(path, &len);
	CHECK(st, d != NULL);
	f = open_or_report(st, path, &no_root);
	rc = sym_file_open_mem(d, len, "pie-bytes", &no_root, &g, err,
			       sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (f && g) {
		a = sym_file_syms(f, &na);
		b = sym_file_syms(g, &nb);
		CHECK(st, na == nb && na > 0);
		for (size_t i = 0; i < na && i < nb; i++)
			CHECK(st, a[i].addr == b[i].addr &&
					  a[i].size == b[i].size &&
					  !strcmp(a[i].name, b[i].name));
		la = sym_file_loads(f, &nla);
		lb = sym_file_loads(g, &nlb);
		CHECK(st, nla == nlb && nla > 0 &&
				  !memcmp(la, lb, nla * sizeof(*la)));
		CHECK(st, sym_file_build_id(f, &ia) &&
				  sym_file_build_id(g, &ib) && ia == ib &&
				  !memcmp(sym_file_build_id(f, &ia),
					  sym_file_build_id(g, &ib), ia));
		CHECK(st, sym_file_type(g) == ET_DYN);
		/* The loads agree with readelf, and offsets map back. */
		CHECK(st, sh("test $(readelf -lW %s | grep -c '^ *LOAD') = %zu",
			     path, nla));
		for (size_t i = 0; i < nla; i++) {
			uint64_t v = 0;

			CHECK(st,
			      sym_file_off_to_vaddr(g, la[i].offset, &v) == 0 &&
				      v == la[i].vaddr);
			if (la[i].filesz > 1)
				CHECK(st,
				      sym_file_off_to_vaddr(
					      g,
					      la[i].offset + la[i].filesz - 1,
					      &v) == 0 &&
					      v == la[i].vaddr + la[i].filesz -
							      1);
		}
		{
			uint64_t v;

			CHECK(st,
			      sym_file_off_to_vaddr(g, 1ull << 40, &v) == -1);
		}
	}
	/* The image was copied: scribbling over ours changes nothing. */
	memset(d, 0, len);
	if (g)
		CHECK(st, find_sym(g, "global_work") != NULL);
	free(d);
	sym_file_free(f);
	sym_file_free(g);
}

/* Where this process's [vdso] is, or false. */
static bool vdso_range(uint64_t *lo, uint64_t *hi)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), a, b;
	char line[512];
	FILE *m;
	bool found = false;

	if (!base)
		return false;
	m = fopen("/proc/self/maps", "r");
	while (m && fgets(line, sizeof(line), m))
		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) == 2 &&
		    a == base) {
			*lo = a;
			*hi = b;
			found = true;
		}
	if (m)
		fclose(m);
	return found;
}

/* The [vdso] of this process, the image a capture saves. */
static void test_vdso(struct check_state *st)
{
	uint64_t lo = 0, hi = 0;
	struct sym_file *f = NULL;
	char err[512];
	int rc;

	if (!vdso_range(&lo, &hi))
		return;
	rc = sym_file_open_mem((const void *)(uintptr_t)lo, hi - lo, "[vdso]",
			       &no_root, &f, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (!f)
		return;
	CHECK(st, find_sym(f, "__vdso_clock_gettime") ||
			  find_sym(f, "clock_gettime"));
	CHECK(st, sym_file_type(f) == ET_DYN);
	sym_file_free(f);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* libc as this process maps it: speed, nm -D, and its PLT (mostly
 * IRELATIVE slots, which objdump calls *ABS*+0xADDR@plt). */
static void test_libc(struct check_state *st)
{
	char line[1024], path[512] = "";
	struct sym_opts dflt = {0};
	struct sym_file *f;
	struct ents e, nm;
	size_t n, bad = 0, irel = 0;
	double t0, t1;
	FILE *m = fopen("/proc/self/maps", "r");

	while (m && fgets(line, sizeof(line), m)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(path, sizeof(path), "%s", p);
		}
	}
	if (m)
		fclose(m);
	if (!path[0]) {
		printf("SKIP test_libc (libc not mapped)\n");
		return;
	}
	t0 = now_ms();
	f = open_or_report(st, path, &dflt);
	t1 = now_ms();
	if (!f)
		return;
	sym_file_syms(f, &n);
	printf("libc: %zu symbols in %.2f ms (%s, debug root %s)\n", n, t1 - t0,
	       path, "/usr/lib/debug");
	sym_file_free(f);
	t0 = now_ms();
	f = open_or_report(st, path, &no_root);
	t1 = now_ms();
	if (!f)
		return;
	sym_file_syms(f, &n);
	printf("libc: %zu symbols in %.2f ms (.dynsym only)\n", n, t1 - t0);
	check_against_nm(st, path, f, "-D");

	e = objdump_plt(path);
	nm = nm_funcs("-D", path);
	for (size_t i = 0; i < e.nr; i++) {
		const struct sym *s = sym_file_lookup(f, e.v[i].addr);
		uint64_t target;
		char want[300];
		bool ok = false;

		if (sscanf(e.v[i].name, "*ABS*+0x%" SCNx64 "@plt", &target) !=
		    1)
			continue;
		irel++;
		/* Ours is named after an IFUNC symbol at the resolver. */
		for (size_t j = 0; j < nm.nr && s; j++) {
			snprintf(want, sizeof(want), "%s@plt", nm.v[j].name);
			if (nm.v[j].addr == target && !strcmp(want, s->name))
				ok = true;
		}
		if (!ok && bad++ < 5)
			fprintf(stderr, "  %s: %s, we: %s\n", path, e.v[i].name,
				s ? s->name : "(none)");
	}
	CHECKF(st, bad == 0, "%zu of %zu IRELATIVE PLT entries", bad, irel);
	check_plt(st, path, f, NULL);
	free(e.v);
	free(nm.v);
	sym_file_free(f);
}

static void test_errors(struct check_state *st)
{
	char path[300], err[512];
	struct sym_file *f = (struct sym_file *)1;
	int rc;

	rc = sym_file_open("/nonexistent/x", NULL, &f, err, sizeof(err));
	CHECK(st, rc < 0 && f == NULL);
	CHECKF(st, strstr(err, "/nonexistent/x") && !strchr(err, '\n'), "%s",
	       err);

	snprintf(path, sizeof(path), "%s/text", tmp);
	CHECK(st, spit(path, "hello, world\n", 13) == 0);
	rc = sym_file_open(path, NULL, &f, err, sizeof(err));
	CHECKF(st, rc < 0 && strstr(err, path) && strstr(err, "not an ELF"),
	       "%s", err);

	snprintf(path, sizeof(path), "%s/empty", tmp);
	CHECK(st, spit(path, "", 0) == 0);
	rc = sym_file_open(path, NULL, &f, err, sizeof(err));
	CHECKF(st, rc < 0 && strstr(err, path), "%s", err);

	rc = sym_file_open(tmp, NULL, &f, err, sizeof(err));
	CHECKF(st, rc < 0 && strstr(err, tmp), "%s", err);

	rc = sym_file_open_mem("\177ELF", 4, "four-bytes", NULL, &f, err,
			       sizeof(err));
	CHECKF(st, rc < 0 && strstr(err, "four-bytes"), "%s", err);
	rc = sym_file_open_mem("", 0, NULL, NULL, &f, err, sizeof(err));
	CHECK(st, rc < 0 && f == NULL);
	/* A tiny error buffer is not overrun. */
	rc = sym_file_open("/nonexistent/y", NULL, &f, err, 4);
	CHECK(st, rc < 0 && strlen(err) < 4);
}

/* Truncate and corrupt a real ELF: every outcome must be a clean load or
 * a clean error (ASan and valgrind watch the rest). */
static void test_corrupt(struct check_state *st)
{
	const char *src =
		access("/usr/bin/true", R_OK) ? "/bin/true" : "/usr/bin/true";
	char path[300], err[512];
	uint8_t *d;
	size_t len, ok = 0, failed = 0, bad_msg = 0;

	d = slurp(src, &len);
	if (!d || len < 1024) {
		CHECKF(st, 0, "cannot read %s", src);
		free(d);
		return;
	}
	for (size_t n = 0; n <= len; n += n < 4096 ? 1 : 61) {
		struct sym_file *f;
		int rc = sym_file_open_mem(d, n, "cut", &no_root, &f, err,
					   sizeof(err));

		if (rc == 0) {
			ok++;
			sym_file_free(f);
		} else {
			failed++;
			bad_msg += !strstr(err, "cut");
		}
	}
	/* The same through files (libelf maps those). */
	snprintf(path, sizeof(path), "%s/cut", tmp);
	for (size_t n = 0; n <= len; n += 509) {
		struct sym_file *f;
		int rc;

		if (spit(path, d, n))
			break;
		rc = sym_file_open(path, &no_root, &f, err, sizeof(err));
		if (rc == 0)
			sym_file_free(f);
		else
			bad_msg += !strstr(err, path);
	}
	/* Flip bytes: in the ELF header and program headers, and in the
	 * section headers at the end. */
	bad_msg += fuzz_flips(d, len, 0, 4096, 1500, 12345);
	bad_msg += fuzz_flips(d, len, len - 4096, len, 1500, 54321);
	printf("corrupt: %zu truncations loaded, %zu refused\n", ok, failed);
	CHECK(st, failed > 0 && ok > 0);
	CHECKF(st, bad_msg == 0, "%zu bad outcomes", bad_msg);
	free(d);
}

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
	bool have_cc = have_tool("cc") && have_tool("nm") &&
		       have_tool("objdump") && have_tool("objcopy") &&
		       have_tool("strip") && have_tool("readelf");

	snprintf(tmp, sizeof(tmp), "/tmp/test_symbols.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	if (have_cc) {
		RUN(&st, test_prog_pie);
		RUN(&st, test_prog_nopie);
		RUN(&st, test_prog_pie_ibt);
		RUN(&st, test_prog_nopie_ibt);
		RUN(&st, test_prog_now);
		RUN(&st, test_system_binaries);
		RUN(&st, test_build_id_debug_root);
		RUN(&st, test_debuglink);
		if (have_tool("xz"))
			RUN(&st, test_minidebuginfo);
		else
			printf("SKIP test_minidebuginfo (no xz)\n");
		if (have_tool("c++"))
			RUN(&st, test_cxx);
		else
			printf("SKIP test_cxx (no c++)\n");
		RUN(&st, test_open_mem);
		RUN(&st, test_lines);
		RUN(&st, test_libc);
	} else {
		printf("SKIP test_prog_* (needs cc and binutils)\n");
	}
	RUN(&st, test_demangle_strings);
	RUN(&st, test_perf_map);
	{
		uint64_t lo, hi;

		if (vdso_range(&lo, &hi))
			RUN(&st, test_vdso);
		else
			printf("SKIP test_vdso (no [vdso] mapped)\n");
	}
	RUN(&st, test_errors);
	RUN(&st, test_corrupt);
	nftw(tmp, testfs_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return CHECK_DONE(&st);
}
