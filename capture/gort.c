/* SPDX-License-Identifier: MIT */
/*
 * A Go program's runtime, as the emulators follow its goroutines.
 *
 * On amd64 (Go 1.17 and later) the running goroutine's g is in a TLS
 * slot, FS:-8 in an executable, and in R14 in Go code; the runtime
 * changes it only in a few assembly functions: gogo (resume a goroutine:
 * its last instruction jumps into it), mcall and systemstack (to the
 * thread's g0 and, for systemstack, back), morestack (to g0 for newstack),
 * setg (signal handlers, cgo callbacks) and asmcgocall.  A thread's
 * goroutine can change only at a transfer out of one of them, so that is
 * where the emulators look at the slot: the first instruction after it is
 * the first of the new goroutine.  R14 is not looked at: systemstack's
 * return and morestack leave it stale until the ABI wrapper after them
 * reloads it from the slot.
 */
#include "capture/gort_internal.h"
#include "symbols/symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The functions that switch, by the names Go's linker gives them (ABI0
 * assembly has ".abi0"; older toolchains have none). */
static const char *const switch_names[] = {
	"gogo",
	"runtime.gogo",
	"runtime.gogo.abi0",
	"runtime.mcall",
	"runtime.mcall.abi0",
	"runtime.systemstack",
	"runtime.systemstack.abi0",
	"runtime.morestack",
	"runtime.morestack.abi0",
	"runtime.setg",
	"runtime.setg.abi0",
	"runtime.asmcgocall",
	"runtime.asmcgocall.abi0",
	"runtime.goexit",
	"runtime.goexit.abi0",
};

static bool is_gogo(const char *name)
{
	return !strcmp(name, "runtime.gogo") ||
	       !strcmp(name, "runtime.gogo.abi0");
}

/* The offset of member `member` of the structure type `type` in the DWARF
 * of dw: 0 when none says. */
static uint64_t dwarf_member_off(Dwarf *dw, const char *type,
				 const char *member)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (!dwarf_offdie(dw, off + hsize, &cu) ||
		    dwarf_child(&cu, &die)) {
			off = next;
			continue;
		}
		do {
			const char *n = dwarf_diename(&die);
			Dwarf_Die m;

			if (dwarf_tag(&die) != DW_TAG_structure_type || !n ||
			    strcmp(n, type) || dwarf_child(&die, &m))
				continue;
			do {
				Dwarf_Attribute at;
				Dwarf_Word v;

				n = dwarf_diename(&m);
				if (dwarf_tag(&m) == DW_TAG_member && n &&
				    !strcmp(n, member) &&
				    dwarf_attr(&m, DW_AT_data_member_location,
					       &at) &&
				    !dwarf_formudata(&at, &v))
					return v;
			} while (dwarf_siblingof(&m, &m) == 0);
		} while (dwarf_siblingof(&die, &die) == 0);
		off = next;
	}
	return 0;
}

void go_rt_read(const char *exe, struct go_rt *g)
{
	char why[256];
	struct sym_file *sf = NULL;
	const struct sym *s;
	size_t n;
	Dwarf *dw;
	int fd;

	memset(g, 0, sizeof(*g));
	if (sym_file_open(exe, NULL, &sf, why, sizeof(why)))
		return;
	s = sym_file_syms(sf, &n);
	for (size_t i = 0; i < n; i++) {
		if (is_gogo(s[i].name))
			g->is_go = true;
		for (size_t k = 0;
		     k < sizeof(switch_names) / sizeof(switch_names[0]) &&
		     g->nr_fns < GO_SWITCH_MAX;
		     k++)
			if (!strcmp(s[i].name, switch_names[k]) && s[i].size) {
				g->fns[g->nr_fns++] = (struct go_fn){
					s[i].addr, s[i].addr + s[i].size,
					switch_names[k]};
				break;
			}
	}
	sym_file_free(sf);
	if (!g->is_go) {
		g->nr_fns = 0;
		return;
	}
	g->tls_off = -8;
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	dw = fd < 0 ? NULL : dwarf_begin(fd, DWARF_C_READ);
	if (dw) {
		g->goid_off = dwarf_member_off(dw, "runtime.g", "goid");
		dwarf_end(dw);
	}
	if (fd >= 0)
		close(fd);
}

bool go_rt_switches(const struct go_rt *g, uint64_t vaddr)
{
	for (size_t i = 0; i < g->nr_fns; i++)
		if (vaddr >= g->fns[i].lo && vaddr < g->fns[i].hi)
			return true;
	return false;
}
