/* SPDX-License-Identifier: MIT */
/*
 * The contract between the control path and the data path: everything a GPU kernel or a CPU
 * executor thread needs to drive one queue pair, published by gpunic_qp_export() (verbs.h) and
 * consumed by gpunic_dev.h. It plays the part of mlx5dv_init_obj()'s mlx5dv_qp/mlx5dv_cq.
 *
 * Plain C, usable from nvcc device code: the pointers are addresses the data-path executor can
 * reach (host memory for the CPU executor; device or mapped memory for a kernel).
 *
 * Queue formats are the ConnectX ones from rdma-core's <infiniband/mlx5dv.h>:
 *  - send queue: sq_wqebb_cnt basic blocks of MLX5_SEND_WQE_BB (64) bytes; a WQE is a
 *    mlx5_wqe_ctrl_seg (opmod_idx_opcode = (wqe index << 8) | MLX5_OPCODE_*, qpn_ds = qpn << 8 |
 *    16-byte units, fm_ce_se with MLX5_WQE_CTRL_CQ_UPDATE to ask for a completion, imm) then, for
 *    WRITE/READ, a mlx5_wqe_raddr_seg, then mlx5_wqe_data_seg entries or one inline segment
 *    (mlx5_wqe_inl_data_seg, byte_count | MLX5_INLINE_SEG, data padded to 16 bytes). A WQE may
 *    wrap from the ring's end to its start. Big-endian fields.
 *  - receive queue: rq_wqe_cnt WQEs of rq_stride bytes, each an array of mlx5_wqe_data_seg; an
 *    entry with lkey MLX5_INVALID_LKEY ends the list, so a WQE whose first entry has it is a
 *    zero-length receive.
 *  - doorbell record: dbrec[MLX5_RCV_DBR] = big-endian receive producer counter (16 bits used),
 *    dbrec[MLX5_SND_DBR] = big-endian send producer counter in basic blocks (16 bits used).
 *  - doorbell word (db): in GPUNIC_HANDLER_GPU_DB mode the data path stores the first 8 bytes
 *    of the last posted WQE's control segment here after updating dbrec; the softnic polls it,
 *    as a ConnectX watches its UAR, and acts on every change of it, also one with no record
 *    behind it (device code that rings the doorbell alone, as DOCA GPUNetIO's GPU_SM_NO_DBR
 *    mode does), however long the QP was quiet before.
 *  - mailbox: in GPUNIC_HANDLER_CPU_PROXY mode the data path stores its send producer counter
 *    here instead of ringing db; a proxy thread forwards it to the softnic. Each QP's mailbox
 *    is 8 bytes, 8-aligned, the counter in its low 32 bits (its first four bytes: the hosts and
 *    GPUs gpunic runs on are little-endian), so a 32-bit store of the counter and a 64-bit
 *    atomic max of a 64-bit one (DOCA GPUNetIO's proxy word) both work, and neither touches
 *    another QP's.
 *  - BlueFlame page (bf): in GPUNIC_HANDLER_GPU_BF mode the data path also writes every WQE of
 *    one basic block whole into line (index % bf_lines) of this page, sealed (gpunic_dev_wqe_seal:
 *    ctrl index, mlx5 signature and a 15-bit line check) when GPUNIC_DEV_QP_SEAL_BF says the NIC
 *    reads it across PCIe, else with its ctrl chunk stored last; the softnic polls the line
 *    of the next WQE it expects and executes a consistent copy without any doorbell, as a
 *    ConnectX executes a WQE written to its BlueFlame register. The doorbell record is still
 *    kept current; larger WQEs go through the record and the doorbell as in GPU_DB.
 *  - completion queues: cqe_cnt mlx5_cqe64 entries, created with op_own 0xF1 (opcode INVALID,
 *    owner 1, as libmlx5 does) so that pollers testing only the owner bit and pollers testing
 *    the opcode both see "not yours". Entry i is software-owned when its opcode is not
 *    MLX5_CQE_INVALID and its owner bit equals (ci / cqe_cnt) & 1. cq dbrec[0] = big-endian
 *    consumer counter (24 bits), read by the softnic to detect overflow, unless the CQ ignores
 *    overrun (GPUNIC_DEV_CQ_OVERRUN_IGNORE, mlx5's "oi": the consumer must keep up). A receive
 *    of at most 32 bytes may be scattered into the CQE (op_own & MLX5_INLINE_SCATTER_32; data in
 *    the CQE's first 32 bytes) when the QP was created with cqe_scatter. With
 *    GPUNIC_DEV_CQ_LINE_CHECK every CQE carries a 32-bit check of its whole line in bytes
 *    40-43 (mlx5's application bytes, unused here), so a reader across PCIe can tell a torn or
 *    stale line from a whole one (gpunic_dev_cqe_check).
 */
#ifndef GPUNIC_DEV_QP_H
#define GPUNIC_DEV_QP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How the data path tells the NIC it posted work (docs/DESIGN.md piece 8). */
enum gpunic_handler_mode {
	GPUNIC_HANDLER_AUTO = 0,     /* resolved to one of the others when the QP is exported */
	GPUNIC_HANDLER_GPU_DB = 1,   /* the executor stores the doorbell word itself */
	GPUNIC_HANDLER_CPU_PROXY = 2,/* the executor publishes its producer index to a mailbox */
	GPUNIC_HANDLER_GPU_BF = 3,   /* the executor writes each small WQE whole into the
				      * BlueFlame page the NIC polls: no doorbell, no fence */
};

/* struct gpunic_dev_cq.flags */
enum gpunic_dev_cq_flags {
	GPUNIC_DEV_CQ_OVERRUN_IGNORE = 1u << 0, /* the NIC never reads the consumer record */
	GPUNIC_DEV_CQ_LINE_CHECK = 1u << 1,     /* CQEs carry a whole-line check (bytes 40-43) */
};

/* struct gpunic_dev_qp.flags */
enum gpunic_dev_qp_flags {
	/* The NIC reads the BlueFlame page across PCIe, where nothing orders the chunks of a line:
	 * seal every WQE written there (gpunic_dev_wqe_seal). Without it (a CPU executor and a CPU
	 * NIC) the line's ctrl chunk is stored last and read first, which x86's and Arm's store and
	 * load ordering make enough. */
	GPUNIC_DEV_QP_SEAL_BF = 1u << 0,
};

/* Lines of the BlueFlame page: one 4 KiB page of 64-byte lines, indexed by WQE index. */
#define GPUNIC_DEV_BF_LINES 64u

#define GPUNIC_DEV_CACHELINE 64

/*
 * Data-path-owned counters, one per cache line so that producers and consumers never share a
 * line. Lives in memory the executor can write with atomics (allocated by the control path).
 */
struct gpunic_dev_qp_state {
	uint32_t sq_reserved;   /* next send basic block handed out by a reserve */
	uint8_t pad0[GPUNIC_DEV_CACHELINE - 4];
	uint32_t sq_ready;      /* basic blocks written and marked ready, in order */
	uint8_t pad1[GPUNIC_DEV_CACHELINE - 4];
	uint32_t sq_submitted;  /* producer counter last published to the NIC */
	uint8_t pad2[GPUNIC_DEV_CACHELINE - 4];
	uint32_t rq_head;       /* receive producer counter */
	uint8_t pad3[GPUNIC_DEV_CACHELINE - 4];
	uint32_t scq_ci;        /* send CQ consumer counter */
	uint8_t pad4[GPUNIC_DEV_CACHELINE - 4];
	uint32_t rcq_ci;        /* receive CQ consumer counter */
	uint8_t pad5[GPUNIC_DEV_CACHELINE - 4];
	uint64_t sq_last_ctrl;  /* ctrl bytes 0-7 of the last WQE marked ready: the doorbell value */
	uint8_t pad6[GPUNIC_DEV_CACHELINE - 8];
	uint32_t sq_db_lock;    /* 1 while one thread rings the send doorbell (shared posting) */
	uint8_t pad7[GPUNIC_DEV_CACHELINE - 4];
	uint32_t sq_completed;  /* send basic blocks the NIC has completed (from send CQEs) */
	uint8_t pad8[GPUNIC_DEV_CACHELINE - 4];
	uint32_t rq_tail;       /* receive WQEs the NIC has completed (from receive CQEs) */
	uint8_t pad9[GPUNIC_DEV_CACHELINE - 4];
	/* Owned by the thread that posts (thread scope) and polls: */
	uint32_t sq_unsealed;   /* one past the last send WQE posted without a BlueFlame seal */
	uint32_t rq_written;    /* one past the last receive WQE whose bytes were written */
	uint32_t rq_published;  /* receive producer last stored in the doorbell record */
	uint32_t rcq_torn;      /* receive CQEs seen torn or stale (check failed) and read again */
	uint32_t scq_torn;      /* the same on the send CQ */
	uint8_t pad10[GPUNIC_DEV_CACHELINE - 20];
};

struct gpunic_dev_cq {
	uint8_t *buf;           /* cqe_cnt x 64-byte mlx5_cqe64 */
	uint32_t cqe_cnt;       /* power of two */
	uint32_t cqn;
	uint32_t *dbrec;        /* [0] consumer counter (big-endian) */
	uint32_t flags;         /* enum gpunic_dev_cq_flags */
	uint32_t pad;
};

struct gpunic_dev_qp {
	uint32_t qpn;
	uint32_t qp_type;       /* enum gpunic_qp_type */
	uint32_t handler_mode;  /* enum gpunic_handler_mode, never AUTO once exported */
	uint32_t max_inline;    /* largest inline payload, bytes */

	uint8_t *sq_buf;
	uint32_t sq_wqebb_cnt;  /* power of two */
	uint32_t rq_stride;     /* bytes per receive WQE (16 x max receive SGEs) */
	uint8_t *rq_buf;
	uint32_t rq_wqe_cnt;    /* power of two */
	uint32_t pad0;

	uint32_t *dbrec;        /* [MLX5_RCV_DBR], [MLX5_SND_DBR] */
	uint64_t *db;           /* doorbell word (GPU_DB) */
	uint32_t *mailbox;      /* producer counter (CPU_PROXY): the low word of 8 bytes */

	struct gpunic_dev_cq scq;
	struct gpunic_dev_cq rcq;

	struct gpunic_dev_qp_state *state;
	uint8_t *bf;            /* BlueFlame page (GPU_BF): bf_lines x 64 bytes */
	uint32_t bf_lines;      /* power of two */
	uint32_t flags;         /* enum gpunic_dev_qp_flags */
};

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_DEV_QP_H */
