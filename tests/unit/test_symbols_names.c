/* SPDX-License-Identifier: MIT */
/*
 * symbols: names as users read them: C++ compiled here and demangled,
 * C++ and Rust names demangled from strings, and JIT perf maps.
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

/*
 * Several names at one address, as glibc gives puts and _IO_puts: with
 * both as strong, the name with fewer leading underscores names the
 * function (put1, not _IO_put1); a weak alias gives way to the strong
 * name (libc's puts is weak: _IO_puts, as perf says too).
 */
static const char alias_src[] =
	"int _IO_put1(int x) { return x + 1; }\n"
	"int put1(int x) __attribute__((alias(\"_IO_put1\")));\n"
	"int _IO_put2(int x) { return x + 2; }\n"
	"int put2(int x) __attribute__((weak, alias(\"_IO_put2\")));\n"
	"int main(int argc, char **argv)\n"
	"{ (void)argv; return put1(argc) + put2(argc); }\n";

static void test_aliases(struct check_state *st)
{
	static const struct {
		const char *any, *want;
	} at[] = {{"_IO_put1", "put1"},
		  {"put1", "put1"},
		  {"_IO_put2", "_IO_put2"},
		  {"put2", "_IO_put2"}};
	char src[300], prog[300];
	struct sym_file *f;
	struct ents e;

	snprintf(src, sizeof(src), "%s/alias.c", tmp);
	snprintf(prog, sizeof(prog), "%s/alias", tmp);
	CHECK(st, spit(src, alias_src, sizeof(alias_src) - 1) == 0);
	if (!sh("cc -O1 -o %s %s", prog, src)) {
		CHECKF(st, 0, "cc failed");
		return;
	}
	f = open_or_report(st, prog, &no_root);
	e = nm_funcs("", prog);
	for (size_t i = 0; f && i < sizeof(at) / sizeof(at[0]); i++) {
		const struct ent *n = ents_find(&e, at[i].any);
		const struct sym *s = n ? sym_file_lookup(f, n->addr) : NULL;

		CHECKF(st, n, "nm has no %s", at[i].any);
		CHECKF(st, s && !strcmp(s->name, at[i].want),
		       "at %s: %s, want %s", at[i].any, s ? s->name : "(none)",
		       at[i].want);
	}
	free(e.v);
	sym_file_free(f);
}

/*
 * An IFUNC symbol's value is its resolver, which the loader calls, and
 * the resolver has a name of its own (glibc's __strnlen_ifunc, local,
 * beside strnlen, weak).  perf names the resolver by its own order
 * (sized, strong, global, fewer underscores, longer): the resolver's
 * name beside a weak IFUNC, the IFUNC's beside a strong one (strcpy).
 */
static const char ifunc_src[] =
	"\t.text\n"
	"impl:\tlea 1(%rdi), %eax\n\tret\n"
	"\t.type __slen_ifunc, @function\n"
	"__slen_ifunc:\tlea impl(%rip), %rax\n\tret\n"
	"\t.size __slen_ifunc, .-__slen_ifunc\n"
	"\t.weak slen\n\t.type slen, @gnu_indirect_function\n"
	"\t.set slen, __slen_ifunc\n\t.size slen, 8\n"
	"\t.type __GI_slen, @gnu_indirect_function\n"
	"\t.set __GI_slen, __slen_ifunc\n\t.size __GI_slen, 8\n"
	"\t.type scpy_ifunc, @function\n"
	"scpy_ifunc:\tlea impl(%rip), %rax\n\tret\n"
	"\t.size scpy_ifunc, .-scpy_ifunc\n"
	"\t.globl scpy\n\t.type scpy, @gnu_indirect_function\n"
	"\t.set scpy, scpy_ifunc\n\t.size scpy, 8\n"
	"\t.section .note.GNU-stack,\"\",@progbits\n";

static void test_ifunc_resolvers(struct check_state *st)
{
	static const char main_src[] =
		"int slen(int), scpy(int);\n"
		"int main(int argc, char **argv)\n"
		"{ (void)argv; return slen(argc) + scpy(argc) - 4; }\n";
	static const struct {
		const char *any, *want;
	} at[] = {{"__slen_ifunc", "__slen_ifunc"},
		  {"slen", "__slen_ifunc"},
		  {"scpy_ifunc", "scpy"},
		  {"scpy", "scpy"}};
	char src[300], asm_src[300], prog[300];
	struct sym_file *f;
	struct ents e;

	snprintf(src, sizeof(src), "%s/ifunc_main.c", tmp);
	snprintf(asm_src, sizeof(asm_src), "%s/ifunc.s", tmp);
	snprintf(prog, sizeof(prog), "%s/ifunc", tmp);
	CHECK(st, spit(src, main_src, sizeof(main_src) - 1) == 0);
	CHECK(st, spit(asm_src, ifunc_src, sizeof(ifunc_src) - 1) == 0);
	if (!sh("cc -O1 -o %s %s %s && %s", prog, src, asm_src, prog)) {
		CHECKF(st, 0, "cc failed, or the program did");
		return;
	}
	f = open_or_report(st, prog, &no_root);
	e = nm_funcs("", prog);
	for (size_t i = 0; f && i < sizeof(at) / sizeof(at[0]); i++) {
		const struct ent *n = ents_find(&e, at[i].any);
		const struct sym *s = n ? sym_file_lookup(f, n->addr) : NULL;

		CHECKF(st, n, "nm has no %s", at[i].any);
		CHECKF(st, s && !strcmp(s->name, at[i].want),
		       "at %s: %s, want %s", at[i].any, s ? s->name : "(none)",
		       at[i].want);
	}
	free(e.v);
	sym_file_free(f);
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
		/* Rust names rustc 1.63 gives: legacy, with the hash; v0 with
		 * generic arguments, an impl and the crate disambiguators. */
		{"_ZN5panic6level117h18774151f1b842e4E", "panic::level1"},
		{"_ZN3std9panicking3try17h7a0ae7e8e1c9e9f4E",
		 "std::panicking::try"},
		{"_RNvCsfeHXqF5OsH_5panic6level1", "panic::level1"},
		{"_RINvNtCs6IL9ONYDOZW_4core3mem7replaceyECsfeHXqF5OsH_5panic",
		 "core::mem::replace::<u64>"},
		{"_RINvMs1_NtCs6IL9ONYDOZW_4core3fmtNtB6_10ArgumentV13newyECsfe"
		 "HXqF5OsH_5panic",
		 "<core::fmt::ArgumentV1>::new::<u64>"},
		/* OCaml 4.13 native code: Module.name, without the number;
		 * operators' escapes decoded; the runtime's names kept. */
		{"camlRaise__leaf_82", "Raise.leaf"},
		{"camlRaise__entry", "Raise.entry"},
		{"camlStdlib__List__iter_225", "Stdlib.List.iter"},
		{"camlStdlib__$5e$5e_444", "Stdlib.^^"},
		{"camlStdlib__$40_197", "Stdlib.@"},
		{"camlStdlib__fun_854", "Stdlib.fun"},
		{"camlRaise__1", "Raise.1"},
		{"camlRaise", "camlRaise"},
		{"caml_raise_exn", "caml_raise_exn"},
		{"caml_program", "caml_program"},
		{"camlStdlib__$zz_1", "camlStdlib__$zz_1"},
		{"camlStdlib__$00_1", "camlStdlib__$00_1"},
		{"camel", "camel"},
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
	CHECK(st, !strcmp(sym_demangle("camlStdlib__List__iter_225", tiny,
				       sizeof(tiny)),
			  "camlStdlib__List__iter_225"));
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

int main(void)
{
	struct check_state st = {0};

	if (!symtest_start())
		return 2;
	if (symtest_have_cc() && have_tool("c++"))
		RUN(&st, test_cxx);
	else
		printf("SKIP test_cxx (no c++)\n");
	if (symtest_have_cc())
		RUN(&st, test_aliases);
	else
		printf("SKIP test_aliases (no cc)\n");
	if (symtest_have_cc())
		RUN(&st, test_ifunc_resolvers);
	else
		printf("SKIP test_ifunc_resolvers (no cc)\n");
	RUN(&st, test_demangle_strings);
	RUN(&st, test_perf_map);
	symtest_end();
	return CHECK_DONE(&st);
}
