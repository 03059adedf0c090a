/* SPDX-License-Identifier: MIT */
/*
 * What a CUDA test file (CUDA C++) adds to harness.h: the harness with C linkage, CUDA_OK for
 * runtime calls, and the skip (77) where there is no CUDA device.
 */
#ifndef GPUNIC_TEST_HARNESS_CUDA_H
#define GPUNIC_TEST_HARNESS_CUDA_H

#include <cuda_runtime.h>

/* harness.h is C: C linkage, and C11's _Noreturn spelled for C++. */
#ifndef _Noreturn
#define _Noreturn __attribute__((noreturn))
#endif
extern "C" {
#include "harness.h"
}

#define CUDA_OK(call)                                                                   \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess)                                                  \
			harness_fail(__FILE__, __LINE__, "%s: %s", #call,              \
				     cudaGetErrorString(e_));                           \
	} while (0)

static inline void harness_need_cuda_device(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
		SKIP("no CUDA device");
}

#endif
