/* SPDX-License-Identifier: MIT */
/*
 * err: the one way a failure is reported.
 *
 * A function that can fail returns a negative errno value (0, or a
 * count, on success) and writes one line saying what is wrong, naming
 * the file it concerns, into the caller's buffer: char *err, size_t
 * errlen.  The caller decides whether and where the line is shown; a
 * library never prints it and never exits.  err may be NULL or errlen 0
 * when the caller wants only the code.
 */
#ifndef MT_ERR_H
#define MT_ERR_H

#include <stdarg.h>
#include <stddef.h>

/* Formats the line into err and returns code, so that a caller can
 * `return mt_err(err, errlen, -EINVAL, "...")`. */
int mt_err(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int mt_verr(char *err, size_t errlen, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* The same, the line led by "PREFIX: " (a path, most often); a NULL
 * prefix is left out. */
int mt_err_prefixed(char *err, size_t errlen, int code, const char *prefix,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int mt_verr_prefixed(char *err, size_t errlen, int code, const char *prefix,
		     const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/*
 * The same into the buffer a context struct carries for its caller as
 * members err and errlen (a capture's state, say), so that a step deep
 * in it can `return mt_fail(ctx, -EIO, "...")`.
 */
#define mt_fail(ctx, code, ...)                                                \
	mt_err((ctx)->err, (ctx)->errlen, (code), __VA_ARGS__)

#endif
