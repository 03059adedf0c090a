// SPDX-License-Identifier: MIT
/*
 * RC atomics and the NOP WQE through the CPU executor (gpunic_dev.h) and two softnics:
 * compare-and-swap that succeeds and fails, fetch-and-add and its 64-bit wrap, host byte order
 * of the target and of the fetched value, fetch-and-adds from several QPs' poster threads and a
 * host thread on one counter at once (the sum and every fetched value exact), a duplicate
 * request after a lost ATOMIC ACK (crafted frames: answered from the responder's saved result,
 * executed once), the same under a lossy link, the errors (misaligned target, no remote atomic
 * right on the QP or the region, atomics on UC), NOPs signalled, unsignalled and behind
 * outstanding requests, and a "signalled put": a WRITE then a fetch-and-add on a flag that a
 * receiving thread polls before it reads the WRITE's data.
 */
#include <pthread.h>

#include "nic_fixture.h"

#define ATOMIC_RIGHTS (GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ | \
		       GPUNIC_ACCESS_REMOTE_ATOMIC)
#define TGT_OFF 4096u           /* targets in the responder's buffer */
#define RES_OFF (64u << 10)     /* fetched values in the requester's buffer */

static uint64_t *u64_at(struct player *p, size_t off)
{
	return (uint64_t *)(void *)(p->buf + off);
}

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void rc_setup(struct fixture *fx, unsigned access)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .access = access, .psn_a = 0xFFFFF0 };

	fx_setup(fx, FX_LINK_SHM, &o);
}

static struct gpunic_qp_counters qp_counters(struct player *p)
{
	struct gpunic_qp_counters c;

	CHECK_EQ(gpunic_qp_query_counters(p->qp, &c), 0);
	return c;
}

/* One atomic from a to b's target at @toff, the fetched value to a's @roff; waits for its
 * CQE. Return: the CQE. */
static struct gpunic_dev_cqe atomic_one(struct fixture *fx, uint8_t op, size_t toff, size_t roff,
					uint64_t compare_add, uint64_t swap)
{
	struct gpunic_dev_cqe cqe;
	int64_t r;

	if (op == MLX5_OPCODE_ATOMIC_CS)
		r = gpunic_dev_post_atomic_cas(&fx->a.dq, GPUNIC_DEV_SEND_SIGNALED,
					       fx_va(&fx->a, roff), fx->a.mr->lkey,
					       fx_va(&fx->b, toff), fx->b.mr->rkey, compare_add,
					       swap);
	else
		r = gpunic_dev_post_atomic_fa(&fx->a.dq, GPUNIC_DEV_SEND_SIGNALED,
					      fx_va(&fx->a, roff), fx->a.mr->lkey,
					      fx_va(&fx->b, toff), fx->b.mr->rkey, compare_add);
	CHECK(r >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx->a.dq), 0);
	CHECK(fx_wait_cqe(fx, &fx->a, true, &cqe));
	return cqe;
}

static void expect_atomic_ok(const struct gpunic_dev_cqe *cqe, const struct player *p, uint8_t op)
{
	if (cqe->opcode != MLX5_CQE_REQ)
		fprintf(stderr, "error CQE: syndrome 0x%x, WQE %u\n", cqe->syndrome, cqe->wqe_idx);
	CHECK_EQ(cqe->opcode, MLX5_CQE_REQ);
	CHECK_EQ(cqe->wqe_opcode, op);
	CHECK_EQ(cqe->byte_cnt, 8);
	CHECK_EQ(cqe->qpn, p->qp->qp_num);
}

TEST(rc_atomic_cas_success)
{
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	*u64_at(&fx.b, TGT_OFF) = 0x1122334455667788ull;
	*u64_at(&fx.a, RES_OFF) = 0x5A5A5A5A5A5A5A5Aull;
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_CS, TGT_OFF, RES_OFF, 0x1122334455667788ull,
			 0xCAFEF00DDEADBEEFull);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_CS);
	CHECK_EQ(*u64_at(&fx.a, RES_OFF), 0x1122334455667788ull);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 0xCAFEF00DDEADBEEFull);
	/* the 8 bytes next to it are untouched */
	CHECK_EQ(*u64_at(&fx.b, TGT_OFF + 8), 0);
	CHECK_EQ(*u64_at(&fx.b, TGT_OFF - 8), 0);
	CHECK_EQ(qp_counters(&fx.b).atomics_executed, 1);
	CHECK_EQ(qp_counters(&fx.b).rx_messages, 1);
	fx_teardown(&fx);
}

TEST(rc_atomic_cas_failure)
{
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	*u64_at(&fx.b, TGT_OFF) = 77;
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_CS, TGT_OFF, RES_OFF, 78, 1000);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_CS);
	/* a failed compare still succeeds as an operation: the value comes back, nothing moves */
	CHECK_EQ(*u64_at(&fx.a, RES_OFF), 77);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 77);
	CHECK_EQ(qp_counters(&fx.b).atomics_executed, 1);
	fx_teardown(&fx);
}

TEST(rc_atomic_fetch_add)
{
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	*u64_at(&fx.b, TGT_OFF) = 40;
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_FA, TGT_OFF, RES_OFF, 2, 0);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(*u64_at(&fx.a, RES_OFF), 40);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 42);
	fx_teardown(&fx);
}

/* 64-bit arithmetic modulo 2^64: past the top, and an "add" of a negative number. */
TEST(rc_atomic_fetch_add_wraps)
{
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	*u64_at(&fx.b, TGT_OFF) = UINT64_MAX - 1;
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_FA, TGT_OFF, RES_OFF, 3, 0);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(*u64_at(&fx.a, RES_OFF), UINT64_MAX - 1);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 1);
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_FA, TGT_OFF, RES_OFF + 8, (uint64_t)-5, 0);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(*u64_at(&fx.a, RES_OFF + 8), 1);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), (uint64_t)-4);
	fx_teardown(&fx);
}

/*
 * Byte order: the target is a host-order integer and so is the fetched value (as Linux rxe and
 * a ConnectX in host-endianness mode): bytes compared with the host's own representation.
 */
TEST(rc_atomic_host_byte_order)
{
	const uint64_t add = 0x0102030405060708ull, start = 0x1000000000000001ull;
	uint64_t want = start + add;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	memcpy(fx.b.buf + TGT_OFF, &start, 8);
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_FA, TGT_OFF, RES_OFF, add, 0);
	expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
	CHECK_MEM(fx.b.buf + TGT_OFF, &want, 8);
	CHECK_MEM(fx.a.buf + RES_OFF, &start, 8);
	fx_teardown(&fx);
}

/* Many fetch-and-adds in flight (more than max_rd_atomic), each its own result slot: the RC
 * order makes them 0, 1, 2, ... exactly. Posted through gpunic_dev_post_send() as well. */
TEST(rc_atomic_pipelined)
{
	const uint32_t n = 500;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	struct gpunic_dev_cqe cqe;
	uint32_t posted = 0, done = 0;
	struct fixture fx;
	uint64_t end;

	rc_setup(&fx, ATOMIC_RIGHTS);
	end = fx_now_ns() + FX_WAIT_NS;
	while (done < n) {
		CHECK(fx_now_ns() < end);
		while (posted < n) {
			gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_FA,
					     GPUNIC_DEV_SEND_SIGNALED,
					     fx_va(&fx.a, RES_OFF + 8 * (size_t)posted),
					     fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF), fx.b.mr->rkey,
					     1, 0);
			if (gpunic_dev_post_send(&fx.a.dq, &wr) < 0)
				break;
			posted++;
		}
		CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
		pump(&fx);
		while (gpunic_dev_poll_scq(&fx.a.dq, &cqe)) {
			expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
			CHECK_EQ(*u64_at(&fx.a, RES_OFF + 8 * (size_t)done), done);
			done++;
		}
	}
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), n);
	CHECK_EQ(qp_counters(&fx.b).atomics_executed, n);
	CHECK_EQ(qp_counters(&fx.b).atomic_replays, 0);
	fx_teardown(&fx);
}

/* ---------------------------------------------------------------- concurrency */

#define CONC_QPS 3
#define CONC_PER_QP 1500u
#define CONC_HOST 20000u
#define CONC_TOTAL (CONC_QPS * CONC_PER_QP + CONC_HOST)

struct conc_qp {
	struct gpunic_cq *scq[2], *rcq[2];
	struct gpunic_qp *qp[2];
	struct gpunic_dev_qp dq;    /* the requester's (NIC a) */
	uint64_t *fetched;          /* CONC_PER_QP values, in a's buffer */
	uint64_t target_va;
	uint32_t lkey, rkey;
	int err;
};

static uint64_t *conc_target;
static uint64_t conc_host_fetched[CONC_HOST];

/* Another connected QP pair between the fixture's two NICs, each QP with its own CQs. */
static void conc_pair(struct fixture *fx, struct conc_qp *c, unsigned k)
{
	struct fx_opts o = fx->o;
	struct player *pl[2] = { &fx->a, &fx->b };

	for (int s = 0; s < 2; s++) {
		struct gpunic_qp_init_attr ia = {
			.qp_type = GPUNIC_QPT_RC, .max_send_wr = 64, .max_recv_wr = 4,
			.max_send_sge = 1, .max_recv_sge = 1,
		};

		c->scq[s] = gpunic_cq_create(pl[s]->nic, 128);
		c->rcq[s] = gpunic_cq_create(pl[s]->nic, 16);
		CHECK(c->scq[s] && c->rcq[s]);
		ia.send_cq = c->scq[s];
		ia.recv_cq = c->rcq[s];
		c->qp[s] = gpunic_qp_create(pl[s]->pd, &ia);
		CHECK(c->qp[s]);
	}
	qp_to_rts(c->qp[0], &fx->a, &fx->b, c->qp[1]->qp_num, &o);
	qp_to_rts(c->qp[1], &fx->b, &fx->a, c->qp[0]->qp_num, &o);
	CHECK_EQ(gpunic_qp_export(c->qp[0], &c->dq), 0);
	c->fetched = u64_at(&fx->a, RES_OFF + (size_t)k * CONC_PER_QP * 8);
	c->target_va = fx_va(&fx->b, TGT_OFF);
	c->lkey = fx->a.mr->lkey;
	c->rkey = fx->b.mr->rkey;
}

/* A poster thread: its QP alone, thread scope, up to 16 in flight. */
static void *conc_poster(void *arg)
{
	struct conc_qp *c = arg;
	uint32_t posted = 0, done = 0;
	struct gpunic_dev_cqe cqe;
	uint64_t end = fx_now_ns() + 4 * FX_WAIT_NS;

	while (done < CONC_PER_QP && fx_now_ns() < end) {
		while (posted < CONC_PER_QP && posted - done < 16 &&
		       gpunic_dev_post_atomic_fa(&c->dq, GPUNIC_DEV_SEND_SIGNALED,
						 (uint64_t)(uintptr_t)&c->fetched[posted], c->lkey,
						 c->target_va, c->rkey, 1) >= 0)
			posted++;
		gpunic_dev_submit(&c->dq);
		if (!gpunic_dev_poll_scq(&c->dq, &cqe)) {
			sched_yield();
			continue;
		}
		if (cqe.opcode != MLX5_CQE_REQ) {
			c->err = cqe.syndrome ? cqe.syndrome : -1;
			return NULL;
		}
		done++;
	}
	if (done < CONC_PER_QP)
		c->err = ETIMEDOUT;
	return NULL;
}

static void *conc_host(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < CONC_HOST; i++)
		conc_host_fetched[i] = __atomic_fetch_add(conc_target, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Three QPs' poster threads fetch-and-add 1 on one counter while a host thread does the same
 * with __atomic_fetch_add, both NICs' engines on their own threads: the counter ends at the
 * exact total, and the values everybody fetched are 0 .. total-1, each exactly once.
 */
TEST(rc_atomic_concurrent_fetch_add)
{
	static struct conc_qp c[CONC_QPS];
	static uint64_t all[CONC_TOTAL];
	pthread_t thr[CONC_QPS + 1];
	struct fixture fx;
	size_t n = 0;

	rc_setup(&fx, ATOMIC_RIGHTS);
	memset(c, 0, sizeof(c));
	for (unsigned k = 0; k < CONC_QPS; k++)
		conc_pair(&fx, &c[k], k);
	conc_target = u64_at(&fx.b, TGT_OFF);
	CHECK_EQ(gpunic_nic_start(fx.a.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx.b.nic, -1), 0);
	for (unsigned k = 0; k < CONC_QPS; k++)
		CHECK_EQ(pthread_create(&thr[k], NULL, conc_poster, &c[k]), 0);
	CHECK_EQ(pthread_create(&thr[CONC_QPS], NULL, conc_host, NULL), 0);
	for (unsigned k = 0; k <= CONC_QPS; k++)
		CHECK_EQ(pthread_join(thr[k], NULL), 0);
	CHECK_EQ(gpunic_nic_stop(fx.a.nic), 0);
	CHECK_EQ(gpunic_nic_stop(fx.b.nic), 0);
	for (unsigned k = 0; k < CONC_QPS; k++) {
		struct gpunic_qp_counters qc;

		if (c[k].err)
			fprintf(stderr, "poster %u: error %d\n", k, c[k].err);
		CHECK_EQ(c[k].err, 0);
		/* one QP's own values increase: RC executes its requests in order */
		for (uint32_t i = 1; i < CONC_PER_QP; i++)
			CHECK(c[k].fetched[i] > c[k].fetched[i - 1]);
		memcpy(all + n, c[k].fetched, CONC_PER_QP * sizeof(uint64_t));
		n += CONC_PER_QP;
		CHECK_EQ(gpunic_qp_query_counters(c[k].qp[1], &qc), 0);
		CHECK_EQ(qc.atomics_executed, CONC_PER_QP);
	}
	memcpy(all + n, conc_host_fetched, sizeof(conc_host_fetched));
	n += CONC_HOST;
	CHECK_EQ(n, CONC_TOTAL);
	CHECK_EQ(load64(conc_target), CONC_TOTAL);
	qsort(all, n, sizeof(all[0]), cmp_u64);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(all[i], i);
	fx_teardown(&fx);
}

/* ---------------------------------------------------------------- duplicates */

/*
 * The test plays the requester on the raw end of a shm cable: NIC b's RC QP is connected to a
 * "ghost" peer, and the test writes the ghost's request frames and reads b's answers.
 */
struct rig {
	struct gpunic_link *wire;
	struct player b;
	struct player ghost;
	uint32_t ghost_qpn;
};

static void rig_open(struct rig *r, unsigned access)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .access = access };
	struct gpunic_link *lb;
	uint16_t pa, pb;

	memset(r, 0, sizeof(*r));
	fx_links(FX_LINK_SHM, &r->wire, &lb, &pa, &pb);
	player_open(&r->b, lb, IP4(10, 0, 0, 2), 2, 0, &o);
	r->b.psn = 0x100;
	r->ghost.ip = IP4(10, 0, 0, 1);
	memcpy(r->ghost.mac, (uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 6);
	r->ghost.psn = 0xFFFFFE;	/* the PSNs the ghost sends wrap through 0 */
	r->ghost_qpn = 0x4242;
	r->b.qp = player_qp(&r->b, &o);
	qp_to_rts(r->b.qp, &r->b, &r->ghost, r->ghost_qpn, &o);
}

static void rig_close(struct rig *r)
{
	CHECK(fx_guards_ok(&r->b));
	CHECK_EQ(gpunic_nic_close(r->b.nic), 0);
	gpunic_link_close(r->wire);
	free(r->b.mem);
}

/* The ghost's atomic request with PSN @psn. */
static void rig_send_atomic(struct rig *r, uint8_t op, uint32_t psn, uint64_t va,
			    uint64_t swap_add, uint64_t compare)
{
	struct gpunic_pkt p = { .ttl = 64, .src_ip = r->ghost.ip, .dst_ip = r->b.ip,
				.src_port = 49152, .dst_port = GPUNIC_ROCE_UDP_PORT,
				.opcode = op, .pkey = 0xFFFF, .qpn = r->b.qp->qp_num, .psn = psn,
				.ack_req = true, .atm_va = va, .atm_rkey = r->b.mr->rkey,
				.atm_swap_add = swap_add, .atm_compare = compare };
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	size_t len;

	memcpy(p.dst_mac, r->b.mac, 6);
	memcpy(p.src_mac, r->ghost.mac, 6);
	len = gpunic_frame_encode(&p, frame, sizeof(frame));
	CHECK(len > 0);
	CHECK_EQ(gpunic_link_send(r->wire, frame, len), 0);
}

/* b's next answer. Return: false when nothing came within 50 ms. */
static bool rig_recv(struct rig *r, struct gpunic_pkt *pkt)
{
	static uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	uint64_t end = fx_now_ns() + 50000000ull;
	size_t len;

	while (fx_now_ns() < end) {
		gpunic_nic_poll(r->b.nic, 16);
		if (gpunic_link_recv(r->wire, frame, sizeof(frame), &len) == 0) {
			CHECK_EQ(gpunic_frame_decode(frame, len, 0, pkt), GPUNIC_WIRE_OK);
			CHECK_EQ(pkt->qpn, r->ghost_qpn);
			return true;
		}
	}
	return false;
}

static void expect_atomic_ack(struct rig *r, uint32_t psn, uint32_t msn, uint64_t orig)
{
	struct gpunic_pkt pkt;

	CHECK(rig_recv(r, &pkt));
	CHECK_EQ(pkt.opcode, GPUNIC_OP_ATOMIC_ACKNOWLEDGE);
	CHECK_EQ(pkt.psn, psn);
	CHECK_EQ(pkt.aeth_syndrome, GPUNIC_AETH_ACK | GPUNIC_AETH_ACK_UNLIMITED);
	CHECK_EQ(pkt.aeth_msn, msn);
	CHECK_EQ(pkt.atmack_orig, orig);
}

/*
 * A lost ATOMIC ACK: the requester asks again with the same PSN, and the responder answers from
 * its saved result (IBA 9.4.5) without executing the atomic a second time. A "duplicate" whose
 * operands differ from what that PSN carried is not one: dropped, unanswered, not executed.
 */
TEST(rc_atomic_duplicate_replayed_not_executed)
{
	struct gpunic_qp_counters qc;
	struct gpunic_pkt pkt;
	uint64_t va;
	uint32_t p0;
	struct rig r;

	rig_open(&r, ATOMIC_RIGHTS);
	va = fx_va(&r.b, TGT_OFF);
	*u64_at(&r.b, TGT_OFF) = 1000;
	p0 = r.ghost.psn;
	rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, p0, va, 5, 0);
	expect_atomic_ack(&r, p0, 1, 1000);
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), 1005);
	/* that ACK "was lost": the same request again, twice */
	for (int i = 0; i < 2; i++) {
		rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, p0, va, 5, 0);
		expect_atomic_ack(&r, p0, 1, 1000);
	}
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), 1005);
	/* the next ones, through the PSN wrap, then a duplicate of an older one */
	rig_send_atomic(&r, GPUNIC_OP_COMPARE_SWAP, gpunic_psn_add(p0, 1), va, 7, 1005);
	expect_atomic_ack(&r, gpunic_psn_add(p0, 1), 2, 1005);
	rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, gpunic_psn_add(p0, 2), va, 1, 0);
	expect_atomic_ack(&r, gpunic_psn_add(p0, 2), 3, 7);
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), 8);
	/* the replay carries the MSN as it stands now (the AETH's MSN is cumulative) */
	rig_send_atomic(&r, GPUNIC_OP_COMPARE_SWAP, gpunic_psn_add(p0, 1), va, 7, 1005);
	expect_atomic_ack(&r, gpunic_psn_add(p0, 1), 3, 1005);
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), 8);
	/* same PSN, other operands: no replay, no execution */
	rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, gpunic_psn_add(p0, 2), va, 100, 0);
	CHECK(!rig_recv(&r, &pkt));
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), 8);
	CHECK_EQ(gpunic_qp_query_counters(r.b.qp, &qc), 0);
	CHECK_EQ(qc.atomics_executed, 3);
	CHECK_EQ(qc.atomic_replays, 3);
	CHECK_EQ(qc.drops[GPUNIC_DROP_PSN], 4);
	CHECK_EQ(r.b.qp->state, GPUNIC_QPS_RTS);
	rig_close(&r);
}

/* Frames the test's shm cable holds one way (nic_fixture.h's fx_links). */
#define RIG_WIRE_SLOTS 1024u

/* Poll b until it has taken every frame the ghost wrote (its answers may have nowhere to go). */
static void rig_settle(struct rig *r)
{
	for (int i = 0; i < 64; i++)
		gpunic_nic_poll(r->b.nic, 64);
}

/*
 * Replays hold no responder resources. b's answers pile up behind a wire nobody reads; the
 * requester goes back and resends its last 16 atomics (max_dest_rd_atomic), then sends a new
 * one. The 16 queued replays answer requests counted once already: the new request is executed
 * and answered, not NAKed as one too many (which ended the connection: seen when answers queue
 * behind a slow link, rc_atomic_concurrent_fetch_add under valgrind).
 */
TEST(rc_atomic_replays_hold_no_resources)
{
	struct gpunic_qp_counters qc;
	struct gpunic_pkt pkt;
	uint32_t psn, last16, answers = 0, i, k;
	uint64_t va;
	struct rig r;

	rig_open(&r, ATOMIC_RIGHTS);
	va = fx_va(&r.b, TGT_OFF);
	*u64_at(&r.b, TGT_OFF) = 0;
	psn = r.ghost.psn;
	/* fill the wire with answers, 16 requests at a time, then 16 more that stay queued */
	for (i = 0; i < RIG_WIRE_SLOTS + 16; i += 16) {
		for (k = 0; k < 16; k++, psn = gpunic_psn_add(psn, 1))
			rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, psn, va, 1, 0);
		rig_settle(&r);
	}
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), RIG_WIRE_SLOTS + 16);
	/* the requester heard nothing and resends the last 16: replays, not executed again */
	last16 = gpunic_psn_add(psn, GPUNIC_PSN_MASK + 1 - 16);
	for (k = 0; k < 16; k++)
		rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, gpunic_psn_add(last16, k), va, 1, 0);
	rig_settle(&r);
	/* and a new one */
	rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, psn, va, 1, 0);
	rig_settle(&r);
	CHECK_EQ(load64(u64_at(&r.b, TGT_OFF)), RIG_WIRE_SLOTS + 17);
	CHECK_EQ(r.b.qp->state, GPUNIC_QPS_RTS);
	/* the ghost reads the wire: every answer is an ATOMIC ACK, the new request's last */
	while (rig_recv(&r, &pkt)) {
		CHECK_EQ(pkt.opcode, GPUNIC_OP_ATOMIC_ACKNOWLEDGE);
		answers++;
		if (pkt.psn == psn)
			break;
	}
	CHECK_EQ(pkt.psn, psn);
	CHECK_EQ(pkt.atmack_orig, RIG_WIRE_SLOTS + 16);
	CHECK(answers >= RIG_WIRE_SLOTS + 1);
	CHECK_EQ(gpunic_qp_query_counters(r.b.qp, &qc), 0);
	CHECK_EQ(qc.atomics_executed, RIG_WIRE_SLOTS + 17);
	CHECK_EQ(qc.atomic_replays, 16);
	CHECK_EQ(qc.drops[GPUNIC_DROP_RD_RESOURCE], 0);
	rig_close(&r);
}

/* The ATOMIC ACK leaves in order behind the responses queued before it: a READ's data first. */
TEST(rc_atomic_ack_after_read_response)
{
	struct gpunic_pkt pkt = { .ttl = 64 };
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	uint64_t va;
	size_t len;
	struct rig r;

	rig_open(&r, ATOMIC_RIGHTS);
	va = fx_va(&r.b, TGT_OFF);
	pkt.src_ip = r.ghost.ip;
	pkt.dst_ip = r.b.ip;
	pkt.src_port = 49152;
	pkt.dst_port = GPUNIC_ROCE_UDP_PORT;
	pkt.opcode = GPUNIC_OP_READ_REQUEST;
	pkt.pkey = 0xFFFF;
	pkt.qpn = r.b.qp->qp_num;
	pkt.psn = r.ghost.psn;
	pkt.ack_req = true;
	pkt.reth_va = fx_va(&r.b, 0);
	pkt.reth_rkey = r.b.mr->rkey;
	pkt.reth_len = 3000;	/* three response packets at PMTU 1024 */
	memcpy(pkt.dst_mac, r.b.mac, 6);
	memcpy(pkt.src_mac, r.ghost.mac, 6);
	len = gpunic_frame_encode(&pkt, frame, sizeof(frame));
	CHECK(len > 0);
	CHECK_EQ(gpunic_link_send(r.wire, frame, len), 0);
	rig_send_atomic(&r, GPUNIC_OP_FETCH_ADD, gpunic_psn_add(r.ghost.psn, 3), va, 1, 0);
	CHECK(rig_recv(&r, &pkt));
	CHECK_EQ(pkt.opcode, GPUNIC_OP_READ_RESPONSE_FIRST);
	CHECK(rig_recv(&r, &pkt));
	CHECK_EQ(pkt.opcode, GPUNIC_OP_READ_RESPONSE_MIDDLE);
	CHECK(rig_recv(&r, &pkt));
	CHECK_EQ(pkt.opcode, GPUNIC_OP_READ_RESPONSE_LAST);
	expect_atomic_ack(&r, gpunic_psn_add(r.ghost.psn, 3), 2, 0);
	rig_close(&r);
}

/*
 * The whole stack over a link that drops, duplicates, reorders and corrupts 5% of frames each
 * way: lost requests and lost ATOMIC ACKs are retried, duplicates answered from the saved
 * results; every fetch-and-add runs exactly once (the fetched values are 0 .. n-1 in order).
 */
TEST(rc_atomic_impaired_link_exactly_once)
{
	static const struct gpunic_impair_attr imp = {
		.seed = 0xA70, .drop_ppm = 50000, .reorder_ppm = 50000,
		.duplicate_ppm = 50000, .corrupt_ppm = 50000,
	};
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .access = ATOMIC_RIGHTS, .impair = &imp,
			     .timeout = 10, .retry_cnt = 7 };
	const uint32_t n = 400;
	struct gpunic_qp_counters qa, qb;
	uint32_t posted = 0, done = 0;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	uint64_t end;

	fx_setup(&fx, FX_LINK_SHM, &o);
	end = fx_now_ns() + 3 * FX_WAIT_NS;
	while (done < n) {
		CHECK(fx_now_ns() < end);
		while (posted < n && posted - done < 8 &&
		       gpunic_dev_post_atomic_fa(&fx.a.dq, GPUNIC_DEV_SEND_SIGNALED,
						 fx_va(&fx.a, RES_OFF + 8 * (size_t)posted),
						 fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF),
						 fx.b.mr->rkey, 1) >= 0)
			posted++;
		CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
		pump(&fx);
		while (gpunic_dev_poll_scq(&fx.a.dq, &cqe)) {
			if (cqe.opcode != MLX5_CQE_REQ)
				fx_dump(&fx);
			expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
			CHECK_EQ(*u64_at(&fx.a, RES_OFF + 8 * (size_t)done), done);
			done++;
		}
	}
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), n);
	qa = qp_counters(&fx.a);
	qb = qp_counters(&fx.b);
	CHECK_EQ(qb.atomics_executed, n);
	CHECK(qa.retransmits > 0);
	CHECK(qb.atomic_replays > 0);
	fprintf(stderr, "retransmits %llu, timeouts %llu, replays %llu\n",
		(unsigned long long)qa.retransmits, (unsigned long long)qa.timeouts,
		(unsigned long long)qb.atomic_replays);
	fx_teardown(&fx);
}

/* ---------------------------------------------------------------- errors */

static void expect_send_err(struct fixture *fx, uint8_t syndrome)
{
	struct gpunic_dev_cqe cqe;

	CHECK(fx_wait_cqe(fx, &fx->a, true, &cqe));
	if (cqe.opcode != MLX5_CQE_REQ_ERR || cqe.syndrome != syndrome)
		fx_dump(fx);
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cqe.syndrome, syndrome);
}

/* A target that is not 8-byte aligned: NAK invalid request (class C), QP to ERR, nothing
 * written; the requester's WQE completes with an error. */
TEST(rc_atomic_misaligned_naks)
{
	struct gpunic_qp_counters qb;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	memset(fx.b.buf + TGT_OFF, 0x11, 16);
	CHECK(gpunic_dev_post_atomic_fa(&fx.a.dq, GPUNIC_DEV_SEND_SIGNALED, fx_va(&fx.a, RES_OFF),
					fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF + 4), fx.b.mr->rkey,
					1) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	expect_send_err(&fx, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_ERR);
	qb = qp_counters(&fx.b);
	CHECK_EQ(qb.drops[GPUNIC_DROP_MISALIGNED], 1);
	CHECK_EQ(qb.atomics_executed, 0);
	CHECK_EQ(qb.naks_sent, 1);
	for (int i = 0; i < 16; i++)
		CHECK_EQ(fx.b.buf[TGT_OFF + i], 0x11);
	fx_teardown(&fx);
}

/* The peer's QP grants no remote atomic: remote access error, QP to ERR, not executed. */
TEST(rc_atomic_without_qp_right_naks)
{
	struct gpunic_dev_cqe cqe;
	struct fixture fx;

	rc_setup(&fx, GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ);
	*u64_at(&fx.b, TGT_OFF) = 9;
	cqe = atomic_one(&fx, MLX5_OPCODE_ATOMIC_CS, TGT_OFF, RES_OFF, 9, 10);
	if (cqe.opcode != MLX5_CQE_REQ_ERR)
		fx_dump(&fx);
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(cqe.wqe_opcode, MLX5_OPCODE_ATOMIC_CS);
	CHECK_EQ(fx.b.qp->state, GPUNIC_QPS_ERR);
	CHECK_EQ(qp_counters(&fx.b).drops[GPUNIC_DROP_ACCESS], 1);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 9);
	fx_teardown(&fx);
}

/* The QP grants it, the region does not: remote access error as well. A region cannot grant
 * remote atomic without local write (ibv_reg_mr's rule). */
TEST(rc_atomic_without_mr_right_naks)
{
	struct gpunic_dev_cqe cqe;
	struct gpunic_mr *mr;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	CHECK(!gpunic_mr_reg(fx.b.pd, fx.b.buf, 4096, GPUNIC_ACCESS_REMOTE_ATOMIC));
	CHECK_EQ(errno, EINVAL);
	mr = gpunic_mr_reg(fx.b.pd, fx.b.buf + TGT_OFF, 4096,
			   GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE);
	CHECK(mr);
	*u64_at(&fx.b, TGT_OFF) = 3;
	CHECK(gpunic_dev_post_atomic_fa(&fx.a.dq, GPUNIC_DEV_SEND_SIGNALED, fx_va(&fx.a, RES_OFF),
					fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF), mr->rkey, 1) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(cqe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(qp_counters(&fx.b).drops[GPUNIC_DROP_ACCESS], 1);
	CHECK_EQ(load64(u64_at(&fx.b, TGT_OFF)), 3);
	CHECK_EQ(gpunic_mr_dereg(mr), 0);
	fx_teardown(&fx);
}

/* Atomics are RC operations: on UC the requester refuses the WQE itself, nothing is sent. */
TEST(uc_atomic_refused_locally)
{
	struct fx_opts o = { .type = GPUNIC_QPT_UC, .access = ATOMIC_RIGHTS };
	struct gpunic_nic_counters nc;
	struct fixture fx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	CHECK(gpunic_dev_post_atomic_fa(&fx.a.dq, GPUNIC_DEV_SEND_SIGNALED, fx_va(&fx.a, RES_OFF),
					fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF), fx.b.mr->rkey,
					1) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	expect_send_err(&fx, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &nc), 0);
	CHECK_EQ(nc.tx_frames, 0);
	CHECK_EQ(*u64_at(&fx.b, TGT_OFF), 0);
	fx_teardown(&fx);
}

/* The data path refuses malformed atomics before they reach the queue. */
TEST(atomic_post_checks)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_FA, 0, fx_va(&fx.a, RES_OFF),
			     fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF), fx.b.mr->rkey, 1, 0);
	CHECK_EQ(gpunic_dev_send_wqe_ds(&fx.a.dq, &wr), 4);
	sge.length = 4;
	CHECK_EQ(gpunic_dev_post_send(&fx.a.dq, &wr), -EINVAL);
	sge.length = 8;
	wr.flags = GPUNIC_DEV_SEND_INLINE;
	CHECK_EQ(gpunic_dev_post_send(&fx.a.dq, &wr), -EINVAL);
	wr.flags = 0;
	wr.num_sge = 2;
	CHECK_EQ(gpunic_dev_post_send(&fx.a.dq, &wr), -EINVAL);
	gpunic_dev_nop_wr(&wr, 0);
	CHECK_EQ(gpunic_dev_send_wqe_ds(&fx.a.dq, &wr), 1);
	wr.num_sge = 1;
	wr.sg_list = &sge;
	CHECK_EQ(gpunic_dev_post_send(&fx.a.dq, &wr), -EINVAL);
	fx_teardown(&fx);
}

/* ---------------------------------------------------------------- NOP */

static void nop_alone(enum gpunic_qp_type type)
{
	struct fx_opts o = { .type = type };
	struct gpunic_nic_counters nc;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	int64_t idx;

	fx_setup(&fx, FX_LINK_SHM, &o);
	idx = gpunic_dev_post_nop(&fx.a.dq, GPUNIC_DEV_SEND_SIGNALED);
	CHECK(idx >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(cqe.wqe_opcode, MLX5_OPCODE_NOP);
	CHECK_EQ(cqe.byte_cnt, 0);
	CHECK_EQ(cqe.wqe_idx, (uint32_t)idx);
	/* an unsignalled NOP: no CQE of its own; the SEND after it completes it */
	CHECK(gpunic_dev_post_nop(&fx.a.dq, 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	fx_settle(&fx, 2000000);
	CHECK(!gpunic_dev_poll_scq(&fx.a.dq, &cqe));
	CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &nc), 0);
	CHECK_EQ(nc.tx_frames, 0);	/* a NOP sends nothing */
	fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND, 100, 1);
	CHECK(gpunic_dev_sq_done(&fx.a.dq, (uint32_t)idx + 1));
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	fx_teardown(&fx);
}

TEST(rc_nop_signalled_and_unsignalled)
{
	nop_alone(GPUNIC_QPT_RC);
}

TEST(uc_nop_signalled_and_unsignalled)
{
	nop_alone(GPUNIC_QPT_UC);
}

/* NOPs behind outstanding requests complete after them, in order: WRITE, NOP, READ, NOP, FA,
 * NOP, each signalled, all posted before the engines run. */
TEST(rc_nop_behind_outstanding_requests)
{
	static const uint8_t ops[] = { MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_NOP,
				       MLX5_OPCODE_RDMA_READ, MLX5_OPCODE_NOP,
				       MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_NOP,
				       MLX5_OPCODE_NOP };
	const size_t n = sizeof(ops);
	struct gpunic_dev_cqe cqe;
	int64_t idx[sizeof(ops)];
	struct fixture fx;

	rc_setup(&fx, ATOMIC_RIGHTS);
	fx_fill(fx.b.buf + 65536, 5000, 3);
	*u64_at(&fx.b, TGT_OFF) = 0xAB;
	for (size_t i = 0; i < n; i++) {
		uint8_t f = GPUNIC_DEV_SEND_SIGNALED;

		switch (ops[i]) {
		case MLX5_OPCODE_RDMA_WRITE:
			idx[i] = gpunic_dev_post_send_sge(&fx.a.dq, ops[i], f, fx_va(&fx.a, 0),
							  3000, fx.a.mr->lkey,
							  fx_va(&fx.b, FX_DST_OFF), fx.b.mr->rkey,
							  0);
			break;
		case MLX5_OPCODE_RDMA_READ:
			idx[i] = gpunic_dev_post_send_sge(&fx.a.dq, ops[i], f,
							  fx_va(&fx.a, FX_DST_OFF), 5000,
							  fx.a.mr->lkey, fx_va(&fx.b, 65536),
							  fx.b.mr->rkey, 0);
			break;
		case MLX5_OPCODE_ATOMIC_FA:
			idx[i] = gpunic_dev_post_atomic_fa(&fx.a.dq, f, fx_va(&fx.a, RES_OFF),
							   fx.a.mr->lkey, fx_va(&fx.b, TGT_OFF),
							   fx.b.mr->rkey, 1);
			break;
		default:
			/* the last NOP unsignalled: the one before it completes it */
			idx[i] = gpunic_dev_post_nop(&fx.a.dq, i == n - 1 ? 0 : f);
			break;
		}
		CHECK(idx[i] >= 0);
	}
	CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
	for (size_t i = 0; i + 1 < n; i++) {
		CHECK(fx_wait_cqe(&fx, &fx.a, true, &cqe));
		if (cqe.opcode != MLX5_CQE_REQ)
			fx_dump(&fx);
		CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
		CHECK_EQ(cqe.wqe_opcode, ops[i]);
		CHECK_EQ(cqe.wqe_idx, (uint32_t)idx[i]);
	}
	fx_settle(&fx, 2000000);
	CHECK(!gpunic_dev_poll_scq(&fx.a.dq, &cqe));
	CHECK(fx_check(fx.a.buf + FX_DST_OFF, 5000, 3));
	CHECK_EQ(*u64_at(&fx.a, RES_OFF), 0xAB);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	fx_teardown(&fx);
}

/* ---------------------------------------------------------------- signalled put */

#define PUT_ROUNDS 30u
#define PUT_BYTES 100000u
#define PUT_FLAG_OFF 8192u
#define PUT_DATA_OFF (1u << 20)

struct put_recv {
	uint64_t *flag;
	const uint8_t *data;
	uint32_t checked;           /* rounds whose data the receiver found whole */
	uint32_t bad;
};

/* The receiver: wait for the flag to reach the round, then the whole WRITE must be there. */
static void *put_receiver(void *arg)
{
	struct put_recv *r = arg;
	uint64_t end = fx_now_ns() + 4 * FX_WAIT_NS;

	for (uint32_t round = 1; round <= PUT_ROUNDS; round++) {
		while (__atomic_load_n(r->flag, __ATOMIC_ACQUIRE) < round) {
			if (fx_now_ns() > end)
				return NULL;
			sched_yield();
		}
		if (!fx_check(r->data, PUT_BYTES, round))
			r->bad++;
		__atomic_store_n(&r->checked, round, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * A "signalled put": a multi-packet RDMA WRITE, then a fetch-and-add of 1 on a flag word, both
 * posted back to back (the WRITE unsignalled). A thread at the target polls the flag and, once
 * it moves, finds every byte of the WRITE: RC executes in order and the atomic orders the
 * WRITE's stores before itself. The engines run on their own threads.
 */
TEST(rc_signalled_put)
{
	struct put_recv rcv = { 0 };
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	struct gpunic_dev_cqe cqe;
	struct fixture fx;
	pthread_t thr;

	rc_setup(&fx, ATOMIC_RIGHTS);
	rcv.flag = u64_at(&fx.b, PUT_FLAG_OFF);
	rcv.data = fx.b.buf + PUT_DATA_OFF;
	CHECK_EQ(gpunic_nic_start(fx.a.nic, -1), 0);
	CHECK_EQ(gpunic_nic_start(fx.b.nic, -1), 0);
	CHECK_EQ(pthread_create(&thr, NULL, put_receiver, &rcv), 0);
	for (uint32_t round = 1; round <= PUT_ROUNDS; round++) {
		uint64_t end = fx_now_ns() + FX_WAIT_NS;

		fx_fill(fx.a.buf, PUT_BYTES, round);
		CHECK(gpunic_dev_post_send_sge(&fx.a.dq, MLX5_OPCODE_RDMA_WRITE, 0,
					       fx_va(&fx.a, 0), PUT_BYTES, fx.a.mr->lkey,
					       fx_va(&fx.b, PUT_DATA_OFF), fx.b.mr->rkey,
					       0) >= 0);
		/* the flag through the generic post, as third-party code would */
		gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_FA, GPUNIC_DEV_SEND_SIGNALED,
				     fx_va(&fx.a, RES_OFF), fx.a.mr->lkey,
				     fx_va(&fx.b, PUT_FLAG_OFF), fx.b.mr->rkey, 1, 0);
		CHECK(gpunic_dev_post_send(&fx.a.dq, &wr) >= 0);
		CHECK_EQ(gpunic_dev_submit(&fx.a.dq), 0);
		while (!gpunic_dev_poll_scq(&fx.a.dq, &cqe)) {
			CHECK(fx_now_ns() < end);
			sched_yield();
		}
		expect_atomic_ok(&cqe, &fx.a, MLX5_OPCODE_ATOMIC_FA);
		CHECK_EQ(*u64_at(&fx.a, RES_OFF), round - 1);
		/* the next round overwrites the data: only once the receiver has looked */
		while (__atomic_load_n(&rcv.checked, __ATOMIC_ACQUIRE) < round) {
			CHECK(fx_now_ns() < end);
			sched_yield();
		}
	}
	CHECK_EQ(pthread_join(thr, NULL), 0);
	CHECK_EQ(gpunic_nic_stop(fx.a.nic), 0);
	CHECK_EQ(gpunic_nic_stop(fx.b.nic), 0);
	CHECK_EQ(rcv.checked, PUT_ROUNDS);
	CHECK_EQ(rcv.bad, 0);
	fx_teardown(&fx);
}
