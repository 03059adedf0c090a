// SPDX-License-Identifier: MIT
/*
 * TESTS ONLY. A device backend whose "device memory" is host memory, switched on by
 * GPUNIC_MEM_FAKE_GPU=1, so that CI machines with no GPU can drive the GPU and GDRCopy code paths
 * against the GDRCopy test double (tests/mem/gdrapi_double.c), which treats a device address as
 * a host address. Nothing here says anything about real GPUs or the real gdrdrv module.
 *
 * Two properties make the tests meaningful:
 *  - device allocations are MAP_SHARED, so the double can give gdr_map() a second virtual
 *    address for the same pages (mremap with old_size 0), as a BAR mapping is a second address
 *    for device memory: a wrong CPU-pointer offset then shows up as wrong data;
 *  - device allocations start FAKE_MISALIGN bytes past a host page, as cuMemAlloc only promises
 *    256-byte alignment, and pinned host allocations FAKE_HOST_MISALIGN bytes past one, as
 *    cuMemHostAlloc sub-allocates, so the alignment logic above is exercised.
 */
#include "mem_loc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_MISALIGN 256
#define FAKE_HOST_MISALIGN 64

static size_t host_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

static size_t fake_map_len(size_t size)
{
	return mem_round_up(size + FAKE_MISALIGN, host_page());
}

static int fake_dev_alloc(struct mem_gpu *gpu, size_t size, uint64_t *dptr)
{
	void *p;

	(void)gpu;
	if (size > SIZE_MAX / 2)
		return ENOMEM;
	p = mmap(NULL, fake_map_len(size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		return errno;
	*dptr = (uint64_t)(uintptr_t)p + FAKE_MISALIGN;
	return 0;
}

static int fake_dev_free(struct mem_gpu *gpu, uint64_t dptr, size_t size)
{
	(void)gpu;
	if (munmap((void *)(uintptr_t)(dptr - FAKE_MISALIGN), fake_map_len(size)))
		return errno;
	return 0;
}

static int fake_host_alloc(struct mem_gpu *gpu, size_t size, void **cpu, uint64_t *dptr)
{
	void *p;

	(void)gpu;
	if (size > SIZE_MAX / 2)
		return ENOMEM;
	p = mmap(NULL, mem_round_up(size + FAKE_HOST_MISALIGN, host_page()),
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	/* Unified addressing gives mapped host memory the same address on both sides. */
	*cpu = (char *)p + FAKE_HOST_MISALIGN;
	*dptr = (uint64_t)(uintptr_t)*cpu;
	return 0;
}

static int fake_host_free(struct mem_gpu *gpu, void *cpu, size_t size)
{
	(void)gpu;
	if (munmap((char *)cpu - FAKE_HOST_MISALIGN,
		   mem_round_up(size + FAKE_HOST_MISALIGN, host_page())))
		return errno;
	return 0;
}

static int fake_htod(struct mem_gpu *gpu, uint64_t dst, const void *src, size_t len)
{
	(void)gpu;
	memcpy((void *)(uintptr_t)dst, src, len);
	return 0;
}

static int fake_dtoh(struct mem_gpu *gpu, void *dst, uint64_t src, size_t len)
{
	(void)gpu;
	memcpy(dst, (const void *)(uintptr_t)src, len);
	return 0;
}

static int fake_memset0(struct mem_gpu *gpu, uint64_t dst, size_t len)
{
	(void)gpu;
	memset((void *)(uintptr_t)dst, 0, len);
	return 0;
}

static int fake_sync_memops(struct mem_gpu *gpu, uint64_t dptr)
{
	(void)gpu;
	(void)dptr;
	return 0;
}

static void fake_close(struct mem_gpu *gpu)
{
	free(gpu);
}

static const struct mem_gpu_ops fake_ops = {
	.name = "fake",
	.dev_alloc = fake_dev_alloc,
	.dev_free = fake_dev_free,
	.host_alloc = fake_host_alloc,
	.host_free = fake_host_free,
	.htod = fake_htod,
	.dtoh = fake_dtoh,
	.memset0 = fake_memset0,
	.sync_memops = fake_sync_memops,
	.close = fake_close,
};

struct mem_gpu *mem_fake_gpu_open(char *why, size_t why_len)
{
	struct mem_gpu *gpu = calloc(1, sizeof(*gpu));

	if (!gpu) {
		snprintf(why, why_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	gpu->ops = &fake_ops;
	gpu->fake = true;
	snprintf(gpu->name, sizeof(gpu->name), "fake GPU (GPUNIC_MEM_FAKE_GPU=1, host memory)");
	return gpu;
}
