/* SPDX-License-Identifier: MIT */
/*
 * Where a trigger or a filter lands: the runtime address of a symbol of
 * a running program's executable, and file offsets for the kernel's
 * address filters.  Both backends name triggers the same way (a symbol,
 * or addr:0x...), so they share this.
 *
 * A PIE is loaded wherever ASLR put it: the bias is the start of its
 * mapping at file offset 0 in /proc/PID/maps, less the vaddr that file
 * offset 0 has in the ELF.  Address filters want file offsets instead,
 * which the kernel turns into addresses for every mapping of the file,
 * now and at later mmaps.
 */
#include "capture/symaddr.h"
#include "symbols/symbols.h"
#include "util/err.h"
#include "util/util.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What find_mapping() looks for, and what it found. */
struct mapping_query {
	bool (*want)(const struct mt_map *m, const void *arg);
	const void *arg;
	struct mt_map *m;
	char *path;
};

static int take_mapping(const struct mt_map *m, const char *line, void *arg)
{
	struct mapping_query *q = arg;

	(void)line;
	if (!q->want(m, q->arg))
		return 0;
	*q->m = *m;
	snprintf(q->path, 4096, "%s", m->path);
	q->m->path = q->path;
	return 1;
}

/*
 * The first mapping of pid that want() accepts, into *m and its file name
 * into path (4096 bytes).  Returns 0, -ENOENT when none does, or -errno
 * with the reason in err when the maps cannot be read.
 */
static int find_mapping(pid_t pid,
			bool (*want)(const struct mt_map *m, const void *arg),
			const void *arg, struct mt_map *m, char *path,
			char *err, size_t errlen)
{
	struct mapping_query q = {want, arg, m, path};
	int rc = mt_maps_each(pid, take_mapping, &q, err, errlen);

	return rc == 1 ? 0 : rc ? rc : -ENOENT;
}

static bool is_exe_start(const struct mt_map *m, const void *exe)
{
	return m->pgoff == 0 && !strcmp(m->path, exe);
}

/* Where exe's file offset 0 is mapped in pid. */
static int exe_base(pid_t pid, const char *exe, uint64_t *base, char *err,
		    size_t errlen)
{
	char path[4096];
	struct mt_map m;
	int rc = find_mapping(pid, is_exe_start, exe, &m, path, err, errlen);

	if (rc == -ENOENT)
		return mt_err(err, errlen, rc, "%s: not mapped in the target",
			      exe);
	if (!rc)
		*base = m.lo;
	return rc;
}

/*
 * The one function named sym in sf: 0 and *s, or -ENOENT / -EINVAL with
 * the near names (or each address, when several share the name), plus
 * bias, in err.
 */
static int find_function(const struct sym_file *sf, const char *exe,
			 const char *sym, uint64_t bias, const struct sym **out,
			 char *err, size_t errlen)
{
	size_t n, found_n = 0;
	const struct sym *s = sym_file_syms(sf, &n), *hit = NULL;
	char list[512] = "";
	size_t at = 0, shown = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, sym) && !found_n++)
			hit = &s[i];
	if (hit && hit->addr && found_n == 1) {
		*out = hit;
		return 0;
	}
	/* Say what there is: the near names, or each address. */
	for (size_t i = 0; i < n && shown < 6 && at < sizeof(list); i++) {
		if (found_n > 1 ? strcmp(s[i].name, sym)
				: !strstr(s[i].name, sym))
			continue;
		if (found_n > 1)
			at += (size_t)snprintf(
				list + at, sizeof(list) - at, "%saddr:%#llx",
				shown ? ", " : "",
				(unsigned long long)(s[i].addr + bias));
		else
			at += (size_t)snprintf(list + at, sizeof(list) - at,
					       "%s%s", shown ? ", " : "",
					       s[i].name);
		shown++;
	}
	if (found_n > 1)
		return mt_err(err, errlen, -EINVAL,
			      "%s: '%s' names %zu functions: %s", exe, sym,
			      found_n, list);
	if (shown)
		return mt_err(err, errlen, -ENOENT,
			      "%s: no symbol '%s' (did you mean %s?)", exe, sym,
			      list);
	return mt_err(err, errlen, -ENOENT, "%s: no symbol '%s'", exe, sym);
}

/* What to add to the ELF's vaddrs for runtime addresses. */
static int runtime_bias(pid_t pid, const char *exe, const struct sym_file *sf,
			uint64_t *bias, char *err, size_t errlen)
{
	uint64_t base, v0;
	int rc = exe_base(pid, exe, &base, err, errlen);

	if (rc)
		return rc;
	if (sym_file_type(sf) != ET_DYN)
		*bias = 0;
	else
		*bias = sym_file_off_to_vaddr(sf, 0, &v0) ? base : base - v0;
	return 0;
}

/*
 * glibc's x86-64 _start hands main to __libc_start_main in %rdi: "lea
 * main(%rip),%rdi" (PIE) or "mov $main,%rdi" before the call.  Decoding
 * the few instructions at the entry point finds it without symbols.
 */
static bool rdi_before_call(const uint8_t *code, size_t len, uint64_t at,
			    uint64_t *main)
{
	csh cs;
	cs_insn *in = NULL;
	size_t n;
	bool known = false, found = false;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return false;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	n = cs_disasm(cs, code, len, at, 32, &in);
	for (size_t i = 0; i < n && !found; i++) {
		const cs_x86 *x = &in[i].detail->x86;
		bool to_rdi = x->op_count == 2 &&
			      x->operands[0].type == X86_OP_REG &&
			      (x->operands[0].reg == X86_REG_RDI ||
			       x->operands[0].reg == X86_REG_EDI);

		if (in[i].id == X86_INS_CALL || in[i].id == X86_INS_JMP ||
		    in[i].id == X86_INS_HLT) {
			found = in[i].id == X86_INS_CALL && known;
			break;
		}
		if (!to_rdi) {
			/* Anything else that writes %rdi: main unknown. */
			for (uint8_t k = 0; k < x->op_count; k++)
				if (x->operands[k].type == X86_OP_REG &&
				    (x->operands[k].reg == X86_REG_RDI ||
				     x->operands[k].reg == X86_REG_EDI) &&
				    (x->operands[k].access & CS_AC_WRITE))
					known = false;
			continue;
		}
		known = false;
		if (in[i].id == X86_INS_LEA &&
		    x->operands[1].type == X86_OP_MEM &&
		    x->operands[1].mem.base == X86_REG_RIP &&
		    x->operands[1].mem.index == X86_REG_INVALID) {
			*main = in[i].address + in[i].size +
				(uint64_t)x->operands[1].mem.disp;
			known = true;
		} else if (in[i].id == X86_INS_MOV &&
			   x->operands[1].type == X86_OP_IMM) {
			*main = (uint64_t)x->operands[1].imm;
			known = true;
		}
	}
	cs_free(in, n);
	cs_close(&cs);
	return found && *main;
}

int symaddr_main_vaddr(const char *exe, uint64_t *vaddr, uint64_t *off,
		       char *err, size_t errlen)
{
	uint8_t code[128];
	GElf_Ehdr eh;
	Elf *elf = NULL;
	size_t nph = 0;
	ssize_t got = -1;
	int fd = open(exe, O_RDONLY | O_CLOEXEC), rc = -ENOENT;

	if (fd < 0)
		return mt_err(err, errlen, -errno, "%s: %s", exe,
			      strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nph))
		goto out;
	for (size_t i = 0; i < nph && got < 0; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) && eh.e_entry >= ph.p_vaddr &&
		    eh.e_entry < ph.p_vaddr + ph.p_filesz) {
			uint64_t left = ph.p_vaddr + ph.p_filesz - eh.e_entry;

			got = pread(
				fd, code,
				left < sizeof(code) ? left : sizeof(code),
				(off_t)(ph.p_offset + eh.e_entry - ph.p_vaddr));
		}
	}
	if (got > 0 && rdi_before_call(code, (size_t)got, eh.e_entry, vaddr))
		for (size_t i = 0; i < nph && rc; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_LOAD && *vaddr >= ph.p_vaddr &&
			    *vaddr < ph.p_vaddr + ph.p_filesz) {
				if (off)
					*off = *vaddr - ph.p_vaddr +
					       ph.p_offset;
				rc = 0;
			}
		}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (rc)
		return mt_err(err, errlen, rc,
			      "%s: no symbol 'main', and its entry point does "
			      "not hand one to __libc_start_main",
			      exe);
	return 0;
}

int symaddr_resolve(pid_t pid, const char *exe, const char *sym, uint64_t *out,
		    char *err, size_t errlen)
{
	struct sym_file *sf = NULL;
	const struct sym *s;
	uint64_t bias, base;
	int rc;

	if (!strncmp(sym, "addr:", 5)) {
		if (mt_parse_u64(sym + 5, 16, UINT64_MAX, out) || !*out)
			return mt_err(err, errlen, -EINVAL,
				      "bad address in '%s'", sym);
		return 0;
	}
	/* The target must have the executable mapped before we read it. */
	if ((rc = exe_base(pid, exe, &base, err, errlen)))
		return rc;
	if (sym_file_open(exe, NULL, &sf, err, errlen))
		return -EINVAL;
	rc = runtime_bias(pid, exe, sf, &bias, err, errlen);
	if (!rc)
		rc = find_function(sf, exe, sym, bias, &s, err, errlen);
	if (!rc)
		*out = s->addr + bias;
	else if (rc == -ENOENT && !strcmp(sym, "main") &&
		 !symaddr_main_vaddr(exe, out, NULL, err, errlen))
		rc = 0, *out += bias;
	sym_file_free(sf);
	return rc;
}

uint64_t symaddr_object(pid_t pid, const char *exe, const char *name)
{
	uint64_t bias = 0, found = 0;
	struct sym_file *sf = NULL;
	char err[256];
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	int fd, rc;

	if (sym_file_open(exe, NULL, &sf, err, sizeof(err)))
		return 0;
	rc = runtime_bias(pid, exe, sf, &bias, err, sizeof(err));
	sym_file_free(sf);
	if (rc)
		return 0;
	fd = open(exe, O_RDONLY);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
				continue;
			nm = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (nm && !strcmp(nm, name)) {
				found = sym.st_value + bias;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* vaddr of sf as a file offset (the kernel's filters speak offsets). */
static int vaddr_to_off(const struct sym_file *sf, uint64_t vaddr,
			uint64_t *off)
{
	size_t n;
	const struct sym_load *l = sym_file_loads(sf, &n);

	for (size_t i = 0; i < n; i++)
		if (vaddr >= l[i].vaddr && vaddr < l[i].vaddr + l[i].filesz) {
			*off = vaddr - l[i].vaddr + l[i].offset;
			return 0;
		}
	return -ENOENT;
}

/* One end of a range: a function of sf (its start, or its end when
 * end_of is set) or an address as nm shows it. */
static int range_end(const struct sym_file *sf, const char *file,
		     const char *what, bool end_of, uint64_t *off, char *err,
		     size_t errlen)
{
	uint64_t v;
	int rc;

	if (what[0] >= '0' && what[0] <= '9') {
		if (mt_parse_u64(what, 16, UINT64_MAX, &v))
			return mt_err(
				err, errlen, -EINVAL,
				"--filter: '%s' is neither a symbol nor a "
				"hex address",
				what);
	} else {
		const struct sym *s;

		rc = find_function(sf, file, what, 0, &s, err, errlen);
		if (rc)
			return rc;
		v = s->addr + (end_of ? (s->size ? s->size : 1) : 0);
		if (end_of && vaddr_to_off(sf, v - 1, off) == 0) {
			*off += 1;
			return 0;
		}
	}
	if (vaddr_to_off(sf, v, off))
		return mt_err(err, errlen, -EINVAL,
			      "--filter: %#llx is in no loadable segment of %s",
			      (unsigned long long)v, file);
	return 0;
}

int symaddr_filters(const char *spec, char *out, size_t outlen,
		    unsigned *nranges, char *err, size_t errlen)
{
	char *copy = strdup(spec), *save = NULL, *item;
	size_t at = 0;
	int rc = 0;

	if (!copy)
		return mt_err(err, errlen, -ENOMEM, "out of memory");
	*nranges = 0;
	out[0] = 0;
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *file = strrchr(item, '@'), *dash, path[PATH_MAX];
		struct sym_file *sf = NULL;
		uint64_t lo, hi;

		if (!file || file == item || !file[1]) {
			rc = mt_err(err, errlen, -EINVAL,
				    "--filter: '%s' is not START-STOP@FILE",
				    item);
			goto fail;
		}
		*file++ = 0;
		if (!realpath(file, path)) {
			rc = mt_err(err, errlen, -errno, "--filter: %s: %s",
				    file, strerror(errno));
			goto fail;
		}
		if (sym_file_open(path, NULL, &sf, err, errlen)) {
			rc = -EINVAL;
			goto fail;
		}
		/* FUNC@FILE alone: that function. */
		dash = strchr(item, '-');
		if (dash)
			*dash++ = 0;
		rc = range_end(sf, path, item, false, &lo, err, errlen);
		if (!rc)
			rc = range_end(
				sf, path, dash ? dash : item,
				!dash || !(dash[0] >= '0' && dash[0] <= '9'),
				&hi, err, errlen);
		sym_file_free(sf);
		if (rc)
			goto fail;
		if (hi <= lo) {
			rc = mt_err(err, errlen, -EINVAL,
				    "--filter: %s-%s@%s is an empty range",
				    item, dash ? dash : item, file);
			goto fail;
		}
		at += (size_t)snprintf(out + at, outlen > at ? outlen - at : 0,
				       "%sfilter %#llx/%#llx@%s", at ? "," : "",
				       (unsigned long long)lo,
				       (unsigned long long)(hi - lo), path);
		if (at >= outlen) {
			rc = mt_err(err, errlen, -E2BIG,
				    "--filter: too long (%zu bytes at most)",
				    outlen - 1);
			goto fail;
		}
		(*nranges)++;
	}
	if (!*nranges)
		rc = mt_err(err, errlen, -EINVAL,
			    "--filter: no range in '%s' (START-STOP@FILE)",
			    spec);
fail:
	free(copy);
	return rc;
}

/* An anonymous mapping counts as a file too, as it always has: its
 * name in the capture, "//anon", begins with '/'. */
static bool holds_file_addr(const struct mt_map *m, const void *addr)
{
	uint64_t a = *(const uint64_t *)addr;

	return a >= m->lo && a < m->hi && (!m->path[0] || m->path[0] == '/');
}

int symaddr_file_offset(pid_t pid, uint64_t addr, char *path, size_t pathlen,
			uint64_t *off, char *err, size_t errlen)
{
	char file[4096];
	struct mt_map m;
	int rc = find_mapping(pid, holds_file_addr, &addr, &m, file, err,
			      errlen);

	if (rc == -ENOENT)
		return mt_err(err, errlen, rc,
			      "%#llx is in no file mapped by %d",
			      (unsigned long long)addr, (int)pid);
	if (rc)
		return rc;
	snprintf(path, pathlen, "%s", file[0] ? file : "//anon");
	*off = addr - m.lo + m.pgoff;
	return 0;
}

int symaddr_stop_filter(pid_t pid, uint64_t addr, char *out, size_t outlen,
			char *err, size_t errlen)
{
	char path[4096];
	uint64_t off;
	int rc = symaddr_file_offset(pid, addr, path, sizeof(path), &off, err,
				     errlen);

	if (rc) {
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		return mt_err(err, errlen, rc, "--stop-at-trigger: %s", why);
	}
	/* A stop range of one byte: TraceStop as the trigger's first
	 * instruction begins. */
	snprintf(out, outlen, "stop %#llx/1@%s", (unsigned long long)off, path);
	return 0;
}
