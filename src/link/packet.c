// SPDX-License-Identifier: MIT
/*
 * The packet link: raw Ethernet on one interface through an AF_PACKET socket with TPACKET_V2
 * receive and transmit rings in one mapping. V2, not V3: V3 hands a block to user space only when
 * it is full or its timer (1 ms at best) retires it, which would put milliseconds into a round
 * trip; a V2 slot is ours as soon as the kernel wrote it. Both rings are native zero-copy ops:
 * the NIC builds a frame in the transmit slot and parses a received one where it lies.
 *
 * A classic BPF filter keeps everything but RoCEv2 (IPv4, UDP port 4791, no fragments) and ARP
 * out of the ring, narrowed to our address when we know it; the NIC answers ARP and filters by
 * MAC (GPUNIC_LINK_CAP_SHARED_WIRE). The wire can flip bits, so the ICRC is checked. Transmits
 * skip the qdisc (PACKET_QDISC_BYPASS), as a NIC's own queue would.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raw.h"

#define KIND "packet"

/*
 * A slot holds the kernel's header plus the largest RoCEv2 frame; 15 of them fill a 64 KiB
 * block. 1920 receive slots (8 MiB, as many frames as the xdp link's UMEM takes) ride out a
 * burst of full windows from several QPs, or the poller losing its CPU for a while (on a
 * 2-core host a 480-slot ring overflowed at 200k frames/s); 240 transmit slots keep a window
 * in flight.
 */
#define PKT_SLOT_BYTES 4352u
#define PKT_BLOCK_BYTES (64u << 10)
#define PKT_RX_BLOCKS 128u
#define PKT_TX_BLOCKS 16u
#define PKT_SLOTS_PER_BLOCK (PKT_BLOCK_BYTES / PKT_SLOT_BYTES)
/* what the kernel's header and sockaddr_ll take before a received frame, rounded up */
#define PKT_RX_HEAD_BYTES 128u
/* where a transmitted frame starts in its slot (the kernel's default, without TX_HAS_OFF) */
#define PKT_TX_DATA_OFF (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))

struct pkt_ring {
	uint8_t *base;
	uint32_t slots;
	uint32_t head;
};

struct packet_link {
	struct gpunic_link link;
	int fd;
	uint8_t *map;
	size_t map_bytes;
	struct pkt_ring rx;
	struct pkt_ring tx;
	bool kick;              /* frames are queued that the last send() could not start */
};

static struct packet_link *to_pkt(struct gpunic_link *link)
{
	return (struct packet_link *)link;
}

/* Slots never straddle a block: each block ends in a gap of less than a slot. */
static struct tpacket2_hdr *slot(const struct pkt_ring *r, uint32_t i)
{
	return (struct tpacket2_hdr *)(r->base + (size_t)(i / PKT_SLOTS_PER_BLOCK) *
				       PKT_BLOCK_BYTES + (size_t)(i % PKT_SLOTS_PER_BLOCK) *
				       PKT_SLOT_BYTES);
}

static uint32_t slot_status(const struct tpacket2_hdr *h)
{
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
}

static void slot_set_status(struct tpacket2_hdr *h, uint32_t status)
{
	__atomic_store_n(&h->tp_status, status, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- transmit */

/* Ask the kernel to send every slot marked for it; a full device queue retries later. */
static void pkt_kick(struct packet_link *p)
{
	int err;

	if (send(p->fd, NULL, 0, MSG_DONTWAIT) >= 0) {
		p->kick = false;
		return;
	}
	err = errno;
	p->kick = true;
	if (err != EAGAIN && err != ENOBUFS && err != EINTR) {
		/* a frame the device refused is gone (PACKET_LOSS), as on a wire */
		p->link.stats.tx_errors++;
		p->kick = false;
	}
}

static int pkt_tx_reserve(struct gpunic_link *link, size_t max, uint8_t **buf)
{
	struct packet_link *p = to_pkt(link);
	struct tpacket2_hdr *h = slot(&p->tx, p->tx.head);
	uint32_t st;

	(void)max;	/* link.c checked it against the mtu, which fits a slot */
	if (p->kick)
		pkt_kick(p);
	st = slot_status(h);
	if (st == TP_STATUS_WRONG_FORMAT) {
		/* the kernel refused the frame that was here: count it, take the slot back */
		link->stats.tx_errors++;
		slot_set_status(h, TP_STATUS_AVAILABLE);
		st = TP_STATUS_AVAILABLE;
	}
	if (st != TP_STATUS_AVAILABLE)
		return EAGAIN;
	*buf = (uint8_t *)h + PKT_TX_DATA_OFF;
	return 0;
}

static int pkt_tx_commit(struct gpunic_link *link, size_t len)
{
	struct packet_link *p = to_pkt(link);
	struct tpacket2_hdr *h = slot(&p->tx, p->tx.head);

	if (len < GPUNIC_ETH_BYTES)
		return link_tx_error(link, EINVAL);
	h->tp_len = (uint32_t)len;
	slot_set_status(h, TP_STATUS_SEND_REQUEST);
	p->tx.head = (p->tx.head + 1) % p->tx.slots;
	link_count_tx(link, len);
	pkt_kick(p);
	return 0;
}

static void pkt_tx_abort(struct gpunic_link *link)
{
	(void)link;	/* the slot stays available; nothing was marked */
}

/* ---------------------------------------------------------------- receive */

static void pkt_rx_release(struct gpunic_link *link)
{
	struct packet_link *p = to_pkt(link);

	slot_set_status(slot(&p->rx, p->rx.head), TP_STATUS_KERNEL);
	p->rx.head = (p->rx.head + 1) % p->rx.slots;
}

/* Frames the filter let through but we cannot use are dropped here, at most a ring's worth. */
static int pkt_rx_peek(struct gpunic_link *link, const uint8_t **frame, size_t *len)
{
	struct packet_link *p = to_pkt(link);

	/* transmits the device pushed back go out on the next poll, busy or idle */
	if (p->kick)
		pkt_kick(p);
	for (uint32_t i = 0; i < p->rx.slots; i++) {
		struct tpacket2_hdr *h = slot(&p->rx, p->rx.head);
		uint32_t st = slot_status(h), off = h->tp_mac, n = h->tp_snaplen;

		if (!(st & TP_STATUS_USER))
			return EAGAIN;
		/* a frame cut to the slot, a VLAN-tagged one (the NIC speaks untagged) or a
		 * header the kernel could not have written: dropped and counted */
		if (n != h->tp_len || n > link->mtu || n < GPUNIC_ETH_BYTES ||
		    (st & TP_STATUS_VLAN_VALID) || off > PKT_SLOT_BYTES - n) {
			link->stats.rx_errors++;
			pkt_rx_release(link);
			continue;
		}
		link_count_rx(link, n);
		*frame = (const uint8_t *)h + off;
		*len = n;
		return 0;
	}
	return EAGAIN;
}

static void pkt_close(struct gpunic_link *link)
{
	struct packet_link *p = to_pkt(link);

	if (p->map)
		munmap(p->map, p->map_bytes);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static const struct gpunic_link_ops packet_ops = {
	.name = KIND,
	.send = link_send_by_reserve,
	.recv = link_recv_by_peek,
	.close = pkt_close,
	.tx_reserve = pkt_tx_reserve,
	.tx_commit = pkt_tx_commit,
	.tx_abort = pkt_tx_abort,
	.rx_peek = pkt_rx_peek,
	.rx_release = pkt_rx_release,
};

/* ---------------------------------------------------------------- open */

/*
 * ARP (for @ip, when set) and IPv4/UDP to port 4791 (to @ip, when set), unfragmented; the rest
 * never reaches the ring. Offsets are from the Ethernet header; the UDP header follows the IPv4
 * header's real length.
 */
static void pkt_filter(uint32_t ip, struct sock_filter f[16])
{
	const struct sock_filter any = BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0);
	const struct sock_filter prog[16] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, LINK_ETH_TYPE_OFF),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 10, 0),
		/* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 12),
		/* 3 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, LINK_IP4_OFF + 9),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17 /* UDP */, 0, 10),
		/* 5 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, LINK_IP4_OFF + 6),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff /* MF, offset */, 8, 0),
		/* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, LINK_IP4_OFF + 16),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip, 0, 6),
		/* 9 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, LINK_IP4_OFF),
		/* 10 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, LINK_IP4_OFF + 2),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GPUNIC_ROCE_UDP_PORT, 2, 3),
		/* 12 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, LINK_IP4_OFF + 24 /* ARP TPA */),
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip, 0, 1),
		/* 14 */ BPF_STMT(BPF_RET | BPF_K, 0x40000),
		/* 15 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};

	memcpy(f, prog, sizeof(prog));
	if (!ip) {
		f[8] = any;
		f[13] = any;
	}
}

/* Sets one SOL_PACKET option; 0 or errno. */
static int pkt_opt(int fd, int name, const void *v, socklen_t n)
{
	return setsockopt(fd, SOL_PACKET, name, v, n) ? errno : 0;
}

static void *pkt_open_fail(struct packet_link *p, int err, const char *what, const char *ifname)
{
	pkt_close(&p->link);
	return raw_fail_errno(err, KIND, what, ifname);
}

static int pkt_rings(struct packet_link *p)
{
	struct tpacket_req rx = {
		.tp_block_size = PKT_BLOCK_BYTES,
		.tp_block_nr = PKT_RX_BLOCKS,
		.tp_frame_size = PKT_SLOT_BYTES,
		.tp_frame_nr = PKT_SLOTS_PER_BLOCK * PKT_RX_BLOCKS,
	};
	struct tpacket_req tx = rx;
	int v = TPACKET_V2, err;

	tx.tp_block_nr = PKT_TX_BLOCKS;
	tx.tp_frame_nr = PKT_SLOTS_PER_BLOCK * PKT_TX_BLOCKS;
	err = pkt_opt(p->fd, PACKET_VERSION, &v, sizeof(v));
	if (!err)
		err = pkt_opt(p->fd, PACKET_RX_RING, &rx, sizeof(rx));
	if (!err)
		err = pkt_opt(p->fd, PACKET_TX_RING, &tx, sizeof(tx));
	if (err)
		return err;
	/* the kernel maps both rings back to back, receive first, each block by block */
	p->map_bytes = (size_t)PKT_BLOCK_BYTES * (PKT_RX_BLOCKS + PKT_TX_BLOCKS);
	p->map = mmap(NULL, p->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->map == MAP_FAILED) {
		p->map = NULL;
		return errno;
	}
	p->rx = (struct pkt_ring){ .base = p->map, .slots = rx.tp_frame_nr };
	p->tx = (struct pkt_ring){ .base = p->map + (size_t)PKT_BLOCK_BYTES * PKT_RX_BLOCKS,
				   .slots = tx.tp_frame_nr };
	return 0;
}

struct gpunic_link *gpunic_link_packet_open(const struct gpunic_raw_link_attr *attr)
{
	struct sock_filter code[16];
	struct sock_fprog fprog = { .len = 16, .filter = code };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_link *p;
	struct raw_if rif;
	int one = 1, err;

	if (!attr || !attr->ifname) {
		errno = EINVAL;
		return NULL;
	}
	err = raw_if_lookup(KIND, attr, &rif);
	if (err) {
		errno = err;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fd = -1;
	link_init(&p->link, &packet_ops, GPUNIC_LINK_CAP_SHARED_WIRE,
		  raw_link_mtu(&rif, PKT_SLOT_BYTES - PKT_RX_HEAD_BYTES));
	/* protocol 0: nothing is queued before the filter is in place and bind() asks for all */
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return pkt_open_fail(p, errno, "socket", attr->ifname);
	pkt_filter(attr->local_ip, code);
	if (setsockopt(p->fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)))
		return pkt_open_fail(p, errno, "attaching the RoCEv2 filter", attr->ifname);
	/* a frame the device refuses is skipped instead of stopping the ring (before the rings) */
	err = pkt_opt(p->fd, PACKET_LOSS, &one, sizeof(one));
	if (!err)
		err = pkt_opt(p->fd, PACKET_QDISC_BYPASS, &one, sizeof(one));
	if (err)
		return pkt_open_fail(p, err, "socket options", attr->ifname);
	/* frames the host sends on the port are not echoed to us (bypass hides our own) */
	(void)pkt_opt(p->fd, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	err = pkt_rings(p);
	if (err)
		return pkt_open_fail(p, err, "TPACKET_V2 rings", attr->ifname);
	sll.sll_ifindex = rif.index;
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)))
		return pkt_open_fail(p, errno, "bind", attr->ifname);
	err = raw_add_mac(KIND, p->fd, &rif);
	if (err) {
		pkt_close(&p->link);
		errno = err;
		return NULL;
	}
	return &p->link;
}
