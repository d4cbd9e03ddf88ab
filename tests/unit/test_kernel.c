/* SPDX-License-Identifier: MIT */
/*
 * The kernel's code, as --include-kernel keeps it: kallsyms as a symbol
 * source (code symbols, modules, hidden addresses, bad lines), and the
 * reader of kallsyms, modules and kcore on fake procfs trees (a kcore
 * built here: an ELF core file whose PT_LOAD segments are the kernel's
 * text and a module's), with kcore missing, unreadable, or not ELF.
 */
#include "capture/kcore_internal.h"
#include "symbols/symbols.h"
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KTEXT 0xffffffff81000000ull
#define KMOD  0xffffffffc0000000ull

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81000000 T entry_SYSCALL_64\n"
			       "ffffffff81000040 t do_syscall_64\n"
			       "ffffffff81000080 D some_data\n"
			       "ffffffff810000c0 W weak_fn\n"
			       "ffffffff81000100 T _etext\n"
			       "ffffffffc0000000 t ext4_read\t[ext4]\n"
			       "ffffffffc0000040 t ext4_write\t[ext4]\n"
			       "0000000000000000 A fixed_percpu_data\n";

static void test_kallsyms_parse(struct check_state *st)
{
	struct sym_kallsyms *k;
	const struct sym *s;
	const char *dso;
	char err[256];

	CHECK(st, !sym_kallsyms_parse(kallsyms, strlen(kallsyms), "kallsyms",
				      &k, err, sizeof(err)));
	if (!k)
		return;
	s = sym_kallsyms_lookup(k, KTEXT + 0x50, &dso);
	CHECK(st, s && !strcmp(s->name, "do_syscall_64"));
	CHECK(st, !strcmp(dso, SYM_KERNEL_DSO));
	/* Data symbols do not cut functions short. */
	s = sym_kallsyms_lookup(k, KTEXT + 0x90, &dso);
	CHECK(st, s && !strcmp(s->name, "do_syscall_64"));
	CHECK(st, s && sym_kallsyms_end(k, s) == KTEXT + 0xc0);
	s = sym_kallsyms_lookup(k, KTEXT + 0xc4, &dso);
	CHECK(st, s && !strcmp(s->name, "weak_fn"));
	s = sym_kallsyms_lookup(k, KMOD + 0x44, &dso);
	CHECK(st, s && !strcmp(s->name, "ext4_write"));
	CHECK(st, !strcmp(dso, "[ext4]"));
	/* The last function runs on: kallsyms does not say where. */
	CHECK(st, s && sym_kallsyms_end(k, s) == UINT64_MAX);
	/* _stext and _etext bound the text and name no function. */
	{
		uint64_t lo = 0, hi = 0;

		CHECK(st, !sym_kallsyms_text(k, &lo, &hi));
		CHECK(st, lo == KTEXT && hi == KTEXT + 0x100);
		s = sym_kallsyms_lookup(k, KTEXT, &dso);
		CHECK(st, s && !strcmp(s->name, "entry_SYSCALL_64"));
		s = sym_kallsyms_lookup(k, KTEXT + 0x100, &dso);
		CHECK(st, s && !strcmp(s->name, "weak_fn"));
	}
	CHECK(st, !sym_kallsyms_lookup(k, 0x401000, &dso));
	sym_kallsyms_free(k);
}

static void test_kallsyms_refused(struct check_state *st)
{
	static const char hidden[] = "0000000000000000 T _stext\n"
				     "0000000000000000 T do_syscall_64\n";
	static const char bad[] = "ffffffff81000000 T _stext\n"
				  "not a line\n";
	struct sym_kallsyms *k;
	char err[256];

	CHECK(st, sym_kallsyms_parse(hidden, strlen(hidden), "kallsyms", &k,
				     err, sizeof(err)) == -ENODATA);
	CHECK(st, !k && strstr(err, "hidden"));
	CHECK(st, sym_kallsyms_parse(bad, strlen(bad), "ks", &k, err,
				     sizeof(err)) == -EINVAL);
	CHECKF(st, strstr(err, "ks:2:"), "%s", err);
	CHECK(st, sym_kallsyms_parse("", 0, "ks", &k, err, sizeof(err)) ==
			  -ENODATA);
}

/* This machine's own kallsyms, when it shows the addresses. */
static void test_kallsyms_here(struct check_state *st)
{
	struct sym_kallsyms *k;
	uint64_t lo, hi;
	char err[256], *text;
	size_t len;
	int rc;

	if (mt_file_text("/proc/kallsyms", &text, &len)) {
		SKIP(st, "no readable /proc/kallsyms");
		return;
	}
	rc = sym_kallsyms_parse(text, len, "/proc/kallsyms", &k, err,
				sizeof(err));
	free(text);
	if (rc == -ENODATA) {
		SKIP(st, "kallsyms hides the addresses here");
		return;
	}
	CHECKF(st, !rc, "%s", err);
	if (rc)
		return;
	CHECK(st, !sym_kallsyms_text(k, &lo, &hi) && lo < hi);
	sym_kallsyms_free(k);
}

/* An ELF core file with the kernel's text and one module's at their
 * addresses, as /proc/kcore shows them (the bytes say where they are). */
static int write_kcore(const char *path)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph[3];
	} h;
	uint8_t text[0x100], mod[0x80];
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return -1;
	memset(&h, 0, sizeof(h));
	memcpy(h.eh.e_ident, ELFMAG, SELFMAG);
	h.eh.e_ident[EI_CLASS] = ELFCLASS64;
	h.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	h.eh.e_ident[EI_VERSION] = EV_CURRENT;
	h.eh.e_type = ET_CORE;
	h.eh.e_machine = EM_X86_64;
	h.eh.e_version = EV_CURRENT;
	h.eh.e_phoff = sizeof(h.eh);
	h.eh.e_ehsize = sizeof(h.eh);
	h.eh.e_phentsize = sizeof(Elf64_Phdr);
	h.eh.e_phnum = 3;
	h.ph[0].p_type = PT_NOTE;
	h.ph[1] = (Elf64_Phdr){.p_type = PT_LOAD,
			       .p_offset = sizeof(h),
			       .p_vaddr = KTEXT - 0x1000,
			       .p_filesz = 0x1000 + sizeof(text),
			       .p_memsz = 0x1000 + sizeof(text)};
	h.ph[2] = (Elf64_Phdr){.p_type = PT_LOAD,
			       .p_offset = sizeof(h) + 0x1000 + sizeof(text),
			       .p_vaddr = KMOD,
			       .p_filesz = sizeof(mod),
			       .p_memsz = sizeof(mod)};
	memset(text, 0xc3, sizeof(text));
	memset(mod, 0x90, sizeof(mod));
	if (fwrite(&h, sizeof(h), 1, f) != 1)
		rc = -1;
	for (int i = 0; i < 0x1000 && !rc; i++)
		if (fputc(0xcc, f) == EOF)
			rc = -1;
	if (!rc && (fwrite(text, sizeof(text), 1, f) != 1 ||
		    fwrite(mod, sizeof(mod), 1, f) != 1))
		rc = -1;
	if (fclose(f))
		rc = -1;
	return rc;
}

static void procfs(char *dir, size_t n, bool with_kcore)
{
	static const char modules[] =
		"ext4 128 1 - Live 0xffffffffc0000000\n"
		"gone 4096 0 - Live 0xffffffffd0000000\n"
		"hidden 4096 0 - Live 0x0000000000000000\n";
	char path[512];

	tmpdir_make(dir, n);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	spit(path, kallsyms, strlen(kallsyms));
	snprintf(path, sizeof(path), "%s/modules", dir);
	spit(path, modules, strlen(modules));
	snprintf(path, sizeof(path), "%s/kcore", dir);
	if (with_kcore)
		write_kcore(path);
}

static void test_kcore_read(struct check_state *st)
{
	struct kcore_text k;
	char dir[64], why[512];

	procfs(dir, sizeof(dir), true);
	CHECKF(st, !kcore_read(dir, &k, why, sizeof(why)), "%s", why);
	CHECK(st, k.text_start == KTEXT && k.text_end == KTEXT + 0x100);
	/* The kernel's text, then the one module kcore holds (the module
	 * that went away and the one with a hidden address cost nothing). */
	CHECK(st, k.nr_segs == 2);
	if (k.nr_segs == 2) {
		CHECK(st, k.segs[0].start == KTEXT && k.segs[0].len == 0x100);
		CHECK(st, k.segs[0].bytes[0] == 0xc3 &&
				  k.segs[0].bytes[0xff] == 0xc3);
		CHECK(st, k.segs[1].start == KMOD && k.segs[1].len == 128);
		CHECK(st, k.segs[1].bytes[0] == 0x90);
	}
	CHECK(st, k.kallsyms_len == strlen(kallsyms) && k.modules);
	kcore_free(&k);
	tmpdir_remove(dir);
}

static void test_kcore_missing(struct check_state *st)
{
	static const char hidden[] = "0000000000000000 T _stext\n"
				     "0000000000000000 T _etext\n";
	struct kcore_text k;
	char dir[64], why[512], path[512];

	/* No kcore (a kernel built without it, as on this machine). */
	procfs(dir, sizeof(dir), false);
	CHECK(st, kcore_read(dir, &k, why, sizeof(why)) == -ENOENT);
	CHECKF(st, strstr(why, "/kcore: No such file"), "%s", why);
	CHECK(st, !k.kallsyms && !k.nr_segs);

	/* Not an ELF core file. */
	snprintf(path, sizeof(path), "%s/kcore", dir);
	spit(path, "hello", 5);
	CHECK(st, kcore_read(dir, &k, why, sizeof(why)) == -EINVAL);
	CHECKF(st, strstr(why, "not a 64-bit ELF core"), "%s", why);

	/* kallsyms hidden by kptr_restrict. */
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	spit(path, hidden, strlen(hidden));
	CHECK(st, kcore_read(dir, &k, why, sizeof(why)) == -ENODATA);
	CHECKF(st, strstr(why, "hidden"), "%s", why);

	/* No kallsyms at all. */
	unlink(path);
	CHECK(st, kcore_read(dir, &k, why, sizeof(why)) == -ENOENT);
	tmpdir_remove(dir);
}

/* No permission: kcore is root's. */
static void test_kcore_no_permission(struct check_state *st)
{
	struct kcore_text k;
	char dir[64], why[512], path[512];

	if (geteuid() == 0) {
		SKIP(st, "root reads a file without permissions");
		return;
	}
	procfs(dir, sizeof(dir), true);
	snprintf(path, sizeof(path), "%s/kcore", dir);
	chmod(path, 0);
	CHECK(st, kcore_read(dir, &k, why, sizeof(why)) == -EACCES);
	CHECKF(st, strstr(why, "it needs root"), "%s", why);
	tmpdir_remove(dir);
}

/* The items round-trip through the extension section's encoding. */
static void test_ext_items(struct check_state *st)
{
	struct pd_ext_buf b = {0};
	struct pd_ext_kcode kc = {
		.start = KTEXT,
		.len = 5,
		.bytes = (const uint8_t *)"\x0f\x05\xc3\x90\x90"};
	struct pd_ext_kcode out;
	const char *text;
	uint64_t len;
	uint32_t size;

	CHECK(st, !pd_ext_add_text(&b, PD_EXT_KALLSYMS, "abc", 3));
	CHECK(st, !pd_ext_add_kcode(&b, &kc));
	memcpy(&size, b.data + 4, 4);
	CHECK(st, size == 16);
	CHECK(st, !pd_ext_parse_text(b.data + 8, size, &text, &len));
	CHECK(st, len == 3 && !memcmp(text, "abc", 3));
	memcpy(&size, b.data + 24 + 4, 4);
	CHECK(st, !pd_ext_parse_kcode(b.data + 32, size, &out));
	CHECK(st, out.start == KTEXT && out.len == 5 &&
			  !memcmp(out.bytes, kc.bytes, 5));
	/* A length past the item is refused. */
	b.data[32 + 8] = 0xff;
	CHECK(st, pd_ext_parse_kcode(b.data + 32, size, &out) == -EBADMSG);
	pd_ext_buf_free(&b);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_kallsyms_parse);
	RUN(&st, test_kallsyms_refused);
	RUN(&st, test_kallsyms_here);
	RUN(&st, test_kcore_read);
	RUN(&st, test_kcore_missing);
	RUN(&st, test_kcore_no_permission);
	RUN(&st, test_ext_items);
	return CHECK_DONE(&st);
}
