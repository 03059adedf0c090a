// SPDX-License-Identifier: MIT
/* The dgram link on 127.0.0.x: two ends exchange frames, and the wire is exactly QEMU's
 * "-netdev socket,udp=": one frame per datagram, no header, checked with plain UDP sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link_test.h"

#define FRAME_MAX GPUNIC_MAX_FRAME_BYTES
#define IP_A IP4(127, 0, 0, 71)
#define IP_B IP4(127, 0, 0, 72)

static struct gpunic_link *open_dgram(uint32_t lip, uint16_t lport, uint32_t rip, uint16_t rport)
{
	struct gpunic_dgram_link_attr attr = {
		.local_ip = lip, .local_port = lport, .remote_ip = rip, .remote_port = rport,
	};

	return gpunic_link_dgram_open(&attr);
}

/* A plain UDP socket standing in for QEMU. */
static int plain_socket(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip),
	};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static void plain_send(int fd, const uint8_t *buf, size_t len, uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip),
	};

	CHECK_EQ(sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)), len);
}

static ssize_t plain_recv_wait(int fd, uint8_t *buf, size_t cap)
{
	uint64_t end = test_now_ns() + 2000000000ull;
	ssize_t n;

	while ((n = recv(fd, buf, cap, 0)) < 0) {
		CHECK(errno == EAGAIN);
		CHECK(test_now_ns() < end);
		sched_yield();
	}
	return n;
}

static void exchange(struct gpunic_link *tx, struct gpunic_link *rx, uint32_t seq0)
{
	uint8_t *out = malloc(FRAME_MAX), *in = malloc(FRAME_MAX);
	size_t sizes[70], n = 0, len;

	CHECK(out && in);
	for (size_t s = 60; s < FRAME_MAX; s += 67)
		sizes[n++] = s;
	sizes[n++] = FRAME_MAX;
	for (size_t i = 0; i < n; i += 8) {
		for (size_t j = i; j < n && j < i + 8; j++) {
			test_eth_frame(out, sizes[j], seq0 + (uint32_t)j);
			CHECK_EQ(gpunic_link_send(tx, out, sizes[j]), 0);
		}
		for (size_t j = i; j < n && j < i + 8; j++) {
			CHECK_EQ(test_recv_wait(rx, in, FRAME_MAX, &len, 2000), 0);
			CHECK_EQ(len, sizes[j]);
			test_eth_frame(out, sizes[j], seq0 + (uint32_t)j);
			CHECK_MEM(in, out, len);
		}
	}
	CHECK_EQ(gpunic_link_recv(rx, in, FRAME_MAX, &len), EAGAIN);
	free(out);
	free(in);
}

TEST(dgram_exchange)
{
	uint16_t pa = test_port(0), pb = test_port(1);
	struct gpunic_link *a = open_dgram(IP_A, pa, IP_B, pb);
	struct gpunic_link *b = open_dgram(IP_B, pb, IP_A, pa);
	uint8_t buf[64];
	size_t len;

	CHECK(a && b);
	CHECK(strcmp(a->ops->name, "dgram") == 0);
	CHECK_EQ(a->caps, GPUNIC_LINK_CAP_SHARED_WIRE);
	CHECK_EQ(a->mtu, GPUNIC_MAX_FRAME_BYTES);
	CHECK_EQ(gpunic_link_recv(a, buf, sizeof(buf), &len), EAGAIN);
	CHECK_EQ(gpunic_link_recv(b, buf, sizeof(buf), &len), EAGAIN);
	exchange(a, b, 0);
	exchange(b, a, 1000);
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

/* QEMU's side of the wire: the frame bytes are the datagram, both ways, no header. */
TEST(dgram_qemu_wire)
{
	uint16_t pa = test_port(2), pq = test_port(3);
	struct gpunic_link *a = open_dgram(IP_A, pa, IP_B, pq);
	int q = plain_socket(IP_B, pq);
	uint8_t out[1514], in[2048];
	size_t len;
	ssize_t n;

	CHECK(a);
	test_eth_frame(out, sizeof(out), 5);
	CHECK_EQ(gpunic_link_send(a, out, sizeof(out)), 0);
	n = plain_recv_wait(q, in, sizeof(in));
	CHECK_EQ(n, sizeof(out));
	CHECK_MEM(in, out, sizeof(out));

	test_eth_frame(out, 60, 6);
	plain_send(q, out, 60, IP_A, pa);
	CHECK_EQ(test_recv_wait(a, in, sizeof(in), &len, 2000), 0);
	CHECK_EQ(len, 60);
	CHECK_MEM(in, out, 60);
	close(q);
	gpunic_link_close(a);
}

/* Any sender reaches us (QEMU does not filter either); runts are counted and skipped. */
TEST(dgram_runts_and_strangers)
{
	uint16_t pa = test_port(4), pq = test_port(5);
	struct gpunic_link *a = open_dgram(IP_A, pa, IP_B, pq);
	int stranger = plain_socket(IP4(127, 0, 0, 73), pq);
	uint8_t out[64], in[128];
	size_t len;

	CHECK(a);
	test_eth_frame(out, sizeof(out), 9);
	plain_send(stranger, out, 5, IP_A, pa);
	plain_send(stranger, out, 0, IP_A, pa);
	plain_send(stranger, out, sizeof(out), IP_A, pa);
	CHECK_EQ(test_recv_wait(a, in, sizeof(in), &len, 2000), 0);
	CHECK_EQ(len, sizeof(out));
	CHECK_MEM(in, out, sizeof(out));
	CHECK_EQ(a->stats.rx_errors, 2);
	CHECK_EQ(a->stats.rx_frames, 1);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EAGAIN);
	close(stranger);
	gpunic_link_close(a);
}

TEST(dgram_sizes_rejected)
{
	uint16_t pa = test_port(6), pb = test_port(7);
	struct gpunic_link *a = open_dgram(IP_A, pa, IP_B, pb);
	struct gpunic_link *b = open_dgram(IP_B, pb, IP_A, pa);
	uint8_t *big = malloc(FRAME_MAX + 1), *small = malloc(100);
	size_t len;

	CHECK(a && b && big && small);
	test_eth_frame(big, FRAME_MAX + 1, 1);
	CHECK_EQ(gpunic_link_send(a, big, FRAME_MAX + 1), EMSGSIZE);
	CHECK_EQ(gpunic_link_send(a, big, 13), EINVAL);
	CHECK_EQ(a->stats.tx_errors, 2);
	CHECK_EQ(a->stats.tx_frames, 0);
	CHECK_EQ(gpunic_link_send(a, big, 101), 0);
	CHECK_EQ(gpunic_link_send(a, big, 100), 0);
	CHECK_EQ(test_recv_wait(b, small, 100, &len, 2000), EMSGSIZE);
	CHECK_EQ(b->stats.rx_errors, 1);
	CHECK_EQ(test_recv_wait(b, small, 100, &len, 2000), 0);
	CHECK_EQ(len, 100);
	CHECK_MEM(small, big, 100);
	CHECK_EQ(gpunic_link_recv(b, small, 100, &len), EAGAIN);
	free(big);
	free(small);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(dgram_open_invalid)
{
	uint16_t pa = test_port(0) ^ 1;
	struct gpunic_link *a;

	CHECK(!gpunic_link_dgram_open(NULL) && errno == EINVAL);
	CHECK(!open_dgram(IP_A, 0, IP_B, 1000) && errno == EINVAL);
	CHECK(!open_dgram(IP_A, 1000, IP_B, 0) && errno == EINVAL);
	a = open_dgram(IP_A, pa, IP_B, 1000);
	CHECK(a);
	CHECK(!open_dgram(IP_A, pa, IP_B, 1000) && errno == EADDRINUSE);
	gpunic_link_close(a);
}
