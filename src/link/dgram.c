// SPDX-License-Identifier: MIT
/*
 * The dgram link: one whole Ethernet frame per UDP datagram, no header, which is the wire of
 * QEMU's "-netdev socket,udp=REMOTE,localaddr=LOCAL" (docs/WIRE.md 6.2). A guest running Linux rxe
 * plugs in directly. Like QEMU, the socket stays unconnected and takes datagrams from anyone
 * (a connected one would also report ECONNREFUSED while the peer is not up yet), and every
 * frame on the wire reaches us whatever its MAC: GPUNIC_LINK_CAP_SHARED_WIRE.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link_loc.h"

/* Runts are skipped in one recv call, but never more than this many: a flood cannot stall us. */
#define DGRAM_RUNTS_PER_RECV 16

struct dgram_link {
	struct gpunic_link link;
	int fd;
	struct sockaddr_in remote;
};

static struct dgram_link *to_dgram(struct gpunic_link *link)
{
	return (struct dgram_link *)link;
}

static int dgram_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct dgram_link *d = to_dgram(link);
	int err;

	if (len > link->mtu)
		return link_tx_error(link, EMSGSIZE);
	if (len < GPUNIC_ETH_BYTES)
		return link_tx_error(link, EINVAL);
	if (sendto(d->fd, frame, len, MSG_DONTWAIT, (struct sockaddr *)&d->remote,
		   sizeof(d->remote)) < 0) {
		err = errno;
		if (err == EAGAIN || err == ENOBUFS)
			return EAGAIN;
		return link_tx_error(link, err);
	}
	link_count_tx(link, len);
	return 0;
}

static int dgram_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct dgram_link *d = to_dgram(link);
	size_t room = cap < link->mtu ? cap : link->mtu;
	ssize_t n;
	int err;

	for (int i = 0; i < DGRAM_RUNTS_PER_RECV; i++) {
		/* MSG_TRUNC returns the datagram's real length, so oversized ones are seen. */
		n = recv(d->fd, buf, room, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			err = errno;
			return err == EAGAIN ? EAGAIN : link_rx_error(link, err);
		}
		if ((size_t)n > room)
			return link_rx_error(link, EMSGSIZE);
		if ((size_t)n < GPUNIC_ETH_BYTES) {
			link->stats.rx_errors++;
			continue;
		}
		link_count_rx(link, (size_t)n);
		*len = (size_t)n;
		return 0;
	}
	return EAGAIN;
}

static void dgram_close(struct gpunic_link *link)
{
	struct dgram_link *d = to_dgram(link);

	close(d->fd);
	free(d);
}

static const struct gpunic_link_ops dgram_ops = {
	.name = "dgram",
	.send = dgram_send,
	.recv = dgram_recv,
	.close = dgram_close,
};

struct gpunic_link *gpunic_link_dgram_open(const struct gpunic_dgram_link_attr *attr)
{
	struct dgram_link *d;
	int err;

	if (!attr || attr->local_port == 0 || attr->remote_port == 0) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	link_init(&d->link, &dgram_ops, GPUNIC_LINK_CAP_SHARED_WIRE, LINK_MTU_BYTES);
	d->remote.sin_family = AF_INET;
	d->remote.sin_addr.s_addr = htonl(attr->remote_ip);
	d->remote.sin_port = htons(attr->remote_port);

	d->fd = link_udp_socket(attr->local_ip, attr->local_port);
	if (d->fd < 0) {
		err = errno;
		free(d);
		errno = err;
		return NULL;
	}
	return &d->link;
}
