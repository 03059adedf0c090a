// SPDX-License-Identifier: MIT
/*
 * The CPU<->GPU floors: the least time an event the CPU writes takes to reach a GPU thread and
 * come back, measured the way the forwarder's fast path moves its data (gpu.h):
 *  - flag: a 4-byte flag each way, relaxed (volatile-strength) polls and stores. The loopback's
 *    round trip contains this crossing twice (CQE to the kernel, WQE back).
 *  - flag-acqrel: the same with ld.acquire.sys / st.release.sys, as the first forwarder did:
 *    kept only as a comparison (each costs about half a round trip more).
 *  - line: one 64-byte line each way; the CPU writes it in one instruction, one warp reads it
 *    in one coalesced access and answers with one coalesced 64-byte store the CPU polls. What
 *    a CQE in and a BlueFlame WQE out cost at best. Every word of both lines is derived from
 *    the round's number, so a line seen torn is counted and read again, never answered.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/gpunic_dev.h"
#include "gpunic/mem.h"

/* Host-pinned, mapped: ping is written by the CPU, pong by the GPU. Separate cache lines. */
struct floor_flags {
	uint32_t ping;
	uint8_t pad0[60];
	uint32_t pong;
	uint8_t pad1[60];
	uint32_t stop;    /* the CPU gave up waiting: the kernel leaves */
	uint8_t pad2[60];
	uint32_t line_in[16] __attribute__((aligned(64)));   /* line floor: CPU -> GPU */
	uint32_t line_out[16] __attribute__((aligned(64)));  /* GPU -> CPU */
	uint32_t torn[2];  /* first sightings of a torn line: by the GPU, by the CPU */
};

/* A round trip that has not come back after this long means the kernel is not running. */
#define FLOOR_TIMEOUT_NS 2000000000ull

/* Word @i of round @r's line in direction @dir: each distinct, so any stale word shows. */
static __host__ __device__ __forceinline__ uint32_t floor_word(uint32_t r, uint32_t i,
							       uint32_t dir)
{
	return i == 15 ? r : (r * 0x9e3779b9u) ^ (i * 0x85ebca77u) ^ dir;
}

/* One thread answers @rounds pings, each as soon as it sees it, with the same value. */
static __global__ void floor_flag_kernel(struct floor_flags *f, uint32_t rounds, int acqrel)
{
	for (uint32_t i = 1; i <= rounds; i++) {
		if (acqrel) {
			while (gpunic_dev_load_acquire_u32(&f->ping) != i)
				if (gpunic_dev_load_relaxed_u32(&f->stop))
					return;
			gpunic_dev_store_release_u32(&f->pong, i);
		} else {
			while (gpunic_dev_load_relaxed_u32(&f->ping) != i)
				if (gpunic_dev_load_relaxed_u32(&f->stop))
					return;
			gpunic_dev_store_relaxed_u32(&f->pong, i);
		}
	}
}

/* Lanes 0-3 read the 64-byte line in one access, check every word, answer with one store. */
static __global__ void floor_line_kernel(struct floor_flags *f, uint32_t rounds)
{
	uint32_t lane = threadIdx.x & 31, j = lane & 3, r = 1, k, good;
	uint64_t lo = 0, hi = 0;
	uint32_t w[4];

	while (r <= rounds) {
		if (lane < 4)
			gpunic_dev_load16_relaxed(&f->line_in[4 * j], &lo, &hi);
		w[0] = (uint32_t)lo;
		w[1] = (uint32_t)(lo >> 32);
		w[2] = (uint32_t)hi;
		w[3] = (uint32_t)(hi >> 32);
		good = 1;
		for (k = 0; k < 4; k++)
			good &= w[k] == floor_word(r, 4 * j + k, 0);
		/* round r's line is there when its last word is; whole when every word is */
		if (__shfl_sync(0xffffffffu, w[3], 3) != r) {
			if (lane == 0 && gpunic_dev_load_relaxed_u32(&f->stop))
				r = rounds + 1;
			r = __shfl_sync(0xffffffffu, r, 0);
			continue;
		}
		if (__ballot_sync(0xffffffffu, good || lane >= 4) != 0xffffffffu) {
			if (lane == 0)
				f->torn[0]++;
			continue;
		}
		if (lane < 4) {
			for (k = 0; k < 4; k++)
				w[k] = floor_word(r, 4 * j + k, 1);
			gpunic_dev_store16_relaxed(&f->line_out[4 * j], (uint64_t)w[1] << 32 | w[0],
						   (uint64_t)w[3] << 32 | w[2]);
		}
		r++;
	}
}

/* CPU side of the line floor: write round @r's line, wait for the whole answer. */
static int floor_line_round(struct floor_flags *f, uint32_t r, uint64_t t0)
{
	uint32_t line[16] __attribute__((aligned(64))), got[16] __attribute__((aligned(64)));
	uint32_t i, bad;

	for (i = 0; i < 16; i++)
		line[i] = floor_word(r, i, 0);
	gpunic_line_store64(f->line_in, line);
	for (;;) {
		gpunic_line_load64(got, f->line_out);
		if (got[15] == r) {
			for (bad = 0, i = 0; i < 16; i++)
				bad |= got[i] != floor_word(r, i, 1);
			if (!bad)
				return 0;
			f->torn[1]++;
		}
		if (gpu_host_now_ns() - t0 > FLOOR_TIMEOUT_NS)
			return ETIMEDOUT;
	}
}

extern "C" int gpunic_gpu_floor(int device, enum gpunic_floor_kind kind, uint32_t iters,
				uint32_t warmup, uint64_t *rtt_ns, uint32_t torn[2])
{
	struct floor_flags *f = NULL;
	uint32_t rounds = iters + warmup;
	int rc = EIO;

	if (kind != GPUNIC_FLOOR_FLAG && kind != GPUNIC_FLOOR_FLAG_ACQREL &&
	    kind != GPUNIC_FLOOR_LINE)
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	if (GPU_FAILED(cudaHostAlloc((void **)&f, sizeof(*f), cudaHostAllocMapped)))
		return EIO;
	memset(f, 0, sizeof(*f));
	if (kind == GPUNIC_FLOOR_LINE)
		floor_line_kernel<<<1, 32>>>(f, rounds);
	else
		floor_flag_kernel<<<1, 1>>>(f, rounds, kind == GPUNIC_FLOOR_FLAG_ACQREL);
	if (GPU_FAILED(cudaGetLastError()))
		goto out;
	for (uint32_t i = 1; i <= rounds; i++) {
		uint64_t t0 = gpu_host_now_ns();

		if (kind == GPUNIC_FLOOR_LINE) {
			rc = floor_line_round(f, i, t0);
		} else {
			__atomic_store_n(&f->ping, i, __ATOMIC_RELEASE);
			rc = 0;
			while (__atomic_load_n(&f->pong, __ATOMIC_ACQUIRE) != i) {
				if (gpu_host_now_ns() - t0 > FLOOR_TIMEOUT_NS) {
					rc = ETIMEDOUT;
					break;
				}
			}
		}
		if (rc) {
			__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
			cudaDeviceSynchronize();
			goto out;
		}
		if (i > warmup)
			rtt_ns[i - warmup - 1] = gpu_host_now_ns() - t0;
	}
	rc = EIO;
	if (GPU_FAILED(cudaDeviceSynchronize()))
		goto out;
	if (torn) {
		torn[0] = f->torn[0];
		torn[1] = f->torn[1];
	}
	rc = 0;
out:
	cudaFreeHost(f);
	return rc;
}

extern "C" int gpunic_gpu_floor_pingpong(int device, uint32_t iters, uint32_t warmup,
					 uint64_t *rtt_ns)
{
	return gpunic_gpu_floor(device, GPUNIC_FLOOR_FLAG, iters, warmup, rtt_ns, NULL);
}
