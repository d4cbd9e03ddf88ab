/* SPDX-License-Identifier: MIT */
/*
 * symbols: programs compiled here (pie and no-pie, with and without IBT,
 * bound now) and this machine's binaries checked against nm and objdump,
 * separate debug files found by build id and by .gnu_debuglink, and
 * MiniDebugInfo.  (Names: test_symbols_names.c; images in memory, libc,
 * the vDSO and damaged ELF: test_symbols_images.c; source lines:
 * test_symbols_lines.c.)
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

/*
 * A stripped program's own functions have no symbols left, but its
 * unwind tables still say where each begins and ends: every function the
 * compiler wrote (with CFI) is found, from any address inside it, as the
 * symbol table before stripping had it; hand-written code without CFI is
 * in none.
 */
static void test_unwind_functions(struct check_state *st)
{
	static const char *const fns[] = {"local_helper", "global_work",
					  "main"};
	char prog[300], stripped[300];
	struct sym_file *f, *g;
	uint64_t lo, hi;

	snprintf(prog, sizeof(prog), "%s/fde", tmp);
	snprintf(stripped, sizeof(stripped), "%s/fde.stripped", tmp);
	if (!build_prog("fde", "-fasynchronous-unwind-tables")) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	CHECK(st, sh("strip --strip-all -o %s %s", stripped, prog));
	f = open_or_report(st, prog, &no_root);
	g = open_or_report(st, stripped, &no_root);
	if (!f || !g)
		goto out;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		const struct sym *s = find_sym(f, fns[i]);

		CHECKF(st, s && s->size, "%s: no sized symbol", fns[i]);
		if (!s || !s->size)
			continue;
		CHECKF(st, !find_sym(g, fns[i]), "%s survived strip", fns[i]);
		for (uint64_t at = s->addr;
		     at<s->addr + s->size; at += s->size> 8 ? s->size / 4 : 1) {
			bool in = sym_file_fde(g, at, &lo, &hi);

			CHECKF(st,
			       in && lo == s->addr && hi == s->addr + s->size,
			       "%s+%#llx: [%#llx, %#llx), want [%#llx, %#llx)",
			       fns[i], (unsigned long long)(at - s->addr),
			       (unsigned long long)(in ? lo : 0),
			       (unsigned long long)(in ? hi : 0),
			       (unsigned long long)s->addr,
			       (unsigned long long)(s->addr + s->size));
		}
	}
	{
		const struct sym *a = find_sym(f, "asm_local");

		CHECK(st, a != NULL);
		CHECKF(st, a && !sym_file_fde(g, a->addr, &lo, &hi),
		       "asm_local (no CFI) in [%#llx, %#llx)",
		       (unsigned long long)lo, (unsigned long long)hi);
	}
out:
	sym_file_free(f);
	sym_file_free(g);
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

/* Damaged unwind tables (test_unwind_functions() built the program):
 * bits flipped in them never crash the reader or read past them. */
static void test_unwind_tables_damaged(struct check_state *st)
{
	char stripped[300];

	snprintf(stripped, sizeof(stripped), "%s/fde.stripped", tmp);
	fuzz_section(st, stripped, ".eh_frame_hdr");
	fuzz_section(st, stripped, ".eh_frame");
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

/*
 * Landing pads: a function whose cleanup runs when an exception passes
 * (C with -fexceptions) has an LSDA; one without has none; a file
 * without unwind tables has none anywhere, and one whose tables cannot
 * be read cannot tell.
 */
static void test_landing_pads(struct check_state *st)
{
	static const char src[] =
		"volatile int sink;\n"
		"static void release(int *p) { sink += *p; }\n"
		"static void bump(int *x) { *x += 1; }\n"
		"void (*volatile hook)(int *) = bump;\n"
		"__attribute__((noinline)) int with_cleanup(int v)\n"
		"{ int x __attribute__((cleanup(release))) = v; hook(&x);"
		" return x; }\n"
		"__attribute__((noinline)) int plain(int v) { return v * 3; }\n"
		"int main(int c, char **a) { (void)a; return with_cleanup(c) +"
		" plain(c); }\n";
	char path[300], cfile[300], bare[300], nohdr[300];
	struct sym_file *f = NULL, *g = NULL, *h = NULL;
	const struct sym *w, *p;
	const struct sym_lp *lp;
	size_t n;

	snprintf(cfile, sizeof(cfile), "%s/lsda.c", tmp);
	snprintf(path, sizeof(path), "%s/lsda", tmp);
	snprintf(bare, sizeof(bare), "%s/lsda.bare", tmp);
	snprintf(nohdr, sizeof(nohdr), "%s/lsda.nohdr", tmp);
	if (spit(cfile, src, sizeof(src) - 1) ||
	    !sh("cc -O1 -fexceptions -o %s %s", path, cfile)) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	CHECK(st, sh("objcopy --remove-section=.eh_frame "
		     "--remove-section=.eh_frame_hdr %s %s",
		     path, bare));
	CHECK(st,
	      sh("objcopy --remove-section=.eh_frame_hdr %s %s", path, nohdr));
	f = open_or_report(st, path, &no_root);
	g = open_or_report(st, bare, &no_root);
	h = open_or_report(st, nohdr, &no_root);
	if (!f || !g || !h)
		goto out;
	w = find_sym(f, "with_cleanup");
	p = find_sym(f, "plain");
	CHECK(st, w && p);
	if (!w || !p)
		goto out;
	CHECK(st, sym_file_is_64bit(f));
	/* with_cleanup(): its call of hook() has the cleanup as its pad */
	CHECK(st,
	      !sym_file_landing_pads(f, w->addr, w->addr + w->size, &lp, &n) &&
		      n == 1 && lp[0].lo >= w->addr && lp[0].lo < lp[0].hi &&
		      lp[0].hi <= w->addr + w->size && lp[0].pad >= w->addr &&
		      lp[0].pad < w->addr + w->size);
	CHECK(st,
	      !sym_file_landing_pads(f, p->addr, p->addr + p->size, &lp, &n) &&
		      n == 0);
	CHECK(st,
	      !sym_file_landing_pads(g, w->addr, w->addr + w->size, &lp, &n) &&
		      n == 0);
	CHECK(st, sym_file_landing_pads(h, w->addr, w->addr + w->size, &lp,
					&n) == -1);
out:
	sym_file_free(f);
	sym_file_free(g);
	sym_file_free(h);
}

int main(void)
{
	struct check_state st = {0};

	if (!symtest_start())
		return 2;
	if (!symtest_have_cc()) {
		printf("SKIP test_prog_* (needs cc and binutils)\n");
		symtest_end();
		return CHECK_DONE(&st);
	}
	RUN(&st, test_prog_pie);
	RUN(&st, test_prog_nopie);
	RUN(&st, test_prog_pie_ibt);
	RUN(&st, test_prog_nopie_ibt);
	RUN(&st, test_prog_now);
	RUN(&st, test_system_binaries);
	RUN(&st, test_build_id_debug_root);
	RUN(&st, test_debuglink);
	RUN(&st, test_unwind_functions);
	RUN(&st, test_unwind_tables_damaged);
	RUN(&st, test_landing_pads);
	if (have_tool("xz"))
		RUN(&st, test_minidebuginfo);
	else
		printf("SKIP test_minidebuginfo (no xz)\n");
	symtest_end();
	return CHECK_DONE(&st);
}
