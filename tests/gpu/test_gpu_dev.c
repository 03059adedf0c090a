/* SPDX-License-Identifier: MIT */
/*
 * The GPU data-path suite on a GPU: every case of gt_tests.h with kernels (gt_kernels.cu)
 * posting, ringing and polling on queues a GPU-executor softnic placed, against a CPU-driven
 * softnic peer over an in-process shm cable. Skipped (77), with the reason, without a usable GPU.
 */
#include "gt_fixture.h"

extern const struct gt_backend gt_backend_gpu;

#define GT_BE (&gt_backend_gpu)
#include "gt_tests.h"
