/* SPDX-License-Identifier: MIT */
/*
 * A shared library of CPU handlers as gpunic_rpc_load_plugin() loads them: it includes
 * gpunic/rpc.h and links nothing of libgpunic. tests/rpc/CMakeLists.txt builds it four ways:
 * as it should be, exporting no gpunic_rpc_plugin, with another ABI number, and with a handler
 * named like a built-in one.
 *   triple   device-call form: every argument byte times 3
 *   negate   host-call form (CUDA-Q's): every argument byte inverted, the response written whole
 */
#include <string.h>

#include <gpunic/rpc.h>

static int triple(const void *input, void *output, uint32_t arg_len, uint32_t max_result_len,
		  uint32_t *result_len)
{
	const uint8_t *in = input;
	uint8_t *out = output;
	uint32_t i;

	*result_len = 0;
	if (arg_len > max_result_len)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	for (i = 0; i < arg_len; i++)
		out[i] = (uint8_t)(in[i] * 3);
	*result_len = arg_len;
	return 0;
}

static void negate(const void *rx_slot, void *tx_slot, size_t slot_size)
{
	struct gpunic_rpc_header h;
	struct gpunic_rpc_response r;
	uint8_t *out = (uint8_t *)tx_slot + sizeof(r);
	const uint8_t *in = (const uint8_t *)rx_slot + sizeof(h);
	uint32_t i;

	memcpy(&h, rx_slot, sizeof(h));
	r.magic = GPUNIC_RPC_MAGIC_RESPONSE;
	r.request_id = h.request_id;
	r.ptp_timestamp = h.ptp_timestamp;
	r.status = 0;
	r.result_len = h.arg_len;
	if (h.arg_len > slot_size - sizeof(r)) {
		r.status = GPUNIC_RPC_HANDLER_ENOSPC;
		r.result_len = 0;
	}
	for (i = 0; i < r.result_len; i++)
		out[i] = (uint8_t)~in[i];
	memcpy(tx_slot, &r, sizeof(r));
}

#ifdef PLUGIN_CLASH
#define FIRST_NAME "echo"
#else
#define FIRST_NAME "triple"
#endif
#ifndef PLUGIN_ABI
#define PLUGIN_ABI GPUNIC_RPC_PLUGIN_ABI
#endif

static const struct gpunic_rpc_plugin_fn fns[] = {
	{ "negate", NULL, NULL, negate },
	{ FIRST_NAME, NULL, triple, NULL },
};

static const struct gpunic_rpc_plugin_desc plugin = { PLUGIN_ABI, 2, fns };

#ifdef PLUGIN_NO_SYMBOL
/* exported under another name, so the loader must not find it */
const struct gpunic_rpc_plugin_desc *not_the_plugin(void);
const struct gpunic_rpc_plugin_desc *not_the_plugin(void)
#else
const struct gpunic_rpc_plugin_desc *gpunic_rpc_plugin(void)
#endif
{
	return &plugin;
}
