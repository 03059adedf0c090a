// SPDX-License-Identifier: MIT
/*
 * Opening a link by its text form, as the CLI takes it (gpunic_link_open_spec): the spec of
 * each kind read into that kind's attributes, and the kind's own open called. The one file of
 * src/link that knows every backend; the backends and link.c know none of the others.
 *
 *   udp:IP[:PORT]                    kernel UDP socket (udp.c)
 *   dgram:LIP:LPORT,RIP:RPORT         one Ethernet frame per UDP datagram (dgram.c)
 *   shm:NAME,a|b[,create]             shared-memory cable (shm.c)
 *   packet:IFNAME[,OPTION]...         AF_PACKET on a port (packet.c)
 *   xdp:IFNAME[:QUEUE][,OPTION]...    AF_XDP on a port (xdp.c)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpunic/parse.h"
#include "link_loc.h"

/* ---------------------------------------------------------------- the parts of a spec */

/* A dotted quad of exactly @n characters at @s, host byte order out. */
static bool parse_ip4(const char *s, size_t n, uint32_t *ip)
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

/* A whole number of exactly @n characters in [@min, @max], as every number gpunic reads
 * (gpunic/parse.h). */
static bool parse_uint(const char *s, size_t n, uint32_t min, uint32_t max, uint32_t *v)
{
	char tmp[24];
	uint64_t x;

	if (n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (gpunic_parse_uint(tmp, min, max, &x))
		return false;
	*v = (uint32_t)x;
	return true;
}

/* "IP:PORT" spanning exactly @n characters. */
static bool parse_ip_port(const char *s, size_t n, uint32_t *ip, uint16_t *port)
{
	const char *colon = memchr(s, ':', n);
	uint32_t p;

	if (!colon || !parse_ip4(s, (size_t)(colon - s), ip) ||
	    !parse_uint(colon + 1, n - (size_t)(colon - s) - 1, 1, 65535, &p))
		return false;
	*port = (uint16_t)p;
	return true;
}

static bool parse_mac(const char *s, size_t n, uint8_t mac[6])
{
	char tmp[18];
	unsigned b[6];
	char tail;

	if (n != 17)
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (sscanf(tmp, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

/* ---------------------------------------------------------------- each kind */

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
		ok = parse_ip4(s, n, &attr.local_ip);
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

/* One ",OPTION" of a raw link's spec, @n characters; the xdp-only ones only when @xdp. */
static bool parse_raw_option(const char *s, size_t n, bool xdp, struct gpunic_raw_link_attr *a)
{
	if (n > 3 && !strncmp(s, "ip=", 3))
		return parse_ip4(s + 3, n - 3, &a->local_ip) && a->local_ip;
	if (n > 4 && !strncmp(s, "mac=", 4))
		return parse_mac(s + 4, n - 4, a->local_mac);
	if (!xdp)
		return false;
	if (n == 3 && !strncmp(s, "skb", 3)) {
		a->flags |= GPUNIC_RAW_XDP_SKB;
		return true;
	}
	if (n == 4 && !strncmp(s, "copy", 4)) {
		a->flags |= GPUNIC_RAW_XDP_COPY;
		return true;
	}
	if (n > 5 && !strncmp(s, "busy=", 5))
		return parse_uint(s + 5, n - 5, 0, 1000000, &a->busy_poll_us);
	return false;
}

/* "IFNAME[:QUEUE][,OPTION]..." into @a, the name into @ifname. */
static bool parse_raw_spec(const char *s, bool xdp, char ifname[IF_NAMESIZE],
			   struct gpunic_raw_link_attr *a)
{
	size_t n = strcspn(s, ":,"), m;

	if (n == 0 || n >= IF_NAMESIZE || memchr(s, '/', n) || memchr(s, ' ', n))
		return false;
	memcpy(ifname, s, n);
	ifname[n] = '\0';
	a->ifname = ifname;
	s += n;
	if (*s == ':') {
		m = strcspn(s + 1, ",");
		if (!xdp || !parse_uint(s + 1, m, 0, 1023, &a->queue))
			return false;
		s += 1 + m;
	}
	while (*s == ',') {
		m = strcspn(s + 1, ",");
		if (!parse_raw_option(s + 1, m, xdp, a))
			return false;
		s += 1 + m;
	}
	return *s == '\0';
}

/* "packet:" and "xdp:": the same form, the queue and the last options for xdp only. */
static struct gpunic_link *open_raw(const char *s, bool xdp)
{
	struct gpunic_raw_link_attr a = { 0 };
	char ifname[IF_NAMESIZE];

	if (!parse_raw_spec(s, xdp, ifname, &a)) {
		errno = EINVAL;
		return NULL;
	}
	return xdp ? gpunic_link_xdp_open(&a) : gpunic_link_packet_open(&a);
}

static struct gpunic_link *open_packet(const char *s)
{
	return open_raw(s, false);
}

static struct gpunic_link *open_xdp(const char *s)
{
	return open_raw(s, true);
}

/* ---------------------------------------------------------------- by prefix */

static const struct link_kind {
	const char *prefix;
	struct gpunic_link *(*open)(const char *rest);
} link_kinds[] = {
	{ "udp:", open_udp },
	{ "dgram:", open_dgram },
	{ "shm:", open_shm },
	{ "packet:", open_packet },
	{ "xdp:", open_xdp },
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
