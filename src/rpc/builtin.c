// SPDX-License-Identifier: MIT
/*
 * The built-in RPC functions (include/gpunic/rpc_handlers.h): their registration with the CPU
 * copies of their handlers, arguments for a sender, and CPU references written apart from the
 * handlers, so that a test comparing the two compares two implementations. The surface-code
 * decoder's reference searches for its corrections instead of reading the handler's table.
 */
#include <pthread.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_handlers.h>

#include "rpc_loc.h"

/* echo and add_one: any number of bytes in, as many out. */
static const struct gpunic_rpc_schema bytes_schema = {
	.num_args = 1,
	.num_results = 1,
	.args = { { GPUNIC_RPC_TYPE_ARRAY_UINT8, { 0 }, 0, GPUNIC_RPC_VARIABLE } },
	.results = { { GPUNIC_RPC_TYPE_ARRAY_UINT8, { 0 }, 0, GPUNIC_RPC_VARIABLE } },
};

/* surface_d3: 8 syndrome bits in, 18 correction bits out. */
static const struct gpunic_rpc_schema surface_d3_schema = {
	.num_args = 1,
	.num_results = 1,
	.args = { { GPUNIC_RPC_TYPE_BIT_PACKED, { 0 }, 1, 8 } },
	.results = { { GPUNIC_RPC_TYPE_BIT_PACKED, { 0 }, 3, 18 } },
};

int gpunic_rpc_register_builtins(struct gpunic_rpc_table *t, char *why, size_t n)
{
	int err = gpunic_rpc_register(t, "echo", &bytes_schema, gpunic_rpc_echo, NULL, why, n);

	if (!err)
		err = gpunic_rpc_register(t, "add_one", &bytes_schema, gpunic_rpc_add_one, NULL, why,
					  n);
	if (!err)
		err = gpunic_rpc_register(t, "surface_d3", &surface_d3_schema, gpunic_rpc_surface_d3,
					  NULL, why, n);
	return err;
}

/* ---------------------------------------------------------------- the surface code */

/* Stabilizer supports (bit q: qubit q) on the 3 x 3 grid of rpc_handlers.h. */
static const uint32_t surface_z_stabilizers[4] = { 0x01b, 0x024, 0x048, 0x1b0 };
static const uint32_t surface_x_stabilizers[4] = { 0x003, 0x036, 0x0d8, 0x180 };

static uint32_t surface_half_syndrome(const uint32_t stabilizers[4], uint32_t err)
{
	uint32_t s = 0, i;

	for (i = 0; i < 4; i++)
		s |= (uint32_t)(__builtin_popcount(stabilizers[i] & err) & 1) << i;
	return s;
}

uint8_t gpunic_rpc_surface_d3_syndrome(uint32_t x_err, uint32_t z_err)
{
	return (uint8_t)(surface_half_syndrome(surface_z_stabilizers, x_err & 0x1ff) |
			 surface_half_syndrome(surface_x_stabilizers, z_err & 0x1ff) << 4);
}

/* Lightest error per 4-bit syndrome, lowest-numbered of equals: every one of the 512 tried. */
static uint16_t surface_x_fix[16], surface_z_fix[16];
static pthread_once_t surface_once = PTHREAD_ONCE_INIT;

static void surface_search(const uint32_t stabilizers[4], uint16_t fix[16])
{
	int weight[16];
	uint32_t e, s;

	for (s = 0; s < 16; s++)
		weight[s] = 10;
	for (e = 0; e < 512; e++) {
		s = surface_half_syndrome(stabilizers, e);
		if (__builtin_popcount(e) < weight[s]) {
			weight[s] = __builtin_popcount(e);
			fix[s] = (uint16_t)e;
		}
	}
}

static void surface_tables(void)
{
	surface_search(surface_z_stabilizers, surface_x_fix);
	surface_search(surface_x_stabilizers, surface_z_fix);
}

uint32_t gpunic_rpc_surface_d3_reference(uint8_t syndrome)
{
	pthread_once(&surface_once, surface_tables);
	return surface_x_fix[syndrome & 15] | (uint32_t)surface_z_fix[syndrome >> 4] << 9;
}

/* ---------------------------------------------------------------- for senders and tests */

uint32_t gpunic_rpc_builtin_args(uint32_t function_id, uint64_t seq, void *out, uint32_t max)
{
	uint8_t *p = out;
	uint32_t i;

	switch (function_id) {
	case GPUNIC_RPC_ID_ECHO:
	case GPUNIC_RPC_ID_ADD_ONE:
		/* every byte depends on the message, so a reply to another one cannot pass */
		for (i = 0; i < max; i++)
			p[i] = (uint8_t)((seq >> (8 * (i & 7))) + i * 37u);
		return max;
	case GPUNIC_RPC_ID_SURFACE_D3:
		if (!max)
			return 0;
		p[0] = (uint8_t)seq;
		return 1;
	default:
		return 0;
	}
}

int32_t gpunic_rpc_builtin_reference(uint32_t function_id, const void *args, uint32_t arg_len,
				     void *out, uint32_t max, uint32_t *out_len)
{
	const uint8_t *a = args;
	uint8_t *o = out;
	uint32_t i, c;

	*out_len = 0;
	switch (function_id) {
	case GPUNIC_RPC_ID_ECHO:
	case GPUNIC_RPC_ID_ADD_ONE:
		if (arg_len > max)
			return GPUNIC_RPC_HANDLER_ENOSPC;
		for (i = 0; i < arg_len; i++)
			o[i] = (uint8_t)(a[i] + (function_id == GPUNIC_RPC_ID_ADD_ONE));
		*out_len = arg_len;
		return 0;
	case GPUNIC_RPC_ID_SURFACE_D3:
		if (arg_len != 1)
			return GPUNIC_RPC_HANDLER_EARGS;
		if (max < 3)
			return GPUNIC_RPC_HANDLER_ENOSPC;
		c = gpunic_rpc_surface_d3_reference(a[0]);
		for (i = 0; i < 3; i++)
			o[i] = (uint8_t)(c >> (8 * i));
		*out_len = 3;
		return 0;
	default:
		return GPUNIC_RPC_E_UNKNOWN_FUNCTION;
	}
}
