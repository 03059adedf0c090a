// SPDX-License-Identifier: MIT
/*
 * The requester (rxe_req.c's role): notices doorbells, copies send WQEs out of the mlx5 ring,
 * validates them, segments each message by path MTU and transmits the packets. RC keeps what
 * it sent in the WQE ring and its info slots, so the completer can go back N (req_rewind).
 */
#include <errno.h>
#include <string.h>

#include "gpunic/gpunic_dev.h"
#include "nic_loc.h"
#include "xmit.h"

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
 * The producer a doorbell value announces. The value is a ctrl segment's first 8 bytes, under
 * one of two conventions mlx5 device code uses (docs/HARDWARE.md):
 *  - libmlx5: the last posted WQE's own ctrl bytes: its index and its size (DS), so the WQEs
 *    end at index + size in basic blocks;
 *  - producer index: the index field holds the producer itself, opcode and DS zero (a WQE's
 *    DS is never zero, which tells the two apart).
 * Either way qpn_ds carries the QPN. Anything else is not a doorbell for this QP: ignored.
 * Return: true with *pi set for a well-formed value.
 */
static bool db_hint(const struct nic_qp *qp, uint64_t db, uint16_t *pi)
{
	uint8_t b[8];
	unsigned ds, idx;

	memcpy(b, &db, sizeof(b));
	if (((uint32_t)b[4] << 16 | (uint32_t)b[5] << 8 | b[6]) != qp->pub.qp_num)
		return false;
	idx = (unsigned)b[1] << 8 | b[2];
	ds = b[7] & 0x3f;
	if (!ds) {
		if (b[3] != 0)
			return false;
		*pi = (uint16_t)idx;
		return true;
	}
	*pi = (uint16_t)(idx + (ds * 16 + 63) / 64);
	return true;
}

/* req_doorbell's work when the doorbell word changed to @db (nic_loc.h). */
void req_doorbell_rung(struct nic_qp *qp, uint64_t db)
{
	uint16_t hint;

	qp->req.last_db = db;
	/* the proxy stores a bare counter there, not a ctrl segment */
	if (qp->mode != GPUNIC_HANDLER_CPU_PROXY && db_hint(qp, db, &hint))
		req_producer_advance(qp, hint);
	req_producer_advance(qp, (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_SND_DBR]));
}

/* CPU_PROXY: the data path only publishes its producer counter in the mailbox; the proxy
 * forwards it into dbrec and rings the doorbell word on its behalf. It runs inside the engine
 * for now and touches nothing but those three words, so it can move to its own thread. The
 * mailbox is 8 bytes and the counter its low word: a 32-bit store of it and a 64-bit atomic
 * max of a 64-bit counter (DOCA's proxy word) both land there. */
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

/*
 * An atomic WQE as rdma-core's mlx5 provider builds it: ctrl, mlx5_wqe_raddr_seg (the 8-byte
 * target), mlx5_wqe_atomic_seg (swap_add, compare: big-endian, as mlx5dv.h declares them), then
 * data segments naming the local buffer that receives the original value: exactly 8 bytes, with
 * local write, since the completer writes into it. Atomics are RC operations (IBA 9.4.5), and
 * count against max_rd_atomic: a QP that may have none outstanding cannot post one.
 */
static uint8_t parse_atomic(struct nic_qp *qp, struct nic_swqe *wqe, const uint8_t *raw,
			    uint32_t off, uint32_t end)
{
	struct mlx5_wqe_raddr_seg r;
	struct mlx5_wqe_atomic_seg a;
	enum gpunic_drop_reason why;
	uint64_t total = 0;

	if (!qp_is_rc(qp) || !qp->attr.max_rd_atomic || end < off + sizeof(r) + sizeof(a))
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	memcpy(&r, raw + off, sizeof(r));
	memcpy(&a, raw + off + sizeof(r), sizeof(a));
	wqe->raddr = be64toh(r.raddr);
	wqe->rkey = be32toh(r.rkey);
	wqe->swap_add = be64toh(a.swap_add);
	wqe->compare = be64toh(a.compare);
	for (off += sizeof(r) + sizeof(a); off + sizeof(struct mlx5_wqe_data_seg) <= end;
	     off += WQE_DS_BYTES) {
		struct mlx5_wqe_data_seg d;
		struct nic_sge *sge;

		memcpy(&d, raw + off, sizeof(d));
		if (be32toh(d.byte_count) & MLX5_INLINE_SEG)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		if (be32toh(d.lkey) == MLX5_INVALID_LKEY)
			break;
		if (!d.byte_count)
			continue;
		if (wqe->nsge == qp->max_send_sge)
			return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		sge = &wqe->sge[wqe->nsge++];
		sge->addr = be64toh(d.addr);
		sge->len = be32toh(d.byte_count);
		sge->lkey = be32toh(d.lkey);
		if (!mr_lookup_local(qp->nic, qp->pd, sge->lkey, sge->addr, sge->len,
				     GPUNIC_ACCESS_LOCAL_WRITE, &why))
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		total += sge->len;
	}
	if (total != sizeof(uint64_t))
		return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	wqe->length = sizeof(uint64_t);
	return 0;
}

/* req_ring_first's check of a sealed WQE whose first block is in @buf, out of line: the common
 * unsealed WQE then costs no saved registers. */
static __attribute__((noinline)) uint32_t req_ring_sealed(struct nic_qp *qp, uint16_t ci,
							    uint8_t *buf)
{
	uint32_t w[32], nbb;

	memcpy(w, buf, 2 * sizeof(w[0]));
	nbb = gpunic_dev_ctrl_ds(w) > 4 ? 2 : 1;
	if (nbb > 1)
		copy_wqe(qp, (uint16_t)(ci + 1), buf + MLX5_SEND_WQE_BB, 1);
	memcpy(w, buf, nbb * MLX5_SEND_WQE_BB);
	if (!gpunic_dev_wqe_seal_ok_bbs(w, nbb)) {
		qp->cnt.wqes_torn++;
		return 0;
	}
	return nbb;
}

/*
 * The first block of the ring's WQE at @ci into @buf, and its second too when the WQE is a
 * sealed one of two blocks (the seal covers both), checked: its ctrl segment must carry index
 * @ci (else the slot still holds an older lap's WQE, or the new one's ctrl has not landed),
 * and a sealed WQE (BlueFlame, gpunic_dev.h) must also pass its seal, else part of it has not
 * landed. Either way it is not posted yet: the caller reads it again later.
 * Return: the blocks in @buf (1 or 2), or 0 when the WQE is not whole there yet.
 */
static uint32_t req_ring_first(struct nic_qp *qp, uint16_t ci, uint8_t *buf)
{
	uint32_t w[3];

	copy_wqe(qp, ci, buf, 1);
	/* Read the ctrl words first; the whole block is read only when it claims a seal to
	 * check. */
	memcpy(w, buf, sizeof(w));
	if (!ctrl_names(qp, ci, w[0], w[1]))
		return 0;
	if (!gpunic_dev_wqe_claims_seal(w))
		return 1;
	return req_ring_sealed(qp, ci, buf);
}

/*
 * Parse the WQE at @ci whose first @held blocks, checked, are at @first: the caller's own copy,
 * parsed where it lies when it holds the whole WQE. It came from the WQE's BlueFlame lines when
 * @from_bf (and then holds all of it), else from the ring, whose producer must then cover the
 * whole WQE. Return: 0, an MLX5 syndrome, or REQ_WQE_NOT_READY.
 */
static uint8_t parse_wqe(struct nic_qp *qp, uint16_t ci, struct nic_swqe *wqe,
			 const uint8_t *first, uint32_t held, bool from_bf)
{
	uint8_t copy[NIC_MAX_WQE_BB * MLX5_SEND_WQE_BB];
	const uint8_t *raw = first;
	const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)raw;
	uint16_t avail = (uint16_t)(qp->req.sq_pi - ci);
	uint32_t ds, off = sizeof(*ctrl);
	bool rdma;

	ds = be32toh(ctrl->qpn_ds) & 0x3F;
	memset(wqe, 0, offsetof(struct nic_swqe, sge));
	wqe->idx = ci;
	wqe->opcode = be32toh(ctrl->opmod_idx_opcode) & 0xFF;
	wqe->nbb = (uint8_t)((ds * WQE_DS_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);
	if (!wqe->nbb) {
		wqe->nbb = 1;
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	/* a WQE longer than what the producer covers: the rest is not posted yet */
	if (!from_bf && wqe->nbb > avail)
		return REQ_WQE_NOT_READY;
	if (wqe->nbb > held) {
		/* the whole WQE from the ring (a BlueFlame copy holds all of its WQE) */
		if (from_bf)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		copy_wqe(qp, ci, copy, wqe->nbb);
		raw = copy;
		ctrl = (const void *)raw;
	}
	wqe->signaled = ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE;
	wqe->fence = ctrl->fm_ce_se & MLX5_WQE_CTRL_FENCE;
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
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
		return parse_atomic(qp, wqe, raw, off, ds * WQE_DS_BYTES);
	case MLX5_OPCODE_NOP:
		return 0;	/* nothing to send: whatever follows the ctrl segment is ignored */
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

uint8_t req_parse_wqe(struct nic_qp *qp, uint16_t ci, struct nic_swqe *wqe)
{
	uint8_t first[2 * MLX5_SEND_WQE_BB];
	uint32_t held = req_ring_first(qp, ci, first);

	if (!held)
		return REQ_WQE_NOT_READY;
	return parse_wqe(qp, ci, wqe, first, held, false);
}

/* The units a BlueFlame copy whose first line is @line holds, when its ctrl names the WQE
 * at pos.ci: 0 when it names another, or is longer than a copy can be (the ring serves). */
static uint32_t req_bf_ds(const struct nic_qp *qp, const uint8_t *line)
{
	uint32_t w[2], ds;

	memcpy(w, line, sizeof(w));
	if (!ctrl_names(qp, qp->req.pos.ci, w[0], w[1]))
		return 0;
	ds = gpunic_dev_ctrl_ds(w);
	return ds <= GPUNIC_DEV_BF_MAX_DS ? ds : 0;
}

/* The second line of a two-block copy: the line after pos.ci's (the page wraps). */
static const uint8_t *req_bf_second(const struct nic_qp *qp)
{
	return qp->bf + (size_t)((qp->req.pos.ci + 1) & (GPUNIC_DEV_BF_LINES - 1)) *
				MLX5_SEND_WQE_BB;
}

/*
 * GPU_BF: the WQE at pos.ci, if its sealed copy waits in its BlueFlame lines (one, or two for
 * a WQE of two blocks), each loaded in one access into @line (128 bytes). A line holding another
 * index is another lap's (or nothing yet); a copy with the right index whose seal fails was
 * read torn (either line), and is read again on the next poll. Return: the blocks the copy
 * holds, 0 for none.
 */
static uint32_t req_bf_line(struct nic_qp *qp, uint8_t *line)
{
	const uint8_t *src = req_bf_next(qp);
	uint32_t w[32], ds, nbb;

	if (!qp->bf_sealed) {
		/* gpunic's CPU data path stores the ctrl chunk last and says so in it
		 * (GPUNIC_DEV_BF_ORDERED): read it first, the rest after it. A copy in address
		 * order (libmlx5's) proves nothing that way: the ring, up to the record, serves. */
		uint64_t c0 = __atomic_load_n((const uint64_t *)src, __ATOMIC_ACQUIRE);
		uint32_t w012[3];

		memcpy(w012, &c0, 8);
		if (!ctrl_names(qp, qp->req.pos.ci, w012[0], w012[1]))
			return 0;
		memcpy(&w012[2], src + 8, 4);
		if (gpunic_dev_wqe_seal_field(w012) != GPUNIC_DEV_BF_ORDERED)
			return 0;
		/* the CPU data path copies WQEs of one block only (gpunic_dev_wqe_uses_bf) */
		if (gpunic_dev_ctrl_ds(w012) > 4)
			return 0;
		memcpy(line, &c0, sizeof(c0));
		memcpy(line + 8, src + 8, MLX5_SEND_WQE_BB - 8);
		/* the writer clears the ctrl chunk before it touches the body, so a body that
		 * changed under the copy shows as a ctrl chunk that changed (a seqlock) */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n((const uint64_t *)src, __ATOMIC_RELAXED) != c0)
			return 0;
		return 1;
	}
	gpunic_line_load64(line, src);
	ds = req_bf_ds(qp, line);
	if (!ds)
		return 0;
	nbb = ds > 4 ? 2 : 1;
	if (nbb > 1)
		gpunic_line_load64(line + MLX5_SEND_WQE_BB, req_bf_second(qp));
	memcpy(w, line, nbb * MLX5_SEND_WQE_BB);
	/* A copy its writer did not seal (third-party code) cannot be checked for tearing: the
	 * WQE is taken from the ring instead. */
	if (!gpunic_dev_wqe_claims_seal(w))
		return 0;
	if (!gpunic_dev_wqe_seal_ok_bbs(w, nbb)) {
		qp->cnt.bf_torn++;
		return 0;
	}
	return nbb;
}

/*
 * The first block of the next WQE to start, at pos.ci, read once into @line (128 bytes) and
 * checked, with its second block where that came too (*held): from its BlueFlame lines when a
 * copy waits there (*from_bf), else from the ring up to the producer. Return: @line, or NULL
 * when nothing is posted there yet.
 */
static uint8_t *req_first_block(struct nic_qp *qp, uint8_t *line, uint32_t *held, bool *from_bf)
{
	struct nic_req *req = &qp->req;

	*held = qp->mode == GPUNIC_HANDLER_GPU_BF ? req_bf_line(qp, line) : 0;
	*from_bf = *held != 0;
	if (*from_bf)
		return line;
	if (req->pos.ci == req->sq_pi)
		return NULL;
	*held = req_ring_first(qp, req->pos.ci, line);
	return *held ? line : NULL;
}

/* A WQE taken from its BlueFlame line counts as posted: the record follows later. */
static void req_bf_taken(struct nic_qp *qp, uint8_t nbb)
{
	qp->cnt.bf_wqes++;
	req_producer_advance(qp, (uint16_t)(qp->req.pos.ci + nbb));
}

/* The WQE whose first block is @first into req->wqe. Return: 0 (req->wqe holds it),
 * REQ_WQE_NOT_READY (not all of it posted yet) or an MLX5 syndrome. */
static uint8_t req_take_wqe(struct nic_qp *qp, const uint8_t *first, uint32_t held,
			    bool from_bf)
{
	struct nic_req *req = &qp->req;
	uint8_t syndrome;

	syndrome = parse_wqe(qp, req->pos.ci, &req->wqe, first, held, from_bf);
	if (syndrome != REQ_WQE_NOT_READY && from_bf)
		req_bf_taken(qp, req->wqe.nbb);
	return syndrome;
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

/* First/middle/last/only offsets from the opcode table's order (docs/WIRE.md 4). */
static uint8_t req_opcode(const struct nic_qp *qp, uint8_t opcode, bool first, bool last)
{
	bool write = opcode == MLX5_OPCODE_RDMA_WRITE || opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
	bool imm = opcode == MLX5_OPCODE_SEND_IMM || opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
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
	pkt.ack_req = true;	/* every READ request asks for an answer (docs/WIRE.md 5.3) */
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
	/* not cleared: the encoder reads only what is set here (SEND and WRITE opcodes carry
	 * no header beyond RETH and ImmDt), and clearing the whole struct cost more than it */
	struct gpunic_pkt pkt;
	uint32_t rest = wqe->length - pos->offset;
	bool first = pos->offset == 0, last = rest <= qp->pmtu;
	int err;

	pkt.paylen = last ? rest : qp->pmtu;
	pkt.payload = req_payload(qp, wqe, pos->offset, pkt.paylen);
	if (!pkt.payload)
		return EFAULT;
	pkt.opcode = req_opcode(qp, wqe->opcode, first, last);
	pkt.psn = pos->psn;
	pkt.se = false;
	pkt.ack_req = false;
	pkt.reth_va = 0;
	pkt.reth_rkey = 0;
	pkt.reth_len = 0;
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
	/* it took no PSN: the completer must not move pos.psn by an older lap's values (a UC
	 * slot the quick path never filled) */
	info->first_psn = qp->req.pos.psn;
	info->npsn = 0;
	qp->req.started_ci = qp->req.pos.ci + qp->req.wqe.nbb;
	comp_complete_wqe(qp, syndrome);
	qp_set_error(qp);
}

/* What the requester and completer keep of a WQE whose first packet goes out for the first
 * time (wqe_info). */
static void req_note_start(struct nic_qp *qp, uint32_t length, uint32_t npsn, uint8_t opcode,
			   uint8_t nbb, bool signaled)
{
	struct nic_wqe_info *info = wqe_info(qp, qp->req.pos.ci);

	info->first_psn = qp->req.pos.psn;
	info->npsn = npsn;
	info->length = length;
	info->opcode = opcode;
	info->nbb = nbb;
	info->signaled = signaled;
	info->read_counted = false;
	info->resp_rewound = false;
	qp->req.started_ci = qp->req.pos.ci + nbb;
}

static void req_start_wqe(struct nic_qp *qp)
{
	struct nic_swqe *wqe = &qp->req.wqe;

	/* a WQE sent before (go back N) keeps its PSNs; a new one takes the next ones */
	if (gpunic_psn_cmp(qp->req.pos.psn, qp->req.psn_max) < 0)
		return;
	req_note_start(qp, wqe->length, msg_packets(wqe->length, qp->pmtu), wqe->opcode, wqe->nbb,
		       wqe->signaled);
}

/* May the WQE at pos.ci (MLX5 @opcode, fenced or not) send its next packet now? */
static bool window_open(struct nic_qp *qp, bool fence, uint8_t opcode)
{
	if (!qp_is_rc(qp))
		return true;
	/* a fenced WQE starts only once every READ and atomic before it has completed (its
	 * data may be what this WQE sends); a retry of it has started already */
	if (fence && qp->req.pos.offset == 0 && qp->req.reads_out &&
	    gpunic_psn_cmp(qp->req.pos.psn, qp->req.psn_max) >= 0)
		return false;
	if (qp->comp.rnr_wait)
		return false;
	if (psn_diff(qp->req.pos.psn, qp->comp.unacked_psn) >= NIC_RC_WINDOW)
		return false;
	/* no more READs in flight than the peer accepts (max_rd_atomic) */
	if (is_read(opcode) && !wqe_info(qp, qp->req.pos.ci)->read_counted &&
	    qp->req.reads_out >= qp->attr.max_rd_atomic)
		return false;
	return true;
}

static bool req_window_open(struct nic_qp *qp)
{
	return window_open(qp, qp->req.wqe.fence, qp->req.wqe.opcode);
}

/* A packet went out at pos.psn - 1: the highest PSN sent, and RC's retry timer. */
static void req_packet_sent(struct nic_qp *qp)
{
	struct nic_req *req = &qp->req;

	if (gpunic_psn_cmp(req->pos.psn, req->psn_max) > 0)
		req->psn_max = req->pos.psn;
	if (qp_is_rc(qp))
		comp_arm_timer(qp);
}

/* The last packet of the WQE at pos.ci (@nbb blocks) is out: the next WQE starts at the next
 * block, and UC completes this one as soon as that packet is out (docs/WIRE.md 5.2). */
static void req_message_sent(struct nic_qp *qp, uint8_t nbb)
{
	struct nic_req *req = &qp->req;

	req->pos.ci += nbb;
	req->pos.offset = 0;
	req->wqe_valid = false;
	req->pos.pkts_since_ack_req = 0;
	if (!qp_is_rc(qp))
		comp_complete_wqe(qp, 0);
}

/*
 * req_packet_sent and req_message_sent for a UC WQE whose one packet req_send_quick sent: UC
 * completes it now (docs/WIRE.md 5.2), and it is the completer's head (req_send_quick checks),
 * so the completion takes its fields from the caller and its info slot is never written: only
 * RC's go back N and the general path read one.
 */
static void req_uc_sent(struct nic_qp *qp, uint8_t opcode, uint32_t len, uint8_t nbb,
			bool signaled)
{
	struct nic_req *req = &qp->req;

	req->pos.psn = gpunic_psn_add(req->pos.psn, 1);
	req->psn_max = req->pos.psn;
	req->pos.ci += nbb;
	req->started_ci = req->pos.ci;
	comp_complete_uc_sent(qp, opcode, len, nbb, signaled);
}

enum req_quick {
	REQ_QUICK_NO,                   /* not the common case; nothing was changed */
	REQ_QUICK_SENT,                 /* sent and done, in the state the general path
					 * leaves */
	REQ_QUICK_BUSY,                 /* no room on the link: the WQE stays in hand, as the
					 * general path leaves it in that case */
};

/* The quick path's MLX5 opcodes are consecutive (mlx5dv.h), so one compare tells whether a
 * WQE is one of them, and the opcode of its one packet is then looked up. */
_Static_assert(MLX5_OPCODE_RDMA_WRITE_IMM == MLX5_OPCODE_RDMA_WRITE + 1 &&
		       MLX5_OPCODE_SEND == MLX5_OPCODE_RDMA_WRITE + 2 &&
		       MLX5_OPCODE_SEND_IMM == MLX5_OPCODE_RDMA_WRITE + 3,
	       "WRITE, WRITE_IMM, SEND, SEND_IMM in a row");

/* A SEND or RDMA WRITE, with or without immediate? */
static inline bool req_quick_opcode(uint8_t opcode)
{
	return (uint8_t)(opcode - MLX5_OPCODE_RDMA_WRITE) <= 3;
}

/* req_opcode(qp, @opcode, true, true) for a req_quick_opcode: its ONLY packet's opcode. */
static uint8_t req_only_opcode(const struct nic_qp *qp, uint8_t opcode)
{
	static const uint8_t only[4] = {
		[MLX5_OPCODE_RDMA_WRITE - MLX5_OPCODE_RDMA_WRITE] = GPUNIC_OP_WRITE_ONLY,
		[MLX5_OPCODE_RDMA_WRITE_IMM - MLX5_OPCODE_RDMA_WRITE] = GPUNIC_OP_WRITE_ONLY_IMM,
		[MLX5_OPCODE_SEND - MLX5_OPCODE_RDMA_WRITE] = GPUNIC_OP_SEND_ONLY,
		[MLX5_OPCODE_SEND_IMM - MLX5_OPCODE_RDMA_WRITE] = GPUNIC_OP_SEND_ONLY_IMM,
	};

	return only[opcode - MLX5_OPCODE_RDMA_WRITE] |
	       (qp_is_rc(qp) ? GPUNIC_TRANSPORT_RC : GPUNIC_TRANSPORT_UC);
}

/* Blocks of the WQEs the quick path takes: inline data of up to 44 bytes (SEND) or 28 (WRITE)
 * fits one, and two hold up to 108 or 92 bytes, a small message the WRITE headers pushed over. */
#define REQ_QUICK_MAX_BB 2u

/*
 * The common case whole (tests/hotpath): a SEND or RDMA WRITE of one or two blocks, with or
 * without immediate, whose inline data fits one packet, going out for the first time through an
 * open window. Its packet is described straight from @wqe (the checked first @held blocks, our
 * own copy, with room for the second one behind it), with no trip through req->wqe; whatever
 * parse_wqe might refuse goes the general way.
 */
static enum req_quick req_send_quick(struct nic_qp *qp, uint8_t *wqe, uint32_t held, bool from_bf)
{
	const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)wqe;
	const struct mlx5_wqe_raddr_seg *r = (const void *)(wqe + sizeof(*ctrl));
	const struct mlx5_wqe_inl_data_seg *inl;
	struct nic_req *req = &qp->req;
	uint8_t opcode = be32toh(ctrl->opmod_idx_opcode) & 0xFF;
	uint32_t end = (be32toh(ctrl->qpn_ds) & 0x3F) * WQE_DS_BYTES, off = sizeof(*ctrl), len;
	uint8_t nbb = end > MLX5_SEND_WQE_BB ? 2 : 1;
	bool signaled = ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE, write;
	struct gpunic_pkt pkt;

	if (!req_quick_opcode(opcode))
		return REQ_QUICK_NO;
	write = opcode <= MLX5_OPCODE_RDMA_WRITE_IMM;
	if (write)
		off += sizeof(*r);
	/* a BlueFlame copy holds its whole WQE; else the ring must cover all of it */
	if (end > REQ_QUICK_MAX_BB * MLX5_SEND_WQE_BB ||
	    off + sizeof(struct mlx5_wqe_data_seg) > end ||
	    (nbb > held && (from_bf || nbb > (uint16_t)(req->sq_pi - req->pos.ci))))
		return REQ_QUICK_NO;
	inl = (const void *)(wqe + off);
	len = be32toh(inl->byte_count);
	if (!(len & MLX5_INLINE_SEG))
		return REQ_QUICK_NO;
	len &= ~(uint32_t)MLX5_INLINE_SEG;
	if (len > qp->max_inline || len > end - off - sizeof(*inl) || len > qp->pmtu)
		return REQ_QUICK_NO;
	if (req->pos.offset || gpunic_psn_cmp(req->pos.psn, req->psn_max) < 0 ||
	    (!qp_is_rc(qp) && qp->comp.ci != req->pos.ci) ||
	    !window_open(qp, ctrl->fm_ce_se & MLX5_WQE_CTRL_FENCE, opcode))
		return REQ_QUICK_NO;
	if (nbb > held)
		copy_wqe(qp, req->pos.ci + 1, wqe + MLX5_SEND_WQE_BB, 1);

	/* req_send_data's packet for a message of one packet */
	pkt.opcode = req_only_opcode(qp, opcode);
	pkt.paylen = len;
	pkt.payload = len ? (const uint8_t *)(inl + 1) : qp->nic->gather;
	pkt.psn = req->pos.psn;
	pkt.se = false;
	pkt.ack_req = qp_is_rc(qp);
	pkt.reth_va = write ? be64toh(r->raddr) : 0;
	pkt.reth_rkey = write ? be32toh(r->rkey) : 0;
	pkt.reth_len = write ? len : 0;
	pkt.imm = be32toh(ctrl->imm);

	if (from_bf)
		req_bf_taken(qp, nbb);
	if (nic_xmit_data(qp, &pkt) == EAGAIN) {
		req_note_start(qp, len, 1, opcode, nbb, signaled);
		parse_wqe(qp, req->pos.ci, &req->wqe, wqe, nbb, from_bf);
		req->wqe_valid = true;
		return REQ_QUICK_BUSY;
	}
	if (!qp_is_rc(qp)) {
		req_uc_sent(qp, opcode, len, nbb, signaled);
		return REQ_QUICK_SENT;
	}
	req_note_start(qp, len, 1, opcode, nbb, signaled);
	req->pos.psn = gpunic_psn_add(req->pos.psn, 1);
	req_packet_sent(qp);
	req_message_sent(qp, nbb);
	return REQ_QUICK_SENT;
}

int req_send_wqes(struct nic_qp *qp, int budget)
{
	struct nic_req *req = &qp->req;
	uint8_t line[REQ_QUICK_MAX_BB * MLX5_SEND_WQE_BB] __attribute__((aligned(16)));
	struct nic_req_pos saved;
	uint8_t *first;
	enum req_quick quick;
	int sent = 0, err;
	uint8_t syndrome;
	uint32_t held;
	bool from_bf;

	while (sent < budget && qp->pub.state == GPUNIC_QPS_RTS) {
		if (!req->wqe_valid) {
			first = req_first_block(qp, line, &held, &from_bf);
			if (!first)
				break;
			hop_mark(HOP_WQE);
			quick = req_send_quick(qp, first, held, from_bf);
			if (quick == REQ_QUICK_BUSY)
				break;
			if (quick == REQ_QUICK_SENT) {
				sent++;
				continue;
			}
			syndrome = req_take_wqe(qp, first, held, from_bf);
			if (syndrome == REQ_WQE_NOT_READY)
				break;
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
		else if (nic_opcode_is_atomic(req->wqe.opcode))
			err = req_send_atomic(qp, wqe_info(qp, req->pos.ci));
		else if (req->wqe.opcode == MLX5_OPCODE_NOP)
			err = req_send_nop(qp, wqe_info(qp, req->pos.ci));
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
		req_packet_sent(qp);
		if (req->pos.offset < req->wqe.length)
			continue;
		req_message_sent(qp, req->wqe.nbb);
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
