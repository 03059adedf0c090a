// SPDX-License-Identifier: MIT
/* UC end to end: every opcode, size and path MTU in both directions, immediates, zero-length
 * receives, CQE scatter, PSN wrap, the three links, inline and multi-SGE sends. */
#include "nic_fixture.h"

TEST(uc_send_shm_basic)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC, .mtu = GPUNIC_MTU_1024 };
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 5, 1);
	fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_SEND_IMM, 3000, 2);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE, 2101, 3);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE_IMM, 7, 4);
	fx_teardown(&fx);
}

TEST(uc_matrix_mtu256)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_256, false);
}

TEST(uc_matrix_mtu512)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_512, false);
}

TEST(uc_matrix_mtu1024)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_1024, false);
}

TEST(uc_matrix_mtu2048)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_2048, false);
}

TEST(uc_matrix_mtu4096)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_4096, false);
}

TEST(uc_matrix_cqe_scatter)
{
	fx_matrix(GPUNIC_QPT_UC, GPUNIC_MTU_1024, true);
}

/* 1 MiB messages from just below 2^24 cross the PSN wrap in both directions */
TEST(uc_psn_wrap)
{
	fx_matrix_psn(GPUNIC_QPT_UC, GPUNIC_MTU_256, false, FX_LINK_SHM, 0xFFFFF0);
}

TEST(uc_link_udp)
{
	fx_matrix_psn(GPUNIC_QPT_UC, GPUNIC_MTU_1024, false, FX_LINK_UDP, 0xFFFFFE);
}

TEST(uc_link_dgram)
{
	fx_matrix_psn(GPUNIC_QPT_UC, GPUNIC_MTU_1024, false, FX_LINK_DGRAM, 7);
}

/*
 * Small inline SENDs (one block) and WRITE_IMMs (two) posted faster than the peer takes them:
 * the sender's link fills, a WQE meets no room and waits in hand (req.c's quick path hands it
 * to the general one), and every message still arrives once, in order, byte for byte.
 */
#define FULL_MSGS 1200u

static void full_msg(uint32_t i, uint8_t *m, uint32_t *len, uint8_t *op)
{
	*op = i & 1 ? MLX5_OPCODE_RDMA_WRITE_IMM : MLX5_OPCODE_SEND;
	*len = i & 1 ? 40 : 20;
	fx_fill(m, *len, i);
}

static int64_t full_post(struct fixture *fx, uint32_t i)
{
	uint8_t m[64], op;
	uint32_t len;
	int64_t r;

	full_msg(i, m, &len, &op);
	r = gpunic_dev_post_send_inline(&fx->a.dq, op, GPUNIC_DEV_SEND_SIGNALED, m, len,
					fx_va(&fx->b, FX_DST_OFF + i * 64), fx->b.mr->rkey, i);
	if (r >= 0)
		CHECK_EQ(gpunic_dev_submit(&fx->a.dq), 0);
	return r;
}

TEST(uc_inline_link_full)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC, .max_recv_wr = 2048, .cqe = 4096 };
	struct gpunic_nic_counters nc = { 0 };
	struct gpunic_dev_cqe cqe;
	uint32_t posted = 0, got = 0, extra = 0;
	uint64_t end = fx_now_ns() + FX_WAIT_NS;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	for (uint32_t i = 0; i < FULL_MSGS; i++)
		fx_post_recv(&fx.b, (size_t)i * 64, 64);
	/* only the sender's engine runs until its link is full, and a few WQEs more */
	while (posted < FULL_MSGS && extra < 8) {
		if (full_post(&fx, posted) >= 0)
			posted++;
		gpunic_nic_poll(fx.a.nic, 64);
		while (gpunic_dev_poll_scq(&fx.a.dq, &cqe))
			CHECK(!gpunic_dev_cqe_is_error(&cqe));
		gpunic_nic_query_counters(fx.a.nic, &nc);
		if (nc.tx_busy)
			extra++;
		CHECK(fx_now_ns() < end);
	}
	CHECK(nc.tx_busy > 0);
	while (got < posted) {
		uint8_t want[64], op;
		uint32_t len;
		const uint8_t *data;

		if (!gpunic_dev_poll_rcq(&fx.b.dq, &cqe)) {
			pump(&fx);
			while (gpunic_dev_poll_scq(&fx.a.dq, &cqe))
				CHECK(!gpunic_dev_cqe_is_error(&cqe));
			CHECK(fx_now_ns() < end);
			continue;
		}
		full_msg(got, want, &len, &op);
		CHECK_EQ(cqe.opcode, fx_cqe_op(op));
		CHECK_EQ(cqe.byte_cnt, len);
		CHECK_EQ(cqe.wqe_idx, got);
		if (op == MLX5_OPCODE_RDMA_WRITE_IMM) {
			CHECK_EQ(cqe.imm, got);
			data = fx.b.buf + FX_DST_OFF + got * 64;
		} else {
			data = cqe.data_in_cqe ? cqe.data : fx.b.buf + (size_t)got * 64;
		}
		CHECK(fx_check(data, len, got));
		got++;
	}
	gpunic_nic_query_counters(fx.b.nic, &nc);
	CHECK_EQ(nc.rx_frames, posted);
	fx_teardown(&fx);
}

/*
 * UC completes a sent WQE at once (req.c's quick path, comp_complete_uc_sent): inline WRITEs,
 * every other one signaled, into a send CQ of OVF_SCQE entries that nobody polls. The signaled
 * ones fill it, each CQE naming its WQE; the next signaled one finds it full: the sender's QP
 * goes to ERR, counts the overflow once, and leaves every byte of the full ring as it was.
 */
#define OVF_SCQE 4u
#define OVF_WQES (2 * OVF_SCQE)
#define OVF_BYTES 24u

static void ovf_post(struct fixture *fx, uint32_t i, bool signaled)
{
	uint8_t m[OVF_BYTES];

	fx_fill(m, sizeof(m), i);
	CHECK(gpunic_dev_post_send_inline(&fx->a.dq, MLX5_OPCODE_RDMA_WRITE,
					  signaled ? GPUNIC_DEV_SEND_SIGNALED : 0, m, sizeof(m),
					  fx_va(&fx->b, FX_DST_OFF + i * 64), fx->b.mr->rkey,
					  0) == (int64_t)i);
	CHECK_EQ(gpunic_dev_submit(&fx->a.dq), 0);
}

TEST(uc_inline_send_cq_overflow)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC, .cqe = OVF_SCQE };
	uint8_t snap[OVF_SCQE * 64];
	struct gpunic_qp_counters qc;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	uint64_t end;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(fx.a.scq->cqe_cnt, OVF_SCQE);
	for (uint32_t i = 0; i < OVF_WQES; i++) {
		ovf_post(&fx, i, i & 1);
		end = fx_now_ns() + FX_WAIT_NS;
		while (!fx_check(fx.b.buf + FX_DST_OFF + i * 64, OVF_BYTES, i)) {
			pump(&fx);
			CHECK(fx_now_ns() < end);
		}
	}
	fx_settle(&fx, 2000000);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	memcpy(snap, fx.a.dq.scq.buf, sizeof(snap));

	ovf_post(&fx, OVF_WQES, true);
	fx_settle(&fx, 10000000);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_ERR);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &qc), 0);
	CHECK_EQ(qc.drops[GPUNIC_DROP_CQ_OVERFLOW], 1);
	CHECK_MEM(fx.a.dq.scq.buf, snap, sizeof(snap));
	for (uint32_t i = 1; i < OVF_WQES; i += 2) {
		CHECK(gpunic_dev_poll_scq(&fx.a.dq, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
		CHECK_EQ(cqe.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
		CHECK_EQ(cqe.wqe_idx, i);
		CHECK_EQ(cqe.qpn, fx.a.qp->qp_num);
	}
	fx_teardown(&fx);
}
