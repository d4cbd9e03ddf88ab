/* SPDX-License-Identifier: MIT */
/*
 * What built a binary: the release and the commit, for --version, for
 * mt-convert --info and for the metadata of the captures and traces the
 * commands write, so that a file says what made it.
 */
#ifndef MT_VERSION_H
#define MT_VERSION_H

#include <stdio.h>

/* The release; debian/changelog's newest entry agrees (a test checks). */
#define MT_VERSION "0.1.0"

/* The commit the binary was built from ("unknown" outside a git tree):
 * twelve hex digits, "-dirty" after them when files differed from it. */
const char *mt_build_commit(void);

/*
 * "PROG VERSION (commit COMMIT)", the first line of --version, and what
 * captures and traces record of the program that wrote them.
 */
const char *mt_version_line(const char *prog, char *buf, unsigned len);

/* What this build cannot do that a full install can (a static
 * mt-capture without Valgrind's files), one line; NULL when nothing. */
const char *mt_build_limits(void);

/* --version: the line above, then the build's limits if any. */
void mt_version_print(FILE *o, const char *prog);

#endif
