/* Helpers shared by the wire tests: building packets and repairing crafted frames. */
#ifndef GPUNIC_TEST_WIRE_UTIL_H
#define GPUNIC_TEST_WIRE_UTIL_H

#include <gpunic/wire.h>

#include "harness.h"

#define IP_OFF GPUNIC_ETH_BYTES
#define UDP_OFF (IP_OFF + GPUNIC_IP4_BYTES)
#define BTH_OFF GPUNIC_L2L4_BYTES

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Recompute the IPv4 header checksum after a test edited the header. */
static inline void fix_ip_csum(uint8_t *frame)
{
	wr16(frame + IP_OFF + 10, 0);
	wr16(frame + IP_OFF + 10, gpunic_ip4_checksum(frame + IP_OFF, GPUNIC_IP4_BYTES));
}

/* Recompute the ICRC where the IP total length puts it (LSB first). */
static inline void fix_icrc(uint8_t *frame)
{
	size_t off = IP_OFF + rd16(frame + IP_OFF + 2) - GPUNIC_ICRC_BYTES;
	uint32_t crc = gpunic_icrc_compute(frame, off);

	for (int i = 0; i < 4; i++)
		frame[off + i] = (uint8_t)(crc >> (8 * i));
}

/* Both repairs, so a crafted frame has exactly the one fault the test put in it. */
static inline void fix_frame(uint8_t *frame)
{
	fix_ip_csum(frame);
	fix_icrc(frame);
}

/* A packet with a distinctive value in every field; the opcode's table says which are sent. */
static inline void fill_pkt(struct gpunic_pkt *p, uint8_t opcode, const uint8_t *payload,
			    uint32_t paylen)
{
	static const uint8_t dst[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
	static const uint8_t src[6] = { 0x02, 0x66, 0x77, 0x88, 0x99, 0xAA };

	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, dst, 6);
	memcpy(p->src_mac, src, 6);
	p->tos = 0x02;
	p->ttl = 64;
	p->ip_id = 0xBEEF;
	p->ip_frag = 0x4000;
	p->src_ip = 0xC0A80101;
	p->dst_ip = 0xC0A80102;
	p->src_port = 0xC123;
	p->dst_port = GPUNIC_ROCE_UDP_PORT;
	p->udp_csum = 0xA5A5;
	p->opcode = opcode;
	p->se = true;
	p->migreq = true;
	p->pkey = 0xFFFF;
	p->resv8a = 0xC0;
	p->qpn = 0xABCDEF;
	p->ack_req = true;
	p->psn = 0xFFFFFF;
	p->reth_va = 0x0123456789ABCDEFull;
	p->reth_rkey = 0x11223344;
	p->reth_len = 0x55667788;
	p->aeth_syndrome = 0x1F;
	p->aeth_msn = 0x987654;
	p->imm = 0xCAFEBABE;
	p->atm_va = 0x1000200030004000ull;
	p->atm_rkey = 0xDDCCBBAA;
	p->atm_swap_add = 0xFEDCBA9876543210ull;
	p->atm_compare = 0x0F1E2D3C4B5A6978ull;
	p->atmack_orig = 0x8877665544332211ull;
	p->ieth_rkey = 0x0BADF00D;
	p->payload = payload;
	p->paylen = paylen;
}

/* Encode @p into @buf and return the size, failing the test if the encoder refuses. */
static inline size_t encode_ok(const struct gpunic_pkt *p, uint8_t *buf, size_t cap)
{
	size_t n = gpunic_frame_encode(p, buf, cap);

	CHECK(n != 0);
	CHECK_EQ(n, gpunic_frame_size(p->opcode, p->paylen));
	return n;
}

#endif
