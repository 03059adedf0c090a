/* SPDX-License-Identifier: MIT */
/*
 * gpunic memory: allocation by placement, named as DOCA GPUNetIO names it (docs/DESIGN.md piece 7).
 *
 *   HOST     plain host memory: the CPU executor and CI use it; needs no GPU
 *   GPU      device memory (cuMemAlloc); the CPU cannot touch it, only copy to and from it
 *   GPU_CPU  device memory the CPU can also reach: a GDRCopy BAR mapping when GDRCopy works,
 *            else host-pinned memory mapped into the GPU (backend "pinned-fallback")
 *   CPU_GPU  host-pinned memory mapped into the GPU (cuMemHostAlloc DEVICEMAP|PORTABLE)
 *
 * libgpunic never links CUDA or GDRCopy: libcuda.so.1 (driver API) and libgdrapi.so.2 are
 * opened with dlopen when a context opens, so one binary runs on hosts with and without a GPU.
 * Without a GPU every GPU placement fails with ENODEV and gpunic_mem_query() says why.
 *
 * Environment (read at gpunic_mem_open):
 *   GPUNIC_GDRCOPY=0         never use GDRCopy; GPU_CPU takes the pinned fallback
 *   GPUNIC_GDRAPI_LIB=path   load this file instead of libgdrapi.so.2 (tests load a double)
 *   GPUNIC_CUDA_LIB=path     load this file instead of libcuda.so.1
 *   GPUNIC_MEM_FAKE_GPU=1    TESTS ONLY: pretend host memory is device memory, so that the
 *                            GDRCopy path can run against the test double with no GPU
 * Logging: GPUNIC_LOG_LEVEL (gpunic/log.h). docs/MEMORY.md has the whole story.
 *
 * Calls return 0 or a positive errno value; constructors return NULL and set errno (the control
 * path's rule: docs/DESIGN.md, "Errors").
 * A context is thread-safe. Every buffer it hands out is tracked, and gpunic_mem_close() frees
 * whatever the caller left (GDRCopy's gdr_close habit).
 */
#ifndef GPUNIC_MEM_H
#define GPUNIC_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The GPU page GDRCopy maps (gdrapi.h GPU_PAGE_SHIFT): pins and maps must be aligned to it. */
#define GPUNIC_GPU_PAGE_SHIFT 16
#define GPUNIC_GPU_PAGE_SIZE (1ul << GPUNIC_GPU_PAGE_SHIFT)

/* Oldest libgdrapi and gdrdrv accepted: 2.0, the first with the API used here. */
#define GPUNIC_GDR_MIN_MAJOR 2
#define GPUNIC_GDR_MIN_MINOR 0

typedef struct gpunic_mem gpunic_mem_t;

enum gpunic_mem_placement {
	GPUNIC_MEM_HOST = 0,
	GPUNIC_MEM_GPU = 1,
	GPUNIC_MEM_GPU_CPU = 2,
	GPUNIC_MEM_CPU_GPU = 3,
	GPUNIC_MEM_PLACEMENT_MAX /* internal */
};

enum gpunic_mem_backend {
	GPUNIC_MEM_BACKEND_HOST = 0,		/* "host": posix_memalign */
	GPUNIC_MEM_BACKEND_CUDA_DEVICE = 1,	/* "cuda-device": cuMemAlloc */
	GPUNIC_MEM_BACKEND_CUDA_HOST = 2,	/* "cuda-host": cuMemHostAlloc, mapped */
	GPUNIC_MEM_BACKEND_GDRCOPY = 3,		/* "gdrcopy": cuMemAlloc, gdr_pin_buffer, gdr_map */
	GPUNIC_MEM_BACKEND_PINNED_FALLBACK = 4, /* "pinned-fallback": GPU_CPU asked, CPU_GPU got */
	GPUNIC_MEM_BACKEND_MAX /* internal */
};

/*
 * One allocation. Read the fields directly; the context owns the rest of the record.
 * Memory is zero-filled. A pointer that a side cannot use is NULL.
 */
struct gpunic_mem_buf {
	void *cpu;				/* CPU address; NULL for GPU placement */
	void *gpu;				/* GPU (device) address; NULL for HOST */
	size_t size;				/* bytes usable at both addresses */
	enum gpunic_mem_placement placement;	/* placement actually used */
	enum gpunic_mem_placement requested;	/* placement asked for */
	enum gpunic_mem_backend backend;
};

/* gpunic_mem_attr.flags */
enum gpunic_mem_open_flags {
	/* Host only: load neither CUDA nor GDRCopy (the CPU executor, tools without a GPU). */
	GPUNIC_MEM_OPEN_NO_GPU = 1u << 0,
};

struct gpunic_mem_attr {
	uint32_t flags;	  /* enum gpunic_mem_open_flags */
	int cuda_device;  /* CUDA device ordinal */
};

/* Open a context. @attr may be NULL: CUDA device 0, no flags. Never fails for lack of a GPU. */
gpunic_mem_t *gpunic_mem_open(const struct gpunic_mem_attr *attr);

/*
 * Free every buffer still allocated (in reverse order of allocation), release GDRCopy and
 * CUDA, free the context. NULL is a no-op. Return: 0, or the first error met while freeing
 * (everything is released regardless).
 */
int gpunic_mem_close(gpunic_mem_t *mem);

/*
 * Allocate @size bytes with the given placement, aligned to @align (0: 64 bytes; otherwise a
 * power of two; GPU_CPU always gets at least GPUNIC_GPU_PAGE_SIZE). Return: the buffer, or
 * NULL with errno EINVAL (bad size/align/placement), ENODEV (GPU placement and no GPU),
 * ENOMEM, or the error the driver reported.
 */
struct gpunic_mem_buf *gpunic_mem_alloc(gpunic_mem_t *mem, size_t size, size_t align,
					enum gpunic_mem_placement placement);

/* Free one buffer: GDRCopy ones are unmapped, then unpinned, then freed. EINVAL: not ours. */
int gpunic_mem_free(gpunic_mem_t *mem, struct gpunic_mem_buf *buf);

/*
 * Copy into / out of a buffer at @off, for any placement: the GDRCopy copy routine for BAR
 * mappings, memcpy where the CPU can reach the memory, cuMemcpy for GPU placement.
 * Return: 0, EINVAL (range outside the buffer, buffer not ours) or the driver's error.
 */
int gpunic_mem_write(gpunic_mem_t *mem, struct gpunic_mem_buf *buf, size_t off, const void *src,
		     size_t len);
int gpunic_mem_read(gpunic_mem_t *mem, const struct gpunic_mem_buf *buf, size_t off, void *dst,
		    size_t len);

/* What this context can do; `gpunic doctor` prints it. Strings are NUL-terminated. */
struct gpunic_mem_caps {
	uint32_t placements;		/* bit (1u << placement) for each placement that works */
	bool gpu;			/* a CUDA device is usable */
	bool fake_gpu;			/* GPUNIC_MEM_FAKE_GPU=1: "device" memory is host memory */
	int cuda_device;		/* ordinal in use (or asked for) */
	int cuda_driver_version;	/* cuDriverGetVersion(), e.g. 13000; 0 if unknown */
	char gpu_name[96];
	char gpu_reason[192];		/* "no GPU: ..." when !gpu; "" otherwise */
	bool gdrcopy;			/* GPU_CPU gets real BAR mappings */
	char gdrcopy_lib[128];		/* library path tried */
	char gdrcopy_reason[192];	/* why GDRCopy is not used; "" when it is */
	int gdr_runtime_major, gdr_runtime_minor;	/* libgdrapi; -1 if unknown */
	int gdr_driver_major, gdr_driver_minor;		/* gdrdrv; -1 if unknown */
	size_t live_buffers;		/* buffers allocated and not yet freed */
	size_t live_bytes;		/* sum of their sizes */
};

/* Return: 0, or EINVAL for NULL arguments. */
int gpunic_mem_query(gpunic_mem_t *mem, struct gpunic_mem_caps *caps);

/* "HOST", "GPU", "GPU_CPU", "CPU_GPU"; "?" for anything else. */
const char *gpunic_mem_placement_str(enum gpunic_mem_placement placement);

/* "host", "cuda-device", "cuda-host", "gdrcopy", "pinned-fallback"; "?" otherwise. */
const char *gpunic_mem_backend_str(enum gpunic_mem_backend backend);

/* ---------------------------------------------------------------- 64-byte lines */

/*
 * A 64-byte line moved in one instruction where the CPU has one (AVX-512; MOVDIR64B for
 * stores), else in 16-byte chunks with the last 16 bytes stored last with release ordering.
 * A CQE written for a GPU, or a BlueFlame WQE read from one, then crosses PCIe in one piece
 * (docs/ARCHITECTURE.md, "the fast path"). Both addresses of the shared side are 64-byte
 * aligned; stores before a store64 stay before it.
 */
void gpunic_line_store64(void *dst, const void *src);
void gpunic_line_load64(void *dst, const void *src);
/* Which instructions this CPU uses for them (found once). */
const char *gpunic_line_init(void);

#ifdef __cplusplus
}
#endif

#endif
