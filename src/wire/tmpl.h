/* SPDX-License-Identifier: MIT */
/*
 * The template encoder, inline: the engine builds every frame it sends here (src/nic/net.c),
 * and the calls cost more than a small frame's headers. frame.c's encoders share the parts.
 */
#ifndef GPUNIC_WIRE_TMPL_H
#define GPUNIC_WIRE_TMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpunic/wire.h"
#include "hdr.h"
#include "wire_loc.h"

/* Inline (every encoder): the engine's every frame goes through it. @data_only (a constant):
 * the opcode is a SEND or RDMA WRITE, which carries no header beyond RETH and ImmDt, so the
 * caller need not set the other headers' fields, and the code for them is left out. */
static inline __attribute__((always_inline)) void
encode_ext(const struct gpunic_pkt *pkt, const struct gpunic_opcode_info *info,
	   uint8_t *restrict bth, bool data_only)
{
	uint32_t m = info->mask;

	if (m & GPUNIC_MASK_RETH) {
		put_be64(bth + info->reth_off, pkt->reth_va);
		put_be32(bth + info->reth_off + 8, pkt->reth_rkey);
		put_be32(bth + info->reth_off + 12, pkt->reth_len);
	}
	if (m & GPUNIC_MASK_IMMDT)
		put_be32(bth + info->immdt_off, pkt->imm);
	/* none of the rest on a SEND or WRITE */
	if (data_only ||
	    !(m & (GPUNIC_MASK_AETH | GPUNIC_MASK_ATMETH | GPUNIC_MASK_ATMACK | GPUNIC_MASK_IETH)))
		return;
	if (m & GPUNIC_MASK_AETH) {
		bth[info->aeth_off] = pkt->aeth_syndrome;
		put_be24(bth + info->aeth_off + 1, pkt->aeth_msn);
	}
	if (m & GPUNIC_MASK_ATMETH) {
		put_be64(bth + info->atmeth_off, pkt->atm_va);
		put_be32(bth + info->atmeth_off + 8, pkt->atm_rkey);
		put_be64(bth + info->atmeth_off + 12, pkt->atm_swap_add);
		put_be64(bth + info->atmeth_off + 20, pkt->atm_compare);
	}
	if (m & GPUNIC_MASK_ATMACK)
		put_be64(bth + info->atmack_off, pkt->atmack_orig);
	if (m & GPUNIC_MASK_IETH)
		put_be32(bth + info->ieth_off, pkt->ieth_rkey);
}

/* One's complement of the one's complement sum of ~@csum and @add (16-bit). */
static inline uint16_t csum_add(uint16_t csum, uint16_t add)
{
	uint32_t sum = (uint16_t)~csum + (uint32_t)add;

	sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~(sum + (sum >> 16));
}

/* BTH byte 1 of a frame from @tmpl: the template's migreq and tver, the packet's SE and the
 * pad of a payload of @paylen bytes. */
static inline uint8_t tmpl_bth_flags(const uint8_t *tmpl, bool se, uint32_t paylen)
{
	return (uint8_t)(tmpl[BTH_OFF + BTH_FLAGS] | (se ? BTH_SE_MASK : 0) |
			 gpunic_pad_bytes(paylen) << BTH_PAD_SHIFT);
}

/* The frame's headers up to the PSN word from the template @tmpl, for a frame of IPv4 total
 * length @totlen whose BTH starts with @opcode and @flags: the template with its lengths set
 * and its IPv4 checksum updated to match. */
static inline __attribute__((always_inline)) void
tmpl_head(const uint8_t *tmpl, uint16_t totlen, uint8_t opcode, uint8_t flags,
	  uint8_t *restrict head)
{
	memcpy(head, tmpl, GPUNIC_FRAME_TMPL_BYTES);
	put_be16(head + IP4_OFF + IP4_TOTLEN, totlen);
	put_be16(head + IP4_OFF + IP4_CSUM, csum_add(get_be16(tmpl + IP4_OFF + IP4_CSUM), totlen));
	put_be16(head + UDP_OFF + UDP_LEN, (uint16_t)(totlen - GPUNIC_IP4_BYTES));
	head[BTH_OFF + BTH_OPCODE] = opcode;
	head[BTH_OFF + BTH_FLAGS] = flags;
}

/* The rest of the frame behind its head, all but its ICRC: the PSN word (the template @tmpl's
 * resv7), the extension headers, payload and pad (the frame shares no byte with the template,
 * the packet or its payload). @data_only as for encode_ext. Return: the ICRC's offset. */
static inline __attribute__((always_inline)) size_t
encode_body(const uint8_t *tmpl, const struct gpunic_pkt *pkt,
	    const struct gpunic_opcode_info *info, uint8_t *restrict buf, bool data_only)
{
	uint32_t paylen = pkt->paylen;
	uint8_t pad = (uint8_t)gpunic_pad_bytes(paylen);
	uint8_t *restrict bth = buf + BTH_OFF;
	size_t pay_off = BTH_OFF + info->hdr_bytes;

	put_be32(bth + BTH_APSN, (get_be32(tmpl + BTH_OFF + BTH_APSN) & BTH_RESV7_MASK) |
					 (pkt->psn & GPUNIC_PSN_MASK) |
					 (pkt->ack_req ? BTH_ACK_MASK : 0));
	encode_ext(pkt, info, bth, data_only);
	wire_copy_payload(buf + pay_off, pkt->payload, paylen);
	if (pad)
		memset(buf + pay_off + paylen, 0, pad);
	return pay_off + paylen + pad;
}

/* The key of a frame's head (wire_loc.h): what decides its headers up to the PSN word. */
static inline uint64_t wire_tx_key(uint8_t opcode, uint32_t paylen, bool se)
{
	return (uint64_t)paylen << 16 | (uint32_t)opcode << 8 | (uint32_t)se << 1 | 1u;
}

/* The head for a frame of @opcode, @paylen and @se that neither remembered head holds, built
 * and remembered; NULL when no frame can carry it (an unknown opcode, a payload it may not
 * have, too long: frame.c). The fields, not the packet: its address then stays in the caller,
 * whose compiler keeps the packet in registers. */
const struct wire_tx_head *wire_tx_head_miss(struct wire_tx_tmpl *t, uint8_t opcode,
					     uint32_t paylen, bool se) WIRE_HIDDEN;

/*
 * The remembered head of @pkt's frame from @t, with the CRC of its masked ICRC prefix, the
 * opcode's entry and the frame's size: one compare in the common case, where the opcode table
 * and the frame's size are not looked at again. NULL when no frame can carry @pkt.
 */
static inline __attribute__((always_inline)) const struct wire_tx_head *
wire_tx_head(struct wire_tx_tmpl *t, const struct gpunic_pkt *pkt)
{
	uint64_t key = wire_tx_key(pkt->opcode, pkt->paylen, pkt->se);

	if (t->heads[0].key == key)
		return &t->heads[0];
	if (t->heads[1].key == key)
		return &t->heads[1];
	return wire_tx_head_miss(t, pkt->opcode, pkt->paylen, pkt->se);
}

/* Frames up to this size are built in a stack buffer and copied to the link (wire_encode_tmpl). */
#define WIRE_STAGE_BYTES 128u

/*
 * gpunic_frame_encode_tmpl() from @pkt's head @h (wire_tx_head) into @buf, which holds
 * h->size bytes; @data_only as for encode_ext. Return: h->size.
 */
static inline __attribute__((always_inline)) size_t
wire_encode_tmpl(const struct wire_tx_tmpl *t, const struct wire_tx_head *h,
		 const struct gpunic_pkt *pkt, uint8_t *buf, bool data_only)
{
	size_t done = IP4_OFF + WIRE_ICRC_PREFIX_BYTES, icrc_off, n = h->size;
	uint8_t stage[WIRE_STAGE_BYTES] __attribute__((aligned(64)));

	if (n > WIRE_STAGE_BYTES || n <= 64) {
		memcpy(buf, h->bytes, GPUNIC_FRAME_TMPL_BYTES);
		icrc_off = encode_body(t->hdr, pkt, h->info, buf, data_only);
		put_le32(buf + icrc_off, wire_icrc_more(h->crc, buf + done, icrc_off - done));
		return n;
	}
	/* A small frame (65-128 bytes: a 32-byte SEND or WRITE_WITH_IMM) is built and summed in
	 * our own lines, then copied out in two 64-byte moves. Built in place, the ICRC read the
	 * frame back from the link's buffer, a shm slot whose lines the other core holds, and
	 * waited for the stores before it to land there: 130-150 ns a frame on the H200 host
	 * (docs/BENCHMARKS.md, "Where a round trip's time goes"), where the copy costs a few
	 * instructions. */
	memcpy(stage, h->bytes, GPUNIC_FRAME_TMPL_BYTES);
	icrc_off = encode_body(t->hdr, pkt, h->info, stage, data_only);
	put_le32(stage + icrc_off, wire_icrc_more(h->crc, stage + done, icrc_off - done));
	memcpy(buf, stage, 64);
	memcpy(buf + n - 64, stage + n - 64, 64);
	return n;
}

#endif /* GPUNIC_WIRE_TMPL_H */
