/* SPDX-License-Identifier: MIT */
/*
 * The RPC dispatch step in a GPU kernel: the batch of rpc_cases.h, every good and bad request,
 * dispatched by one GPU thread through gpunic/rpc_dev.h with handlers bound on the GPU, and
 * checked against the CPU references. test_rpc_twin.c runs the same on the CPU. Skipped (77)
 * without a CUDA device.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_cuda.h"
#include "rpc_cases.h"

/* Handler addresses are the GPU's only inside a kernel: bind them there, in GPU memory. */
__global__ void k_bind(struct gpunic_rpc_table *t, int *bound)
{
	*bound = rt_bind_all(t);
}

/* One thread, slot after slot, as the forwarder's loop would. */
__global__ void k_dispatch(const struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
			   const uint32_t *rx_len, uint32_t n, uint32_t *ret,
			   struct gpunic_rpc_counters *c)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint8_t *slot = rx + (size_t)i * RC_SLOT;

		ret[i] = gpunic_rpc_dispatch(t, slot, rx_len[i], RC_SLOT,
					     tx ? tx + (size_t)i * RC_SLOT : slot, RC_SLOT, c);
	}
}

template <typename T> static T *gpu_copy_in(const T *host, size_t bytes)
{
	void *d = NULL;

	CUDA_OK(cudaMalloc(&d, bytes ? bytes : 1));
	if (host && bytes)
		CUDA_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
	return (T *)d;
}

/* @bind: bind the handlers on the GPU first (0: leave the table as the host built it). */
static void gpu_run(const struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
		    const uint32_t *rx_len, uint32_t n, uint32_t *ret,
		    struct gpunic_rpc_counters *c, int bind)
{
	size_t bytes = (size_t)n * RC_SLOT;
	struct gpunic_rpc_table *dt = gpu_copy_in(t, sizeof(*t));
	uint8_t *drx = gpu_copy_in(rx, bytes);
	uint8_t *dtx = tx ? gpu_copy_in(tx, bytes) : NULL;
	uint32_t *dlen = gpu_copy_in(rx_len, n * sizeof(*rx_len));
	uint32_t *dret = gpu_copy_in((uint32_t *)NULL, n * sizeof(*ret));
	struct gpunic_rpc_counters *dc = gpu_copy_in(c, sizeof(*c));
	int *dbound = gpu_copy_in((int *)NULL, sizeof(int)), bound = 0;

	if (bind) {
		k_bind<<<1, 1>>>(dt, dbound);
		CUDA_OK(cudaGetLastError());
		CUDA_OK(cudaMemcpy(&bound, dbound, sizeof(bound), cudaMemcpyDeviceToHost));
		CHECK_EQ(bound, 6);
	}
	k_dispatch<<<1, 1>>>(dt, drx, dtx, dlen, n, dret, dc);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(rx, drx, bytes, cudaMemcpyDeviceToHost));
	if (tx)
		CUDA_OK(cudaMemcpy(tx, dtx, bytes, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(ret, dret, n * sizeof(*ret), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(c, dc, sizeof(*c), cudaMemcpyDeviceToHost));
	cudaFree(dt);
	cudaFree(drx);
	cudaFree(dtx);
	cudaFree(dlen);
	cudaFree(dret);
	cudaFree(dc);
	cudaFree(dbound);
}

static void gpu_exec(const struct gpunic_rpc_table *t, uint8_t *rx, uint8_t *tx,
		     const uint32_t *rx_len, uint32_t n, uint32_t *ret,
		     struct gpunic_rpc_counters *c)
{
	gpu_run(t, rx, tx, rx_len, n, ret, c, 1);
}

TEST(unified)
{
	harness_need_cuda_device();
	rc_suite(gpu_exec, RC_UNIFIED, 0);
}

TEST(separate)
{
	harness_need_cuda_device();
	rc_suite(gpu_exec, RC_SEPARATE, 0);
}

TEST(cudaq_drops)
{
	harness_need_cuda_device();
	rc_suite(gpu_exec, RC_UNIFIED, GPUNIC_RPC_CUDAQ_DROPS);
}

TEST(cudaq_drops_separate)
{
	harness_need_cuda_device();
	rc_suite(gpu_exec, RC_SEPARATE, GPUNIC_RPC_CUDAQ_DROPS);
}

/*
 * A table copied to the GPU as the host built it holds the CPU's handler addresses only: the
 * GPU must answer "no handler here", never call them.
 */
TEST(unbound_table_answers_no_handler)
{
	struct gpunic_rpc_table t;
	struct gpunic_rpc_counters c;
	uint8_t slot[RC_SLOT] __attribute__((aligned(8)));
	uint8_t args[3] = { 1, 2, 3 };
	uint32_t len, ret = 0;

	harness_need_cuda_device();
	rc_table(&t, 0);
	CHECK(gpunic_rpc_find(&t, "echo")->cpu_fn != NULL);
	memset(&c, 0, sizeof(c));
	len = gpunic_rpc_request_write(slot, RC_SLOT, GPUNIC_RPC_ID_ECHO, args, 3, 42, 4242);
	gpu_run(&t, slot, NULL, &len, 1, &ret, &c, 0);
	CHECK_EQ(ret, GPUNIC_RPC_HEADER_BYTES);
	CHECK_EQ(gpunic_rpc_response_check(slot, ret, 42, 4242, GPUNIC_RPC_E_NO_HANDLER, NULL, 0),
		 GPUNIC_RPC_CHECK_OK);
	CHECK_EQ(c.by_reason[GPUNIC_RPC_R_NO_HANDLER], 1);
}
