// SPDX-License-Identifier: MIT
/*
 * A gpunic endpoint for hostile-peer tests (hostile.py drives it).
 *
 * NIC T listens on a dgram link at 127.0.0.1:PORT, the wire anyone can write frames to (one
 * Ethernet frame per UDP datagram). It has
 *  - three QPs connected to an "attacker" address (10.0.0.66) in their own PD, which was granted
 *    one region (remote write + read) and one read-only region: hr (RC), hu (UC) and hn (RC
 *    without remote read);
 *  - two QPs (RC and UC) connected to a second NIC L in this process, on a dgram link at
 *    127.0.0.1:PEER_PORT, which streams SEND_IMM messages to T all the time; T checks each one
 *    (order, length, bytes).
 * Every region has guard bytes on both sides; the regions nobody may write are compared with
 * their first contents.
 *
 * Protocol: one JSON line on stdout at start (addresses, QPNs, PSNs, keys, regions), then one
 * command per stdin line, each answered by one JSON line:
 *   stats         counters (NIC drops by reason, wire errors, per-QP drops and states), guard
 *                 status and the legitimate traffic's tallies
 *   rearm         every attacker QP back to RTS at its first PSN (RC ones die on violations)
 *   quit          final stats, then exit (0 if guards held and legit traffic had no error)
 *
 * Usage: hostile_target PORT PEER_PORT
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/verbs.h>

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define T_IP IP4(10, 0, 0, 1)
#define L_IP IP4(10, 0, 0, 2)
#define A_IP IP4(10, 0, 0, 66)
#define A_QPN 0x66u
#define GUARD 64u
#define GUARD_BYTE 0xA5
#define GRANT_BYTES 65536u
#define RO_BYTES 4096u
#define SECRET_BYTES 4096u
#define ARECV_BYTES 1024u
#define ARECVS 8u
#define LRECV_BYTES 64u
#define LRECVS 64u
#define LEGIT_OUTSTANDING 16u
#define LEGIT_GAP_NS 50000ull     /* one legit message per QP every 50 us at most */

#define DIE(...)                                        \
	do {                                            \
		fprintf(stderr, "hostile_target: ");    \
		fprintf(stderr, __VA_ARGS__);           \
		fputc('\n', stderr);                    \
		exit(2);                                \
	} while (0)
#define MUST(cond)                                                   \
	do {                                                         \
		if (!(cond))                                         \
			DIE("%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

struct region {
	uint8_t *mem;
	uint8_t *buf;
	size_t len;
	struct gpunic_mr *mr;
	uint8_t *copy;          /* regions nobody may write: their first contents */
};

struct tqp {
	const char *name;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	enum gpunic_qp_type type;
	unsigned access;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t peer_ip;
	uint32_t dest_qpn;
	struct region *rx;      /* where its receive buffers are */
	size_t rx_off;
	uint32_t rx_bytes;
	uint32_t nrecv;
};

enum { HR, HU, HN, LRC, LUC, NTQP };

static struct {
	struct gpunic_link *tlink;
	struct gpunic_nic *t, *l;
	struct region grant, ro, secret, alocal, llocal, lsrc;
	struct tqp q[NTQP];
	struct tqp lq[2];       /* L's ends of LRC and LUC */
	uint32_t sent[2], acked[2], next[2];
	uint64_t ok[2], bad[2], send_err;
	uint64_t next_post_ns[2];
} S;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- regions */

static void region_alloc(struct region *r, struct gpunic_pd *pd, size_t len, unsigned access,
			 bool frozen, uint8_t fill)
{
	r->len = len;
	r->mem = malloc(len + 2 * GUARD);
	MUST(r->mem);
	memset(r->mem, GUARD_BYTE, len + 2 * GUARD);
	r->buf = r->mem + GUARD;
	for (size_t i = 0; i < len; i++)
		r->buf[i] = (uint8_t)(fill + i * 13);
	r->mr = gpunic_mr_reg(pd, r->buf, len, access);
	MUST(r->mr);
	if (frozen) {
		r->copy = malloc(len);
		MUST(r->copy);
		memcpy(r->copy, r->buf, len);
	}
}

static bool region_ok(const struct region *r)
{
	for (size_t i = 0; i < GUARD; i++)
		if (r->mem[i] != GUARD_BYTE || r->buf[r->len + i] != GUARD_BYTE)
			return false;
	return !r->copy || !memcmp(r->copy, r->buf, r->len);
}

static bool guards_ok(void)
{
	return region_ok(&S.grant) && region_ok(&S.ro) && region_ok(&S.secret) &&
	       region_ok(&S.alocal) && region_ok(&S.llocal) && region_ok(&S.lsrc);
}

static uint64_t va(const struct region *r, size_t off)
{
	return (uint64_t)(uintptr_t)(r->buf + off);
}

/* ---------------------------------------------------------------- QPs */

static void qp_rts(struct tqp *q, const uint8_t *peer_mac)
{
	struct gpunic_qp_attr at = { 0 };
	bool rc = q->type == GPUNIC_QPT_RC;
	unsigned mask;

	at.qp_state = GPUNIC_QPS_INIT;
	at.qp_access_flags = q->access;
	MUST(!gpunic_qp_modify(q->qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS));
	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = GPUNIC_MTU_1024;
	at.dest_qp_num = q->dest_qpn;
	at.rq_psn = q->rq_psn;
	at.remote_ip = q->peer_ip;
	memcpy(at.remote_mac, peer_mac, 6);
	at.max_dest_rd_atomic = 4;
	at.min_rnr_timer = 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	MUST(!gpunic_qp_modify(q->qp, &at, mask));
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = q->sq_psn;
	at.timeout = 12;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 4;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	MUST(!gpunic_qp_modify(q->qp, &at, mask));
}

static void qp_new(struct tqp *q, struct gpunic_nic *nic, struct gpunic_pd *pd)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = q->type,
		.send_cq = gpunic_cq_create(nic, 256),
		.recv_cq = gpunic_cq_create(nic, 256),
		.max_send_wr = 64,
		.max_recv_wr = 64,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = 64,
	};

	MUST(ia.send_cq && ia.recv_cq);
	q->qp = gpunic_qp_create(pd, &ia);
	MUST(q->qp);
}

static void qp_up(struct tqp *q, const uint8_t *peer_mac)
{
	qp_rts(q, peer_mac);
	MUST(!gpunic_qp_export(q->qp, &q->dq));
}

static void post_recv(struct tqp *q, uint32_t k)
{
	struct gpunic_dev_sge sge = { .addr = va(q->rx, q->rx_off + (size_t)k * q->rx_bytes),
				      .length = q->rx_bytes, .lkey = q->rx->mr->lkey };

	MUST(gpunic_dev_post_recv(&q->dq, &sge, 1) >= 0);
}

static void post_recvs(struct tqp *q)
{
	for (uint32_t k = 0; k < q->nrecv; k++)
		post_recv(q, k);
}

/* RESET -> RTS at the first PSNs; the CQs go on, so their consumer counters (kept in the QP's
 * data-path state, which RESET zeroes) are carried over. */
static void rearm(struct tqp *q)
{
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_RESET };
	struct gpunic_dev_cqe cqe;
	uint32_t scq_ci, rcq_ci;

	while (gpunic_dev_poll_scq(&q->dq, &cqe) || gpunic_dev_poll_rcq(&q->dq, &cqe))
		;
	scq_ci = q->dq.state->scq_ci;
	rcq_ci = q->dq.state->rcq_ci;
	MUST(!gpunic_qp_modify(q->qp, &at, GPUNIC_QP_STATE));
	q->dq.state->scq_ci = scq_ci;
	q->dq.state->rcq_ci = rcq_ci;
	qp_rts(q, (uint8_t[6]){ 2, 0, 0, 0, 0, 0x66 });
	post_recvs(q);
}

/* ---------------------------------------------------------------- legitimate traffic */

static uint32_t legit_len(uint32_t seq)
{
	return 8 + seq % 56;
}

static uint8_t legit_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + 3u);
}

static int legit_step(uint64_t now)
{
	struct gpunic_dev_cqe cqe;
	int work = 0;

	for (int k = 0; k < 2; k++) {
		struct tqp *src = &S.lq[k], *dst = &S.q[LRC + k];

		while (gpunic_dev_poll_scq(&src->dq, &cqe)) {
			if (cqe.opcode != MLX5_CQE_REQ)
				S.send_err++;
			S.acked[k]++;
			work++;
		}
		if (S.sent[k] - S.acked[k] < LEGIT_OUTSTANDING && now >= S.next_post_ns[k]) {
			uint32_t seq = S.sent[k], len = legit_len(seq);
			uint8_t *p = S.lsrc.buf + (size_t)(seq % LEGIT_OUTSTANDING) * 64 + k * 1024;

			for (uint32_t i = 0; i < len; i++)
				p[i] = legit_byte(seq, i);
			MUST(gpunic_dev_post_send_sge(&src->dq, MLX5_OPCODE_SEND_IMM,
						      GPUNIC_DEV_SEND_SIGNALED,
						      (uint64_t)(uintptr_t)p, len,
						      S.lsrc.mr->lkey, 0, 0, seq) >= 0);
			MUST(!gpunic_dev_submit(&src->dq));
			S.sent[k]++;
			S.next_post_ns[k] = now + LEGIT_GAP_NS;
			work++;
		}
		while (gpunic_dev_poll_rcq(&dst->dq, &cqe)) {
			uint32_t slot = cqe.wqe_idx % dst->nrecv;
			const uint8_t *got = dst->rx->buf + dst->rx_off +
					     (size_t)slot * dst->rx_bytes;
			bool good = cqe.opcode == MLX5_CQE_RESP_SEND_IMM &&
				    cqe.byte_cnt == legit_len(cqe.imm) &&
				    (k == 1 ? cqe.imm >= S.next[k] : cqe.imm == S.next[k]);

			for (uint32_t i = 0; good && i < cqe.byte_cnt; i++)
				good = got[i] == legit_byte(cqe.imm, i);
			if (good) {
				S.ok[k]++;
				S.next[k] = cqe.imm + 1;
			} else {
				S.bad[k]++;
			}
			post_recv(dst, slot);
			work++;
		}
	}
	return work;
}

/* Attacker QPs: take whatever completions the attacks caused and give receives back. */
static void attacker_step(void)
{
	struct gpunic_dev_cqe cqe;

	for (int i = HR; i <= HN; i++) {
		struct tqp *q = &S.q[i];

		while (gpunic_dev_poll_scq(&q->dq, &cqe))
			;
		while (gpunic_dev_poll_rcq(&q->dq, &cqe))
			if (q->qp->state == GPUNIC_QPS_RTS)
				post_recv(q, cqe.wqe_idx % q->nrecv);
	}
}

/* ---------------------------------------------------------------- reports */

static void print_drops(const uint64_t *drops)
{
	bool first = true;

	putchar('{');
	for (int i = 0; i < GPUNIC_DROP_MAX; i++) {
		printf("%s\"%s\":%llu", first ? "" : ",", gpunic_drop_reason_name(i),
		       (unsigned long long)drops[i]);
		first = false;
	}
	putchar('}');
}

static void print_stats(void)
{
	struct gpunic_nic_counters c;

	MUST(!gpunic_nic_query_counters(S.t, &c));
	printf("{\"guards_ok\":%s,\"rx_frames\":%llu,\"tx_frames\":%llu,\"link_rx_errors\":%llu,"
	       "\"drops\":",
	       guards_ok() ? "true" : "false", (unsigned long long)c.rx_frames,
	       (unsigned long long)c.tx_frames, (unsigned long long)S.tlink->stats.rx_errors);
	print_drops(c.drops);
	printf(",\"wire\":{");
	for (int i = 0; i < GPUNIC_WIRE_ERR_MAX; i++)
		printf("%s\"%s\":%llu", i ? "," : "", gpunic_wire_err_name(i),
		       (unsigned long long)c.wire_errs[i]);
	printf("},\"qps\":{");
	for (int i = 0; i < NTQP; i++) {
		struct gpunic_qp_counters qc;

		MUST(!gpunic_qp_query_counters(S.q[i].qp, &qc));
		printf("%s\"%s\":{\"state\":\"%s\",\"rx_messages\":%llu,\"naks_sent\":%llu,"
		       "\"drops\":",
		       i ? "," : "", S.q[i].name, gpunic_qp_state_name(S.q[i].qp->state),
		       (unsigned long long)qc.rx_messages, (unsigned long long)qc.naks_sent);
		print_drops(qc.drops);
		putchar('}');
	}
	printf("},\"legit\":{\"rc_sent\":%u,\"rc_ok\":%llu,\"rc_bad\":%llu,\"uc_sent\":%u,"
	       "\"uc_ok\":%llu,\"uc_bad\":%llu,\"send_errors\":%llu,\"l_rc_state\":\"%s\","
	       "\"l_uc_state\":\"%s\"}}\n",
	       S.sent[0], (unsigned long long)S.ok[0], (unsigned long long)S.bad[0], S.sent[1],
	       (unsigned long long)S.ok[1], (unsigned long long)S.bad[1],
	       (unsigned long long)S.send_err, gpunic_qp_state_name(S.lq[0].qp->state),
	       gpunic_qp_state_name(S.lq[1].qp->state));
	fflush(stdout);
}

static void print_info(uint16_t port)
{
	printf("{\"port\":%u,\"t_ip\":\"10.0.0.1\",\"t_mac\":\"02:00:00:00:00:01\","
	       "\"a_ip\":\"10.0.0.66\",\"l_ip\":\"10.0.0.2\",\"qps\":{",
	       port);
	for (int i = 0; i < NTQP; i++)
		printf("%s\"%s\":{\"qpn\":%u,\"rq_psn\":%u}", i ? "," : "", S.q[i].name,
		       S.q[i].qp->qp_num, S.q[i].rq_psn);
	printf("},\"grant\":{\"va\":%llu,\"len\":%zu,\"rkey\":%u},"
	       "\"ro\":{\"va\":%llu,\"len\":%zu,\"rkey\":%u},"
	       "\"secret\":{\"va\":%llu,\"len\":%zu,\"rkey\":%u},"
	       "\"alocal\":{\"va\":%llu,\"len\":%zu,\"rkey\":%u},\"arecv_bytes\":%u}\n",
	       (unsigned long long)va(&S.grant, 0), S.grant.len, S.grant.mr->rkey,
	       (unsigned long long)va(&S.ro, 0), S.ro.len, S.ro.mr->rkey,
	       (unsigned long long)va(&S.secret, 0), S.secret.len, S.secret.mr->rkey,
	       (unsigned long long)va(&S.alocal, 0), S.alocal.len, S.alocal.mr->rkey, ARECV_BYTES);
	fflush(stdout);
}

/* ---------------------------------------------------------------- setup and loop */

static struct gpunic_nic *nic_on(uint16_t port, uint16_t remote, uint32_t ip, uint8_t mac_last,
				 struct gpunic_link **linkp)
{
	struct gpunic_dgram_link_attr da = { .local_ip = IP4(127, 0, 0, 1), .local_port = port,
					     .remote_ip = IP4(127, 0, 0, 1),
					     .remote_port = remote };
	struct gpunic_nic_attr na = { .ip = ip, .mac = { 2, 0, 0, 0, 0, mac_last } };
	struct gpunic_nic *nic;

	na.link = gpunic_link_dgram_open(&da);
	if (!na.link)
		DIE("dgram link on port %u: %s", port, strerror(errno));
	nic = gpunic_nic_open(&na);
	MUST(nic);
	if (linkp)
		*linkp = na.link;
	return nic;
}

static void setup(uint16_t port, uint16_t peer_port)
{
	const unsigned rwr = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			     GPUNIC_ACCESS_REMOTE_READ;
	const uint8_t amac[6] = { 2, 0, 0, 0, 0, 0x66 }, lmac[6] = { 2, 0, 0, 0, 0, 2 },
		      tmac[6] = { 2, 0, 0, 0, 0, 1 };
	struct gpunic_pd *pa, *pl, *pll;

	S.t = nic_on(port, peer_port, T_IP, 1, &S.tlink);
	S.l = nic_on(peer_port, port, L_IP, 2, NULL);
	pa = gpunic_pd_alloc(S.t);
	pl = gpunic_pd_alloc(S.t);
	pll = gpunic_pd_alloc(S.l);
	MUST(pa && pl && pll);
	region_alloc(&S.grant, pa, GRANT_BYTES, rwr, false, 0x11);
	region_alloc(&S.ro, pa, RO_BYTES, GPUNIC_ACCESS_REMOTE_READ, true, 0x22);
	region_alloc(&S.alocal, pa, 3 * ARECVS * ARECV_BYTES, GPUNIC_ACCESS_LOCAL_WRITE, false, 0);
	region_alloc(&S.secret, pl, SECRET_BYTES, rwr, true, 0x33);
	region_alloc(&S.llocal, pl, 2 * LRECVS * LRECV_BYTES, GPUNIC_ACCESS_LOCAL_WRITE, false, 0);
	region_alloc(&S.lsrc, pll, 2048, GPUNIC_ACCESS_LOCAL_WRITE, false, 0);

	S.q[HR] = (struct tqp){ .name = "hr", .type = GPUNIC_QPT_RC, .rq_psn = 0x1000,
				.access = GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ };
	S.q[HU] = (struct tqp){ .name = "hu", .type = GPUNIC_QPT_UC, .rq_psn = 0x2000,
				.access = GPUNIC_ACCESS_REMOTE_WRITE };
	S.q[HN] = (struct tqp){ .name = "hn", .type = GPUNIC_QPT_RC, .rq_psn = 0x3000,
				.access = GPUNIC_ACCESS_REMOTE_WRITE };
	for (int i = HR; i <= HN; i++) {
		S.q[i].peer_ip = A_IP;
		S.q[i].dest_qpn = A_QPN;
		S.q[i].sq_psn = 0x500;
		S.q[i].rx = &S.alocal;
		S.q[i].rx_off = (size_t)i * ARECVS * ARECV_BYTES;
		S.q[i].rx_bytes = ARECV_BYTES;
		S.q[i].nrecv = ARECVS;
		qp_new(&S.q[i], S.t, pa);
		qp_up(&S.q[i], amac);
		post_recvs(&S.q[i]);
	}
	for (int k = 0; k < 2; k++) {
		struct tqp *tq = &S.q[LRC + k], *lq = &S.lq[k];
		enum gpunic_qp_type type = k ? GPUNIC_QPT_UC : GPUNIC_QPT_RC;

		*tq = (struct tqp){ .name = k ? "luc" : "lrc", .type = type, .rq_psn = 0x7000,
				    .sq_psn = 0x9000, .peer_ip = L_IP, .rx = &S.llocal,
				    .rx_off = (size_t)k * LRECVS * LRECV_BYTES,
				    .rx_bytes = LRECV_BYTES, .nrecv = LRECVS };
		*lq = (struct tqp){ .name = "l", .type = type, .rq_psn = 0x9000, .sq_psn = 0x7000,
				    .peer_ip = T_IP };
		/* both QPs exist before either connects: each needs the other's number */
		qp_new(tq, S.t, pl);
		qp_new(lq, S.l, pll);
		lq->dest_qpn = tq->qp->qp_num;
		tq->dest_qpn = lq->qp->qp_num;
		qp_up(tq, lmac);
		qp_up(lq, tmac);
		post_recvs(tq);
	}
}

int main(int argc, char **argv)
{
	char line[256];
	size_t have = 0;
	bool quit = false;

	if (argc != 3)
		DIE("usage: hostile_target PORT PEER_PORT");
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	setup((uint16_t)atoi(argv[1]), (uint16_t)atoi(argv[2]));
	print_info((uint16_t)atoi(argv[1]));
	while (!quit) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		uint64_t now = now_ns();
		int work;

		work = gpunic_nic_poll(S.t, 64) + gpunic_nic_poll(S.l, 64);
		work += legit_step(now);
		attacker_step();
		if (poll(&pfd, 1, 0) > 0) {
			ssize_t n = read(0, line + have, sizeof(line) - 1 - have);
			char *nl;

			if (n <= 0)
				break;
			have += (size_t)n;
			line[have] = 0;
			while ((nl = strchr(line, '\n'))) {
				*nl = 0;
				if (!strcmp(line, "stats")) {
					print_stats();
				} else if (!strcmp(line, "rearm")) {
					for (int i = HR; i <= HN; i++)
						rearm(&S.q[i]);
					printf("{\"ok\":true}\n");
					fflush(stdout);
				} else if (!strcmp(line, "quit")) {
					quit = true;
				} else if (line[0]) {
					printf("{\"error\":\"unknown command\"}\n");
					fflush(stdout);
				}
				have -= (size_t)(nl + 1 - line);
				memmove(line, nl + 1, have + 1);
			}
			if (have == sizeof(line) - 1)
				have = 0;
		}
		if (!work) {
			struct timespec ts = { .tv_nsec = 20000 };

			nanosleep(&ts, NULL);
		}
	}
	print_stats();
	{
		bool ok = guards_ok() && !S.bad[0] && !S.bad[1] && !S.send_err;

		MUST(!gpunic_nic_close(S.t) && !gpunic_nic_close(S.l));
		return ok ? 0 : 1;
	}
}
