/* SPDX-License-Identifier: MIT */
/*
 * Warp helpers of the GPU fast paths (the forwarder, loop_dev.h; the latency tests,
 * perf_lat_dev.h). A 64-byte line (a CQE, a one-block WQE) is held by a group of four lanes,
 * 16 bytes each: lane 4g + j holds chunk j of group g's line, so that the group reads or writes
 * it in one coalesced access. Every function here runs on all 32 lanes together.
 */
#ifndef GPUNIC_WARP_DEV_H
#define GPUNIC_WARP_DEV_H

#ifdef __CUDACC__
#include <gpunic/gpunic_dev.h>

/* Word @k of the 16 bytes (@lo, @hi). */
static __device__ __forceinline__ uint32_t gpunic_warp_word(uint64_t lo, uint64_t hi, uint32_t k)
{
	uint64_t v = k < 2 ? lo : hi;

	return (uint32_t)(k & 1 ? v >> 32 : v);
}

/* Sum over the four lanes of a group (lanes 4g..4g+3). */
static __device__ __forceinline__ uint32_t gpunic_warp_group_sum(uint32_t v)
{
	v += __shfl_xor_sync(0xffffffffu, v, 1);
	v += __shfl_xor_sync(0xffffffffu, v, 2);
	return v;
}

static __device__ __forceinline__ uint32_t gpunic_warp_group_xor(uint32_t v)
{
	v ^= __shfl_xor_sync(0xffffffffu, v, 1);
	v ^= __shfl_xor_sync(0xffffffffu, v, 2);
	return v;
}

/*
 * Seal the one-block WQE a group holds (@o: this lane's four words, chunk @j; @ds: its 16-byte
 * units; @idx: its basic-block counter): exactly what gpunic_dev_wqe_seal() computes, a chunk
 * per lane. The ctrl's word 2 (lane j = 0) must have bytes 8-10 zero. The signature's XOR runs
 * beside the seal's sum: the seal's bytes join it afterwards instead of the two following each
 * other. Return: word 2 of the sealed ctrl segment (meaningful on lane j = 0).
 */
static __device__ __forceinline__ uint32_t gpunic_warp_seal(const uint32_t *o, uint32_t j,
							   uint32_t ds, uint32_t idx)
{
	uint32_t hash = gpunic_warp_group_sum(gpunic_dev_seal_part(o, j, ds, idx & 0xffff));
	uint32_t x = gpunic_warp_group_xor(j < ds ? o[0] ^ o[1] ^ o[2] ^ o[3] : 0);
	uint32_t seal = gpunic_dev_seal_finish(hash);

	x ^= gpunic_dev_seal_put(0, seal);
	return gpunic_dev_seal_put(o[2], seal) | (~gpunic_dev_xor_bytes(x) & 0xff);
}
#endif /* __CUDACC__ */

#endif /* GPUNIC_WARP_DEV_H */
