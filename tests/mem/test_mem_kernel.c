// SPDX-License-Identifier: MIT
/*
 * Buffers from the mem layer used by real kernels (mem_kernel.cu): every GPU placement through
 * its device address, and a CPU<->GPU flag ping-pong through the memory the queue policy picks
 * for a CQ (softnic writes, GPU polls) and a doorbell (GPU writes, softnic polls). Skips (77)
 * without a GPU; built only where nvcc exists.
 */
#include "harness.h"

#include <gpunic/mem.h>
#include <gpunic/verbs.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

int mem_kernel_relay(const void *in, void *dev_out, void *gpu_cpu_out, size_t n);
int mem_kernel_ping_pong_start(void *flag, void *answer, uint32_t rounds, void *done);
int mem_kernel_wait(void);
const char *mem_kernel_error(int err);

static gpunic_mem_t *open_or_skip(struct gpunic_mem_caps *caps)
{
	gpunic_mem_t *mem;

	unsetenv("GPUNIC_MEM_FAKE_GPU");
	unsetenv("GPUNIC_CUDA_LIB");
	mem = gpunic_mem_open(NULL);
	CHECK(mem != NULL);
	CHECK_EQ(gpunic_mem_query(mem, caps), 0);
	if (!caps->gpu) {
		gpunic_mem_close(mem);
		SKIP("no GPU");
	}
	return mem;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST(kernel_reads_and_writes_every_placement)
{
	const size_t n = 100000;
	struct gpunic_mem_buf *in, *dev, *gc;
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	uint32_t *back = malloc(n * 4);
	int err;

	CHECK(back != NULL);
	in = gpunic_mem_alloc(mem, n * 4, 0, GPUNIC_MEM_CPU_GPU);
	dev = gpunic_mem_alloc(mem, n * 4, 0, GPUNIC_MEM_GPU);
	gc = gpunic_mem_alloc(mem, n * 4, 0, GPUNIC_MEM_GPU_CPU);
	CHECK(in && dev && gc);
	for (size_t i = 0; i < n; i++)
		((uint32_t *)in->cpu)[i] = (uint32_t)(i * 2654435761u);
	err = mem_kernel_relay(in->gpu, dev->gpu, gc->gpu, n);
	if (err)
		harness_fail(__FILE__, __LINE__, "kernel: %s", mem_kernel_error(err));
	CHECK_EQ(gpunic_mem_read(mem, dev, 0, back, n * 4), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(back[i], (uint32_t)(i * 2654435761u) * 3u);
	/* GPU_CPU is read here through the CPU pointer (slow through a real BAR; fine once). */
	CHECK_EQ(gpunic_mem_read(mem, gc, 0, back, n * 4), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(back[i], (uint32_t)(i * 2654435761u) + 1u);
	printf("GPU_CPU backend: %s\n", gpunic_mem_backend_str(gc->backend));
	CHECK_EQ(gpunic_mem_close(mem), 0);
	free(back);
}

TEST(kernel_ping_pong_through_policy_placements)
{
	const uint32_t rounds = 10000;
	struct gpunic_mem_buf *flag, *answer, *done;
	enum gpunic_mem_placement pf, pa;
	struct gpunic_mem_caps caps;
	gpunic_mem_t *mem = open_or_skip(&caps);
	uint64_t t0, t1, deadline;
	uint32_t finished = 0;
	int err;

	/* The CPU writes the flag and the GPU polls it: placed as a CQ. The GPU writes the
	 * answer and the CPU polls it: placed as a doorbell. */
	pf = gpunic_mem_placement_for(mem, GPUNIC_QUEUE_CQ, true, NULL);
	pa = gpunic_mem_placement_for(mem, GPUNIC_QUEUE_DOORBELL, true, NULL);
	flag = gpunic_mem_alloc(mem, 64, 0, pf);
	answer = gpunic_mem_alloc(mem, 64, 0, pa);
	done = gpunic_mem_alloc(mem, 64, 0, GPUNIC_MEM_CPU_GPU);
	CHECK(flag && answer && done);
	CHECK(flag->cpu && answer->cpu);
	err = mem_kernel_ping_pong_start(flag->gpu, answer->gpu, rounds, done->gpu);
	if (err)
		harness_fail(__FILE__, __LINE__, "launch: %s", mem_kernel_error(err));
	t0 = now_ns();
	for (uint32_t r = 1; r <= rounds; r++) {
		atomic_store_explicit((_Atomic uint32_t *)flag->cpu, r, memory_order_release);
		/* A full fence also drains write-combining buffers (a GDRCopy BAR mapping). */
		atomic_thread_fence(memory_order_seq_cst);
		deadline = now_ns() + 3000000000ull;
		while (atomic_load_explicit((_Atomic uint32_t *)answer->cpu,
					    memory_order_acquire) != r)
			if (now_ns() > deadline)
				harness_fail(__FILE__, __LINE__, "no answer to round %u", r);
	}
	t1 = now_ns();
	err = mem_kernel_wait();
	if (err)
		harness_fail(__FILE__, __LINE__, "kernel: %s", mem_kernel_error(err));
	finished = *(volatile uint32_t *)done->cpu;
	CHECK_EQ(finished, rounds);
	printf("flag %s (%s), answer %s (%s): round trip %.3f us (mean of %u)\n",
	       gpunic_mem_placement_str(flag->placement), gpunic_mem_backend_str(flag->backend),
	       gpunic_mem_placement_str(answer->placement), gpunic_mem_backend_str(answer->backend),
	       (double)(t1 - t0) / rounds / 1000.0, rounds);
	CHECK_EQ(gpunic_mem_close(mem), 0);
}
