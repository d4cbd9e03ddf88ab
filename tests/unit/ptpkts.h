/* SPDX-License-Identifier: MIT */
/*
 * What the tests of the packet encoder's callers share (ptpkts.c): the
 * packets of a type in a run of Intel PT bytes, by libipt's decoder.
 */
#ifndef MT_PTPKTS_H
#define MT_PTPKTS_H

#include <intel-pt.h>
#include <stddef.h>
#include <stdint.h>

/* The packets of type in data, from its first PSB on (0: none, or no
 * PSB to begin at). */
unsigned ptpkts_count(const uint8_t *data, size_t len,
		      enum pt_packet_type type);

#endif
