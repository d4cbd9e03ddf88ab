/*
 * Output files that appear whole or not at all.
 *
 * Each output is written under a temporary name in its own directory (so
 * the rename stays on one filesystem), synced, and renamed over the real
 * name only when complete.  A run that fails, or is killed, leaves the
 * previous output as it was.  Temporary names are "PATH.tmp.PID.N",
 * created exclusively, so two runs never share one.
 */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_outfile_begin(struct mt_outfile *f, const char *path, char *err,
		     size_t errlen)
{
	size_t n = strlen(path) + 48;
	struct stat sb;

	f->path = NULL;
	f->tmp = NULL;
	f->fp = NULL;
	f->synced = false;
	/* Found now rather than after the whole conversion, at rename. */
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		return -EISDIR;
	}
	f->path = strdup(path);
	f->tmp = malloc(n);
	if (!f->path || !f->tmp) {
		mt_outfile_abort(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (unsigned i = 0;; i++) {
		int fd;

		snprintf(f->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), i);
		/* 0666 and the umask, as any file the user creates. */
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST || i == 100) {
			int e = errno;

			free(f->tmp);
			f->tmp = NULL;
			mt_outfile_abort(f);
			snprintf(err, errlen, "%s: cannot create: %s", path,
				 strerror(e));
			return -e;
		}
	}
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
	/* Only a hint: a file system without it is synced at commit. */
	sync_file_range(fd, (off_t)wb->started, (off_t)(end - wb->started),
			SYNC_FILE_RANGE_WRITE);
	wb->started = end;
}

/* Synced first: a rename must never put a short file in place after a
 * crash of the machine. */
static int sync_file(const char *name)
{
	int fd = open(name, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	if (fsync(fd)) {
		e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

/* The stream closed and the file synced, once. */
static int settle(struct mt_outfile *f)
{
	int rc = close_stream(f);

	if (!rc && !f->synced)
		rc = sync_file(f->tmp);
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
	if (!rc && rename(f->tmp, f->path))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "%s: cannot put in place: %s", f->path,
			 strerror(-rc));
		mt_outfile_abort(f);
		return rc;
	}
	free(f->tmp);
	free(f->path);
	f->tmp = NULL;
	f->path = NULL;
	f->synced = false;
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
	if (f->tmp)
		unlink(f->tmp);
	free(f->tmp);
	free(f->path);
	f->tmp = NULL;
	f->path = NULL;
	f->synced = false;
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
