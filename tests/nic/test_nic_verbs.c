// SPDX-License-Identifier: MIT
/* The control path: objects and their errors, the modify state machine, destroy in every
 * state, export, many QPs on one NIC pair, the engine thread with both handler modes, and the
 * out-of-band exchange. */
#include <pthread.h>

#include "nic_fixture.h"

TEST(verbs_names)
{
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		CHECK(strcmp(gpunic_drop_reason_name(i), "unknown"));
	CHECK(!strcmp(gpunic_drop_reason_name(GPUNIC_DROP_MAX), "unknown"));
	CHECK(!strcmp(gpunic_qp_state_name(GPUNIC_QPS_RTS), "RTS"));
	CHECK(!strcmp(gpunic_qp_state_name(99), "UNKNOWN"));
}

static struct gpunic_nic *open_nic(void)
{
	struct gpunic_link *la, *lb;
	uint16_t pa, pb;
	struct gpunic_nic_attr na = { .ip = IP4(10, 0, 0, 1) };
	struct gpunic_nic *nic;

	fx_links(FX_LINK_SHM, &la, &lb, &pa, &pb);
	gpunic_link_close(lb);
	na.link = la;
	nic = gpunic_nic_open(&na);
	CHECK(nic);
	return nic;
}

TEST(verbs_object_errors)
{
	struct gpunic_nic_attr bad = { 0 };
	struct gpunic_nic *nic = open_nic();
	struct gpunic_pd *pd = gpunic_pd_alloc(nic), *pd2 = gpunic_pd_alloc(nic);
	struct gpunic_cq *cq = gpunic_cq_create(nic, 3);
	struct gpunic_qp_init_attr ia = { .qp_type = GPUNIC_QPT_RC, .send_cq = cq, .recv_cq = cq,
					  .max_send_wr = 8, .max_recv_wr = 8 };
	struct gpunic_dev_qp dq;
	struct gpunic_qp *qp;
	struct gpunic_mr *mr;
	uint8_t buf[64];

	CHECK(!gpunic_nic_open(&bad) && errno == EINVAL);
	CHECK(pd && pd2 && cq);
	CHECK_EQ(cq->cqe_cnt, 4);
	CHECK(!gpunic_cq_create(nic, 0) && errno == EINVAL);
	/* remote write without local write, unknown bits, empty range */
	CHECK(!gpunic_mr_reg(pd, buf, sizeof(buf), GPUNIC_ACCESS_REMOTE_WRITE) && errno == EINVAL);
	CHECK(!gpunic_mr_reg(pd, buf, sizeof(buf), 1u << 9) && errno == EINVAL);
	CHECK(!gpunic_mr_reg(pd, buf, 0, 0) && errno == EINVAL);
	mr = gpunic_mr_reg(pd, buf, sizeof(buf), GPUNIC_ACCESS_LOCAL_WRITE);
	CHECK(mr && mr->lkey != mr->rkey && mr->lkey != MLX5_INVALID_LKEY);
	CHECK_EQ(gpunic_pd_free(pd), EBUSY);
	ia.comp_mask = 1;
	CHECK(!gpunic_qp_create(pd, &ia) && errno == EINVAL);
	ia.comp_mask = 0;
	ia.max_send_sge = 1000;
	CHECK(!gpunic_qp_create(pd, &ia) && errno == EINVAL);
	ia.max_send_sge = 2;
	ia.qp_type = 7;
	CHECK(!gpunic_qp_create(pd, &ia) && errno == EINVAL);
	ia.qp_type = GPUNIC_QPT_RC;
	qp = gpunic_qp_create(pd2, &ia);
	CHECK(qp);
	CHECK_EQ(qp->qp_num, 0x11);
	CHECK_EQ(qp->state, GPUNIC_QPS_RESET);
	CHECK_EQ(gpunic_cq_destroy(cq), EBUSY);
	CHECK_EQ(gpunic_pd_free(pd2), EBUSY);
	CHECK_EQ(gpunic_qp_export(qp, &dq), 0);
	CHECK_EQ(dq.qpn, 0x11);
	CHECK_EQ(dq.handler_mode, GPUNIC_HANDLER_GPU_BF);	/* AUTO resolved */
	CHECK(dq.bf && dq.bf_lines == GPUNIC_DEV_BF_LINES);
	CHECK_EQ(gpunic_dev_qp_check(&dq), 0);
	CHECK(dq.sq_wqebb_cnt >= 8 && dq.rq_wqe_cnt == 8);
	CHECK_EQ(gpunic_qp_destroy(qp), 0);
	CHECK_EQ(gpunic_cq_destroy(cq), 0);
	CHECK_EQ(gpunic_pd_free(pd2), 0);
	CHECK_EQ(gpunic_mr_dereg(mr), 0);
	CHECK_EQ(gpunic_pd_free(pd), 0);
	CHECK_EQ(gpunic_nic_close(nic), 0);
}

static struct gpunic_qp *new_qp(struct gpunic_nic *nic, enum gpunic_qp_type type)
{
	struct gpunic_pd *pd = gpunic_pd_alloc(nic);
	struct gpunic_cq *cq = gpunic_cq_create(nic, 16);
	struct gpunic_qp_init_attr ia = { .qp_type = type, .send_cq = cq, .recv_cq = cq,
					  .max_send_wr = 8, .max_recv_wr = 8 };
	struct gpunic_qp *qp = gpunic_qp_create(pd, &ia);

	CHECK(qp);
	return qp;
}

static int modify(struct gpunic_qp *qp, enum gpunic_qp_state s, unsigned mask)
{
	struct gpunic_qp_attr at = {
		.qp_state = s, .qp_access_flags = GPUNIC_ACCESS_REMOTE_WRITE,
		.path_mtu = GPUNIC_MTU_1024, .dest_qp_num = 0x22, .rq_psn = 1, .sq_psn = 2,
		.remote_ip = IP4(10, 0, 0, 2), .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 12, .max_rd_atomic = 4, .max_dest_rd_atomic = 4,
	};

	return gpunic_qp_modify(qp, &at, mask | GPUNIC_QP_STATE);
}

#define M_INIT GPUNIC_QP_ACCESS_FLAGS
#define M_RTR (GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN | GPUNIC_QP_AV)
#define M_RTR_RC (M_RTR | GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER)
#define M_RTS GPUNIC_QP_SQ_PSN
#define M_RTS_RC (M_RTS | GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY | \
		  GPUNIC_QP_MAX_QP_RD_ATOMIC)

TEST(verbs_modify_state_machine)
{
	struct gpunic_nic *nic = open_nic();
	struct gpunic_qp *rc = new_qp(nic, GPUNIC_QPT_RC), *uc = new_qp(nic, GPUNIC_QPT_UC);
	struct gpunic_qp_attr at;

	/* illegal transitions */
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTR, M_RTR_RC), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(rc), "illegal transition RESET -> RTR"));
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, M_RTS_RC), EINVAL);
	/* missing and extra attributes */
	CHECK_EQ(modify(rc, GPUNIC_QPS_INIT, 0), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(rc), "ACCESS_FLAGS"));
	CHECK_EQ(modify(rc, GPUNIC_QPS_INIT, M_INIT | GPUNIC_QP_SQ_PSN), EINVAL);
	CHECK_EQ(modify(rc, GPUNIC_QPS_INIT, M_INIT), 0);
	CHECK_EQ(rc->state, GPUNIC_QPS_INIT);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, M_RTS_RC), EINVAL);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTR, M_RTR), EINVAL);	/* RC needs rd_atomic + rnr */
	CHECK(strstr(gpunic_qp_last_error(rc), "MIN_RNR_TIMER"));
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTR, M_RTR_RC & ~GPUNIC_QP_AV), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(rc), "AV"));
	/* all or nothing: a bad value leaves the state as it was */
	at = (struct gpunic_qp_attr){ .qp_state = GPUNIC_QPS_RTR, .path_mtu = 6,
				      .remote_ip = 1, .max_dest_rd_atomic = 1 };
	CHECK_EQ(gpunic_qp_modify(rc, &at, GPUNIC_QP_STATE | M_RTR_RC), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(rc), "path_mtu"));
	CHECK_EQ(rc->state, GPUNIC_QPS_INIT);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTR, M_RTR_RC), 0);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, M_RTS), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(rc), "TIMEOUT"));
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, M_RTS_RC), 0);
	CHECK(!strcmp(gpunic_qp_last_error(rc), ""));
	CHECK_EQ(gpunic_qp_query(rc, &at), 0);
	CHECK_EQ(at.qp_state, GPUNIC_QPS_RTS);
	CHECK_EQ(at.dest_qp_num, 0x22);
	CHECK_EQ(at.timeout, 14);
	CHECK_EQ(at.max_rd_atomic, 4);
	/* RTS -> RTS with an allowed attribute; RTS -> INIT is not a transition */
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, GPUNIC_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ(modify(rc, GPUNIC_QPS_INIT, M_INIT), EINVAL);
	CHECK_EQ(modify(rc, GPUNIC_QPS_ERR, 0), 0);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RTS, M_RTS_RC), EINVAL);
	CHECK_EQ(modify(rc, GPUNIC_QPS_RESET, 0), 0);
	CHECK_EQ(gpunic_qp_query(rc, &at), 0);
	CHECK_EQ(at.qp_state, GPUNIC_QPS_RESET);

	/* UC: RC-only attributes are refused */
	CHECK_EQ(modify(uc, GPUNIC_QPS_INIT, M_INIT), 0);
	CHECK_EQ(modify(uc, GPUNIC_QPS_RTR, M_RTR_RC), EINVAL);
	CHECK(strstr(gpunic_qp_last_error(uc), "UC"));
	CHECK_EQ(modify(uc, GPUNIC_QPS_RTR, M_RTR), 0);
	CHECK_EQ(modify(uc, GPUNIC_QPS_RTS, M_RTS_RC), EINVAL);
	CHECK_EQ(modify(uc, GPUNIC_QPS_RTS, M_RTS), 0);
	CHECK_EQ(gpunic_nic_close(nic), 0);
}

/* Destroy in each state; what is left is freed by close (ASan sees any leak). */
TEST(verbs_destroy_in_every_state)
{
	static const unsigned masks[] = { 0, M_INIT, M_RTR_RC, M_RTS_RC };
	struct gpunic_nic *nic = open_nic();

	for (int target = 0; target <= GPUNIC_QPS_ERR; target++) {
		struct gpunic_qp *qp = new_qp(nic, GPUNIC_QPT_RC);

		for (int s = GPUNIC_QPS_INIT; s <= target && s <= GPUNIC_QPS_RTS; s++)
			CHECK_EQ(modify(qp, s, masks[s]), 0);
		if (target == GPUNIC_QPS_ERR)
			CHECK_EQ(modify(qp, GPUNIC_QPS_ERR, 0), 0);
		CHECK_EQ(qp->state, (unsigned)target);
		CHECK_EQ(gpunic_qp_destroy(qp), 0);
	}
	/* left for close: a QP in RTS, its CQ and PD, an MR */
	new_qp(nic, GPUNIC_QPT_UC);
	CHECK_EQ(gpunic_nic_close(nic), 0);
}

/* 64 QPs on each side of one NIC pair, all talking at once. */
TEST(verbs_64_qps)
{
	enum { N = 64 };
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .max_send_wr = 4, .max_recv_wr = 4 };
	struct gpunic_qp *qa[N], *qb[N];
	struct gpunic_dev_qp da[N], db[N];
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	int got = 0, sent = 0;
	uint64_t end;

	fx_setup(&fx, FX_LINK_SHM, &o);
	/* gpunic_dev.h keeps a CQ's consumer counter per QP: one CQ pair per QP */
	for (int i = 0; i < N; i++) {
		o.type = i & 1 ? GPUNIC_QPT_UC : GPUNIC_QPT_RC;
		fx.a.scq = gpunic_cq_create(fx.a.nic, 8);
		fx.a.rcq = gpunic_cq_create(fx.a.nic, 8);
		fx.b.scq = gpunic_cq_create(fx.b.nic, 8);
		fx.b.rcq = gpunic_cq_create(fx.b.nic, 8);
		qa[i] = player_qp(&fx.a, &o);
		qb[i] = player_qp(&fx.b, &o);
	}
	for (int i = 0; i < N; i++) {
		o.type = qa[i]->qp_type;
		qp_to_rts(qa[i], &fx.a, &fx.b, qb[i]->qp_num, &o);
		qp_to_rts(qb[i], &fx.b, &fx.a, qa[i]->qp_num, &o);
		CHECK_EQ(gpunic_qp_export(qa[i], &da[i]), 0);
		CHECK_EQ(gpunic_qp_export(qb[i], &db[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		struct gpunic_dev_sge sa = { fx_va(&fx.a, 65536 + i * 256), 256, fx.a.mr->lkey };
		struct gpunic_dev_sge sb = { fx_va(&fx.b, 65536 + i * 256), 256, fx.b.mr->lkey };

		CHECK(gpunic_dev_post_recv(&da[i], &sa, 1) >= 0);
		CHECK(gpunic_dev_post_recv(&db[i], &sb, 1) >= 0);
		fx_fill(fx.a.buf + i * 256, 200, i);
		fx_fill(fx.b.buf + i * 256, 200, 1000 + i);
		CHECK(gpunic_dev_post_send_sge(&da[i], MLX5_OPCODE_SEND_IMM, 0,
					       fx_va(&fx.a, i * 256), 200, fx.a.mr->lkey, 0, 0,
					       i) >= 0);
		CHECK(gpunic_dev_post_send_sge(&db[i], MLX5_OPCODE_SEND_IMM, 0,
					       fx_va(&fx.b, i * 256), 200, fx.b.mr->lkey, 0, 0,
					       1000 + i) >= 0);
		CHECK_EQ(gpunic_dev_submit(&da[i]), 0);
		CHECK_EQ(gpunic_dev_submit(&db[i]), 0);
		sent += 2;
	}
	end = fx_now_ns() + FX_WAIT_NS;
	while (got < sent) {
		CHECK(fx_now_ns() < end);
		pump(&fx);
		for (int i = 0; i < N; i++) {
			while (gpunic_dev_poll_rcq(&da[i], &cqe)) {
				CHECK_EQ(cqe.opcode, MLX5_CQE_RESP_SEND_IMM);
				CHECK_EQ(cqe.qpn, qa[i]->qp_num);
				CHECK_EQ(cqe.imm, 1000 + i);
				CHECK(fx_check(fx.a.buf + 65536 + i * 256, 200, 1000 + i));
				got++;
			}
			while (gpunic_dev_poll_rcq(&db[i], &cqe)) {
				CHECK_EQ(cqe.imm, i);
				CHECK(fx_check(fx.b.buf + 65536 + i * 256, 200, i));
				got++;
			}
		}
	}
	fx_teardown(&fx);
}

/* The engines on their own threads; one side rings the doorbell itself, the other only
 * publishes to its mailbox (CPU_PROXY). */
static void engine_threads(enum gpunic_handler_mode mode)
{
	/* ACK timeout 17 (0.54 s a try, 4.3 s with the retries), not the fixture's 12 (17 ms,
	 * 134 ms in all): two engine threads and this one spin on a CI machine that may run three
	 * such tests on two cores, and an engine kept off its core that long failed a send with
	 * "retry exceeded" (syndrome 0x15) about once in 60 runs; the wait for each message
	 * (FX_WAIT_NS, 10 s) still bounds a real loss */
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .mode = mode, .timeout = 17 };
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	uint64_t end;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK_EQ(fx.a.dq.handler_mode, (unsigned)mode);
	CHECK_EQ(gpunic_nic_start(fx.a.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx.b.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx.b.nic, -1), EBUSY);
	for (uint32_t i = 0; i < 50; i++) {
		fx_fill(fx.a.buf, 3000, i);
		fx_post_recv(&fx.b, FX_DST_OFF, 4096);
		CHECK(fx_post(&fx.a, MLX5_OPCODE_SEND_IMM, GPUNIC_DEV_SEND_SIGNALED, 0, 3000,
			      &fx.b, 0, i) >= 0);
		end = fx_now_ns() + FX_WAIT_NS;
		while (!gpunic_dev_poll_rcq(&fx.b.dq, &cqe)) {
			CHECK(fx_now_ns() < end);
			sched_yield();
		}
		CHECK_EQ(cqe.imm, i);
		CHECK(fx_check(fx.b.buf + FX_DST_OFF, 3000, i));
		while (!gpunic_dev_poll_scq(&fx.a.dq, &cqe)) {
			CHECK(fx_now_ns() < end);
			sched_yield();
		}
		CHECK_EQ(cqe.syndrome, 0);	/* said first: which error, if one */
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	}
	CHECK_EQ(gpunic_nic_stop(fx.a.nic), 0);
	fx_teardown(&fx);	/* close stops b's thread */
}

static uint64_t nic_visits(struct gpunic_nic *nic)
{
	struct gpunic_nic_counters c;

	CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
	return c.qp_visits;
}

/*
 * The engine visits only hot QPs, and a QP leaves the hot list after a quiet spell counted in
 * visits shared by the hot QPs: a crowd woken at once by their connects (bench --qps) leaves
 * within a few tens of polls, while a lone QP that posted stays for thousands.
 */
TEST(verbs_idle_qps_leave_the_hot_list)
{
	enum { IDLE = 256, POLLS = 200 };
	struct fx_opts o = { .type = GPUNIC_QPT_UC };
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	uint64_t v0;

	fx_setup(&fx, FX_LINK_SHM, &o);
	for (uint32_t i = 0; i < IDLE; i++)
		qp_to_rts(player_qp(&fx.a, &o), &fx.a, &fx.b, 0xfff000 + i, &o);
	v0 = nic_visits(fx.a.nic);
	for (int i = 0; i < POLLS; i++)
		gpunic_nic_poll(fx.a.nic, 64);
	/* about 16 polls of IDLE + 1 QPs, then none; a count of polls would give POLLS each */
	CHECK(nic_visits(fx.a.nic) - v0 < (uint64_t)(IDLE + 1) * 40);
	v0 = nic_visits(fx.a.nic);
	for (int i = 0; i < POLLS; i++)
		gpunic_nic_poll(fx.a.nic, 64);
	CHECK_EQ(nic_visits(fx.a.nic) - v0, 0);

	/* one QP posts: it stays hot after its message, a visit per poll */
	fx_fill(fx.a.buf, 16, 5);
	CHECK(fx_post(&fx.a, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED, 0, 16, &fx.b,
		      FX_DST_OFF, 0) >= 0);
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	v0 = nic_visits(fx.a.nic);
	for (int i = 0; i < 1000; i++)
		gpunic_nic_poll(fx.a.nic, 64);
	CHECK_EQ(nic_visits(fx.a.nic) - v0, 1000);
	fx_teardown(&fx);
}

TEST(verbs_engine_thread_gpu_db)
{
	engine_threads(GPUNIC_HANDLER_GPU_DB);
}

TEST(verbs_engine_thread_cpu_proxy)
{
	engine_threads(GPUNIC_HANDLER_CPU_PROXY);
}

static bool info_eq(const struct gpunic_qp_info *x, const struct gpunic_qp_info *y)
{
	return x->qpn == y->qpn && x->psn == y->psn && x->ip == y->ip &&
	       !memcmp(x->mac, y->mac, 6) && x->udp_port == y->udp_port && x->va == y->va &&
	       x->rkey == y->rkey && x->len == y->len;
}

struct oob_arg {
	uint16_t port;
	struct gpunic_qp_info mine, theirs;
	int err;
};

static void *oob_server(void *p)
{
	struct oob_arg *a = p;

	a->err = gpunic_oob_exchange(NULL, a->port, 5000, &a->mine, &a->theirs);
	return NULL;
}

TEST(verbs_oob_exchange)
{
	struct oob_arg srv = { .port = fx_port(5) };
	struct gpunic_qp_info cli = { .qpn = 0x12, .psn = 0xFFFFFF, .ip = IP4(10, 0, 0, 2),
				      .mac = { 1, 2, 3, 4, 5, 6 }, .udp_port = 4791,
				      .va = 0x123456789ABCull, .rkey = 0xDEADBEEF, .len = 4096 };
	struct gpunic_qp_info got;
	pthread_t t;

	srv.mine = (struct gpunic_qp_info){ .qpn = 0x11, .psn = 5, .ip = IP4(10, 0, 0, 1),
					    .va = 1ull << 40, .rkey = 7, .len = 1 };
	CHECK_EQ(pthread_create(&t, NULL, oob_server, &srv), 0);
	CHECK_EQ(gpunic_oob_exchange("127.0.0.1", srv.port, 5000, &cli, &got), 0);
	pthread_join(t, NULL);
	CHECK_EQ(srv.err, 0);
	CHECK(info_eq(&got, &srv.mine));
	CHECK(info_eq(&srv.theirs, &cli));
	/* nobody listening: a timeout, not a hang */
	CHECK_EQ(gpunic_oob_exchange("127.0.0.1", fx_port(6), 100, &cli, &got), ETIMEDOUT);
	/* the peer's numbers are checked */
	srv.mine.qpn = 1u << 24;
	CHECK_EQ(pthread_create(&t, NULL, oob_server, &srv), 0);
	CHECK_EQ(gpunic_oob_exchange("127.0.0.1", srv.port, 5000, &cli, &got), EPROTO);
	pthread_join(t, NULL);
}
