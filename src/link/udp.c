// SPDX-License-Identifier: MIT
/*
 * The udp link: RoCEv2 through a kernel UDP socket, so it runs on any network. The kernel owns
 * L2-L4: on send we check the frame's Ethernet/IPv4/UDP headers and hand the kernel only the UDP
 * payload; on receive we put synthesised headers in front of the payload.
 *
 * The NIC computes the ICRC over the IPv4 header it built, so that header must be the one that
 * goes out. An unconnected socket with IP_PMTUDISC_DO makes the kernel send IP ID 0 and DF on
 * every datagram (docs/WIRE.md 1.4), which is what the NIC writes; TOS and TTL are masked by
 * the ICRC. On receive the sender's ID and flags are gone, hence GPUNIC_LINK_CAP_RX_NO_ICRC.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link_loc.h"

#define IP4_VER_IHL 0x45
#define IP4_FLAG_DF 0x4000
#define IP4_FLAG_MF 0x2000
#define IP4_FRAG_OFF_MASK 0x1fff
#define IP4_PROTO_UDP 17
#define IP4_DEFAULT_TTL 64

struct udp_link {
	struct gpunic_link link;
	int fd;
	uint32_t local_ip;
	uint16_t local_port;
	uint8_t local_mac[6];
	uint8_t peer_mac[6];
	bool peer_mac_set;	/* else each frame's from its source address */
};

static struct udp_link *to_udp(struct gpunic_link *link)
{
	return (struct udp_link *)link;
}

/* RFC 1071 checksum of an IPv4 header of @len bytes (even), checksum field included. */
static uint16_t ip4_header_checksum(const uint8_t *hdr, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += link_get_be16(hdr + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Checks what the kernel is about to rebuild: IPv4 without options or fragmentation, UDP, our own
 * address and port as source, lengths inside the frame. Sets the destination and the UDP payload
 * (trailing Ethernet padding excluded). Return: 0 or EINVAL.
 */
static int check_tx_frame(const struct udp_link *u, const uint8_t *f, size_t len,
			  struct sockaddr_in *dst, size_t *payload_len)
{
	const uint8_t *ip = f + LINK_IP4_OFF, *udp = f + LINK_UDP_OFF;
	size_t ip_len, udp_len;

	if (len < LINK_PAYLOAD_OFF || link_get_be16(f + LINK_ETH_TYPE_OFF) != GPUNIC_ETHERTYPE_IPV4)
		return EINVAL;
	if (ip[0] != IP4_VER_IHL || ip[9] != IP4_PROTO_UDP ||
	    (link_get_be16(ip + 6) & (IP4_FLAG_MF | IP4_FRAG_OFF_MASK)))
		return EINVAL;
	ip_len = link_get_be16(ip + 2);
	udp_len = link_get_be16(udp + 4);
	if (ip_len < GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES || ip_len > len - GPUNIC_ETH_BYTES ||
	    udp_len != ip_len - GPUNIC_IP4_BYTES)
		return EINVAL;
	if (link_get_be32(ip + 12) != u->local_ip || link_get_be16(udp) != u->local_port)
		return EINVAL;

	memset(dst, 0, sizeof(*dst));
	dst->sin_family = AF_INET;
	memcpy(&dst->sin_addr.s_addr, ip + 16, 4);
	memcpy(&dst->sin_port, udp + 2, 2);
	*payload_len = udp_len - GPUNIC_UDP_BYTES;
	return 0;
}

static int udp_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct udp_link *u = to_udp(link);
	struct sockaddr_in dst;
	size_t payload_len;
	int err;

	if (len > link->mtu)
		return link_tx_error(link, EMSGSIZE);
	err = check_tx_frame(u, frame, len, &dst, &payload_len);
	if (err)
		return link_tx_error(link, err);
	if (sendto(u->fd, frame + LINK_PAYLOAD_OFF, payload_len, MSG_DONTWAIT,
		   (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		err = errno;
		/* A full socket buffer or qdisc is back-pressure, not an error. */
		if (err == EAGAIN || err == ENOBUFS)
			return EAGAIN;
		return link_tx_error(link, err);
	}
	link_count_tx(link, len);
	return 0;
}

/* Ancillary data we asked for: where the datagram was sent, its TOS and TTL. */
struct rx_meta {
	uint32_t dst_ip;
	uint8_t tos;
	uint8_t ttl;
};

static void read_cmsgs(struct msghdr *msg, struct rx_meta *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != IPPROTO_IP)
			continue;
		if (c->cmsg_type == IP_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			m->dst_ip = ntohl(pi.ipi_addr.s_addr);
		} else if (c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
			m->tos = *CMSG_DATA(c);
		} else if (c->cmsg_type == IP_TTL && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int ttl;

			memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
			m->ttl = (uint8_t)ttl;
		}
	}
}

/* Ethernet + IPv4 (ID 0, DF, no options) + UDP (checksum 0) in front of @payload_len bytes. */
static void synth_headers(const struct udp_link *u, uint8_t *f, size_t payload_len,
			  const struct sockaddr_in *src, const struct rx_meta *m)
{
	uint8_t *ip = f + LINK_IP4_OFF, *udp = f + LINK_UDP_OFF;

	memcpy(f, u->local_mac, 6);
	/* the sender's MAC by the rule every gpunic endpoint follows, unless the caller named
	 * one: the kernel that carried the datagram kept none */
	if (u->peer_mac_set)
		memcpy(f + 6, u->peer_mac, 6);
	else
		gpunic_mac_from_ipv4(ntohl(src->sin_addr.s_addr), f + 6);
	link_put_be16(f + LINK_ETH_TYPE_OFF, GPUNIC_ETHERTYPE_IPV4);

	ip[0] = IP4_VER_IHL;
	ip[1] = m->tos;
	link_put_be16(ip + 2, (uint16_t)(GPUNIC_IP4_BYTES + GPUNIC_UDP_BYTES + payload_len));
	link_put_be16(ip + 4, 0);
	link_put_be16(ip + 6, IP4_FLAG_DF);
	ip[8] = m->ttl;
	ip[9] = IP4_PROTO_UDP;
	link_put_be16(ip + 10, 0);
	memcpy(ip + 12, &src->sin_addr.s_addr, 4);
	link_put_be32(ip + 16, m->dst_ip);
	link_put_be16(ip + 10, ip4_header_checksum(ip, GPUNIC_IP4_BYTES));

	memcpy(udp, &src->sin_port, 2);
	link_put_be16(udp + 2, u->local_port);
	link_put_be16(udp + 4, (uint16_t)(GPUNIC_UDP_BYTES + payload_len));
	link_put_be16(udp + 6, 0);
}

static int udp_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct udp_link *u = to_udp(link);
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + 2 * CMSG_SPACE(sizeof(int))];
	} control;
	struct rx_meta meta = { .dst_ip = u->local_ip, .ttl = IP4_DEFAULT_TTL };
	struct sockaddr_in src;
	struct iovec iov = { 0 };
	struct msghdr msg = {
		.msg_name = &src,
		.msg_namelen = sizeof(src),
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	size_t room, frame_len;
	ssize_t n;

	/* Below the header size the datagram is still consumed (iov_len 0), then refused. */
	room = cap < link->mtu ? cap : link->mtu;
	if (room > LINK_PAYLOAD_OFF) {
		iov.iov_base = buf + LINK_PAYLOAD_OFF;
		iov.iov_len = room - LINK_PAYLOAD_OFF;
	}
	n = recvmsg(u->fd, &msg, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0) {
		int err = errno;

		return err == EAGAIN ? EAGAIN : link_rx_error(link, err);
	}
	frame_len = LINK_PAYLOAD_OFF + (size_t)n;
	if (frame_len > room)
		return link_rx_error(link, EMSGSIZE);
	if (msg.msg_namelen < sizeof(src) || src.sin_family != AF_INET)
		return link_rx_error(link, EPROTO);

	read_cmsgs(&msg, &meta);
	synth_headers(u, buf, (size_t)n, &src, &meta);
	link_count_rx(link, frame_len);
	*len = frame_len;
	return 0;
}

static void udp_close(struct gpunic_link *link)
{
	struct udp_link *u = to_udp(link);

	close(u->fd);
	free(u);
}

static const struct gpunic_link_ops udp_ops = {
	.name = "udp",
	.send = udp_send,
	.recv = udp_recv,
	.close = udp_close,
};

static int set_int_opt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) < 0 ? errno : 0;
}

struct gpunic_link *gpunic_link_udp_open(const struct gpunic_udp_link_attr *attr)
{
	struct udp_link *u;
	int err;

	if (!attr || attr->local_port == 0) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	link_init(&u->link, &udp_ops, GPUNIC_LINK_CAP_RX_NO_ICRC, LINK_MTU_BYTES);
	u->link.bound_ip = attr->local_ip;
	u->link.bound_port = attr->local_port;
	u->local_ip = attr->local_ip;
	u->local_port = attr->local_port;
	memcpy(u->local_mac, attr->local_mac, 6);
	memcpy(u->peer_mac, attr->peer_mac, 6);
	u->peer_mac_set = memcmp(attr->peer_mac, (uint8_t[6]){ 0 }, 6) != 0;

	u->fd = link_udp_socket(attr->local_ip, attr->local_port);
	if (u->fd < 0) {
		err = errno;
		goto err_free;
	}
	/* DF on every datagram, hence IP ID 0 on an unconnected socket (docs/WIRE.md 1.4). */
	err = set_int_opt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
	if (!err)
		err = set_int_opt(u->fd, IPPROTO_IP, IP_PKTINFO, 1);
	if (!err)
		err = set_int_opt(u->fd, IPPROTO_IP, IP_RECVTOS, 1);
	if (!err)
		err = set_int_opt(u->fd, IPPROTO_IP, IP_RECVTTL, 1);
	if (err)
		goto err_close;
	return &u->link;

err_close:
	close(u->fd);
err_free:
	free(u);
	errno = err;
	return NULL;
}
