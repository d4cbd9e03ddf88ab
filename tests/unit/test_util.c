/* SPDX-License-Identifier: MIT */
/*
 * util/: the checked number parsers (parse.c), the hash table (hmap.c),
 * output files that appear whole or not at all (outfile.c), the ids,
 * stat and status of /proc (procmaps.c), and jobs run in order on a thread of
 * their own (jobs.c), the clocks (clock.c).
 */
#include "tests/unit/check.h"
#include "tests/unit/testfs.h"
#include "util/err.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_parse_u64(struct check_state *cs)
{
	uint64_t v = 7;

	CHECK(cs, !mt_parse_u64("0", 10, UINT64_MAX, &v) && v == 0);
	CHECK(cs, !mt_parse_u64("42", 10, 42, &v) && v == 42);
	CHECK(cs, !mt_parse_u64("18446744073709551615", 10, UINT64_MAX, &v) &&
			  v == UINT64_MAX);
	CHECK(cs, !mt_parse_u64("ff", 16, UINT64_MAX, &v) && v == 255);
	CHECK(cs, !mt_parse_u64("0xff", 16, UINT64_MAX, &v) && v == 255);
	CHECK(cs, !mt_parse_u64("0x10", 0, UINT64_MAX, &v) && v == 16);
	CHECK(cs, !mt_parse_u64("010", 0, UINT64_MAX, &v) && v == 8);
	CHECK(cs, !mt_parse_u64("010", 10, UINT64_MAX, &v) && v == 10);

	/* Nothing but digits: no sign, no spaces, no junk, not empty. */
	v = 7;
	CHECK(cs, mt_parse_u64("", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("-1", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("+1", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64(" 1", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("1 ", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("12x", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("0x", 0, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("ff", 10, UINT64_MAX, &v) == -EINVAL);
	CHECK(cs, mt_parse_u64("1", 7, UINT64_MAX, &v) == -EINVAL);
	/* Out of range: over max, or over 64 bits; junk outranks size. */
	CHECK(cs, mt_parse_u64("43", 10, 42, &v) == -ERANGE);
	CHECK(cs, mt_parse_u64("18446744073709551616", 10, UINT64_MAX, &v) ==
			  -ERANGE);
	CHECK(cs, mt_parse_u64("99999999999999999999x", 10, UINT64_MAX, &v) ==
			  -EINVAL);
	CHECK(cs, v == 7);
}

static void test_parse_i64(struct check_state *cs)
{
	int64_t v = 7;

	CHECK(cs, !mt_parse_i64("-1", 10, INT64_MIN, INT64_MAX, &v) && v == -1);
	CHECK(cs, !mt_parse_i64("2", 10, -5, 5, &v) && v == 2);
	CHECK(cs, !mt_parse_i64("-9223372036854775808", 10, INT64_MIN,
				INT64_MAX, &v) &&
			  v == INT64_MIN);
	CHECK(cs, !mt_parse_i64("9223372036854775807", 10, INT64_MIN, INT64_MAX,
				&v) &&
			  v == INT64_MAX);
	CHECK(cs, !mt_parse_i64("-0", 10, 0, 0, &v) && v == 0);
	v = 7;
	CHECK(cs, mt_parse_i64("9223372036854775808", 10, INT64_MIN, INT64_MAX,
			       &v) == -ERANGE);
	CHECK(cs, mt_parse_i64("-9223372036854775809", 10, INT64_MIN, INT64_MAX,
			       &v) == -ERANGE);
	CHECK(cs, mt_parse_i64("-6", 10, -5, 5, &v) == -ERANGE);
	CHECK(cs, mt_parse_i64("6", 10, -5, 5, &v) == -ERANGE);
	CHECK(cs, mt_parse_i64("-1", 10, 0, 5, &v) == -ERANGE);
	CHECK(cs, mt_parse_i64("--1", 10, -5, 5, &v) == -EINVAL);
	CHECK(cs, mt_parse_i64("-", 10, -5, 5, &v) == -EINVAL);
	CHECK(cs, mt_parse_i64("+1", 10, -5, 5, &v) == -EINVAL);
	CHECK(cs, v == 7);
}

static void test_scan_u64(struct check_state *cs)
{
	const char *s = "123,0x1f/9", *p = s;
	uint64_t v = 0;

	CHECK(cs, !mt_scan_u64(&p, 10, UINT64_MAX, &v) && v == 123);
	CHECK(cs, p == s + 3 && *p == ',');
	p++;
	CHECK(cs, !mt_scan_u64(&p, 0, UINT64_MAX, &v) && v == 31);
	CHECK(cs, *p == '/');
	p = ",1";
	CHECK(cs, mt_scan_u64(&p, 10, UINT64_MAX, &v) == -EINVAL);
	/* Past the digits even when too large, for what follows. */
	p = s;
	CHECK(cs, mt_scan_u64(&p, 10, 100, &v) == -ERANGE && *p == ',');
}

static void test_parse_size(struct check_state *cs)
{
	uint64_t v = 0;

	CHECK(cs, !mt_parse_size("4K", &v) && v == 4096);
	CHECK(cs, !mt_parse_size("0x10M", &v) && v == 16ull << 20);
	CHECK(cs, !mt_parse_size("010", &v) && v == 10);
	CHECK(cs, !mt_parse_size("16777215T", &v) && v == 16777215ull << 40);
	CHECK(cs, mt_parse_size("16777216T", &v) == -ERANGE);
	CHECK(cs, mt_parse_size("99999999999999999999", &v) == -ERANGE);
	CHECK(cs, mt_parse_size("99999999999999999999X", &v) == -EINVAL);
	CHECK(cs, mt_parse_size("-1", &v) == -EINVAL);
	CHECK(cs, mt_parse_size("4KB", &v) == -EINVAL);
	CHECK(cs, mt_parse_size("0x", &v) == -EINVAL);
	CHECK(cs, mt_parse_size("K", &v) == -EINVAL);
}

static void test_parse_arg_word(struct check_state *cs)
{
	static const char *const words[] = {"low", "normal", "high"};
	char err[128] = "";
	uint64_t v = 0;

	CHECK(cs, !mt_parse_arg("--n", "12", 10, 100, &v, err, sizeof(err)));
	CHECK(cs, v == 12 && !err[0]);
	CHECK(cs, mt_parse_arg("--n", "1x", 10, 100, &v, err, sizeof(err)) ==
			  -EINVAL);
	CHECKF(cs, !strcmp(err, "--n: '1x' is not a number"), "%s", err);
	CHECK(cs, mt_parse_arg("--n", "101", 10, 100, &v, err, sizeof(err)) ==
			  -ERANGE);
	CHECKF(cs, !strcmp(err, "--n: '101' is more than 100"), "%s", err);

	CHECK(cs, mt_parse_word("-t", "low", words, 3, err, sizeof(err)) == 0);
	CHECK(cs, mt_parse_word("-t", "high", words, 3, err, sizeof(err)) == 2);
	CHECK(cs, mt_parse_word("-t", "hi", words, 3, err, sizeof(err)) == -1);
	CHECKF(cs, !strcmp(err, "-t is low, normal or high, not 'hi'"), "%s",
	       err);
	CHECK(cs, mt_parse_word("-t", "", words, 2, err, sizeof(err)) == -1);
	CHECKF(cs, !strcmp(err, "-t is low or normal, not ''"), "%s", err);
	CHECK(cs, mt_parse_word("-t", "x", words, 1, err, sizeof(err)) == -1);
	CHECKF(cs, !strcmp(err, "-t is low, not 'x'"), "%s", err);
	/* A message cut short by a small buffer is still one string. */
	CHECK(cs, mt_parse_word("-t", "x", words, 3, err, 8) == -1);
	CHECKF(cs, !strcmp(err, "-t is l"), "%s", err);
}

/* The names of /proc that are processes and threads. */
static void test_proc_id(struct check_state *cs)
{
	CHECK(cs, mt_proc_id("1") == 1);
	CHECK(cs, mt_proc_id("2147483647") == 2147483647);
	CHECK(cs, mt_proc_id("2147483648") == 0);
	CHECK(cs, mt_proc_id("0") == 0);
	CHECK(cs, mt_proc_id(".") == 0);
	CHECK(cs, mt_proc_id("..") == 0);
	CHECK(cs, mt_proc_id("self") == 0);
	CHECK(cs, mt_proc_id("-1") == 0);
	CHECK(cs, mt_proc_id("12a") == 0);
	CHECK(cs, mt_proc_id(" 12") == 0);
}

static int name_field(const char *key, const char *val, void *arg)
{
	if (strcmp(key, "Name"))
		return 0;
	snprintf(arg, 64, "%s", val);
	return 7;
}

/*
 * A process's state and parent, and its status lines: a zombie is seen as
 * one, a process reaped is gone, and a name with a ')' in it does not
 * throw off the fields after it.
 */
static void test_proc_stat_status(struct check_state *cs)
{
	char state = 0, name[64] = "";
	pid_t ppid = 0, child;
	int status;

	CHECK(cs, mt_proc_stat(getpid(), &state, &ppid) == 0);
	CHECK(cs, state == 'R' && ppid == getppid());
	CHECK(cs, mt_proc_status(getpid(), 0, name_field, name) == 7);
	CHECK(cs, name[0] != 0);
	name[0] = 0;
	CHECK(cs, mt_proc_status(getpid(), getpid(), name_field, name) == 7);
	CHECK(cs, name[0] != 0);
	child = fork();
	if (child == 0) {
		/* comm "a) Z 1" would read as state Z, parent 1 if the
		 * first ')' ended it. */
		prctl(PR_SET_NAME, "a) Z 1");
		_exit(0);
	}
	CHECK(cs, child > 0);
	if (child <= 0)
		return;
	/* Until it is reaped, the child is a zombie whose parent is us. */
	for (int i = 0; i < 10000 && state != 'Z'; i++) {
		if (mt_proc_stat(child, &state, &ppid))
			break;
		if (state != 'Z')
			usleep(1000);
	}
	CHECK(cs, state == 'Z' && ppid == getpid());
	CHECK(cs, waitpid(child, &status, 0) == child);
	CHECK(cs, mt_proc_stat(child, &state, &ppid) == -ENOENT);
	CHECK(cs, mt_proc_status(child, 0, name_field, name) == -ENOENT);
}

static void test_hmap_basics(struct check_state *cs)
{
	struct mt_hmap m = {0};
	uint64_t v = 7;

	CHECK(cs, !mt_hmap_find(&m, 0, &v) && v == 7);
	CHECK(cs, mt_hmap_get(&m, 12) == 0);
	CHECK(cs, !mt_hmap_set(&m, 0, 100));
	CHECK(cs, !mt_hmap_set(&m, UINT64_MAX - 1, 200));
	CHECK(cs, !mt_hmap_set(&m, 5, 0));
	CHECK(cs, m.n == 3);
	CHECK(cs, mt_hmap_find(&m, 0, &v) && v == 100);
	CHECK(cs, mt_hmap_get(&m, UINT64_MAX - 1) == 200);
	/* A value of 0 is there all the same. */
	CHECK(cs, mt_hmap_find(&m, 5, &v) && v == 0);
	CHECK(cs, !mt_hmap_find(&m, 6, &v));
	CHECK(cs, !mt_hmap_set(&m, 0, 101));
	CHECK(cs, m.n == 3 && mt_hmap_get(&m, 0) == 101);
	mt_hmap_free(&m);
	CHECK(cs, !m.slot && !m.n && !m.cap);
	CHECK(cs, !mt_hmap_find(&m, 0, &v));
	CHECK(cs, !mt_hmap_set(&m, 1, 1) && mt_hmap_get(&m, 1) == 1);
	mt_hmap_free(&m);
}

/* Keys in runs and strides, as thread ids and indexes come; every one
 * stays found through the doublings. */
static void test_hmap_many(struct check_state *cs)
{
	enum { N = 200000 };
	struct mt_hmap m = {0};
	int bad = 0;

	for (uint64_t i = 0; i < N; i++)
		if (mt_hmap_set(&m, i * 4096, i) ||
		    mt_hmap_set(&m, (i << 40) + 3, ~i))
			bad++;
	CHECK(cs, bad == 0);
	CHECK(cs, m.n == 2 * N);
	CHECK(cs, m.cap >= 2 * m.n && (m.cap & (m.cap - 1)) == 0);
	for (uint64_t i = 0; i < N && bad < 10; i++) {
		uint64_t v;

		if (!mt_hmap_find(&m, i * 4096, &v) || v != i)
			bad++;
		if (!mt_hmap_find(&m, (i << 40) + 3, &v) || v != ~i)
			bad++;
		if (mt_hmap_find(&m, i * 4096 + 1, &v))
			bad++;
	}
	CHECKF(cs, bad == 0, "%d keys lost", bad);
	mt_hmap_free(&m);
}

struct words {
	const char *const *w;
};

static bool same_word(const void *ctx, uint64_t i)
{
	const struct words *k = ctx;

	return !strcmp(k->w[0], k->w[1 + i]);
}

/* Keys kept outside: equal hashes must not make equal keys. */
static void test_hmap_ext(struct check_state *cs)
{
	static const char *const dict[] = {"alpha", "beta", "gamma", "delta"};
	const char *w[5] = {NULL, "alpha", "beta", "gamma", "delta"};
	struct words k = {w};
	struct mt_hmap m = {0}, c = {0};
	uint64_t v;

	for (uint64_t i = 0; i < 4; i++) {
		uint64_t h = mt_hash_bytes(dict[i], strlen(dict[i]));

		w[0] = dict[i];
		CHECK(cs, !mt_hmap_find_ext(&m, h, same_word, &k, &v));
		CHECK(cs, !mt_hmap_add_ext(&m, h, i));
		/* All on one hash (and its top bit, which is dropped). */
		CHECK(cs, !mt_hmap_find_ext(&c, i << 63, same_word, &k, &v));
		CHECK(cs, !mt_hmap_add_ext(&c, i << 63, i));
	}
	for (uint64_t i = 0; i < 4; i++) {
		w[0] = dict[i];
		CHECK(cs,
		      mt_hmap_find_ext(&m, mt_hash_bytes(w[0], strlen(w[0])),
				       same_word, &k, &v) &&
			      v == i);
		CHECK(cs, mt_hmap_find_ext(&c, 0, same_word, &k, &v) && v == i);
	}
	w[0] = "epsilon";
	CHECK(cs, !mt_hmap_find_ext(&c, 0, same_word, &k, &v));
	CHECK(cs, m.n == 4 && c.n == 4);
	mt_hmap_free(&m);
	mt_hmap_free(&c);
}

static void test_hash_bytes(struct check_state *cs)
{
	/* FNV-1a's published values: the hash must not drift. */
	CHECK(cs, mt_hash_bytes("", 0) == 0xcbf29ce484222325ull);
	CHECK(cs, mt_hash_bytes("a", 1) == 0xaf63dc4c8601ec8cull);
	CHECK(cs, mt_hash_bytes("foobar", 6) == 0x85944171f73967e8ull);
	CHECK(cs, mt_hash_bytes("ab", 1) == mt_hash_bytes("a", 1));
}

/* Files in dir: what an output leaves behind, temporary ones included. */
static int nr_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static bool has(const char *path, const char *text)
{
	size_t n;
	uint8_t *d = slurp(path, &n);
	bool same = d && n == strlen(text) && !memcmp(d, text, n);

	free(d);
	return same;
}

/* A stream's output: nothing at the path until the commit, then all of
 * it and no temporary file; an abort keeps the old content. */
static void test_outfile_stream(struct check_state *cs)
{
	char dir[64], path[128], err[256];
	struct mt_outfile f;
	FILE *o;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.tsv", dir);
	o = mt_outfile_fopen(&f, path, err, sizeof(err));
	CHECKF(cs, o && o == f.fp, "%s", err);
	if (!o) {
		tmpdir_remove(dir);
		return;
	}
	fputs("new\n", o);
	CHECK(cs, access(path, F_OK) != 0 && nr_files(dir) == 1);
	CHECKF(cs, !mt_outfile_commit(&f, err, sizeof(err)), "%s", err);
	CHECK(cs, has(path, "new\n") && nr_files(dir) == 1);
	CHECK(cs, !f.fp && !f.tmp && !f.path);

	o = mt_outfile_fopen(&f, path, err, sizeof(err));
	CHECK(cs, o != NULL);
	if (o) {
		fputs("half", o);
		mt_outfile_abort(&f);
		mt_outfile_abort(&f);
	}
	CHECK(cs, has(path, "new\n") && nr_files(dir) == 1);

	/* Outputs that belong together, streams among them. */
	{
		struct mt_outfile fs[2];
		char p2[160];

		snprintf(p2, sizeof(p2), "%s/two.tsv", dir);
		CHECK(cs, mt_outfile_fopen(&fs[0], path, err, sizeof(err)));
		CHECK(cs, !mt_outfile_begin(&fs[1], p2, err, sizeof(err)));
		if (fs[0].fp && fs[1].tmp) {
			fputs("one\n", fs[0].fp);
			CHECK(cs, spit(fs[1].tmp, "two\n", 4) == 0);
			CHECKF(cs,
			       !mt_outfile_commit_all(fs, 2, err, sizeof(err)),
			       "%s", err);
		}
		CHECK(cs, has(path, "one\n") && has(p2, "two\n"));
		CHECK(cs, nr_files(dir) == 2);
	}
	tmpdir_remove(dir);
}

/* A write that fails fails the commit, or the sync before it (an output
 * synced by its writer's thread), and leaves nothing behind. */
static void test_outfile_write_error(struct check_state *cs)
{
	char dir[64], path[128], err[256];
	struct mt_outfile f;
	FILE *o;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.tsv", dir);
	CHECK(cs, spit(path, "old\n", 4) == 0);
	for (int by_sync = 0; by_sync < 2; by_sync++) {
		o = mt_outfile_fopen(&f, path, err, sizeof(err));
		CHECK(cs, o != NULL);
		if (!o)
			continue;
		/* The stream as a full disk would leave it. */
		fputs("new\n", o);
		fflush(o);
		fgetc(o); /* reading a write-only stream sets its error */
		CHECK(cs, ferror(o));
		if (by_sync) {
			CHECK(cs, mt_outfile_sync(&f, err, sizeof(err)) < 0);
			CHECK(cs, !f.synced);
			mt_outfile_abort(&f);
		} else {
			CHECK(cs, mt_outfile_commit(&f, err, sizeof(err)) < 0);
		}
		CHECKF(cs, strstr(err, path) && strstr(err, "cannot write"),
		       "%s", err);
		CHECK(cs, has(path, "old\n") && nr_files(dir) == 1);
	}

	/* A directory at the path, or no directory for it: refused at
	 * once, nothing made. */
	CHECK(cs, !mt_outfile_fopen(&f, dir, err, sizeof(err)));
	CHECK(cs, strstr(err, "is a directory") != NULL);
	snprintf(path, sizeof(path), "%s/no/out.tsv", dir);
	CHECK(cs, !mt_outfile_fopen(&f, path, err, sizeof(err)));
	CHECK(cs, strstr(err, path) != NULL);
	CHECK(cs, nr_files(dir) == 1);
	tmpdir_remove(dir);
}

/* An output synced as soon as it is written (by its writer's thread)
 * stays under its temporary name until the commit, which renames it. */
static void test_outfile_sync_early(struct check_state *cs)
{
	char dir[64], path[128], err[256];
	struct mt_outfile f;
	FILE *o;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/out.tsv", dir);
	CHECK(cs, spit(path, "old\n", 4) == 0);
	o = mt_outfile_fopen(&f, path, err, sizeof(err));
	CHECK(cs, o != NULL);
	if (o) {
		fputs("new\n", o);
		CHECKF(cs, !mt_outfile_sync(&f, err, sizeof(err)), "%s", err);
		CHECK(cs, f.synced && !f.fp && f.tmp && has(f.tmp, "new\n"));
		CHECK(cs, has(path, "old\n") && nr_files(dir) == 2);
		CHECKF(cs, !mt_outfile_commit_all(&f, 1, err, sizeof(err)),
		       "%s", err);
	}
	CHECK(cs, has(path, "new\n") && nr_files(dir) == 1);
	CHECK(cs, !f.synced && !f.tmp && !f.path);
	tmpdir_remove(dir);
}

/*
 * Outputs that belong together appear together or not at all: when the
 * second cannot be flushed (a file size limit its buffered bytes pass),
 * the first, written and syncable, keeps its old content too.
 */
static void test_outfile_all_or_none(struct check_state *cs)
{
	char dir[64], p0[128], p1[128], err[256], big[16384], vbuf[32768];
	struct mt_outfile fs[2];
	struct rlimit old, lim;
	void (*old_xfsz)(int);
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(p0, sizeof(p0), "%s/a.tsv", dir);
	snprintf(p1, sizeof(p1), "%s/b.tsv", dir);
	CHECK(cs, spit(p0, "old0\n", 5) == 0 && spit(p1, "old1\n", 5) == 0);
	CHECK(cs, mt_outfile_fopen(&fs[0], p0, err, sizeof(err)) != NULL);
	CHECK(cs, mt_outfile_fopen(&fs[1], p1, err, sizeof(err)) != NULL);
	if (!fs[0].fp || !fs[1].fp || getrlimit(RLIMIT_FSIZE, &old)) {
		mt_outfile_abort(&fs[0]);
		mt_outfile_abort(&fs[1]);
		tmpdir_remove(dir);
		return;
	}
	fputs("new0\n", fs[0].fp);
	/* All of it in the stream's buffer until the commit flushes it. */
	setvbuf(fs[1].fp, vbuf, _IOFBF, sizeof(vbuf));
	memset(big, 'x', sizeof(big));
	fwrite(big, 1, sizeof(big), fs[1].fp);
	lim = old;
	lim.rlim_cur = 4096;
	old_xfsz = signal(SIGXFSZ, SIG_IGN);
	CHECK(cs, !setrlimit(RLIMIT_FSIZE, &lim));
	rc = mt_outfile_commit_all(fs, 2, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, old_xfsz);
	CHECK(cs, rc < 0);
	CHECKF(cs, strstr(err, p1) != NULL, "%s", err);
	CHECK(cs, has(p0, "old0\n") && has(p1, "old1\n"));
	CHECK(cs, nr_files(dir) == 2);
	tmpdir_remove(dir);
}

/* A name as long as a name may be (255 bytes) is written, through a
 * temporary name cut to fit beside it. */
static void test_outfile_long_name(struct check_state *cs)
{
	char dir[64], path[512], err[512];
	struct mt_outfile f;
	size_t dlen;
	FILE *o;

	tmpdir_make(dir, sizeof(dir));
	dlen = (size_t)snprintf(path, sizeof(path), "%s/", dir);
	memset(path + dlen, 'n', NAME_MAX);
	path[dlen + NAME_MAX] = 0;
	o = mt_outfile_fopen(&f, path, err, sizeof(err));
	CHECKF(cs, o != NULL, "%s", err);
	if (o) {
		const char *base = strrchr(f.tmp, '/') + 1;

		CHECK(cs, strlen(base) <= NAME_MAX && strstr(base, ".tmp."));
		fputs("long\n", o);
		CHECKF(cs, !mt_outfile_commit(&f, err, sizeof(err)), "%s", err);
	}
	CHECK(cs, has(path, "long\n") && nr_files(dir) == 1);
	tmpdir_remove(dir);
}

/*
 * The temporary files a run killed outright left (its PID gone, no lock
 * held on them) go when the next run begins the same output; those of a
 * live run (its PID, or its lock) and other files stay.
 */
static void test_outfile_stale(struct check_state *cs)
{
	char dir[64], path[128], dead[160], live[160], locked[160], other[160],
		err[256];
	struct mt_outfile f;
	pid_t child = fork();
	int lfd;

	if (child == 0)
		_exit(0);
	CHECK(cs, child > 0 && waitpid(child, NULL, 0) == child);
	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/t.pftrace", dir);
	snprintf(dead, sizeof(dead), "%s.tmp.%ld.0", path, (long)child);
	snprintf(live, sizeof(live), "%s.tmp.%ld.7", path, (long)getppid());
	snprintf(locked, sizeof(locked), "%s.tmp.%ld.1", path, (long)child);
	snprintf(other, sizeof(other), "%s.tmp.%ldx", path, (long)child);
	CHECK(cs, spit(dead, "x", 1) == 0 && spit(live, "x", 1) == 0);
	CHECK(cs, spit(locked, "x", 1) == 0 && spit(other, "x", 1) == 0);
	/* A run of another PID namespace, whose PID means nothing here:
	 * its lock shows it lives. */
	lfd = open(locked, O_RDONLY | O_CLOEXEC);
	CHECK(cs, lfd >= 0 && !flock(lfd, LOCK_EX));
	CHECKF(cs, !mt_outfile_begin(&f, path, err, sizeof(err)), "%s", err);
	CHECK(cs, access(dead, F_OK) != 0);
	CHECK(cs, !access(live, F_OK) && !access(locked, F_OK) &&
			  !access(other, F_OK));
	mt_outfile_abort(&f);
	if (lfd >= 0)
		close(lfd);
	CHECK(cs, nr_files(dir) == 3);
	tmpdir_remove(dir);
}

/*
 * A special file is never replaced: an output written in order goes
 * into it as a stream (a link to /dev/null, a FIFO); any other is
 * refused before anything is made.
 */
static void test_outfile_special(struct check_state *cs)
{
	char dir[64], null[128], fifo[128], err[256];
	struct mt_outfile f;
	struct stat sb;
	int fd;

	tmpdir_make(dir, sizeof(dir));
	snprintf(null, sizeof(null), "%s/null.tsv", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo.tsv", dir);
	CHECK(cs, !symlink("/dev/null", null) && !mkfifo(fifo, 0600));
	CHECK(cs, mt_outfile_begin(&f, null, err, sizeof(err)) == -ESPIPE);
	CHECKF(cs, strstr(err, null) && strstr(err, "character device"), "%s",
	       err);
	CHECK(cs, !mt_outfile_fopen(&f, fifo, err, sizeof(err)));
	CHECKF(cs, strstr(err, "a FIFO") != NULL, "%s", err);
	CHECK(cs, nr_files(dir) == 2);

	CHECKF(cs, !mt_outfile_begin_stream(&f, null, err, sizeof(err)), "%s",
	       err);
	fd = mt_outfile_open(&f);
	CHECK(cs, f.stream && !f.tmp && fd >= 0);
	if (fd >= 0) {
		CHECK(cs, write(fd, "x\n", 2) == 2);
		close(fd);
	}
	CHECKF(cs, !mt_outfile_commit_all(&f, 1, err, sizeof(err)), "%s", err);
	CHECK(cs, !f.path && !f.stream);

	/* The FIFO's reader: open before the writer, which waits for one. */
	fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(cs, fd >= 0);
	if (fd >= 0) {
		char buf[8] = {0};
		int wfd;

		CHECKF(cs, !mt_outfile_begin_stream(&f, fifo, err, sizeof(err)),
		       "%s", err);
		wfd = mt_outfile_open(&f);
		CHECK(cs, wfd >= 0 && write(wfd, "fifo\n", 5) == 5);
		if (wfd >= 0)
			close(wfd);
		CHECKF(cs, !mt_outfile_commit(&f, err, sizeof(err)), "%s", err);
		CHECK(cs, read(fd, buf, sizeof(buf)) == 5 &&
				  !strcmp(buf, "fifo\n"));
		close(fd);
	}
	CHECK(cs, !lstat(null, &sb) && S_ISLNK(sb.st_mode));
	CHECK(cs, !stat("/dev/null", &sb) && S_ISCHR(sb.st_mode));
	CHECK(cs, !lstat(fifo, &sb) && S_ISFIFO(sb.st_mode));
	CHECK(cs, nr_files(dir) == 2);
	tmpdir_remove(dir);
}

/* A link to a regular file is followed: the file is replaced, the link
 * stays. */
static void test_outfile_link(struct check_state *cs)
{
	char dir[64], real[128], link[128], err[256];
	struct mt_outfile f;
	struct stat sb;
	FILE *o;

	tmpdir_make(dir, sizeof(dir));
	snprintf(real, sizeof(real), "%s/real.tsv", dir);
	snprintf(link, sizeof(link), "%s/link.tsv", dir);
	CHECK(cs, spit(real, "old\n", 4) == 0 && !symlink("real.tsv", link));
	o = mt_outfile_fopen(&f, link, err, sizeof(err));
	CHECKF(cs, o != NULL, "%s", err);
	if (o) {
		fputs("new\n", o);
		CHECKF(cs, !mt_outfile_commit(&f, err, sizeof(err)), "%s", err);
	}
	CHECK(cs,
	      has(real, "new\n") && !lstat(link, &sb) && S_ISLNK(sb.st_mode));
	CHECK(cs, nr_files(dir) == 2);
	tmpdir_remove(dir);
}

static void test_err(struct check_state *cs)
{
	char buf[32], tiny[6];

	CHECK(cs, mt_err(buf, sizeof(buf), -EINVAL, "bad %d", 7) == -EINVAL &&
			  !strcmp(buf, "bad 7"));
	CHECK(cs, mt_err_prefixed(buf, sizeof(buf), -EIO, "a.data",
				  "short read") == -EIO &&
			  !strcmp(buf, "a.data: short read"));
	CHECK(cs,
	      mt_err_prefixed(buf, sizeof(buf), -EIO, NULL, "plain") == -EIO &&
		      !strcmp(buf, "plain"));
	/* Cut short, never overrun; no buffer at all is allowed. */
	CHECK(cs, mt_err_prefixed(tiny, sizeof(tiny), -ENOMEM, "long/path",
				  "x") == -ENOMEM &&
			  !strcmp(tiny, "long/"));
	CHECK(cs, mt_err(tiny, sizeof(tiny), -ENOMEM, "%s", "abcdefgh") ==
				  -ENOMEM &&
			  !strcmp(tiny, "abcde"));
	CHECK(cs, mt_err(NULL, 0, -ENOENT, "nowhere") == -ENOENT);
}

/* What the jobs' function saw: the order of the jobs it ran. */
struct jobs_log {
	int ran[64];
	atomic_int nr; /* read while jobs run */
	int fail_at;   /* this job fails with -ENOSPC; -1: none */
	int slow;      /* each job sleeps this many microseconds */
};

static int log_job(void *ctx, void *job)
{
	struct jobs_log *l = ctx;
	int id = *(int *)job;

	if (l->slow)
		usleep((useconds_t)l->slow);
	l->ran[atomic_fetch_add(&l->nr, 1)] = id;
	return id == l->fail_at ? -ENOSPC : 0;
}

/* Ranges in a table whose elements carry more than the range (a landing
 * pad, say): found by address, holes and ends excluded. */
/* Only a regular file is opened: a FIFO nobody writes to, a directory
 * and a device are refused at once, never waited on. */
static void test_open_regular(struct check_state *cs)
{
	char dir[64], fifo[96], file[96];
	struct stat st;
	int fd;

	tmpdir_make(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	CHECK(cs, !mkfifo(fifo, 0600));
	CHECK(cs, !spit(file, "abc", 3));
	fd = mt_open_regular(file, &st);
	CHECKF(cs, fd >= 0 && st.st_size == 3, "fd %d", fd);
	if (fd >= 0) {
		char b[4];

		CHECK(cs, read(fd, b, sizeof(b)) == 3);
		close(fd);
	}
	CHECK(cs, mt_open_regular(fifo, NULL) == -EINVAL);
	CHECK(cs, mt_open_regular(dir, NULL) == -EINVAL);
	CHECK(cs, mt_open_regular("/dev/null", NULL) == -EINVAL);
	snprintf(file, sizeof(file), "%s/none", dir);
	CHECK(cs, mt_open_regular(file, NULL) == -ENOENT);
	tmpdir_remove(dir);
}

static void test_range_at(struct check_state *st)
{
	struct padded {
		struct mt_range r;
		uint64_t pad;
	} v[] = {{{0x100, 0x110}, 1}, {{0x110, 0x120}, 2}, {{0x200, 0x280}, 3}};
	size_t n = sizeof(v) / sizeof(v[0]);

	CHECK(st, mt_range_at(v, 0, sizeof(*v), 0x100) == -1);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0xff) == -1);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x100) == 0);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x10f) == 0);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x110) == 1);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x120) == -1);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x1ff) == -1);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x27f) == 2);
	CHECK(st, mt_range_at(v, n, sizeof(*v), 0x280) == -1);
	CHECK(st, mt_range_from(v, n, sizeof(*v), 0) == 0);
	CHECK(st, mt_range_from(v, n, sizeof(*v), 0x100) == 0);
	CHECK(st, mt_range_from(v, n, sizeof(*v), 0x101) == 1);
	CHECK(st, mt_range_from(v, n, sizeof(*v), 0x200) == 2);
	CHECK(st, mt_range_from(v, n, sizeof(*v), 0x201) == n);
}

static void test_jobs_order(struct check_state *cs)
{
	struct jobs_log l = {.fail_at = -1, .slow = 200};
	int ids[40];
	struct mt_jobs *q;

	CHECK(cs, mt_jobs_start(&q, log_job, &l, 4) == 0 && q);
	if (!q)
		return;
	/* More jobs than the queue holds: a put waits for room. */
	for (int i = 0; i < 40; i++) {
		ids[i] = i;
		CHECK(cs, mt_jobs_put(q, &ids[i]) == 0);
	}
	CHECK(cs, mt_jobs_end(q) == 0);
	CHECK(cs, l.nr == 40);
	for (int i = 0; i < l.nr; i++)
		CHECKF(cs, l.ran[i] == i, "job %d ran as the %dth", l.ran[i],
		       i);
	CHECK(cs, mt_jobs_end(NULL) == 0);
}

/* With depth 2 and three buffers in turn, the job that had the next
 * buffer has run when mt_jobs_put() returns, however slow the jobs. */
static void test_jobs_reuse(struct check_state *cs)
{
	struct jobs_log l = {.fail_at = -1, .slow = 20000};
	int ids[6];
	struct mt_jobs *q;

	CHECK(cs, mt_jobs_start(&q, log_job, &l, 2) == 0 && q);
	if (!q)
		return;
	for (int k = 0; k < 6; k++) {
		ids[k] = k;
		CHECK(cs, mt_jobs_put(q, &ids[k]) == 0);
		/* Each job takes 20 ms: without the wait for room, none
		 * would have run yet. */
		CHECKF(cs, atomic_load(&l.nr) >= k - 1,
		       "%d jobs run when job %d was put", atomic_load(&l.nr),
		       k);
	}
	CHECK(cs, mt_jobs_end(q) == 0);
	CHECK(cs, l.nr == 6);
}

static void test_jobs_error(struct check_state *cs)
{
	struct jobs_log l = {.fail_at = 3, .slow = 0};
	int ids[10];
	struct mt_jobs *q;
	int rc = 0;

	CHECK(cs, mt_jobs_start(&q, log_job, &l, 4) == 0 && q);
	if (!q)
		return;
	for (int i = 0; i < 10; i++) {
		ids[i] = i;
		if (!rc)
			rc = mt_jobs_put(q, &ids[i]);
		else
			CHECK(cs, mt_jobs_put(q, &ids[i]) == -ENOSPC);
	}
	/* The first error is what every later call says, and the jobs
	 * after the failed one never ran. */
	CHECK(cs, mt_jobs_end(q) == -ENOSPC);
	CHECKF(cs, l.nr == 4, "%d jobs ran", l.nr);
	for (int i = 0; i < l.nr; i++)
		CHECK(cs, l.ran[i] == i);
}

/* The pool's jobs: work of uneven length on any thread, the finish
 * logged, which must come in the order of the puts. */
struct pool_log {
	int finished[64];
	atomic_int nr; /* jobs finished; finish runs one job at a time */
	atomic_int worked;
	atomic_int busy, most_busy; /* jobs being worked at once */
	int fail_at;		    /* the job whose work fails, or -1 */
};

static int pool_work(void *ctx, unsigned worker, void *job)
{
	struct pool_log *l = ctx;
	int id = *(int *)job, b = atomic_fetch_add(&l->busy, 1) + 1;
	int most = atomic_load(&l->most_busy);

	(void)worker;
	while (b > most &&
	       !atomic_compare_exchange_weak(&l->most_busy, &most, b))
		;
	/* Early jobs take longest, so that later ones are done first. */
	usleep((useconds_t)(id % 8 == 0 ? 3000 : 200));
	atomic_fetch_sub(&l->busy, 1);
	atomic_fetch_add(&l->worked, 1);
	return id == l->fail_at ? -ENOSPC : 0;
}

static int pool_finish(void *ctx, void *job)
{
	struct pool_log *l = ctx;

	l->finished[atomic_load(&l->nr)] = *(int *)job;
	atomic_fetch_add(&l->nr, 1);
	return 0;
}

static void test_pool_order(struct check_state *cs)
{
	for (unsigned workers = 1; workers <= 8; workers *= 2) {
		struct pool_log l = {.fail_at = -1};
		int ids[64];
		struct mt_pool *p;

		CHECK(cs, mt_pool_start(&p, workers, pool_work, pool_finish, &l,
					workers + 1) == 0 &&
				  p);
		if (!p)
			return;
		CHECK(cs, mt_pool_workers(p) == workers);
		for (int i = 0; i < 64; i++) {
			ids[i] = i;
			CHECK(cs, mt_pool_put(p, &ids[i]) == 0);
			/* Never more out than its depth. */
			CHECK(cs,
			      i + 1 - atomic_load(&l.nr) <= (int)workers + 1);
		}
		CHECK(cs, mt_pool_end(p) == 0);
		CHECK(cs, l.nr == 64);
		for (int i = 0; i < l.nr; i++)
			CHECKF(cs, l.finished[i] == i,
			       "%u threads: job %d finished as the %dth",
			       workers, l.finished[i], i);
		CHECKF(cs, atomic_load(&l.most_busy) <= (int)workers,
		       "%d jobs worked at once on %u threads",
		       atomic_load(&l.most_busy), workers);
	}
	CHECK(cs, mt_pool_end(NULL) == 0);
}

static void test_pool_error(struct check_state *cs)
{
	struct pool_log l = {.fail_at = 5};
	int ids[20], rc = 0;
	struct mt_pool *p;

	CHECK(cs,
	      mt_pool_start(&p, 4, pool_work, pool_finish, &l, 5) == 0 && p);
	if (!p)
		return;
	for (int i = 0; i < 20; i++) {
		ids[i] = i;
		if (!rc)
			rc = mt_pool_put(p, &ids[i]);
		else
			CHECK(cs, mt_pool_put(p, &ids[i]) == -ENOSPC);
	}
	/* The jobs before the failed one are finished, in order; none
	 * after it is. */
	CHECK(cs, mt_pool_end(p) == -ENOSPC);
	CHECKF(cs, l.nr == 5, "%d jobs finished", l.nr);
	for (int i = 0; i < l.nr; i++)
		CHECK(cs, l.finished[i] == i);
}

/* mt_pool_each's jobs: an array of these, a stride that is not a
 * pointer's; the first member is the id pool_work and pool_finish read. */
struct each_job {
	int id;
	unsigned worker;
	char pad[20];
};

static int each_work(void *ctx, unsigned worker, void *job)
{
	((struct each_job *)job)->worker = worker;
	return pool_work(ctx, worker, job);
}

static void test_pool_each(struct check_state *cs)
{
	static const struct {
		unsigned workers;
		int nr, fail_at;
	} cases[] = {{1, 40, -1}, {4, 3, -1}, {8, 40, -1}, {1, 20, 5},
		     {4, 20, 5},  {4, 0, -1}, {3, 1, -1}};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pool_log l = {.fail_at = cases[c].fail_at};
		struct each_job jobs[40];
		int nr = cases[c].nr, want = cases[c].fail_at < 0 ? nr : 5;
		unsigned most = cases[c].workers < (unsigned)nr
					? cases[c].workers
					: (unsigned)(nr ? nr : 1);
		int rc;

		for (int i = 0; i < nr; i++)
			jobs[i] = (struct each_job){.id = i, .worker = 99};
		rc = mt_pool_each(cases[c].workers, each_work, pool_finish, &l,
				  jobs, (size_t)nr, sizeof(jobs[0]));
		CHECKF(cs, rc == (cases[c].fail_at < 0 ? 0 : -ENOSPC),
		       "case %zu: %d", c, rc);
		/* Finished in order, up to the one that failed. */
		CHECKF(cs, atomic_load(&l.nr) == want, "case %zu: %d finished",
		       c, atomic_load(&l.nr));
		for (int i = 0; i < atomic_load(&l.nr); i++)
			CHECK(cs, l.finished[i] == i);
		CHECKF(cs, atomic_load(&l.most_busy) <= (int)most,
		       "case %zu: %d at once", c, atomic_load(&l.most_busy));
		/* Each worked job saw a worker of the threads it had: no
		 * more than there are jobs. */
		for (int i = 0; i < nr; i++)
			CHECK(cs,
			      jobs[i].worker == 99 || jobs[i].worker < most);
		/* One thread stops at the failed job. */
		if (cases[c].workers == 1)
			CHECK(cs, atomic_load(&l.worked) ==
					  (cases[c].fail_at < 0 ? nr : 6));
	}
}

/* A job that spends 20 ms of its own thread's CPU. */
static int pool_spin(void *ctx, unsigned worker, void *job)
{
	struct timespec a, b;

	(void)ctx;
	(void)worker;
	(void)job;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec <
	       20000000L);
	return 0;
}

/* What the pool's threads spent is told to whoever ends it: four jobs
 * of 20 ms each, on two threads, are at least 80 ms of CPU the
 * caller's own clock never sees. */
static void test_pool_cpu(struct check_state *cs)
{
	struct mt_pool *p;
	double cpu = 0.5;
	int ids[4];

	CHECK(cs, mt_pool_start(&p, 2, pool_spin, NULL, NULL, 3) == 0 && p);
	if (!p)
		return;
	for (int i = 0; i < 4; i++)
		CHECK(cs, mt_pool_put(p, &ids[i]) == 0);
	CHECK(cs, mt_pool_end_cpu(p, &cpu) == 0);
	CHECKF(cs, cpu >= 0.5 + 0.08, "%.3f s of CPU added", cpu - 0.5);
}

/* Whether the kernel populates pages on advice (Linux 5.14). */
static bool can_populate(void)
{
	size_t page = mt_page_size();
	void *m = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	if (m == MAP_FAILED)
		return false;
	ok = !madvise(m, page, 23 /* MADV_POPULATE_WRITE */);
	munmap(m, page);
	return ok;
}

/* The pages of [p, p + len) in memory, of those there are. */
static size_t resident(void *p, size_t len)
{
	size_t page = mt_page_size(), n = (len + page - 1) / page;
	unsigned char *v = malloc(n);
	size_t in = 0;

	if (v && !mincore(p, len, v))
		for (size_t i = 0; i < n; i++)
			in += v[i] & 1;
	free(v);
	return in;
}

/*
 * The pager populates what it is asked for, ahead of a writer that has
 * not touched it, and gives back what was populated past what was used;
 * an array grown (and moved) under its lock while the pager works keeps
 * every value written.
 */
static void test_pager(struct check_state *cs)
{
	const size_t page = mt_page_size(), len = 8u << 20;
	struct mt_pager *pg = NULL;
	struct mt_ahead *a;
	uint64_t *v = NULL;
	size_t cap = 0, n = 0;
	uint8_t *m;

	CHECK(cs, !mt_pager_watch(NULL));
	mt_ahead_lock(NULL);
	mt_ahead_grown(NULL, NULL, 0);
	mt_ahead_want(NULL, NULL, 1);
	CHECK(cs, mt_pager_start(&pg) == 0 && pg);
	if (!pg)
		return;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	CHECK(cs, m != MAP_FAILED && (a = mt_pager_watch(pg)));
	if (m != MAP_FAILED && a && can_populate()) {
		mt_ahead_lock(a);
		mt_ahead_grown(a, m, len);
		CHECK(cs, resident(m, len) == 0);
		mt_ahead_want(pg, a, len / 2);
		for (int i = 0;
		     i < 400 && resident(m, len / 2) < len / 2 / page; i++)
			usleep(5000);
		CHECKF(cs, resident(m, len / 2) == len / 2 / page,
		       "%zu of %zu pages populated", resident(m, len / 2),
		       len / 2 / page);
		CHECK(cs, resident(m + len / 2 + page, len / 2 - page) == 0);
		/* used: the first MiB; the rest populated goes back */
		CHECK(cs, mt_ahead_release(pg, a, 1u << 20) ==
				  len / 2 - (1u << 20));
		CHECK(cs, resident(m, len) == (1u << 20) / page);
	}
	if (m != MAP_FAILED)
		munmap(m, len);
	/* A writer growing its array (realloc moves it) as the pager
	 * populates ahead. */
	CHECK(cs, (a = mt_pager_watch(pg)) != NULL);
	for (size_t k = 0; k < 64; k++) {
		if (n + 65536 > cap) {
			uint64_t *w;

			mt_ahead_lock(a);
			w = realloc(v, 2 * (cap + 65536) * sizeof(*v));
			if (w) {
				v = w;
				cap = 2 * (cap + 65536);
			}
			mt_ahead_grown(a, v, cap * sizeof(*v));
			if (!w)
				break;
		}
		for (size_t i = 0; i < 65536; i++, n++)
			v[n] = n * 2654435761u;
		mt_ahead_want(pg, a, (n + 262144) * sizeof(*v));
	}
	for (size_t i = 0; i < n; i++)
		if (v[i] != i * 2654435761u) {
			CHECKF(cs, 0, "value %zu changed", i);
			break;
		}
	CHECK(cs, n == 64 * 65536);
	mt_pager_end(pg);
	free(v);
}

/*
 * Readings go forward; time since a reading is never negative, and 0
 * where the start failed (0) or lies ahead; a clock that cannot be read
 * reads 0.
 */
static void test_clock(struct check_state *cs)
{
	uint64_t a = mt_clock_ns(CLOCK_MONOTONIC), cpu;
	struct timespec nap = {0, 2000000};
	double s;

	CHECK(cs, a > 0);
	nanosleep(&nap, NULL);
	s = mt_since_s(CLOCK_MONOTONIC, a);
	CHECKF(cs, s >= 0.002 && s < 60, "%.6f s", s);
	CHECK(cs, mt_clock_ns(CLOCK_MONOTONIC) > a);
	CHECK(cs, mt_since_s(CLOCK_MONOTONIC, 0) == 0);
	CHECK(cs, mt_since_s(CLOCK_MONOTONIC, UINT64_MAX) == 0);
	CHECK(cs, mt_clock_ns((clockid_t)-1000) == 0);
	CHECK(cs, mt_since_s((clockid_t)-1000, a) == 0);
	cpu = mt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (volatile unsigned i = 0; i < 2000000; i++)
		;
	CHECK(cs, mt_since_s(CLOCK_THREAD_CPUTIME_ID, cpu) > 0);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_parse_u64);
	RUN(&st, test_open_regular);
	RUN(&st, test_parse_i64);
	RUN(&st, test_scan_u64);
	RUN(&st, test_parse_size);
	RUN(&st, test_parse_arg_word);
	RUN(&st, test_proc_id);
	RUN(&st, test_proc_stat_status);
	RUN(&st, test_hmap_basics);
	RUN(&st, test_hmap_many);
	RUN(&st, test_hmap_ext);
	RUN(&st, test_hash_bytes);
	RUN(&st, test_outfile_stream);
	RUN(&st, test_outfile_write_error);
	RUN(&st, test_outfile_sync_early);
	RUN(&st, test_outfile_all_or_none);
	RUN(&st, test_outfile_long_name);
	RUN(&st, test_outfile_stale);
	RUN(&st, test_outfile_special);
	RUN(&st, test_outfile_link);
	RUN(&st, test_err);
	RUN(&st, test_range_at);
	RUN(&st, test_jobs_order);
	RUN(&st, test_jobs_reuse);
	RUN(&st, test_jobs_error);
	RUN(&st, test_pool_order);
	RUN(&st, test_pool_error);
	RUN(&st, test_pool_each);
	RUN(&st, test_pool_cpu);
	RUN(&st, test_pager);
	RUN(&st, test_clock);
	return CHECK_DONE(&st);
}
