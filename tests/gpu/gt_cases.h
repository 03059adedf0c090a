/* SPDX-License-Identifier: MIT */
/*
 * The GPU data-path suite's kernel bodies: one source, built like gpunic_dev.h. nvcc builds them
 * into the kernels of gt_kernels.cu (one GPU thread, many threads, whole warps); a C11 compiler
 * builds them for the CPU twin, whose host threads run exactly the same bodies against a
 * CPU-executor NIC. Every wait is bounded by a deadline (globaltimer on the GPU, CLOCK_MONOTONIC
 * on the host) and by the host's stop flag (the shared protocol's in-order hand-over waits only
 * for posts already under way), and every failure is reported in struct gt_result: a body
 * neither hangs nor traps.
 *
 * Addresses: a body touches the data buffer through @lbuf (the executor's address of it) and
 * names it in SGEs through @liova (the address its MR was registered with, which the NIC uses);
 * the two differ only where a GPU cannot use the host's address of mapped memory.
 */
#ifndef GT_CASES_H
#define GT_CASES_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include <gpunic/gpunic_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Messages a receive case plans (kernel parameters stay well below 4 KiB). */
#define GT_MAX_MSG 40
/* Bytes a receive buffer has beyond the message it is meant for: must stay untouched. */
#define GT_RECV_SLACK 64u
/* Bytes around every destination that must stay untouched. */
#define GT_GUARD_BYTES 64u
#define GT_GUARD 0xA5u
/* Receive CQE scatter limit (mlx5's 32-byte inline scatter). */
#define GT_SCATTER_MAX 32u

enum gt_flags {
	GT_F_INLINE = 1u << 0,   /* xfer: post inline; warp: every third chunk inline */
	GT_F_SCATTER = 1u << 1,  /* recv: the QP scatters small receives into the CQE */
	GT_F_FULL = 1u << 2,     /* warp: every batch is nwr_max requests */
};

/* What went wrong, in struct gt_result.first_code. */
enum gt_err {
	GT_E_NONE = 0,
	GT_E_POST,          /* post send returned an error (detail: -errno) */
	GT_E_SUBMIT,        /* doorbell failed (detail: -errno) */
	GT_E_SCQ_TIMEOUT,   /* send completion did not come (detail: completions so far) */
	GT_E_SQ_FULL,       /* send queue stayed full until the deadline (detail: poster) */
	GT_E_CQE_ERROR,     /* error CQE (detail: syndrome << 8 | vendor syndrome) */
	GT_E_CQE_OPCODE,    /* CQE opcode or completed WQE opcode (detail: got << 8 | wqe op) */
	GT_E_CQE_COUNTER,   /* send CQE for another WQE (detail: got << 32 | expected) */
	GT_E_CQE_QPN,       /* CQE of another QP (detail: qpn) */
	GT_E_CQE_BYTES,     /* byte count (detail: got << 32 | expected) */
	GT_E_CQE_IMM,       /* immediate (detail: got << 32 | expected) */
	GT_E_CQE_SCATTER,   /* data_in_cqe not as the size and the QP say (detail: message) */
	GT_E_DATA,          /* payload differs (detail: message << 32 | byte) */
	GT_E_SQ_STATE,      /* send queue counters wrong after the last completion */
	GT_E_RECV_POST,     /* post receive failed or returned a wrong counter (detail: index) */
	GT_E_RCQ_TIMEOUT,   /* receive completion did not come (detail: completions so far) */
	GT_E_RECV_ORDER,    /* receive CQE for another receive WQE (detail: got << 32 | want) */
	GT_E_EXTRA_CQE,     /* a completion nobody asked for (detail: opcode) */
	GT_E_MAX
};

static inline const char *gt_err_name(uint32_t code)
{
	static const char *const names[GT_E_MAX] = {
		"none", "post", "submit", "send CQ timeout", "send queue full until deadline",
		"error CQE", "CQE opcode", "CQE wqe_counter", "CQE qpn", "CQE byte count",
		"CQE immediate", "CQE scatter flag", "payload", "send queue state",
		"post receive", "receive CQ timeout", "receive order", "unexpected CQE",
	};

	return code < GT_E_MAX ? names[code] : "?";
}

/* One message of a receive case; @off is where its buffer (or WRITE target) lies in lbuf. */
struct gt_msg {
	uint8_t op;      /* MLX5_OPCODE_SEND, _SEND_IMM or _RDMA_WRITE_IMM */
	uint8_t pad[3];
	uint32_t len;
	uint32_t off;
	uint32_t seed;
};

/* What a send or receive CQE said, for the host to check again. */
struct gt_cqe_rec {
	uint32_t opcode, wqe_opcode, syndrome, vendor_syndrome;
	uint32_t byte_cnt, imm, qpn, wqe_counter;
};

/*
 * Flags the host and a running executor pass each other, in memory both reach while it runs
 * (mapped host memory for a GPU): loads and stores only, no read-modify-write across PCIe.
 */
struct gt_ctl {
	uint32_t stop;          /* host -> executor: leave every wait now */
	uint32_t ready;         /* executor -> host: 1 receives posted, 2 posting them failed */
	uint32_t done;          /* executor -> host: every thread of the run has left */
};

/*
 * What a run reports, in memory where the executor's atomics stay local (device memory for a
 * GPU); the host reads it once the run has ended.
 */
struct gt_result {
	uint32_t errors;
	uint32_t first_code;    /* enum gt_err */
	uint64_t first_detail;
	uint32_t finished;      /* threads (warps; the one thread) whose part ran to the end */
	uint32_t consumed;      /* 1 once the consumer of the send CQ ran to the end */
	uint32_t posted;        /* send WQEs */
	uint32_t enomem;        /* posts that found the send queue full and were retried */
	uint32_t scqes;         /* send completions taken */
	uint32_t rcqes;         /* receive completions taken */
	struct gt_cqe_rec scqe; /* the last send completion */
	uint64_t ns;            /* executor's own time for its part */
	uint32_t exited;        /* GPU threads that left the kernel (they raise ctl->done) */
};

/*
 * Everything a body needs. Kernels get it by value (a __grid_constant__ parameter); host
 * threads share one copy.
 */
struct gt_args {
	struct gpunic_dev_qp *qp;   /* executor's address of the exported QP */
	struct gt_result *res;      /* executor's address */
	struct gt_ctl *ctl;         /* executor's address */
	uint8_t *lbuf;              /* local data buffer, executor's address */
	uint64_t liova;             /* the same buffer as its MR (and so SGEs) addresses it */
	uint64_t riova;             /* the peer's buffer as its MR addresses it */
	uint32_t lkey;
	uint32_t rkey;              /* the peer buffer's */
	uint64_t budget_ns;         /* every wait gives up after this long */
	uint32_t flags;             /* enum gt_flags */
	/* xfer: one request */
	uint32_t opcode;
	uint32_t len;
	uint32_t imm;
	uint32_t seed;
	uint32_t loff;              /* source in lbuf (READ: destination) */
	uint32_t roff;              /* destination at the peer (READ: source) */
	/* mt and warp: chunk c = poster * per_poster + j goes from lbuf + c * chunk to the
	 * peer's riova + roff + c * chunk */
	uint32_t nposters;          /* threads (mt) or warps (warp) */
	uint32_t per_poster;
	uint32_t chunk;
	uint32_t nwr_max;           /* warp: largest batch, 1..32 */
	uint32_t want_scqes;        /* the consumer's share: signalled requests in all */
	/* recv */
	uint32_t nmsg;
	struct gt_msg msg[GT_MAX_MSG];
};

/* ---------------------------------------------------------------- target helpers */

GPUNIC_DEV_FN uint32_t gt_atomic_add(uint32_t *p, uint32_t v)
{
#if GPUNIC_DEV_ON_GPU
	return atomicAdd_system((unsigned int *)p, v);
#else
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Lane of the calling thread in its warp; the host plays every lane, as lane 0. */
GPUNIC_DEV_FN uint32_t gt_lane(void)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t lane;

	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	return lane;
#else
	return 0;
#endif
}

/* True on every lane when it is true on one: keeps a warp's decisions uniform. */
GPUNIC_DEV_FN int gt_warp_any(int x)
{
#if GPUNIC_DEV_ON_GPU
	return __any_sync(0xffffffffu, x);
#else
	return x;
#endif
}

GPUNIC_DEV_FN void gt_syncwarp(void)
{
#if GPUNIC_DEV_ON_GPU
	__syncwarp(0xffffffffu);
#endif
}

/* ---------------------------------------------------------------- data */

/* Byte @i of the pattern named @seed: a hash, so that chunks never share a pattern. */
GPUNIC_DEV_FN uint8_t gt_pat(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 0x9E3779B1u ^ (i * 0x85EBCA6Bu + 0x632BE5ABu);

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)(x ^ (x >> 24));
}

GPUNIC_DEV_FN uint32_t gt_imm(uint32_t seed)
{
	return 0xC0DE0000u ^ (seed * 2654435761u);
}

/* Pattern seed of chunk @c in the mt and warp cases. */
GPUNIC_DEV_FN uint32_t gt_chunk_seed(uint32_t c)
{
	return 0x10000u + c;
}

/* Pattern bytes @i..@i+7 as one little-endian word (GPUs are little-endian). */
GPUNIC_DEV_FN uint64_t gt_pat8(uint32_t seed, uint32_t i)
{
	uint64_t w = 0;

	for (uint32_t k = 0; k < 8; k++)
		w |= (uint64_t)gt_pat(seed, i + k) << (8 * k);
	return w;
}

/*
 * A GPU reaches the data buffer (mapped host memory) over PCIe, one transaction per access:
 * it moves aligned runs 8 bytes at a time. The host goes byte by byte.
 */
GPUNIC_DEV_FN void gt_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i = 0;

#if GPUNIC_DEV_ON_GPU
	if (((uintptr_t)p & 7) == 0)
		for (; i + 8 <= len; i += 8)
			*(uint64_t *)(void *)(p + i) = gt_pat8(seed, i);
#endif
	for (; i < len; i++)
		p[i] = gt_pat(seed, i);
}

/* Index of the first byte of @p that is not pattern @seed, or @len. */
GPUNIC_DEV_FN uint32_t gt_mismatch(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i = 0;

#if GPUNIC_DEV_ON_GPU
	if (((uintptr_t)p & 7) == 0)
		for (; i + 8 <= len; i += 8)
			if (*(const uint64_t *)(const void *)(p + i) != gt_pat8(seed, i))
				break;
#endif
	for (; i < len; i++)
		if (p[i] != gt_pat(seed, i))
			return i;
	return len;
}

/* ---------------------------------------------------------------- reporting and waiting */

GPUNIC_DEV_FN void gt_fail(const struct gt_args *a, uint32_t code, uint64_t detail)
{
	if (gt_atomic_add(&a->res->errors, 1) == 0) {
		a->res->first_code = code;
		a->res->first_detail = detail;
	}
}

struct gt_wait {
	uint64_t start;
	uint32_t spins;
};

GPUNIC_DEV_FN void gt_wait_init(struct gt_wait *w)
{
	w->start = gpunic_dev_clock_ns();
	w->spins = 0;
}

/* One round of a bounded wait: 0 once the budget is spent or the host raised stop. */
GPUNIC_DEV_FN int gt_wait_more(const struct gt_args *a, struct gt_wait *w)
{
	gpunic_dev_spin_wait(&w->spins);
	if ((w->spins & 255u) == 0 && gpunic_dev_load_relaxed_u32(&a->ctl->stop))
		return 0;
	return gpunic_dev_clock_ns() - w->start < a->budget_ns;
}

GPUNIC_DEV_FN void gt_record_cqe(struct gt_cqe_rec *r, const struct gpunic_dev_cqe *c)
{
	r->opcode = c->opcode;
	r->wqe_opcode = c->wqe_opcode;
	r->syndrome = c->syndrome;
	r->vendor_syndrome = c->vendor_syndrome;
	r->byte_cnt = c->byte_cnt;
	r->imm = c->imm;
	r->qpn = c->qpn;
	r->wqe_counter = c->wqe_counter;
}

/* ---------------------------------------------------------------- case 1: one request */

/*
 * One thread owns the send queue: post one signalled request (by SGE or inline), ring, wait for
 * its completion and check it; for a READ, check the bytes that landed in lbuf too.
 */
GPUNIC_DEV_FN void gt_body_xfer(const struct gt_args *a)
{
	struct gpunic_dev_qp *qp = a->qp;
	uint8_t op = (uint8_t)a->opcode;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	struct gpunic_dev_cqe cqe;
	struct gt_wait w;
	uint32_t bad;
	int64_t idx;
	int got, err;

	gt_wait_init(&w);
	if (a->flags & GT_F_INLINE) {
		/* Inline bytes are copied by the executor itself: its own address. */
		sge.addr = (uint64_t)(uintptr_t)(a->lbuf + a->loff);
		sge.lkey = 0;
	} else {
		sge.addr = a->liova + a->loff;
		sge.lkey = a->lkey;
	}
	sge.length = a->len;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.flags = GPUNIC_DEV_SEND_SIGNALED;
	if (a->flags & GT_F_INLINE)
		wr.flags |= GPUNIC_DEV_SEND_INLINE;
	wr.num_sge = 1;
	wr.imm = a->imm;
	wr.remote_addr = a->riova + a->roff;
	wr.rkey = a->rkey;
	wr.sg_list = &sge;

	idx = gpunic_dev_post_send(qp, &wr);
	if (idx < 0) {
		gt_fail(a, GT_E_POST, (uint64_t)-idx);
		return;
	}
	gt_atomic_add(&a->res->posted, 1);
	err = gpunic_dev_submit(qp);
	if (err) {
		gt_fail(a, GT_E_SUBMIT, (uint64_t)-err);
		return;
	}
	while (!(got = gpunic_dev_poll_scq(qp, &cqe)) && gt_wait_more(a, &w))
		;
	if (!got) {
		gt_fail(a, GT_E_SCQ_TIMEOUT, 0);
		return;
	}
	gt_atomic_add(&a->res->scqes, 1);
	gt_record_cqe(&a->res->scqe, &cqe);
	if (gpunic_dev_cqe_is_error(&cqe))
		gt_fail(a, GT_E_CQE_ERROR, (uint64_t)cqe.syndrome << 8 | cqe.vendor_syndrome);
	else if (cqe.opcode != MLX5_CQE_REQ || cqe.wqe_opcode != op)
		gt_fail(a, GT_E_CQE_OPCODE, (uint64_t)cqe.opcode << 8 | cqe.wqe_opcode);
	else if (cqe.wqe_counter != ((uint32_t)idx & 0xffff) || cqe.wqe_idx != (uint32_t)idx)
		gt_fail(a, GT_E_CQE_COUNTER, (uint64_t)cqe.wqe_counter << 32 | (uint32_t)idx);
	else if (cqe.qpn != qp->qpn)
		gt_fail(a, GT_E_CQE_QPN, cqe.qpn);
	else if (op == MLX5_OPCODE_RDMA_READ && cqe.byte_cnt != a->len)
		gt_fail(a, GT_E_CQE_BYTES, (uint64_t)cqe.byte_cnt << 32 | a->len);
	if (!gpunic_dev_sq_done(qp, (uint32_t)idx))
		gt_fail(a, GT_E_SQ_STATE, (uint32_t)idx);
	if (op == MLX5_OPCODE_RDMA_READ) {
		/* The READ's bytes, as the executor sees them once the CQE said they are there. */
		bad = gt_mismatch(a->lbuf + a->loff, a->len, a->seed);
		if (bad != a->len)
			gt_fail(a, GT_E_DATA, bad);
	}
	/* Nothing else may complete on this queue. */
	if (gpunic_dev_poll_scq(qp, &cqe))
		gt_fail(a, GT_E_EXTRA_CQE, cqe.opcode);
	a->res->ns = gpunic_dev_clock_ns() - w.start;
	gt_atomic_add(&a->res->finished, 1);
}

/* ---------------------------------------------------------------- case 2: receives */

GPUNIC_DEV_FN uint8_t gt_recv_cqe_opcode(uint8_t op)
{
	if (op == MLX5_OPCODE_SEND)
		return MLX5_CQE_RESP_SEND;
	if (op == MLX5_OPCODE_SEND_IMM)
		return MLX5_CQE_RESP_SEND_IMM;
	return MLX5_CQE_RESP_WR_IMM;
}

/* Does message @m land in the CQE rather than in its buffer? */
GPUNIC_DEV_FN int gt_recv_in_cqe(const struct gt_args *a, const struct gt_msg *m)
{
	return (a->flags & GT_F_SCATTER) && m->op != MLX5_OPCODE_RDMA_WRITE_IMM &&
	       m->len <= GT_SCATTER_MAX;
}

/*
 * One thread owns the receive queue: post one receive per planned message (zero-length for
 * WRITE_WITH_IMM, a buffer in lbuf for SEND), tell the host, then take the completions in order
 * and check opcode, byte count, immediate, where the payload went and the payload itself.
 */
GPUNIC_DEV_FN void gt_body_recv(const struct gt_args *a)
{
	struct gpunic_dev_qp *qp = a->qp;
	struct gpunic_dev_cqe cqe;
	struct gpunic_dev_sge sge;
	const struct gt_msg *m;
	const uint8_t *data;
	uint32_t i, first = 0, bad;
	struct gt_wait w;
	int64_t r;
	int got;

	gt_wait_init(&w);
	for (i = 0; i < a->nmsg; i++) {
		m = &a->msg[i];
		if (m->op == MLX5_OPCODE_RDMA_WRITE_IMM) {
			r = gpunic_dev_post_recv(qp, (const struct gpunic_dev_sge *)0, 0);
		} else {
			sge.addr = a->liova + m->off;
			sge.length = m->len + GT_RECV_SLACK;
			sge.lkey = a->lkey;
			r = gpunic_dev_post_recv(qp, &sge, 1);
		}
		if (i == 0 && r >= 0)
			first = (uint32_t)r;
		if (r < 0 || (uint32_t)r != first + i) {
			gt_fail(a, GT_E_RECV_POST, i);
			gpunic_dev_store_release_u32(&a->ctl->ready, 2);
			return;
		}
	}
	gpunic_dev_store_release_u32(&a->ctl->ready, 1);

	for (i = 0; i < a->nmsg; i++) {
		m = &a->msg[i];
		while (!(got = gpunic_dev_poll_rcq(qp, &cqe)) && gt_wait_more(a, &w))
			;
		if (!got) {
			gt_fail(a, GT_E_RCQ_TIMEOUT, i);
			return;
		}
		gt_atomic_add(&a->res->rcqes, 1);
		if (gpunic_dev_cqe_is_error(&cqe)) {
			gt_fail(a, GT_E_CQE_ERROR,
				(uint64_t)cqe.syndrome << 8 | cqe.vendor_syndrome);
			continue;
		}
		if (cqe.opcode != gt_recv_cqe_opcode(m->op)) {
			gt_fail(a, GT_E_CQE_OPCODE, (uint64_t)cqe.opcode << 8 | m->op);
			continue;
		}
		if (cqe.wqe_idx != first + i)
			gt_fail(a, GT_E_RECV_ORDER, (uint64_t)cqe.wqe_idx << 32 | (first + i));
		if (cqe.qpn != qp->qpn)
			gt_fail(a, GT_E_CQE_QPN, cqe.qpn);
		if (cqe.byte_cnt != m->len)
			gt_fail(a, GT_E_CQE_BYTES, (uint64_t)cqe.byte_cnt << 32 | m->len);
		if (m->op != MLX5_OPCODE_SEND && cqe.imm != gt_imm(m->seed))
			gt_fail(a, GT_E_CQE_IMM, (uint64_t)cqe.imm << 32 | gt_imm(m->seed));
		if (cqe.data_in_cqe != (gt_recv_in_cqe(a, m) ? 1 : 0)) {
			gt_fail(a, GT_E_CQE_SCATTER, i);
			continue;
		}
		data = cqe.data_in_cqe ? cqe.data : a->lbuf + m->off;
		bad = gt_mismatch(data, m->len, m->seed);
		if (bad != m->len)
			gt_fail(a, GT_E_DATA, (uint64_t)i << 32 | bad);
	}
	if (gpunic_dev_poll_rcq(qp, &cqe))
		gt_fail(a, GT_E_EXTRA_CQE, cqe.opcode);
	a->res->ns = gpunic_dev_clock_ns() - w.start;
	gt_atomic_add(&a->res->finished, 1);
}

/* ---------------------------------------------------------------- cases 3 and 4: many posters */

/*
 * The request that carries chunk @c: an RDMA WRITE from its place in lbuf to the same place at
 * the peer, by SGE or inline (from the executor's copy).
 */
GPUNIC_DEV_FN void gt_chunk_wr(const struct gt_args *a, uint32_t c, int signalled, int inl,
			       struct gpunic_dev_send_wr *wr, struct gpunic_dev_sge *sge)
{
	uint64_t off = (uint64_t)c * a->chunk;

	memset(wr, 0, sizeof(*wr));
	wr->opcode = MLX5_OPCODE_RDMA_WRITE;
	wr->flags = signalled ? GPUNIC_DEV_SEND_SIGNALED : 0;
	if (inl) {
		wr->flags |= GPUNIC_DEV_SEND_INLINE;
		sge->addr = (uint64_t)(uintptr_t)(a->lbuf + off);
		sge->lkey = 0;
	} else {
		sge->addr = a->liova + off;
		sge->lkey = a->lkey;
	}
	sge->length = a->chunk;
	wr->num_sge = 1;
	wr->remote_addr = a->riova + a->roff + off;
	wr->rkey = a->rkey;
	wr->sg_list = sge;
}

/*
 * Which of a poster's requests ask for a completion: every second one and the last. A poster's
 * last request is then also the last in ring order of whatever it posted, so the final WQE of
 * the run is signalled and its CQE hands the whole ring back; and no run of unsignalled WQEs is
 * longer than one per poster, which the send queue must exceed.
 */
GPUNIC_DEV_FN int gt_mt_signalled(uint32_t j, uint32_t n)
{
	return (j & 1u) || j == n - 1;
}

/* Warp case: the size of the batch that starts at request @s of warp @warp. */
GPUNIC_DEV_FN uint32_t gt_warp_batch(const struct gt_args *a, uint32_t warp, uint32_t s)
{
	uint32_t n = (a->flags & GT_F_FULL) ? a->nwr_max : 1 + (s * 7u + warp * 13u) % a->nwr_max;

	return n < a->per_poster - s ? n : a->per_poster - s;
}

/* Warp case: request i of a batch of n; the last one of every batch is signalled. */
GPUNIC_DEV_FN int gt_warp_signalled(uint32_t s, uint32_t i, uint32_t n)
{
	return ((s + i) & 1u) || i == n - 1;
}

GPUNIC_DEV_FN int gt_warp_inline(const struct gt_args *a, uint32_t c)
{
	return (a->flags & GT_F_INLINE) && c % 3 == 2;
}

/* Signalled requests and basic blocks a whole mt (@warp 0) or warp (1) run posts on @qp (the
 * caller's copy of the QP: only its sizes are read). */
GPUNIC_DEV_FN void gt_expect(const struct gt_args *a, const struct gpunic_dev_qp *qp, int warp,
			     uint32_t *scqes, uint32_t *bbs)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	uint32_t p, s, i, n, c;
	int b;

	*scqes = 0;
	*bbs = 0;
	for (p = 0; p < a->nposters; p++) {
		for (s = 0; s < a->per_poster; s += n) {
			n = warp ? gt_warp_batch(a, p, s) : 1;
			for (i = 0; i < n; i++) {
				c = p * a->per_poster + s + i;
				gt_chunk_wr(a, c, 0, warp && gt_warp_inline(a, c), &wr, &sge);
				b = gpunic_dev_send_wqe_bbs(qp, &wr);
				*bbs += b > 0 ? (uint32_t)b : 0;
				*scqes += warp ? gt_warp_signalled(s, i, n) :
						 gt_mt_signalled(s, a->per_poster);
			}
		}
	}
}

/*
 * One of many threads sharing the send queue (gpunic_dev_post_send_mt): write its chunks' bytes
 * into lbuf, post a WRITE for each, retry while the ring is full (the consumer frees it).
 */
GPUNIC_DEV_FN void gt_body_mt(const struct gt_args *a, uint32_t tid)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	uint32_t j, c, full = 0;
	struct gt_wait w;
	int64_t r;

	gt_wait_init(&w);
	for (j = 0; j < a->per_poster; j++) {
		c = tid * a->per_poster + j;
		gt_fill(a->lbuf + (size_t)c * a->chunk, a->chunk, gt_chunk_seed(c));
		gt_chunk_wr(a, c, gt_mt_signalled(j, a->per_poster), 0, &wr, &sge);
		while ((r = gpunic_dev_post_send_mt(a->qp, &wr)) == -ENOMEM) {
			full++;
			if (!gt_wait_more(a, &w)) {
				gt_fail(a, GT_E_SQ_FULL, tid);
				return;
			}
		}
		if (r < 0) {
			gt_fail(a, GT_E_POST, (uint64_t)-r);
			return;
		}
	}
	gt_atomic_add(&a->res->posted, a->per_poster);
	gt_atomic_add(&a->res->enomem, full);
	gt_atomic_add(&a->res->finished, 1);
}

/*
 * Warp @warp's share, gpunic_dev_post_send_warp: batches of 1..32 WRITEs (or nwr_max each with
 * GT_F_FULL). On the GPU all 32 lanes run this together: lane i builds request i of the batch in
 * @wrs / @sgs (the warp's slice of shared memory) and writes its chunk; on the host the calling
 * thread builds them all. Every decision that leaves or repeats the loop is warp-uniform.
 */
GPUNIC_DEV_FN void gt_body_warp(const struct gt_args *a, uint32_t warp,
				struct gpunic_dev_send_wr *wrs, struct gpunic_dev_sge *sgs)
{
	uint32_t s = 0, n, i, c, lo, hi, full = 0;
	struct gt_wait w;
	int64_t r;

	gt_wait_init(&w);
	while (s < a->per_poster) {
		n = gt_warp_batch(a, warp, s);
#if GPUNIC_DEV_ON_GPU
		lo = gt_lane();
		hi = lo + 1;
#else
		lo = 0;
		hi = n;
#endif
		for (i = lo; i < hi && i < n; i++) {
			c = warp * a->per_poster + s + i;
			gt_fill(a->lbuf + (size_t)c * a->chunk, a->chunk, gt_chunk_seed(c));
			gt_chunk_wr(a, c, gt_warp_signalled(s, i, n), gt_warp_inline(a, c), &wrs[i],
				    &sgs[i]);
		}
		gt_syncwarp();
		for (;;) {
			r = gpunic_dev_post_send_warp(a->qp, wrs, n);
			if (r != -ENOMEM)
				break;
			full++;
			if (gt_warp_any(!gt_wait_more(a, &w)))
				break;
		}
		if (r < 0) {
			if (gt_lane() == 0)
				gt_fail(a, r == -ENOMEM ? GT_E_SQ_FULL : GT_E_POST,
					r == -ENOMEM ? warp : (uint64_t)-r);
			return;
		}
		/* Every lane is done with its request before the next batch overwrites it. */
		gt_syncwarp();
		s += n;
	}
	if (gt_lane() == 0) {
		gt_atomic_add(&a->res->posted, a->per_poster);
		gt_atomic_add(&a->res->enomem, full);
		gt_atomic_add(&a->res->finished, 1);
	}
}

/*
 * The send CQ's one consumer while the posters run: take want_scqes completions, all good
 * WRITE completions of this QP, which hands ring space back to the posters; then nothing may be
 * outstanding and no further CQE may come.
 */
GPUNIC_DEV_FN void gt_body_consume(const struct gt_args *a)
{
	struct gpunic_dev_qp *qp = a->qp;
	struct gpunic_dev_cqe cqe;
	uint32_t got = 0, done, resv;
	struct gt_wait w;

	gt_wait_init(&w);
	while (got < a->want_scqes) {
		if (!gpunic_dev_poll_scq(qp, &cqe)) {
			if (!gt_wait_more(a, &w)) {
				gt_fail(a, GT_E_SCQ_TIMEOUT, got);
				break;
			}
			continue;
		}
		got++;
		if (gpunic_dev_cqe_is_error(&cqe))
			gt_fail(a, GT_E_CQE_ERROR,
				(uint64_t)cqe.syndrome << 8 | cqe.vendor_syndrome);
		else if (cqe.opcode != MLX5_CQE_REQ || cqe.wqe_opcode != MLX5_OPCODE_RDMA_WRITE)
			gt_fail(a, GT_E_CQE_OPCODE, (uint64_t)cqe.opcode << 8 | cqe.wqe_opcode);
		else if (cqe.qpn != qp->qpn)
			gt_fail(a, GT_E_CQE_QPN, cqe.qpn);
	}
	a->res->scqes = got;
	if (got == a->want_scqes) {
		done = gpunic_dev_load_acquire_u32(&qp->state->sq_completed);
		resv = gpunic_dev_load_relaxed_u32(&qp->state->sq_reserved);
		if (done != resv)
			gt_fail(a, GT_E_SQ_STATE, (uint64_t)done << 32 | resv);
		if (gpunic_dev_poll_scq(qp, &cqe))
			gt_fail(a, GT_E_EXTRA_CQE, cqe.opcode);
	}
	a->res->ns = gpunic_dev_clock_ns() - w.start;
	gpunic_dev_store_release_u32(&a->res->consumed, 1);
}

#ifdef __cplusplus
}
#endif

#endif /* GT_CASES_H */
