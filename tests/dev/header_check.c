/* SPDX-License-Identifier: MIT */
/*
 * Compiled, not run: gpunic_dev.h alone, with no feature macros, must build warning-free as
 * strict C11 (gcc, clang) and as C++ (what nvcc's host pass sees). Every function is called so
 * that -O2 analyses all of them.
 */
#include <gpunic/gpunic_dev.h>

int gpunic_dev_header_check(struct gpunic_dev_qp *qp, const struct gpunic_dev_send_wr *wrs,
			    const struct gpunic_dev_sge *sge, struct gpunic_dev_cqe *cqe);

int gpunic_dev_header_check(struct gpunic_dev_qp *qp, const struct gpunic_dev_send_wr *wrs,
			    const struct gpunic_dev_sge *sge, struct gpunic_dev_cqe *cqe)
{
	uint32_t spins = 0;
	int64_t r = 0;

	r += gpunic_dev_post_send(qp, &wrs[0]) + gpunic_dev_submit(qp);
	r += gpunic_dev_post_send_sge(qp, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, sge->addr,
				      sge->length, sge->lkey, 0, 0, 0);
	r += gpunic_dev_post_send_inline(qp, MLX5_OPCODE_RDMA_WRITE_IMM, 0, cqe->data, 8, 1, 2, 3);
	r += gpunic_dev_post_send_mt(qp, &wrs[0]) + gpunic_dev_submit_mt(qp);
	r += gpunic_dev_post_send_warp(qp, wrs, 2) + gpunic_dev_sq_reserve_mt(qp, 1);
	gpunic_dev_sq_mark_ready_mt(qp, 0, 1, 0);
	r += gpunic_dev_post_recv(qp, sge, 1) + gpunic_dev_qp_check(qp);
	if (gpunic_dev_poll_scq(qp, cqe) && gpunic_dev_cqe_is_error(cqe))
		r++;
	if (gpunic_dev_poll_rcq(qp, cqe))
		r += cqe->imm + cqe->data[0];
	r += gpunic_dev_sq_free(qp) + gpunic_dev_sq_done(qp, 1) + gpunic_dev_send_wqe_bbs(qp, wrs);
	r += gpunic_dev_inline_one_bb_max(MLX5_OPCODE_SEND) + gpunic_dev_be16toh(1);
	r += (int64_t)gpunic_dev_htobe64((uint64_t)r) + gpunic_dev_be32toh((uint32_t)r);
	r += gpunic_dev_load_relaxed_u32(&qp->state->sq_ready);
	gpunic_dev_spin_wait(&spins);
	return (int)r;
}
