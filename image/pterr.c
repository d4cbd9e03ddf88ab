/* SPDX-License-Identifier: MIT */
/*
 * libipt's errors, turned into ours in one place (as perf's
 * intel_pt__strerror does for its decoder): a libipt status is a
 * negative pt_error_code, which would read as some unrelated errno
 * value if it were passed on as it is.
 */
#include "image/img_internal.h"
#include "util/err.h"

#include <errno.h>

const char *img_pt_errstr(int code)
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

int img_pt_error(int status, char *err, size_t errlen, const char *path,
		 const char *what)
{
	return mt_err_prefixed(err, errlen, pt_errno(status), path,
			       "libipt %s: %s", what, img_pt_errstr(status));
}
