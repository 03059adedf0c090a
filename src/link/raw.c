// SPDX-License-Identifier: MIT
/*
 * What the raw Ethernet links share: the spec form "IFNAME[:QUEUE][,OPTION]...", the interface
 * lookup (index, MTU, MAC), the extra unicast address gpunic's MAC needs on a real port, and
 * failures said in words: errno cannot tell "not root" from "built without libxdp".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpunic/log.h"
#include "raw.h"

void *raw_fail(int err, const char *kind, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* emitted directly: an open is rare, and its reason is what the user needs */
	gpunic_log_emit(GPUNIC_LOG_ERR, __func__, "%s link: %s", kind, text);
	errno = err;
	return NULL;
}

void *raw_fail_errno(int err, const char *kind, const char *what, const char *ifname)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return raw_fail(err, kind, "%s on %s: not permitted (needs %s: run as root)", what,
				ifname, strcmp(kind, "xdp") ? "CAP_NET_RAW" :
				"CAP_NET_ADMIN and CAP_BPF");
	case ENODEV:
	case ENXIO:
		return raw_fail(err, kind, "%s: no interface '%s' in this network namespace",
				what, ifname);
	default:
		return raw_fail(err, kind, "%s on %s: %s", what, ifname, strerror(err));
	}
}

/* ---------------------------------------------------------------- interface */

static int if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return errno;
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	if (ioctl(fd, req, ifr) < 0)
		err = errno;
	close(fd);
	return err;
}

int raw_if_lookup(const char *kind, const struct gpunic_raw_link_attr *attr, struct raw_if *rif)
{
	static const uint8_t zero[6];
	struct ifreq ifr;
	int err;

	memset(rif, 0, sizeof(*rif));
	rif->name = attr->ifname;
	rif->index = (int)if_nametoindex(attr->ifname);
	if (!rif->index) {
		err = errno;
		raw_fail_errno(err, kind, "open", attr->ifname);
		return err;
	}
	err = if_ioctl(attr->ifname, SIOCGIFMTU, &ifr);
	if (!err)
		rif->mtu = (uint32_t)ifr.ifr_mtu;
	if (!err)
		err = if_ioctl(attr->ifname, SIOCGIFHWADDR, &ifr);
	if (err) {
		raw_fail_errno(err, kind, "reading MTU and MAC", attr->ifname);
		return err;
	}
	if (ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */) {
		raw_fail(EPROTONOSUPPORT, kind, "%s is not an Ethernet interface", attr->ifname);
		return EPROTONOSUPPORT;
	}
	memcpy(rif->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (memcmp(attr->local_mac, zero, 6)) {
		memcpy(rif->use_mac, attr->local_mac, 6);
	} else if (attr->local_ip) {
		gpunic_mac_from_ipv4(attr->local_ip, rif->use_mac);
	} else {
		memcpy(rif->use_mac, rif->mac, 6);
	}
	return 0;
}

uint32_t raw_link_mtu(const struct raw_if *rif, uint32_t slot_bytes)
{
	uint32_t n = rif->mtu + GPUNIC_ETH_BYTES;

	if (n > slot_bytes)
		n = slot_bytes;
	return n < LINK_MTU_BYTES ? n : LINK_MTU_BYTES;
}

int raw_add_mac(const char *kind, int fd, const struct raw_if *rif)
{
	struct packet_mreq mr = {
		.mr_ifindex = rif->index,
		.mr_type = PACKET_MR_UNICAST,
		.mr_alen = 6,
	};
	int err;

	if (!memcmp(rif->use_mac, rif->mac, 6))
		return 0;
	/* a real port's filter drops frames for 02:00:a.b.c.d unless it knows the address */
	memcpy(mr.mr_address, rif->use_mac, 6);
	if (!setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		return 0;
	err = errno;
	raw_fail(err, kind, "adding unicast address %02x:%02x:%02x:%02x:%02x:%02x: %s",
		 rif->use_mac[0], rif->use_mac[1], rif->use_mac[2], rif->use_mac[3],
		 rif->use_mac[4], rif->use_mac[5], strerror(err));
	return err;
}

/* ---------------------------------------------------------------- spec */

static bool parse_uint(const char *s, size_t n, uint32_t max, uint32_t *v)
{
	uint64_t x = 0;

	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (x > max)
		return false;
	*v = (uint32_t)x;
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

/* One ",OPTION" of @n characters; the xdp-only ones only when @xdp. */
static bool parse_option(const char *s, size_t n, bool xdp, struct gpunic_raw_link_attr *a)
{
	if (n > 3 && !strncmp(s, "ip=", 3))
		return link_parse_ip4(s + 3, n - 3, &a->local_ip) && a->local_ip;
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
		return parse_uint(s + 5, n - 5, 1000000, &a->busy_poll_us);
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
		if (!xdp || !parse_uint(s + 1, m, 1023, &a->queue))
			return false;
		s += 1 + m;
	}
	while (*s == ',') {
		m = strcspn(s + 1, ",");
		if (!parse_option(s + 1, m, xdp, a))
			return false;
		s += 1 + m;
	}
	return *s == '\0';
}

struct gpunic_link *link_packet_open_spec(const char *rest)
{
	struct gpunic_raw_link_attr a = { 0 };
	char ifname[IF_NAMESIZE];

	if (!parse_raw_spec(rest, false, ifname, &a)) {
		errno = EINVAL;
		return NULL;
	}
	return gpunic_link_packet_open(&a);
}

struct gpunic_link *link_xdp_open_spec(const char *rest)
{
	struct gpunic_raw_link_attr a = { 0 };
	char ifname[IF_NAMESIZE];

	if (!parse_raw_spec(rest, true, ifname, &a)) {
		errno = EINVAL;
		return NULL;
	}
	return gpunic_link_xdp_open(&a);
}
