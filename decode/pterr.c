/* SPDX-License-Identifier: MIT */
/*
 * libipt's errors, turned into ours in one place (as perf's
 * intel_pt__strerror does for its decoder): a libipt status is a
 * negative pt_error_code, which would read as some unrelated errno
 * value if it were passed on as it is.  And the decoder's warnings,
 * handed to whoever opened the capture.
 */
#include "decode/dec_internal.h"
#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The words for a libipt code: a DEC_ERROR's payload or a status. */
static const char *pt_text(int code)
{
	return pt_errstr(pt_errcode(code < 0 ? code : -code));
}

static int pt_errno(int status)
{
	switch (pt_errcode(status)) {
	case pte_ok:
		return 0;
	case pte_nomem:
		return -ENOMEM;
	case pte_invalid:
	case pte_bad_config:
	case pte_bad_image:
	case pte_bad_file:
	case pte_bad_cpu:
		return -EINVAL;
	case pte_eos:
		return -ENODATA;
	case pte_nomap:
		return -ENOENT;
	case pte_not_supported:
		return -EOPNOTSUPP;
	case pte_overflow:
		return -EOVERFLOW;
	case pte_internal:
	case pte_bad_lock:
		return -EFAULT;
	default:
		return -EBADMSG; /* the trace does not decode */
	}
}

int dec_pt_error(int status, char *err, size_t errlen, const char *path,
		 const char *what)
{
	return mt_err_prefixed(err, errlen, pt_errno(status), path,
			       "libipt %s: %s", what, pt_text(status));
}

const char *dec_error_str(uint64_t code)
{
	if (code == DEC_ERR_NO_PROGRESS)
		return "never-ending loop (no packet for too long: a wrong "
		       "binary, or the decoder out of step)";
	return pt_text((int)code);
}

void dec_warn(const struct dec_capture *c, const char *fmt, ...)
{
	char small[512], *line = small;
	va_list ap;
	int n;

	if (!c->opts.warn)
		return;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* A path and an error of a few KiB each: longer than most. */
	if ((size_t)n >= sizeof(small)) {
		line = malloc((size_t)n + 1);
		if (!line)
			return;
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	c->opts.warn(c->opts.warn_ctx, line);
	if (line != small)
		free(line);
}
