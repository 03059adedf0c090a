/*
 * Encode/decode round trips for every opcode, one crafted frame per rejection reason, and the
 * encoder's refusals.
 */
#include <stdlib.h>

#include "wire_util.h"

static uint8_t frame[GPUNIC_MAX_FRAME_BYTES + 64];
static uint8_t payload[4096];

static void fill_payload(void)
{
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
}

/* Compare what the wire carries for this opcode; fields it does not carry must decode as 0. */
static void check_same(const struct gpunic_pkt *a, const struct gpunic_pkt *b)
{
	uint32_t m = gpunic_opcode_info(a->opcode)->mask;

	CHECK_MEM(a->dst_mac, b->dst_mac, 6);
	CHECK_MEM(a->src_mac, b->src_mac, 6);
	CHECK_EQ(a->tos, b->tos);
	CHECK_EQ(a->ttl, b->ttl);
	CHECK_EQ(a->ip_id, b->ip_id);
	CHECK_EQ(a->ip_frag, b->ip_frag);
	CHECK_EQ(a->src_ip, b->src_ip);
	CHECK_EQ(a->dst_ip, b->dst_ip);
	CHECK_EQ(a->src_port, b->src_port);
	CHECK_EQ(a->dst_port, b->dst_port);
	CHECK_EQ(a->udp_csum, b->udp_csum);
	CHECK_EQ(a->opcode, b->opcode);
	CHECK_EQ(a->se, b->se);
	CHECK_EQ(a->migreq, b->migreq);
	CHECK_EQ(b->pad, gpunic_pad_bytes(a->paylen));
	CHECK_EQ(a->tver, b->tver);
	CHECK_EQ(a->pkey, b->pkey);
	CHECK_EQ(a->resv8a, b->resv8a);
	CHECK_EQ(a->qpn, b->qpn);
	CHECK_EQ(a->ack_req, b->ack_req);
	CHECK_EQ(a->resv7, b->resv7);
	CHECK_EQ(a->psn, b->psn);
	CHECK_EQ(b->mask, m);
	CHECK_EQ(b->reth_va, m & GPUNIC_MASK_RETH ? a->reth_va : 0);
	CHECK_EQ(b->reth_rkey, m & GPUNIC_MASK_RETH ? a->reth_rkey : 0);
	CHECK_EQ(b->reth_len, m & GPUNIC_MASK_RETH ? a->reth_len : 0);
	CHECK_EQ(b->aeth_syndrome, m & GPUNIC_MASK_AETH ? a->aeth_syndrome : 0);
	CHECK_EQ(b->aeth_msn, m & GPUNIC_MASK_AETH ? a->aeth_msn : 0);
	CHECK_EQ(b->imm, m & GPUNIC_MASK_IMMDT ? a->imm : 0);
	CHECK_EQ(b->atm_va, m & GPUNIC_MASK_ATMETH ? a->atm_va : 0);
	CHECK_EQ(b->atm_rkey, m & GPUNIC_MASK_ATMETH ? a->atm_rkey : 0);
	CHECK_EQ(b->atm_swap_add, m & GPUNIC_MASK_ATMETH ? a->atm_swap_add : 0);
	CHECK_EQ(b->atm_compare, m & GPUNIC_MASK_ATMETH ? a->atm_compare : 0);
	CHECK_EQ(b->atmack_orig, m & GPUNIC_MASK_ATMACK ? a->atmack_orig : 0);
	CHECK_EQ(b->ieth_rkey, m & GPUNIC_MASK_IETH ? a->ieth_rkey : 0);
	CHECK_EQ(a->paylen, b->paylen);
	if (a->paylen)
		CHECK_MEM(a->payload, b->payload, a->paylen);
}

static void roundtrip(uint8_t opcode, uint32_t paylen)
{
	struct gpunic_pkt p, q;
	enum gpunic_wire_err err;
	size_t n;

	fill_pkt(&p, opcode, payload, paylen);
	p.psn = (paylen * 0x10001u + opcode) & GPUNIC_PSN_MASK;
	n = encode_ok(&p, frame, sizeof(frame));
	CHECK_EQ(n, GPUNIC_L2L4_BYTES + gpunic_opcode_info(opcode)->hdr_bytes + paylen +
			    gpunic_pad_bytes(paylen) + GPUNIC_ICRC_BYTES);
	err = gpunic_frame_decode(frame, n, 0, &q);
	if (err)
		harness_fail(__FILE__, __LINE__, "%s paylen %u: %s", gpunic_opcode_name(opcode),
			     paylen, gpunic_wire_err_name(err));
	CHECK(q.icrc_ok);
	CHECK_EQ(q.frame_bytes, n);
	CHECK(q.payload == frame + BTH_OFF + gpunic_opcode_info(opcode)->hdr_bytes);
	check_same(&p, &q);
	/* Pad bytes are zero and inside the ICRC. */
	for (uint32_t i = 0; i < q.pad; i++)
		CHECK_EQ(frame[n - 4 - q.pad + i], 0);
}

TEST(roundtrip_every_opcode)
{
	static const uint32_t sizes[] = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 60, 255, 256, 1023, 1024, 4096,
	};
	unsigned done = 0;

	fill_payload();
	for (unsigned op = 0; op < 256; op++) {
		const struct gpunic_opcode_info *info = gpunic_opcode_info((uint8_t)op);

		if (!info)
			continue;
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint32_t len = sizes[k];
			bool ok = len == 0 || ((info->mask & GPUNIC_MASK_PAYLOAD) &&
					       (len % 4 == 0 || (info->mask & GPUNIC_MASK_LAST)));

			CHECK_EQ(gpunic_frame_size((uint8_t)op, len) != 0, ok);
			if (ok) {
				roundtrip((uint8_t)op, len);
				done++;
			}
		}
	}
	CHECK(done > 35 * 5);
}

/* Pads 1..3 on every opcode that ends a message with payload. */
TEST(roundtrip_pad_1_to_3)
{
	fill_payload();
	for (unsigned op = 0; op < 256; op++) {
		const struct gpunic_opcode_info *info = gpunic_opcode_info((uint8_t)op);

		if (!info || (info->mask & (GPUNIC_MASK_PAYLOAD | GPUNIC_MASK_LAST)) !=
				     (GPUNIC_MASK_PAYLOAD | GPUNIC_MASK_LAST))
			continue;
		for (uint32_t pad = 1; pad <= 3; pad++) {
			struct gpunic_pkt p, q;
			size_t n;

			fill_pkt(&p, (uint8_t)op, payload, 100 - pad + 4);
			n = encode_ok(&p, frame, sizeof(frame));
			CHECK_EQ(gpunic_frame_decode(frame, n, 0, &q), GPUNIC_WIRE_OK);
			CHECK_EQ(q.pad, pad);
			CHECK_EQ(frame[BTH_OFF + 1] >> 4 & 3, pad);
			check_same(&p, &q);
		}
	}
}

TEST(encode_refusals)
{
	struct gpunic_pkt p;

	fill_payload();
	fill_pkt(&p, 0x15, NULL, 0);
	CHECK_EQ(gpunic_frame_size(0x15, 0), 0);
	CHECK_EQ(gpunic_frame_encode(&p, frame, sizeof(frame)), 0);
	/* Payload on an opcode without payload, pad on FIRST/MIDDLE. */
	CHECK_EQ(gpunic_frame_size(GPUNIC_OP_ACKNOWLEDGE, 4), 0);
	CHECK_EQ(gpunic_frame_size(GPUNIC_OP_READ_REQUEST, 1), 0);
	CHECK_EQ(gpunic_frame_size(0x20, 5), 0);
	CHECK_EQ(gpunic_frame_size(0x21, 1022), 0);
	CHECK(gpunic_frame_size(0x21, 1024) != 0);
	/* The IPv4 total length bounds a frame. */
	CHECK_EQ(gpunic_frame_size(0x24, 65488), 14 + 65532);  /* pad 0 */
	CHECK_EQ(gpunic_frame_size(0x24, 65489), 0);           /* pad 3 overflows 65535 */
	CHECK_EQ(gpunic_frame_size(0x24, 65492), 0);
	CHECK_EQ(gpunic_frame_size(0x24, UINT32_MAX), 0);
	/* Payload pointer missing. */
	fill_pkt(&p, 0x24, NULL, 5);
	CHECK_EQ(gpunic_frame_encode(&p, frame, sizeof(frame)), 0);
	/* Too small a buffer is never written past. */
	fill_pkt(&p, 0x24, payload, 5);
	CHECK_EQ(gpunic_frame_encode(&p, frame, 65), 0);
	CHECK_EQ(gpunic_frame_encode(&p, frame, 66), 66);
	/* Out-of-range values are masked to their wire widths. */
	fill_pkt(&p, 0x24, payload, 0);
	p.qpn = 0xFF123456;
	p.psn = 0xFF654321;
	p.tver = 0xF0;
	p.resv7 = 0x80;
	{
		struct gpunic_pkt q;
		size_t n = encode_ok(&p, frame, sizeof(frame));

		CHECK_EQ(gpunic_frame_decode(frame, n, 0, &q), GPUNIC_WIRE_OK);
		CHECK_EQ(q.qpn, 0x123456);
		CHECK_EQ(q.psn, 0x654321);
		CHECK_EQ(q.tver, 0);
		CHECK_EQ(q.resv7, 0);
	}
}

/* ------------------------------------------------------------ one test per rejection */

/* A valid UC SEND_ONLY with 8 bytes of payload, the base for the crafted frames below. */
static size_t base_frame(uint8_t opcode, uint32_t paylen)
{
	struct gpunic_pkt p;

	fill_payload();
	fill_pkt(&p, opcode, payload, paylen);
	return encode_ok(&p, frame, sizeof(frame));
}

/* Decode an exact-size heap copy (the sanitizer then sees any over-read). */
static enum gpunic_wire_err decode_n(size_t n, unsigned flags)
{
	uint8_t *copy = malloc(n ? n : 1);
	struct gpunic_pkt p;
	enum gpunic_wire_err err;

	CHECK(copy != NULL);
	memcpy(copy, frame, n);
	err = gpunic_frame_decode(copy, n, flags, &p);
	free(copy);
	return err;
}

static void expect(size_t n, enum gpunic_wire_err want)
{
	enum gpunic_wire_err got = decode_n(n, 0);

	if (got != want)
		harness_fail(__FILE__, __LINE__, "want %s, got %s", gpunic_wire_err_name(want),
			     gpunic_wire_err_name(got));
}

/* Set the IP total and UDP lengths for @ib bytes from BTH to ICRC end; returns the frame size. */
static size_t set_lengths(uint32_t ib)
{
	wr16(frame + IP_OFF + 2, (uint16_t)(GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + ib));
	wr16(frame + UDP_OFF + 4, (uint16_t)(GPUNIC_UDP_BYTES + ib));
	fix_ip_csum(frame);
	if (ib >= GPUNIC_ICRC_BYTES) /* else there is no room for an ICRC to repair */
		fix_icrc(frame);
	return BTH_OFF + ib;
}

TEST(base_frame_valid)
{
	expect(base_frame(0x24, 8), GPUNIC_WIRE_OK);
}

TEST(reject_eth_truncated)
{
	base_frame(0x24, 8);
	expect(0, GPUNIC_WIRE_ETH_TRUNCATED);
	expect(13, GPUNIC_WIRE_ETH_TRUNCATED);
}

TEST(reject_not_ipv4)
{
	size_t n = base_frame(0x24, 8);

	wr16(frame + 12, 0x86DD);
	expect(n, GPUNIC_WIRE_NOT_IPV4);
	wr16(frame + 12, 0x8915); /* RoCEv1 */
	expect(n, GPUNIC_WIRE_NOT_IPV4);
}

TEST(reject_ip_truncated)
{
	base_frame(0x24, 8);
	expect(14, GPUNIC_WIRE_IP_TRUNCATED);
	expect(33, GPUNIC_WIRE_IP_TRUNCATED);
}

TEST(reject_ip_version)
{
	size_t n = base_frame(0x24, 8);

	frame[IP_OFF] = 0x65;
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_VERSION);
}

TEST(reject_ip_options)
{
	size_t n = base_frame(0x24, 8);

	frame[IP_OFF] = 0x46;
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_OPTIONS);
	frame[IP_OFF] = 0x44;
	expect(n, GPUNIC_WIRE_IP_OPTIONS);
}

TEST(reject_ip_length)
{
	size_t n = base_frame(0x24, 8);

	/* Longer than the bytes in the buffer. */
	wr16(frame + IP_OFF + 2, (uint16_t)(n - IP_OFF + 1));
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_LENGTH);
	/* Too short for IPv4 + UDP. */
	wr16(frame + IP_OFF + 2, GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES - 1);
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_LENGTH);
	wr16(frame + IP_OFF + 2, 0);
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_LENGTH);
	wr16(frame + IP_OFF + 2, 0xFFFF);
	fix_ip_csum(frame);
	expect(n, GPUNIC_WIRE_IP_LENGTH);
}

TEST(reject_ip_fragment)
{
	size_t n = base_frame(0x24, 8);

	wr16(frame + IP_OFF + 6, 0x2000); /* MF */
	fix_frame(frame);
	expect(n, GPUNIC_WIRE_IP_FRAGMENT);
	wr16(frame + IP_OFF + 6, 0x4001); /* DF, offset 8 */
	fix_frame(frame);
	expect(n, GPUNIC_WIRE_IP_FRAGMENT);
	wr16(frame + IP_OFF + 6, 0x0000); /* no DF is fine */
	fix_frame(frame);
	expect(n, GPUNIC_WIRE_OK);
}

TEST(reject_ip_checksum)
{
	size_t n = base_frame(0x24, 8);

	frame[IP_OFF + 11] ^= 0x01;
	expect(n, GPUNIC_WIRE_IP_CHECKSUM);
	/* The IP checksum is masked out of the ICRC, so skipping its check accepts the frame. */
	CHECK_EQ(decode_n(n, GPUNIC_DECODE_SKIP_IP_CSUM), GPUNIC_WIRE_OK);
}

TEST(reject_not_udp)
{
	size_t n = base_frame(0x24, 8);

	frame[IP_OFF + 9] = 6;
	fix_frame(frame);
	expect(n, GPUNIC_WIRE_NOT_UDP);
}

TEST(reject_udp_length)
{
	size_t n = base_frame(0x24, 8);

	wr16(frame + UDP_OFF + 4, rd16(frame + UDP_OFF + 4) + 1);
	expect(n, GPUNIC_WIRE_UDP_LENGTH);
	wr16(frame + UDP_OFF + 4, rd16(frame + UDP_OFF + 4) - 2);
	expect(n, GPUNIC_WIRE_UDP_LENGTH);
	wr16(frame + UDP_OFF + 4, 0);
	expect(n, GPUNIC_WIRE_UDP_LENGTH);
}

TEST(reject_udp_port)
{
	struct gpunic_pkt p;
	size_t n;

	fill_pkt(&p, 0x24, payload, 8);
	p.dst_port = 4792;
	n = encode_ok(&p, frame, sizeof(frame));
	expect(n, GPUNIC_WIRE_UDP_PORT);
	CHECK_EQ(decode_n(n, GPUNIC_DECODE_ANY_PORT), GPUNIC_WIRE_OK);
}

TEST(reject_bth_truncated)
{
	base_frame(0x24, 0);
	/* IP and UDP agree, but leave no room for BTH + ICRC. */
	for (uint32_t ib = 0; ib < GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES; ib++)
		expect(set_lengths(ib), GPUNIC_WIRE_BTH_TRUNCATED);
	/* The repairs above wrote ICRCs over the BTH: start again from a clean frame. */
	base_frame(0x24, 0);
	expect(set_lengths(GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES), GPUNIC_WIRE_OK);
}

TEST(reject_opcode_unknown)
{
	static const uint8_t unknown[] = { 0x15, 0x18, 0x1C, 0x1D, 0x1F, 0x2C, 0x3F, 0x40,
					   0x64, 0x65, 0x81, 0xA0, 0xC0, 0xFF };
	size_t n = base_frame(0x24, 8);

	for (size_t k = 0; k < sizeof(unknown); k++) {
		frame[BTH_OFF] = unknown[k];
		fix_icrc(frame);
		expect(n, GPUNIC_WIRE_OPCODE_UNKNOWN);
	}
}

TEST(reject_hdr_truncated)
{
	size_t n = base_frame(GPUNIC_OP_ACKNOWLEDGE, 0); /* BTH + AETH: 16 bytes */

	expect(n, GPUNIC_WIRE_OK);
	frame[BTH_OFF] = GPUNIC_OP_COMPARE_SWAP;          /* needs 40 */
	fix_icrc(frame);
	expect(n, GPUNIC_WIRE_HDR_TRUNCATED);
	/* BTH present but the AETH cut off. */
	frame[BTH_OFF] = GPUNIC_OP_ACKNOWLEDGE;
	for (uint32_t ib = GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES;
	     ib < GPUNIC_BTH_BYTES + GPUNIC_AETH_BYTES + GPUNIC_ICRC_BYTES; ib++)
		expect(set_lengths(ib), GPUNIC_WIRE_HDR_TRUNCATED);
	/* UC WRITE_ONLY_WITH_IMMEDIATE missing its ImmDt. */
	base_frame(0x2A, 0);
	frame[BTH_OFF] = 0x2B;
	fix_icrc(frame);
	expect(BTH_OFF + GPUNIC_BTH_BYTES + GPUNIC_RETH_BYTES + GPUNIC_ICRC_BYTES,
	       GPUNIC_WIRE_HDR_TRUNCATED);
}

TEST(reject_tver)
{
	struct gpunic_pkt p;

	fill_pkt(&p, 0x24, payload, 8);
	p.tver = 1;
	expect(encode_ok(&p, frame, sizeof(frame)), GPUNIC_WIRE_TVER);
	p.tver = 0xF;
	expect(encode_ok(&p, frame, sizeof(frame)), GPUNIC_WIRE_TVER);
}

TEST(reject_pkey)
{
	static const uint16_t bad[] = { 0x0000, 0x8000, 0xFFFE, 0x7FFE, 0x1234 };
	struct gpunic_pkt p;

	fill_pkt(&p, 0x24, payload, 8);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		p.pkey = bad[k];
		expect(encode_ok(&p, frame, sizeof(frame)), GPUNIC_WIRE_PKEY);
	}
	p.pkey = 0x7FFF; /* limited member of the default partition (docs/WIRE.md 2.1) */
	expect(encode_ok(&p, frame, sizeof(frame)), GPUNIC_WIRE_OK);
}

static void set_pad(uint8_t pad)
{
	frame[BTH_OFF + 1] = (uint8_t)((frame[BTH_OFF + 1] & ~0x30) | pad << 4);
	fix_icrc(frame);
}

TEST(reject_pad)
{
	size_t n;

	/* Pad larger than the bytes after the headers. */
	n = base_frame(0x24, 0);
	set_pad(1);
	expect(n, GPUNIC_WIRE_PAD);
	n = base_frame(GPUNIC_OP_ACKNOWLEDGE, 0);
	set_pad(3);
	expect(n, GPUNIC_WIRE_PAD);
	/* Pad on FIRST and MIDDLE packets, which carry exactly PMTU bytes. */
	static const uint8_t not_last[] = { 0x00, 0x01, 0x06, 0x07, 0x0D, 0x0E, 0x20, 0x21, 0x26,
					    0x27 };
	for (size_t k = 0; k < sizeof(not_last); k++) {
		n = base_frame(not_last[k], 8);
		set_pad(2);
		expect(n, GPUNIC_WIRE_PAD);
	}
	/*
	 * Any pad that fits the tail is accepted, even one that disagrees with the payload length:
	 * the payload is then what remains (rxe does not check it either).
	 */
	n = base_frame(0x24, 4);
	set_pad(3);
	expect(n, GPUNIC_WIRE_OK);
}

TEST(reject_payload_unexpected)
{
	static const uint8_t no_payload[] = { 0x0C, 0x11, 0x12, 0x13, 0x14 };

	for (size_t k = 0; k < sizeof(no_payload); k++) {
		uint32_t hdr = gpunic_opcode_info(no_payload[k])->hdr_bytes;

		base_frame(no_payload[k], 0);
		expect(set_lengths(hdr + GPUNIC_ICRC_BYTES), GPUNIC_WIRE_OK);
		expect(set_lengths(hdr + 4 + GPUNIC_ICRC_BYTES), GPUNIC_WIRE_PAYLOAD_UNEXPECTED);
		expect(set_lengths(hdr + 1 + GPUNIC_ICRC_BYTES), GPUNIC_WIRE_PAYLOAD_UNEXPECTED);
	}
}

TEST(reject_icrc)
{
	size_t n = base_frame(0x24, 8);

	frame[n - 1] ^= 0x80;
	expect(n, GPUNIC_WIRE_ICRC);
	frame[n - 1] ^= 0x80;
	frame[BTH_OFF + GPUNIC_BTH_BYTES] ^= 0x01; /* payload */
	expect(n, GPUNIC_WIRE_ICRC);
	/* resv7 is covered and not masked (docs/WIRE.md 3). */
	frame[BTH_OFF + GPUNIC_BTH_BYTES] ^= 0x01;
	frame[BTH_OFF + 8] |= 0x01;
	expect(n, GPUNIC_WIRE_ICRC);
}

/* ICRC is the last check: a frame with two faults reports the structural one. */
TEST(icrc_reported_last)
{
	size_t n = base_frame(0x24, 8);

	frame[n - 1] ^= 0x80;
	frame[BTH_OFF + 1] |= 0x01; /* TVer 1 */
	expect(n, GPUNIC_WIRE_TVER);
}

TEST(reject_opcode_qp_type)
{
	struct gpunic_pkt p, q;
	size_t n;

	for (unsigned op = 0; op < 256; op++) {
		if (!gpunic_opcode_info((uint8_t)op))
			continue;
		fill_pkt(&p, (uint8_t)op, payload, 0);
		n = encode_ok(&p, frame, sizeof(frame));
		CHECK_EQ(gpunic_frame_decode(frame, n, 0, &q), GPUNIC_WIRE_OK);
		CHECK_EQ(gpunic_pkt_check_qp_type(&q, GPUNIC_QPT_UC) == GPUNIC_WIRE_OK,
			 op >= 0x20 && op <= 0x2B);
		CHECK_EQ(gpunic_pkt_check_qp_type(&q, GPUNIC_QPT_RC) == GPUNIC_WIRE_OK, op < 0x20);
	}
	/* RC READ_REQUEST and RC SEND_ONLY_WITH_INVALIDATE on a UC QP. */
	fill_pkt(&p, GPUNIC_OP_READ_REQUEST, NULL, 0);
	n = encode_ok(&p, frame, sizeof(frame));
	CHECK_EQ(gpunic_frame_decode(frame, n, 0, &q), GPUNIC_WIRE_OK);
	CHECK_EQ(gpunic_pkt_check_qp_type(&q, GPUNIC_QPT_UC), GPUNIC_WIRE_OPCODE_QP_TYPE);
	fill_pkt(&p, GPUNIC_OP_SEND_ONLY_INV, payload, 3);
	n = encode_ok(&p, frame, sizeof(frame));
	CHECK_EQ(gpunic_frame_decode(frame, n, 0, &q), GPUNIC_WIRE_OK);
	CHECK_EQ(gpunic_pkt_check_qp_type(&q, GPUNIC_QPT_UC), GPUNIC_WIRE_OPCODE_QP_TYPE);
	CHECK_EQ(gpunic_pkt_check_qp_type(&q, GPUNIC_QPT_RC), GPUNIC_WIRE_OK);
}

/* Every reason in the enum is produced by one of the tests above. */
TEST(every_reason_reachable)
{
	static const enum gpunic_wire_err covered[] = {
		GPUNIC_WIRE_ETH_TRUNCATED,  GPUNIC_WIRE_NOT_IPV4,
		GPUNIC_WIRE_IP_TRUNCATED,   GPUNIC_WIRE_IP_VERSION,
		GPUNIC_WIRE_IP_OPTIONS,     GPUNIC_WIRE_IP_LENGTH,
		GPUNIC_WIRE_IP_FRAGMENT,    GPUNIC_WIRE_IP_CHECKSUM,
		GPUNIC_WIRE_NOT_UDP,        GPUNIC_WIRE_UDP_LENGTH,
		GPUNIC_WIRE_UDP_PORT,       GPUNIC_WIRE_BTH_TRUNCATED,
		GPUNIC_WIRE_OPCODE_UNKNOWN, GPUNIC_WIRE_HDR_TRUNCATED,
		GPUNIC_WIRE_TVER,           GPUNIC_WIRE_PKEY,
		GPUNIC_WIRE_PAD,            GPUNIC_WIRE_PAYLOAD_UNEXPECTED,
		GPUNIC_WIRE_OPCODE_QP_TYPE, GPUNIC_WIRE_ICRC,
	};

	CHECK_EQ(sizeof(covered) / sizeof(covered[0]), GPUNIC_WIRE_ERR_MAX - 1);
	for (int e = 1; e < GPUNIC_WIRE_ERR_MAX; e++) {
		bool found = false;

		for (size_t k = 0; k < sizeof(covered) / sizeof(covered[0]); k++)
			found |= covered[k] == (enum gpunic_wire_err)e;
		CHECK(found);
	}
}
