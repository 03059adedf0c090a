/* SPDX-License-Identifier: MIT */
/*
 * The executor a GPU data-path case runs on, as the host fixture (gt_fixture.h) sees it: a GPU
 * (gt_kernels.cu, kernels around the bodies of gt_cases.h) or host threads running the same
 * bodies (the CPU twin, test_gpu_twin.c). Plain C, included by nvcc too.
 *
 * Every function returns 0 or a positive errno value and, on failure, writes a sentence into
 * @why (@n bytes).
 */
#ifndef GT_BACKEND_H
#define GT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gt_args;
struct gt_ctl;
struct gpunic_dev_qp;
struct gpunic_dev_qp_state;
struct gpunic_loop_ctx;

enum gt_kernel {
	GT_K_XFER = 0,   /* one thread: gt_body_xfer */
	GT_K_RECV = 1,   /* one thread: gt_body_recv */
	GT_K_MT = 2,     /* @blocks x @threads posters (gt_body_mt) + one consumer */
	GT_K_WARP = 3,   /* @blocks x @threads / 32 warps (gt_body_warp) + one consumer */
};

struct gt_backend {
	const char *name;
	int gpu;   /* 1: a GPU executor (NIC executor GPU, data buffers CPU_GPU) */
	/* 0 if this executor can run here; else ENODEV and why (the case is skipped). */
	int (*probe)(char *why, size_t n);
	/* A copy of @qp (as exported) where the executor reaches it; NULL on failure. */
	struct gpunic_dev_qp *(*qp_publish)(const struct gpunic_dev_qp *qp, char *why, size_t n);
	void (*qp_unpublish)(struct gpunic_dev_qp *xqp);
	/* Read the data-path counters at the executor's address @xstate. */
	int (*read_state)(const struct gpunic_dev_qp_state *xstate,
			  struct gpunic_dev_qp_state *out, char *why, size_t n);
	/* Start @k on a copy of @a; the call returns at once. */
	int (*launch)(enum gt_kernel k, const struct gt_args *a, uint32_t blocks, uint32_t threads,
		      char *why, size_t n);
	/*
	 * Wait for the launched run to end. After @timeout_ns it raises @ctl->stop (@ctl: the
	 * host's address of the run's control block) and waits a few seconds more. Return: 0,
	 * ETIMEDOUT (it ended only when told to stop), EIO (the executor failed), or EDEADLK (it
	 * is still running: nothing it uses may be read or freed).
	 */
	int (*wait)(struct gt_ctl *ctl, uint64_t timeout_ns, char *why, size_t n);
	/* The loopback forwarder on a UC QP (gpunic_loop_step), until loop_stop. */
	int (*loop_start)(const struct gpunic_loop_ctx *ctx, void **handle, char *why, size_t n);
	int (*loop_stop)(void *handle, struct gpunic_loop_ctx *final, char *why, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif /* GT_BACKEND_H */
