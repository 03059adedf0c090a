/* SPDX-License-Identifier: MIT */
/*
 * Handlers only the RPC tests register, header-only like gpunic/rpc_handlers.h so that the GPU
 * suite and its CPU twin run the same code. Each exercises one thing the built-in ones do not:
 *   mix3     three scalars of different sizes, concatenated with no padding (13 bytes in)
 *   bits10   10 bits bit-packed in and out: a last byte with unused bits on both sides
 *   liar     a handler that breaks its own contract, as its argument asks
 * Plain C, also compiled as CUDA C++.
 */
#ifndef RPC_TEST_HANDLERS_H
#define RPC_TEST_HANDLERS_H

#include <stdint.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>

/* mix3: (uint8 a, int32 b, int64 c) -> (int64 a + b + c, uint8 a ^ 0x5a), little-endian. */
GPUNIC_RPC_HANDLER int rt_mix3(const void *input, void *output, uint32_t arg_len,
			       uint32_t max_result_len, uint32_t *result_len)
{
	const uint8_t *in = (const uint8_t *)input;
	uint8_t *out = (uint8_t *)output;
	uint8_t a;
	int32_t b;
	int64_t c;
	uint64_t sum;

	*result_len = 0;
	if (arg_len != 13)
		return GPUNIC_RPC_HANDLER_EARGS;
	if (max_result_len < 9)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	a = in[0];
	memcpy(&b, in + 1, 4);  /* at offsets 1 and 5: unaligned, as the wire packs them */
	memcpy(&c, in + 5, 8);
	sum = (uint64_t)a + (uint64_t)(int64_t)b + (uint64_t)c;
	memcpy(out, &sum, 8);
	out[8] = (uint8_t)(a ^ 0x5a);
	*result_len = 9;
	return 0;
}

/* bits10: the 10 bits reversed (bit i to bit 9 - i). */
GPUNIC_RPC_HANDLER int rt_bits10(const void *input, void *output, uint32_t arg_len,
				 uint32_t max_result_len, uint32_t *result_len)
{
	const uint8_t *in = (const uint8_t *)input;
	uint8_t *out = (uint8_t *)output;
	uint32_t v, r = 0, i;

	*result_len = 0;
	if (arg_len != 2 || max_result_len < 2)
		return GPUNIC_RPC_HANDLER_EARGS;
	v = in[0] | (uint32_t)in[1] << 8;
	for (i = 0; i < 10; i++)
		r |= ((v >> i) & 1) << (9 - i);
	out[0] = (uint8_t)r;
	out[1] = (uint8_t)(r >> 8);
	*result_len = 2;
	return 0;
}

/* What liar does, by its one argument byte; its schema promises one int32 result. */
enum rt_liar_mode {
	RT_LIAR_HONEST = 0,       /* 4 bytes, status 0 */
	RT_LIAR_OVERRUN = 1,      /* claims one byte more than it may write */
	RT_LIAR_SHORT = 2,        /* status 0 with 3 bytes: breaks its schema */
	RT_LIAR_ERROR = 3,        /* its own error 7, no results */
	RT_LIAR_NEGATIVE = 4,     /* a negative status of its own, 4 bytes */
};

GPUNIC_RPC_HANDLER int rt_liar(const void *input, void *output, uint32_t arg_len,
			       uint32_t max_result_len, uint32_t *result_len)
{
	uint8_t mode = *(const uint8_t *)input;
	uint8_t *out = (uint8_t *)output;

	(void)arg_len;
	out[0] = 0x44;
	out[1] = 0x33;
	out[2] = 0x22;
	out[3] = 0x11;
	*result_len = 4;
	switch (mode) {
	case RT_LIAR_OVERRUN:
		*result_len = max_result_len + 1;
		return 0;
	case RT_LIAR_SHORT:
		*result_len = 3;
		return 0;
	case RT_LIAR_ERROR:
		*result_len = 0;
		return 7;
	case RT_LIAR_NEGATIVE:
		return -9;
	default:
		return 0;
	}
}

/* Their ids (FNV-1a of the names; rpc_cases.h checks them). */
#define RT_ID_MIX3 0xa8acc216u    /* "mix3" */
#define RT_ID_BITS10 0x835dcdb8u  /* "bits10" */
#define RT_ID_LIAR 0xfed8b035u    /* "liar" */

/* Bind the test handlers and the built-in ones in @t: on the GPU inside a kernel. */
GPUNIC_RPC_FN int rt_bind_all(struct gpunic_rpc_table *t)
{
	return gpunic_rpc_bind_builtins(t) + (gpunic_rpc_bind(t, RT_ID_MIX3, rt_mix3) == 0) +
	       (gpunic_rpc_bind(t, RT_ID_BITS10, rt_bits10) == 0) +
	       (gpunic_rpc_bind(t, RT_ID_LIAR, rt_liar) == 0);
}

#endif
