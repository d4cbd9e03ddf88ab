/* SPDX-License-Identifier: MIT */
/*
 * pick: let a person choose on a terminal what the command line left
 * open: the process to attach to (-p alone), the trigger (--trigger ?).
 * With fzf when it is installed and both ends are terminals, else from a
 * numbered list written to out, the answer read from in.
 */
#ifndef MT_PICK_INTERNAL_H
#define MT_PICK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "capture/capture.h"

/*
 * One of n items.  Returns 0 with its index in *chosen, 1 when nothing
 * was chosen (an empty answer, end of input, fzf left), or -EINVAL with
 * one line in err when the answer is no number of the list.
 */
int pick_one(const char *const *items, size_t n, const char *prompt, FILE *in,
	     FILE *out, size_t *chosen, char *err, size_t errlen);

#endif
