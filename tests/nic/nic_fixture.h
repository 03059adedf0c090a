/* SPDX-License-Identifier: MIT */
/*
 * Two-endpoint fixture for the NIC tests, in the spirit of rdma-core's create_players: two NICs
 * joined by a link, a QP on each connected to the other, one registered buffer each whose
 * address and rkey the other side knows. Work is posted and completions are polled through
 * gpunic_dev.h (the CPU executor); the engines are driven inline by pump(), so the tests are
 * deterministic and need no extra cores.
 */
#ifndef GPUNIC_TEST_NIC_FIXTURE_H
#define GPUNIC_TEST_NIC_FIXTURE_H

#include <sys/mman.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/gpunic_dev.h"
#include "gpunic/verbs.h"
#include "harness.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define GUARD_BYTES 64
#define GUARD_VALUE 0xA5
#define FX_BUF_BYTES ((2u << 20) + 4096)
#define FX_WAIT_NS (10ull * 1000000000ull)

enum fx_link {
	FX_LINK_SHM,
	FX_LINK_UDP,
	FX_LINK_DGRAM,
};

struct player {
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	uint8_t *mem;           /* guard | buf | guard */
	uint8_t *buf;
	struct gpunic_mr *mr;
	uint32_t ip;
	uint8_t mac[6];
	uint16_t port;
	uint32_t psn;
};

struct fx_opts {
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;
	uint32_t psn_a;
	uint32_t psn_b;
	bool cqe_scatter;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_inline;
	uint32_t cqe;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	unsigned access;        /* QP and MR remote rights */
	const struct gpunic_impair_attr *impair;
	enum gpunic_handler_mode mode;
	struct gpunic_mem *mem_a;   /* set: player a's queues are placed for a GPU executor */
};

struct fixture {
	struct player a;
	struct player b;
	struct fx_opts o;
};

static inline uint64_t fx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint16_t fx_port(unsigned i)
{
	return (uint16_t)(20000u + (unsigned)getpid() % 5000u * 8u + (i & 7u));
}

static inline uint8_t fx_pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
}

static inline void fx_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = fx_pattern(seed, i);
}

static inline bool fx_check(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != fx_pattern(seed, i))
			return false;
	return true;
}

static inline bool fx_guards_ok(const struct player *p)
{
	for (size_t i = 0; i < GUARD_BYTES; i++)
		if (p->mem[i] != GUARD_VALUE ||
		    p->mem[GUARD_BYTES + FX_BUF_BYTES + i] != GUARD_VALUE)
			return false;
	return true;
}

static inline void fx_links(enum fx_link kind, struct gpunic_link **la, struct gpunic_link **lb,
			    uint16_t *pa, uint16_t *pb)
{
	static unsigned seq;
	char name[64];

	*pa = 0;
	*pb = 0;
	switch (kind) {
	case FX_LINK_SHM: {
		struct gpunic_shm_link_attr sa = { .end = GPUNIC_SHM_END_A, .slots = 1024,
						   .create = 1 };

		snprintf(name, sizeof(name), "/gpunic-nictest-%d-%u", (int)getpid(), seq++);
		sa.name = name;
		/* A name is ours alone: one left by a crashed run of a process with our pid goes,
		 * and once both ends are attached the name goes too, so a failing test leaves
		 * nothing in /dev/shm. */
		shm_unlink(name);
		*la = gpunic_link_shm_open(&sa);
		CHECK(*la);
		sa.end = GPUNIC_SHM_END_B;
		sa.create = 0;
		*lb = gpunic_link_shm_open(&sa);
		CHECK(*lb);
		shm_unlink(name);
		break;
	}
	case FX_LINK_UDP: {
		struct gpunic_udp_link_attr ua = { .local_ip = IP4(127, 0, 0, 1),
						   .local_port = fx_port(0),
						   .local_mac = { 2, 0, 0, 0, 0, 1 },
						   .peer_mac = { 2, 0, 0, 0, 0, 2 } };

		*la = gpunic_link_udp_open(&ua);
		if (!*la)
			SKIP("udp link: %s", strerror(errno));
		ua.local_ip = IP4(127, 0, 0, 2);
		ua.local_port = fx_port(1);
		memcpy(ua.local_mac, (uint8_t[6]){ 2, 0, 0, 0, 0, 2 }, 6);
		memcpy(ua.peer_mac, (uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 6);
		*lb = gpunic_link_udp_open(&ua);
		if (!*lb)
			SKIP("udp link on 127.0.0.2: %s", strerror(errno));
		*pa = fx_port(0);
		*pb = fx_port(1);
		break;
	}
	case FX_LINK_DGRAM: {
		struct gpunic_dgram_link_attr da = { .local_ip = IP4(127, 0, 0, 1),
						     .local_port = fx_port(2),
						     .remote_ip = IP4(127, 0, 0, 1),
						     .remote_port = fx_port(3) };

		*la = gpunic_link_dgram_open(&da);
		CHECK(*la);
		da.local_port = fx_port(3);
		da.remote_port = fx_port(2);
		*lb = gpunic_link_dgram_open(&da);
		CHECK(*lb);
		break;
	}
	}
}

static inline void player_open(struct player *p, struct gpunic_link *link, uint32_t ip,
			       uint8_t last_mac, uint16_t port, const struct fx_opts *o)
{
	struct gpunic_nic_attr na = { .link = link, .ip = ip, .udp_port = port,
				      .mac = { 2, 0, 0, 0, 0, last_mac } };

	if (o->mem_a && last_mac == 1) {
		na.executor = GPUNIC_EXECUTOR_GPU;
		na.mem = o->mem_a;
	}
	unsigned access = o->access ? o->access :
		GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ;

	p->ip = ip;
	p->port = port;
	memcpy(p->mac, na.mac, 6);
	p->nic = gpunic_nic_open(&na);
	CHECK(p->nic);
	p->pd = gpunic_pd_alloc(p->nic);
	CHECK(p->pd);
	p->scq = gpunic_cq_create(p->nic, o->cqe ? o->cqe : 256);
	p->rcq = gpunic_cq_create(p->nic, o->cqe ? o->cqe : 256);
	CHECK(p->scq && p->rcq);
	p->mem = malloc(FX_BUF_BYTES + 2 * GUARD_BYTES);
	CHECK(p->mem);
	memset(p->mem, GUARD_VALUE, FX_BUF_BYTES + 2 * GUARD_BYTES);
	p->buf = p->mem + GUARD_BYTES;
	memset(p->buf, 0, FX_BUF_BYTES);
	p->mr = gpunic_mr_reg(p->pd, p->buf, FX_BUF_BYTES, access | GPUNIC_ACCESS_LOCAL_WRITE);
	CHECK(p->mr);
}

static inline struct gpunic_qp *player_qp(struct player *p, const struct fx_opts *o)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = o->type,
		.send_cq = p->scq,
		.recv_cq = p->rcq,
		.max_send_wr = o->max_send_wr ? o->max_send_wr : 64,
		.max_recv_wr = o->max_recv_wr ? o->max_recv_wr : 64,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_inline_data = o->max_inline ? o->max_inline : 64,
		.cqe_scatter = o->cqe_scatter,
		.handler_mode = o->mode,
	};
	struct gpunic_qp *qp = gpunic_qp_create(p->pd, &ia);

	CHECK(qp);
	return qp;
}

static inline void qp_to_rts(struct gpunic_qp *qp, const struct player *me,
			     const struct player *peer, uint32_t peer_qpn, const struct fx_opts *o)
{
	struct gpunic_qp_attr at = { 0 };
	unsigned mask;
	bool rc = o->type == GPUNIC_QPT_RC;

	at.qp_state = GPUNIC_QPS_INIT;
	at.qp_access_flags = o->access ? o->access :
		GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ;
	CHECK_EQ(gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS), 0);

	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = o->mtu ? o->mtu : GPUNIC_MTU_1024;
	at.dest_qp_num = peer_qpn;
	at.rq_psn = peer->psn;
	at.remote_ip = peer->ip;
	memcpy(at.remote_mac, peer->mac, 6);
	at.remote_udp_port = peer->port;
	/* a kernel UDP socket sends from the port it is bound to */
	at.src_udp_port = me->port;
	at.max_dest_rd_atomic = 16;
	at.min_rnr_timer = o->min_rnr_timer ? o->min_rnr_timer : 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	CHECK_EQ(gpunic_qp_modify(qp, &at, mask), 0);

	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = me->psn;
	at.timeout = o->timeout ? o->timeout : 12;
	at.retry_cnt = o->retry_cnt ? o->retry_cnt : 7;
	at.rnr_retry = o->rnr_retry ? o->rnr_retry : 7;
	at.max_rd_atomic = 16;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	CHECK_EQ(gpunic_qp_modify(qp, &at, mask), 0);
}

static inline void fx_setup(struct fixture *fx, enum fx_link kind, const struct fx_opts *o)
{
	bool udp = kind == FX_LINK_UDP;
	struct gpunic_link *la, *lb;
	uint16_t pa, pb;

	memset(fx, 0, sizeof(*fx));
	fx->o = *o;
	fx_links(kind, &la, &lb, &pa, &pb);
	if (o->impair) {
		struct gpunic_impair_attr ib = *o->impair;

		ib.seed ^= 0x9E3779B97F4A7C15ull;
		la = gpunic_link_impair_open(la, o->impair);
		lb = gpunic_link_impair_open(lb, &ib);
		CHECK(la && lb);
	}
	/* the udp link binds real loopback addresses; the others carry any */
	player_open(&fx->a, la, udp ? IP4(127, 0, 0, 1) : IP4(10, 0, 0, 1), 1, pa, o);
	player_open(&fx->b, lb, udp ? IP4(127, 0, 0, 2) : IP4(10, 0, 0, 2), 2, pb, o);
	fx->a.psn = o->psn_a;
	fx->b.psn = o->psn_b;
	fx->a.qp = player_qp(&fx->a, o);
	fx->b.qp = player_qp(&fx->b, o);
	qp_to_rts(fx->a.qp, &fx->a, &fx->b, fx->b.qp->qp_num, o);
	qp_to_rts(fx->b.qp, &fx->b, &fx->a, fx->a.qp->qp_num, o);
	CHECK_EQ(gpunic_qp_export(fx->a.qp, &fx->a.dq), 0);
	CHECK_EQ(gpunic_qp_export(fx->b.qp, &fx->b.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->a.dq), 0);
	CHECK_EQ(gpunic_dev_qp_check(&fx->b.dq), 0);
}

static inline void fx_teardown(struct fixture *fx)
{
	CHECK(fx_guards_ok(&fx->a));
	CHECK(fx_guards_ok(&fx->b));
	CHECK_EQ(gpunic_nic_close(fx->a.nic), 0);
	CHECK_EQ(gpunic_nic_close(fx->b.nic), 0);
	free(fx->a.mem);
	free(fx->b.mem);
}

static inline int pump(struct fixture *fx)
{
	return gpunic_nic_poll(fx->a.nic, 64) + gpunic_nic_poll(fx->b.nic, 64);
}

static inline void fx_dump_player(const char *who, struct player *p)
{
	struct gpunic_nic_counters nc;
	struct gpunic_qp_counters qc;

	gpunic_nic_query_counters(p->nic, &nc);
	fprintf(stderr, "%s: rx %llu tx %llu busy %llu", who, (unsigned long long)nc.rx_frames,
		(unsigned long long)nc.tx_frames, (unsigned long long)nc.tx_busy);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (nc.drops[i])
			fprintf(stderr, " %s=%llu", gpunic_drop_reason_name(i),
				(unsigned long long)nc.drops[i]);
	for (int i = 0; i < GPUNIC_WIRE_ERR_MAX; i++)
		if (nc.wire_errs[i])
			fprintf(stderr, " wire:%s=%llu", gpunic_wire_err_name(i),
				(unsigned long long)nc.wire_errs[i]);
	if (p->qp && !gpunic_qp_query_counters(p->qp, &qc))
		fprintf(stderr,
			" | qp %s tx %llu rx %llu retx %llu to %llu ack %llu/%llu nak %llu/%llu",
			gpunic_qp_state_name(p->qp->state), (unsigned long long)qc.tx_packets,
			(unsigned long long)qc.rx_packets, (unsigned long long)qc.retransmits,
			(unsigned long long)qc.timeouts, (unsigned long long)qc.acks_sent,
			(unsigned long long)qc.acks_received, (unsigned long long)qc.naks_sent,
			(unsigned long long)qc.naks_received);
	fputc('\n', stderr);
}

static inline void fx_dump(struct fixture *fx)
{
	fx_dump_player("a", &fx->a);
	fx_dump_player("b", &fx->b);
}

/* Pump both engines until a CQE arrives on @p's send (@send) or receive CQ. */
static inline bool fx_wait_cqe(struct fixture *fx, struct player *p, bool send,
			       struct gpunic_dev_cqe *cqe)
{
	uint64_t end = fx_now_ns() + FX_WAIT_NS;

	for (;;) {
		if (send ? gpunic_dev_poll_scq(&p->dq, cqe) : gpunic_dev_poll_rcq(&p->dq, cqe))
			return true;
		if (!pump(fx) && fx_now_ns() > end) {
			fx_dump(fx);
			return false;
		}
	}
}

/* Pump for a while with nothing expected (lets timers and stragglers play out). */
static inline void fx_settle(struct fixture *fx, uint64_t ns)
{
	uint64_t end = fx_now_ns() + ns;

	while (fx_now_ns() < end)
		if (!pump(fx))
			sched_yield();
}

static inline uint64_t fx_va(const struct player *p, size_t off)
{
	return (uint64_t)(uintptr_t)(p->buf + off);
}

static inline int64_t fx_post(struct player *p, uint8_t opcode, uint8_t flags, size_t loff,
			      uint32_t len, const struct player *peer, size_t roff, uint32_t imm)
{
	int64_t r = gpunic_dev_post_send_sge(&p->dq, opcode, flags, fx_va(p, loff), len,
					     p->mr->lkey, fx_va(peer, roff), peer->mr->rkey, imm);

	if (r >= 0)
		CHECK_EQ(gpunic_dev_submit(&p->dq), 0);
	return r;
}

static inline void fx_post_recv(struct player *p, size_t off, uint32_t len)
{
	struct gpunic_dev_sge sge = { .addr = fx_va(p, off), .length = len, .lkey = p->mr->lkey };

	CHECK(gpunic_dev_post_recv(&p->dq, &sge, len ? 1 : 0) >= 0);
}

#define FX_DST_OFF ((1u << 20) + 8)
#define FX_IMM(seed) (0x11223344u ^ (seed) * 2654435761u)

static inline uint8_t fx_cqe_op(uint8_t opcode)
{
	switch (opcode) {
	case MLX5_OPCODE_SEND:
		return MLX5_CQE_RESP_SEND;
	case MLX5_OPCODE_SEND_IMM:
		return MLX5_CQE_RESP_SEND_IMM;
	default:
		return MLX5_CQE_RESP_WR_IMM;
	}
}

/*
 * One message from @s to @d (for READ: @s reads @d's bytes): post it, wait for the completions
 * it produces, check their fields and the data, and that nothing past the message was touched.
 */
static inline void fx_xfer(struct fixture *fx, struct player *s, struct player *d, uint8_t op,
			   uint32_t len, uint32_t seed)
{
	bool read = op == MLX5_OPCODE_RDMA_READ;
	struct player *src = read ? d : s, *dst = read ? s : d;
	bool recv = op == MLX5_OPCODE_SEND || op == MLX5_OPCODE_SEND_IMM ||
		    op == MLX5_OPCODE_RDMA_WRITE_IMM;
	bool imm = op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;
	struct gpunic_dev_cqe cqe;
	const uint8_t *got = dst->buf + FX_DST_OFF;
	uint64_t end;

	fx_fill(src->buf, len, seed);
	memset(dst->buf + FX_DST_OFF, 0, (size_t)len + 16);
	if (op == MLX5_OPCODE_RDMA_WRITE_IMM)
		fx_post_recv(d, 0, 0);	/* zero-length receive: only the immediate arrives */
	else if (recv)
		fx_post_recv(d, FX_DST_OFF, len + 16);
	if (read)
		CHECK(gpunic_dev_post_send_sge(&s->dq, op, GPUNIC_DEV_SEND_SIGNALED,
					       fx_va(s, FX_DST_OFF), len, s->mr->lkey,
					       fx_va(d, 0), d->mr->rkey, 0) >= 0);
	else
		CHECK(gpunic_dev_post_send_sge(&s->dq, op, GPUNIC_DEV_SEND_SIGNALED, fx_va(s, 0),
					       len, s->mr->lkey, fx_va(d, FX_DST_OFF),
					       d->mr->rkey, imm ? FX_IMM(seed) : 0) >= 0);
	CHECK_EQ(gpunic_dev_submit(&s->dq), 0);
	CHECK(fx_wait_cqe(fx, s, true, &cqe));
	if (cqe.opcode != MLX5_CQE_REQ) {
		fprintf(stderr, "send CQE error: syndrome 0x%x op %u len %u\n", cqe.syndrome, op,
			len);
		fx_dump(fx);
	}
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(cqe.wqe_opcode, op);
	CHECK_EQ(cqe.qpn, s->qp->qp_num);
	if (read)
		CHECK_EQ(cqe.byte_cnt, len);
	if (recv) {
		CHECK(fx_wait_cqe(fx, d, false, &cqe));
		CHECK_EQ(cqe.opcode, fx_cqe_op(op));
		CHECK_EQ(cqe.byte_cnt, len);
		CHECK_EQ(cqe.qpn, d->qp->qp_num);
		if (imm)
			CHECK_EQ(cqe.imm, FX_IMM(seed));
		if (cqe.data_in_cqe) {
			CHECK(len <= 32 && fx->o.cqe_scatter);
			got = cqe.data;
		} else {
			CHECK(!(fx->o.cqe_scatter && len <= 32 &&
				op != MLX5_OPCODE_RDMA_WRITE_IMM));
		}
	}
	/* UC WRITE: nothing tells the receiver; wait for the bytes themselves */
	end = fx_now_ns() + FX_WAIT_NS;
	while (!fx_check(got, len, seed) && fx_now_ns() < end)
		pump(fx);
	CHECK(fx_check(got, len, seed));
	for (int i = 0; i < 16; i++)
		CHECK_EQ(dst->buf[FX_DST_OFF + len + i], 0);
}

static inline void fx_matrix_psn(enum gpunic_qp_type type, enum gpunic_mtu mtu, bool scatter,
				 enum fx_link link, uint32_t psn)
{
	static const uint8_t ops[] = { MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
				       MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
				       MLX5_OPCODE_RDMA_READ };
	struct fx_opts o = { .type = type, .mtu = mtu, .psn_a = psn, .psn_b = psn ^ 0x5A5A,
			     .cqe_scatter = scatter };
	uint32_t pmtu = gpunic_mtu_bytes(mtu);
	const uint32_t sizes[] = { 0, 1, pmtu - 1, pmtu, pmtu + 1, 1u << 20 };
	unsigned nops = type == GPUNIC_QPT_RC ? 5 : 4;
	struct fixture fx;
	uint32_t seed = 1;

	fx_setup(&fx, link, &o);
	for (int dir = 0; dir < 2; dir++)
		for (unsigned op = 0; op < nops; op++)
			for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				fx_xfer(&fx, dir ? &fx.b : &fx.a, dir ? &fx.a : &fx.b, ops[op],
					sizes[s], seed++);
	fx_teardown(&fx);
}

static inline void fx_matrix(enum gpunic_qp_type type, enum gpunic_mtu mtu, bool scatter)
{
	fx_matrix_psn(type, mtu, scatter, FX_LINK_SHM, 0x123);
}

#endif
