// SPDX-License-Identifier: MIT
/*
 * What the raw Ethernet links share: the interface lookup (index, MTU, MAC), the extra unicast
 * address gpunic's MAC needs on a real port, and failures said in words: errno cannot tell
 * "not root" from "built without libxdp". Their spec form is spec.c's.
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
