/* SPDX-License-Identifier: MIT */
/*
 * gpunic GPU side, as seen from host code: probe the GPU and run the GPU programs that drive
 * gpunic queues (built by nvcc when CUDA is found; without CUDA every call reports ENODEV with
 * the reason, so tools degrade to the CPU executor).
 */
#ifndef GPUNIC_GPU_H
#define GPUNIC_GPU_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpunic_gpu_info {
	bool present;            /* a usable CUDA device */
	int device;              /* ordinal */
	char name[96];
	int cc_major, cc_minor;  /* compute capability */
	int sm_count;
	int driver_version;      /* cudaDriverGetVersion, e.g. 13000 */
	int runtime_version;     /* cudaRuntimeGetVersion */
	bool can_map_host;       /* canMapHostMemory: the GPU can poll host-pinned memory */
	bool unified_addressing; /* host-pinned pointers are valid on the device */
	char reason[192];        /* why !present */
};

/**
 * gpunic_gpu_probe - find CUDA device @device and describe it
 * Return: 0 with info->present set, or ENODEV with info->reason filled.
 */
int gpunic_gpu_probe(int device, struct gpunic_gpu_info *info);

/* What a floor exchanges (src/gpu/floor.cu). */
enum gpunic_floor_kind {
	GPUNIC_FLOOR_FLAG = 0,        /* a 4-byte flag each way, relaxed polls and stores */
	GPUNIC_FLOOR_FLAG_ACQREL = 1, /* the same with acquire loads and release stores, each
				       * about half a PCIe round trip dearer: comparison only */
	GPUNIC_FLOOR_LINE = 2,        /* a 64-byte line each way: the CPU stores it in one
				       * instruction, one warp reads it in one coalesced access
				       * and answers with one coalesced 64-byte store */
};

/* Most warps a floor polls with: more than two reads of one line in flight wait for each
 * other (docs/ARCHITECTURE.md, "The poll"). */
#define GPUNIC_FLOOR_POLLERS_MAX 4

struct gpunic_floor_opts {
	enum gpunic_floor_kind kind;
	/* warps polling the same word or line, each started @stagger_ns after the one before
	 * (0: a k-th of a read's round trip, which the kernel times first); 0 counts as 1 */
	uint32_t pollers;
	uint32_t stagger_ns;
	/* the loop gpunic had until 0.2: the stop flag read after every empty poll, a second
	 * read that waits for the first, so host memory is sampled once per two round trips.
	 * Kept as a named series so that the change shows in one run. */
	bool stop_every_poll;
	/* NULL, or asked every 256 round trips: true ends the run with those done (Ctrl-C) */
	bool (*stop)(void);
};

struct gpunic_floor_result {
	uint32_t torn[2];	/* first sightings of a torn line by the GPU [0] and the CPU [1]
				 * (line floor only; each torn line is read again, never answered) */
	uint32_t pollers;
	uint32_t stagger_ns;	/* what the kernel used between its pollers' starts */
	uint32_t done;		/* round trips in @rtt_ns: @iters unless @o->stop ended it */
};

/**
 * gpunic_gpu_floor_run - a CPU<->GPU floor: @iters round trips after @warmup, in ns
 * A persistent kernel polls host-pinned memory and answers in another line; the calling CPU
 * thread writes the first and polls the second. The round trip is the least any CPU-visible
 * event -> GPU -> CPU-visible event path can take on this machine, the loopback's reference.
 * @rtt_ns: @iters samples (CLOCK_MONOTONIC_RAW)
 * @res: if not NULL, what the run saw and used (res->done: the samples, fewer than @iters
 *       when @o->stop ended the run)
 * Return: 0, EINVAL, ENODEV, ETIMEDOUT (the kernel did not answer within 2 s) or EIO.
 */
int gpunic_gpu_floor_run(int device, const struct gpunic_floor_opts *o, uint32_t iters,
			 uint32_t warmup, uint64_t *rtt_ns, struct gpunic_floor_result *res);

/* ---------------------------------------------------------------- PCIe costs (pcie.cu) */

struct gpunic_read_cost_opts {
	uint32_t bytes;		/* 4, or a multiple of 16 up to 512: one coalesced access */
	uint32_t lines;		/* 1, or 2: the access split over two lines 4 KiB apart, as a
				 * CQE and the ring slot it names */
	uint32_t iters;
	bool cpu_writes;	/* a CPU thread keeps storing to the lines meanwhile */
};

struct gpunic_read_cost {
	uint64_t count, min_ns, p50_ns, p99_ns;
};

/**
 * gpunic_gpu_read_cost - what one warp's read of host-pinned memory costs, timed on the GPU
 * from issue to the data being usable (the first eighth of @o->iters is not counted).
 * Return: 0, EINVAL, ENODEV, ENOMEM or EIO.
 */
int gpunic_gpu_read_cost(int device, const struct gpunic_read_cost_opts *o,
			 struct gpunic_read_cost *out);

/* One way for the CPU to store into GPU memory without the gdrdrv module, as tried here. */
struct gpunic_write_path {
	const char *name;	/* "dma-buf", "vmm-fd", "managed", "bar1-sysfs" */
	bool works;
	char detail[160];	/* what was tried and the error it met */
};

#define GPUNIC_WRITE_PATHS_MAX 4

/**
 * gpunic_gpu_write_paths - try each way the driver offers for CPU stores into GPU memory
 * (a dma-buf export's fd, a VMM allocation's POSIX fd, managed memory accessed in place, the
 * BAR1 aperture through sysfs), filling up to @max entries of @out and *@n.
 * Return: 0 (each entry says whether its way works), or ENODEV.
 */
int gpunic_gpu_write_paths(int device, struct gpunic_write_path out[], size_t max, size_t *n);

/* ---------------------------------------------------------------- loopback forwarder */

struct gpunic_loop_ctx;     /* loop_dev.h */
struct gpunic_gpu_loop;

/**
 * gpunic_gpu_loop_start - launch the persistent forwarder kernel (one warp running
 * gpunic_loop_fast_step() until stopped) on a QP exported for a GPU executor
 * @ctx: copied to device memory together with *ctx->qp (a host copy of the exported QP is
 *       fine); the queue, ring and state addresses inside them must be device-reachable, as
 *       gpunic_qp_export() gives them for a NIC opened with the GPU executor. With
 *       ctx->rpc (a host table) the RPC copy of the kernel runs: the table is copied too and
 *       the built-in handlers are bound in that copy; the functions without one answer
 *       "no handler" (loop_dev.h). It takes 8 * slot_bytes of shared memory.
 * Return: 0, ENODEV (no GPU), EINVAL, or EIO (a CUDA call failed; logged).
 */
int gpunic_gpu_loop_start(int device, const struct gpunic_loop_ctx *ctx,
			  struct gpunic_gpu_loop **out);

/**
 * gpunic_gpu_loop_stop - ask the kernel to leave, wait for it, free its resources
 * @final: if not NULL, receives the context as the kernel left it (echoed, errors and RPC
 *         counters; its pointers NULL)
 * Return: 0 or EIO (the kernel failed; logged).
 */
int gpunic_gpu_loop_stop(struct gpunic_gpu_loop *loop, struct gpunic_loop_ctx *final);

/* ---------------------------------------------------------------- naive path */

struct gpunic_gpu_naive;

/* Buffers for messages of up to @max_len bytes and a stream for the per-message launches. */
int gpunic_gpu_naive_open(int device, uint32_t max_len, struct gpunic_gpu_naive **out);

/**
 * gpunic_gpu_naive_process - what code without a persistent kernel does per message: copy
 * @len bytes to the GPU, launch a kernel doing @work (enum gpunic_loop_work), copy the result
 * back to @out and wait for it.
 * Return: 0, EINVAL (@len too large) or EIO.
 */
int gpunic_gpu_naive_process(struct gpunic_gpu_naive *n, const void *in, void *out, uint32_t len,
			     uint32_t work);
void gpunic_gpu_naive_close(struct gpunic_gpu_naive *n);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_GPU_H */
