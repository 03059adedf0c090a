/* SPDX-License-Identifier: MIT */
/*
 * What fuzz_rpc's dispatcher serves, shared with its seed generator (gen_corpus_rpc.c) so that
 * the seeds are requests the table takes: the built-in functions and four of the harness's own.
 *   scatter  (uint8, int32, 12 bits bit-packed, int32[] of any length) -> int64: every kind of
 *            argument the schema check has, concatenated unaligned
 *   flip     no schema: the arguments reversed, in place when the shape is unified
 *   negate   host-call form: every argument byte inverted, the response written whole
 *   liar     no schema: claims as many result bytes as its first argument byte times 8
 *
 * Input format: u8 mode (bits 0-1 the table's GPUNIC_RPC_DROP_* flags, bit 2 the separate
 * shape), u8 rx size (16 + 2 x value bytes), u8 tx size (the same; separate shape only), then
 * the bytes that arrived in the slot: their count is the receive's length, which may be more
 * or less than the slot holds.
 */
#ifndef GPUNIC_FUZZ_RPC_ENV_H
#define GPUNIC_FUZZ_RPC_ENV_H

#include <stdint.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>

#define FR_MODE_SEPARATE 0x4u
#define FR_PREFIX 3u  /* mode, rx size, tx size */

static inline uint32_t fr_size(uint8_t v)
{
	return 16u + 2u * v;
}

static inline int fr_scatter(const void *input, void *output, uint32_t arg_len, uint32_t max,
		      uint32_t *result_len)
{
	const uint8_t *in = input;
	int32_t x, v;
	uint64_t sum;
	uint32_t i;

	*result_len = 0;
	if (arg_len < 7 || (arg_len - 7) % 4 || max < 8)
		return GPUNIC_RPC_HANDLER_EARGS;
	memcpy(&x, in + 1, 4);
	sum = in[0] + (uint64_t)(int64_t)x + (in[5] | (uint32_t)(in[6] & 0x0f) << 8);
	for (i = 7; i < arg_len; i += 4) {
		memcpy(&v, in + i, 4);
		sum += (uint64_t)(int64_t)v;
	}
	memcpy(output, &sum, 8);
	*result_len = 8;
	return 0;
}

static inline int fr_flip(const void *input, void *output, uint32_t arg_len, uint32_t max,
		   uint32_t *result_len)
{
	const uint8_t *in = input;
	uint8_t *out = output, t;
	uint32_t i;

	*result_len = 0;
	if (arg_len > max)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	for (i = 0; i < arg_len / 2; i++) {  /* swaps: correct whether or not out == in */
		t = in[i];
		out[i] = in[arg_len - 1 - i];
		out[arg_len - 1 - i] = t;
	}
	if (arg_len & 1)
		out[arg_len / 2] = in[arg_len / 2];
	*result_len = arg_len;
	return 0;
}

static inline void fr_negate(const void *rx_slot, void *tx_slot, size_t slot_size)
{
	struct gpunic_rpc_header h;
	struct gpunic_rpc_response r;
	const uint8_t *in = (const uint8_t *)rx_slot + sizeof(h);
	uint8_t *out = (uint8_t *)tx_slot + sizeof(r);
	uint32_t i;

	memcpy(&h, rx_slot, sizeof(h));
	memset(&r, 0, sizeof(r));
	r.magic = GPUNIC_RPC_MAGIC_RESPONSE;
	if (h.arg_len > slot_size - sizeof(r)) {
		r.status = GPUNIC_RPC_HANDLER_ENOSPC;
	} else {
		r.result_len = h.arg_len;
		for (i = 0; i < h.arg_len; i++)
			out[i] = (uint8_t)~in[i];
	}
	memcpy(tx_slot, &r, sizeof(r));
}

static inline int fr_liar(const void *input, void *output, uint32_t arg_len, uint32_t max,
		   uint32_t *result_len)
{
	(void)output;
	(void)max;
	*result_len = arg_len ? *(const uint8_t *)input * 8u : 0;
	return 0;
}

/* The table: built-ins, then scatter, flip, negate, liar. Return: 0, or the failure's errno. */
static inline int fr_table(struct gpunic_rpc_table *t, uint32_t flags)
{
	struct gpunic_rpc_schema s;
	int err;

	gpunic_rpc_table_init(t, flags);
	memset(&s, 0, sizeof(s));
	s.num_args = 4;
	s.args[0].type_id = GPUNIC_RPC_TYPE_UINT8;
	s.args[0].size_bytes = 1;
	s.args[0].num_elements = 1;
	s.args[1].type_id = GPUNIC_RPC_TYPE_INT32;
	s.args[1].size_bytes = 4;
	s.args[1].num_elements = 1;
	s.args[2].type_id = GPUNIC_RPC_TYPE_BIT_PACKED;
	s.args[2].size_bytes = 2;
	s.args[2].num_elements = 12;
	s.args[3].type_id = GPUNIC_RPC_TYPE_ARRAY_INT32;
	s.args[3].num_elements = GPUNIC_RPC_VARIABLE;
	s.num_results = 1;
	s.results[0].type_id = GPUNIC_RPC_TYPE_INT64;
	s.results[0].size_bytes = 8;
	s.results[0].num_elements = 1;
	err = gpunic_rpc_register_builtins(t, NULL, 0);
	if (!err)
		err = gpunic_rpc_register(t, "scatter", &s, fr_scatter, NULL, NULL, 0);
	if (!err)
		err = gpunic_rpc_register(t, "flip", NULL, fr_flip, NULL, NULL, 0);
	if (!err)
		err = gpunic_rpc_register(t, "negate", NULL, NULL, fr_negate, NULL, 0);
	if (!err)
		err = gpunic_rpc_register(t, "liar", NULL, fr_liar, NULL, NULL, 0);
	return err;
}

#endif
