/* SPDX-License-Identifier: MIT */
/*
 * The executor a torn-line case runs on, as the host fixture (tear_fixture.h) sees it: a GPU
 * (tear_kernels.cu: libgpunic_gpu's forwarder kernel, and a one-warp BlueFlame writer kernel) or
 * host threads (the CPU twin, test_tear_twin.c: gpunic_loop_step on a thread, and the same
 * writer body on a thread). Plain C, included by nvcc too; the split follows tests/gpu's
 * gt_backend.h.
 *
 * Every function returns 0 or a positive errno value and, on failure, writes a sentence into
 * @why (@n bytes).
 */
#ifndef TEAR_BACKEND_H
#define TEAR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpunic_dev_qp_state;
struct gpunic_loop_ctx;
struct tear_bf_args;
struct tear_ctl;

struct tear_backend {
	const char *name;
	int gpu;   /* 1: a GPU executor (NIC executor GPU, data buffers CPU_GPU) */
	/* 0 if this executor can run here; else ENODEV and why (the case is skipped). */
	int (*probe)(char *why, size_t n);
	/* Read the data-path counters at the executor's address @xstate. */
	int (*read_state)(const struct gpunic_dev_qp_state *xstate,
			  struct gpunic_dev_qp_state *out, char *why, size_t n);
	/* The loopback forwarder on a UC QP, until loop_stop. */
	int (*loop_start)(const struct gpunic_loop_ctx *ctx, void **handle, char *why, size_t n);
	int (*loop_stop)(void *handle, struct gpunic_loop_ctx *final, char *why, size_t n);
	/* Start the BlueFlame writer (tear_cases.h) on a copy of @a; returns at once. */
	int (*bf_start)(const struct tear_bf_args *a, char *why, size_t n);
	/*
	 * Wait for the writer to raise @ctl->done (@ctl: the host's view). After @timeout_ns it
	 * raises stop and waits a few seconds more. Return: 0, ETIMEDOUT (it ended only when told
	 * to stop), EIO (the executor failed), or EDEADLK (it still runs: nothing it uses may be
	 * freed).
	 */
	int (*bf_wait)(struct tear_ctl *ctl, uint64_t timeout_ns, char *why, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif /* TEAR_BACKEND_H */
