/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the Valgrind backend share: vg_capture.c (the tool's
 * processes and their sockets), vg_hot.c (the records most of the stream
 * is) and vg_record.c (every record, and what the records do).
 */
#ifndef MT_VG_INTERNAL_H
#define MT_VG_INTERNAL_H

#include "capture/emu_internal.h"

#include <stdint.h>

struct vg;
struct rd;

/* vg_hot.c */
/* Every whole record read so far; what is cut short waits for more. */
int vg_parse(struct vg *v);

/* vg_record.c */
/* One record at r: 0, 1 when the capture ends with it, SHORT (r->bad)
 * when it is not all there yet, or a negative code. */
int vg_record(struct vg *v, struct rd *r);
/* --snapshot-size: the ring of t keeps the newest bytes. */
void vg_trim(struct vg *v, struct thr *t);
/* --drop-every: are the packets of this record's n branches lost? 1
 * (lost, tracing resuming at ip), 0 or -ENOMEM. */
int vg_drop(struct vg *v, struct thr *t, unsigned n, uint64_t ip);

#endif
