/* SPDX-License-Identifier: MIT */
/*
 * /proc, read in one place.  PID/maps: the capture's MMAP2 records, the
 * trigger's and filters' addresses, the unwinder's modules and the vDSO
 * image all come from it; PID/stat and PID/status: whether a process is
 * there, its parent, a thread's ptrace state, a peak RSS.
 */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* A line holds a path of up to PATH_MAX bytes and the fields before. */
#define MAPS_LINE 4352
#define MAPS_PATH 4096

/* No vDSO is larger; a bigger [vdso] line is not believed. */
#define VDSO_MAX (64u << 20)

int mt_map_parse(const char *line, struct mt_map *m, char *path, size_t pathlen)
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
	*m = (struct mt_map){
		.lo = lo,
		.hi = hi,
		.pgoff = off,
		.ino = ino,
		.maj = maj,
		.min = min,
		.prot = (perm[0] == 'r' ? PROT_READ : 0) |
			(perm[1] == 'w' ? PROT_WRITE : 0) |
			(perm[2] == 'x' ? PROT_EXEC : 0),
		.shared = perm[3] == 's',
		.path = path,
	};
	return 0;
}

int mt_maps_each(pid_t pid,
		 int (*fn)(const struct mt_map *m, const char *line, void *arg),
		 void *arg, char *err, size_t errlen)
{
	char name[64], line[MAPS_LINE], path[MAPS_PATH];
	int rc = 0;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	f = fopen(name, "r");
	if (!f) {
		rc = -errno;
		if (err)
			snprintf(err, errlen, "%s: %s", name, strerror(-rc));
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		struct mt_map m;

		if (!mt_map_parse(line, &m, path, sizeof(path)))
			rc = fn(&m, line, arg);
	}
	fclose(f);
	return rc;
}

pid_t mt_proc_id(const char *name)
{
	uint64_t v;

	return mt_parse_u64(name, 10, INT32_MAX, &v) ? 0 : (pid_t)v;
}

int mt_proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], buf[1024];
	const char *p = NULL;
	int pp = 0, rc = 0;
	char st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	/* comm may hold spaces and parentheses: the last ')' ends it. */
	if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %c %d", &st, &pp) != 2)
		rc = -EIO;
	fclose(f);
	if (rc)
		return rc;
	if (state)
		*state = st;
	if (ppid)
		*ppid = (pid_t)pp;
	return 0;
}

int mt_proc_status(pid_t pid, pid_t tid,
		   int (*fn)(const char *key, const char *val, void *arg),
		   void *arg)
{
	char path[96], line[512];
	int rc = 0;
	FILE *f;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (!rc && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *val;

		if (!colon)
			continue;
		*colon = 0;
		val = colon + 1 + strspn(colon + 1, " \t");
		val[strcspn(val, "\n")] = 0;
		rc = fn(line, val, arg);
	}
	fclose(f);
	return rc;
}

int mt_file_text(const char *path, char **text, size_t *len)
{
	size_t cap = 0, got;
	char *t = NULL;
	FILE *f;
	int rc = 0;

	*text = NULL;
	*len = 0;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* Files of /proc say they are empty: read until the end. */
	do {
		if (mt_grow((void **)&t, &cap, *len + 65537, 1)) {
			rc = -ENOMEM;
			break;
		}
		got = fread(t + *len, 1, 65536, f);
		*len += got;
	} while (got);
	if (!rc && ferror(f))
		rc = errno ? -errno : -EIO;
	fclose(f);
	if (rc) {
		free(t);
		*len = 0;
		return rc;
	}
	t[*len] = 0;
	*text = t;
	return 0;
}

char *mt_maps_text(pid_t pid)
{
	char name[64], *text;
	size_t len;

	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	if (mt_file_text(name, &text, &len))
		return NULL;
	if (!len) {
		free(text);
		return NULL;
	}
	return text;
}

struct vdso_at {
	uint64_t lo, hi;
};

static int find_vdso(const struct mt_map *m, const char *line, void *arg)
{
	struct vdso_at *v = arg;

	(void)line;
	if (strcmp(m->path, "[vdso]"))
		return 0;
	v->lo = m->lo;
	v->hi = m->hi;
	return 1;
}

int mt_vdso_read(pid_t pid, uint8_t **bytes, uint64_t *start, uint64_t *len)
{
	struct vdso_at v = {0};
	struct iovec local, remote;
	uint8_t *b;

	if (mt_maps_each(pid, find_vdso, &v, NULL, 0) != 1 || v.hi <= v.lo ||
	    v.hi - v.lo > VDSO_MAX)
		return -1;
	b = malloc(v.hi - v.lo);
	if (!b)
		return -1;
	local.iov_base = b;
	remote.iov_base = (void *)(uintptr_t)v.lo;
	local.iov_len = remote.iov_len = v.hi - v.lo;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
	    (ssize_t)(v.hi - v.lo)) {
		free(b);
		return -1;
	}
	*bytes = b;
	*start = v.lo;
	*len = v.hi - v.lo;
	return 0;
}
