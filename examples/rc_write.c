// SPDX-License-Identifier: MIT
/*
 * One RC RDMA WRITE between two software NICs on a shared-memory cable, the CPU as executor:
 * set-up as in ibverbs (verbs.h), post, doorbell and completion by the data path (gpunic_dev.h).
 */
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/verbs.h>

struct end {
	struct gpunic_nic *nic;
	struct gpunic_qp *qp;
	struct gpunic_mr *mr;
	struct gpunic_dev_qp dq;
	char buf[64];
};

/* End 0 (A) creates the cable, end 1 (B) attaches to it; end i is 10.0.0.(i+1). */
static int open_end(struct end *e, const char *cable, enum gpunic_shm_end i)
{
	struct gpunic_shm_link_attr la = { .name = cable, .end = i, .create = i == 0 };
	struct gpunic_nic_attr na = { .ip = 0x0a000001u + i, .mac = { 2, 0, 0, 0, 0, 1 + i } };
	struct gpunic_qp_init_attr qa = { .qp_type = GPUNIC_QPT_RC, .max_send_wr = 8,
					  .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 };
	struct gpunic_pd *pd;

	na.link = gpunic_link_shm_open(&la);
	e->nic = na.link ? gpunic_nic_open(&na) : NULL;
	pd = e->nic ? gpunic_pd_alloc(e->nic) : NULL;
	qa.send_cq = qa.recv_cq = pd ? gpunic_cq_create(e->nic, 16) : NULL;
	e->mr = qa.send_cq ? gpunic_mr_reg(pd, e->buf, sizeof(e->buf), GPUNIC_ACCESS_LOCAL_WRITE |
					   GPUNIC_ACCESS_REMOTE_WRITE) : NULL;
	e->qp = e->mr ? gpunic_qp_create(pd, &qa) : NULL;
	return e->qp ? 0 : -1;
}

/* INIT -> RTR -> RTS against the other end (what an out-of-band exchange would tell). */
static int connect_end(struct end *e, const struct end *peer, enum gpunic_shm_end peer_i)
{
	struct gpunic_qp_attr a = { .qp_state = GPUNIC_QPS_INIT,
				    .qp_access_flags = GPUNIC_ACCESS_REMOTE_WRITE };
	unsigned rtr = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN |
		       GPUNIC_QP_RQ_PSN | GPUNIC_QP_AV | GPUNIC_QP_MIN_RNR_TIMER |
		       GPUNIC_QP_MAX_DEST_RD_ATOMIC;
	unsigned rts = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN | GPUNIC_QP_TIMEOUT |
		       GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY | GPUNIC_QP_MAX_QP_RD_ATOMIC;

	if (gpunic_qp_modify(e->qp, &a, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS))
		return -1;
	a = (struct gpunic_qp_attr){ .qp_state = GPUNIC_QPS_RTR, .dest_qp_num = peer->qp->qp_num,
				     .path_mtu = GPUNIC_MTU_1024, .min_rnr_timer = 1,
				     .remote_ip = 0x0a000001u + peer_i,
				     .remote_mac = { 2, 0, 0, 0, 0, 1 + peer_i } };
	if (gpunic_qp_modify(e->qp, &a, rtr))
		return -1;
	a = (struct gpunic_qp_attr){ .qp_state = GPUNIC_QPS_RTS, .timeout = 14, .retry_cnt = 7 };
	if (gpunic_qp_modify(e->qp, &a, rts))
		return -1;
	return gpunic_qp_export(e->qp, &e->dq) ? -1 : 0;
}

int main(void)
{
	static struct end a, b;
	struct gpunic_dev_cqe cqe;
	char cable[64];
	int got = 0;

	snprintf(cable, sizeof(cable), "/gpunic-example-%d", (int)getpid());
	int bad = open_end(&a, cable, GPUNIC_SHM_END_A) || open_end(&b, cable, GPUNIC_SHM_END_B);

	shm_unlink(cable); /* both ends are attached (or never will be): the name can go */
	if (bad || connect_end(&a, &b, GPUNIC_SHM_END_B) || connect_end(&b, &a, GPUNIC_SHM_END_A)) {
		perror("set-up");
		return 1;
	}
	snprintf(a.buf, sizeof(a.buf), "hello from QP %u", (unsigned)a.qp->qp_num);
	/* ibv_post_send: the WQE goes into a's send queue in mlx5's format, then the doorbell. */
	if (gpunic_dev_post_send_sge(&a.dq, MLX5_OPCODE_RDMA_WRITE, GPUNIC_DEV_SEND_SIGNALED,
				     (uintptr_t)a.buf, sizeof(a.buf), a.mr->lkey, (uintptr_t)b.buf,
				     b.mr->rkey, 0) < 0 || gpunic_dev_submit(&a.dq))
		return 1;
	/* ibv_poll_cq; both engines run on this thread (gpunic_nic_poll) until the ACK is in. */
	for (long spins = 0; !got && spins < 10000000; spins++) {
		gpunic_nic_poll(a.nic, 16);
		gpunic_nic_poll(b.nic, 16);
		got = gpunic_dev_poll_scq(&a.dq, &cqe);
	}
	if (!got || gpunic_dev_cqe_is_error(&cqe) || strcmp(a.buf, b.buf)) {
		fprintf(stderr, "no good completion (%d, %#x)\n", got, got ? cqe.syndrome : 0u);
		return 1;
	}
	printf("RDMA WRITE of %zu bytes completed; b's buffer: \"%s\"\n", sizeof(b.buf), b.buf);
	return gpunic_nic_close(a.nic) | gpunic_nic_close(b.nic) ? 1 : 0;
}
