// SPDX-License-Identifier: MIT
/*
 * Addresses every endpoint shares: one IPv4 parser, the MAC rule and RoCEv2 GIDs, so that a
 * peer given only an IPv4 address (an FPGA, a perftest peer) can derive the rest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpunic/endpoint.h"
#include "gpunic/parse.h"

uint64_t gpunic_ep_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gpunic_ep_deadline(int timeout_ms)
{
	if (timeout_ms <= 0)
		return 0;
	return gpunic_ep_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

int gpunic_ep_ms_left(uint64_t deadline_ns, int dflt)
{
	uint64_t now = gpunic_ep_now_ns();

	if (!deadline_ns)
		return dflt;
	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now) / 1000000ull) + 1;
}

int gpunic_parse_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;

	/* inet_pton takes exactly a.b.c.d: no spaces, signs, shorthand or trailing text */
	if (!s || inet_pton(AF_INET, s, &a) != 1)
		return EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

int gpunic_parse_ipv4_port(const char *s, uint32_t *ip, uint16_t *port)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	char host[16];
	uint64_t p;

	if (!colon)
		return gpunic_parse_ipv4(s, ip);
	if ((size_t)(colon - s) >= sizeof(host))
		return EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (gpunic_parse_uint(colon + 1, 1, 65535, &p) || gpunic_parse_ipv4(host, ip))
		return EINVAL;
	*port = (uint16_t)p;
	return 0;
}

int gpunic_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (!s || sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			 &tail) != 6)
		return EINVAL;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xff)
			return EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

void gpunic_ipv4_str(uint32_t ip, char out[16])
{
	snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void gpunic_gid_from_ipv4(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	put_be32(gid + 12, ip);
}

int gpunic_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	uint32_t v;

	if (memcmp(gid, prefix, sizeof(prefix)))
		return EPROTO;
	v = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 | (uint32_t)gid[14] << 8 | gid[15];
	if (!v)
		return EPROTO;
	*ip = v;
	return 0;
}
