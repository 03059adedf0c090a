/* SPDX-License-Identifier: MIT */
/*
 * Build-only check: every gpunic_dev.h function compiled as device code by nvcc (and, through
 * __host__ __device__, by nvcc's host pass as C++). Each result is stored, so the optimizer keeps
 * every path down to PTX and ptxas sees all inline assembly. Nothing here is launched.
 */
#include <gpunic/gpunic_dev.h>

/* Byte order, ordering primitives and size helpers. */
__global__ void gpunic_dev_check_primitives(struct gpunic_dev_qp *qp, uint64_t *out)
{
	struct gpunic_dev_qp_state *st = qp->state;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	uint32_t spins = 0;
	uint64_t v = 0;

	sge.addr = out[1];
	sge.length = (uint32_t)out[2];
	sge.lkey = 7;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = (uint8_t)out[3];
	wr.num_sge = 1;
	wr.sg_list = &sge;

	v += gpunic_dev_htobe32((uint32_t)out[0]) + gpunic_dev_be32toh((uint32_t)out[1]);
	v += gpunic_dev_be16toh((uint16_t)out[2]) + gpunic_dev_htobe64(out[3]);
	gpunic_dev_to_nic_barrier();
	gpunic_dev_full_barrier();
	v += gpunic_dev_load_relaxed_u32(&st->sq_ready);
	v += gpunic_dev_load_acquire_u32(&st->sq_completed);
	v += gpunic_dev_load_acquire_u64(&st->sq_last_ctrl);
	v += gpunic_dev_load_acquire_u8(qp->scq.buf + 63);
	gpunic_dev_store_relaxed_u32(&st->rq_head, (uint32_t)v);
	gpunic_dev_store_release_u32(&st->rq_tail, (uint32_t)v);
	gpunic_dev_store_release_u64(&st->sq_last_ctrl, v);
	gpunic_dev_mmio_write64(qp->db, v);
	v += gpunic_dev_atomic_cas_u32(&st->sq_db_lock, 0, 1);
	gpunic_dev_spin_wait(&spins);
	v += spins;

	v += gpunic_dev_ds_to_bbs((uint32_t)v & 63);
	v += (uint64_t)gpunic_dev_opcode_has_raddr(wr.opcode);
	v += (uint64_t)gpunic_dev_opcode_has_imm(wr.opcode);
	v += gpunic_dev_inline_one_bb_max(wr.opcode) + gpunic_dev_inline_units((uint32_t)v);
	v += (uint64_t)(int64_t)gpunic_dev_send_wqe_ds(qp, &wr);
	v += (uint64_t)(int64_t)gpunic_dev_send_wqe_bbs(qp, &wr);
	v += (uint64_t)(int64_t)gpunic_dev_qp_check(qp);
	v += (uint64_t)(uintptr_t)gpunic_dev_sq_seg(qp, (uint32_t)v, 1);
	v += gpunic_dev_sq_free(qp) + (uint64_t)gpunic_dev_sq_done(qp, (uint32_t)v);
	out[threadIdx.x] = v;
}

/* Thread scope: WQE writing, posting (SGE, one SGE, inline), submit, receive, CQ polling. */
__global__ void gpunic_dev_check_thread(struct gpunic_dev_qp *qp, uint64_t *out)
{
	__shared__ uint8_t payload[64];
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge[2];
	struct gpunic_dev_cqe cqe;
	union gpunic_dev_seg seg;
	uint64_t v = 0;
	int ds;

	sge[0].addr = (uint64_t)(uintptr_t)payload;
	sge[0].length = (uint32_t)out[0];
	sge[0].lkey = 1;
	sge[1] = sge[0];
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
	wr.flags = (uint8_t)out[1];
	wr.num_sge = 2;
	wr.imm = 0x11223344;
	wr.remote_addr = out[2];
	wr.rkey = 9;
	wr.sg_list = sge;

	ds = gpunic_dev_send_wqe_ds(qp, &wr);
	if (ds > 0)
		v += gpunic_dev_wqe_write_send(qp, (uint32_t)out[3], &wr, (uint32_t)ds);
	seg.q[0] = v;
	seg.q[1] = ~v;
	gpunic_dev_seg_store(gpunic_dev_sq_seg(qp, 0, 0), &seg);
	{
		union gpunic_dev_bb bb;
		uint32_t w[16];

		memset(&bb, 0, sizeof(bb));
		gpunic_dev_priv_write_inline(qp, 1, 1, 4, &wr, sge[0].length, &bb);
		gpunic_dev_priv_store_bb(qp, 1, &bb, 4, (int)out[8]);
		for (int i = 0; i < 16; i++)
			w[i] = bb.w[i] ^ (uint32_t)i;
		gpunic_dev_wqe_seal(w);
		v += (uint64_t)gpunic_dev_wqe_seal_ok(w) + gpunic_dev_cqe_check(w, (uint32_t)v);
	}
	v += gpunic_dev_priv_ctrl_end(v, (uint32_t)out[4]);
	v += (uint64_t)gpunic_dev_post_send(qp, &wr);
	v += (uint64_t)gpunic_dev_post_send_sge(qp, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED,
						out[5], 8, 1, 0, 0, 0);
	v += (uint64_t)gpunic_dev_post_send_inline(qp, MLX5_OPCODE_SEND_IMM, 0, payload, 12, 0, 0,
						   0xabcd);
	v += (uint64_t)gpunic_dev_submit(qp);
	v += (uint64_t)gpunic_dev_priv_ring(qp, (uint32_t)v, v);
	v += (uint64_t)gpunic_dev_post_recv(qp, sge, (uint32_t)out[6]);
	if (gpunic_dev_poll_scq(qp, &cqe))
		v += cqe.wqe_idx + cqe.syndrome + (uint64_t)gpunic_dev_cqe_is_error(&cqe);
	if (gpunic_dev_poll_rcq(qp, &cqe))
		v += cqe.imm + cqe.data[3] + cqe.byte_cnt;
	if (gpunic_dev_priv_poll_cq(&qp->scq, &qp->state->scq_ci, &cqe, 0, NULL,
				    &qp->state->scq_torn))
		v += cqe.qpn;
	v += (uint64_t)gpunic_dev_post_recv_deferred(qp, sge, (uint32_t)out[7]);
	if (gpunic_dev_poll_rcq_batched(qp, &cqe, NULL))
		v += cqe.wqe_idx;
	v += (uint64_t)gpunic_dev_recv_repost(qp, (uint32_t)out[9]);
	gpunic_dev_recv_publish(qp, (uint32_t)out[10]);
	v += (uint64_t)gpunic_dev_submit_all(qp);
	out[threadIdx.x] = v;
}

/* Shared scope from many threads: reserve, mark ready, submit, the combined post. */
__global__ void gpunic_dev_check_shared(struct gpunic_dev_qp *qp, uint64_t *out)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	int64_t start;
	uint64_t v = 0;

	sge.addr = out[0] + threadIdx.x * 64;
	sge.length = 64;
	sge.lkey = 3;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = MLX5_OPCODE_SEND;
	wr.num_sge = 1;
	wr.sg_list = &sge;

	start = gpunic_dev_sq_reserve_mt(qp, 1);
	if (start >= 0) {
		v = gpunic_dev_wqe_write_send(qp, (uint32_t)start, &wr, 2);
		gpunic_dev_sq_mark_ready_mt(qp, (uint32_t)start, 1, v);
		v += (uint64_t)gpunic_dev_submit_mt(qp);
	}
	v += (uint64_t)gpunic_dev_post_send_mt(qp, &wr);
	v += (uint64_t)gpunic_dev_priv_ready_ring_mt(qp, (uint32_t)v, 1, v);
	out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

/* Warp scope: a warp posts a batch of per-lane requests from shared memory. */
__global__ void gpunic_dev_check_warp(struct gpunic_dev_qp *qp, uint64_t *out)
{
	__shared__ struct gpunic_dev_send_wr wrs[GPUNIC_DEV_WARP_SIZE];
	__shared__ struct gpunic_dev_sge sges[GPUNIC_DEV_WARP_SIZE];
	uint32_t lane = threadIdx.x & (GPUNIC_DEV_WARP_SIZE - 1);

	sges[lane].addr = out[0] + lane * 128;
	sges[lane].length = 128;
	sges[lane].lkey = 5;
	memset(&wrs[lane], 0, sizeof(wrs[lane]));
	wrs[lane].opcode = MLX5_OPCODE_RDMA_WRITE;
	wrs[lane].flags = lane == GPUNIC_DEV_WARP_SIZE - 1 ? GPUNIC_DEV_SEND_SIGNALED : 0;
	wrs[lane].num_sge = 1;
	wrs[lane].remote_addr = out[1] + lane * 128;
	wrs[lane].rkey = 6;
	wrs[lane].sg_list = &sges[lane];
	__syncwarp();
	out[threadIdx.x] = (uint64_t)gpunic_dev_post_send_warp(qp, wrs, (uint32_t)out[2]);
}
