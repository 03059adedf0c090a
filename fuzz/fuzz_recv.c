// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the whole receive path: front door (recv.c), responder (resp.c),
 * completer (comp.c) and the memory they touch on a peer's behalf (mr.c).
 *
 * One victim NIC (recv_env.h) sits on a link of this file's own that delivers the fuzzer's
 * frames and checks every frame the NIC transmits. Each input is split into frames; before
 * them all three QPs are reset to RTS, receives are posted and the requester QP gets work in
 * flight, so ACKs, NAKs and READ responses in the input meet real outstanding requests.
 *
 * Oracles, after every input (abort() on failure):
 *  - guard bytes around every region, and the gaps between the receive buffers of the local
 *    region, are intact; under AddressSanitizer they are also poisoned, so the first stray read
 *    or write is reported where it happens;
 *  - the read-only region and the other PD's region are unchanged;
 *  - the received frame's tail in the NIC's receive buffer is poisoned (over-reads trip ASan);
 *  - every frame the NIC sends decodes cleanly and goes to the peer;
 *  - every receive completion reports no more bytes than its buffer holds.
 *
 * The same file links into tests/hostile/test_hostile_regress.c (no libFuzzer), which replays
 * the seed corpus and every saved crash input through LLVMFuzzerTestOneInput.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/verbs.h>

#include "recv_env.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FZ_ASAN)
#define FZ_ASAN 1
#endif
#ifdef FZ_ASAN
#include <sanitizer/asan_interface.h>
#define fz_poison(p, n) __asan_poison_memory_region((p), (n))
#define fz_unpoison(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define fz_poison(p, n) ((void)(p), (void)(n))
#define fz_unpoison(p, n) ((void)(p), (void)(n))
#endif

#define FZ_ASSERT(cond)                                                                 \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_recv: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                        \
		}                                                                       \
	} while (0)

#define GUARD 64u            /* bytes before and after each region; keeps 8-byte alignment */
#define GUARD_BYTE 0xA5
#define GAP_BYTE 0x5C
#define RO_SEED 0x3Du
#define BTH_OFF GPUNIC_L2L4_BYTES
#define IP_OFF GPUNIC_ETH_BYTES
#define UDP_OFF (GPUNIC_ETH_BYTES + GPUNIC_IP4_BYTES)
#define MAX_WINDOWS 16u

/* A region with guard bytes on both sides. */
struct region {
	uint8_t *mem;        /* guard | bytes | guard */
	uint8_t *buf;
	size_t len;
	struct gpunic_mr *mr;
};

/* Part of the local region a completion may write: a receive buffer or a READ target. */
struct window {
	size_t off;
	size_t len;
};

/* The harness's link: a queue of frames to deliver, a checker for frames sent. */
struct fz_link {
	struct gpunic_link link;
	const uint8_t *frame[FZ_MAX_FRAMES];
	size_t frame_len[FZ_MAX_FRAMES];
	unsigned head;
	unsigned tail;
	uint8_t *poisoned;   /* tail of the NIC's receive buffer we poisoned */
	size_t poisoned_len;
};

struct victim_qp {
	struct gpunic_qp *qp;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_dev_qp dq;
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;
	unsigned access;
	uint32_t rq_psn;
	size_t recv_off;     /* first receive buffer in the local region */
	uint32_t nrecv;
	uint32_t recv_bytes;
	uint32_t rcq_cqe;
	bool scatter;
};

static struct {
	bool ready;
	struct fz_link *link;
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_pd *pd_other;
	struct region rw, ro, local, other;
	uint32_t stale_rkey;
	struct victim_qp q[FZ_NQP];
	struct window win[MAX_WINDOWS];
	unsigned nwin;
	size_t read_off;     /* READ targets in the local region */
	size_t read2_off;
	uint8_t ro_copy[FZ_RO_BYTES];
	bool verbose;        /* FUZZ_RECV_VERBOSE=1: counters after every input, to check seeds */
} V;

/* ---------------------------------------------------------------- the link */

static int fz_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct gpunic_pkt pkt;

	/* the NIC only ever emits valid frames, and only to its peer */
	FZ_ASSERT(gpunic_frame_decode(frame, len, 0, &pkt) == GPUNIC_WIRE_OK ||
		  (len >= GPUNIC_ETH_BYTES && frame[12] == 0x08 && frame[13] == 0x06));
	if (frame[12] == 0x08 && frame[13] == 0x00)
		FZ_ASSERT(pkt.dst_ip == FZ_PEER_IP && pkt.src_ip == FZ_VICTIM_IP);
	link->stats.tx_frames++;
	link->stats.tx_bytes += len;
	return 0;
}

static int fz_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct fz_link *l = (struct fz_link *)link;
	size_t n;

	if (l->poisoned) {
		fz_unpoison(l->poisoned, l->poisoned_len);
		l->poisoned = NULL;
	}
	if (l->head == l->tail)
		return EAGAIN;
	n = l->frame_len[l->head % FZ_MAX_FRAMES];
	if (n > cap || n > link->mtu) {
		l->head++;
		link->stats.rx_errors++;
		return EMSGSIZE;
	}
	memcpy(buf, l->frame[l->head % FZ_MAX_FRAMES], n);
	l->head++;
	/* nothing past the frame is the frame: reading it is a bug */
	l->poisoned = buf + n;
	l->poisoned_len = cap - n;
	fz_poison(l->poisoned, l->poisoned_len);
	link->stats.rx_frames++;
	link->stats.rx_bytes += n;
	*len = n;
	return 0;
}

static void fz_close(struct gpunic_link *link)
{
	struct fz_link *l = (struct fz_link *)link;

	if (l->poisoned)
		fz_unpoison(l->poisoned, l->poisoned_len);
	free(l);
}

static const struct gpunic_link_ops fz_ops = {
	.name = "fuzz",
	.send = fz_send,
	.recv = fz_recv,
	.close = fz_close,
};

/* ---------------------------------------------------------------- regions */

static void region_alloc(struct region *r, struct gpunic_pd *pd, size_t len, unsigned access)
{
	r->len = len;
	r->mem = aligned_alloc(64, len + 2 * GUARD);
	FZ_ASSERT(r->mem);
	memset(r->mem, GUARD_BYTE, len + 2 * GUARD);
	r->buf = r->mem + GUARD;
	memset(r->buf, 0, len);
	r->mr = gpunic_mr_reg(pd, r->buf, len, access);
	FZ_ASSERT(r->mr);
	fz_poison(r->mem, GUARD);
	fz_poison(r->buf + len, GUARD);
}

static bool bytes_are(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void region_check(const struct region *r)
{
	fz_unpoison(r->mem, GUARD);
	fz_unpoison(r->buf + r->len, GUARD);
	FZ_ASSERT(bytes_are(r->mem, GUARD, GUARD_BYTE));
	FZ_ASSERT(bytes_are(r->buf + r->len, GUARD, GUARD_BYTE));
	fz_poison(r->mem, GUARD);
	fz_poison(r->buf + r->len, GUARD);
}

static void add_window(size_t off, size_t len)
{
	FZ_ASSERT(V.nwin < MAX_WINDOWS);
	V.win[V.nwin].off = off;
	V.win[V.nwin].len = len;
	V.nwin++;
}

/* Everything in the local region outside the windows is a gap: nothing may ever write it. */
static void for_each_gap(void (*fn)(uint8_t *p, size_t n))
{
	size_t at = 0;

	for (unsigned i = 0; i < V.nwin; i++) {
		if (V.win[i].off > at)
			fn(V.local.buf + at, V.win[i].off - at);
		at = V.win[i].off + V.win[i].len;
	}
	if (at < V.local.len)
		fn(V.local.buf + at, V.local.len - at);
}

static void gap_fill(uint8_t *p, size_t n)
{
	memset(p, GAP_BYTE, n);
	fz_poison(p, n);
}

static void gap_check(uint8_t *p, size_t n)
{
	fz_unpoison(p, n);
	FZ_ASSERT(bytes_are(p, n, GAP_BYTE));
	fz_poison(p, n);
}

/* ---------------------------------------------------------------- victim setup */

static void qp_connect(struct victim_qp *v)
{
	struct gpunic_qp_attr at = { 0 };
	bool rc = v->type == GPUNIC_QPT_RC;
	unsigned mask;

	at.qp_state = GPUNIC_QPS_INIT;
	at.qp_access_flags = v->access;
	FZ_ASSERT(!gpunic_qp_modify(v->qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS));
	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = v->mtu;
	at.dest_qp_num = 0x77 + (uint32_t)v->type;
	at.rq_psn = v->rq_psn;
	at.remote_ip = FZ_PEER_IP;
	memcpy(at.remote_mac, (uint8_t[6])FZ_PEER_MAC, 6);
	at.max_dest_rd_atomic = 2;
	at.min_rnr_timer = 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	FZ_ASSERT(!gpunic_qp_modify(v->qp, &at, mask));
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = FZ_SQ_PSN;
	at.timeout = 0;		/* no local ACK timer: a run must not depend on the clock */
	at.retry_cnt = 3;
	at.rnr_retry = 2;
	at.max_rd_atomic = 4;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	FZ_ASSERT(!gpunic_qp_modify(v->qp, &at, mask));
}

static void qp_create(struct victim_qp *v)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = v->type,
		.max_send_wr = 16,
		.max_recv_wr = 8,
		.max_send_sge = 2,
		.max_recv_sge = 2,
		.max_inline_data = 64,
		.cqe_scatter = v->scatter,
	};

	v->scq = gpunic_cq_create(V.nic, 64);
	v->rcq = gpunic_cq_create(V.nic, v->rcq_cqe);
	FZ_ASSERT(v->scq && v->rcq);
	ia.send_cq = v->scq;
	ia.recv_cq = v->rcq;
	v->qp = gpunic_qp_create(V.pd, &ia);
	FZ_ASSERT(v->qp);
	qp_connect(v);
	FZ_ASSERT(!gpunic_qp_export(v->qp, &v->dq));
}

static void victim_init(void)
{
	struct gpunic_nic_attr na = { .ip = FZ_VICTIM_IP, .mac = FZ_VICTIM_MAC };
	const unsigned rw = GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE |
			    GPUNIC_ACCESS_REMOTE_READ;
	struct gpunic_mr *stale;
	size_t off = 0;

	V.link = calloc(1, sizeof(*V.link));
	FZ_ASSERT(V.link);
	V.link->link.ops = &fz_ops;
	V.link->link.caps = GPUNIC_LINK_CAP_SHARED_WIRE;
	V.link->link.mtu = GPUNIC_MAX_FRAME_BYTES;
	na.link = &V.link->link;
	V.nic = gpunic_nic_open(&na);
	FZ_ASSERT(V.nic);
	V.pd = gpunic_pd_alloc(V.nic);
	V.pd_other = gpunic_pd_alloc(V.nic);
	FZ_ASSERT(V.pd && V.pd_other);
	region_alloc(&V.rw, V.pd, FZ_RW_BYTES, rw);
	region_alloc(&V.ro, V.pd, FZ_RO_BYTES, GPUNIC_ACCESS_REMOTE_READ);
	region_alloc(&V.local, V.pd, FZ_LOCAL_BYTES, GPUNIC_ACCESS_LOCAL_WRITE);
	region_alloc(&V.other, V.pd_other, FZ_OTHER_BYTES, rw);
	for (size_t i = 0; i < FZ_RO_BYTES; i++)
		V.ro.buf[i] = (uint8_t)(i * RO_SEED + 1);
	memcpy(V.ro_copy, V.ro.buf, FZ_RO_BYTES);
	memset(V.other.buf, 0x6B, FZ_OTHER_BYTES);
	stale = gpunic_mr_reg(V.pd, V.rw.buf, 4096, rw);
	FZ_ASSERT(stale);
	V.stale_rkey = stale->rkey;
	FZ_ASSERT(!gpunic_mr_dereg(stale));

	V.q[FZ_QP_RC] = (struct victim_qp){ .type = GPUNIC_QPT_RC, .mtu = GPUNIC_MTU_1024,
					    .access = GPUNIC_ACCESS_REMOTE_WRITE |
						      GPUNIC_ACCESS_REMOTE_READ,
					    .rq_psn = FZ_RQ_PSN_RC, .nrecv = FZ_RC_RECVS,
					    .recv_bytes = FZ_RC_RECV_BYTES, .rcq_cqe = 64 };
	V.q[FZ_QP_UC] = (struct victim_qp){ .type = GPUNIC_QPT_UC, .mtu = GPUNIC_MTU_256,
					    .access = GPUNIC_ACCESS_REMOTE_WRITE,
					    .rq_psn = FZ_RQ_PSN_UC, .nrecv = FZ_UC_RECVS,
					    .recv_bytes = FZ_UC_RECV_BYTES, .rcq_cqe = 4,
					    .scatter = true };
	V.q[FZ_QP_REQ] = (struct victim_qp){ .type = GPUNIC_QPT_RC, .mtu = GPUNIC_MTU_256,
					     .access = GPUNIC_ACCESS_REMOTE_WRITE,
					     .rq_psn = FZ_RQ_PSN_REQ, .nrecv = FZ_REQ_RECVS,
					     .recv_bytes = FZ_REQ_RECV_BYTES, .rcq_cqe = 64 };
	/* receive buffers and READ targets, each followed by a gap */
	for (unsigned i = 0; i < FZ_NQP; i++) {
		struct victim_qp *v = &V.q[i];

		v->recv_off = off;
		for (uint32_t k = 0; k < v->nrecv; k++) {
			add_window(off, v->recv_bytes);
			off += v->recv_bytes + GUARD;
		}
		qp_create(v);
	}
	V.read_off = off;
	add_window(off, FZ_REQ_READ_BYTES);
	off += (FZ_REQ_READ_BYTES + GUARD + 63) & ~(size_t)63;
	V.read2_off = off;
	add_window(off, FZ_REQ_READ2_BYTES);
	off += FZ_REQ_READ2_BYTES + GUARD;
	FZ_ASSERT(off <= FZ_LOCAL_BYTES);
	for_each_gap(gap_fill);
	V.verbose = getenv("FUZZ_RECV_VERBOSE") != NULL;
	V.ready = true;
}

/* ---------------------------------------------------------------- per input */

static uint64_t va_of(const struct region *r, size_t off)
{
	return (uint64_t)(uintptr_t)(r->buf + off);
}

static void check_cqe(const struct victim_qp *v, const struct gpunic_dev_cqe *cqe, bool recv)
{
	FZ_ASSERT(cqe->qpn == v->qp->qp_num);
	if (recv && (cqe->opcode == MLX5_CQE_RESP_SEND || cqe->opcode == MLX5_CQE_RESP_SEND_IMM))
		FZ_ASSERT(cqe->byte_cnt <= v->recv_bytes);
}

static void drain(struct victim_qp *v)
{
	struct gpunic_dev_cqe cqe;

	while (gpunic_dev_poll_scq(&v->dq, &cqe))
		check_cqe(v, &cqe, false);
	while (gpunic_dev_poll_rcq(&v->dq, &cqe))
		check_cqe(v, &cqe, true);
}

/* Back to a fresh RTS, keeping QPN and CQs. The CQ consumer counters live in the QP's
 * data-path state, which RESET zeroes, while the CQs go on: carry them over. */
static void qp_reset(struct victim_qp *v)
{
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_RESET };
	uint32_t scq_ci = v->dq.state->scq_ci, rcq_ci = v->dq.state->rcq_ci;

	FZ_ASSERT(!gpunic_qp_modify(v->qp, &at, GPUNIC_QP_STATE));
	v->dq.state->scq_ci = scq_ci;
	v->dq.state->rcq_ci = rcq_ci;
	qp_connect(v);
}

static void post_recvs(struct victim_qp *v)
{
	for (uint32_t k = 0; k < v->nrecv; k++) {
		struct gpunic_dev_sge sge[2] = {
			{ .addr = va_of(&V.local, v->recv_off + k * (v->recv_bytes + GUARD)),
			  .length = v->recv_bytes, .lkey = V.local.mr->lkey },
		};
		uint32_t n = 1;

		/* the UC QP's last buffer comes in two pieces */
		if (v->type == GPUNIC_QPT_UC && k == v->nrecv - 1) {
			sge[0].length = v->recv_bytes / 4;
			sge[1] = sge[0];
			sge[1].addr += sge[0].length;
			sge[1].length = v->recv_bytes - sge[0].length;
			n = 2;
		}
		FZ_ASSERT(gpunic_dev_post_recv(&v->dq, sge, n) >= 0);
	}
}

static void post_requests(struct victim_qp *v)
{
	const uint8_t f = GPUNIC_DEV_SEND_SIGNALED;
	const uint32_t lkey = V.ro.mr->lkey;

	FZ_ASSERT(gpunic_dev_post_send_sge(&v->dq, MLX5_OPCODE_SEND, f, va_of(&V.ro, 0),
					   FZ_REQ_SEND_BYTES, lkey, 0, 0, 0) >= 0);
	FZ_ASSERT(gpunic_dev_post_send_sge(&v->dq, MLX5_OPCODE_RDMA_WRITE, f, va_of(&V.ro, 64),
					   FZ_REQ_WRITE_BYTES, lkey, 0x10000, 0x1234, 0) >= 0);
	FZ_ASSERT(gpunic_dev_post_send_sge(&v->dq, MLX5_OPCODE_RDMA_READ, f,
					   va_of(&V.local, V.read_off), FZ_REQ_READ_BYTES,
					   V.local.mr->lkey, 0x20000, 0x1234, 0) >= 0);
	FZ_ASSERT(gpunic_dev_post_send_sge(&v->dq, MLX5_OPCODE_RDMA_READ, 0,
					   va_of(&V.local, V.read2_off), FZ_REQ_READ2_BYTES,
					   V.local.mr->lkey, 0x30000, 0x1234, 0) >= 0);
	FZ_ASSERT(!gpunic_dev_submit(&v->dq));
}

static void victim_reset(void)
{
	for (unsigned i = 0; i < FZ_NQP; i++) {
		drain(&V.q[i]);
		qp_reset(&V.q[i]);
		post_recvs(&V.q[i]);
	}
	post_requests(&V.q[FZ_QP_REQ]);
	/* the requests go out; nothing answers them yet */
	for (int i = 0; i < 4; i++)
		gpunic_nic_poll(V.nic, 8);
}

static void victim_check(void)
{
	for (unsigned i = 0; i < FZ_NQP; i++)
		drain(&V.q[i]);
	region_check(&V.rw);
	region_check(&V.ro);
	region_check(&V.local);
	region_check(&V.other);
	FZ_ASSERT(!memcmp(V.ro.buf, V.ro_copy, FZ_RO_BYTES));
	FZ_ASSERT(bytes_are(V.other.buf, FZ_OTHER_BYTES, 0x6B));
	for_each_gap(gap_check);
}

/* ---------------------------------------------------------------- repairs */

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

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static const struct region *key_region(unsigned sel, uint32_t *rkey)
{
	switch (sel) {
	case FZ_KEY_RW:
		*rkey = V.rw.mr->rkey;
		return &V.rw;
	case FZ_KEY_RO:
		*rkey = V.ro.mr->rkey;
		return &V.ro;
	case FZ_KEY_LOCAL:
		*rkey = V.local.mr->rkey;
		return &V.local;
	case FZ_KEY_OTHER_PD:
		*rkey = V.other.mr->rkey;
		return &V.other;
	case FZ_KEY_STALE:
		*rkey = V.stale_rkey;
		return &V.rw;
	case FZ_KEY_WRONG_TAG:
		*rkey = V.rw.mr->rkey ^ 0x5A;
		return &V.rw;
	default:
		return &V.rw;	/* raw key: the VA still lands near a region */
	}
}

/* The QP a frame is for, after the address repair. */
static struct victim_qp *target_qp(const uint8_t *f)
{
	uint32_t qpn = get_be32(f + BTH_OFF + 4) & 0xFFFFFFu;

	for (unsigned i = 0; i < FZ_NQP; i++)
		if (V.q[i].qp->qp_num == qpn)
			return &V.q[i];
	return NULL;
}

static void repair(uint8_t *f, size_t len, unsigned fix)
{
	const struct gpunic_opcode_info *info;
	struct victim_qp *v;
	uint32_t w;

	if (len < BTH_OFF + GPUNIC_BTH_BYTES)
		return;
	if (fix & FZ_FIX_ADDR) {
		memcpy(f, (uint8_t[6])FZ_VICTIM_MAC, 6);
		memcpy(f + 6, (uint8_t[6])FZ_PEER_MAC, 6);
		put_be32(f + IP_OFF + 12, FZ_PEER_IP);
		put_be32(f + IP_OFF + 16, FZ_VICTIM_IP);
		put_be16(f + UDP_OFF + 2, GPUNIC_ROCE_UDP_PORT);
		w = get_be32(f + BTH_OFF + 4);
		/* index 3 of every 4 keeps a QPN nobody has */
		if ((w & 3) < FZ_NQP)
			w = (w & 0xFF000000u) | V.q[w & 3].qp->qp_num;
		put_be32(f + BTH_OFF + 4, w);
	}
	info = gpunic_opcode_info(f[BTH_OFF]);
	v = target_qp(f);
	if ((fix & FZ_FIX_PSN) && v && info) {
		uint32_t base = (info->mask & GPUNIC_MASK_REQ) ? v->rq_psn : FZ_SQ_PSN;

		w = get_be32(f + BTH_OFF + 8);
		put_be32(f + BTH_OFF + 8, (w & 0xFF000000u) | ((base + w) & GPUNIC_PSN_MASK));
	}
	if (info && info->reth_off &&
	    len >= (size_t)BTH_OFF + info->reth_off + GPUNIC_RETH_BYTES) {
		uint8_t *reth = f + BTH_OFF + info->reth_off;
		uint32_t rkey = get_be32(reth + 8);
		const struct region *r = key_region(rkey & 7, &rkey);

		if (fix & FZ_FIX_RKEY)
			put_be32(reth + 8, rkey);
		if (fix & FZ_FIX_VA) {
			uint64_t va = (uint64_t)get_be32(reth) << 32 | get_be32(reth + 4);

			va += va_of(r, 0);
			put_be32(reth, (uint32_t)(va >> 32));
			put_be32(reth + 4, (uint32_t)va);
		}
	}
	if (fix & FZ_FIX_LEN) {
		put_be16(f + IP_OFF + 2, (uint16_t)(len - GPUNIC_ETH_BYTES));
		put_be16(f + UDP_OFF + 4, (uint16_t)(len - UDP_OFF));
		put_be16(f + IP_OFF + 10, 0);
		put_be16(f + IP_OFF + 10, gpunic_ip4_checksum(f + IP_OFF, GPUNIC_IP4_BYTES));
	}
	if ((fix & FZ_FIX_ICRC) && len >= BTH_OFF + GPUNIC_BTH_BYTES + GPUNIC_ICRC_BYTES) {
		uint32_t icrc = gpunic_icrc_compute(f, len - GPUNIC_ICRC_BYTES);

		for (int i = 0; i < 4; i++)
			f[len - 4 + i] = (uint8_t)(icrc >> (8 * i));
	}
}

/* ---------------------------------------------------------------- entry */

static void dump_counters(void)
{
	struct gpunic_nic_counters c;

	gpunic_nic_query_counters(V.nic, &c);
	fprintf(stderr, "fuzz_recv: rx %llu tx %llu", (unsigned long long)c.rx_frames,
		(unsigned long long)c.tx_frames);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (c.drops[i])
			fprintf(stderr, " %s=%llu", gpunic_drop_reason_name(i),
				(unsigned long long)c.drops[i]);
	for (unsigned i = 0; i < FZ_NQP; i++) {
		struct gpunic_qp_counters q;

		gpunic_qp_query_counters(V.q[i].qp, &q);
		fprintf(stderr, " | qp%u %s rxmsg %llu acks %llu naks %llu", i,
			gpunic_qp_state_name(V.q[i].qp->state), (unsigned long long)q.rx_messages,
			(unsigned long long)q.acks_received, (unsigned long long)q.naks_sent);
	}
	fputc('\n', stderr);
}

static void feed(const uint8_t *frame, size_t len, unsigned polls)
{
	struct fz_link *l = V.link;

	l->frame[l->tail % FZ_MAX_FRAMES] = frame;
	l->frame_len[l->tail % FZ_MAX_FRAMES] = len;
	l->tail++;
	gpunic_nic_poll(V.nic, 1);
	FZ_ASSERT(l->head == l->tail);
	for (unsigned i = 0; i < polls; i++)
		gpunic_nic_poll(V.nic, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frames[FZ_MAX_FRAMES];
	unsigned nframes = 0;
	size_t at = 0;

	if (!V.ready)
		victim_init();
	victim_reset();
	while (nframes < FZ_MAX_FRAMES && size - at >= 3) {
		unsigned flags = data[at];
		size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
		uint8_t *f;

		at += 3;
		if (len > size - at)
			len = size - at;
		/* an exact-size copy: the repairs and the link stay inside it or ASan says so */
		f = malloc(len ? len : 1);
		FZ_ASSERT(f);
		memcpy(f, data + at, len);
		at += len;
		repair(f, len, flags & FZ_FIX_ALL);
		feed(f, len, 1 + (flags >> 6));
		frames[nframes++] = f;
	}
	/* let responses, flushes and READ replies play out */
	for (int i = 0; i < 4; i++)
		gpunic_nic_poll(V.nic, 8);
	victim_check();
	if (V.verbose)
		dump_counters();
	for (unsigned i = 0; i < nframes; i++)
		free(frames[i]);
	return 0;
}
