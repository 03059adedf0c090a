/* SPDX-License-Identifier: MIT */
/*
 * gpunic's built-in RPC handlers in the device-call form (gpunic_rpc_dev_fn), header-only for
 * GPU kernels and CPU threads (docs/RPC.md, "Built-in functions"):
 *   echo        results = arguments
 *   add_one     every argument byte plus one (mod 256)
 *   surface_d3  lookup-table decoder of the [[9,1,3]] rotated surface code: an 8-bit syndrome
 *               (bit-packed) in, an 18-bit correction (bit-packed, 3 bytes) out
 * libgpunic registers them with gpunic_rpc_register_builtins() and binds their CPU copies; a GPU
 * kernel binds its own with gpunic_rpc_bind_builtins(), on the table's copy in GPU memory.
 * Each works in the unified shape, where @output == @input.
 */
#ifndef GPUNIC_RPC_HANDLERS_H
#define GPUNIC_RPC_HANDLERS_H

#include <stdint.h>
#include <string.h>

#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 8 bytes at @p as one word: a load on the GPU (@p 8-byte aligned), memcpy on the CPU, where
 * the compiler makes it one load without breaking C's aliasing rules. */
GPUNIC_RPC_FN uint64_t gpunic_rpc_load64(const uint8_t *p)
{
#if GPUNIC_RPC_ON_GPU
	return *(const uint64_t *)p;
#else
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
#endif
}

GPUNIC_RPC_FN void gpunic_rpc_store64(uint8_t *p, uint64_t w)
{
#if GPUNIC_RPC_ON_GPU
	*(uint64_t *)p = w;
#else
	memcpy(p, &w, 8);
#endif
}

/* Copy @n bytes; the two buffers are the same (nothing to do) or do not overlap. Words when
 * both are 8-byte aligned, as payloads after a 24-byte header in an aligned slot are. */
GPUNIC_RPC_FN void gpunic_rpc_copy(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	uint32_t i = 0;

	if (dst == src)
		return;
	if ((((uintptr_t)dst | (uintptr_t)src) & 7) == 0)
		for (; i + 8 <= n; i += 8)
			gpunic_rpc_store64(dst + i, gpunic_rpc_load64(src + i));
	for (; i < n; i++)
		dst[i] = src[i];
}

/* echo: the arguments, unchanged, as results. */
GPUNIC_RPC_HANDLER int gpunic_rpc_echo(const void *input, void *output, uint32_t arg_len,
				       uint32_t max_result_len, uint32_t *result_len)
{
	*result_len = 0;
	if (arg_len > max_result_len)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	gpunic_rpc_copy((uint8_t *)output, (const uint8_t *)input, arg_len);
	*result_len = arg_len;
	return 0;
}

/* add_one: every argument byte plus one, wrapping at 256 (the loop's --work add-one). */
GPUNIC_RPC_HANDLER int gpunic_rpc_add_one(const void *input, void *output, uint32_t arg_len,
					  uint32_t max_result_len, uint32_t *result_len)
{
	const uint8_t *in = (const uint8_t *)input;
	uint8_t *out = (uint8_t *)output;
	uint32_t i = 0;

	*result_len = 0;
	if (arg_len > max_result_len)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	if ((((uintptr_t)in | (uintptr_t)out) & 7) == 0)
		for (; i + 8 <= arg_len; i += 8) {
			uint64_t w = gpunic_rpc_load64(in + i);

			/* a byte-wise add in one word: the low 7 bits carry into bit 7 only */
			gpunic_rpc_store64(out + i, ((w & 0x7f7f7f7f7f7f7f7full) +
						     0x0101010101010101ull) ^
						    (w & 0x8080808080808080ull));
		}
	for (; i < arg_len; i++)
		out[i] = (uint8_t)(in[i] + 1);
	*result_len = arg_len;
	return 0;
}

/*
 * The [[9,1,3]] rotated surface code, qubits numbered row by row on a 3 x 3 grid:
 *
 *     0 1 2      Z-type stabilizers (detect X errors), syndrome bits 0-3:
 *     3 4 5        Z0Z1Z3Z4, Z2Z5, Z3Z6, Z4Z5Z7Z8
 *     6 7 8      X-type stabilizers (detect Z errors), syndrome bits 4-7:
 *                  X0X1, X1X2X4X5, X3X4X6X7, X7X8
 *
 * Logical Z = Z0Z1Z2, logical X = X0X3X6. Each table below maps a 4-bit syndrome to the
 * lightest error with that syndrome, the lowest-numbered of equals (bit q: qubit q); every
 * single-qubit error is corrected up to a stabilizer. gpunic_rpc_surface_d3_reference() in
 * libgpunic finds the same corrections by search, and tests/rpc compares the two for every
 * syndrome.
 */
GPUNIC_RPC_FN uint32_t gpunic_rpc_surface_d3_x(uint32_t s)
{
	switch (s & 15) {
	case 0x1: return 0x001; /* X0 */
	case 0x2: return 0x004; /* X2 */
	case 0x3: return 0x005; /* X0 X2 */
	case 0x4: return 0x040; /* X6 */
	case 0x5: return 0x008; /* X3 */
	case 0x6: return 0x044; /* X2 X6 */
	case 0x7: return 0x00c; /* X2 X3 */
	case 0x8: return 0x080; /* X7 */
	case 0x9: return 0x010; /* X4 */
	case 0xa: return 0x020; /* X5 */
	case 0xb: return 0x014; /* X2 X4 */
	case 0xc: return 0x018; /* X3 X4 */
	case 0xd: return 0x050; /* X4 X6 */
	case 0xe: return 0x060; /* X5 X6 */
	case 0xf: return 0x028; /* X3 X5 */
	default: return 0;
	}
}

GPUNIC_RPC_FN uint32_t gpunic_rpc_surface_d3_z(uint32_t s)
{
	switch (s & 15) {
	case 0x1: return 0x001; /* Z0 */
	case 0x2: return 0x004; /* Z2 */
	case 0x3: return 0x002; /* Z1 */
	case 0x4: return 0x008; /* Z3 */
	case 0x5: return 0x009; /* Z0 Z3 */
	case 0x6: return 0x010; /* Z4 */
	case 0x7: return 0x00a; /* Z1 Z3 */
	case 0x8: return 0x100; /* Z8 */
	case 0x9: return 0x101; /* Z0 Z8 */
	case 0xa: return 0x090; /* Z4 Z7 */
	case 0xb: return 0x102; /* Z1 Z8 */
	case 0xc: return 0x080; /* Z7 */
	case 0xd: return 0x081; /* Z0 Z7 */
	case 0xe: return 0x084; /* Z2 Z7 */
	case 0xf: return 0x082; /* Z1 Z7 */
	default: return 0;
	}
}

/* surface_d3: 1 byte of syndrome in, 3 bytes of correction out (bits 0-8 X, 9-17 Z). */
GPUNIC_RPC_HANDLER int gpunic_rpc_surface_d3(const void *input, void *output, uint32_t arg_len,
					     uint32_t max_result_len, uint32_t *result_len)
{
	uint8_t *out = (uint8_t *)output;
	uint32_t s, c;

	*result_len = 0;
	if (arg_len != 1)
		return GPUNIC_RPC_HANDLER_EARGS;
	if (max_result_len < 3)
		return GPUNIC_RPC_HANDLER_ENOSPC;
	s = *(const uint8_t *)input;  /* read before @output, which may be the same byte, is written */
	c = gpunic_rpc_surface_d3_x(s) | gpunic_rpc_surface_d3_z(s >> 4) << 9;
	out[0] = (uint8_t)c;
	out[1] = (uint8_t)(c >> 8);
	out[2] = (uint8_t)(c >> 16);
	*result_len = 3;
	return 0;
}

/*
 * Bind the built-in handlers compiled here to those of their functions that @t has: on the GPU
 * (in a kernel, on the table in GPU memory) the GPU's, on the CPU the CPU's.
 * Return: how many were bound.
 */
GPUNIC_RPC_FN int gpunic_rpc_bind_builtins(struct gpunic_rpc_table *t)
{
	return (gpunic_rpc_bind(t, GPUNIC_RPC_ID_ECHO, gpunic_rpc_echo) == 0) +
	       (gpunic_rpc_bind(t, GPUNIC_RPC_ID_ADD_ONE, gpunic_rpc_add_one) == 0) +
	       (gpunic_rpc_bind(t, GPUNIC_RPC_ID_SURFACE_D3, gpunic_rpc_surface_d3) == 0);
}

#ifdef __cplusplus
}
#endif

#endif
