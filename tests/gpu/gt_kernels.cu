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

static void gt_cuda_why(char *why, size_t n, const char *what, cudaError_t err)
{
	snprintf(why, n, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

static uint64_t gt_host_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int gpu_probe(char *why, size_t n)
{
	static int said;
	struct gpunic_gpu_info info;
	cudaError_t err;

	if (gpunic_gpu_probe(0, &info)) {
		snprintf(why, n, "%s", info.reason);
		return ENODEV;
	}
	if (!info.can_map_host) {
		snprintf(why, n, "%s cannot map host memory", info.name);
		return ENODEV;
	}
	err = cudaSetDevice(0);
	if (err == cudaSuccess)
		err = cudaFree(0);
	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "CUDA context", err);
		return ENODEV;
	}
	if (!said++)
		printf("GPU: %s, sm_%d%d, %d SMs, driver %d, runtime %d, unified addressing %s\n",
		       info.name, info.cc_major, info.cc_minor, info.sm_count, info.driver_version,
		       info.runtime_version, info.unified_addressing ? "yes" : "no");
	return 0;
}

static struct gpunic_dev_qp *gpu_qp_publish(const struct gpunic_dev_qp *qp, char *why, size_t n)
{
	struct gpunic_dev_qp *x = NULL;
	cudaError_t err;

	err = cudaMalloc((void **)&x, sizeof(*x));
	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "cudaMalloc", err);
		return NULL;
	}
	err = cudaMemcpy(x, qp, sizeof(*x), cudaMemcpyHostToDevice);
	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "cudaMemcpy", err);
		cudaFree(x);
		return NULL;
	}
	return x;
}

static void gpu_qp_unpublish(struct gpunic_dev_qp *xqp)
{
	cudaFree(xqp);
}

static int gpu_read_state(const struct gpunic_dev_qp_state *xstate,
			  struct gpunic_dev_qp_state *out, char *why, size_t n)
{
	cudaError_t err = cudaMemcpy(out, xstate, sizeof(*out), cudaMemcpyDefault);

	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "cudaMemcpy of the data-path state", err);
		return EIO;
	}
	return 0;
}

static int gpu_launch(enum gt_kernel k, const struct gt_args *a, uint32_t blocks,
		      uint32_t threads, char *why, size_t n)
{
	cudaError_t err;

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
	err = cudaGetLastError();
	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "kernel launch", err);
		return EIO;
	}
	return 0;
}

/* Has the kernel raised done before @end (ns)? */
static int gpu_wait_done(const struct gt_ctl *ctl, uint64_t end)
{
	struct timespec pause = { 0, 100000 };

	while (!__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE)) {
		if (gt_host_now() > end)
			return 0;
		nanosleep(&pause, NULL);
	}
	return 1;
}

/*
 * The kernel says when its last thread leaves (gt_exit); only then does the host synchronize,
 * which collects any error. No polling of the stream, whose "not ready" answers a sanitizer
 * could count as API errors.
 */
static int gpu_wait(struct gt_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	cudaError_t err;
	int rc = 0;

	if (!gpu_wait_done(ctl, gt_host_now() + timeout_ns)) {
		__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
		rc = ETIMEDOUT;
		if (!gpu_wait_done(ctl, gt_host_now() + GT_STOP_GRACE_NS)) {
			/* Gone without raising done means it failed; else it still runs. */
			err = cudaStreamQuery(0);
			if (err != cudaSuccess && err != cudaErrorNotReady) {
				gt_cuda_why(why, n, "kernel", err);
				return EIO;
			}
			if (err == cudaErrorNotReady) {
				snprintf(why, n, "the kernel still runs %llu s after stop",
					 GT_STOP_GRACE_NS / 1000000000ull);
				return EDEADLK;
			}
		}
	}
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess) {
		gt_cuda_why(why, n, "kernel", err);
		return EIO;
	}
	if (rc)
		snprintf(why, n, "the kernel did not end within %llu s; it left when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

static int gpu_loop_start(const struct gpunic_loop_ctx *ctx, void **handle, char *why, size_t n)
{
	struct gpunic_gpu_loop *l = NULL;
	int rc = gpunic_gpu_loop_start(0, ctx, &l);

	if (rc) {
		snprintf(why, n, "gpunic_gpu_loop_start: %s", strerror(rc));
		return rc;
	}
	*handle = l;
	return 0;
}

static int gpu_loop_stop(void *handle, struct gpunic_loop_ctx *final, char *why, size_t n)
{
	int rc = gpunic_gpu_loop_stop((struct gpunic_gpu_loop *)handle, final);

	if (rc)
		snprintf(why, n, "gpunic_gpu_loop_stop: %s", strerror(rc));
	return rc;
}

extern "C" const struct gt_backend gt_backend_gpu = {
	"gpu",
	1,
	gpu_probe,
	gpu_qp_publish,
	gpu_qp_unpublish,
	gpu_read_state,
	gpu_launch,
	gpu_wait,
	gpu_loop_start,
	gpu_loop_stop,
};
