/* SPDX-License-Identifier: MIT */
/*
 * pick: let a person choose on a terminal what the command line left
 * open: the process to attach to (-p alone), the trigger (--trigger ?).
 * With fzf when it is installed and both ends are terminals, else from a
 * numbered list written to out, the answer read from in.
 */
#ifndef MT_PICK_H
#define MT_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * One of n items.  Returns 0 with its index in *chosen, 1 when nothing
 * was chosen (an empty answer, end of input, fzf left), or -EINVAL with
 * one line in err when the answer is no number of the list.
 */
int pick_one(const char *const *items, size_t n, const char *prompt, FILE *in,
	     FILE *out, size_t *chosen, char *err, size_t errlen);

/* A process from ps: its pid, 0 when none was chosen, -1 when the answer
 * was no number of the list (said on stderr). */
int pick_process(void);

/* "?", "symbol:?" or "line:?": a trigger left for the picker. */
bool pick_trigger_spec(const char *spec);

/*
 * --trigger ?: a function of the executable exe or a source file of its
 * line tables and then a line of it; symbol:? functions only, line:? a
 * file then a line.  The trigger as --trigger takes it ("name", or
 * "/path/file.c:42") goes to out.  Returns 0, 1 when nothing was chosen,
 * or a negative code with one line in err.
 */
int pick_trigger(const char *spec, const char *exe, FILE *in, FILE *out,
		 char *trigger, size_t len, char *err, size_t errlen);

#endif
