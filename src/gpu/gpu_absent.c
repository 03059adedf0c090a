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

int gpunic_gpu_floor_run(int device, const struct gpunic_floor_opts *o, uint32_t iters,
			 uint32_t warmup, uint64_t *rtt_ns, struct gpunic_floor_result *res)
{
	(void)device;
	(void)o;
	(void)iters;
	(void)warmup;
	(void)rtt_ns;
	(void)res;
	return ENODEV;
}

int gpunic_gpu_read_cost(int device, const struct gpunic_read_cost_opts *o,
			 struct gpunic_read_cost *out)
{
	(void)device;
	(void)o;
	(void)out;
	return ENODEV;
}

int gpunic_gpu_write_paths(int device, struct gpunic_write_path out[], size_t max, size_t *n)
{
	(void)device;
	(void)out;
	(void)max;
	*n = 0;
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
