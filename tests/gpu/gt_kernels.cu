// SPDX-License-Identifier: MIT
/*
 * The GPU executor of the GPU data-path suite: kernels around the bodies of gt_cases.h (the same
 * ones the CPU twin runs on host threads) and struct gt_backend gt_backend_gpu, which the host
 * fixture drives. Kernels take their arguments by value (__grid_constant__); they report into
 * device memory (struct gt_result) and share a control block in mapped host memory with the
 * host (struct gt_ctl: its stop flag, their ready and done flags) while they run.
 * The forwarder is libgpunic_gpu's own (gpunic_gpu_loop_start).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gpunic/gpu.h>

#include "gt_backend.h"
#include "gt_cases.h"
#include "rig_cuda_loop.h"

/* The warp kernel's shared memory holds this many warps' requests. */
#define GT_WARPS_PER_BLOCK_MAX 16u
/* Block sizes the kernels must launch with: the register budget follows from them. */
#define GT_MT_THREADS_MAX 1024
#define GT_WARP_THREADS_MAX (GT_WARPS_PER_BLOCK_MAX * 32)
/* How long a kernel may run on after the host raised stop. */
#define GT_STOP_GRACE_NS (10ull * 1000000000ull)

/*
 * Every thread calls this last: the one that leaves last tells the host, which then
 * synchronizes with a kernel that has ended instead of polling the stream.
 */
static __device__ void gt_exit(const struct gt_args *a)
{
	if (gt_atomic_add(&a->res->exited, 1) + 1 == gridDim.x * blockDim.x)
		gpunic_dev_store_release_u32(&a->ctl->done, 1);
}

static __global__ void gt_k_xfer(const __grid_constant__ struct gt_args a)
{
	gt_body_xfer(&a);
	gt_exit(&a);
}

static __global__ void gt_k_recv(const __grid_constant__ struct gt_args a)
{
	gt_body_recv(&a);
	gt_exit(&a);
}

/* Posters in every block but the last, whose thread 0 consumes the send CQ. */
static __global__ void __launch_bounds__(GT_MT_THREADS_MAX)
gt_k_mt(const __grid_constant__ struct gt_args a)
{
	uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;

	if (blockIdx.x == gridDim.x - 1) {
		if (threadIdx.x == 0)
			gt_body_consume(&a);
	} else if (tid < a.nposters) {
		gt_body_mt(&a, tid);
	}
	gt_exit(&a);
}

/* Whole warps post; each builds its batch in its slice of shared memory. */
static __global__ void __launch_bounds__(GT_WARP_THREADS_MAX)
gt_k_warp(const __grid_constant__ struct gt_args a)
{
	__shared__ struct gpunic_dev_send_wr wrs[GT_WARPS_PER_BLOCK_MAX][GPUNIC_DEV_WARP_SIZE];
	__shared__ struct gpunic_dev_sge sgs[GT_WARPS_PER_BLOCK_MAX][GPUNIC_DEV_WARP_SIZE];
	uint32_t wib = threadIdx.x / GPUNIC_DEV_WARP_SIZE;
	uint32_t warp = blockIdx.x * (blockDim.x / GPUNIC_DEV_WARP_SIZE) + wib;

	if (blockIdx.x == gridDim.x - 1) {
		if (threadIdx.x == 0)
			gt_body_consume(&a);
	} else if (warp < a.nposters) {
		gt_body_warp(&a, warp, wrs[wib], sgs[wib]);
	}
	gt_exit(&a);
}

static struct gpunic_dev_qp *gpu_qp_publish(const struct gpunic_dev_qp *qp, char *why, size_t n)
{
	struct gpunic_dev_qp *x = NULL;
	cudaError_t err;

	err = cudaMalloc((void **)&x, sizeof(*x));
	if (err != cudaSuccess) {
		rig_cuda_why(why, n, "cudaMalloc", err);
		return NULL;
	}
	err = cudaMemcpy(x, qp, sizeof(*x), cudaMemcpyHostToDevice);
	if (err != cudaSuccess) {
		rig_cuda_why(why, n, "cudaMemcpy", err);
		cudaFree(x);
		return NULL;
	}
	return x;
}

static void gpu_qp_unpublish(struct gpunic_dev_qp *xqp)
{
	cudaFree(xqp);
}

static int gpu_launch(enum gt_kernel k, const struct gt_args *a, uint32_t blocks,
		      uint32_t threads, char *why, size_t n)
{
	switch (k) {
	case GT_K_XFER:
		gt_k_xfer<<<1, 1>>>(*a);
		break;
	case GT_K_RECV:
		gt_k_recv<<<1, 1>>>(*a);
		break;
	case GT_K_MT:
		if (!blocks || !threads || threads > GT_MT_THREADS_MAX ||
		    blocks * threads != a->nposters) {
			snprintf(why, n, "grid %ux%u for %u posters", blocks, threads, a->nposters);
			return EINVAL;
		}
		gt_k_mt<<<blocks + 1, threads>>>(*a);
		break;
	case GT_K_WARP:
		if (!blocks || !threads || threads % GPUNIC_DEV_WARP_SIZE ||
		    threads / GPUNIC_DEV_WARP_SIZE > GT_WARPS_PER_BLOCK_MAX ||
		    blocks * (threads / GPUNIC_DEV_WARP_SIZE) != a->nposters) {
			snprintf(why, n, "grid %ux%u for %u warps", blocks, threads, a->nposters);
			return EINVAL;
		}
		gt_k_warp<<<blocks + 1, threads>>>(*a);
		break;
	default:
		snprintf(why, n, "unknown kernel %d", (int)k);
		return EINVAL;
	}
	return rig_gpu_launched("kernel launch", why, n);
}

/* The kernel says when its last thread leaves (gt_exit). */
static int gpu_wait(struct gt_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	return rig_gpu_wait(&ctl->done, &ctl->stop, timeout_ns, GT_STOP_GRACE_NS, "kernel", why, n);
}

extern "C" const struct gt_backend gt_backend_gpu = {
	"gpu",
	1,
	rig_gpu_probe,
	gpu_qp_publish,
	gpu_qp_unpublish,
	rig_gpu_read_state,
	gpu_launch,
	gpu_wait,
	rig_gpu_loop_start,
	rig_gpu_loop_stop,
};
