// SPDX-License-Identifier: MIT
/*
 * `gpunic perf` kernels: gpunic_perf_exec() (perf_dev.h, the same code the CPU executor runs) on
 * a QP whose queues were placed for a GPU executor. One thread runs every test but put_bw, which
 * runs nthreads threads posting through the shared (_mt) protocol; a send_bw server and a read_bw
 * client add checker threads that share each message's payload check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu_perf.h"
#include "gpunic/perf_dev.h"
#include "gpunic/perf_lat_dev.h"

/* What the kernel reads: the context and the QP description, copied to device memory. */
struct perf_dev_blob {
	struct gpunic_perf_ctx ctx;
	struct gpunic_dev_qp qp;
};

/*
 * Every call on the kernel's behalf goes to its own non-blocking stream with stream-ordered
 * allocation: two sides of a test in one process (`gpunic perf --pair`) each run a kernel that
 * waits for the other, and a call that synchronised the device (the legacy default stream,
 * cudaMalloc/cudaFree, cudaDeviceSynchronize) would wait for a kernel that never ends alone.
 */
struct gpunic_gpu_perf {
	int device;
	cudaStream_t stream;
	struct perf_dev_blob *blob; /* device memory */
	struct perf_dev_blob staging; /* the host copy that goes in and comes back */
};

/*
 * @solo0: thread 0 runs the test and the others only check payload; it gets a warp of its own
 * so that its polling never waits for theirs. @warp: a latency test on one warp of 32 lanes
 * (perf_lat_dev.h), thread 0 on lane 0.
 */
static __global__ void perf_kernel(struct perf_dev_blob *b, uint32_t nthreads, bool solo0,
				   bool warp)
{
	uint32_t tid;

	if (warp) {
		gpunic_perf_exec_warp(&b->ctx, threadIdx.x & 31);
		return;
	}
	if (!solo0)
		tid = blockIdx.x * blockDim.x + threadIdx.x;
	else if (blockIdx.x == 0)
		tid = threadIdx.x == 0 ? 0 : nthreads;
	else
		tid = 1 + (blockIdx.x - 1) * blockDim.x + threadIdx.x;
	if (tid < nthreads)
		gpunic_perf_exec(&b->ctx, tid);
}

extern "C" int gpunic_gpu_perf_launch(int device, const struct gpunic_perf_ctx *ctx,
				      uint32_t nthreads, struct gpunic_gpu_perf **out)
{
	struct gpunic_gpu_perf *p;
	uint32_t per_block, blocks;
	bool solo0 = nthreads > 1 && ctx->test != GPUNIC_PERF_PUT_BW;
	bool warp = nthreads == 1 && gpunic_perf_test_on_warp(ctx->test);

	if (!ctx || !ctx->qp || !ctx->ctl || !out || !nthreads ||
	    nthreads > GPUNIC_GPU_PERF_MAX_THREADS)
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	p = (struct gpunic_gpu_perf *)calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	p->device = device;
	if (GPU_FAILED(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking))) {
		free(p);
		return EIO;
	}
	if (GPU_FAILED(cudaMallocAsync((void **)&p->blob, sizeof(*p->blob), p->stream)))
		goto fail;
	p->staging.ctx = *ctx;
	/* the device address of the blob's own QP copy */
	p->staging.ctx.qp = &p->blob->qp;
	p->staging.qp = *ctx->qp;
	if (GPU_FAILED(cudaMemcpyAsync(p->blob, &p->staging, sizeof(p->staging),
				       cudaMemcpyHostToDevice, p->stream)) ||
	    GPU_FAILED(cudaStreamSynchronize(p->stream)))
		goto fail;
	/* small blocks: posting threads spread over SMs instead of sharing one */
	per_block = nthreads < 32 ? nthreads : 32;
	blocks = (nthreads + per_block - 1) / per_block;
	if (solo0) {
		per_block = nthreads - 1 < 32 ? nthreads - 1 : 32;
		blocks = 1 + (nthreads - 1 + per_block - 1) / per_block;
	}
	if (warp) {
		blocks = 1;
		per_block = 32;
	}
	perf_kernel<<<blocks, per_block, 0, p->stream>>>(p->blob, nthreads, solo0, warp);
	if (GPU_FAILED(cudaGetLastError()))
		goto fail;
	*out = p;
	return 0;
fail:
	if (p->blob)
		cudaFreeAsync(p->blob, p->stream);
	cudaStreamSynchronize(p->stream);
	cudaStreamDestroy(p->stream);
	free(p);
	return EIO;
}

extern "C" int gpunic_gpu_perf_wait(struct gpunic_gpu_perf *p, struct gpunic_perf_ctx *final)
{
	int rc = 0;

	if (!p)
		return EINVAL;
	/* the thread that launched may not be the one that waits: the device is per thread */
	if (GPU_FAILED(cudaSetDevice(p->device)) || GPU_FAILED(cudaStreamSynchronize(p->stream)))
		rc = EIO;
	if (!rc && final) {
		if (GPU_FAILED(cudaMemcpyAsync(&p->staging, p->blob, sizeof(p->staging),
					       cudaMemcpyDeviceToHost, p->stream)) ||
		    GPU_FAILED(cudaStreamSynchronize(p->stream))) {
			rc = EIO;
		} else {
			*final = p->staging.ctx;
			/* the device copy's qp pointer means nothing on the host */
			final->qp = NULL;
		}
	}
	cudaFreeAsync(p->blob, p->stream);
	cudaStreamSynchronize(p->stream);
	cudaStreamDestroy(p->stream);
	free(p);
	return rc;
}
