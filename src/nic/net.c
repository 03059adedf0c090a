// SPDX-License-Identifier: MIT
/*
 * Frames out (rxe_net.c's role): every packet a QP sends gets its Ethernet, IPv4 and UDP headers
 * from the QP's address vector and the NIC's own address, then the wire codec builds it, ICRC
 * included. Also the ARP responder that shared-wire links need (docs/WIRE.md 6.2).
 */
#include <errno.h>
#include <string.h>

#include "gpunic/log.h"
#include "nic_loc.h"
#include "xmit.h"

#define NIC_TTL 64
#define IP_FLAG_DF 0x4000u
#define DEFAULT_PKEY 0xFFFFu

/* The headers every frame of @qp shares (gpunic_frame_template), built at its first frame
 * after a modify: the address vector, ports and QPN do not change in between. */
void nic_xmit_template(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;
	struct gpunic_pkt p;

	memset(&p, 0, sizeof(p));
	memcpy(p.dst_mac, qp->av.mac, 6);
	memcpy(p.src_mac, nic->attr.mac, 6);
	p.ttl = NIC_TTL;
	/* ID 0 with DF, as a kernel UDP socket with PMTU discovery sends (docs/WIRE.md 1.4) */
	p.ip_frag = IP_FLAG_DF;
	p.src_ip = nic->attr.ip;
	p.dst_ip = qp->av.ip;
	p.src_port = qp->req.src_port;
	p.dst_port = qp->av.udp_port;
	p.pkey = DEFAULT_PKEY;
	p.qpn = qp->attr.dest_qp_num;
	gpunic_frame_template(&p, qp->tx_tmpl.hdr);
	wire_tx_tmpl_reset(&qp->tx_tmpl);
	qp->tx_tmpl_ok = true;
}

int nic_xmit_unbuilt(uint8_t opcode, uint32_t paylen, int err)
{
	gpunic_err_ratelimited("cannot build opcode 0x%x paylen %u: %s", opcode, paylen,
			       strerror(err));
	return 0;
}

int nic_xmit_lost(int err)
{
	gpunic_warn_ratelimited("link send: %s", strerror(err));
	return 0;
}

int nic_xmit(struct nic_qp *qp, struct gpunic_pkt *pkt)
{
	return nic_xmit_inline(qp, pkt);
}

/* ARP for IPv4 over Ethernet (RFC 826) */
enum {
	ARP_BYTES = 28,
	ARP_OPER = 6,
	ARP_SHA = 8,
	ARP_SPA = 14,
	ARP_THA = 18,
	ARP_TPA = 24,
	ARP_REQUEST = 1,
	ARP_REPLY = 2,
};

static const uint8_t arp_fixed[6] = { 0x00, 0x01, 0x08, 0x00, 6, 4 };	/* Ethernet, IPv4 */

static uint32_t rd_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

bool nic_arp_input(struct gpunic_nic *nic, const uint8_t *frame, size_t len)
{
	const uint8_t *arp = frame + GPUNIC_ETH_BYTES;
	uint8_t *out = nic->txbuf, *oarp = out + GPUNIC_ETH_BYTES;

	if (len < GPUNIC_ETH_BYTES ||
	    (frame[12] << 8 | frame[13]) != GPUNIC_ETHERTYPE_ARP)
		return false;
	if (len < GPUNIC_ETH_BYTES + ARP_BYTES || memcmp(arp, arp_fixed, sizeof(arp_fixed)) ||
	    (arp[ARP_OPER] << 8 | arp[ARP_OPER + 1]) != ARP_REQUEST ||
	    rd_be32(arp + ARP_TPA) != nic->attr.ip)
		return true;	/* ARP, but nothing for us to answer */

	memset(out, 0, GPUNIC_ETH_MIN_FRAME_BYTES);
	memcpy(out, arp + ARP_SHA, 6);
	memcpy(out + 6, nic->attr.mac, 6);
	out[12] = GPUNIC_ETHERTYPE_ARP >> 8;
	out[13] = GPUNIC_ETHERTYPE_ARP & 0xFF;
	memcpy(oarp, arp_fixed, sizeof(arp_fixed));
	oarp[ARP_OPER] = 0;
	oarp[ARP_OPER + 1] = ARP_REPLY;
	memcpy(oarp + ARP_SHA, nic->attr.mac, 6);
	wr_be32(oarp + ARP_SPA, nic->attr.ip);
	memcpy(oarp + ARP_THA, arp + ARP_SHA, 6);
	memcpy(oarp + ARP_TPA, arp + ARP_SPA, 4);
	if (!gpunic_link_send(nic->link, out, GPUNIC_ETH_MIN_FRAME_BYTES)) {
		nic_capture_tap(nic, out, GPUNIC_ETH_MIN_FRAME_BYTES);
		nic->cnt.arp_replies++;
		nic->cnt.tx_frames++;
		nic->cnt.tx_bytes += GPUNIC_ETH_MIN_FRAME_BYTES;
	}
	return true;
}
