/* SPDX-License-Identifier: MIT */
/*
 * mlx5_dev_lib.h - a small mlx5 device-verbs library, written the way the third-party GPU
 * networking libraries write theirs (DOCA GPUNetIO's device verbs, NVSHMEM IBGDA, UCX GDAKI):
 * header-only code that a CUDA kernel (or a CPU thread) uses to build ConnectX work queue
 * entries in a send queue, ring the doorbell and poll completion queue entries, all by itself.
 *
 * It is deliberately independent of gpunic: it includes nothing but rdma-core's
 * <infiniband/mlx5dv.h> (segment layouts, opcodes) and follows the PRM conventions below. Whoever
 * owns the NIC fills struct m5d_qp (the device-QP descriptor such libraries keep); the tests in
 * this directory fill it from gpunic_qp_export() (md_fixture.h, md_qp_from_export), which is
 * the claim under test: code written to these conventions runs on the softnic unmodified.
 *
 * One source, two targets: nvcc builds every function for host and device (__CUDA_ARCH__ picks
 * the device half of the few primitives), a C11 compiler builds them for host threads.
 *
 * Conventions (where libraries differ, struct m5d_qp selects):
 *  - Send queue: sq_wqe_num basic blocks (WQEBBs) of 64 bytes, a power of two. sq_wqe_pi is the
 *    free-running producer counter in WQEBBs; a WQE's index (its first WQEBB, 16 bits) goes into
 *    ctrl.opmod_idx_opcode bits 8-23, qpn << 8 | DS (16-byte units) into ctrl.qpn_ds. Every WQE
 *    this library builds fits one WQEBB: RDMA WRITE / READ with one data segment, RDMA WRITE
 *    with inline data (up to 28 bytes: what one WQEBB holds beside ctrl and raddr), atomic
 *    fetch-and-add, NOP (and, for tests, any opcode with zeroed segments: m5d_post_raw).
 *  - Doorbell record: *sq_dbrec (dbrec[MLX5_SND_DBR]) = big-endian (producer & 0xffff).
 *  - Doorbell value (db_value): M5D_DB_VALUE_PI stores ctrl bytes 0-7 built from the producer
 *    itself: opmod_idx_opcode = pi << 8 (opcode 0), qpn_ds = qpn << 8 (DS 0), as NVSHMEM IBGDA's
 *    ibgda_ring_db and DOCA-style device code do; M5D_DB_VALUE_CTRL stores the first 8 bytes of
 *    the last posted WQE's ctrl segment, as libmlx5's post_send_db does.
 *  - Ring order (ring_order): M5D_RING_DBR_DB writes the record, then the doorbell (libmlx5);
 *    M5D_RING_DB_DBR_DB rings the doorbell, writes the record, rings again.
 *  - Fences: GPU scope only. Between the WQE stores and the record / doorbell: __threadfence()
 *    (membar.gl in PTX); between the record and the doorbell and after an owner bit was seen:
 *    fence.acq_rel.gpu. Never a system-scope fence. On a host thread: a release fence before
 *    the record and the doorbell, an acquire fence after an owner bit.
 *  - Handler (nic_handler): M5D_HANDLER_GPU_SM_DB rings the doorbell register itself;
 *    M5D_HANDLER_CPU_PROXY writes the record and then raises the proxy mailbox (cpu_proxy_pi,
 *    a 64-bit word) to the free-running producer with a 64-bit atomic max, as DOCA GPUNetIO
 *    does, for a CPU thread to forward to the NIC; M5D_HANDLER_GPU_SM_BF writes the record,
 *    then copies the last posted WQE, all 64 bytes, to the BlueFlame line of its index
 *    (sq_bf + (index % sq_bf_lines) * 64), then rings the doorbell as well;
 *    M5D_HANDLER_GPU_SM_NO_DBR rings the doorbell register and never writes the record (DOCA's
 *    GPU_SM_NO_DBR): a ConnectX acts on the doorbell write alone.
 *  - WQE signature (M5D_QP_WQE_SIGNATURE): ctrl.signature = ~(XOR of the WQE's DS*16 bytes),
 *    as libmlx5 does for queue pairs created with signatures.
 *  - Completion queues: cqe_num mlx5_cqe64 entries. Entry ci & cqe_mask is software's when its
 *    owner bit (op_own bit 0) equals (ci / cqe_num) & 1: the owner bit alone, no opcode test
 *    (the opcode is read only to tell a good completion from an error). The library never
 *    initialises the entries (the NIC does) and never writes the CQ doorbell record: its CQs
 *    are created with overrun ignore, so the consumer counter stays in the descriptor.
 *  - Send completions: a CQE's wqe_counter names the WQE completed; it and every WQE before it
 *    are retired (m5d_sq_retire), their WQEBBs free again.
 *
 * Errors: post functions return the WQE's index (>= 0), M5D_EFULL when the send queue lacks
 * room (poll, then retry) or M5D_EINVAL for a request this library cannot build.
 */
#ifndef MLX5_DEV_LIB_H
#define MLX5_DEV_LIB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <infiniband/mlx5dv.h>

#if defined(__CUDACC__)
#define M5D_FN static __host__ __device__ __forceinline__
#else
#define M5D_FN static inline __attribute__((always_inline))
#endif

#if defined(__CUDA_ARCH__)
#define M5D_ON_GPU 1
#else
#define M5D_ON_GPU 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mlx5_dev_lib.h: little-endian hosts and GPUs only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define M5D_EFULL (-1)
#define M5D_EINVAL (-2)

/* How work reaches the NIC (DOCA GPUNetIO calls these NIC handlers). */
enum m5d_nic_handler {
	M5D_HANDLER_GPU_SM_DB = 1,   /* the executor rings the doorbell */
	M5D_HANDLER_CPU_PROXY = 2,   /* the executor publishes its producer to a CPU proxy */
	M5D_HANDLER_GPU_SM_BF = 3,   /* the executor copies WQEs to the BlueFlame page too */
	M5D_HANDLER_GPU_SM_NO_DBR = 4, /* the executor rings the doorbell, never the record */
};

enum m5d_db_value {
	M5D_DB_VALUE_PI = 0,         /* ctrl bytes 0-7 of {pi << 8, qpn << 8}: opcode 0, DS 0 */
	M5D_DB_VALUE_CTRL = 1,       /* ctrl bytes 0-7 of the last posted WQE (libmlx5) */
};

enum m5d_ring_order {
	M5D_RING_DBR_DB = 0,         /* record, doorbell */
	M5D_RING_DB_DBR_DB = 1,      /* doorbell, record, doorbell */
};

enum m5d_qp_flags {
	M5D_QP_WQE_SIGNATURE = 1u << 0,
};

enum m5d_send_flags {
	M5D_SEND_SIGNALED = 1u << 0, /* MLX5_WQE_CTRL_CQ_UPDATE */
	M5D_SEND_FENCE = 1u << 1,    /* MLX5_WQE_CTRL_FENCE: start after earlier READs and
				      * atomics have completed */
};

/* One completion queue as the library sees it. */
struct m5d_cq {
	struct mlx5_cqe64 *cqe_daddr; /* cqe_num entries */
	uint32_t cqe_num;             /* power of two */
	uint32_t cqe_mask;
	uint32_t cqe_ci;              /* consumer counter: kept here, never published */
	uint32_t pad;
	uint32_t *dbrec;              /* the CQ's doorbell record: known, never written */
};

/* The device-QP descriptor: everything the data path needs, filled once by the owner. */
struct m5d_qp {
	uint32_t qpn;
	uint32_t nic_handler;         /* enum m5d_nic_handler */
	uint32_t db_value;            /* enum m5d_db_value */
	uint32_t ring_order;          /* enum m5d_ring_order */
	uint32_t flags;               /* enum m5d_qp_flags */
	uint32_t max_inline;          /* inline bytes the QP accepts */

	uint8_t *sq_wqe_daddr;        /* send queue buffer */
	uint32_t sq_wqe_num;          /* WQEBBs, power of two */
	uint32_t sq_wqe_mask;
	uint32_t sq_wqe_pi;           /* producer, free running */
	uint32_t sq_wqe_ci;           /* WQEBBs retired by completions */
	uint32_t sq_rung;             /* producer last announced to the NIC */
	uint32_t sq_last_nbb;         /* WQEBBs of the last posted WQE */
	uint64_t sq_last_wqe[8];      /* the last posted WQE's first WQEBB (ctrl first) */

	uint32_t *sq_dbrec;           /* &dbrec[MLX5_SND_DBR] */
	uint64_t *sq_db;              /* doorbell register (UAR) */
	uint8_t *sq_bf;               /* BlueFlame register / page */
	uint32_t sq_bf_lines;         /* 64-byte lines of sq_bf, power of two */
	uint32_t bf_pause_ns;         /* test hook: pause after a BlueFlame copy's first 16 bytes,
				       * as a writer interrupted mid-copy (0: none) */
	uint64_t *cpu_proxy_pi;       /* CPU proxy mailbox: 8 bytes, 8-aligned, the free-running
				       * producer raised by a 64-bit atomic max */

	struct m5d_cq cq_sq;          /* send completions */
	struct m5d_cq cq_rq;          /* receive completions (unused by RDMA WRITE / READ) */
};

/* A completion, decoded. */
struct m5d_cqe {
	uint8_t opcode;               /* op_own >> 4: MLX5_CQE_REQ, MLX5_CQE_REQ_ERR, ... */
	uint8_t wqe_opcode;           /* requester: MLX5_OPCODE_* of the completed WQE */
	uint8_t syndrome;             /* error CQEs */
	uint8_t vendor_syndrome;
	uint16_t wqe_counter;
	uint16_t pad;
	uint32_t qpn;
	uint32_t byte_cnt;
};

/* ---------------------------------------------------------------- primitives */

M5D_FN uint32_t m5d_bswap32(uint32_t x)
{
	return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

M5D_FN uint64_t m5d_bswap64(uint64_t x)
{
	return (uint64_t)m5d_bswap32((uint32_t)x) << 32 | m5d_bswap32((uint32_t)(x >> 32));
}

M5D_FN uint16_t m5d_bswap16(uint16_t x)
{
	return (uint16_t)((x >> 8) | (x << 8));
}

/* WQE stores -> doorbell record / doorbell: GPU scope on a GPU, release on a host. */
M5D_FN void m5d_fence_wqe(void)
{
#if M5D_ON_GPU
	__threadfence();
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* Doorbell record -> doorbell, and between doorbell writes. */
M5D_FN void m5d_fence_db(void)
{
#if M5D_ON_GPU
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* Owner bit seen -> the CQE's other fields and the data it announces. */
M5D_FN void m5d_fence_cqe(void)
{
#if M5D_ON_GPU
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* READ_ONCE / WRITE_ONCE, as such libraries spell them: volatile accesses. */
M5D_FN void m5d_write32(uint32_t *p, uint32_t v)
{
	*(volatile uint32_t *)p = v;
}

M5D_FN void m5d_write64(uint64_t *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}

M5D_FN uint8_t m5d_read8(const void *p)
{
	return *(const volatile uint8_t *)p;
}

M5D_FN uint32_t m5d_read32(const void *p)
{
	return *(const volatile uint32_t *)p;
}

M5D_FN uint64_t m5d_read64(const void *p)
{
	return *(const volatile uint64_t *)p;
}

/* *p = max(*p, v), 64 bits, atomically: DOCA's proxy word (atom.max.u64, GPU scope). The
 * address must be 8-aligned; a GPU faults on any other ("misaligned address"). */
M5D_FN void m5d_atomic_max64(uint64_t *p, uint64_t v)
{
#if M5D_ON_GPU
	atomicMax((unsigned long long *)p, (unsigned long long)v);
#else
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
#endif
}

/* 16 bytes to a WQE ring slot (16-byte aligned). */
M5D_FN void m5d_store16(void *p, uint64_t lo, uint64_t hi)
{
#if M5D_ON_GPU
	asm volatile("st.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(lo), "l"(hi) : "memory");
#else
	memcpy(p, &lo, 8);
	memcpy((uint8_t *)p + 8, &hi, 8);
#endif
}

/* 16 bytes to the BlueFlame register: a device write, never cached or merged away. */
M5D_FN void m5d_mmio_store16(void *p, uint64_t lo, uint64_t hi)
{
#if M5D_ON_GPU
	asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(lo), "l"(hi) : "memory");
#else
	*(volatile uint64_t *)p = lo;
	*((volatile uint64_t *)p + 1) = hi;
#endif
}

M5D_FN uint64_t m5d_now_ns(void)
{
#if M5D_ON_GPU
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* ---------------------------------------------------------------- WQE building */

union m5d_seg {
	struct mlx5_wqe_ctrl_seg ctrl;
	struct mlx5_wqe_raddr_seg raddr;
	struct mlx5_wqe_data_seg data;
	struct mlx5_wqe_atomic_seg atomic;
	struct mlx5_wqe_inl_data_seg inl;
	uint8_t b[16];
	uint64_t q[2];
};

/* One WQEBB, built in registers and stored to the ring in 16-byte pieces. */
union m5d_wqe {
	union m5d_seg s[4];
	uint64_t q[8];
	uint8_t b[64];
};

M5D_FN void m5d_wqe_clear(union m5d_wqe *w)
{
	for (int i = 0; i < 8; i++)
		w->q[i] = 0;
}

M5D_FN void m5d_set_ctrl(union m5d_wqe *w, const struct m5d_qp *qp, uint32_t idx,
			 uint8_t opcode, uint32_t ds, uint32_t flags)
{
	struct mlx5_wqe_ctrl_seg *c = &w->s[0].ctrl;

	c->opmod_idx_opcode = m5d_bswap32(((idx & 0xffffu) << 8) | opcode);
	c->qpn_ds = m5d_bswap32((qp->qpn << 8) | (ds & 0x3fu));
	c->signature = 0;
	c->dci_stream_channel_id = 0;
	c->fm_ce_se = (uint8_t)(((flags & M5D_SEND_SIGNALED) ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
				((flags & M5D_SEND_FENCE) ? MLX5_WQE_CTRL_FENCE : 0));
	c->imm = 0;
}

M5D_FN void m5d_set_raddr(union m5d_seg *s, uint64_t raddr, uint32_t rkey)
{
	s->raddr.raddr = m5d_bswap64(raddr);
	s->raddr.rkey = m5d_bswap32(rkey);
	s->raddr.reserved = 0;
}

M5D_FN void m5d_set_data(union m5d_seg *s, uint64_t addr, uint32_t len, uint32_t lkey)
{
	s->data.byte_count = m5d_bswap32(len);
	s->data.lkey = m5d_bswap32(lkey);
	s->data.addr = m5d_bswap64(addr);
}

/* libmlx5's WQE signature: the bytes of the WQE, the signature included, XOR to 0xff. */
M5D_FN uint8_t m5d_wqe_sig(const union m5d_wqe *w, uint32_t ds)
{
	uint8_t x = 0;

	for (uint32_t i = 0; i < ds * 16 && i < 64; i++)
		x ^= w->b[i];
	return (uint8_t)~x;
}

/* Address of 16-byte unit @seg of the WQE at @idx (a WQE may wrap to the ring's start). */
M5D_FN uint8_t *m5d_sq_seg(const struct m5d_qp *qp, uint32_t idx, uint32_t seg)
{
	size_t units = (size_t)qp->sq_wqe_num * 4;

	return qp->sq_wqe_daddr + ((((size_t)idx * 4) + seg) & (units - 1)) * 16;
}

M5D_FN int m5d_sq_room(const struct m5d_qp *qp, uint32_t nbb)
{
	return qp->sq_wqe_pi - qp->sq_wqe_ci + nbb <= qp->sq_wqe_num;
}

/* Store the WQE at the producer and move the producer past it. Nothing reaches the NIC before
 * m5d_ring_db(). Return: the WQE's index. */
M5D_FN int64_t m5d_wqe_commit(struct m5d_qp *qp, union m5d_wqe *w, uint32_t ds)
{
	uint32_t idx = qp->sq_wqe_pi, i;

	if (qp->flags & M5D_QP_WQE_SIGNATURE)
		w->s[0].ctrl.signature = m5d_wqe_sig(w, ds);
	/* ctrl first, as libmlx5 lays a WQE down: the NIC must wait for the rest */
	for (i = 0; i < ds; i++)
		m5d_store16(m5d_sq_seg(qp, idx, i), w->s[i].q[0], w->s[i].q[1]);
	for (i = 0; i < 8; i++)
		qp->sq_last_wqe[i] = w->q[i];
	qp->sq_last_nbb = 1;
	qp->sq_wqe_pi = idx + 1;
	return idx;
}

/**
 * m5d_post_rdma - RDMA WRITE or RDMA READ (@opcode) of @len bytes between the local @laddr
 * (@lkey) and the remote @raddr (@rkey), one data segment
 */
M5D_FN int64_t m5d_post_rdma(struct m5d_qp *qp, uint8_t opcode, uint64_t laddr, uint32_t lkey,
			     uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t flags)
{
	union m5d_wqe w;

	if (opcode != MLX5_OPCODE_RDMA_WRITE && opcode != MLX5_OPCODE_RDMA_READ)
		return M5D_EINVAL;
	if (!m5d_sq_room(qp, 1))
		return M5D_EFULL;
	m5d_wqe_clear(&w);
	m5d_set_ctrl(&w, qp, qp->sq_wqe_pi, opcode, 3, flags);
	m5d_set_raddr(&w.s[1], raddr, rkey);
	m5d_set_data(&w.s[2], laddr, len, lkey);
	return m5d_wqe_commit(qp, &w, 3);
}

/**
 * m5d_post_write_inline - RDMA WRITE of @len bytes copied from @src (an address the executor
 * reads) into the WQE; one WQEBB, so @len <= 28
 */
M5D_FN int64_t m5d_post_write_inline(struct m5d_qp *qp, const void *src, uint32_t len,
				     uint64_t raddr, uint32_t rkey, uint32_t flags)
{
	const uint32_t room = 64 - 16 - 16 - 4;
	const volatile uint8_t *s = (const volatile uint8_t *)src;
	union m5d_wqe w;
	uint32_t ds, i;

	if (len == 0 || len > room || len > qp->max_inline)
		return M5D_EINVAL;
	if (!m5d_sq_room(qp, 1))
		return M5D_EFULL;
	ds = 2 + (4 + len + 15) / 16;
	m5d_wqe_clear(&w);
	m5d_set_ctrl(&w, qp, qp->sq_wqe_pi, MLX5_OPCODE_RDMA_WRITE, ds, flags);
	m5d_set_raddr(&w.s[1], raddr, rkey);
	w.s[2].inl.byte_count = m5d_bswap32(len | (uint32_t)MLX5_INLINE_SEG);
	for (i = 0; i < len; i++)
		w.b[32 + 4 + i] = s[i];
	return m5d_wqe_commit(qp, &w, ds);
}

/**
 * m5d_post_atomic_fa - RC fetch-and-add of @add on the 8 bytes at @raddr; the value they held
 * lands at @laddr (8 bytes, @lkey)
 */
M5D_FN int64_t m5d_post_atomic_fa(struct m5d_qp *qp, uint64_t laddr, uint32_t lkey,
				  uint64_t raddr, uint32_t rkey, uint64_t add, uint32_t flags)
{
	union m5d_wqe w;

	if (!m5d_sq_room(qp, 1))
		return M5D_EFULL;
	m5d_wqe_clear(&w);
	m5d_set_ctrl(&w, qp, qp->sq_wqe_pi, MLX5_OPCODE_ATOMIC_FA, 4, flags);
	m5d_set_raddr(&w.s[1], raddr, rkey);
	w.s[2].atomic.swap_add = m5d_bswap64(add);
	w.s[2].atomic.compare = 0;
	m5d_set_data(&w.s[3], laddr, 8, lkey);
	return m5d_wqe_commit(qp, &w, 4);
}

/** m5d_post_nop - a NOP WQE (the ctrl segment alone) */
M5D_FN int64_t m5d_post_nop(struct m5d_qp *qp, uint32_t flags)
{
	union m5d_wqe w;

	if (!m5d_sq_room(qp, 1))
		return M5D_EFULL;
	m5d_wqe_clear(&w);
	m5d_set_ctrl(&w, qp, qp->sq_wqe_pi, MLX5_OPCODE_NOP, 1, flags);
	return m5d_wqe_commit(qp, &w, 1);
}

/**
 * m5d_post_raw - a WQE of @opcode and @ds units (1..4) whose segments after the ctrl are zero:
 * how a test hands the NIC an operation this library does not build (UMR, SEND_INV, ...)
 */
M5D_FN int64_t m5d_post_raw(struct m5d_qp *qp, uint8_t opcode, uint32_t ds, uint32_t flags)
{
	union m5d_wqe w;

	if (ds < 1 || ds > 4)
		return M5D_EINVAL;
	if (!m5d_sq_room(qp, 1))
		return M5D_EFULL;
	m5d_wqe_clear(&w);
	m5d_set_ctrl(&w, qp, qp->sq_wqe_pi, opcode, ds, flags);
	return m5d_wqe_commit(qp, &w, ds);
}

/* ---------------------------------------------------------------- doorbells */

/* The producer-index doorbell value, as it lies in memory (ctrl bytes 0-7). */
M5D_FN uint64_t m5d_db_value_pi(uint32_t qpn, uint32_t pi)
{
	return (uint64_t)m5d_bswap32((pi & 0xffffu) << 8) |
	       (uint64_t)m5d_bswap32(qpn << 8) << 32;
}

/* Copy the last posted WQE, whole, to its BlueFlame line, in address order (ctrl first), as
 * libmlx5's mlx5_bf_copy does. */
M5D_FN void m5d_bf_copy(const struct m5d_qp *qp)
{
	uint32_t idx = qp->sq_wqe_pi - qp->sq_last_nbb;
	uint8_t *line = qp->sq_bf + (size_t)(idx & (qp->sq_bf_lines - 1)) * 64;

	for (int i = 0; i < 4; i++) {
		m5d_mmio_store16(line + 16 * i, qp->sq_last_wqe[2 * i], qp->sq_last_wqe[2 * i + 1]);
		if (i == 0 && qp->bf_pause_ns) {
			uint64_t end = m5d_now_ns() + qp->bf_pause_ns;

			while (m5d_now_ns() < end)
				;
		}
	}
}

/**
 * m5d_ring_db - hand every WQE posted so far to the NIC, by the QP's handler, doorbell value and
 * ring order
 */
M5D_FN void m5d_ring_db(struct m5d_qp *qp)
{
	uint32_t pi = qp->sq_wqe_pi;
	uint32_t rec = m5d_bswap32(pi & 0xffffu);
	uint64_t db = qp->db_value == M5D_DB_VALUE_PI ? m5d_db_value_pi(qp->qpn, pi) :
							 qp->sq_last_wqe[0];

	if (pi == qp->sq_rung)
		return;
	m5d_fence_wqe();
	switch (qp->nic_handler) {
	case M5D_HANDLER_CPU_PROXY:
		m5d_write32(qp->sq_dbrec, rec);
		m5d_fence_db();
		m5d_atomic_max64(qp->cpu_proxy_pi, pi);
		break;
	case M5D_HANDLER_GPU_SM_NO_DBR:
		m5d_write64(qp->sq_db, db);
		break;
	case M5D_HANDLER_GPU_SM_BF:
		m5d_write32(qp->sq_dbrec, rec);
		m5d_fence_db();
		m5d_bf_copy(qp);
		m5d_fence_db();
		m5d_write64(qp->sq_db, db);
		break;
	default:
		if (qp->ring_order == M5D_RING_DB_DBR_DB) {
			m5d_write64(qp->sq_db, db);
			m5d_fence_db();
		}
		m5d_write32(qp->sq_dbrec, rec);
		m5d_fence_db();
		m5d_write64(qp->sq_db, db);
		break;
	}
	qp->sq_rung = pi;
}

/* ---------------------------------------------------------------- completions */

/**
 * m5d_poll_cq - take the next CQE if software owns it (owner bit alone)
 * Return: 1 with @out filled, 0 when the entry is still the NIC's.
 */
M5D_FN int m5d_poll_cq(struct m5d_cq *cq, struct m5d_cqe *out)
{
	const uint8_t *c = (const uint8_t *)cq->cqe_daddr + ((size_t)(cq->cqe_ci & cq->cqe_mask) << 6);
	uint8_t op_own = m5d_read8(c + 63);
	uint32_t w13, w14, w15;

	if ((uint32_t)(op_own & MLX5_CQE_OWNER_MASK) != ((cq->cqe_ci & cq->cqe_num) ? 1u : 0u))
		return 0;
	m5d_fence_cqe();
	w13 = m5d_read32(c + 52);   /* err CQE: rsvd, rsvd, vendor_err_synd, syndrome */
	w14 = m5d_bswap32(m5d_read32(c + 56)); /* sop_drop_qpn / s_wqe_opcode_qpn */
	w15 = m5d_read32(c + 60);   /* wqe_counter, signature, op_own */
	out->opcode = op_own >> 4;
	out->wqe_opcode = (uint8_t)(w14 >> 24);
	out->qpn = w14 & 0xffffffu;
	out->wqe_counter = m5d_bswap16((uint16_t)(w15 & 0xffffu));
	out->byte_cnt = m5d_bswap32(m5d_read32(c + 44));
	if (out->opcode == MLX5_CQE_REQ_ERR || out->opcode == MLX5_CQE_RESP_ERR) {
		out->syndrome = (uint8_t)(w13 >> 24);
		out->vendor_syndrome = (uint8_t)(w13 >> 16);
	} else {
		out->syndrome = 0;
		out->vendor_syndrome = 0;
	}
	out->pad = 0;
	cq->cqe_ci++;
	return 1;
}

/**
 * m5d_sq_retire - a send CQE named @wqe_counter: that WQE and every one before it are done
 * Return: the retired WQE's full index.
 */
M5D_FN uint32_t m5d_sq_retire(struct m5d_qp *qp, uint16_t wqe_counter)
{
	uint32_t idx = qp->sq_wqe_ci + (uint16_t)(wqe_counter - (uint16_t)qp->sq_wqe_ci);
	uint32_t ds = m5d_bswap32(m5d_read32(m5d_sq_seg(qp, idx, 0) + 4)) & 0x3fu;

	qp->sq_wqe_ci = idx + (ds + 3) / 4;
	return idx;
}

#ifdef __cplusplus
}
#endif

#endif /* MLX5_DEV_LIB_H */
