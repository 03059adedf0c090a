/* SPDX-License-Identifier: MIT */
/*
 * What the two RPC examples share (rpc_decoder_cpu.c serves on a CPU thread, rpc_decoder_gpu.cu
 * in a persistent GPU kernel): a decoder handler of the example's own, the function table, and
 * the sender, which plays the FPGA from the host.
 *
 * The decoder: the 3-qubit repetition code against bit flips. Stabilizers Z0Z1 and Z1Z2 give a
 * 2-bit syndrome (bit-packed, one byte); the handler answers the flip to undo as 3 bits.
 *
 * The ring: RING_SLOTS slots of SLOT_BYTES, each with a flag the sender raises (rx) and one the
 * server raises (tx). The server answers in the slot itself (the unified shape).
 */
#ifndef EXAMPLE_RPC_DECODER_H
#define EXAMPLE_RPC_DECODER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>
#include <gpunic/rpc_handlers.h>

#define RING_SLOTS 8u
#define SLOT_BYTES 64u
#define REQUESTS 64u
#define REP3_ID 0xf6306b44u  /* gpunic_rpc_fnv1a("rep3_decode"), checked in example_table() */

/* The handler, in the device-call form: compiled for the GPU and for the CPU from this code. */
GPUNIC_RPC_HANDLER int rep3_decode(const void *input, void *output, uint32_t arg_len,
				   uint32_t max_result_len, uint32_t *result_len)
{
	uint8_t flip;

	if (arg_len != 1 || max_result_len < 1)
		return GPUNIC_RPC_HANDLER_EARGS;
	/* bit 0: Z0Z1 fired, bit 1: Z1Z2 fired */
	switch (*(const uint8_t *)input & 3) {
	case 1:
		flip = 0x1;  /* only Z0Z1: qubit 0 */
		break;
	case 3:
		flip = 0x2;  /* both: qubit 1 */
		break;
	case 2:
		flip = 0x4;  /* only Z1Z2: qubit 2 */
		break;
	default:
		flip = 0;
	}
	*(uint8_t *)output = flip;
	*result_len = 1;
	return 0;
}

struct ring {
	uint32_t rx_flag[RING_SLOTS];  /* sender: request number + 1, once the slot is written */
	uint32_t tx_flag[RING_SLOTS];  /* server: the same number, once the response is */
	uint32_t rx_len[RING_SLOTS];   /* bytes the sender wrote */
	uint32_t stop;
	uint8_t slot[RING_SLOTS][SLOT_BYTES] __attribute__((aligned(64)));
};

/* The table: gpunic's built-in functions and the decoder, with its schema. */
static int example_table(struct gpunic_rpc_table *t)
{
	struct gpunic_rpc_schema s;
	char why[256];

	memset(&s, 0, sizeof(s));
	s.num_args = 1;
	s.args[0].type_id = GPUNIC_RPC_TYPE_BIT_PACKED;
	s.args[0].size_bytes = 1;
	s.args[0].num_elements = 2;
	s.num_results = 1;
	s.results[0].type_id = GPUNIC_RPC_TYPE_BIT_PACKED;
	s.results[0].size_bytes = 1;
	s.results[0].num_elements = 3;
	gpunic_rpc_table_init(t, 0);
	if (gpunic_rpc_register_builtins(t, why, sizeof(why)) ||
	    gpunic_rpc_register(t, "rep3_decode", &s, NULL, NULL, why, sizeof(why))) {
		fprintf(stderr, "rpc_decoder: %s\n", why);
		return -1;
	}
	if (gpunic_rpc_fnv1a("rep3_decode") != REP3_ID) {
		fprintf(stderr, "rpc_decoder: REP3_ID is not rep3_decode's id\n");
		return -1;
	}
	return 0;
}

/* Bind the handlers compiled here: call it on the CPU, or in a kernel for the GPU's table. */
GPUNIC_RPC_FN int example_bind(struct gpunic_rpc_table *t)
{
	return gpunic_rpc_bind_builtins(t) + (gpunic_rpc_bind(t, REP3_ID, rep3_decode) == 0);
}

/* The request number @k asks: a syndrome, and every eighth one a function nobody serves. */
static uint8_t example_syndrome(uint32_t k)
{
	return (uint8_t)(k * 7 % 4);
}

static int example_unserved(uint32_t k)
{
	return k % 8 == 7;
}

/* Wait for the response to request @k in its slot, then check it. Return: 0 if right. */
static int example_check(struct ring *ring, uint32_t k, int (*alive)(void))
{
	static const uint8_t want_flip[4] = { 0x0, 0x1, 0x4, 0x2 };  /* worked out by hand */
	uint32_t i = k % RING_SLOTS;
	uint8_t s = example_syndrome(k);
	int32_t want = example_unserved(k) ? GPUNIC_RPC_E_UNKNOWN_FUNCTION : 0;

	while (__atomic_load_n(&ring->tx_flag[i], __ATOMIC_ACQUIRE) != k + 1)
		if (!alive()) {
			fprintf(stderr, "rpc_decoder: the server stopped before request %u\n", k);
			return -1;
		}
	if (gpunic_rpc_response_check(ring->slot[i], SLOT_BYTES, k, 1000ull * k, want,
				      want ? NULL : &want_flip[s], want ? 0 : 1) !=
	    GPUNIC_RPC_CHECK_OK) {
		fprintf(stderr, "rpc_decoder: request %u (syndrome %u): wrong response\n", k, s);
		return -1;
	}
	return 0;
}

/*
 * The sender, as an FPGA would be: REQUESTS decoding rounds through the ring, up to
 * RING_SLOTS in flight, each response checked before its slot is used again. @alive says
 * whether the server still runs.
 * Return: 0 if every response was right.
 */
static int example_send(struct ring *ring, int (*alive)(void))
{
	uint32_t k, i, fid;
	uint8_t s;

	for (k = 0; k < REQUESTS + RING_SLOTS; k++) {
		i = k % RING_SLOTS;
		if (k >= RING_SLOTS && example_check(ring, k - RING_SLOTS, alive))
			return -1;
		if (k >= REQUESTS)
			continue;
		s = example_syndrome(k);
		fid = example_unserved(k) ? gpunic_rpc_fnv1a("not_served_here") : REP3_ID;
		ring->rx_len[i] = gpunic_rpc_request_write(ring->slot[i], SLOT_BYTES, fid, &s, 1, k,
							   1000ull * k);
		__atomic_store_n(&ring->rx_flag[i], k + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

#endif
