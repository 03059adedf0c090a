/*
 * Golden frames (docs/WIRE.md: three made by Linux rxe, one by scapy): decode, ICRC, and
 * byte-for-byte re-encode; which bytes the ICRC covers; Ethernet minimum-frame padding.
 */
#include <stdlib.h>

#include "wire_util.h"

/* (a) rxe UC SEND_ONLY_WITH_IMMEDIATE, "hello", imm 0x11223344, PSN 0xFFFFFE, pad 3. */
static const uint8_t golden_a[70] = {
	0x52, 0x54, 0x00, 0x00, 0x00, 0x01, 0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x38, 0x77, 0xa5, 0x40, 0x00, 0x40, 0x11, 0xaf, 0x0d, 0x0a, 0x00,
	0x00, 0x02, 0x0a, 0x00, 0x00, 0x01, 0xc1, 0x21, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00,
	0x25, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0xfe, 0x11, 0x22,
	0x33, 0x44, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00, 0x23, 0x2b, 0x8a, 0x17,
};

/* (b) rxe RC ACKNOWLEDGE, PSN 0xFFFFFE, syndrome 0x1F, MSN 1. */
static const uint8_t golden_b[62] = {
	0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x30, 0x78, 0xf0, 0x40, 0x00, 0x40, 0x11, 0xad, 0xca, 0x0a, 0x00,
	0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc1, 0x44, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00,
	0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0xff, 0xff, 0xfe, 0x1f, 0x00,
	0x00, 0x01, 0x43, 0x51, 0x06, 0x09,
};

/* (c) rxe UC RDMA_WRITE_ONLY_WITH_IMMEDIATE, 7 bytes "hellowr", pad 1. */
static const uint8_t golden_c[86] = {
	0x52, 0x54, 0x00, 0x00, 0x00, 0x01, 0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x48, 0x77, 0xdc, 0x40, 0x00, 0x40, 0x11, 0xae, 0xc6, 0x0a, 0x00,
	0x00, 0x02, 0x0a, 0x00, 0x00, 0x01, 0xc1, 0x21, 0x12, 0xb7, 0x00, 0x34, 0x00, 0x00,
	0x2b, 0x10, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
	0x56, 0x09, 0xee, 0xd3, 0xbe, 0xe0, 0x00, 0x00, 0x02, 0xcc, 0x00, 0x00, 0x00, 0x07,
	0x99, 0xaa, 0xbb, 0xcc, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x77, 0x72, 0x00, 0x8e, 0x4d,
	0x79, 0x49,
};

/* (d) scapy UC SEND_ONLY "hello", QP 0x11, PSN 1, 192.168.1.1 -> 192.168.1.2. */
static const uint8_t golden_d[66] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x34, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb7, 0x65, 0xc0, 0xa8,
	0x01, 0x01, 0xc0, 0xa8, 0x01, 0x02, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00,
	0x24, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x01, 0x68, 0x65,
	0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00, 0x0b, 0x93, 0xa0, 0xbb,
};

static const struct {
	const uint8_t *bytes;
	size_t len;
} goldens[] = {
	{ golden_a, sizeof(golden_a) },
	{ golden_b, sizeof(golden_b) },
	{ golden_c, sizeof(golden_c) },
	{ golden_d, sizeof(golden_d) },
};

#define N_GOLDEN (sizeof(goldens) / sizeof(goldens[0]))

/* Decode from an exact-size heap copy, so the sanitizer sees any read past the end. */
static enum gpunic_wire_err decode_copy(const uint8_t *f, size_t len, unsigned flags,
					struct gpunic_pkt *p)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum gpunic_wire_err err;

	CHECK(copy != NULL);
	memcpy(copy, f, len);
	err = gpunic_frame_decode(copy, len, flags, p);
	free(copy);
	p->payload = NULL; /* pointed into the copy */
	return err;
}

static void decode_golden(const uint8_t *f, size_t len, struct gpunic_pkt *p)
{
	enum gpunic_wire_err err = gpunic_frame_decode(f, len, 0, p);

	if (err)
		harness_fail(__FILE__, __LINE__, "decode: %s", gpunic_wire_err_name(err));
	CHECK(p->icrc_ok);
	CHECK_EQ(p->icrc, p->icrc_calc);
	CHECK_EQ(p->frame_bytes, len);
}

static void check_reencode(const uint8_t *f, size_t len)
{
	uint8_t buf[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_pkt p;

	decode_golden(f, len, &p);
	CHECK_EQ(gpunic_frame_encode(&p, buf, sizeof(buf)), len);
	CHECK_MEM(buf, f, len);
	/* The exact capacity is enough; one byte less is refused. */
	CHECK_EQ(gpunic_frame_encode(&p, buf, len), len);
	CHECK_EQ(gpunic_frame_encode(&p, buf, len - 1), 0);
}

TEST(golden_a_uc_send_only_imm)
{
	static const uint8_t dst[6] = { 0x52, 0x54, 0, 0, 0, 1 };
	static const uint8_t src[6] = { 0x52, 0x54, 0, 0, 0, 2 };
	struct gpunic_pkt p;

	decode_golden(golden_a, sizeof(golden_a), &p);
	CHECK_MEM(p.dst_mac, dst, 6);
	CHECK_MEM(p.src_mac, src, 6);
	CHECK_EQ(p.tos, 0);
	CHECK_EQ(p.ttl, 0x40);
	CHECK_EQ(p.ip_id, 0x77a5);
	CHECK_EQ(p.ip_frag, 0x4000);
	CHECK_EQ(p.src_ip, 0x0a000002);
	CHECK_EQ(p.dst_ip, 0x0a000001);
	CHECK_EQ(p.src_port, 0xC121);
	CHECK_EQ(p.dst_port, 4791);
	CHECK_EQ(p.udp_csum, 0);
	CHECK_EQ(p.opcode, 0x25);
	CHECK(strcmp(gpunic_opcode_name(p.opcode), "UC_SEND_ONLY_WITH_IMMEDIATE") == 0);
	CHECK_EQ(p.mask, gpunic_opcode_info(0x25)->mask);
	CHECK(!p.se);
	CHECK(!p.migreq);
	CHECK_EQ(p.pad, 3);
	CHECK_EQ(p.tver, 0);
	CHECK_EQ(p.pkey, 0xFFFF);
	CHECK_EQ(p.resv8a, 0);
	CHECK_EQ(p.qpn, 0x11);
	CHECK(!p.ack_req);
	CHECK_EQ(p.resv7, 0);
	CHECK_EQ(p.psn, 0xFFFFFE);
	CHECK_EQ(p.imm, 0x11223344);
	CHECK_EQ(p.paylen, 5);
	CHECK_MEM(p.payload, "hello", 5);
	CHECK(p.payload == golden_a + 58);
	CHECK_EQ(p.icrc, 0x178A2B23);
	CHECK_EQ(gpunic_pkt_check_qp_type(&p, GPUNIC_QPT_UC), GPUNIC_WIRE_OK);
	CHECK_EQ(gpunic_pkt_check_qp_type(&p, GPUNIC_QPT_RC), GPUNIC_WIRE_OPCODE_QP_TYPE);
}

TEST(golden_b_rc_ack)
{
	struct gpunic_pkt p;

	decode_golden(golden_b, sizeof(golden_b), &p);
	CHECK_EQ(p.opcode, GPUNIC_OP_ACKNOWLEDGE);
	CHECK_EQ(p.ip_id, 0x78f0);
	CHECK_EQ(p.src_ip, 0x0a000001);
	CHECK_EQ(p.dst_ip, 0x0a000002);
	CHECK_EQ(p.src_port, 0xC144);
	CHECK_EQ(p.qpn, 0x12);
	CHECK_EQ(p.psn, 0xFFFFFE);
	CHECK_EQ(p.pad, 0);
	CHECK_EQ(p.aeth_syndrome, 0x1F);
	CHECK(strcmp(gpunic_aeth_syndrome_name(p.aeth_syndrome), "ACK") == 0);
	CHECK_EQ(gpunic_aeth_credits(p.aeth_syndrome), UINT32_MAX);
	CHECK_EQ(p.aeth_msn, 1);
	CHECK_EQ(p.paylen, 0);
	CHECK_EQ(p.icrc, 0x09065143);
	CHECK_EQ(gpunic_pkt_check_qp_type(&p, GPUNIC_QPT_RC), GPUNIC_WIRE_OK);
	/* An ACK is never legal on UC (docs/WIRE.md 4). */
	CHECK_EQ(gpunic_pkt_check_qp_type(&p, GPUNIC_QPT_UC), GPUNIC_WIRE_OPCODE_QP_TYPE);
}

TEST(golden_c_uc_write_only_imm)
{
	struct gpunic_pkt p;

	decode_golden(golden_c, sizeof(golden_c), &p);
	CHECK_EQ(p.opcode, 0x2B);
	CHECK_EQ(p.ip_id, 0x77dc);
	CHECK_EQ(p.pad, 1);
	CHECK_EQ(p.qpn, 0x11);
	CHECK_EQ(p.psn, 2);
	CHECK_EQ(p.reth_va, 0x00005609eed3bee0ull);
	CHECK_EQ(p.reth_rkey, 0x2cc);
	CHECK_EQ(p.reth_len, 7);
	CHECK_EQ(p.imm, 0x99aabbcc);
	CHECK_EQ(p.paylen, 7);
	CHECK_MEM(p.payload, "hellowr", 7);
	CHECK_EQ(p.icrc, 0x49794D8E);
}

TEST(golden_d_scapy_uc_send_only)
{
	struct gpunic_pkt p;

	decode_golden(golden_d, sizeof(golden_d), &p);
	CHECK_EQ(p.opcode, 0x24);
	CHECK_EQ(p.ip_id, 0);
	CHECK_EQ(p.ip_frag, 0x4000);
	CHECK_EQ(p.ttl, 64);
	CHECK_EQ(p.src_ip, 0xC0A80101);
	CHECK_EQ(p.dst_ip, 0xC0A80102);
	CHECK_EQ(p.src_port, 0xC000);
	CHECK_EQ(p.qpn, 0x11);
	CHECK_EQ(p.psn, 1);
	CHECK_EQ(p.pad, 3);
	CHECK_EQ(p.paylen, 5);
	CHECK_MEM(p.payload, "hello", 5);
	CHECK_EQ(p.icrc, 0xBBA0930B);
}

TEST(golden_reencode_byte_for_byte)
{
	for (size_t i = 0; i < N_GOLDEN; i++)
		check_reencode(goldens[i].bytes, goldens[i].len);
}

/* Golden frame (a) (docs/WIRE.md): its ICRC, straight from gpunic_icrc_compute. */
TEST(icrc_compute_golden)
{
	CHECK_EQ(gpunic_icrc_compute(golden_a, sizeof(golden_a) - 4), 0x178A2B23);
	CHECK_EQ(gpunic_icrc_compute(golden_b, sizeof(golden_b) - 4), 0x09065143);
	CHECK_EQ(gpunic_icrc_compute(golden_c, sizeof(golden_c) - 4), 0x49794D8E);
	CHECK_EQ(gpunic_icrc_compute(golden_d, sizeof(golden_d) - 4), 0xBBA0930B);
}

TEST(ip_checksum_golden)
{
	for (size_t i = 0; i < N_GOLDEN; i++)
		CHECK_EQ(gpunic_ip4_checksum(goldens[i].bytes + IP_OFF, GPUNIC_IP4_BYTES), 0);
	CHECK_EQ(rd16(golden_a + IP_OFF + 10), 0xaf0d);
}

/* Bytes the ICRC masks (docs/WIRE.md): IP TOS, TTL, checksum; UDP checksum; BTH byte 4. */
static bool icrc_masked(size_t off)
{
	return off == IP_OFF + 1 || off == IP_OFF + 8 || off == IP_OFF + 10 || off == IP_OFF + 11 ||
	       off == UDP_OFF + 6 || off == UDP_OFF + 7 || off == BTH_OFF + 4;
}

/*
 * Any single-byte change in a covered byte changes the ICRC and the frame is rejected; a change
 * in a masked byte (or a MAC address, not covered at all) leaves it valid. The IP
 * checksum is not verified here, so TOS and TTL edits reach the ICRC check.
 */
static void check_coverage(const uint8_t *golden, size_t len)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xFF, 0x5A };
	const unsigned flags = GPUNIC_DECODE_SKIP_IP_CSUM;
	uint32_t good = gpunic_icrc_compute(golden, len - 4);
	uint8_t f[128];
	struct gpunic_pkt p;

	CHECK(len <= sizeof(f));
	for (size_t off = 0; off < len; off++) {
		for (size_t k = 0; k < sizeof(flips); k++) {
			enum gpunic_wire_err err;

			memcpy(f, golden, len);
			f[off] ^= flips[k];
			err = gpunic_frame_decode(f, len, flags, &p);
			if (off < 12 || icrc_masked(off)) { /* MACs are not covered at all */
				CHECK_EQ(err, GPUNIC_WIRE_OK);
				CHECK(p.icrc_ok);
				continue;
			}
			CHECK(err != GPUNIC_WIRE_OK);
			if (off < IP_OFF) /* EtherType: rejected, but outside the ICRC */
				CHECK_EQ(gpunic_icrc_compute(f, len - 4), good);
			else if (off < len - 4)
				CHECK(gpunic_icrc_compute(f, len - 4) != good);
			else
				CHECK_EQ(err, GPUNIC_WIRE_ICRC);
		}
	}
}

TEST(icrc_single_byte_coverage)
{
	for (size_t i = 0; i < N_GOLDEN; i++)
		check_coverage(goldens[i].bytes, goldens[i].len);
}

/* The covered bytes after the UDP header never change a structural check: only ICRC fails. */
TEST(icrc_corrupt_reports_icrc)
{
	uint8_t f[sizeof(golden_c)];
	struct gpunic_pkt p;

	for (size_t off = BTH_OFF + 8; off < sizeof(golden_c); off++) {
		memcpy(f, golden_c, sizeof(f));
		f[off] ^= 0x04;
		CHECK_EQ(gpunic_frame_decode(f, sizeof(f), 0, &p), GPUNIC_WIRE_ICRC);
		CHECK(!p.icrc_ok);
		CHECK(p.icrc != p.icrc_calc);
	}
	/* With the ICRC check skipped, the same frame is accepted and nothing is computed. */
	f[sizeof(f) - 1] ^= 0x10;
	CHECK_EQ(gpunic_frame_decode(f, sizeof(f), GPUNIC_DECODE_SKIP_ICRC, &p), GPUNIC_WIRE_OK);
	CHECK_EQ(p.icrc_calc, 0);
	CHECK(!p.icrc_ok);
}

/* A 0-byte SEND_ONLY is 58 bytes; Ethernet pads it to 60 after the ICRC (docs/WIRE.md 1.2). */
TEST(min_frame_padding)
{
	uint8_t f[GPUNIC_ETH_MIN_FRAME_BYTES];
	struct gpunic_pkt p, q;

	fill_pkt(&p, 0x24, NULL, 0);
	CHECK_EQ(encode_ok(&p, f, sizeof(f)), 58);
	f[58] = 0;
	f[59] = 0;
	CHECK_EQ(decode_copy(f, sizeof(f), 0, &q), GPUNIC_WIRE_OK);
	CHECK_EQ(q.frame_bytes, 58);
	CHECK_EQ(q.paylen, 0);
	CHECK(q.icrc_ok);
	/* Padding content is not ours to judge. */
	f[58] = 0xEE;
	f[59] = 0x77;
	CHECK_EQ(decode_copy(f, sizeof(f), 0, &q), GPUNIC_WIRE_OK);
	/* The golden ACK (62 bytes) with trailing junk decodes the same way. */
	{
		uint8_t g[sizeof(golden_b) + 6];

		memcpy(g, golden_b, sizeof(golden_b));
		memset(g + sizeof(golden_b), 0xAB, 6);
		CHECK_EQ(decode_copy(g, sizeof(g), 0, &q), GPUNIC_WIRE_OK);
		CHECK_EQ(q.frame_bytes, sizeof(golden_b));
		CHECK_EQ(q.aeth_msn, 1);
	}
}

/* Every cut of a valid frame fails with a truncation or length reason, never a crash. */
TEST(truncated_every_byte)
{
	static const unsigned flag_sets[] = {
		0,
		GPUNIC_DECODE_SKIP_ICRC | GPUNIC_DECODE_SKIP_IP_CSUM,
	};

	for (size_t i = 0; i < N_GOLDEN; i++) {
		for (size_t cut = 0; cut < goldens[i].len; cut++) {
			for (size_t k = 0; k < 2; k++) {
				struct gpunic_pkt p;
				enum gpunic_wire_err err =
					decode_copy(goldens[i].bytes, cut, flag_sets[k], &p);

				CHECK(err == GPUNIC_WIRE_ETH_TRUNCATED ||
				      err == GPUNIC_WIRE_IP_TRUNCATED ||
				      err == GPUNIC_WIRE_IP_LENGTH);
				if (cut < GPUNIC_ETH_BYTES)
					CHECK_EQ(err, GPUNIC_WIRE_ETH_TRUNCATED);
				else if (cut < UDP_OFF)
					CHECK_EQ(err, GPUNIC_WIRE_IP_TRUNCATED);
				else
					CHECK_EQ(err, GPUNIC_WIRE_IP_LENGTH);
			}
		}
	}
}
