// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the network-facing frame parser.
 *
 * Input: byte 0 selects the decode flags, the rest is one Ethernet frame. A frame the decoder
 * accepts must re-encode, the re-encoded frame must decode with every check on, and both
 * decodes must agree field by field. When the pad agrees with the payload length (what every
 * conforming sender does), the re-encoded frame must even equal the input byte for byte, save
 * for the checksums the flags told the decoder not to verify.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/wire.h>

#define DECODE_FLAGS_ALL \
	(GPUNIC_DECODE_SKIP_ICRC | GPUNIC_DECODE_SKIP_IP_CSUM | GPUNIC_DECODE_ANY_PORT)

/* The IPv4 header checksum field. */
#define IP_CSUM_OFF (GPUNIC_ETH_BYTES + 10)

static uint8_t reencoded[65536 + GPUNIC_ETH_BYTES];

#define ASSERT(cond)                     \
	do {                             \
		if (!(cond))             \
			abort();         \
	} while (0)

static bool same_l2l4(const struct gpunic_pkt *a, const struct gpunic_pkt *b)
{
	return !memcmp(a->dst_mac, b->dst_mac, 6) && !memcmp(a->src_mac, b->src_mac, 6) &&
	       a->tos == b->tos && a->ttl == b->ttl && a->ip_id == b->ip_id &&
	       a->ip_frag == b->ip_frag && a->src_ip == b->src_ip && a->dst_ip == b->dst_ip &&
	       a->src_port == b->src_port && a->dst_port == b->dst_port &&
	       a->udp_csum == b->udp_csum;
}

static bool same_bth(const struct gpunic_pkt *a, const struct gpunic_pkt *b)
{
	return a->opcode == b->opcode && a->se == b->se && a->migreq == b->migreq &&
	       a->tver == b->tver && a->pkey == b->pkey && a->resv8a == b->resv8a &&
	       a->qpn == b->qpn && a->ack_req == b->ack_req && a->resv7 == b->resv7 &&
	       a->psn == b->psn && a->mask == b->mask;
}

static bool same_ext(const struct gpunic_pkt *a, const struct gpunic_pkt *b)
{
	return a->reth_va == b->reth_va && a->reth_rkey == b->reth_rkey &&
	       a->reth_len == b->reth_len && a->aeth_syndrome == b->aeth_syndrome &&
	       a->aeth_msn == b->aeth_msn && a->imm == b->imm && a->atm_va == b->atm_va &&
	       a->atm_rkey == b->atm_rkey && a->atm_swap_add == b->atm_swap_add &&
	       a->atm_compare == b->atm_compare && a->atmack_orig == b->atmack_orig &&
	       a->ieth_rkey == b->ieth_rkey;
}

/* What decode promises about an accepted frame, checked against the input. */
static void check_accepted(const uint8_t *frame, size_t len, const struct gpunic_pkt *p)
{
	const struct gpunic_opcode_info *info = gpunic_opcode_info(p->opcode);

	ASSERT(info && info->mask == p->mask);
	ASSERT(p->frame_bytes <= len);
	ASSERT(p->pad <= 3 && p->tver == 0 && gpunic_pkey_valid(p->pkey));
	ASSERT(p->payload == frame + GPUNIC_L2L4_BYTES + info->hdr_bytes);
	ASSERT(GPUNIC_L2L4_BYTES + info->hdr_bytes + p->paylen + p->pad + GPUNIC_ICRC_BYTES ==
	       p->frame_bytes);
	ASSERT(p->paylen == 0 || (info->mask & GPUNIC_MASK_PAYLOAD));
	ASSERT(gpunic_opcode_legal(p->opcode, GPUNIC_QPT_RC) ||
	       gpunic_opcode_legal(p->opcode, GPUNIC_QPT_UC));
	(void)gpunic_pkt_check_qp_type(p, GPUNIC_QPT_UC);
	(void)gpunic_opcode_name(p->opcode);
	(void)gpunic_aeth_syndrome_name(p->aeth_syndrome);
}

/*
 * The re-encoded frame equals the input except where a check was skipped, and except:
 * - the IP checksum, which has two valid forms when the other words sum to 0xFFFF (0x0000 and
 *   0xFFFF, RFC 1624); the second decode verifies the one the encoder wrote;
 * - the pad bytes, which senders set to 0 but receivers do not check (rxe does not either);
 *   the encoder always writes zeros.
 */
static void check_bytes(const uint8_t *frame, const struct gpunic_pkt *p, unsigned flags)
{
	size_t icrc_off = p->frame_bytes - GPUNIC_ICRC_BYTES;
	size_t pad_off = icrc_off - p->pad;
	bool same_pad = !memcmp(reencoded + pad_off, frame + pad_off, p->pad);

	ASSERT(!memcmp(reencoded, frame, IP_CSUM_OFF));
	ASSERT(!memcmp(reencoded + IP_CSUM_OFF + 2, frame + IP_CSUM_OFF + 2,
		       pad_off - IP_CSUM_OFF - 2));
	for (size_t i = pad_off; i < icrc_off; i++)
		ASSERT(reencoded[i] == 0);
	/* Same covered bytes, same ICRC (the IP checksum is masked out of it). */
	if (!(flags & GPUNIC_DECODE_SKIP_ICRC) && same_pad)
		ASSERT(!memcmp(reencoded + icrc_off, frame + icrc_off, GPUNIC_ICRC_BYTES));
}

static void check_reencode(const uint8_t *frame, const struct gpunic_pkt *p, unsigned flags)
{
	bool pad_canonical = p->pad == gpunic_pad_bytes(p->paylen);
	struct gpunic_pkt q;
	size_t n = gpunic_frame_encode(p, reencoded, sizeof(reencoded));

	/* A non-canonical pad may need a pad on FIRST/MIDDLE, which the encoder refuses. */
	if (!pad_canonical && !n)
		return;
	ASSERT(n == gpunic_frame_size(p->opcode, p->paylen));
	ASSERT(n >= GPUNIC_L2L4_BYTES + GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES);
	if (pad_canonical) {
		ASSERT(n == p->frame_bytes);
		check_bytes(frame, p, flags);
	}
	ASSERT(gpunic_frame_decode(reencoded, n, flags & GPUNIC_DECODE_ANY_PORT, &q) ==
	       GPUNIC_WIRE_OK);
	ASSERT(q.icrc_ok && q.icrc == q.icrc_calc && q.frame_bytes == n);
	ASSERT(same_l2l4(p, &q) && same_bth(p, &q) && same_ext(p, &q));
	ASSERT(q.pad == gpunic_pad_bytes(p->paylen));
	ASSERT(q.paylen == p->paylen && !memcmp(q.payload, p->payload, p->paylen));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpunic_pkt p;
	enum gpunic_wire_err err;
	unsigned flags;

	if (size < 1)
		return 0;
	flags = data[0] & DECODE_FLAGS_ALL;
	/* libFuzzer's buffer ends exactly at data + size, so any over-read trips ASan. */
	err = gpunic_frame_decode(data + 1, size - 1, flags, &p);
	ASSERT((unsigned)err < GPUNIC_WIRE_ERR_MAX && err != GPUNIC_WIRE_OPCODE_QP_TYPE);
	ASSERT(strcmp(gpunic_wire_err_name(err), "unknown") != 0);
	if (err != GPUNIC_WIRE_OK)
		return 0;
	check_accepted(data + 1, size - 1, &p);
	check_reencode(data + 1, &p, flags);
	return 0;
}
