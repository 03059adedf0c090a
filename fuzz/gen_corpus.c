// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_decode: one valid frame per opcode of the table (with payloads
 * that exercise pad 0..3), a minimum-size frame with Ethernet padding, and the same frames under
 * the other decode flags. Each file is: flags byte, then the frame.
 *
 * Usage: fuzz_gen_corpus <dir>   (the committed seeds in fuzz/corpus/decode came from this)
 */
#include <stdio.h>
#include <string.h>

#include <gpunic/wire.h>

#include "seed_file.h"

static uint8_t payload[64];

static int write_seed(const char *dir, const char *name, uint8_t flags, const uint8_t *frame,
		      size_t len)
{
	return seed_file_write(dir, name, &flags, 1, frame, len);
}

static void fill(struct gpunic_pkt *p, uint8_t opcode, uint32_t paylen)
{
	static const uint8_t dst[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t src[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x02 };

	memset(p, 0, sizeof(*p));
	memcpy(p->dst_mac, dst, 6);
	memcpy(p->src_mac, src, 6);
	p->ttl = 64;
	p->ip_id = 0x77a5;
	p->ip_frag = 0x4000;
	p->src_ip = 0x0a000002;
	p->dst_ip = 0x0a000001;
	p->src_port = gpunic_roce_udp_sport(0, 0x11, 0x11);
	p->dst_port = GPUNIC_ROCE_UDP_PORT;
	p->opcode = opcode;
	p->pkey = 0xFFFF;
	p->qpn = 0x11;
	p->psn = 0xFFFFFE;
	p->reth_va = 0x00005609eed3bee0ull;
	p->reth_rkey = 0x2cc;
	p->reth_len = paylen;
	p->aeth_syndrome = GPUNIC_AETH_ACK_UNLIMITED;
	p->aeth_msn = 1;
	p->imm = 0x11223344;
	p->atm_va = 0x1000;
	p->atm_rkey = 0x2cc;
	p->atm_swap_add = 1;
	p->atmack_orig = 7;
	p->ieth_rkey = 0x2cc;
	p->payload = payload;
	p->paylen = paylen;
}

/* The largest of a few payload sizes that the opcode accepts, so each seed shows its pad. */
static uint32_t seed_paylen(uint8_t opcode, unsigned variant)
{
	static const uint32_t sizes[] = { 5, 8, 7, 0 };

	for (unsigned k = variant; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		if (gpunic_frame_size(opcode, sizes[k]))
			return sizes[k];
	return 0;
}

int main(int argc, char **argv)
{
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_pkt p;
	char name[64];
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
		return 2;
	}
	memcpy(payload, "hello, gpunic fuzzing seed payload bytes", 40);
	for (unsigned op = 0; op < 256; op++) {
		if (!gpunic_opcode_info((uint8_t)op))
			continue;
		fill(&p, (uint8_t)op, seed_paylen((uint8_t)op, op & 1));
		n = gpunic_frame_encode(&p, frame, sizeof(frame));
		snprintf(name, sizeof(name), "%02x_%s", op, gpunic_opcode_name((uint8_t)op));
		if (!n || write_seed(argv[1], name, 0, frame, n))
			return 1;
	}
	/* A 58-byte frame padded to the Ethernet minimum, under each flag combination. */
	fill(&p, 0x24, 0);
	n = gpunic_frame_encode(&p, frame, sizeof(frame));
	memset(frame + n, 0, GPUNIC_ETH_MIN_FRAME_BYTES - n);
	for (uint8_t flags = 0; flags < 8; flags++) {
		snprintf(name, sizeof(name), "min_frame_flags%u", flags);
		if (write_seed(argv[1], name, flags, frame, GPUNIC_ETH_MIN_FRAME_BYTES))
			return 1;
	}
	return 0;
}
