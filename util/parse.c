/*
 * Numbers people type on a command line, checked: strtoull alone takes a
 * sign or leading spaces, wraps "-1" around and lets a K/M/G shift
 * overflow.
 */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

int mt_parse_size(const char *s, uint64_t *out)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (end == s || (hex && end == s + 2))
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
	if (errno == ERANGE || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}
