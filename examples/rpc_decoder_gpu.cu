/* SPDX-License-Identifier: MIT */
/*
 * A decoder served over the realtime RPC protocol by a persistent GPU kernel: one thread polls
 * a ring of slots in mapped host memory, copies each request into its own memory, runs
 * gpunic_rpc_dispatch() there and writes the response back, while the host sends decoding
 * rounds as an FPGA would and checks every response. The handler (rpc_decoder.h) and the
 * dispatch step are compiled into this kernel: a device function's address is valid only in
 * the module that defines it. Exits 77 (skipped) without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "rpc_decoder.h"

#define CUDA_TRY(call)                                                                  \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "rpc_decoder: %s: %s\n", #call,                \
				cudaGetErrorString(e_));                                \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

/* Handler addresses are the GPU's only in device code: bind them there, in GPU memory. */
__global__ void bind(struct gpunic_rpc_table *t, int *bound)
{
	*bound = example_bind(t);
}

__global__ void serve(struct ring *ring, const struct gpunic_rpc_table *t,
		      struct gpunic_rpc_counters *c)
{
	volatile struct ring *r = ring;
	uint64_t msg[SLOT_BYTES / 8];  /* the request, then the response, in the thread's memory */
	uint32_t i = 0, seq, k;

	while (!r->stop) {
		seq = r->rx_flag[i];
		if (!seq)
			continue;
		__threadfence_system();  /* the slot's bytes after its flag */
		for (k = 0; k < SLOT_BYTES / 8; k++)
			msg[k] = ((volatile uint64_t *)r->slot[i])[k];
		gpunic_rpc_dispatch_unified(t, msg, r->rx_len[i], SLOT_BYTES, c);
		for (k = 0; k < SLOT_BYTES / 8; k++)
			((volatile uint64_t *)r->slot[i])[k] = msg[k];
		r->rx_flag[i] = 0;
		__threadfence_system();  /* the response before its flag */
		r->tx_flag[i] = seq;
		i = (i + 1) % RING_SLOTS;
	}
}

static cudaStream_t server_stream;

/* The server is alive while its kernel runs. */
static int kernel_running(void)
{
	return cudaStreamQuery(server_stream) == cudaErrorNotReady;
}

int main(void)
{
	struct gpunic_rpc_table table, *dtable;
	struct gpunic_rpc_counters counters, *dcounters;
	struct ring *ring, *dring;
	int ndev = 0, *dbound, bound = 0, rc;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("rpc_decoder (GPU): no CUDA device, skipped\n");
		return 77;
	}
	if (example_table(&table))
		return 1;
	CUDA_TRY(cudaHostAlloc((void **)&ring, sizeof(*ring), cudaHostAllocMapped));
	memset(ring, 0, sizeof(*ring));
	CUDA_TRY(cudaHostGetDevicePointer((void **)&dring, ring, 0));
	CUDA_TRY(cudaMalloc((void **)&dtable, sizeof(table)));
	CUDA_TRY(cudaMemcpy(dtable, &table, sizeof(table), cudaMemcpyHostToDevice));
	CUDA_TRY(cudaMalloc((void **)&dcounters, sizeof(counters)));
	CUDA_TRY(cudaMemset(dcounters, 0, sizeof(counters)));
	CUDA_TRY(cudaMalloc((void **)&dbound, sizeof(int)));
	bind<<<1, 1>>>(dtable, dbound);
	CUDA_TRY(cudaMemcpy(&bound, dbound, sizeof(int), cudaMemcpyDeviceToHost));
	if (bound != 4) {
		fprintf(stderr, "rpc_decoder: a handler was not bound on the GPU\n");
		return 1;
	}
	CUDA_TRY(cudaStreamCreateWithFlags(&server_stream, cudaStreamNonBlocking));
	serve<<<1, 1, 0, server_stream>>>(dring, dtable, dcounters);
	CUDA_TRY(cudaGetLastError());

	rc = example_send(ring, kernel_running);
	__atomic_store_n(&ring->stop, 1, __ATOMIC_RELEASE);
	CUDA_TRY(cudaStreamSynchronize(server_stream));
	CUDA_TRY(cudaMemcpy(&counters, dcounters, sizeof(counters), cudaMemcpyDeviceToHost));
	printf("rpc_decoder (GPU): %u requests: %llu decoded, %llu unknown function\n", REQUESTS,
	       (unsigned long long)counters.by_reason[GPUNIC_RPC_R_OK],
	       (unsigned long long)counters.by_reason[GPUNIC_RPC_R_UNKNOWN_FUNCTION]);
	cudaFree(dtable);
	cudaFree(dcounters);
	cudaFree(dbound);
	cudaFreeHost(ring);
	return rc || counters.by_reason[GPUNIC_RPC_R_OK] != REQUESTS - REQUESTS / 8 ? 1 : 0;
}
