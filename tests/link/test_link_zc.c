// SPDX-License-Identifier: MIT
/*
 * The zero-copy calls (gpunic_link_tx_reserve/commit/abort, gpunic_link_rx_peek/release) on
 * every link: shm natively, udp, dgram, impair and a link made outside src/link through link.c's
 * emulation. Frames go both ways, each one through either API on each side, so the two are
 * interleaved frame by frame; then the rules every link shares (one reservation, one held frame,
 * EBUSY for the copying calls meanwhile, commit bounds, stats) and close with both open.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "link_test.h"

#define FRAME_MAX GPUNIC_MAX_FRAME_BYTES
#define WAIT_MS 2000u

/* One direction of a link pair and how its frames look. */
struct dir {
	struct gpunic_link *tx, *rx;
	/* udp: the frame must carry the sender's address and port, and the receiver gets
	 * synthesised L2-L4 headers, so only what follows them is compared */
	bool udp;
	uint32_t sip, dip;
	uint16_t port;
};

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

/* Frame @seq of @len bytes, written straight where @f points (a reserved room or a buffer). */
static void build(const struct dir *d, uint8_t *f, size_t len, uint32_t seq)
{
	uint8_t *ip = f + 14, *udp = f + 34;

	if (!d->udp) {
		test_eth_frame(f, len, seq);
		return;
	}
	memset(f, 0, 42);
	put16(f + 12, GPUNIC_ETHERTYPE_IPV4);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(len - 14));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, d->sip);
	put32(ip + 16, d->dip);
	put16(udp, d->port);
	put16(udp + 2, d->port);
	put16(udp + 4, (uint16_t)(len - 34));
	test_fill(f, 42, len, seq);
}

static void check_frame(const struct dir *d, const uint8_t *f, size_t len, size_t want,
			uint32_t seq)
{
	CHECK_EQ(len, want);
	if (d->udp) {
		CHECK(test_check_fill(f, 42, len, seq));
	} else {
		uint8_t *ref = malloc(want);

		CHECK(ref);
		test_eth_frame(ref, want, seq);
		CHECK_MEM(f, ref, want);
		free(ref);
	}
}

/* Frame sizes from the smallest the tests build to the MTU. */
static size_t frame_len(uint32_t seq)
{
	return 60 + (size_t)seq * 523 % (FRAME_MAX - 59);
}

static int peek_wait(struct gpunic_link *l, const uint8_t **f, size_t *len)
{
	uint64_t end = test_now_ns() + WAIT_MS * 1000000ull;
	int err;

	while ((err = gpunic_link_rx_peek(l, f, len)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	return err;
}

static int reserve_wait(struct gpunic_link *l, size_t max, uint8_t **room)
{
	uint64_t end = test_now_ns() + WAIT_MS * 1000000ull;
	int err;

	while ((err = gpunic_link_tx_reserve(l, max, room)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	return err;
}

/* A commit the link pushes back keeps the reservation: try again. */
static int commit_wait(struct gpunic_link *l, size_t len)
{
	uint64_t end = test_now_ns() + WAIT_MS * 1000000ull;
	int err;

	while ((err = gpunic_link_tx_commit(l, len)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	return err;
}

/*
 * One frame from d->tx to d->rx. @mode bit 0: built in a reservation (else sent from a buffer);
 * bit 1: parsed where it lies (else received into a buffer).
 */
static void one_frame(const struct dir *d, uint32_t seq, unsigned mode, uint8_t *buf)
{
	size_t len = frame_len(seq), got;

	if (mode & 1) {
		/* Reserve a little more than the frame now and then: commit sends only len. */
		size_t max = len + seq % 3 > FRAME_MAX ? FRAME_MAX : len + seq % 3;
		uint8_t *room;

		CHECK_EQ(reserve_wait(d->tx, max, &room), 0);
		build(d, room, len, seq);
		CHECK_EQ(commit_wait(d->tx, len), 0);
	} else {
		build(d, buf, len, seq);
		CHECK_EQ(test_send_wait(d->tx, buf, len, WAIT_MS), 0);
	}
	if (mode & 2) {
		const uint8_t *f, *again;
		size_t len2;

		CHECK_EQ(peek_wait(d->rx, &f, &got), 0);
		check_frame(d, f, got, len, seq);
		/* Held: handed out again, counted once, and recv must wait for the release. */
		CHECK_EQ(gpunic_link_rx_peek(d->rx, &again, &len2), 0);
		CHECK(again == f);
		CHECK_EQ(len2, got);
		CHECK_EQ(gpunic_link_recv(d->rx, buf, FRAME_MAX, &len2), EBUSY);
		gpunic_link_rx_release(d->rx);
		gpunic_link_rx_release(d->rx); /* nothing held: nothing happens */
	} else {
		CHECK_EQ(test_recv_wait(d->rx, buf, FRAME_MAX, &got, WAIT_MS), 0);
		check_frame(d, buf, got, len, seq);
	}
}

/* Frames both ways in every combination of the two APIs, then the shared rules. */
static void run_pair(struct dir *ab, struct dir *ba, unsigned frames)
{
	uint8_t *buf = malloc(FRAME_MAX);
	struct gpunic_link_stats sa, sb;

	CHECK(buf);
	for (uint32_t i = 0; i < frames; i++) {
		one_frame(ab, i, i % 4, buf);
		one_frame(ba, 100000 + i, (i / 4) % 4, buf);
	}
	CHECK_EQ(ab->tx->stats.tx_frames, frames);
	CHECK_EQ(ab->rx->stats.rx_frames, frames);
	CHECK_EQ(ba->tx->stats.tx_frames, frames);
	CHECK_EQ(ab->tx->stats.tx_bytes, ab->rx->stats.rx_bytes);
	CHECK_EQ(ba->tx->stats.tx_bytes, ba->rx->stats.rx_bytes);
	CHECK_EQ(ab->tx->stats.tx_errors + ab->tx->stats.rx_errors, 0);
	CHECK_EQ(ab->rx->stats.tx_errors + ab->rx->stats.rx_errors, 0);

	/* The rules, on the A -> B direction. */
	struct gpunic_link *tx = ab->tx, *rx = ab->rx;
	uint8_t *room, *room2;
	const uint8_t *f;
	size_t len;

	sa = tx->stats;
	sb = rx->stats;
	CHECK_EQ(gpunic_link_tx_reserve(tx, tx->mtu + 1, &room), EMSGSIZE);
	CHECK_EQ(tx->stats.tx_errors, sa.tx_errors + 1);
	CHECK_EQ(gpunic_link_tx_commit(tx, 60), EINVAL); /* nothing reserved */
	CHECK_EQ(tx->stats.tx_errors, sa.tx_errors + 2);
	gpunic_link_tx_abort(tx);                        /* nothing reserved: nothing happens */
	/* One reservation at a time; send waits for it. */
	CHECK_EQ(reserve_wait(tx, 200, &room), 0);
	CHECK_EQ(gpunic_link_tx_reserve(tx, 200, &room2), EBUSY);
	build(ab, buf, 100, 1);
	CHECK_EQ(gpunic_link_send(tx, buf, 100), EBUSY);
	/* Abort: nothing goes out, and the link is free again. */
	build(ab, room, 200, 2);
	gpunic_link_tx_abort(tx);
	CHECK_EQ(gpunic_link_tx_commit(tx, 200), EINVAL);
	CHECK_EQ(tx->stats.tx_errors, sa.tx_errors + 3);
	/* A commit longer than the reservation is refused and ends it. */
	CHECK_EQ(reserve_wait(tx, 100, &room), 0);
	build(ab, room, 100, 3);
	CHECK_EQ(gpunic_link_tx_commit(tx, 101), EINVAL);
	CHECK_EQ(gpunic_link_tx_commit(tx, 100), EINVAL);
	CHECK_EQ(tx->stats.tx_errors, sa.tx_errors + 5);
	/* A frame the link refuses (a runt) is counted as send counts it and ends it too. */
	CHECK_EQ(reserve_wait(tx, 100, &room), 0);
	memset(room, 0, 13);
	CHECK_EQ(gpunic_link_tx_commit(tx, 13), EINVAL);
	CHECK_EQ(tx->stats.tx_errors, sa.tx_errors + 6);
	CHECK_EQ(tx->stats.tx_frames, sa.tx_frames);
	/* The reservation is gone: send works again. */
	build(ab, buf, 100, 4);
	CHECK_EQ(test_send_wait(tx, buf, 100, WAIT_MS), 0);
	CHECK_EQ(tx->stats.tx_frames, sa.tx_frames + 1);
	CHECK_EQ(tx->stats.tx_bytes, sa.tx_bytes + 100);
	/* Only that frame arrived. */
	CHECK_EQ(peek_wait(rx, &f, &len), 0);
	check_frame(ab, f, len, 100, 4);
	gpunic_link_rx_release(rx);
	CHECK_EQ(gpunic_link_rx_peek(rx, &f, &len), EAGAIN);
	CHECK_EQ(gpunic_link_recv(rx, buf, FRAME_MAX, &len), EAGAIN);
	CHECK_EQ(rx->stats.rx_frames, sb.rx_frames + 1);
	CHECK_EQ(rx->stats.rx_errors, sb.rx_errors);
	free(buf);
}

/* A frame held and a reservation open at close: freed with the link (ASan's leak check). */
static void close_busy(struct dir *ab)
{
	uint8_t *room;
	const uint8_t *f;
	size_t len;

	CHECK_EQ(reserve_wait(ab->tx, 300, &room), 0);
	build(ab, room, 300, 5);
	CHECK_EQ(commit_wait(ab->tx, 300), 0);
	CHECK_EQ(peek_wait(ab->rx, &f, &len), 0);
	check_frame(ab, f, len, 300, 5);
	CHECK_EQ(reserve_wait(ab->tx, 300, &room), 0);
	CHECK_EQ(reserve_wait(ab->rx, 300, &room), 0);
}

/* ---------------------------------------------------------------- the links */

static char shm_name[64];

static struct gpunic_link *shm_end(enum gpunic_shm_end end, int create)
{
	struct gpunic_shm_link_attr attr = { .name = shm_name, .end = end, .create = create };

	if (create) {
		snprintf(shm_name, sizeof(shm_name), "/gpunic-test-zc-%d", (int)getpid());
		shm_unlink(shm_name); /* a crashed run of a process with our pid may have left it */
	}
	return gpunic_link_shm_open(&attr);
}

TEST(zc_shm)
{
	struct gpunic_link *a = shm_end(GPUNIC_SHM_END_A, 1), *b = shm_end(GPUNIC_SHM_END_B, 0);
	struct dir ab = { .tx = a, .rx = b }, ba = { .tx = b, .rx = a };

	CHECK(a && b);
	CHECK(a->ops->tx_reserve && a->ops->rx_peek); /* native, no bounce buffer */
	run_pair(&ab, &ba, 600);
	CHECK(!a->zc.bounce && !b->zc.bounce);
	close_busy(&ab);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* The ring fills by reservations exactly as by sends: EAGAIN once every slot is taken. */
TEST(zc_shm_full_ring)
{
	struct gpunic_link *a = shm_end(GPUNIC_SHM_END_A, 1), *b;
	struct gpunic_shm_link_attr attr = { .name = shm_name, .end = GPUNIC_SHM_END_B };
	uint8_t *room;
	const uint8_t *f;
	size_t len;

	CHECK(a);
	b = gpunic_link_shm_open(&attr);
	CHECK(b);
	for (uint32_t i = 0; i < 256; i++) {
		CHECK_EQ(gpunic_link_tx_reserve(a, 64, &room), 0);
		test_eth_frame(room, 64, i);
		CHECK_EQ(gpunic_link_tx_commit(a, 64), 0);
	}
	CHECK_EQ(gpunic_link_tx_reserve(a, 64, &room), EAGAIN);
	CHECK_EQ(a->stats.tx_errors, 0);
	/* A frame held is not free yet; released, its slot is. */
	CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
	CHECK_EQ(gpunic_link_tx_reserve(a, 64, &room), EAGAIN);
	gpunic_link_rx_release(b);
	CHECK_EQ(gpunic_link_tx_reserve(a, 64, &room), 0);
	test_eth_frame(room, 64, 256);
	CHECK_EQ(gpunic_link_tx_commit(a, 64), 0);
	for (uint32_t i = 1; i <= 256; i++) {
		CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), 0);
		CHECK(test_check_fill(f, 14, len, i));
		gpunic_link_rx_release(b);
	}
	CHECK_EQ(gpunic_link_rx_peek(b, &f, &len), EAGAIN);
	gpunic_link_close(b);
	gpunic_link_close(a);
}

#define UDP_IP_A IP4(127, 0, 0, 81)
#define UDP_IP_B IP4(127, 0, 0, 82)

static struct gpunic_link *udp_end(uint32_t ip, uint16_t port)
{
	struct gpunic_udp_link_attr attr = { .local_ip = ip, .local_port = port };

	return gpunic_link_udp_open(&attr);
}

TEST(zc_udp)
{
	uint16_t port = test_port(0);
	struct gpunic_link *a = udp_end(UDP_IP_A, port), *b = udp_end(UDP_IP_B, port);
	struct dir ab = { .tx = a, .rx = b, .udp = true, .sip = UDP_IP_A, .dip = UDP_IP_B,
			  .port = port };
	struct dir ba = { .tx = b, .rx = a, .udp = true, .sip = UDP_IP_B, .dip = UDP_IP_A,
			  .port = port };

	CHECK(a && b);
	CHECK(!a->ops->tx_reserve && !a->ops->rx_peek); /* link.c's emulation */
	run_pair(&ab, &ba, 200);
	close_busy(&ab);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

TEST(zc_dgram)
{
	uint16_t pa = test_port(0), pb = test_port(1);
	struct gpunic_dgram_link_attr attr = {
		.local_ip = IP4(127, 0, 0, 83), .local_port = pa,
		.remote_ip = IP4(127, 0, 0, 84), .remote_port = pb,
	};
	struct gpunic_link *a = gpunic_link_dgram_open(&attr), *b;
	struct dir ab, ba;

	attr.local_ip = IP4(127, 0, 0, 84);
	attr.local_port = pb;
	attr.remote_ip = IP4(127, 0, 0, 83);
	attr.remote_port = pa;
	b = gpunic_link_dgram_open(&attr);
	CHECK(a && b);
	ab = (struct dir){ .tx = a, .rx = b };
	ba = (struct dir){ .tx = b, .rx = a };
	run_pair(&ab, &ba, 200);
	close_busy(&ab);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* impair wraps shm: both ends wrapped (no impairment), so both sides go through link.c's
 * emulation on the wrapper and shm's own ops beneath it. */
TEST(zc_impair_over_shm)
{
	struct gpunic_impair_attr none = { .seed = 1 };
	struct gpunic_link *sa = shm_end(GPUNIC_SHM_END_A, 1), *sb = shm_end(GPUNIC_SHM_END_B, 0);
	struct gpunic_link *a = gpunic_link_impair_open(sa, &none);
	struct gpunic_link *b = gpunic_link_impair_open(sb, &none);
	struct dir ab = { .tx = a, .rx = b }, ba = { .tx = b, .rx = a };

	CHECK(sa && sb && a && b);
	CHECK(sa->caps & GPUNIC_LINK_CAP_RX_INTACT);
	CHECK_EQ(a->caps & GPUNIC_LINK_CAP_RX_INTACT, 0);
	run_pair(&ab, &ba, 300);
	close_busy(&ab);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* A lossy wrapper over shm, through the zero-copy calls on both sides (the wrapper's emulated,
 * the bare end's native): what arrives is in order, every frame intact or, when corrupted, one
 * byte off, and the count adds up. */
TEST(zc_impair_lossy_over_shm)
{
	struct gpunic_impair_attr attr = {
		.seed = 77, .drop_ppm = 100000, .duplicate_ppm = 100000, .corrupt_ppm = 50000,
	};
	struct gpunic_link *a = gpunic_link_impair_open(shm_end(GPUNIC_SHM_END_A, 1), &attr);
	struct gpunic_link *b = shm_end(GPUNIC_SHM_END_B, 0);
	uint32_t got = 0, last = 0, bad = 0;
	uint8_t *ref = malloc(FRAME_MAX);

	CHECK(a && b && ref);
	for (uint32_t i = 1; i <= 2000; i++) {
		size_t len = 60 + i % 300;
		const uint8_t *f;
		uint8_t *room;

		CHECK_EQ(gpunic_link_tx_reserve(a, len, &room), 0);
		test_eth_frame(room, len, i);
		CHECK_EQ(gpunic_link_tx_commit(a, len), 0);
		while (gpunic_link_rx_peek(b, &f, &len) == 0) {
			uint32_t seq, diffs = 0;

			memcpy(&seq, f + 14, 4);
			if (seq < last || seq > i || len != 60 + seq % 300) {
				bad++; /* the corrupted byte hit the sequence number */
			} else {
				test_eth_frame(ref, len, seq);
				for (size_t j = 0; j < len; j++)
					diffs += f[j] != ref[j];
				CHECK(diffs <= 1);
				bad += diffs;
				last = seq;
			}
			got++;
			gpunic_link_rx_release(b);
		}
	}
	CHECK_EQ(got, 2000 - a->stats.imp_dropped + a->stats.imp_duplicated);
	CHECK(bad <= 2 * a->stats.imp_corrupted);
	CHECK(a->stats.imp_dropped > 100 && a->stats.imp_duplicated > 100);
	CHECK(a->stats.imp_corrupted > 20);
	free(ref);
	gpunic_link_close(a);
	gpunic_link_close(b);
}

/* ---------------------------------------------------------------- a link made elsewhere */

/*
 * A link as a test, the fuzzer or a CLI wrapper makes it: its own struct, calloc'ed, with only
 * send, recv and close, never seen by link_init. It loops frames back, holding up to 4; a fifth
 * send is pushed back, which a commit must survive with its bytes intact.
 */
struct loop_link {
	struct gpunic_link link;
	uint8_t q[4][FRAME_MAX];
	size_t qlen[4];
	unsigned head, count;
};

static int loop_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct loop_link *l = (struct loop_link *)link;
	unsigned slot;

	if (len > link->mtu)
		return EMSGSIZE;
	if (len < GPUNIC_ETH_BYTES) {
		link->stats.tx_errors++;
		return EINVAL;
	}
	if (l->count == 4)
		return EAGAIN;
	slot = (l->head + l->count++) % 4;
	memcpy(l->q[slot], frame, len);
	l->qlen[slot] = len;
	link->stats.tx_frames++;
	link->stats.tx_bytes += len;
	return 0;
}

static int loop_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct loop_link *l = (struct loop_link *)link;

	if (!l->count)
		return EAGAIN;
	CHECK(l->qlen[l->head] <= cap);
	memcpy(buf, l->q[l->head], l->qlen[l->head]);
	*len = l->qlen[l->head];
	l->head = (l->head + 1) % 4;
	l->count--;
	link->stats.rx_frames++;
	link->stats.rx_bytes += *len;
	return 0;
}

static void loop_close(struct gpunic_link *link)
{
	free(link);
}

static const struct gpunic_link_ops loop_ops = {
	.name = "loop", .send = loop_send, .recv = loop_recv, .close = loop_close,
};

static struct gpunic_link *loop_open(void)
{
	struct loop_link *l = calloc(1, sizeof(*l));

	CHECK(l);
	l->link.ops = &loop_ops;
	l->link.mtu = FRAME_MAX;
	return &l->link;
}

TEST(zc_external_link)
{
	struct gpunic_link *l = loop_open(), *l2 = loop_open();
	struct dir d = { .tx = l, .rx = l }, d2 = { .tx = l2, .rx = l2 };
	uint8_t *room, *buf = malloc(FRAME_MAX);
	const uint8_t *f;
	size_t len;

	CHECK(buf);
	run_pair(&d, &d2, 100);
	CHECK(l->zc.bounce && l2->zc.bounce);
	gpunic_link_close(l2);
	/* Fill it, then a commit is pushed back: the reservation and its bytes stay. */
	for (uint32_t i = 0; i < 4; i++) {
		build(&d, buf, 100, i);
		CHECK_EQ(gpunic_link_send(l, buf, 100), 0);
	}
	CHECK_EQ(gpunic_link_tx_reserve(l, 200, &room), 0);
	build(&d, room, 200, 9);
	CHECK_EQ(gpunic_link_tx_commit(l, 200), EAGAIN);
	CHECK_EQ(gpunic_link_tx_commit(l, 200), EAGAIN);
	CHECK_EQ(gpunic_link_send(l, buf, 100), EBUSY);
	CHECK_EQ(gpunic_link_rx_peek(l, &f, &len), 0);
	check_frame(&d, f, len, 100, 0);
	gpunic_link_rx_release(l);
	CHECK_EQ(gpunic_link_tx_commit(l, 200), 0);
	for (uint32_t i = 1; i < 4; i++) {
		CHECK_EQ(gpunic_link_recv(l, buf, FRAME_MAX, &len), 0);
		check_frame(&d, buf, len, 100, i);
	}
	CHECK_EQ(gpunic_link_rx_peek(l, &f, &len), 0);
	check_frame(&d, f, len, 200, 9);
	/* Held at close: link.c's buffer goes with it. */
	free(buf);
	gpunic_link_close(l);
}
