// SPDX-License-Identifier: MIT
/* The shm link: two ends in one process and across fork(), a full ring, positions wrapping,
 * an end attaching again, the slot protocol word by word, frames built and parsed in place,
 * small frames packed into one line and rebuilt, header validation, and a hostile peer
 * scribbling on the sequence words, lengths, packed lines and records (meant to run under
 * ASan). */
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

#include "gpunic/verbs.h"
#include "link_test.h"

/* The shared layout, restated from shm.c so the test can play a hostile peer. */
enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_HDR_BYTES = 8,
	OFF_SLOTS = 12,
	OFF_SLOT_BYTES = 16,
	OFF_MTU = 20,
	/* where each side of each ring stands, read by an end that attaches */
	OFF_RING0_PROD = 64,
	OFF_RING0_CONS = 128,
	OFF_RING0_ATTACH = 192,	/* how often ring 0's consumer attached */
	OFF_RING1_PROD = 256,
	OFF_RING1_CONS = 320,
	OFF_RING1_ATTACH = 384,
	/* in each slot: the sequence word, the length, the frame */
	SLOT_SEQ = 0,
	SLOT_LEN = 4,
	SLOT_FRAME = 8,
	SHM_VERSION_NOW = 3,
};

/* The length word's flags (link_hold.h): a frame packed into the slot's first line, a whole
 * frame whose headers are the template packed frames are rebuilt from. */
#define LEN_PACKED (1u << 31)
#define LEN_TMPL (1u << 30)

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
	CHECK_EQ(a->caps, GPUNIC_LINK_CAP_RX_INTACT);
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
/* A ring of 64: the producer learns of room 16 slots at a time (link_tx_room_ahead), and
 * every slot handed back, one or many, is used exactly once more, in order, never one early. */
TEST(shm_room_ahead)
{
	static const int backs[] = { 1, 5, 15, 16, 17, 40, 64, 2 };
	const char *name = test_name("ahead");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 64, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 64, 0);
	uint8_t out[128], in[128];
	uint32_t seq = 0, next = 0;
	size_t len;

	CHECK(a && b);
	for (int i = 0; i < 64; i++, seq++) {
		test_eth_frame(out, 60, seq);
		CHECK_EQ(gpunic_link_send(a, out, 60), 0);
	}
	CHECK_EQ(gpunic_link_send(a, out, 60), EAGAIN);
	for (size_t k = 0; k < sizeof(backs) / sizeof(backs[0]); k++) {
		for (int i = 0; i < backs[k]; i++) {
			CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
			CHECK(test_check_fill(in, 14, len, next++));
		}
		for (int i = 0; i < backs[k]; i++, seq++) {
			test_eth_frame(out, 60, seq);
			CHECK_EQ(gpunic_link_send(a, out, 60), 0);
		}
		CHECK_EQ(gpunic_link_send(a, out, 60), EAGAIN);
	}
	while (gpunic_link_recv(b, in, sizeof(in), &len) == 0)
		CHECK(test_check_fill(in, 14, len, next++));
	CHECK_EQ(next, seq);
	CHECK_EQ(a->stats.tx_frames, seq);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

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
		{ OFF_VERSION, 1 }, /* counters on their own lines, no sequence words */
		{ OFF_VERSION, 2 }, /* no packed frames, no attach counts */
		{ OFF_VERSION, 4 },
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

/* ---------------------------------------------------------------- the slot protocol */

/* The whole object, mapped a second time, for the test to read and write what the peer would. */
struct raw {
	uint8_t *map;
	size_t bytes;
	uint32_t hdr_bytes, slot_bytes, slots;
};

static void raw_open(struct raw *r, const char *name)
{
	r->map = map_raw(name, &r->bytes);
	r->hdr_bytes = get32(r->map, OFF_HDR_BYTES);
	r->slot_bytes = get32(r->map, OFF_SLOT_BYTES);
	r->slots = get32(r->map, OFF_SLOTS);
	CHECK_EQ(r->bytes, r->hdr_bytes + 2ull * r->slots * r->slot_bytes);
}

static void raw_close(struct raw *r)
{
	munmap(r->map, r->bytes);
}

/* Byte offset of slot @i (taken modulo the ring) of @ring. */
static size_t slot_off(const struct raw *r, unsigned ring, uint32_t i)
{
	return r->hdr_bytes + ((size_t)ring * r->slots + i % r->slots) * r->slot_bytes;
}

static uint32_t raw_seq(const struct raw *r, unsigned ring, uint32_t i)
{
	return get32(r->map, slot_off(r, ring, i) + SLOT_SEQ);
}

/* The peer's side of a publish: frame, length, then the sequence word. */
static void raw_publish(struct raw *r, unsigned ring, uint32_t pos, const uint8_t *f,
			uint32_t len, uint32_t seq)
{
	size_t off = slot_off(r, ring, pos);

	memcpy(r->map + off + SLOT_FRAME, f, len < FRAME_MAX ? len : FRAME_MAX);
	put32(r->map, off + SLOT_LEN, len);
	put32(r->map, off + SLOT_SEQ, seq);
}

/* Every word of the protocol as shm.c's header comment states it, on a ring of 4. */
TEST(shm_slot_protocol)
{
	const char *name = test_name("proto");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 4, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t out[200], in[200], *room;
	struct raw r;
	size_t len;

	CHECK(a && b);
	raw_open(&r, name);
	CHECK_EQ(get32(r.map, OFF_VERSION), SHM_VERSION_NOW);
	CHECK_EQ(r.slot_bytes % 64, 0);
	CHECK(r.slot_bytes >= SLOT_FRAME + FRAME_MAX);
	/* A new cable: slot i free for position i, in both rings; every record at 0. */
	for (uint32_t i = 0; i < 4; i++) {
		CHECK_EQ(raw_seq(&r, 0, i), i);
		CHECK_EQ(raw_seq(&r, 1, i), i);
	}
	for (uint32_t pos = 0; pos < 12; pos++) {
		size_t off = slot_off(&r, 0, pos);

		/* A reservation writes nothing the peer could take for a frame. */
		CHECK_EQ(gpunic_link_tx_reserve(a, 100, &room), 0);
		CHECK_EQ(raw_seq(&r, 0, pos), pos);
		gpunic_link_tx_abort(a);
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), EAGAIN);

		test_eth_frame(out, 60 + pos, pos);
		CHECK_EQ(gpunic_link_send(a, out, 60 + pos), 0);
		CHECK_EQ(raw_seq(&r, 0, pos), pos + 1);                 /* published */
		/* whole, and each the new template: its first bytes carry its sequence */
		CHECK_EQ(get32(r.map, off + SLOT_LEN), (60 + pos) | LEN_TMPL);
		CHECK_MEM(r.map + off + SLOT_FRAME, out, 60 + pos);
		CHECK_EQ(get32(r.map, OFF_RING0_PROD), pos + 1);
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
		CHECK_EQ(raw_seq(&r, 0, pos), pos + 4);                 /* free for the next lap */
		CHECK_EQ(get32(r.map, OFF_RING0_CONS), pos + 1);
		CHECK_MEM(in, out, len);
	}
	/* The other ring is untouched, and the other direction uses it the same way. */
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ(raw_seq(&r, 1, i), i);
	CHECK_EQ(gpunic_link_send(b, out, 64), 0);
	CHECK_EQ(raw_seq(&r, 1, 0), 1);
	CHECK_EQ(get32(r.map, OFF_RING1_PROD), 1);
	raw_close(&r);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

/* The frame is built in the slot and parsed in the slot: no copy on either side. */
TEST(shm_zero_copy_in_place)
{
	const char *name = test_name("inplace");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	const uint8_t *f, *f2;
	uint8_t *room, out[300];
	size_t len, len2, off;
	struct raw r;

	CHECK(a && b);
	raw_open(&r, name);
	off = slot_off(&r, 0, 0);
	CHECK_EQ(gpunic_link_tx_reserve(a, 300, &room), 0);
	test_eth_frame(room, 300, 7);
	/* The room is the slot. */
	test_eth_frame(out, 300, 7);
	CHECK_MEM(r.map + off + SLOT_FRAME, out, 300);
	CHECK_EQ(gpunic_link_tx_commit(a, 250), 0);
	CHECK_EQ(a->stats.tx_frames, 1);
	CHECK_EQ(a->stats.tx_bytes, 250);

	CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
	CHECK_EQ(len, 250);
	CHECK_MEM(f, out, 250);
	/* The frame is the slot: what the peer writes there now shows through (hence "read each
	 * field once"), but the length was read once and stays what it was. */
	r.map[off + SLOT_FRAME + 20] ^= 0x5a;
	put32(r.map, off + SLOT_LEN, 0xffffffffu);
	CHECK_EQ(f[20], out[20] ^ 0x5a);
	CHECK_EQ(gpunic_link_rx_peek(b, &f2, &len2), 0);
	CHECK(f2 == f);
	CHECK_EQ(len2, 250);
	CHECK_EQ(b->stats.rx_frames, 1);
	CHECK_EQ(raw_seq(&r, 0, 0), 1);
	gpunic_link_rx_release(b);
	CHECK_EQ(raw_seq(&r, 0, 0), 8);
	CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), EAGAIN);
	raw_close(&r);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

/* Free-running positions cross 2^32 on a ring of 2 (the smallest, where "published" and "next
 * lap" are nearest) and of 8, full and empty, through both APIs. The positions are set through
 * the records an attaching end reads, so two fresh ends start just below the wrap. */
TEST(shm_positions_wrap)
{
	static const uint32_t geometry[] = { 2, 8 };

	for (size_t g = 0; g < 2; g++) {
		const uint32_t n = geometry[g], base = 0xfffffff0u - n;
		const char *name = test_name("wrap");
		struct gpunic_link *owner = open_end(name, GPUNIC_SHM_END_A, n, 1), *a, *b;
		uint32_t sent = 0, got = 0;
		uint8_t out[300], in[300];
		struct raw r;
		size_t len;

		CHECK(owner);
		raw_open(&r, name);
		for (uint32_t x = base; x != base + n; x++) {
			put32(r.map, slot_off(&r, 0, x) + SLOT_SEQ, x);
			put32(r.map, slot_off(&r, 1, x) + SLOT_SEQ, x);
		}
		put32(r.map, OFF_RING0_PROD, base);
		put32(r.map, OFF_RING0_CONS, base);
		put32(r.map, OFF_RING1_PROD, base);
		put32(r.map, OFF_RING1_CONS, base);
		/* A second end A: the owner only keeps the name. */
		a = open_end(name, GPUNIC_SHM_END_A, 0, 0);
		b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
		CHECK(a && b);
		for (int round = 0; round < 40; round++) {
			/* Fill the ring, alternating send and reserve/commit, then drain it,
			 * alternating recv and peek/release. */
			for (;;) {
				size_t flen = 60 + sent % 240;
				uint8_t *room;
				int err;

				if (sent & 1) {
					err = gpunic_link_tx_reserve(a, flen, &room);
					if (err == EAGAIN)
						break;
					CHECK_EQ(err, 0);
					test_eth_frame(room, flen, sent);
					CHECK_EQ(gpunic_link_tx_commit(a, flen), 0);
				} else {
					test_eth_frame(out, flen, sent);
					err = gpunic_link_send(a, out, flen);
					if (err == EAGAIN)
						break;
					CHECK_EQ(err, 0);
				}
				sent++;
			}
			CHECK_EQ(sent - got, n);
			while (got < sent) {
				const uint8_t *f;

				if (got & 1) {
					CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
					CHECK_EQ(len, 60 + got % 240);
					CHECK(test_check_fill(f, 14, len, got));
					gpunic_link_rx_release(b);
				} else {
					CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
					CHECK_EQ(len, 60 + got % 240);
					CHECK(test_check_fill(in, 14, len, got));
				}
				got++;
			}
			CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), EAGAIN);
		}
		/* The positions wrapped: the records say so. */
		CHECK(sent > 0x10u + n);
		CHECK_EQ(get32(r.map, OFF_RING0_PROD), base + sent);
		CHECK_EQ(get32(r.map, OFF_RING0_CONS), base + sent);
		CHECK_EQ(a->stats.tx_frames, sent);
		CHECK_EQ(b->stats.rx_frames, sent);
		CHECK_EQ(a->stats.tx_errors + b->stats.rx_errors, 0);
		raw_close(&r);
		gpunic_link_close(a);
		gpunic_link_close(b);
		gpunic_link_close(owner);
	}
}

/* An end that goes away and attaches again picks up where it stood: frames in flight both ways
 * are neither lost nor seen twice. */
TEST(shm_reattach_resumes)
{
	const char *name = test_name("again");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1), *b;
	uint8_t out[128], in[128];
	uint32_t a_sent = 0, b_got = 0, b_sent = 0, a_got = 0;
	size_t len;

	CHECK(a);
	for (int life = 0; life < 5; life++) {
		b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
		CHECK(b);
		/* Whatever the last B left in flight arrives first. */
		while (a_got < b_sent) {
			CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
			CHECK(test_check_fill(in, 14, len, 1000000 + a_got++));
		}
		for (int i = 0; i < 5; i++) {
			test_eth_frame(out, sizeof(out), a_sent);
			CHECK_EQ(gpunic_link_send(a, out, sizeof(out)), 0);
			a_sent++;
			test_eth_frame(out, sizeof(out), 1000000 + b_sent);
			CHECK_EQ(gpunic_link_send(b, out, sizeof(out)), 0);
			b_sent++;
		}
		/* B takes only some of its frames (the last one by peek, left held) and goes. */
		for (int i = 0; i < 2; i++) {
			CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
			CHECK(test_check_fill(in, 14, len, b_got++));
		}
		const uint8_t *f;

		CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
		CHECK(test_check_fill(f, 14, len, b_got));
		gpunic_link_close(b);
		/* A reads all but two of what B sent. */
		while (a_got + 2 < b_sent) {
			CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
			CHECK(test_check_fill(in, 14, len, 1000000 + a_got++));
		}
		/* The next B finds the rest of A's frames, the held one included. */
		b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
		CHECK(b);
		while (b_got < a_sent) {
			CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
			CHECK(test_check_fill(in, 14, len, b_got++));
		}
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), EAGAIN);
		gpunic_link_close(b);
	}
	while (a_got < b_sent) {
		CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
		CHECK(test_check_fill(in, 14, len, 1000000 + a_got++));
	}
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EAGAIN);
	CHECK_EQ(a->stats.rx_errors, 0);
	gpunic_link_close(a);
}

/*
 * The test is the peer, writing the words by hand: a sequence word is accepted only when it is
 * exactly "published for the position we are at" (every near miss, a lap early or late, is not
 * yet); a published length out of bounds is counted and the slot handed back; the producer
 * writes nothing into a slot whose word is not exactly "free for my position".
 */
TEST(shm_hostile_sequence)
{
	const char *name = test_name("seq");
	const uint32_t n = 8;
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, n, 1);
	uint8_t *frame = malloc(FRAME_MAX), *in = malloc(FRAME_MAX), *room;
	uint64_t errors = 0;
	uint32_t pos = 0;
	const uint8_t *f;
	struct raw r;
	size_t len;

	CHECK(a && frame && in);
	raw_open(&r, name);
	/* A receives on ring 1. Near misses of "published for position 0" (1). */
	{
		static const uint32_t near[] = { 0, 2, 1 + 8, 1 - 8, 1 + 16, 0xffffffffu,
						 0x80000001u, 0x00000101u, 0x01000001u };

		test_eth_frame(frame, 100, 0);
		for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
			raw_publish(&r, 1, 0, frame, 100, near[i]);
			CHECK_EQ(gpunic_link_recv(a, in, FRAME_MAX, &len), EAGAIN);
			CHECK_EQ(gpunic_link_rx_peek(a, &f, &len), EAGAIN);
			CHECK_EQ(raw_seq(&r, 1, 0), near[i]); /* nothing written back */
		}
		CHECK_EQ(a->stats.rx_errors + a->stats.rx_frames, 0);
	}
	/* Lengths out of bounds, published properly: counted, refused, handed back. */
	{
		static const uint32_t bad_len[] = { 0, 1, 13, FRAME_MAX + 1, FRAME_MAX + 64,
						    0x7fffffffu, 0x80000000u, 0xffffffffu };

		for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++, pos++) {
			raw_publish(&r, 1, pos, frame, 100, pos + 1);
			put32(r.map, slot_off(&r, 1, pos) + SLOT_LEN, bad_len[i]);
			if (i & 1)
				CHECK_EQ(gpunic_link_recv(a, in, FRAME_MAX, &len), EBADMSG);
			else
				CHECK_EQ(gpunic_link_rx_peek(a, &f, &len), EBADMSG);
			CHECK_EQ(a->stats.rx_errors, ++errors);
			CHECK_EQ(raw_seq(&r, 1, pos), pos + n);
		}
	}
	/* The smallest and the largest frame, then one bigger than the caller's buffer. */
	test_eth_frame(frame, 14, pos);
	raw_publish(&r, 1, pos, frame, 14, pos + 1);
	CHECK_EQ(gpunic_link_rx_peek(a, &f, &len), 0);
	CHECK_EQ(len, 14);
	CHECK_MEM(f, frame, 14);
	gpunic_link_rx_release(a);
	CHECK_EQ(raw_seq(&r, 1, pos), pos + n);
	pos++;
	test_eth_frame(frame, FRAME_MAX, pos);
	raw_publish(&r, 1, pos, frame, FRAME_MAX, pos + 1);
	CHECK_EQ(gpunic_link_recv(a, in, FRAME_MAX, &len), 0);
	CHECK_EQ(len, FRAME_MAX);
	CHECK_MEM(in, frame, FRAME_MAX);
	pos++;
	raw_publish(&r, 1, pos, frame, FRAME_MAX, pos + 1);
	CHECK_EQ(gpunic_link_recv(a, in, FRAME_MAX - 1, &len), EMSGSIZE);
	CHECK_EQ(a->stats.rx_errors, ++errors);
	CHECK_EQ(raw_seq(&r, 1, pos), pos + n);
	pos++;
	CHECK_EQ(a->stats.rx_frames, 2);

	/* A sends on ring 0, position 0: every word but 0 ("free for 0") keeps it out, as long
	 * as the slot it looks ahead to (the last of eight, position 7: link_tx_room_ahead) does
	 * not say free either: a consumer hands its slots back in order. */
	{
		static const uint32_t taken[] = { 1, 8, 0xffffffffu, 0xfffffff8u, 0x100u };
		size_t off = slot_off(&r, 0, 0);

		memset(r.map + off + SLOT_FRAME, 0xee, 200);
		test_eth_frame(frame, 200, 99);
		for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
			put32(r.map, off + SLOT_SEQ, taken[i]);
			put32(r.map, slot_off(&r, 0, 7) + SLOT_SEQ, taken[i] + 7);
			CHECK_EQ(gpunic_link_send(a, frame, 200), EAGAIN);
			CHECK_EQ(gpunic_link_tx_reserve(a, 200, &room), EAGAIN);
			CHECK_EQ(raw_seq(&r, 0, 0), taken[i]);
			for (size_t j = 0; j < 200; j++)
				CHECK_EQ(r.map[off + SLOT_FRAME + j], 0xee);
		}
		CHECK_EQ(a->stats.tx_frames + a->stats.tx_errors, 0);
		put32(r.map, off + SLOT_SEQ, 0);
		CHECK_EQ(gpunic_link_send(a, frame, 200), 0);
		CHECK_EQ(raw_seq(&r, 0, 0), 1);
		CHECK_EQ(get32(r.map, off + SLOT_LEN), 200);	/* too long to pack: plain */
		CHECK_MEM(r.map + off + SLOT_FRAME, frame, 200);
		/* Position 1's word taken, and position 8's look-ahead (slot 0, just published) not
		 * back: kept out. Position 8's word says back (a lap ahead of a consumer that handed
		 * back in order): 1 is written without its own word read. */
		put32(r.map, slot_off(&r, 0, 1) + SLOT_SEQ, 0xdeadu);
		CHECK_EQ(gpunic_link_send(a, frame, 200), EAGAIN);
		put32(r.map, off + SLOT_SEQ, 8);
		CHECK_EQ(gpunic_link_send(a, frame, 200), 0);
		CHECK_EQ(raw_seq(&r, 0, 1), 2);
		CHECK_EQ(a->stats.tx_frames, 2);
	}
	raw_close(&r);
	free(frame);
	free(in);
	gpunic_link_close(a);
}

/*
 * The engine takes a published frame from the slot itself, with no call into the link
 * (link_hold.h, zc.rx_slot): a length out of bounds must still be refused, counted by the link
 * and the NIC and handed back, and a good frame after it held with its own length, exactly
 * one frame at a time.
 */
TEST(shm_engine_takes_slots_as_the_link)
{
	static const uint32_t bad_len[] = { 0, 13, FRAME_MAX + 1, 0x80000000u, 0xffffffffu };
	const char *name = test_name("hold");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1);
	struct gpunic_nic_attr na = { .link = a, .ip = 0x0a000001 };
	struct gpunic_nic_counters c;
	struct gpunic_nic *nic;
	uint8_t frame[100];
	uint32_t pos = 0;
	struct raw r;

	CHECK(a);
	raw_open(&r, name);
	nic = gpunic_nic_open(&na);
	CHECK(nic);
	test_eth_frame(frame, sizeof(frame), 0);
	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++, pos++) {
		raw_publish(&r, 1, pos, frame, sizeof(frame), pos + 1);
		put32(r.map, slot_off(&r, 1, pos) + SLOT_LEN, bad_len[i]);
		gpunic_nic_poll(nic, 4);
		CHECK_EQ(a->stats.rx_errors, i + 1);
		CHECK_EQ(raw_seq(&r, 1, pos), pos + r.slots);
		CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
		CHECK_EQ(c.drops[GPUNIC_DROP_MALFORMED], i + 1);
		CHECK_EQ(c.rx_frames, 0);
	}
	/* two good frames (a plain Ethernet frame, dropped above the link), one poll each */
	for (uint32_t k = 0; k < 2; k++, pos++) {
		raw_publish(&r, 1, pos, frame, sizeof(frame) - k, pos + 1);
		CHECK_EQ(gpunic_nic_poll(nic, 1), 1);
		CHECK_EQ(raw_seq(&r, 1, pos), pos + r.slots);
		CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
		CHECK_EQ(c.rx_frames, k + 1);
	}
	CHECK_EQ(c.rx_bytes, 2 * sizeof(frame) - 1);
	CHECK_EQ(a->stats.rx_frames, 2);
	CHECK_EQ(a->stats.rx_bytes, 2 * sizeof(frame) - 1);
	CHECK_EQ(a->stats.rx_errors, sizeof(bad_len) / sizeof(bad_len[0]));
	CHECK_EQ(gpunic_nic_poll(nic, 1), 0);
	raw_close(&r);
	gpunic_nic_close(nic);
}

/*
 * A hostile (or crashed) peer writes garbage into the sequence words, slot lengths and records,
 * while both ends send and receive through both APIs. Every call must stay inside the mapping
 * and inside the caller's buffer (exact-size heap buffers, so ASan sees a byte too far), return
 * 0, EAGAIN, EBADMSG or EMSGSIZE, and never hand out more than the MTU.
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
	uint8_t *in = malloc(cap), *big = malloc(FRAME_MAX), out[60], *room;
	uint32_t near_a = 0, near_b = 0;
	uint64_t rng = 42;
	const uint8_t *f;
	struct raw r;
	size_t len;

	CHECK(a && b && in && big);
	raw_open(&r, name);
	for (int iter = 0; iter < 20000; iter++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t x = (uint32_t)(rng >> 33), v = junk[x % (sizeof(junk) / sizeof(junk[0]))];
		uint32_t w = (uint32_t)(rng >> 17), slot = w % r.slots;

		switch (x % 7) {
		case 0: /* A -> B: a sequence word, random or "published" near where B stands */
			put32(r.map, slot_off(&r, 0, slot) + SLOT_SEQ, iter & 1 ? w : near_b + 1);
			break;
		case 1: /* A -> B: a length */
			put32(r.map, slot_off(&r, 0, slot) + SLOT_LEN, v);
			break;
		case 2: /* B -> A: a sequence word */
			put32(r.map, slot_off(&r, 1, slot) + SLOT_SEQ, iter & 1 ? v : near_a + 1);
			break;
		case 3: /* B -> A: a length */
			put32(r.map, slot_off(&r, 1, slot) + SLOT_LEN, v);
			break;
		case 4: /* the records an attaching end reads */
			put32(r.map, OFF_RING0_PROD + 64 * (w % 4), v);
			break;
		default: /* a slot handed back "free" for whatever position the sender is at */
			put32(r.map, slot_off(&r, x & 1, slot) + SLOT_SEQ, w % 64);
			break;
		}
		test_eth_frame(out, sizeof(out), (uint32_t)iter);
		int e1 = gpunic_link_send(a, out, sizeof(out));
		int e2 = gpunic_link_tx_reserve(b, sizeof(out), &room);

		CHECK(e1 == 0 || e1 == EAGAIN);
		CHECK(e2 == 0 || e2 == EAGAIN);
		if (e2 == 0) {
			memcpy(room, out, sizeof(out));
			CHECK_EQ(gpunic_link_tx_commit(b, sizeof(out)), 0);
		}
		int e3 = gpunic_link_recv(b, in, cap, &len);

		CHECK(e3 == 0 || e3 == EAGAIN || e3 == EBADMSG || e3 == EMSGSIZE);
		if (e3 == 0)
			CHECK(len >= 14 && len <= cap);
		int e4 = gpunic_link_rx_peek(a, &f, &len);

		CHECK(e4 == 0 || e4 == EAGAIN || e4 == EBADMSG);
		if (e4 == 0) {
			CHECK(len >= 14 && len <= GPUNIC_MAX_FRAME_BYTES);
			/* Read it all: a frame past the mapping's end would fault here. */
			memcpy(big, f, len);
			gpunic_link_rx_release(a);
		}
		/* Where each receiver stands, as far as the test can know: its own counters. */
		near_b = (uint32_t)(b->stats.rx_frames + b->stats.rx_errors);
		near_a = (uint32_t)(a->stats.rx_frames + a->stats.rx_errors);
	}
	/* The peer's garbage was counted, not delivered. */
	CHECK(b->stats.rx_errors > 0);
	CHECK(a->stats.rx_errors > 0);
	raw_close(&r);
	free(in);
	free(big);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* ---------------------------------------------------------------- packed small frames */

static void put_be16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A RoCEv2-shaped frame of @len bytes (70 or more with a RETH, else 50): IPv4 from 10.0.0.1 to
 * 10.0.0.@dst, UDP to 4791, both lengths the frame's, IP ID 0, a BTH with opcode @op to QP
 * 0x1234, a RETH's R_Key @rkey and length 32 where @op has one, the pattern for @seq from the
 * BTH's byte 8 on (PSN, address, immediate, payload, ICRC alike). */
static void roce_frame(uint8_t *f, size_t len, uint32_t seq, uint8_t op, uint8_t dst,
		       uint32_t rkey)
{
	static const uint8_t eth[14] = { 0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00 };
	static const uint8_t bth[8] = { 0, 0, 0xff, 0xff, 0, 0, 0x12, 0x34 };

	memcpy(f, eth, sizeof(eth));
	test_fill(f, 50, len, seq);
	f[14] = 0x45;
	f[15] = 0x02;
	put_be16(f + 16, (unsigned)len - 14);
	put_be16(f + 18, 0);
	f[20] = 0x40;
	f[21] = 0;
	f[22] = 64;
	f[23] = 17;
	put_be16(f + 24, 0xb000 + (unsigned)len);
	memcpy(f + 26, (const uint8_t[]){ 10, 0, 0, 1, 10, 0, 0, dst }, 8);
	put_be16(f + 34, 49152);
	put_be16(f + 36, 4791);
	put_be16(f + 38, (unsigned)len - 34);
	f[40] = f[41] = 0;
	memcpy(f + 42, bth, sizeof(bth));
	f[42] = op;
	if (len >= 70 && (op == 0x2a || op == 0x2b || op == 0x0a || op == 0x0b)) {
		memcpy(f + 62, &rkey, 4);
		put_be16(f + 66, 0);
		put_be16(f + 68, 32);
	}
}

enum { UC_SEND_ONLY = 0x24, UC_WRITE_ONLY_IMM = 0x2b, RC_ACK = 0x11 };

/*
 * A frame whose first 50 bytes (and, after a RETH, bytes 62-69) are the template's crosses in
 * its slot's first line and comes out byte for byte, the slot's second line never read; a
 * frame that differs there goes whole as the new template, and one too long for the line (or
 * longer than the 128 bytes a frame is staged in) goes whole and leaves the template alone.
 */
TEST(shm_small_frames_packed)
{
	static const struct {
		size_t len;
		uint8_t op, dst;
		uint32_t rkey, flags;
	} step[] = {
		{ 90, UC_SEND_ONLY, 2, 0, LEN_TMPL },	/* the first: whole, the template */
		{ 90, UC_SEND_ONLY, 2, 0, LEN_PACKED },	/* a 32-byte SEND */
		{ 106, UC_SEND_ONLY, 2, 0, LEN_TMPL },	/* another length: other headers */
		{ 106, UC_SEND_ONLY, 2, 0, LEN_PACKED },	/* the longest without a RETH */
		{ 107, UC_SEND_ONLY, 2, 0, LEN_TMPL },
		{ 107, UC_SEND_ONLY, 2, 0, 0 },		/* too long: whole, template kept */
		{ 110, UC_WRITE_ONLY_IMM, 2, 7, LEN_TMPL },
		{ 110, UC_WRITE_ONLY_IMM, 2, 7, LEN_PACKED },	/* a 32-byte WRITE_WITH_IMM */
		{ 110, UC_WRITE_ONLY_IMM, 2, 8, LEN_TMPL },	/* another R_Key */
		{ 110, UC_WRITE_ONLY_IMM, 2, 8, LEN_PACKED },
		{ 114, UC_WRITE_ONLY_IMM, 2, 8, LEN_TMPL },
		{ 114, UC_WRITE_ONLY_IMM, 2, 8, LEN_PACKED },	/* the longest with a RETH */
		{ 115, UC_WRITE_ONLY_IMM, 2, 8, LEN_TMPL },
		{ 115, UC_WRITE_ONLY_IMM, 2, 8, 0 },
		{ 62, RC_ACK, 2, 0, LEN_TMPL },
		{ 62, RC_ACK, 2, 0, LEN_PACKED },
		{ 90, UC_SEND_ONLY, 3, 0, LEN_TMPL },	/* another destination */
		{ 90, UC_SEND_ONLY, 3, 0, LEN_PACKED },
		{ 1000, UC_WRITE_ONLY_IMM, 3, 8, 0 },	/* not staged: plain, never a template */
		{ 90, UC_SEND_ONLY, 3, 0, LEN_PACKED },	/* the template it left alone */
		{ 49, UC_SEND_ONLY, 3, 0, 0 },		/* too short to be a template */
		{ 49, UC_SEND_ONLY, 3, 0, 0 },
	};
	const char *name = test_name("pack");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 4, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t out[1000], in[1000];
	const uint8_t *f;
	uint32_t pos = 0;
	struct raw r;
	size_t len, off;

	CHECK(a && b);
	raw_open(&r, name);
	for (size_t i = 0; i < sizeof(step) / sizeof(step[0]); i++, pos++) {
		off = slot_off(&r, 0, pos);
		roce_frame(out, step[i].len, (uint32_t)i, step[i].op, step[i].dst, step[i].rkey);
		CHECK_EQ(gpunic_link_send(a, out, step[i].len), 0);
		CHECK_EQ(get32(r.map, off + SLOT_LEN), (uint32_t)step[i].len | step[i].flags);
		/* a packed frame is all in the first line: scribble on the rest */
		if (step[i].flags & LEN_PACKED)
			memset(r.map + off + 64, 0xa5, r.slot_bytes - 64);
		if (i % 2) {
			CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
			CHECK_EQ(len, step[i].len);
			CHECK_MEM(in, out, len);
		} else {
			/* in place, or rebuilt in the link's own memory */
			CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
			CHECK_EQ(len, step[i].len);
			CHECK_MEM(f, out, len);
			CHECK_EQ(f == b->zc.rx_unpacked, (step[i].flags & LEN_PACKED) ? 1 : 0);
			gpunic_link_rx_release(b);
		}
	}
	/* frames that are not RoCEv2 pack too, by the same rule: the same first bytes */
	for (uint32_t k = 0; k < 3; k++, pos++) {
		test_eth_frame(out, 80, 7);
		out[60] = (uint8_t)k;
		CHECK_EQ(gpunic_link_send(a, out, 80), 0);
		CHECK_EQ(get32(r.map, slot_off(&r, 0, pos) + SLOT_LEN), 80 | (k ? LEN_PACKED :
									   LEN_TMPL));
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
		CHECK_EQ(len, 80);
		CHECK_MEM(in, out, 80);
	}
	CHECK_EQ(b->stats.rx_errors, 0);
	CHECK_EQ(b->stats.rx_frames, pos);
	raw_close(&r);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

/*
 * A consumer that attaches again holds no template: a packed frame still in the ring is
 * refused and counted, never rebuilt wrong, and the producer, seeing the attach count move,
 * sends its next frame whole as the template.
 */
TEST(shm_packed_across_a_reattach)
{
	const char *name = test_name("packre");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1);
	struct gpunic_link *b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	uint8_t out[90], in[128];
	struct raw r;
	size_t len;

	CHECK(a && b);
	raw_open(&r, name);
	CHECK_EQ(get32(r.map, OFF_RING0_ATTACH), 1);	/* B, the consumer of ring 0 */
	CHECK_EQ(get32(r.map, OFF_RING1_ATTACH), 1);	/* A */
	roce_frame(out, 90, 0, UC_SEND_ONLY, 2, 0);
	CHECK_EQ(gpunic_link_send(a, out, 90), 0);
	CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
	roce_frame(out, 90, 1, UC_SEND_ONLY, 2, 0);
	CHECK_EQ(gpunic_link_send(a, out, 90), 0);
	CHECK_EQ(get32(r.map, slot_off(&r, 0, 1) + SLOT_LEN), 90 | LEN_PACKED);
	gpunic_link_close(b);
	b = open_end(name, GPUNIC_SHM_END_B, 0, 0);
	CHECK(b);
	CHECK_EQ(get32(r.map, OFF_RING0_ATTACH), 2);
	CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), EBADMSG);
	CHECK_EQ(b->stats.rx_errors, 1);
	for (uint32_t k = 2; k < 5; k++) {
		roce_frame(out, 90, k, UC_SEND_ONLY, 2, 0);
		CHECK_EQ(gpunic_link_send(a, out, 90), 0);
		CHECK_EQ(get32(r.map, slot_off(&r, 0, k) + SLOT_LEN), 90 | (k == 2 ? LEN_TMPL :
									    LEN_PACKED));
		CHECK_EQ(gpunic_link_recv(b, in, sizeof(in), &len), 0);
		CHECK_EQ(len, 90);
		CHECK_MEM(in, out, 90);
	}
	CHECK_EQ(b->stats.rx_errors, 1);
	raw_close(&r);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

/* The peer's side of a publish with a length word of its choosing and @n frame bytes. */
static void raw_publish_word(struct raw *r, unsigned ring, uint32_t pos, const uint8_t *f,
			     size_t n, uint32_t word)
{
	size_t off = slot_off(r, ring, pos);

	memcpy(r->map + off + SLOT_FRAME, f, n);
	put32(r->map, off + SLOT_LEN, word);
	put32(r->map, off + SLOT_SEQ, pos + 1);
}

/*
 * A hostile peer's packed slots: without a template, with both flags, with a length its
 * template's layout cannot hold, a template too short to be one, a length with stray high
 * bits: each refused, counted and handed back, by the link's receive and by the engine's
 * inline take alike; a packed frame after a good template comes out as the template and the
 * line's bytes say, whatever they are, in either layout.
 */
TEST(shm_hostile_packed)
{
	static const uint32_t bad[] = {
		90 | LEN_PACKED,			/* no template yet */
		90 | LEN_PACKED | LEN_TMPL,
		49 | LEN_TMPL,
		41 | LEN_PACKED,
		0x3fffffffu | LEN_PACKED,
		(1u << 16) | 90,
	};
	const char *name = test_name("packbad");
	struct gpunic_link *a = open_end(name, GPUNIC_SHM_END_A, 8, 1);
	struct gpunic_nic_attr na = { .link = a, .ip = 0x0a000001 };
	size_t nbad = sizeof(bad) / sizeof(bad[0]), len;
	uint8_t frame[128], in[128], line[56], want[114];
	struct gpunic_nic_counters c;
	struct gpunic_nic *nic;
	uint32_t pos = 0;
	struct raw r;

	CHECK(a);
	raw_open(&r, name);
	roce_frame(frame, 90, 7, UC_SEND_ONLY, 2, 0);
	for (size_t i = 0; i < nbad; i++, pos++) {
		raw_publish_word(&r, 1, pos, frame, 90, bad[i]);
		CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EBADMSG);
		CHECK_EQ(raw_seq(&r, 1, pos), pos + r.slots);
	}
	CHECK_EQ(a->stats.rx_errors, nbad);
	for (size_t i = 0; i < sizeof(line); i++)
		line[i] = (uint8_t)(0x30 + i);
	/* a template without a RETH: 50-105 from the line */
	raw_publish_word(&r, 1, pos++, frame, 90, 90 | LEN_TMPL);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
	CHECK_EQ(len, 90);
	CHECK_MEM(in, frame, 90);
	for (uint32_t n = 49; n <= 107; n += 58) {	/* 49 and 107: the layout's bounds */
		raw_publish_word(&r, 1, pos++, line, sizeof(line), n | LEN_PACKED);
		CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EBADMSG);
	}
	raw_publish_word(&r, 1, pos++, line, sizeof(line), 106 | LEN_PACKED);
	memcpy(want, frame, 50);
	memcpy(want + 50, line, 56);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
	CHECK_EQ(len, 106);
	CHECK_MEM(in, want, 106);
	/* a template with a RETH: 50-61 and 70-113 from the line, 62-69 the template's */
	roce_frame(frame, 110, 8, UC_WRITE_ONLY_IMM, 2, 9);
	raw_publish_word(&r, 1, pos++, frame, 110, 110 | LEN_TMPL);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
	CHECK_MEM(in, frame, 110);
	raw_publish_word(&r, 1, pos++, line, sizeof(line), 69 | LEN_PACKED);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EBADMSG);
	raw_publish_word(&r, 1, pos++, line, sizeof(line), 115 | LEN_PACKED);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), EBADMSG);
	raw_publish_word(&r, 1, pos++, line, sizeof(line), 114 | LEN_PACKED);
	memcpy(want, frame, 70);
	memcpy(want + 50, line, 12);
	memcpy(want + 70, line + 12, 44);
	CHECK_EQ(gpunic_link_recv(a, in, sizeof(in), &len), 0);
	CHECK_EQ(len, 114);
	CHECK_MEM(in, want, 114);
	CHECK_EQ(a->stats.rx_errors, nbad + 4);
	/* the engine's inline take: the same refusals, counted as malformed, and a packed frame
	 * taken (what becomes of it above the link is the NIC's to judge) */
	nic = gpunic_nic_open(&na);
	CHECK(nic);
	raw_publish_word(&r, 1, pos, line, sizeof(line), 115 | LEN_PACKED);
	gpunic_nic_poll(nic, 4);
	CHECK_EQ(raw_seq(&r, 1, pos), pos + r.slots);
	pos++;
	raw_publish_word(&r, 1, pos, line, sizeof(line), 80 | LEN_PACKED);
	CHECK_EQ(gpunic_nic_poll(nic, 1), 1);
	CHECK_EQ(raw_seq(&r, 1, pos), pos + r.slots);
	CHECK_EQ(gpunic_nic_query_counters(nic, &c), 0);
	CHECK(c.drops[GPUNIC_DROP_MALFORMED] >= 1);
	CHECK_EQ(c.rx_frames, 1);
	CHECK_EQ(c.rx_bytes, 80);
	CHECK_EQ(a->stats.rx_errors, nbad + 5);
	raw_close(&r);
	gpunic_nic_close(nic);
}
