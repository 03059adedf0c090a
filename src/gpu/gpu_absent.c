// SPDX-License-Identifier: MIT
/* The GPU side of a build without CUDA: every call says so, callers fall back to the CPU. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpunic/gpu.h"

int gpunic_gpu_probe(int device, struct gpunic_gpu_info *info)
{
	memset(info, 0, sizeof(*info));
	info->device = device;
	snprintf(info->reason, sizeof(info->reason),
		 "gpunic was built without CUDA (no nvcc found at configure time)");
	return ENODEV;
}

int gpunic_gpu_floor_pingpong(int device, uint32_t iters, uint32_t warmup, uint64_t *rtt_ns)
{
	(void)device;
	(void)iters;
	(void)warmup;
	(void)rtt_ns;
	return ENODEV;
}

int gpunic_gpu_floor(int device, enum gpunic_floor_kind kind, uint32_t iters, uint32_t warmup,
		     uint64_t *rtt_ns, uint32_t torn[2])
{
	(void)device;
	(void)kind;
	(void)iters;
	(void)warmup;
	(void)rtt_ns;
	(void)torn;
	return ENODEV;
}

int gpunic_gpu_loop_start(int device, const struct gpunic_loop_ctx *ctx,
			  struct gpunic_gpu_loop **out)
{
	(void)device;
	(void)ctx;
	(void)out;
	return ENODEV;
}

int gpunic_gpu_loop_stop(struct gpunic_gpu_loop *loop, struct gpunic_loop_ctx *final)
{
	(void)loop;
	(void)final;
	return ENODEV;
}

int gpunic_gpu_naive_open(int device, uint32_t max_len, struct gpunic_gpu_naive **out)
{
	(void)device;
	(void)max_len;
	(void)out;
	return ENODEV;
}

int gpunic_gpu_naive_process(struct gpunic_gpu_naive *n, const void *in, void *out, uint32_t len,
			     uint32_t work)
{
	(void)n;
	(void)in;
	(void)out;
	(void)len;
	(void)work;
	return ENODEV;
}

void gpunic_gpu_naive_close(struct gpunic_gpu_naive *n)
{
	(void)n;
}
