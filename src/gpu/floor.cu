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
 *
 * The poll loop issues nothing but the poll: a read of host memory is one PCIe round trip, and
 * a second read that waits for the first (the stop flag, read after every empty poll by the
 * loop these floors had until 0.2: GPUNIC_FLOOR_STOP_EVERY_POLL keeps it) halves the rate at
 * which host memory is sampled. The stop flag is read once per FLOOR_STOP_POLLS empty polls.
 * With k pollers, k warps poll the same word or line, started a k-th of a read's round trip
 * apart, so host memory is sampled k times per round trip; the first warp to see a round
 * answers it (a block-shared maximum keeps the others from answering again).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_loc.h"
#include "gpunic/gpu.h"
#include "gpunic/gpunic_dev.h"
#include "gpunic/mem.h"
#include "gpunic/warp_dev.h"

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
	uint32_t stagger_ns; /* what the kernel used between its pollers' starts */
};

/* A round trip that has not come back after this long means the kernel is not running. */
#define FLOOR_TIMEOUT_NS 2000000000ull
/* Empty polls between two reads of the stop flag: a few milliseconds at most, long enough
 * that the read costs nothing measurable. */
#define FLOOR_STOP_POLLS 4096u
/* Dependent reads of host memory the kernel times to find its stagger. */
#define FLOOR_RTT_SAMPLES 16u

/* Word @i of round @r's line in direction @dir: each distinct, so any stale word shows. */
static __host__ __device__ __forceinline__ uint32_t floor_word(uint32_t r, uint32_t i,
							       uint32_t dir)
{
	return i == 15 ? r : (r * 0x9e3779b9u) ^ (i * 0x85ebca77u) ^ dir;
}

/* What the kernel is told. */
struct floor_args {
	uint32_t rounds;
	uint32_t stop_mask;   /* read the stop flag when (empty polls & stop_mask) == 0 */
	uint32_t stagger_ns;  /* 0: a k-th of the read round trip the kernel measures */
	int line, acqrel;
};

/*
 * One poll of the round (every lane of the warp): the flag on lane 0, or the line on lanes
 * 0-3 in one coalesced access. Return (all lanes): the newest round the poll saw whole, 0 if
 * none; *@torn set when a line's last word was new but the rest was not.
 */
static __device__ __forceinline__ uint32_t floor_poll(const struct floor_flags *f,
						      const struct floor_args *a, uint32_t lane,
						      bool *torn)
{
	uint32_t w[4], seen, good = 1, j = lane & 3, k;
	uint64_t lo = 0, hi = 0;

	*torn = false;
	if (!a->line) {
		seen = 0;
		if (lane == 0)
			seen = a->acqrel ? gpunic_dev_load_acquire_u32(&f->ping) :
					   gpunic_dev_load_relaxed_u32(&f->ping);
		return __shfl_sync(0xffffffffu, seen, 0);
	}
	if (lane < 4)
		gpunic_dev_load16_relaxed(&f->line_in[4 * j], &lo, &hi);
	w[0] = (uint32_t)lo;
	w[1] = (uint32_t)(lo >> 32);
	w[2] = (uint32_t)hi;
	w[3] = (uint32_t)(hi >> 32);
	/* the round is the last word's; the line is whole when every word is that round's */
	seen = __shfl_sync(0xffffffffu, w[3], 3);
	for (k = 0; k < 4; k++)
		good &= w[k] == floor_word(seen, 4 * j + k, 0);
	if (__ballot_sync(0xffffffffu, good || lane >= 4) == 0xffffffffu)
		return seen;
	*torn = seen != 0;
	return 0;
}

/* The answer to round @r (all lanes): the flag on lane 0, or the line on lanes 0-3. */
static __device__ __forceinline__ void floor_answer(struct floor_flags *f,
						    const struct floor_args *a, uint32_t lane,
						    uint32_t r)
{
	uint32_t w[4], j = lane & 3, k;

	if (!a->line) {
		if (lane == 0) {
			if (a->acqrel)
				gpunic_dev_store_release_u32(&f->pong, r);
			else
				gpunic_dev_store_relaxed_u32(&f->pong, r);
		}
		return;
	}
	if (lane < 4) {
		for (k = 0; k < 4; k++)
			w[k] = floor_word(r, 4 * j + k, 1);
		gpunic_dev_store16_relaxed(&f->line_out[4 * j], (uint64_t)w[1] << 32 | w[0],
					   (uint64_t)w[3] << 32 | w[2]);
	}
}

/*
 * Each warp of the block is one poller. The first to see round r (or a later one: a poller
 * that was slow may find the CPU already on the next) answers it; `answered` in shared memory
 * tells the others, at no cost across PCIe.
 */
static __global__ void floor_kernel(struct floor_flags *f, struct floor_args a)
{
	__shared__ uint32_t answered, quit, stagger, torn;
	uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, pollers = blockDim.x >> 5;
	uint32_t r = 1, seen, polls = 0, stop = 0;
	bool tear;

	if (threadIdx.x == 0) {
		answered = quit = torn = 0;
		stagger = a.stagger_ns;
		if (!stagger && pollers > 1)
			stagger = gpunic_warp_read_rtt_ns(&f->stop, FLOOR_RTT_SAMPLES) /
				  pollers;
		f->stagger_ns = pollers > 1 ? stagger : 0;
	}
	__syncthreads();
	gpunic_warp_spin_ns((uint64_t)warp * stagger);
	while (r <= a.rounds) {
		seen = floor_poll(f, &a, lane, &tear);
		if (seen >= r && seen <= a.rounds) {
			/* one answer per round, whichever poller saw it first */
			uint32_t prev = 0;

			if (lane == 0)
				prev = atomicMax(&answered, seen);
			if (__shfl_sync(0xffffffffu, prev, 0) < seen)
				floor_answer(f, &a, lane, seen);
			r = seen + 1;
			polls = 0;
			continue;
		}
		if (tear && lane == 0)
			atomicAdd(&torn, 1);
		/* block-local: what another poller answered, or that one saw the stop flag */
		seen = *(volatile uint32_t *)&answered;
		if (seen >= r)
			r = seen + 1;
		if (*(volatile uint32_t *)&quit)
			break;
		if ((++polls & a.stop_mask) == 0) {
			if (lane == 0)
				stop = gpunic_dev_load_relaxed_u32(&f->stop);
			if (__shfl_sync(0xffffffffu, stop, 0)) {
				quit = 1;
				break;
			}
		}
	}
	__syncthreads();
	if (threadIdx.x == 0)
		f->torn[0] = torn;
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

/* CPU side of the flag floors: write the round, wait for its answer. */
static int floor_flag_round(struct floor_flags *f, uint32_t r, uint64_t t0)
{
	__atomic_store_n(&f->ping, r, __ATOMIC_RELEASE);
	while (__atomic_load_n(&f->pong, __ATOMIC_ACQUIRE) != r)
		if (gpu_host_now_ns() - t0 > FLOOR_TIMEOUT_NS)
			return ETIMEDOUT;
	return 0;
}

extern "C" int gpunic_gpu_floor_run(int device, const struct gpunic_floor_opts *o, uint32_t iters,
				    uint32_t warmup, uint64_t *rtt_ns,
				    struct gpunic_floor_result *res)
{
	struct floor_flags *f = NULL;
	struct floor_args a;
	uint32_t pollers = o ? (o->pollers ? o->pollers : 1) : 0, i;
	int rc = EIO;

	if (!o || !rtt_ns || pollers > GPUNIC_FLOOR_POLLERS_MAX ||
	    (o->kind != GPUNIC_FLOOR_FLAG && o->kind != GPUNIC_FLOOR_FLAG_ACQREL &&
	     o->kind != GPUNIC_FLOOR_LINE))
		return EINVAL;
	if (GPU_FAILED(cudaSetDevice(device)))
		return ENODEV;
	if (GPU_FAILED(cudaHostAlloc((void **)&f, sizeof(*f), cudaHostAllocMapped)))
		return EIO;
	memset(f, 0, sizeof(*f));
	memset(&a, 0, sizeof(a));
	a.rounds = iters + warmup;
	a.stop_mask = o->stop_every_poll ? 0 : FLOOR_STOP_POLLS - 1;
	a.stagger_ns = o->stagger_ns;
	a.line = o->kind == GPUNIC_FLOOR_LINE;
	a.acqrel = o->kind == GPUNIC_FLOOR_FLAG_ACQREL;
	floor_kernel<<<1, 32 * pollers>>>(f, a);
	if (GPU_FAILED(cudaGetLastError()))
		goto out;
	for (i = 1; i <= a.rounds; i++) {
		uint64_t t0;

		if (o->stop && !(i & 255) && o->stop()) {
			__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
			break;
		}
		t0 = gpu_host_now_ns();
		rc = a.line ? floor_line_round(f, i, t0) : floor_flag_round(f, i, t0);
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
	if (res) {
		res->done = i > warmup ? i - 1 - warmup : 0;
		res->torn[0] = f->torn[0];
		res->torn[1] = f->torn[1];
		res->pollers = pollers;
		res->stagger_ns = f->stagger_ns;
	}
	rc = 0;
out:
	cudaFreeHost(f);
	return rc;
}
