// SPDX-License-Identifier: MIT
/*
 * The GPU executor of the torn-line suite: struct tear_backend tear_backend_gpu, which the host
 * fixture (tear_fixture.h) drives. The forwarder is libgpunic_gpu's own kernel
 * (gpunic_gpu_loop_start: gpunic_loop_fast_step on one warp); the BlueFlame writer is one warp
 * around the body of tear_cases.h: lane 0 plans each WQE (room, build, order, pauses, hold),
 * and lane j stores chunk j of the line when its turn in the random order comes, each store
 * pushed out with a system fence and followed by a __nanosleep of the planned pause. Every
 * shuffle-free warp barrier (__syncwarp) is reached by all 32 lanes, outside any condition.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gpunic/gpu.h>

#include "tear_backend.h"
#include "tear_cases.h"
#include "rig_cuda_loop.h"

/* How long the writer may run on after the host raised stop (it looks at stop in every wait
 * and every wait has its own deadline, so a few seconds is plenty). */
#define TEAR_STOP_GRACE_NS (5ull * 1000000000ull)

static __global__ void __launch_bounds__(32)
tear_k_bf(const __grid_constant__ struct tear_bf_args a)
{
	__shared__ struct tear_bf_plan p;
	__shared__ __align__(16) uint8_t sring[64];
	__shared__ __align__(16) uint8_t sbf[64];
	__shared__ uint32_t quit, failed;
	struct gpunic_dev_qp qp = a.qp;
	struct tear_bf_writer w;
	uint32_t lane = threadIdx.x & 31, k, n;

	tear_bf_writer_init(&a, &w);
	for (;;) {
		if (lane == 0) {
			quit = (uint32_t)tear_bf_begin(&a, &qp, &w, &p, sring, sbf);
			failed = 0;
		}
		__syncwarp();
		if (quit)
			break;
		n = p.nstores;
		for (k = 0; k < n; k++) {
			if (lane == 0 && !failed && tear_bf_hold_step(&a, &qp, &w, &p, k))
				failed = 1;
			__syncwarp();
			if (lane == tear_bf_store_chunk(&p, k))
				tear_bf_store(&p, k);
			/* the chunk is in host memory before the pause starts */
			gpunic_dev_to_nic_barrier();
			if (!failed && p.pause[k])
				__nanosleep(p.pause[k]);
			__syncwarp();
		}
		/* a failed hold still stores the rest: the line is left whole */
		if (lane == 0 && !failed)
			tear_bf_end(&a, &qp, &w);
		__syncwarp();
		if (failed)
			break;
	}
	if (lane == 0)
		tear_bf_finish(&a, &qp, &w);
}

static int gpu_bf_start(const struct tear_bf_args *a, char *why, size_t n)
{
	tear_k_bf<<<1, 32>>>(*a);
	return rig_gpu_launched("writer kernel launch", why, n);
}

/* The writer says when it ends (done). */
static int gpu_bf_wait(struct tear_ctl *ctl, uint64_t timeout_ns, char *why, size_t n)
{
	return rig_gpu_wait(&ctl->done, &ctl->stop, timeout_ns, TEAR_STOP_GRACE_NS,
			    "writer kernel", why, n);
}

extern "C" const struct tear_backend tear_backend_gpu = {
	"gpu",
	1,
	rig_gpu_probe,
	rig_gpu_read_state,
	rig_gpu_loop_start,
	rig_gpu_loop_stop,
	gpu_bf_start,
	gpu_bf_wait,
};
