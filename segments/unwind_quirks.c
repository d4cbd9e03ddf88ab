/* SPDX-License-Identifier: MIT */
/*
 * Unwinding that the trace shows as some other transfer.
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
