// SPDX-License-Identifier: MIT
/*
 * What all links share: initialisation and close, the zero-copy calls (a link's own ops, or an
 * emulation over send and recv with a bounce buffer), the kernel socket the udp and dgram links
 * both use, and gpunic_link_open_spec(), the text form the CLI takes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link_hold.h"
#include "link_loc.h"
#include "raw.h"

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
	/* the engine's reservation (gpunic_link_send holds none open), so a sent frame takes
	 * the way the engine's do: shm stages a small one and packs it at the commit */
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
		/* counted as received by peek; a frame larger than the caller's room is an error */
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

/* ---------------------------------------------------------------- spec parsing */

bool link_parse_ip4(const char *s, size_t n, uint32_t *ip)
{
	char tmp[INET_ADDRSTRLEN];
	struct in_addr a;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET, tmp, &a) != 1)
		return false;
	*ip = ntohl(a.s_addr);
	return true;
}

/* A decimal port 1..65535 of exactly @n digits, no sign, no spaces. */
static bool parse_port(const char *s, size_t n, uint16_t *port)
{
	uint32_t v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* "IP:PORT" spanning exactly @n characters. */
static bool parse_ip_port(const char *s, size_t n, uint32_t *ip, uint16_t *port)
{
	const char *colon = memchr(s, ':', n);

	if (!colon)
		return false;
	return link_parse_ip4(s, (size_t)(colon - s), ip) &&
	       parse_port(colon + 1, n - (size_t)(colon - s) - 1, port);
}

/*
 * "udp:IP[:PORT]". The spec has no MACs; received frames get locally administered ones made
 * from the addresses (02:00:a.b.c.d for us, and for the sender from its source address), as
 * gpunic's MAC rule says. A udp link is not a shared wire, so nobody filters on them.
 */
static struct gpunic_link *open_udp(const char *s)
{
	struct gpunic_udp_link_attr attr = { .local_port = GPUNIC_ROCE_UDP_PORT };
	const char *colon = strchr(s, ':');
	size_t n = strlen(s);
	bool ok;

	if (colon)
		ok = parse_ip_port(s, n, &attr.local_ip, &attr.local_port);
	else
		ok = link_parse_ip4(s, n, &attr.local_ip);
	if (!ok) {
		errno = EINVAL;
		return NULL;
	}
	gpunic_mac_from_ipv4(attr.local_ip, attr.local_mac);
	return gpunic_link_udp_open(&attr);
}

/* "LOCALIP:PORT,REMOTEIP:PORT" */
static struct gpunic_link *open_dgram(const char *s)
{
	struct gpunic_dgram_link_attr attr = { 0 };
	const char *comma = strchr(s, ',');

	if (!comma || !parse_ip_port(s, (size_t)(comma - s), &attr.local_ip, &attr.local_port) ||
	    !parse_ip_port(comma + 1, strlen(comma + 1), &attr.remote_ip, &attr.remote_port)) {
		errno = EINVAL;
		return NULL;
	}
	return gpunic_link_dgram_open(&attr);
}

/* "NAME,a|b[,create]"; NAME is a POSIX shm name: a '/' and then no other '/'. The leading '/'
 * may be left out ("shm:cable,a" is "shm:/cable,a"), as shm_open's own callers often do. */
static struct gpunic_link *open_shm(const char *s)
{
	struct gpunic_shm_link_attr attr = { 0 };
	char name[NAME_MAX + 1];
	const char *comma = strchr(s, ',');
	const char *end_s;
	size_t n, slash;

	if (!comma)
		goto inval;
	n = (size_t)(comma - s);
	slash = s[0] == '/' ? 0 : 1;
	if (n + slash < 2 || n + slash > NAME_MAX || memchr(s + 1 - slash, '/', n - 1 + slash))
		goto inval;
	name[0] = '/';
	memcpy(name + slash, s, n);
	name[n + slash] = '\0';

	end_s = comma + 1;
	if (end_s[0] == 'a')
		attr.end = GPUNIC_SHM_END_A;
	else if (end_s[0] == 'b')
		attr.end = GPUNIC_SHM_END_B;
	else
		goto inval;
	if (strcmp(end_s + 1, ",create") == 0)
		attr.create = 1;
	else if (end_s[1] != '\0')
		goto inval;

	attr.name = name;
	return gpunic_link_shm_open(&attr);
inval:
	errno = EINVAL;
	return NULL;
}

/* The kinds of link a spec names, by prefix. */
static const struct link_kind {
	const char *prefix;
	struct gpunic_link *(*open)(const char *rest);
} link_kinds[] = {
	{ "udp:", open_udp },
	{ "dgram:", open_dgram },
	{ "shm:", open_shm },
	{ "packet:", link_packet_open_spec },
	{ "xdp:", link_xdp_open_spec },
};

static const struct link_kind *spec_kind(const char *spec)
{
	for (size_t i = 0; spec && i < sizeof(link_kinds) / sizeof(link_kinds[0]); i++)
		if (strncmp(spec, link_kinds[i].prefix, strlen(link_kinds[i].prefix)) == 0)
			return &link_kinds[i];
	return NULL;
}

bool gpunic_link_spec_known(const char *spec)
{
	return spec_kind(spec) != NULL;
}

struct gpunic_link *gpunic_link_open_spec(const char *spec)
{
	const struct link_kind *k = spec_kind(spec);

	if (!k) {
		errno = EINVAL;
		return NULL;
	}
	return k->open(spec + strlen(k->prefix));
}

/* Nanoseconds, not milliseconds: a deadline rounded down to the millisecond could end the
 * wait up to a millisecond before @wait_ms had passed. */
static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct gpunic_link *gpunic_link_open_spec_wait(const char *spec, int wait_ms)
{
	const struct timespec pause = { .tv_nsec = 10 * 1000000L };
	uint64_t deadline = monotonic_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000u;
	bool joining = spec && strncmp(spec, "shm:", 4) == 0 && !strstr(spec, ",create");
	struct gpunic_link *link;
	int err;

	for (;;) {
		link = gpunic_link_open_spec(spec);
		if (link)
			return link;
		err = errno;
		if (!joining || (err != ENOENT && err != EINVAL) || monotonic_ns() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	errno = err;
	return NULL;
}
