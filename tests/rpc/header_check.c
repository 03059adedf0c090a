/* SPDX-License-Identifier: MIT */
/*
 * Compiled, not run: the RPC headers alone, with no feature macros, must build warning-free as
 * strict C11 (gcc, clang) and as C++ (what nvcc's host pass sees). The dispatch step and every
 * built-in handler are called so that -O2 analyses them.
 */
#include <gpunic/rpc.h>
#include <gpunic/rpc_dev.h>
#include <gpunic/rpc_handlers.h>

uint32_t gpunic_rpc_header_check(struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
				 struct gpunic_rpc_counters *c);

uint32_t gpunic_rpc_header_check(struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
				 struct gpunic_rpc_counters *c)
{
	struct gpunic_rpc_header h;
	const struct gpunic_rpc_entry *e;
	uint32_t r = (uint32_t)gpunic_rpc_bind_builtins(t) + gpunic_rpc_fnv1a("echo");

	r += gpunic_rpc_dispatch(t, rx, 64, 256, tx, 256, c);
	r += gpunic_rpc_dispatch_unified(t, rx, 64, 256, c);
	r += (uint32_t)gpunic_rpc_parse(t, rx, 64, 256, &h, &e) + h.arg_len;
	r += gpunic_rpc_type_unit(rx[0]) + gpunic_rpc_surface_d3_x(rx[1]) +
	     gpunic_rpc_surface_d3_z(rx[2]);
	return r;
}
