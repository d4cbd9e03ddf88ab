/* SPDX-License-Identifier: MIT */
/*
 * A DEC_ERROR's reason in words: ours, or libipt's (image/pterr.c, where
 * libipt's errors become ours).
 */
#include "decode/dec_internal.h"

const char *dec_error_str(uint64_t code)
{
	if (code == DEC_ERR_NO_PROGRESS)
		return "never-ending loop (no packet for too long: a wrong "
		       "binary, or the decoder out of step)";
	return img_pt_errstr((int)code);
}
