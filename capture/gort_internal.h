/* SPDX-License-Identifier: MIT */
/*
 * What the emulators need to know of a Go program's runtime to say which
 * goroutine each thread runs: whether it is Go at all, where the runtime
 * keeps the running g (a TLS slot, which R14 mirrors in Go code), where a
 * g holds its id, and the functions in which a thread changes goroutines.
 */
#ifndef MT_GORT_INTERNAL_H
#define MT_GORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GO_SWITCH_MAX 16

struct go_fn {
	uint64_t lo, hi; /* ELF vaddrs */
	const char *name;
};

struct go_rt {
	bool is_go;	   /* it has runtime.gogo */
	int64_t tls_off;   /* the g slot, from the FS base */
	uint64_t goid_off; /* of runtime.g's goid; 0: not known */
	struct go_fn fns[GO_SWITCH_MAX];
	size_t nr_fns;
};

/*
 * The runtime of the ELF executable at exe: g->is_go false (and 0) when
 * it is no Go program or cannot be read (the capture then says nothing
 * of goroutines); goid_off 0 when its DWARF does not say (built with
 * -ldflags=-w): ids are then 0.
 */
void go_rt_read(const char *exe, struct go_rt *g);
/* Is vaddr (an ELF vaddr) in one of the switching functions? */
bool go_rt_switches(const struct go_rt *g, uint64_t vaddr);

#endif
