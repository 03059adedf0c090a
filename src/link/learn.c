// SPDX-License-Identifier: MIT
/*
 * The learning link: a wrapper that watches one IPv4 address and notes the MAC of every frame it
 * sends (an ARP frame from it, or an IPv4 frame from it), and that can ask for that MAC with a
 * broadcast ARP request. The softnic itself answers ARP for its own address; this is the other
 * half, so that an endpoint facing a real RoCE stack on a shared wire needs no neighbour entry.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "link_loc.h"

enum {
	ETYPE_ARP = 0x0806,
	ARP_LEN = 28,
	ARP_FRAME = 60,	/* minimum Ethernet frame without FCS */
	ARP_SPA_OFF = 14,	/* sender protocol address, from the ARP header */
	IP4_SRC_OFF = 12,
};

struct learn_link {
	struct gpunic_link link;	/* first: the NIC sees this one */
	struct gpunic_link *inner;
	uint32_t peer_ip;
	uint8_t peer_mac[6];
	bool known;
};

static const struct gpunic_link_ops learn_ops;

static struct learn_link *to_learn(const struct gpunic_link *link)
{
	return link && link->ops == &learn_ops ? (struct learn_link *)link : NULL;
}

static void learn_note(struct learn_link *w, const uint8_t *f, size_t len)
{
	const uint8_t *l3 = f + GPUNIC_ETH_BYTES;
	unsigned type;

	if (!w->peer_ip || len < GPUNIC_ETH_BYTES)
		return;
	type = link_get_be16(f + LINK_ETH_TYPE_OFF);
	if (type == ETYPE_ARP && len >= GPUNIC_ETH_BYTES + ARP_LEN &&
	    link_get_be32(l3 + ARP_SPA_OFF) == w->peer_ip) {
		memcpy(w->peer_mac, l3 + 8, 6);
		w->known = true;
	} else if (type == GPUNIC_ETHERTYPE_IPV4 && len >= GPUNIC_ETH_BYTES + GPUNIC_IP4_BYTES &&
		   link_get_be32(l3 + IP4_SRC_OFF) == w->peer_ip) {
		memcpy(w->peer_mac, f + 6, 6);
		w->known = true;
	}
}

static int learn_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	int err = gpunic_link_send(to_learn(link)->inner, frame, len);

	if (!err)
		link_count_tx(link, len);
	return err;
}

static int learn_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct learn_link *w = to_learn(link);
	int err = gpunic_link_recv(w->inner, buf, cap, len);

	if (err)
		return err;
	link_count_rx(link, *len);
	learn_note(w, buf, *len);
	return 0;
}

static void learn_close(struct gpunic_link *link)
{
	struct learn_link *w = to_learn(link);

	gpunic_link_close(w->inner);
	free(w);
}

static const struct gpunic_link_ops learn_ops = {
	.name = "learn",
	.send = learn_send,
	.recv = learn_recv,
	.close = learn_close,
};

struct gpunic_link *gpunic_link_learn_open(struct gpunic_link *inner)
{
	struct learn_link *w;

	if (!inner) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	/* frames pass unchanged: every promise of the inner link holds */
	link_init(&w->link, &learn_ops, inner->caps, inner->mtu);
	w->link.bound_ip = inner->bound_ip;
	w->link.bound_port = inner->bound_port;
	w->inner = inner;
	return &w->link;
}

void gpunic_link_learn_watch(struct gpunic_link *link, uint32_t ip)
{
	struct learn_link *w = to_learn(link);

	if (w && w->peer_ip != ip) {
		w->peer_ip = ip;
		w->known = false;
	}
}

int gpunic_link_learn_mac(const struct gpunic_link *link, uint8_t mac[6])
{
	struct learn_link *w = to_learn(link);

	if (!w)
		return EINVAL;
	if (!w->known)
		return EAGAIN;
	memcpy(mac, w->peer_mac, 6);
	return 0;
}

int gpunic_link_learn_arp_request(struct gpunic_link *link, const uint8_t smac[6], uint32_t sip,
				  uint32_t tip)
{
	struct learn_link *w = to_learn(link);
	uint8_t f[ARP_FRAME] = { 0 };
	uint8_t *a = f + GPUNIC_ETH_BYTES;

	if (!w)
		return EINVAL;
	memset(f, 0xff, 6);
	memcpy(f + 6, smac, 6);
	link_put_be16(f + LINK_ETH_TYPE_OFF, ETYPE_ARP);
	a[1] = 1;		/* hardware: Ethernet */
	link_put_be16(a + 2, GPUNIC_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	a[7] = 1;		/* request */
	memcpy(a + 8, smac, 6);
	link_put_be32(a + ARP_SPA_OFF, sip);
	link_put_be32(a + 24, tip);
	return gpunic_link_send(w->inner, f, sizeof(f));
}
