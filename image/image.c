/* SPDX-License-Identifier: MIT */
/*
 * Binaries and images: find the file behind each executable mapping, check
 * its build id, add its code to one libipt section cache and to the image
 * of each process that maps it, and name addresses.
 *
 * A binary that cannot be found (or whose build id differs from the
 * recorded one) is reported once, by name and build id; its addresses get
 * made-up names and libipt reports them as unmapped, which ends a trace
 * segment instead of flooding errors.
 */
#include "image/img_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A warning, printf-style, to the opts' warn callback. */
static void img_warn(const struct img *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void img_warn(const struct img *c, const char *fmt, ...)
{
	char small[512], *line = small;
	va_list ap;
	int n;

	if (!c->opts.warn)
		return;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* A path and an error of a few KiB each: longer than most. */
	if ((size_t)n >= sizeof(small)) {
		line = malloc((size_t)n + 1);
		if (!line)
			return;
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	c->opts.warn(c->opts.warn_ctx, line);
	if (line != small)
		free(line);
}

static int add_missing_locked(struct img *c, const char *line)
{
	char *s = strdup(line);

	if (!s || mt_grow((void **)&c->missing, &c->cap_missing,
			  c->nr_missing + 1, sizeof(*c->missing))) {
		free(s);
		return -ENOMEM;
	}
	c->missing[c->nr_missing++] = s;
	img_warn(c, "%s", line);
	return 0;
}

int img_add_missing(struct img *c, const char *line)
{
	int rc;

	pthread_mutex_lock(&c->note_lock);
	rc = add_missing_locked(c, line);
	pthread_mutex_unlock(&c->note_lock);
	return rc;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

static bool has_code(const struct sym_file *sf)
{
	size_t n;
	const struct sym_load *l = sym_file_loads(sf, &n);

	for (size_t i = 0; i < n; i++)
		if ((l[i].flags & PF_X) && l[i].filesz)
			return true;
	return false;
}

/*
 * Whether the file ends before its code does (a copy cut short): libipt
 * would refuse the code, or read part of it, with no name to the file.
 * Says so in why[], when nothing went there before.
 */
static bool code_cut(const struct sym_file *sf, const char *file,
		     const struct img_dso *d, char *why, size_t whylen)
{
	uint64_t size = sym_file_size(sf);
	size_t n;
	const struct sym_load *l = sym_file_loads(sf, &n);

	for (size_t i = 0; i < n; i++) {
		if (!(l[i].flags & PF_X) || !l[i].filesz ||
		    (l[i].offset <= size && l[i].filesz <= size - l[i].offset))
			continue;
		if (!why[0])
			snprintf(why, whylen,
				 "%s%struncated ELF (%" PRIu64
				 " bytes; its code at offset %#" PRIx64
				 " has %" PRIu64 ")",
				 strcmp(file, d->path) ? file : "",
				 strcmp(file, d->path) ? ": " : "", size,
				 l[i].offset, l[i].filesz);
		return true;
	}
	return false;
}

/*
 * Try one candidate file: 1 if it is the binary, 0 if not, <0 on OOM.
 * Why a file that is there cannot be used (not a regular file, a cut or
 * corrupt ELF) goes to why[] when nothing went there before.
 */
static int try_file(struct img *c, struct img_dso *d, const char *file,
		    bool *mismatch, char *why, size_t whylen)
{
	struct sym_opts so = {.debug_root = c->opts.debug_root};
	struct sym_file *sf;
	char err[PATH_MAX + 256];
	size_t n, fl = strlen(file);
	const uint8_t *id;
	int rc;

	rc = sym_file_open(file, &so, &sf, err, sizeof(err));
	/* Out of memory says nothing of the file: no other file is tried
	 * instead. */
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		/* The line names the file first: the one the capture
		 * names is named by the caller already. */
		const char *what = err;

		if (!strcmp(file, d->path) && !strncmp(err, file, fl) &&
		    !strncmp(err + fl, ": ", 2))
			what = err + fl + 2;
		if (rc != -ENOENT && rc != -ENOTDIR && !why[0])
			snprintf(why, whylen, "%s", what);
		return 0;
	}
	id = sym_file_build_id(sf, &n);
	/* A file without a build id cannot be checked; one with another
	 * id is another build. */
	if (d->build_id_len && n &&
	    (n < d->build_id_len || memcmp(id, d->build_id, d->build_id_len))) {
		*mismatch = true;
		sym_file_free(sf);
		return 0;
	}
	if (!has_code(sf) && !why[0])
		snprintf(why, whylen,
			 "%s%sno code in it (no executable segment)",
			 strcmp(file, d->path) ? file : "",
			 strcmp(file, d->path) ? ": " : "");
	if (!has_code(sf) || code_cut(sf, file, d, why, whylen)) {
		sym_file_free(sf);
		return 0;
	}
	d->found = strdup(file);
	if (!d->found) {
		sym_file_free(sf);
		return -ENOMEM;
	}
	d->sf = sf;
	return 1;
}

static int find_dso(struct img *c, struct img_dso *d)
{
	const char *base = strrchr(d->path, '/');
	char buf[PATH_MAX + 64], id[48], line[3 * PATH_MAX];
	char why[PATH_MAX + 256] = "";
	bool mismatch = false;
	int rc = 0;

	base = base ? base + 1 : d->path;
	if (d->is_vdso && c->nr_vdsos) {
		/* The capture carries the image: libipt reads sections from
		 * files, so it goes to a temporary one. */
		char tmp[] = "/tmp/mt-vdso.XXXXXX";
		const struct img_vdso *v = &c->vdsos[0];
		int fd = mkstemp(tmp);

		if (fd >= 0) {
			bool ok =
				write(fd, v->bytes, v->len) == (ssize_t)v->len;

			close(fd);
			if (ok && (rc = try_file(c, d, tmp, &mismatch, why,
						 sizeof(why))) > 0) {
				d->tmp = true;
				return 0;
			}
			unlink(tmp);
			if (rc < 0)
				return rc;
		}
	}
	for (size_t i = 0; i < c->opts.nr_binary_dirs; i++) {
		const char *dir = c->opts.binary_dirs[i];

		snprintf(buf, sizeof(buf), "%s/%s", dir, base);
		if ((rc = try_file(c, d, buf, &mismatch, why, sizeof(why))))
			return rc < 0 ? rc : 0;
		if (d->path[0] == '/') {
			snprintf(buf, sizeof(buf), "%s%s", dir, d->path);
			if ((rc = try_file(c, d, buf, &mismatch, why,
					   sizeof(why))))
				return rc < 0 ? rc : 0;
		}
	}
	if (d->path[0] == '/' &&
	    (rc = try_file(c, d, d->path, &mismatch, why, sizeof(why))))
		return rc < 0 ? rc : 0;
	if (d->build_id_len) {
		const char *root = c->opts.debug_root ? c->opts.debug_root
						      : "/usr/lib/debug";

		hex(id, d->build_id, d->build_id_len);
		if (*root) {
			snprintf(buf, sizeof(buf), "%s/.build-id/%.2s/%s", root,
				 id, id + 2);
			if ((rc = try_file(c, d, buf, &mismatch, why,
					   sizeof(why))))
				return rc < 0 ? rc : 0;
		}
	} else {
		strcpy(id, "unknown");
	}
	if (d->path[0] != '/' && !d->is_vdso)
		snprintf(line, sizeof(line),
			 "%s: no file for code in %s: it shows as [unknown]",
			 c->path, d->path);
	else if (d->is_vdso)
		snprintf(line, sizeof(line),
			 "%s: the capture has no [vdso] image: vDSO code "
			 "shows as [unknown]",
			 c->path);
	else if (why[0])
		snprintf(line, sizeof(line),
			 "%s: binary %s (build id %s) cannot be used: %s: its "
			 "code shows as [unknown]",
			 c->path, d->path, id, why);
	else
		snprintf(line, sizeof(line),
			 "%s: binary %s (build id %s) %s: its code shows as "
			 "[unknown]; add --binaries DIR",
			 c->path, d->path, id,
			 mismatch ? "found, but with another build id"
				  : "not found");
	d->missing = strdup(line);
	return d->missing ? 0 : -ENOMEM;
}

/* Build ids from the BUILD_ID feature fill in what MMAP records lack. */
static int apply_buildids(struct img *c)
{
	const struct pd_buildid *b;
	size_t n;

	if (pd_buildids(c->pd, &b, &n, NULL, 0))
		return 0; /* a malformed table only costs the check */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < c->nr_dsos; j++) {
			struct img_dso *d = &c->dsos[j];

			if (d->build_id_len || strcmp(d->path, b[i].filename))
				continue;
			d->build_id_len = b[i].size <= 20 ? b[i].size : 20;
			memcpy(d->build_id, b[i].id, d->build_id_len);
		}
	return 0;
}

/*
 * libipt refused d's code although the file was read whole a moment
 * before: it changed since (cut short, replaced).  Its code shows as a
 * missing binary's does, with a note, rather than fail the conversion.
 */
static int code_unreadable(struct img *c, struct img_dso *d, int status)
{
	char line[3 * PATH_MAX];

	if (d->missing)
		return 0;
	snprintf(line, sizeof(line),
		 "%s: binary %s changed while being read (libipt: %s): its "
		 "code shows as [unknown]",
		 c->path, d->found, pt_errstr(pt_errcode(status)));
	d->missing = strdup(line);
	return d->missing ? 0 : -pte_nomem;
}

int img_add_section(struct img *c, const char *path, uint64_t offset,
		    uint64_t size, uint64_t laddr)
{
	struct img_sec *sec;
	int isid;

	if (mt_grow((void **)&c->secs, &c->cap_secs, c->nr_secs + 1,
		    sizeof(*c->secs)))
		return -pte_nomem;
	isid = pt_iscache_add_file(c->iscache, path, offset, size, laddr);
	if (isid < 0)
		return isid;
	sec = &c->secs[c->nr_secs];
	*sec = (struct img_sec){.path = strdup(path),
				.offset = offset,
				.size = size,
				.laddr = laddr,
				.isid = isid};
	if (!sec->path)
		return -pte_nomem;
	c->nr_secs++;
	return isid;
}

int img_proc_add(struct img *c, struct img_proc *p, int isid)
{
	int rc;

	if (mt_grow((void **)&p->isids, &p->cap_isids, p->nr_isids + 1,
		    sizeof(*p->isids)))
		return -pte_nomem;
	rc = pt_image_add_cached(p->image, c->iscache, isid, NULL);
	if (rc < 0)
		return rc;
	p->isids[p->nr_isids++] = isid;
	return 0;
}

static int add_map_sections(struct img *c, struct img_map *m,
			    struct img_proc *p)
{
	struct img_dso *d = &c->dsos[m->dso];
	const struct sym_load *l;
	size_t n;

	if (!d->sf)
		return 0;
	l = sym_file_loads(d->sf, &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = l[i].offset, hi = l[i].offset + l[i].filesz;
		uint64_t mlo = m->pgoff, mhi = m->pgoff + (m->end - m->start);
		int isid, rc;

		if (!(l[i].flags & PF_X))
			continue;
		if (lo < mlo)
			lo = mlo;
		if (hi > mhi)
			hi = mhi;
		if (lo >= hi)
			continue;
		if (!m->have_bias) {
			/* Modulo 2^64, as the addresses it relates: a
			 * mapping's start and offset are whatever the capture
			 * says, and a signed difference can overflow. */
			m->bias = (int64_t)((m->start - m->pgoff) -
					    (l[i].vaddr - l[i].offset));
			m->have_bias = true;
		}
		isid = img_add_section(c, d->found, lo, hi - lo,
				       m->start + (lo - m->pgoff));
		if (isid < 0 && pt_errcode(isid) != pte_nomem)
			return code_unreadable(c, d, isid);
		if (isid < 0)
			return isid;
		if (!m->isid) {
			m->isid = isid;
			m->code_lo = m->start + (lo - m->pgoff);
			m->code_hi = m->code_lo + (hi - lo);
		}
		rc = img_proc_add(c, p, isid);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool has_maps(const struct img *c, uint32_t pid)
{
	for (size_t i = 0; i < c->nr_maps; i++)
		if (c->maps[i].pid == pid)
			return true;
	return false;
}

/* The process pid forked from, pid itself when none is known. */
static uint32_t parent_of(const struct img *c, uint32_t pid)
{
	uint32_t ppid = pid;

	for (size_t i = 0; i < c->nr_procs; i++)
		if (c->procs[i].pid == pid)
			ppid = c->procs[i].ppid;
	return ppid;
}

uint32_t img_map_owner(const struct img *c, uint32_t pid)
{
	uint32_t first = pid;

	for (int hops = 0; hops < 16; hops++) {
		uint32_t ppid = parent_of(c, pid);

		if (has_maps(c, pid))
			return pid;
		if (ppid == pid)
			break;
		pid = ppid;
	}
	/* A space with no code at all (a launched program's before its
	 * exec, which a trace dated a little early, or on another clock,
	 * would read): the next one of the process that has some. */
	for (uint32_t k = first, next; (next = img_next_space(c, k)) != k;
	     k = next)
		if (has_maps(c, next))
			return next;
	return pid;
}

int img_build(struct img *c, struct pd_file *pd, const struct pd_pt_info *pt,
	      char *err, size_t errlen)
{
	int rc;

	c->pd = pd;
	if (pt) {
		c->pt = *pt;
		c->have_pt = true;
	}
	c->iscache = pt_iscache_alloc(NULL);
	if (!c->iscache)
		goto oom;
	rc = img_kernel_load(c, err, errlen);
	if (rc)
		return rc;
	apply_buildids(c);
	for (size_t i = 0; i < c->nr_dsos; i++)
		if (find_dso(c, &c->dsos[i]))
			goto oom;
	for (size_t p = 0; p < c->nr_procs; p++) {
		struct img_proc *proc = &c->procs[p];
		uint32_t owner = img_map_owner(c, proc->pid);

		proc->image = pt_image_alloc(proc->comm);
		if (!proc->image)
			goto oom;
		rc = img_kernel_image(c, proc);
		if (rc < 0)
			return img_pt_error(rc, err, errlen, c->path, "image");
		for (size_t i = 0; i < c->nr_maps; i++) {
			if (c->maps[i].pid != owner)
				continue;
			rc = add_map_sections(c, &c->maps[i], proc);
			if (rc < 0)
				return img_pt_error(rc, err, errlen, c->path,
						    "image");
		}
	}
	return 0;
oom:
	snprintf(err, errlen, "%s: out of memory", c->path);
	return -ENOMEM;
}

long img_proc_of(const struct img *c, uint32_t pid)
{
	size_t best = 0;

	for (size_t i = 0; i < c->nr_procs; i++)
		if (c->procs[i].pid == pid)
			return (long)i;
	/* A stream with no sideband for its thread: with one process in
	 * the capture, that is the one (its latest program, the one its
	 * mappings are likely in). */
	for (size_t i = 1; i < c->nr_procs; i++)
		if (img_space_pid(c->procs[i].pid) !=
		    img_space_pid(c->procs[0].pid))
			return -1;
	for (size_t i = 0; i < c->nr_procs; i++)
		if (c->procs[i].pid > c->procs[best].pid)
			best = i;
	return c->nr_procs ? (long)best : -1;
}

struct pt_image *img_image_of(struct img *c, uint32_t pid)
{
	long i = img_proc_of(c, pid);

	return i < 0 ? NULL : c->procs[i].image;
}

static const struct img_map *find_map(const struct img *c, uint32_t pid,
				      uint64_t ip)
{
	const struct img_map *any = NULL;
	uint32_t owner = img_map_owner(c, pid);

	/* Later mappings replace earlier ones at the same place. */
	for (size_t i = c->nr_maps; i-- > 0;) {
		const struct img_map *m = &c->maps[i];

		if (ip < m->start || ip >= m->end)
			continue;
		if (m->pid == owner)
			return m;
		if (!any)
			any = m;
	}
	return any;
}

/* The symbols around vaddr: the one containing it, else its neighbours. */
static const struct sym *around(const struct sym_file *sf, uint64_t vaddr,
				uint64_t *lo, uint64_t *hi)
{
	size_t n, a = 0, b;
	const struct sym *s = sym_file_syms(sf, &n);
	const struct sym *hit = sym_file_lookup(sf, vaddr);

	if (hit) {
		*lo = hit->addr;
		*hi = hit->size ? hit->addr + hit->size : vaddr + 1;
		if (!hit->size)
			for (size_t i = (size_t)(hit - s) + 1; i < n; i++)
				if (s[i].addr > hit->addr) {
					*hi = s[i].addr;
					break;
				}
		return hit;
	}
	b = n;
	while (a < b) { /* first symbol above vaddr */
		size_t mid = a + (b - a) / 2;

		if (s[mid].addr <= vaddr)
			a = mid + 1;
		else
			b = mid;
	}
	if (a > 0) {
		const struct sym *p = &s[a - 1];
		uint64_t end = p->addr + p->size;

		if (end > *lo && end <= vaddr)
			*lo = end;
	}
	if (a < n && s[a].addr < *hi)
		*hi = s[a].addr;
	return NULL;
}

/*
 * p's JIT symbols, from perf-PID.map in the JIT directory, read when code
 * that no binary holds first asks for them: anyone can put a file at
 * /tmp/perf-PID.map, and a capture without such code never looks.
 */
static void jit_load(struct img *c, struct img_proc *p)
{
	char path[4096], err[4352];
	int rc;

	snprintf(path, sizeof(path), "%s/perf-%u.map",
		 c->opts.jit_dir ? c->opts.jit_dir : "/tmp",
		 img_space_pid(p->pid));
	rc = sym_map_open(path, &p->jit, err, sizeof(err));
	if (rc && rc != -ENOENT)
		img_warn(c, "%s: %s: JIT symbols not used", c->path, err);
}

/* A JIT symbol of pid's perf map at ip, or NULL. */
static const struct sym *jit_sym(struct img *c, uint32_t pid, uint64_t ip)
{
	const struct sym_map *m = NULL;

	for (size_t i = 0; i < c->nr_procs; i++) {
		struct img_proc *p = &c->procs[i];

		if (p->pid != pid)
			continue;
		pthread_mutex_lock(&c->jit_lock);
		if (!p->jit_tried) {
			p->jit_tried = true;
			jit_load(c, p);
		}
		m = p->jit;
		pthread_mutex_unlock(&c->jit_lock);
		break;
	}
	return m ? sym_map_lookup(m, ip) : NULL;
}

/* d's DWARF, NULL when it has none. */
static struct sym_dwarf *dwarf_of(struct img *c, struct img_dso *d)
{
	struct sym_dwarf *w;

	if (!d->sf || !d->found)
		return NULL;
	/* Every name asks: the lock only for the first look. */
	if (atomic_load_explicit(&d->dwarf_done, memory_order_acquire))
		return d->dwarf;
	pthread_mutex_lock(&c->dwarf_lock);
	if (!d->dwarf_tried) {
		char err[512];

		d->dwarf_tried = true;
		/* No DWARF is the common case (a release build, a system
		 * library without its debug file): nothing to say.  Out of
		 * memory is said at the end (img_short_of_memory()). */
		d->dwarf_short =
			sym_dwarf_open(d->found, c->opts.debug_root, &d->dwarf,
				       err, sizeof(err)) == -ENOMEM;
	}
	w = d->dwarf;
	atomic_store_explicit(&d->dwarf_done, true, memory_order_release);
	pthread_mutex_unlock(&c->dwarf_lock);
	return w;
}

/* The inlined calls of m's code from lo to hi (runtime) into *out;
 * tab NULL when there are none (or --no-inline). */
static void inlines_in(struct img *c, const struct img_map *m, uint64_t lo,
		       uint64_t hi, struct img_inl_span *out)
{
	struct sym_dwarf *w;
	uint64_t vlo, vhi;
	size_t to, nr;

	out->tab = NULL;
	if (c->opts.no_inline || lo >= hi ||
	    !(w = dwarf_of(c, &c->dsos[m->dso])))
		return;
	vlo = lo - (uint64_t)m->bias;
	vhi = hi - (uint64_t)m->bias;
	out->tab = sym_dwarf_inlines(w, vlo, &nr);
	out->bias = (uint64_t)m->bias;
	out->from = sym_inlines_from(out->tab, nr, vlo);
	to = sym_inlines_from(out->tab, nr, vhi);
	if (to < nr && out->tab[to].lo < vhi)
		to++;
	out->to = to;
	if (out->from >= out->to)
		out->tab = NULL;
}

int img_short_of_memory(const struct img *c, char *err, size_t errlen)
{
	if (atomic_load(&c->reach_short))
		return mt_err(err, errlen, -ENOMEM,
			      "%s: out of memory walking the program's code "
			      "to stitch across a gap (--no-stitch walks none)",
			      c->path);
	for (size_t i = 0; i < c->nr_dsos; i++) {
		const struct img_dso *d = &c->dsos[i];

		if (d->dwarf_short || sym_dwarf_short(d->dwarf))
			return mt_err(err, errlen, -ENOMEM,
				      "%s: out of memory reading its DWARF "
				      "(source lines, inlined calls; "
				      "--no-inline reads less)",
				      d->found);
	}
	return 0;
}

bool img_fn_code(struct img *c, uint32_t pid, uint64_t ip,
		 struct img_fn_code *out)
{
	const struct img_map *m = find_map(c, pid, ip);
	const struct img_dso *d = m ? &c->dsos[m->dso] : NULL;
	const struct sym *s;
	uint64_t v;

	if (!d || !d->sf || !m->have_bias || !m->isid ||
	    !sym_file_is_64bit(d->sf))
		return false;
	v = ip - (uint64_t)m->bias;
	s = sym_file_lookup(d->sf, v);
	if (!s || !s->size)
		return false;
	out->lo = s->addr + (uint64_t)m->bias;
	out->hi = out->lo + s->size;
	out->isid = m->isid;
	out->bias = (uint64_t)m->bias;
	out->eh_known = !sym_file_landing_pads(
		d->sf, s->addr, s->addr + s->size, &out->lps, &out->nr_lps);
	return out->lo >= m->code_lo && out->hi <= m->code_hi &&
	       out->lo < out->hi;
}

bool img_range(struct img *c, uint32_t pid, uint64_t ip, uint64_t *lo,
	       uint64_t *hi, struct img_inl_span *inl)
{
	const struct img_map *m = find_map(c, pid, ip);
	const struct img_dso *d;
	uint64_t vlo, vhi;

	inl->tab = NULL;
	if (img_kernel_range(c, ip, lo, hi))
		return true;
	*lo = ip;
	*hi = ip + 1;
	if (!m || !c->dsos[m->dso].sf) {
		const struct sym *j = jit_sym(c, pid, ip);

		if (j && j->size) {
			*lo = j->addr;
			*hi = j->addr + j->size;
			return true;
		}
	}
	if (!m)
		return false;
	d = &c->dsos[m->dso];
	if (!d->sf || !m->have_bias) {
		*lo = m->start;
		*hi = m->end;
		return true;
	}
	vlo = m->start - (uint64_t)m->bias;
	vhi = m->end - (uint64_t)m->bias;
	around(d->sf, ip - (uint64_t)m->bias, &vlo, &vhi);
	*lo = vlo + (uint64_t)m->bias;
	*hi = vhi + (uint64_t)m->bias;
	if (*lo < m->start)
		*lo = m->start;
	if (*hi > m->end)
		*hi = m->end;
	inlines_in(c, m, *lo, *hi, inl);
	return true;
}

/* d's missing note, said once when the trace first runs into it. */
static void note_dso_use(struct img *c, struct img_dso *d)
{
	pthread_mutex_lock(&c->note_lock);
	if (d->missing) {
		add_missing_locked(c, d->missing);
		free(d->missing);
		d->missing = NULL;
	}
	pthread_mutex_unlock(&c->note_lock);
}

void img_note_use(struct img *c, uint32_t pid, uint64_t ip)
{
	const struct img_map *m = find_map(c, pid, ip);

	/* Reporting only binaries the trace runs into keeps the list to
	 * what matters (a capture maps every kernel module, say). */
	if (m)
		note_dso_use(c, &c->dsos[m->dso]);
}

/* Where the source has vaddr (file NULL: nowhere known). */
static void source_at(struct sym_dwarf *w, uint64_t vaddr, const char **file,
		      unsigned *line)
{
	*file = NULL;
	*line = 0;
	if (!sym_dwarf_line(w, vaddr, file, line))
		*file = NULL;
}

/* The inlined calls at vaddr of a function in [lo, hi) (ELF vaddrs). */
static void inlined_at(struct sym_dwarf *w, uint64_t vaddr, uint64_t lo,
		       uint64_t hi, struct img_sym *out)
{
	size_t nr = 0;
	const struct sym_inline_range *r =
		w ? sym_dwarf_inlines(w, lo, &nr) : NULL;
	size_t i = sym_inlines_from(r, nr, lo);

	out->fn_inl = i < nr && r[i].lo < hi;
	out->inl = out->fn_inl ? sym_inline_at(r, nr, vaddr) : NULL;
}

/*
 * Code between two symbols (a stripped library's own functions): the
 * function of the unwind tables that vaddr is in, within [*lo, *hi),
 * narrows them to it.  So each such function has one name and one range
 * wherever the trace enters it.
 */
static bool unnamed_function(const struct sym_file *sf, uint64_t vaddr,
			     uint64_t *lo, uint64_t *hi)
{
	uint64_t start, end;

	if (!sym_file_fde(sf, vaddr, &start, &end) || start < *lo)
		return false;
	*lo = start;
	if (end < *hi)
		*hi = end;
	return true;
}

void img_symbolize(struct img *c, uint32_t pid, uint64_t ip,
		   struct img_sym *out)
{
	const struct img_map *m = find_map(c, pid, ip);
	struct img_dso *d = m ? &c->dsos[m->dso] : NULL;
	const char *base;
	/* an unknown function is named by its start where that is known,
	 * else by the address */
	uint64_t named_at = ip;

	out->fn_file = out->ip_file = NULL;
	out->fn_line = out->ip_line = 0;
	out->inl = NULL;
	out->fn_inl = false;
	if (img_kernel_symbolize(c, ip, out))
		return;
	out->known = out->entry_known = false;
	out->dso = d ? d->path : "";
	out->start = ip;
	out->end = ip + 1;
	if (d && d->sf && m->have_bias) {
		uint64_t vlo = m->start - (uint64_t)m->bias;
		uint64_t vhi = m->end - (uint64_t)m->bias;
		const struct sym *s =
			around(d->sf, ip - (uint64_t)m->bias, &vlo, &vhi);

		out->start = vlo + (uint64_t)m->bias;
		out->end = vhi + (uint64_t)m->bias;
		if (!s && unnamed_function(d->sf, ip - (uint64_t)m->bias, &vlo,
					   &vhi)) {
			out->start = vlo + (uint64_t)m->bias;
			out->end = vhi + (uint64_t)m->bias;
			out->entry_known = true;
			named_at = out->start;
		}
		if (s) {
			/* One look for the DWARF, under its lock. */
			struct sym_dwarf *w = dwarf_of(c, d);

			out->name = s->name;
			out->known = out->entry_known = true;
			source_at(w, ip - (uint64_t)m->bias, &out->ip_file,
				  &out->ip_line);
			if (out->ip_file)
				source_at(w, vlo, &out->fn_file, &out->fn_line);
			inlined_at(c->opts.no_inline ? NULL : w,
				   ip - (uint64_t)m->bias, vlo, vhi, out);
			return;
		}
	}
	/* JIT code lies outside the binaries. */
	if (!d || !d->sf) {
		const struct sym *j = jit_sym(c, pid, ip);

		if (j) {
			out->name = j->name;
			out->known = out->entry_known = true;
			out->start = j->addr;
			out->end = j->size ? j->addr + j->size : ip + 1;
			return;
		}
	}
	if (d)
		note_dso_use(c, d);
	base = d ? strrchr(d->path, '/') : NULL;
	base = base ? base + 1 : d ? d->path : "unmapped";
	snprintf(out->buf, sizeof(out->buf), "[unknown @ %#llx (%s)]",
		 (unsigned long long)named_at, base);
	out->name = out->buf;
}

bool img_pid_has_symbol(const struct img *im, uint32_t pid,
			bool (*pred)(const char *name))
{
	/* A forked child runs its parents' code too, whatever it maps of
	 * its own: their binaries count. */
	for (int hops = 0; hops < 16; hops++) {
		uint32_t ppid = parent_of(im, pid);

		for (size_t i = 0; i < im->nr_maps; i++) {
			const struct sym_file *sf =
				im->dsos[im->maps[i].dso].sf;
			const struct sym *s;
			size_t n;

			if (img_space_pid(im->maps[i].pid) != pid || !sf)
				continue;
			s = sym_file_syms(sf, &n);
			for (size_t k = 0; k < n; k++)
				if (s[k].name && pred(s[k].name))
					return true;
		}
		if (ppid == pid)
			break;
		pid = ppid;
	}
	return false;
}
