// SPDX-License-Identifier: MIT
/*
 * `gpunic perf` kernels: gpunic_perf_exec() (perf_dev.h, the same code the CPU executor runs) on
 * a QP whose queues were placed for a GPU executor. One thread for every test but put_bw, which
 * runs nthreads threads posting through the shared (_mt) protocol.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu_perf.h"
#include "gpunic/perf_dev.h"

/* What the kernel reads: the context and the QP description, copied to device memory. */
struct perf_dev_blob {
	struct gpunic_perf_ctx ctx;
	struct gpunic_dev_qp qp;
};

struct gpunic_gpu_perf {
	int device;
	struct perf_dev_blob *blob; /* device memory */
};

static __global__ void perf_kernel(struct perf_dev_blob *b, uint32_t nthreads)
{
	uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;

	if (tid < nthreads)
		gpunic_perf_exec(&b->ctx, tid);
}

extern "C" int gpunic_gpu_perf_launch(int device, const struct gpunic_perf_ctx *ctx,
				      uint32_t nthreads, struct gpunic_gpu_perf **out)
{
	struct gpunic_gpu_perf *p;
	struct perf_dev_blob blob;
	uint32_t per_block, blocks;

	if (!ctx || !ctx->qp || !ctx->ctl || !out || !nthreads ||
	    nthreads > GPUNIC_GPU_PERF_MAX_THREADS)
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	p = (struct gpunic_gpu_perf *)calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	p->device = device;
	if (GPU_FAILED(cudaMalloc((void **)&p->blob, sizeof(*p->blob))))
		goto fail;
	blob.ctx = *ctx;
	/* the device address of the blob's own QP copy */
	blob.ctx.qp = &p->blob->qp;
	blob.qp = *ctx->qp;
	if (GPU_FAILED(cudaMemcpy(p->blob, &blob, sizeof(blob), cudaMemcpyHostToDevice)))
		goto fail;
	/* small blocks: posting threads spread over SMs instead of sharing one */
	per_block = nthreads < 32 ? nthreads : 32;
	blocks = (nthreads + per_block - 1) / per_block;
	perf_kernel<<<blocks, per_block>>>(p->blob, nthreads);
	if (GPU_FAILED(cudaGetLastError()))
		goto fail;
	*out = p;
	return 0;
fail:
	if (p->blob)
		cudaFree(p->blob);
	free(p);
	return EIO;
}

extern "C" int gpunic_gpu_perf_wait(struct gpunic_gpu_perf *p, struct gpunic_perf_ctx *final)
{
	struct perf_dev_blob blob;
	int rc = 0;

	if (!p)
		return EINVAL;
	if (GPU_FAILED(cudaDeviceSynchronize()))
		rc = EIO;
	if (!rc && final) {
		if (GPU_FAILED(cudaMemcpy(&blob, p->blob, sizeof(blob), cudaMemcpyDeviceToHost))) {
			rc = EIO;
		} else {
			*final = blob.ctx;
			/* the device copy's qp pointer means nothing on the host */
			final->qp = NULL;
		}
	}
	cudaFree(p->blob);
	free(p);
	return rc;
}
