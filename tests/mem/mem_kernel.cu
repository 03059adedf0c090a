// SPDX-License-Identifier: MIT
/* Kernels for test_mem_kernel.c: they touch buffers from every GPU placement through the device
 * addresses the mem layer handed out, in kernels launched with <<<>>> (the CUDA runtime's
 * primary context, the one the mem layer allocates in). Plain C entry points for the C test. */
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void relay(const uint32_t *in, uint32_t *dev_out, uint32_t *gpu_cpu_out, size_t n)
{
	for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
	     i += (size_t)blockDim.x * gridDim.x) {
		dev_out[i] = in[i] * 3u;
		gpu_cpu_out[i] = in[i] + 1u;
	}
}

static __device__ uint64_t now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* One thread: wait for the CPU to post round r in @flag, answer r in @answer. Gives up after
 * two seconds without progress so that a broken mapping fails the test instead of hanging. */
__global__ void ping_pong(volatile uint32_t *flag, volatile uint32_t *answer, uint32_t rounds,
			  uint32_t *done)
{
	for (uint32_t r = 1; r <= rounds; r++) {
		uint64_t start = now_ns();

		while (*flag != r) {
			if (now_ns() - start > 2000000000ull) {
				*done = r - 1;
				return;
			}
		}
		__threadfence_system();
		*answer = r;
	}
	*done = rounds;
}

extern "C" int mem_kernel_relay(const void *in, void *dev_out, void *gpu_cpu_out, size_t n)
{
	relay<<<8, 256>>>((const uint32_t *)in, (uint32_t *)dev_out, (uint32_t *)gpu_cpu_out, n);
	return (int)cudaDeviceSynchronize();
}

extern "C" int mem_kernel_ping_pong_start(void *flag, void *answer, uint32_t rounds, void *done)
{
	ping_pong<<<1, 1>>>((volatile uint32_t *)flag, (volatile uint32_t *)answer, rounds,
			    (uint32_t *)done);
	return (int)cudaGetLastError();
}

extern "C" int mem_kernel_wait(void)
{
	return (int)cudaDeviceSynchronize();
}

extern "C" const char *mem_kernel_error(int err)
{
	return cudaGetErrorString((cudaError_t)err);
}
