/* SPDX-License-Identifier: MIT */
/*
 * gpunic data path: post send and receive work requests, ring the doorbell and poll completions
 * on the queues that gpunic_qp_export() publishes (struct gpunic_dev_qp, dev_qp.h).
 *
 * Header-only, one source compiled two ways: nvcc builds every function for the device (and the
 * host, so a .cu file can run the CPU executor too); a C11 compiler builds them for host threads,
 * which is the CPU executor and how CI tests the data path without a GPU.
 *
 * Queues are in ConnectX (mlx5) format with the layouts of <infiniband/mlx5dv.h>; see dev_qp.h.
 * Counters are free-running 32-bit values; only their low bits reach the queues (16-bit WQE
 * index and doorbell record, 24-bit CQ consumer counter).
 *
 * Scopes (DOCA GPUNetIO names them thread / warp and exclusive / shared):
 *  - thread scope, exclusive: one thread owns the send queue. gpunic_dev_post_send() writes a WQE,
 *    gpunic_dev_submit() rings the doorbell for everything posted so far.
 *  - shared ("_mt"): any number of threads (GPU threads, warps or host threads) post to one send
 *    queue: reserve basic blocks (CAS on state->sq_reserved) -> write the WQE -> mark it ready in
 *    reservation order (state->sq_ready) -> submit. gpunic_dev_post_send_mt() does all four; the
 *    poster that finds no later reservation rings, under a try-lock so that the doorbell record
 *    never goes backwards.
 *  - warp scope: gpunic_dev_post_send_warp() posts up to 32 WQEs as one batch of the shared
 *    protocol: one reservation, each lane writes its WQE, one mark-ready, one doorbell. On the
 *    host the calling thread plays all lanes in turn.
 * One thread at a time posts receives and polls each CQ (single consumer). Each CQ serves this
 * QP's send or receive queue alone: its consumer counter lives in the QP's state.
 *
 * What the data path expects of the NIC (softnic or ConnectX alike):
 *  - it reads dbrec, db and mailbox with acquire ordering, then the WQEs they announce;
 *  - a send CQE's wqe_counter is the 16-bit index in the completed WQE's ctrl segment, and a
 *    CQE for WQE i means every WQE before i completed too; every receive WQE gets a CQE, in
 *    order;
 *  - it writes a CQE's body first and op_own last (release), owner bit = lap & 1, and never
 *    writes into the send queue (the data path reads a completed WQE's size from it).
 *
 * Errors are negative errno values (the data path's rule: docs/DESIGN.md, "Errors"): -EINVAL
 * (malformed request), -ENOMEM (queue full: poll the send CQ or wait for receives to complete,
 * then retry; the same code as mlx5's post_send).
 */
#ifndef GPUNIC_DEV_H
#define GPUNIC_DEV_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include <gpunic/dev_qp.h>

/* ---------------------------------------------------------------- target */

/*
 * GPUNIC_DEV_FN marks every function, like MLX5DV_ALWAYS_INLINE. Under nvcc the functions exist
 * for host and device; __CUDA_ARCH__ then picks the device half of each primitive below.
 */
#if defined(__CUDACC__)
#define GPUNIC_DEV_FN static __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define GPUNIC_DEV_FN static inline __attribute__((always_inline))
#else
#error "gpunic_dev.h: unknown compiler (need nvcc, gcc or clang)"
#endif

#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ < 700
#error "gpunic_dev.h: device code needs sm_70 or newer (scoped acquire/release, thread scheduling)"
#endif
#define GPUNIC_DEV_ON_GPU 1
#elif defined(__GNUC__)
#include <sched.h>
#include <time.h>
#define GPUNIC_DEV_ON_GPU 0
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ && __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
#error "gpunic_dev.h: unknown host byte order"
#endif
#else
#error "gpunic_dev.h: unknown target"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Largest WQE: the ds field of qpn_ds has 6 bits (63 x 16 bytes, 16 basic blocks). */
#define GPUNIC_DEV_WQE_MAX_DS 63u
#define GPUNIC_DEV_SEG_BYTES 16u
/* Both rings are indexed with 16-bit counters on the queues, so half of that is the most that
 * keeps "new" and "old" apart (mlx5 has the same limit). */
#define GPUNIC_DEV_MAX_RING 32768u
#define GPUNIC_DEV_WARP_SIZE 32u
/* Payload a receive CQE may carry (MLX5_INLINE_SCATTER_32). */
#define GPUNIC_DEV_CQE_INLINE_MAX 32u

/* ---------------------------------------------------------------- byte order */

/*
 * The queues are big-endian. GPUs are little-endian: __byte_perm reverses the bytes. Hosts: the
 * compiler's byte order and swap builtins (what <endian.h>'s htobe32 expands to, without
 * needing _DEFAULT_SOURCE under -std=c11).
 */
GPUNIC_DEV_FN uint32_t gpunic_dev_htobe32(uint32_t v)
{
#if GPUNIC_DEV_ON_GPU
	return __byte_perm(v, 0, 0x0123);
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap32(v);
#else
	return v;
#endif
}

GPUNIC_DEV_FN uint32_t gpunic_dev_be32toh(uint32_t v)
{
	return gpunic_dev_htobe32(v);
}

GPUNIC_DEV_FN uint16_t gpunic_dev_be16toh(uint16_t v)
{
#if GPUNIC_DEV_ON_GPU
	return (uint16_t)__byte_perm(v, 0, 0x0001);
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap16(v);
#else
	return v;
#endif
}

GPUNIC_DEV_FN uint64_t gpunic_dev_htobe64(uint64_t v)
{
#if GPUNIC_DEV_ON_GPU
	return ((uint64_t)gpunic_dev_htobe32((uint32_t)v) << 32) |
	       gpunic_dev_htobe32((uint32_t)(v >> 32));
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

/* ---------------------------------------------------------------- memory ordering */

/*
 * The few orderings the data path needs, named by use as rdma-core's udma_barrier.h names its
 * barriers. "NIC" is whoever consumes the queues: the softnic engine thread, a CPU proxy thread,
 * or a real ConnectX. System scope throughout, since the NIC is outside the GPU.
 *
 * gpunic_dev_to_nic_barrier() - stores before it (and anything this thread observed through an
 *   acquire, e.g. other threads' WQEs) are visible to the NIC before any store after it.
 *   Example: dbrec = pi; barrier; db = ctrl. A NIC that sees the new db, then reads dbrec,
 *   sees pi. Also each lane's WQE before a warp's one doorbell.
 *
 * gpunic_dev_full_barrier() - orders every earlier access before every later one, stores before
 *   loads included. Only the doorbell lock hand-off needs it (store flag; barrier; read other's
 *   flag, on both sides: one of the two threads must see the other).
 *
 * gpunic_dev_load_acquire_*() - a load that later loads and stores cannot pass. Polling a CQE:
 *   the NIC writes the CQE body (and the payload before it) then op_own; a thread that sees the
 *   new op_own through this load then reads the body and the payload as the NIC wrote them.
 *   Also used on the state counters handed between posting threads.
 *
 * gpunic_dev_load_relaxed_u32() - a fresh single-copy-atomic load with no ordering: spin loops
 *   that poll a counter (not cached in a register or a GPU L1).
 *
 * gpunic_dev_store_release_*() - a store that earlier loads and stores cannot pass, cumulative
 *   (what this thread observed through an acquire goes first too). The doorbell records and the
 *   mailbox: write WQE; dbrec = pi (release). A NIC that reads dbrec with acquire and sees pi,
 *   then reads the WQE, sees the new WQE and not stale bytes. Also sq_ready / sq_last_ctrl to
 *   later posters, and the CQ consumer counter (the CQE reads happen before the NIC may reuse
 *   the slot).
 *
 * gpunic_dev_store_relaxed_*() - a single-copy-atomic store with no ordering of its own: data
 *   path counters that only their owner reads back.
 *
 * gpunic_dev_mmio_write64() - the doorbell store: one untorn 64-bit store of bytes already in
 *   queue (big-endian) order, as a ConnectX UAR write. After gpunic_dev_to_nic_barrier().
 *
 * GPU: PTX scoped loads and stores (ld.acquire.sys, st.release.sys, ld/st.relaxed.sys) and
 * fence.acq_rel.sys / fence.sc.sys. Host: C11 semantics through the __atomic builtins (gcc and
 * clang, C and C++), on plain integer objects. A NIC thread on the host pairs with these using
 * acquire loads of dbrec, db and mailbox and release stores of op_own.
 */
#if GPUNIC_DEV_ON_GPU
#define gpunic_dev_to_nic_barrier() asm volatile("fence.acq_rel.sys;" ::: "memory")
#define gpunic_dev_full_barrier() asm volatile("fence.sc.sys;" ::: "memory")
#else
#define gpunic_dev_to_nic_barrier() __atomic_thread_fence(__ATOMIC_RELEASE)
#define gpunic_dev_full_barrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* A branch a host thread seldom takes (a CQ's whole-line read: a GPU executor's queues). Told
 * so, gcc keeps its set-up out of the paths around it, polling loops included. */
#if GPUNIC_DEV_ON_GPU
#define gpunic_dev_cpu_unlikely(x) (x)
#else
#define gpunic_dev_cpu_unlikely(x) __builtin_expect(!!(x), 0)
#endif

GPUNIC_DEV_FN uint32_t gpunic_dev_load_relaxed_u32(const uint32_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t v;

	asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN uint32_t gpunic_dev_load_acquire_u32(const uint32_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t v;

	asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GPUNIC_DEV_FN uint64_t gpunic_dev_load_acquire_u64(const uint64_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint64_t v;

	asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* A fresh byte with no ordering: polling a flag byte whose arrival is all that matters (perftest's
 * write_lat iteration byte), without the acquire's cost across PCIe. */
GPUNIC_DEV_FN uint8_t gpunic_dev_load_relaxed_u8(const uint8_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t v;

	asm volatile("ld.relaxed.sys.u8 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return (uint8_t)v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN uint8_t gpunic_dev_load_acquire_u8(const uint8_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t v;

	asm volatile("ld.acquire.sys.u8 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return (uint8_t)v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store_relaxed_u32(uint32_t *p, uint32_t v)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.relaxed.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store_relaxed_u64(uint64_t *p, uint64_t v)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.relaxed.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store_release_u32(uint32_t *p, uint32_t v)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store_release_u64(uint64_t *p, uint64_t v)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.release.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/*
 * gpunic_dev_load_acquire_exec_u32() / gpunic_dev_store_release_exec_*() - the same orderings
 *   among the executor's own threads only: data-path state counters that posters and pollers
 *   hand each other and that no NIC reads (sq_completed, rq_tail). GPU scope on the GPU, where
 *   that state lives in device memory: a system-scope release waits for every earlier store to
 *   cross PCIe (about half a round trip), which these hand-offs do not need.
 */
GPUNIC_DEV_FN uint32_t gpunic_dev_load_acquire_exec_u32(const uint32_t *p)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t v;

	asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store_release_exec_u32(uint32_t *p, uint32_t v)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.release.gpu.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/*
 * gpunic_dev_load16_relaxed() / gpunic_dev_store16_relaxed() - 16 bytes in one access with no
 *   ordering: a quarter of a 64-byte line. Four GPU lanes issuing them on one line make one
 *   coalesced access, which is how a CQE is read and a BlueFlame WQE written in one PCIe round
 *   trip (docs/ARCHITECTURE.md, "the fast path"). Both addresses are 16-byte aligned.
 */
GPUNIC_DEV_FN void gpunic_dev_load16_relaxed(const void *p, uint64_t *lo, uint64_t *hi)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];" : "=l"(*lo), "=l"(*hi) : "l"(p)
		     : "memory");
#else
	*lo = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	*hi = __atomic_load_n((const uint64_t *)p + 1, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_store16_relaxed(void *p, uint64_t lo, uint64_t hi)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("st.relaxed.sys.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(lo), "l"(hi)
		     : "memory");
#else
	__atomic_store_n((uint64_t *)p, lo, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)p + 1, hi, __ATOMIC_RELAXED);
#endif
}

GPUNIC_DEV_FN void gpunic_dev_mmio_write64(uint64_t *p, uint64_t v)
{
#if GPUNIC_DEV_ON_GPU
	/* The softnic's doorbell page is memory, so a relaxed system-scope store (not st.mmio,
	 * which is for a mapped device register such as a real UAR). */
	asm volatile("st.relaxed.sys.b64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* Compare-and-swap, returns the old value; ordering comes from the barriers around it. */
GPUNIC_DEV_FN uint32_t gpunic_dev_atomic_cas_u32(uint32_t *p, uint32_t expect, uint32_t desired)
{
#if GPUNIC_DEV_ON_GPU
	return atomicCAS_system((unsigned int *)p, expect, desired);
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expect;
#endif
}

/**
 * gpunic_dev_clock_ns - nanoseconds on one clock for the data path's timestamps and deadlines:
 * the GPU's global timer in a kernel, CLOCK_MONOTONIC_RAW on the host (not slewed, as the
 * bench's own timing). Differences only: the two clocks have different origins.
 */
GPUNIC_DEV_FN uint64_t gpunic_dev_clock_ns(void)
{
#if GPUNIC_DEV_ON_GPU
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;

#if defined(CLOCK_MONOTONIC_RAW)
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
#else
	/* strict ISO C, where <time.h> declares no POSIX clock: C11's own */
	timespec_get(&ts, TIME_UTC);
#endif
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/*
 * One round of a wait loop. The host backs off to sched_yield() after a while so that waiting
 * for another poster still progresses when there are more threads than cores (2-core CI).
 */
GPUNIC_DEV_FN void gpunic_dev_spin_wait(uint32_t *spins)
{
#if GPUNIC_DEV_ON_GPU
	(*spins)++;
#else
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		asm volatile("yield" ::: "memory");
#endif
	} else {
		sched_yield();
	}
#endif
}

/* ---------------------------------------------------------------- requests and completions */

/* One scatter/gather entry; addr is an address the executor can reach (and for inline data,
 * read). A zero length entry is skipped, as mlx5 does (a zero byte_count means 2 GiB there). */
struct gpunic_dev_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum gpunic_dev_send_flags {
	GPUNIC_DEV_SEND_SIGNALED = 1u << 0,  /* MLX5_WQE_CTRL_CQ_UPDATE: ask for a send CQE */
	GPUNIC_DEV_SEND_SOLICITED = 1u << 1, /* MLX5_WQE_CTRL_SOLICITED: SE bit on the wire */
	GPUNIC_DEV_SEND_INLINE = 1u << 2,    /* copy the SGEs' bytes into the WQE */
	GPUNIC_DEV_SEND_FENCE = 1u << 3,     /* MLX5_WQE_CTRL_FENCE: wait for earlier READs */
};

struct gpunic_dev_send_wr {
	uint8_t opcode;          /* MLX5_OPCODE_SEND, _SEND_IMM, _RDMA_WRITE, _RDMA_WRITE_IMM,
				  * _RDMA_READ, _ATOMIC_CS, _ATOMIC_FA, _NOP */
	uint8_t flags;           /* enum gpunic_dev_send_flags */
	uint16_t num_sge;
	uint32_t imm;            /* *_IMM: the value as the application means it (host order);
				  * it goes on the wire big-endian */
	uint64_t remote_addr;    /* WRITE, WRITE_IMM, READ; atomics: the 8-byte aligned target */
	uint32_t rkey;
	uint32_t reserved;
	const struct gpunic_dev_sge *sg_list;
	/* ATOMIC_CS, ATOMIC_FA only (read for no other opcode), as ibv_send_wr's wr.atomic; host
	 * order. sg_list is one 8-byte local-write buffer that receives the original value. */
	uint64_t compare_add;    /* ATOMIC_CS: the compare value; ATOMIC_FA: the addend */
	uint64_t swap;           /* ATOMIC_CS: the swap value */
};

/* A completion, decoded from its mlx5_cqe64 / mlx5_err_cqe. */
struct gpunic_dev_cqe {
	uint8_t opcode;          /* MLX5_CQE_REQ, _RESP_WR_IMM, _RESP_SEND, _RESP_SEND_IMM,
				  * _RESP_SEND_INV, _REQ_ERR, _RESP_ERR */
	uint8_t wqe_opcode;      /* REQ, REQ_ERR: MLX5_OPCODE_* of the completed send WQE */
	uint8_t syndrome;        /* REQ_ERR, RESP_ERR: MLX5_CQE_SYNDROME_*; else 0 */
	uint8_t vendor_syndrome; /* REQ_ERR, RESP_ERR */
	uint8_t solicited;       /* receive: the sender set SE */
	uint8_t data_in_cqe;     /* receive: the payload came in the CQE, copied to data[] */
	uint16_t wqe_counter;    /* as the CQE carries it */
	uint32_t qpn;
	uint32_t byte_cnt;       /* receive: message length; READ: bytes read */
	uint32_t imm;            /* RESP_WR_IMM, RESP_SEND_IMM: host-order value; SEND_INV: rkey */
	uint32_t wqe_idx;        /* send: counter of the WQE's first basic block (what post
				  * returned); receive: receive counter of the consumed WQE */
	/*
	 * The payload of a receive with MLX5_INLINE_SCATTER_32, byte_cnt bytes. Copied before the
	 * consumer counter moves, because once it moves the NIC may reuse the slot.
	 */
	uint8_t data[GPUNIC_DEV_CQE_INLINE_MAX];
};

GPUNIC_DEV_FN int gpunic_dev_cqe_is_error(const struct gpunic_dev_cqe *cqe)
{
	return cqe->opcode == MLX5_CQE_REQ_ERR || cqe->opcode == MLX5_CQE_RESP_ERR;
}

/* ---------------------------------------------------------------- sizes */

GPUNIC_DEV_FN uint32_t gpunic_dev_ds_to_bbs(uint32_t ds)
{
	return (ds * GPUNIC_DEV_SEG_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
}

GPUNIC_DEV_FN int gpunic_dev_opcode_has_raddr(uint8_t opcode)
{
	return opcode == MLX5_OPCODE_RDMA_WRITE || opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       opcode == MLX5_OPCODE_RDMA_READ || opcode == MLX5_OPCODE_ATOMIC_CS ||
	       opcode == MLX5_OPCODE_ATOMIC_FA;
}

GPUNIC_DEV_FN int gpunic_dev_opcode_has_imm(uint8_t opcode)
{
	return opcode == MLX5_OPCODE_SEND_IMM || opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
}

/* 16-byte units of an inline segment: 4-byte header, @len bytes of payload, zero padding. */
GPUNIC_DEV_FN uint32_t gpunic_dev_inline_units(uint32_t len)
{
	uint32_t bytes = sizeof(struct mlx5_wqe_inl_data_seg) + len;

	return (bytes + GPUNIC_DEV_SEG_BYTES - 1) / GPUNIC_DEV_SEG_BYTES;
}

/* Inline payload that fits in the first basic block beside the ctrl (and raddr) segment and the
 * 4-byte inline header: 44 bytes for SEND, 28 for WRITE. */
GPUNIC_DEV_FN uint32_t gpunic_dev_inline_one_bb_max(uint8_t opcode)
{
	uint32_t used = sizeof(struct mlx5_wqe_ctrl_seg) + sizeof(struct mlx5_wqe_inl_data_seg);

	if (gpunic_dev_opcode_has_raddr(opcode))
		used += sizeof(struct mlx5_wqe_raddr_seg);
	return MLX5_SEND_WQE_BB - used;
}

/* ---------------------------------------------------------------- line checks */

/*
 * Whole-line checks for the 64-byte records that cross PCIe in one access: a CQE the NIC
 * writes and the GPU reads, a BlueFlame WQE the GPU writes and the NIC reads. Nothing in the
 * architecture promises that a line written by one side is seen whole by the other (a 64-byte
 * store and a coalesced 64-byte read were never seen torn on the H200, docs/ARCHITECTURE.md,
 * but that is a measurement, not a contract), so the writer adds a check over the line and
 * the reader acts on a line only when the check holds; otherwise it reads the line again.
 *
 * The check is a sum of per-word mixes, so that four GPU lanes holding 16 bytes each add up
 * their own words and combine the sums with two shuffles. A stale or torn chunk changes the
 * sum except with probability about 2^-32 (2^-15 for the WQE seal, which has 15 bits of room).
 * Words are the line's bytes read little-endian, as x86, Arm and NVIDIA GPUs store them.
 */
GPUNIC_DEV_FN uint32_t gpunic_dev_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* Word @i (0..15) of a line checked with @seed. */
GPUNIC_DEV_FN uint32_t gpunic_dev_line_mix(uint32_t w, uint32_t i, uint32_t seed)
{
	return gpunic_dev_mix32(w ^ (seed * 0x9e3779b9u + (i + 1) * 0x85ebca77u));
}

/* CQE bytes 40-43 (app, app_op, app_info: mlx5's application fields, unused by gpunic) hold
 * the check of a CQE written to a GPUNIC_DEV_CQ_LINE_CHECK queue. */
#define GPUNIC_DEV_CQE_CHECK_WORD 10u
/* CQE bytes 4-7 (reserved in mlx5_cqe64) of a RESP_WR_IMM completion on such a queue: the
 * check of the first min(byte_cnt, 64) bytes the WRITE placed (gpunic_dev_payload_check), when
 * it came in one packet; 0 otherwise. A reader that fetched the slot it expected together with
 * the CQE proves the pair consistent with it. */
#define GPUNIC_DEV_CQE_PAYLOAD_WORD 1u

/* The part of a CQE's check that 16-byte chunk @j (words @w[0..3]) contributes. */
GPUNIC_DEV_FN uint32_t gpunic_dev_cqe_check_part(const uint32_t *w, uint32_t j, uint32_t pos)
{
	uint32_t h = 0, k, m;

	/* selects, not branches, here and in gpunic_dev_word_clip: the four GPU lanes that each
	 * hold a chunk of the line stay together */
	for (k = 0; k < 4; k++) {
		m = gpunic_dev_line_mix(w[k], 4 * j + k, pos);
		h += 4 * j + k != GPUNIC_DEV_CQE_CHECK_WORD ? m : 0;
	}
	return h;
}

/**
 * gpunic_dev_cqe_check - the check a NIC stores in word 10 of the CQE at position @pos (the
 * producer counter, every lap distinct) over the other 15 words of @w (the whole 64 bytes).
 */
GPUNIC_DEV_FN uint32_t gpunic_dev_cqe_check(const uint32_t *w, uint32_t pos)
{
	uint32_t h = 0, j;

	for (j = 0; j < 4; j++)
		h += gpunic_dev_cqe_check_part(w + 4 * j, j, pos);
	return h;
}

/* Word @i of @len bytes, the bytes past the end read as zero. */
GPUNIC_DEV_FN uint32_t gpunic_dev_word_clip(uint32_t w, uint32_t i, uint32_t len)
{
	uint32_t rem = len > 4 * i ? len - 4 * i : 0;

	return w & (rem >= 4 ? 0xffffffffu : (1u << (8 * rem)) - 1);
}

/* The part of a payload check that chunk @j (words @w[0..3]) of a 64-byte line contributes. */
GPUNIC_DEV_FN uint32_t gpunic_dev_payload_check_part(const uint32_t *w, uint32_t j, uint32_t len,
						     uint32_t pos)
{
	uint32_t h = 0, k;

	for (k = 0; k < 4; k++)
		h += gpunic_dev_line_mix(gpunic_dev_word_clip(w[k], 4 * j + k, len), 4 * j + k,
					 pos ^ 0xa5a5a5a5u);
	return h;
}

/**
 * gpunic_dev_payload_check - the check of the first min(@len, 64) bytes of the 64-byte line
 * @w, bound to CQE position @pos (see GPUNIC_DEV_CQE_PAYLOAD_WORD)
 */
GPUNIC_DEV_FN uint32_t gpunic_dev_payload_check(const uint32_t *w, uint32_t len, uint32_t pos)
{
	uint32_t h = 0, j;

	if (len > 64)
		len = 64;
	for (j = 0; j < 4; j++)
		h += gpunic_dev_payload_check_part(w + 4 * j, j, len, pos);
	return h;
}

/*
 * The WQE seal, for WQEs of one or two basic blocks written whole to a BlueFlame page: the ctrl
 * segment's index says which WQE the line holds, dci_stream_channel_id (bytes 9-10, unused on
 * RC and UC queue pairs) holds a 15-bit check of the WQE with its top bit set, which marks the
 * WQE as sealed, and the signature byte is mlx5's: all bytes of the WQE XOR to 0xFF (what
 * libmlx5 writes for queue pairs created with WQE signatures). A WQE whose bytes 9-10 are zero
 * is unsealed: third-party code writes those, and they are checked by their index alone
 * (as are GPUNIC_DEV_BF_ORDERED ones, whose top bit is clear).
 */
#define GPUNIC_DEV_SEAL_MARK 0x8000u
/* The largest WQE a BlueFlame copy carries, in 16-byte units: two blocks, one per line of the
 * page (ConnectX's BlueFlame buffer takes up to 256 bytes; two lines hold an inline WRITE of
 * up to 92 bytes or a SEND of up to 108). */
#define GPUNIC_DEV_BF_MAX_DS 8u
/*
 * The same mark in the first 8 bytes: bit 7 of the DS byte (byte 7, reserved in the PRM's
 * ctrl segment; DS is bits 0-5). A tear can leave bytes 9-10 old, and an old zero there would
 * read "unsealed" and let bytes 0-7 alone (index, QPN, size) name the WQE; with the mark in
 * those same 8 bytes, a sealed WQE's ctrl cannot be taken without its seal.
 */
#define GPUNIC_DEV_CTRL_SEALED_DS 0x80u
/* Bytes 9-10 of a one-block WQE that gpunic's data path wrote to a BlueFlame line for a CPU NIC
 * without a seal, ctrl chunk last (GPUNIC_DEV_QP_SEAL_BF clear): a NIC reading the ctrl chunk
 * first sees the rest whole. Any other unsealed copy (libmlx5's, in address order) is not
 * trusted on its own. */
#define GPUNIC_DEV_BF_ORDERED 0x0001u

/* The part of a WQE's seal that chunk @j (words @w[0..3]) of a WQE of @ds units at index @idx
 * contributes: the words past the WQE, and bytes 8-10 (the seal's own fields), count as zero. */
GPUNIC_DEV_FN uint32_t gpunic_dev_seal_part(const uint32_t *w, uint32_t j, uint32_t ds,
					    uint32_t idx)
{
	uint32_t h = 0, k, v;

	for (k = 0; k < 4; k++) {
		v = (j == 0 && k == 2) ? w[k] & 0xff000000u : w[k];
		h += gpunic_dev_line_mix(v, 4 * j + k, idx ^ 0x5ea1u);
	}
	/* selected, not branched on: the four GPU lanes that each hold a chunk stay together */
	return j < ds ? h : 0;
}

/* Sum of the parts -> the 16-bit value stored in bytes 9-10. */
GPUNIC_DEV_FN uint32_t gpunic_dev_seal_finish(uint32_t h)
{
	return ((h ^ (h >> 16)) & 0x7fffu) | GPUNIC_DEV_SEAL_MARK;
}

/* Word 2 of a ctrl segment with the seal value in bytes 9-10 (big-endian, as every PRM
 * field); the signature byte (8) is left as it was. */
GPUNIC_DEV_FN uint32_t gpunic_dev_seal_put(uint32_t w2, uint32_t seal)
{
	return (w2 & 0xff0000ffu) | ((seal >> 8) & 0xff) << 8 | (seal & 0xff) << 16;
}

/* XOR of the four bytes of a word. */
GPUNIC_DEV_FN uint32_t gpunic_dev_xor_bytes(uint32_t x)
{
	x ^= x >> 16;
	x ^= x >> 8;
	return x & 0xff;
}

/* Bytes 9-10 of a ctrl segment's third word: nonzero means sealed. */
GPUNIC_DEV_FN uint32_t gpunic_dev_wqe_seal_field(const uint32_t *w)
{
	return ((w[2] >> 8) & 0xff) << 8 | ((w[2] >> 16) & 0xff);
}

/* Does this ctrl segment say its WQE is sealed, by either mark? Then only a whole WQE, one
 * that passes gpunic_dev_wqe_seal_ok(), may run. */
GPUNIC_DEV_FN int gpunic_dev_wqe_claims_seal(const uint32_t *w)
{
	return (gpunic_dev_wqe_seal_field(w) & GPUNIC_DEV_SEAL_MARK) ||
	       (gpunic_dev_be32toh(w[1]) & GPUNIC_DEV_CTRL_SEALED_DS);
}

/* The WQE's size in 16-byte units, from its ctrl segment's second word. */
GPUNIC_DEV_FN uint32_t gpunic_dev_ctrl_ds(const uint32_t *w)
{
	return gpunic_dev_be32toh(w[1]) & 0x3f;
}

/* The WQE's index, from its ctrl segment's first word. */
GPUNIC_DEV_FN uint32_t gpunic_dev_ctrl_idx(const uint32_t *w)
{
	return (gpunic_dev_be32toh(w[0]) >> 8) & 0xffff;
}

/**
 * gpunic_dev_wqe_seal_bbs - seal a WQE in place (@w: its words, 16 per block, @nbb blocks of
 * them, 1 or 2; the signature and bytes 9-10 are overwritten). Units past @nbb blocks are not
 * covered: a WQE longer than that is not one a BlueFlame copy can carry.
 */
GPUNIC_DEV_FN void gpunic_dev_wqe_seal_bbs(uint32_t *w, uint32_t nbb)
{
	uint32_t ds = gpunic_dev_ctrl_ds(w), idx = gpunic_dev_ctrl_idx(w), h = 0, x = 0, j, k;

	if (ds > 4 * nbb)
		ds = 4 * nbb;
	w[1] |= gpunic_dev_htobe32(GPUNIC_DEV_CTRL_SEALED_DS);
	for (j = 0; j < ds; j++)
		h += gpunic_dev_seal_part(w + 4 * j, j, ds, idx);
	w[2] = gpunic_dev_seal_put(w[2] & 0xffffff00u, gpunic_dev_seal_finish(h));
	for (j = 0; j < ds; j++)
		for (k = 0; k < 4; k++)
			x ^= w[4 * j + k];
	w[2] |= ~gpunic_dev_xor_bytes(x) & 0xff;
}

/** gpunic_dev_wqe_seal - seal a one-block WQE in place (@w: its 16 words, ctrl first) */
GPUNIC_DEV_FN void gpunic_dev_wqe_seal(uint32_t *w)
{
	gpunic_dev_wqe_seal_bbs(w, 1);
}

/**
 * gpunic_dev_wqe_seal_ok_bbs - is this sealed WQE whole? (@w: 16 words per block, @nbb blocks
 * of them, 1 or 2, ctrl first)
 * Return: 1 when the seal and the mlx5 signature both hold for the WQE the ctrl describes, which
 * must fit in @nbb blocks.
 */
GPUNIC_DEV_FN int gpunic_dev_wqe_seal_ok_bbs(const uint32_t *w, uint32_t nbb)
{
	uint32_t ds = gpunic_dev_ctrl_ds(w), idx = gpunic_dev_ctrl_idx(w), h = 0, x = 0, j, k;

	if (!ds || ds > 4 * nbb || !(gpunic_dev_wqe_seal_field(w) & GPUNIC_DEV_SEAL_MARK))
		return 0;
	for (j = 0; j < ds; j++) {
		h += gpunic_dev_seal_part(w + 4 * j, j, ds, idx);
		for (k = 0; k < 4; k++)
			x ^= w[4 * j + k];
	}
	return gpunic_dev_xor_bytes(x) == 0xff &&
	       gpunic_dev_seal_finish(h) == gpunic_dev_wqe_seal_field(w);
}

/** gpunic_dev_wqe_seal_ok - gpunic_dev_wqe_seal_ok_bbs() of a one-block WQE (@w: 16 words) */
GPUNIC_DEV_FN int gpunic_dev_wqe_seal_ok(const uint32_t *w)
{
	return gpunic_dev_wqe_seal_ok_bbs(w, 1);
}

/**
 * gpunic_dev_send_wqe_ds - size of the WQE a send request needs, in 16-byte units
 * Return: 1..GPUNIC_DEV_WQE_MAX_DS, or -EINVAL for an unsupported opcode, inline READ, inline
 * payload over qp->max_inline, or a WQE larger than the format or the ring allows.
 */
GPUNIC_DEV_FN int gpunic_dev_send_wqe_ds(const struct gpunic_dev_qp *qp,
					 const struct gpunic_dev_send_wr *wr)
{
	uint32_t ds = 1, len = 0, i;

	switch (wr->opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		break;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
		ds++;
		break;
	case MLX5_OPCODE_ATOMIC_CS:	/* raddr, atomic and one 8-byte data segment */
	case MLX5_OPCODE_ATOMIC_FA:
		if ((wr->flags & GPUNIC_DEV_SEND_INLINE) || wr->num_sge != 1 || !wr->sg_list ||
		    wr->sg_list[0].length != 8)
			return -EINVAL;
		ds += 2;
		break;
	case MLX5_OPCODE_NOP:		/* the ctrl segment alone */
		if (wr->num_sge)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (wr->num_sge && !wr->sg_list)
		return -EINVAL;
	if (wr->flags & GPUNIC_DEV_SEND_INLINE) {
		if (wr->opcode == MLX5_OPCODE_RDMA_READ)
			return -EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - len)
				return -EINVAL;
			len += wr->sg_list[i].length;
		}
		/* No inline segment at all for an empty payload, as mlx5 does. */
		if (len)
			ds += gpunic_dev_inline_units(len);
	} else {
		if (wr->num_sge > GPUNIC_DEV_WQE_MAX_DS)
			return -EINVAL;
		for (i = 0; i < wr->num_sge; i++)
			ds += wr->sg_list[i].length != 0;
	}
	if (ds > GPUNIC_DEV_WQE_MAX_DS || gpunic_dev_ds_to_bbs(ds) > qp->sq_wqebb_cnt)
		return -EINVAL;
	return (int)ds;
}

/** gpunic_dev_send_wqe_bbs - basic blocks a send request needs, or -EINVAL (see above) */
GPUNIC_DEV_FN int gpunic_dev_send_wqe_bbs(const struct gpunic_dev_qp *qp,
					  const struct gpunic_dev_send_wr *wr)
{
	int ds = gpunic_dev_send_wqe_ds(qp, wr);

	return ds < 0 ? ds : (int)gpunic_dev_ds_to_bbs((uint32_t)ds);
}

/**
 * gpunic_dev_qp_check - is this exported QP one the data path can drive?
 * Power-of-two rings within GPUNIC_DEV_MAX_RING, 16-byte receive stride, a resolved handler mode
 * with its doorbell, mailbox or BlueFlame page, state and doorbell record present.
 * Return: 0 or -EINVAL.
 */
GPUNIC_DEV_FN int gpunic_dev_qp_check(const struct gpunic_dev_qp *qp)
{
	uint32_t n = qp->sq_wqebb_cnt;

	if (!n || (n & (n - 1)) || n > GPUNIC_DEV_MAX_RING || !qp->sq_buf)
		return -EINVAL;
	n = qp->rq_wqe_cnt;
	if ((n & (n - 1)) || n > GPUNIC_DEV_MAX_RING)
		return -EINVAL;
	if (n && (!qp->rq_buf || !qp->rq_stride || qp->rq_stride % GPUNIC_DEV_SEG_BYTES))
		return -EINVAL;
	n = qp->scq.cqe_cnt;
	if (!n || (n & (n - 1)) || !qp->scq.buf || !qp->scq.dbrec)
		return -EINVAL;
	n = qp->rcq.cqe_cnt;
	if (!n || (n & (n - 1)) || !qp->rcq.buf || !qp->rcq.dbrec)
		return -EINVAL;
	if (!qp->state || !qp->dbrec)
		return -EINVAL;
	if (qp->handler_mode == GPUNIC_HANDLER_GPU_DB)
		return qp->db ? 0 : -EINVAL;
	if (qp->handler_mode == GPUNIC_HANDLER_CPU_PROXY)
		return qp->mailbox ? 0 : -EINVAL;
	if (qp->handler_mode == GPUNIC_HANDLER_GPU_BF)
		return qp->bf && qp->bf_lines && !(qp->bf_lines & (qp->bf_lines - 1)) ? 0 :
										   -EINVAL;
	return -EINVAL;
}

/* ---------------------------------------------------------------- WQE writing */

/* One 16-byte segment, built in registers and stored in one piece. */
union gpunic_dev_seg {
	struct mlx5_wqe_ctrl_seg ctrl;
	struct mlx5_wqe_raddr_seg raddr;
	struct mlx5_wqe_data_seg data;
	struct mlx5_wqe_inl_data_seg inl;
	uint8_t b[GPUNIC_DEV_SEG_BYTES];
	uint64_t q[2];
};

/* Address of 16-byte unit @seg of the send WQE starting at basic block @idx; a WQE wraps from
 * the ring's end to its start, and a segment never straddles the end. */
GPUNIC_DEV_FN uint8_t *gpunic_dev_sq_seg(const struct gpunic_dev_qp *qp, uint32_t idx,
					 uint32_t seg)
{
	size_t mask = ((size_t)qp->sq_wqebb_cnt << 2) - 1;

	return qp->sq_buf + (((((size_t)idx) << 2) + seg) & mask) * GPUNIC_DEV_SEG_BYTES;
}

GPUNIC_DEV_FN void gpunic_dev_seg_store(uint8_t *dst, const union gpunic_dev_seg *s)
{
#if GPUNIC_DEV_ON_GPU
	/* One 16-byte store: the rings are 16-byte aligned. */
	*(ulonglong2 *)dst = make_ulonglong2(s->q[0], s->q[1]);
#else
	memcpy(dst, s->q, sizeof(s->q));
#endif
}

/* A WQE's first basic blocks (as many as a BlueFlame copy holds), built in registers:
 * BlueFlame writes them whole. */
union gpunic_dev_bb {
	union gpunic_dev_seg s[GPUNIC_DEV_BF_MAX_DS];
	uint32_t w[4 * GPUNIC_DEV_BF_MAX_DS];
	uint64_t q[2 * GPUNIC_DEV_BF_MAX_DS];
};

/* Does a WQE of @ds units stage its second block in registers too? A WQE of two blocks does
 * (fewer, fixed stores than a piece per unit to the ring, and a two-line BlueFlame copy needs
 * both); any other stages its first block only. */
GPUNIC_DEV_FN int gpunic_dev_wqe_stages_two_bbs(uint32_t ds)
{
	return ds > 4 && ds <= GPUNIC_DEV_BF_MAX_DS;
}

/* Segment @seg of the WQE at @idx: the first @staged (4, or 8 for a WQE of two blocks) go to
 * @bb, the rest straight to the ring. */
GPUNIC_DEV_FN void gpunic_dev_priv_put_seg(const struct gpunic_dev_qp *qp, uint32_t idx,
					   uint32_t seg, uint32_t staged, union gpunic_dev_bb *bb,
					   const union gpunic_dev_seg *s)
{
	if (seg < staged)
		bb->s[seg] = *s;
	else
		gpunic_dev_seg_store(gpunic_dev_sq_seg(qp, idx, seg), s);
}

/* Copy @n <= 16 bytes with fixed-size moves: a memcpy of variable length costs a call or a
 * "rep movsb" start-up on a CPU (tests/hotpath counts it) for the few bytes of one segment. */
GPUNIC_DEV_FN void gpunic_dev_priv_copy_le16(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	if (n & 16) {
		memcpy(dst, src, 16);
		return;
	}
	if (n & 8) {
		memcpy(dst, src, 8);
		dst += 8;
		src += 8;
	}
	if (n & 4) {
		memcpy(dst, src, 4);
		dst += 4;
		src += 4;
	}
	if (n & 2) {
		memcpy(dst, src, 2);
		dst += 2;
		src += 2;
	}
	if (n & 1)
		*dst = *src;
}

/* Fill the inline segment: 4-byte header then @len bytes from the SGEs, zero padded to 16.
 * Each SGE is copied in pieces that fill the segment being built; a full one is stored. */
GPUNIC_DEV_FN void gpunic_dev_priv_write_inline(const struct gpunic_dev_qp *qp, uint32_t idx,
						uint32_t seg, uint32_t staged,
						const struct gpunic_dev_send_wr *wr, uint32_t len,
						union gpunic_dev_bb *bb)
{
	union gpunic_dev_seg s;
	uint32_t k, b = sizeof(struct mlx5_wqe_inl_data_seg), n, rest, left = len;
	const uint8_t *src;

	s.q[0] = 0;
	s.q[1] = 0;
	s.inl.byte_count = gpunic_dev_htobe32(len | (uint32_t)MLX5_INLINE_SEG);
	if (wr->num_sge == 1 && seg * GPUNIC_DEV_SEG_BYTES + b + len <= staged * GPUNIC_DEV_SEG_BYTES) {
		/* all of it inside the staged blocks, which are zeroed: one copy where it goes,
		 * not a piece per segment */
		uint8_t *dst = (uint8_t *)(void *)bb->s + seg * GPUNIC_DEV_SEG_BYTES;

		bb->s[seg].inl.byte_count = s.inl.byte_count;
		memcpy(dst + b, (const void *)(uintptr_t)wr->sg_list[0].addr, len);
		return;
	}
	for (k = 0; k < wr->num_sge && left; k++) {
		src = (const uint8_t *)(uintptr_t)wr->sg_list[k].addr;
		rest = wr->sg_list[k].length < left ? wr->sg_list[k].length : left;
		left -= rest;
		for (; rest; rest -= n, src += n) {
			n = rest < GPUNIC_DEV_SEG_BYTES - b ? rest : GPUNIC_DEV_SEG_BYTES - b;
			gpunic_dev_priv_copy_le16(&s.b[b], src, n);
			b += n;
			if (b == GPUNIC_DEV_SEG_BYTES) {
				gpunic_dev_priv_put_seg(qp, idx, seg++, staged, bb, &s);
				s.q[0] = 0;
				s.q[1] = 0;
				b = 0;
			}
		}
	}
	if (b)
		gpunic_dev_priv_put_seg(qp, idx, seg, staged, bb, &s);
}

/* First 8 bytes of a ctrl segment (what the doorbell carries) -> end of that WQE, as a full
 * counter near @base (the WQE index on the queue has only 16 bits). */
GPUNIC_DEV_FN uint32_t gpunic_dev_priv_ctrl_end(uint64_t ctrl8, uint32_t base)
{
	union gpunic_dev_seg s;
	uint32_t idx, ds;

	s.q[0] = ctrl8;
	idx = (gpunic_dev_be32toh(s.ctrl.opmod_idx_opcode) >> 8) & 0xffff;
	ds = gpunic_dev_be32toh(s.ctrl.qpn_ds) & 0x3f;
	return base + ((idx + gpunic_dev_ds_to_bbs(ds) - base) & 0xffff);
}

/* The BlueFlame line of the WQE at basic block @idx. */
GPUNIC_DEV_FN uint8_t *gpunic_dev_bf_line(const struct gpunic_dev_qp *qp, uint32_t idx)
{
	return qp->bf + (size_t)(idx & (qp->bf_lines - 1)) * MLX5_SEND_WQE_BB;
}

/*
 * Store a WQE's first blocks (@nseg units; at most GPUNIC_DEV_BF_MAX_DS are in @bb): to the ring,
 * and in GPU_BF mode (@bf: one or two blocks) also to its BlueFlame lines, which are what the
 * NIC executes: no doorbell and no fence follow. The ring copy comes first (program order; the
 * NIC reads it only to retransmit or when a line was overwritten). Across PCIe
 * (GPUNIC_DEV_QP_SEAL_BF) the WQE is sealed and its chunks go in any order; else the first
 * line's ctrl chunk, which names the WQE, is stored last with release ordering, and a NIC
 * reading it first with acquire ordering then sees the whole copy.
 */
GPUNIC_DEV_FN void gpunic_dev_priv_store_bb(const struct gpunic_dev_qp *qp, uint32_t idx,
					    union gpunic_dev_bb *bb, uint32_t nseg, int bf)
{
	int seal = bf && (qp->flags & GPUNIC_DEV_QP_SEAL_BF);
	uint8_t *ring, *line, *line2;
	uint32_t i;

	if (seal)
		gpunic_dev_wqe_seal_bbs(bb->w, nseg > 4 ? 2 : 1);
	else if (bf)
		bb->w[2] = gpunic_dev_seal_put(bb->w[2], GPUNIC_DEV_BF_ORDERED);
	/* the whole first block, whatever @nseg: its units past the WQE are the WQE's own slot,
	 * and four fixed stores from one address cost a CPU less than a counted loop */
	ring = gpunic_dev_sq_seg(qp, idx, 0);
	for (i = 0; i < 4; i++)
		gpunic_dev_seg_store(ring + i * GPUNIC_DEV_SEG_BYTES, &bb->s[i]);
	/* a WQE of two blocks staged its second block too (gpunic_dev_wqe_write_send) */
	if (gpunic_dev_wqe_stages_two_bbs(nseg)) {
		ring = gpunic_dev_sq_seg(qp, idx, 4);
		for (i = 0; i < 4; i++)
			gpunic_dev_seg_store(ring + i * GPUNIC_DEV_SEG_BYTES, &bb->s[4 + i]);
	}
	if (!bf)
		return;
	line = gpunic_dev_bf_line(qp, idx);
	if (!seal) {
		/* the ctrl chunk leaves first and comes back last: a NIC that read the old one
		 * before the body changed sees it change when it reads it again (req_bf_line) */
		gpunic_dev_store_relaxed_u64((uint64_t *)line, 0);
		gpunic_dev_to_nic_barrier();
	}
	/* written out: gcc -O2 keeps a loop of three passes here (tests/hotpath: 10 instructions) */
	gpunic_dev_store16_relaxed(line + GPUNIC_DEV_SEG_BYTES, bb->q[2], bb->q[3]);
	gpunic_dev_store16_relaxed(line + 2 * GPUNIC_DEV_SEG_BYTES, bb->q[4], bb->q[5]);
	gpunic_dev_store16_relaxed(line + 3 * GPUNIC_DEV_SEG_BYTES, bb->q[6], bb->q[7]);
	if (nseg > 4) {
		/* the second block's line, the next index's (it may wrap the page) */
		line2 = gpunic_dev_bf_line(qp, idx + 1);
		for (i = 0; i < 4; i++)
			gpunic_dev_store16_relaxed(line2 + i * GPUNIC_DEV_SEG_BYTES,
						   bb->q[8 + 2 * i], bb->q[9 + 2 * i]);
	}
	if (seal) {
		gpunic_dev_store16_relaxed(line, bb->q[0], bb->q[1]);
	} else {
		gpunic_dev_store_release_u64((uint64_t *)(line + 8), bb->q[1]);
		gpunic_dev_store_release_u64((uint64_t *)line, bb->q[0]);
	}
}

/*
 * GPU_BF, a WQE of more than two blocks: it is not written to the BlueFlame page, so clear the
 * lines of its blocks. A line keeps the 16-bit index of the WQE that last used it; without this,
 * a line skipped for 65536 blocks would name the WQE index that comes back to it.
 */
GPUNIC_DEV_FN void gpunic_dev_priv_bf_clear(const struct gpunic_dev_qp *qp, uint32_t idx,
					    uint32_t nbb)
{
	uint32_t i;

	for (i = 0; i < nbb && i < qp->bf_lines; i++)
		gpunic_dev_store16_relaxed(gpunic_dev_bf_line(qp, idx + i), 0, 0);
}

/* Does a WQE of @ds units go through the BlueFlame page on this QP? One block always; two
 * where the copy is sealed (across PCIe, where it saves the fence before the record; a CPU
 * executor's release store is free, and a second line to copy is not). */
GPUNIC_DEV_FN int gpunic_dev_wqe_uses_bf(const struct gpunic_dev_qp *qp, uint32_t ds)
{
	return qp->handler_mode == GPUNIC_HANDLER_GPU_BF &&
	       (ds <= 4 || (ds <= GPUNIC_DEV_BF_MAX_DS && (qp->flags & GPUNIC_DEV_QP_SEAL_BF)));
}

/**
 * gpunic_dev_wqe_write_send - write a send WQE at basic block @idx, which the caller reserved
 * @qp: the queue pair
 * @idx: the first basic block, reserved by the caller
 * @wr: the work request
 * @ds: from gpunic_dev_send_wqe_ds() for this @wr
 * In GPU_BF mode a WQE of one or two blocks is sealed and also written to its BlueFlame lines.
 * Return: the first 8 bytes of the ctrl segment, the doorbell value for this WQE.
 */
GPUNIC_DEV_FN uint64_t gpunic_dev_wqe_write_send(const struct gpunic_dev_qp *qp, uint32_t idx,
						 const struct gpunic_dev_send_wr *wr, uint32_t ds)
{
	union gpunic_dev_seg s;
	union gpunic_dev_bb bb;
	uint32_t seg = 1, i, len = 0;
	/* segments staged in bb */
	uint32_t staged = gpunic_dev_wqe_stages_two_bbs(ds) ? GPUNIC_DEV_BF_MAX_DS : 4;
	uint8_t fm_ce_se = 0;
	int gathers = 0;

	/* fixed counts: a variable one is a memset call on a CPU */
	for (i = 0; i < 8; i++)
		bb.q[i] = 0;
	if (staged > 4)
		for (i = 8; i < 16; i++)
			bb.q[i] = 0;
	if (gpunic_dev_opcode_has_raddr(wr->opcode)) {
		s.raddr.raddr = gpunic_dev_htobe64(wr->remote_addr);
		s.raddr.rkey = gpunic_dev_htobe32(wr->rkey);
		s.raddr.reserved = 0;
		gpunic_dev_priv_put_seg(qp, idx, seg++, staged, &bb, &s);
	}
	if (wr->opcode == MLX5_OPCODE_ATOMIC_CS || wr->opcode == MLX5_OPCODE_ATOMIC_FA) {
		/* mlx5_wqe_atomic_seg {swap_add, compare}, big-endian */
		s.q[0] = gpunic_dev_htobe64(wr->opcode == MLX5_OPCODE_ATOMIC_CS ? wr->swap :
										  wr->compare_add);
		s.q[1] = wr->opcode == MLX5_OPCODE_ATOMIC_CS ? gpunic_dev_htobe64(wr->compare_add) : 0;
		gpunic_dev_priv_put_seg(qp, idx, seg++, staged, &bb, &s);
	}
	if (wr->flags & GPUNIC_DEV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len)
			gpunic_dev_priv_write_inline(qp, idx, seg, staged, wr, len, &bb);
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			s.data.byte_count = gpunic_dev_htobe32(wr->sg_list[i].length);
			s.data.lkey = gpunic_dev_htobe32(wr->sg_list[i].lkey);
			s.data.addr = gpunic_dev_htobe64(wr->sg_list[i].addr);
			gpunic_dev_priv_put_seg(qp, idx, seg++, staged, &bb, &s);
			gathers = 1;
		}
	}

	if (wr->flags & GPUNIC_DEV_SEND_SIGNALED)
		fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
	if (wr->flags & GPUNIC_DEV_SEND_SOLICITED)
		fm_ce_se |= MLX5_WQE_CTRL_SOLICITED;
	if (wr->flags & GPUNIC_DEV_SEND_FENCE)
		fm_ce_se |= MLX5_WQE_CTRL_FENCE;
	s.ctrl.opmod_idx_opcode = gpunic_dev_htobe32(((idx & 0xffff) << 8) | wr->opcode);
	s.ctrl.qpn_ds = gpunic_dev_htobe32((qp->qpn << 8) | ds);
	s.ctrl.signature = 0;
	s.ctrl.dci_stream_channel_id = 0;
	s.ctrl.fm_ce_se = fm_ce_se;
	/* The one and only swap of the immediate: the wire and the peer's CQE carry it as is. */
	s.ctrl.imm = gpunic_dev_opcode_has_imm(wr->opcode) ? gpunic_dev_htobe32(wr->imm) : 0;
	bb.s[0] = s;
	/* A sealed BlueFlame WQE runs with no doorbell fence after it: bytes it gathers, which
	 * this thread may just have written, reach the NIC first, as ibv_post_send promises
	 * (rdma-core fences before its BlueFlame copy too). Inline data travels in the line. */
	if (gathers &&
	    (wr->opcode == MLX5_OPCODE_SEND || wr->opcode == MLX5_OPCODE_SEND_IMM ||
	     wr->opcode == MLX5_OPCODE_RDMA_WRITE || wr->opcode == MLX5_OPCODE_RDMA_WRITE_IMM) &&
	    gpunic_dev_wqe_uses_bf(qp, ds) && (qp->flags & GPUNIC_DEV_QP_SEAL_BF))
		gpunic_dev_to_nic_barrier();
	gpunic_dev_priv_store_bb(qp, idx, &bb, ds, gpunic_dev_wqe_uses_bf(qp, ds));
	if (qp->handler_mode == GPUNIC_HANDLER_GPU_BF && !gpunic_dev_wqe_uses_bf(qp, ds))
		gpunic_dev_priv_bf_clear(qp, idx, gpunic_dev_ds_to_bbs(ds));
	return bb.q[0];
}

/* ---------------------------------------------------------------- send queue state */

/** gpunic_dev_sq_free - basic blocks that can be reserved now (as seen by the caller) */
GPUNIC_DEV_FN uint32_t gpunic_dev_sq_free(const struct gpunic_dev_qp *qp)
{
	uint32_t done = gpunic_dev_load_acquire_u32(&qp->state->sq_completed);

	return qp->sq_wqebb_cnt - (gpunic_dev_load_relaxed_u32(&qp->state->sq_reserved) - done);
}

/** gpunic_dev_sq_done - has the NIC completed the send WQE that post returned as @wqe_idx?
 * Unsignalled WQEs count as done once a later CQE arrives (the send queue completes in order). */
GPUNIC_DEV_FN int gpunic_dev_sq_done(const struct gpunic_dev_qp *qp, uint32_t wqe_idx)
{
	return (int32_t)(gpunic_dev_load_acquire_u32(&qp->state->sq_completed) - wqe_idx) > 0;
}

/*
 * Tell the NIC the send producer counter is @pi; @ctrl8 is the doorbell value of the WQE that
 * ends at @pi. The steps of rdma-core's post_send_db.
 */
GPUNIC_DEV_FN int gpunic_dev_priv_ring(struct gpunic_dev_qp *qp, uint32_t pi, uint64_t ctrl8)
{
	if (qp->handler_mode != GPUNIC_HANDLER_GPU_DB &&
	    qp->handler_mode != GPUNIC_HANDLER_CPU_PROXY &&
	    qp->handler_mode != GPUNIC_HANDLER_GPU_BF)
		return -EINVAL;

	/* 1. Doorbell record, a release store: the WQEs it announces (ours, and all those we saw
	 *    marked ready) are visible to the NIC before it. 16 bits, big-endian. In GPU_BF mode
	 *    that is all: the NIC polls the record beside the BlueFlame page, no doorbell. */
	gpunic_dev_store_release_u32(&qp->dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(pi & 0xffff));

	if (qp->handler_mode == GPUNIC_HANDLER_GPU_BF) {
		/* nothing more to ring */
	} else if (qp->handler_mode == GPUNIC_HANDLER_GPU_DB) {
		/* 2. The record lands before the doorbell: a NIC woken by it reads the record. */
		gpunic_dev_to_nic_barrier();
		/* 3. Doorbell: the last WQE's ctrl bytes 0-7, one 64-bit store, as to a UAR. */
		gpunic_dev_mmio_write64(qp->db, ctrl8);
	} else {
		/* 2. Mailbox, released too: a proxy thread forwards the producer counter. */
		gpunic_dev_store_release_u32(qp->mailbox, pi);
	}

	gpunic_dev_store_relaxed_u32(&qp->state->sq_submitted, pi);
	return 0;
}

/* ---------------------------------------------------------------- thread scope (exclusive) */

/**
 * gpunic_dev_post_send - write one send WQE; the calling thread owns the send queue
 * Nothing reaches the NIC until gpunic_dev_submit().
 * Return: the WQE's basic-block counter (its low 16 bits are the CQE's wqe_counter), or
 * -EINVAL, or -ENOMEM when the ring lacks room until send completions are polled.
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_send(struct gpunic_dev_qp *qp,
					   const struct gpunic_dev_send_wr *wr)
{
	struct gpunic_dev_qp_state *st = qp->state;
	int ds = gpunic_dev_send_wqe_ds(qp, wr);
	uint32_t pi, nbb, done;
	uint64_t ctrl8;

	if (ds < 0)
		return ds;
	nbb = gpunic_dev_ds_to_bbs((uint32_t)ds);
	pi = st->sq_reserved;
	/* Never overwrite a WQE the NIC has not completed. */
	done = gpunic_dev_load_acquire_u32(&st->sq_completed);
	if (pi - done + nbb > qp->sq_wqebb_cnt)
		return -ENOMEM;
	ctrl8 = gpunic_dev_wqe_write_send(qp, pi, wr, (uint32_t)ds);
	if (!gpunic_dev_wqe_uses_bf(qp, (uint32_t)ds))
		st->sq_unsealed = pi + nbb;
	gpunic_dev_store_relaxed_u32(&st->sq_reserved, pi + nbb);
	st->sq_last_ctrl = ctrl8;
	gpunic_dev_store_relaxed_u32(&st->sq_ready, pi + nbb);
	return pi;
}

/* GPU_BF, thread scope: every WQE since the last submit was sealed and written to the
 * BlueFlame page, where the NIC executes it: the record only follows, as a plain posted
 * store, with no fence. */
GPUNIC_DEV_FN int gpunic_dev_priv_bf_sealed_only(const struct gpunic_dev_qp *qp)
{
	const struct gpunic_dev_qp_state *st = qp->state;

	return qp->handler_mode == GPUNIC_HANDLER_GPU_BF && (qp->flags & GPUNIC_DEV_QP_SEAL_BF) &&
	       (int32_t)(st->sq_unsealed - st->sq_submitted) <= 0;
}

/** gpunic_dev_submit - ring the doorbell for every WQE posted (thread scope). In GPU_BF mode
 * WQEs of one block were handed to the NIC when they were posted; this keeps the doorbell
 * record current. Return: 0 or -EINVAL for an unresolved handler mode. */
GPUNIC_DEV_FN int gpunic_dev_submit(struct gpunic_dev_qp *qp)
{
	struct gpunic_dev_qp_state *st = qp->state;

	if (st->sq_ready == st->sq_submitted)
		return 0;
	if (gpunic_dev_priv_bf_sealed_only(qp)) {
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR],
					     gpunic_dev_htobe32(st->sq_ready & 0xffff));
		gpunic_dev_store_relaxed_u32(&st->sq_submitted, st->sq_ready);
		return 0;
	}
	return gpunic_dev_priv_ring(qp, st->sq_ready, st->sq_last_ctrl);
}

/** gpunic_dev_post_send_sge - thread scope, one SGE (a zero @len posts no data segment) */
GPUNIC_DEV_FN int64_t gpunic_dev_post_send_sge(struct gpunic_dev_qp *qp, uint8_t opcode,
					       uint8_t flags, uint64_t laddr, uint32_t len,
					       uint32_t lkey, uint64_t raddr, uint32_t rkey,
					       uint32_t imm)
{
	struct gpunic_dev_sge sge;
	struct gpunic_dev_send_wr wr;

	sge.addr = laddr;
	sge.length = len;
	sge.lkey = lkey;
	wr.opcode = opcode;
	wr.flags = (uint8_t)(flags & ~GPUNIC_DEV_SEND_INLINE);
	wr.num_sge = 1;
	wr.imm = imm;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	wr.reserved = 0;
	wr.sg_list = &sge;
	wr.compare_add = 0;
	wr.swap = 0;
	return gpunic_dev_post_send(qp, &wr);
}

/** gpunic_dev_post_send_inline - thread scope, @len bytes at @data copied into the WQE */
GPUNIC_DEV_FN int64_t gpunic_dev_post_send_inline(struct gpunic_dev_qp *qp, uint8_t opcode,
						  uint8_t flags, const void *data, uint32_t len,
						  uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct gpunic_dev_sge sge;
	struct gpunic_dev_send_wr wr;

	sge.addr = (uint64_t)(uintptr_t)data;
	sge.length = len;
	sge.lkey = 0;
	wr.opcode = opcode;
	wr.flags = (uint8_t)(flags | GPUNIC_DEV_SEND_INLINE);
	wr.num_sge = 1;
	wr.imm = imm;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	wr.reserved = 0;
	wr.sg_list = &sge;
	wr.compare_add = 0;
	wr.swap = 0;
	return gpunic_dev_post_send(qp, &wr);
}

/* ---------------------------------------------------------------- shared (many threads) */

/**
 * gpunic_dev_sq_reserve_mt - reserve @nbb basic blocks of the send queue
 * Every successful reservation must be written and marked ready, or later ones never reach the
 * NIC.
 * Return: the first reserved counter, or -ENOMEM when the ring lacks room.
 */
GPUNIC_DEV_FN int64_t gpunic_dev_sq_reserve_mt(struct gpunic_dev_qp *qp, uint32_t nbb)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t done, cur;

	for (;;) {
		/* completed before reserved: completed can only trail what we then read. */
		done = gpunic_dev_load_acquire_u32(&st->sq_completed);
		cur = gpunic_dev_load_relaxed_u32(&st->sq_reserved);
		if (cur - done + nbb > qp->sq_wqebb_cnt)
			return -ENOMEM;
		if (gpunic_dev_atomic_cas_u32(&st->sq_reserved, cur, cur + nbb) == cur)
			return cur;
	}
}

/**
 * gpunic_dev_sq_mark_ready_mt - publish the WQEs in [@start, @start + @nbb) to the submitters
 * @qp: the queue pair
 * @start: first basic block of the range, as reserved
 * @nbb: basic blocks in the range
 * @ctrl8: doorbell value of the last WQE in the range
 * Waits for the reservations before @start: the NIC reads the ring as one stream, so a WQE may
 * only be announced once every WQE before it is in memory.
 */
GPUNIC_DEV_FN void gpunic_dev_sq_mark_ready_mt(struct gpunic_dev_qp *qp, uint32_t start,
					       uint32_t nbb, uint64_t ctrl8)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t spins = 0;

	while (gpunic_dev_load_acquire_u32(&st->sq_ready) != start)
		gpunic_dev_spin_wait(&spins);
	/* The submitter trusts sq_last_ctrl alone: its release covers our WQE and, through the
	 * acquire above, every WQE before it. */
	gpunic_dev_store_release_u64(&st->sq_last_ctrl, ctrl8);
	gpunic_dev_store_release_u32(&st->sq_ready, start + nbb);
}

/**
 * gpunic_dev_submit_mt - ring the doorbell for every WQE marked ready (shared scope)
 * One thread rings at a time, under state->sq_db_lock, so the doorbell record never moves
 * backwards. A thread that finds the lock taken leaves: the holder looks again after unlocking.
 * Return: 0 or -EINVAL for an unresolved handler mode.
 */
GPUNIC_DEV_FN int gpunic_dev_submit_mt(struct gpunic_dev_qp *qp)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t sub, pi;
	uint64_t ctrl8;
	int ret = 0;

	for (;;) {
		/* Pairs with the barrier after unlocking below: either we take the lock or the
		 * holder sees the sq_last_ctrl we published. */
		gpunic_dev_full_barrier();
		if (gpunic_dev_atomic_cas_u32(&st->sq_db_lock, 0, 1) != 0)
			return ret;
		gpunic_dev_full_barrier();

		sub = gpunic_dev_load_relaxed_u32(&st->sq_submitted);
		ctrl8 = gpunic_dev_load_acquire_u64(&st->sq_last_ctrl);
		pi = gpunic_dev_priv_ctrl_end(ctrl8, sub);
		if (pi != sub)
			ret = gpunic_dev_priv_ring(qp, pi, ctrl8);

		gpunic_dev_store_release_u32(&st->sq_db_lock, 0);
		gpunic_dev_full_barrier();
		ctrl8 = gpunic_dev_load_acquire_u64(&st->sq_last_ctrl);
		if (ret || gpunic_dev_priv_ctrl_end(ctrl8, pi) == pi)
			return ret;
	}
}

/* Mark [@start, @start + @nbb) ready, then ring unless a later reservation exists: its owner
 * marks ready after us and rings for both. */
GPUNIC_DEV_FN int gpunic_dev_priv_ready_ring_mt(struct gpunic_dev_qp *qp, uint32_t start,
						uint32_t nbb, uint64_t ctrl8)
{
	gpunic_dev_sq_mark_ready_mt(qp, start, nbb, ctrl8);
	if (gpunic_dev_load_relaxed_u32(&qp->state->sq_reserved) != start + nbb)
		return 0;
	return gpunic_dev_submit_mt(qp);
}

/**
 * gpunic_dev_post_send_mt - post one send WQE from any thread sharing the send queue
 * reserve -> write -> mark ready in order -> ring (see gpunic_dev_priv_ready_ring_mt).
 * Return: as gpunic_dev_post_send().
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_send_mt(struct gpunic_dev_qp *qp,
					      const struct gpunic_dev_send_wr *wr)
{
	int ds = gpunic_dev_send_wqe_ds(qp, wr);
	uint32_t nbb;
	uint64_t ctrl8;
	int64_t start;
	int ret;

	if (ds < 0)
		return ds;
	nbb = gpunic_dev_ds_to_bbs((uint32_t)ds);
	start = gpunic_dev_sq_reserve_mt(qp, nbb);
	if (start < 0)
		return start;
	ctrl8 = gpunic_dev_wqe_write_send(qp, (uint32_t)start, wr, (uint32_t)ds);
	ret = gpunic_dev_priv_ready_ring_mt(qp, (uint32_t)start, nbb, ctrl8);
	return ret ? ret : start;
}

/* ---------------------------------------------------------------- warp scope */

/**
 * gpunic_dev_post_send_warp - post @nwr (1..32) send WQEs as one batch on a shared send queue
 * GPU: all 32 lanes of a warp call it together with the same arguments; lane i writes @wrs[i],
 * lane 0 reserves, marks ready and rings once. Host: the calling thread plays every lane in turn.
 * Return: the calling lane's WQE counter (GPU lanes >= @nwr: the batch's end; host: the first
 * WQE's), or -EINVAL / -ENOMEM for the whole batch, of which nothing was posted.
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_send_warp(struct gpunic_dev_qp *qp,
						const struct gpunic_dev_send_wr *wrs,
						uint32_t nwr)
{
	uint32_t total = 0, my_off = 0, lane;
	uint64_t last_ctrl8 = 0;
	int64_t base = 0;
	int ret = 0;
#if GPUNIC_DEV_ON_GPU
	const uint32_t full = 0xffffffffu;
	uint32_t my_bbs = 0, d, t;
	int my_ds = 0;
#else
	int ds[GPUNIC_DEV_WARP_SIZE];
#endif

	if (nwr == 0 || nwr > GPUNIC_DEV_WARP_SIZE)
		return -EINVAL;
#if GPUNIC_DEV_ON_GPU
	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	if (lane < nwr)
		my_ds = gpunic_dev_send_wqe_ds(qp, &wrs[lane]);
	if (__any_sync(full, my_ds < 0))
		return -EINVAL;
	if (lane < nwr)
		my_bbs = gpunic_dev_ds_to_bbs((uint32_t)my_ds);
	/* This lane's offset in the batch: an inclusive scan of the sizes, minus its own. */
	my_off = my_bbs;
	for (d = 1; d < GPUNIC_DEV_WARP_SIZE; d <<= 1) {
		t = __shfl_up_sync(full, my_off, d);
		if (lane >= d)
			my_off += t;
	}
	total = __shfl_sync(full, my_off, GPUNIC_DEV_WARP_SIZE - 1);
	my_off -= my_bbs;

	if (lane == 0)
		base = gpunic_dev_sq_reserve_mt(qp, total);
	base = __shfl_sync(full, base, 0);
	if (base < 0)
		return base;
	if (lane < nwr)
		last_ctrl8 = gpunic_dev_wqe_write_send(qp, (uint32_t)base + my_off, &wrs[lane],
						       (uint32_t)my_ds);
	last_ctrl8 = __shfl_sync(full, last_ctrl8, nwr - 1);
	/* Every lane's WQE before lane 0 marks the batch ready: each lane's own system-scope
	 * barrier, then the warp barrier lane 0 waits on. */
	gpunic_dev_to_nic_barrier();
	__syncwarp(full);
	if (lane == 0)
		ret = gpunic_dev_priv_ready_ring_mt(qp, (uint32_t)base, total, last_ctrl8);
	ret = __shfl_sync(full, ret, 0);
#else
	for (lane = 0; lane < nwr; lane++) {
		ds[lane] = gpunic_dev_send_wqe_ds(qp, &wrs[lane]);
		if (ds[lane] < 0)
			return -EINVAL;
		total += gpunic_dev_ds_to_bbs((uint32_t)ds[lane]);
	}
	base = gpunic_dev_sq_reserve_mt(qp, total);
	if (base < 0)
		return base;
	for (lane = 0; lane < nwr; lane++) {
		last_ctrl8 = gpunic_dev_wqe_write_send(qp, (uint32_t)base + my_off, &wrs[lane],
						       (uint32_t)ds[lane]);
		my_off += gpunic_dev_ds_to_bbs((uint32_t)ds[lane]);
	}
	my_off = 0;
	ret = gpunic_dev_priv_ready_ring_mt(qp, (uint32_t)base, total, last_ctrl8);
#endif
	return ret ? ret : base + my_off;
}

/* ---------------------------------------------------------------- receive queue */

/**
 * gpunic_dev_post_recv_deferred - write one receive WQE without telling the NIC yet: a later
 * gpunic_dev_post_recv() or gpunic_dev_submit_all() publishes it. Same arguments and returns
 * as gpunic_dev_post_recv().
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_recv_deferred(struct gpunic_dev_qp *qp,
						    const struct gpunic_dev_sge *sg,
						    uint32_t num_sge)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t max = qp->rq_stride / GPUNIC_DEV_SEG_BYTES, n = 0, i, head;
	union gpunic_dev_seg s;
	uint8_t *wqe;

	if (!qp->rq_wqe_cnt || (num_sge && !sg))
		return -EINVAL;
	for (i = 0; i < num_sge; i++)
		n += sg[i].length != 0;
	if (n > max)
		return -EINVAL;
	head = st->rq_head;
	if (head - gpunic_dev_load_acquire_exec_u32(&st->rq_tail) >= qp->rq_wqe_cnt)
		return -ENOMEM;

	wqe = qp->rq_buf + (size_t)(head & (qp->rq_wqe_cnt - 1)) * qp->rq_stride;
	n = 0;
	for (i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		s.data.byte_count = gpunic_dev_htobe32(sg[i].length);
		s.data.lkey = gpunic_dev_htobe32(sg[i].lkey);
		s.data.addr = gpunic_dev_htobe64(sg[i].addr);
		gpunic_dev_seg_store(wqe + (size_t)n++ * GPUNIC_DEV_SEG_BYTES, &s);
	}
	if (n < max) {
		/* End of list; as the first entry it makes a zero-length receive. */
		s.data.byte_count = 0;
		s.data.lkey = gpunic_dev_htobe32(MLX5_INVALID_LKEY);
		s.data.addr = 0;
		gpunic_dev_seg_store(wqe + (size_t)n * GPUNIC_DEV_SEG_BYTES, &s);
	}
	head++;
	st->rq_written = head;
	gpunic_dev_store_relaxed_u32(&st->rq_head, head);
	return head - 1;
}

/**
 * gpunic_dev_post_recv - post one receive WQE and update the receive doorbell record
 * @qp: the queue pair
 * @sg: the scatter list, @num_sge entries
 * @num_sge: 0 (or only zero-length entries) posts a zero-length receive, which WRITE_WITH_IMM
 * consumes. Entries beyond the ones used end with lkey MLX5_INVALID_LKEY.
 * One thread at a time posts receives.
 * Return: the receive counter of the WQE, or -EINVAL (more SGEs than rq_stride holds), or
 * -ENOMEM (every receive WQE is still owned by the NIC).
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_recv(struct gpunic_dev_qp *qp,
					   const struct gpunic_dev_sge *sg, uint32_t num_sge)
{
	int64_t r = gpunic_dev_post_recv_deferred(qp, sg, num_sge);

	if (r < 0)
		return r;
	/* Receive doorbell record (16 bits, big-endian; receive queues have no doorbell), a release
	 * store: the receive WQE is visible before the counter that hands it to the NIC. */
	gpunic_dev_store_release_u32(&qp->dbrec[MLX5_RCV_DBR],
				     gpunic_dev_htobe32(qp->state->rq_head & 0xffff));
	qp->state->rq_published = qp->state->rq_head;
	return r;
}

/**
 * gpunic_dev_recv_repost - hand @n completed receive WQEs back to the NIC as they are
 * A receive WQE keeps its bytes after the NIC consumed it, so a ring whose WQEs never change
 * (the zero-length receives of WRITE_WITH_IMM, or one buffer per ring slot) is reposted by
 * moving the producer alone: nothing is written, and nothing needs a fence. The record follows
 * at the next gpunic_dev_recv_publish() or gpunic_dev_submit_all().
 * Return: 0, or -ENOMEM when fewer than @n WQEs have completed.
 */
GPUNIC_DEV_FN int gpunic_dev_recv_repost(struct gpunic_dev_qp *qp, uint32_t n)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t head = st->rq_head;

	if (head - gpunic_dev_load_acquire_exec_u32(&st->rq_tail) + n > qp->rq_wqe_cnt)
		return -ENOMEM;
	gpunic_dev_store_relaxed_u32(&st->rq_head, head + n);
	return 0;
}

/**
 * gpunic_dev_recv_publish - store the receive producer in the doorbell record when it moved
 * by at least @batch since the last store (1: whenever it moved). A plain posted store when
 * only gpunic_dev_recv_repost() moved it; a release when WQE bytes were written since.
 * Batching is always safe: the NIC sees fewer receives than there are, never more.
 */
GPUNIC_DEV_FN void gpunic_dev_recv_publish(struct gpunic_dev_qp *qp, uint32_t batch)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t head = st->rq_head, v = gpunic_dev_htobe32(head & 0xffff);

	if (head - st->rq_published < batch || head == st->rq_published)
		return;
	if ((int32_t)(st->rq_written - st->rq_published) > 0)
		gpunic_dev_store_release_u32(&qp->dbrec[MLX5_RCV_DBR], v);
	else
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_RCV_DBR], v);
	st->rq_published = head;
}

/**
 * gpunic_dev_submit_all - hand the NIC every receive posted with gpunic_dev_post_recv_deferred()
 * or gpunic_dev_recv_repost() and every send posted with gpunic_dev_post_send() (thread scope),
 * behind at most ONE system-scope fence: the WQEs, then the receive and send doorbell records and
 * the doorbell (or mailbox) with relaxed stores. The NIC takes the producer from the doorbell
 * word itself when it runs ahead of the record, so no fence is needed between them. No fence at
 * all when nothing needs one: sends that went to the BlueFlame page sealed, and receives reposted
 * unchanged. Across PCIe each fence costs about half a round trip; this is the forwarder's path.
 * Return: 0 or -EINVAL for an unresolved handler mode.
 */
GPUNIC_DEV_FN int gpunic_dev_submit_all(struct gpunic_dev_qp *qp)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t pi = st->sq_ready;
	int sends = pi != st->sq_submitted;

	if (qp->handler_mode != GPUNIC_HANDLER_GPU_DB &&
	    qp->handler_mode != GPUNIC_HANDLER_CPU_PROXY &&
	    qp->handler_mode != GPUNIC_HANDLER_GPU_BF)
		return -EINVAL;
	/* 1. Every WQE written so far is visible to the NIC before any record or doorbell. */
	if ((sends && !gpunic_dev_priv_bf_sealed_only(qp)) ||
	    (int32_t)(st->rq_written - st->rq_published) > 0)
		gpunic_dev_to_nic_barrier();
	/* 2. Receive doorbell record. */
	if (st->rq_head != st->rq_published) {
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_RCV_DBR],
					     gpunic_dev_htobe32(st->rq_head & 0xffff));
		st->rq_published = st->rq_head;
	}
	if (!sends)
		return 0;
	/* 3. Send doorbell record, then 4. the doorbell (the last WQE's ctrl bytes 0-7) or the
	 *    mailbox for a proxy; GPU_BF has neither. */
	gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR], gpunic_dev_htobe32(pi & 0xffff));
	if (qp->handler_mode == GPUNIC_HANDLER_GPU_DB)
		gpunic_dev_mmio_write64(qp->db, st->sq_last_ctrl);
	else if (qp->handler_mode == GPUNIC_HANDLER_CPU_PROXY)
		gpunic_dev_store_relaxed_u32(qp->mailbox, pi);
	gpunic_dev_store_relaxed_u32(&st->sq_submitted, pi);
	return 0;
}

/* ---------------------------------------------------------------- completion queues */

/*
 * A buffer to read together with a completion: the bytes a caller expects the completion to
 * name (the next ring slot, say). Its loads are issued with the CQE's, so across PCIe both
 * cost one round trip. @len is a multiple of 16, at most GPUNIC_DEV_PREFETCH_MAX; @src and
 * @dst are 16-byte aligned.
 */
#define GPUNIC_DEV_PREFETCH_MAX 64u
struct gpunic_dev_prefetch {
	const void *src;
	void *dst;
	uint32_t len;
};

/* A CQE copied out of the ring 16 bytes at a time: every load in flight at once. */
union gpunic_dev_cqe_copy {
	struct mlx5_cqe64 cqe;
	struct mlx5_err_cqe err;
	uint64_t q[8];
	uint32_t w[16];
	uint8_t b[64];
};

GPUNIC_DEV_FN void gpunic_dev_priv_copy16(void *dst, const void *src, uint32_t n16)
{
#if GPUNIC_DEV_ON_GPU
	const ulonglong2 *s = (const ulonglong2 *)src;
	ulonglong2 *d = (ulonglong2 *)dst;
	ulonglong2 v[GPUNIC_DEV_PREFETCH_MAX / 16];
	uint32_t i;

#pragma unroll
	for (i = 0; i < GPUNIC_DEV_PREFETCH_MAX / 16; i++)
		if (i < n16)
			v[i] = s[i];
#pragma unroll
	for (i = 0; i < GPUNIC_DEV_PREFETCH_MAX / 16; i++)
		if (i < n16)
			d[i] = v[i];
#else
	memcpy(dst, src, (size_t)n16 * 16);
#endif
}

/* The CQE at consumer position @ci. */
GPUNIC_DEV_FN const uint8_t *gpunic_dev_cqe_at(const struct gpunic_dev_cq *cq, uint32_t ci)
{
	return cq->buf + ((size_t)(ci & (cq->cqe_cnt - 1)) << 6);
}

/* Is op_own (byte 63) that of a CQE software owns at consumer position @ci? Owner bit: the NIC
 * writes lap k's CQEs with owner k & 1; opcode INVALID marks a CQE never written. */
GPUNIC_DEV_FN int gpunic_dev_cqe_owned(const struct gpunic_dev_cq *cq, uint8_t op_own,
				       uint32_t ci)
{
#if GPUNIC_DEV_ON_GPU
	return (op_own >> 4) != MLX5_CQE_INVALID &&
	       (op_own & MLX5_CQE_OWNER_MASK) == ((ci & cq->cqe_cnt) ? 1u : 0u);
#else
	/* the owner bit first: a host poll that finds nothing fails on it */
	return (op_own & MLX5_CQE_OWNER_MASK) == ((ci & cq->cqe_cnt) ? 1u : 0u) &&
	       (op_own >> 4) != MLX5_CQE_INVALID;
#endif
}

/*
 * After a line-checked CQE is taken: its loads were relaxed, so nothing yet orders the plain
 * loads that follow (the received bytes, the completed WQE's ctrl segment). On the GPU those
 * could hit lines an earlier lap left in the SM's L1, which only an acquire drops; a GPU-scope
 * fence does that without waiting on PCIe as a system-scope one would (the line check already
 * proved the CQE whole). On the host: an acquire fence (free on x86, a load barrier on Arm).
 */
GPUNIC_DEV_FN void gpunic_dev_priv_after_line_read(void)
{
#if GPUNIC_DEV_ON_GPU
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* Load the 64-byte line at @slot: four 16-byte loads all in flight (one PCIe round trip). */
GPUNIC_DEV_FN void gpunic_dev_priv_load_line(const uint8_t *slot, union gpunic_dev_cqe_copy *c)
{
	uint32_t i;

	for (i = 0; i < 4; i++) {
		uint64_t lo, hi;

		gpunic_dev_load16_relaxed(slot + 16 * i, &lo, &hi);
		c->q[2 * i] = lo;
		c->q[2 * i + 1] = hi;
	}
}

/* Is the line-checked CQE loaded into @c software's at @ci, and whole? A torn or stale line
 * counts in *@torn and reads as "not yet". No fence: see gpunic_dev_priv_after_line_read(). */
GPUNIC_DEV_FN int gpunic_dev_priv_line_cqe_ok(const struct gpunic_dev_cq *cq,
					      const union gpunic_dev_cqe_copy *c, uint32_t ci,
					      uint32_t *torn)
{
	if (!gpunic_dev_cqe_owned(cq, c->b[63], ci))
		return 0;
	if (gpunic_dev_cqe_check(c->w, ci) != c->w[GPUNIC_DEV_CQE_CHECK_WORD]) {
		(*torn)++;
		return 0;
	}
	return 1;
}

/*
 * Read the CQE at @ci into @c if software owns it, whole. With GPUNIC_DEV_CQ_LINE_CHECK the
 * line is read in one go (four 16-byte loads in flight: one PCIe round trip) and trusted only
 * when its check holds; a torn or stale line counts in *@torn and reads as "not yet". Without
 * it (a CPU NIC writing host memory for a CPU reader), op_own is read with acquire first and
 * the body after it, which the NIC's release store of op_own makes whole.
 * Return: 1 with @c filled, 0 when the CQE is not (yet, or not whole) software's.
 */
GPUNIC_DEV_FN int gpunic_dev_priv_read_cqe(const struct gpunic_dev_cq *cq, uint32_t ci,
					   union gpunic_dev_cqe_copy *c, uint32_t *torn)
{
	const uint8_t *slot = gpunic_dev_cqe_at(cq, ci);
	uint8_t op_own;

	if (gpunic_dev_cpu_unlikely(cq->flags & GPUNIC_DEV_CQ_LINE_CHECK)) {
		gpunic_dev_priv_load_line(slot, c);
		if (!gpunic_dev_priv_line_cqe_ok(cq, c, ci, torn))
			return 0;
		gpunic_dev_priv_after_line_read();
		return 1;
	}
	op_own = gpunic_dev_load_acquire_u8(slot + 63);
	if (!gpunic_dev_cqe_owned(cq, op_own, ci))
		return 0;
	gpunic_dev_priv_copy16(c->b, slot, 4);
	c->b[63] = op_own;
	return 1;
}

/*
 * Copy the first @n (<= GPUNIC_DEV_CQE_INLINE_MAX) bytes of a CQE's inline payload between two
 * buffers of GPUNIC_DEV_CQE_INLINE_MAX bytes or more. A CPU copies all of them in fixed moves,
 * cheaper than a counted loop or a memcpy call (tests/hotpath: 15 instructions); the bytes past
 * @n are no one's.
 */
GPUNIC_DEV_FN void gpunic_dev_priv_copy_cqe_data(uint8_t *dst, const uint8_t *src, uint32_t n)
{
#if GPUNIC_DEV_ON_GPU
	uint32_t i;

	for (i = 0; i < n; i++)
		dst[i] = src[i];
#else
	(void)n;
	memcpy(dst, src, GPUNIC_DEV_CQE_INLINE_MAX);
#endif
}

/* Fill @out from a whole CQE. */
GPUNIC_DEV_FN void gpunic_dev_cqe_decode(const union gpunic_dev_cqe_copy *c,
					 struct gpunic_dev_cqe *out)
{
	uint8_t op_own = c->b[63], opcode = op_own >> 4;
	uint32_t v, n;

	out->opcode = opcode;
	out->wqe_counter = gpunic_dev_be16toh(c->cqe.wqe_counter);
	out->solicited = (op_own >> 1) & 1;
	out->data_in_cqe = 0;
	out->wqe_idx = 0;
	if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
		v = gpunic_dev_be32toh(c->err.s_wqe_opcode_qpn);
		out->wqe_opcode = opcode == MLX5_CQE_REQ_ERR ? (uint8_t)(v >> 24) : 0;
		out->qpn = v & 0xffffff;
		out->syndrome = c->err.syndrome;
		out->vendor_syndrome = c->err.vendor_err_synd;
		out->byte_cnt = 0;
		out->imm = 0;
		return;
	}
	v = gpunic_dev_be32toh(c->cqe.sop_drop_qpn);
	out->wqe_opcode = opcode == MLX5_CQE_REQ ? (uint8_t)(v >> 24) : 0;
	out->qpn = v & 0xffffff;
	out->syndrome = 0;
	out->vendor_syndrome = 0;
	out->byte_cnt = gpunic_dev_be32toh(c->cqe.byte_cnt);
	out->imm = (opcode == MLX5_CQE_RESP_WR_IMM || opcode == MLX5_CQE_RESP_SEND_IMM ||
		    opcode == MLX5_CQE_RESP_SEND_INV) ?
			   gpunic_dev_be32toh(c->cqe.imm_inval_pkey) : 0;
	if (opcode != MLX5_CQE_REQ && (op_own & MLX5_INLINE_SCATTER_32)) {
		n = out->byte_cnt < GPUNIC_DEV_CQE_INLINE_MAX ? out->byte_cnt :
								GPUNIC_DEV_CQE_INLINE_MAX;
		gpunic_dev_priv_copy_cqe_data(out->data, c->b, n);
		out->data_in_cqe = 1;
	}
}

/*
 * Move the consumer past one CQE and publish the counter every (publish_mask + 1) CQEs, as
 * mlx5 users update the record once per batch; never on a queue that ignores overrun. A plain
 * posted store: the CQE was read whole before (its values are in registers), and publishing
 * late only ever shows the NIC less room, never more.
 */
GPUNIC_DEV_FN void gpunic_dev_priv_cq_consume(const struct gpunic_dev_cq *cq, uint32_t *ci_p,
					      uint32_t publish_mask)
{
	uint32_t ci = *ci_p + 1;

	*ci_p = ci;
	if (!(ci & publish_mask) && !(cq->flags & GPUNIC_DEV_CQ_OVERRUN_IGNORE))
		gpunic_dev_store_relaxed_u32(cq->dbrec, gpunic_dev_htobe32(ci & 0xffffff));
}

/* Take the CQE at *@ci if software owns it: decode it into @out, advance the counter and
 * publish it. Single consumer. @pf (may be NULL) is read in the same burst as the CQE. */
GPUNIC_DEV_FN int gpunic_dev_priv_poll_cq(const struct gpunic_dev_cq *cq, uint32_t *ci_p,
					  struct gpunic_dev_cqe *out, uint32_t publish_mask,
					  const struct gpunic_dev_prefetch *pf, uint32_t *torn)
{
	union gpunic_dev_cqe_copy c;

	if (!gpunic_dev_priv_read_cqe(cq, *ci_p, &c, torn))
		return 0;
	if (pf && pf->len)
		gpunic_dev_priv_copy16(pf->dst, pf->src, pf->len / 16);
	gpunic_dev_cqe_decode(&c, out);
	gpunic_dev_priv_cq_consume(cq, ci_p, publish_mask);
	return 1;
}

/*
 * A send CQE (or error CQE) for WQE i also completes the unsignalled WQEs before it: hand the
 * send queue space up to the end of i back to posters (state->sq_completed). @nbb: 0, or the
 * blocks of every WQE on the queue (a caller that posts one size), so that the WQE's size need
 * not be read back from the ring, across PCIe from a GPU.
 */
GPUNIC_DEV_FN void gpunic_dev_priv_sq_complete(struct gpunic_dev_qp *qp,
					       struct gpunic_dev_cqe *out, uint32_t nbb)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t done, delta, ds;
	const struct mlx5_wqe_ctrl_seg *ctrl;

	if (out->opcode != MLX5_CQE_REQ && out->opcode != MLX5_CQE_REQ_ERR)
		return;
	done = st->sq_completed;
	delta = (uint32_t)(out->wqe_counter - (done & 0xffff)) & 0xffff;
	out->wqe_idx = done + delta;
	/* Only a WQE between completed and reserved can complete; ignore anything else rather
	 * than hand out space the NIC may still be reading. */
	if (delta >= gpunic_dev_load_relaxed_u32(&st->sq_reserved) - done)
		return;
	if (!nbb) {
		/* The WQE's size is in its ctrl segment, still intact: nobody reuses it before
		 * this. */
		ctrl = (const struct mlx5_wqe_ctrl_seg *)(const void *)
			gpunic_dev_sq_seg(qp, out->wqe_idx, 0);
		ds = gpunic_dev_be32toh(ctrl->qpn_ds) & 0x3f;
		nbb = ds ? gpunic_dev_ds_to_bbs(ds) : 1;
	}
	gpunic_dev_store_release_exec_u32(&st->sq_completed, out->wqe_idx + nbb);
}

/**
 * gpunic_dev_poll_scq_sized - gpunic_dev_poll_scq() for a caller whose send WQEs are all @nbb
 * basic blocks (0: unknown, read each from the ring)
 */
GPUNIC_DEV_FN int gpunic_dev_poll_scq_sized(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out,
					    uint32_t nbb)
{
	struct gpunic_dev_qp_state *st = qp->state;

	if (!gpunic_dev_priv_poll_cq(&qp->scq, &st->scq_ci, out, 0,
				     (const struct gpunic_dev_prefetch *)0, &st->scq_torn))
		return 0;
	gpunic_dev_priv_sq_complete(qp, out, nbb);
	return 1;
}

/**
 * gpunic_dev_poll_scq - take one send completion
 * A send CQE (or error CQE) for WQE i also completes the unsignalled WQEs before it: the send
 * queue space up to the end of i is handed back to posters (state->sq_completed).
 * Return: 1 with @out filled, 0 when the CQ is empty.
 */
GPUNIC_DEV_FN int gpunic_dev_poll_scq(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out)
{
	return gpunic_dev_poll_scq_sized(qp, out, 0);
}

/* Receive WQEs complete in order: a receive CQE (or its error) hands its WQE back. */
GPUNIC_DEV_FN void gpunic_dev_priv_rq_complete(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out)
{
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t tail;

	switch (out->opcode) {
	case MLX5_CQE_RESP_WR_IMM:
	case MLX5_CQE_RESP_SEND:
	case MLX5_CQE_RESP_SEND_IMM:
	case MLX5_CQE_RESP_SEND_INV:
	case MLX5_CQE_RESP_ERR:
		tail = st->rq_tail;
		out->wqe_idx = tail;
		gpunic_dev_store_release_exec_u32(&st->rq_tail, tail + 1);
		break;
	default:
		break;
	}
}

/* Take one receive completion; publish the consumer counter as gpunic_dev_priv_poll_cq(). */
GPUNIC_DEV_FN int gpunic_dev_priv_poll_rcq(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out,
					   uint32_t publish_mask,
					   const struct gpunic_dev_prefetch *pf)
{
	struct gpunic_dev_qp_state *st = qp->state;

	if (!gpunic_dev_priv_poll_cq(&qp->rcq, &st->rcq_ci, out, publish_mask, pf,
				     &st->rcq_torn))
		return 0;
	gpunic_dev_priv_rq_complete(qp, out);
	return 1;
}

/**
 * gpunic_dev_poll_rcq - take one receive completion
 * Receive WQEs complete in order, each with a CQE (RESP_* or RESP_ERR), which hands the WQE
 * back to gpunic_dev_post_recv(). Inline-scattered payload is copied to @out->data.
 * Return: 1 with @out filled, 0 when the CQ is empty.
 */
GPUNIC_DEV_FN int gpunic_dev_poll_rcq(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out)
{
	return gpunic_dev_priv_poll_rcq(qp, out, 0, (const struct gpunic_dev_prefetch *)0);
}

/* Publish the receive CQ's consumer counter every eighth of the ring (0: every CQE). */
GPUNIC_DEV_FN uint32_t gpunic_dev_rcq_publish_mask(const struct gpunic_dev_qp *qp)
{
	uint32_t n = qp->rcq.cqe_cnt;

	return n >= 16 ? n / 8 - 1 : 0;
}

/**
 * gpunic_dev_poll_rcq_batched - gpunic_dev_poll_rcq() that publishes the consumer counter only
 * every eighth of the ring: a GPU polling host memory then pays no store per message. The NIC
 * sees the CQ fuller than it is by at most that much, so keep fewer than 7/8 of the CQ's
 * entries outstanding. @pf (may be NULL) is read in the same burst as the CQE.
 */
GPUNIC_DEV_FN int gpunic_dev_poll_rcq_batched(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *out,
					      const struct gpunic_dev_prefetch *pf)
{
	return gpunic_dev_priv_poll_rcq(qp, out, gpunic_dev_rcq_publish_mask(qp), pf);
}

/**
 * gpunic_dev_poll_both - one poll of both completion queues of @qp (thread scope): on
 * line-checked queues both lines are loaded before either is looked at, so a GPU pays one PCIe
 * round trip for the two, not two. A ping-pong waiting for its receive takes its send
 * completions this way at no cost.
 * @qp: the queue pair whose send and receive CQs are polled
 * @rout: filled when a receive completion was taken
 * @sout: filled when a send completion was taken
 * @nbb: as gpunic_dev_poll_scq_sized()
 * Return: bit 0 set when a receive completion was taken, bit 1 when a send completion was.
 */
GPUNIC_DEV_FN int gpunic_dev_poll_both(struct gpunic_dev_qp *qp, struct gpunic_dev_cqe *rout,
				       struct gpunic_dev_cqe *sout, uint32_t nbb)
{
	struct gpunic_dev_qp_state *st = qp->state;
	union gpunic_dev_cqe_copy r, s;
	int got;

	if (!(qp->rcq.flags & qp->scq.flags & GPUNIC_DEV_CQ_LINE_CHECK))
		return gpunic_dev_poll_rcq(qp, rout) | gpunic_dev_poll_scq_sized(qp, sout, nbb) << 1;
	gpunic_dev_priv_load_line(gpunic_dev_cqe_at(&qp->rcq, st->rcq_ci), &r);
	gpunic_dev_priv_load_line(gpunic_dev_cqe_at(&qp->scq, st->scq_ci), &s);
	got = gpunic_dev_priv_line_cqe_ok(&qp->rcq, &r, st->rcq_ci, &st->rcq_torn) |
	      gpunic_dev_priv_line_cqe_ok(&qp->scq, &s, st->scq_ci, &st->scq_torn) << 1;
	if (!got)
		return 0;
	gpunic_dev_priv_after_line_read();
	if (got & 1) {
		gpunic_dev_cqe_decode(&r, rout);
		gpunic_dev_priv_cq_consume(&qp->rcq, &st->rcq_ci, 0);
		gpunic_dev_priv_rq_complete(qp, rout);
	}
	if (got & 2) {
		gpunic_dev_cqe_decode(&s, sout);
		gpunic_dev_priv_cq_consume(&qp->scq, &st->scq_ci, 0);
		gpunic_dev_priv_sq_complete(qp, sout, nbb);
	}
	return got;
}

/* ---------------------------------------------------------------- atomics and NOP */

/*
 * RC atomics on 8 naturally aligned bytes of the peer's memory (IBA 9.4.5; the peer's region
 * and QP must grant remote atomic access), and the NOP WQE. The WQEs are rdma-core's mlx5
 * layout: ctrl, mlx5_wqe_raddr_seg, mlx5_wqe_atomic_seg, one data segment (4 x 16 bytes, one
 * basic block); a NOP is its ctrl segment alone.
 *
 * Byte order: operands are host-order values; the WQE and the wire carry them big-endian, the
 * target is a host-order uint64_t in the responder's memory, and the original value lands in
 * @laddr (8 bytes, registered with local write) in host order, before the send CQE (byte_cnt
 * 8, wqe_opcode MLX5_OPCODE_ATOMIC_*) is visible. So a peer thread may poll or __atomic_* the
 * target as a plain integer, and the fetched value reads as one.
 *
 * Atomics and READs in flight are bounded by the QP's max_rd_atomic; more wait in the send
 * queue. A misaligned target completes with MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, a target
 * the peer did not grant with REMOTE_ACCESS_ERR, an atomic on a UC QP with LOCAL_QP_OP_ERR.
 * A NOP sends nothing and completes in order behind everything posted before it.
 * gpunic_dev_post_send() and the _mt / warp functions take the same requests through
 * struct gpunic_dev_send_wr (opcode, remote_addr, rkey, compare_add, swap, one 8-byte SGE).
 */

/**
 * gpunic_dev_atomic_wr - fill @wr and @sge for an atomic (@opcode MLX5_OPCODE_ATOMIC_CS or _FA;
 * @compare_add and @swap as in struct gpunic_dev_send_wr), to post in any scope
 */
GPUNIC_DEV_FN void gpunic_dev_atomic_wr(struct gpunic_dev_send_wr *wr, struct gpunic_dev_sge *sge,
					uint8_t opcode, uint8_t flags, uint64_t laddr,
					uint32_t lkey, uint64_t raddr, uint32_t rkey,
					uint64_t compare_add, uint64_t swap)
{
	sge->addr = laddr;
	sge->length = 8;
	sge->lkey = lkey;
	wr->opcode = opcode;
	wr->flags = (uint8_t)(flags & ~GPUNIC_DEV_SEND_INLINE);
	wr->num_sge = 1;
	wr->imm = 0;
	wr->remote_addr = raddr;
	wr->rkey = rkey;
	wr->reserved = 0;
	wr->sg_list = sge;
	wr->compare_add = compare_add;
	wr->swap = swap;
}

/** gpunic_dev_nop_wr - fill @wr for a NOP, to post in any scope */
GPUNIC_DEV_FN void gpunic_dev_nop_wr(struct gpunic_dev_send_wr *wr, uint8_t flags)
{
	wr->opcode = MLX5_OPCODE_NOP;
	wr->flags = (uint8_t)(flags & ~GPUNIC_DEV_SEND_INLINE);
	wr->num_sge = 0;
	wr->imm = 0;
	wr->remote_addr = 0;
	wr->rkey = 0;
	wr->reserved = 0;
	wr->sg_list = (const struct gpunic_dev_sge *)0;
	wr->compare_add = 0;
	wr->swap = 0;
}

/**
 * gpunic_dev_post_atomic_cas - thread scope: if the 8 bytes at @raddr equal @compare, replace
 * them with @swap; the value they held lands at @laddr either way
 * Nothing reaches the NIC until gpunic_dev_submit().
 * Return: as gpunic_dev_post_send().
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_atomic_cas(struct gpunic_dev_qp *qp, uint8_t flags,
						 uint64_t laddr, uint32_t lkey, uint64_t raddr,
						 uint32_t rkey, uint64_t compare, uint64_t swap)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;

	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_CS, flags, laddr, lkey, raddr, rkey,
			     compare, swap);
	return gpunic_dev_post_send(qp, &wr);
}

/**
 * gpunic_dev_post_atomic_fa - thread scope: add @add to the 8 bytes at @raddr (modulo 2^64);
 * the value they held lands at @laddr
 * Nothing reaches the NIC until gpunic_dev_submit().
 * Return: as gpunic_dev_post_send().
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_atomic_fa(struct gpunic_dev_qp *qp, uint8_t flags,
						uint64_t laddr, uint32_t lkey, uint64_t raddr,
						uint32_t rkey, uint64_t add)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;

	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_FA, flags, laddr, lkey, raddr, rkey,
			     add, 0);
	return gpunic_dev_post_send(qp, &wr);
}

/**
 * gpunic_dev_post_nop - thread scope: a NOP WQE (sends nothing; with GPUNIC_DEV_SEND_SIGNALED
 * it gets a send CQE once every WQE before it has completed)
 * Return: as gpunic_dev_post_send().
 */
GPUNIC_DEV_FN int64_t gpunic_dev_post_nop(struct gpunic_dev_qp *qp, uint8_t flags)
{
	struct gpunic_dev_send_wr wr;

	gpunic_dev_nop_wr(&wr, flags);
	return gpunic_dev_post_send(qp, &wr);
}

/** gpunic_dev_post_atomic_cas_mt - gpunic_dev_post_atomic_cas() on a shared send queue (rings
 * the doorbell itself, as gpunic_dev_post_send_mt()). */
GPUNIC_DEV_FN int64_t gpunic_dev_post_atomic_cas_mt(struct gpunic_dev_qp *qp, uint8_t flags,
						    uint64_t laddr, uint32_t lkey, uint64_t raddr,
						    uint32_t rkey, uint64_t compare, uint64_t swap)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;

	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_CS, flags, laddr, lkey, raddr, rkey,
			     compare, swap);
	return gpunic_dev_post_send_mt(qp, &wr);
}

/** gpunic_dev_post_atomic_fa_mt - gpunic_dev_post_atomic_fa() on a shared send queue (rings
 * the doorbell itself, as gpunic_dev_post_send_mt()). */
GPUNIC_DEV_FN int64_t gpunic_dev_post_atomic_fa_mt(struct gpunic_dev_qp *qp, uint8_t flags,
						   uint64_t laddr, uint32_t lkey, uint64_t raddr,
						   uint32_t rkey, uint64_t add)
{
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;

	gpunic_dev_atomic_wr(&wr, &sge, MLX5_OPCODE_ATOMIC_FA, flags, laddr, lkey, raddr, rkey,
			     add, 0);
	return gpunic_dev_post_send_mt(qp, &wr);
}

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_DEV_H */
