// SPDX-License-Identifier: MIT
/*
 * The naive path: what code without a persistent kernel does for every message — copy it to the
 * GPU, launch a kernel, copy the result back, wait. It is the baseline the persistent forwarder
 * is measured against. Staging buffers are pinned, the fair way to do it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/loop_dev.h"

struct gpunic_gpu_naive {
	uint32_t max_len;
	uint8_t *h_in;     /* pinned staging */
	uint8_t *h_out;
	uint8_t *d_buf;
	cudaStream_t stream;
};

static __global__ void naive_kernel(uint8_t *buf, uint32_t len, uint32_t work)
{
	for (uint32_t i = threadIdx.x; i < len; i += blockDim.x)
		if (work == GPUNIC_LOOP_WORK_ADD_ONE)
			buf[i] = (uint8_t)(buf[i] + 1);
}

extern "C" void gpunic_gpu_naive_close(struct gpunic_gpu_naive *n)
{
	if (!n)
		return;
	if (n->stream)
		cudaStreamDestroy(n->stream);
	cudaFree(n->d_buf);
	cudaFreeHost(n->h_in);
	cudaFreeHost(n->h_out);
	free(n);
}

extern "C" int gpunic_gpu_naive_open(int device, uint32_t max_len, struct gpunic_gpu_naive **out)
{
	struct gpunic_gpu_naive *n;

	if (!out || !max_len)
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	n = (struct gpunic_gpu_naive *)calloc(1, sizeof(*n));
	if (!n)
		return ENOMEM;
	n->max_len = max_len;
	if (GPU_FAILED(cudaHostAlloc((void **)&n->h_in, max_len, cudaHostAllocDefault)) ||
	    GPU_FAILED(cudaHostAlloc((void **)&n->h_out, max_len, cudaHostAllocDefault)) ||
	    GPU_FAILED(cudaMalloc((void **)&n->d_buf, max_len)) ||
	    GPU_FAILED(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking))) {
		gpunic_gpu_naive_close(n);
		return EIO;
	}
	*out = n;
	return 0;
}

extern "C" int gpunic_gpu_naive_process(struct gpunic_gpu_naive *n, const void *in, void *out,
					uint32_t len, uint32_t work)
{
	if (!n || len > n->max_len)
		return EINVAL;
	if (!len) {
		return 0;
	}
	memcpy(n->h_in, in, len);
	if (GPU_FAILED(cudaMemcpyAsync(n->d_buf, n->h_in, len, cudaMemcpyHostToDevice, n->stream)))
		return EIO;
	naive_kernel<<<1, 32, 0, n->stream>>>(n->d_buf, len, work);
	if (GPU_FAILED(cudaGetLastError()) ||
	    GPU_FAILED(cudaMemcpyAsync(n->h_out, n->d_buf, len, cudaMemcpyDeviceToHost, n->stream)) ||
	    GPU_FAILED(cudaStreamSynchronize(n->stream)))
		return EIO;
	memcpy(out, n->h_out, len);
	return 0;
}
