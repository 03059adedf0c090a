// SPDX-License-Identifier: MIT
/*
 * TCP for the out-of-band exchanges: every wait is bounded by a deadline, and while it lasts a
 * NIC given to it keeps running, so that it answers ARP and retransmits RC frames meanwhile
 * (the peer may be connecting its QP while we wait for its message). Sockets are non-blocking;
 * a NIC is polled between 1 ms poll() slices.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/endpoint.h"

#define TCP_RETRY_MS 10

static const struct gpunic_tcp_wait no_wait = { 0 };

/* Wait for @events on @fd until the deadline. Return: 0, ETIMEDOUT or poll's error. */
static int wait_fd(int fd, short events, const struct gpunic_tcp_wait *w)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n, slice;

	for (;;) {
		slice = gpunic_ep_ms_left(w->deadline_ns, -1);
		if (slice == 0)
			return ETIMEDOUT;
		if (w->nic)
			slice = 1;
		n = poll(&p, 1, slice);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return errno;
		if (w->nic)
			while (gpunic_nic_poll(w->nic, 64) > 0)
				;
	}
}

/* A pause between connect attempts, running the NIC through it. */
static void retry_pause(const struct gpunic_tcp_wait *w)
{
	struct timespec ms = { .tv_nsec = 1000000L };

	for (int i = 0; i < TCP_RETRY_MS; i++) {
		if (w->nic)
			gpunic_nic_poll(w->nic, 64);
		nanosleep(&ms, NULL);
	}
}

int gpunic_tcp_listen(const char *bind_addr, uint16_t port, int *lfd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd, one = 1, err;

	if (bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1)
		return EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		err = errno;
		close(fd);
		return err;
	}
	*lfd = fd;
	return 0;
}

int gpunic_tcp_accept(int lfd, const struct gpunic_tcp_wait *w, int *fd)
{
	int err, c;

	w = w ? w : &no_wait;
	for (;;) {
		err = wait_fd(lfd, POLLIN, w);
		if (err)
			return err;
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return errno;
	}
	*fd = c;
	return 0;
}

/* One attempt on @ai, bounded by the deadline. */
static int try_connect(const struct addrinfo *ai, const struct gpunic_tcp_wait *w, int *out)
{
	socklen_t sl = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		err = errno;
	if (!err)
		err = wait_fd(fd, POLLOUT, w);
	if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl))
		err = errno;
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

int gpunic_tcp_connect(const char *host, uint16_t port, const struct gpunic_tcp_wait *w, int *fd)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char service[8];
	int err, last = 0;

	w = w ? w : &no_wait;
	snprintf(service, sizeof(service), "%u", port);
	if (!host || getaddrinfo(host, service, &hints, &ai))
		return EHOSTUNREACH;
	for (;;) {
		err = try_connect(ai, w, fd);
		/* the server may not listen yet: it is started at about the same time */
		if ((err != ECONNREFUSED && err != ENETUNREACH) ||
		    gpunic_ep_ms_left(w->deadline_ns, 1) == 0)
			break;
		last = err;
		retry_pause(w);
	}
	freeaddrinfo(ai);
	/* out of time while retrying: what the server kept answering says more */
	return err == ETIMEDOUT && last ? last : err;
}

int gpunic_tcp_read_some(int fd, void *buf, size_t len, const struct gpunic_tcp_wait *w,
			 size_t *got)
{
	size_t off = 0;
	ssize_t n;
	int err = 0;

	w = w ? w : &no_wait;
	while (off < len) {
		n = recv(fd, (uint8_t *)buf + off, len - off, 0);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			err = errno;
			break;
		}
		err = wait_fd(fd, POLLIN, w);
		if (err)
			break;
	}
	*got = off;
	return err;
}

int gpunic_tcp_read_full(int fd, void *buf, size_t len, const struct gpunic_tcp_wait *w)
{
	size_t got;
	int err = gpunic_tcp_read_some(fd, buf, len, w, &got);

	if (err)
		return err;
	return got == len ? 0 : EPIPE;
}

int gpunic_tcp_write_full(int fd, const void *buf, size_t len, const struct gpunic_tcp_wait *w)
{
	size_t off = 0;
	ssize_t n;
	int err;

	w = w ? w : &no_wait;
	while (off < len) {
		n = send(fd, (const uint8_t *)buf + off, len - off, MSG_NOSIGNAL);
		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno;
		err = wait_fd(fd, POLLOUT, w);
		if (err)
			return err;
	}
	return 0;
}

void gpunic_tcp_addrs(int fd, uint32_t *local_ip, uint32_t *peer_ip)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (local_ip && getsockname(fd, (struct sockaddr *)&a, &alen) == 0 &&
	    a.sin_family == AF_INET)
		*local_ip = ntohl(a.sin_addr.s_addr);
	alen = sizeof(a);
	if (peer_ip && getpeername(fd, (struct sockaddr *)&a, &alen) == 0 &&
	    a.sin_family == AF_INET)
		*peer_ip = ntohl(a.sin_addr.s_addr);
}
