// SPDX-License-Identifier: MIT
/*
 * The requester (rxe_req.c's role): notices doorbells, copies send WQEs out of the mlx5 ring,
 * validates them, segments each message by path MTU and transmits the packets. RC keeps what
 * it sent in the WQE ring and its info slots, so the completer can go back N (req_rewind).
 */
#include <errno.h>
#include <string.h>

#include "nic_loc.h"

#define WQE_DS_BYTES 16u
#define MAX_MSG_BYTES 0x80000000u	/* largest message IBA allows */

static inline bool is_read(uint8_t opcode)
{
	return opcode == MLX5_OPCODE_RDMA_READ;
}

static inline struct nic_wqe_info *wqe_info(struct nic_qp *qp, uint16_t ci)
{
	return &qp->winfo[ci & (qp->sq_wqebb_cnt - 1)];
}

void req_reset(struct nic_qp *qp)
{
	memset(&qp->req, 0, sizeof(qp->req));
}

/* ---------------------------------------------------------------- doorbells */

/*
 * The producer counter a GPU_DB doorbell announces: the word is the last WQE's control segment
 * bytes 0-7, i.e. its index (opmod_idx_opcode bytes 1-2) and its size in 16-byte units (qpn_ds
 * byte 7), so the WQEs end at index + size in basic blocks.
 */
static uint16_t db_producer(uint64_t db)
{
	uint8_t b[8];
	unsigned ds;

	memcpy(b, &db, sizeof(b));
	ds = b[7] & 0x3f;
	return (uint16_t)(((unsigned)b[1] << 8 | b[2]) + (ds ? (ds * 16 + 63) / 64 : 1));
}

/* GPU_DB: the data path stores the control segment's first 8 bytes into the doorbell word after
 * its WQEs, as software rings a ConnectX UAR; a changed word is our cue to read dbrec. The word
 * itself says where the WQEs end, so a data path may store dbrec and the doorbell with no fence
 * between them (one fence before both): whichever of the two is further ahead counts. */
void req_doorbell(struct nic_qp *qp)
{
	uint64_t db = __atomic_load_n(qp->db, __ATOMIC_ACQUIRE);
	uint16_t pi, pi_db;

	if (db == qp->req.last_db)
		return;
	qp->req.last_db = db;
	pi = (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_SND_DBR]);
	if (qp->mode == GPUNIC_HANDLER_GPU_DB) {
		pi_db = db_producer(db);
		if ((uint16_t)(pi_db - qp->comp.ci) <= qp->sq_wqebb_cnt &&
		    (uint16_t)(pi_db - qp->comp.ci) > (uint16_t)(pi - qp->comp.ci))
			pi = pi_db;
	}
	/* a producer further ahead than the ring is long is garbage: ignore the doorbell */
	if ((uint16_t)(pi - qp->comp.ci) > qp->sq_wqebb_cnt)
		return;
	qp->req.sq_pi = pi;
}

/* CPU_PROXY: the data path only publishes its producer counter in the mailbox; the proxy
 * forwards it into dbrec and rings the doorbell word on its behalf. It runs inside the engine
 * for now and touches nothing but those three words, so it can move to its own thread. */
void req_proxy_forward(struct nic_qp *qp)
{
	uint32_t mb = __atomic_load_n(qp->mailbox, __ATOMIC_ACQUIRE);

	if (mb == qp->req.last_mailbox)
		return;
	qp->req.last_mailbox = mb;
	__atomic_store_n(&qp->dbrec[MLX5_SND_DBR], htobe32(mb & 0xFFFF), __ATOMIC_RELEASE);
	__atomic_store_n(qp->db, (uint64_t)mb, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- WQE parsing */

static void copy_wqe(struct nic_qp *qp, uint16_t ci, uint8_t *dst, unsigned nbb)
{
	uint32_t mask = qp->sq_wqebb_cnt - 1;

	/* a WQE may wrap from the ring's last block to its first */
	for (unsigned i = 0; i < nbb; i++)
		memcpy(dst + i * MLX5_SEND_WQE_BB,
		       qp->sq_buf + (size_t)((ci + i) & mask) * MLX5_SEND_WQE_BB, MLX5_SEND_WQE_BB);
}

static uint8_t parse_inline(struct nic_qp *qp, struct nic_swqe *wqe, const uint8_t *seg,
			    uint32_t room)
{
	uint32_t len = be32toh(((const struct mlx5_wqe_inl_data_seg *)seg)->byte_count) &
		       ~(uint32_t)MLX5_INLINE_SEG;

	if (is_read(wqe->opcode) || len > qp->max_inline ||
	    len > room - sizeof(struct mlx5_wqe_inl_data_seg))
		return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	memcpy(wqe->inline_data, seg + sizeof(struct mlx5_wqe_inl_data_seg), len);
	wqe->inl = true;
	wqe->length = len;
	return 0;
}

static uint8_t parse_data_segs(struct nic_qp *qp, struct nic_swqe *wqe, const uint8_t *raw,
			       uint32_t off, uint32_t end)
{
	/* READ scatters into local memory, so its buffers need local write */
	unsigned access = is_read(wqe->opcode) ? GPUNIC_ACCESS_LOCAL_WRITE : 0;
	enum gpunic_drop_reason why;
	uint64_t total = 0;

	for (; off + sizeof(struct mlx5_wqe_data_seg) <= end; off += WQE_DS_BYTES) {
		const struct mlx5_wqe_data_seg *d = (const void *)(raw + off);
		uint32_t bc = be32toh(d->byte_count), lkey = be32toh(d->lkey);
		struct nic_sge *sge;

		if (bc & MLX5_INLINE_SEG) {
			if (wqe->nsge)
				return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			return parse_inline(qp, wqe, raw + off, end - off);
		}
		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (!bc)
			continue;
		if (wqe->nsge == qp->max_send_sge)
			return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		sge = &wqe->sge[wqe->nsge++];
		sge->addr = be64toh(d->addr);
		sge->len = bc;
		sge->lkey = lkey;
		/* checked before any byte moves: a bad SGE never touches memory */
		if (!mr_lookup_local(qp->nic, qp->pd, lkey, sge->addr, bc, access, &why))
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		total += bc;
	}
	if (total > MAX_MSG_BYTES)
		return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	wqe->length = (uint32_t)total;
	return 0;
}

uint8_t req_parse_wqe(struct nic_qp *qp, uint16_t ci, struct nic_swqe *wqe)
{
	uint8_t raw[NIC_MAX_WQE_BB * MLX5_SEND_WQE_BB];
	const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)raw;
	uint16_t avail = (uint16_t)(qp->req.sq_pi - ci);
	uint32_t ds, off = sizeof(*ctrl);
	bool rdma;

	copy_wqe(qp, ci, raw, 1);
	ds = be32toh(ctrl->qpn_ds) & 0x3F;
	memset(wqe, 0, offsetof(struct nic_swqe, sge));
	wqe->idx = ci;
	wqe->opcode = be32toh(ctrl->opmod_idx_opcode) & 0xFF;
	wqe->nbb = (uint8_t)((ds * WQE_DS_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);
	if (!wqe->nbb || wqe->nbb > avail) {
		wqe->nbb = 1;
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	if (wqe->nbb > 1)
		copy_wqe(qp, ci, raw, wqe->nbb);
	wqe->signaled = ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE;
	wqe->imm = be32toh(ctrl->imm);

	switch (wqe->opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		rdma = false;
		break;
	case MLX5_OPCODE_RDMA_READ:
		if (!qp_is_rc(qp) || !qp->attr.max_rd_atomic)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		rdma = true;
		break;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		rdma = true;
		break;
	default:
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	if (rdma) {
		const struct mlx5_wqe_raddr_seg *r = (const void *)(raw + off);

		if (ds * WQE_DS_BYTES < off + sizeof(*r))
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		wqe->raddr = be64toh(r->raddr);
		wqe->rkey = be32toh(r->rkey);
		off += sizeof(*r);
	}
	return parse_data_segs(qp, wqe, raw, off, ds * WQE_DS_BYTES);
}

/* ---------------------------------------------------------------- packets */

static uint32_t msg_packets(uint32_t len, uint32_t pmtu)
{
	return len ? (len + pmtu - 1) / pmtu : 1;
}

/* Payload for [off, off + len) of the message: straight from the region when one SGE holds it,
 * else gathered into the NIC's bounce buffer. NULL if a region vanished since the WQE was
 * checked. */
static const uint8_t *req_payload(struct nic_qp *qp, const struct nic_swqe *wqe, uint32_t off,
				  uint32_t len)
{
	enum gpunic_drop_reason why;
	uint32_t done = 0, i = 0, base = 0;

	if (!len)
		return qp->nic->gather;
	if (wqe->inl)
		return wqe->inline_data + off;
	while (i < wqe->nsge && base + wqe->sge[i].len <= off)
		base += wqe->sge[i++].len;
	if (i < wqe->nsge && off - base + len <= wqe->sge[i].len)
		return mr_lookup_local(qp->nic, qp->pd, wqe->sge[i].lkey,
				       wqe->sge[i].addr + (off - base), len, 0, &why);
	for (; i < wqe->nsge && done < len; i++) {
		uint32_t in = off + done - base, n = wqe->sge[i].len - in;
		const uint8_t *src;

		if (n > len - done)
			n = len - done;
		src = mr_lookup_local(qp->nic, qp->pd, wqe->sge[i].lkey, wqe->sge[i].addr + in, n,
				      0, &why);
		if (!src)
			return NULL;
		memcpy(qp->nic->gather + done, src, n);
		done += n;
		base += wqe->sge[i].len;
	}
	return done == len ? qp->nic->gather : NULL;
}

/* First/middle/last/only offsets from the opcode table's order (roce-wire.md 4). */
static uint8_t req_opcode(const struct nic_qp *qp, const struct nic_swqe *wqe, bool first,
			  bool last)
{
	bool write = wqe->opcode == MLX5_OPCODE_RDMA_WRITE ||
		     wqe->opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
	bool imm = wqe->opcode == MLX5_OPCODE_SEND_IMM ||
		   wqe->opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
	uint8_t op;

	if (first && last)
		op = GPUNIC_OP_SEND_ONLY + imm;
	else if (first)
		op = GPUNIC_OP_SEND_FIRST;
	else if (!last)
		op = GPUNIC_OP_SEND_MIDDLE;
	else
		op = GPUNIC_OP_SEND_LAST + imm;
	if (write)
		op += GPUNIC_OP_WRITE_FIRST;
	return op | (qp_is_rc(qp) ? GPUNIC_TRANSPORT_RC : GPUNIC_TRANSPORT_UC);
}

static void save_state(const struct nic_qp *qp, struct nic_req_pos *saved)
{
	*saved = qp->req.pos;
}

static void rollback_state(struct nic_qp *qp, const struct nic_req_pos *saved)
{
	qp->req.pos = *saved;
}

/* One READ request covers what is left of the READ (all of it, or the rest after a retry). */
static int req_send_read(struct nic_qp *qp, struct nic_wqe_info *info)
{
	struct nic_swqe *wqe = &qp->req.wqe;
	struct nic_req_pos *pos = &qp->req.pos;
	struct gpunic_pkt pkt = { 0 };
	uint32_t rest;
	int err;

	/* a retry asks for what the completer still misses, which may have shrunk since the
	 * rewind (late responses) */
	if (info->read_counted) {
		pos->psn = info->resp_psn;
		pos->offset = info->resp_off;
	}
	rest = wqe->length - pos->offset;
	pkt.opcode = GPUNIC_OP_READ_REQUEST;
	pkt.psn = pos->psn;
	pkt.ack_req = true;	/* every READ request asks for an answer (roce-wire.md 5.4) */
	pkt.reth_va = wqe->raddr + pos->offset;
	pkt.reth_rkey = wqe->rkey;
	pkt.reth_len = rest;
	err = nic_xmit(qp, &pkt);
	if (err)
		return err;
	info->resp_psn = pos->psn;
	info->resp_off = pos->offset;
	info->resp_seq_start = true;
	if (!info->read_counted) {
		info->read_counted = true;
		qp->req.reads_out++;
	}
	/* a READ consumes one PSN per expected response packet */
	pos->psn = gpunic_psn_add(pos->psn, msg_packets(rest, qp->pmtu));
	pos->offset = wqe->length;
	return 0;
}

static int req_send_data(struct nic_qp *qp)
{
	struct nic_swqe *wqe = &qp->req.wqe;
	struct nic_req_pos *pos = &qp->req.pos;
	struct gpunic_pkt pkt = { 0 };
	uint32_t rest = wqe->length - pos->offset;
	bool first = pos->offset == 0, last = rest <= qp->pmtu;
	int err;

	pkt.paylen = last ? rest : qp->pmtu;
	pkt.payload = req_payload(qp, wqe, pos->offset, pkt.paylen);
	if (!pkt.payload)
		return EFAULT;
	pkt.opcode = req_opcode(qp, wqe, first, last);
	pkt.psn = pos->psn;
	if (first && (wqe->opcode == MLX5_OPCODE_RDMA_WRITE ||
		      wqe->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)) {
		pkt.reth_va = wqe->raddr;
		pkt.reth_rkey = wqe->rkey;
		pkt.reth_len = wqe->length;
	}
	pkt.imm = wqe->imm;
	/* UC never asks for ACKs; RC asks on the last packet and every so often inside long
	 * messages so the window keeps moving (RXE_MAX_PKT_PER_ACK) */
	if (qp_is_rc(qp)) {
		pos->pkts_since_ack_req++;
		if (last || pos->pkts_since_ack_req >= NIC_ACK_REQ_EVERY) {
			pkt.ack_req = true;
			pos->pkts_since_ack_req = 0;
		}
	}
	err = nic_xmit(qp, &pkt);
	if (err)
		return err;
	pos->psn = gpunic_psn_add(pos->psn, 1);
	pos->offset += pkt.paylen;
	return 0;
}

/* A WQE the requester cannot execute: report it once everything before it is complete, then
 * the QP goes to ERR and the rest is flushed: a completion error is fatal to the QP. */
static void req_wqe_error(struct nic_qp *qp, uint8_t syndrome)
{
	struct nic_wqe_info *info = wqe_info(qp, qp->req.pos.ci);

	if (qp->comp.ci != qp->req.pos.ci)
		return;
	info->opcode = qp->req.wqe.opcode;
	info->nbb = qp->req.wqe.nbb;
	info->read_counted = false;
	qp->req.started_ci = qp->req.pos.ci + qp->req.wqe.nbb;
	comp_complete_wqe(qp, syndrome);
	qp_set_error(qp);
}

static void req_start_wqe(struct nic_qp *qp)
{
	struct nic_wqe_info *info = wqe_info(qp, qp->req.pos.ci);
	struct nic_swqe *wqe = &qp->req.wqe;

	/* a WQE sent before (go back N) keeps its PSNs; a new one takes the next ones */
	if (gpunic_psn_cmp(qp->req.pos.psn, qp->req.psn_max) < 0)
		return;
	info->first_psn = qp->req.pos.psn;
	info->npsn = msg_packets(wqe->length, qp->pmtu);
	info->length = wqe->length;
	info->opcode = wqe->opcode;
	info->nbb = wqe->nbb;
	info->signaled = wqe->signaled;
	info->read_counted = false;
	info->resp_rewound = false;
	qp->req.started_ci = qp->req.pos.ci + wqe->nbb;
}

static bool req_window_open(struct nic_qp *qp)
{
	struct nic_wqe_info *info = wqe_info(qp, qp->req.pos.ci);

	if (!qp_is_rc(qp))
		return true;
	if (qp->comp.rnr_wait)
		return false;
	if (psn_diff(qp->req.pos.psn, qp->comp.unacked_psn) >= NIC_RC_WINDOW)
		return false;
	/* no more READs in flight than the peer accepts (max_rd_atomic) */
	if (is_read(qp->req.wqe.opcode) && !info->read_counted &&
	    qp->req.reads_out >= qp->attr.max_rd_atomic)
		return false;
	return true;
}

int req_send(struct nic_qp *qp, int budget)
{
	struct nic_req *req = &qp->req;
	struct nic_req_pos saved;
	int sent = 0, err;
	uint8_t syndrome;

	while (sent < budget && qp->pub.state == GPUNIC_QPS_RTS && req->pos.ci != req->sq_pi) {
		if (!req->wqe_valid) {
			syndrome = req_parse_wqe(qp, req->pos.ci, &req->wqe);
			if (syndrome) {
				req_wqe_error(qp, syndrome);
				break;
			}
			req->wqe_valid = true;
			req_start_wqe(qp);
		}
		if (!req_window_open(qp))
			break;
		save_state(qp, &saved);
		if (is_read(req->wqe.opcode))
			err = req_send_read(qp, wqe_info(qp, req->pos.ci));
		else
			err = req_send_data(qp);
		if (err == EAGAIN) {
			rollback_state(qp, &saved);
			break;
		}
		if (err) {
			/* a region was deregistered under a WQE in flight */
			rollback_state(qp, &saved);
			req->wqe_valid = false;
			req_wqe_error(qp, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
			break;
		}
		sent++;
		if (gpunic_psn_cmp(req->pos.psn, req->psn_max) > 0)
			req->psn_max = req->pos.psn;
		if (qp_is_rc(qp))
			comp_arm_timer(qp);
		if (req->pos.offset < req->wqe.length)
			continue;
		/* message done: the next WQE starts at the next block */
		req->pos.ci += req->wqe.nbb;
		req->pos.offset = 0;
		req->wqe_valid = false;
		req->pos.pkts_since_ack_req = 0;
		/* UC: complete as soon as the last packet is out (roce-wire.md 5.3) */
		if (!qp_is_rc(qp))
			comp_complete_wqe(qp, 0);
	}
	return sent;
}

/* Go back N (rxe req_retry): resend from @psn, re-reading the WQE that holds
 * it from the ring. A READ restarts as a new request for its missing tail. */
bool req_rewind(struct nic_qp *qp, uint32_t psn)
{
	uint16_t ci = qp->comp.ci;

	while (ci != qp->req.started_ci) {
		struct nic_wqe_info *info = wqe_info(qp, ci);
		int32_t d = psn_diff(psn, info->first_psn);

		if (d >= 0 && (uint32_t)d < info->npsn) {
			qp->req.pos.ci = ci;
			qp->req.pos.psn = psn;
			qp->req.pos.offset = (uint32_t)d * qp->pmtu;
			if (qp->req.pos.offset > info->length)
				qp->req.pos.offset = info->length;
			qp->req.pos.pkts_since_ack_req = 0;
			qp->req.wqe_valid = false;
			qp->cnt.retransmits++;
			return true;
		}
		ci += info->nbb;
	}
	return false;
}
