/* SPDX-License-Identifier: MIT */
/*
 * Preloaded into mt-convert by tests/e2e/29-decode-locks.sh: counts the
 * mutex locks libipt takes, and of those the ones taken on a mutex that
 * another thread locked first.  libipt locks a section at every
 * instruction it reads outside its block cache; decoding threads that
 * share sections wait on each other there (image/view.c), so a parallel
 * decode must leave that count near zero.  At exit it writes
 * "libipt_locks N shared_locks S shared_mutexes M" to $MT_LOCKSHARE.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LS_SLOTS 65536

struct ls_ent {
	_Atomic uintptr_t mutex;
	_Atomic long first; /* the thread that locked it first */
	_Atomic unsigned long shared;
};

/* A preloaded counter has nowhere but static storage to count in. */
static struct ls_ent ls_tab[LS_SLOTS];
static _Atomic unsigned long ls_total, ls_lost;
static uintptr_t ls_lo, ls_hi; /* libipt's code, set before main */
static int (*ls_real)(pthread_mutex_t *);

static int ls_find_ipt(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libipt"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ls_lo = info->dlpi_addr + ph->p_vaddr;
			ls_hi = ls_lo + ph->p_memsz;
		}
	}
	return 1;
}

__attribute__((constructor)) static void ls_start(void)
{
	ls_real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
						    "pthread_mutex_lock");
	dl_iterate_phdr(ls_find_ipt, NULL);
}

/* The slot of mutex m, taken when new; NULL when the table is full. */
static struct ls_ent *ls_slot(uintptr_t m, bool add)
{
	size_t h = (size_t)((m >> 4) * 0x9e3779b97f4a7c15ull >> 48) % LS_SLOTS;

	for (size_t k = 0; k < LS_SLOTS; k++, h = (h + 1) % LS_SLOTS) {
		uintptr_t cur = atomic_load(&ls_tab[h].mutex);

		if (!cur) {
			uintptr_t zero = 0;

			if (!add)
				return NULL;
			if (atomic_compare_exchange_strong(&ls_tab[h].mutex,
							   &zero, m))
				return &ls_tab[h];
			cur = zero;
		}
		if (cur == m)
			return &ls_tab[h];
	}
	return NULL;
}

static void ls_note(uintptr_t m)
{
	long me = syscall(SYS_gettid), first = 0;
	struct ls_ent *e = ls_slot(m, true);

	atomic_fetch_add(&ls_total, 1);
	if (!e) {
		atomic_fetch_add(&ls_lost, 1);
		return;
	}
	/* A mutex new, or destroyed and its memory a new one's: this
	 * thread is its first. */
	if (atomic_compare_exchange_strong(&e->first, &first, me))
		return;
	if (first != me)
		atomic_fetch_add(&e->shared, 1);
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
	static int (*real_destroy)(pthread_mutex_t *);
	struct ls_ent *e = ls_slot((uintptr_t)m, false);

	if (!real_destroy)
		real_destroy = (int (*)(pthread_mutex_t *))dlsym(
			RTLD_NEXT, "pthread_mutex_destroy");
	if (e)
		atomic_store(&e->first, 0);
	return real_destroy(m);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);

	if (!ls_real)
		ls_start();
	if (ra >= ls_lo && ra < ls_hi)
		ls_note((uintptr_t)m);
	return ls_real(m);
}

__attribute__((destructor)) static void ls_end(void)
{
	const char *path = getenv("MT_LOCKSHARE");
	unsigned long shared = 0, mutexes = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "w")))
		return;
	for (size_t i = 0; i < LS_SLOTS; i++)
		if (ls_tab[i].shared) {
			shared += ls_tab[i].shared;
			mutexes++;
		}
	fprintf(f,
		"libipt_locks %lu shared_locks %lu shared_mutexes %lu lost "
		"%lu\n",
		(unsigned long)ls_total, shared, mutexes,
		(unsigned long)ls_lost);
	fclose(f);
}
