/* Opcode table, legality, names and the AETH/RNR/PSN/pad/P_Key/port helpers. */
#include <gpunic/wire.h>

#include "harness.h"

static bool expect_known(unsigned op)
{
	return op <= 0x14 || op == 0x16 || op == 0x17 || (op >= 0x20 && op <= 0x2B);
}

/* Sum of the extension header sizes an opcode's mask announces. */
static unsigned ext_bytes(uint32_t mask)
{
	return (mask & GPUNIC_MASK_RETH ? GPUNIC_RETH_BYTES : 0) +
	       (mask & GPUNIC_MASK_AETH ? GPUNIC_AETH_BYTES : 0) +
	       (mask & GPUNIC_MASK_IMMDT ? GPUNIC_IMMDT_BYTES : 0) +
	       (mask & GPUNIC_MASK_ATMETH ? GPUNIC_ATMETH_BYTES : 0) +
	       (mask & GPUNIC_MASK_ATMACK ? GPUNIC_ATMACK_BYTES : 0) +
	       (mask & GPUNIC_MASK_IETH ? GPUNIC_IETH_BYTES : 0);
}

/* A header the mask announces lies inside the header stack; one it does not has offset 0. */
static void check_hdr(uint32_t mask, uint32_t bit, unsigned off, unsigned size, unsigned hdr)
{
	if (mask & bit) {
		CHECK(off >= GPUNIC_BTH_BYTES);
		CHECK(off + size <= hdr);
	} else {
		CHECK_EQ(off, 0);
	}
}

TEST(table_known_set)
{
	for (unsigned op = 0; op < 256; op++)
		CHECK_EQ(gpunic_opcode_info((uint8_t)op) != NULL, expect_known(op));
}

TEST(table_layout_consistent)
{
	for (unsigned op = 0; op < 256; op++) {
		const struct gpunic_opcode_info *i = gpunic_opcode_info((uint8_t)op);
		uint32_t pos;

		if (!i)
			continue;
		CHECK_EQ(i->hdr_bytes, GPUNIC_BTH_BYTES + ext_bytes(i->mask));
		CHECK(i->hdr_bytes <= GPUNIC_MAX_IB_HDR_BYTES);
		check_hdr(i->mask, GPUNIC_MASK_RETH, i->reth_off, GPUNIC_RETH_BYTES, i->hdr_bytes);
		check_hdr(i->mask, GPUNIC_MASK_AETH, i->aeth_off, GPUNIC_AETH_BYTES, i->hdr_bytes);
		check_hdr(i->mask, GPUNIC_MASK_IMMDT, i->immdt_off, GPUNIC_IMMDT_BYTES,
			  i->hdr_bytes);
		check_hdr(i->mask, GPUNIC_MASK_ATMETH, i->atmeth_off, GPUNIC_ATMETH_BYTES,
			  i->hdr_bytes);
		check_hdr(i->mask, GPUNIC_MASK_ATMACK, i->atmack_off, GPUNIC_ATMACK_BYTES,
			  i->hdr_bytes);
		check_hdr(i->mask, GPUNIC_MASK_IETH, i->ieth_off, GPUNIC_IETH_BYTES, i->hdr_bytes);
		/* Exactly one direction, and a position in the message. */
		CHECK(!(i->mask & GPUNIC_MASK_REQ) != !(i->mask & GPUNIC_MASK_ACK));
		pos = i->mask & (GPUNIC_MASK_FIRST | GPUNIC_MASK_MIDDLE | GPUNIC_MASK_LAST);
		CHECK(pos != 0);
		CHECK(!(pos & GPUNIC_MASK_MIDDLE) || pos == GPUNIC_MASK_MIDDLE);
		/* Completing at the responder implies the end of a message. */
		CHECK(!(i->mask & GPUNIC_MASK_COMP) || (i->mask & GPUNIC_MASK_LAST));
	}
}

/* Header lengths from docs/WIRE.md 4, "header bytes" column. */
TEST(table_hdr_bytes_reference)
{
	static const uint8_t hdr[0x18] = {
		12, 12, 12, 16, 12, 16, 28, 12, 12, 16, 28, 32, 28, 16, 12, 16,
		16, 16, 24, 40, 40, 0,  16, 16,
	};

	for (unsigned op = 0; op < 0x18; op++) {
		if (op == 0x15)
			continue;
		CHECK_EQ(gpunic_opcode_info((uint8_t)op)->hdr_bytes, hdr[op]);
		if (op <= 0x0B)
			CHECK_EQ(gpunic_opcode_info((uint8_t)(0x20 | op))->hdr_bytes, hdr[op]);
	}
	CHECK_EQ(gpunic_opcode_info(0x2B)->reth_off, 12);
	CHECK_EQ(gpunic_opcode_info(0x2B)->immdt_off, 28);
	CHECK_EQ(gpunic_opcode_info(0x12)->atmack_off, 16);
}

TEST(table_payload_and_roles)
{
	static const uint8_t no_payload[] = { 0x0C, 0x11, 0x12, 0x13, 0x14 };

	for (size_t k = 0; k < sizeof(no_payload); k++)
		CHECK(!(gpunic_opcode_info(no_payload[k])->mask & GPUNIC_MASK_PAYLOAD));
	CHECK(gpunic_opcode_info(0x04)->mask & GPUNIC_MASK_PAYLOAD);
	CHECK(gpunic_opcode_info(0x0E)->mask & GPUNIC_MASK_PAYLOAD);
	CHECK(!(gpunic_opcode_info(0x0E)->mask & GPUNIC_MASK_AETH));
	CHECK_EQ(gpunic_opcode_info(0x24)->mask & GPUNIC_MASK_ONLY, GPUNIC_MASK_ONLY);
	CHECK(gpunic_opcode_info(0x20)->mask & GPUNIC_MASK_RWR);
	CHECK(!(gpunic_opcode_info(0x21)->mask & GPUNIC_MASK_RWR));
	CHECK(gpunic_opcode_info(0x29)->mask & GPUNIC_MASK_RWR);
	CHECK(gpunic_opcode_info(0x29)->mask & GPUNIC_MASK_COMP);
	CHECK(!(gpunic_opcode_info(0x28)->mask & GPUNIC_MASK_COMP));
	CHECK(!(gpunic_opcode_info(0x2A)->mask & GPUNIC_MASK_RWR));
	CHECK(gpunic_opcode_info(0x17)->mask & GPUNIC_MASK_INV);
	CHECK(gpunic_opcode_info(0x0C)->mask & GPUNIC_MASK_READ);
	CHECK(gpunic_opcode_info(0x14)->mask & GPUNIC_MASK_ATOMIC);
}

TEST(names)
{
	CHECK(strcmp(gpunic_opcode_name(0x04), "RC_SEND_ONLY") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x2B), "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x11), "RC_ACKNOWLEDGE") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x17), "RC_SEND_ONLY_WITH_INVALIDATE") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x15), "UNKNOWN") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x64), "UNKNOWN") == 0);
	CHECK(strcmp(gpunic_opcode_name(0x81), "UNKNOWN") == 0);
	for (unsigned a = 0; a < 256; a++) {
		const char *na = gpunic_opcode_name((uint8_t)a);

		if (!gpunic_opcode_info((uint8_t)a))
			continue;
		CHECK(strncmp(na, a < 0x20 ? "RC_" : "UC_", 3) == 0);
		for (unsigned b = a + 1; b < 256; b++)
			if (gpunic_opcode_info((uint8_t)b))
				CHECK(strcmp(na, gpunic_opcode_name((uint8_t)b)) != 0);
		/* A UC operation has the same IBA name as its RC twin. */
		if (a >= 0x20)
			CHECK(strcmp(na + 3, gpunic_opcode_name((uint8_t)(a & 0x1F)) + 3) == 0);
	}
}

TEST(legal_per_qp_type)
{
	for (unsigned op = 0; op < 256; op++) {
		bool uc = op >= 0x20 && op <= 0x2B;
		bool rc = op <= 0x14 || op == 0x16 || op == 0x17;

		CHECK_EQ(gpunic_opcode_legal((uint8_t)op, GPUNIC_QPT_UC), uc);
		CHECK_EQ(gpunic_opcode_legal((uint8_t)op, GPUNIC_QPT_RC), rc);
	}
}

TEST(psn_wrap)
{
	CHECK_EQ(gpunic_psn_add(0xFFFFFF, 1), 0);
	CHECK_EQ(gpunic_psn_add(0xFFFFFE, 3), 1);
	CHECK_EQ(gpunic_psn_add(5, 0), 5);
	CHECK_EQ(gpunic_psn_add(0x7FFFFF, 0x800001), 0);
	CHECK(gpunic_psn_cmp(0, 0xFFFFFF) > 0);
	CHECK(gpunic_psn_cmp(0xFFFFFF, 0) < 0);
	CHECK(gpunic_psn_cmp(1, 0xFFFFFE) > 0);
	CHECK(gpunic_psn_cmp(0xFFFFFE, 1) < 0);
	CHECK_EQ(gpunic_psn_cmp(0x123456, 0x123456), 0);
	CHECK(gpunic_psn_cmp(0x7FFFFF, 0) > 0);   /* 2^23 - 1 ahead: still "after" */
	CHECK(gpunic_psn_cmp(0x800001, 0) < 0);   /* more than 2^23 ahead: wraps to "before" */
	for (uint32_t p = 0xFFFFF0; p != 0x10; p = gpunic_psn_add(p, 1)) {
		CHECK(gpunic_psn_cmp(gpunic_psn_add(p, 1), p) > 0);
		CHECK(gpunic_psn_cmp(p, gpunic_psn_add(p, 1)) < 0);
	}
}

TEST(pad)
{
	static const uint32_t len[] = { 0, 1, 2, 3, 4, 5, 6, 7, 1024, 2101, 0xFFFFFFFF };
	static const uint32_t pad[] = { 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 1 };

	for (size_t i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
		CHECK_EQ(gpunic_pad_bytes(len[i]), pad[i]);
		CHECK_EQ((len[i] + pad[i]) % 4, 0);
	}
}

TEST(aeth_credit_table)
{
	static const uint32_t credits[31] = {
		0,   1,   2,   3,    4,    6,    8,    12,   16,    24,    32,
		48,  64,  96,  128,  192,  256,  384,  512,  768,   1024,  1536,
		2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
	};

	for (uint8_t c = 0; c < 31; c++)
		CHECK_EQ(gpunic_aeth_credits(c), credits[c]);
	CHECK_EQ(gpunic_aeth_credits(GPUNIC_AETH_ACK_UNLIMITED), UINT32_MAX);
	/* The syndrome's type bits do not change the credit value. */
	CHECK_EQ(gpunic_aeth_credits(0x0A | GPUNIC_AETH_ACK), 32);
}

TEST(rnr_timer_table)
{
	CHECK_EQ(gpunic_rnr_timer_usec(0), 655360);
	CHECK_EQ(gpunic_rnr_timer_usec(1), 10);
	CHECK_EQ(gpunic_rnr_timer_usec(5), 60);
	CHECK_EQ(gpunic_rnr_timer_usec(14), 1280);
	CHECK_EQ(gpunic_rnr_timer_usec(25), 61440);
	CHECK_EQ(gpunic_rnr_timer_usec(31), 491520);
	CHECK_EQ(gpunic_rnr_timer_usec(0x2E), 1280); /* a whole RNR NAK syndrome, timer 14 */
	/* Codes 1..31 grow monotonically, code 0 is the longest of all. */
	for (uint8_t c = 2; c < 32; c++)
		CHECK(gpunic_rnr_timer_usec(c) > gpunic_rnr_timer_usec((uint8_t)(c - 1)));
	CHECK(gpunic_rnr_timer_usec(0) > gpunic_rnr_timer_usec(31));
}

TEST(aeth_syndrome_names)
{
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x1F), "ACK") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x00), "ACK") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x2E), "RNR_NAK") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x40), "RESERVED") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x60), "NAK_PSN_SEQ_ERROR") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x61), "NAK_INVALID_REQUEST") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x62), "NAK_REMOTE_ACCESS_ERROR") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x63), "NAK_REMOTE_OPERATIONAL_ERROR") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x64), "NAK_INVALID_RD_REQUEST") == 0);
	CHECK(strcmp(gpunic_aeth_syndrome_name(0x65), "NAK_RESERVED") == 0);
	for (unsigned s = 0; s < 256; s++)
		CHECK(gpunic_aeth_syndrome_name((uint8_t)s) != NULL);
}

TEST(wire_err_names)
{
	CHECK(strcmp(gpunic_wire_err_name(GPUNIC_WIRE_OK), "ok") == 0);
	CHECK(strcmp(gpunic_wire_err_name(GPUNIC_WIRE_IP_LENGTH), "ip_length") == 0);
	CHECK(strcmp(gpunic_wire_err_name(GPUNIC_WIRE_ICRC), "icrc") == 0);
	CHECK(strcmp(gpunic_wire_err_name(GPUNIC_WIRE_ERR_MAX), "unknown") == 0);
	CHECK(strcmp(gpunic_wire_err_name((enum gpunic_wire_err)-1), "unknown") == 0);
	for (int a = 0; a < GPUNIC_WIRE_ERR_MAX; a++) {
		const char *na = gpunic_wire_err_name((enum gpunic_wire_err)a);

		CHECK(na && strcmp(na, "unknown") != 0);
		for (int b = a + 1; b < GPUNIC_WIRE_ERR_MAX; b++)
			CHECK(strcmp(na, gpunic_wire_err_name((enum gpunic_wire_err)b)) != 0);
	}
}

TEST(pkey_valid)
{
	CHECK(gpunic_pkey_valid(0xFFFF));
	CHECK(gpunic_pkey_valid(0x7FFF));
	CHECK(!gpunic_pkey_valid(0x0000));
	CHECK(!gpunic_pkey_valid(0x8000));
	CHECK(!gpunic_pkey_valid(0xFFFE));
	CHECK(!gpunic_pkey_valid(0x1234));
}

/* docs/WIRE.md 1.3: golden captures with QPN 0x11 <-> 0x11 and 0x12 <-> 0x12. */
TEST(udp_sport)
{
	CHECK_EQ(gpunic_roce_udp_sport(0, 0x11, 0x11), 0xC121);
	CHECK_EQ(gpunic_roce_udp_sport(0, 0x12, 0x12), 0xC144);
	CHECK_EQ(gpunic_roce_udp_sport(0, 0x123, 0x456), gpunic_roce_udp_sport(0, 0x456, 0x123));
	/* With a flow label the QPNs do not matter. */
	CHECK_EQ(gpunic_roce_udp_sport(0x12345, 1, 2),
		 ((0x12345 & 0x3FFF) ^ (0x12345 >> 14)) | 0xC000);
	for (uint32_t q = 0; q < 4096; q += 7)
		CHECK(gpunic_roce_udp_sport(0, q, 0xFFFFFF - q) >= 0xC000);
}
