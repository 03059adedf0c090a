// SPDX-License-Identifier: MIT
/* The udp link on 127.0.0.x: exchange both ways, the synthesised headers, what the kernel puts
 * on the wire (ID 0 and DF, seen through a raw socket), and frames the link must refuse. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link_test.h"

#define FRAME_MAX GPUNIC_MAX_FRAME_BYTES
#define IP_A IP4(127, 0, 0, 61)
#define IP_B IP4(127, 0, 0, 62)

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x0b };

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* One's-complement sum over the header: 0xffff when the checksum inside is right. */
static uint16_t ip_sum(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += be16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* A frame as the NIC builds it: IPv4 ID 0, DF, TTL 64, UDP checksum 0, pattern payload. */
static void udp_frame(uint8_t *f, size_t len, uint32_t sip, uint16_t sport, uint32_t dip,
		      uint16_t dport, uint32_t seq)
{
	uint8_t *ip = f + 14, *udp = f + 34;

	memcpy(f, mac_b, 6);
	memcpy(f + 6, mac_a, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(len - 14));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	put16(ip + 10, (uint16_t)~ip_sum(ip));
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(udp + 4, (uint16_t)(len - 34));
	put16(udp + 6, 0);
	test_fill(f, 42, len, seq);
}

static struct gpunic_link *open_udp(uint32_t ip, uint16_t port, const uint8_t *mac,
				    const uint8_t *peer_mac)
{
	struct gpunic_udp_link_attr attr = { .local_ip = ip, .local_port = port };

	memcpy(attr.local_mac, mac, 6);
	memcpy(attr.peer_mac, peer_mac, 6);
	return gpunic_link_udp_open(&attr);
}

/* The receiver's view: synthesised L2-L4 around the sender's payload. */
static void check_received(const uint8_t *f, size_t len, size_t want_len, uint32_t sip,
			   uint16_t sport, uint32_t dip, uint16_t dport, const uint8_t *dmac,
			   const uint8_t *smac, uint32_t seq)
{
	const uint8_t *ip = f + 14, *udp = f + 34;

	CHECK_EQ(len, want_len);
	CHECK_MEM(f, dmac, 6);
	CHECK_MEM(f + 6, smac, 6);
	CHECK_EQ(be16(f + 12), 0x0800);
	CHECK_EQ(ip[0], 0x45);
	CHECK_EQ(ip[1], 0);
	CHECK_EQ(be16(ip + 2), len - 14);
	CHECK_EQ(be16(ip + 4), 0);
	CHECK_EQ(be16(ip + 6), 0x4000);
	CHECK_EQ(ip[8], 64);
	CHECK_EQ(ip[9], 17);
	CHECK_EQ(ip_sum(ip), 0xffff);
	CHECK_EQ(be32(ip + 12), sip);
	CHECK_EQ(be32(ip + 16), dip);
	CHECK_EQ(be16(udp), sport);
	CHECK_EQ(be16(udp + 2), dport);
	CHECK_EQ(be16(udp + 4), len - 34);
	CHECK_EQ(be16(udp + 6), 0);
	CHECK(test_check_fill(f, 42, len, seq));
}

/* Sends every size class from @tx to @rx in bursts of 8 (small enough for default socket
 * buffers) and checks each frame and the order. */
static void exchange(struct gpunic_link *tx, uint32_t tip, uint16_t tport, const uint8_t *tmac,
		     struct gpunic_link *rx, uint32_t rip, uint16_t rport, const uint8_t *rmac)
{
	uint8_t *out = malloc(FRAME_MAX), *in = malloc(FRAME_MAX);
	size_t sizes[70], n = 0, len;

	CHECK(out && in);
	for (size_t s = 60; s < FRAME_MAX; s += 67)
		sizes[n++] = s;
	sizes[n++] = FRAME_MAX;
	for (size_t i = 0; i < n; i += 8) {
		for (size_t j = i; j < n && j < i + 8; j++) {
			udp_frame(out, sizes[j], tip, tport, rip, rport, (uint32_t)j);
			CHECK_EQ(gpunic_link_send(tx, out, sizes[j]), 0);
		}
		for (size_t j = i; j < n && j < i + 8; j++) {
			CHECK_EQ(test_recv_wait(rx, in, FRAME_MAX, &len, 2000), 0);
			check_received(in, len, sizes[j], tip, tport, rip, rport, rmac, tmac,
				       (uint32_t)j);
		}
	}
	CHECK_EQ(gpunic_link_recv(rx, in, FRAME_MAX, &len), EAGAIN);
	free(out);
	free(in);
}

TEST(udp_exchange)
{
	uint16_t port = test_port(0);
	/* Each end writes its own MAC as destination and its idea of the peer's as source. */
	struct gpunic_link *a = open_udp(IP_A, port, mac_a, mac_b);
	struct gpunic_link *b = open_udp(IP_B, port, mac_b, mac_a);
	uint8_t buf[64];
	size_t len;

	CHECK(a && b);
	CHECK(strcmp(a->ops->name, "udp") == 0);
	CHECK_EQ(a->caps, GPUNIC_LINK_CAP_RX_NO_ICRC);
	CHECK_EQ(a->mtu, GPUNIC_MAX_FRAME_BYTES);
	CHECK_EQ(gpunic_link_recv(a, buf, sizeof(buf), &len), EAGAIN);
	exchange(a, IP_A, port, mac_a, b, IP_B, port, mac_b);
	exchange(b, IP_B, port, mac_b, a, IP_A, port, mac_a);
	CHECK_EQ(a->stats.tx_frames, 63);
	CHECK_EQ(a->stats.tx_frames, b->stats.rx_frames);
	CHECK_EQ(a->stats.tx_bytes, b->stats.rx_bytes);
	CHECK_EQ(b->stats.tx_frames, a->stats.rx_frames);
	CHECK_EQ(b->stats.tx_bytes, a->stats.rx_bytes);
	CHECK_EQ(a->stats.tx_errors + a->stats.rx_errors, 0);
	CHECK_EQ(b->stats.tx_errors + b->stats.rx_errors, 0);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* Ethernet padding after the UDP datagram (a 58-byte frame padded to 60) stays behind. */
TEST(udp_eth_padding_stripped)
{
	uint16_t port = test_port(1);
	struct gpunic_link *a = open_udp(IP_A, port, mac_a, mac_b);
	struct gpunic_link *b = open_udp(IP_B, port, mac_b, mac_a);
	uint8_t out[60], in[128];
	size_t len;

	CHECK(a && b);
	udp_frame(out, 58, IP_A, port, IP_B, port, 7);
	out[58] = out[59] = 0;
	CHECK_EQ(gpunic_link_send(a, out, 60), 0);
	CHECK_EQ(test_recv_wait(b, in, sizeof(in), &len, 2000), 0);
	check_received(in, len, 58, IP_A, port, IP_B, port, mac_b, mac_a, 7);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(udp_sizes_rejected)
{
	uint16_t port = test_port(2);
	struct gpunic_link *a = open_udp(IP_A, port, mac_a, mac_b);
	struct gpunic_link *b = open_udp(IP_B, port, mac_b, mac_a);
	uint8_t *big = malloc(FRAME_MAX + 1), *small = malloc(100), *tiny = malloc(20);
	size_t len;

	CHECK(a && b && big && small && tiny);
	udp_frame(big, FRAME_MAX + 1, IP_A, port, IP_B, port, 1);
	CHECK_EQ(gpunic_link_send(a, big, FRAME_MAX + 1), EMSGSIZE);
	CHECK_EQ(a->stats.tx_errors, 1);
	CHECK_EQ(a->stats.tx_frames, 0);

	/* Larger than the caller's buffer, or than the 42-byte header room: consumed, dropped. */
	udp_frame(big, 200, IP_A, port, IP_B, port, 2);
	CHECK_EQ(gpunic_link_send(a, big, 200), 0);
	udp_frame(big, 60, IP_A, port, IP_B, port, 3);
	CHECK_EQ(gpunic_link_send(a, big, 60), 0);
	CHECK_EQ(gpunic_link_send(a, big, 60), 0);
	CHECK_EQ(test_recv_wait(b, small, 100, &len, 2000), EMSGSIZE);
	CHECK_EQ(test_recv_wait(b, tiny, 20, &len, 2000), EMSGSIZE);
	CHECK_EQ(b->stats.rx_errors, 2);
	CHECK_EQ(test_recv_wait(b, small, 100, &len, 2000), 0);
	check_received(small, len, 60, IP_A, port, IP_B, port, mac_b, mac_a, 3);
	CHECK_EQ(gpunic_link_recv(b, small, 100, &len), EAGAIN);
	CHECK_EQ(b->stats.rx_frames, 1);
	free(big);
	free(small);
	free(tiny);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* Frames that do not describe what the kernel would send from this socket are refused. */
TEST(udp_bad_frames_refused)
{
	uint16_t port = test_port(3);
	struct gpunic_link *a = open_udp(IP_A, port, mac_a, mac_b);
	struct gpunic_link *b = open_udp(IP_B, port, mac_b, mac_a);
	uint8_t f[100], in[128];
	uint64_t errors = 0;
	size_t len;

	CHECK(a && b);
	/* wrong source IP */
	udp_frame(f, 100, IP4(127, 0, 0, 99), port, IP_B, port, 1);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* wrong source port */
	udp_frame(f, 100, IP_A, (uint16_t)(port + 1), IP_B, port, 1);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* not IPv4 */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	put16(f + 12, 0x86dd);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* not UDP */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	f[14 + 9] = 6;
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* IP options */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	f[14] = 0x46;
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* a fragment */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	put16(f + 14 + 6, 0x2000);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* IP total length beyond the frame */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	put16(f + 14 + 2, 87);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* UDP length disagreeing with the IP length */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	put16(f + 34 + 4, 50);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* IP total length below IP + UDP headers */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	put16(f + 14 + 2, 27);
	put16(f + 34 + 4, 7);
	CHECK_EQ(gpunic_link_send(a, f, 100), EINVAL);
	/* shorter than the headers */
	udp_frame(f, 100, IP_A, port, IP_B, port, 1);
	CHECK_EQ(gpunic_link_send(a, f, 41), EINVAL);
	errors = a->stats.tx_errors;
	CHECK_EQ(errors, 10);
	CHECK_EQ(a->stats.tx_frames, 0);
	/* None of them reached the peer. */
	usleep(20000);
	CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), EAGAIN);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/*
 * What the kernel really sends: a raw socket sees the IPv4 header, which must carry ID 0 and DF
 * and otherwise equal the header the NIC built (the ICRC covers it; docs/WIRE.md 1.4). Needs
 * CAP_NET_RAW, else skipped.
 */
TEST(udp_wire_id_zero_df)
{
	uint16_t port = test_port(4);
	struct gpunic_link *a, *b;
	uint8_t f[300], raw[2048], in[300];
	int fd, seen = 0;
	size_t len;

	fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_UDP);
	if (fd < 0 && (errno == EPERM || errno == EACCES))
		SKIP("no CAP_NET_RAW for a raw socket");
	CHECK(fd >= 0);
	a = open_udp(IP_A, port, mac_a, mac_b);
	b = open_udp(IP_B, port, mac_b, mac_a);
	CHECK(a && b);

	for (uint32_t i = 0; i < 5; i++) {
		size_t flen = 60 + i * 50;
		uint64_t end = test_now_ns() + 2000000000ull;

		udp_frame(f, flen, IP_A, port, IP_B, port, i);
		CHECK_EQ(gpunic_link_send(a, f, flen), 0);
		for (;;) {
			ssize_t n = recv(fd, raw, sizeof(raw), 0);

			if (n < 0) {
				CHECK(errno == EAGAIN);
				CHECK(test_now_ns() < end);
				sched_yield();
				continue;
			}
			/* Other UDP traffic on the host is skipped. */
			if (n < 28 || be32(raw + 12) != IP_A || be32(raw + 16) != IP_B ||
			    be16(raw + 20) != port || be16(raw + 22) != port)
				continue;
			CHECK_EQ((size_t)n, flen - 14);
			CHECK_EQ(be16(raw + 4), 0);           /* ID */
			CHECK_EQ(be16(raw + 6), 0x4000);      /* DF, no fragment */
			CHECK_MEM(raw, f + 14, 4);            /* version, IHL, TOS, total length */
			CHECK_EQ(raw[9], 17);
			CHECK_MEM(raw + 20, f + 34, 6);       /* ports, UDP length */
			CHECK_MEM(raw + 28, f + 42, flen - 42);
			seen++;
			break;
		}
		CHECK_EQ(test_recv_wait(b, in, sizeof(in), &len, 2000), 0);
		check_received(in, len, flen, IP_A, port, IP_B, port, mac_b, mac_a, i);
	}
	CHECK_EQ(seen, 5);
	close(fd);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(udp_open_invalid)
{
	uint16_t port = test_port(5);
	struct gpunic_link *a;

	CHECK(!gpunic_link_udp_open(NULL) && errno == EINVAL);
	CHECK(!open_udp(IP_A, 0, mac_a, mac_b) && errno == EINVAL);
	a = open_udp(IP_A, port, mac_a, mac_b);
	CHECK(a);
	CHECK(!open_udp(IP_A, port, mac_a, mac_b) && errno == EADDRINUSE);
	gpunic_link_close(a);
}
