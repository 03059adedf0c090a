/* SPDX-License-Identifier: MIT */
/*
 * The bodies of the mlx5dev suite: what third-party device code does with a QP, written against
 * mlx5_dev_lib.h alone (never gpunic_dev.h). One source, built by nvcc into the kernel of
 * md_kernels.cu (one GPU thread) and by a C11 compiler for the CPU twin's host thread
 * (test_mlx5dev_twin.c), exactly as tests/gpu splits gt_cases.h.
 *
 * Every wait is bounded by the run's deadline (globaltimer on the GPU, CLOCK_MONOTONIC on the
 * host) and by the host's stop flag; every failure is reported in struct md_result: a body never
 * hangs or traps. The body is one thread: no warp-wide primitive appears anywhere.
 *
 * Addresses: the body touches the local data region through @lbuf (the executor's address of
 * it) and names it in WQEs through @liova (the address its MR was registered with).
 */
#ifndef MD_CASES_H
#define MD_CASES_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mlx5_dev_lib.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define MD_FN static __host__ __device__ __forceinline__
#else
#define MD_FN static inline
#endif

#define MD_MAX_OPS 144u
#define MD_GUARD 0xA5u
/* Inline sizes: one WQEBB holds 28 bytes of inline WRITE payload beside ctrl and raddr. */
#define MD_INLINE_MAX 28u
/* How long an executor told to stop may take to leave: the host's grace, both backends. */
#define MD_STOP_GRACE_NS (4ull * 1000000000ull)
/* A quiet spell: how long the body watches for completions nobody asked for. */
#define MD_QUIET_NS (20ull * 1000000ull)
/* How long before the first post the body polls an empty send CQ. */
#define MD_EARLY_NS (2ull * 1000000ull)
/* MD_F_QUIET: the pause before each doorbell after the first, longer than the softnic takes
 * to stop looking at a QP that has nothing in hand (a few thousand engine polls: well under a
 * millisecond here, 100 ms was enough to lose the QP on the GPU machine). */
#define MD_QUIET_SPELL_NS (150ull * 1000000ull)

enum md_kind {
	MD_K_WRITE = 0,    /* RDMA WRITE, one data segment */
	MD_K_INLINE = 1,   /* RDMA WRITE, inline */
	MD_K_READ = 2,     /* RDMA READ, one data segment */
	MD_K_RAW = 3,      /* @opcode with zeroed segments (m5d_post_raw), 4 units */
};

/* One operation: @len bytes at offset @off of the local region and @roff of the peer's (source
 * on one side, destination on the other). */
struct md_op {
	uint8_t kind;
	uint8_t opcode;    /* MD_K_RAW */
	uint8_t sflags;    /* enum m5d_send_flags beside M5D_SEND_SIGNALED (M5D_SEND_FENCE) */
	uint8_t pad;
	uint32_t len;
	uint32_t off;
	uint32_t roff;
};

enum md_body {
	MD_BODY_OPS = 0,   /* the operation plan, then the phantom checks */
	MD_BODY_PUT = 1,   /* signalled puts: WRITE then fetch-and-add on the peer's signal word */
};

enum md_flags {
	MD_F_BAIT = 1u << 0,           /* after the plan: a valid WQE at the producer, never rung */
	MD_F_BAIT_WRONG_QPN = 1u << 1, /* ... and a doorbell announcing it with another QP's QPN */
	MD_F_NOP = 1u << 2,            /* put: a signalled NOP after every eighth signal */
	MD_F_EXPECT_ERR = 1u << 3,     /* ops: the first completion is an error: record it, stop */
	MD_F_QUIET = 1u << 4,          /* ops: each doorbell after the first waits until every WQE
					* before it completed, then MD_QUIET_SPELL_NS more */
};

enum md_err {
	MD_E_NONE = 0,
	MD_E_POST,         /* a post returned an error (detail: -code << 32 | op) */
	MD_E_TIMEOUT,      /* a completion did not come (detail: completions so far) */
	MD_E_STOPPED,      /* the host raised stop */
	MD_E_CQE_ERROR,    /* error CQE (detail: opcode << 16 | syndrome << 8 | vendor) */
	MD_E_CQE_OPCODE,   /* CQE or WQE opcode (detail: opcode << 8 | wqe opcode) */
	MD_E_CQE_COUNTER,  /* wqe_counter (detail: got << 32 | want) */
	MD_E_CQE_QPN,      /* (detail: qpn) */
	MD_E_CQE_BYTES,    /* byte_cnt (detail: got << 32 | want) */
	MD_E_DATA,         /* READ data (detail: op << 32 | byte) */
	MD_E_FETCH,        /* fetch-and-add's original value (detail: got) */
	MD_E_ACK_TIMEOUT,  /* put: the host did not confirm the buffer (detail: put) */
	MD_E_MAILBOX,      /* the proxy mailbox is not 8-aligned (detail: its address) */
	MD_E_MAX
};

MD_FN const char *md_err_name(uint32_t code)
{
	switch (code) {
	case MD_E_NONE: return "none";
	case MD_E_POST: return "post";
	case MD_E_TIMEOUT: return "send completion timeout";
	case MD_E_STOPPED: return "stopped by the host";
	case MD_E_CQE_ERROR: return "error CQE";
	case MD_E_CQE_OPCODE: return "CQE opcode";
	case MD_E_CQE_COUNTER: return "CQE wqe_counter";
	case MD_E_CQE_QPN: return "CQE qpn";
	case MD_E_CQE_BYTES: return "CQE byte count";
	case MD_E_DATA: return "READ data";
	case MD_E_FETCH: return "fetched value";
	case MD_E_ACK_TIMEOUT: return "host confirmation timeout";
	case MD_E_MAILBOX: return "proxy mailbox not 8-aligned (a 64-bit atomic faults)";
	default: return "?";
	}
}

/* Host <-> executor flags, in memory both reach while the run goes on (mapped for a GPU). */
struct md_ctl {
	uint32_t stop;     /* host -> executor: leave every wait */
	uint32_t done;     /* executor -> host: the body returned */
	uint32_t ack;      /* host -> executor (put): puts whose buffer the host checked */
	uint32_t pad[13];
};

/* What a run reports; 32-bit words only, written with volatile stores at the end. */
struct md_result {
	uint32_t errors;
	uint32_t first_code;       /* enum md_err */
	uint32_t first_detail_lo;
	uint32_t first_detail_hi;
	uint32_t finished;         /* 1: the body ran to its end */
	uint32_t posted;           /* WQEs handed to the NIC (the bait not included) */
	uint32_t completions;      /* send CQEs taken */
	uint32_t reads_checked;    /* READs whose bytes the executor checked */
	uint32_t cqe_init_bad;     /* CQEs whose op_own was not 0xF1 before any work */
	uint32_t cqe_init_first;   /* index << 8 | op_own of the first such */
	uint32_t early_cqes;       /* CQEs taken before anything was posted (must be 0) */
	uint32_t late_cqes;        /* CQEs after the last expected one (phantom WQEs) */
	uint32_t bait_cqes;        /* of those, after the bait was written */
	uint32_t scq_dbrec_end;    /* the CQ doorbell records, raw, at the end */
	uint32_t rcq_dbrec_end;
	uint32_t scq_ci_end;       /* the library's consumer counter at the end */
	uint32_t puts;             /* put: signals completed */
	uint32_t nops;             /* put: NOP completions */
	uint32_t err_cqes;         /* MD_F_EXPECT_ERR: error completions taken */
	uint32_t err_opcode;       /* the first one's CQE opcode, WQE opcode, syndrome, counter */
	uint32_t err_wqe_opcode;
	uint32_t err_syndrome;
	uint32_t err_counter;
	uint32_t ns_lo;
	uint32_t ns_hi;
};

struct md_shared {
	struct md_ctl ctl;
	struct md_result res;
};

/* Everything a body needs; a kernel gets it by value (__grid_constant__). */
struct md_args {
	struct m5d_qp qp;          /* the library's descriptor, as the fixture filled it */
	struct md_shared *sh;      /* executor's address */
	uint8_t *lbuf;             /* local region, executor's address */
	uint64_t liova;            /* local region as its MR names it */
	uint64_t riova;            /* the peer's region as its MR names it */
	uint32_t lkey;
	uint32_t rkey;
	uint64_t budget_ns;        /* the whole run's deadline */
	uint32_t body;             /* enum md_body */
	uint32_t flags;            /* enum md_flags */
	uint32_t seed;             /* op k / put i uses pattern seed + k */
	uint32_t nops;
	uint32_t nbatch;           /* WQEs per doorbell: batch[j % nbatch] for the j-th ring */
	uint32_t batch[8];
	uint32_t bait_off;         /* bait: source in lbuf, destination at the peer */
	uint32_t nput;
	uint32_t put_off;          /* put: source in lbuf, destination at the peer */
	uint32_t sig_off;          /* put: the signal word at the peer */
	uint32_t fetch_off;        /* put: where the fetched value lands in lbuf */
	uint32_t pad;
	struct md_op op[MD_MAX_OPS];
};

/* ---------------------------------------------------------------- helpers */

/* Byte @i of pattern @seed. */
MD_FN uint8_t md_pat(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 0x9E3779B1u ^ (i * 0x85EBCA6Bu + 0x632BE5ABu);

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)(x ^ (x >> 24));
}

MD_FN uint64_t md_pat8(uint32_t seed, uint32_t i)
{
	uint64_t w = 0;

	for (uint32_t k = 0; k < 8; k++)
		w |= (uint64_t)md_pat(seed, i + k) << (8 * k);
	return w;
}

/* Fill @p with pattern @seed; a GPU writes aligned runs 8 bytes at a time. */
MD_FN void md_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i = 0;

#if M5D_ON_GPU
	if (((uintptr_t)p & 7) == 0)
		for (; i + 8 <= len; i += 8)
			*(volatile uint64_t *)(void *)(p + i) = md_pat8(seed, i);
#endif
	for (; i < len; i++)
		((volatile uint8_t *)p)[i] = md_pat(seed, i);
}

/* Index of the first byte of @p that is not pattern @seed, or @len. */
MD_FN uint32_t md_mismatch(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i = 0;

#if M5D_ON_GPU
	/* eight loads in flight, then the compares: across PCIe each load is a round trip */
	if (((uintptr_t)p & 7) == 0)
		for (; i + 64 <= len; i += 64) {
			uint64_t v[8];
			int bad = 0;

			for (uint32_t k = 0; k < 8; k++)
				v[k] = m5d_read64(p + i + 8 * k);
			for (uint32_t k = 0; k < 8; k++)
				bad |= v[k] != md_pat8(seed, i + 8 * k);
			if (bad)
				break;
		}
#endif
	for (; i < len; i++)
		if (m5d_read8(p + i) != md_pat(seed, i))
			return i;
	return len;
}

/* The result, built in registers and published once. */
MD_FN void md_fail(struct md_result *r, uint32_t code, uint64_t detail)
{
	if (r->errors++ == 0) {
		r->first_code = code;
		r->first_detail_lo = (uint32_t)detail;
		r->first_detail_hi = (uint32_t)(detail >> 32);
	}
}

struct md_clock {
	uint64_t start;
	uint64_t end;
	uint32_t spins;
};

/* One round of a wait: 0 once the run's deadline passed or the host raised stop. */
MD_FN int md_wait_more(const struct md_args *a, struct md_clock *c, struct md_result *r)
{
	c->spins++;
#if !M5D_ON_GPU
	if ((c->spins & 63u) == 0)
		sched_yield();
#endif
	if ((c->spins & 255u) == 0 && m5d_read32(&a->sh->ctl.stop)) {
		md_fail(r, MD_E_STOPPED, c->spins);
		return 0;
	}
	return m5d_now_ns() < c->end;
}

/* A body's end: the CQ records and consumer as it left them, the time it took, and the whole
 * result handed to the host, done last. */
MD_FN void md_finish(const struct md_args *a, const struct m5d_qp *q, const struct md_clock *c,
		     struct md_result *r)
{
	const uint32_t *src = (const uint32_t *)r;
	uint32_t *dst = (uint32_t *)&a->sh->res;
	uint64_t ns;

	r->scq_dbrec_end = m5d_read32(q->cq_sq.dbrec);
	r->rcq_dbrec_end = m5d_read32(q->cq_rq.dbrec);
	r->scq_ci_end = q->cq_sq.cqe_ci;
	r->finished = r->errors ? 0 : 1;
	ns = m5d_now_ns() - c->start;
	r->ns_lo = (uint32_t)ns;
	r->ns_hi = (uint32_t)(ns >> 32);
	for (uint32_t i = 0; i < sizeof(*r) / 4; i++)
		m5d_write32(&dst[i], src[i]);
	m5d_write32(&a->sh->ctl.done, 1);
}

MD_FN uint8_t md_op_opcode(const struct md_op *op)
{
	if (op->kind == MD_K_RAW)
		return op->opcode;
	return op->kind == MD_K_READ ? (uint8_t)MLX5_OPCODE_RDMA_READ :
				       (uint8_t)MLX5_OPCODE_RDMA_WRITE;
}

/* Check one send CQE against what the library expects: a good completion of WQE @idx with
 * @wqe_opcode (and, for READ and atomics, @bytes). Return: 0 or the error recorded. */
MD_FN int md_check_cqe(const struct m5d_qp *qp, const struct m5d_cqe *c, uint32_t idx,
		       uint8_t wqe_opcode, uint32_t bytes, struct md_result *r)
{
	if (c->opcode == MLX5_CQE_REQ_ERR || c->opcode == MLX5_CQE_RESP_ERR) {
		md_fail(r, MD_E_CQE_ERROR,
			(uint64_t)c->opcode << 16 | (uint32_t)c->syndrome << 8 | c->vendor_syndrome);
		return 1;
	}
	if (c->opcode != MLX5_CQE_REQ || c->wqe_opcode != wqe_opcode) {
		md_fail(r, MD_E_CQE_OPCODE, (uint64_t)c->opcode << 8 | c->wqe_opcode);
		return 1;
	}
	if (c->wqe_counter != (idx & 0xffffu)) {
		md_fail(r, MD_E_CQE_COUNTER, (uint64_t)c->wqe_counter << 32 | idx);
		return 1;
	}
	if (c->qpn != qp->qpn) {
		md_fail(r, MD_E_CQE_QPN, c->qpn);
		return 1;
	}
	if (bytes != UINT32_MAX && c->byte_cnt != bytes) {
		md_fail(r, MD_E_CQE_BYTES, (uint64_t)c->byte_cnt << 32 | bytes);
		return 1;
	}
	return 0;
}

/* Before any work: the NIC created every CQE as 0xF1, and an owner-bit poller sees none. */
MD_FN void md_check_fresh_cqs(const struct md_args *a, struct m5d_qp *q, struct md_result *r)
{
	const struct m5d_cq *cqs[2] = { &q->cq_sq, &q->cq_rq };
	struct m5d_cqe c;
	uint64_t end;

	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < cqs[k]->cqe_num; i++) {
			uint8_t v = m5d_read8((const uint8_t *)cqs[k]->cqe_daddr + (size_t)i * 64 + 63);

			if (v != 0xF1u && r->cqe_init_bad++ == 0)
				r->cqe_init_first = (uint32_t)k << 31 | i << 8 | v;
		}
	end = m5d_now_ns() + MD_EARLY_NS;
	while (m5d_now_ns() < end && !m5d_read32(&a->sh->ctl.stop))
		if (m5d_poll_cq(&q->cq_sq, &c))
			r->early_cqes++;
}

/* Watch the send CQ for @ns: every CQE taken counts in *@n. */
MD_FN void md_watch(const struct md_args *a, struct m5d_qp *q, uint64_t ns, uint32_t *n)
{
	uint64_t end = m5d_now_ns() + ns;
	struct m5d_cqe c;

	while (m5d_now_ns() < end && !m5d_read32(&a->sh->ctl.stop))
		if (m5d_poll_cq(&q->cq_sq, &c))
			(*n)++;
}

/* ---------------------------------------------------------------- body: the plan */

MD_FN int64_t md_post_op(struct m5d_qp *q, const struct md_args *a, const struct md_op *op)
{
	uint32_t f = M5D_SEND_SIGNALED | op->sflags;

	switch (op->kind) {
	case MD_K_INLINE:
		return m5d_post_write_inline(q, a->lbuf + op->off, op->len, a->riova + op->roff,
					     a->rkey, f);
	case MD_K_READ:
		return m5d_post_rdma(q, MLX5_OPCODE_RDMA_READ, a->liova + op->off, a->lkey,
				     op->len, a->riova + op->roff, a->rkey, f);
	case MD_K_RAW:
		return m5d_post_raw(q, op->opcode, 4, f);
	default:
		return m5d_post_rdma(q, MLX5_OPCODE_RDMA_WRITE, a->liova + op->off, a->lkey,
				     op->len, a->riova + op->roff, a->rkey, f);
	}
}

/*
 * Post the plan in batches (one doorbell each), every WQE signalled; take each completion in
 * order and check it (and a READ's bytes); keep at most the ring's worth outstanding. Then the
 * phantom checks: a quiet spell with no completion, and (MD_F_BAIT) a valid WQE written at the
 * producer but never announced, which must never run.
 */
MD_FN void md_body_ops(const struct md_args *a)
{
	struct m5d_qp q = a->qp;
	struct md_result r;
	struct md_clock clk;
	struct m5d_cqe c;
	uint32_t idx[MD_MAX_OPS];
	uint32_t k = 0, done = 0, ring = 0, n = a->nops < MD_MAX_OPS ? a->nops : MD_MAX_OPS;
	int64_t got;

	memset(&r, 0, sizeof(r));
	clk.start = m5d_now_ns();
	clk.end = clk.start + a->budget_ns;
	clk.spins = 0;
	md_check_fresh_cqs(a, &q, &r);
	/* DOCA's proxy word is a 64-bit atomic: on a GPU, any other alignment faults */
	if (q.nic_handler == M5D_HANDLER_CPU_PROXY && ((uintptr_t)q.cpu_proxy_pi & 7u))
		md_fail(&r, MD_E_MAILBOX, (uint64_t)(uintptr_t)q.cpu_proxy_pi);

	while (done < n && !r.errors) {
		/* MD_F_QUIET: the next doorbell only after the QP had nothing in hand a while */
		if ((a->flags & MD_F_QUIET) && k > 0 && k < n && done == k)
			md_watch(a, &q, MD_QUIET_SPELL_NS, &r.late_cqes);
		if (k < n && m5d_sq_room(&q, 1) && (!(a->flags & MD_F_QUIET) || done == k)) {
			uint32_t want = a->batch[ring++ % a->nbatch], posted = 0;

			while (posted < want && k < n && m5d_sq_room(&q, 1)) {
				got = md_post_op(&q, a, &a->op[k]);
				if (got < 0) {
					md_fail(&r, MD_E_POST, (uint64_t)(-got) << 32 | k);
					break;
				}
				idx[k++] = (uint32_t)got;
				posted++;
			}
			if (r.errors)
				break;
			m5d_ring_db(&q);
			r.posted += posted;
		}
		if (!m5d_poll_cq(&q.cq_sq, &c)) {
			/* nothing to post either: wait for the NIC */
			if ((k == n || !m5d_sq_room(&q, 1) || ((a->flags & MD_F_QUIET) && done < k)) &&
			    !md_wait_more(a, &clk, &r)) {
				if (!r.errors)
					md_fail(&r, MD_E_TIMEOUT, done);
				break;
			}
			continue;
		}
		{
			const struct md_op *op = &a->op[done];
			uint32_t bad;

			if ((a->flags & MD_F_EXPECT_ERR) &&
			    (c.opcode == MLX5_CQE_REQ_ERR || c.opcode == MLX5_CQE_RESP_ERR)) {
				r.err_cqes++;
				r.err_opcode = c.opcode;
				r.err_wqe_opcode = c.wqe_opcode;
				r.err_syndrome = c.syndrome;
				r.err_counter = c.wqe_counter;
				break;
			}
			if (md_check_cqe(&q, &c, idx[done], md_op_opcode(op),
					 op->kind == MD_K_READ ? op->len : UINT32_MAX, &r))
				break;
			m5d_sq_retire(&q, c.wqe_counter);
			if (op->kind == MD_K_READ) {
				bad = md_mismatch(a->lbuf + op->off, op->len, a->seed + done);
				if (bad != op->len) {
					md_fail(&r, MD_E_DATA, (uint64_t)done << 32 | bad);
					break;
				}
				r.reads_checked++;
			}
			done++;
			r.completions++;
		}
	}

	if (!r.errors) {
		md_watch(a, &q, MD_QUIET_NS, &r.late_cqes);
		if (a->flags & MD_F_BAIT) {
			/* A whole, valid WQE at the producer: only a NIC that runs past what it was
			 * told would execute it. */
			got = m5d_post_rdma(&q, MLX5_OPCODE_RDMA_WRITE, a->liova + a->bait_off, a->lkey,
					    64, a->riova + a->bait_off, a->rkey, M5D_SEND_SIGNALED);
			if (got < 0)
				md_fail(&r, MD_E_POST, (uint64_t)(-got) << 32 | 0xbau);
			m5d_fence_wqe();
			if ((a->flags & MD_F_BAIT_WRONG_QPN) && q.nic_handler == M5D_HANDLER_GPU_SM_DB)
				m5d_write64(q.sq_db, m5d_db_value_pi(q.qpn ^ 1u, q.sq_wqe_pi));
			md_watch(a, &q, MD_QUIET_NS, &r.bait_cqes);
			r.late_cqes += r.bait_cqes;
		}
	}
	md_finish(a, &q, &clk, &r);
}

/* ---------------------------------------------------------------- body: signalled puts */

/* Bytes of put @i: 64 B, 4 KiB, 64 KiB in turn. */
MD_FN uint32_t md_put_len(uint32_t i)
{
	return i % 3 == 0 ? 64u : i % 3 == 1 ? 4096u : 65536u;
}

/* Wait for the next send CQE and check it. Return: 0 or an error was recorded. */
MD_FN int md_await_cqe(const struct md_args *a, struct m5d_qp *q, struct md_clock *clk,
		       uint32_t idx, uint8_t wqe_opcode, uint32_t bytes, struct md_result *r)
{
	struct m5d_cqe c;

	while (!m5d_poll_cq(&q->cq_sq, &c))
		if (!md_wait_more(a, clk, r)) {
			if (!r->errors)
				md_fail(r, MD_E_TIMEOUT, r->completions);
			return 1;
		}
	if (md_check_cqe(q, &c, idx, wqe_opcode, bytes, r))
		return 1;
	m5d_sq_retire(q, c.wqe_counter);
	r->completions++;
	return 0;
}

/*
 * NVSHMEM's put-with-signal: fill the source, RDMA WRITE it (unsignalled) to the peer, then an
 * RC fetch-and-add of 1 on the peer's signal word (signalled), one doorbell for both. The peer
 * polls the signal word; when it reads i + 1 the whole buffer of put i must be there. The body
 * checks the fetched value (i) and waits for the host's confirmation before reusing the buffer.
 */
MD_FN void md_body_put(const struct md_args *a)
{
	struct m5d_qp q = a->qp;
	struct md_result r;
	struct md_clock clk;
	int64_t w, fa, nop;
	uint32_t i, len;
	uint64_t fetched;

	memset(&r, 0, sizeof(r));
	clk.start = m5d_now_ns();
	clk.end = clk.start + a->budget_ns;
	clk.spins = 0;
	md_check_fresh_cqs(a, &q, &r);

	for (i = 0; i < a->nput && !r.errors; i++) {
		len = md_put_len(i);
		md_fill(a->lbuf + a->put_off, len, a->seed + i);
		w = m5d_post_rdma(&q, MLX5_OPCODE_RDMA_WRITE, a->liova + a->put_off, a->lkey, len,
				  a->riova + a->put_off, a->rkey, 0);
		fa = m5d_post_atomic_fa(&q, a->liova + a->fetch_off, a->lkey, a->riova + a->sig_off,
					a->rkey, 1, M5D_SEND_SIGNALED);
		nop = (a->flags & MD_F_NOP) && i % 8 == 7 ? m5d_post_nop(&q, M5D_SEND_SIGNALED) : 0;
		if (w < 0 || fa < 0 || nop < 0) {
			md_fail(&r, MD_E_POST, (uint64_t)i);
			break;
		}
		m5d_ring_db(&q);
		r.posted += 2 + ((a->flags & MD_F_NOP) && i % 8 == 7);
		if (md_await_cqe(a, &q, &clk, (uint32_t)fa, MLX5_OPCODE_ATOMIC_FA, 8, &r))
			break;
		if ((a->flags & MD_F_NOP) && i % 8 == 7) {
			if (md_await_cqe(a, &q, &clk, (uint32_t)nop, MLX5_OPCODE_NOP, UINT32_MAX, &r))
				break;
			r.nops++;
		}
		fetched = m5d_read64(a->lbuf + a->fetch_off);
		if (fetched != i) {
			md_fail(&r, MD_E_FETCH, fetched);
			break;
		}
		r.puts++;
		while (m5d_read32(&a->sh->ctl.ack) < i + 1)
			if (!md_wait_more(a, &clk, &r)) {
				if (!r.errors)
					md_fail(&r, MD_E_ACK_TIMEOUT, i);
				break;
			}
	}
	md_watch(a, &q, r.errors ? 0 : MD_QUIET_NS, &r.late_cqes);
	md_finish(a, &q, &clk, &r);
}

MD_FN void md_body(const struct md_args *a)
{
	if (a->body == MD_BODY_PUT)
		md_body_put(a);
	else
		md_body_ops(a);
}

#ifdef __cplusplus
}
#endif

#endif /* MD_CASES_H */
