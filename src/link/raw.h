/* SPDX-License-Identifier: MIT */
/*
 * Private to src/link: what the raw Ethernet links (packet.c, xdp.c) share: the interface they
 * open (index, MTU, MAC) and the reason an open failed, said out loud.
 */
#ifndef GPUNIC_LINK_RAW_H
#define GPUNIC_LINK_RAW_H

#include <stdint.h>

#include "link_loc.h"

struct raw_if {
	const char *name;
	int index;
	uint32_t mtu;           /* the interface's IP MTU */
	uint8_t mac[6];         /* its own address */
	uint8_t use_mac[6];     /* the one gpunic sends from and receives on */
};

/* Looks @attr's interface up in this network namespace; 0 or an errno, with the reason said. */
int raw_if_lookup(const char *kind, const struct gpunic_raw_link_attr *attr, struct raw_if *rif);

/* The largest frame both the interface and a ring slot of @slot_bytes carry. */
uint32_t raw_link_mtu(const struct raw_if *rif, uint32_t slot_bytes);

/*
 * Makes rif->use_mac an address @fd's interface accepts (PACKET_MR_UNICAST on an AF_PACKET
 * socket, held as long as @fd is open) when it is not the interface's own. 0 or an errno.
 */
int raw_add_mac(const char *kind, int fd, const struct raw_if *rif);

/* Prints "@kind link: ..." at error level, whatever the log level; sets errno to @err, NULL. */
void *raw_fail(int err, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The reason for EPERM, ENODEV and the like, in the words raw_fail() uses. */
void *raw_fail_errno(int err, const char *kind, const char *what, const char *ifname);

#endif /* GPUNIC_LINK_RAW_H */
