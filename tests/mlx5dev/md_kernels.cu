// SPDX-License-Identifier: MIT
/*
 * The GPU executor of the mlx5dev suite: one kernel thread runs md_body (md_cases.h), which
 * drives the softnic's queues through mlx5_dev_lib.h alone, and struct md_backend
 * md_backend_gpu, which the host fixture drives. The kernel takes its arguments by value
 * (__grid_constant__) and shares struct md_shared (stop / done / ack flags and the result) with
 * the host in mapped host memory. It uses no system-scope fence and no system-scope atomic: the
 * host reads the result only after the kernel ended (cudaDeviceSynchronize).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gpunic/gpu.h>

#include "md_backend.h"
#include "md_cases.h"

static __global__ void md_k_body(const __grid_constant__ struct md_args a)
{
	md_body(&a);
}

static void md_cuda_why(char *why, size_t n, const char *what, cudaError_t err)
{
	snprintf(why, n, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

static uint64_t md_host_now(void)
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
		md_cuda_why(why, n, "CUDA context", err);
		return ENODEV;
	}
	if (!said++)
		printf("GPU: %s, sm_%d%d, driver %d, runtime %d\n", info.name, info.cc_major,
		       info.cc_minor, info.driver_version, info.runtime_version);
	return 0;
}

static int gpu_launch(const struct md_args *a, char *why, size_t n)
{
	cudaError_t err;

	md_k_body<<<1, 1>>>(*a);
	err = cudaGetLastError();
	if (err != cudaSuccess) {
		md_cuda_why(why, n, "kernel launch", err);
		return EIO;
	}
	return 0;
}

static int gpu_wait_done(const struct md_shared *sh, uint64_t end)
{
	struct timespec pause = { 0, 100000 };

	while (!__atomic_load_n(&sh->ctl.done, __ATOMIC_ACQUIRE)) {
		if (md_host_now() > end)
			return 0;
		nanosleep(&pause, NULL);
	}
	return 1;
}

/* The kernel says when its thread leaves (ctl.done); only then does the host synchronize. */
static int gpu_wait(struct md_shared *sh, uint64_t timeout_ns, char *why, size_t n)
{
	const uint64_t grace = 4ull * 1000000000ull;
	cudaError_t err;
	int rc = 0;

	if (!gpu_wait_done(sh, md_host_now() + timeout_ns)) {
		__atomic_store_n(&sh->ctl.stop, 1, __ATOMIC_RELEASE);
		rc = ETIMEDOUT;
		if (!gpu_wait_done(sh, md_host_now() + grace)) {
			err = cudaStreamQuery(0);
			if (err != cudaSuccess && err != cudaErrorNotReady) {
				md_cuda_why(why, n, "kernel", err);
				return EIO;
			}
			if (err == cudaErrorNotReady) {
				snprintf(why, n, "the kernel still runs %llu s after stop",
					 (unsigned long long)(grace / 1000000000ull));
				return EDEADLK;
			}
		}
	}
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess) {
		md_cuda_why(why, n, "kernel", err);
		return EIO;
	}
	if (rc)
		snprintf(why, n, "the kernel did not end within %llu s; it left when told to stop",
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

extern "C" const struct md_backend md_backend_gpu = {
	"gpu",
	1,
	gpu_probe,
	gpu_launch,
	gpu_wait,
};
