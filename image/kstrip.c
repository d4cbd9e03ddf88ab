/* SPDX-License-Identifier: MIT */
/*
 * A trace that ran through the kernel, decoded without the kernel's
 * code: the kernel's stretches are taken out of the packets, so that the
 * trace reads as the user-only trace it contains.  A branch into the
 * kernel becomes the TIP.PGD that user-only tracing writes there, the
 * branch back the TIP.PGE, and the kernel's own packets (TNT, TIP, FUP,
 * MODE, PTW) become PAD.  Sizes do not change: a TIP, a TIP.PGD and a
 * TIP.PGE of the same IP compression differ in their opcode only.
 * Timing packets stay, so the time the kernel took is still known.
 *
 * Leaving the kernel takes an IP packet that cannot be compressed
 * against the last IP (a kernel IP and a user IP differ in their upper
 * bits), so the IPs libipt decompresses after a stretch taken out are
 * the hardware's.
 */
#include "image/img_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct strip {
	uint8_t *buf;
	uint64_t last_ip;
	bool kernel; /* tracing in the kernel, as far as the packets say */
};

/* The IP a packet names, updating the last IP as the hardware does. */
static uint64_t full_ip(struct strip *s, const struct pt_packet_ip *p)
{
	switch (p->ipc) {
	case pt_ipc_update_16:
		s->last_ip = (s->last_ip & ~0xffffull) | (p->ip & 0xffff);
		break;
	case pt_ipc_update_32:
		s->last_ip =
			(s->last_ip & ~0xffffffffull) | (p->ip & 0xffffffffull);
		break;
	case pt_ipc_sext_48:
		s->last_ip = (uint64_t)((int64_t)(p->ip << 16) >> 16);
		break;
	case pt_ipc_update_48:
		s->last_ip = (s->last_ip & ~0xffffffffffffull) |
			     (p->ip & 0xffffffffffffull);
		break;
	case pt_ipc_full:
		s->last_ip = p->ip;
		break;
	default: /* suppressed: no IP */
		return 0;
	}
	return s->last_ip;
}

static void pad(struct strip *s, uint64_t off, int size)
{
	memset(s->buf + off, 0, (size_t)size);
}

/* The opcode bits of TIP, TIP.PGE and TIP.PGD (the low five). */
static void retype(struct strip *s, uint64_t off, uint8_t opcode)
{
	s->buf[off] = (uint8_t)((s->buf[off] & 0xe0) | opcode);
}

static void strip_packet(struct strip *s, const struct pt_packet *p,
			 uint64_t off, int size)
{
	uint64_t ip;

	switch (p->type) {
	case ppt_psb:
	case ppt_ovf:
		/* What follows says where tracing is, from scratch. */
		s->last_ip = 0;
		s->kernel = false;
		break;
	case ppt_fup:
	case ppt_tip_pge:
		ip = full_ip(s, &p->payload.ip);
		if (ip ? img_is_kernel_ip(ip) : s->kernel) {
			pad(s, off, size);
			s->kernel = true;
		} else {
			s->kernel = false;
		}
		break;
	case ppt_tip:
		ip = full_ip(s, &p->payload.ip);
		if (s->kernel && ip && !img_is_kernel_ip(ip)) {
			retype(s, off, 0x11); /* TIP.PGE: back in user space */
			s->kernel = false;
		} else if (s->kernel) {
			pad(s, off, size);
		} else if (ip && img_is_kernel_ip(ip)) {
			retype(s, off, 0x01); /* TIP.PGD: into the kernel */
			s->kernel = true;
		}
		break;
	case ppt_tip_pgd:
		full_ip(s, &p->payload.ip);
		if (s->kernel)
			pad(s, off, size);
		s->kernel = false;
		break;
	case ppt_tnt_8:
	case ppt_tnt_64:
	case ppt_mode:
	case ppt_ptw:
	case ppt_exstop:
	case ppt_mwait:
		if (s->kernel)
			pad(s, off, size);
		break;
	default:
		/* Timing, paging and power packets: as they are. */
		break;
	}
}

int img_kernel_strip(const struct img *c, const uint8_t **buf, size_t len,
		     uint8_t **owned)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct strip s = {0};

	*owned = NULL;
	if (!img_kernel_needs_strip(c) || !len)
		return 0;
	s.buf = malloc(len);
	if (!s.buf)
		return -ENOMEM;
	memcpy(s.buf, *buf, len);
	pt_config_init(&cfg);
	cfg.begin = s.buf;
	cfg.end = s.buf + len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d) {
		free(s.buf);
		return -ENOMEM;
	}
	/* A packet that cannot be read ends the stretch to the next PSB,
	 * left as it is: the decoder will say what is wrong with it. */
	while (pt_pkt_sync_forward(d) >= 0) {
		for (;;) {
			struct pt_packet p;
			uint64_t off;
			int size;

			if (pt_pkt_get_offset(d, &off) < 0)
				break;
			size = pt_pkt_next(d, &p, sizeof(p));
			if (size <= 0)
				break;
			strip_packet(&s, &p, off, size);
		}
	}
	pt_pkt_free_decoder(d);
	*buf = s.buf;
	*owned = s.buf;
	return 0;
}
