// SPDX-License-Identifier: MIT
/*
 * perftest-compatible out-of-band exchange (see perftest.h for the wire format and its order).
 * Everything that arrives is checked before use: the key message must parse field by field,
 * the version must be a string, the MTU a small number.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpunic/endpoint.h"
#include "gpunic/perftest.h"

#define GN_EXT_MAGIC0 'g'
#define GN_EXT_MAGIC1 'n'
#define GN_EXT_VERSION 1

static void oob_err(const struct gpunic_perftest *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void oob_err(const struct gpunic_perftest *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", o->who ? o->who : "gpunic");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* Each read or write waits at most timeout_ms (0: forever). */
static struct gpunic_tcp_wait oob_wait(const struct gpunic_perftest *o)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(o->timeout_ms) };

	return w;
}

static int read_full(struct gpunic_perftest *o, void *buf, size_t len)
{
	struct gpunic_tcp_wait w = oob_wait(o);

	return gpunic_tcp_read_full(o->fd, buf, len, &w);
}

static int write_full(struct gpunic_perftest *o, const void *buf, size_t len)
{
	struct gpunic_tcp_wait w = oob_wait(o);

	return gpunic_tcp_write_full(o->fd, buf, len, &w);
}

static void oob_init(struct gpunic_perftest *o, const char *who, bool client, int timeout_ms)
{
	memset(o, 0, sizeof(*o));
	o->who = who;
	o->fd = -1;
	o->client = client;
	o->timeout_ms = timeout_ms;
}

int gpunic_perftest_connect(struct gpunic_perftest *o, const char *who, const char *host,
			    uint16_t port, int timeout_ms)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	int err;

	oob_init(o, who, true, timeout_ms);
	/* the server may not listen yet: perftest users start it first, we are lenient */
	err = gpunic_tcp_connect(host, port, &w, &o->fd);
	if (err == EHOSTUNREACH) {
		oob_err(o, "cannot resolve %s\n", host);
		return err;
	}
	if (err) {
		oob_err(o, "cannot connect to %s:%u: %s\n", host, port, strerror(err));
		return err;
	}
	gpunic_tcp_addrs(o->fd, &o->local_ip, &o->peer_ip);
	return 0;
}

int gpunic_perftest_accept(struct gpunic_perftest *o, const char *who, uint16_t port,
			   int timeout_ms)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	int lfd, err;

	oob_init(o, who, false, timeout_ms);
	/* every address, as perftest */
	err = gpunic_tcp_listen(NULL, port, &lfd);
	if (err) {
		oob_err(o, "cannot listen on TCP port %u: %s\n", port, strerror(err));
		return err;
	}
	err = gpunic_tcp_accept(lfd, &w, &o->fd);
	close(lfd);
	if (err) {
		oob_err(o, "no client on TCP port %u: %s\n", port, strerror(err));
		return err;
	}
	gpunic_tcp_addrs(o->fd, &o->local_ip, &o->peer_ip);
	return 0;
}

int gpunic_perftest_serve(struct gpunic_perftest *o, const char *who, int lfd, int timeout_ms)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof(a);
	int err;

	oob_init(o, who, false, timeout_ms);
	err = gpunic_tcp_accept(lfd, &w, &o->fd);
	if (err) {
		getsockname(lfd, (struct sockaddr *)&a, &alen);
		oob_err(o, "no client on TCP port %u: %s\n", ntohs(a.sin_port), strerror(err));
		return err;
	}
	gpunic_tcp_addrs(o->fd, &o->local_ip, &o->peer_ip);
	return 0;
}

void gpunic_perftest_close_fd(struct gpunic_perftest *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

int gpunic_perftest_xchg(struct gpunic_perftest *o, const void *mine, void *theirs, size_t len)
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
		oob_err(o, "out-of-band exchange with the peer failed: %s\n",
			err == EPIPE ? "the peer closed the connection" : strerror(err));
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

static int xchg_versions(struct gpunic_perftest *o, const struct gpunic_perftest_ext *mine)
{
	uint8_t out[GPUNIC_PERFTEST_VERSION_BYTES] = { 0 }, in[GPUNIC_PERFTEST_VERSION_BYTES];
	size_t vlen = strlen(GPUNIC_PERFTEST_VERSION);
	int err;

	memcpy(out, GPUNIC_PERFTEST_VERSION, vlen);
	/* after the NUL, where perftest's atof() never looks */
	out[vlen + 1] = GN_EXT_MAGIC0;
	out[vlen + 2] = GN_EXT_MAGIC1;
	out[vlen + 3] = GN_EXT_VERSION;
	memcpy(out + vlen + 4, mine->mac, 6);
	out[vlen + 10] = (uint8_t)(mine->udp_port >> 8);
	out[vlen + 11] = (uint8_t)mine->udp_port;
	err = gpunic_perftest_xchg(o, out, in, sizeof(in));
	if (err)
		return err;
	vlen = strnlen((const char *)in, sizeof(in));
	if (vlen == sizeof(in) || vlen == 0) {
		oob_err(o, "the peer sent no version string: not perftest or gpunic perf\n");
		return EPROTO;
	}
	memcpy(o->peer_version, in, vlen);
	o->peer_version[vlen] = 0;
	if (atof(o->peer_version) < GPUNIC_PERFTEST_MIN_PEER_VERSION) {
		oob_err(o, "peer version '%s' is older than perftest %.2f, which this exchange "
			"needs\n", o->peer_version, GPUNIC_PERFTEST_MIN_PEER_VERSION);
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

int gpunic_perftest_prologue(struct gpunic_perftest *o, const struct gpunic_perftest_ext *mine,
			     int mtu, int *agreed)
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
	err = gpunic_perftest_xchg(o, out, in, 4);
	if (err)
		return err;
	rv = get_be32(in);
	/* perftest keeps the larger of the two (a sane one: at most the 64 KiB we allow for) */
	if (rv > o->cycle_buffer && rv <= GPUNIC_PERFTEST_MAX_CYCLE)
		o->cycle_buffer = rv;
	o->cache_line = 64;
	put_be32(out, o->cache_line);
	err = gpunic_perftest_xchg(o, out, in, 4);
	if (err)
		return err;
	rv = get_be32(in);
	if (rv > o->cache_line && rv <= o->cycle_buffer)
		o->cache_line = rv;
	/* check_mtu: "%d" of the MTU enum in two bytes (perftest >= 5.31) */
	cur[0] = (char)('0' + (mtu >= 1 && mtu <= 5 ? mtu : 3));
	cur[1] = 0;
	err = gpunic_perftest_xchg(o, cur, rem, sizeof(rem));
	if (err)
		return err;
	rem_mtu = (rem[0] >= '1' && rem[0] <= '5' && rem[1] == 0) ? rem[0] - '0' : 0;
	*agreed = (rem_mtu && rem_mtu < mtu) ? rem_mtu : mtu;
	return 0;
}

void gpunic_perftest_key_format(const struct gpunic_perftest_dest *d,
				char msg[GPUNIC_PERFTEST_KEY_BYTES])
{
	const uint8_t *g = d->gid;
	int n;

	memset(msg, 0, GPUNIC_PERFTEST_KEY_BYTES);
	n = snprintf(msg, GPUNIC_PERFTEST_KEY_BYTES,
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

int gpunic_perftest_key_parse(const char msg[GPUNIC_PERFTEST_KEY_BYTES],
			      struct gpunic_perftest_dest *d)
{
	const char *p = msg, *end = msg + GPUNIC_PERFTEST_KEY_BYTES;
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

int gpunic_perftest_hand_shake(struct gpunic_perftest *o, const struct gpunic_perftest_dest *mine,
			       struct gpunic_perftest_dest *theirs)
{
	char out[GPUNIC_PERFTEST_KEY_BYTES], in[GPUNIC_PERFTEST_KEY_BYTES];
	int err;

	gpunic_perftest_key_format(mine, out);
	err = gpunic_perftest_xchg(o, out, in, sizeof(in));
	if (err)
		return err;
	if (gpunic_perftest_key_parse(in, theirs)) {
		oob_err(o, "cannot parse the peer's key message <%.*s>\n", (int)sizeof(in) - 1, in);
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

int gpunic_perftest_bw_reports(struct gpunic_perftest *o, const struct gpunic_perftest_bw *mine,
			       struct gpunic_perftest_bw *theirs)
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
		err = gpunic_perftest_xchg(o, out[i], in[i], 8);
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

int gpunic_perftest_finish(struct gpunic_perftest *o, const struct gpunic_perftest_dest *mine)
{
	struct gpunic_perftest_dest theirs;
	char tail[8];
	int err, saved;

	err = gpunic_perftest_hand_shake(o, mine, &theirs);
	if (err)
		return err;
	err = write_full(o, GPUNIC_PERFTEST_DONE, sizeof(GPUNIC_PERFTEST_DONE));
	/* perftest closes right after writing its "done": take it if it comes, then EOF */
	saved = o->timeout_ms;
	o->timeout_ms = 1000;
	while (read_full(o, tail, 1) == 0)
		;
	o->timeout_ms = saved;
	gpunic_perftest_close_fd(o);
	return err;
}
