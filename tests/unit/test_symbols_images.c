/* SPDX-License-Identifier: MIT */
/*
 * symbols: ELF images opened from memory, this process's [vdso] and
 * libc, and files that are not ELF, truncated or corrupt.
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

int main(void)
{
	struct check_state st = {0};

	if (!symtest_start())
		return 2;
	if (symtest_have_cc()) {
		RUN(&st, test_open_mem);
		RUN(&st, test_libc);
	} else {
		printf("SKIP test_open_mem (needs cc and binutils)\n");
		printf("SKIP test_libc (needs cc and binutils)\n");
	}
	{
		uint64_t lo, hi;

		if (vdso_range(&lo, &hi))
			RUN(&st, test_vdso);
		else
			printf("SKIP test_vdso (no [vdso] mapped)\n");
	}
	RUN(&st, test_errors);
	RUN(&st, test_corrupt);
	symtest_end();
	return CHECK_DONE(&st);
}
