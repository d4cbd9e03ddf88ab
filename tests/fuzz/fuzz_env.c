/* SPDX-License-Identifier: MIT */
/*
 * The input goes into a memfd, named to the library as /proc/self/fd/N:
 * no disk traffic per input, and the reader maps it as it maps a file.
 *
 * Decoding only runs code when the binaries the capture maps are found,
 * and that is where most of the coverage is: the committed seed binaries
 * sit in a build-id tree (tests/fuzz/binaries/.build-id/xx/rest) that the
 * decoder searches as its debug root, so any number of seeds can map a
 * file of the same name.  The tree is found from MT_FUZZ_BINARIES, or
 * from the target's own path (build/fuzz/NAME in the source tree).
 */
#include "tests/fuzz/fuzz_env.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int find_binaries(struct fuzz_env *e)
{
	const char *env = getenv("MT_FUZZ_BINARIES");
	char exe[PATH_MAX], *slash;
	ssize_t n;
	struct stat st;

	if (env && *env) {
		snprintf(e->binaries, sizeof(e->binaries), "%s", env);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0)
			return -1;
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (!slash)
			return -1;
		*slash = 0;
		snprintf(e->binaries, sizeof(e->binaries),
			 "%.*s/../../tests/fuzz/binaries", PATH_MAX - 32, exe);
	}
	if (stat(e->binaries, &st) || !S_ISDIR(st.st_mode))
		return -1;
	return 0;
}

/* Only the three outputs a target writes live in a scratch directory. */
static void remove_dir(const char *dir)
{
	const char *names[] = {"t.txt", "t.pftrace", "t.sqlite"};
	char p[PATH_MAX + 16];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void remove_scratch(void)
{
	const char *dir = getenv("MT_FUZZ_SCRATCH_DIR");

	if (dir)
		remove_dir(dir);
}

/* A target that crashed (or ran under libFuzzer's -fork) left its
 * directory behind: take away those of processes that are gone. */
static void remove_stale(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	char p[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *dot = strrchr(de->d_name, '.');
		char *end;
		long pid;

		if (strncmp(de->d_name, "mt-fuzz-", 8) || !dot)
			continue;
		pid = strtol(dot + 1, &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "%s/%s", base, de->d_name);
		remove_dir(p);
	}
	closedir(d);
}

int fuzz_env_init(struct fuzz_env *e, const char *name)
{
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

	memset(e, 0, sizeof(*e));
	e->fd = memfd_create(name, MFD_CLOEXEC);
	if (e->fd < 0) {
		fprintf(stderr, "fuzz: memfd_create: %s\n", strerror(errno));
		return -1;
	}
	snprintf(e->input, sizeof(e->input), "/proc/self/fd/%d", e->fd);
	if (find_binaries(e)) {
		fprintf(stderr,
			"fuzz: no seed binaries at %s: set MT_FUZZ_BINARIES "
			"to tests/fuzz/binaries\n",
			e->binaries[0] ? e->binaries : "(unknown)");
		return -1;
	}
	e->bin_dirs[0] = e->binaries;
	remove_stale(base);
	snprintf(e->scratch, sizeof(e->scratch), "%s/mt-fuzz-%s.%ld", base,
		 name, (long)getpid());
	remove_dir(e->scratch);
	if (mkdir(e->scratch, 0700)) {
		fprintf(stderr, "fuzz: mkdir %s: %s\n", e->scratch,
			strerror(errno));
		return -1;
	}
	/* atexit() takes no argument: the environment carries the name. */
	setenv("MT_FUZZ_SCRATCH_DIR", e->scratch, 1);
	atexit(remove_scratch);
	snprintf(e->text, sizeof(e->text), "%s/t.txt", e->scratch);
	snprintf(e->perfetto, sizeof(e->perfetto), "%s/t.pftrace", e->scratch);
	snprintf(e->sqlite, sizeof(e->sqlite), "%s/t.sqlite", e->scratch);
	return 0;
}

int fuzz_env_load(const struct fuzz_env *e, const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (ftruncate(e->fd, 0))
		return -1;
	while (done < size) {
		ssize_t n =
			pwrite(e->fd, data + done, size - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}
