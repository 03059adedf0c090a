/* Internal helpers shared by the GPU programs. */
#ifndef GPUNIC_GPU_LOC_H
#define GPUNIC_GPU_LOC_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <time.h>

#include "gpunic/log.h"

/* Log a failed CUDA call with its name and the runtime's words; evaluates to true on failure. */
#define GPU_FAILED(call) gpu_failed((call), #call, __func__)

static inline int gpu_failed(cudaError_t err, const char *what, const char *fn)
{
	if (err == cudaSuccess)
		return 0;
	if (GPUNIC_LOG_ERR <= gpunic_log_level())
		gpunic_log_emit(GPUNIC_LOG_ERR, fn, "%s: %s (%s)", what, cudaGetErrorString(err),
				cudaGetErrorName(err));
	return 1;
}

static inline uint64_t gpu_host_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
