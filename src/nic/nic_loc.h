/* SPDX-License-Identifier: MIT */
/*
 * Private to src/nic: the software NIC's objects and the prototypes each file exports to the
 * others, grouped by file as rxe_loc.h does. Public structs (verbs.h) are embedded first in the
 * private ones and converted with to_*() helpers (rdma-core's verbs_qp habit).
 *
 * Locking: nic->lock serialises the control path and direct callers of gpunic_nic_poll; the
 * engine thread runs without it and is parked (nic_lock) while anyone else holds it. The data
 * path never takes it: it talks to the engine through the queues, doorbells and CQs only.
 */
#ifndef GPUNIC_NIC_LOC_H
#define GPUNIC_NIC_LOC_H

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gpunic/hoptrace.h"
#include "gpunic/mem.h"
#include "gpunic/verbs.h"
#include "wire/wire_loc.h"

/* Limits of this implementation. */
enum {
	NIC_QPN_BASE = 0x11,            /* QPN 0 and 1 are SMI/GSI; rxe starts at 0x11 too */
	NIC_MAX_QP = 4096,
	NIC_MAX_MR = 1u << 16,
	NIC_MAX_RD_ATOMIC = 16,         /* max_rd_atomic and max_dest_rd_atomic */
	NIC_MAX_WQE_DS = 63,            /* qpn_ds holds 6 bits of 16-byte units */
	NIC_MAX_WQE_BYTES = NIC_MAX_WQE_DS * 16,
	NIC_MAX_WQE_BB = (NIC_MAX_WQE_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB,
	NIC_MAX_SEND_SGE = (NIC_MAX_WQE_BYTES - 32) / 16,
	NIC_MAX_RECV_SGE = 32,
	/* Counters in dbrec are 16 bits wide, and a doorbell value must not repeat within one
	 * ring's worth of posts (req.c), so rings stop at half the counter space. */
	NIC_MAX_SQ_BB = 1u << 15,
	NIC_MAX_RQ_WQE = 1u << 15,
	NIC_MAX_CQE = 1u << 22,         /* CQ consumer counter is 24 bits */
	NIC_RC_WINDOW = 256,            /* unacknowledged request packets per RC QP */
	NIC_ACK_REQ_EVERY = 64,         /* A bit inside long messages, as RXE_MAX_PKT_PER_ACK */
	NIC_RSPQ_LEN = 2 * NIC_MAX_RD_ATOMIC + 4,
	NIC_CQE_SCATTER_BYTES = 32,
};

/* ---------------------------------------------------------------- objects */

struct nic_pd {
	struct gpunic_pd pub;
	uint32_t users;                 /* MRs and QPs */
	struct nic_pd *next;
};

struct nic_mr {
	struct gpunic_mr pub;
	uint64_t va;                    /* (uintptr_t)pub.addr */
	uint32_t index;
};

/* Executor-side addresses of a QP's queue memory (differ from the CPU's with GDRCopy). */
struct nic_qmem_dev {
	void *sq_buf;
	void *rq_buf;
	void *dbrec;
	void *db;
	void *mailbox;
	void *state;
	void *bf;
};

/* One queue allocation of the placement layer: the CPU and executor views and its handle. */
struct nic_qmem_rec {
	void *cpu;
	void *dev;
	struct gpunic_mem_buf *buf;
	struct nic_qmem_rec *next;
};

struct nic_cq {
	struct gpunic_cq pub;
	uint32_t flags;                 /* enum gpunic_cq_flags */
	struct mlx5_cqe64 *buf;
	uint32_t *dbrec;                /* [0] consumer counter, written by the data path */
	void *buf_dev;                  /* executor addresses of buf and dbrec */
	void *dbrec_dev;
	uint32_t pi;                    /* producer counter */
	/* the consumer counter as last read from dbrec: room is judged by it, and the record
	 * read again only when it says full (cq_has_room), so the line the consumer writes on
	 * every poll does not cross to the engine on every CQE */
	uint32_t ci_seen;
	uint8_t owner_shift;            /* log2(cqe_cnt): the owner bit is pi's bit there */
	bool slow_publish;              /* CQEs need a line check or the tearing test's
					 * stores: published by cq_publish_slow */
	uint32_t users;
	struct nic_cq *next;
	/* the next CQE, built whole before it is stored in one piece (cq.c) */
	struct mlx5_cqe64 stage __attribute__((aligned(64)));
};

/* A local scatter/gather entry as the WQE gave it (not yet trusted). */
struct nic_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

/* A send WQE copied out of the ring and parsed (req.c), so the data path cannot change it under
 * us and wrap-around is handled once. */
struct nic_swqe {
	uint16_t idx;                   /* basic-block counter of its first block */
	uint8_t nbb;
	uint8_t opcode;                 /* MLX5_OPCODE_* */
	bool signaled;
	bool fence;                     /* MLX5_WQE_CTRL_FENCE: after every earlier READ/atomic */
	bool inl;
	uint32_t imm;                   /* wire value read big-endian */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t length;
	uint32_t nsge;
	/* atomics (req.c parse_atomic): the atomic segment's operands, host order */
	uint64_t swap_add;              /* COMPARE_SWAP: the swap value; FETCH_ADD: the addend */
	uint64_t compare;               /* COMPARE_SWAP: the compare value */
	struct nic_sge sge[NIC_MAX_SEND_SGE];
	uint8_t inline_data[NIC_MAX_WQE_BYTES];
};

/* What the requester and completer remember per posted WQE, kept at its first block's slot. */
struct nic_wqe_info {
	uint32_t first_psn;
	uint32_t npsn;                  /* PSNs the message uses (READ: response packets) */
	uint32_t length;
	uint8_t opcode;
	uint8_t nbb;
	bool signaled;
	bool read_counted;              /* counted in req.reads_out (READs and atomics) */
	/* READ only: where the next response must start (req sets it when it sends a request) */
	uint32_t resp_psn;
	uint32_t resp_off;
	bool resp_seq_start;            /* next response must be FIRST or ONLY */
	bool resp_rewound;              /* a retry for resp_psn already went out */
};

/* Requester position; save_state/rollback_state copy it around a transmission. */
struct nic_req_pos {
	uint16_t ci;                    /* first block of the WQE being sent */
	uint32_t offset;                /* bytes of it already sent */
	uint32_t psn;                   /* next PSN to send */
	uint32_t pkts_since_ack_req;
};

struct nic_req {
	struct nic_req_pos pos;
	bool wqe_valid;                 /* wqe holds the WQE at pos.ci */
	struct nic_swqe wqe;
	uint16_t sq_pi;                 /* producer counter from the doorbell record */
	uint64_t last_db;
	uint32_t last_mailbox;
	uint32_t psn_max;               /* one past the highest PSN ever sent */
	uint16_t started_ci;            /* one past the last WQE whose first packet went out */
	uint32_t reads_out;
	uint16_t src_port;
};

struct nic_comp {
	uint16_t ci;                    /* oldest WQE not yet completed */
	uint32_t unacked_psn;           /* oldest PSN not acknowledged */
	uint8_t retry_left;
	uint8_t rnr_left;
	bool timer_armed;
	uint64_t deadline_ns;           /* local ACK timeout */
	bool rnr_wait;
	uint64_t rnr_deadline_ns;
	uint32_t rnr_psn;
	bool wqe_valid;                 /* wqe holds the WQE at ci (READ placement) */
	struct nic_swqe wqe;
};

/* Saved READ request (responder resources, IBA 9.7.5.1.5) for duplicate replay. */
struct nic_rd_res {
	bool valid;
	uint32_t psn;
	uint32_t npsn;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	/* an executed atomic (atomic.c), kept to answer its duplicates without executing them
	 * again (IBA 9.4.5); READ and atomic resources share the ring and max_dest_rd_atomic */
	bool atomic;
	uint8_t atomic_opcode;          /* GPUNIC_OP_COMPARE_SWAP or GPUNIC_OP_FETCH_ADD (RC) */
	uint64_t atomic_swap_add;
	uint64_t atomic_compare;
	uint64_t atomic_orig;           /* what the target held before: the ATOMIC ACK's value */
};

enum nic_rsp_type {
	NIC_RSP_ACK,                    /* ACK, NAK or RNR NAK: one packet */
	NIC_RSP_READ,                   /* a stream of READ responses */
	NIC_RSP_ATOMIC,                 /* one ATOMIC ACKNOWLEDGE (atomic.c) */
};

/* Responses leave in the order their requests arrived (IBA 9.7.5.2): an ACK queued behind a
 * READ stream would otherwise acknowledge the READ before its data. */
struct nic_rsp {
	uint8_t type;
	uint8_t syndrome;
	bool replay;                    /* queued for a duplicate: holds no responder resource */
	uint32_t psn;                   /* ACK: PSN; READ: first PSN of this stream */
	uint32_t msn;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint32_t off;                   /* READ: bytes already sent */
	/* NIC_RSP_ATOMIC */
	uint64_t atomic_orig;           /* the AtomicAckETH's original remote data */
};

enum nic_resp_msg {
	NIC_MSG_NONE = 0,
	NIC_MSG_SEND,
	NIC_MSG_WRITE,
};

struct nic_resp {
	uint32_t epsn;
	uint32_t msn;
	bool sent_psn_nak;
	bool drop_msg;                  /* UC: drop until the next FIRST/ONLY */
	uint8_t msg;                    /* enum nic_resp_msg: the open multi-packet message */
	/* receive WQE of the open SEND (or WRITE_IMM) */
	bool rwqe_valid;
	uint16_t rq_ci;
	uint32_t rnsge;
	uint32_t rlen;                  /* bytes the receive WQE can take */
	struct nic_sge rsge[NIC_MAX_RECV_SGE];
	uint32_t roff;                  /* SEND bytes placed so far */
	/* open WRITE */
	uint64_t va;
	uint32_t rkey;
	uint32_t resid;
	uint32_t wlen;
	/* READ resources and the response queue */
	struct nic_rd_res res[NIC_MAX_RD_ATOMIC];
	uint32_t res_next;
	struct nic_rsp q[NIC_RSPQ_LEN];
	uint32_t q_head;
	uint32_t q_tail;
};

struct nic_av {
	uint32_t ip;
	uint8_t mac[6];
	uint16_t udp_port;
	uint16_t src_udp_port;
};

struct nic_qp {
	struct gpunic_qp pub;
	struct gpunic_nic *nic;
	struct nic_pd *pd;
	struct nic_cq *scq;
	struct nic_cq *rcq;
	uint32_t slot;                  /* index in nic->active */
	uint32_t qpn_slot;              /* qp_num - NIC_QPN_BASE: index in nic->qps and in the
					 * NIC's dense doorbell records, words and mailboxes */
	bool hot;                       /* in nic->hot: looked at on every poll (nic.c) */
	uint32_t hot_idx;
	uint32_t quiet_polls;           /* polls in a row without work while hot */
	struct gpunic_qp_attr attr;     /* as applied by modify */
	uint32_t pmtu;                  /* bytes */
	struct nic_av av;
	bool cqe_scatter;
	enum gpunic_handler_mode mode;  /* resolved */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	char last_error[128];

	/* queue memory (qmem.c) */
	uint8_t *sq_buf;
	uint32_t sq_wqebb_cnt;
	uint8_t *rq_buf;
	uint32_t rq_wqe_cnt;
	uint32_t rq_stride;
	uint32_t *dbrec;
	uint64_t *db;
	uint32_t *mailbox;              /* the first 4 bytes of its 8-byte entry: the producer
					 * (the entry's low word, little-endian) */
	uint8_t *bf;                    /* BlueFlame page (GPU_BF), GPUNIC_DEV_BF_LINES lines */
	bool bf_sealed;                 /* its WQEs come sealed: the executor is across PCIe */
	bool tx_tmpl_ok;                /* tx_tmpl holds this connection's headers (net.c) */
	struct wire_tx_tmpl tx_tmpl;
	struct gpunic_dev_qp_state *dstate;  /* CPU view; NULL when only the GPU can reach it */
	struct nic_qmem_dev dev;             /* the executor's addresses of the above */
	struct nic_wqe_info *winfo;     /* sq_wqebb_cnt entries */

	uint16_t rq_ci;                 /* receive WQEs consumed */
	/* the receive producer as last read from dbrec: the responder reads the record again
	 * only when this says no WQE is left (resp.c fetch_rwqe), as a ConnectX does, so the
	 * record's line stays with the data path that writes it on every repost */
	uint16_t rq_pi_seen;
	struct nic_req req;
	struct nic_comp comp;
	struct nic_resp resp;
	struct gpunic_qp_counters cnt;
};

struct gpunic_nic {
	struct gpunic_nic_attr attr;
	struct gpunic_link *link;
	unsigned decode_flags;
	atomic_bool lock;               /* nic_lock: one exchange when nobody holds it */

	struct nic_qp *qps[NIC_MAX_QP];
	uint32_t qpn_next;              /* next-fit QPN slot, so numbers are not reused at once */
	struct nic_qp *active[NIC_MAX_QP];
	uint32_t nactive;
	uint32_t qpn_slot_top;          /* one past the highest qpn_slot ever used */
	uint32_t qpn_slot_hwm;          /* the same rounded up to a multiple of 16 */

	/*
	 * Every QP's doorbell record, doorbell word and mailbox sit in one dense array each,
	 * indexed by qpn_slot, so that the engine finds the QPs that posted by comparing the
	 * arrays with its own copies (a few dozen vector compares for a thousand QPs) instead of
	 * visiting every QP; the QPs with work in hand are on the hot list, visited on every poll
	 * (nic.c). The doorbell words are watched as the records are: a ConnectX acts on every
	 * doorbell write, and some device code rings one without writing the record (DOCA's
	 * GPU_SM_NO_DBR). Mailboxes are 8 bytes, 8-aligned: DOCA's proxy word is a 64-bit atomic.
	 */
	uint32_t *dbrec_area;           /* NIC_MAX_QP x [MLX5_RCV_DBR, MLX5_SND_DBR] */
	void *dbrec_area_dev;
	uint64_t *db_area;              /* NIC_MAX_QP doorbell words */
	void *db_area_dev;
	uint64_t *mailbox_area;         /* NIC_MAX_QP x 8 bytes (CPU_PROXY) */
	void *mailbox_area_dev;
	uint64_t *dbrec_seen;           /* the engine's copies (private memory) */
	uint64_t *db_seen;
	uint64_t *mailbox_seen;
	uint32_t nproxy;                /* QPs in CPU_PROXY mode: the mailbox scan runs only then */
	uint32_t ndb;                   /* QPs in GPU_DB mode: the doorbell word scan runs only
					 * then */
	uint32_t scan_wait;             /* polls left until the next scan of the records (nic.c) */
	uint32_t scan_cursor;           /* where the next partial scan of the records starts */
	struct nic_qp *hot[NIC_MAX_QP];
	uint32_t nhot;
	uint32_t hot_quiet_max;         /* polls without work before a hot QP may leave (nic.c) */

	struct nic_mr **mrs;            /* NIC_MAX_MR, indexed by key >> 8 */
	uint32_t mr_next;
	uint64_t rng;
	uint64_t test_rng;              /* nic_rand: test-only tearing and pauses */

	struct nic_pd *pds;
	uint32_t pd_next;
	struct nic_cq *cqs;
	uint32_t cqn_next;

	uint64_t now_ns;                /* 0 until read in this poll */
	/* the ICRC prefixes this NIC's frames had, in and out (wire_icrc) */
	struct wire_icrc_memo icrc_memo[WIRE_ICRC_MEMO_ENTRIES];
	struct gpunic_nic_counters cnt;

	pthread_t thread;
	bool thread_running;
	/* GPUNIC_NIC_TIME_ENGINE: the engine thread's time in engine_ticks, split by whether a
	 * poll did work, and where the count began (ticks and ns, to convert) */
	bool time_engine;
	uint64_t busy_ticks, idle_ticks, ticks0, ticks0_ns;
	atomic_bool stop;
	/* The engine thread polls without the lock; everyone else takes the lock and parks the
	 * thread first (nic_lock): park_req asks, parked answers, at the top of its loop. */
	atomic_bool park_req;
	atomic_bool parked;

	struct nic_qmem_rec *qmem;      /* queue allocations of the placement layer (qmem.c) */
	pthread_mutex_t qmem_lock;      /* guards qmem: it is also changed outside nic->lock */

	uint8_t txbuf[GPUNIC_MAX_FRAME_BYTES];
	uint8_t gather[4096];           /* one PMTU of payload gathered from several SGEs */

	/* capture tap (capture.c); cap is NULL when off, so the data path pays one branch */
	struct gpunic_pcap_writer *cap;
	char *cap_path;
	bool cap_env;                   /* started by GPUNIC_CAPTURE, so the file is named
					 * per NIC */
	bool cap_dirty;                 /* frames recorded since the last flush */
};

static inline struct nic_qp *to_qp(struct gpunic_qp *qp)
{
	return (struct nic_qp *)qp;
}

static inline struct nic_pd *to_pd(struct gpunic_pd *pd)
{
	return (struct nic_pd *)pd;
}

static inline struct nic_mr *to_mr(struct gpunic_mr *mr)
{
	return (struct nic_mr *)mr;
}

static inline struct nic_cq *to_cq(struct gpunic_cq *cq)
{
	return (struct nic_cq *)cq;
}

static inline bool qp_is_rc(const struct nic_qp *qp)
{
	return qp->pub.qp_type == GPUNIC_QPT_RC;
}

/* Signed distance a - b in PSNs (gpunic_psn_cmp only gives the sign: it is scaled by 2^8). */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return gpunic_psn_cmp(a, b) / 256;
}

/* Shared-memory loads and stores the data path also touches. */
static inline uint32_t load_be32_acquire(const uint32_t *p)
{
	return be32toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
}

/* ---------------------------------------------------------------- nic.c */

/* A test-only random stream (never the one that makes keys). */
uint64_t nic_rand(struct gpunic_nic *nic);
/* CLOCK_MONOTONIC now, in ns, read afresh. */
uint64_t nic_clock_ns(void);
/* nic_qp_wake for a QP not on the hot list yet. */
void nic_qp_join_hot(struct nic_qp *qp);
/* Put @qp on the hot list (it has work in hand, or may soon). Inline: every frame received
 * wakes its QP, which is on the list already nearly always. */
static inline void nic_qp_wake(struct nic_qp *qp)
{
	qp->quiet_polls = 0;
	if (!qp->hot)
		nic_qp_join_hot(qp);
}
/* Take @qp off the hot list (destroy). */
void nic_qp_sleep(struct nic_qp *qp);
void nic_lock(struct gpunic_nic *nic);
void nic_unlock(struct gpunic_nic *nic);
uint64_t nic_now(struct gpunic_nic *nic);
/* Count a dropped frame on the NIC and, when known, on its QP (rxe's single drop label). */
void nic_count_drop(struct gpunic_nic *nic, struct nic_qp *qp, enum gpunic_drop_reason reason);

/* ---------------------------------------------------------------- net.c */

/* Fill L2-L4 and BTH fields common to every packet of @qp, then encode and transmit.
 * Return: 0, or EAGAIN when the link has no room (nothing was sent). */
int nic_xmit(struct nic_qp *qp, struct gpunic_pkt *pkt);
/* Answer an ARP request for our address (shared-wire links). Return: true if it was ARP. */
bool nic_arp_input(struct gpunic_nic *nic, const uint8_t *frame, size_t len);

/* ---------------------------------------------------------------- req.c */

/* Move the producer the engine works up to forward to @pi, if @pi is ahead of it and within
 * one ring of the oldest WQE not completed; never backwards (the record may lag a doorbell or
 * a BlueFlame line already taken). */
static inline void req_producer_advance(struct nic_qp *qp, uint16_t pi)
{
	uint16_t ahead = (uint16_t)(pi - qp->comp.ci), have = (uint16_t)(qp->req.sq_pi - qp->comp.ci);

	if (ahead <= qp->sq_wqebb_cnt && ahead > have)
		qp->req.sq_pi = pi;
}

void req_doorbell_rung(struct nic_qp *qp, uint64_t db);

/*
 * Where the WQEs end, as far as the data path has told us. The doorbell record is the
 * producer; a changed doorbell word is the cue to read it, and a well-formed doorbell value
 * counts as a hint that may run ahead of the record (a data path may store both behind one
 * fence, or ring before it writes the record). Nothing is executed on that basis alone: every
 * WQE's ctrl segment must name the index it sits at before it runs (parse_wqe), so a WQE not
 * yet written, or written only in part, is waited for, never run. GPU_BF queue pairs ring no
 * doorbell: their record is read on every poll, beside the BlueFlame page. Inline: every
 * visit of a hot QP asks, and the answer is nearly always "nothing new".
 */
static inline void req_doorbell(struct nic_qp *qp)
{
	uint64_t db = __atomic_load_n(qp->db, __ATOMIC_ACQUIRE);

	if (db != qp->req.last_db)
		req_doorbell_rung(qp, db);
	else if (qp->mode == GPUNIC_HANDLER_GPU_BF)
		req_producer_advance(qp, (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_SND_DBR]));
}

void req_proxy_forward(struct nic_qp *qp);

/*
 * Does a ctrl segment whose first two words are @w0 and @w1 describe this QP's WQE at @ci? Its
 * index must be @ci, its QPN ours and its size not zero (every WQE holds at least its ctrl
 * segment): a slot never written, or holding another lap's WQE, fails.
 */
static inline bool ctrl_names(const struct nic_qp *qp, uint16_t ci, uint32_t w0, uint32_t w1)
{
	uint32_t qpn_ds = be32toh(w1);

	return ((be32toh(w0) >> 8) & 0xFFFF) == ci && (qpn_ds & 0x3F) &&
	       (qpn_ds >> 8) == qp->pub.qp_num;
}

/* GPU_BF: the BlueFlame line of the next WQE to start (pos.ci). */
static inline const uint8_t *req_bf_next(const struct nic_qp *qp)
{
	return qp->bf + (size_t)(qp->req.pos.ci & (GPUNIC_DEV_BF_LINES - 1)) * MLX5_SEND_WQE_BB;
}

/*
 * Nothing to start or go on with: no WQE in hand, none posted up to the producer and, for
 * GPU_BF, no BlueFlame line naming the next index (req_bf_line takes none that does not).
 * Most visits end here, before req_send_wqes' large frame is set up.
 */
static inline bool req_idle(const struct nic_qp *qp)
{
	const struct nic_req *req = &qp->req;
	uint64_t c0;
	uint32_t w[2];

	if (req->wqe_valid || req->pos.ci != req->sq_pi)
		return false;
	if (qp->mode != GPUNIC_HANDLER_GPU_BF)
		return true;
	/* a hint only: a line that names the index is read again, properly, by req_bf_line */
	c0 = __atomic_load_n((const uint64_t *)req_bf_next(qp), __ATOMIC_RELAXED);
	memcpy(w, &c0, sizeof(w));
	return !ctrl_names(qp, req->pos.ci, w[0], w[1]);
}

/* Start or go on with up to @budget packets of posted WQEs. Return: packets sent. */
int req_send_wqes(struct nic_qp *qp, int budget);

static inline int req_send(struct nic_qp *qp, int budget)
{
	return req_idle(qp) ? 0 : req_send_wqes(qp, budget);
}
/* Go back N: resend from @psn (comp.c). Return: false if no sent WQE holds @psn. */
bool req_rewind(struct nic_qp *qp, uint32_t psn);
/* Not an MLX5 syndrome: the WQE at the position is not (wholly) posted yet; look later. */
#define REQ_WQE_NOT_READY 0xFFu
/* Parse the WQE at @ci into @wqe; validates everything. Return: 0, an MLX5 syndrome or
 * REQ_WQE_NOT_READY. */
uint8_t req_parse_wqe(struct nic_qp *qp, uint16_t ci, struct nic_swqe *wqe);
void req_reset(struct nic_qp *qp);

/* ---------------------------------------------------------------- resp.c */

void resp_input(struct nic_qp *qp, const struct gpunic_pkt *pkt);
int resp_xmit(struct nic_qp *qp, int budget);
void resp_reset(struct nic_qp *qp);

/* ---------------------------------------------------------------- comp.c */

void comp_input(struct nic_qp *qp, const struct gpunic_pkt *pkt);
int comp_timers(struct nic_qp *qp);
/* Complete the WQE at comp.ci (its info slot) with success, or with @syndrome != 0. */
void comp_complete_wqe(struct nic_qp *qp, uint8_t syndrome);
/* comp_complete_uc_sent's CQE for the signaled WQE at @ci, out of line (most WQEs of a stream
 * are not signaled); a full CQ is an overflow: counted, the QP to ERR. */
void comp_uc_signaled(struct nic_qp *qp, uint16_t ci, uint8_t opcode, uint32_t length);

/*
 * comp_complete_wqe(qp, 0) for a UC WQE at comp.ci of @nbb blocks, MLX5 @opcode and @length
 * bytes, whose one packet the requester has sent and passed: no info slot is read, so the
 * requester need not have filled it. complete_head's work for it: the WQE took no READ slot,
 * and the requester is past it already. Inline: the requester's quick path ends here.
 */
static inline void comp_complete_uc_sent(struct nic_qp *qp, uint8_t opcode, uint32_t length,
					 uint8_t nbb, bool signaled)
{
	uint16_t ci = qp->comp.ci;

	qp->cnt.tx_messages++;
	qp->comp.ci = (uint16_t)(ci + nbb);
	qp->comp.wqe_valid = false;
	if (signaled)
		comp_uc_signaled(qp, ci, opcode, length);
}
void comp_arm_timer(struct nic_qp *qp);
void comp_reset(struct nic_qp *qp);

/* ---------------------------------------------------------------- atomic.c */

/* RC atomics (compare-and-swap, fetch-and-add: 8 bytes) and the NOP WQE; see atomic.c. */
static inline bool nic_opcode_is_atomic(uint8_t mlx5_opcode)
{
	return mlx5_opcode == MLX5_OPCODE_ATOMIC_CS || mlx5_opcode == MLX5_OPCODE_ATOMIC_FA;
}

/* MLX5 opcodes whose completion waits for a response of their own (not a plain ACK). */
static inline bool nic_opcode_needs_response(uint8_t mlx5_opcode)
{
	return mlx5_opcode == MLX5_OPCODE_RDMA_READ || nic_opcode_is_atomic(mlx5_opcode);
}

/* Requester: the atomic request of the WQE being sent (req.c's req_send). Return: 0, EAGAIN
 * (link busy, or max_rd_atomic responses outstanding: try again later). */
int req_send_atomic(struct nic_qp *qp, struct nic_wqe_info *info);
/* Requester: a NOP takes no PSN and sends nothing. Return: 0. */
int req_send_nop(struct nic_qp *qp, struct nic_wqe_info *info);
/* Completer: write an ATOMIC ACK's original value into the head WQE's local buffer (resolved
 * again through its lkey, local write). Return: 0 or an MLX5 CQE syndrome. */
uint8_t atomic_place_result(struct nic_qp *qp, uint64_t orig);
/* Responder: execute the atomic of @pkt on @target (8-byte aligned, host order) with the
 * compiler's atomic builtins. Return: the value @target held before. */
uint64_t atomic_execute(uint64_t *target, const struct gpunic_pkt *pkt);
/* Responder resources: remember the executed atomic of @pkt, and find the one a duplicate
 * request repeats (same PSN, opcode, address, key and operands). */
void atomic_res_save(struct nic_qp *qp, const struct gpunic_pkt *pkt, uint64_t orig);
const struct nic_rd_res *atomic_res_find(const struct nic_qp *qp, const struct gpunic_pkt *pkt);

/* ---------------------------------------------------------------- qp.c */

/* The QP numbered @qpn, or NULL. Inline: the front door looks up every frame's QP. */
static inline struct nic_qp *qp_lookup(struct gpunic_nic *nic, uint32_t qpn)
{
	uint32_t slot = qpn - NIC_QPN_BASE;
	struct nic_qp *qp;

	if (slot >= NIC_MAX_QP)
		return NULL;
	qp = nic->qps[slot];
	return (qp && qp->pub.qp_num == qpn) ? qp : NULL;
}
/* Move to ERR (the engine's way: completion errors, CQ overflow). */
void qp_set_error(struct nic_qp *qp);
/* Flush posted WQEs of a QP in ERR while its CQs have room. Return: WQEs flushed. */
int qp_flush(struct nic_qp *qp);
void qp_destroy_locked(struct nic_qp *qp);

/* ---------------------------------------------------------------- mr.c */

#define KEY_TAG_BITS 8
#define KEY_TAG_MASK 0xFFu

/* rxe check_rkey / mr_check_range: key, PD, rights, then the range without wrapping */
static inline void *mr_resolve(struct nic_mr *mr, struct nic_pd *pd, uint64_t addr,
			       uint32_t len, unsigned access, enum gpunic_drop_reason *why)
{
	if (mr->pub.pd != &pd->pub) {
		*why = GPUNIC_DROP_RKEY;
		return NULL;
	}
	if ((mr->pub.access & access) != access) {
		*why = GPUNIC_DROP_ACCESS;
		return NULL;
	}
	if (addr < mr->va || len > mr->pub.length || addr - mr->va > mr->pub.length - len) {
		*why = GPUNIC_DROP_BOUNDS;
		return NULL;
	}
	return (uint8_t *)mr->pub.addr + (addr - mr->va);
}

/* The region a key names by its index (its tag is the caller's to compare), or NULL. */
static inline struct nic_mr *mr_find(struct gpunic_nic *nic, uint32_t key)
{
	uint32_t idx = key >> KEY_TAG_BITS;

	if (idx >= NIC_MAX_MR)
		return NULL;
	return nic->mrs[idx];
}

/*
 * Resolve [addr, addr+len) through @key: the MR must belong to @pd, hold every bit of @access
 * and contain the range without wrapping. Return: host pointer, or NULL with *why set. Inline:
 * a message resolves a key or three on its way through.
 */
static inline void *mr_lookup_local(struct gpunic_nic *nic, struct nic_pd *pd, uint32_t lkey,
				    uint64_t addr, uint32_t len, unsigned access,
				    enum gpunic_drop_reason *why)
{
	struct nic_mr *mr = mr_find(nic, lkey);

	if (!mr || mr->pub.lkey != lkey || mr->pub.pd != &pd->pub) {
		*why = GPUNIC_DROP_LKEY;
		return NULL;
	}
	if (len > UINT64_MAX - addr) {
		*why = GPUNIC_DROP_BOUNDS;
		return NULL;
	}
	return mr_resolve(mr, pd, addr, len, access, why);
}

static inline void *mr_lookup_remote(struct gpunic_nic *nic, struct nic_pd *pd, uint32_t rkey,
				     uint64_t va, uint32_t len, unsigned access,
				     enum gpunic_drop_reason *why)
{
	struct nic_mr *mr = mr_find(nic, rkey);

	if (!mr || mr->pub.rkey != rkey) {
		*why = GPUNIC_DROP_RKEY;
		return NULL;
	}
	/* a range that wraps past 2^64 is never inside a region */
	if (len > UINT64_MAX - va) {
		*why = GPUNIC_DROP_BOUNDS;
		return NULL;
	}
	return mr_resolve(mr, pd, va, len, access, why);
}
/* Copy @len bytes to message offset @off of a scatter list, resolving every piece again with
 * local write access. Return: false (nothing more copied) when a piece does not resolve. */
bool mr_scatter(struct gpunic_nic *nic, struct nic_pd *pd, const struct nic_sge *sge,
		uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len);
void mr_destroy_all(struct gpunic_nic *nic);
void pd_destroy_all(struct gpunic_nic *nic);

/* ---------------------------------------------------------------- cq.c */

#define CQ_CI_MASK 0x00FFFFFFu	/* the consumer counter in dbrec is 24 bits */

/* Room for one more CQE. The consumer counter only grows, so room by the value last read from
 * the CQ's dbrec is room indeed; the record is read again when that value says full, and the
 * answer is then the record's, as before. Inline, as the rest of a CQE's way out: every
 * message pays for it. */
static inline bool cq_has_room(struct nic_cq *cq)
{
	if (cq->flags & GPUNIC_CQ_OVERRUN_IGNORE)
		return true;
	if (((cq->pi - cq->ci_seen) & CQ_CI_MASK) < cq->pub.cqe_cnt)
		return true;
	cq->ci_seen = load_be32_acquire(&cq->dbrec[0]);
	return ((cq->pi - cq->ci_seen) & CQ_CI_MASK) < cq->pub.cqe_cnt;
}

/* The next CQE, cleared, for a caller that made sure of room: it is built in cq->stage and
 * reaches the ring whole in cq_publish. */
static inline struct mlx5_cqe64 *cq_stage(struct nic_cq *cq)
{
	memset(&cq->stage, 0, sizeof(cq->stage));
	return &cq->stage;
}

/* Take the next CQE slot, cleared; the caller fills it and calls cq_publish. NULL when full. */
static inline struct mlx5_cqe64 *cq_next(struct nic_cq *cq)
{
	return cq_has_room(cq) ? cq_stage(cq) : NULL;
}

/* cq_publish's store for a line-checked CQ or under GPUNIC_NIC_TEST_TEAR_CQES (cq.c). */
void cq_publish_slow(struct nic_cq *cq, struct mlx5_cqe64 *slot, struct mlx5_cqe64 *cqe);

static inline void cq_publish(struct nic_cq *cq, struct mlx5_cqe64 *cqe, uint8_t opcode,
			      uint8_t flags)
{
	/* (pi / cqe_cnt) & 1, cqe_cnt being a power of two */
	uint8_t owner = (cq->pi >> cq->owner_shift) & MLX5_CQE_OWNER_MASK;
	struct mlx5_cqe64 *slot = &cq->buf[cq->pi & (cq->pub.cqe_cnt - 1)];

	cqe->op_own = (uint8_t)(opcode << 4 | flags | owner);
	if (__builtin_expect(cq->slow_publish, 0))
		cq_publish_slow(cq, slot, cqe);
	else
		gpunic_line_store64(slot, cqe);
	cq->pi++;
}

void cq_payload_check_slow(struct nic_cq *cq, struct mlx5_cqe64 *cqe, const uint8_t *data,
			   uint32_t len);

/* On a line-checked CQ, when @data is set: the check of the first min(@len, 64) bytes a
 * one-packet WRITE placed at @data, into the CQE built by cq_next (GPUNIC_DEV_CQE_PAYLOAD_WORD).
 * The CQ's flag is tested first: most CQs have no check, and the caller's select of @data then
 * costs nothing. */
static inline void cq_set_payload_check(struct nic_cq *cq, struct mlx5_cqe64 *cqe,
					const uint8_t *data, uint32_t len)
{
	if ((cq->flags & GPUNIC_CQ_LINE_CHECK) && data)
		cq_payload_check_slow(cq, cqe, data, len);
}

void cq_reset(struct nic_cq *cq);
void cq_destroy_all(struct gpunic_nic *nic);
/* Write an error CQE (REQ_ERR or RESP_ERR). Return: false if the CQ was full. */
bool cq_write_err(struct nic_cq *cq, uint8_t opcode, uint8_t syndrome, uint8_t wqe_opcode,
		  uint32_t qpn, uint16_t wqe_counter);

/* ---------------------------------------------------------------- qmem.c */

/*
 * The one place queue memory comes from: zeroed, page aligned, placed for the NIC's executor.
 * Return: the CPU address (NULL if only the executor can reach it, as GPU-resident data-path
 * state) with *dev the executor's address; NULL and *dev NULL on failure.
 */
void *nic_qmem_alloc(struct gpunic_nic *nic, size_t bytes, enum gpunic_queue_kind kind,
		     void **dev);
/* Free by executor address (every allocation has one). */
void nic_qmem_free(struct gpunic_nic *nic, void *dev, size_t bytes);
/* Zero @bytes of queue memory through whichever view can write it. */
int nic_qmem_zero(struct gpunic_nic *nic, void *dev, size_t bytes);
/* Release every queue allocation still held (NIC close). */
void nic_qmem_release_all(struct gpunic_nic *nic);

/* ---------------------------------------------------------------- capture.c */

/* Start the capture GPUNIC_CAPTURE asks for (NIC open); a failure is logged, never fatal. */
void nic_capture_open_env(struct gpunic_nic *nic);
/* Stop the capture, if any (NIC close: no engine running, nic->lock not held). */
void nic_capture_close(struct gpunic_nic *nic);
/* Record one frame now; only while nic->cap is set, under nic->lock. */
void nic_capture_frame(struct gpunic_nic *nic, const uint8_t *frame, size_t len);
/* Push recorded frames to the file, so that a crash loses none (end of a busy poll). */
void nic_capture_flush(struct gpunic_nic *nic);

/* The tap on every frame in and out: off, it is one branch the CPU predicts. */
static inline void nic_capture_tap(struct gpunic_nic *nic, const uint8_t *frame, size_t len)
{
	if (__builtin_expect(nic->cap != NULL, 0))
		nic_capture_frame(nic, frame, len);
}

#endif /* GPUNIC_NIC_LOC_H */
