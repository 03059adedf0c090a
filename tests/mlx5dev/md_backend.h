/* SPDX-License-Identifier: MIT */
/*
 * The executor an mlx5dev case runs on, as the host fixture (md_fixture.h) sees it: a GPU
 * (md_kernels.cu: one thread of a kernel runs md_body) or a host thread running the same body
 * (the CPU twin, test_mlx5dev_twin.c). The split of tests/gpu/gt_backend.h, cut down to what a
 * one-thread body needs. Plain C, included by nvcc too.
 *
 * Every function returns 0 or a positive errno value and, on failure, writes a sentence into
 * @why (@n bytes).
 */
#ifndef MD_BACKEND_H
#define MD_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct md_args;
struct md_shared;

struct md_backend {
	const char *name;
	int gpu;   /* 1: a GPU executor (NIC executor GPU, data region CPU_GPU) */
	/* 0 if this executor can run here; else ENODEV and why (the case is skipped). */
	int (*probe)(char *why, size_t n);
	/* Start md_body on a copy of @a; returns at once. */
	int (*launch)(const struct md_args *a, char *why, size_t n);
	/*
	 * Wait for the body to return. After @timeout_ns raise @sh->ctl.stop (@sh: the host's
	 * address of the shared block) and wait a few seconds more. Return: 0, ETIMEDOUT (it
	 * returned only when told to stop), EIO (the executor failed), or EDEADLK (it still runs:
	 * nothing it uses may be freed).
	 */
	int (*wait)(struct md_shared *sh, uint64_t timeout_ns, char *why, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif /* MD_BACKEND_H */
