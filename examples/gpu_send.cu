// SPDX-License-Identifier: MIT
/*
 * A CUDA kernel posts an RC SEND, rings the doorbell and polls its completion by itself; the CPU
 * only sets the queues up and runs the two software NICs (engine threads). The receiver is a
 * CPU-driven NIC on the same shared-memory cable. Needs a GPU that maps host memory: without
 * one it says so and exits 77 (skipped).
 */
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/mem.h>
#include <gpunic/verbs.h>

struct end {
	struct gpunic_nic *nic;
	struct gpunic_cq *cq;
	struct gpunic_qp *qp;
	struct gpunic_mr *mr;
	struct gpunic_dev_qp dq;
	char *buf;
};

/* The whole data path of the sender: one thread, one WQE, one CQE. */
__global__ void send_one(struct gpunic_dev_qp *qp, uint64_t addr, uint32_t len, uint32_t lkey,
			 int *result)
{
	struct gpunic_dev_cqe cqe;

	if (gpunic_dev_post_send_sge(qp, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED, addr, len,
				     lkey, 0, 0, 0) < 0 || gpunic_dev_submit(qp)) {
		*result = -1;
		return;
	}
	for (long i = 0; i < (1l << 24); i++) {
		if (gpunic_dev_poll_scq(qp, &cqe)) {
			*result = gpunic_dev_cqe_is_error(&cqe) ? -(int)cqe.syndrome - 100 :
				  cqe.opcode == MLX5_CQE_REQ ? 1 : -2;
			return;
		}
	}
	*result = -3; /* no completion */
}

static int open_end(struct end *e, const char *cable, int which, gpunic_mem_t *mem,
		    struct gpunic_mem_buf *gbuf)
{
	struct gpunic_shm_link_attr la;
	struct gpunic_nic_attr na;
	struct gpunic_qp_init_attr qa;
	struct gpunic_pd *pd;

	memset(&la, 0, sizeof(la));
	la.name = cable;
	la.end = which ? GPUNIC_SHM_END_B : GPUNIC_SHM_END_A;
	la.create = !which;
	memset(&na, 0, sizeof(na));
	na.link = gpunic_link_shm_open(&la);
	na.ip = 0x0a000001u + (uint32_t)which;
	na.mac[0] = 2;
	na.mac[5] = (uint8_t)(1 + which);
	if (mem) { /* the sender: its queues are placed for a GPU executor */
		na.executor = GPUNIC_EXECUTOR_GPU;
		na.mem = mem;
	}
	e->nic = na.link ? gpunic_nic_open(&na) : NULL;
	pd = e->nic ? gpunic_pd_alloc(e->nic) : NULL;
	e->cq = pd ? gpunic_cq_create(e->nic, 16) : NULL;
	/* Registered by the CPU address, which the NIC uses; the GPU holds the same bytes. */
	e->buf = gbuf ? (char *)gbuf->cpu : (char *)calloc(1, 64);
	e->mr = e->cq ? gpunic_mr_reg(pd, e->buf, 64, GPUNIC_ACCESS_LOCAL_WRITE) : NULL;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = GPUNIC_QPT_RC;
	qa.send_cq = qa.recv_cq = e->cq;
	qa.max_send_wr = qa.max_recv_wr = 8;
	qa.max_send_sge = qa.max_recv_sge = 1;
	/* mlx5's own way: the kernel stores the doorbell record and the doorbell itself */
	qa.handler_mode = mem ? GPUNIC_HANDLER_GPU_DB : GPUNIC_HANDLER_AUTO;
	e->qp = e->mr ? gpunic_qp_create(pd, &qa) : NULL;
	return e->qp ? 0 : -1;
}

/* One step of the QP state machine; on failure the NIC says which attribute it refused. */
static int modify(struct end *e, struct gpunic_qp_attr *a, unsigned mask)
{
	int err = gpunic_qp_modify(e->qp, a, mask);

	if (err)
		fprintf(stderr, "QP %u to %s: %s (%s)\n", (unsigned)e->qp->qp_num,
			gpunic_qp_state_name(a->qp_state), gpunic_qp_last_error(e->qp), strerror(err));
	return err;
}

/* INIT -> RTR -> RTS against the other end (what an out-of-band exchange would tell). */
static int connect_end(struct end *e, const struct end *peer, int peer_which)
{
	struct gpunic_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = GPUNIC_QPS_INIT;
	if (modify(e, &a, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = GPUNIC_QPS_RTR;
	a.path_mtu = GPUNIC_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.remote_ip = 0x0a000001u + (uint32_t)peer_which;
	a.remote_mac[0] = 2;
	a.remote_mac[5] = (uint8_t)(1 + peer_which);
	a.min_rnr_timer = 1;
	if (modify(e, &a, GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN |
		   GPUNIC_QP_RQ_PSN | GPUNIC_QP_AV | GPUNIC_QP_MIN_RNR_TIMER |
		   GPUNIC_QP_MAX_DEST_RD_ATOMIC))
		return -1;
	a.qp_state = GPUNIC_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	if (modify(e, &a, GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN | GPUNIC_QP_TIMEOUT |
		   GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY | GPUNIC_QP_MAX_QP_RD_ATOMIC))
		return -1;
	return gpunic_qp_export(e->qp, &e->dq) ? -1 : 0;
}

int main(void)
{
	static struct end g, c;
	struct gpunic_mem_caps caps;
	struct gpunic_mem_buf *gbuf, *res;
	struct gpunic_dev_qp *xqp = NULL;
	struct gpunic_dev_sge sge;
	struct gpunic_dev_cqe cqe;
	char cable[64];
	int got = 0, bad;

	memset(&caps, 0, sizeof(caps));
	gpunic_mem_t *mem = gpunic_mem_open(NULL);
	if (!mem || gpunic_mem_query(mem, &caps) || !caps.gpu ||
	    !(caps.placements & (1u << GPUNIC_MEM_CPU_GPU))) {
		printf("skipped: %s\n", mem ? caps.gpu_reason : "no memory context");
		return 77;
	}
	/* The message and the kernel's result: host memory mapped into the GPU. */
	gbuf = gpunic_mem_alloc(mem, 4096, 4096, GPUNIC_MEM_CPU_GPU);
	res = gpunic_mem_alloc(mem, 64, 64, GPUNIC_MEM_CPU_GPU);
	if (!gbuf || !res)
		return 1;
	snprintf(cable, sizeof(cable), "/gpunic-gpu-example-%d", (int)getpid());
	bad = open_end(&g, cable, 0, mem, gbuf) || open_end(&c, cable, 1, NULL, NULL);
	shm_unlink(cable); /* both ends are attached (or never will be): the name can go */
	if (bad) {
		perror("open a NIC, PD, CQ, MR or QP");
		return 1;
	}
	if (connect_end(&g, &c, 1) || connect_end(&c, &g, 0))
		return 1;
	snprintf(g.buf, 64, "sent by a CUDA kernel on QP %u", (unsigned)g.qp->qp_num);
	sge.addr = (uintptr_t)c.buf;
	sge.length = 64;
	sge.lkey = c.mr->lkey;
	/* The kernel reads the QP description from device memory; the queues it names are
	 * where the NIC placed them for a GPU. */
	if (gpunic_dev_post_recv(&c.dq, &sge, 1) < 0 ||
	    cudaMalloc((void **)&xqp, sizeof(*xqp)) != cudaSuccess ||
	    cudaMemcpy(xqp, &g.dq, sizeof(*xqp), cudaMemcpyHostToDevice) != cudaSuccess ||
	    gpunic_nic_start(g.nic, -1) || gpunic_nic_start(c.nic, -1)) {
		fprintf(stderr, "post the receive, copy the QP to the GPU or start the engines: %s\n",
			cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	send_one<<<1, 1>>>(xqp, (uintptr_t)g.buf, 64, g.mr->lkey, (int *)res->gpu);
	if (cudaDeviceSynchronize() != cudaSuccess || *(volatile int *)res->cpu != 1) {
		fprintf(stderr, "kernel: %s, result %d\n", cudaGetErrorString(cudaGetLastError()),
			*(volatile int *)res->cpu);
		return 1;
	}
	for (long spins = 0; !got && spins < 100000000; spins++)
		got = gpunic_dev_poll_rcq(&c.dq, &cqe);
	if (!got || cqe.opcode != MLX5_CQE_RESP_SEND || strcmp(g.buf, c.buf)) {
		fprintf(stderr, "receiver: %d CQE, opcode %#x, \"%s\"\n", got,
			got ? cqe.opcode : 0, c.buf);
		return 1;
	}
	printf("GPU-initiated SEND completed; the receiver got \"%s\"\n", c.buf);
	gpunic_nic_close(g.nic);
	gpunic_nic_close(c.nic);
	free(c.buf);
	cudaFree(xqp);
	return gpunic_mem_close(mem) ? 1 : 0;
}
