/* SPDX-License-Identifier: MIT */
/*
 * Function symbols, loadable segments and the build id of one ELF image,
 * with its separate debug file and MiniDebugInfo merged in.
 *
 * Every name is copied into the sym_file's arena while the libelf handle
 * is open, so that nothing of libelf (nor the file mapping) outlives
 * sym_file_open().
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <errno.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds what a hostile .gnu_debugdata can make us allocate. */
#define SYM_XZ_OUT_MAX	(512u << 20)
#define SYM_XZ_MEMLIMIT (256u << 20)

struct sym_file {
	int type;
	struct sym *syms;
	uint64_t *ends; /* where syms[i] stops (exclusive) */
	size_t nr_syms;
	struct sym_load *loads;
	size_t nr_loads;
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t size;	  /* of the file or the image in memory */
	struct sym_eh eh; /* the unwind tables */
	bool elf64;
	struct sym_arena arena;
};

/* The state of one sym_file_open*() call. */
struct loader {
	struct sym_file *f;
	const char *name; /* for messages */
	const char *path; /* NULL for an image in memory */
	const char *debug_root;
	bool raw;
	bool have_stat;
	struct stat st; /* of path, to not take the file for its own debug */
	uint64_t size;	/* of the image */
	struct sym_cands c;
	char *err;
	size_t errlen;
};

static int fail_msg(struct loader *ld, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_msg(struct loader *ld, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(ld->err, ld->errlen, code, ld->name, fmt, ap);
	va_end(ap);
	return code;
}

Elf_Scn *sym_elf_section(Elf *e, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *n;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The first section of type t, or NULL. */
static Elf_Scn *section_of_type(Elf *e, uint32_t t, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == t)
			return scn;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Build id                                                            */

static bool note_build_id(Elf_Data *d, uint8_t *out, size_t *len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz > 0 && nh.n_descsz <= SYM_BUILD_ID_MAX) {
			memcpy(out, (char *)d->d_buf + desc_off, nh.n_descsz);
			*len = nh.n_descsz;
			return true;
		}
		off = next;
	}
	return false;
}

/* Reads the build id from the note sections, else from PT_NOTE segments
 * (an image whose section headers are gone still has those). */
static void read_build_id(Elf *e, uint8_t *out, size_t *len)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t i, nph;

	*len = 0;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && note_build_id(d, out, len))
			return;
	}
	if (elf_getphdrnum(e, &nph))
		return;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8
							 : ELF_T_NHDR);
		if (d && note_build_id(d, out, len))
			return;
	}
}

int sym_build_id(const char *path, uint8_t *id, size_t *len)
{
	int fd = mt_open_regular(path, NULL), rc = 1;
	Elf *e;

	*len = 0;
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		goto out;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		rc = 2;
	} else {
		read_build_id(e, id, len);
		rc = *len ? 0 : 1;
	}
	if (e)
		elf_end(e);
out:
	close(fd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Symbol tables                                                       */

/*
 * Whether a symbol names code.  Functions are, wherever they are defined;
 * untyped symbols are when they lie in an executable section, because
 * hand-written assembly labels its functions without .type.  Compiler
 * temporaries (.L*) are noise, as are section and file symbols.
 */
static bool is_code_symbol(const GElf_Sym *s, const char *name,
			   bool in_exec_section)
{
	int t = GELF_ST_TYPE(s->st_info);

	if (!name[0] || (name[0] == '.' && name[1] == 'L'))
		return false;
	if (t == STT_FUNC || t == STT_GNU_IFUNC)
		return true;
	/* '$' names are ARM/AArch64 mapping symbols, not labels. */
	return t == STT_NOTYPE && in_exec_section && name[0] != '$';
}

/* The data of the SHT_SYMTAB_SHNDX section that extends symtab, if any. */
static Elf_Data *xindex_data(Elf *e, Elf_Scn *symtab)
{
	size_t ndx = elf_ndxscn(symtab);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB_SHNDX &&
		    sh.sh_link == ndx)
			return elf_getdata(scn, NULL);
	return NULL;
}

/*
 * Append the code symbols of one symbol table.  Returns 0, -ENOMEM, or
 * -EINVAL when the table cannot be read (the caller decides whether that
 * matters).
 */
static int collect_symtab(struct loader *ld, Elf *e, Elf_Scn *scn,
			  const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL), *xd;
	size_t i, n, symsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	/* Consecutive symbols mostly share a section: remember the last. */
	size_t last_ndx = SIZE_MAX;
	bool last_exec = false;
	uint64_t last_end = 0;

	if (!d || !symsz)
		return -EINVAL;
	xd = xindex_data(e, scn);
	n = d->d_size / symsz;
	for (i = 1; i < n; i++) {
		struct sym_cand c = {0};
		GElf_Sym s;
		GElf_Word xndx = 0;
		const char *name;
		size_t ndx;
		int bind, type;

		if (!gelf_getsymshndx(d, xd, (int)i, &s, &xndx))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    type != STT_NOTYPE)
			continue;
		ndx = s.st_shndx == SHN_XINDEX ? xndx : s.st_shndx;
		if (ndx == SHN_UNDEF ||
		    (s.st_shndx != SHN_XINDEX && ndx >= SHN_LORESERVE &&
		     ndx != SHN_ABS))
			continue;
		if (ndx == SHN_ABS && (type == STT_NOTYPE || !s.st_value))
			continue;
		if (ndx != last_ndx) {
			Elf_Scn *ss =
				ndx == SHN_ABS ? NULL : elf_getscn(e, ndx);
			GElf_Shdr ssh;

			last_ndx = ndx;
			last_exec = false;
			last_end = 0;
			if (ss && gelf_getshdr(ss, &ssh)) {
				last_exec = (ssh.sh_flags & SHF_EXECINSTR) &&
					    (ssh.sh_flags & SHF_ALLOC);
				last_end = ssh.sh_addr + ssh.sh_size;
				if (last_end < ssh.sh_addr)
					last_end = UINT64_MAX;
			}
		}
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || !is_code_symbol(&s, name, last_exec))
			continue;
		bind = GELF_ST_BIND(s.st_info);
		c.addr = s.st_value;
		c.size = s.st_size;
		c.limit = last_end;
		if (bind == STB_GLOBAL || bind == STB_WEAK ||
		    bind == STB_GNU_UNIQUE)
			c.flags |= SYM_F_GLOBAL;
		if (bind == STB_WEAK)
			c.flags |= SYM_F_WEAK;
		if (type != STT_NOTYPE)
			c.flags |= SYM_F_FUNC;
		if (type == STT_GNU_IFUNC)
			c.flags |= SYM_F_IFUNC;
		c.name = sym_name_store(&ld->f->arena, name, strlen(name), NULL,
					ld->raw);
		if (!c.name || sym_cands_add(&ld->c, &c))
			return -ENOMEM;
	}
	return 0;
}

/* Append the .symtab of e (also .dynsym if want_dynsym and no .symtab).
 * -EINVAL when the chosen table is unreadable. */
static int collect_syms(struct loader *ld, Elf *e, bool want_dynsym)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_of_type(e, SHT_SYMTAB, &sh);

	if ((!scn || !sh.sh_size) && want_dynsym)
		scn = section_of_type(e, SHT_DYNSYM, &sh);
	if (!scn || sh.sh_type == SHT_NOBITS)
		return 0;
	return collect_symtab(ld, e, scn, &sh);
}

/* ------------------------------------------------------------------ */
/* MiniDebugInfo                                                       */

static int xz_decode(const uint8_t *in, size_t inlen, uint8_t **out,
		     size_t *outlen)
{
	lzma_stream s = LZMA_STREAM_INIT;
	uint8_t *buf = NULL, *nb;
	size_t cap = inlen < SYM_XZ_OUT_MAX / 8 ? inlen * 4 + 4096 : 1 << 20;
	lzma_ret r;

	if (lzma_stream_decoder(&s, SYM_XZ_MEMLIMIT, 0) != LZMA_OK)
		return -1;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	s.next_in = in;
	s.avail_in = inlen;
	s.next_out = buf;
	s.avail_out = cap;
	for (;;) {
		r = lzma_code(&s, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK && r != LZMA_BUF_ERROR)
			goto fail;
		if (s.avail_out)
			goto fail; /* no progress possible: truncated input */
		if (cap >= SYM_XZ_OUT_MAX)
			goto fail;
		nb = realloc(buf, cap * 2);
		if (!nb)
			goto fail;
		buf = nb;
		s.next_out = buf + cap;
		s.avail_out = cap;
		cap *= 2;
	}
	*outlen = (size_t)s.total_out;
	*out = buf;
	lzma_end(&s);
	return 0;
fail:
	lzma_end(&s);
	free(buf);
	return -1;
}

/* Merge the .symtab of the xz-compressed ELF in .gnu_debugdata.  A broken
 * one is ignored: the file's own symbols still stand. */
static int collect_minidebuginfo(struct loader *ld, Elf *e)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(e, ".gnu_debugdata", &sh);
	Elf_Data *d;
	uint8_t *img = NULL;
	size_t len = 0;
	Elf *me;
	int rc = 0;

	if (!scn || sh.sh_type == SHT_NOBITS)
		return 0;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || xz_decode(d->d_buf, d->d_size, &img, &len))
		return 0;
	me = elf_memory((char *)img, len);
	if (me && elf_kind(me) == ELF_K_ELF) {
		rc = collect_syms(ld, me, false);
		if (rc == -EINVAL)
			rc = 0;
	}
	elf_end(me);
	free(img);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Separate debug files                                                */

/* The file name in .gnu_debuglink, or false. */
static bool debuglink_name(Elf *e, char *out, size_t outlen)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(e, ".gnu_debuglink", &sh);
	Elf_Data *d;
	size_t n;

	if (!scn || sh.sh_type == SHT_NOBITS)
		return false;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf)
		return false;
	n = strnlen(d->d_buf, d->d_size);
	if (!n || n == d->d_size || n >= outlen || memchr(d->d_buf, '/', n))
		return false;
	memcpy(out, d->d_buf, n);
	out[n] = '\0';
	return true;
}

/*
 * Merge the .symtab of the debug file at path, when it is one for this
 * image.  Returns 1 when used, 0 when not, -ENOMEM.
 */
static int try_debug_file(struct loader *ld, const char *path)
{
	struct stat st;
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t bid_len;
	Elf *e = NULL;
	int fd, rc = 0;

	fd = mt_open_regular(path, &st);
	if (fd < 0)
		return 0;
	/* A debuglink that names the file itself is no help. */
	if (ld->have_stat && st.st_dev == ld->st.st_dev &&
	    st.st_ino == ld->st.st_ino)
		goto out;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out;
	/* A stale debug file (the program was rebuilt) would name the
	 * wrong code: insist on the same build id when both have one. */
	read_build_id(e, bid, &bid_len);
	if (ld->f->build_id_len && bid_len &&
	    (bid_len != ld->f->build_id_len ||
	     memcmp(bid, ld->f->build_id, bid_len)))
		goto out;
	rc = collect_syms(ld, e, false);
	if (rc == -EINVAL)
		rc = 0;
	else if (rc == 0)
		rc = 1;
out:
	elf_end(e);
	close(fd);
	return rc;
}

static int collect_debug_file(struct loader *ld, Elf *e)
{
	const char *root = ld->debug_root;
	char link[256], dir[4096], p[8192];
	const char *slash;
	size_t i, n;
	int rc;

	/* An empty root turns off the lookups under it, not the ones
	 * beside the file that .gnu_debuglink asks for. */
	if (root[0] && ld->f->build_id_len >= 2) {
		n = (size_t)snprintf(p, sizeof(p), "%s/.build-id/%02x/", root,
				     ld->f->build_id[0]);
		for (i = 1; i < ld->f->build_id_len && n + 3 < sizeof(p); i++)
			n += (size_t)snprintf(p + n, sizeof(p) - n, "%02x",
					      ld->f->build_id[i]);
		if (n + 7 < sizeof(p)) {
			memcpy(p + n, ".debug", 7);
			rc = try_debug_file(ld, p);
			if (rc)
				return rc < 0 ? rc : 0;
		}
	}
	if (!ld->path || !debuglink_name(e, link, sizeof(link)))
		return 0;
	slash = strrchr(ld->path, '/');
	if (slash) {
		n = (size_t)(slash - ld->path);
		if (n >= sizeof(dir))
			return 0;
		memcpy(dir, ld->path, n);
		dir[n] = '\0';
	} else {
		strcpy(dir, ".");
	}
	/* gdb's order: beside the file, in .debug/ beside it, under the
	 * debug root at the file's own directory. */
	snprintf(p, sizeof(p), "%s/%s", dir, link);
	rc = try_debug_file(ld, p);
	if (!rc) {
		snprintf(p, sizeof(p), "%s/.debug/%s", dir, link);
		rc = try_debug_file(ld, p);
	}
	if (!rc && root[0] && dir[0] == '/') {
		snprintf(p, sizeof(p), "%s%s/%s", root, dir, link);
		rc = try_debug_file(ld, p);
	}
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */

static int collect_loads(struct loader *ld, Elf *e)
{
	size_t i, nph, cap = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &nph))
		return fail_msg(ld, -EINVAL,
				"truncated or corrupt ELF (program headers: "
				"%s)",
				elf_errmsg(-1));
	for (i = 0; i < nph; i++) {
		struct sym_load *l;

		if (!gelf_getphdr(e, (int)i, &ph))
			return fail_msg(ld, -EINVAL,
					"truncated or corrupt ELF (program "
					"header %zu: %s)",
					i, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD)
			continue;
		if (mt_grow((void **)&ld->f->loads, &cap, ld->f->nr_loads + 1,
			    sizeof(*l)))
			return fail_msg(ld, -ENOMEM, "out of memory");
		l = &ld->f->loads[ld->f->nr_loads++];
		/* Padding too: callers may compare loads bytewise. */
		memset(l, 0, sizeof(*l));
		l->offset = ph.p_offset;
		l->vaddr = ph.p_vaddr;
		l->filesz = ph.p_filesz;
		l->memsz = ph.p_memsz;
		l->flags = ph.p_flags;
	}
	return 0;
}

static int load_elf(struct loader *ld, Elf *e)
{
	GElf_Ehdr eh;
	size_t shnum;
	int rc;

	if (!e)
		return fail_msg(ld, -EINVAL, "truncated or corrupt ELF (%s)",
				elf_errmsg(-1));
	if (elf_kind(e) != ELF_K_ELF)
		return fail_msg(ld, -ENOEXEC, "not an ELF file");
	if (!gelf_getehdr(e, &eh))
		return fail_msg(ld, -EINVAL, "truncated or corrupt ELF (%s)",
				elf_errmsg(-1));
	if (elf_getshdrnum(e, &shnum))
		return fail_msg(ld, -EINVAL,
				"truncated or corrupt ELF (section headers: "
				"%s)",
				elf_errmsg(-1));
	ld->f->type = eh.e_type;
	ld->f->size = ld->size;
	rc = collect_loads(ld, e);
	if (rc)
		return rc;
	read_build_id(e, ld->f->build_id, &ld->f->build_id_len);
	rc = collect_syms(ld, e, true);
	if (rc == -EINVAL)
		return fail_msg(ld, rc,
				"truncated or corrupt ELF (symbol table: %s)",
				elf_errmsg(-1));
	if (!rc)
		rc = sym_plt_collect(e, &ld->f->arena, &ld->c, ld->raw);
	ld->f->elf64 = gelf_getclass(e) == ELFCLASS64;
	if (!rc)
		rc = sym_fde_collect(e, &ld->f->eh);
	if (!rc)
		rc = collect_minidebuginfo(ld, e);
	if (!rc)
		rc = collect_debug_file(ld, e);
	if (!rc)
		rc = sym_cands_finish(&ld->c, &ld->f->syms, &ld->f->ends,
				      &ld->f->nr_syms);
	if (rc)
		return fail_msg(ld, rc, "out of memory");
	return 0;
}

static int loader_init(struct loader *ld, const char *name, const char *path,
		       const struct sym_opts *o, char *err, size_t errlen)
{
	memset(ld, 0, sizeof(*ld));
	ld->name = name ? name : "(memory)";
	ld->path = path;
	ld->debug_root = o && o->debug_root ? o->debug_root : "/usr/lib/debug";
	ld->raw = o && o->no_demangle;
	ld->err = err;
	ld->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	/* Idempotent, and cheap after the first call. */
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail_msg(ld, -EINVAL, "libelf is too old");
	ld->f = calloc(1, sizeof(*ld->f));
	if (!ld->f)
		return fail_msg(ld, -ENOMEM, "out of memory");
	return 0;
}

static int loader_done(struct loader *ld, int rc, struct sym_file **out)
{
	free(ld->c.v);
	if (rc) {
		sym_file_free(ld->f);
		*out = NULL;
	} else {
		*out = ld->f;
	}
	return rc;
}

int sym_file_open(const char *path, const struct sym_opts *o,
		  struct sym_file **out, char *err, size_t errlen)
{
	struct loader ld;
	char magic[SELFMAG];
	Elf *e = NULL;
	int fd = -1, rc;

	*out = NULL;
	rc = loader_init(&ld, path, path, o, err, errlen);
	if (rc)
		return rc;
	fd = mt_open_regular(path, &ld.st);
	if (fd == -EINVAL) {
		rc = fail_msg(&ld, fd, "not a regular file");
		goto out;
	}
	if (fd < 0) {
		rc = fail_msg(&ld, fd, "%s", strerror(-fd));
		goto out;
	}
	ld.have_stat = true;
	ld.size = (uint64_t)ld.st.st_size;
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, ELFMAG, SELFMAG)) {
		rc = fail_msg(&ld, -ENOEXEC, "not an ELF file");
		goto out;
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	rc = load_elf(&ld, e);
out:
	elf_end(e);
	if (fd >= 0)
		close(fd);
	return loader_done(&ld, rc, out);
}

int sym_file_open_mem(const void *buf, size_t len, const char *name,
		      const struct sym_opts *o, struct sym_file **out,
		      char *err, size_t errlen)
{
	struct loader ld;
	char *copy = NULL;
	Elf *e = NULL;
	int rc;

	*out = NULL;
	rc = loader_init(&ld, name, NULL, o, err, errlen);
	if (rc)
		return rc;
	if (len < SELFMAG || memcmp(buf, ELFMAG, SELFMAG)) {
		rc = fail_msg(&ld, -ENOEXEC, "not an ELF file");
		goto out;
	}
	/* libelf wants a writable image; the caller's stays untouched. */
	ld.size = len;
	copy = malloc(len ? len : 1);
	if (!copy) {
		rc = fail_msg(&ld, -ENOMEM, "out of memory");
		goto out;
	}
	if (len)
		memcpy(copy, buf, len);
	e = elf_memory(copy, len);
	rc = load_elf(&ld, e);
out:
	elf_end(e);
	free(copy);
	return loader_done(&ld, rc, out);
}

void sym_file_free(struct sym_file *f)
{
	if (!f)
		return;
	sym_arena_free(&f->arena);
	free(f->syms);
	free(f->ends);
	free(f->loads);
	free(f->eh.fdes);
	free(f->eh.lps);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */

const struct sym *sym_file_lookup(const struct sym_file *f, uint64_t vaddr)
{
	long i = sym_search(f->syms, f->ends, f->nr_syms, vaddr);

	return i < 0 ? NULL : &f->syms[i];
}

bool sym_file_fde(const struct sym_file *f, uint64_t vaddr, uint64_t *start,
		  uint64_t *end)
{
	long i = mt_range_at(f->eh.fdes, f->eh.nr_fdes, sizeof(*f->eh.fdes),
			     vaddr);

	if (i < 0)
		return false;
	*start = f->eh.fdes[i].r.lo;
	*end = f->eh.fdes[i].r.hi;
	return true;
}

bool sym_file_is_64bit(const struct sym_file *f)
{
	return f->elf64;
}

int sym_file_landing_pads(const struct sym_file *f, uint64_t lo, uint64_t hi,
			  const struct sym_lp **out, size_t *n)
{
	const struct sym_eh *eh = &f->eh;
	long at = mt_range_at(eh->fdes, eh->nr_fdes, sizeof(*eh->fdes), lo);
	size_t a;

	*out = NULL;
	*n = 0;
	if (!eh->nr_fdes)
		return eh->have ? -1 : 0;
	/* the FDEs that [lo, hi) overlaps: any LSDA unread leaves it
	 * unknown */
	a = at >= 0 ? (size_t)at
		    : mt_range_from(eh->fdes, eh->nr_fdes, sizeof(*eh->fdes),
				    lo);
	for (; a < eh->nr_fdes && eh->fdes[a].r.lo < hi; a++)
		if (eh->fdes[a].eh == SYM_EH_UNREAD)
			return -1;
	/* a landing pad's call site begins like a struct mt_range */
	if (!eh->nr_lps)
		return 0; /* (lps is NULL then) */
	a = mt_range_from(eh->lps, eh->nr_lps, sizeof(*eh->lps), lo);
	*out = eh->lps + a;
	while (a + *n < eh->nr_lps && eh->lps[a + *n].lo < hi)
		(*n)++;
	return 0;
}

const struct sym *sym_file_syms(const struct sym_file *f, size_t *nr)
{
	*nr = f->nr_syms;
	return f->syms;
}

const struct sym_load *sym_file_loads(const struct sym_file *f, size_t *nr)
{
	*nr = f->nr_loads;
	return f->loads;
}

const uint8_t *sym_file_build_id(const struct sym_file *f, size_t *len)
{
	*len = f->build_id_len;
	return f->build_id_len ? f->build_id : NULL;
}

uint64_t sym_file_size(const struct sym_file *f)
{
	return f->size;
}

int sym_file_type(const struct sym_file *f)
{
	return f->type;
}

int sym_file_off_to_vaddr(const struct sym_file *f, uint64_t off,
			  uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < f->nr_loads; i++) {
		const struct sym_load *l = &f->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = l->vaddr + (off - l->offset);
			return 0;
		}
	}
	/*
	 * A mapping starts at a page boundary, which may lie before its
	 * segment's first byte (p_offset and p_vaddr agree modulo the page
	 * size): accept offsets in that leading part of the page too.
	 */
	for (i = 0; i < f->nr_loads; i++) {
		const struct sym_load *l = &f->loads[i];
		uint64_t start = l->offset & ~(uint64_t)4095;

		if (off >= start && off < l->offset &&
		    l->vaddr >= l->offset - off) {
			*vaddr = l->vaddr - (l->offset - off);
			return 0;
		}
	}
	return -1;
}
