// SPDX-License-Identifier: MIT
/* Error paths: RNR, retry exhaustion, flushes, protection violations on both transports, bad
 * local SGEs, zero-length operations without a valid key (C9-88). */
#include "nic_fixture.h"

static void expect_send_err(struct fixture *fx, struct player *p, uint8_t syndrome)
{
	struct gpunic_dev_cqe cqe;

	CHECK(fx_wait_cqe(fx, p, true, &cqe));
	if (cqe.opcode != MLX5_CQE_REQ_ERR || cqe.syndrome != syndrome)
		fx_dump(fx);
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cqe.syndrome, syndrome);
}

/* Error CQEs are named as rdma-core names the statuses libmlx5 maps them to. */
TEST(err_syndrome_names)
{
	CHECK(!strcmp(gpunic_syndrome_str(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR),
		      "transport retry counter exceeded"));
	CHECK(!strcmp(gpunic_syndrome_str(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR),
		      "RNR retry counter exceeded"));
	CHECK(!strcmp(gpunic_syndrome_str(MLX5_CQE_SYNDROME_WR_FLUSH_ERR),
		      "Work Request Flushed Error"));
	CHECK(!strcmp(gpunic_syndrome_str(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR),
		      "remote access error"));
	CHECK(!strcmp(gpunic_syndrome_str(0x77), "unknown syndrome"));
}

static uint64_t qp_drops(struct player *p, enum gpunic_drop_reason r)
{
	struct gpunic_qp_counters c;

	CHECK_EQ(gpunic_qp_query_counters(p->qp, &c), 0);
	return c.drops[r];
}

TEST(rc_rnr_retry_then_success)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .rnr_retry = 7, .min_rnr_timer = 1 };
	struct gpunic_dev_cqe cqe;
	struct gpunic_qp_counters c;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_fill(fx.a.buf, 100, 9);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND_IMM, GPUNIC_DEV_SEND_SIGNALED, 0, 100, &fx.b, 0,
		      77) >= 0);
	fx_settle(&fx, 20000000);	/* 20 ms of RNR NAKs and retries */
	CHECK(!gpunic_dev_poll_scq(&fx.a.dq, &cqe));
	fx_post_recv(&fx.b, FX_DST_OFF, 200);
	CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(cqe.imm, 77);
	CHECK(fx_check(fx.b.buf + FX_DST_OFF, 100, 9));
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &c), 0);
	CHECK(c.rnr_naks_received > 0);
	CHECK(qp_drops(&fx.b, GPUNIC_DROP_NO_RECV_WQE) > 0);
	fx_teardown(&fx);
}

TEST(rc_rnr_retry_exhausted)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .rnr_retry = 2, .min_rnr_timer = 1 };
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, 0, 10, &fx.b, 0, 0) >= 0);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND, 0, 0, 10, &fx.b, 0, 0) >= 0);
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	/* the rest is flushed, signaled or not */
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_ERR);
	fx_teardown(&fx);
}

TEST(rc_retry_exhausted)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .timeout = 1, .retry_cnt = 2 };
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_ERR };
	struct gpunic_qp_counters c;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	/* the peer stops answering: its QP drops everything in ERR */
	CHECK_EQ(gpunic_qp_modify(fx.b.qp, &at, GPUNIC_QP_STATE), 0);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED, 0, 3000, &fx.b, 0,
		      0) >= 0);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_READ, GPUNIC_DEV_SEND_SIGNALED, 0, 10, &fx.b, 0, 0) >=
	      0);
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_ERR);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &c), 0);
	CHECK_EQ(c.timeouts, 3);
	CHECK(qp_drops(&fx.b, GPUNIC_DROP_QP_STATE) > 0);
	fx_teardown(&fx);
}

TEST(err_flush_receives_on_modify_to_err)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_ERR };
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_post_recv(&fx.b, 0, 100);
	fx_post_recv(&fx.b, 100, 100);
	CHECK_EQ(gpunic_qp_modify(fx.b.qp, &at, GPUNIC_QP_STATE), 0);
	for (int i = 0; i < 2; i++) {
		CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_ERR);
		CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	}
	/* posted in ERR: flushed too */
	fx_post_recv(&fx.b, 0, 100);
	CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
	CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	fx_teardown(&fx);
}

TEST(err_bad_local_sge)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC };
	struct gpunic_nic_counters nc;
	struct fixture fx;
	uint32_t bad_lkey;

	fx_setup(&fx, FX_LINK_SHM, &o);
	/* lkey of nothing (a flipped tag bit; never MLX5_INVALID_LKEY, which would end the SGE
	 * list and leave a valid zero-length SEND), then a range past the region's end */
	bad_lkey = fx.a.mr->lkey ^ 0x40;
	if (bad_lkey == MLX5_INVALID_LKEY)
		bad_lkey = fx.a.mr->lkey ^ 0x80;
	CHECK(gpunic_dev_post_send_sge(&fx.a.dq, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED,
				       fx_va(&fx.a, 0), 10, bad_lkey, 0, 0, 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	gpunic_nic_query_counters(fx.a.nic, &nc);
	CHECK_EQ(nc.tx_frames, 0);
	fx_teardown(&fx);

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED, FX_BUF_BYTES - 4, 8,
		      &fx.b, 0, 0) >= 0);
	expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	fx_teardown(&fx);
}

/* A zero-length WRITE or READ needs no valid R_Key (C9-88). */
TEST(rc_zero_length_needs_no_rkey)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC };
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK(gpunic_dev_post_send_sge(&fx.a.dq, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED,
				       0, 0, 0, 0x1234, 0xBAD, 0) >= 0);
	CHECK(gpunic_dev_post_send_sge(&fx.a.dq, MLX5_OPCODE_RDMA_READ, GPUNIC_DEV_SEND_SIGNALED, 0,
				       0, 0, 0x1234, 0xBAD, 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	for (int i = 0; i < 2; i++) {
		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	}
	fx_teardown(&fx);
}

enum violation {
	V_BAD_RKEY,
	V_OUT_OF_BOUNDS,
	V_WRAPPING_VA,
	V_NO_MR_RIGHT,
	V_READ_NO_QP_RIGHT,
};

/* One protection violation: memory around and inside the target stays as it was, the drop is
 * counted by reason, and RC answers with a remote access NAK and goes to ERR. */
static void violation(enum gpunic_qp_type type, enum violation v)
{
	struct fx_opts o = { .type = type };
	uint8_t op = MLX5_OPCODE_RDMA_WRITE;
	enum gpunic_drop_reason why;
	uint64_t raddr = 0;
	uint32_t rkey = 0, len = 3000;
	struct gpunic_mr *ro = NULL;
	struct fixture fx;
	uint8_t *snap;

	if (v == V_READ_NO_QP_RIGHT)
		o.access = GPUNIC_ACCESS_REMOTE_WRITE;
	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_fill(fx.a.buf, len, 3);
	switch (v) {
	case V_BAD_RKEY:
		raddr = fx_va(&fx.b, 0);
		rkey = fx.b.mr->rkey ^ 0x01;
		why = GPUNIC_DROP_RKEY;
		break;
	case V_OUT_OF_BOUNDS:
		raddr = fx_va(&fx.b, FX_BUF_BYTES - 100);
		rkey = fx.b.mr->rkey;
		why = GPUNIC_DROP_BOUNDS;
		break;
	case V_WRAPPING_VA:
		raddr = UINT64_MAX - 1000;
		rkey = fx.b.mr->rkey;
		why = GPUNIC_DROP_BOUNDS;
		break;
	case V_NO_MR_RIGHT:
		ro = gpunic_mr_reg(fx.b.pd, fx.b.buf + 4096, 8192, GPUNIC_ACCESS_LOCAL_WRITE);
		CHECK(ro);
		raddr = fx_va(&fx.b, 4096);
		rkey = ro->rkey;
		why = GPUNIC_DROP_ACCESS;
		break;
	case V_READ_NO_QP_RIGHT:
		op = MLX5_OPCODE_RDMA_READ;
		raddr = fx_va(&fx.b, 0);
		rkey = fx.b.mr->rkey;
		why = GPUNIC_DROP_ACCESS;
		break;
	}
	snap = malloc(FX_BUF_BYTES);
	CHECK(snap);
	memcpy(snap, fx.b.buf, FX_BUF_BYTES);
	CHECK(gpunic_dev_post_send_sge(&fx.a.dq, op, GPUNIC_DEV_SEND_SIGNALED, fx_va(&fx.a, 0), len,
				       fx.a.mr->lkey, raddr, rkey, 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	if (type == GPUNIC_QPT_RC) {
		expect_send_err(&fx, &fx.a, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_ERR);
	} else {
		struct gpunic_dev_cqe cqe;

		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
		fx_settle(&fx, 5000000);
		CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_RTS);
	}
	CHECK(qp_drops(&fx.b, why) > 0);
	CHECK(!memcmp(snap, fx.b.buf, FX_BUF_BYTES));
	free(snap);
	if (ro)
		CHECK_EQ(gpunic_mr_dereg(ro), 0);
	fx_teardown(&fx);
}

TEST(rc_prot_bad_rkey)
{
	violation(GPUNIC_QPT_RC, V_BAD_RKEY);
}

TEST(rc_prot_out_of_bounds)
{
	violation(GPUNIC_QPT_RC, V_OUT_OF_BOUNDS);
}

TEST(rc_prot_wrapping_va)
{
	violation(GPUNIC_QPT_RC, V_WRAPPING_VA);
}

TEST(rc_prot_no_mr_right)
{
	violation(GPUNIC_QPT_RC, V_NO_MR_RIGHT);
}

TEST(rc_prot_read_without_remote_read)
{
	violation(GPUNIC_QPT_RC, V_READ_NO_QP_RIGHT);
}

TEST(uc_prot_bad_rkey)
{
	violation(GPUNIC_QPT_UC, V_BAD_RKEY);
}

TEST(uc_prot_out_of_bounds)
{
	violation(GPUNIC_QPT_UC, V_OUT_OF_BOUNDS);
}

TEST(uc_prot_wrapping_va)
{
	violation(GPUNIC_QPT_UC, V_WRAPPING_VA);
}

TEST(uc_prot_no_mr_right)
{
	violation(GPUNIC_QPT_UC, V_NO_MR_RIGHT);
}
