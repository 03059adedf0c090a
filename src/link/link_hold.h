/* SPDX-License-Identifier: MIT */
/*
 * The link layer's internal receive entry point for the engine (src/nic): the frame the
 * zero-copy receive holds, read from the link's own record (link->zc) instead of copied out
 * through the caller's pointers, so that the common call is a check and a tail call into the
 * link. Not exported; gpunic_link_rx_peek() is the public form.
 */
#ifndef GPUNIC_LINK_HOLD_H
#define GPUNIC_LINK_HOLD_H

#include "gpunic/link.h"

/*
 * Hold the next received frame in link->zc (rx_frame, rx_len), unless one is held already.
 * Return: 0 with the frame there; else what gpunic_link_rx_peek() returns, nothing held.
 */
int link_rx_hold(struct gpunic_link *link) __attribute__((visibility("hidden")));

#endif /* GPUNIC_LINK_HOLD_H */
