// SPDX-License-Identifier: MIT
/*
 * Resource exhaustion at the responder: a receive CQ that fills up because its consumer never
 * polls, and a receive queue with nothing posted.
 *
 * CQ overflow (mlx5 PRM "CQ overrun"): the NIC must count GPUNIC_DROP_CQ_OVERFLOW, move the QP
 * to ERR and leave every unconsumed CQE exactly as it was. The ring is the NIC's allocation, so
 * no guard bytes can sit around it: the test compares every byte of the ring and the CQ's
 * doorbell record against a snapshot, and the sanitizer build watches the rest.
 */
#include "nic_fixture.h"

#define OVF_CQE 4u              /* receive CQ entries: fewer than the messages sent */
#define OVF_MSGS 8u
#define OVF_LEN 40u             /* one packet at the fixture's 1024-byte MTU */
#define OVF_SLOT 4096u          /* receive buffer spacing */
#define OVF_LONG 3000u          /* three packets: the overflow hits its LAST */

static uint64_t nic_drops(struct player *p, enum gpunic_drop_reason r)
{
	struct gpunic_nic_counters c;

	CHECK_EQ(gpunic_nic_query_counters(p->nic, &c), 0);
	return c.drops[r];
}

static uint64_t qp_drops(struct player *p, enum gpunic_drop_reason r)
{
	struct gpunic_qp_counters c;

	CHECK_EQ(gpunic_qp_query_counters(p->qp, &c), 0);
	return c.drops[r];
}

/* Whether ring slot @i holds a CQE the consumer may take in the ring's first lap. */
static bool cqe_valid_lap0(const struct gpunic_dev_cq *cq, uint32_t i)
{
	uint8_t op_own = __atomic_load_n(&cq->buf[(size_t)i * 64 + 63], __ATOMIC_ACQUIRE);

	return (op_own >> 4) != MLX5_CQE_INVALID && !(op_own & MLX5_CQE_OWNER_MASK);
}

/* Pump until slot @i of @p's receive CQ is valid, without consuming anything. */
static void wait_rcq_slot(struct fixture *fx, struct player *p, uint32_t i)
{
	uint64_t end = fx_now_ns() + FX_WAIT_NS;

	while (!cqe_valid_lap0(&p->dq.rcq, i)) {
		if (!pump(fx) && fx_now_ns() > end) {
			fx_dump(fx);
			harness_fail(__FILE__, __LINE__, "receive CQE %u never came", i);
		}
	}
}

/* What a successful receive CQE of message @i holds, field by field (mlx5_cqe64). */
static void check_recv_cqe_bytes(const struct player *p, uint32_t i)
{
	const struct mlx5_cqe64 *cqe = (const void *)(p->dq.rcq.buf + (size_t)i * 64);

	CHECK_EQ(cqe->op_own >> 4, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(cqe->op_own & MLX5_CQE_OWNER_MASK, 0);
	CHECK_EQ(be32toh(cqe->byte_cnt), OVF_LEN);
	CHECK_EQ(be32toh(cqe->imm_inval_pkey), FX_IMM(i));
	CHECK_EQ(be16toh(cqe->wqe_counter), i);
	CHECK_EQ(be32toh(cqe->sop_drop_qpn) & 0xFFFFFF, p->qp->qp_num);
}

static void post_recvs(struct player *p, uint32_t n, uint32_t len)
{
	for (uint32_t i = 0; i < n; i++)
		fx_post_recv(p, FX_DST_OFF + (size_t)i * OVF_SLOT, len);
}

static void post_send_imm(struct fixture *fx, uint32_t i, uint32_t len)
{
	fx_fill(fx->a.buf + (size_t)i * OVF_SLOT, len, i);
	CHECK(fx_post(&fx->a, MLX5_OPCODE_SEND_IMM, GPUNIC_DEV_SEND_SIGNALED,
		      (size_t)i * OVF_SLOT, len, &fx->b, 0, FX_IMM(i)) >= 0);
}

/*
 * A sends OVF_MSGS SEND_IMMs to B, whose receive CQ holds OVF_CQE entries and whose consumer
 * does not poll until the end. The first OVF_CQE complete; the next one overflows.
 */
static void cq_overflow(enum gpunic_qp_type type)
{
	struct fx_opts o = { .type = type, .cqe = OVF_CQE, .timeout = 14 };
	uint8_t snap[OVF_CQE * 64], dbrec_snap[4];
	bool rc = type == GPUNIC_QPT_RC;
	struct gpunic_dev_cqe cqe;
	struct gpunic_qp_counters qc;
	struct fixture fx;
	uint32_t i;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(fx.b.rcq->cqe_cnt, OVF_CQE);
	post_recvs(&fx.b, OVF_MSGS, OVF_LONG);
	for (i = 0; i < OVF_CQE; i++) {
		post_send_imm(&fx, i, OVF_LEN);
		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
		wait_rcq_slot(&fx, &fx.b, i);
		check_recv_cqe_bytes(&fx.b, i);
	}
	memcpy(snap, fx.b.dq.rcq.buf, sizeof(snap));
	memcpy(dbrec_snap, fx.b.dq.rcq.dbrec, sizeof(dbrec_snap));

	/* the CQ is full: one multi-packet message, then single-packet ones behind it */
	post_send_imm(&fx, OVF_CQE, OVF_LONG);
	for (i = OVF_CQE + 1; i < OVF_MSGS; i++)
		post_send_imm(&fx, i, OVF_LEN);
	if (rc) {
		/* the overflow is a remote operational error (class D NAK); the rest flush */
		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
		CHECK_EQ(cqe.wqe_opcode, MLX5_OPCODE_SEND_IMM);
		for (i = OVF_CQE + 1; i < OVF_MSGS; i++) {
			CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
			CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
			CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		}
		CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_ERR);
	} else {
		/* UC sends complete once sent; nothing tells the sender */
		for (i = OVF_CQE; i < OVF_MSGS; i++) {
			CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
			CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
		}
	}
	fx_settle(&fx, 20000000);

	CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_ERR);
	CHECK_EQ(qp_drops(&fx.b, GPUNIC_DROP_CQ_OVERFLOW), 1);
	CHECK_EQ(nic_drops(&fx.b, GPUNIC_DROP_CQ_OVERFLOW), 1);
	/* what came after the overflow met a QP in ERR */
	CHECK(qp_drops(&fx.b, GPUNIC_DROP_QP_STATE) >= OVF_MSGS - OVF_CQE - 1);
	CHECK_EQ(gpunic_qp_query_counters(fx.b.qp, &qc), 0);
	if (rc)
		CHECK_EQ(qc.naks_sent, 1);
	/* not one byte of the full ring or of its consumer counter moved */
	CHECK_MEM(fx.b.dq.rcq.buf, snap, sizeof(snap));
	CHECK_MEM(fx.b.dq.rcq.dbrec, dbrec_snap, sizeof(dbrec_snap));
	for (i = 0; i < OVF_CQE; i++)
		check_recv_cqe_bytes(&fx.b, i);
	/* the messages after the overflow reached no buffer */
	for (i = OVF_CQE + 1; i < OVF_MSGS; i++)
		CHECK_EQ(fx.b.buf[FX_DST_OFF + (size_t)i * OVF_SLOT], 0);

	/* the consumer wakes up: its four messages, intact, then a flush for every receive left */
	for (i = 0; i < OVF_CQE; i++) {
		CHECK(gpunic_dev_poll_rcq(&fx.b.dq, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
		CHECK_EQ(cqe.imm, FX_IMM(i));
		CHECK_EQ(cqe.wqe_idx, i);
		CHECK(fx_check(fx.b.buf + FX_DST_OFF + (size_t)i * OVF_SLOT, OVF_LEN, i));
	}
	for (i = OVF_CQE; i < OVF_MSGS; i++) {
		CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_ERR);
		CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		CHECK_EQ(cqe.wqe_idx, i);
	}
	fx_settle(&fx, 5000000);
	CHECK(!gpunic_dev_poll_rcq(&fx.b.dq, &cqe));
	CHECK_EQ(nic_drops(&fx.b, GPUNIC_DROP_CQ_OVERFLOW), 1);
	fx_teardown(&fx);
}

TEST(uc_recv_cq_overflow)
{
	cq_overflow(GPUNIC_QPT_UC);
}

TEST(rc_recv_cq_overflow)
{
	cq_overflow(GPUNIC_QPT_RC);
}

/*
 * UC with no receive posted: each SEND is dropped and counted, the QP stays in RTS, and a
 * receive posted later gets the next message, not a piece of a dropped one. A WRITE_IMM needs
 * a receive too and must not place its data without one; a plain WRITE needs none.
 */
TEST(uc_no_recv_wqe_drops_and_counts)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	/* one single-packet and one three-packet SEND, nothing posted */
	fx_fill(fx.a.buf, OVF_LONG, 1);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, 0, OVF_LEN, &fx.b, 0,
		      0) >= 0);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, 0, OVF_LONG, &fx.b, 0,
		      0) >= 0);
	/* a WRITE_IMM: the immediate has nowhere to go, so the data must not land either */
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE_IMM, GPUNIC_DEV_SEND_SIGNALED, 0, OVF_LEN,
		      &fx.b, FX_DST_OFF, 5) >= 0);
	for (int i = 0; i < 3; i++) {
		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	}
	fx_settle(&fx, 10000000);
	CHECK_EQ(qp_drops(&fx.b, GPUNIC_DROP_NO_RECV_WQE), 3);
	CHECK_EQ(nic_drops(&fx.b, GPUNIC_DROP_NO_RECV_WQE), 3);
	CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_RTS);
	CHECK(!gpunic_dev_poll_rcq(&fx.b.dq, &cqe));
	for (int i = 0; i < 64; i++)
		CHECK_EQ(fx.b.buf[FX_DST_OFF + i], 0);

	/* a plain WRITE consumes no receive: it lands with the RQ still empty */
	fx_fill(fx.a.buf + OVF_SLOT, OVF_LEN, 2);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED, OVF_SLOT, OVF_LEN,
		      &fx.b, FX_DST_OFF, 0) >= 0);
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	fx_settle(&fx, 5000000);
	CHECK(fx_check(fx.b.buf + FX_DST_OFF, OVF_LEN, 2));
	CHECK_EQ(qp_drops(&fx.b, GPUNIC_DROP_NO_RECV_WQE), 3);

	/* the next SEND goes to the receive posted now, whole */
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, OVF_LONG, 3);
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_WRITE_IMM, OVF_LEN, 4);
	CHECK_EQ(qp_drops(&fx.b, GPUNIC_DROP_NO_RECV_WQE), 3);
	fx_teardown(&fx);
}

/*
 * RC: an RNR NAK for a WRITE_IMM with no receive (the SEND case is test_nic_err's). A
 * single-packet WRITE_IMM is checked whole before it executes, so its bytes stay out of memory
 * until a receive lets a retry through.
 */
TEST(rc_rnr_write_imm_then_success)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .rnr_retry = 7, .min_rnr_timer = 1 };
	struct gpunic_qp_counters ca, cb;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_fill(fx.a.buf, OVF_LEN, 7);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE_IMM, GPUNIC_DEV_SEND_SIGNALED, 0, OVF_LEN,
		      &fx.b, FX_DST_OFF, 99) >= 0);
	fx_settle(&fx, 20000000);
	CHECK(!gpunic_dev_poll_scq(&fx.a.dq, &cqe));
	for (uint32_t i = 0; i < OVF_LEN; i++)
		CHECK_EQ(fx.b.buf[FX_DST_OFF + i], 0);
	CHECK_EQ(gpunic_qp_query_counters(fx.b.qp, &cb), 0);
	CHECK(cb.rnr_naks_sent > 0);
	CHECK_EQ(cb.drops[GPUNIC_DROP_NO_RECV_WQE], cb.rnr_naks_sent);
	CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_RTS);

	fx_post_recv(&fx.b, 0, 0);
	CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(cqe.imm, 99);
	CHECK_EQ(cqe.byte_cnt, OVF_LEN);
	CHECK(fx_check(fx.b.buf + FX_DST_OFF, OVF_LEN, 7));
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	/* a lossless cable: every RNR NAK sent was received */
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &ca), 0);
	CHECK_EQ(gpunic_qp_query_counters(fx.b.qp, &cb), 0);
	CHECK_EQ(ca.rnr_naks_received, cb.rnr_naks_sent);
	fx_teardown(&fx);
}

/*
 * RC: a multi-packet SEND meets an empty receive queue for longer than retry_cnt + 1 RNR
 * rounds. rnr_retry 7 means "retry for ever", so the SEND must complete once a receive is
 * posted: the RNR NAK for its FIRST must not be followed by PSN-sequence NAKs for the MIDDLE
 * and LAST behind it, which the requester would count against retry_cnt (IBA 9.7.5.1.3).
 */
TEST(rc_rnr_multi_packet_send_outlasts_retry_cnt)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .rnr_retry = 7, .min_rnr_timer = 1,
			     .retry_cnt = 1 };
	struct gpunic_qp_counters ca, cb;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	uint64_t end;

	fx_setup(&fx, FX_LINK_SHM, &o);
	fx_fill(fx.a.buf, OVF_LONG, 8);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, 0, OVF_LONG, &fx.b, 0,
		      0) >= 0);
	/* enough RNR rounds to exhaust retry_cnt many times over */
	end = fx_now_ns() + 2000000000ull;
	do {
		pump(&fx);
		CHECK_EQ(gpunic_qp_query_counters(fx.b.qp, &cb), 0);
	} while (cb.rnr_naks_sent < 8 && fx.a.qp->state == GPUNIC_QPS_RTS && fx_now_ns() < end);
	if (fx.a.qp->state != GPUNIC_QPS_RTS)
		fx_dump(&fx);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	CHECK(cb.rnr_naks_sent >= 8);
	CHECK(!gpunic_dev_poll_scq(&fx.a.dq, &cqe));

	fx_post_recv(&fx.b, FX_DST_OFF, OVF_LONG);
	CHECK(fx_wait_cqe(&fx, &fx.b, false, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(cqe.byte_cnt, OVF_LONG);
	CHECK(fx_check(fx.b.buf + FX_DST_OFF, OVF_LONG, 8));
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	if (cqe.opcode != MLX5_CQE_REQ)
		fx_dump(&fx);
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &ca), 0);
	CHECK_EQ(ca.naks_received, 0);
	fx_teardown(&fx);
}
