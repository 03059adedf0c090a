// SPDX-License-Identifier: MIT
/*
 * gpunic perf without traffic: the perftest key message byte for byte, the whole out-of-band
 * exchange against a tiny in-test peer that speaks perftest 4.5's format (what ib_write_lat
 * or ib_read_lat sends), the payload pattern and the verifier, and the atomics' checks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/perf_dev.h"
#include "harness.h"
#include "gpunic/endpoint.h"
#include "gpunic/perftest.h"
#include "perf_run.h"

/* perftest's own format strings (perftest_communication.h, 4.5+0.17) */
#define PT_KEY_FMT_GID                                                                      \
	"%04x:%04x:%06x:%06x:%08x:%016llx:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%08x:"
#define PT_KEY_MSG_SIZE_GID 108

static const struct gpunic_perftest_dest sample = {
	.lid = 0, .out_reads = 0x10, .qpn = 0x11, .psn = 0xabcdef, .rkey = 0x1234,
	.vaddr = 0x7f0012345678ull,
	.gid = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 }, .srqn = 0,
};

/* What perftest's ethernet_write_keys puts on the socket for @d. */
static void pt_key(const struct gpunic_perftest_dest *d, char msg[PT_KEY_MSG_SIZE_GID])
{
	const uint8_t *g = d->gid;

	memset(msg, 0, PT_KEY_MSG_SIZE_GID);
	snprintf(msg, PT_KEY_MSG_SIZE_GID, PT_KEY_FMT_GID, d->lid, d->out_reads, d->qpn, d->psn,
		 d->rkey, (unsigned long long)d->vaddr, g[0], g[1], g[2], g[3], g[4], g[5], g[6],
		 g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], d->srqn);
}

TEST(key_message_is_perftests)
{
	char ours[GPUNIC_PERFTEST_KEY_BYTES], theirs[PT_KEY_MSG_SIZE_GID];
	struct gpunic_perftest_dest back;

	CHECK_EQ(GPUNIC_PERFTEST_KEY_BYTES, PT_KEY_MSG_SIZE_GID);
	gpunic_perftest_key_format(&sample, ours);
	pt_key(&sample, theirs);
	CHECK_MEM(ours, theirs, sizeof(ours));
	CHECK_EQ(strlen(ours), 107);
	memset(&back, 0xee, sizeof(back));
	CHECK_EQ(gpunic_perftest_key_parse(theirs, &back), 0);
	CHECK_EQ(back.out_reads, 0x10);
	CHECK_EQ(back.qpn, 0x11);
	CHECK_EQ(back.psn, 0xabcdef);
	CHECK_EQ(back.rkey, 0x1234);
	CHECK_EQ(back.vaddr, 0x7f0012345678ull);
	CHECK_MEM(back.gid, sample.gid, 16);
	CHECK_EQ(back.srqn, 0);
}

TEST(key_message_garbage_rejected)
{
	char msg[GPUNIC_PERFTEST_KEY_BYTES];
	struct gpunic_perftest_dest d;

	memset(msg, 0, sizeof(msg));
	CHECK_EQ(gpunic_perftest_key_parse(msg, &d), EPROTO);
	gpunic_perftest_key_format(&sample, msg);
	msg[20] = 'z';
	CHECK_EQ(gpunic_perftest_key_parse(msg, &d), EPROTO);
	/* a field longer than perftest's width */
	memset(msg, 0, sizeof(msg));
	snprintf(msg, sizeof(msg), "00000:0000:000011");
	CHECK_EQ(gpunic_perftest_key_parse(msg, &d), EPROTO);
	/* no terminating ':' before the buffer ends */
	memset(msg, '1', sizeof(msg));
	CHECK_EQ(gpunic_perftest_key_parse(msg, &d), EPROTO);
}

TEST(gid_ipv4_mapped)
{
	uint8_t gid[16];
	uint32_t ip;

	gpunic_gid_from_ipv4(0x0a000002, gid);
	CHECK_MEM(gid, sample.gid, 16);
	CHECK_EQ(gpunic_gid_to_ipv4(gid, &ip), 0);
	CHECK_EQ(ip, 0x0a000002);
	gid[0] = 0xfe;
	CHECK_EQ(gpunic_gid_to_ipv4(gid, &ip), EPROTO);
}

static int read_n(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The in-test perftest client: what ib_read_lat 4.5+0.17 does on the socket, byte for byte:
 * versions (16 bytes), sys data (4 + 4), MTU ("3" NUL), four key handshakes (client writes
 * first), then ctx_close_connection: a handshake and "done". Exit status 0 when every reply
 * was well-formed.
 */
static int pt_client(uint16_t port, int want_hs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char ver[16] = "6.06", rver[16], msg[PT_KEY_MSG_SIZE_GID], in[PT_KEY_MSG_SIZE_GID];
	char mtu[2] = { '3', 0 }, rmtu[2], done[5];
	uint32_t sys[2] = { htonl(4096), htonl(64) }, rsys[2];
	struct gpunic_perftest_dest d;
	int fd = -1, i;

	for (i = 0; i < 500 && fd < 0; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			close(fd);
			fd = -1;
			usleep(10000);
		}
	}
	if (fd < 0)
		return 10;
	if (write(fd, ver, 16) != 16 || read_n(fd, rver, 16) || strcmp(rver, "6.06"))
		return 11;
	/* gpunic's extension after the NUL: "gn", version 1 */
	if (rver[5] != 'g' || rver[6] != 'n' || rver[7] != 1)
		return 12;
	for (i = 0; i < 2; i++)
		if (write(fd, &sys[i], 4) != 4 || read_n(fd, &rsys[i], 4))
			return 13;
	if (ntohl(rsys[1]) != 64 || ntohl(rsys[0]) < 4096)
		return 14;
	if (write(fd, mtu, 2) != 2 || read_n(fd, rmtu, 2) || rmtu[0] != '2' || rmtu[1] != 0)
		return 15;
	pt_key(&sample, msg);
	for (i = 0; i < want_hs; i++) {
		if (write(fd, msg, sizeof(msg)) != sizeof(msg) || read_n(fd, in, sizeof(in)))
			return 16;
		/* perftest parses the reply with strtol per ':'-separated field */
		if (in[PT_KEY_MSG_SIZE_GID - 1] != 0 || gpunic_perftest_key_parse(in, &d) || d.qpn != 0x99 ||
		    d.out_reads != 16 || d.gid[15] != 1)
			return 17;
	}
	if (write(fd, "done", 5) != 5 || read_n(fd, done, 5) || memcmp(done, "done", 5))
		return 18;
	close(fd);
	return 0;
}

TEST(oob_exchange_with_perftest_peer)
{
	struct gpunic_perftest_ext ext = { .gpunic = true, .mac = { 2, 0, 10, 0, 0, 1 },
				     .udp_port = 4791 };
	struct gpunic_perftest_dest me = sample, peer;
	uint16_t port = (uint16_t)(30000 + getpid() % 20000);
	struct gpunic_perftest o;
	int agreed = 0, status, i;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(pt_client(port, 4));
	CHECK_EQ(gpunic_perftest_accept(&o, "test", port, 10000), 0);
	/* we want MTU 1024 (2), the perftest peer 2048 (3): both take the smaller */
	CHECK_EQ(gpunic_perftest_prologue(&o, &ext, 2, &agreed), 0);
	CHECK_EQ(agreed, 2);
	CHECK(strcmp(o.peer_version, "6.06") == 0);
	CHECK(!o.peer.gpunic);
	me.qpn = 0x99;
	me.out_reads = 16;
	me.gid[15] = 1;
	for (i = 0; i < 3; i++)
		CHECK_EQ(gpunic_perftest_hand_shake(&o, &me, &peer), 0);
	CHECK_EQ(peer.qpn, 0x11);
	CHECK_EQ(peer.psn, 0xabcdef);
	CHECK_EQ(peer.vaddr, 0x7f0012345678ull);
	CHECK_EQ(gpunic_perftest_finish(&o, &me), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

TEST(oob_old_peer_refused)
{
	uint16_t port = (uint16_t)(30000 + (getpid() + 7) % 20000);
	struct gpunic_perftest_ext ext = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct gpunic_perftest o;
	int agreed, status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char ver[16] = "5.60", rver[16];
		int fd = -1;

		for (int i = 0; i < 500 && fd < 0; i++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
				close(fd);
				fd = -1;
				usleep(10000);
			}
		}
		if (fd < 0 || write(fd, ver, 16) != 16 || read_n(fd, rver, 16))
			_exit(1);
		_exit(0);
	}
	CHECK_EQ(gpunic_perftest_accept(&o, "test", port, 10000), 0);
	CHECK_EQ(gpunic_perftest_prologue(&o, &ext, 3, &agreed), EPROTO);
	gpunic_perftest_close_fd(&o);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
}

TEST(pattern_fill_and_check)
{
	uint8_t buf[1031];

	for (uint32_t base = 0; base < 6; base++) {
		gpunic_perf_fill(buf, sizeof(buf), 77, base);
		CHECK_EQ(gpunic_perf_check(buf, sizeof(buf), 77, base), (uint64_t)-1);
		CHECK(gpunic_perf_check(buf, sizeof(buf), 78, base) >= 0);
		buf[1030] ^= 1;
		CHECK_EQ(gpunic_perf_check(buf, sizeof(buf), 77, base), 1030);
	}
}

/*
 * The chunked word compare (aligned payload, base a multiple of 4) must name the same first
 * wrong byte as a byte-by-byte check: in a chunk's first, middle and last byte, across chunk
 * boundaries, in the tail, and with two wrong bytes in one chunk.
 */
TEST(pattern_check_chunks_name_first_bad_byte)
{
	const uint32_t len = 4 * GPUNIC_PERF_CHECK_CHUNK + 37;
	const uint32_t bases[] = { 0, 4, 4096, 3 };
	const uint32_t at[] = { 0, 1, 3, 4, GPUNIC_PERF_CHECK_CHUNK - 1, GPUNIC_PERF_CHECK_CHUNK,
				GPUNIC_PERF_CHECK_CHUNK + 1, 2 * GPUNIC_PERF_CHECK_CHUNK + 100,
				4 * GPUNIC_PERF_CHECK_CHUNK - 1, 4 * GPUNIC_PERF_CHECK_CHUNK,
				len - 1 };
	uint8_t *mem = aligned_alloc(64, (len + 64 + 63) / 64 * 64); /* size: a multiple of 64 */

	CHECK(mem);
	for (uint32_t shift = 0; shift <= 16; shift += 1) {
		uint8_t *buf = mem + shift;	/* 0 and 16: the word path; the rest: bytes */

		for (unsigned b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
			gpunic_perf_fill(buf, len, 9, bases[b]);
			CHECK_EQ(gpunic_perf_check(buf, len, 9, bases[b]), (uint64_t)-1);
			for (unsigned k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
				buf[at[k]] ^= 0x80;
				CHECK_EQ(gpunic_perf_check(buf, len, 9, bases[b]), at[k]);
				if (at[k] + 2 < len) {
					buf[at[k] + 2] ^= 1;
					CHECK_EQ(gpunic_perf_check(buf, len, 9, bases[b]), at[k]);
					buf[at[k] + 2] ^= 1;
				}
				buf[at[k]] ^= 0x80;
			}
		}
	}
	free(mem);
}

static void *checker_main(void *arg)
{
	struct gpunic_perf_ctx *c = ((void **)arg)[0];
	uint32_t tid = (uint32_t)(uintptr_t)((void **)arg)[1];

	gpunic_perf_checker(c, tid);
	return NULL;
}

/*
 * Thread 0 and three checker threads share each message's check (what a GPU receiver does with
 * its checker warps): every length, a wrong byte in each share and at share edges, two wrong
 * bytes in different shares (the lower one is reported), and the checkers leave on quit.
 */
TEST(shared_check_finds_first_bad_byte)
{
	enum { CHECKERS = 3 };
	const uint32_t lens[] = { 0, 1, 255, 256, 257, 1000, 3000, 65536 };
	struct gpunic_perf_ctl ctl;
	struct gpunic_perf_ctx c;
	pthread_t thr[CHECKERS];
	void *args[CHECKERS][2];
	uint8_t *buf = aligned_alloc(64, 65536);
	uint64_t want_verified = 0, want_bad = 0;

	CHECK(buf);
	memset(&ctl, 0, sizeof(ctl));
	memset(&c, 0, sizeof(c));
	c.ctl = &ctl;
	c.checkers = CHECKERS;
	for (uintptr_t t = 0; t < CHECKERS; t++) {
		args[t][0] = &c;
		args[t][1] = (void *)(t + 1);
		CHECK_EQ(pthread_create(&thr[t], NULL, checker_main, args[t]), 0);
	}
	for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		uint32_t len = lens[l];

		gpunic_perf_fill(buf, len, 5, 0);
		CHECK_EQ(gpunic_perf_verify_msg(&c, buf, len, 5, 0, l), 0);
		want_verified++;
		CHECK_EQ(c.verified, want_verified);
		CHECK_EQ(c.bad, want_bad);
		for (uint32_t k = 0; len && k <= CHECKERS; k++) {
			uint32_t start, end;

			gpunic_perf_share(len, k, CHECKERS + 1, &start, &end);
			if (start == end)
				continue;
			for (uint32_t at = start; at < end; at += (end - start + 2) / 3) {
				uint32_t other = len - 1;

				buf[at] ^= 0x11;
				if (other != at)
					buf[other] ^= 0x22;
				c.bad = 0;
				CHECK_EQ(gpunic_perf_verify_msg(&c, buf, len, 5, 0, 99), 0);
				CHECK_EQ(c.bad, 1);
				CHECK_EQ(c.bad_msg, 99);
				CHECK_EQ(c.bad_off, at);
				CHECK_EQ(c.bad_byte ^ c.want_byte, 0x11);
				buf[at] ^= 0x11;
				if (other != at)
					buf[other] ^= 0x22;
			}
		}
		c.bad = 0;
		want_verified = c.verified;
	}
	__atomic_store_n(&c.job.quit, 1, __ATOMIC_RELEASE);
	for (unsigned t = 0; t < CHECKERS; t++)
		CHECK_EQ(pthread_join(thr[t], NULL), 0);
	free(buf);
}

/* The verifier a write_bw server runs, fed a wrong buffer: it must name the byte. */
TEST(verifier_catches_corrupt_byte)
{
	const uint32_t size = 4096, slots = 8;
	uint8_t *ring = malloc((size_t)size * slots);
	struct perf_result res;

	CHECK(ring);
	for (uint32_t k = 0; k < slots; k++)
		gpunic_perf_fill(ring + (size_t)k * size, size, k, 0);
	memset(&res, 0, sizeof(res));
	perf_verify_ring(ring, size, slots, &res);
	CHECK_EQ(res.verified, slots);
	CHECK_EQ(res.bad, 0);

	ring[5 * size + 1234] ^= 0x40;
	memset(&res, 0, sizeof(res));
	perf_verify_ring(ring, size, slots, &res);
	CHECK_EQ(res.verified, slots);
	CHECK_EQ(res.bad, 1);
	CHECK_EQ(res.bad_msg, 5);
	CHECK_EQ(res.bad_off, 1234);
	CHECK_EQ(res.bad_byte ^ res.want_byte, 0x40);

	/* a slot holding another message's pattern (a misplaced write) is caught too */
	gpunic_perf_fill(ring + 2 * size, size, 3, 0);
	memset(&res, 0, sizeof(res));
	perf_verify_ring(ring, size, slots, &res);
	CHECK_EQ(res.bad, 2);
	CHECK_EQ(res.bad_msg, 2);
	free(ring);
}

TEST(slots_and_names)
{
	enum gpunic_perf_test t;

	CHECK_EQ(perf_slots(65536, 5000), PERF_RING_BYTES / 65536);
	CHECK_EQ(perf_slots(2, 10), 10);
	CHECK_EQ(perf_slots(PERF_MAX_SIZE, 1000), 2);
	for (unsigned i = 0; i < GPUNIC_PERF_TEST_MAX; i++) {
		CHECK_EQ(perf_test_parse(perf_test_name((enum gpunic_perf_test)i), &t), 0);
		CHECK_EQ(t, i);
	}
	CHECK_EQ(perf_test_parse("write", &t), EINVAL);
}

/* The fetched-value check of atomic_lat / atomic_bw, fed as a perftest server (its buffer holds
 * anything: each target's later values against its first) and as a gpunic server (exact). */
static struct gpunic_perf_ctx actx;

static void atomic_feed(uint64_t i, uint64_t value)
{
	memcpy(actx.lbuf + (i % actx.atomic_res_slots) * 8, &value, 8);
	gpunic_perf_atomic_check(&actx, i);
}

TEST(atomic_fetched_value_checks)
{
	static uint8_t res[8 * 16];
	const uint64_t base[3] = { 0x8000000000000000ull, 17, UINT64_MAX };

	/* a perftest server, FETCH_AND_ADD of 1 on 3 targets; target 2 wraps past 2^64 */
	memset(&actx, 0, sizeof(actx));
	actx.lbuf = res;
	actx.atomic_res_slots = 16;
	actx.slots = 3;
	actx.atomic_op = MLX5_OPCODE_ATOMIC_FA;
	for (uint64_t i = 0; i < 30; i++)
		atomic_feed(i, base[i % 3] + i / 3);
	CHECK_EQ(actx.verified, 27);	/* each target's first value sets its base */
	CHECK_EQ(actx.bad, 0);
	atomic_feed(30, base[0] + 11);	/* one visit skipped: a lost (or doubled) add */
	CHECK_EQ(actx.bad, 1);
	CHECK_EQ(actx.bad_msg, 30);
	CHECK_EQ(actx.bad_off, 0);
	CHECK_EQ(actx.atomic_got, base[0] + 11);
	CHECK_EQ(actx.atomic_want, base[0] + 10);

	/* perftest's CMP_AND_SWAP of 0 with 0: the targets never change */
	memset(&actx, 0, sizeof(actx));
	actx.lbuf = res;
	actx.atomic_res_slots = 16;
	actx.slots = 2;
	actx.atomic_op = MLX5_OPCODE_ATOMIC_CS;
	for (uint64_t i = 0; i < 10; i++)
		atomic_feed(i, i % 2 ? 0 : 0x1234);
	CHECK_EQ(actx.verified, 8);
	CHECK_EQ(actx.bad, 0);

	/* a gpunic server: targets start at 0, operation i fetches its visit number i / slots,
	 * and CMP_AND_SWAP compares with it and swaps in one more */
	memset(&actx, 0, sizeof(actx));
	actx.lbuf = res;
	actx.atomic_res_slots = 16;
	actx.slots = 4;
	actx.verify = 1;
	actx.atomic_op = MLX5_OPCODE_ATOMIC_CS;
	for (uint64_t i = 0; i < 40; i++) {
		struct gpunic_dev_send_wr wr;
		struct gpunic_dev_sge sge;

		actx.remote_va = 0x10000;
		actx.atomic_step = 64;
		gpunic_perf_atomic_wr(&actx, i, &wr, &sge);
		CHECK_EQ(wr.remote_addr, 0x10000 + (i % 4) * 64);
		CHECK_EQ(wr.compare_add, i / 4);
		CHECK_EQ(wr.swap, i / 4 + 1);
		CHECK_EQ(sge.length, 8);
		atomic_feed(i, i / 4);
	}
	CHECK_EQ(actx.verified, 40);
	CHECK_EQ(actx.bad, 0);
	atomic_feed(40, 0);
	CHECK_EQ(actx.bad, 1);
	CHECK_EQ(actx.atomic_want, 10);
}
