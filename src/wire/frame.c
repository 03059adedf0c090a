// SPDX-License-Identifier: MIT
/*
 * Ethernet / IPv4 / UDP / IB transport framing: decode (the network-facing parser) and encode.
 *
 * The decoder checks each length before the bytes it covers are read, in wire order, and stops at
 * the first failure with its own reason (the rxe_recv.c order: lengths, then header fields, then
 * the ICRC). The ICRC is located from the IP total length, so Ethernet minimum-frame padding
 * after it is ignored (docs/WIRE.md 1.2).
 */
#include <string.h>

#include "gpunic/wire.h"
#include "hdr.h"
#include "lean.h"
#include "tmpl.h"
#include "wire_loc.h"

/* What the decoder has learnt about a frame's extent so far. */
struct frame_view {
	const uint8_t *frame;
	size_t len;                               /* bytes in the buffer */
	uint32_t ib_bytes;                        /* BTH start to ICRC end (UDP length - 8) */
	const struct gpunic_opcode_info *info;
};

/* ---------------------------------------------------------------- checksum */

/*
 * RFC 791/1071: one's complement of the one's complement sum of the 16-bit words. Summed as
 * 32-bit big-endian words into 64 bits and folded at the end (RFC 1071 2(B): 2^16 = 1 in one's
 * complement, so the carries fold back in): five loads for an IPv4 header instead of ten.
 */
uint16_t gpunic_ip4_checksum(const uint8_t *hdr, size_t len)
{
	uint64_t sum = 0;
	size_t i = 0;

	for (; i + 4 <= len; i += 4)
		sum += get_be32(hdr + i);
	if (i + 2 <= len) {
		sum += get_be16(hdr + i);
		i += 2;
	}
	if (i < len)
		sum += (uint32_t)hdr[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* ---------------------------------------------------------------- decode */

static enum gpunic_wire_err decode_eth(const struct frame_view *v, struct gpunic_pkt *pkt)
{
	if (v->len < GPUNIC_ETH_BYTES)
		return GPUNIC_WIRE_ETH_TRUNCATED;
	memcpy(pkt->dst_mac, v->frame + ETH_DST, 6);
	memcpy(pkt->src_mac, v->frame + ETH_SRC, 6);
	if (get_be16(v->frame + ETH_TYPE) != GPUNIC_ETHERTYPE_IPV4)
		return GPUNIC_WIRE_NOT_IPV4;
	return GPUNIC_WIRE_OK;
}

static void read_ip4_fields(const uint8_t *ip, struct gpunic_pkt *pkt)
{
	pkt->tos = ip[IP4_TOS];
	pkt->ttl = ip[IP4_TTL];
	pkt->ip_id = get_be16(ip + IP4_ID);
	pkt->ip_frag = get_be16(ip + IP4_FRAG);
	pkt->src_ip = get_be32(ip + IP4_SRC);
	pkt->dst_ip = get_be32(ip + IP4_DST);
}

/* IPv4 header, total length against the buffer, fragments, checksum, protocol. */
static enum gpunic_wire_err decode_ip4(const struct frame_view *v, unsigned flags,
				       struct gpunic_pkt *pkt)
{
	const uint8_t *ip = v->frame + IP4_OFF;
	uint16_t totlen;

	if (v->len < IP4_OFF + GPUNIC_IP4_BYTES)
		return GPUNIC_WIRE_IP_TRUNCATED;
	if (ip[IP4_VER_IHL] >> 4 != 4)
		return GPUNIC_WIRE_IP_VERSION;
	/* RoCEv2 senders use no IP options, and the ICRC mask assumes a 20-byte header. */
	if (ip[IP4_VER_IHL] != IP4_VER_IHL_RFC791)
		return GPUNIC_WIRE_IP_OPTIONS;
	read_ip4_fields(ip, pkt);
	totlen = get_be16(ip + IP4_TOTLEN);
	if (totlen < GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES || IP4_OFF + (size_t)totlen > v->len)
		return GPUNIC_WIRE_IP_LENGTH;
	pkt->frame_bytes = IP4_OFF + totlen;
	if (pkt->ip_frag & (IP4_FRAG_MF | IP4_FRAG_OFF_MASK))
		return GPUNIC_WIRE_IP_FRAGMENT;
	if (!(flags & GPUNIC_DECODE_SKIP_IP_CSUM) && gpunic_ip4_checksum(ip, GPUNIC_IP4_BYTES))
		return GPUNIC_WIRE_IP_CHECKSUM;
	if (ip[IP4_PROTO] != IP4_PROTO_UDP)
		return GPUNIC_WIRE_NOT_UDP;
	return GPUNIC_WIRE_OK;
}

/* UDP: the IP total length already bounds the frame; the UDP length must agree with it. */
static enum gpunic_wire_err decode_udp(struct frame_view *v, unsigned flags,
				       struct gpunic_pkt *pkt)
{
	const uint8_t *udp = v->frame + UDP_OFF;
	uint16_t udplen = get_be16(udp + UDP_LEN);

	pkt->src_port = get_be16(udp + UDP_SPORT);
	pkt->dst_port = get_be16(udp + UDP_DPORT);
	pkt->udp_csum = get_be16(udp + UDP_CSUM);
	if ((uint32_t)udplen + IP4_OFF + GPUNIC_IP4_BYTES != pkt->frame_bytes)
		return GPUNIC_WIRE_UDP_LENGTH;
	if (!(flags & GPUNIC_DECODE_ANY_PORT) && pkt->dst_port != GPUNIC_ROCE_UDP_PORT)
		return GPUNIC_WIRE_UDP_PORT;
	v->ib_bytes = udplen - GPUNIC_UDP_BYTES;
	return GPUNIC_WIRE_OK;
}

static void read_bth_fields(const uint8_t *bth, struct gpunic_pkt *pkt)
{
	pkt->opcode = bth_opcode(bth);
	pkt->se = bth_se(bth);
	pkt->migreq = bth_migreq(bth);
	pkt->pad = bth_pad(bth);
	pkt->tver = bth_tver(bth);
	pkt->pkey = bth_pkey(bth);
	pkt->resv8a = bth[BTH_RESV8A];
	pkt->qpn = get_be32(bth + BTH_RESV8A) & GPUNIC_PSN_MASK;	/* 24 bits, as a PSN */
	pkt->ack_req = bth_ack(bth);
	pkt->resv7 = bth_resv7(bth);
	pkt->psn = bth_psn(bth);
}

/* BTH and the opcode's own header length (rxe_recv.c: BTH size first, then the table's). */
static enum gpunic_wire_err decode_bth(struct frame_view *v, struct gpunic_pkt *pkt)
{
	if (v->ib_bytes < GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES)
		return GPUNIC_WIRE_BTH_TRUNCATED;
	read_bth_fields(v->frame + BTH_OFF, pkt);
	v->info = wire_opcode_info(pkt->opcode);
	if (!v->info)
		return GPUNIC_WIRE_OPCODE_UNKNOWN;
	pkt->mask = v->info->mask;
	if (v->ib_bytes < (uint32_t)v->info->hdr_bytes + GPUNIC_ICRC_BYTES)
		return GPUNIC_WIRE_HDR_TRUNCATED;
	if (pkt->tver != 0)
		return GPUNIC_WIRE_TVER;
	if (!wire_pkey_valid(pkt->pkey))
		return GPUNIC_WIRE_PKEY;
	return GPUNIC_WIRE_OK;
}

/*
 * Extension headers, each at the offset the table gives; decode_bth() checked they fit. A
 * header the opcode does not carry reads as zero (wire_decode clears nothing beforehand).
 */
static void decode_ext(const uint8_t *bth, const struct gpunic_opcode_info *info,
		       struct gpunic_pkt *pkt)
{
	uint32_t m = info->mask;

	pkt->reth_va = 0;
	pkt->reth_rkey = 0;
	pkt->reth_len = 0;
	pkt->aeth_syndrome = 0;
	pkt->aeth_msn = 0;
	pkt->imm = 0;
	pkt->atm_va = 0;
	pkt->atm_rkey = 0;
	pkt->atm_swap_add = 0;
	pkt->atm_compare = 0;
	pkt->atmack_orig = 0;
	pkt->ieth_rkey = 0;
	decode_reth_immdt(pkt, bth, info, m);
	/* none of the rest on a SEND or WRITE */
	if (!(m & (GPUNIC_MASK_AETH | GPUNIC_MASK_ATMETH | GPUNIC_MASK_ATMACK | GPUNIC_MASK_IETH)))
		return;
	if (m & GPUNIC_MASK_AETH) {
		pkt->aeth_syndrome = bth[info->aeth_off];
		pkt->aeth_msn = get_be24(bth + info->aeth_off + 1);
	}
	if (m & GPUNIC_MASK_ATMETH) {
		pkt->atm_va = get_be64(bth + info->atmeth_off);
		pkt->atm_rkey = get_be32(bth + info->atmeth_off + 8);
		pkt->atm_swap_add = get_be64(bth + info->atmeth_off + 12);
		pkt->atm_compare = get_be64(bth + info->atmeth_off + 20);
	}
	if (m & GPUNIC_MASK_ATMACK)
		pkt->atmack_orig = get_be64(bth + info->atmack_off);
	if (m & GPUNIC_MASK_IETH)
		pkt->ieth_rkey = get_be32(bth + info->ieth_off);
}

/*
 * Payload and pad: pad fits inside the bytes after the headers and appears only on packets that
 * end a message (FIRST/MIDDLE carry exactly PMTU bytes: docs/WIRE.md 5.1); opcodes without
 * payload carry nothing at all.
 */
static enum gpunic_wire_err decode_payload(const struct frame_view *v, struct gpunic_pkt *pkt)
{
	uint32_t avail = v->ib_bytes - v->info->hdr_bytes - GPUNIC_ICRC_BYTES;

	if (pkt->pad > avail || (pkt->pad && !(v->info->mask & GPUNIC_MASK_LAST)))
		return GPUNIC_WIRE_PAD;
	if (avail && !(v->info->mask & GPUNIC_MASK_PAYLOAD))
		return GPUNIC_WIRE_PAYLOAD_UNEXPECTED;
	pkt->payload = v->frame + BTH_OFF + v->info->hdr_bytes;
	pkt->paylen = avail - pkt->pad;
	return GPUNIC_WIRE_OK;
}

/* Last check, so that a corrupted but well-formed packet is reported as exactly that. */
static enum gpunic_wire_err decode_icrc(const struct frame_view *v, unsigned flags,
					struct gpunic_pkt *pkt, struct wire_icrc_memo *memo)
{
	size_t icrc_off = BTH_OFF + v->ib_bytes - GPUNIC_ICRC_BYTES;

	pkt->icrc = get_le32(v->frame + icrc_off);
	pkt->icrc_calc = 0;
	pkt->icrc_ok = false;
	if (flags & GPUNIC_DECODE_SKIP_ICRC)
		return GPUNIC_WIRE_OK;
	pkt->icrc_calc = wire_icrc(v->frame, icrc_off, memo);
	pkt->icrc_ok = pkt->icrc == pkt->icrc_calc;
	return pkt->icrc_ok ? GPUNIC_WIRE_OK : GPUNIC_WIRE_ICRC;
}

/*
 * With GPUNIC_DECODE_SKIP_ICRC, pkt->icrc holds the wire value, icrc_calc stays 0 and icrc_ok
 * false: nothing was verified.
 */
enum gpunic_wire_err wire_decode(const uint8_t *frame, size_t len, unsigned flags,
				 struct gpunic_pkt *pkt, struct wire_icrc_memo *memo)
{
	struct frame_view v = { .frame = frame, .len = len };
	enum gpunic_wire_err err;

	err = decode_eth(&v, pkt);
	if (err)
		return err;
	err = decode_ip4(&v, flags, pkt);
	if (err)
		return err;
	err = decode_udp(&v, flags, pkt);
	if (err)
		return err;
	err = decode_bth(&v, pkt);
	if (err)
		return err;
	decode_ext(frame + BTH_OFF, v.info, pkt);
	err = decode_payload(&v, pkt);
	if (err)
		return err;
	return decode_icrc(&v, flags, pkt, memo);
}

/* The public form: a failure leaves every field it did not reach at zero. */
enum gpunic_wire_err gpunic_frame_decode(const uint8_t *frame, size_t len, unsigned flags,
					 struct gpunic_pkt *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	return wire_decode(frame, len, flags, pkt, NULL);
}

enum gpunic_wire_err gpunic_pkt_check_qp_type(const struct gpunic_pkt *pkt,
					      enum gpunic_qp_type type)
{
	return gpunic_opcode_legal(pkt->opcode, type) ? GPUNIC_WIRE_OK : GPUNIC_WIRE_OPCODE_QP_TYPE;
}

/* ---------------------------------------------------------------- encode */

size_t gpunic_frame_size(uint8_t opcode, uint32_t paylen)
{
	const struct gpunic_opcode_info *info = wire_opcode_info(opcode);

	return info ? wire_frame_size(info, paylen) : 0;
}

static void encode_eth(const struct gpunic_pkt *pkt, uint8_t *eth)
{
	memcpy(eth + ETH_DST, pkt->dst_mac, 6);
	memcpy(eth + ETH_SRC, pkt->src_mac, 6);
	put_be16(eth + ETH_TYPE, GPUNIC_ETHERTYPE_IPV4);
}

static void encode_ip4(const struct gpunic_pkt *pkt, uint16_t totlen, uint8_t *ip)
{
	ip[IP4_VER_IHL] = IP4_VER_IHL_RFC791;
	ip[IP4_TOS] = pkt->tos;
	put_be16(ip + IP4_TOTLEN, totlen);
	put_be16(ip + IP4_ID, pkt->ip_id);
	put_be16(ip + IP4_FRAG, pkt->ip_frag);
	ip[IP4_TTL] = pkt->ttl;
	ip[IP4_PROTO] = IP4_PROTO_UDP;
	put_be16(ip + IP4_CSUM, 0);
	put_be32(ip + IP4_SRC, pkt->src_ip);
	put_be32(ip + IP4_DST, pkt->dst_ip);
	put_be16(ip + IP4_CSUM, gpunic_ip4_checksum(ip, GPUNIC_IP4_BYTES));
}

static void encode_udp(const struct gpunic_pkt *pkt, uint16_t udplen, uint8_t *udp)
{
	put_be16(udp + UDP_SPORT, pkt->src_port);
	put_be16(udp + UDP_DPORT, pkt->dst_port);
	put_be16(udp + UDP_LEN, udplen);
	put_be16(udp + UDP_CSUM, pkt->udp_csum);
}

static void encode_bth(const struct gpunic_pkt *pkt, uint8_t pad, uint8_t *bth)
{
	uint32_t apsn = (pkt->psn & GPUNIC_PSN_MASK) |
			((uint32_t)pkt->resv7 << BTH_RESV7_SHIFT & BTH_RESV7_MASK) |
			(pkt->ack_req ? BTH_ACK_MASK : 0);

	bth[BTH_OPCODE] = pkt->opcode;
	bth[BTH_FLAGS] = (uint8_t)((pkt->se ? BTH_SE_MASK : 0) | (pkt->migreq ? BTH_MIG_MASK : 0) |
				   pad << BTH_PAD_SHIFT | (pkt->tver & BTH_TVER_MASK));
	put_be16(bth + BTH_PKEY, pkt->pkey);
	bth[BTH_RESV8A] = pkt->resv8a;
	put_be24(bth + BTH_QPN, pkt->qpn & GPUNIC_PSN_MASK);
	put_be32(bth + BTH_APSN, apsn);
}

/* Payload, zero pad (docs/WIRE.md 5.1), then the ICRC over everything before it. */
static inline __attribute__((always_inline)) void
encode_tail(const struct gpunic_pkt *pkt, uint8_t pad, size_t pay_off, uint8_t *buf,
	    struct wire_icrc_memo *memo)
{
	size_t icrc_off = pay_off + pkt->paylen + pad;

	if (pkt->paylen)
		memcpy(buf + pay_off, pkt->payload, pkt->paylen);
	if (pad)
		memset(buf + pay_off + pkt->paylen, 0, pad);
	put_le32(buf + icrc_off, wire_icrc(buf, icrc_off, memo));
}

size_t gpunic_frame_encode(const struct gpunic_pkt *pkt, uint8_t *buf, size_t cap)
{
	const struct gpunic_opcode_info *info = wire_opcode_info(pkt->opcode);
	size_t size = info ? wire_frame_size(info, pkt->paylen) : 0;
	uint8_t pad = (uint8_t)gpunic_pad_bytes(pkt->paylen);
	uint16_t totlen;

	if (!size || size > cap || (pkt->paylen && !pkt->payload))
		return 0;
	totlen = (uint16_t)(size - GPUNIC_ETH_BYTES);
	encode_eth(pkt, buf + ETH_OFF);
	encode_ip4(pkt, totlen, buf + IP4_OFF);
	encode_udp(pkt, (uint16_t)(totlen - GPUNIC_IP4_BYTES), buf + UDP_OFF);
	encode_bth(pkt, pad, buf + BTH_OFF);
	encode_ext(pkt, info, buf + BTH_OFF, false);
	encode_tail(pkt, pad, BTH_OFF + info->hdr_bytes, buf, NULL);
	return size;
}

/* ---------------------------------------------------------------- templates */

/*
 * Every frame a connected QP sends has the same Ethernet, IPv4 and UDP headers and the same BTH
 * but for the lengths, the opcode, the flags and the PSN. The template holds them once, with
 * zero lengths and the IPv4 checksum computed for total length 0; gpunic_frame_encode_tmpl()
 * copies it, sets the lengths and updates that checksum for the real total length (RFC 1624:
 * HC' = ~(~HC + m') when the field was 0), instead of building and summing every header again.
 */
void gpunic_frame_template(const struct gpunic_pkt *pkt, uint8_t *tmpl)
{
	struct gpunic_pkt p = *pkt;

	p.pad = 0;
	encode_eth(&p, tmpl + ETH_OFF);
	encode_ip4(&p, 0, tmpl + IP4_OFF);
	encode_udp(&p, 0, tmpl + UDP_OFF);
	p.opcode = 0;
	p.se = false;
	p.ack_req = false;
	p.psn = 0;
	encode_bth(&p, 0, tmpl + BTH_OFF);
}

/* The head of a frame that no remembered one matches (tmpl.h), built in our own memory from
 * the template, never from a frame: that lies where the peer can write, and what it scribbles
 * there must not be remembered for the frames after it. The newest head first, the one before it
 * behind. */
const struct wire_tx_head *wire_tx_head_miss(struct wire_tx_tmpl *t, uint8_t opcode,
					     uint32_t paylen, bool se)
{
	const struct gpunic_opcode_info *info = wire_opcode_info(opcode);
	size_t size = info ? wire_frame_size(info, paylen) : 0;
	struct wire_tx_head *h = &t->heads[0];

	if (!size)
		return NULL;
	t->heads[1] = *h;
	tmpl_head(t->hdr, (uint16_t)(size - GPUNIC_ETH_BYTES), opcode,
		  tmpl_bth_flags(t->hdr, se, paylen), h->bytes);
	h->crc = wire_icrc_prefix(h->bytes + IP4_OFF);
	h->size = (uint32_t)size;
	h->info = info;
	h->key = wire_tx_key(opcode, paylen, se);
	return h;
}

size_t gpunic_frame_encode_tmpl(const uint8_t *tmpl, const struct gpunic_pkt *pkt, uint8_t *buf,
				size_t cap)
{
	const struct gpunic_opcode_info *info = wire_opcode_info(pkt->opcode);
	size_t size = info ? wire_frame_size(info, pkt->paylen) : 0;
	size_t icrc_off;

	if (!size || size > cap || (pkt->paylen && !pkt->payload))
		return 0;
	tmpl_head(tmpl, (uint16_t)(size - GPUNIC_ETH_BYTES), pkt->opcode,
		  tmpl_bth_flags(tmpl, pkt->se, pkt->paylen), buf);
	icrc_off = encode_body(tmpl, pkt, info, buf, false);
	put_le32(buf + icrc_off, wire_icrc(buf, icrc_off, NULL));
	return size;
}
