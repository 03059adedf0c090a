// SPDX-License-Identifier: MIT
/*
 * The responder (rxe_resp.c's role): executes incoming requests. It is a state machine, one
 * function per check or action in the spec's order: PSN, opcode sequence, operation allowed,
 * resources (receive WQE, READ slots, CQ room), length, R_Key, then execute, complete and
 * acknowledge. Error states are mapped to their transport's answer in one place (resp_error):
 * RC answers with a NAK (and the error state for class C/D errors), UC drops silently.
 *
 * RC responses (ACK, NAK, READ data, ATOMIC ACKNOWLEDGE) go through a small in-order queue
 * drained by resp_xmit, so an ACK can never overtake the READ or atomic responses it would
 * implicitly acknowledge. Atomics execute on the target with the compiler's atomic builtins
 * and are remembered with the READs (responder resources) so that a duplicate is answered
 * from the saved result, never executed twice (atomic.c).
 */
#include <errno.h>
#include <string.h>

#include "gpunic/log.h"
#include "nic_loc.h"

#define MAX_MSG_BYTES 0x80000000u
/* A step of the hot request's way, inlined where it is taken: fetch_rwqe in the one-packet way
 * (one_packet) and the machine, execute and complete in the machine (tests/hotpath). */
#define RESP_STEP static inline __attribute__((always_inline)) enum resp_states

enum resp_states {
	RESPST_CHK_PSN,
	RESPST_CHK_OP_SEQ,
	RESPST_CHK_OP_VALID,
	RESPST_CHK_RESOURCE,
	RESPST_CHK_LENGTH,
	RESPST_CHK_RKEY,
	RESPST_EXECUTE,
	RESPST_READ,
	RESPST_ATOMIC,
	RESPST_COMPLETE,
	RESPST_ACKNOWLEDGE,
	RESPST_DUPLICATE,
	RESPST_DONE,
	/* errors, each with its answer in resp_error() */
	RESPST_ERR_PSN_GAP,
	RESPST_ERR_OP_SEQ,
	RESPST_ERR_LENGTH,
	RESPST_ERR_ACCESS,
	RESPST_ERR_RNR,
	RESPST_ERR_RECV_TOO_SMALL,
	RESPST_ERR_LKEY,
	RESPST_ERR_CQ_OVERFLOW,
	RESPST_ERR_RD_RESOURCE,
	RESPST_ERR_MISALIGNED,
	RESPST_DROP,
};

static const char *const resp_state_names[] = {
	[RESPST_CHK_PSN] = "CHK_PSN",
	[RESPST_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[RESPST_CHK_OP_VALID] = "CHK_OP_VALID",
	[RESPST_CHK_RESOURCE] = "CHK_RESOURCE",
	[RESPST_CHK_LENGTH] = "CHK_LENGTH",
	[RESPST_CHK_RKEY] = "CHK_RKEY",
	[RESPST_EXECUTE] = "EXECUTE",
	[RESPST_READ] = "READ",
	[RESPST_ATOMIC] = "ATOMIC",
	[RESPST_COMPLETE] = "COMPLETE",
	[RESPST_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESPST_DUPLICATE] = "DUPLICATE",
	[RESPST_DONE] = "DONE",
	[RESPST_ERR_PSN_GAP] = "ERR_PSN_GAP",
	[RESPST_ERR_OP_SEQ] = "ERR_OP_SEQ",
	[RESPST_ERR_LENGTH] = "ERR_LENGTH",
	[RESPST_ERR_ACCESS] = "ERR_ACCESS",
	[RESPST_ERR_RNR] = "ERR_RNR",
	[RESPST_ERR_RECV_TOO_SMALL] = "ERR_RECV_TOO_SMALL",
	[RESPST_ERR_LKEY] = "ERR_LKEY",
	[RESPST_ERR_CQ_OVERFLOW] = "ERR_CQ_OVERFLOW",
	[RESPST_ERR_RD_RESOURCE] = "ERR_RD_RESOURCE",
	[RESPST_ERR_MISALIGNED] = "ERR_MISALIGNED",
	[RESPST_DROP] = "DROP",
};

struct resp_ctx {
	const struct gpunic_pkt *pkt;
	enum gpunic_drop_reason why;
	uint8_t *dst;           /* WRITE: where this packet's payload goes; atomic: the target */
	bool scatter;           /* SEND: payload goes into the CQE instead */
};

static inline bool is_first(uint32_t mask)
{
	return (mask & GPUNIC_MASK_FIRST) && !(mask & GPUNIC_MASK_LAST);
}

static inline bool is_only(uint32_t mask)
{
	return (mask & GPUNIC_MASK_ONLY) == GPUNIC_MASK_ONLY;
}

static inline bool is_last(uint32_t mask)
{
	return (mask & GPUNIC_MASK_LAST) && !(mask & GPUNIC_MASK_FIRST);
}

static uint32_t msg_packets(uint32_t len, uint32_t pmtu)
{
	return len ? (len + pmtu - 1) / pmtu : 1;
}

void resp_reset(struct nic_qp *qp)
{
	memset(&qp->resp, 0, sizeof(qp->resp));
}

/* ---------------------------------------------------------------- response queue */

static uint32_t rspq_used(const struct nic_resp *r)
{
	return r->q_tail - r->q_head;
}

/*
 * Responder resources in use: queued READ streams and ATOMIC ACKs of new requests
 * (max_dest_rd_atomic). Replays for duplicates do not count: they answer requests already
 * counted once, which a requester that went back resends, and it may send new ones as soon
 * as the first answers reach it, while the replays of those same answers still wait here.
 */
static uint32_t rspq_reads(const struct nic_resp *r)
{
	uint32_t n = 0;

	for (uint32_t i = r->q_head; i != r->q_tail; i++) {
		const struct nic_rsp *e = &r->q[i % NIC_RSPQ_LEN];

		n += e->type != NIC_RSP_ACK && !e->replay;
	}
	return n;
}

/* A zeroed response of @type for @psn at the queue's tail, or NULL when the queue is full. */
static struct nic_rsp *rspq_push(struct nic_resp *r, uint8_t type, uint32_t psn)
{
	struct nic_rsp *e;

	if (rspq_used(r) == NIC_RSPQ_LEN)
		return NULL;
	e = &r->q[r->q_tail++ % NIC_RSPQ_LEN];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->psn = psn;
	e->msn = r->msn;
	return e;
}

#define AETH_PLAIN_ACK (GPUNIC_AETH_ACK | GPUNIC_AETH_ACK_UNLIMITED)

/* Queue an ACK or NAK. Plain ACKs coalesce with a plain ACK queued just before (ACKs are
 * cumulative); a full queue loses the ACK and the requester's timer recovers it. */
static void rspq_ack(struct nic_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct nic_resp *r = &qp->resp;
	struct nic_rsp *e;

	if (rspq_used(r) && syndrome == AETH_PLAIN_ACK) {
		e = &r->q[(r->q_tail - 1) % NIC_RSPQ_LEN];
		if (e->type == NIC_RSP_ACK && e->syndrome == AETH_PLAIN_ACK) {
			e->psn = psn;
			e->msn = r->msn;
			return;
		}
	}
	e = rspq_push(r, NIC_RSP_ACK, psn);
	if (e)
		e->syndrome = syndrome;
}

static bool rspq_read(struct nic_qp *qp, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len)
{
	struct nic_rsp *e = rspq_push(&qp->resp, NIC_RSP_READ, psn);

	if (!e)
		return false;
	e->va = va;
	e->rkey = rkey;
	e->len = len;
	return true;
}

/* A duplicate at @psn: the requester has gone back to it and resends everything after it, so
 * the responses queued for @psn and later would only delay the replay; earlier ones (replays
 * of earlier duplicates in the same burst among them) stay. */
static void rspq_cut(struct nic_resp *r, uint32_t psn)
{
	while (rspq_used(r) &&
	       gpunic_psn_cmp(r->q[(r->q_tail - 1) % NIC_RSPQ_LEN].psn, psn) >= 0)
		r->q_tail--;
}

/* An ATOMIC ACKNOWLEDGE carrying what the target held before (IBA 9.4.5). */
static bool rspq_atomic(struct nic_qp *qp, uint32_t psn, uint64_t orig)
{
	struct nic_rsp *e = rspq_push(&qp->resp, NIC_RSP_ATOMIC, psn);

	if (!e)
		return false;
	e->atomic_orig = orig;
	return true;
}

/* NAKs that end the connection go out at once: the error state discards the queue. */
static void send_nak_now(struct nic_qp *qp, uint8_t code)
{
	struct gpunic_pkt pkt = { 0 };

	pkt.opcode = GPUNIC_OP_ACKNOWLEDGE;
	pkt.psn = qp->resp.epsn;
	pkt.aeth_syndrome = GPUNIC_AETH_NAK | code;
	pkt.aeth_msn = qp->resp.msn;
	if (!nic_xmit(qp, &pkt))
		qp->cnt.naks_sent++;
}

/* One READ response packet; AETH on FIRST, LAST and ONLY only (docs/WIRE.md 5.4). */
static int xmit_read_pkt(struct nic_qp *qp, struct nic_rsp *e, bool *done)
{
	uint32_t total = msg_packets(e->len, qp->pmtu), i = e->off / qp->pmtu;
	struct gpunic_pkt pkt = { 0 };
	enum gpunic_drop_reason why;
	int err;

	pkt.paylen = e->len - e->off < qp->pmtu ? e->len - e->off : qp->pmtu;
	if (total == 1)
		pkt.opcode = GPUNIC_OP_READ_RESPONSE_ONLY;
	else if (i == 0)
		pkt.opcode = GPUNIC_OP_READ_RESPONSE_FIRST;
	else if (i == total - 1)
		pkt.opcode = GPUNIC_OP_READ_RESPONSE_LAST;
	else
		pkt.opcode = GPUNIC_OP_READ_RESPONSE_MIDDLE;
	pkt.psn = gpunic_psn_add(e->psn, i);
	pkt.aeth_syndrome = AETH_PLAIN_ACK;
	pkt.aeth_msn = e->msn;
	if (pkt.paylen) {
		/* resolved per packet: the region may have been deregistered meanwhile */
		pkt.payload = mr_lookup_remote(qp->nic, qp->pd, e->rkey, e->va + e->off, pkt.paylen,
					       GPUNIC_ACCESS_REMOTE_READ, &why);
		if (!pkt.payload) {
			*done = true;	/* abandon: the requester's retry gets a NAK */
			return 0;
		}
	}
	err = nic_xmit(qp, &pkt);
	if (err)
		return err;
	e->off += pkt.paylen;
	*done = i == total - 1;
	return 0;
}

int resp_xmit(struct nic_qp *qp, int budget)
{
	struct nic_resp *r = &qp->resp;
	int sent = 0;

	while (rspq_used(r) && sent < budget) {
		struct nic_rsp *e = &r->q[r->q_head % NIC_RSPQ_LEN];
		bool done = true;

		if (e->type == NIC_RSP_ACK) {
			struct gpunic_pkt pkt = { 0 };

			pkt.opcode = GPUNIC_OP_ACKNOWLEDGE;
			pkt.psn = e->psn;
			pkt.aeth_syndrome = e->syndrome;
			pkt.aeth_msn = e->msn;
			if (nic_xmit(qp, &pkt))
				break;
			if (e->syndrome == AETH_PLAIN_ACK)
				qp->cnt.acks_sent++;
		} else if (e->type == NIC_RSP_ATOMIC) {
			struct gpunic_pkt pkt = { 0 };

			pkt.opcode = GPUNIC_OP_ATOMIC_ACKNOWLEDGE;
			pkt.psn = e->psn;
			pkt.aeth_syndrome = AETH_PLAIN_ACK;
			pkt.aeth_msn = e->msn;
			pkt.atmack_orig = e->atomic_orig;
			if (nic_xmit(qp, &pkt))
				break;
		} else if (xmit_read_pkt(qp, e, &done)) {
			break;
		}
		sent++;
		if (done)
			r->q_head++;
	}
	return sent;
}

/* ---------------------------------------------------------------- receive WQEs */

/* Receive WQEs posted and not consumed: by the producer last read from the doorbell record
 * (rq_pi_seen), which is read again only when that says none, or says what no ring holds. */
static uint16_t rq_avail(struct nic_qp *qp)
{
	uint16_t avail = (uint16_t)(qp->rq_pi_seen - qp->rq_ci);

	if (avail && avail <= qp->rq_wqe_cnt)
		return avail;
	qp->rq_pi_seen = (uint16_t)load_be32_acquire(&qp->dbrec[MLX5_RCV_DBR]);
	return (uint16_t)(qp->rq_pi_seen - qp->rq_ci);
}

/* Copy the next receive WQE out of the ring and check every buffer before anything lands in
 * it. A first entry with MLX5_INVALID_LKEY is a zero-length receive. */
RESP_STEP fetch_rwqe(struct nic_qp *qp, struct resp_ctx *c)
{
	struct nic_resp *r = &qp->resp;
	uint16_t avail = rq_avail(qp);
	uint32_t nseg = qp->rq_stride / sizeof(struct mlx5_wqe_data_seg);
	const uint8_t *wqe;
	uint64_t total = 0;

	if (!avail || avail > qp->rq_wqe_cnt) {
		c->why = GPUNIC_DROP_NO_RECV_WQE;
		return RESPST_ERR_RNR;
	}
	wqe = qp->rq_buf + (size_t)(qp->rq_ci & (qp->rq_wqe_cnt - 1)) * qp->rq_stride;
	r->rnsge = 0;
	for (uint32_t i = 0; i < nseg && i < NIC_MAX_RECV_SGE; i++) {
		struct mlx5_wqe_data_seg d;
		enum gpunic_drop_reason why;
		struct nic_sge *sge;

		memcpy(&d, wqe + i * sizeof(d), sizeof(d));
		if (be32toh(d.lkey) == MLX5_INVALID_LKEY)
			break;
		if (!d.byte_count)
			continue;
		sge = &r->rsge[r->rnsge++];
		sge->addr = be64toh(d.addr);
		sge->len = be32toh(d.byte_count);
		sge->lkey = be32toh(d.lkey);
		if (!mr_lookup_local(qp->nic, qp->pd, sge->lkey, sge->addr, sge->len,
				     GPUNIC_ACCESS_LOCAL_WRITE, &why)) {
			c->why = GPUNIC_DROP_LKEY;
			return RESPST_ERR_LKEY;
		}
		total += sge->len;
	}
	r->rlen = total > MAX_MSG_BYTES ? MAX_MSG_BYTES : (uint32_t)total;
	r->roff = 0;
	r->rwqe_valid = true;
	return RESPST_CHK_LENGTH;
}

/* UC: the message in progress is abandoned; its receive WQE is reused (docs/WIRE.md 5.2). */
static void abort_msg(struct nic_qp *qp)
{
	qp->resp.msg = NIC_MSG_NONE;
	qp->resp.rwqe_valid = false;
	qp->resp.roff = 0;
}

/* ---------------------------------------------------------------- checks */

static enum resp_states check_psn(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	int32_t diff;

	if (!qp_is_rc(qp)) {
		if (pkt->psn == r->epsn && !r->drop_msg)
			return RESPST_CHK_OP_SEQ;
		/* a FIRST or ONLY starts a new message at any PSN: resync to it */
		if (pkt->mask & GPUNIC_MASK_FIRST) {
			abort_msg(qp);
			r->drop_msg = false;
			r->epsn = pkt->psn;
			return RESPST_CHK_OP_SEQ;
		}
		abort_msg(qp);
		r->drop_msg = true;
		c->why = GPUNIC_DROP_PSN;
		return RESPST_DROP;
	}
	diff = gpunic_psn_cmp(pkt->psn, r->epsn);
	if (diff > 0)
		return RESPST_ERR_PSN_GAP;
	if (diff < 0)
		return RESPST_DUPLICATE;
	r->sent_psn_nak = false;
	return RESPST_CHK_OP_SEQ;
}

/* After a SEND FIRST/MIDDLE only SEND MIDDLE/LAST may follow, likewise for WRITE; with no
 * message open only FIRST, ONLY or a READ may come (rxe check_op_seq). */
static enum resp_states check_op_seq(struct nic_qp *qp, struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask;
	bool cont;

	switch (qp->resp.msg) {
	case NIC_MSG_SEND:
		cont = (m & GPUNIC_MASK_SEND) && !(m & GPUNIC_MASK_FIRST);
		break;
	case NIC_MSG_WRITE:
		cont = (m & GPUNIC_MASK_WRITE) && !(m & GPUNIC_MASK_FIRST);
		break;
	default:
		if ((m & GPUNIC_MASK_FIRST) || (m & GPUNIC_MASK_READ))
			return RESPST_CHK_OP_VALID;
		c->why = GPUNIC_DROP_OPCODE_SEQUENCE;
		return RESPST_ERR_OP_SEQ;
	}
	if (cont)
		return RESPST_CHK_OP_VALID;
	/* UC: a new message where the open one should continue replaces it */
	if (!qp_is_rc(qp) && (m & GPUNIC_MASK_FIRST)) {
		nic_count_drop(qp->nic, qp, GPUNIC_DROP_OPCODE_SEQUENCE);
		abort_msg(qp);
		return RESPST_CHK_OP_VALID;
	}
	c->why = GPUNIC_DROP_OPCODE_SEQUENCE;
	return RESPST_ERR_OP_SEQ;
}

/* The QP must grant the remote right the operation needs (qp_access_flags): remote write,
 * remote read, remote atomic. Like a READ without the right, an atomic without it is a remote
 * access error (class D: NAK, QP to ERR); it is never executed. */
static enum resp_states check_op_valid(struct nic_qp *qp, struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask;
	unsigned flags = qp->attr.qp_access_flags;

	if (((m & GPUNIC_MASK_WRITE) && !(flags & GPUNIC_ACCESS_REMOTE_WRITE)) ||
	    ((m & GPUNIC_MASK_READ) && !(flags & GPUNIC_ACCESS_REMOTE_READ)) ||
	    ((m & GPUNIC_MASK_ATOMIC) && !(flags & GPUNIC_ACCESS_REMOTE_ATOMIC))) {
		c->why = GPUNIC_DROP_ACCESS;
		return RESPST_ERR_ACCESS;
	}
	return RESPST_CHK_RESOURCE;
}

static enum resp_states check_resource(struct nic_qp *qp, struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask;

	/* READs and atomics share the responder resources (max_dest_rd_atomic) */
	if (m & (GPUNIC_MASK_READ | GPUNIC_MASK_ATOMIC)) {
		if (rspq_reads(&qp->resp) >= qp->attr.max_dest_rd_atomic) {
			c->why = GPUNIC_DROP_RD_RESOURCE;
			return RESPST_ERR_RD_RESOURCE;
		}
		/* full of replays and ACKs the link has not taken yet: the requester sends it
		 * again, by then some have left (an error here would end a connection that did
		 * nothing wrong) */
		if (rspq_used(&qp->resp) == NIC_RSPQ_LEN) {
			c->why = GPUNIC_DROP_RD_RESOURCE;
			return RESPST_DROP;
		}
		return RESPST_CHK_LENGTH;
	}
	/* the table's RWR marks where a receive WQE is taken (SEND FIRST/ONLY, WRITE_IMM
	 * LAST/ONLY), COMP where a receive completion is produced */
	if ((m & GPUNIC_MASK_COMP) && !cq_has_room(qp->rcq)) {
		c->why = GPUNIC_DROP_CQ_OVERFLOW;
		return RESPST_ERR_CQ_OVERFLOW;
	}
	if ((m & (GPUNIC_MASK_RWR | GPUNIC_MASK_COMP | GPUNIC_MASK_SEND)) && !qp->resp.rwqe_valid)
		return fetch_rwqe(qp, c);
	return RESPST_CHK_LENGTH;
}

/* rxe_resp_check_length and check_rkey's length rules (docs/WIRE.md 5.1). */
static enum resp_states check_length(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	uint32_t m = pkt->mask, len = pkt->paylen, pmtu = qp->pmtu;
	bool ok;

	if (m & GPUNIC_MASK_READ) {
		ok = pkt->reth_len <= MAX_MSG_BYTES;
	} else if (is_only(m)) {
		ok = len <= pmtu;
	} else if (is_last(m)) {
		ok = len && len <= pmtu;
	} else {
		ok = len == pmtu;	/* FIRST and MIDDLE carry exactly one PMTU */
	}
	if (ok && (m & GPUNIC_MASK_WRITE)) {
		if (is_only(m))
			ok = pkt->reth_len == len;
		else if (is_first(m))
			ok = pkt->reth_len > pmtu && pkt->reth_len <= MAX_MSG_BYTES;
		else if (is_last(m))
			ok = len == qp->resp.resid;
		else
			ok = len < qp->resp.resid;
	}
	if (!ok) {
		c->why = GPUNIC_DROP_LENGTH;
		return RESPST_ERR_LENGTH;
	}
	if ((m & GPUNIC_MASK_SEND) && len > qp->resp.rlen - qp->resp.roff) {
		c->why = GPUNIC_DROP_RECV_TOO_SMALL;
		return RESPST_ERR_RECV_TOO_SMALL;
	}
	if (m & (GPUNIC_MASK_WRITE | GPUNIC_MASK_READ | GPUNIC_MASK_ATOMIC))
		return RESPST_CHK_RKEY;
	return RESPST_EXECUTE;
}

/* R_Key, PD, rights and range, all before a byte moves. A zero-length WRITE or READ needs no
 * valid R_Key (C9-88). A range wrapping past 2^64 is a violation, never a short copy. */
static enum resp_states check_rkey(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	unsigned access;

	/* An atomic's 8 bytes: key, PD, remote atomic right and range as for a READ, then the
	 * alignment an 8-byte atomic needs (IBA 9.4.5: a misaligned VA is an invalid request) */
	if (pkt->mask & GPUNIC_MASK_ATOMIC) {
		c->dst = mr_lookup_remote(qp->nic, qp->pd, pkt->atm_rkey, pkt->atm_va,
					  sizeof(uint64_t), GPUNIC_ACCESS_REMOTE_ATOMIC, &c->why);
		if (!c->dst)
			return RESPST_ERR_ACCESS;
		if ((pkt->atm_va | (uintptr_t)c->dst) & (sizeof(uint64_t) - 1)) {
			c->why = GPUNIC_DROP_MISALIGNED;
			return RESPST_ERR_MISALIGNED;
		}
		return RESPST_ATOMIC;
	}
	if (pkt->mask & GPUNIC_MASK_READ) {
		if (pkt->reth_len && !mr_lookup_remote(qp->nic, qp->pd, pkt->reth_rkey,
						       pkt->reth_va, pkt->reth_len,
						       GPUNIC_ACCESS_REMOTE_READ, &c->why))
			return RESPST_ERR_ACCESS;
		return RESPST_READ;
	}
	access = GPUNIC_ACCESS_REMOTE_WRITE;
	c->dst = NULL;
	if (pkt->mask & GPUNIC_MASK_RETH) {
		if (pkt->reth_len) {
			c->dst = mr_lookup_remote(qp->nic, qp->pd, pkt->reth_rkey, pkt->reth_va,
						  pkt->reth_len, access, &c->why);
			if (!c->dst)
				return RESPST_ERR_ACCESS;
		}
		r->va = pkt->reth_va;
		r->rkey = pkt->reth_rkey;
		r->resid = pkt->reth_len;
		r->wlen = pkt->reth_len;
		/* a FIRST or ONLY: its payload starts the range just resolved and lies inside it
		 * (check_length), so it needs no lookup of its own */
		return RESPST_EXECUTE;
	}
	if (pkt->paylen) {
		c->dst = mr_lookup_remote(qp->nic, qp->pd, r->rkey, r->va, pkt->paylen, access,
					  &c->why);
		if (!c->dst)
			return RESPST_ERR_ACCESS;
	}
	return RESPST_EXECUTE;
}

/* ---------------------------------------------------------------- actions */

RESP_STEP execute(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	uint32_t m = pkt->mask;

	if (m & GPUNIC_MASK_SEND) {
		/* mlx5 scatter-to-CQE: a small message lands in the CQE, not in the buffer */
		c->scatter = qp->cqe_scatter && is_only(m) && pkt->paylen <= NIC_CQE_SCATTER_BYTES;
		if (!c->scatter && pkt->paylen &&
		    !mr_scatter(qp->nic, qp->pd, r->rsge, r->rnsge, r->roff, pkt->payload,
				pkt->paylen)) {
			c->why = GPUNIC_DROP_LKEY;
			return RESPST_ERR_LKEY;
		}
		r->roff += pkt->paylen;
		r->msg = NIC_MSG_SEND;
	} else {
		wire_copy_payload(c->dst, pkt->payload, pkt->paylen);
		r->va += pkt->paylen;
		r->resid -= pkt->paylen;
		r->msg = NIC_MSG_WRITE;
	}
	r->epsn = gpunic_psn_add(pkt->psn, 1);
	if (!(m & GPUNIC_MASK_LAST))
		return RESPST_ACKNOWLEDGE;
	r->msg = NIC_MSG_NONE;
	r->msn = (r->msn + 1) & GPUNIC_PSN_MASK;	/* MSN is 24 bits, one per message */
	qp->cnt.rx_messages++;
	return (m & GPUNIC_MASK_COMP) ? RESPST_COMPLETE : RESPST_ACKNOWLEDGE;
}

/* A READ is accepted whole: it takes one PSN per response packet and is remembered for
 * duplicate replay (responder resources). */
static enum resp_states do_read(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	struct nic_rd_res *res;
	uint32_t npsn = msg_packets(pkt->reth_len, qp->pmtu);

	r->msn = (r->msn + 1) & GPUNIC_PSN_MASK;
	res = &r->res[r->res_next++ % NIC_MAX_RD_ATOMIC];
	res->valid = true;
	res->atomic = false;
	res->psn = pkt->psn;
	res->npsn = npsn;
	res->va = pkt->reth_va;
	res->rkey = pkt->reth_rkey;
	res->len = pkt->reth_len;
	rspq_read(qp, pkt->psn, pkt->reth_va, pkt->reth_rkey, pkt->reth_len);
	r->epsn = gpunic_psn_add(pkt->psn, npsn);
	return RESPST_DONE;
}

/* An atomic executes once, as one indivisible 8-byte operation on the target with respect to
 * every other user of that memory on this host (host threads, other QPs, the CPU executor),
 * and is remembered with its result for duplicate replay; its ATOMIC ACKNOWLEDGE leaves in
 * order behind the responses queued before it. */
static enum resp_states do_atomic(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	uint64_t orig;

	orig = atomic_execute((uint64_t *)(void *)c->dst, pkt);
	r->msn = (r->msn + 1) & GPUNIC_PSN_MASK;
	atomic_res_save(qp, pkt, orig);
	/* check_resource left room in the queue */
	rspq_atomic(qp, pkt->psn, orig);
	r->epsn = gpunic_psn_add(pkt->psn, 1);
	qp->cnt.rx_messages++;
	qp->cnt.atomics_executed++;
	return RESPST_DONE;
}

RESP_STEP complete(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	/* check_resource found room for it, and nothing has used it since */
	struct mlx5_cqe64 *cqe = cq_stage(qp->rcq);
	uint8_t opcode, flags = 0;

	if (pkt->mask & GPUNIC_MASK_WRITE) {
		opcode = MLX5_CQE_RESP_WR_IMM;
		cqe->byte_cnt = htobe32(r->wlen);
		/* one packet: what it placed can be checked against the CQE (cq.c), summed from
		 * the frame it came from, not read back from where it was just stored. (A peer
		 * that changes its frame meanwhile gets a check that fails: the reader then reads
		 * the placed bytes again, never takes them unchecked.) */
		cq_set_payload_check(qp->rcq, cqe,
				     is_only(pkt->mask) && pkt->paylen ? pkt->payload : NULL, r->wlen);
	} else {
		opcode = (pkt->mask & GPUNIC_MASK_IMMDT) ? MLX5_CQE_RESP_SEND_IMM :
							   MLX5_CQE_RESP_SEND;
		cqe->byte_cnt = htobe32(r->roff);
	}
	if (pkt->mask & GPUNIC_MASK_IMMDT)
		cqe->imm_inval_pkey = htobe32(pkt->imm);
	cqe->sop_drop_qpn = htobe32(qp->pub.qp_num);
	cqe->wqe_counter = htobe16(qp->rq_ci);
	if (c->scatter) {
		wire_copy_payload(cqe, pkt->payload, pkt->paylen);
		flags |= MLX5_INLINE_SCATTER_32;
	} else {
		cqe->flags_rqpn = htobe32(qp->attr.dest_qp_num & 0xFFFFFFu);
	}
	if (pkt->se)
		flags |= 1u << 1;	/* solicited event, mlx5dv_get_cqe_se() */
	cq_publish(qp->rcq, cqe, opcode, flags);
	hop_mark(HOP_CQE);
	qp->rq_ci++;
	r->rwqe_valid = false;
	r->roff = 0;
	return RESPST_ACKNOWLEDGE;
}

static enum resp_states acknowledge(struct nic_qp *qp, struct resp_ctx *c)
{
	/* every request with the A bit gets an answer; others may be covered later */
	if (qp_is_rc(qp) && c->pkt->ack_req)
		rspq_ack(qp, c->pkt->psn, AETH_PLAIN_ACK);
	return RESPST_DONE;
}

/* An RC duplicate: never execute it twice. SEND/WRITE get the last ACK again (C9-105); a READ
 * is replayed from the saved resource if its range lies inside the original one; an atomic is
 * answered with the original value it returned the first time, and not executed again
 * (IBA 9.4.5). One whose resource is gone is dropped: the requester's retries run out. */
static enum resp_states duplicate(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;

	nic_count_drop(qp->nic, qp, GPUNIC_DROP_PSN);
	if (pkt->mask & GPUNIC_MASK_ATOMIC) {
		const struct nic_rd_res *res = atomic_res_find(qp, pkt);

		if (res) {
			rspq_cut(r, pkt->psn);
			if (rspq_atomic(qp, pkt->psn, res->atomic_orig))
				r->q[(r->q_tail - 1) % NIC_RSPQ_LEN].replay = true;
			qp->cnt.atomic_replays++;
		}
		return RESPST_DONE;
	}
	if (!(pkt->mask & GPUNIC_MASK_READ)) {
		rspq_ack(qp, gpunic_psn_add(r->epsn, GPUNIC_PSN_MASK), AETH_PLAIN_ACK);
		return RESPST_DONE;
	}
	for (uint32_t i = 0; i < NIC_MAX_RD_ATOMIC; i++) {
		struct nic_rd_res *res = &r->res[i];
		int32_t d = psn_diff(pkt->psn, res->psn);

		if (!res->valid || res->atomic || d < 0 || (uint32_t)d >= res->npsn)
			continue;
		if (pkt->reth_rkey != res->rkey || pkt->reth_va < res->va ||
		    pkt->reth_len > res->len || pkt->reth_va - res->va > res->len - pkt->reth_len)
			break;
		rspq_cut(r, pkt->psn);
		if (rspq_read(qp, pkt->psn, pkt->reth_va, pkt->reth_rkey, pkt->reth_len))
			r->q[(r->q_tail - 1) % NIC_RSPQ_LEN].replay = true;
		break;
	}
	return RESPST_DONE;
}

/* ---------------------------------------------------------------- errors */

/* rxe's error classes in one place. UC: drop the message silently. RC: a PSN gap gets one
 * sequence NAK per gap; no receive WQE gets an RNR NAK; malformed requests (class C) and
 * protection errors (class D) get a NAK and move the QP to the error state. */
static void resp_error(struct nic_qp *qp, struct resp_ctx *c, enum resp_states state)
{
	struct nic_resp *r = &qp->resp;
	uint8_t syndrome = 0, nak;

	gpunic_dbg_ratelimited("qpn 0x%x psn 0x%x %s: %s", qp->pub.qp_num, c->pkt->psn,
			       resp_state_names[state], gpunic_drop_reason_name(c->why));
	if (state == RESPST_ERR_PSN_GAP)
		c->why = GPUNIC_DROP_PSN;
	nic_count_drop(qp->nic, qp, c->why);

	if (!qp_is_rc(qp)) {
		abort_msg(qp);
		r->drop_msg = true;
		if (state == RESPST_ERR_LKEY) {
			cq_write_err(qp->rcq, MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
				     0, qp->pub.qp_num, qp->rq_ci++);
			qp_set_error(qp);
		} else if (state == RESPST_ERR_CQ_OVERFLOW) {
			qp_set_error(qp);
		}
		return;
	}
	switch (state) {
	case RESPST_ERR_PSN_GAP:
		if (!r->sent_psn_nak) {
			r->sent_psn_nak = true;
			rspq_ack(qp, r->epsn, GPUNIC_AETH_NAK | GPUNIC_NAK_PSN_SEQ_ERROR);
			qp->cnt.naks_sent++;
		}
		return;
	case RESPST_ERR_RNR:
		rspq_ack(qp, c->pkt->psn, GPUNIC_AETH_RNR_NAK | qp->attr.min_rnr_timer);
		qp->cnt.rnr_naks_sent++;
		/* The rest of the message's burst now looks like a PSN gap; the RNR NAK already
		 * told the requester where to resume, so drop it quietly instead of also sending
		 * a sequence NAK, which would consume the retry count (rnr_retry 7 means forever). */
		qp->resp.sent_psn_nak = true;
		return;
	case RESPST_ERR_ACCESS:
		nak = GPUNIC_NAK_REMOTE_ACCESS;
		break;
	case RESPST_ERR_RECV_TOO_SMALL:
		syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
		nak = GPUNIC_NAK_INVALID_REQUEST;
		break;
	case RESPST_ERR_LKEY:
		syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		nak = GPUNIC_NAK_REMOTE_OP;
		break;
	case RESPST_ERR_CQ_OVERFLOW:
		nak = GPUNIC_NAK_REMOTE_OP;
		break;
	default:	/* op sequence, length, resources, misaligned atomic: invalid request (C) */
		nak = GPUNIC_NAK_INVALID_REQUEST;
		break;
	}
	if (syndrome)
		cq_write_err(qp->rcq, MLX5_CQE_RESP_ERR, syndrome, 0, qp->pub.qp_num, qp->rq_ci++);
	send_nak_now(qp, nak);
	qp_set_error(qp);
}

/* ---------------------------------------------------------------- one-packet messages */

/*
 * The common request: a SEND or WRITE whole in one packet, at the expected PSN, with no message
 * open, the rights, the CQ room and the lengths it needs. Answers RESPST_CHK_PSN, having changed
 * nothing, for every other request, and the machine takes it from the start; else it takes the
 * machine's steps for it in their order, with each check that can still fail made as there
 * (the receive WQE, its room, the R_Key), and answers where the machine goes on:
 * RESPST_EXECUTE (placing, completing and acknowledging are the machine's own steps), or the
 * error.
 */
static enum resp_states one_packet(struct nic_qp *qp, struct resp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_resp *r = &qp->resp;
	uint32_t m = pkt->mask, len = pkt->paylen;
	enum resp_states state;

	/* check_psn, check_op_seq, check_op_valid and check_length's rules, which all pass */
	if (!is_only(m) || (m & (GPUNIC_MASK_READ | GPUNIC_MASK_ATOMIC)) ||
	    pkt->psn != r->epsn || r->drop_msg || r->msg != NIC_MSG_NONE || len > qp->pmtu)
		return RESPST_CHK_PSN;
	if ((m & GPUNIC_MASK_WRITE) &&
	    (!(qp->attr.qp_access_flags & GPUNIC_ACCESS_REMOTE_WRITE) || pkt->reth_len != len))
		return RESPST_CHK_PSN;
	if ((m & GPUNIC_MASK_COMP) && !cq_has_room(qp->rcq))
		return RESPST_CHK_PSN;
	if (qp_is_rc(qp))
		r->sent_psn_nak = false;
	/* check_resource */
	if ((m & (GPUNIC_MASK_RWR | GPUNIC_MASK_COMP | GPUNIC_MASK_SEND)) && !r->rwqe_valid) {
		state = fetch_rwqe(qp, c);
		if (state != RESPST_CHK_LENGTH)
			return state;
	}
	if (m & GPUNIC_MASK_SEND) {
		if (len > r->rlen - r->roff) {
			c->why = GPUNIC_DROP_RECV_TOO_SMALL;
			return RESPST_ERR_RECV_TOO_SMALL;
		}
		return RESPST_EXECUTE;
	}
	/* check_rkey for a WRITE ONLY: the range its RETH names holds the payload */
	if (len) {
		c->dst = mr_lookup_remote(qp->nic, qp->pd, pkt->reth_rkey, pkt->reth_va, len,
					  GPUNIC_ACCESS_REMOTE_WRITE, &c->why);
		if (!c->dst)
			return RESPST_ERR_ACCESS;
	}
	r->va = pkt->reth_va;
	r->rkey = pkt->reth_rkey;
	r->resid = len;
	r->wlen = len;
	return RESPST_EXECUTE;
}

/*
 * The state machine. The states a request passes when nothing goes wrong are taken in their
 * order, one test each, without a dispatch per state; whatever else a step answers (a READ, an
 * atomic, a duplicate, a drop or an error) is dispatched below, and a step that answers one of
 * the ordered states again goes round once more. The same steps in the same order as one
 * switch would take them, each called from one place.
 */
void resp_input(struct nic_qp *qp, const struct gpunic_pkt *pkt)
{
	struct resp_ctx c = { .pkt = pkt };
	enum resp_states state = one_packet(qp, &c);

	for (;;) {
		if (state == RESPST_CHK_PSN)
			state = check_psn(qp, &c);
		if (state == RESPST_CHK_OP_SEQ)
			state = check_op_seq(qp, &c);
		if (state == RESPST_CHK_OP_VALID)
			state = check_op_valid(qp, &c);
		if (state == RESPST_CHK_RESOURCE)
			state = check_resource(qp, &c);
		if (state == RESPST_CHK_LENGTH)
			state = check_length(qp, &c);
		if (state == RESPST_CHK_RKEY)
			state = check_rkey(qp, &c);
		if (state == RESPST_EXECUTE)
			state = execute(qp, &c);
		if (state == RESPST_COMPLETE)
			state = complete(qp, &c);
		if (state == RESPST_ACKNOWLEDGE)
			state = acknowledge(qp, &c);
		switch (state) {
		case RESPST_DONE:
			return;
		case RESPST_CHK_PSN:
		case RESPST_CHK_OP_SEQ:
		case RESPST_CHK_OP_VALID:
		case RESPST_CHK_RESOURCE:
		case RESPST_CHK_LENGTH:
		case RESPST_CHK_RKEY:
		case RESPST_EXECUTE:
		case RESPST_COMPLETE:
		case RESPST_ACKNOWLEDGE:
			break;
		case RESPST_READ:
			state = do_read(qp, &c);
			break;
		case RESPST_ATOMIC:
			state = do_atomic(qp, &c);
			break;
		case RESPST_DUPLICATE:
			state = duplicate(qp, &c);
			break;
		case RESPST_DROP:
			nic_count_drop(qp->nic, qp, c.why);
			return;
		default:
			resp_error(qp, &c, state);
			return;
		}
	}
}
