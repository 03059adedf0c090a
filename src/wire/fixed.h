/* SPDX-License-Identifier: MIT */
/*
 * Which bytes of a RoCEv2 frame stay the same from one frame of a connection to the next: what
 * a link may send once, as a template, and then leave out of the frames that match it (the shm
 * link's one-line frames, src/link/link_hold.h). The wire layer says which bytes those are;
 * the link compares and carries byte ranges without knowing what they hold.
 *
 * The frames of a connection that have one length and one opcode repeat their Ethernet, IPv4
 * and UDP headers (lengths included: a gpunic frame's IP ID is 0, so its IPv4 checksum changes
 * only with its length) and their BTH up to the destination QP: bytes 0-49, the head. Bytes 50-53 (the BTH's AckReq bit and
 * PSN) change with every frame. A frame whose BTH is followed by a RETH (RDMA WRITE FIRST and
 * ONLY, with or without immediate; RDMA READ request) has the RETH's address at 54-61, which
 * changes, and its R_Key and DMA length at 62-69, which a ring of equal slots repeats: the tail.
 */
#ifndef GPUNIC_WIRE_FIXED_H
#define GPUNIC_WIRE_FIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_loc.h"

enum {
	/* L2-L4 and the BTH's opcode, flags, P_Key and destination QP */
	WIRE_FIXED_HEAD = GPUNIC_L2L4_BYTES + 8,
	/* the RETH's R_Key and DMA length: past the PSN and the RETH's address */
	WIRE_FIXED_TAIL_OFF = WIRE_FIXED_HEAD + 4 + 8,
	WIRE_FIXED_TAIL_END = WIRE_FIXED_TAIL_OFF + 8,
};

_Static_assert(WIRE_FIXED_TAIL_OFF == GPUNIC_L2L4_BYTES + GPUNIC_BTH_BYTES + 8,
	       "the tail is the RETH's R_Key and length, right after the BTH");

/*
 * Whether the frames of @frame's connection repeat the tail as well as the head: @frame is
 * long enough to hold it and its opcode puts a RETH right after the BTH (the opcode table,
 * opcode.c). Any other frame repeats the head only.
 */
static inline bool wire_fixed_tail(const uint8_t *frame, size_t len)
{
	const struct gpunic_opcode_info *info;

	if (len < WIRE_FIXED_TAIL_END)
		return false;
	info = wire_opcode_info(frame[GPUNIC_L2L4_BYTES]);
	return info && (info->mask & GPUNIC_MASK_RETH) && info->reth_off == GPUNIC_BTH_BYTES;
}

#endif /* GPUNIC_WIRE_FIXED_H */
