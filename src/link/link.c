// SPDX-License-Identifier: MIT
/*
 * What all links share: initialisation and close, the zero-copy calls (a link's own ops, or an
 * emulation over send and recv with a bounce buffer) and the kernel socket the udp and dgram
 * links both use. Opening a link by its text form is spec.c's: this file calls no backend.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link_hold.h"
#include "link_loc.h"

void link_init(struct gpunic_link *link, const struct gpunic_link_ops *ops, unsigned caps,
	       uint32_t mtu)
{
	memset(link, 0, sizeof(*link));
	link->ops = ops;
	link->caps = caps;
	link->mtu = mtu;
}

void gpunic_link_close(struct gpunic_link *link)
{
	if (!link)
		return;
	/* Links made outside src/link (tests, the fuzzer, the CLI's wrappers) come here too. */
	free(link->zc.bounce);
	link->zc.bounce = NULL;
	link->ops->close(link);
}

/* ---------------------------------------------------------------- zero-copy */

void link_pack_take_tmpl(uint8_t *tmpl, bool *tail, const uint8_t *f, size_t len)
{
	/* A fixed-size copy: past a shorter frame's end it takes bytes of the slot, which are
	 * never compared. */
	memcpy(tmpl, f, LINK_PACK_TMPL_BYTES);
	*tail = wire_fixed_tail(f, len);
}

/* Each half of the bounce buffer starts on a cache line. */
#define LINK_BOUNCE_ALIGN 64u

void gpunic_mac_from_ipv4(uint32_t ip, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0x00;
	link_put_be32(mac + 2, ip);
}

static size_t bounce_half(const struct gpunic_link *link)
{
	size_t n = link->mtu ? link->mtu : 1;

	return (n + LINK_BOUNCE_ALIGN - 1) & ~(size_t)(LINK_BOUNCE_ALIGN - 1);
}

/* The emulation's buffers, one MTU for tx then one for rx, made on first use. */
static uint8_t *bounce(struct gpunic_link *link, bool rx)
{
	if (!link->zc.bounce)
		link->zc.bounce = aligned_alloc(LINK_BOUNCE_ALIGN, 2 * bounce_half(link));
	if (!link->zc.bounce)
		return NULL;
	return link->zc.bounce + (rx ? bounce_half(link) : 0);
}

/* tx_reserve emulated with the bounce buffer, for links that only send. */
int link_tx_bounce(struct gpunic_link *link)
{
	uint8_t *room = bounce(link, false);

	if (!room)
		return link_tx_error(link, ENOMEM);
	link->zc.tx_buf = room;
	return 0;
}

int gpunic_link_tx_reserve(struct gpunic_link *link, size_t max, uint8_t **buf)
{
	int err = link_tx_hold(link, max);

	if (err)
		return err;
	*buf = link->zc.tx_buf;
	return 0;
}

int link_tx_commit_bad(struct gpunic_link *link)
{
	gpunic_link_tx_abort(link);
	return link_tx_error(link, EINVAL);
}

int gpunic_link_tx_commit(struct gpunic_link *link, size_t len)
{
	return link_tx_commit(link, len);
}

void gpunic_link_tx_abort(struct gpunic_link *link)
{
	if (!link->zc.tx_buf)
		return;
	if (link->ops->tx_abort)
		link->ops->tx_abort(link);
	link->zc.tx_buf = NULL;
}

/* rx_peek emulated over recv, into the bounce buffer; out of line, as it is rarely used. Like
 * every link's rx_peek it hands out a frame only on success. */
int link_rx_bounce(struct gpunic_link *link)
{
	uint8_t *room = bounce(link, true);
	size_t n;
	int err;

	if (!room)
		return link_rx_error(link, ENOMEM);
	err = link->ops->recv(link, room, link->mtu, &n);
	if (!err) {
		link->zc.rx_frame = room;
		link->zc.rx_len = n;
	}
	return err;
}

int gpunic_link_rx_peek(struct gpunic_link *link, const uint8_t **frame, size_t *len)
{
	int err = link_rx_hold(link);

	if (err)
		return err;
	*frame = link->zc.rx_frame;
	*len = link->zc.rx_len;
	return 0;
}

void gpunic_link_rx_release(struct gpunic_link *link)
{
	link_rx_release(link);
}

/* ---------------------------------------------------------------- kernel sockets */

/* Room for a few hundred full frames, so a burst is not dropped before the poller runs. */
#define LINK_SOCK_BUF_BYTES (4 << 20)

int link_udp_socket(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(ip),
	};
	int buf = LINK_SOCK_BUF_BYTES;
	int fd, err;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* Best effort: the kernel caps these at net.core.[rw]mem_max, which is fine. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int link_send_by_reserve(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	int err;

	if (len > link->mtu)
		return link_tx_error(link, EMSGSIZE);
	if (len < GPUNIC_ETH_BYTES)
		return link_tx_error(link, EINVAL);
	/* Reserve as the engine does (gpunic_link_send holds no reservation open), so that a
	 * frame sent this way goes out as the engine's do: shm stages a small one and packs it
	 * at the commit. */
	err = link_tx_hold(link, len);
	if (err)
		return err;
	memcpy(link->zc.tx_buf, frame, len);
	err = link_tx_commit(link, len);
	if (err == EAGAIN)
		gpunic_link_tx_abort(link);
	return err;
}

int link_recv_by_peek(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	const uint8_t *f;
	size_t n;
	int err = link->ops->rx_peek(link, &f, &n);

	if (err)
		return err;
	if (n > cap) {
		/* rx_peek counted it as received; a frame larger than the caller's room is an
		 * error instead. */
		link->stats.rx_frames--;
		link->stats.rx_bytes -= n;
		link->ops->rx_release(link);
		return link_rx_error(link, EMSGSIZE);
	}
	memcpy(buf, f, n);
	*len = n;
	link->ops->rx_release(link);
	return 0;
}
