/* SPDX-License-Identifier: MIT */
/*
 * util: the few helpers every module needs.  Nothing here knows about
 * tracing.
 */
#ifndef MT_UTIL_H
#define MT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/*
 * Make *v (an array of *cap elements of size sz) hold at least need
 * elements, doubling so that n appends cost O(n).  Returns 0, or -ENOMEM
 * when out of memory or when the size would overflow; *v is untouched
 * then.
 */
int mt_grow_to(void **v, size_t *cap, size_t need, size_t sz);

/* Inline, since most calls (an append per slice) find room already. */
static inline int mt_grow(void **v, size_t *cap, size_t need, size_t sz)
{
	return need <= *cap ? 0 : mt_grow_to(v, cap, need, sz);
}

/*
 * Bytes that are never read again: the whole pages inside [p, p + len)
 * leave memory now (grow.c).  Pages of a file mapping come back from the
 * file if read, anonymous ones as zeros, so only for memory whose bytes
 * are done with; the partial pages at either end stay.  Advice only: a
 * failure leaves the pages where they are.  Returns the bytes given
 * back (0 after a failure).
 */
size_t mt_forget(const void *p, size_t len);
/* The system's page size (grow.c); 4096 where it does not say. */
size_t mt_page_size(void);

/*
 * Clock id's reading in ns (clock.c): CLOCK_MONOTONIC for time that
 * passed, the CPU clocks for work done.  0 where the clock cannot be
 * read.
 */
uint64_t mt_clock_ns(clockid_t id);
/* Seconds from start_ns, an mt_clock_ns(id) reading, to now (0 where
 * either reading failed). */
double mt_since_s(clockid_t id, uint64_t start_ns);

/*
 * A stable merge sort (qsort is not stable): returns 0, or -ENOMEM when
 * the scratch buffer cannot be allocated (base is untouched then).
 */
int mt_stable_sort(void *base, size_t n, size_t sz,
		   int (*cmp)(const void *, const void *));
/* qsort()/bsearch() order of uint32_t and of uint64_t values. */
int mt_cmp_u32(const void *a, const void *b);
int mt_cmp_u64(const void *a, const void *b);

/* Addresses [lo, hi): what the tables mt_range_at() searches begin their
 * elements with. */
struct mt_range {
	uint64_t lo, hi;
};

/*
 * The index of the element of v holding at, or -1: v has nr elements of
 * size bytes, each beginning with a struct mt_range, sorted by lo and
 * disjoint.
 */
long mt_range_at(const void *v, size_t nr, size_t size, uint64_t at);
/* The index of the first element of v (as above) that starts at or after
 * at (nr when none does). */
size_t mt_range_from(const void *v, size_t nr, size_t size, uint64_t at);

/*
 * The hash table (hmap.c): 64-bit keys (any but UINT64_MAX) to 64-bit
 * values, by open addressing, at most half full.  Zero-initialised it is
 * empty.  Nothing is allocated per key: the slots double when needed.
 */
struct mt_hmap_slot {
	uint64_t key; /* key + 1; 0 = empty */
	uint64_t val;
};

struct mt_hmap {
	struct mt_hmap_slot *slot;
	size_t cap;	/* a power of two, or 0 */
	size_t n;	/* keys held */
	unsigned shift; /* 64 - log2(cap) */
};

/* Whether key is there; its value in *val when it is. */
bool mt_hmap_find(const struct mt_hmap *m, uint64_t key, uint64_t *val);
/* key's value, 0 when it was never set. */
static inline uint64_t mt_hmap_get(const struct mt_hmap *m, uint64_t key)
{
	uint64_t v = 0;

	mt_hmap_find(m, key, &v);
	return v;
}
/* Adds key or replaces its value.  Returns 0, or -ENOMEM (m is untouched
 * then). */
int mt_hmap_set(struct mt_hmap *m, uint64_t key, uint64_t val);
void mt_hmap_free(struct mt_hmap *m);

/*
 * Keys that do not fit in 64 bits (strings, structures) stay in the
 * caller's array: the table holds a hash of each and its value (the
 * index of the key there, say), and same(ctx, val) says whether the key
 * of val is the one sought.  A table holds either kind, never both.
 */
bool mt_hmap_find_ext(const struct mt_hmap *m, uint64_t hash,
		      bool (*same)(const void *ctx, uint64_t val),
		      const void *ctx, uint64_t *val);
/* Adds a key that mt_hmap_find_ext did not find.  Returns 0, or -ENOMEM
 * (m is untouched then). */
int mt_hmap_add_ext(struct mt_hmap *m, uint64_t hash, uint64_t val);
/* A hash of n bytes for mt_hmap_find_ext (64-bit FNV-1a). */
uint64_t mt_hash_bytes(const void *p, size_t n);

/*
 * A whole number, checked (parse.c): digits of base only (10, 16, 8, or
 * 0 for strtoull's choice: 0x hex, a leading 0 octal, else decimal), at
 * least one, nothing before or after them (no sign, no spaces), at most
 * max.  Returns 0, -EINVAL when s is no such number, -ERANGE when it is
 * larger than max; *out is set only on success.
 */
int mt_parse_u64(const char *s, int base, uint64_t max, uint64_t *out);
/* The same with an optional '-', within [min, max]. */
int mt_parse_i64(const char *s, int base, int64_t min, int64_t max,
		 int64_t *out);
/*
 * The number at the start of *s, for text that goes on after it: as
 * mt_parse_u64 but for what follows the digits, and *s moves past them
 * (on -ERANGE too, so that the caller can still check what follows).
 */
int mt_scan_u64(const char **s, int base, uint64_t max, uint64_t *out);

/*
 * mt_parse_u64 for a program's option or a field of a file, with one
 * line for the user in err when it fails: "WHAT: 'S' is not a number",
 * or "WHAT: 'S' is more than MAX".
 */
int mt_parse_arg(const char *what, const char *s, int base, uint64_t max,
		 uint64_t *out, char *err, size_t errlen);
/* For an option that takes one of a few names: the index of s among the
 * n words, or -1 with one line in err: "WHAT is A, B or C, not 'S'". */
int mt_parse_word(const char *what, const char *s, const char *const *words,
		  size_t n, char *err, size_t errlen);

/*
 * A size typed by a person: decimal or 0x hex digits, then an optional
 * K, M, G or T (powers of 1024), nothing else (no sign, no spaces).
 * Returns 0, -EINVAL when it is no size, -ERANGE when it does not fit in
 * 64 bits (parse.c).
 */
int mt_parse_size(const char *s, uint64_t *out);

/*
 * An output file written under a temporary name beside its path and put
 * in place by a rename when complete (outfile.c).  A symbolic link is
 * followed (the file it names is replaced, not the link); a special file
 * (device, FIFO, socket, or a link to one) is never replaced.  Errors are
 * negative errno values, with one line naming the file in err.
 */
struct mt_outfile {
	char *path;  /* where it goes, as given */
	char *dest;  /* path with a link followed: what the rename replaces */
	char *tmp;   /* where it is written until then; NULL for a stream */
	FILE *fp;    /* mt_outfile_fopen's stream, or NULL */
	int fd;	     /* the temporary file (locked), or the stream */
	bool synced; /* on disk already (mt_outfile_sync) */
	bool stream; /* path is a special file, written into directly */
};

/*
 * Creates the (empty) temporary file, first removing those of this
 * output that runs killed outright left.  Refuses a directory at path
 * (-EISDIR) and a special file (-ESPIPE: the output is written with
 * seeks, or read back).
 */
int mt_outfile_begin(struct mt_outfile *f, const char *path, char *err,
		     size_t errlen);
/*
 * The same for an output written from its start to its end and never
 * read back, which a special file at path (standard output, a pipe, a
 * terminal, /dev/null) takes as a stream: opened now (a FIFO waits for
 * its reader), nothing to sync or rename at the commit, and nothing an
 * abort can take back.
 */
int mt_outfile_begin_stream(struct mt_outfile *f, const char *path, char *err,
			    size_t errlen);
/* A descriptor of the caller's own to write the output through from its
 * start (the temporary file, truncated, or the stream), or -errno. */
int mt_outfile_open(const struct mt_outfile *f);
/*
 * The same as mt_outfile_begin, and the temporary file opened as a
 * stream to write to (also in f->fp), which the commit or the abort
 * closes: a write error on it fails the commit.  NULL (with nothing left
 * behind) on failure.
 */
FILE *mt_outfile_fopen(struct mt_outfile *f, const char *path, char *err,
		       size_t errlen);
/*
 * Syncs the finished temporary file now, so that the commit only renames
 * it: a writer on a thread of its own syncs its output while the others
 * still write theirs.  The file stays until the commit or the abort.
 */
int mt_outfile_sync(struct mt_outfile *f, char *err, size_t errlen);
/* Syncs and renames it into place; on failure the temporary file goes. */
int mt_outfile_commit(struct mt_outfile *f, char *err, size_t errlen);
/* Several outputs that belong together: all are synced before the first
 * is renamed.  On failure every temporary file left goes. */
int mt_outfile_commit_all(struct mt_outfile *fs, size_t n, char *err,
			  size_t errlen);
/* Removes the temporary file; path keeps its old content.  Idempotent;
 * a zeroed mt_outfile may be aborted too. */
void mt_outfile_abort(struct mt_outfile *f);

/*
 * An output's writeback, started as the file grows (outfile.c): every
 * few MiB written up to end, the disk is asked to begin writing them
 * (sync_file_range, without waiting), so that the sync at commit finds
 * little left and the disk works while the conversion computes.
 * Zero-initialised it has started nothing.
 */
struct mt_writeback {
	uint64_t started; /* bytes asked for so far, from 0 */
};
void mt_writeback(struct mt_writeback *wb, int fd, uint64_t end);

/*
 * Jobs run in order on a thread of their own (jobs.c): run(ctx, job) for
 * each job put, so that a writer can fill its next buffer while the last
 * one goes out.  At most depth jobs (1 or more) are queued or running:
 * mt_jobs_put() waits for room.  So a caller that fills depth + 1
 * buffers in turn, job k in buffer k % (depth + 1), may fill the next as
 * soon as mt_jobs_put() returns: the job that had it has run.  The
 * caller owns every job and what it points to.  After a job fails the
 * later ones are skipped, and every call returns that first error.  When
 * no thread can be started, each job runs as it is put.  Errors are
 * negative errno values.
 */
struct mt_jobs;
int mt_jobs_start(struct mt_jobs **q, int (*run)(void *ctx, void *job),
		  void *ctx, unsigned depth);
int mt_jobs_put(struct mt_jobs *q, void *job);
/* Waits for every job, ends the thread and frees q (NULL: nothing). */
int mt_jobs_end(struct mt_jobs *q);

/*
 * Jobs worked on up to workers threads at once and finished in the order
 * they were put (pool.c): work(ctx, worker, job) on any of them, worker
 * being the thread's number (0 .. workers - 1, so that each can keep
 * state of its own), then finish(ctx, job) one job at a time, in order
 * (finish NULL: the jobs need none, only the bound on how many are out).
 * At most depth jobs are put and not finished: mt_pool_put() waits for
 * room, and a job's buffers may be filled again once depth more jobs
 * have been put after it, as with mt_jobs.  After a job fails the later
 * ones are skipped, and every call returns that first error.  When no
 * thread can be started, each job is worked and finished as it is put.
 * Errors are negative errno values.
 */
struct mt_pool;
int mt_pool_start(struct mt_pool **p, unsigned workers,
		  int (*work)(void *ctx, unsigned worker, void *job),
		  int (*finish)(void *ctx, void *job), void *ctx,
		  unsigned depth);
/* The threads it has (1 when it runs the jobs as they are put). */
unsigned mt_pool_workers(const struct mt_pool *p);
int mt_pool_put(struct mt_pool *p, void *job);
/* Waits for every job, ends the threads and frees p (NULL: nothing). */
int mt_pool_end(struct mt_pool *p);
/* mt_pool_end(), adding to *cpu_s (if not NULL) the CPU seconds its
 * threads spent: what the caller's own CPU clock does not see. */
int mt_pool_end_cpu(struct mt_pool *p, double *cpu_s);
/*
 * Each of the nr jobs of an array (size bytes apart) worked and finished
 * as a pool does, on up to workers threads (no more than there are
 * jobs), or one after the other on this thread when that is one: the
 * chunks of a pass over every slice.  Returns the first error.
 */
int mt_pool_each(unsigned workers,
		 int (*work)(void *ctx, unsigned worker, void *job),
		 int (*finish)(void *ctx, void *job), void *ctx, void *jobs,
		 size_t nr, size_t size);
/* A jobs option's threads: jobs, or one a core when it is 0. */
unsigned mt_nr_cores(unsigned jobs);

/*
 * Pages of growing arrays faulted in ahead of their writers, on a thread
 * of the pager's own (pager.c), so that the writer's thread does not
 * stop at each new page.  An array watched (mt_pager_watch(), NULL when
 * there is no pager or no memory: then nothing is done for it) moves
 * only between mt_ahead_lock() and mt_ahead_grown(), which give the
 * pager its place and size; mt_ahead_want() says up to where (bytes
 * from its start) the writer will write soon; mt_ahead_release() gives
 * back the pages past used that were populated and not written, and
 * stops.  The pager only asks the kernel to populate pages, which
 * changes nothing in them.  A pager whose thread did not start, or a
 * kernel without MADV_POPULATE_WRITE, does nothing.
 */
struct mt_pager;
struct mt_ahead;
int mt_pager_start(struct mt_pager **pg);
struct mt_ahead *mt_pager_watch(struct mt_pager *pg);
void mt_ahead_lock(struct mt_ahead *a);
void mt_ahead_grown(struct mt_ahead *a, void *base, size_t bytes);
void mt_ahead_want(struct mt_pager *pg, struct mt_ahead *a, size_t upto);
/* The bytes given back. */
size_t mt_ahead_release(struct mt_pager *pg, struct mt_ahead *a, size_t used);
/* Ends the thread and frees pg and every array's watch (NULL: nothing). */
void mt_pager_end(struct mt_pager *pg);

/*
 * Opens path to read when it is a regular file, and never blocks: a
 * FIFO, a device, a socket or a directory is not opened (or not kept
 * open, when the path changed under us), whatever it leads to.  Returns
 * the descriptor (O_CLOEXEC, O_NONBLOCK: the same as none for a file on
 * disk), with the file's stat in *st when st is not NULL; -EINVAL when path is
 * no regular file; else -errno of the stat or the open (infile.c).
 */
int mt_open_regular(const char *path, struct stat *st);

/*
 * a and b name the same file: the same inode when both exist (links
 * followed, hard links too), otherwise the same path once the
 * directories are resolved.
 */
bool mt_same_file(const char *a, const char *b);

/*
 * A process's mappings, from /proc/PID/maps (procmaps.c, where every
 * file of /proc is read).  One line of
 * it as fields; path is "" for an anonymous mapping, and "[vdso]",
 * "[stack]" and the like for the kernel's.
 */
struct mt_map {
	uint64_t lo, hi, pgoff, ino;
	unsigned maj, min;
	int prot;    /* PROT_READ | PROT_WRITE | PROT_EXEC */
	bool shared; /* 's' (else 'p', private) */
	const char *path;
};

/* line as a mapping, its file name copied into path (pathlen bytes, at
 * least 8).  Returns 0, or -1 when the line is no mapping. */
int mt_map_parse(const char *line, struct mt_map *m, char *path,
		 size_t pathlen);
/*
 * fn on every mapping of process pid in address order, with the line it
 * came from, until fn returns non-zero.  Returns what fn returned last,
 * or -errno when the file cannot be opened (the name of it and why in
 * err, which may be NULL).
 */
int mt_maps_each(pid_t pid,
		 int (*fn)(const struct mt_map *m, const char *line, void *arg),
		 void *arg, char *err, size_t errlen);
/* The id that a name in /proc (or in /proc/PID/task) stands for, or 0
 * when it is none ("self", "." and the like). */
pid_t mt_proc_id(const char *name);
/*
 * /proc/PID/stat's state letter (R, S, Z, X...) and parent, either may be
 * NULL.  Returns 0, or -errno (-ENOENT: the process is gone).
 */
int mt_proc_stat(pid_t pid, char *state, pid_t *ppid);
/*
 * fn on each line of /proc/PID/status (tid 0) or /proc/PID/task/TID/status
 * as its key ("VmHWM") and value (after the colon and blanks, without the
 * newline), until fn returns non-zero.  Returns what fn returned last, or
 * -errno when the file cannot be opened (-ENOENT: gone).
 */
int mt_proc_status(pid_t pid, pid_t tid,
		   int (*fn)(const char *key, const char *val, void *arg),
		   void *arg);
/*
 * The whole of file path (a file of /proc, whose size says 0) into *text
 * (malloc'd, NUL-ended, *len bytes before the NUL).  Returns 0 or -errno.
 */
int mt_file_text(const char *path, char **text, size_t *len);
/* The whole text of /proc/PID/maps (malloc'd), or NULL when it cannot
 * be read or is empty (a process that has exited). */
char *mt_maps_text(pid_t pid);
/*
 * The bytes of the [vdso] of process pid (which the caller may read:
 * its tracer, or the same user), which no file holds: *bytes
 * (malloc'd), at *start, *len of them.  Returns 0, or -1 when it has
 * none or it cannot be read.
 */
int mt_vdso_read(pid_t pid, uint8_t **bytes, uint64_t *start, uint64_t *len);

#endif
