// SPDX-License-Identifier: MIT
/*
 * perftest-compatible out-of-band exchange (see perf_oob.h for the wire format and its order).
 * Everything that arrives is checked before use: the key message must parse field by field,
 * the version must be a string, the MTU a small number.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf_oob.h"

#define OOB_ERR(...) fprintf(stderr, "gpunic perf: " __VA_ARGS__)
#define OOB_RETRY_MS 20
#define GN_EXT_MAGIC0 'g'
#define GN_EXT_MAGIC1 'n'
#define GN_EXT_VERSION 1

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait until @fd is ready for @events, at most @timeout_ms (0: forever). */
static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	return n == 0 ? ETIMEDOUT : 0;
}

static int read_full(struct perf_oob *o, void *buf, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;
	int err;

	while (len) {
		err = wait_fd(o->fd, POLLIN, o->timeout_ms);
		if (err)
			return err;
		n = read(o->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_full(struct perf_oob *o, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(o->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void note_addrs(struct perf_oob *o)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int one = 1;

	setsockopt(o->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (getsockname(o->fd, (struct sockaddr *)&a, &alen) == 0 && a.sin_family == AF_INET)
		o->local_ip = ntohl(a.sin_addr.s_addr);
	alen = sizeof(a);
	if (getpeername(o->fd, (struct sockaddr *)&a, &alen) == 0 && a.sin_family == AF_INET)
		o->peer_ip = ntohl(a.sin_addr.s_addr);
}

int perf_oob_connect(struct perf_oob *o, const char *host, uint16_t port, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	uint64_t deadline = mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	struct timespec pause = { .tv_nsec = OOB_RETRY_MS * 1000000L };
	char service[8];
	int err, fd;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->client = true;
	o->timeout_ms = timeout_ms;
	snprintf(service, sizeof(service), "%u", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err) {
		OOB_ERR("cannot resolve %s: %s\n", host, gai_strerror(err));
		return EHOSTUNREACH;
	}
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = errno;
			break;
		}
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			o->fd = fd;
			err = 0;
			break;
		}
		err = errno;
		close(fd);
		/* the server may not listen yet: perftest users start it first, we are lenient */
		if ((err != ECONNREFUSED && err != ETIMEDOUT && err != ENETUNREACH) ||
		    timeout_ms <= 0 || mono_ms() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	freeaddrinfo(res);
	if (err) {
		OOB_ERR("cannot connect to %s:%u: %s\n", host, port, strerror(err));
		return err;
	}
	note_addrs(o);
	return 0;
}

int perf_oob_accept(struct perf_oob *o, uint16_t port, int timeout_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, lfd, err;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->timeout_ms = timeout_ms;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1)) {
		err = errno;
		OOB_ERR("cannot listen on TCP port %u: %s\n", port, strerror(err));
		close(lfd);
		return err;
	}
	err = wait_fd(lfd, POLLIN, timeout_ms);
	if (!err) {
		o->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (o->fd < 0)
			err = errno;
	}
	close(lfd);
	if (err) {
		OOB_ERR("no client on TCP port %u: %s\n", port, strerror(err));
		return err;
	}
	note_addrs(o);
	return 0;
}

void perf_oob_close_fd(struct perf_oob *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

int perf_oob_xchg(struct perf_oob *o, const void *mine, void *theirs, size_t len)
{
	int err;

	if (o->client) {
		err = write_full(o, mine, len);
		if (!err)
			err = read_full(o, theirs, len);
	} else {
		err = read_full(o, theirs, len);
		if (!err)
			err = write_full(o, mine, len);
	}
	if (err)
		OOB_ERR("out-of-band exchange with the peer failed: %s\n",
			err == ECONNRESET ? "the peer closed the connection" : strerror(err));
	return err;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static int xchg_versions(struct perf_oob *o, const struct perf_peer_ext *mine)
{
	uint8_t out[PERF_VERSION_BYTES] = { 0 }, in[PERF_VERSION_BYTES];
	size_t vlen = strlen(PERF_VERSION);
	int err;

	memcpy(out, PERF_VERSION, vlen);
	/* after the NUL, where perftest's atof() never looks */
	out[vlen + 1] = GN_EXT_MAGIC0;
	out[vlen + 2] = GN_EXT_MAGIC1;
	out[vlen + 3] = GN_EXT_VERSION;
	memcpy(out + vlen + 4, mine->mac, 6);
	out[vlen + 10] = (uint8_t)(mine->udp_port >> 8);
	out[vlen + 11] = (uint8_t)mine->udp_port;
	err = perf_oob_xchg(o, out, in, sizeof(in));
	if (err)
		return err;
	vlen = strnlen((const char *)in, sizeof(in));
	if (vlen == sizeof(in) || vlen == 0) {
		OOB_ERR("the peer sent no version string: not perftest or gpunic perf\n");
		return EPROTO;
	}
	memcpy(o->peer_version, in, vlen);
	o->peer_version[vlen] = 0;
	if (atof(o->peer_version) < PERF_MIN_PEER_VERSION) {
		OOB_ERR("peer version '%s' is older than perftest %.2f, which this exchange "
			"needs\n", o->peer_version, PERF_MIN_PEER_VERSION);
		return EPROTO;
	}
	memset(&o->peer, 0, sizeof(o->peer));
	if (vlen + 12 <= sizeof(in) && in[vlen + 1] == GN_EXT_MAGIC0 &&
	    in[vlen + 2] == GN_EXT_MAGIC1 && in[vlen + 3] == GN_EXT_VERSION) {
		o->peer.gpunic = true;
		memcpy(o->peer.mac, in + vlen + 4, 6);
		o->peer.udp_port = (uint16_t)(in[vlen + 10] << 8 | in[vlen + 11]);
	}
	return 0;
}

int perf_oob_prologue(struct perf_oob *o, const struct perf_peer_ext *mine, int mtu, int *agreed)
{
	uint8_t out[4], in[4];
	char cur[2], rem[2];
	long page = sysconf(_SC_PAGESIZE);
	uint32_t rv;
	int err, rem_mtu;

	err = xchg_versions(o, mine);
	if (err)
		return err;
	/* check_sys_data: cycle buffer (the page size) and cache line size, as ints */
	o->cycle_buffer = (uint32_t)(page > 0 ? page : 4096);
	put_be32(out, o->cycle_buffer);
	err = perf_oob_xchg(o, out, in, 4);
	if (err)
		return err;
	rv = get_be32(in);
	/* perftest keeps the larger of the two (a sane one: at most the 64 KiB we allow for) */
	if (rv > o->cycle_buffer && rv <= PERF_OOB_MAX_CYCLE)
		o->cycle_buffer = rv;
	o->cache_line = 64;
	put_be32(out, o->cache_line);
	err = perf_oob_xchg(o, out, in, 4);
	if (err)
		return err;
	rv = get_be32(in);
	if (rv > o->cache_line && rv <= o->cycle_buffer)
		o->cache_line = rv;
	/* check_mtu: "%d" of the MTU enum in two bytes (perftest >= 5.31) */
	cur[0] = (char)('0' + (mtu >= 1 && mtu <= 5 ? mtu : 3));
	cur[1] = 0;
	err = perf_oob_xchg(o, cur, rem, sizeof(rem));
	if (err)
		return err;
	rem_mtu = (rem[0] >= '1' && rem[0] <= '5' && rem[1] == 0) ? rem[0] - '0' : 0;
	*agreed = (rem_mtu && rem_mtu < mtu) ? rem_mtu : mtu;
	return 0;
}

void perf_key_format(const struct perf_dest *d, char msg[PERF_KEY_MSG_BYTES])
{
	const uint8_t *g = d->gid;
	int n;

	memset(msg, 0, PERF_KEY_MSG_BYTES);
	n = snprintf(msg, PERF_KEY_MSG_BYTES,
		     "%04x:%04x:%06x:%06x:%08x:%016llx:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:"
		     "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:",
		     d->lid & 0xffff, d->out_reads & 0xffff, d->qpn & 0xffffff, d->psn & 0xffffff,
		     d->rkey, (unsigned long long)d->vaddr, g[0], g[1], g[2], g[3], g[4], g[5],
		     g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], d->srqn);
	(void)n;
}

/* The next ':'-terminated hex field of at most @maxdig digits. */
static int next_hex(const char **p, const char *end, unsigned maxdig, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	unsigned n = 0;
	int d;

	while (s < end && *s != ':') {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return EPROTO;
		if (++n > maxdig)
			return EPROTO;
		x = x << 4 | (uint64_t)d;
		s++;
	}
	if (s >= end || n == 0)
		return EPROTO;
	*p = s + 1;
	*v = x;
	return 0;
}

int perf_key_parse(const char msg[PERF_KEY_MSG_BYTES], struct perf_dest *d)
{
	const char *p = msg, *end = msg + PERF_KEY_MSG_BYTES;
	uint64_t v[6], g;
	static const unsigned digits[6] = { 4, 4, 6, 6, 8, 16 };
	int i;

	for (i = 0; i < 6; i++)
		if (next_hex(&p, end, digits[i], &v[i]))
			return EPROTO;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (i = 0; i < 16; i++) {
		if (next_hex(&p, end, 2, &g))
			return EPROTO;
		d->gid[i] = (uint8_t)g;
	}
	if (next_hex(&p, end, 8, &g))
		return EPROTO;
	d->srqn = (uint32_t)g;
	return 0;
}

int perf_oob_hand_shake(struct perf_oob *o, const struct perf_dest *mine, struct perf_dest *theirs)
{
	char out[PERF_KEY_MSG_BYTES], in[PERF_KEY_MSG_BYTES];
	int err;

	perf_key_format(mine, out);
	err = perf_oob_xchg(o, out, in, sizeof(in));
	if (err)
		return err;
	if (perf_key_parse(in, theirs)) {
		OOB_ERR("cannot parse the peer's key message <%.*s>\n", (int)sizeof(in) - 1, in);
		return EPROTO;
	}
	return 0;
}

static void put_double(uint8_t *p, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	put_be64(p, u);
}

static double get_double(const uint8_t *p)
{
	uint64_t u = get_be64(p);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

int perf_oob_bw_reports(struct perf_oob *o, const struct perf_bw_report *mine,
			struct perf_bw_report *theirs)
{
	uint8_t out[5][8], in[5][8];
	int err, i;

	put_be64(out[0], mine->size);
	put_be64(out[1], mine->iters);
	put_double(out[2], mine->bw_peak);
	put_double(out[3], mine->bw_avg);
	put_double(out[4], mine->msg_rate);
	/* xchg_bw_reports: five separate exchanges of 8 bytes */
	for (i = 0; i < 5; i++) {
		err = perf_oob_xchg(o, out[i], in[i], 8);
		if (err)
			return err;
	}
	theirs->size = get_be64(in[0]);
	theirs->iters = get_be64(in[1]);
	theirs->bw_peak = get_double(in[2]);
	theirs->bw_avg = get_double(in[3]);
	theirs->msg_rate = get_double(in[4]);
	return 0;
}

int perf_oob_finish(struct perf_oob *o, const struct perf_dest *mine)
{
	struct perf_dest theirs;
	char tail[8];
	int err, saved;

	err = perf_oob_hand_shake(o, mine, &theirs);
	if (err)
		return err;
	err = write_full(o, PERF_DONE_MSG, sizeof(PERF_DONE_MSG));
	/* perftest closes right after writing its "done": take it if it comes, then EOF */
	saved = o->timeout_ms;
	o->timeout_ms = 1000;
	while (read_full(o, tail, 1) == 0)
		;
	o->timeout_ms = saved;
	perf_oob_close_fd(o);
	return err;
}

void perf_gid_from_ip(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	put_be32(gid + 12, ip);
}

int perf_gid_to_ip(const uint8_t gid[16], uint32_t *ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)))
		return EPROTO;
	*ip = get_be32(gid + 12);
	return 0;
}
