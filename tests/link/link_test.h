/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the link tests: frames with a checkable pattern, a bounded wait for a frame,
 * per-process ports so parallel runs (plain and sanitizer builds) do not collide.
 */
#ifndef GPUNIC_TEST_LINK_H
#define GPUNIC_TEST_LINK_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/link.h"
#include "gpunic/wire.h"
#include "harness.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

static inline uint64_t test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Port @i (0..7) of this process, in 20000..59999: distinct across concurrent test processes. */
static inline uint16_t test_port(unsigned i)
{
	return (uint16_t)(20000u + (unsigned)getpid() % 5000u * 8u + (i & 7u));
}

/* Byte @i of the test pattern for frame @seq. */
static inline uint8_t test_pattern(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + (i >> 8));
}

/* Fills bytes @from..@len of @buf with the pattern, with @seq in the first four of them. */
static inline void test_fill(uint8_t *buf, size_t from, size_t len, uint32_t seq)
{
	for (size_t i = from; i < len; i++)
		buf[i] = test_pattern(seq, i);
	if (len >= from + 4)
		memcpy(buf + from, &seq, 4);
}

static inline int test_check_fill(const uint8_t *buf, size_t from, size_t len, uint32_t seq)
{
	uint32_t got;

	if (len >= from + 4) {
		memcpy(&got, buf + from, 4);
		if (got != seq)
			return 0;
		from += 4;
	}
	for (size_t i = from; i < len; i++)
		if (buf[i] != test_pattern(seq, i))
			return 0;
	return 1;
}

/* An Ethernet frame of @len bytes: broadcast destination, a fixed source, EtherType 0x88B5
 * (local experimental), then the pattern for @seq. */
static inline void test_eth_frame(uint8_t *buf, size_t len, uint32_t seq)
{
	static const uint8_t hdr[14] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00,
					 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5 };

	memcpy(buf, hdr, sizeof(hdr));
	test_fill(buf, sizeof(hdr), len, seq);
}

/* Busy-poll back-off: spin, but yield now and then so a peer on the same core gets to run
 * (tests share a 2-core machine). */
static inline void test_backoff(unsigned *spins)
{
	if ((++*spins & 255u) == 0)
		sched_yield();
}

/* Polls @link until a frame or an error other than EAGAIN, or @timeout_ms passes (EAGAIN). */
static inline int test_recv_wait(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len,
				 unsigned timeout_ms)
{
	uint64_t end = test_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int err;

	for (;;) {
		err = gpunic_link_recv(link, buf, cap, len);
		if (err != EAGAIN || test_now_ns() > end)
			return err;
		sched_yield();
	}
}

/* Sends, retrying EAGAIN for up to @timeout_ms. */
static inline int test_send_wait(struct gpunic_link *link, const uint8_t *buf, size_t len,
				 unsigned timeout_ms)
{
	uint64_t end = test_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int err;

	for (;;) {
		err = gpunic_link_send(link, buf, len);
		if (err != EAGAIN || test_now_ns() > end)
			return err;
		sched_yield();
	}
}

#endif /* GPUNIC_TEST_LINK_H */
