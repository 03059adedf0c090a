// SPDX-License-Identifier: MIT
/*
 * RC atomics and the NOP WQE: the parts of the requester, completer and responder that only
 * they need (req.c, comp.c and resp.c call in here).
 *
 * Atomics (IBA 9.4.5): COMPARE_SWAP and FETCH_ADD on 8 naturally aligned bytes, RC only. A
 * request takes one PSN, asks for an answer, and counts against max_rd_atomic like a READ; the
 * responder executes it once, keeps it with its READs as a responder resource (bounded by
 * max_dest_rd_atomic), and answers with an ATOMIC ACKNOWLEDGE that carries the value the target
 * held before. A duplicate request (its ATOMIC ACK was lost and the requester asked again) is
 * answered from that resource and never executed again.
 *
 * Byte order: every operand is big-endian in the WQE (mlx5_wqe_atomic_seg) and on the wire
 * (AtomicETH, AtomicAckETH), and the codec hands host-order values around. The target is an
 * 8-byte integer in the responder's host byte order, and the original value lands in the
 * requester's buffer in its host byte order, as Linux rxe does and as a ConnectX does in the
 * host-endianness atomic mode its Linux driver selects: a host thread can __atomic_load the
 * counter a peer increments, and reads the fetched value as a plain uint64_t.
 *
 * Execution uses the compiler's __atomic builtins on the target, never a read-modify-write by
 * hand: the operation is indivisible with respect to host threads, other QPs and NICs, and the
 * CPU executor using the same memory. They are sequentially consistent, so the bytes of a WRITE
 * this QP placed before an atomic are visible to whoever observes the atomic's result (a
 * "signalled put": WRITE the data, FETCH_ADD a flag the receiver polls).
 *
 * NOP (MLX5_OPCODE_NOP): consumes its WQE and sends nothing; it takes no PSN and completes, in
 * order, once everything posted before it has (comp.c), with a send CQE if signalled.
 */
#include <errno.h>
#include <string.h>

#include "nic_loc.h"

/* ---------------------------------------------------------------- requester */

int req_send_atomic(struct nic_qp *qp, struct nic_wqe_info *info)
{
	const struct nic_swqe *wqe = &qp->req.wqe;
	struct nic_req_pos *pos = &qp->req.pos;
	struct gpunic_pkt pkt = { 0 };
	bool cas = wqe->opcode == MLX5_OPCODE_ATOMIC_CS;
	int err;

	/* no more READs and atomics outstanding than the responder has resources for
	 * (max_rd_atomic, the peer's max_dest_rd_atomic); a retry of one counted goes */
	if (!info->read_counted && qp->req.reads_out >= qp->attr.max_rd_atomic)
		return EAGAIN;
	pkt.opcode = GPUNIC_TRANSPORT_RC | (cas ? GPUNIC_OP_COMPARE_SWAP : GPUNIC_OP_FETCH_ADD);
	pkt.psn = pos->psn;
	pkt.ack_req = true;	/* every atomic asks for its ATOMIC ACKNOWLEDGE */
	pkt.atm_va = wqe->raddr;
	pkt.atm_rkey = wqe->rkey;
	pkt.atm_swap_add = wqe->swap_add;
	/* FETCH_ADD's compare field is unused; rdma-core's mlx5 provider does not even write it */
	pkt.atm_compare = cas ? wqe->compare : 0;
	err = nic_xmit(qp, &pkt);
	if (err)
		return err;
	info->resp_psn = pos->psn;
	info->resp_off = 0;
	info->resp_seq_start = true;
	if (!info->read_counted) {
		info->read_counted = true;
		qp->req.reads_out++;
	}
	pos->psn = gpunic_psn_add(pos->psn, 1);
	pos->offset = wqe->length;
	return 0;
}

int req_send_nop(struct nic_qp *qp, struct nic_wqe_info *info)
{
	/* no PSN: the WQE after it starts where the NOP stands, and no ACK ever covers it; the
	 * completer retires it once the requester has passed it (comp.c, complete_nops) */
	info->npsn = 0;
	qp->req.pos.offset = 0;
	return 0;
}

/* ---------------------------------------------------------------- completer */

uint8_t atomic_place_result(struct nic_qp *qp, uint64_t orig)
{
	uint8_t bytes[sizeof(orig)];

	if (!qp->comp.wqe_valid) {
		if (req_parse_wqe(qp, qp->comp.ci, &qp->comp.wqe))
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		qp->comp.wqe_valid = true;
	}
	/* host byte order: the buffer reads as the uint64_t the target held */
	memcpy(bytes, &orig, sizeof(bytes));
	if (!mr_scatter(qp->nic, qp->pd, qp->comp.wqe.sge, qp->comp.wqe.nsge, 0, bytes,
			sizeof(bytes)))
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	return 0;
}

/* ---------------------------------------------------------------- responder */

uint64_t atomic_execute(uint64_t *target, const struct gpunic_pkt *pkt)
{
	uint64_t seen = pkt->atm_compare;

	if ((pkt->opcode & GPUNIC_OP_MASK) == GPUNIC_OP_COMPARE_SWAP) {
		/* succeeded: the target held the compare value; failed: the builtin stores what
		 * it held into @seen. Either way @seen is the original. */
		__atomic_compare_exchange_n(target, &seen, pkt->atm_swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return seen;
	}
	/* unsigned: a sum past 2^64 wraps, as IBA's 64-bit add does */
	return __atomic_fetch_add(target, pkt->atm_swap_add, __ATOMIC_SEQ_CST);
}

void atomic_res_save(struct nic_qp *qp, const struct gpunic_pkt *pkt, uint64_t orig)
{
	struct nic_resp *r = &qp->resp;
	struct nic_rd_res *res = &r->res[r->res_next++ % NIC_MAX_RD_ATOMIC];

	memset(res, 0, sizeof(*res));
	res->valid = true;
	res->psn = pkt->psn;
	res->npsn = 1;
	res->va = pkt->atm_va;
	res->rkey = pkt->atm_rkey;
	res->len = sizeof(uint64_t);
	res->atomic = true;
	res->atomic_opcode = pkt->opcode;
	res->atomic_swap_add = pkt->atm_swap_add;
	res->atomic_compare = pkt->atm_compare;
	res->atomic_orig = orig;
}

const struct nic_rd_res *atomic_res_find(const struct nic_qp *qp, const struct gpunic_pkt *pkt)
{
	for (uint32_t i = 0; i < NIC_MAX_RD_ATOMIC; i++) {
		const struct nic_rd_res *res = &qp->resp.res[i];

		/* the same request again: anything else under that PSN is not a duplicate of it */
		if (res->valid && res->atomic && res->psn == pkt->psn &&
		    res->atomic_opcode == pkt->opcode && res->va == pkt->atm_va &&
		    res->rkey == pkt->atm_rkey && res->atomic_swap_add == pkt->atm_swap_add &&
		    res->atomic_compare == pkt->atm_compare)
			return res;
	}
	return NULL;
}
