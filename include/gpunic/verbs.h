/* SPDX-License-Identifier: MIT */
/*
 * gpunic control path, shaped like ibverbs: open a software NIC on a link, then PD, MR, CQ, QP
 * and the modify state machine. The data path (posting and polling) is gpunic_dev.h, driven on
 * the structs gpunic_qp_export() publishes.
 *
 * Conventions (rdma-core): functions returning int give 0 or a positive errno value; constructors
 * return NULL and set errno (the control path's rule: docs/DESIGN.md, "Errors"). Public structs
 * show what users read (keys, numbers, state); private state wraps them.
 */
#ifndef GPUNIC_VERBS_H
#define GPUNIC_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpunic/dev_qp.h>
#include <gpunic/link.h>
#include <gpunic/mem.h>
#include <gpunic/wire.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- NIC */

enum gpunic_nic_flags {
	/* Do not check the ICRC of received frames (forced when the link cannot see it). */
	GPUNIC_NIC_NO_ICRC_CHECK = 1u << 0,
	/* Tests only: write every CQE as four 16-byte chunks in a random order with random pauses,
	 * so that readers meet torn lines (counted in cqes_torn_on_purpose). */
	GPUNIC_NIC_TEST_TEAR_CQES = 1u << 1,
	/* The engine thread times its polls (engine_busy_ns, engine_idle_ns in the counters):
	 * one TSC read per poll, so that a rate can be put down to the engine or not. */
	GPUNIC_NIC_TIME_ENGINE = 1u << 2,
};

/* Who runs the data path (gpunic_dev.h) on this NIC's queues: it decides their placement. */
enum gpunic_executor {
	GPUNIC_EXECUTOR_CPU = 0,   /* host threads: every queue in host memory */
	GPUNIC_EXECUTOR_GPU = 1,   /* a CUDA kernel: queues placed by gpunic_mem_placement_for() */
};

struct gpunic_mem;

struct gpunic_nic_attr {
	struct gpunic_link *link;  /* the NIC owns it from open on and closes it */
	uint8_t mac[6];
	uint32_t ip;               /* IPv4, host byte order */
	uint16_t udp_port;         /* RoCEv2 port this NIC listens on; 0 = 4791 */
	unsigned flags;            /* enum gpunic_nic_flags */
	enum gpunic_executor executor;
	struct gpunic_mem *mem;    /* placement context (mem.h); required for a GPU executor,
				    * NULL = plain host memory */
	uint32_t comp_mask;        /* reserved for growth, must be 0 */
};

struct gpunic_nic;

struct gpunic_nic *gpunic_nic_open(const struct gpunic_nic_attr *attr);
/* Destroys every QP, CQ, MR and PD still open, then closes the link. */
int gpunic_nic_close(struct gpunic_nic *nic);

/**
 * gpunic_nic_poll - run the engine once: receive up to @budget frames, advance every QP's
 * requester, completer and timers, and transmit what is due.
 * Return: units of work done (0 = idle), never negative.
 */
int gpunic_nic_poll(struct gpunic_nic *nic, int budget);

/**
 * gpunic_nic_capture - record every frame the NIC transmits and receives to a pcap file
 * @nic: the NIC
 * @path: file to create (truncated if it exists); NULL stops the capture
 *
 * Received frames are recorded as they arrived, before any check (dropped ones included),
 * transmitted ones as the link took them; timestamps are CLOCK_REALTIME, microseconds. A new
 * path replaces the running capture; the file is flushed after every engine poll that added
 * frames. A write error stops the capture (logged). Off, it costs one branch per frame.
 *
 * Environment: GPUNIC_CAPTURE=<path> starts a capture at gpunic_nic_open (a failure is logged
 * and the NIC opens without one). A lone NIC writes <path>; while several NICs of one process
 * capture through the variable, each writes <path>.<its IPv4>.pcap (a trailing ".pcap" of
 * <path> is dropped first: cap.pcap -> cap.10.0.0.1.pcap), the first NIC's file being renamed
 * when the second opens. A call to this function takes a NIC out of that naming.
 *
 * Return: 0, EINVAL (empty path), ENOTSUP (gpunic built without libpcap; logged), or the
 * error creating the file (the running capture, if any, then goes on).
 */
int gpunic_nic_capture(struct gpunic_nic *nic, const char *path);

/* A dedicated busy-polling engine thread; @cpu >= 0 pins it. Adaptive back-off when idle. */
int gpunic_nic_start(struct gpunic_nic *nic, int cpu);
int gpunic_nic_stop(struct gpunic_nic *nic);

/* Why the NIC dropped a received frame: one counter each (rxe_recv.c's drop label). */
enum gpunic_drop_reason {
	GPUNIC_DROP_MALFORMED = 0,     /* the wire codec rejected the frame (see wire_err) */
	GPUNIC_DROP_NOT_FOR_US,        /* MAC/IP/port not ours */
	GPUNIC_DROP_BAD_ICRC,
	GPUNIC_DROP_UNKNOWN_QPN,
	GPUNIC_DROP_QP_STATE,          /* QP not able to receive (RESET, INIT, ERR) */
	GPUNIC_DROP_OPCODE_QP_TYPE,    /* opcode not legal for the QP type (RC op on UC QP) */
	GPUNIC_DROP_PSN,               /* out of sequence (UC gap, RC duplicate or gap) */
	GPUNIC_DROP_OPCODE_SEQUENCE,   /* MIDDLE/LAST with no message open, mixed operations */
	GPUNIC_DROP_LENGTH,            /* payload length wrong for the opcode or the message */
	GPUNIC_DROP_RKEY,              /* unknown rkey or rkey of another PD */
	GPUNIC_DROP_BOUNDS,            /* VA + length outside the MR (or wrapping) */
	GPUNIC_DROP_ACCESS,            /* MR lacks the remote access right */
	GPUNIC_DROP_NO_RECV_WQE,       /* UC: no receive posted */
	GPUNIC_DROP_RECV_TOO_SMALL,    /* message larger than the receive WQE's buffers */
	GPUNIC_DROP_LKEY,              /* receive WQE with a bad lkey or out-of-bounds buffer */
	GPUNIC_DROP_CQ_OVERFLOW,
	GPUNIC_DROP_UNEXPECTED_ACK,    /* response that matches no outstanding request */
	GPUNIC_DROP_RD_RESOURCE,       /* RC: more READs queued than the responder's resources */
	GPUNIC_DROP_MISALIGNED,        /* atomic target not 8-byte aligned (NAK invalid request) */
	GPUNIC_DROP_MAX,
};
const char *gpunic_drop_reason_name(enum gpunic_drop_reason reason);

struct gpunic_nic_counters {
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t tx_frames;
	uint64_t tx_bytes;
	uint64_t tx_busy;                          /* link said EAGAIN */
	uint64_t arp_replies;
	uint64_t drops[GPUNIC_DROP_MAX];
	uint64_t wire_errs[GPUNIC_WIRE_ERR_MAX];   /* detail of GPUNIC_DROP_MALFORMED */
	uint64_t cqes_torn_on_purpose;             /* GPUNIC_NIC_TEST_TEAR_CQES writes */
	uint64_t qp_visits;                        /* hot QPs the engine's polls looked at */
	/* GPUNIC_NIC_TIME_ENGINE, engine thread only: time in polls that did work and in those
	 * that did not (with their back-off), since the thread started */
	uint64_t engine_busy_ns;
	uint64_t engine_idle_ns;
};
int gpunic_nic_query_counters(struct gpunic_nic *nic, struct gpunic_nic_counters *out);

/* ---------------------------------------------------------------- queue placement */

/*
 * Where the NIC places each kind of queue memory it shares with the data path (docs/DESIGN.md
 * piece 7; src/nic/placement.c, used by the NIC's queue allocator, src/nic/qmem.c).
 *
 * The softnic is a CPU thread; with a GPU executor, the GPU kernel is the other side of every
 * queue. CPU reads through GDRCopy's write-combined BAR mapping cost about 1 us each, CPU writes
 * through it are cheap and posted. So memory the softnic READS (WQEs, doorbell records, the
 * doorbell page or proxy mailbox, send payload) goes to host-pinned CPU_GPU memory, and memory
 * the softnic only WRITES and the GPU polls (CQEs, receive payload) goes to GPU memory through a
 * GDRCopy mapping (GPU_CPU), or to CPU_GPU when GDRCopy is not in use. Counters only the
 * executor touches on the data path (EXEC_STATE) go to GPU memory, where its atomics stay local;
 * the control path resets them with gpunic_mem_write(). With a CPU executor there is no GPU
 * side: everything is HOST.
 */
enum gpunic_queue_kind {
	GPUNIC_QUEUE_SQ = 0,		/* send WQEs: GPU writes, softnic reads */
	GPUNIC_QUEUE_RQ = 1,		/* receive WQEs: GPU writes, softnic reads */
	GPUNIC_QUEUE_CQ = 2,		/* CQEs: softnic writes, GPU polls */
	GPUNIC_QUEUE_DBREC = 3,		/* doorbell records: GPU writes, softnic reads */
	GPUNIC_QUEUE_DOORBELL = 4,	/* GPU_DB page / CPU_PROXY mailbox: softnic polls */
	GPUNIC_QUEUE_PAYLOAD = 5,	/* receive payload (SEND, WRITE targets): softnic writes */
	GPUNIC_QUEUE_SEND_PAYLOAD = 6,	/* send payload and READ sources: softnic reads */
	GPUNIC_QUEUE_EXEC_STATE = 7,	/* executor-only counters (posting indices, locks) */
	GPUNIC_QUEUE_KIND_MAX /* internal */
};

/*
 * The placement a queue of @kind should use in @mem for the given executor. @why (may be NULL)
 * gets a static sentence saying why, for logs and `gpunic doctor`. Unknown kinds get HOST.
 */
enum gpunic_mem_placement gpunic_mem_placement_for(struct gpunic_mem *mem,
						   enum gpunic_queue_kind kind, bool executor_is_gpu,
						   const char **why);

/* "SQ", "RQ", "CQ", "DBREC", "DOORBELL", "PAYLOAD", "SEND_PAYLOAD", "EXEC_STATE"; "?" else. */
const char *gpunic_queue_kind_str(enum gpunic_queue_kind kind);

/* ---------------------------------------------------------------- PD and MR */

struct gpunic_pd {
	struct gpunic_nic *nic;
	uint32_t handle;
};
struct gpunic_pd *gpunic_pd_alloc(struct gpunic_nic *nic);
int gpunic_pd_free(struct gpunic_pd *pd);   /* EBUSY while MRs or QPs use it */

/* Same values as IBV_ACCESS_*. */
enum gpunic_access_flags {
	GPUNIC_ACCESS_LOCAL_WRITE = 1u << 0,
	GPUNIC_ACCESS_REMOTE_WRITE = 1u << 1,
	GPUNIC_ACCESS_REMOTE_READ = 1u << 2,
	GPUNIC_ACCESS_REMOTE_ATOMIC = 1u << 3,	/* compare-and-swap, fetch-and-add (RC) */
};

struct gpunic_mr {
	struct gpunic_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	unsigned access;   /* enum gpunic_access_flags */
};
struct gpunic_mr *gpunic_mr_reg(struct gpunic_pd *pd, void *addr, size_t length, unsigned access);
int gpunic_mr_dereg(struct gpunic_mr *mr);

/* ---------------------------------------------------------------- CQ */

struct gpunic_cq {
	struct gpunic_nic *nic;
	uint32_t cqn;
	uint32_t cqe_cnt;   /* entries, a power of two >= the requested count */
};
struct gpunic_cq *gpunic_cq_create(struct gpunic_nic *nic, uint32_t min_cqe);

enum gpunic_cq_flags {
	/* mlx5's overrun ignore ("oi"): the NIC never reads the consumer record, so the data path
	 * need not write it; a consumer that falls a whole ring behind loses completions. */
	GPUNIC_CQ_OVERRUN_IGNORE = 1u << 0,
	/* Every CQE carries a check of its whole line (dev_qp.h); always on for the CQs of a NIC
	 * whose executor is a GPU, whose reads cross PCIe. */
	GPUNIC_CQ_LINE_CHECK = 1u << 1,
};

struct gpunic_cq_init_attr {
	uint32_t cqe;              /* entries wanted; rounded up to a power of two */
	uint32_t flags;            /* enum gpunic_cq_flags */
	uint32_t comp_mask;        /* reserved for growth, must be 0 */
};
/* gpunic_cq_create() with options (ibv_create_cq_ex's role). */
struct gpunic_cq *gpunic_cq_create_ex(struct gpunic_nic *nic, const struct gpunic_cq_init_attr *attr);
int gpunic_cq_destroy(struct gpunic_cq *cq);   /* EBUSY while a QP uses it */
/**
 * gpunic_syndrome_str - an error CQE's mlx5 syndrome in words: the text ibv_wc_status_str()
 * gives for the work completion status libmlx5 turns that syndrome into ("transport retry
 * counter exceeded" for 0x15), or "unknown syndrome" for a value mlx5 does not define
 */
const char *gpunic_syndrome_str(uint8_t syndrome);

/* ---------------------------------------------------------------- QP */

enum gpunic_qp_state {
	GPUNIC_QPS_RESET = 0,
	GPUNIC_QPS_INIT,
	GPUNIC_QPS_RTR,
	GPUNIC_QPS_RTS,
	GPUNIC_QPS_ERR,
};
const char *gpunic_qp_state_name(enum gpunic_qp_state state);

/* Path MTU, same numbering as enum ibv_mtu. */
enum gpunic_mtu {
	GPUNIC_MTU_256 = 1,
	GPUNIC_MTU_512 = 2,
	GPUNIC_MTU_1024 = 3,
	GPUNIC_MTU_2048 = 4,
	GPUNIC_MTU_4096 = 5,
};
static inline uint32_t gpunic_mtu_bytes(enum gpunic_mtu mtu)
{
	return (mtu >= GPUNIC_MTU_256 && mtu <= GPUNIC_MTU_4096) ? 128u << mtu : 0;
}

/* The largest frame a QP with path MTU @mtu sends: what its link must carry. */
static inline uint32_t gpunic_mtu_frame_bytes(enum gpunic_mtu mtu)
{
	return GPUNIC_L2L4_BYTES + GPUNIC_MAX_IB_HDR_BYTES + gpunic_mtu_bytes(mtu) +
	       GPUNIC_ICRC_BYTES;
}

/* The largest path MTU whose frames @link carries (GPUNIC_MTU_256 when none fits). */
static inline enum gpunic_mtu gpunic_link_path_mtu(const struct gpunic_link *link)
{
	for (int m = GPUNIC_MTU_4096; m > GPUNIC_MTU_256; m--)
		if (!link->mtu || gpunic_mtu_frame_bytes((enum gpunic_mtu)m) <= link->mtu)
			return (enum gpunic_mtu)m;
	return GPUNIC_MTU_256;
}

struct gpunic_qp_init_attr {
	enum gpunic_qp_type qp_type;
	struct gpunic_cq *send_cq;
	struct gpunic_cq *recv_cq;
	uint32_t max_send_wr;      /* WQEs; the SQ gets enough basic blocks for max-size WQEs */
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	bool cqe_scatter;          /* receives of <= 32 bytes land in the CQE (mlx5 feature) */
	enum gpunic_handler_mode handler_mode;
	uint32_t comp_mask;        /* reserved, must be 0 */
};

struct gpunic_qp {
	struct gpunic_pd *pd;
	uint32_t qp_num;
	enum gpunic_qp_type qp_type;
	enum gpunic_qp_state state;
};

struct gpunic_qp_attr {
	enum gpunic_qp_state qp_state;
	unsigned qp_access_flags;  /* remote rights granted to the peer (INIT) */
	enum gpunic_mtu path_mtu;  /* RTR */
	uint32_t dest_qp_num;      /* RTR */
	uint32_t rq_psn;           /* RTR: first PSN expected from the peer */
	uint32_t sq_psn;           /* RTS: first PSN sent */
	uint32_t remote_ip;        /* RTR: peer IPv4, host byte order */
	uint8_t remote_mac[6];     /* RTR */
	uint16_t remote_udp_port;  /* RTR: 0 = 4791 */
	uint16_t src_udp_port;     /* RTR: 0 = derived from the QPNs (rdma_get_udp_sport) */
	uint8_t timeout;           /* RTS, RC: local ACK timeout 4.096 us * 2^timeout; 0 = none */
	uint8_t retry_cnt;         /* RTS, RC: 0..7 */
	uint8_t rnr_retry;         /* RTS, RC: 0..7, 7 = infinite */
	uint8_t min_rnr_timer;     /* RTR, RC: RNR NAK timer code sent to the peer */
	uint8_t max_rd_atomic;     /* RTS, RC: outstanding READs + atomics we issue */
	uint8_t max_dest_rd_atomic;/* RTR, RC: outstanding READs + atomics we accept */
};

/* One bit per attribute, as enum ibv_qp_attr_mask. */
enum gpunic_qp_attr_mask {
	GPUNIC_QP_STATE = 1u << 0,
	GPUNIC_QP_ACCESS_FLAGS = 1u << 1,
	GPUNIC_QP_PATH_MTU = 1u << 2,
	GPUNIC_QP_DEST_QPN = 1u << 3,
	GPUNIC_QP_RQ_PSN = 1u << 4,
	GPUNIC_QP_SQ_PSN = 1u << 5,
	GPUNIC_QP_AV = 1u << 6,            /* remote_ip, remote_mac, remote/src UDP ports */
	GPUNIC_QP_TIMEOUT = 1u << 7,
	GPUNIC_QP_RETRY_CNT = 1u << 8,
	GPUNIC_QP_RNR_RETRY = 1u << 9,
	GPUNIC_QP_MIN_RNR_TIMER = 1u << 10,
	GPUNIC_QP_MAX_QP_RD_ATOMIC = 1u << 11,
	GPUNIC_QP_MAX_DEST_RD_ATOMIC = 1u << 12,
};

struct gpunic_qp *gpunic_qp_create(struct gpunic_pd *pd, const struct gpunic_qp_init_attr *attr);
/* All or nothing: every attribute is checked before any is applied. EINVAL names the problem
 * through gpunic_qp_last_error(). */
int gpunic_qp_modify(struct gpunic_qp *qp, const struct gpunic_qp_attr *attr, unsigned mask);
int gpunic_qp_query(struct gpunic_qp *qp, struct gpunic_qp_attr *attr);
int gpunic_qp_destroy(struct gpunic_qp *qp);
/* Human-readable reason for the last failed modify on this QP ("" if none). */
const char *gpunic_qp_last_error(struct gpunic_qp *qp);

/* Publish the data-path view of the QP (queues, doorbells, CQs): see dev_qp.h. */
int gpunic_qp_export(struct gpunic_qp *qp, struct gpunic_dev_qp *out);

struct gpunic_qp_counters {
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t tx_messages;
	uint64_t rx_messages;
	uint64_t retransmits;
	uint64_t timeouts;
	uint64_t rnr_naks_sent;
	uint64_t rnr_naks_received;
	uint64_t naks_sent;
	uint64_t naks_received;
	uint64_t acks_sent;
	uint64_t acks_received;
	uint64_t bf_wqes;          /* WQEs taken from the BlueFlame page (GPU_BF) */
	uint64_t bf_torn;          /* BlueFlame lines whose seal failed: read again */
	uint64_t wqes_torn;        /* sealed WQEs in the ring whose seal failed: read again */
	uint64_t drops[GPUNIC_DROP_MAX];
	/* RC atomics at the responder: executed once each, and duplicates answered from the
	 * responder's saved result without executing them again (IBA 9.4.5) */
	uint64_t atomics_executed;
	uint64_t atomic_replays;
};
int gpunic_qp_query_counters(struct gpunic_qp *qp, struct gpunic_qp_counters *out);

/* ---------------------------------------------------------------- out of band */

/* What two sides exchange to connect a QP (and one buffer). Host byte order. */
struct gpunic_qp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t ip;
	uint8_t mac[6];
	uint16_t udp_port;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

/**
 * gpunic_oob_exchange - swap gpunic_qp_info over TCP
 * @host: NULL to listen on @port and serve one client, else the server to connect to
 * @port: TCP port to listen on or connect to
 * @timeout_ms: give up after this long (ETIMEDOUT)
 * @local: what this side sends
 * @remote: filled with what the peer sent
 *
 * One "hello" of a fresh session; endpoint.h has the steps of a longer one and the server's
 * side in parts.
 *
 * Return: 0 or errno.
 */
int gpunic_oob_exchange(const char *host, uint16_t port, int timeout_ms,
			const struct gpunic_qp_info *local, struct gpunic_qp_info *remote);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_VERBS_H */
