/* SPDX-License-Identifier: MIT */
/*
 * Numbers people type on a command line, or read from a file, checked:
 * strtoull alone takes a sign or leading spaces, wraps "-1" around, says
 * nothing of trailing junk unless asked, and lets a K/M/G shift overflow.
 */
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strtoull's own digits: the first must be one of base, so that no sign
 * or white space gets through. */
static bool starts_number(const char *s, int base)
{
	if (base == 16)
		return isxdigit((unsigned char)*s);
	return *s >= '0' && *s <= '9';
}

int mt_scan_u64(const char **s, int base, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if ((base != 0 && base != 8 && base != 10 && base != 16) ||
	    !starts_number(*s, base))
		return -EINVAL;
	errno = 0;
	v = strtoull(*s, &end, base);
	*s = end;
	if (errno == ERANGE || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int mt_parse_u64(const char *s, int base, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int rc = mt_scan_u64(&s, base, max, &v);

	/* Junk after the digits makes it no number, however large. */
	if (rc != -EINVAL && *s)
		return -EINVAL;
	if (!rc)
		*out = v;
	return rc;
}

int mt_parse_i64(const char *s, int base, int64_t min, int64_t max,
		 int64_t *out)
{
	bool neg = *s == '-';
	uint64_t v;
	int64_t r;
	int rc = mt_parse_u64(s + neg, base, (uint64_t)INT64_MAX + neg, &v);

	if (rc)
		return rc;
	/* Negated as unsigned: -INT64_MIN does not fit in an int64_t. */
	r = neg ? (int64_t)(0 - v) : (int64_t)v;
	if (r < min || r > max)
		return -ERANGE;
	*out = r;
	return 0;
}

int mt_parse_size(const char *s, uint64_t *out)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned shift = 0;
	const char *end = s;
	uint64_t v = 0;
	int rc;

	rc = mt_scan_u64(&end, hex ? 16 : 10, UINT64_MAX, &v);
	if (rc == -EINVAL || (hex && end == s + 2))
		return -EINVAL;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 'T':
	case 't':
		shift = 40;
		break;
	default:
		break;
	}
	if (shift)
		end++;
	if (*end)
		return -EINVAL;
	if (rc || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int mt_parse_arg(const char *what, const char *s, int base, uint64_t max,
		 uint64_t *out, char *err, size_t errlen)
{
	int rc = mt_parse_u64(s, base, max, out);

	if (rc == -EINVAL)
		snprintf(err, errlen, "%s: '%s' is not a number", what, s);
	else if (rc)
		snprintf(err, errlen, "%s: '%s' is more than %llu", what, s,
			 (unsigned long long)max);
	return rc;
}

int mt_parse_word(const char *what, const char *s, const char *const *words,
		  size_t n, char *err, size_t errlen)
{
	size_t at;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, words[i]))
			return (int)i;
	/* "WHAT is A, B or C, not 'S'" */
	at = (size_t)snprintf(err, errlen, "%s is ", what);
	for (size_t i = 0; i < n && at < errlen; i++)
		at += (size_t)snprintf(err + at, errlen - at, "%s%s",
				       i == 0	    ? ""
				       : i == n - 1 ? " or "
						    : ", ",
				       words[i]);
	if (at < errlen)
		snprintf(err + at, errlen - at, ", not '%s'", s);
	return -1;
}
