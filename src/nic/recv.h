/* SPDX-License-Identifier: MIT */
/*
 * The front door's common case: the lean decode and the checks after it, inlined into the
 * engine's poll (nic.c) because a function call per frame cost more than the checks of a small
 * frame do. Every frame the lean decoder declines goes to nic_recv_general (recv.c).
 */
#ifndef GPUNIC_NIC_RECV_H
#define GPUNIC_NIC_RECV_H

#include "nic_loc.h"
#include "wire/lean.h"

static inline bool qp_state_accepts(const struct nic_qp *qp, const struct gpunic_pkt *pkt)
{
	/* Requests are taken in RTR and RTS; responses only in RTS, the one state in which
	 * this QP has requests of its own outstanding. */
	if (pkt->mask & GPUNIC_MASK_REQ)
		return qp->pub.state == GPUNIC_QPS_RTR || qp->pub.state == GPUNIC_QPS_RTS;
	return qp->pub.state == GPUNIC_QPS_RTS;
}

/* The checks after the decode: addressed to us, a QP that takes it, from that QP's peer. */
static inline __attribute__((always_inline)) void recv_pkt(struct gpunic_nic *nic,
							    const struct gpunic_pkt *pkt)
{
	enum gpunic_drop_reason reason;
	struct nic_qp *qp = NULL;

	if (pkt->dst_ip != nic->attr.ip || pkt->dst_port != nic->attr.udp_port) {
		reason = GPUNIC_DROP_NOT_FOR_US;
		goto drop;
	}
	qp = qp_lookup(nic, pkt->qpn);
	if (!qp) {
		reason = GPUNIC_DROP_UNKNOWN_QPN;
		goto drop;
	}
	/* gpunic_pkt_check_qp_type() without its opcode-table lookup, which the decoder
	 * already made */
	if (!wire_transport_fits(pkt->opcode, qp->pub.qp_type)) {
		reason = GPUNIC_DROP_OPCODE_QP_TYPE;
		goto drop;
	}
	if (!qp_state_accepts(qp, pkt)) {
		reason = GPUNIC_DROP_QP_STATE;
		goto drop;
	}
	/* As rxe's check_addr: a connected QP takes frames from its peer only. */
	if (pkt->src_ip != qp->av.ip) {
		reason = GPUNIC_DROP_NOT_FOR_US;
		goto drop;
	}
	/* The two counters are updated apart, as in nic.c: side by side, gcc would pair them
	 * into a vector add that costs more instructions than the two adds. */
	qp->cnt.rx_packets++;
	if (pkt->mask & GPUNIC_MASK_REQ)
		resp_input(qp, pkt);
	else
		comp_input(qp, pkt);
	qp->cnt.rx_bytes += pkt->paylen;
	/* The frame may have left the QP an answer to send, a send window that opened or a
	 * timer to watch: keep the QP on the hot list so that the next polls look at it. */
	nic_qp_wake(qp);
	return;

drop:
	nic_count_drop(nic, qp, reason);
}

/* Every frame the lean decoder declines: ARP, a MAC to check, a bad or uncommon frame. */
void nic_recv_general(struct gpunic_nic *nic, const uint8_t *frame, size_t len);

/* A frame received: decoded, checked, and handed to its QP or dropped with its reason. */
static inline __attribute__((always_inline)) void nic_recv_frame(struct gpunic_nic *nic,
								   const uint8_t *frame, size_t len)
{
	struct gpunic_pkt pkt;

	/* Captured as it arrived, before any check: the frames dropped below are the ones a
	 * capture is most often read for. */
	nic_capture_tap(nic, frame, len);
	/* On a shared wire there are MACs to check and ARP to answer, which only the general
	 * path does. */
	if (!(nic->link->caps & GPUNIC_LINK_CAP_SHARED_WIRE) &&
	    wire_decode_lean(frame, len, nic->decode_flags, &pkt, nic->icrc_memo))
		recv_pkt(nic, &pkt);
	else
		nic_recv_general(nic, frame, len);
}

#endif /* GPUNIC_NIC_RECV_H */
