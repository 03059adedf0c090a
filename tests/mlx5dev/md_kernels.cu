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
#include "rig_cuda.h"

static __global__ void md_k_body(const __grid_constant__ struct md_args a)
{
	md_body(&a);
}

static int gpu_launch(const struct md_args *a, char *why, size_t n)
{
	md_k_body<<<1, 1>>>(*a);
	return rig_gpu_launched("kernel launch", why, n);
}

/* The kernel says when its thread leaves (ctl.done). */
static int gpu_wait(struct md_shared *sh, uint64_t timeout_ns, char *why, size_t n)
{
	return rig_gpu_wait(&sh->ctl.done, &sh->ctl.stop, timeout_ns, MD_STOP_GRACE_NS, "kernel",
			    why, n);
}

extern "C" const struct md_backend md_backend_gpu = {
	"gpu",
	1,
	rig_gpu_probe,
	gpu_launch,
	gpu_wait,
};
