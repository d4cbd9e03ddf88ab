/*
 * What the DWARF readers of symbols/ share: opening a binary's DWARF
 * (its own, or its separate debug file) and making the file names of its
 * tables whole.
 */
#include "symbols/sym_internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Collapse "." and "dir/.." in path, in place: compilers write a header's
 * name relative to each unit's directory, and one file must be one name
 * whichever unit names it.
 */
void sym_path_normalize(char *path, size_t size)
{
	char tmp[4096], *seg[512], *save = NULL;
	size_t n = 0, at = 0;
	bool abs = path[0] == '/';

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *t = strtok_r(tmp, "/", &save); t && n < 512;
	     t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, "."))
			continue;
		if (!strcmp(t, "..") && n && strcmp(seg[n - 1], "..")) {
			n--;
			continue;
		}
		if (!strcmp(t, "..") && abs)
			continue; /* "/.." is "/" */
		seg[n++] = t;
	}
	path[0] = 0;
	if (abs)
		at = (size_t)snprintf(path, size, "/");
	for (size_t i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(path + at, size - at, "%s%s",
				       i ? "/" : "", seg[i]);
}

static const Dwfl_Callbacks offline_cb = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* The DWARF of the ELF at path (or its separate debug file). */
int sym_dwarf_open(const char *path, Dwfl **dwflp, Dwarf **dwp, char *err,
		   size_t errlen)
{
	Dwfl *dwfl = dwfl_begin(&offline_cb);
	Dwfl_Module *mod;
	Dwarf_Addr bias;

	*dwflp = dwfl;
	if (!dwfl) {
		snprintf(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		return -ENOMEM;
	}
	mod = dwfl_report_offline(dwfl, path, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		snprintf(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		return -EINVAL;
	}
	*dwp = dwfl_module_getdwarf(mod, &bias);
	if (!*dwp) {
		snprintf(err, errlen,
			 "%s: no DWARF line tables (built without -g?)", path);
		return -ENOENT;
	}
	return 0;
}
