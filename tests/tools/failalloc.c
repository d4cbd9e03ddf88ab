/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into a program by tests/e2e/44-convert-oom.sh: the program's
 * own calls of malloc, calloc and realloc (those made from its
 * executable's code, not from the libraries it uses) are counted, and
 * the one numbered $MT_FAIL_AT (from 0) returns NULL with ENOMEM, as
 * under a memory limit; with MT_FAIL_ALL=1 every one from there on
 * does.  At exit the count goes to $MT_FAIL_COUNT (when set), so a
 * sweep knows how far to go; the programs it starts run without it.  The
 * allocator underneath is the next one (libc's, or a sanitizer's, which then
 * sees every free).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static uintptr_t exe_lo, exe_hi;
static long fail_at = -1;
static int fail_all;
static atomic_long counted;

/* dlsym() may calloc before real_calloc is known: from here, never
 * freed (free() of it is not expected; dlsym keeps what it allocates). */
static _Alignas(16) unsigned char boot[4096];
static size_t boot_used;

static int exe_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || info->dlpi_name[0])
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			exe_lo = info->dlpi_addr + ph->p_vaddr;
			exe_hi = exe_lo + ph->p_memsz;
		}
	}
	return 1;
}

__attribute__((constructor)) static void start(void)
{
	const char *at = getenv("MT_FAIL_AT"), *all = getenv("MT_FAIL_ALL");

	real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
	real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
	real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
	dl_iterate_phdr(exe_text, NULL);
	fail_at = at && *at ? atol(at) : -1;
	fail_all = all && !strcmp(all, "1");
	/* The programs it starts (a traced one) allocate as they would. */
	unsetenv("LD_PRELOAD");
}

__attribute__((destructor)) static void stop(void)
{
	const char *path = getenv("MT_FAIL_COUNT");
	FILE *f;

	if (path && (f = fopen(path, "w"))) {
		fprintf(f, "%ld\n", (long)atomic_load(&counted));
		fclose(f);
	}
}

static int fails(const void *caller)
{
	long n;

	if (!exe_hi || (uintptr_t)caller < exe_lo ||
	    (uintptr_t)caller >= exe_hi)
		return 0;
	n = atomic_fetch_add(&counted, 1);
	if (fail_at < 0 || n < fail_at || (n > fail_at && !fail_all))
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	if (fails(__builtin_return_address(0)))
		return NULL;
	return real_malloc ? real_malloc(n) : NULL;
}

void *calloc(size_t a, size_t b)
{
	if (!real_calloc) {
		size_t n = (a * b + 15) & ~(size_t)15;

		if (b && a > SIZE_MAX / b)
			return NULL;
		if (n > sizeof(boot) - boot_used)
			return NULL;
		boot_used += n;
		return boot + boot_used - n; /* static: zeroed */
	}
	if (fails(__builtin_return_address(0)))
		return NULL;
	return real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (fails(__builtin_return_address(0)))
		return NULL;
	return real_realloc ? real_realloc(p, n) : NULL;
}
