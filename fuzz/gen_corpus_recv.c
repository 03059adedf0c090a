// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_recv (format: recv_env.h) from real captures:
 *  - the softnic's own: a victim NIC configured exactly as fuzz_recv's talks to a peer over a
 *    shared-memory cable (RC and UC SEND, WRITE, WRITE_IMM, READ from the peer; SEND, WRITE and
 *    READs from the victim's requester QP, answered by the peer), captured with
 *    gpunic_nic_capture; the frames the victim received become one seed per QP flow;
 *  - any pcap given on the command line (the rxe captures in tests/interop/golden): RoCE frames
 *    in groups of eight, requests aimed at the RC or UC victim QP by their transport, responses
 *    at the requester QP, PSNs and VAs made relative to the first of their flow in the seed.
 * Every record asks for all repairs (FZ_FIX_ALL), so the seeds reach the victim's deep states.
 *
 * Usage: fuzz_gen_corpus_recv <dir> [golden.pcap...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/pcap.h>
#include <gpunic/verbs.h>

#include "recv_env.h"

#define DIE(...)                                      \
	do {                                          \
		fprintf(stderr, "gen_corpus_recv: "); \
		fprintf(stderr, __VA_ARGS__);         \
		fputc('\n', stderr);                  \
		exit(1);                              \
	} while (0)
#define MUST(cond)                                        \
	do {                                              \
		if (!(cond))                              \
			DIE("%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

#define SEED_MAX (1u << 17)
#define GOLDEN_GROUP 8u

struct seed {
	uint8_t buf[SEED_MAX];
	size_t len;
	unsigned frames;
};

struct side {
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	uint8_t *rw;            /* 64 KiB, remote write + read */
	uint8_t *ro;            /* 4 KiB, remote read */
	uint8_t *local;
	struct gpunic_mr *mr_rw, *mr_ro, *mr_local;
	struct gpunic_qp *qp[FZ_NQP];
	struct gpunic_dev_qp dq[FZ_NQP];
};

static const enum gpunic_mtu qp_mtu[FZ_NQP] = { GPUNIC_MTU_1024, GPUNIC_MTU_256,
						GPUNIC_MTU_256 };
static const uint32_t qp_rq_psn[FZ_NQP] = { FZ_RQ_PSN_RC, FZ_RQ_PSN_UC, FZ_RQ_PSN_REQ };

/* ---------------------------------------------------------------- seed files */

static void seed_add(struct seed *s, const uint8_t *frame, size_t len)
{
	MUST(s->len + 3 + len <= SEED_MAX && len <= 0xFFFF);
	s->buf[s->len++] = FZ_FIX_ALL;
	s->buf[s->len++] = (uint8_t)len;
	s->buf[s->len++] = (uint8_t)(len >> 8);
	memcpy(s->buf + s->len, frame, len);
	s->len += len;
	s->frames++;
}

static void seed_write(struct seed *s, const char *dir, const char *name)
{
	char path[1024];
	FILE *f;

	if (!s->frames)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		DIE("%s: %s", path, strerror(errno));
	MUST(fwrite(s->buf, 1, s->len, f) == s->len);
	MUST(fclose(f) == 0);
	s->len = 0;
	s->frames = 0;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Rewrites one decoded RoCE frame into the repairable form: QPN -> victim QP index, PSN and
 * RETH VA relative to @psn_base and @va_base, rkey -> selector @key. */
static void normalise(uint8_t *f, const struct gpunic_pkt *pkt, unsigned idx, uint32_t psn_base,
		      uint64_t va_base, unsigned key)
{
	const struct gpunic_opcode_info *info = gpunic_opcode_info(pkt->opcode);
	uint8_t *bth = f + GPUNIC_L2L4_BYTES;

	put_be32(bth + 4, (get_be32(bth + 4) & 0xFF000000u) | idx);
	put_be32(bth + 8, (get_be32(bth + 8) & 0xFF000000u) |
			  ((pkt->psn - psn_base) & GPUNIC_PSN_MASK));
	if (info->reth_off) {
		uint64_t va = pkt->reth_va - va_base;

		put_be32(bth + info->reth_off, (uint32_t)(va >> 32));
		put_be32(bth + info->reth_off + 4, (uint32_t)va);
		put_be32(bth + info->reth_off + 8, key);
	}
}

/* ---------------------------------------------------------------- the softnic's own capture */

static uint8_t *region(size_t n)
{
	uint8_t *p = calloc(1, n);

	MUST(p);
	return p;
}

static void qp_up(struct gpunic_qp *qp, enum gpunic_qp_type type, unsigned idx, uint32_t peer_ip,
		  const uint8_t *peer_mac, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn,
		  unsigned access)
{
	struct gpunic_qp_attr at = { 0 };
	bool rc = type == GPUNIC_QPT_RC;
	unsigned mask;

	at.qp_state = GPUNIC_QPS_INIT;
	at.qp_access_flags = access;
	MUST(!gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS));
	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = qp_mtu[idx];
	at.dest_qp_num = dest_qpn;
	at.rq_psn = rq_psn;
	at.remote_ip = peer_ip;
	memcpy(at.remote_mac, peer_mac, 6);
	at.max_dest_rd_atomic = 2;
	at.min_rnr_timer = 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	MUST(!gpunic_qp_modify(qp, &at, mask));
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = sq_psn;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 4;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	MUST(!gpunic_qp_modify(qp, &at, mask));
}

static void side_open(struct side *s, struct gpunic_link *link, uint32_t ip, const uint8_t *mac)
{
	const unsigned rw = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			    GPUNIC_ACCESS_REMOTE_READ;
	struct gpunic_nic_attr na = { .link = link, .ip = ip };

	memcpy(na.mac, mac, 6);
	s->nic = gpunic_nic_open(&na);
	MUST(s->nic);
	s->pd = gpunic_pd_alloc(s->nic);
	MUST(s->pd);
	s->rw = region(FZ_RW_BYTES);
	s->ro = region(FZ_RO_BYTES);
	s->local = region(FZ_LOCAL_BYTES);
	s->mr_rw = gpunic_mr_reg(s->pd, s->rw, FZ_RW_BYTES, rw);
	s->mr_ro = gpunic_mr_reg(s->pd, s->ro, FZ_RO_BYTES, GPUNIC_ACCESS_REMOTE_READ);
	s->mr_local = gpunic_mr_reg(s->pd, s->local, FZ_LOCAL_BYTES, GPUNIC_ACCESS_LOCAL_WRITE);
	MUST(s->mr_rw && s->mr_ro && s->mr_local);
	for (unsigned i = 0; i < FZ_NQP; i++) {
		struct gpunic_qp_init_attr ia = {
			.qp_type = i == FZ_QP_UC ? GPUNIC_QPT_UC : GPUNIC_QPT_RC,
			.send_cq = gpunic_cq_create(s->nic, 64),
			.recv_cq = gpunic_cq_create(s->nic, 64),
			.max_send_wr = 16, .max_recv_wr = 8, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 64, .cqe_scatter = i == FZ_QP_UC,
		};

		MUST(ia.send_cq && ia.recv_cq);
		s->qp[i] = gpunic_qp_create(s->pd, &ia);
		MUST(s->qp[i]);
	}
}

static void side_connect(struct side *s, const struct side *peer, bool victim)
{
	for (unsigned i = 0; i < FZ_NQP; i++) {
		unsigned access = GPUNIC_ACCESS_REMOTE_WRITE |
				  (i == FZ_QP_RC || !victim ? GPUNIC_ACCESS_REMOTE_READ : 0);

		qp_up(s->qp[i], s->qp[i]->qp_type, i, victim ? FZ_PEER_IP : FZ_VICTIM_IP,
		      victim ? (uint8_t[6])FZ_PEER_MAC : (uint8_t[6])FZ_VICTIM_MAC,
		      peer->qp[i]->qp_num, victim ? qp_rq_psn[i] : FZ_SQ_PSN,
		      victim ? FZ_SQ_PSN : qp_rq_psn[i], access);
		MUST(!gpunic_qp_export(s->qp[i], &s->dq[i]));
	}
}

static void post(struct side *s, unsigned q, uint8_t op, uint32_t len, uint64_t raddr,
		 uint32_t rkey, uint8_t *lbuf, uint32_t lkey)
{
	MUST(gpunic_dev_post_send_sge(&s->dq[q], op, GPUNIC_DEV_SEND_SIGNALED,
				      (uint64_t)(uintptr_t)lbuf, len, lkey, raddr, rkey,
				      0xC0DE) >= 0);
	MUST(!gpunic_dev_submit(&s->dq[q]));
}

static void recv_post(struct side *s, unsigned q, size_t off, uint32_t len)
{
	struct gpunic_dev_sge sge = { .addr = (uint64_t)(uintptr_t)(s->local + off),
				      .length = len, .lkey = s->mr_local->lkey };

	MUST(gpunic_dev_post_recv(&s->dq[q], &sge, 1) >= 0);
}

/* Pump both engines until @want send completions have come back on @s (or 2 s passed). */
static void run(struct side *a, struct side *b, struct side *s, unsigned want)
{
	struct gpunic_dev_cqe cqe;
	unsigned got = 0;

	for (long i = 0; i < 2000000 && got < want; i++) {
		gpunic_nic_poll(a->nic, 16);
		gpunic_nic_poll(b->nic, 16);
		for (unsigned q = 0; q < FZ_NQP; q++) {
			while (gpunic_dev_poll_scq(&s->dq[q], &cqe)) {
				MUST(!gpunic_dev_cqe_is_error(&cqe));
				got++;
			}
			while (gpunic_dev_poll_rcq(&a->dq[q], &cqe) ||
			       gpunic_dev_poll_rcq(&b->dq[q], &cqe))
				MUST(!gpunic_dev_cqe_is_error(&cqe));
		}
	}
	MUST(got == want);
	for (int i = 0; i < 1000; i++) {
		gpunic_nic_poll(a->nic, 16);
		gpunic_nic_poll(b->nic, 16);
	}
}

static void own_capture(const char *dir)
{
	struct gpunic_shm_link_attr sa = { .end = GPUNIC_SHM_END_A, .slots = 256, .create = 1 };
	char name[64], cap[256];
	struct gpunic_link *la, *lb;
	struct gpunic_pcap_reader *r;
	struct gpunic_pcap_frame fr;
	struct side v, p;
	static struct seed flow[FZ_NQP];
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	int err;

	snprintf(name, sizeof(name), "/gpunic-gencorpus-%d", (int)getpid());
	snprintf(cap, sizeof(cap), "%s/.own-capture-%d.pcap", dir, (int)getpid());
	sa.name = name;
	la = gpunic_link_shm_open(&sa);
	sa.end = GPUNIC_SHM_END_B;
	sa.create = 0;
	lb = gpunic_link_shm_open(&sa);
	MUST(la && lb);
	side_open(&v, la, FZ_VICTIM_IP, (uint8_t[6])FZ_VICTIM_MAC);
	side_open(&p, lb, FZ_PEER_IP, (uint8_t[6])FZ_PEER_MAC);
	side_connect(&v, &p, true);
	side_connect(&p, &v, false);
	for (unsigned k = 0; k < FZ_RC_RECVS; k++)
		recv_post(&v, FZ_QP_RC, k * 4096, FZ_RC_RECV_BYTES);
	for (unsigned k = 0; k < FZ_UC_RECVS; k++)
		recv_post(&v, FZ_QP_UC, 16384 + k * 1024, FZ_UC_RECV_BYTES);
	MUST(!gpunic_nic_capture(v.nic, cap));

	/* the peer's requests to the victim's RC and UC responders */
	post(&p, FZ_QP_RC, MLX5_OPCODE_SEND, 100, 0, 0, p.ro, p.mr_ro->lkey);
	post(&p, FZ_QP_RC, MLX5_OPCODE_SEND_IMM, 2500, 0, 0, p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_RC, MLX5_OPCODE_RDMA_WRITE_IMM, 1500, (uintptr_t)v.rw + 0x100,
	     v.mr_rw->rkey, p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_RC, MLX5_OPCODE_RDMA_WRITE, 10, (uintptr_t)v.rw + 0x4000, v.mr_rw->rkey,
	     p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_RC, MLX5_OPCODE_RDMA_READ, 3000, (uintptr_t)v.rw, v.mr_rw->rkey, p.local,
	     p.mr_local->lkey);
	post(&p, FZ_QP_RC, MLX5_OPCODE_RDMA_READ, 100, (uintptr_t)v.ro + 8, v.mr_ro->rkey,
	     p.local + 4096, p.mr_local->lkey);
	post(&p, FZ_QP_UC, MLX5_OPCODE_SEND_IMM, 20, 0, 0, p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_UC, MLX5_OPCODE_SEND, 600, 0, 0, p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_UC, MLX5_OPCODE_RDMA_WRITE, 300, (uintptr_t)v.rw + 0x2000, v.mr_rw->rkey,
	     p.rw, p.mr_rw->lkey);
	post(&p, FZ_QP_UC, MLX5_OPCODE_RDMA_WRITE_IMM, 0, (uintptr_t)v.rw, v.mr_rw->rkey, p.rw,
	     p.mr_rw->lkey);
	run(&v, &p, &p, 10);
	/* the victim's requester, as fuzz_recv sets it up; the peer answers */
	recv_post(&p, FZ_QP_REQ, 0, 1024);
	post(&v, FZ_QP_REQ, MLX5_OPCODE_SEND, FZ_REQ_SEND_BYTES, 0, 0, v.ro, v.mr_ro->lkey);
	post(&v, FZ_QP_REQ, MLX5_OPCODE_RDMA_WRITE, FZ_REQ_WRITE_BYTES, (uintptr_t)p.rw,
	     p.mr_rw->rkey, v.ro + 64, v.mr_ro->lkey);
	post(&v, FZ_QP_REQ, MLX5_OPCODE_RDMA_READ, FZ_REQ_READ_BYTES, (uintptr_t)p.rw + 0x1000,
	     p.mr_rw->rkey, v.local, v.mr_local->lkey);
	post(&v, FZ_QP_REQ, MLX5_OPCODE_RDMA_READ, FZ_REQ_READ2_BYTES, (uintptr_t)p.rw + 0x3000,
	     p.mr_rw->rkey, v.local + 2048, v.mr_local->lkey);
	run(&v, &p, &v, 4);
	MUST(!gpunic_nic_capture(v.nic, NULL));

	r = gpunic_pcap_reader_open(cap, NULL);
	MUST(r);
	while ((err = gpunic_pcap_reader_next(r, &fr)) == 0) {
		struct gpunic_pkt pkt;
		unsigned idx, key = FZ_KEY_RW;
		uint64_t va_base = (uintptr_t)v.rw;
		bool req;

		if (fr.caplen > sizeof(frame) ||
		    gpunic_frame_decode(fr.data, fr.caplen, 0, &pkt) != GPUNIC_WIRE_OK ||
		    pkt.dst_ip != FZ_VICTIM_IP)
			continue;
		for (idx = 0; idx < FZ_NQP && v.qp[idx]->qp_num != pkt.qpn; idx++)
			;
		MUST(idx < FZ_NQP);
		req = pkt.mask & GPUNIC_MASK_REQ;
		if ((pkt.mask & GPUNIC_MASK_RETH) && pkt.reth_rkey == v.mr_ro->rkey) {
			key = FZ_KEY_RO;
			va_base = (uintptr_t)v.ro;
		}
		memcpy(frame, fr.data, fr.caplen);
		normalise(frame, &pkt, idx, req ? qp_rq_psn[idx] : FZ_SQ_PSN, va_base, key);
		seed_add(&flow[idx], frame, fr.caplen);
	}
	MUST(err == GPUNIC_PCAP_EOF);
	gpunic_pcap_reader_close(r);
	unlink(cap);
	seed_write(&flow[FZ_QP_RC], dir, "own_rc_requests");
	seed_write(&flow[FZ_QP_UC], dir, "own_uc_requests");
	seed_write(&flow[FZ_QP_REQ], dir, "own_req_responses");
	MUST(!gpunic_nic_close(v.nic) && !gpunic_nic_close(p.nic));
	free(v.rw), free(v.ro), free(v.local), free(p.rw), free(p.ro), free(p.local);
}

/* ---------------------------------------------------------------- foreign captures */

/* First PSN and RETH VA of each flow (per destination IP), to make fields relative. */
struct flow_base {
	uint32_t ip;
	bool have_psn, have_va;
	uint32_t psn;
	uint64_t va;
};

static struct flow_base *flow_of(struct flow_base *fb, unsigned *n, uint32_t ip)
{
	for (unsigned i = 0; i < *n; i++)
		if (fb[i].ip == ip)
			return &fb[i];
	MUST(*n < 8);
	fb[*n] = (struct flow_base){ .ip = ip };
	return &fb[(*n)++];
}

static void golden(const char *dir, const char *path)
{
	struct gpunic_pcap_reader *r = gpunic_pcap_reader_open(path, NULL);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint8_t frame[GPUNIC_MAX_FRAME_BYTES];
	struct flow_base fb[8];
	struct gpunic_pcap_frame fr;
	static struct seed s;
	unsigned nfb = 0, part = 0;
	char name[512];
	int err;

	if (!r)
		DIE("%s: %s", path, strerror(errno));
	while ((err = gpunic_pcap_reader_next(r, &fr)) == 0) {
		struct gpunic_pkt pkt;
		struct flow_base *f;
		unsigned idx;
		bool req;

		if (fr.caplen > sizeof(frame) ||
		    gpunic_frame_decode(fr.data, fr.caplen, 0, &pkt) != GPUNIC_WIRE_OK)
			continue;
		req = pkt.mask & GPUNIC_MASK_REQ;
		/* a response's PSNs are the requests' PSNs: use the requester's flow */
		f = flow_of(fb, &nfb, req ? pkt.dst_ip : pkt.src_ip);
		if (!f->have_psn) {
			f->have_psn = true;
			f->psn = pkt.psn;
		}
		if ((pkt.mask & GPUNIC_MASK_RETH) && !f->have_va) {
			f->have_va = true;
			f->va = pkt.reth_va;
		}
		if (!req)
			idx = FZ_QP_REQ;
		else
			idx = (pkt.opcode & GPUNIC_TRANSPORT_MASK) == GPUNIC_TRANSPORT_UC ?
				      FZ_QP_UC : FZ_QP_RC;
		memcpy(frame, fr.data, fr.caplen);
		normalise(frame, &pkt, idx, f->psn, f->va, FZ_KEY_RW);
		seed_add(&s, frame, fr.caplen);
		if (s.frames == GOLDEN_GROUP) {
			snprintf(name, sizeof(name), "golden_%s_%02u", base, part++);
			seed_write(&s, dir, name);
			nfb = 0;	/* each seed starts its flows afresh, as the victim does */
		}
	}
	MUST(err == GPUNIC_PCAP_EOF);
	snprintf(name, sizeof(name), "golden_%s_%02u", base, part);
	seed_write(&s, dir, name);
	gpunic_pcap_reader_close(r);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s <corpus dir> [capture.pcap...]\n", argv[0]);
		return 2;
	}
	own_capture(argv[1]);
	for (int i = 2; i < argc; i++)
		golden(argv[1], argv[i]);
	return 0;
}
