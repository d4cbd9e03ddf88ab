/* SPDX-License-Identifier: MIT */
/*
 * A binary's DWARF, a compilation unit at a time (sym_dwarf), and what
 * the DWARF readers of symbols/ share: opening the DWARF (the binary's
 * own, or its separate debug file) and making file names whole.
 *
 * Opening reads only the units' headers and address ranges.  The first
 * question about an address reads its unit (lines.c, inlines.c) under a
 * lock and publishes it; later questions about the unit read what was
 * published, without the lock.
 */
#include "symbols/sym_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where separate debug files are, unless told otherwise. */
#define DEBUG_ROOT "/usr/lib/debug"
/* libdwfl's search path before the root: beside the binary, and in its
 * .debug folder. */
#define SEARCH_HEAD ":.debug:"

/*
 * Collapse "." and "dir/.." in path, in place: compilers write a header's
 * name relative to each unit's directory, and one file must be one name
 * whichever unit names it.
 */
void sym_path_normalize(char *path, size_t size)
{
	char tmp[4096], *seg[512], *save = NULL;
	size_t n = 0, at = 0;
	bool abs = path[0] == '/';

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *t = strtok_r(tmp, "/", &save); t && n < 512;
	     t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, "."))
			continue;
		if (!strcmp(t, "..") && n && strcmp(seg[n - 1], "..")) {
			n--;
			continue;
		}
		if (!strcmp(t, "..") && abs)
			continue; /* "/.." is "/" */
		seg[n++] = t;
	}
	path[0] = 0;
	if (abs)
		at = (size_t)snprintf(path, size, "/");
	for (size_t i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(path + at, size - at, "%s%s",
				       i ? "/" : "", seg[i]);
}

/* A place libdwfl would look for a separate debug file: false when it
 * holds something that is no regular file; *any: it holds a file. */
static bool debug_place(const char *path, bool *any)
{
	struct stat st;

	if (stat(path, &st))
		return true;
	*any |= S_ISREG(st.st_mode);
	return S_ISREG(st.st_mode);
}

/*
 * The places libdwfl looks for a separate debug file: those of its
 * search path (":.debug:ROOT", ROOT /usr/lib/debug unless the Dwfl was
 * begun with another), of the build id under ROOT, and the link itself
 * where it is a whole path.
 * Returns false when one of them holds something that is no regular
 * file: libdwfl opens them with a plain open(), which a FIFO there blocks
 * for ever.  *any: one of them holds a file.
 */
static bool debug_places(Dwfl_Module *mod, const char *root,
			 const char *file_name, const char *debuglink_file,
			 bool *any)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char p[3 * PATH_MAX], dir[PATH_MAX], link[PATH_MAX];
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	const char *slash;
	size_t at;

	*any = false;
	if (n >= 2) {
		at = (size_t)snprintf(p, sizeof(p), "%s/.build-id/%02x/", root,
				      bits[0]);
		for (int i = 1; i < n && at + 3 < sizeof(p); i++)
			at += (size_t)snprintf(p + at, sizeof(p) - at, "%02x",
					       bits[i]);
		snprintf(p + at, sizeof(p) - at, ".debug");
		if (!debug_place(p, any))
			return false;
	}
	/* (a dwz file's link from the debug file is a path of its own) */
	if (debuglink_file && debuglink_file[0] == '/' &&
	    !debug_place(debuglink_file, any))
		return false;
	if (!file_name)
		return true;
	slash = strrchr(file_name, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - file_name) : 1,
		 slash ? file_name : ".");
	if (debuglink_file)
		snprintf(link, sizeof(link), "%s", debuglink_file);
	else
		snprintf(link, sizeof(link), "%s.debug",
			 slash ? slash + 1 : file_name);
	snprintf(p, sizeof(p), "%s/%s", dir, link);
	if (!debug_place(p, any))
		return false;
	snprintf(p, sizeof(p), "%s/.debug/%s", dir, link);
	if (!debug_place(p, any))
		return false;
	snprintf(p, sizeof(p), "%s%s/%s", root, dir, link);
	if (!debug_place(p, any))
		return false;
	snprintf(p, sizeof(p), "%s/%s", root, link);
	return debug_place(p, any);
}

/*
 * A binary's separate debug file, from this machine only.  Where none
 * of libdwfl's places holds one, its standard search would go on to
 * debuginfod when DEBUGINFOD_URLS is set (the default on several
 * distributions): a query over the network for each stripped library
 * in the trace, waiting up to DEBUGINFOD_TIMEOUT (90 s) each where the
 * server cannot be reached, and loading libcurl and its TLS stack into
 * the converter (6 MB) even where it is not set.  A conversion reads
 * what is on the machine; the binary's own DWARF is all there is then.
 * A module's user data, when set, is the debug root it was begun with.
 */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
		       uint64_t base, const char *file_name,
		       const char *debuglink_file, uint32_t debuglink_crc,
		       char **debuginfo_file_name)
{
	const char *root = *userdata ? *userdata : DEBUG_ROOT;
	bool any;

	if (!debug_places(mod, root, file_name, debuglink_file, &any) || !any)
		return -1;
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					    file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

int sym_dwarf_begin(const char *path, const char *debug_root,
		    struct sym_dwfl_cb *cb, Dwfl **dwflp, Dwarf **dwp,
		    char *err, size_t errlen)
{
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	void **user;
	int fd;

	/* libdwfl's search path names the root, as the symbols' lookup
	 * does (--debug-root). */
	memset(cb, 0, sizeof(*cb));
	snprintf(cb->path, sizeof(cb->path), "%s%s", SEARCH_HEAD,
		 debug_root ? debug_root : DEBUG_ROOT);
	cb->search = cb->path;
	cb->cb.find_elf = dwfl_build_id_find_elf;
	cb->cb.find_debuginfo = sym_find_debuginfo;
	cb->cb.section_address = dwfl_offline_section_address;
	cb->cb.debuginfo_path = &cb->search;
	dwfl = dwfl_begin(&cb->cb);
	*dwflp = dwfl;
	if (!dwfl) {
		snprintf(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		return -ENOMEM;
	}
	fd = mt_open_regular(path, NULL);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return fd;
	}
	/* Taken over by libdwfl when it succeeds. */
	mod = dwfl_report_offline(dwfl, path, path, fd);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		close(fd);
		snprintf(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		return -EINVAL;
	}
	/* (sym_find_debuginfo() reads the root there) */
	dwfl_module_info(mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
	*user = cb->path + strlen(SEARCH_HEAD);
	*dwp = dwfl_module_getdwarf(mod, &bias);
	if (!*dwp) {
		snprintf(err, errlen,
			 "%s: no DWARF line tables (built without -g?)", path);
		return -ENOENT;
	}
	return 0;
}

/* A unit, read or not yet. */
struct unit_slot {
	Dwarf_Off off; /* of its DIE */
	/* NULL: not read yet; &d->none: read, nothing there (or no memory
	 * to keep it) */
	_Atomic(struct sym_unit *) unit;
};

/* Code of a unit. */
struct unit_range {
	struct mt_range r;
	uint32_t slot;
};

struct sym_dwarf {
	struct sym_dwfl_cb cb; /* as long as dwfl */
	Dwfl *dwfl;
	Dwarf *dw;
	struct unit_slot *slots;
	size_t nr_slots, cap_slots;
	struct unit_range *ranges; /* sorted by lo */
	size_t nr_ranges, cap_ranges;
	pthread_mutex_t lock; /* reading a unit (libdw is not thread-safe) */
	struct sym_unit none;
	atomic_bool short_of_memory; /* a unit is none for want of it */
};

static void unit_free(struct sym_unit *u)
{
	for (size_t i = 0; i < u->nr_strs; i++)
		free(u->strs[i]);
	free(u->strs);
	free(u->rows);
	free(u->calls);
	free(u->ranges);
	mt_hmap_free(&u->str_index);
	free(u);
}

struct str_key {
	const struct sym_unit *u;
	const char *s;
};

static bool same_str(const void *ctx, uint64_t val)
{
	const struct str_key *k = ctx;

	return !strcmp(k->u->strs[val], k->s);
}

int64_t sym_unit_str(struct sym_unit *u, const char *s)
{
	struct str_key k = {u, s};
	uint64_t h = mt_hash_bytes(s, strlen(s)), v;

	if (mt_hmap_find_ext(&u->str_index, h, same_str, &k, &v))
		return (int64_t)v;
	if (mt_grow((void **)&u->strs, &u->cap_strs, u->nr_strs + 1,
		    sizeof(*u->strs)))
		return -1;
	u->strs[u->nr_strs] = strdup(s);
	if (!u->strs[u->nr_strs] ||
	    mt_hmap_add_ext(&u->str_index, h, u->nr_strs)) {
		free(u->strs[u->nr_strs]);
		return -1;
	}
	return (int64_t)u->nr_strs++;
}

static int cmp_range(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	return x->r.lo < y->r.lo ? -1 : x->r.lo > y->r.lo;
}

static int add_range(struct sym_dwarf *d, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (mt_grow((void **)&d->ranges, &d->cap_ranges, d->nr_ranges + 1,
		    sizeof(*d->ranges)))
		return -ENOMEM;
	d->ranges[d->nr_ranges++] =
		(struct unit_range){{lo, hi}, (uint32_t)(d->nr_slots - 1)};
	return 0;
}

/*
 * Where the code of the unit of die is: its ranges, or (a unit that does
 * not say, as old compilers' do not) the span of its line table.
 */
static int unit_code(struct sym_dwarf *d, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	Dwarf_Lines *lines;
	ptrdiff_t off = 0;
	size_t n, before = d->nr_ranges;
	int rc = 0;

	while (!rc && (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		rc = add_range(d, lo, hi);
	if (rc || d->nr_ranges > before || dwarf_getsrclines(die, &lines, &n))
		return rc;
	lo = UINT64_MAX;
	hi = 0;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Addr a;

		if (dwarf_lineaddr(dwarf_onesrcline(lines, i), &a))
			continue;
		lo = a < lo ? a : lo;
		hi = a + 1 > hi ? a + 1 : hi;
	}
	return add_range(d, lo, hi);
}

void sym_dwarf_free(struct sym_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_slots; i++) {
		struct sym_unit *u = atomic_load(&d->slots[i].unit);

		if (u && u != &d->none)
			unit_free(u);
	}
	free(d->slots);
	free(d->ranges);
	pthread_mutex_destroy(&d->lock);
	dwfl_end(d->dwfl);
	free(d);
}

int sym_dwarf_open(const char *path, const char *debug_root,
		   struct sym_dwarf **out, char *err, size_t errlen)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));
	Dwarf_CU *cu = NULL;
	Dwarf_Die die;
	uint8_t type;
	int rc;

	*out = NULL;
	if (!d)
		return mt_err(err, errlen, -ENOMEM, "out of memory");
	if (pthread_mutex_init(&d->lock, NULL)) {
		free(d);
		return mt_err(err, errlen, -ENOMEM, "out of memory");
	}
	rc = sym_dwarf_begin(path, debug_root, &d->cb, &d->dwfl, &d->dw, err,
			     errlen);
	while (!rc &&
	       dwarf_get_units(d->dw, cu, &cu, NULL, &type, &die, NULL) == 0) {
		if (type != DW_UT_compile && type != DW_UT_partial &&
		    type != DW_UT_skeleton)
			continue; /* type units have no code */
		if (mt_grow((void **)&d->slots, &d->cap_slots, d->nr_slots + 1,
			    sizeof(*d->slots))) {
			rc = mt_err(err, errlen, -ENOMEM,
				    "out of memory reading %s", path);
			break;
		}
		d->slots[d->nr_slots].off = dwarf_dieoffset(&die);
		atomic_init(&d->slots[d->nr_slots].unit, NULL);
		d->nr_slots++;
		if (unit_code(d, &die))
			rc = mt_err(err, errlen, -ENOMEM,
				    "out of memory reading %s", path);
	}
	if (!rc && !d->nr_ranges)
		rc = mt_err(err, errlen, -ENOENT, "%s: no DWARF for its code",
			    path);
	if (rc) {
		sym_dwarf_free(d);
		return rc;
	}
	qsort(d->ranges, d->nr_ranges, sizeof(*d->ranges), cmp_range);
	*out = d;
	return 0;
}

/* The unit of the code at vaddr, read now if it was not; NULL: none. */
static const struct sym_unit *unit_at(struct sym_dwarf *d, uint64_t vaddr)
{
	long i = d ? mt_range_at(d->ranges, d->nr_ranges, sizeof(*d->ranges),
				 vaddr)
		   : -1;
	struct unit_slot *slot;
	struct sym_unit *u;
	Dwarf_Die die;

	if (i < 0)
		return NULL;
	slot = &d->slots[d->ranges[i].slot];
	u = atomic_load_explicit(&slot->unit, memory_order_acquire);
	if (u)
		return u == &d->none ? NULL : u;
	pthread_mutex_lock(&d->lock);
	u = atomic_load_explicit(&slot->unit, memory_order_relaxed);
	if (!u) {
		u = calloc(1, sizeof(*u));
		/* A unit libdw cannot find has none; out of memory is said
		 * (sym_dwarf_short()): the caller decides what it costs. */
		if (u && !dwarf_offdie(d->dw, slot->off, &die)) {
			unit_free(u);
			u = &d->none;
		} else if (!u || sym_unit_rows(u, &die) ||
			   sym_unit_inlines(u, &die)) {
			if (u)
				unit_free(u);
			u = &d->none;
			atomic_store(&d->short_of_memory, true);
		} else {
			mt_hmap_free(&u->str_index);
		}
		atomic_store_explicit(&slot->unit, u, memory_order_release);
	}
	pthread_mutex_unlock(&d->lock);
	return u == &d->none ? NULL : u;
}

bool sym_dwarf_short(const struct sym_dwarf *d)
{
	return d && atomic_load(&d->short_of_memory);
}

bool sym_dwarf_line(struct sym_dwarf *d, uint64_t vaddr, const char **file,
		    unsigned *line)
{
	const struct sym_unit *u = unit_at(d, vaddr);
	size_t lo = 0, hi = u ? u->nr_rows : 0;

	/* The last row at or before vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->rows[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || u->rows[lo - 1].file == UINT32_MAX || !u->rows[lo - 1].line)
		return false;
	*file = u->strs[u->rows[lo - 1].file];
	*line = u->rows[lo - 1].line;
	return true;
}

const struct sym_inline_range *sym_dwarf_inlines(struct sym_dwarf *d,
						 uint64_t vaddr, size_t *nr)
{
	const struct sym_unit *u = unit_at(d, vaddr);

	*nr = u ? u->nr_ranges : 0;
	return u && u->nr_ranges ? u->ranges : NULL;
}
