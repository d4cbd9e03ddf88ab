/* SPDX-License-Identifier: MIT */
/*
 * An image's life and the sideband's facts it is built from: processes
 * (their commands and parents), executable mappings and the binaries they
 * name, [vdso] images; and the getters.
 */
#include "image/img_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int img_new(struct img **out, const char *path, const struct img_opts *o)
{
	struct img *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c || !(c->path = strdup(path)))
		goto no_memory;
	if (pthread_mutex_init(&c->note_lock, NULL))
		goto no_memory;
	if (pthread_mutex_init(&c->dwarf_lock, NULL))
		goto no_dwarf_lock;
	if (pthread_mutex_init(&c->cs_lock, NULL))
		goto no_cs_lock;
	if (pthread_mutex_init(&c->jit_lock, NULL))
		goto no_jit_lock;
	if (pthread_mutex_init(&c->reach_lock, NULL))
		goto no_reach_lock;
	if (o)
		c->opts = *o;
	*out = c;
	return 0;
no_reach_lock:
	pthread_mutex_destroy(&c->jit_lock);
no_jit_lock:
	pthread_mutex_destroy(&c->cs_lock);
no_cs_lock:
	pthread_mutex_destroy(&c->dwarf_lock);
no_dwarf_lock:
	pthread_mutex_destroy(&c->note_lock);
no_memory:
	if (c)
		free(c->path);
	free(c);
	return -ENOMEM;
}

void img_free(struct img *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->note_lock);
	pthread_mutex_destroy(&c->dwarf_lock);
	pthread_mutex_destroy(&c->cs_lock);
	pthread_mutex_destroy(&c->jit_lock);
	pthread_mutex_destroy(&c->reach_lock);
	for (size_t i = 0; i < c->nr_procs; i++) {
		pt_image_free(c->procs[i].image);
		free(c->procs[i].isids);
		sym_map_free(c->procs[i].jit);
		free(c->procs[i].comm);
	}
	for (size_t i = 0; i < c->nr_dsos; i++) {
		free(c->dsos[i].path);
		if (c->dsos[i].tmp && c->dsos[i].found)
			unlink(c->dsos[i].found);
		free(c->dsos[i].found);
		free(c->dsos[i].missing);
		sym_file_free(c->dsos[i].sf);
		sym_dwarf_free(c->dsos[i].dwarf);
	}
	for (size_t i = 0; i < c->nr_missing; i++)
		free(c->missing[i]);
	img_kernel_free(c);
	free(c->reach);
	if (c->iscache)
		pt_iscache_free(c->iscache);
	for (size_t i = 0; i < c->nr_secs; i++)
		free(c->secs[i].path);
	free(c->secs);
	free(c->missing);
	free(c->vdsos);
	free(c->procs);
	free(c->dsos);
	free(c->maps);
	free(c->bounds);
	free(c->path);
	free(c);
}

static struct img_proc *proc_get(struct img *c, uint32_t pid)
{
	for (size_t i = 0; i < c->nr_procs; i++)
		if (c->procs[i].pid == pid)
			return &c->procs[i];
	if (mt_grow((void **)&c->procs, &c->cap_procs, c->nr_procs + 1,
		    sizeof(*c->procs)))
		return NULL;
	c->procs[c->nr_procs] = (struct img_proc){.pid = pid, .ppid = pid};
	return &c->procs[c->nr_procs++];
}

int img_add_map(struct img *c, uint32_t pid, uint64_t start, uint64_t len,
		uint64_t pgoff, const char *name, const uint8_t *build_id,
		size_t build_id_len)
{
	struct img_map *map;
	struct img_dso *d = NULL;
	size_t di;

	if (!len || start + len < start)
		return 0;
	for (di = 0; di < c->nr_dsos; di++) {
		d = &c->dsos[di];
		if (!strcmp(d->path, name) &&
		    (!build_id_len || !d->build_id_len ||
		     (d->build_id_len == build_id_len &&
		      !memcmp(d->build_id, build_id, d->build_id_len))))
			break;
	}
	if (di == c->nr_dsos) {
		if (mt_grow((void **)&c->dsos, &c->cap_dsos, c->nr_dsos + 1,
			    sizeof(*c->dsos)))
			return -ENOMEM;
		d = &c->dsos[c->nr_dsos];
		memset(d, 0, sizeof(*d));
		d->path = strdup(name);
		if (!d->path)
			return -ENOMEM;
		d->is_vdso = !strcmp(name, "[vdso]");
		c->nr_dsos++;
	}
	if (build_id_len && !d->build_id_len && build_id_len <= 20) {
		memcpy(d->build_id, build_id, build_id_len);
		d->build_id_len = (uint8_t)build_id_len;
	}
	if (mt_grow((void **)&c->maps, &c->cap_maps, c->nr_maps + 1,
		    sizeof(*c->maps)))
		return -ENOMEM;
	map = &c->maps[c->nr_maps++];
	*map = (struct img_map){.pid = pid,
				.start = start,
				.end = start + len,
				.pgoff = pgoff,
				.dso = (uint32_t)di};
	return proc_get(c, pid) ? 0 : -ENOMEM;
}

/*
 * A space's key: the pid, with how many spaces of it began before in the
 * bits above the largest pid Linux gives (PID_MAX_LIMIT, 2^22).  Never
 * (uint32_t)-1, which says "no pid"; the 1023rd space and later share
 * the 1022nd's key.
 */
#define SPACE_SHIFT 22
#define SPACE_MAX   1022u

/* The first bound after (pid, time) in c->bounds' order: where one at
 * that time goes, after those at the same time. */
static size_t bounds_past(const struct img *c, uint32_t pid, uint64_t time)
{
	size_t lo = 0, hi = c->nr_bounds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct img_bound *b = &c->bounds[mid];

		if (b->pid < pid || (b->pid == pid && b->time <= time))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int add_bound(struct img *c, uint32_t pid, uint64_t time, bool exec)
{
	size_t i;

	if (mt_grow((void **)&c->bounds, &c->cap_bounds, c->nr_bounds + 1,
		    sizeof(*c->bounds)))
		return -ENOMEM;
	i = bounds_past(c, pid, time);
	memmove(&c->bounds[i + 1], &c->bounds[i],
		(c->nr_bounds - i) * sizeof(*c->bounds));
	c->bounds[i] = (struct img_bound){pid, time, exec};
	c->nr_bounds++;
	return 0;
}

int img_add_exec(struct img *c, uint32_t pid, uint64_t time)
{
	return add_bound(c, pid, time, true);
}

/* pid's bounds up to time: c->bounds[*first, return). */
static size_t bounds_to(const struct img *c, uint32_t pid, uint64_t time,
			size_t *first)
{
	*first = pid ? bounds_past(c, pid - 1, UINT64_MAX) : 0;
	return bounds_past(c, pid, time);
}

uint32_t img_space_until(const struct img *c, uint32_t pid, uint64_t time,
			 uint64_t *until)
{
	size_t first, i;
	uint32_t n;

	*until = UINT64_MAX;
	if (pid >> SPACE_SHIFT)
		return pid;
	i = bounds_to(c, pid, time, &first);
	n = (uint32_t)(i - first);
	if (i < c->nr_bounds && c->bounds[i].pid == pid && n < SPACE_MAX)
		*until = c->bounds[i].time;
	return pid | (n < SPACE_MAX ? n : SPACE_MAX) << SPACE_SHIFT;
}

uint32_t img_space(const struct img *c, uint32_t pid, uint64_t time)
{
	uint64_t until;

	return img_space_until(c, pid, time, &until);
}

/* Is m the mapping at [start, start + len) of file name at pgoff, or
 * one that holds it (ld.so maps a library whole, then its parts over
 * it: the ptrace backend sees the whole one shrink)? */
static bool holds_map(const struct img *c, const struct img_map *m,
		      uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *name)
{
	return m->start <= start && start + len <= m->end &&
	       pgoff - m->pgoff == start - m->start &&
	       !strcmp(c->dsos[m->dso].path, name);
}

/* Does space key map anything in [lo, hi)? */
static bool space_maps(const struct img *c, uint32_t key, uint64_t lo,
		       uint64_t hi)
{
	for (size_t i = 0; i < c->nr_maps; i++)
		if (c->maps[i].pid == key && c->maps[i].start < hi &&
		    lo < c->maps[i].end)
			return true;
	return false;
}

/* Every mapping of space from, less what of it [lo, hi) covers, into
 * space to. */
static int copy_maps(struct img *c, uint32_t from, uint32_t to, uint64_t lo,
		     uint64_t hi)
{
	size_t n = c->nr_maps;

	for (size_t i = 0; i < n; i++) {
		struct img_map m = c->maps[i], piece[2];
		int k = 0;

		if (m.pid != from)
			continue;
		m.pid = to;
		if (m.end <= lo || hi <= m.start) {
			piece[k++] = m;
		} else {
			if (m.start < lo) {
				piece[k] = m;
				piece[k++].end = lo;
			}
			if (hi < m.end) {
				piece[k] = m;
				piece[k].start = hi;
				piece[k++].pgoff = m.pgoff + (hi - m.start);
			}
		}
		for (int j = 0; j < k; j++) {
			if (mt_grow((void **)&c->maps, &c->cap_maps,
				    c->nr_maps + 1, sizeof(*c->maps)))
				return -ENOMEM;
			c->maps[c->nr_maps++] = piece[j];
		}
	}
	return proc_get(c, to) ? 0 : -ENOMEM;
}

int img_map_at(struct img *c, uint32_t pid, bool timed, uint64_t time,
	       uint64_t start, uint64_t len, uint64_t pgoff, const char *name,
	       const uint8_t *build_id, size_t build_id_len)
{
	uint32_t key = timed ? img_space(c, pid, time) : pid, owner;
	size_t first = 0, last = 0, since = 0;
	bool other = false;
	int rc;

	if (!len || start + len < start)
		return 0;
	for (size_t i = c->nr_maps; i-- > 0;) {
		const struct img_map *m = &c->maps[i];

		if (m->pid != key || m->end <= start || start + len <= m->start)
			continue;
		if (holds_map(c, m, start, len, pgoff, name))
			return 0;
		other = true;
	}
	if (timed && !(pid >> SPACE_SHIFT)) {
		last = bounds_to(c, pid, time, &first);
		/* the first space of this program: after its exec */
		since = first;
		for (size_t i = first; i < last; i++)
			if (c->bounds[i].exec)
				since = i + 1;
	}
	if (other && timed && !(pid >> SPACE_SHIFT) && name[0] == '/' &&
	    name[1] != '/' && last - first < SPACE_MAX) {
		/* A file's code where other code was: another space from
		 * here on, with the rest of this one's.  (Code without a
		 * file, a JIT's "//anon", is in no image: no space for
		 * it.) */
		uint32_t next;

		rc = add_bound(c, pid, time, false);
		next = rc ? key : img_space(c, pid, time);
		if (!rc && next != key)
			rc = copy_maps(c, key, next, start, start + len);
		if (rc)
			return rc;
		key = next;
	} else if (!other && (owner = img_map_owner(c, key)) != key) {
		/* A child's first mapping of its own: those of the parent
		 * it runs stay its too. */
		rc = copy_maps(c, owner, key, start, start + len);
		if (rc)
			return rc;
	} else if (!other) {
		/* New code where there was none: the program's earlier
		 * spaces get it too, for its threads that have not come to
		 * a point where their decoder reads the newest. */
		for (size_t i = since; i < last && i - first < SPACE_MAX; i++) {
			uint32_t k = pid | (uint32_t)(i - first) << SPACE_SHIFT;

			if (!space_maps(c, k, start, start + len) &&
			    (rc = img_add_map(c, k, start, len, pgoff, name,
					      build_id, build_id_len)))
				return rc;
		}
	}
	return img_add_map(c, key, start, len, pgoff, name, build_id,
			   build_id_len);
}

uint32_t img_next_space(const struct img *c, uint32_t key)
{
	uint32_t pid = img_space_pid(key), n = key >> SPACE_SHIFT;
	size_t first, i;

	if (key == (uint32_t)-1)
		return key;
	i = bounds_to(c, pid, UINT64_MAX, &first);
	return n < i - first && n < SPACE_MAX ? pid | (n + 1) << SPACE_SHIFT
					      : key;
}

uint32_t img_space_pid(uint32_t key)
{
	return key == (uint32_t)-1 ? key : key & ((1u << SPACE_SHIFT) - 1);
}

int img_set_comm(struct img *c, uint32_t pid, const char *comm)
{
	struct img_proc *p = proc_get(c, pid);
	char *ps = strdup(comm);

	if (!p || !ps) {
		free(ps);
		return -ENOMEM;
	}
	free(p->comm);
	p->comm = ps;
	return 0;
}

int img_set_parent(struct img *c, uint32_t pid, uint32_t ppid)
{
	struct img_proc *p = proc_get(c, pid);

	if (!p)
		return -ENOMEM;
	/* The first parent seen is the one it forked from. */
	if (pid != ppid && p->ppid == p->pid)
		p->ppid = ppid;
	return 0;
}

int img_add_vdso(struct img *c, uint32_t pid, uint64_t start, uint64_t len,
		 const uint8_t *bytes)
{
	if (mt_grow((void **)&c->vdsos, &c->cap_vdsos, c->nr_vdsos + 1,
		    sizeof(*c->vdsos)))
		return -ENOMEM;
	c->vdsos[c->nr_vdsos++] = (struct img_vdso){pid, start, len, bytes};
	return 0;
}

const char *img_process_name(const struct img *c, uint32_t pid)
{
	for (size_t i = 0; i < c->nr_procs; i++)
		if (c->procs[i].pid == pid && c->procs[i].comm)
			return c->procs[i].comm;
	return NULL;
}

size_t img_nr_missing(const struct img *c)
{
	return c->nr_missing;
}

const char *img_missing_at(const struct img *c, size_t i)
{
	return i < c->nr_missing ? c->missing[i] : NULL;
}

struct pt_image_section_cache *img_iscache(const struct img *c)
{
	return c->iscache;
}

/*
 * Capstone (4.0) sorts a table of its own the first time it prints some
 * operands, with no lock: two threads decoding at once for the first
 * time race on it (a thread sanitizer sees it).  Each thread has its own
 * handle, but only one decodes at a time.
 */
void img_capstone_serialized(struct img *c, bool start)
{
	if (start)
		pthread_mutex_lock(&c->cs_lock);
	else
		pthread_mutex_unlock(&c->cs_lock);
}
