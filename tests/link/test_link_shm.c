// SPDX-License-Identifier: MIT
/* The shm link: two ends in one process and across fork(), a full ring, header validation, and
 * a hostile peer scribbling on the shared counters and lengths (meant to run under ASan). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "link_test.h"

/* The shared layout, restated from shm.c so the test can play a hostile peer. */
enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_HDR_BYTES = 8,
	OFF_SLOTS = 12,
	OFF_SLOT_BYTES = 16,
	OFF_MTU = 20,
	OFF_RING0_PROD = 64,
	OFF_RING0_CONS = 128,
	OFF_RING1_PROD = 192,
	OFF_RING1_CONS = 256,
};

#define FRAME_MAX GPUNIC_MAX_FRAME_BYTES

static char shm_name[64];

static const char *test_name(const char *tag)
{
	snprintf(shm_name, sizeof(shm_name), "/gpunic-test-%s-%d", tag, (int)getpid());
	return shm_name;
}

static struct gpunic_link *open_end(const char *name, enum gpunic_shm_end end, uint32_t slots,
				    int create)
{
	struct gpunic_shm_link_attr attr = {
		.name = name, .end = end, .slots = slots, .create = create,
	};

	return gpunic_link_shm_open(&attr);
}

/* Maps the whole object for the test to play the peer; returns its size in *bytes. */
static uint8_t *map_raw(const char *name, size_t *bytes)
{
	struct stat st;
	uint8_t *map;
	int fd = shm_open(name, O_RDWR, 0);

	CHECK(fd >= 0);
	CHECK(fstat(fd, &st) == 0);
	*bytes = (size_t)st.st_size;
	map = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED);
	close(fd);
	return map;
}

static void put32(uint8_t *map, size_t off, uint32_t v)
{
	memcpy(map + off, &v, 4);
}

static uint32_t get32(const uint8_t *map, size_t off)
{
	uint32_t v;

	memcpy(&v, map + off, 4);
	return v;
}

/* Sends frames of every size class from @tx to @rx, @count in a burst, and checks them. */
static void exchange(struct gpunic_link *tx, struct gpunic_link *rx, uint32_t seq0)
{
	uint8_t *out = malloc(FRAME_MAX), *in = malloc(FRAME_MAX);
	uint32_t seq = seq0;
	size_t sizes[64], n = 0, len;

	CHECK(out && in);
	for (size_t s = 60; s < FRAME_MAX && n < 63; s += 67)
		sizes[n++] = s;
	sizes[n++] = FRAME_MAX;
	for (size_t i = 0; i < n; i++) {
		test_eth_frame(out, sizes[i], seq + (uint32_t)i);
		CHECK_EQ(gpunic_link_send(tx, out, sizes[i]), 0);
	}
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ(gpunic_link_recv(rx, in, FRAME_MAX, &len), 0);
		CHECK_EQ(len, sizes[i]);
		test_eth_frame(out, sizes[i], seq + (uint32_t)i);
		CHECK_MEM(in, out, len);
	}
	CHECK_EQ(gpunic_link_recv(rx, in, FRAME_MAX, &len), EAGAIN);
	free(out);
	free(in);
}

TEST(shm_exchange)
{
	const char *name = test_name("xchg");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 128, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t buf[64];
	size_t len;

	CHECK(a && b);
	CHECK(strcmp(a->ops->name, "shm") == 0);
	CHECK_EQ(a->mtu, GPUNIC_MAX_FRAME_BYTES);
	CHECK_EQ(a->caps, 0);
	CHECK_EQ(gpunic_link_recv(a, buf, sizeof(buf), &len), EAGAIN);
	CHECK_EQ(gpunic_link_recv(b, buf, sizeof(buf), &len), EAGAIN);
	for (uint32_t round = 0; round < 4; round++) {
		exchange(a, b, round * 1000);
		exchange(b, a, round * 1000 + 500);
	}
	CHECK_EQ(a->stats.tx_frames, b->stats.rx_frames);
	CHECK_EQ(a->stats.tx_bytes, b->stats.rx_bytes);
	CHECK_EQ(b->stats.tx_frames, a->stats.rx_frames);
	CHECK_EQ(a->stats.tx_frames, 4 * 63);
	CHECK_EQ(a->stats.tx_errors + a->stats.rx_errors, 0);
	CHECK_EQ(b->stats.tx_errors + b->stats.rx_errors, 0);
	gpunic_link_close(b);
	gpunic_link_close(a);
	/* The creator removed the name. */
	CHECK(shm_open(name, O_RDWR, 0) < 0 && errno == ENOENT);
}

TEST(shm_sizes_rejected)
{
	const char *name = test_name("size");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 0, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t *big = calloc(1, FRAME_MAX + 1), *small = malloc(100);
	size_t len = 0;

	CHECK(a && b && big && small);
	test_eth_frame(big, FRAME_MAX + 1, 1);
	CHECK_EQ(gpunic_link_send(a, big, FRAME_MAX + 1), EMSGSIZE);
	CHECK_EQ(gpunic_link_send(a, big, 13), EINVAL);
	CHECK_EQ(a->stats.tx_errors, 2);
	CHECK_EQ(a->stats.tx_frames, 0);
	/* A frame larger than the caller's buffer is consumed and dropped. */
	CHECK_EQ(gpunic_link_send(a, big, 200), 0);
	CHECK_EQ(gpunic_link_send(a, big, 60), 0);
	CHECK_EQ(gpunic_link_recv(b, small, 100, &len), EMSGSIZE);
	CHECK_EQ(b->stats.rx_errors, 1);
	CHECK_EQ(gpunic_link_recv(b, small, 100, &len), 0);
	CHECK_EQ(len, 60);
	CHECK_MEM(small, big, 60);
	CHECK_EQ(gpunic_link_recv(b, small, 100, &len), EAGAIN);
	free(big);
	free(small);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(shm_full_ring)
{
	const char *name = test_name("full");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 8, 0);
	uint8_t out[128], in[128];
	uint32_t seq = 0, next = 0;
	size_t len;

	CHECK(a && b);
	for (int round = 0; round < 5; round++) {
		int sent = 0;

		for (;;) {
			test_eth_frame(out, 60 + seq % 60, seq);
			int err = gpunic_link_send(a, out, 60 + seq % 60);

			if (err == EAGAIN)
				break;
			CHECK_EQ(err, 0);
			seq++;
			sent++;
		}
		CHECK_EQ(sent, 8);
		/* Free one slot: exactly one more frame fits. */
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
		CHECK(test_check_fill(in, 14, len, next++));
		test_eth_frame(out, 60, seq);
		CHECK_EQ(gpunic_link_send(a, out, 60), 0);
		seq++;
		CHECK_EQ(gpunic_link_send(a, out, 60), EAGAIN);
		while (gpunic_link_recv(b, in, sizeof(in), &len) == 0)
			CHECK(test_check_fill(in, 14, len, next++));
		CHECK_EQ(next, seq);
	}
	CHECK_EQ(a->stats.tx_errors, 0);
	CHECK_EQ(b->stats.rx_frames, seq);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

/* Child side of the fork tests: attach as B and echo every frame back. */
static _Noreturn void echo_child(const char *name, uint32_t count)
{
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t *buf = malloc(FRAME_MAX);
	unsigned spins = 0;
	size_t len;

	if (!b || !buf)
		_exit(2);
	for (uint32_t i = 0; i < count; i++) {
		int err;

		while ((err = gpunic_link_recv(b, buf, FRAME_MAX, &len)) == EAGAIN)
			test_backoff(&spins);
		/* The sequence number is enough here; the parent checks every byte. */
		if (err || len < 18 || memcmp(buf + 14, &i, 4) != 0)
			_exit(3);
		while ((err = gpunic_link_send(b, buf, len)) == EAGAIN)
			sched_yield();
		if (err)
			_exit(4);
	}
	gpunic_link_close(b);
	free(buf);
	_exit(0);
}

static void wait_child(pid_t pid)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* Streams frames of every size through a forked child and back; nothing lost or reordered. */
TEST(shm_fork_stream)
{
	const uint32_t count = 20000;
	const char *name = test_name("fork");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 64, 1);
	uint8_t *out = malloc(FRAME_MAX), *in = malloc(FRAME_MAX);
	uint32_t sent = 0, got = 0;
	uint64_t deadline = test_now_ns() + 60ull * 1000000000u;
	pid_t pid;
	size_t len;

	CHECK(a && out && in);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		echo_child(name, count);

	while (got < count) {
		if (sent < count) {
			size_t flen = 60 + (size_t)sent * 131 % (FRAME_MAX - 59);

			test_eth_frame(out, flen, sent);
			if (gpunic_link_send(a, out, flen) == 0)
				sent++;
		}
		int err = gpunic_link_recv(a, in, FRAME_MAX, &len);

		if (err == EAGAIN) {
			if (test_now_ns() > deadline) {
				kill(pid, SIGKILL);
				CHECK(!"timed out");
			}
			sched_yield();
			continue;
		}
		CHECK_EQ(err, 0);
		CHECK_EQ(len, 60 + (size_t)got * 131 % (FRAME_MAX - 59));
		CHECK(test_check_fill(in, 14, len, got));
		got++;
	}
	wait_child(pid);
	CHECK_EQ(a->stats.tx_frames, count);
	CHECK_EQ(a->stats.rx_frames, count);
	CHECK_EQ(a->stats.rx_errors, 0);
	free(out);
	free(in);
	gpunic_link_close(a);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ping-pong with a forked child: one-way latency = round trip / 2, 64-byte frames. Printed,
 * never asserted (timing must not decide a test); both sides spin, yielding now and then, so
 * the numbers mean something only with two idle cores. GPUNIC_TEST_SHM_ROUNDS sets the count.
 */
TEST(shm_fork_latency)
{
	const char *env = getenv("GPUNIC_TEST_SHM_ROUNDS");
	const uint32_t count = env ? (uint32_t)strtoul(env, NULL, 10) : 10000, warmup = 1000;
	const char *name = test_name("lat");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 0, 1);
	uint64_t *rtt = malloc((count + 1) * sizeof(*rtt)), sum = 0;
	uint8_t out[64], in[FRAME_MAX];
	unsigned spins = 0;
	pid_t pid;
	size_t len;

	CHECK(a && rtt && count > 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		echo_child(name, count + warmup);

	for (uint32_t i = 0; i < count + warmup; i++) {
		uint64_t t0;
		int err;

		test_eth_frame(out, sizeof(out), i);
		t0 = test_now_ns();
		CHECK_EQ(gpunic_link_send(a, out, sizeof(out)), 0);
		while ((err = gpunic_link_recv(a, in, sizeof(in), &len)) == EAGAIN)
			test_backoff(&spins);
		if (i >= warmup)
			rtt[i - warmup] = test_now_ns() - t0;
		CHECK_EQ(err, 0);
		CHECK(test_check_fill(in, 14, len, i));
	}
	for (uint32_t i = 0; i < count; i++)
		sum += rtt[i];
	qsort(rtt, count, sizeof(*rtt), cmp_u64);
	printf("shm one-way latency, 64-byte frames, %u round trips / 2: mean %.0f ns, "
	       "p50 %.0f ns, p99 %.0f ns, min %.0f ns\n",
	       count, (double)sum / count / 2, rtt[count / 2] / 2.0, rtt[count * 99ull / 100] / 2.0,
	       rtt[0] / 2.0);
	wait_child(pid);
	free(rtt);
	gpunic_link_close(a);
}

TEST(shm_open_invalid)
{
	const char *name = test_name("inval");
	struct gpunic_link *a;
	struct gpunic_shm_link_attr attr = { .name = "noslash", .create = 1 };

	CHECK(!gpunic_link_shm_open(NULL) && errno == EINVAL);
	CHECK(!gpunic_link_shm_open(&attr) && errno == EINVAL);
	attr.name = NULL;
	CHECK(!gpunic_link_shm_open(&attr) && errno == EINVAL);
	CHECK(!open_end(name, GPUNIC_SHM_END_A, 3, 1) && errno == EINVAL);
	CHECK(!open_end(name, GPUNIC_SHM_END_A, 1, 1) && errno == EINVAL);
	CHECK(!open_end(name, GPUNIC_SHM_END_A, 1u << 20, 1) && errno == EINVAL);
	CHECK(!open_end(name, (enum gpunic_shm_end)2, 0, 1) && errno == EINVAL);
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 0, 0) && errno == ENOENT);

	a = open_end(name, GPUNIC_SHM_END_A, 16, 1);
	CHECK(a);
	CHECK(!open_end(name, GPUNIC_SHM_END_A, 16, 1) && errno == EEXIST);
	/* An attacher that asks for a geometry must get exactly it. */
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 32, 0) && errno == EINVAL);
	gpunic_link_close(a);
}

/* Each corruption of the header written by the creator must make attach fail with EINVAL. */
TEST(shm_attach_rejects_bad_header)
{
	static const struct {
		size_t off;
		uint32_t val;
	} bad[] = {
		{ OFF_MAGIC, 0 },
		{ OFF_MAGIC, 0xdeadbeef },
		{ OFF_VERSION, 2 },
		{ OFF_HDR_BYTES, 64 },
		{ OFF_SLOTS, 0 },
		{ OFF_SLOTS, 3 },
		{ OFF_SLOTS, 1u << 20 },
		{ OFF_SLOTS, 0x80000000u },
		{ OFF_SLOT_BYTES, 64 },
		{ OFF_SLOT_BYTES, 0xffffffffu },
		{ OFF_MTU, 1 << 16 },
	};
	const char *name = test_name("hdr");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 16, 1), *b;
	size_t bytes;
	uint8_t *map;
	uint8_t saved[64];

	CHECK(a);
	map = map_raw(name, &bytes);
	memcpy(saved, map, sizeof(saved));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put32(map, bad[i].off, bad[i].val);
		b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
		if (b)
			harness_fail(__FILE__, __LINE__, "attached with word %zu = 0x%x",
				     bad[i].off, bad[i].val);
		CHECK_EQ(errno, EINVAL);
		memcpy(map, saved, sizeof(saved));
	}
	/* Restored, it attaches again. */
	b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	CHECK(b);
	gpunic_link_close(b);
	munmap(map, bytes);

	/* An object too small for its own geometry (truncated) or for a header at all. */
	int fd = shm_open(name, O_RDWR, 0);

	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)bytes - 1) == 0);
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 0, 0) && errno == EINVAL);
	CHECK(ftruncate(fd, 16) == 0);
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 0, 0) && errno == EINVAL);
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 0, 0) && errno == EINVAL);
	close(fd);
	gpunic_link_close(a);
}

TEST(shm_attach_rejects_foreign_object)
{
	const char *name = test_name("foreign");
	uint8_t junk[8192];
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);

	CHECK(fd >= 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK(!open_end(name, GPUNIC_SHM_END_B, 0, 0) && errno == EINVAL);
	shm_unlink(name);
}

/*
 * A hostile (or crashed) peer writes garbage into the counters and slot lengths. Every call
 * must stay inside the mapping and inside the caller's buffer (exact-size heap buffers, so ASan
 * sees a byte too far), return 0, EAGAIN, EBADMSG or EMSGSIZE, and never hand out more than the
 * MTU.
 */
TEST(shm_hostile_peer)
{
	static const uint32_t junk[] = {
		0, 1, 7, 13, 14, 60, 4095, GPUNIC_MAX_FRAME_BYTES, GPUNIC_MAX_FRAME_BYTES + 1,
		0x7fffffff, 0x80000000u, 0xfffffff0u, 0xffffffffu,
	};
	const char *name = test_name("hostile");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 16, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	const size_t cap = 1000;
	uint8_t *in = malloc(cap), *big = malloc(FRAME_MAX), out[60];
	uint32_t hdr_bytes, slot_bytes, slots;
	uint64_t rng = 42;
	size_t bytes, len;
	uint8_t *map;

	CHECK(a && b && in && big);
	map = map_raw(name, &bytes);
	hdr_bytes = get32(map, OFF_HDR_BYTES);
	slot_bytes = get32(map, OFF_SLOT_BYTES);
	slots = get32(map, OFF_SLOTS);
	CHECK_EQ(bytes, hdr_bytes + 2ull * slots * slot_bytes);

	for (int iter = 0; iter < 20000; iter++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t r = (uint32_t)(rng >> 33), v = junk[r % (sizeof(junk) / sizeof(junk[0]))];
		uint32_t w = (uint32_t)(rng >> 17);

		switch (r % 6) {
		case 0: /* B's receive ring: A -> B producer counter */
			put32(map, OFF_RING0_PROD, iter & 1 ? v : w);
			break;
		case 1: /* A's send ring: the consumer counter A waits on */
			put32(map, OFF_RING0_CONS, iter & 1 ? v : w);
			break;
		case 2: /* a slot length in ring 0 */
			put32(map, hdr_bytes + (size_t)(w % slots) * slot_bytes, v);
			break;
		case 3: /* B -> A ring, both counters */
			put32(map, OFF_RING1_PROD, w);
			put32(map, OFF_RING1_CONS, v);
			break;
		default: /* a slot length in ring 1 */
			put32(map, hdr_bytes + ((size_t)slots + w % slots) * slot_bytes, v);
			break;
		}
		test_eth_frame(out, sizeof(out), (uint32_t)iter);
		int e1 = gpunic_link_send(a, out, sizeof(out));
		int e2 = gpunic_link_send(b, out, sizeof(out));
		int e3 = gpunic_link_recv(b, in, cap, &len);

		CHECK(e1 == 0 || e1 == EAGAIN);
		CHECK(e2 == 0 || e2 == EAGAIN);
		CHECK(e3 == 0 || e3 == EAGAIN || e3 == EBADMSG || e3 == EMSGSIZE);
		if (e3 == 0)
			CHECK(len >= 14 && len <= cap);
		int e4 = gpunic_link_recv(a, big, FRAME_MAX, &len);

		CHECK(e4 == 0 || e4 == EAGAIN || e4 == EBADMSG);
		if (e4 == 0)
			CHECK(len >= 14 && len <= GPUNIC_MAX_FRAME_BYTES);
	}
	/* The peer's garbage was counted, not delivered. */
	CHECK(b->stats.rx_errors > 0);
	CHECK(a->stats.rx_errors > 0);
	munmap(map, bytes);
	free(in);
	free(big);
	gpunic_link_close(a);
	gpunic_link_close(b);
}
