/* SPDX-License-Identifier: MIT */
/*
 * The formatting behind every error line (err.h): one place that knows
 * how to fill a caller's buffer, so that a message is cut short the same
 * way everywhere rather than overrun.
 */
#include "util/err.h"

#include <stdio.h>

int mt_verr_prefixed(char *err, size_t errlen, int code, const char *prefix,
		     const char *fmt, va_list ap)
{
	size_t n = 0;
	int r;

	if (!err || !errlen)
		return code;
	err[0] = '\0';
	if (prefix) {
		r = snprintf(err, errlen, "%s: ", prefix);
		if (r < 0 || (size_t)r >= errlen)
			return code;
		n = (size_t)r;
	}
	vsnprintf(err + n, errlen - n, fmt, ap);
	return code;
}

int mt_verr(char *err, size_t errlen, int code, const char *fmt, va_list ap)
{
	return mt_verr_prefixed(err, errlen, code, NULL, fmt, ap);
}

int mt_err(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(err, errlen, code, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int mt_err_prefixed(char *err, size_t errlen, int code, const char *prefix,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_verr_prefixed(err, errlen, code, prefix, fmt, ap);
	va_end(ap);
	return code;
}
