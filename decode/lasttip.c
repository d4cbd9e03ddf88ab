/* SPDX-License-Identifier: MIT */
/*
 * The destination of the branch right before an overflow, read from the
 * packets themselves.
 *
 * libipt's block decoder reads the TIP of an indirect branch when the
 * block that ends in the branch is decoded, and moves to its target; but
 * when the next packet is an OVF it reports the overflow before any block
 * there, and the target it read is nowhere in its interface.  The branch
 * did run (its TIP is in the trace), so its destination is wanted: a
 * function entered by a jump through a register right before the packets
 * were lost would otherwise be missing from the call tree.
 */
#include "decode/decode.h"

#include <intel-pt.h>

/* The IP packet's address, from the last one (Intel SDM 33.4.2.2). */
static uint64_t last_ip_update(uint64_t last, const struct pt_packet_ip *p)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~UINT64_C(0xffff)) | (p->ip & 0xffff);
	case pt_ipc_update_32:
		return (last & ~UINT64_C(0xffffffff)) | (p->ip & 0xffffffff);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	case pt_ipc_update_48:
		return (last & ~UINT64_C(0xffffffffffff)) |
		       (p->ip & UINT64_C(0xffffffffffff));
	case pt_ipc_full:
		return p->ip;
	default:
		return last;
	}
}

enum scan { SCAN_FOUND, SCAN_NONE, SCAN_NO_OVF };

/*
 * From the PSB at from up to offset end: the address of the TIP that is
 * the last control-flow packet before the last OVF found (timing and
 * other packets may lie between).
 */
static enum scan scan(const struct pt_config *cfg, uint64_t from, uint64_t end,
		      uint64_t *ip)
{
	struct pt_packet_decoder *d = pt_pkt_alloc_decoder(cfg);
	uint64_t last = 0, tip = 0, found = 0, off;
	bool tip_last = false;
	enum scan r = SCAN_NO_OVF;

	if (!d)
		return SCAN_NONE;
	if (pt_pkt_sync_set(d, from) < 0)
		goto out;
	while (pt_pkt_get_offset(d, &off) >= 0 && off <= end) {
		struct pt_packet p;

		if (pt_pkt_next(d, &p, sizeof(p)) < 0)
			break;
		switch (p.type) {
		case ppt_psb:
			last = 0;
			tip_last = false;
			break;
		case ppt_tip:
			tip_last = p.payload.ip.ipc != pt_ipc_suppressed;
			last = last_ip_update(last, &p.payload.ip);
			tip = last;
			break;
		case ppt_fup:
		case ppt_tip_pge:
		case ppt_tip_pgd:
			last = last_ip_update(last, &p.payload.ip);
			tip_last = false;
			break;
		case ppt_tnt_8:
		case ppt_tnt_64:
			tip_last = false;
			break;
		case ppt_ovf:
			r = tip_last ? SCAN_FOUND : SCAN_NONE;
			found = tip;
			tip_last = false;
			break;
		default:
			break;
		}
	}
out:
	pt_pkt_free_decoder(d);
	if (r == SCAN_FOUND)
		*ip = found;
	return r;
}

bool dec_tip_before_overflow(const uint8_t *buf, size_t len, uint64_t end,
			     uint64_t *ip)
{
	struct pt_config config, *cfg = &config;
	uint64_t at = end;

	pt_config_init(cfg);
	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + len;
	/* The PSB before the overflow: a PSB may follow the OVF before
	 * libipt's position, so a PSB or two further back is tried. */
	for (int tries = 0; tries < 3 && at > 0; tries++) {
		uint64_t psb;

		if (!dec_find_psb_before(buf, len, at - 1, &psb))
			return false;
		switch (scan(cfg, psb, end, ip)) {
		case SCAN_FOUND:
			return true;
		case SCAN_NONE:
			return false;
		case SCAN_NO_OVF:
			at = psb;
			break;
		}
	}
	return false;
}
