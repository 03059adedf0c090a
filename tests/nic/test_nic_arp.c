// SPDX-License-Identifier: MIT
/*
 * The ARP responder on a shared-wire link (the dgram link: a QEMU -netdev socket wire, where a
 * guest's kernel must resolve the NIC's MAC before it sends RoCE). The test is the other end of
 * the wire: it sends raw frames and reads what comes back.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "nic_fixture.h"

#define ARP_FRAME_BYTES 42      /* Ethernet + 28-byte ARP body */
#define NIC_IP IP4(10, 0, 0, 1)
#define ASKER_IP IP4(10, 0, 0, 9)

static const uint8_t nic_mac[6] = { 2, 0, 0, 0, 0, 1 };
static const uint8_t asker_mac[6] = { 2, 0, 0, 0, 0, 0x99 };
static const uint8_t bcast[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };

struct arp_rig {
	struct gpunic_nic *nic;
	struct gpunic_link *wire;       /* the test's end */
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void rig_open(struct arp_rig *r)
{
	struct gpunic_dgram_link_attr da = { .local_ip = IP4(127, 0, 0, 1),
					     .local_port = fx_port(4),
					     .remote_ip = IP4(127, 0, 0, 1),
					     .remote_port = fx_port(5) };
	struct gpunic_nic_attr na = { .ip = NIC_IP };
	struct gpunic_link *l;

	l = gpunic_link_dgram_open(&da);
	CHECK(l);
	CHECK(l->caps & GPUNIC_LINK_CAP_SHARED_WIRE);
	da.local_port = fx_port(5);
	da.remote_port = fx_port(4);
	r->wire = gpunic_link_dgram_open(&da);
	CHECK(r->wire);
	na.link = l;
	memcpy(na.mac, nic_mac, 6);
	r->nic = gpunic_nic_open(&na);
	CHECK(r->nic);
}

static void rig_close(struct arp_rig *r)
{
	CHECK_EQ(gpunic_nic_close(r->nic), 0);
	gpunic_link_close(r->wire);
}

/* An ARP request (RFC 826) from the asker for @target, padded to the Ethernet minimum. */
static size_t arp_request(uint8_t *f, uint32_t target)
{
	memset(f, 0, GPUNIC_ETH_MIN_FRAME_BYTES);
	memcpy(f, bcast, 6);
	memcpy(f + 6, asker_mac, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	memcpy(f + 14, (uint8_t[]){ 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01 }, 8);
	memcpy(f + 22, asker_mac, 6);
	put32(f + 28, ASKER_IP);
	/* target hardware address unknown: zero */
	put32(f + 38, target);
	return GPUNIC_ETH_MIN_FRAME_BYTES;
}

/* Deliver @len bytes to the NIC and let it run; Return: the frame that came back, or 0. */
static size_t exchange(struct arp_rig *r, const uint8_t *f, size_t len, uint8_t *reply,
		       size_t cap)
{
	uint64_t end;
	size_t got;
	int err;

	CHECK_EQ(gpunic_link_send(r->wire, f, len), 0);
	/* a datagram on loopback arrives at once; give it 20 ms anyway */
	end = fx_now_ns() + 20000000;
	do {
		gpunic_nic_poll(r->nic, 16);
		err = gpunic_link_recv(r->wire, reply, cap, &got);
		if (!err)
			return got;
		CHECK_EQ(err, EAGAIN);
	} while (fx_now_ns() < end);
	return 0;
}

/* A datagram of @len bytes straight to the NIC's port, past the link's own length check. */
static void send_runt(struct arp_rig *r, const uint8_t *f, size_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(fx_port(4)),
				  .sin_addr.s_addr = htonl(IP4(127, 0, 0, 1)) };
	uint8_t reply[GPUNIC_MAX_FRAME_BYTES];
	size_t got;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	CHECK(fd >= 0);
	CHECK_EQ(sendto(fd, f, len, 0, (struct sockaddr *)&to, sizeof(to)), len);
	close(fd);
	for (int i = 0; i < 100; i++)
		gpunic_nic_poll(r->nic, 16);
	CHECK_EQ(gpunic_link_recv(r->wire, reply, sizeof(reply), &got), EAGAIN);
}

static struct gpunic_nic_counters counters(struct arp_rig *r)
{
	struct gpunic_nic_counters c;

	CHECK_EQ(gpunic_nic_query_counters(r->nic, &c), 0);
	return c;
}

/* Every field of the reply to arp_request(): RFC 826 "swap and fill in". */
static void check_reply(const uint8_t *f, size_t len)
{
	uint8_t want[GPUNIC_ETH_MIN_FRAME_BYTES] = { 0 };

	CHECK_EQ(len, GPUNIC_ETH_MIN_FRAME_BYTES);
	memcpy(want, asker_mac, 6);                     /* to the asker, not broadcast */
	memcpy(want + 6, nic_mac, 6);
	want[12] = 0x08;
	want[13] = 0x06;
	want[14] = 0x00;                                /* HTYPE 1: Ethernet */
	want[15] = 0x01;
	want[16] = 0x08;                                /* PTYPE 0x0800: IPv4 */
	want[17] = 0x00;
	want[18] = 6;                                   /* HLEN */
	want[19] = 4;                                   /* PLEN */
	want[20] = 0x00;                                /* OPER 2: reply */
	want[21] = 0x02;
	memcpy(want + 22, nic_mac, 6);                  /* SHA: the answer */
	put32(want + 28, NIC_IP);                       /* SPA */
	memcpy(want + 32, asker_mac, 6);                /* THA */
	put32(want + 38, ASKER_IP);                     /* TPA */
	/* bytes 42..59: minimum-frame padding, zero */
	if (memcmp(f, want, sizeof(want))) {
		for (size_t i = 0; i < sizeof(want); i++)
			if (f[i] != want[i])
				fprintf(stderr, "reply byte %zu: 0x%02x, want 0x%02x\n", i, f[i],
					want[i]);
		harness_fail(__FILE__, __LINE__, "ARP reply differs");
	}
}

TEST(arp_request_for_us_gets_reply)
{
	uint8_t req[GPUNIC_MAX_FRAME_BYTES], reply[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_nic_counters c;
	struct arp_rig r;
	size_t len;

	rig_open(&r);
	len = arp_request(req, NIC_IP);
	check_reply(reply, exchange(&r, req, len, reply, sizeof(reply)));
	/* the unpadded 42-byte form is just as valid */
	check_reply(reply, exchange(&r, req, ARP_FRAME_BYTES, reply, sizeof(reply)));
	c = counters(&r);
	CHECK_EQ(c.arp_replies, 2);
	CHECK_EQ(c.tx_frames, 2);
	CHECK_EQ(c.rx_frames, 2);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		CHECK_EQ(c.drops[i], 0);
	rig_close(&r);
}

TEST(arp_request_for_other_ip_ignored)
{
	uint8_t req[GPUNIC_MAX_FRAME_BYTES], reply[GPUNIC_MAX_FRAME_BYTES];
	static const uint32_t others[] = { IP4(10, 0, 0, 2), IP4(10, 0, 1, 1), ASKER_IP, 0,
					   0xFFFFFFFFu };
	struct gpunic_nic_counters c;
	struct arp_rig r;
	size_t len;

	rig_open(&r);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		len = arp_request(req, others[i]);
		CHECK_EQ(exchange(&r, req, len, reply, sizeof(reply)), 0);
	}
	c = counters(&r);
	CHECK_EQ(c.arp_replies, 0);
	CHECK_EQ(c.tx_frames, 0);
	CHECK_EQ(c.rx_frames, sizeof(others) / sizeof(others[0]));
	rig_close(&r);
}

/* Cut, bent or misaddressed ARP frames: no reply, no crash, and the NIC still answers after. */
TEST(arp_malformed_dropped)
{
	uint8_t req[GPUNIC_MAX_FRAME_BYTES], bad[GPUNIC_MAX_FRAME_BYTES];
	uint8_t reply[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_nic_counters c;
	struct arp_rig r;
	unsigned sent = 0;

	rig_open(&r);
	arp_request(req, NIC_IP);
	/* truncated anywhere from an empty Ethernet payload to one byte short of the TPA */
	for (size_t len = GPUNIC_ETH_BYTES; len < ARP_FRAME_BYTES; len++, sent++)
		CHECK_EQ(exchange(&r, req, len, reply, sizeof(reply)), 0);
	/* shorter than an Ethernet header: our link refuses to send those, a raw socket does not */
	for (size_t len = 0; len < GPUNIC_ETH_BYTES; len += 3)
		send_runt(&r, req, len);
	/* one field wrong at a time: HTYPE, PTYPE, HLEN, PLEN, OPER (a reply, a RARP request) */
	static const struct {
		size_t off;
		uint8_t val;
	} bends[] = { { 15, 6 }, { 16, 0x86 }, { 18, 8 }, { 19, 16 }, { 21, 2 }, { 21, 3 },
		      { 20, 1 } };
	for (size_t i = 0; i < sizeof(bends) / sizeof(bends[0]); i++, sent++) {
		memcpy(bad, req, GPUNIC_ETH_MIN_FRAME_BYTES);
		bad[bends[i].off] = bends[i].val;
		CHECK_EQ(exchange(&r, bad, GPUNIC_ETH_MIN_FRAME_BYTES, reply, sizeof(reply)), 0);
	}
	c = counters(&r);
	CHECK_EQ(c.arp_replies, 0);
	CHECK_EQ(c.tx_frames, 0);
	/* the link discards the runts; ARP frames are no RoCE drops */
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		CHECK_EQ(c.drops[i], 0);
	CHECK_EQ(c.rx_frames, sent);

	check_reply(reply, exchange(&r, req, GPUNIC_ETH_MIN_FRAME_BYTES, reply, sizeof(reply)));
	CHECK_EQ(counters(&r).arp_replies, 1);
	rig_close(&r);
}
