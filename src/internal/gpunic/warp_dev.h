/* SPDX-License-Identifier: MIT */
/*
 * Warp helpers of the GPU fast paths (the forwarder, loop_dev.h; the latency tests,
 * perf_lat_dev.h). A 64-byte line (a CQE, a one-block WQE) is held by a group of four lanes,
 * 16 bytes each: lane 4g + j holds chunk j of group g's line, so that the group reads or writes
 * it in one coalesced access. Every function here runs on all 32 lanes together, except
 * gpunic_warp_hand_over (lane 0).
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

/*
 * The mean round trip of @n dependent reads of @p, a word that reads 0 (one lane). Each read's
 * address depends on the last one's value and the clock is read behind a branch on the last
 * value, so nothing overlaps the reads being timed. What the pollers of a program are
 * staggered by.
 */
static __device__ __forceinline__ uint32_t gpunic_warp_read_rtt_ns(const uint32_t *p, uint32_t n)
{
	uint64_t t0 = gpunic_dev_clock_ns(), t1 = t0;
	uint32_t i, v = 0;

	for (i = 0; i < n; i++)
		v = gpunic_dev_load_relaxed_u32(p + (v >> 31));
	if (v != 0xdeadbeefu)
		t1 = gpunic_dev_clock_ns();
	return (uint32_t)((t1 - t0) / (n ? n : 1));
}

/* Let @ns pass on the global timer; loads issued before still go on meanwhile. */
static __device__ __forceinline__ void gpunic_warp_spin_ns(uint64_t ns)
{
	uint64_t t0 = gpunic_dev_clock_ns();

	while (gpunic_dev_clock_ns() - t0 < ns)
		;
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

/* The op_own byte (byte 63) of the group's 64-byte CQE line, on every lane of the group. */
static __device__ __forceinline__ uint32_t gpunic_warp_cqe_own(uint64_t hi, uint32_t lane)
{
	return __shfl_sync(0xffffffffu, (uint32_t)(hi >> 56), (lane & ~3u) | 3);
}

/*
 * Whether the group's CQE line, the one at counter @ci, is whole (@w: this lane's words): the
 * check word the NIC stored (word GPUNIC_DEV_CQE_CHECK_WORD, chunk 2's third) equals the check
 * of the line, a part of it per lane. The same on every lane of the group.
 */
static __device__ __forceinline__ bool gpunic_warp_cqe_whole(const uint32_t *w, uint32_t lane,
							     uint32_t ci)
{
	uint32_t stored = __shfl_sync(0xffffffffu, w[2], (lane & ~3u) | 2);

	return gpunic_warp_group_sum(gpunic_dev_cqe_check_part(w, lane & 3, ci)) == stored;
}

/*
 * Seal the WQE that @lanes lanes hold (4: one block, 8: two), chunk @j = lane % @lanes on each
 * (@o: its four words; @ds: the WQE's 16-byte units; @idx: its basic-block counter): exactly what
 * gpunic_dev_wqe_seal() computes, a chunk per lane. The ctrl's word 2 (chunk 0) must have bytes
 * 8-10 zero. The signature's XOR runs beside the seal's sum: the seal's bytes join it afterwards
 * instead of the two following each other. Return: word 2 of the sealed ctrl segment
 * (meaningful on chunk 0's lane).
 */
static __device__ __forceinline__ uint32_t gpunic_warp_seal(const uint32_t *o, uint32_t j,
							   uint32_t ds, uint32_t idx,
							   uint32_t lanes)
{
	uint32_t hash = gpunic_dev_seal_part(o, j, ds, idx & 0xffff);
	uint32_t x = j < ds ? o[0] ^ o[1] ^ o[2] ^ o[3] : 0;
	uint32_t seal;

	hash = gpunic_warp_group_sum(hash);
	x = gpunic_warp_group_xor(x);
	if (lanes == 8) {
		hash += __shfl_xor_sync(0xffffffffu, hash, 4);
		x ^= __shfl_xor_sync(0xffffffffu, x, 4);
	}
	seal = gpunic_dev_seal_finish(hash);
	x ^= gpunic_dev_seal_put(0, seal);
	return gpunic_dev_seal_put(o[2], seal) | (~gpunic_dev_xor_bytes(x) & 0xff);
}

/*
 * Lane 0, after the warp stored its WQEs up to @end: hand them to the NIC and store the send
 * counters (@st: the QP's state; @qp: the warp's copy of the QP; @ctrl8: the last WQE's ctrl
 * bytes 0-7, the doorbell value). Posted stores, no release: the caller ordered the WQEs first
 * (GPU_DB, CPU_PROXY: each lane's fence, then a __syncwarp; GPU_BF: sealed in their BlueFlame
 * lines, which the NIC takes whole with no fence), and only this warp moves these counters.
 * Called by gpunic_loop_fast_publish (the forwarder) and gpunic_perf_warp_post (latency).
 */
static __device__ __forceinline__ void gpunic_warp_hand_over(struct gpunic_dev_qp_state *st,
							      const struct gpunic_dev_qp *qp,
							      uint32_t end, uint64_t ctrl8)
{
	st->sq_reserved = end;
	st->sq_ready = end;
	st->sq_last_ctrl = ctrl8;
	gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(end & 0xffff));
	if (qp->handler_mode == GPUNIC_HANDLER_GPU_DB)
		gpunic_dev_mmio_write64(qp->db, ctrl8);
	else if (qp->handler_mode == GPUNIC_HANDLER_CPU_PROXY)
		gpunic_dev_store_relaxed_u32(qp->mailbox, end);
	st->sq_submitted = end;
}
#endif /* __CUDACC__ */

#endif /* GPUNIC_WARP_DEV_H */
