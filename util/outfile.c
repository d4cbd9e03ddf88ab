/* SPDX-License-Identifier: MIT */
/*
 * Output files that appear whole or not at all.
 *
 * Each output is written under a temporary name in its own directory (so
 * the rename stays on one filesystem), synced, and renamed over the real
 * name only when complete.  A run that fails, or is killed, leaves the
 * previous output as it was.  Temporary names are "NAME.tmp.PID.N",
 * created exclusively, so two runs never share one; NAME is cut short
 * where the whole would be longer than a name may be, so that any name
 * that fits has a temporary name that fits too.
 *
 * A path that is a symbolic link is followed: the file it names is
 * replaced and the link stays (a rename over /dev/stdout would replace
 * the system's link).  A special file (device, FIFO, socket, or a link to
 * one) is never replaced: an output written from its start to its end
 * and never read back (mt_outfile_begin_stream) is written into it as a
 * stream, any other is refused.
 *
 * A run killed outright (SIGKILL, a crash of the machine) leaves its
 * temporary files.  Each run holds a lock (flock) on its own, which the
 * kernel lets go with the process, so the next run for the same output
 * removes those of processes that are gone.  Unnamed files (O_TMPFILE,
 * linked in at commit) would leave nothing to remove, but the SQLite
 * database is opened by name, by SQLite and by the b-tree writer, and
 * SQLite resolves a /proc/self/fd link to the deleted name it shows: one
 * kind of temporary file for every output keeps one helper.
 */
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ".tmp." and the longest PID and N: what a temporary name adds to the
 * (cut) name of its output. */
#define TMP_SUFFIX_MAX (5 + 10 + 1 + 3)
#define TMP_TRIES      100

static void outfile_init(struct mt_outfile *f)
{
	f->path = NULL;
	f->dest = NULL;
	f->tmp = NULL;
	f->fp = NULL;
	f->fd = -1;
	f->synced = false;
	f->stream = false;
}

/* What a special file is, for a message; NULL for a regular file. */
static const char *special_kind(mode_t mode)
{
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return S_ISREG(mode) ? NULL : "not a regular file";
}

/*
 * The special file at path opened to write into.  Standard output's
 * own descriptor when path names it (/dev/stdout, /dev/fd/1): a socket
 * cannot be opened by name, and the shell's offset is kept.  A FIFO waits
 * here for a reader, as any writer into one does.
 */
static int open_stream(struct mt_outfile *f, const char *path,
		       const struct stat *sb, char *err, size_t errlen)
{
	struct stat so;
	int fd;

	if (!fstat(STDOUT_FILENO, &so) && so.st_dev == sb->st_dev &&
	    so.st_ino == sb->st_ino)
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	else
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot write: %s", path,
			 strerror(e));
		return -e;
	}
	f->path = strdup(path);
	if (!f->path) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	f->fd = fd;
	f->stream = true;
	return 0;
}

/* What the rename replaces: the file a symbolic link names, else path
 * itself (a dangling link included). */
static char *destination(const char *path)
{
	struct stat sb;
	char *real;

	if (!lstat(path, &sb) && S_ISLNK(sb.st_mode) &&
	    (real = realpath(path, NULL)))
		return real;
	return strdup(path);
}

/* dest's directory ("." or "/" included) and where its last name
 * starts. */
static char *dir_of(const char *dest, const char **base)
{
	const char *slash = strrchr(dest, '/');

	*base = slash ? slash + 1 : dest;
	if (!slash)
		return strdup(".");
	if (slash == dest)
		return strdup("/");
	return strndup(dest, (size_t)(slash - dest));
}

/* How much of base starts the temporary names: all of it unless a
 * temporary name would then be too long for the directory, and never
 * the middle of a UTF-8 character.  Depends on base alone, so that a
 * later run finds the temporary files of an earlier one. */
static size_t tmp_prefix_len(const char *dir, const char *base)
{
	long max = pathconf(dir, _PC_NAME_MAX);
	size_t n = strlen(base), room;

	if (max <= 0)
		max = NAME_MAX;
	room = (size_t)max > TMP_SUFFIX_MAX ? (size_t)max - TMP_SUFFIX_MAX : 1;
	if (n <= room)
		return n;
	n = room;
	while (n > 1 && ((unsigned char)base[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* "PREFIX.tmp.PID.N" (exactly: digits, nothing after): its PID. */
static bool is_tmp_name(const char *name, const char *prefix, size_t plen,
			long *pid)
{
	const char *p = name + plen, *digits;
	char *end;

	if (strncmp(name, prefix, plen) || strncmp(p, ".tmp.", 5))
		return false;
	p += 5;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	*pid = strtol(p, &end, 10);
	if (errno || *pid <= 0 || *end != '.')
		return false;
	digits = end + 1;
	if (!*digits)
		return false;
	for (p = digits; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/*
 * The temporary files of this output that runs killed outright left in
 * dir.  One goes only when its process is gone (no such PID here) and
 * its lock is free (the PID may be of another PID namespace sharing the
 * directory): a live run holds the lock on its own from creation to
 * commit.  Best effort: what cannot be removed stays.
 */
static void remove_stale(const char *dir, const char *prefix, size_t plen)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat a, b;
		long pid;
		int fd;

		if (!is_tmp_name(de->d_name, prefix, plen, &pid) ||
		    pid == (long)getpid() || pid > INT_MAX ||
		    !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		fd = openat(dirfd(d), de->d_name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				    O_CLOEXEC);
		if (fd < 0)
			continue;
		/* Still the same file under that name once locked: removed
		 * by no one else in between. */
		if (!fstat(fd, &a) && S_ISREG(a.st_mode) &&
		    !flock(fd, LOCK_EX | LOCK_NB) &&
		    !fstatat(dirfd(d), de->d_name, &b, AT_SYMLINK_NOFOLLOW) &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			unlinkat(dirfd(d), de->d_name, 0);
		close(fd);
	}
	closedir(d);
}

/*
 * The temporary file, created and locked.  A name whose file a cleaner
 * removed between its creation and the lock (it took the file for a
 * dead run's) is given up for the next.
 */
static int create_tmp(struct mt_outfile *f, const char *base, size_t plen)
{
	/* Beside dest: its directory as it is written there, if any. */
	int dlen = (int)(base - f->dest);
	size_t n = (size_t)dlen + plen + TMP_SUFFIX_MAX + 1;

	f->tmp = malloc(n);
	if (!f->tmp)
		return -ENOMEM;
	for (unsigned i = 0; i <= TMP_TRIES; i++) {
		struct stat sb;
		int fd;

		snprintf(f->tmp, n, "%.*s%.*s.tmp.%ld.%u", dlen, f->dest,
			 (int)plen, base, (long)getpid(), i);
		/* 0666 and the umask, as any file the user creates. */
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		if (fd < 0) {
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		/* A file system without flock keeps its temporaries from a
		 * killed run: none is taken for dead then. */
		if (flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
			close(fd);
			continue;
		}
		if (!fstat(fd, &sb) && !sb.st_nlink) {
			close(fd);
			continue;
		}
		f->fd = fd;
		return 0;
	}
	return -EEXIST;
}

static int begin(struct mt_outfile *f, const char *path, bool stream, char *err,
		 size_t errlen)
{
	const char *base, *kind;
	struct stat sb;
	char *dir = NULL;
	size_t plen;
	int rc;

	outfile_init(f);
	if (!stat(path, &sb)) {
		/* Found now rather than after the whole conversion, at
		 * rename. */
		if (S_ISDIR(sb.st_mode)) {
			snprintf(err, errlen, "%s: is a directory", path);
			return -EISDIR;
		}
		kind = special_kind(sb.st_mode);
		if (kind && !stream) {
			snprintf(err, errlen,
				 "%s: is %s, and this output is not written "
				 "from start to end: give a regular file",
				 path, kind);
			return -ESPIPE;
		}
		if (kind)
			return open_stream(f, path, &sb, err, errlen);
	}
	f->path = strdup(path);
	f->dest = destination(path);
	if (!f->path || !f->dest || !(dir = dir_of(f->dest, &base))) {
		rc = -ENOMEM;
		goto fail;
	}
	plen = tmp_prefix_len(dir, base);
	remove_stale(dir, base, plen);
	rc = create_tmp(f, base, plen);
	if (rc)
		goto fail;
	free(dir);
	return 0;
fail:
	free(dir);
	free(f->tmp);
	f->tmp = NULL;
	mt_outfile_abort(f);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", path);
	else
		snprintf(err, errlen, "%s: cannot create: %s", path,
			 strerror(-rc));
	return rc;
}

int mt_outfile_begin(struct mt_outfile *f, const char *path, char *err,
		     size_t errlen)
{
	return begin(f, path, false, err, errlen);
}

int mt_outfile_begin_stream(struct mt_outfile *f, const char *path, char *err,
			    size_t errlen)
{
	return begin(f, path, true, err, errlen);
}

int mt_outfile_open(const struct mt_outfile *f)
{
	int fd;

	if (f->stream)
		fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 3);
	else if (f->tmp)
		fd = open(f->tmp, O_WRONLY | O_TRUNC | O_CLOEXEC);
	else
		return -EBADF;
	return fd < 0 ? -errno : fd;
}

FILE *mt_outfile_fopen(struct mt_outfile *f, const char *path, char *err,
		       size_t errlen)
{
	if (mt_outfile_begin(f, path, err, errlen))
		return NULL;
	f->fp = fopen(f->tmp, "we");
	if (!f->fp) {
		snprintf(err, errlen, "%s: cannot write: %s", path,
			 strerror(errno));
		mt_outfile_abort(f);
	}
	return f->fp;
}

/* The stream's buffered bytes go to the file; any write to it that
 * failed fails this. */
static int close_stream(struct mt_outfile *f)
{
	int rc = 0;

	if (!f->fp)
		return 0;
	if (ferror(f->fp))
		rc = -EIO;
	if (fclose(f->fp) && !rc)
		rc = -errno;
	f->fp = NULL;
	return rc;
}

#define WRITEBACK_STEP (16u << 20)

void mt_writeback(struct mt_writeback *wb, int fd, uint64_t end)
{
	if (end < wb->started + WRITEBACK_STEP)
		return;
	/* Only a hint: a file system without it is synced at commit, and
	 * a pipe has nothing to sync. */
	sync_file_range(fd, (off_t)wb->started, (off_t)(end - wb->started),
			SYNC_FILE_RANGE_WRITE);
	wb->started = end;
}

/* The stream closed and the file synced, once: a rename must never put
 * a short file in place after a crash of the machine.  A special file
 * has nothing to sync. */
static int settle(struct mt_outfile *f)
{
	int rc = close_stream(f);

	if (!rc && !f->synced && !f->stream && fsync(f->fd))
		rc = -errno;
	f->synced = !rc;
	return rc;
}

int mt_outfile_sync(struct mt_outfile *f, char *err, size_t errlen)
{
	int rc = settle(f);

	if (rc)
		snprintf(err, errlen, "%s: cannot write: %s", f->path,
			 strerror(-rc));
	return rc;
}

static void outfile_free(struct mt_outfile *f)
{
	if ((f->tmp || f->stream) && f->fd >= 0)
		close(f->fd);
	free(f->tmp);
	free(f->dest);
	free(f->path);
	outfile_init(f);
}

int mt_outfile_commit(struct mt_outfile *f, char *err, size_t errlen)
{
	int rc = close_stream(f);

	if (rc) {
		snprintf(err, errlen, "%s: cannot write: %s", f->path,
			 strerror(-rc));
		mt_outfile_abort(f);
		return rc;
	}
	rc = settle(f);
	if (!rc && !f->stream && rename(f->tmp, f->dest))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "%s: cannot put in place: %s", f->path,
			 strerror(-rc));
		mt_outfile_abort(f);
		return rc;
	}
	outfile_free(f);
	return 0;
}

int mt_outfile_commit_all(struct mt_outfile *fs, size_t n, char *err,
			  size_t errlen)
{
	int rc = 0;

	/* Sync them all before the first rename, so that a failure leaves
	 * every old output in place. */
	for (size_t i = 0; i < n && !rc; i++)
		rc = mt_outfile_sync(&fs[i], err, errlen);
	for (size_t i = 0; i < n && !rc; i++)
		rc = mt_outfile_commit(&fs[i], err, errlen);
	for (size_t i = 0; i < n; i++)
		mt_outfile_abort(&fs[i]);
	return rc;
}

void mt_outfile_abort(struct mt_outfile *f)
{
	if (f->fp)
		fclose(f->fp);
	f->fp = NULL;
	/* Removed while still locked: no cleaner takes it meanwhile. */
	if (f->tmp)
		unlink(f->tmp);
	outfile_free(f);
}

/* The path with its directory resolved; the last component stays as it
 * is when it does not exist yet. */
static char *canonical(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *rdir, *out;
	size_t n;

	out = realpath(path, NULL);
	if (out)
		return out;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return NULL;
	rdir = realpath(dir, NULL);
	free(dir);
	if (!rdir)
		return NULL;
	slash = slash ? slash + 1 : path;
	n = strlen(rdir) + strlen(slash) + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", rdir, slash);
	free(rdir);
	return out;
}

bool mt_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	char *ca, *cb;
	bool same;

	if (!stat(a, &sa) && !stat(b, &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	ca = canonical(a);
	cb = canonical(b);
	same = ca && cb ? !strcmp(ca, cb) : !strcmp(a, b);
	free(ca);
	free(cb);
	return same;
}
