/* SPDX-License-Identifier: MIT */
/*
 * The mlx5dev suite on a GPU: every case of md_tests.h with md_body (mlx5_dev_lib.h code) in
 * one thread of a kernel (md_kernels.cu), on queues a GPU-executor softnic placed, against a
 * CPU-driven softnic peer over an in-process shm cable. Skipped (77), with the reason, without
 * a usable GPU.
 */
#include "md_fixture.h"

extern const struct md_backend md_backend_gpu;

#define MD_BE (&md_backend_gpu)
#include "md_tests.h"
