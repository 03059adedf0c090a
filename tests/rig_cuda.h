/* SPDX-License-Identifier: MIT */
/*
 * Host-side CUDA glue the executor suites' GPU backends share (tests/gpu, tests/tear,
 * tests/mlx5dev; included by their kernels' .cu files): the GPU check before a case, a launch's
 * result, and waiting for a kernel that says when it leaves. Nothing here includes gpunic_dev.h,
 * which the mlx5dev kernels must not see; the forwarder's glue is in rig_cuda_loop.h.
 */
#ifndef GPUNIC_TEST_RIG_CUDA_H
#define GPUNIC_TEST_RIG_CUDA_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gpunic/gpu.h>

static void rig_cuda_why(char *why, size_t n, const char *what, cudaError_t err)
{
	snprintf(why, n, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

static uint64_t rig_cuda_host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* GPU 0 with a context, able to map host memory; named once per process. */
static __attribute__((unused)) int rig_gpu_probe(char *why, size_t n)
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
		rig_cuda_why(why, n, "CUDA context", err);
		return ENODEV;
	}
	if (!said++)
		printf("GPU: %s, sm_%d%d, %d SMs, driver %d, runtime %d, unified addressing %s\n",
		       info.name, info.cc_major, info.cc_minor, info.sm_count, info.driver_version,
		       info.runtime_version, info.unified_addressing ? "yes" : "no");
	return 0;
}

/* Has the kernel raised *@done before @end (ns)? */
static int rig_gpu_done_by(const uint32_t *done, uint64_t end)
{
	struct timespec pause = { 0, 100000 };

	while (!__atomic_load_n(done, __ATOMIC_ACQUIRE)) {
		if (rig_cuda_host_ns() > end)
			return 0;
		nanosleep(&pause, NULL);
	}
	return 1;
}

/*
 * Wait for a kernel (@what, in messages) that raises *@done, in mapped host memory, when it
 * leaves; only then synchronize, which collects any error. No polling of the stream, whose
 * "not ready" answers a sanitizer could count as API errors. Past @timeout_ns raise *@stop and
 * give it @grace_ns more.
 * Return: 0; ETIMEDOUT when it left only when told to stop; EDEADLK when it did not leave even
 * then; EIO for a CUDA error. @why says which.
 */
static __attribute__((unused)) int rig_gpu_wait(const uint32_t *done, uint32_t *stop,
						 uint64_t timeout_ns, uint64_t grace_ns,
						 const char *what, char *why, size_t n)
{
	cudaError_t err;
	int rc = 0;

	if (!rig_gpu_done_by(done, rig_cuda_host_ns() + timeout_ns)) {
		__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
		rc = ETIMEDOUT;
		if (!rig_gpu_done_by(done, rig_cuda_host_ns() + grace_ns)) {
			/* Gone without raising done means it failed; else it still runs. */
			err = cudaStreamQuery(0);
			if (err != cudaSuccess && err != cudaErrorNotReady) {
				rig_cuda_why(why, n, what, err);
				return EIO;
			}
			if (err == cudaErrorNotReady) {
				snprintf(why, n, "the %s still runs %llu s after stop", what,
					 (unsigned long long)(grace_ns / 1000000000ull));
				return EDEADLK;
			}
		}
	}
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess) {
		rig_cuda_why(why, n, what, err);
		return EIO;
	}
	if (rc)
		snprintf(why, n, "the %s did not end within %llu s; it left when told to stop", what,
			 (unsigned long long)(timeout_ns / 1000000000ull));
	return rc;
}

/* Launched with <<<>>>: did the launch take? */
static __attribute__((unused)) int rig_gpu_launched(const char *what, char *why, size_t n)
{
	cudaError_t err = cudaGetLastError();

	if (err != cudaSuccess) {
		rig_cuda_why(why, n, what, err);
		return EIO;
	}
	return 0;
}

#endif
