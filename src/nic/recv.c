// SPDX-License-Identifier: MIT
/*
 * The front door (rxe_recv.c's role): every received frame is decoded and checked before the
 * responder (requests) or the completer (responses) sees it, the common frame inline in the
 * poll (recv.h), every other one here. Checks run cheapest first and every failure leaves
 * through the one drop label with its reason counted.
 */
#include <string.h>

#include "nic_loc.h"
#include "recv.h"
#include "wire/wire_loc.h"

void nic_recv_general(struct gpunic_nic *nic, const uint8_t *frame, size_t len)
{
	bool shared = nic->link->caps & GPUNIC_LINK_CAP_SHARED_WIRE;
	enum gpunic_drop_reason reason;
	enum gpunic_wire_err werr;
	struct gpunic_pkt pkt;

	if (shared && nic_arp_input(nic, frame, len))
		return;
	/* every field is written when it succeeds; on a failure none is read */
	werr = wire_decode(frame, len, nic->decode_flags, &pkt, nic->icrc_memo);
	if (werr == GPUNIC_WIRE_ICRC) {
		reason = GPUNIC_DROP_BAD_ICRC;
		goto drop;
	}
	if (werr != GPUNIC_WIRE_OK) {
		if ((unsigned)werr < GPUNIC_WIRE_ERR_MAX)
			nic->cnt.wire_errs[werr]++;
		reason = GPUNIC_DROP_MALFORMED;
		goto drop;
	}
	if (shared && memcmp(pkt.dst_mac, nic->attr.mac, 6)) {
		reason = GPUNIC_DROP_NOT_FOR_US;
		goto drop;
	}
	recv_pkt(nic, &pkt);
	return;

drop:
	nic_count_drop(nic, NULL, reason);
}
