/* SPDX-License-Identifier: MIT */
/*
 * The lean decoder, inline: the engine's front door (src/nic/recv.c) runs it on every frame,
 * and a call there cost more than the checks of a small frame. What both decoders share lives
 * here too, so that wire_decode (frame.c) keeps using the one copy.
 */
#ifndef GPUNIC_WIRE_LEAN_H
#define GPUNIC_WIRE_LEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpunic/wire.h"
#include "hdr.h"
#include "wire_loc.h"

/* The extension headers a SEND or WRITE carries (RETH, ImmDt), where the opcode has them. */
static inline __attribute__((always_inline)) void
decode_reth_immdt(struct gpunic_pkt *pkt, const uint8_t *bth, const struct gpunic_opcode_info *info,
		  uint32_t m)
{
	if (m & GPUNIC_MASK_RETH) {
		pkt->reth_va = get_be64(bth + info->reth_off);
		pkt->reth_rkey = get_be32(bth + info->reth_off + 8);
		pkt->reth_len = get_be32(bth + info->reth_off + 12);
	}
	if (m & GPUNIC_MASK_IMMDT)
		pkt->imm = get_be32(bth + info->immdt_off);
}

/* Extension headers the lean decoder leaves to the general one (atomics, invalidate). */
#define LEAN_EXT_OTHER (GPUNIC_MASK_ATMETH | GPUNIC_MASK_ATMACK | GPUNIC_MASK_IETH)

/*
 * wire_decode() for the engine's common frame: true when wire_decode would succeed, with only
 * the fields the engine reads written (addresses, port, opcode, mask, se, ack_req, qpn, psn,
 * payload, paylen, and RETH, IMMDT and AETH where the opcode carries them; the rest are left
 * as they were). False for every other frame, bad or merely uncommon (an atomic, a MAC to
 * check): the caller decodes it again with wire_decode, which says why.
 *
 * Every one of wire_decode()'s checks, on headers read once into locals (the frame may lie in
 * memory a peer writes): no zeroing of absent headers, no fields kept for a capture's sake.
 * One test per rule; a false answer says nothing about why, the general decoder tells.
 */
static inline __attribute__((always_inline)) bool
wire_decode_lean(const uint8_t *frame, size_t len, unsigned flags, struct gpunic_pkt *pkt,
		 struct wire_icrc_memo *memo)
{
	const uint8_t *ip = frame + IP4_OFF, *udp = frame + UDP_OFF, *bth = frame + BTH_OFF;
	const struct gpunic_opcode_info *info;
	uint32_t totlen, udpw, udplen, ib_bytes, avail, apsn, m, bth0, pad;
	size_t icrc_off;

	if (len < BTH_OFF + GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES)
		return false;
	/* one word each: EtherType with version and IHL (IPv4 without options), then the
	 * fragment bits with the protocol (UDP, not a fragment); the TTL between goes unread */
	if (get_be32(frame + ETH_TYPE) >> 8 != (GPUNIC_ETHERTYPE_IPV4 << 8 | IP4_VER_IHL_RFC791) ||
	    (get_be32(ip + IP4_FRAG) & ((IP4_FRAG_MF | IP4_FRAG_OFF_MASK) << 16 | 0xFFu)) !=
		    IP4_PROTO_UDP)
		return false;
	totlen = get_be16(ip + IP4_TOTLEN);
	/* the destination port and the length, side by side, in one word */
	udpw = get_be32(udp + UDP_DPORT);
	udplen = udpw & 0xFFFFu;
	/* the UDP length agreeing with the IP total length bounds the frame with it */
	if (IP4_OFF + (size_t)totlen > len || udplen + GPUNIC_IP4_BYTES != totlen ||
	    udplen < GPUNIC_UDP_BYTES + GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES)
		return false;
	if (!(flags & GPUNIC_DECODE_SKIP_IP_CSUM) && gpunic_ip4_checksum(ip, GPUNIC_IP4_BYTES))
		return false;
	pkt->dst_port = (uint16_t)(udpw >> 16);
	if (!(flags & GPUNIC_DECODE_ANY_PORT) && pkt->dst_port != GPUNIC_ROCE_UDP_PORT)
		return false;
	pkt->src_ip = get_be32(ip + IP4_SRC);
	pkt->dst_ip = get_be32(ip + IP4_DST);

	/* the BTH's first word read once: opcode, flags (SE, M, pad, TVer), P_Key */
	bth0 = get_be32(bth + BTH_OPCODE);
	pkt->opcode = (uint8_t)(bth0 >> 24);
	info = wire_opcode_info(pkt->opcode);
	if (!info)
		return false;
	m = info->mask;
	ib_bytes = udplen - GPUNIC_UDP_BYTES;
	pad = (bth0 >> (16 + BTH_PAD_SHIFT)) & (BTH_PAD_MASK >> BTH_PAD_SHIFT);
	/* TVer 0 and a valid P_Key (wire_pkey_valid) in one test */
	if ((m & LEAN_EXT_OTHER) ||
	    ib_bytes < (uint32_t)info->hdr_bytes + GPUNIC_ICRC_BYTES ||
	    (bth0 & (BTH_TVER_MASK << 16 | 0x7FFFu)) != 0x7FFFu)
		return false;
	avail = ib_bytes - info->hdr_bytes - GPUNIC_ICRC_BYTES;
	if (pad > avail || (pad && !(m & GPUNIC_MASK_LAST)) ||
	    (avail && !(m & GPUNIC_MASK_PAYLOAD)))
		return false;
	icrc_off = BTH_OFF + ib_bytes - GPUNIC_ICRC_BYTES;
	if (!(flags & GPUNIC_DECODE_SKIP_ICRC) &&
	    wire_icrc(frame, icrc_off, memo) != get_le32(frame + icrc_off))
		return false;

	pkt->mask = m;
	pkt->se = (bth0 >> 16) & BTH_SE_MASK;
	pkt->qpn = get_be32(bth + BTH_RESV8A) & GPUNIC_PSN_MASK;	/* 24 bits, as a PSN */
	apsn = get_be32(bth + BTH_APSN);
	pkt->ack_req = apsn & BTH_ACK_MASK;
	pkt->psn = apsn & GPUNIC_PSN_MASK;
	decode_reth_immdt(pkt, bth, info, m);
	if (m & GPUNIC_MASK_AETH) {
		pkt->aeth_syndrome = bth[info->aeth_off];
		pkt->aeth_msn = get_be24(bth + info->aeth_off + 1);
	}
	pkt->payload = bth + info->hdr_bytes;
	pkt->paylen = avail - pad;
	return true;
}

#endif /* GPUNIC_WIRE_LEAN_H */
