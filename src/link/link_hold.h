/* SPDX-License-Identifier: MIT */
/*
 * The link layer's internal zero-copy entry points for the engine (src/nic): the frame received
 * and the room reserved are read from the link's own record (link->zc) instead of copied out
 * through the caller's pointers, so that the common call is a few checks and a tail call into
 * the link. Not exported; gpunic_link_rx_peek() and gpunic_link_tx_reserve() are the public
 * forms.
 */
#ifndef GPUNIC_LINK_HOLD_H
#define GPUNIC_LINK_HOLD_H

#include "gpunic/link.h"

/*
 * Hold the next received frame in link->zc (rx_frame, rx_len), unless one is held already.
 * Return: 0 with the frame there; else what gpunic_link_rx_peek() returns, nothing held.
 */
int link_rx_hold(struct gpunic_link *link) __attribute__((visibility("hidden")));

/*
 * Reserve room for a frame of up to @max bytes in link->zc (tx_buf, tx_max).
 * Return: 0 with the room there; else what gpunic_link_tx_reserve() returns, nothing reserved.
 */
int link_tx_hold(struct gpunic_link *link, size_t max) __attribute__((visibility("hidden")));

#endif /* GPUNIC_LINK_HOLD_H */
