/* SPDX-License-Identifier: MIT */
/*
 * Host-side CUDA glue of the suites whose GPU backend runs libgpunic_gpu's forwarder and reads
 * the data path's state (tests/gpu, tests/tear): rig_cuda.h plus what needs gpunic_dev.h.
 */
#ifndef GPUNIC_TEST_RIG_CUDA_LOOP_H
#define GPUNIC_TEST_RIG_CUDA_LOOP_H

#include <gpunic/loop_dev.h>

#include "rig_cuda.h"

/* The executor's data-path state, wherever the executor keeps it (device memory for a GPU). */
static __attribute__((unused)) int rig_gpu_read_state(const struct gpunic_dev_qp_state *xstate,
						       struct gpunic_dev_qp_state *out, char *why,
						       size_t n)
{
	cudaError_t err = cudaMemcpy(out, xstate, sizeof(*out), cudaMemcpyDefault);

	if (err != cudaSuccess) {
		rig_cuda_why(why, n, "cudaMemcpy of the data-path state", err);
		return EIO;
	}
	return 0;
}

static __attribute__((unused)) int rig_gpu_loop_start(const struct gpunic_loop_ctx *ctx,
						       void **handle, char *why, size_t n)
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

static __attribute__((unused)) int rig_gpu_loop_stop(void *handle, struct gpunic_loop_ctx *final,
						      char *why, size_t n)
{
	int rc = gpunic_gpu_loop_stop((struct gpunic_gpu_loop *)handle, final);

	if (rc)
		snprintf(why, n, "gpunic_gpu_loop_stop: %s", strerror(rc));
	return rc;
}

#endif
