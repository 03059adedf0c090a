// SPDX-License-Identifier: MIT
/*
 * The loopback's CPU hot path in lockstep on one thread, one stage per function, so that an
 * instruction counter (callgrind) attributes every instruction of a round trip to the stage
 * that spent it, with no polling loop in between:
 *
 *   1 sensor_post       the sensor builds its message and posts it (WRITE_WITH_IMM or SEND)
 *   2 sensor_nic_tx     its NIC takes the WQE and puts the frame on the shm cable
 *   3 fwd_nic_rx        the forwarder's NIC receives, checks, places it and writes the CQE
 *   4 fwd_executor      the CPU executor: completion in, echo out (gpunic_loop_step)
 *   5 fwd_nic_tx        the forwarder's NIC takes the echo's WQE and transmits it
 *   6 sensor_nic_rx     the sensor's NIC receives the echo and writes its CQE
 *   7 sensor_complete   the sensor takes the CQE, checks every byte, reposts the receive
 *
 * Every stage must do its part of every round, or the program says which did not and exits 1:
 * that is the CTest (hotpath_lockstep). The counts are made with
 *
 *   valgrind --tool=callgrind --callgrind-out-file=cg.out build/tests/hotpath/hotpath 20000
 *   callgrind_annotate --inclusive=yes cg.out | grep hp_
 *
 * and each stage's inclusive count divided by the rounds (docs/BENCHMARKS.md, "This 2-core
 * box"). Arguments: ROUNDS [write-imm|send] [IDLE_QPS], the last putting that many connected,
 * idle QPs beside the forwarder's (what --qps does to the bench).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpunic/loop_dev.h>
#include <gpunic/verbs.h>

#define HP_SLOTS 64u
#define HP_SLOT_BYTES 4096u
#define HP_MSG 32u
#define HP_SENSOR_RQ 64u

struct hp {
	struct gpunic_nic *sn, *fn;
	struct gpunic_qp *sqp, *fqp;
	struct gpunic_dev_qp sdq, fdq;
	struct gpunic_mr *smr, *fmr;
	uint8_t *sbuf;		/* the sensor's receive buffers */
	uint8_t *ring;		/* the forwarder's ring */
	struct gpunic_loop_ctx ctx;
	int send_mode;
	uint32_t idle_qps;
	uint64_t round;
	uint8_t msg[HP_MSG];
};

static void die(const char *what, int err)
{
	fprintf(stderr, "hotpath: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct gpunic_qp *hp_qp(struct gpunic_nic *nic, struct gpunic_pd *pd, uint32_t rq,
			       int scatter)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.send_cq = gpunic_cq_create(nic, 256),
		.recv_cq = gpunic_cq_create(nic, 2 * rq),
		.max_send_wr = 256,
		.max_recv_wr = rq,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = 64,
		.cqe_scatter = scatter,
	};
	struct gpunic_qp *qp = gpunic_qp_create(pd, &ia);

	if (!qp)
		die("QP", errno);
	return qp;
}

static void hp_connect(struct gpunic_qp *qp, uint32_t dest, uint32_t peer_ip)
{
	struct gpunic_qp_attr a = { .qp_state = GPUNIC_QPS_INIT,
				    .qp_access_flags = GPUNIC_ACCESS_REMOTE_WRITE };
	int err = gpunic_qp_modify(qp, &a, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS);

	a.qp_state = GPUNIC_QPS_RTR;
	a.path_mtu = GPUNIC_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 0;
	a.remote_ip = peer_ip;
	if (!err)
		err = gpunic_qp_modify(qp, &a, GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU |
						     GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
						     GPUNIC_QP_AV);
	a.qp_state = GPUNIC_QPS_RTS;
	a.sq_psn = 0;
	if (!err)
		err = gpunic_qp_modify(qp, &a, GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN);
	if (err)
		die(gpunic_qp_last_error(qp), err);
}

static void hp_open(struct hp *h)
{
	char name[64];
	struct gpunic_link *la, *lb;
	struct gpunic_nic_attr na = { 0 };
	struct gpunic_pd *spd, *fpd;
	size_t ring_bytes = (size_t)HP_SLOTS * HP_SLOT_BYTES;

	snprintf(name, sizeof(name), "/gpunic-hotpath-%d", (int)getpid());
	la = gpunic_link_shm_open(&(struct gpunic_shm_link_attr){ .name = name, .create = 1 });
	lb = gpunic_link_shm_open(&(struct gpunic_shm_link_attr){ .name = name,
								   .end = GPUNIC_SHM_END_B });
	if (!la || !lb)
		die("shm cable", errno);
	shm_unlink(name);
	na.link = la;
	na.ip = 0x0a000001;
	h->fn = gpunic_nic_open(&na);
	na.link = lb;
	na.ip = 0x0a000002;
	h->sn = gpunic_nic_open(&na);
	if (!h->fn || !h->sn)
		die("NIC", errno);
	fpd = gpunic_pd_alloc(h->fn);
	spd = gpunic_pd_alloc(h->sn);
	h->fqp = hp_qp(h->fn, fpd, HP_SLOTS, 1);
	h->sqp = hp_qp(h->sn, spd, HP_SENSOR_RQ, 1);
	hp_connect(h->fqp, h->sqp->qp_num, 0x0a000002);
	hp_connect(h->sqp, h->fqp->qp_num, 0x0a000001);
	h->ring = aligned_alloc(4096, ring_bytes);
	h->sbuf = aligned_alloc(4096, (size_t)HP_SENSOR_RQ * 64);
	if (!h->ring || !h->sbuf)
		die("buffers", ENOMEM);
	memset(h->ring, 0, ring_bytes);
	h->fmr = gpunic_mr_reg(fpd, h->ring, ring_bytes,
			       GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE);
	h->smr = gpunic_mr_reg(spd, h->sbuf, (size_t)HP_SENSOR_RQ * 64, GPUNIC_ACCESS_LOCAL_WRITE);
	if (!h->fmr || !h->smr || gpunic_qp_export(h->fqp, &h->fdq) ||
	    gpunic_qp_export(h->sqp, &h->sdq))
		die("MR or export", errno);
	h->ctx = (struct gpunic_loop_ctx){
		.qp = &h->fdq,
		.ring = h->ring,
		.ring_iova = (uint64_t)(uintptr_t)h->ring,
		.ring_lkey = h->fmr->lkey,
		.slot_bytes = HP_SLOT_BYTES,
		.slots = HP_SLOTS,
		.signal_every = 16,
		.recv_with_buffers = (uint32_t)h->send_mode,
	};
	for (uint32_t i = 0; i < h->idle_qps; i++) {
		/* beside the forwarder's QP, connected, never used: what they cost the engine */
		struct gpunic_qp *qp = hp_qp(h->fn, fpd, 4, 0);

		hp_connect(qp, 0xfff000 + i, 0x0a000002);
	}
	if (gpunic_loop_prime(&h->ctx))
		die("forwarder receives", ENOMEM);
	for (uint32_t i = 0; i < HP_SENSOR_RQ; i++) {
		struct gpunic_dev_sge sge = { (uint64_t)(uintptr_t)(h->sbuf + i * 64), 64,
					      h->smr->lkey };

		if (gpunic_dev_post_recv(&h->sdq, &sge, 1) < 0)
			die("sensor receives", ENOMEM);
	}
}

/* The sensor's message for round @r: every byte derived from the round. */
static void hp_fill(uint8_t *m, uint64_t r)
{
	for (uint32_t i = 0; i < HP_MSG; i++)
		m[i] = (uint8_t)(r * 131 + i * 7 + 1);
}

__attribute__((noinline)) static void hp_sensor_post(struct hp *h)
{
	struct gpunic_dev_cqe cqe;
	uint32_t slot = (uint32_t)(h->round % HP_SLOTS);
	uint8_t flags = (h->round & 15) == 15 ? GPUNIC_DEV_SEND_SIGNALED : 0;
	int64_t r;

	hp_fill(h->msg, h->round);
	if (h->send_mode)
		r = gpunic_dev_post_send_inline(&h->sdq, MLX5_OPCODE_SEND, flags, h->msg, HP_MSG, 0,
						0, 0);
	else
		r = gpunic_dev_post_send_inline(&h->sdq, MLX5_OPCODE_RDMA_WRITE_IMM, flags, h->msg,
						HP_MSG,
						(uint64_t)(uintptr_t)(h->ring + slot * HP_SLOT_BYTES),
						h->fmr->rkey, slot);
	if (r < 0)
		die("sensor post", (int)-r);
	gpunic_dev_submit(&h->sdq);
	while (gpunic_dev_poll_scq(&h->sdq, &cqe))
		;
}

__attribute__((noinline)) static int hp_sensor_nic_tx(struct hp *h)
{
	return gpunic_nic_poll(h->sn, 1);
}

__attribute__((noinline)) static int hp_fwd_nic_rx(struct hp *h)
{
	return gpunic_nic_poll(h->fn, 1);
}

__attribute__((noinline)) static int hp_fwd_executor(struct hp *h)
{
	return gpunic_loop_step(&h->ctx);
}

__attribute__((noinline)) static int hp_fwd_nic_tx(struct hp *h)
{
	return gpunic_nic_poll(h->fn, 1);
}

__attribute__((noinline)) static int hp_sensor_nic_rx(struct hp *h)
{
	return gpunic_nic_poll(h->sn, 1);
}

__attribute__((noinline)) static int hp_sensor_complete(struct hp *h)
{
	struct gpunic_dev_cqe cqe;
	struct gpunic_dev_sge sge;
	uint8_t want[HP_MSG];
	const uint8_t *got;

	if (!gpunic_dev_poll_rcq(&h->sdq, &cqe) || cqe.opcode != MLX5_CQE_RESP_SEND ||
	    cqe.byte_cnt != HP_MSG)
		return 0;
	got = cqe.data_in_cqe ? cqe.data : h->sbuf + (cqe.wqe_idx % HP_SENSOR_RQ) * 64;
	hp_fill(want, h->round);
	if (memcmp(got, want, HP_MSG))
		return 0;
	sge.addr = (uint64_t)(uintptr_t)(h->sbuf + (cqe.wqe_idx % HP_SENSOR_RQ) * 64);
	sge.length = 64;
	sge.lkey = h->smr->lkey;
	return gpunic_dev_post_recv(&h->sdq, &sge, 1) >= 0;
}

int main(int argc, char **argv)
{
	static const char *const stage[] = { "sensor_nic_tx", "fwd_nic_rx", "fwd_executor",
					     "fwd_nic_tx", "sensor_nic_rx", "sensor_complete" };
	struct hp h = { 0 };
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
	int r[6];

	h.send_mode = argc > 2 && strcmp(argv[2], "send") == 0;
	h.idle_qps = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
	hp_open(&h);
	for (h.round = 0; h.round < rounds; h.round++) {
		hp_sensor_post(&h);
		r[0] = hp_sensor_nic_tx(&h);
		r[1] = hp_fwd_nic_rx(&h);
		r[2] = hp_fwd_executor(&h);
		r[3] = hp_fwd_nic_tx(&h);
		r[4] = hp_sensor_nic_rx(&h);
		r[5] = hp_sensor_complete(&h);
		for (int i = 0; i < 6; i++) {
			if (r[i] <= 0) {
				fprintf(stderr, "hotpath: round %llu: stage %s did nothing\n",
					(unsigned long long)h.round, stage[i]);
				return 1;
			}
		}
	}
	printf("hotpath: %llu round trips in lockstep, %s mode, every echo verified\n",
	       (unsigned long long)rounds, h.send_mode ? "SEND" : "WRITE_WITH_IMM");
	gpunic_nic_close(h.sn);
	gpunic_nic_close(h.fn);
	free(h.ring);
	free(h.sbuf);
	return 0;
}
