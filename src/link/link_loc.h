/* SPDX-License-Identifier: MIT */
/*
 * Private to src/link: what every link shares (stats helpers, the frame-size limit, the
 * Ethernet/IPv4/UDP offsets the udp link reads and writes), grouped by the file that defines it.
 */
#ifndef GPUNIC_LINK_LOC_H
#define GPUNIC_LINK_LOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpunic/link.h"
#include "gpunic/wire.h"
#include "link_hold.h"

/*
 * Every link carries frames up to the largest RoCEv2 frame at PMTU 4096 (wire.h), so a NIC sizes
 * its buffers once whatever link it runs on.
 */
#define LINK_MTU_BYTES ((uint32_t)GPUNIC_MAX_FRAME_BYTES)

/* Offsets from the Ethernet frame start: IPv4 with IHL 5, no VLAN (docs/WIRE.md 1.1). */
enum {
	LINK_ETH_TYPE_OFF = 12,
	LINK_IP4_OFF = GPUNIC_ETH_BYTES,
	LINK_UDP_OFF = LINK_IP4_OFF + GPUNIC_IP4_BYTES,
	LINK_PAYLOAD_OFF = LINK_UDP_OFF + GPUNIC_UDP_BYTES,
};

/* ---------------------------------------------------------------- link.c */

void link_init(struct gpunic_link *link, const struct gpunic_link_ops *ops, unsigned caps,
	       uint32_t mtu);
/* ops->send for a link whose own transmit is tx_reserve/tx_commit (shm and the raw links):
 * the frame's bounds checked, then one copy into the reserved room. */
int link_send_by_reserve(struct gpunic_link *link, const uint8_t *frame, size_t len);
/* ops->recv for a link whose own receive is rx_peek/rx_release (the raw links): one copy. */
int link_recv_by_peek(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len);


static inline uint16_t link_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t link_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void link_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void link_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Opens an AF_INET datagram socket, non-blocking, bound to @ip:@port (host order); -1 + errno. */
int link_udp_socket(uint32_t ip, uint16_t port);

#endif /* GPUNIC_LINK_LOC_H */
