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
#include "capture/symaddr_internal.h"
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
#include <sys/mman.h>
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

/*
 * Not the executable's: the first address of function sym in the
 * libraries pid maps now (0), or rc (the executable's error stays).
 */
static int in_libraries(pid_t pid, const char *sym, uint64_t *out, int rc)
{
	struct symwatch *w = symwatch_new(sym);
	char why[256];
	size_t n;

	if (w && symwatch_scan(w, pid, why, sizeof(why)) > 0) {
		*out = symwatch_addrs(w, &n)[0];
		rc = 0;
	}
	symwatch_free(w);
	return rc;
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
	else if (rc == -ENOENT && strcmp(sym, "main"))
		rc = in_libraries(pid, sym, out, rc);
	sym_file_free(sf);
	return rc;
}

/*
 * fn(name, sym, arg) for each symbol defined in the .symtab and .dynsym of
 * the ELF file path, its version ("@@GLIBC_2.2.5") cut off into a copy,
 * until fn returns non-zero: that, or 0, or -errno when path cannot be
 * read.  Every alias is there, where sym_file keeps one name an address.
 */
static int elf_symbols_each(const char *path,
			    int (*fn)(const char *name, const GElf_Sym *sym,
				      void *arg),
			    void *arg)
{
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !rc && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize && !rc; i++) {
			char name[512];
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			nm = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!nm || !nm[0])
				continue;
			snprintf(name, sizeof(name), "%.*s",
				 (int)strcspn(nm, "@"), nm);
			rc = fn(name, &sym, arg);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* What object_vaddr() looks for, and what it found. */
struct object_query {
	const char *name;
	uint64_t vaddr;
};

static int object_vaddr(const char *name, const GElf_Sym *sym, void *arg)
{
	struct object_query *q = arg;

	if (GELF_ST_TYPE(sym->st_info) != STT_OBJECT || strcmp(name, q->name))
		return 0;
	q->vaddr = sym->st_value;
	return 1;
}

uint64_t symaddr_object(pid_t pid, const char *exe, const char *name)
{
	struct object_query q = {name, 0};
	uint64_t bias = 0;
	struct sym_file *sf = NULL;
	char err[256];
	int rc;

	if (sym_file_open(exe, NULL, &sf, err, sizeof(err)))
		return 0;
	rc = runtime_bias(pid, exe, sf, &bias, err, sizeof(err));
	sym_file_free(sf);
	if (rc || elf_symbols_each(exe, object_vaddr, &q) != 1)
		return 0;
	return q.vaddr + bias;
}

/* ---- a function of any file the program maps (symwatch) ---- */

struct symwatch {
	char *sym;
	char **seen; /* "lo path" of each executable mapping looked in */
	size_t nr_seen, cap_seen;
	uint64_t *addrs;
	size_t nr_addrs, cap_addrs;
	char near[512]; /* names like it, for the error */
	size_t nr_near, near_len;
	bool in_file; /* found in a file, perhaps never mapped by a pid */
};

struct symwatch *symwatch_new(const char *sym)
{
	struct symwatch *w = calloc(1, sizeof(*w));

	if (w && !(w->sym = strdup(sym))) {
		free(w);
		w = NULL;
	}
	return w;
}

void symwatch_free(struct symwatch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_seen; i++)
		free(w->seen[i]);
	free(w->seen);
	free(w->addrs);
	free(w->sym);
	free(w);
}

const uint64_t *symwatch_addrs(const struct symwatch *w, size_t *n)
{
	*n = w->nr_addrs;
	return w->addrs;
}

/* What watch_symbol() works with: the watch, and the file's bias. */
struct watch_file {
	struct symwatch *w;
	uint64_t bias;
	bool with_addrs;
	int found;
};

static int watch_symbol(const char *name, const GElf_Sym *sym, void *arg)
{
	struct watch_file *f = arg;
	struct symwatch *w = f->w;
	int t = GELF_ST_TYPE(sym->st_info);
	uint64_t a = sym->st_value + f->bias;

	if (t != STT_FUNC && t != STT_GNU_IFUNC)
		return 0;
	if (strcmp(name, w->sym)) {
		/* Say what there is: the near names. */
		if (w->nr_near < 6 && strstr(name, w->sym) &&
		    !strstr(w->near, name) && w->near_len < sizeof(w->near)) {
			w->near_len += (size_t)snprintf(
				w->near + w->near_len,
				sizeof(w->near) - w->near_len, "%s%s",
				w->nr_near ? ", " : "", name);
			w->nr_near++;
		}
		return 0;
	}
	w->in_file = true;
	if (!f->with_addrs)
		return 0;
	for (size_t i = 0; i < w->nr_addrs; i++)
		if (w->addrs[i] == a)
			return 0;
	if (mt_grow((void **)&w->addrs, &w->cap_addrs, w->nr_addrs + 1,
		    sizeof(*w->addrs)))
		return -ENOMEM;
	w->addrs[w->nr_addrs++] = a;
	f->found++;
	return 0;
}

int symwatch_file(struct symwatch *w, const char *path)
{
	struct watch_file f = {w, 0, false, 0};
	int rc = elf_symbols_each(path, watch_symbol, &f);

	return rc == -ENOMEM ? rc : 0;
}

/* What to add to the vaddrs of m's file for runtime addresses. */
static int mapping_bias(const struct mt_map *m, uint64_t *bias)
{
	Elf *elf = NULL;
	size_t nph = 0;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC), rc = -ENOENT;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &nph))
		for (size_t i = 0; i < nph && rc; i++) {
			GElf_Phdr ph;

			/* The segment the mapping holds: file offset x is
			 * at m->lo + x - m->pgoff and at vaddr
			 * p_vaddr + x - p_offset. */
			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_LOAD &&
			    m->pgoff < ph.p_offset + ph.p_filesz &&
			    m->pgoff + (m->hi - m->lo) > ph.p_offset) {
				*bias = m->lo - m->pgoff + ph.p_offset -
					ph.p_vaddr;
				rc = 0;
			}
		}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* What scan_mapping() works with. */
struct watch_scan {
	struct symwatch *w;
	pid_t pid;
	int found;
};

static int scan_mapping(const struct mt_map *m, const char *line, void *arg)
{
	struct watch_scan *sc = arg;
	struct symwatch *w = sc->w;
	struct watch_file f = {w, 0, true, 0};
	char key[4200];
	int rc;

	(void)line;
	if (!(m->prot & PROT_EXEC) || m->path[0] != '/')
		return 0;
	snprintf(key, sizeof(key), "%llx %s", (unsigned long long)m->lo,
		 m->path);
	for (size_t i = 0; i < w->nr_seen; i++)
		if (!strcmp(w->seen[i], key))
			return 0;
	if (mt_grow((void **)&w->seen, &w->cap_seen, w->nr_seen + 1,
		    sizeof(*w->seen)) ||
	    !(w->seen[w->nr_seen] = strdup(key)))
		return -ENOMEM;
	w->nr_seen++;
	/* A file we cannot read (or not ELF) holds nothing we can name. */
	if (mapping_bias(m, &f.bias))
		return 0;
	rc = elf_symbols_each(m->path, watch_symbol, &f);
	if (rc == -ENOMEM)
		return rc;
	sc->found += f.found;
	return 0;
}

int symwatch_scan(struct symwatch *w, pid_t pid, char *err, size_t errlen)
{
	struct watch_scan sc = {w, pid, 0};
	int rc = mt_maps_each(pid, scan_mapping, &sc, err, errlen);

	if (rc == -ENOMEM)
		return mt_err(err, errlen, rc, "out of memory");
	/* The process gone: what was found stays. */
	return rc < 0 && rc != -ENOENT && rc != -ESRCH ? rc : sc.found;
}

bool symwatch_in_files(const struct symwatch *w)
{
	return w->in_file;
}

int symwatch_missing(const struct symwatch *w, const char *exe, char *err,
		     size_t errlen)
{
	if (w->nr_near)
		return mt_err(err, errlen, -ENOENT,
			      "%s: no symbol '%s' in it or the libraries it "
			      "loaded (did you mean %s?)",
			      exe, w->sym, w->near);
	return mt_err(err, errlen, -ENOENT,
		      "%s: no symbol '%s' in it or the libraries it loaded",
		      exe, w->sym);
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
