/* SPDX-License-Identifier: MIT */
/*
 * Runtimes whose unwinding leaves frames by a transfer that looks like
 * another, and compilers whose layout keeps a frame by a transfer that
 * looks like unwinding (unwind_quirks.c): one named function each, as
 * libipt names errata, for the segment builder to ask.
 */
#ifndef MT_SEGMENTS_UNWIND_QUIRKS_H
#define MT_SEGMENTS_UNWIND_QUIRKS_H

#include <stdbool.h>

/* Is a ret out of the function named fn a raise's jump into a handler? */
bool ocaml_raise_ret(const char *fn);
/* Is the function named part the cold part GCC split off fn? */
bool gcc_cold_part(const char *part, const char *fn);

#endif
