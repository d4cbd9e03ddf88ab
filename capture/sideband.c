/*
 * Sideband from the kernel: a dummy software event on the target (one per
 * CPU: an inherited event can only be mapped per CPU) records
 * its mmaps, comm changes, forks, exits and context switches in a data
 * ring, timestamped on CLOCK_MONOTONIC (the emulator's clock), and the
 * records are copied into the capture exactly as the kernel wrote them.
 * The hardware backend's data rings carry the same records.
 */
#include "capture/cap_internal.h"
#include "symbols/symbols.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int sb_open_dummy(struct sb_ring *r, pid_t pid, int cpu, char *err,
		  size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr a;

	memset(r, 0, sizeof(*r));
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1;
	/* No context switches: under single-stepping every step is one. */
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	r->attr = a;
	r->fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, 0);
	if (r->fd < 0) {
		snprintf(err, errlen,
			 "perf_event_open(dummy) on %d: %s: mappings come from "
			 "/proc/%d/maps only",
			 pid, strerror(errno), pid);
		return -errno;
	}
	ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id);
	r->len = (size_t)page * (1 + SB_DATA_PAGES);
	r->page = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		       0);
	if (r->page == MAP_FAILED) {
		r->page = NULL;
		close(r->fd);
		r->fd = -1;
		snprintf(err, errlen, "mmap of the sideband ring: %s",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

void sb_close(struct sb_ring *r)
{
	if (r->page)
		munmap(r->page, r->len);
	if (r->fd > 0)
		close(r->fd);
	r->page = NULL;
	r->fd = -1;
}

int sb_copy(struct pd_writer *w, const struct perf_event_mmap_page *pg,
	    size_t data_pages)
{
	long page = sysconf(_SC_PAGESIZE);
	const uint8_t *data = (const uint8_t *)pg + page;
	uint64_t size = (uint64_t)page * data_pages;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	uint8_t rec[65536];

	if (head - tail > size)
		tail = head - size; /* overwritten: the newest part only */
	while (tail < head) {
		struct perf_event_header h;
		uint64_t at = tail % size;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) % size];
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		for (size_t i = 0; i < h.size; i++)
			rec[i] = data[(at + i) % size];
		tail += h.size;
		if (h.type == PERF_RECORD_AUX || h.type == PERF_RECORD_LOST ||
		    h.type == PERF_RECORD_SAMPLE)
			continue;
		if (pd_writer_raw(w, rec, h.size))
			return -1;
	}
	return 0;
}

int sb_maps_line(const char *line, uint32_t pid, struct pd_mmap *m, char *path,
		 size_t pathlen)
{
	unsigned long long lo, hi, off, ino;
	unsigned maj, min;
	char perm[8], fmt[64];

	if (pathlen < 8)
		return -1;
	path[0] = 0;
	snprintf(fmt, sizeof(fmt),
		 "%%llx-%%llx %%7s %%llx %%x:%%x %%llu %%%zus", pathlen - 1);
	if (sscanf(line, fmt, &lo, &hi, perm, &off, &maj, &min, &ino, path) <
		    7 ||
	    strlen(perm) < 4)
		return -1;
	*m = (struct pd_mmap){
		.pid = pid,
		.tid = pid,
		.start = lo,
		.len = hi - lo,
		.pgoff = off,
		.is_mmap2 = true,
		.maj = maj,
		.min = min,
		.ino = ino,
		.prot = (perm[0] == 'r' ? PROT_READ : 0) |
			(perm[1] == 'w' ? PROT_WRITE : 0) |
			(perm[2] == 'x' ? PROT_EXEC : 0),
		.flags = perm[3] == 's' ? MAP_SHARED : MAP_PRIVATE,
		.filename = path[0] ? path : "//anon",
	};
	return 0;
}

int sb_buildid_add(struct pd_writer *w, struct sb_buildids *seen, uint32_t pid,
		   const char *path)
{
	struct pd_buildid b = {.pid = pid, .misc = PERF_RECORD_MISC_USER};
	struct sym_file *sf;
	const uint8_t *id;
	char err[256];
	size_t n;
	int rc = 0;

	if (path[0] != '/')
		return 0;
	for (size_t i = 0; i < seen->n; i++)
		if (!strcmp(seen->paths[i], path))
			return 0;
	if (mt_grow((void **)&seen->paths, &seen->cap, seen->n + 1,
		    sizeof(*seen->paths)) ||
	    !(seen->paths[seen->n] = strdup(path)))
		return -1;
	seen->n++;
	/* A file that cannot be read now is simply not vouched for. */
	if (sym_file_open(path, NULL, &sf, err, sizeof(err)))
		return 0;
	id = sym_file_build_id(sf, &n);
	if (id && n && n <= sizeof(b.id)) {
		memcpy(b.id, id, n);
		b.size = (uint8_t)n;
		b.filename = path;
		rc = pd_writer_add_buildid(w, &b);
	}
	sym_file_free(sf);
	return rc ? -1 : 0;
}

/* PERF_RECORD_MMAP2: the header, pid, tid, addr, len, pgoff, 24 bytes of
 * device or build id, prot, flags, then the file name. */
#define MMAP2_PROT 64
#define MMAP2_NAME 72

int sb_buildids_of_records(struct pd_writer *w, struct sb_buildids *seen,
			   const uint8_t *rec, size_t len)
{
	for (size_t off = 0; off + sizeof(struct perf_event_header) <= len;) {
		struct perf_event_header eh;
		uint32_t pid, prot;
		char path[4096];
		size_t max;

		memcpy(&eh, rec + off, sizeof(eh));
		if (eh.size < sizeof(eh) || eh.size > len - off)
			break;
		if (eh.type == PERF_RECORD_MMAP2 && eh.size > MMAP2_NAME) {
			memcpy(&pid, rec + off + 8, 4);
			memcpy(&prot, rec + off + MMAP2_PROT, 4);
			max = eh.size - MMAP2_NAME;
			if (max >= sizeof(path))
				max = sizeof(path) - 1;
			memcpy(path, rec + off + MMAP2_NAME, max);
			path[max] = 0;
			if ((prot & PROT_EXEC) &&
			    sb_buildid_add(w, seen, pid, path))
				return -1;
		}
		off += eh.size;
	}
	return 0;
}

void sb_buildids_free(struct sb_buildids *seen)
{
	for (size_t i = 0; i < seen->n; i++)
		free(seen->paths[i]);
	free(seen->paths);
	*seen = (struct sb_buildids){0};
}
