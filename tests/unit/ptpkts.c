/* SPDX-License-Identifier: MIT */
#include "tests/unit/ptpkts.h"

unsigned ptpkts_count(const uint8_t *data, size_t len, enum pt_packet_type type)
{
	struct pt_packet_decoder *d;
	struct pt_config pc;
	struct pt_packet pk;
	unsigned n = 0;

	pt_config_init(&pc);
	pc.begin = (uint8_t *)data;
	pc.end = (uint8_t *)data + len;
	d = pt_pkt_alloc_decoder(&pc);
	if (!d || pt_pkt_sync_forward(d) < 0) {
		pt_pkt_free_decoder(d);
		return 0;
	}
	while (pt_pkt_next(d, &pk, sizeof(pk)) > 0)
		n += pk.type == type;
	pt_pkt_free_decoder(d);
	return n;
}
