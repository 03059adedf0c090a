// SPDX-License-Identifier: MIT
/*
 * The bytes the wire layer says a connection's frames repeat (src/wire/fixed.h), which the shm
 * link leaves out of a packed frame: for every opcode, two frames of one connection, one
 * length and one opcode, differing in everything else a frame may change (PSN, AckReq, a
 * RETH's address, the immediate, the payload), must agree on the head and, where the wire
 * layer says so, the tail; and the tail, where there is one, must be the RETH's R_Key and
 * length. Built with src/wire's own sources, as the header is private to the library.
 */
#include "wire/fixed.h"
#include "wire_util.h"

static uint8_t payload_a[64], payload_b[64];

/* A frame of @op on one connection, with 32 bytes of payload where @op carries one; @k picks
 * the values of the fields that change from frame to frame. */
static size_t frame_of(const struct gpunic_opcode_info *info, uint8_t op, unsigned k,
		       uint8_t *buf, size_t cap)
{
	struct gpunic_pkt p;

	fill_pkt(&p, op, k ? payload_b : payload_a, info->mask & GPUNIC_MASK_PAYLOAD ? 32 : 0);
	p.psn = k ? 0x000123 : 0xFFFFFF;
	p.ack_req = k;
	p.reth_va = k ? 0x1000 : 0x7F0000001000ull;
	p.imm = k ? 1 : 0xCAFEBABE;
	return gpunic_frame_encode(&p, buf, cap);
}

TEST(wire_fixed_bytes_repeat_along_a_connection)
{
	static uint8_t a[GPUNIC_MAX_FRAME_BYTES], b[GPUNIC_MAX_FRAME_BYTES];
	unsigned with_tail = 0, head_only = 0;

	for (size_t i = 0; i < sizeof(payload_a); i++) {
		payload_a[i] = (uint8_t)i;
		payload_b[i] = (uint8_t)~i;
	}
	for (unsigned op = 0; op < 256; op++) {
		const struct gpunic_opcode_info *info = gpunic_opcode_info((uint8_t)op);
		size_t la, lb;
		bool tail;

		if (!info)
			continue;
		la = frame_of(info, (uint8_t)op, 0, a, sizeof(a));
		lb = frame_of(info, (uint8_t)op, 1, b, sizeof(b));
		CHECK(la != 0);
		CHECK_EQ(la, lb);
		CHECK(la >= WIRE_FIXED_HEAD);
		tail = wire_fixed_tail(a, la);
		CHECK_EQ(tail, wire_fixed_tail(b, lb));
		/* the head: everything up to the PSN word is the connection's */
		CHECK(memcmp(a, b, WIRE_FIXED_HEAD) == 0);
		/* the PSN is not: the first byte past the head changes with the frame */
		CHECK(memcmp(a + WIRE_FIXED_HEAD, b + WIRE_FIXED_HEAD, 4) != 0);
		/* a tail exactly where a RETH follows the BTH, and it holds its R_Key and length */
		CHECK_EQ(tail, (info->mask & GPUNIC_MASK_RETH) && info->reth_off == GPUNIC_BTH_BYTES);
		if (tail) {
			with_tail++;
			CHECK(memcmp(a + WIRE_FIXED_TAIL_OFF, b + WIRE_FIXED_TAIL_OFF,
				     WIRE_FIXED_TAIL_END - WIRE_FIXED_TAIL_OFF) == 0);
			CHECK_EQ(rd16(a + WIRE_FIXED_TAIL_OFF) << 16 | rd16(a + WIRE_FIXED_TAIL_OFF + 2),
				 0x11223344u);
			CHECK_EQ(rd16(a + WIRE_FIXED_TAIL_OFF + 4) << 16 |
					 rd16(a + WIRE_FIXED_TAIL_OFF + 6), 0x55667788u);
			/* and the RETH's address before it changes */
			CHECK(memcmp(a + WIRE_FIXED_HEAD + 4, b + WIRE_FIXED_HEAD + 4, 8) != 0);
			/* a frame too short to hold a tail has none */
			CHECK(!wire_fixed_tail(a, WIRE_FIXED_TAIL_END - 1));
		} else {
			head_only++;
		}
	}
	/* RC and UC WRITE FIRST, ONLY and ONLY with immediate, RC READ request */
	CHECK_EQ(with_tail, 7);
	CHECK(head_only > 20);
}
