/* SPDX-License-Identifier: MIT */
/*
 * Unwinding that the trace shows as some other transfer, and a compiler's
 * transfer that looks like unwinding.
 *
 * C++ and Rust unwinding (_Unwind_RaiseException, _Unwind_Resume) and
 * longjmp reach the landing pad by an indirect jump, which the builder
 * reads as a non-local jump already; what is here is the rest.
 */
#include "segments/unwind_quirks.h"

#include <string.h>

/*
 * OCaml's raise (4.x and 5.x, native code): caml_raise_exn, and
 * caml_raise_exception for an exception raised from C, load the stack
 * pointer from the innermost trap frame (Caml_state->exception_pointer),
 * pop the trap frame before it, and `ret` into the handler the trap frame
 * holds, in a function far down the stack.  That ret is a non-local jump,
 * no return: its target follows no call (it is no call site to reveal a
 * caller at), and the frames between the raise and the handler are left
 * without a ret of their own.  A raise compiled without -g, and
 * raise_notrace, jump there inline: an indirect jump already.
 */
bool ocaml_raise_ret(const char *fn)
{
	return fn && (!strcmp(fn, "caml_raise_exn") ||
		      !strcmp(fn, "caml_raise_exception"));
}

/*
 * GCC splits a function's unlikely blocks off into a part of its own,
 * fn.cold (fn.cold.N in older releases), that its hot part reaches by a
 * direct jump or through a switch's jump table (an indirect jump into the
 * middle of a known function, which would read as a longjmp to a caller
 * never seen): the same activation goes on there.
 */
bool gcc_cold_part(const char *part, const char *fn)
{
	size_t n = fn ? strlen(fn) : 0;

	if (!part || !n || strncmp(part, fn, n) ||
	    strncmp(part + n, ".cold", 5))
		return false;
	part += n + 5;
	if (*part == '.' && part[1])
		for (part++; *part >= '0' && *part <= '9'; part++)
			;
	return !*part;
}
