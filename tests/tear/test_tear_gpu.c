/* SPDX-License-Identifier: MIT */
/*
 * The torn-line suite on a GPU: every case of tear_tests.h with libgpunic_gpu's forwarder
 * kernel and the one-warp BlueFlame writer kernel (tear_kernels.cu) on queues a GPU-executor
 * softnic placed, against a CPU-driven softnic peer over an in-process shm cable. Skipped (77),
 * with the reason, without a usable GPU.
 */
#include "tear_fixture.h"

extern const struct tear_backend tear_backend_gpu;

#define TEAR_BE (&tear_backend_gpu)
#include "tear_tests.h"
