/* SPDX-License-Identifier: MIT */
/*
 * `gpunic perf` on the GPU: the posting loops of perf_dev.h run in a CUDA kernel on a QP exported
 * for a GPU executor (built by nvcc when CUDA is found; without CUDA every call is ENODEV, see
 * gpunic_gpu_probe() for the reason).
 */
#ifndef GPUNIC_GPU_PERF_H
#define GPUNIC_GPU_PERF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpunic_perf_ctx;     /* perf_dev.h */
struct gpunic_gpu_perf;

/* Most threads one put_bw kernel runs (one block of this many threads at most per block). */
#define GPUNIC_GPU_PERF_MAX_THREADS 1024u

/**
 * gpunic_gpu_perf_launch - start gpunic_perf_exec() in a kernel of @nthreads threads
 * @ctx: copied to device memory with the QP description it points at; its buffers, ctl block
 *       and timestamp arrays must be addresses the GPU can reach (mapped host memory)
 * The kernel primes, raises ctx->ctl->ready and waits for ctl->go; the call returns at once.
 * Return: 0, ENODEV (no GPU), EINVAL, or EIO (a CUDA call failed; logged).
 */
int gpunic_gpu_perf_launch(int device, const struct gpunic_perf_ctx *ctx, uint32_t nthreads,
			   struct gpunic_gpu_perf **out);

/**
 * gpunic_gpu_perf_wait - wait for the kernel (raise ctl->stop first to cut it short), copy the
 * context as it left it to @final (its qp pointer cleared), free everything
 * Return: 0 or EIO (the kernel failed; logged).
 */
int gpunic_gpu_perf_wait(struct gpunic_gpu_perf *p, struct gpunic_perf_ctx *final);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_GPU_PERF_H */
