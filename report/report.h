/* SPDX-License-Identifier: MIT */
/*
 * report: the summary mt-convert --info prints about a capture.
 *
 * This header is the whole interface of the folder.  The report reads the
 * capture through perfdata/ and compares the binaries it maps with their
 * recorded build ids through symbols/; it decodes no trace.
 */
#ifndef MT_REPORT_H
#define MT_REPORT_H

#include "perfdata/perfdata.h"

#include <stdio.h>

/*
 * Print the summary of the capture at path to out.  Returns 0, or a
 * negative errno value with one line in err; nothing is printed when the
 * capture cannot be read whole.
 */
int report_print(FILE *out, const char *path, char *err, size_t errlen);

#endif
