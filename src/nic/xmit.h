/* SPDX-License-Identifier: MIT */
/*
 * nic_xmit() inline, for the requester's common case (req.c), where the calls into net.c and
 * on cost more than a small frame's headers; everything else calls nic_xmit (net.c).
 */
#ifndef GPUNIC_NIC_XMIT_H
#define GPUNIC_NIC_XMIT_H

#include <errno.h>

#include "link/link_hold.h"
#include "nic_loc.h"
#include "wire/tmpl.h"
#include "wire/wire_loc.h"

/* net.c, out of line: the template built at a QP's first frame after a modify; what a frame
 * that cannot be built, or that the link lost, logs (both return 0, the frame gone). */
void nic_xmit_template(struct nic_qp *qp);
int nic_xmit_unbuilt(const struct gpunic_pkt *pkt, int err);
int nic_xmit_lost(int err);

/*
 * Build the frame in the link's own buffer (the shm slot itself: no copy) from the QP's
 * template, then hand it over. @pkt gives what changes per frame: opcode, SE, A, PSN, the
 * extension headers and the payload.
 */
static inline __attribute__((always_inline)) int nic_xmit_inline(struct nic_qp *qp,
								  struct gpunic_pkt *pkt)
{
	struct gpunic_nic *nic = qp->nic;
	/* looked up once, for the size and the encoding both */
	const struct gpunic_opcode_info *info = wire_opcode_info(pkt->opcode);
	size_t len, max = info ? wire_frame_size(info, pkt->paylen) : 0;
	uint8_t *buf;
	int err;

	if (!qp->tx_tmpl_ok)
		nic_xmit_template(qp);
	err = max ? link_tx_hold(nic->link, max) : EINVAL;
	if (err == EAGAIN) {
		nic->cnt.tx_busy++;
		return EAGAIN;
	}
	if (err)
		return nic_xmit_unbuilt(pkt, err);
	buf = nic->link->zc.tx_buf;
	/* no payload where one is due: an empty frame, which the link refuses */
	len = pkt->paylen && !pkt->payload ? 0 : wire_encode_tmpl(&qp->tx_tmpl, pkt, info, max, buf);
	nic_capture_tap(nic, buf, len);
	err = link_tx_commit(nic->link, len);
	if (err == EAGAIN) {
		gpunic_link_tx_abort(nic->link);
		nic->cnt.tx_busy++;
		return EAGAIN;
	}
	/* the wire lost it: RC retransmits, UC loses the message, as on a real link */
	if (err)
		return nic_xmit_lost(err);
	nic->cnt.tx_frames++;
	nic->cnt.tx_bytes += len;
	qp->cnt.tx_packets++;
	qp->cnt.tx_bytes += pkt->paylen;
	return 0;
}

#endif /* GPUNIC_NIC_XMIT_H */
