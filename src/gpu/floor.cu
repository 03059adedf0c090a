// SPDX-License-Identifier: MIT
/*
 * The CPU<->GPU flag ping-pong floor: the least time an event the CPU writes takes to reach a
 * GPU thread and come back. The loopback's round trip contains this path twice over (CQE to the
 * kernel, doorbell back), so "gpu p50 within 1.3x of the floor" is measured against it.
 */
#include <errno.h>
#include <stdlib.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/gpunic_dev.h"

/* Host-pinned, mapped: ping is written by the CPU, pong by the GPU. Separate cache lines. */
struct floor_flags {
	uint32_t ping;
	uint8_t pad0[60];
	uint32_t pong;
	uint8_t pad1[60];
	uint32_t stop;    /* the CPU gave up waiting: the kernel leaves */
};

/* A round trip that has not come back after this long means the kernel is not running. */
#define FLOOR_TIMEOUT_NS 2000000000ull

/* One thread answers @rounds pings, each as soon as it sees it, with the same value. */
static __global__ void floor_kernel(struct floor_flags *f, uint32_t rounds)
{
	for (uint32_t i = 1; i <= rounds; i++) {
		while (gpunic_dev_load_acquire_u32(&f->ping) != i)
			if (gpunic_dev_load_relaxed_u32(&f->stop))
				return;
		gpunic_dev_store_release_u32(&f->pong, i);
	}
}

extern "C" int gpunic_gpu_floor_pingpong(int device, uint32_t iters, uint32_t warmup,
					 uint64_t *rtt_ns)
{
	struct floor_flags *f = NULL;
	uint32_t rounds = iters + warmup;
	int rc = EIO;

	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	if (GPU_FAILED(cudaHostAlloc((void **)&f, sizeof(*f), cudaHostAllocMapped)))
		return EIO;
	f->ping = 0;
	f->pong = 0;
	f->stop = 0;
	floor_kernel<<<1, 1>>>(f, rounds);
	if (GPU_FAILED(cudaGetLastError()))
		goto out;
	for (uint32_t i = 1; i <= rounds; i++) {
		uint64_t t0 = gpu_host_now_ns();

		__atomic_store_n(&f->ping, i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&f->pong, __ATOMIC_ACQUIRE) != i) {
			if (gpu_host_now_ns() - t0 > FLOOR_TIMEOUT_NS) {
				__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
				cudaDeviceSynchronize();
				rc = ETIMEDOUT;
				goto out;
			}
		}
		if (i > warmup)
			rtt_ns[i - warmup - 1] = gpu_host_now_ns() - t0;
	}
	if (GPU_FAILED(cudaDeviceSynchronize()))
		goto out;
	rc = 0;
out:
	cudaFreeHost(f);
	return rc;
}
