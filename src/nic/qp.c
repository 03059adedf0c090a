// SPDX-License-Identifier: MIT
/*
 * Queue pairs: create (queues in mlx5 layout), the modify state machine as rxe's check / apply /
 * report triple (rxe_qp_chk_attr, rxe_qp_from_attr, rxe_qp_to_attr), query, destroy, export of
 * the data-path view, and the error state's flush.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunic/log.h"
#include "nic_loc.h"

#define QP_BF_BYTES (GPUNIC_DEV_BF_LINES * MLX5_SEND_WQE_BB)
#define ACCESS_ALL (GPUNIC_ACCESS_LOCAL_WRITE | GPUNIC_ACCESS_REMOTE_WRITE | \
		    GPUNIC_ACCESS_REMOTE_READ | GPUNIC_ACCESS_REMOTE_ATOMIC)

static const char *const qp_state_names[] = {
	[GPUNIC_QPS_RESET] = "RESET",
	[GPUNIC_QPS_INIT] = "INIT",
	[GPUNIC_QPS_RTR] = "RTR",
	[GPUNIC_QPS_RTS] = "RTS",
	[GPUNIC_QPS_ERR] = "ERR",
};

const char *gpunic_qp_state_name(enum gpunic_qp_state state)
{
	if ((unsigned)state < sizeof(qp_state_names) / sizeof(qp_state_names[0]))
		return qp_state_names[state];
	return "UNKNOWN";
}

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

static void qp_clear_records(struct nic_qp *qp);
static void qp_attach_records(struct nic_qp *qp, uint32_t slot);

/* ---------------------------------------------------------------- create / destroy */

static size_t sq_bytes(const struct nic_qp *qp)
{
	return (size_t)qp->sq_wqebb_cnt * MLX5_SEND_WQE_BB;
}

static size_t rq_bytes(const struct nic_qp *qp)
{
	return (size_t)qp->rq_wqe_cnt * qp->rq_stride;
}

static void qp_free_mem(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;

	nic_qmem_free(nic, qp->dev.sq_buf, sq_bytes(qp));
	nic_qmem_free(nic, qp->dev.rq_buf, rq_bytes(qp));
	nic_qmem_free(nic, qp->dev.state, sizeof(*qp->dstate));
	nic_qmem_free(nic, qp->dev.bf, QP_BF_BYTES);
	free(qp->winfo);
}

static int qp_alloc_mem(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;

	qp->sq_buf = nic_qmem_alloc(nic, sq_bytes(qp), GPUNIC_QUEUE_SQ, &qp->dev.sq_buf);
	qp->rq_buf = nic_qmem_alloc(nic, rq_bytes(qp), GPUNIC_QUEUE_RQ, &qp->dev.rq_buf);
	/* Only the executor touches its counters: with a GPU executor they may have no CPU view. */
	qp->dstate = nic_qmem_alloc(nic, sizeof(*qp->dstate), GPUNIC_QUEUE_EXEC_STATE, &qp->dev.state);
	/* the BlueFlame page: the executor writes it, the softnic polls it, as the doorbell */
	qp->bf = nic_qmem_alloc(nic, QP_BF_BYTES, GPUNIC_QUEUE_DOORBELL, &qp->dev.bf);
	qp->winfo = calloc(qp->sq_wqebb_cnt, sizeof(*qp->winfo));
	if (!qp->sq_buf || !qp->rq_buf || !qp->dev.state || !qp->bf || !qp->winfo)
		return ENOMEM;
	return 0;
}

/* Sizes as mlx5 computes them: the largest WQE (ctrl + raddr + SGEs or inline) in blocks. */
static int qp_size_queues(struct nic_qp *qp, const struct gpunic_qp_init_attr *ia)
{
	uint32_t send_sge = ia->max_send_sge ? ia->max_send_sge : 1;
	uint32_t recv_sge = ia->max_recv_sge ? ia->max_recv_sge : 1;
	uint32_t recv_wr = ia->max_recv_wr ? ia->max_recv_wr : 1;
	uint32_t data, wqe, bbs;

	if (!ia->max_send_wr || ia->max_send_wr > NIC_MAX_SQ_BB || recv_wr > NIC_MAX_RQ_WQE ||
	    send_sge > NIC_MAX_SEND_SGE || recv_sge > NIC_MAX_RECV_SGE ||
	    ia->max_inline_data > NIC_MAX_WQE_BYTES)
		return EINVAL;
	data = send_sge * sizeof(struct mlx5_wqe_data_seg);
	if (ia->max_inline_data) {
		uint32_t inl = (ia->max_inline_data + sizeof(struct mlx5_wqe_inl_data_seg) + 15) &
			       ~15u;

		if (inl > data)
			data = inl;
	}
	wqe = sizeof(struct mlx5_wqe_ctrl_seg) + sizeof(struct mlx5_wqe_raddr_seg) + data;
	if (wqe > NIC_MAX_WQE_BYTES)
		return EINVAL;
	bbs = (wqe + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
	if ((uint64_t)ia->max_send_wr * bbs > NIC_MAX_SQ_BB)
		return EINVAL;
	qp->sq_wqebb_cnt = roundup_pow2(ia->max_send_wr * bbs);
	qp->rq_wqe_cnt = roundup_pow2(recv_wr);
	qp->rq_stride = roundup_pow2(recv_sge) * sizeof(struct mlx5_wqe_data_seg);
	qp->max_send_sge = send_sge;
	qp->max_recv_sge = roundup_pow2(recv_sge);
	/* whatever fits in the largest WQE is usable (mlx5 reports the rounded-up value too) */
	wqe = bbs * MLX5_SEND_WQE_BB;
	if (wqe > NIC_MAX_WQE_BYTES)
		wqe = NIC_MAX_WQE_BYTES;
	wqe -= sizeof(struct mlx5_wqe_ctrl_seg) + sizeof(struct mlx5_wqe_raddr_seg) +
	       sizeof(struct mlx5_wqe_inl_data_seg);
	qp->max_inline = ia->max_inline_data ? wqe : 0;
	return 0;
}

static int qp_check_init_attr(struct gpunic_pd *pd, const struct gpunic_qp_init_attr *ia)
{
	if (!pd || !ia || ia->comp_mask || !ia->send_cq || !ia->recv_cq)
		return EINVAL;
	if (ia->send_cq->nic != pd->nic || ia->recv_cq->nic != pd->nic)
		return EINVAL;
	if (ia->qp_type != GPUNIC_QPT_RC && ia->qp_type != GPUNIC_QPT_UC)
		return EINVAL;
	if (ia->handler_mode != GPUNIC_HANDLER_AUTO && ia->handler_mode != GPUNIC_HANDLER_GPU_DB &&
	    ia->handler_mode != GPUNIC_HANDLER_CPU_PROXY &&
	    ia->handler_mode != GPUNIC_HANDLER_GPU_BF)
		return EINVAL;
	return 0;
}

struct gpunic_qp *gpunic_qp_create(struct gpunic_pd *pd, const struct gpunic_qp_init_attr *ia)
{
	struct gpunic_nic *nic;
	struct nic_qp *qp;
	uint32_t i, slot = 0;
	int err;

	err = qp_check_init_attr(pd, ia);
	if (err) {
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->nic = pd->nic;	/* queue memory is placed for this NIC's executor */
	err = qp_size_queues(qp, ia);
	if (!err)
		err = qp_alloc_mem(qp);
	if (err) {
		qp_free_mem(qp);
		free(qp);
		errno = err;
		return NULL;
	}
	nic = pd->nic;
	qp->nic = nic;
	qp->pd = to_pd(pd);
	qp->scq = to_cq(ia->send_cq);
	qp->rcq = to_cq(ia->recv_cq);
	qp->cqe_scatter = ia->cqe_scatter;
	/* a GPU executor's BlueFlame lines cross PCIe, where only a seal proves them whole */
	qp->bf_sealed = nic->attr.executor == GPUNIC_EXECUTOR_GPU;
	/* AUTO: the engine polls the BlueFlame page itself, the lowest-latency mode on one host:
	 * a WQE of one or two blocks reaches the NIC as one or two lines with no doorbell and no
	 * fence, no proxy thread in between; larger WQEs go through the doorbell record as in
	 * GPU_DB. Every mode
	 * needs the executor to store into memory the engine polls, which the placement layer
	 * guarantees for either executor. */
	qp->mode = ia->handler_mode == GPUNIC_HANDLER_AUTO ? GPUNIC_HANDLER_GPU_BF :
							     ia->handler_mode;
	if (ia->handler_mode == GPUNIC_HANDLER_AUTO)
		gpunic_info("handler AUTO -> GPU_BF: the %s executor can write whole WQEs into the "
			    "BlueFlame page the softnic polls: one line per WQE, no doorbell, no "
			    "fence, no proxy thread",
			    nic->attr.executor == GPUNIC_EXECUTOR_GPU ? "GPU" : "CPU");
	qp->pub.pd = pd;
	qp->pub.qp_type = ia->qp_type;
	qp->pub.state = GPUNIC_QPS_RESET;

	nic_lock(nic);
	for (i = 0; i < NIC_MAX_QP; i++) {
		slot = (nic->qpn_next + i) % NIC_MAX_QP;
		if (!nic->qps[slot])
			break;
	}
	if (i == NIC_MAX_QP) {
		nic_unlock(nic);
		qp_free_mem(qp);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	nic->qpn_next = slot + 1;
	qp->pub.qp_num = NIC_QPN_BASE + slot;
	nic->qps[slot] = qp;
	qp_attach_records(qp, slot);
	qp->slot = nic->nactive;
	nic->active[nic->nactive++] = qp;
	qp->pd->users++;
	qp->scq->users++;
	qp->rcq->users++;
	nic_unlock(nic);
	return &qp->pub;
}

/* The QP's doorbell record, doorbell word and mailbox: its entries of the NIC's dense arrays
 * (nic_loc.h), zeroed, with the engine's copies matching, so that only a post makes them
 * differ. Each entry is 8 bytes, 8-aligned. */
static void qp_attach_records(struct nic_qp *qp, uint32_t slot)
{
	struct gpunic_nic *nic = qp->nic;

	qp->qpn_slot = slot;
	qp->dbrec = nic->dbrec_area + 2 * (size_t)slot;
	qp->dev.dbrec = (uint8_t *)nic->dbrec_area_dev + sizeof(uint64_t) * slot;
	qp->db = nic->db_area + slot;
	qp->dev.db = (uint8_t *)nic->db_area_dev + sizeof(uint64_t) * slot;
	qp->mailbox = (uint32_t *)(void *)(nic->mailbox_area + slot);
	qp->dev.mailbox = (uint8_t *)nic->mailbox_area_dev + sizeof(uint64_t) * slot;
	qp_clear_records(qp);
	if (slot + 1 > nic->qpn_slot_top) {
		nic->qpn_slot_top = slot + 1;
		nic->qpn_slot_hwm = (slot + 16) & ~15u;
	}
	if (qp->mode == GPUNIC_HANDLER_CPU_PROXY)
		nic->nproxy++;
	if (qp->mode == GPUNIC_HANDLER_GPU_DB)
		nic->ndb++;
}

static void qp_clear_records(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;

	__atomic_store_n(&qp->dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->dbrec[MLX5_SND_DBR], 0, __ATOMIC_RELAXED);
	__atomic_store_n(qp->db, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&nic->mailbox_area[qp->qpn_slot], 0, __ATOMIC_RELAXED);
	nic->dbrec_seen[qp->qpn_slot] = 0;
	nic->db_seen[qp->qpn_slot] = 0;
	nic->mailbox_seen[qp->qpn_slot] = 0;
}

void qp_destroy_locked(struct nic_qp *qp)
{
	struct gpunic_nic *nic = qp->nic;
	struct nic_qp *last = nic->active[--nic->nactive];

	nic_qp_sleep(qp);
	qp_clear_records(qp);
	if (qp->mode == GPUNIC_HANDLER_CPU_PROXY)
		nic->nproxy--;
	if (qp->mode == GPUNIC_HANDLER_GPU_DB)
		nic->ndb--;

	nic->active[qp->slot] = last;
	last->slot = qp->slot;
	nic->qps[qp->pub.qp_num - NIC_QPN_BASE] = NULL;
	qp->pd->users--;
	qp->scq->users--;
	qp->rcq->users--;
	qp_free_mem(qp);
	free(qp);
}

int gpunic_qp_destroy(struct gpunic_qp *pub)
{
	struct gpunic_nic *nic;

	if (!pub)
		return EINVAL;
	nic = to_qp(pub)->nic;
	nic_lock(nic);
	qp_destroy_locked(to_qp(pub));
	nic_unlock(nic);
	return 0;
}

/* ---------------------------------------------------------------- modify */

/* Attributes each transition requires and allows (the table in Linux ib_modify_qp_is_ok). */
struct qp_trans {
	bool valid;
	unsigned req;
	unsigned req_rc;
	unsigned opt;
	unsigned opt_rc;
};

#define RTR_REQ (GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN | GPUNIC_QP_AV)
#define RTR_REQ_RC (GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER)
#define RTS_REQ_RC (GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY | \
		    GPUNIC_QP_MAX_QP_RD_ATOMIC)

static const struct qp_trans qp_trans_tbl[5][5] = {
	[GPUNIC_QPS_RESET] = {
		[GPUNIC_QPS_RESET] = { .valid = true },
		[GPUNIC_QPS_INIT] = { .valid = true, .req = GPUNIC_QP_ACCESS_FLAGS },
		[GPUNIC_QPS_ERR] = { .valid = true },
	},
	[GPUNIC_QPS_INIT] = {
		[GPUNIC_QPS_RESET] = { .valid = true },
		[GPUNIC_QPS_INIT] = { .valid = true, .opt = GPUNIC_QP_ACCESS_FLAGS },
		[GPUNIC_QPS_RTR] = { .valid = true, .req = RTR_REQ, .req_rc = RTR_REQ_RC,
				     .opt = GPUNIC_QP_ACCESS_FLAGS },
		[GPUNIC_QPS_ERR] = { .valid = true },
	},
	[GPUNIC_QPS_RTR] = {
		[GPUNIC_QPS_RESET] = { .valid = true },
		[GPUNIC_QPS_RTS] = { .valid = true, .req = GPUNIC_QP_SQ_PSN, .req_rc = RTS_REQ_RC,
				     .opt = GPUNIC_QP_ACCESS_FLAGS,
				     .opt_rc = GPUNIC_QP_MIN_RNR_TIMER },
		[GPUNIC_QPS_ERR] = { .valid = true },
	},
	[GPUNIC_QPS_RTS] = {
		[GPUNIC_QPS_RESET] = { .valid = true },
		[GPUNIC_QPS_RTS] = { .valid = true, .opt = GPUNIC_QP_ACCESS_FLAGS,
				     .opt_rc = GPUNIC_QP_MIN_RNR_TIMER },
		[GPUNIC_QPS_ERR] = { .valid = true },
	},
	[GPUNIC_QPS_ERR] = {
		[GPUNIC_QPS_RESET] = { .valid = true },
		[GPUNIC_QPS_ERR] = { .valid = true },
	},
};

static const char *const attr_names[] = {
	"STATE", "ACCESS_FLAGS", "PATH_MTU", "DEST_QPN", "RQ_PSN", "SQ_PSN", "AV", "TIMEOUT",
	"RETRY_CNT", "RNR_RETRY", "MIN_RNR_TIMER", "MAX_QP_RD_ATOMIC", "MAX_DEST_RD_ATOMIC",
};
#define ATTR_ALL ((1u << (sizeof(attr_names) / sizeof(attr_names[0]))) - 1)

__attribute__((format(printf, 2, 3)))
static int qp_fail(struct nic_qp *qp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(qp->last_error, sizeof(qp->last_error), fmt, ap);
	va_end(ap);
	return EINVAL;
}

static int first_bit(unsigned v)
{
	return __builtin_ctz(v);
}

static int qp_chk_values(struct nic_qp *qp, const struct gpunic_qp_attr *a, unsigned mask)
{
	uint32_t pmtu, need;

	if ((mask & GPUNIC_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~ACCESS_ALL))
		return qp_fail(qp, "qp_access_flags 0x%x has unknown bits", a->qp_access_flags);
	if (mask & GPUNIC_QP_PATH_MTU) {
		pmtu = gpunic_mtu_bytes(a->path_mtu);
		if (!pmtu)
			return qp_fail(qp, "path_mtu %d is not 256..4096", (int)a->path_mtu);
		need = gpunic_mtu_frame_bytes(a->path_mtu);
		if (qp->nic->link->mtu && need > qp->nic->link->mtu)
			return qp_fail(qp, "path_mtu %u needs %u-byte frames, link carries %u",
				       pmtu, need, qp->nic->link->mtu);
	}
	if ((mask & GPUNIC_QP_DEST_QPN) && a->dest_qp_num > 0xFFFFFFu)
		return qp_fail(qp, "dest_qp_num 0x%x exceeds 24 bits", a->dest_qp_num);
	if ((mask & GPUNIC_QP_RQ_PSN) && a->rq_psn > GPUNIC_PSN_MASK)
		return qp_fail(qp, "rq_psn 0x%x exceeds 24 bits", a->rq_psn);
	if ((mask & GPUNIC_QP_SQ_PSN) && a->sq_psn > GPUNIC_PSN_MASK)
		return qp_fail(qp, "sq_psn 0x%x exceeds 24 bits", a->sq_psn);
	if ((mask & GPUNIC_QP_AV) && !a->remote_ip)
		return qp_fail(qp, "AV without remote_ip");
	if ((mask & GPUNIC_QP_TIMEOUT) && a->timeout > 31)
		return qp_fail(qp, "timeout %u exceeds 31", a->timeout);
	if ((mask & GPUNIC_QP_RETRY_CNT) && a->retry_cnt > 7)
		return qp_fail(qp, "retry_cnt %u exceeds 7", a->retry_cnt);
	if ((mask & GPUNIC_QP_RNR_RETRY) && a->rnr_retry > 7)
		return qp_fail(qp, "rnr_retry %u exceeds 7", a->rnr_retry);
	if ((mask & GPUNIC_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return qp_fail(qp, "min_rnr_timer %u exceeds 31", a->min_rnr_timer);
	if ((mask & GPUNIC_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > NIC_MAX_RD_ATOMIC)
		return qp_fail(qp, "max_rd_atomic %u exceeds %d", a->max_rd_atomic,
			       NIC_MAX_RD_ATOMIC);
	if ((mask & GPUNIC_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > NIC_MAX_RD_ATOMIC)
		return qp_fail(qp, "max_dest_rd_atomic %u exceeds %d", a->max_dest_rd_atomic,
			       NIC_MAX_RD_ATOMIC);
	return 0;
}

/* rxe_qp_chk_attr: everything is checked before anything changes */
static int qp_chk_attr(struct nic_qp *qp, const struct gpunic_qp_attr *a, unsigned mask,
		       enum gpunic_qp_state *next)
{
	enum gpunic_qp_state cur = qp->pub.state;
	enum gpunic_qp_state new = (mask & GPUNIC_QP_STATE) ? a->qp_state : cur;
	const struct qp_trans *t;
	unsigned req, opt, missing, extra;

	if (mask & ~ATTR_ALL)
		return qp_fail(qp, "attribute mask 0x%x has unknown bits", mask);
	if ((unsigned)new > GPUNIC_QPS_ERR)
		return qp_fail(qp, "unknown qp_state %d", (int)new);
	t = &qp_trans_tbl[cur][new];
	if (!t->valid)
		return qp_fail(qp, "illegal transition %s -> %s", gpunic_qp_state_name(cur),
			       gpunic_qp_state_name(new));
	req = t->req | (qp_is_rc(qp) ? t->req_rc : 0);
	opt = t->opt | (qp_is_rc(qp) ? t->opt_rc : 0);
	missing = req & ~mask;
	if (missing)
		return qp_fail(qp, "%s -> %s requires attribute %s", gpunic_qp_state_name(cur),
			       gpunic_qp_state_name(new), attr_names[first_bit(missing)]);
	extra = mask & ~(req | opt | GPUNIC_QP_STATE);
	if (extra)
		return qp_fail(qp, "attribute %s is not allowed in %s -> %s on a %s QP",
			       attr_names[first_bit(extra)], gpunic_qp_state_name(cur),
			       gpunic_qp_state_name(new), qp_is_rc(qp) ? "RC" : "UC");
	*next = new;
	return qp_chk_values(qp, a, mask);
}

/* Back to RESET: queues empty and counters of both sides zero, as a freshly created QP. */
static void qp_reset(struct nic_qp *qp)
{
	memset(qp->sq_buf, 0, sq_bytes(qp));
	memset(qp->rq_buf, 0, rq_bytes(qp));
	qp_clear_records(qp);
	memset(qp->bf, 0, QP_BF_BYTES);
	nic_qmem_zero(qp->nic, qp->dev.state, sizeof(*qp->dstate));
	memset(qp->winfo, 0, qp->sq_wqebb_cnt * sizeof(*qp->winfo));
	qp->rq_ci = 0;
	qp->rq_pi_seen = 0;
	req_reset(qp);
	comp_reset(qp);
	resp_reset(qp);
}

/* rxe_qp_from_attr */
static void qp_apply_attr(struct nic_qp *qp, const struct gpunic_qp_attr *a, unsigned mask,
			  enum gpunic_qp_state new)
{
	if (mask & GPUNIC_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & GPUNIC_QP_PATH_MTU) {
		qp->attr.path_mtu = a->path_mtu;
		qp->pmtu = gpunic_mtu_bytes(a->path_mtu);
	}
	if (mask & GPUNIC_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & GPUNIC_QP_RQ_PSN) {
		qp->attr.rq_psn = a->rq_psn;
		qp->resp.epsn = a->rq_psn;
	}
	if (mask & GPUNIC_QP_AV) {
		qp->attr.remote_ip = a->remote_ip;
		memcpy(qp->attr.remote_mac, a->remote_mac, 6);
		qp->attr.remote_udp_port = a->remote_udp_port;
		qp->attr.src_udp_port = a->src_udp_port;
		qp->av.ip = a->remote_ip;
		memcpy(qp->av.mac, a->remote_mac, 6);
		qp->av.udp_port = a->remote_udp_port ? a->remote_udp_port : GPUNIC_ROCE_UDP_PORT;
		qp->av.src_udp_port = a->src_udp_port;
	}
	if (mask & GPUNIC_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & GPUNIC_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & GPUNIC_QP_SQ_PSN) {
		qp->attr.sq_psn = a->sq_psn;
		qp->req.pos.psn = a->sq_psn;
		qp->req.psn_max = a->sq_psn;
		qp->comp.unacked_psn = a->sq_psn;
	}
	if (mask & GPUNIC_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & GPUNIC_QP_RETRY_CNT) {
		qp->attr.retry_cnt = a->retry_cnt;
		qp->comp.retry_left = a->retry_cnt;
	}
	if (mask & GPUNIC_QP_RNR_RETRY) {
		qp->attr.rnr_retry = a->rnr_retry;
		qp->comp.rnr_left = a->rnr_retry;
	}
	if (mask & GPUNIC_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;

	if (new == GPUNIC_QPS_RTR && qp->pub.state != GPUNIC_QPS_RTR) {
		qp->req.src_port = qp->av.src_udp_port ? qp->av.src_udp_port :
				   gpunic_roce_udp_sport(0, qp->pub.qp_num, qp->attr.dest_qp_num);
	}
	if (new == GPUNIC_QPS_RESET) {
		qp_reset(qp);
		memset(&qp->attr, 0, sizeof(qp->attr));
		qp->pub.state = new;
		return;
	}
	if (new == GPUNIC_QPS_ERR) {
		qp_set_error(qp);
		return;
	}
	qp->pub.state = new;
}

int gpunic_qp_modify(struct gpunic_qp *pub, const struct gpunic_qp_attr *attr, unsigned mask)
{
	struct nic_qp *qp = to_qp(pub);
	enum gpunic_qp_state new = GPUNIC_QPS_RESET;
	int err;

	if (!pub || !attr)
		return EINVAL;
	nic_lock(qp->nic);
	err = qp_chk_attr(qp, attr, mask, &new);
	if (!err) {
		qp->last_error[0] = '\0';
		qp_apply_attr(qp, attr, mask, new);
		qp->tx_tmpl_ok = false;	/* addresses may have changed: net.c builds it again */
		/* whatever was posted before RTS (or must now be flushed) is looked at */
		nic_qp_wake(qp);
	}
	nic_unlock(qp->nic);
	return err;
}

/* rxe_qp_to_attr */
int gpunic_qp_query(struct gpunic_qp *pub, struct gpunic_qp_attr *attr)
{
	struct nic_qp *qp = to_qp(pub);

	if (!pub || !attr)
		return EINVAL;
	nic_lock(qp->nic);
	*attr = qp->attr;
	attr->qp_state = qp->pub.state;
	nic_unlock(qp->nic);
	return 0;
}

const char *gpunic_qp_last_error(struct gpunic_qp *pub)
{
	return pub ? to_qp(pub)->last_error : "";
}

int gpunic_qp_export(struct gpunic_qp *pub, struct gpunic_dev_qp *out)
{
	struct nic_qp *qp = to_qp(pub);

	if (!pub || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->qpn = qp->pub.qp_num;
	out->qp_type = qp->pub.qp_type;
	out->handler_mode = qp->mode;
	out->max_inline = qp->max_inline;
	/* The executor's addresses: the same as the engine's for a CPU executor, device
	 * addresses of the same memory for a GPU one. */
	out->sq_buf = qp->dev.sq_buf;
	out->sq_wqebb_cnt = qp->sq_wqebb_cnt;
	out->rq_stride = qp->rq_stride;
	out->rq_buf = qp->dev.rq_buf;
	out->rq_wqe_cnt = qp->rq_wqe_cnt;
	out->dbrec = qp->dev.dbrec;
	out->db = qp->dev.db;
	out->mailbox = qp->dev.mailbox;
	out->bf = qp->dev.bf;
	out->bf_lines = GPUNIC_DEV_BF_LINES;
	out->flags = qp->bf_sealed ? GPUNIC_DEV_QP_SEAL_BF : 0;
	out->scq.buf = qp->scq->buf_dev;
	out->scq.cqe_cnt = qp->scq->pub.cqe_cnt;
	out->scq.cqn = qp->scq->pub.cqn;
	out->scq.dbrec = qp->scq->dbrec_dev;
	out->scq.flags = qp->scq->flags;
	out->rcq.buf = qp->rcq->buf_dev;
	out->rcq.cqe_cnt = qp->rcq->pub.cqe_cnt;
	out->rcq.cqn = qp->rcq->pub.cqn;
	out->rcq.dbrec = qp->rcq->dbrec_dev;
	out->rcq.flags = qp->rcq->flags;
	out->state = qp->dev.state;
	return 0;
}

int gpunic_qp_query_counters(struct gpunic_qp *pub, struct gpunic_qp_counters *out)
{
	struct nic_qp *qp = to_qp(pub);

	if (!pub || !out)
		return EINVAL;
	nic_lock(qp->nic);
	*out = qp->cnt;
	nic_unlock(qp->nic);
	return 0;
}

/* ---------------------------------------------------------------- error state */

void qp_set_error(struct nic_qp *qp)
{
	nic_qp_wake(qp);	/* the flush goes on over the next polls */
	qp->pub.state = GPUNIC_QPS_ERR;
	qp->comp.timer_armed = false;
	qp->comp.rnr_wait = false;
	qp->req.wqe_valid = false;
	qp->comp.wqe_valid = false;
	qp->resp.rwqe_valid = false;
	qp->resp.msg = NIC_MSG_NONE;
	qp->resp.q_head = qp->resp.q_tail = 0;
	qp_flush(qp);
}

/* In the error state every outstanding and newly posted WR completes with
 * a flush error, signaled or not. Done while the CQs have room so that a flush never overflows
 * a CQ; the engine calls this again on every poll. */
int qp_flush(struct nic_qp *qp)
{
	uint32_t sq_mask = qp->sq_wqebb_cnt - 1;
	uint16_t rq_pi;
	int n = 0;

	req_doorbell(qp);
	while (qp->comp.ci != qp->req.sq_pi) {
		const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)(qp->sq_buf +
			(size_t)(qp->comp.ci & sq_mask) * MLX5_SEND_WQE_BB);
		uint32_t ds = be32toh(ctrl->qpn_ds) & 0x3F;
		uint16_t avail = (uint16_t)(qp->req.sq_pi - qp->comp.ci);
		uint16_t nbb = (uint16_t)((ds * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);
		uint8_t op = be32toh(ctrl->opmod_idx_opcode) & 0xFF;

		if (!nbb)
			nbb = 1;
		if (nbb > avail)
			nbb = avail;
		if (!cq_write_err(qp->scq, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, op,
				  qp->pub.qp_num, qp->comp.ci))
			break;
		qp->comp.ci += nbb;
		n++;
	}
	qp->req.pos.ci = qp->comp.ci;
	qp->req.reads_out = 0;

	rq_pi = (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_RCV_DBR]);
	while (qp->rq_ci != rq_pi && (uint16_t)(rq_pi - qp->rq_ci) <= qp->rq_wqe_cnt) {
		if (!cq_write_err(qp->rcq, MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0,
				  qp->pub.qp_num, qp->rq_ci))
			break;
		qp->rq_ci++;
		n++;
	}
	return n;
}
