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

/**
 * gpunic_gpu_floor_pingpong - the CPU<->GPU flag ping-pong floor (GPUNIC_FLOOR_FLAG)
 * A persistent one-thread kernel polls a flag in host-pinned memory and answers in another; the
 * calling CPU thread writes the first and polls the second. The round trip is the least any
 * CPU-visible event -> GPU -> CPU-visible event path can take on this machine, the reference
 * for the loopback's latency.
 * @iters: samples written to @rtt_ns (nanoseconds, CLOCK_MONOTONIC_RAW)
 * @warmup: round trips done first and not recorded
 * Return: 0, ENODEV (no GPU), or EIO (a CUDA call failed; logged).
 */
int gpunic_gpu_floor_pingpong(int device, uint32_t iters, uint32_t warmup, uint64_t *rtt_ns);

/* What a floor exchanges (src/gpu/floor.cu). */
enum gpunic_floor_kind {
	GPUNIC_FLOOR_FLAG = 0,        /* a 4-byte flag each way, relaxed polls and stores */
	GPUNIC_FLOOR_FLAG_ACQREL = 1, /* the same with acquire loads and release stores, each
				       * about half a PCIe round trip dearer: comparison only */
	GPUNIC_FLOOR_LINE = 2,        /* a 64-byte line each way: the CPU stores it in one
				       * instruction, one warp reads it in one coalesced access
				       * and answers with one coalesced 64-byte store */
};

/**
 * gpunic_gpu_floor - a CPU<->GPU floor of @kind: @iters round trips after @warmup, in ns
 * @torn: if not NULL, first sightings of a torn line by the GPU [0] and by the CPU [1] (line
 *        floor only; each torn line is read again, never answered)
 * Return: 0, EINVAL, ENODEV, ETIMEDOUT (the kernel did not answer within 2 s) or EIO.
 */
int gpunic_gpu_floor(int device, enum gpunic_floor_kind kind, uint32_t iters, uint32_t warmup,
		     uint64_t *rtt_ns, uint32_t torn[2]);

/* ---------------------------------------------------------------- loopback forwarder */

struct gpunic_loop_ctx;     /* loop_dev.h */
struct gpunic_gpu_loop;

/**
 * gpunic_gpu_loop_start - launch the persistent forwarder kernel (one thread running
 * gpunic_loop_step() until stopped) on a QP exported for a GPU executor
 * @ctx: copied to device memory together with *ctx->qp (a host copy of the exported QP is
 *       fine); the queue, ring and state addresses inside them must be device-reachable, as
 *       gpunic_qp_export() gives them for a NIC opened with the GPU executor
 * Return: 0, ENODEV (no GPU), EINVAL, or EIO (a CUDA call failed; logged).
 */
int gpunic_gpu_loop_start(int device, const struct gpunic_loop_ctx *ctx,
			  struct gpunic_gpu_loop **out);

/**
 * gpunic_gpu_loop_stop - ask the kernel to leave, wait for it, free its resources
 * @final: if not NULL, receives the context as the kernel left it (echoed, errors counters)
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
