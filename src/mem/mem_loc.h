/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of the mem module: the device backend (real CUDA driver API or the
 * test-only fake), the GDRCopy loader, and the context they serve.
 */
#ifndef GPUNIC_MEM_LOC_H
#define GPUNIC_MEM_LOC_H

#include <gpunic/mem.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for a backend's reason, leaving space for a prefix in gpunic_mem_caps' 192 bytes. */
#define MEM_REASON_BYTES 160

static inline size_t mem_round_up(size_t v, size_t align)
{
	return (v + align - 1) & ~(align - 1);
}

static inline bool mem_is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

/*
 * Device backend: what the mem layer needs from a GPU driver. Device addresses are uint64_t
 * (CUdeviceptr). Every call returns 0 or a positive errno value.
 */
struct mem_gpu;

struct mem_gpu_ops {
	const char *name;
	int (*dev_alloc)(struct mem_gpu *gpu, size_t size, uint64_t *dptr);
	int (*dev_free)(struct mem_gpu *gpu, uint64_t dptr, size_t size);
	/* Host-pinned memory mapped into the GPU: *cpu and its device alias *dptr. */
	int (*host_alloc)(struct mem_gpu *gpu, size_t size, void **cpu, uint64_t *dptr);
	int (*host_free)(struct mem_gpu *gpu, void *cpu, size_t size);
	int (*htod)(struct mem_gpu *gpu, uint64_t dst, const void *src, size_t len);
	int (*dtoh)(struct mem_gpu *gpu, void *dst, uint64_t src, size_t len);
	int (*memset0)(struct mem_gpu *gpu, uint64_t dst, size_t len);
	/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: memory operations on @dptr complete before they
	 * return, which GPUDirect RDMA (and so GDRCopy) needs for CPU-visible ordering. */
	int (*sync_memops)(struct mem_gpu *gpu, uint64_t dptr);
	void (*close)(struct mem_gpu *gpu);
};

struct mem_gpu {
	const struct mem_gpu_ops *ops;
	bool fake;
	int device;
	int driver_version;
	char name[96];
};

/* cuda.c: the CUDA driver API through dlopen. NULL + errno (ENODEV) and @why when unusable. */
struct mem_gpu *mem_cuda_open(const char *lib, int device, char *why, size_t why_len);

/* fake_gpu.c: TESTS ONLY (GPUNIC_MEM_FAKE_GPU=1): "device" memory is shared host memory. */
struct mem_gpu *mem_fake_gpu_open(char *why, size_t why_len);

/* gdr.c: libgdrapi.so.2 through dlopen. */
struct mem_gdr;

struct mem_gdr_versions {
	int runtime_major, runtime_minor;
	int driver_major, driver_minor;
};

/* One pinned and mapped range. */
struct mem_gdr_map {
	unsigned long mh;	/* gdr_mh_t.h */
	void *map_ptr;		/* what gdr_map returned (maps info.va) */
	size_t map_size;	/* info.mapped_size */
	uint64_t info_va;	/* info.va: the pinned range rounded down to a GPU page */
	void *cpu;		/* map_ptr + (va - info.va) */
};

/*
 * Load @lib, check versions, gdr_open, and probe one pin + map + copy on @gpu.
 * Return: the loaded library, or NULL with errno and @why ("..." without a "GDRCopy" prefix).
 * @ver is filled as far as the probe got (-1 for what it never learned).
 */
struct mem_gdr *mem_gdr_open(struct mem_gpu *gpu, const char *lib, struct mem_gdr_versions *ver,
			     char *why, size_t why_len);
void mem_gdr_close(struct mem_gdr *gdr);

/* Pin [va, va + size) (va GPU-page aligned), read its info and map it. The GDRCopy rules
 * apply: map after pin; on failure nothing stays pinned. */
int mem_gdr_map(struct mem_gdr *gdr, uint64_t va, size_t size, struct mem_gdr_map *map);
/* Unmap then unpin (never the other way round). Return: the first error. */
int mem_gdr_unmap(struct mem_gdr *gdr, struct mem_gdr_map *map);
int mem_gdr_copy_to(struct mem_gdr *gdr, const struct mem_gdr_map *map, void *dst,
		    const void *src, size_t len);
int mem_gdr_copy_from(struct mem_gdr *gdr, const struct mem_gdr_map *map, void *dst,
		      const void *src, size_t len);

#endif
