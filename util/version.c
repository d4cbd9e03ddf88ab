/* SPDX-License-Identifier: MIT */
/*
 * The commit comes from build/gen/mt_build.h, which tools/version.sh
 * writes at each build (rewritten only when the commit changes, so that
 * builds stay incremental); builds that have none (the fuzz targets)
 * say "unknown".
 */
#include "util/version.h"

#if defined(__has_include)
#if __has_include("mt_build.h")
#include "mt_build.h"
#endif
#endif
#ifndef MT_COMMIT
#define MT_COMMIT "unknown"
#endif

const char *mt_build_commit(void)
{
	return MT_COMMIT;
}

const char *mt_version_line(const char *prog, char *buf, unsigned len)
{
	snprintf(buf, len, "%s %s (commit %s)", prog, MT_VERSION, MT_COMMIT);
	return buf;
}

const char *mt_build_limits(void)
{
#ifdef MT_STATIC
	/* The Valgrind tool is linked with Valgrind's own libraries and runs
	 * beside its files: a static binary cannot carry them. */
	return "static build: --emulate=valgrind needs lib/mt/valgrind (from "
	       "make install or the package) beside bin/, and valgrind";
#else
	return NULL;
#endif
}

void mt_version_print(FILE *o, const char *prog)
{
	char line[256];

	fprintf(o, "%s\n", mt_version_line(prog, line, sizeof(line)));
	if (mt_build_limits())
		fprintf(o, "%s\n", mt_build_limits());
}
