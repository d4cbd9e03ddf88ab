/* SPDX-License-Identifier: MIT */
/*
 * parallel.c: a thread's buffer decoded in pieces on every core, for the
 * scheduler (sched.c), by the core (strm.h).
 */
#ifndef MT_DEC_PAR_H
#define MT_DEC_PAR_H

#include "decode/strm.h"

/* A pool of decoding threads for the capture, or NULL in *out when one
 * thread is all there is (one core, --jobs 1): 0 or -ENOMEM.  io and to
 * are the scheduler's: the runs read through io, and their events reach
 * to on the thread that calls dec_par_decode(). */
struct par;
int dec_par_new(struct par **out, struct dec_capture *c,
		const struct strm_io *io, const struct strm_out *to);
void dec_par_free(struct par *p);
/* How many buffers to hand dec_par_decode() at once (1 without a pool). */
unsigned dec_par_group(const struct par *p);

/* A buffer to decode, its bytes ready. */
struct par_buf {
	const struct dec_chunk *k; /* its first chunk */
	const uint8_t *data;
	size_t len;
	uint64_t lost;		/* AUX bytes lost before it */
	uint64_t end_time;	/* when it was read (perf ns), or 0 */
	struct dec_thread *own; /* the thread whose own stream it is, or
				 * NULL (a CPU's) */
	uint32_t pid;		/* whose code it runs first */
};
/*
 * Decode the buffers on the pool, their events handed over on this
 * thread in the order, and with the counts, of the serial decode.  A
 * thread's own buffer of two pieces or more is cut at PSBs into pieces
 * that decode at once.  done and total are for the progress callback.
 * Returns 0, -ENOMEM, -EINTR (progress said stop), the sink's error, or
 * -EAGAIN when not one of the pool's threads could be started (nothing
 * decoded: the caller decodes the buffers itself).
 */
int dec_par_decode(struct par *p, const struct par_buf *bufs, size_t nbufs,
		   uint64_t done, uint64_t total);

#endif
