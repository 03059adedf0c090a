// SPDX-License-Identifier: MIT
/*
 * The GPU executor of the torn-line suite: struct tear_backend tear_backend_gpu, which the host
 * fixture (tear_fixture.h) drives. The forwarder is libgpunic_gpu's own kernel
 * (gpunic_gpu_loop_start: gpunic_loop_fast_step on one warp); the BlueFlame writer is one warp
 * around the body of tear_cases.h: lane 0 plans each WQE (room, build, order, pauses, hold),
 * and lane j stores chunk j of the line when its turn in the random order comes, each store
 * pushed out with a system fence and followed by a __nanosleep of the planned pause. Every
 * shuffle-free warp barrier (__syncwarp) is reached by all 32 lanes, outside any condition.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gpunic/gpu.h>

#include "tear_backend.h"
#include "tear_cases.h"

/* How long the writer may run on after the host raised stop (it looks at stop in every wait
 * and every wait has its own deadline, so a few seconds is plenty). */
#define TEAR_STOP_GRACE_NS (5ull * 1000000000ull)

static __global__ void __launch_bounds__(32) tear_k_bf(const __grid_constant__ struct tear_bf_args a)
{
	__shared__ struct tear_bf_plan p;
	__shared__ __align__(16) uint8_t sring[64];
	__shared__ __align__(16) uint8_t sbf[64];
	__shared__ uint32_t quit, failed;
	struct gpunic_dev_qp qp = a.qp;
	struct tear_bf_writer w;
	uint32_t lane = threadIdx.x & 31, k, n;

	tear_bf_writer_init(&a, &w);
	for (;;) {
		if (lane == 0) {
			quit = (uint32_t)tear_bf_begin(&a, &qp, &w, &p, sring, sbf);
			failed = 0;
		}
		__syncwarp();
		if (quit)
			break;
		n = p.nstores;
		for (k = 0; k < n; k++) {
			if (lane == 0 && !failed && tear_bf_hold_step(&a, &qp, &w, &p, k))
				failed = 1;
			__syncwarp();
			if (lane == tear_bf_store_chunk(&p, k))
				tear_bf_store(&p, k);
			/* the chunk is in host memory before the pause starts */
			gpunic_dev_to_nic_barrier();
			if (!failed && p.pause[k])
				__nanosleep(p.pause[k]);
			__syncwarp();
		}
		/* a failed hold still stores the rest: the line is left whole */
		if (lane == 0 && !failed)
			tear_bf_end(&a, &qp, &w);
		__syncwarp();
		if (failed)
			break;
	}
	if (lane == 0)
		tear_bf_finish(&a, &qp, &w);
}

static void tear_cuda_why(char *why, size_t n, const char *what, cudaError_t err)
{
	snprintf(why, n, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

static uint64_t tear_host_now(void)
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
		tear_cuda_why(why, n, "CUDA context", err);
		return ENODEV;
	}
	if (!said++)
		printf("GPU: %s, sm_%d%d, %d SMs, driver %d, runtime %d\n", info.name, info.cc_major,
		       info.cc_minor, info.sm_count, info.driver_version, info.runtime_version);
	return 0;
}

static int gpu_read_state(const struct gpunic_dev_qp_state *xstate,
			  struct gpunic_dev_qp_state *out, char *why, size_t n)
{
	cudaError_t err = cudaMemcpy(out, xstate, sizeof(*out), cudaMemcpyDefault);

	if (err != cudaSuccess) {
		tear_cuda_why(why, n, "cudaMemcpy of the data-path state", err);
		return EIO;
	}
	return 0;
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

static int gpu_bf_start(const struct tear_bf_args *a, char *why, size_t n)
{
	cudaError_t err;

	tear_k_bf<<<1, 32>>>(*a);
	err = cudaGetLastError();
	if (err != cudaSuccess) {
		tear_cuda_why(why, n, "writer kernel launch", err);
		return EIO;
	}
	return 0;
}

/* Has the writer raised done before @end (ns)? */
static int gpu_done_by(const struct tear_ctl *ctl, uint64_t end)
{
	struct timespec pause = { 0, 100000 };

	while (!__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE)) {
		if (tear_host_now() > end)
			return 0;
		nanosleep(&pause, NULL);
	}
	return 1;
}

/* The writer says when it ends (done); only then does the host synchronize, which collects
 * any error. */
static int gpu_bf_wait(struct tear_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	cudaError_t err;
	int rc = 0;

	if (!gpu_done_by(ctl, tear_host_now() + timeout_ns)) {
		__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
		rc = ETIMEDOUT;
		if (!gpu_done_by(ctl, tear_host_now() + TEAR_STOP_GRACE_NS)) {
			/* Gone without raising done means it failed; else it still runs. */
			err = cudaStreamQuery(0);
			if (err != cudaSuccess && err != cudaErrorNotReady) {
				tear_cuda_why(why, n, "writer kernel", err);
				return EIO;
			}
			if (err == cudaErrorNotReady) {
				snprintf(why, n, "the writer kernel still runs %llu s after stop",
					 TEAR_STOP_GRACE_NS / 1000000000ull);
				return EDEADLK;
			}
		}
	}
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess) {
		tear_cuda_why(why, n, "writer kernel", err);
		return EIO;
	}
	if (rc)
		snprintf(why, n, "the writer did not end within %llu s; it left when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

extern "C" const struct tear_backend tear_backend_gpu = {
	"gpu",
	1,
	gpu_probe,
	gpu_read_state,
	gpu_loop_start,
	gpu_loop_stop,
	gpu_bf_start,
	gpu_bf_wait,
};
