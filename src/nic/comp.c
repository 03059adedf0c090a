// SPDX-License-Identifier: MIT
/*
 * The completer (rxe_comp.c's role): turns ACKs, NAKs, READ responses and ATOMIC ACKs into
 * send completions, places READ data and atomics' original values, and drives retransmission:
 * go back N on a sequence NAK or a local ACK timeout, a timed pause on an RNR NAK, and the
 * error state when retries run out. NOPs, which take no PSN, complete in order once the WQEs
 * before them have. Like rxe it is a state machine: one small function per state returns the
 * next one.
 */
#include <string.h>

#include "gpunic/log.h"
#include "nic_loc.h"

enum comp_states {
	COMPST_CHECK_PSN,
	COMPST_CHECK_ACK,
	COMPST_READ,
	COMPST_ATOMIC,
	COMPST_ACK,
	COMPST_NAK_SEQ,
	COMPST_RNR,
	COMPST_NAK_FATAL,
	COMPST_ERROR,
	COMPST_DROP,
	COMPST_DONE,
};

static const char *const comp_state_names[] = {
	[COMPST_CHECK_PSN] = "CHECK_PSN",
	[COMPST_CHECK_ACK] = "CHECK_ACK",
	[COMPST_READ] = "READ",
	[COMPST_ATOMIC] = "ATOMIC",
	[COMPST_ACK] = "ACK",
	[COMPST_NAK_SEQ] = "NAK_SEQ",
	[COMPST_RNR] = "RNR",
	[COMPST_NAK_FATAL] = "NAK_FATAL",
	[COMPST_ERROR] = "ERROR",
	[COMPST_DROP] = "DROP",
	[COMPST_DONE] = "DONE",
};

struct comp_ctx {
	const struct gpunic_pkt *pkt;
	enum gpunic_drop_reason why;
	uint8_t syndrome;       /* COMPST_ERROR: the MLX5 syndrome to report */
};

#define NS_PER_ACK_TIMEOUT_UNIT 4096ull	/* 4.096 us */

static inline struct nic_wqe_info *head_info(struct nic_qp *qp)
{
	return &qp->winfo[qp->comp.ci & (qp->sq_wqebb_cnt - 1)];
}

static inline bool have_outstanding(const struct nic_qp *qp)
{
	return qp->comp.ci != qp->req.started_ci;
}

void comp_reset(struct nic_qp *qp)
{
	memset(&qp->comp, 0, sizeof(qp->comp));
}

/* ---------------------------------------------------------------- timers */

static uint64_t ack_timeout_ns(const struct nic_qp *qp)
{
	return NS_PER_ACK_TIMEOUT_UNIT << qp->attr.timeout;
}

void comp_arm_timer(struct nic_qp *qp)
{
	/* timeout 0 means wait forever */
	if (qp->comp.timer_armed || !qp->attr.timeout)
		return;
	qp->comp.timer_armed = true;
	qp->comp.deadline_ns = nic_now(qp->nic) + ack_timeout_ns(qp);
}

/* Forward progress restarts the timer and refills the retry budgets (as rxe does). */
static void comp_progress(struct nic_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.timer_armed = false;
	if (have_outstanding(qp))
		comp_arm_timer(qp);
}

/* ---------------------------------------------------------------- completion */

/* The CQE of the signaled WQE at @ci that completed well. Out of line: most WQEs of a stream
 * are not signaled, and their completion then saves fewer registers. Return: false if the CQ
 * was full. */
static __attribute__((noinline)) bool complete_signaled(struct nic_qp *qp, uint16_t ci,
							uint8_t opcode, uint32_t length)
{
	struct mlx5_cqe64 *cqe = cq_next(qp->scq);

	if (!cqe)
		return false;
	cqe->sop_drop_qpn = htobe32((uint32_t)opcode << 24 | qp->pub.qp_num);
	cqe->wqe_counter = htobe16(ci);
	cqe->byte_cnt = htobe32(length);
	cq_publish(qp->scq, cqe, MLX5_CQE_REQ, 0);
	return true;
}

/* Inline where every message passes (comp_complete_wqe); out of line for a passed NOP and an
 * error. */
static inline __attribute__((always_inline)) void complete_head(struct nic_qp *qp,
								 uint8_t syndrome);
static void complete_passed_nop(struct nic_qp *qp);

/* A NOP at the head that the requester has passed (req_send_nop took no PSN for it): nothing
 * is left to wait for once everything before it has completed. */
static bool head_is_passed_nop(const struct nic_qp *qp)
{
	const struct nic_wqe_info *info;

	if (!have_outstanding(qp) || qp->req.pos.ci == qp->comp.ci)
		return false;
	info = &qp->winfo[qp->comp.ci & (qp->sq_wqebb_cnt - 1)];
	return info->opcode == MLX5_OPCODE_NOP && info->npsn == 0;
}

/* Complete the passed NOPs at the head, in order. Return: how many. Inline: after every
 * completion there is nearly always none, which one or two compares tell. */
static inline int complete_nops(struct nic_qp *qp)
{
	int n = 0;

	while (qp->pub.state != GPUNIC_QPS_ERR && head_is_passed_nop(qp)) {
		complete_passed_nop(qp);
		n++;
	}
	return n;
}

/* A WQE completed in error: out of line, as complete_signaled is. */
static __attribute__((noinline)) void complete_error(struct nic_qp *qp, uint8_t syndrome)
{
	complete_head(qp, syndrome);
}

void comp_complete_wqe(struct nic_qp *qp, uint8_t syndrome)
{
	if (syndrome) {
		complete_error(qp, syndrome);
		return;
	}
	complete_head(qp, 0);
	complete_nops(qp);
}

static inline __attribute__((always_inline)) void complete_head(struct nic_qp *qp,
								 uint8_t syndrome)
{
	struct nic_wqe_info *info = head_info(qp);
	struct nic_req_pos *pos = &qp->req.pos;
	bool overflow = false;
	uint32_t next_psn;

	if (syndrome) {
		/* errors complete whether signaled or not */
		overflow = !cq_write_err(qp->scq, MLX5_CQE_REQ_ERR, syndrome, info->opcode,
					 qp->pub.qp_num, qp->comp.ci);
	} else if (info->signaled) {
		overflow = !complete_signaled(qp, qp->comp.ci, info->opcode, info->length);
	}
	if (!syndrome)
		qp->cnt.tx_messages++;
	if (info->read_counted) {
		info->read_counted = false;
		qp->req.reads_out--;
	}
	qp->comp.ci += info->nbb;
	qp->comp.wqe_valid = false;
	/* an ACK may cover WQEs the requester is about to resend after going back: skip them */
	if ((int16_t)(uint16_t)(pos->ci - qp->comp.ci) < 0) {
		next_psn = gpunic_psn_add(info->first_psn, info->npsn);
		pos->ci = qp->comp.ci;
		pos->offset = 0;
		pos->pkts_since_ack_req = 0;
		if (gpunic_psn_cmp(pos->psn, next_psn) < 0)
			pos->psn = next_psn;
		qp->req.wqe_valid = false;
	}
	if (overflow) {
		nic_count_drop(qp->nic, qp, GPUNIC_DROP_CQ_OVERFLOW);
		qp_set_error(qp);
	}
}

void comp_uc_signaled(struct nic_qp *qp, uint16_t ci, uint8_t opcode, uint32_t length)
{
	if (complete_signaled(qp, ci, opcode, length))
		return;
	/* as complete_head: the WQE is complete, the QP goes to ERR behind it */
	nic_count_drop(qp->nic, qp, GPUNIC_DROP_CQ_OVERFLOW);
	qp_set_error(qp);
}

static __attribute__((noinline)) void complete_passed_nop(struct nic_qp *qp)
{
	complete_head(qp, 0);
}

/* The PSN to resend from: the missing READ response if a READ is oldest (an atomic's request,
 * if an atomic is), else the oldest unacknowledged request. */
static uint32_t comp_retry_psn(struct nic_qp *qp)
{
	struct nic_wqe_info *info = head_info(qp);

	if (have_outstanding(qp) && nic_opcode_needs_response(info->opcode) && info->read_counted)
		return info->resp_psn;
	return qp->comp.unacked_psn;
}

static void comp_fatal(struct nic_qp *qp, uint8_t syndrome)
{
	if (have_outstanding(qp))
		comp_complete_wqe(qp, syndrome);
	if (qp->pub.state != GPUNIC_QPS_ERR)
		qp_set_error(qp);
}

int comp_timers(struct nic_qp *qp)
{
	struct nic_comp *comp = &qp->comp;
	int nops = complete_nops(qp);

	if (nops)
		return nops;
	if (comp->rnr_wait) {
		if (nic_now(qp->nic) < comp->rnr_deadline_ns)
			return 0;
		comp->rnr_wait = false;
		req_rewind(qp, comp->rnr_psn);
		comp->timer_armed = false;
		comp_arm_timer(qp);
		return 1;
	}
	if (!comp->timer_armed)
		return 0;
	if (!have_outstanding(qp)) {
		comp->timer_armed = false;
		return 0;
	}
	if (nic_now(qp->nic) < comp->deadline_ns)
		return 0;
	qp->cnt.timeouts++;
	if (!comp->retry_left) {
		comp_fatal(qp, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
		return 1;
	}
	comp->retry_left--;
	req_rewind(qp, comp_retry_psn(qp));
	comp->deadline_ns = nic_now(qp->nic) + ack_timeout_ns(qp);
	return 1;
}

/* ---------------------------------------------------------------- acknowledging */

/* Complete every WQE whose last PSN is at or before @psn (ACKs are cumulative, docs/WIRE.md 5.3).
 * A READ is only acknowledged by its own responses, an atomic by its ATOMIC ACKNOWLEDGE: an
 * explicit ACK past one means its response was lost, so it is asked for again (rxe: "ack psn
 * beyond read"; the responder answers a repeated atomic from its saved result). */
static void ack_upto(struct nic_qp *qp, uint32_t psn, bool explicit_ack)
{
	bool progress = false;
	uint32_t next;

	while (have_outstanding(qp) && qp->pub.state != GPUNIC_QPS_ERR) {
		struct nic_wqe_info *info = head_info(qp);
		uint32_t last = gpunic_psn_add(info->first_psn, info->npsn - 1);

		if (gpunic_psn_cmp(last, psn) > 0)
			break;
		if (nic_opcode_needs_response(info->opcode)) {
			if (explicit_ack && !info->resp_rewound) {
				info->resp_rewound = true;
				req_rewind(qp, info->resp_psn);
			}
			break;
		}
		comp_complete_wqe(qp, 0);
		progress = true;
	}
	next = gpunic_psn_add(psn, 1);
	/* an unfinished READ stays unacknowledged from its first missing response on (an atomic
	 * from its request) */
	if (have_outstanding(qp) && nic_opcode_needs_response(head_info(qp)->opcode) &&
	    gpunic_psn_cmp(next, head_info(qp)->resp_psn) > 0)
		next = head_info(qp)->resp_psn;
	if (gpunic_psn_cmp(next, qp->comp.unacked_psn) > 0) {
		qp->comp.unacked_psn = next;
		progress = true;
	}
	if (progress && qp->pub.state != GPUNIC_QPS_ERR)
		comp_progress(qp);
}

static enum comp_states check_psn(struct nic_qp *qp, struct comp_ctx *c)
{
	/* nothing at or past psn_max was ever sent, so nothing there can be answered */
	if (gpunic_psn_cmp(c->pkt->psn, qp->req.psn_max) >= 0 ||
	    gpunic_psn_cmp(c->pkt->psn, gpunic_psn_add(qp->comp.unacked_psn, GPUNIC_PSN_MASK)) <
		    0) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	/* the table marks READ responses as responses with payload, not as READs */
	if (c->pkt->opcode >= GPUNIC_OP_READ_RESPONSE_FIRST &&
	    c->pkt->opcode <= GPUNIC_OP_READ_RESPONSE_ONLY)
		return COMPST_READ;
	if (c->pkt->opcode == GPUNIC_OP_ATOMIC_ACKNOWLEDGE)
		return COMPST_ATOMIC;
	return COMPST_CHECK_ACK;
}

static enum comp_states check_ack(struct nic_qp *qp, struct comp_ctx *c)
{
	uint8_t syn = c->pkt->aeth_syndrome;

	if (c->pkt->opcode != GPUNIC_OP_ACKNOWLEDGE) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	switch (syn & GPUNIC_AETH_TYPE_MASK) {
	case GPUNIC_AETH_ACK:
		qp->cnt.acks_received++;
		return COMPST_ACK;
	case GPUNIC_AETH_RNR_NAK:
		qp->cnt.rnr_naks_received++;
		return COMPST_RNR;
	case GPUNIC_AETH_NAK:
		qp->cnt.naks_received++;
		if ((syn & GPUNIC_AETH_VALUE_MASK) == GPUNIC_NAK_PSN_SEQ_ERROR)
			return COMPST_NAK_SEQ;
		return COMPST_NAK_FATAL;
	default:
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
}

static enum comp_states do_ack(struct nic_qp *qp, struct comp_ctx *c)
{
	ack_upto(qp, c->pkt->psn, true);
	return COMPST_DONE;
}

/* Where to resend from when the responder says it expects @psn: there, unless the oldest WQE
 * is a READ or an atomic still missing its response before @psn (the responder executed it,
 * its answer was lost): then from that response's PSN, which the responder answers again from
 * its saved resource. Resending only from @psn would leave it to the ACK timer. */
static uint32_t resend_psn(struct nic_qp *qp, uint32_t psn)
{
	const struct nic_wqe_info *info = head_info(qp);

	/* With read_counted set the request went out, so resp_psn belongs to this WQE. */
	if (have_outstanding(qp) && nic_opcode_needs_response(info->opcode) &&
	    info->read_counted && gpunic_psn_cmp(info->resp_psn, psn) < 0)
		return info->resp_psn;
	return psn;
}

/* NAK PSN sequence error: its PSN is the responder's ePSN; everything before it arrived
 * (rxe check_ack). Resend from there; it costs a retry like a timeout. */
static enum comp_states do_nak_seq(struct nic_qp *qp, struct comp_ctx *c)
{
	uint32_t epsn = c->pkt->psn;

	ack_upto(qp, gpunic_psn_add(epsn, GPUNIC_PSN_MASK), true);
	if (qp->pub.state == GPUNIC_QPS_ERR || !have_outstanding(qp))
		return COMPST_DONE;
	if (!qp->comp.retry_left) {
		c->syndrome = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
		return COMPST_ERROR;
	}
	qp->comp.retry_left--;
	req_rewind(qp, resend_psn(qp, epsn));
	return COMPST_DONE;
}

/* RNR NAK: the responder had no receive WQE. Wait the timer it names, then resend from the
 * NAK's PSN; rnr_retry 7 means try forever (IBTA; retry_cnt 7 is not special). */
static enum comp_states do_rnr(struct nic_qp *qp, struct comp_ctx *c)
{
	uint32_t psn = c->pkt->psn;
	uint32_t usec;

	ack_upto(qp, gpunic_psn_add(psn, GPUNIC_PSN_MASK), true);
	if (qp->pub.state == GPUNIC_QPS_ERR || !have_outstanding(qp))
		return COMPST_DONE;
	if (qp->attr.rnr_retry != 7) {
		if (!qp->comp.rnr_left) {
			c->syndrome = MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
			return COMPST_ERROR;
		}
		qp->comp.rnr_left--;
	}
	usec = gpunic_rnr_timer_usec(c->pkt->aeth_syndrome & GPUNIC_AETH_VALUE_MASK);
	qp->comp.rnr_wait = true;
	qp->comp.rnr_psn = psn;
	qp->comp.rnr_deadline_ns = nic_now(qp->nic) + (uint64_t)usec * 1000;
	/* the requester sends nothing until the timer fires, then restarts from rnr_psn */
	qp->comp.timer_armed = false;
	return COMPST_DONE;
}

static enum comp_states do_nak_fatal(struct nic_qp *qp, struct comp_ctx *c)
{
	ack_upto(qp, gpunic_psn_add(c->pkt->psn, GPUNIC_PSN_MASK), true);
	switch (c->pkt->aeth_syndrome & GPUNIC_AETH_VALUE_MASK) {
	case GPUNIC_NAK_INVALID_REQUEST:
	case GPUNIC_NAK_INVALID_RD_REQUEST:
		c->syndrome = MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
		break;
	case GPUNIC_NAK_REMOTE_ACCESS:
		c->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		break;
	case GPUNIC_NAK_REMOTE_OP:
		c->syndrome = MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		break;
	default:
		c->syndrome = MLX5_CQE_SYNDROME_BAD_RESP_ERR;
		break;
	}
	return COMPST_ERROR;
}

/* ---------------------------------------------------------------- READ responses */

/* Sequence of a READ response against what the head READ expects: FIRST or ONLY opens a
 * (re)started response stream, MIDDLE and LAST continue it (docs/WIRE.md 5.3). */
static bool read_seq_ok(const struct nic_wqe_info *info, uint32_t mask)
{
	bool first = mask & GPUNIC_MASK_FIRST;

	return info->resp_seq_start ? first : !first;
}

static bool read_len_ok(const struct nic_qp *qp, const struct nic_wqe_info *info, uint32_t mask,
			uint32_t paylen)
{
	uint32_t rest = info->length - info->resp_off;

	if (mask & GPUNIC_MASK_LAST)
		return paylen == rest && paylen <= qp->pmtu;
	return paylen == qp->pmtu && rest > qp->pmtu;
}

static enum comp_states do_read(struct nic_qp *qp, struct comp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_wqe_info *info;
	int32_t d;

	/* a READ response implicitly acknowledges every earlier request (docs/WIRE.md 5.3) */
	ack_upto(qp, gpunic_psn_add(pkt->psn, GPUNIC_PSN_MASK), false);
	if (qp->pub.state == GPUNIC_QPS_ERR || !have_outstanding(qp) ||
	    head_info(qp)->opcode != MLX5_OPCODE_RDMA_READ) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	info = head_info(qp);
	d = gpunic_psn_cmp(pkt->psn, info->resp_psn);
	if (d != 0 || !read_seq_ok(info, pkt->mask)) {
		/* a gap in the responses: ask again for the rest, once per gap */
		if (d >= 0 && !info->resp_rewound) {
			info->resp_rewound = true;
			req_rewind(qp, info->resp_psn);
		}
		c->why = d < 0 ? GPUNIC_DROP_UNEXPECTED_ACK : GPUNIC_DROP_PSN;
		return COMPST_DROP;
	}
	if ((pkt->mask & GPUNIC_MASK_AETH) &&
	    (pkt->aeth_syndrome & GPUNIC_AETH_TYPE_MASK) != GPUNIC_AETH_ACK) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	if (!read_len_ok(qp, info, pkt->mask, pkt->paylen)) {
		c->syndrome = MLX5_CQE_SYNDROME_BAD_RESP_ERR;
		return COMPST_ERROR;
	}
	if (!qp->comp.wqe_valid) {
		if (req_parse_wqe(qp, qp->comp.ci, &qp->comp.wqe)) {
			c->syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			return COMPST_ERROR;
		}
		qp->comp.wqe_valid = true;
	}
	/* the local buffers are resolved again: a region may be gone since the WQE was posted */
	if (pkt->paylen && !mr_scatter(qp->nic, qp->pd, qp->comp.wqe.sge, qp->comp.wqe.nsge,
				       info->resp_off, pkt->payload, pkt->paylen)) {
		c->syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		return COMPST_ERROR;
	}
	info->resp_psn = gpunic_psn_add(info->resp_psn, 1);
	info->resp_off += pkt->paylen;
	info->resp_seq_start = false;
	info->resp_rewound = false;
	if (gpunic_psn_cmp(info->resp_psn, qp->comp.unacked_psn) > 0)
		qp->comp.unacked_psn = info->resp_psn;
	if (pkt->mask & GPUNIC_MASK_LAST)
		comp_complete_wqe(qp, 0);
	if (qp->pub.state != GPUNIC_QPS_ERR)
		comp_progress(qp);
	return COMPST_DONE;
}

/* ---------------------------------------------------------------- ATOMIC ACKNOWLEDGE */

/*
 * An ATOMIC ACKNOWLEDGE answers the atomic at the head, at exactly its PSN, with an ACK-type
 * AETH (IBA 9.4.5); like a READ response it implicitly acknowledges every earlier request.
 * The original value goes into the WQE's local buffer, resolved again through its lkey (local
 * write), in host byte order as ibverbs users read it; then the WQE completes.
 */
static enum comp_states do_atomic(struct nic_qp *qp, struct comp_ctx *c)
{
	const struct gpunic_pkt *pkt = c->pkt;
	struct nic_wqe_info *info;
	uint32_t next;
	int32_t d;

	if ((pkt->aeth_syndrome & GPUNIC_AETH_TYPE_MASK) != GPUNIC_AETH_ACK) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	ack_upto(qp, gpunic_psn_add(pkt->psn, GPUNIC_PSN_MASK), false);
	if (qp->pub.state == GPUNIC_QPS_ERR || !have_outstanding(qp) ||
	    !nic_opcode_is_atomic(head_info(qp)->opcode)) {
		c->why = GPUNIC_DROP_UNEXPECTED_ACK;
		return COMPST_DROP;
	}
	info = head_info(qp);
	d = gpunic_psn_cmp(pkt->psn, info->first_psn);
	if (d != 0) {
		/* the answer to a later atomic: ours was lost, ask again (once) */
		if (d > 0 && !info->resp_rewound) {
			info->resp_rewound = true;
			req_rewind(qp, info->first_psn);
		}
		c->why = d < 0 ? GPUNIC_DROP_UNEXPECTED_ACK : GPUNIC_DROP_PSN;
		return COMPST_DROP;
	}
	c->syndrome = atomic_place_result(qp, pkt->atmack_orig);
	if (c->syndrome)
		return COMPST_ERROR;
	info->resp_rewound = false;
	next = gpunic_psn_add(pkt->psn, 1);
	if (gpunic_psn_cmp(next, qp->comp.unacked_psn) > 0)
		qp->comp.unacked_psn = next;
	comp_complete_wqe(qp, 0);
	if (qp->pub.state != GPUNIC_QPS_ERR)
		comp_progress(qp);
	return COMPST_DONE;
}

void comp_input(struct nic_qp *qp, const struct gpunic_pkt *pkt)
{
	struct comp_ctx c = { .pkt = pkt };
	enum comp_states state = COMPST_CHECK_PSN;

	for (;;) {
		switch (state) {
		case COMPST_CHECK_PSN:
			state = check_psn(qp, &c);
			break;
		case COMPST_CHECK_ACK:
			state = check_ack(qp, &c);
			break;
		case COMPST_ACK:
			state = do_ack(qp, &c);
			break;
		case COMPST_NAK_SEQ:
			state = do_nak_seq(qp, &c);
			break;
		case COMPST_RNR:
			state = do_rnr(qp, &c);
			break;
		case COMPST_NAK_FATAL:
			state = do_nak_fatal(qp, &c);
			break;
		case COMPST_READ:
			state = do_read(qp, &c);
			break;
		case COMPST_ATOMIC:
			state = do_atomic(qp, &c);
			break;
		case COMPST_ERROR:
			gpunic_dbg("qpn 0x%x psn 0x%x: %s, syndrome 0x%x", qp->pub.qp_num,
				   pkt->psn, comp_state_names[state], c.syndrome);
			comp_fatal(qp, c.syndrome);
			return;
		case COMPST_DROP:
			nic_count_drop(qp->nic, qp, c.why);
			return;
		case COMPST_DONE:
			return;
		}
	}
}
