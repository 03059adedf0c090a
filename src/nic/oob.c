// SPDX-License-Identifier: MIT
/*
 * Out-of-band exchange of what two sides need to connect a QP (and one buffer), over TCP. The
 * message has a fixed layout in network byte order with a magic and a version, and what arrives
 * is checked before anyone uses it: the peer is not trusted to send sane numbers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nic_loc.h"

#define OOB_MAGIC 0x47504E51u	/* "GPNQ" */
#define OOB_VERSION 1u
#define OOB_RETRY_MS 10

/* magic, version, qpn, psn, ip, mac[6], udp_port, va, rkey, len */
enum {
	OOB_OFF_MAGIC = 0,
	OOB_OFF_VERSION = 4,
	OOB_OFF_QPN = 8,
	OOB_OFF_PSN = 12,
	OOB_OFF_IP = 16,
	OOB_OFF_MAC = 20,
	OOB_OFF_PORT = 26,
	OOB_OFF_VA = 28,
	OOB_OFF_RKEY = 36,
	OOB_OFF_LEN = 40,
	OOB_MSG_BYTES = 44,
};

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void oob_encode(const struct gpunic_qp_info *in, uint8_t *m)
{
	uint16_t port = htons(in->udp_port);

	put32(m + OOB_OFF_MAGIC, OOB_MAGIC);
	put32(m + OOB_OFF_VERSION, OOB_VERSION);
	put32(m + OOB_OFF_QPN, in->qpn);
	put32(m + OOB_OFF_PSN, in->psn);
	put32(m + OOB_OFF_IP, in->ip);
	memcpy(m + OOB_OFF_MAC, in->mac, 6);
	memcpy(m + OOB_OFF_PORT, &port, 2);
	put32(m + OOB_OFF_VA, (uint32_t)(in->va >> 32));
	put32(m + OOB_OFF_VA + 4, (uint32_t)in->va);
	put32(m + OOB_OFF_RKEY, in->rkey);
	put32(m + OOB_OFF_LEN, in->len);
}

static int oob_decode(const uint8_t *m, struct gpunic_qp_info *out)
{
	uint16_t port;

	if (get32(m + OOB_OFF_MAGIC) != OOB_MAGIC || get32(m + OOB_OFF_VERSION) != OOB_VERSION)
		return EPROTO;
	out->qpn = get32(m + OOB_OFF_QPN);
	out->psn = get32(m + OOB_OFF_PSN);
	out->ip = get32(m + OOB_OFF_IP);
	memcpy(out->mac, m + OOB_OFF_MAC, 6);
	memcpy(&port, m + OOB_OFF_PORT, 2);
	out->udp_port = ntohs(port);
	out->va = (uint64_t)get32(m + OOB_OFF_VA) << 32 | get32(m + OOB_OFF_VA + 4);
	out->rkey = get32(m + OOB_OFF_RKEY);
	out->len = get32(m + OOB_OFF_LEN);
	/* QPNs and PSNs are 24-bit on the wire; QPN 0 and 1 are never ours to connect */
	if (out->qpn > 0xFFFFFFu || out->qpn < 2 || out->psn > GPUNIC_PSN_MASK || !out->ip ||
	    (out->len && out->va > UINT64_MAX - out->len))
		return EPROTO;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return errno;
	}
}

static int io_all(int fd, uint8_t *buf, size_t len, bool out, int64_t deadline)
{
	size_t done = 0;
	ssize_t n;
	int err;

	while (done < len) {
		err = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
		if (err)
			return err;
		n = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL) :
			  recv(fd, buf + done, len - done, 0);
		if (n == 0)
			return ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return errno;
		}
		done += (size_t)n;
	}
	return 0;
}

static int oob_accept(uint16_t port, int64_t deadline, int *out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, fd, cfd, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		err = errno;
		close(fd);
		return err;
	}
	err = wait_fd(fd, POLLIN, deadline);
	cfd = err ? -1 : accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!err && cfd < 0)
		err = errno;
	close(fd);
	*out = cfd;
	return err;
}

static int try_connect(const struct addrinfo *ai, int64_t deadline, int *out)
{
	socklen_t sl = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		err = errno;
	if (!err)
		err = wait_fd(fd, POLLOUT, deadline);
	if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl))
		err = errno;
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* The server may not listen yet: retry refused connections until the deadline. */
static int oob_connect(const char *host, uint16_t port, int64_t deadline, int *out)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct timespec pause = { .tv_nsec = OOB_RETRY_MS * 1000000L };
	char service[8];
	int err;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &ai))
		return EHOSTUNREACH;
	for (;;) {
		err = try_connect(ai, deadline, out);
		if (err != ECONNREFUSED || now_ms() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	freeaddrinfo(ai);
	return err == ECONNREFUSED ? ETIMEDOUT : err;
}

int gpunic_oob_exchange(const char *host, uint16_t port, int timeout_ms,
			const struct gpunic_qp_info *local, struct gpunic_qp_info *remote)
{
	uint8_t out[OOB_MSG_BYTES], in[OOB_MSG_BYTES];
	int64_t deadline = now_ms() + timeout_ms;
	int fd = -1, one = 1, err;

	if (!local || !remote || !port || timeout_ms <= 0)
		return EINVAL;
	err = host ? oob_connect(host, port, deadline, &fd) : oob_accept(port, deadline, &fd);
	if (err)
		return err;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	oob_encode(local, out);
	err = io_all(fd, out, sizeof(out), true, deadline);
	if (!err)
		err = io_all(fd, in, sizeof(in), false, deadline);
	close(fd);
	if (!err)
		err = oob_decode(in, remote);
	return err;
}
