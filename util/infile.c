/* SPDX-License-Identifier: MIT */
/*
 * Opening a file that an input names (a capture, a binary, a JIT map):
 * what a path leads to is not ours to choose, and a FIFO without a writer
 * would block the open, a device the read, for ever.
 */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_open_regular(const char *path, struct stat *st)
{
	struct stat own;
	int fd, e;

	if (!st)
		st = &own;
	/* A device is never opened at all: opening one can have effects
	 * (a tape rewinds, a terminal becomes ours). */
	if (stat(path, st))
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	/* The path may lead elsewhere by now: O_NONBLOCK keeps the open of
	 * a FIFO from waiting for a writer, and the descriptor's own
	 * fstat says what was opened.  The flag stays: it changes nothing
	 * for a file on disk, and turns the endless read of a "regular"
	 * file of the kernel's (/proc/kmsg) into an error. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}
