// SPDX-License-Identifier: MIT
/* `gpunic perf` GPU programs in a build without CUDA: every call says ENODEV. */
#include <errno.h>
#include <stddef.h>

#include "gpunic/gpu_perf.h"

int gpunic_gpu_perf_launch(int device, const struct gpunic_perf_ctx *ctx, uint32_t nthreads,
			   struct gpunic_gpu_perf **out)
{
	(void)device;
	(void)ctx;
	(void)nthreads;
	if (out)
		*out = NULL;
	return ENODEV;
}

int gpunic_gpu_perf_wait(struct gpunic_gpu_perf *p, struct gpunic_perf_ctx *final)
{
	(void)p;
	(void)final;
	return ENODEV;
}
