/* SPDX-License-Identifier: MIT */
/*
 * pb: growth and the length fix-up of nested messages; the per-field
 * encoders are inline in pb_internal.h because they run per event.
 */
#include "writers/pb_internal.h"

#include "util/util.h"

#include <stdlib.h>

void pb_init(struct pb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_free(struct pb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

uint8_t *pb_grow(struct pb_buf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (n > SIZE_MAX - b->len ||
	    mt_grow((void **)&b->p, &b->cap, b->len + n, 1)) {
		b->oom = 1;
		return NULL;
	}
	return b->p + b->len;
}

void pb_end_long(struct pb_buf *b, size_t mark)
{
	size_t len, n;

	/* After a failed growth the mark may lie past what was written. */
	if (b->oom)
		return;
	len = b->len - mark - 1;
	n = pb_varint_size(len);
	if (!pb_room(b, n - 1))
		return;
	memmove(b->p + mark + n, b->p + mark + 1, len);
	pb_put_varint(b->p + mark, len);
	b->len += n - 1;
}
