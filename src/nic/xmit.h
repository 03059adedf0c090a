/* SPDX-License-Identifier: MIT */
/*
 * nic_xmit() inline, for the requester's common case (req.c): the calls into net.c and below
 * cost more than building a small frame's headers does. Everything else calls nic_xmit (net.c).
 */
#ifndef GPUNIC_NIC_XMIT_H
#define GPUNIC_NIC_XMIT_H

#include <errno.h>

#include "link/link_hold.h"
#include "nic_loc.h"
#include "wire/tmpl.h"
#include "wire/wire_loc.h"

/* Out of line in net.c: building the QP's header template, at its first frame after a
 * modify; and logging a frame that could not be built or that the link lost (both return 0:
 * the frame is gone). */
void nic_xmit_template(struct nic_qp *qp);
int nic_xmit_unbuilt(uint8_t opcode, uint32_t paylen, int err);
int nic_xmit_lost(int err);

/*
 * Build the frame from the QP's template in the room the link reserved (no copy: on shm the
 * link's staging buffer for a small frame, the slot itself for a larger one), then hand it
 * over. @pkt gives what changes per frame: opcode, SE, A, PSN, the
 * extension headers and the payload; @data_only (a constant) as for encode_ext (tmpl.h).
 * @pkt's address goes nowhere, so a caller's compiler may keep it in registers.
 */
static inline __attribute__((always_inline)) int nic_xmit_build(struct nic_qp *qp,
								 const struct gpunic_pkt *pkt,
								 bool data_only)
{
	struct gpunic_nic *nic = qp->nic;
	const struct wire_tx_head *h;
	size_t len;
	uint8_t *buf;
	int err;

	if (!qp->tx_tmpl_ok)
		nic_xmit_template(qp);
	/* The head gives the frame's size and its opcode's table entry, which both the
	 * reservation and the encoding need. */
	h = wire_tx_head(&qp->tx_tmpl, pkt);
	err = h ? link_tx_hold(nic->link, h->size) : EINVAL;
	if (err == EAGAIN) {
		nic->cnt.tx_busy++;
		return EAGAIN;
	}
	if (err)
		return nic_xmit_unbuilt(pkt->opcode, pkt->paylen, err);
	hop_mark(HOP_HOLD);
	buf = nic->link->zc.tx_buf;
	/* A payload length with no payload builds an empty frame, which the link refuses. */
	len = pkt->paylen && !pkt->payload ? 0 :
					      wire_encode_tmpl(&qp->tx_tmpl, h, pkt, buf, data_only);
	hop_mark(HOP_BUILT);
	nic_capture_tap(nic, buf, len);
	err = link_tx_commit(nic->link, len);
	if (err == EAGAIN) {
		gpunic_link_tx_abort(nic->link);
		nic->cnt.tx_busy++;
		return EAGAIN;
	}
	/* The link lost the frame: RC retransmits it, UC loses the message, as on a real wire. */
	if (err)
		return nic_xmit_lost(err);
	nic->cnt.tx_frames++;
	nic->cnt.tx_bytes += len;
	qp->cnt.tx_packets++;
	qp->cnt.tx_bytes += pkt->paylen;
	return 0;
}

/* Any packet (nic_xmit). */
static inline __attribute__((always_inline)) int nic_xmit_inline(struct nic_qp *qp,
								  const struct gpunic_pkt *pkt)
{
	return nic_xmit_build(qp, pkt, false);
}

/* A SEND or RDMA WRITE packet, whose fields for the other extension headers are not set. */
static inline __attribute__((always_inline)) int nic_xmit_data(struct nic_qp *qp,
								const struct gpunic_pkt *pkt)
{
	return nic_xmit_build(qp, pkt, true);
}

#endif /* GPUNIC_NIC_XMIT_H */
