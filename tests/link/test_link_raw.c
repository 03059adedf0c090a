// SPDX-License-Identifier: MIT
/*
 * The raw Ethernet links (packet, xdp) on a veth pair between two network namespaces this test
 * creates (raw_netns.h): frames cross bit-exact through both the copy and the zero-copy calls,
 * the filter (BPF socket filter, XDP program) lets only RoCEv2 and ARP for us through, bad input
 * is a counted drop, and two NICs run every opcode over the links, RC also through the impair
 * wrapper, ARP included (the peer namespace's own kernel resolves the NIC's MAC).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "gpunic/log.h"
#include "link_test.h"
#include "nic/nic_fixture.h"
#include "raw_netns.h"

#define IP_A IP4(10, 77, 0, 1)
#define IP_B IP4(10, 77, 0, 2)
#define IP_OTHER IP4(10, 77, 0, 9)
#define KERNEL_IP_B IP4(10, 77, 0, 22)
#define WAIT_NS (2ull * 1000000000ull)
/* packet: jumbo frames for PMTU 4096; xdp: under what native XDP on veth takes (a page) */
#define MTU_PACKET 9000u
#define MTU_XDP 3000u

static const uint8_t mac_ab[2][6] = { { 2, 0, 0, 0, 0, 1 }, { 2, 0, 0, 0, 0, 2 } };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

struct rig {
	struct netns_pair ns;
	struct gpunic_link *l[2];
	struct gpunic_link *nic_link[2];        /* the links the NICs own (nic_setup) */
	bool xdp;
};

/* ---------------------------------------------------------------- setup */

static unsigned kind_mtu(bool xdp)
{
	return xdp ? MTU_XDP : MTU_PACKET;
}

/* Opens end @i's link inside its namespace; NULL with errno when it fails. */
static struct gpunic_link *open_end(struct rig *r, int i, const char *extra)
{
	const uint8_t *m = mac_ab[i];
	uint32_t ip = i ? IP_B : IP_A;
	struct gpunic_link *l;
	char spec[160];
	int err;

	snprintf(spec, sizeof(spec), "%s:%s%s,ip=%u.%u.%u.%u,mac=%02x:%02x:%02x:%02x:%02x:%02x%s",
		 r->xdp ? "xdp" : "packet", r->ns.ifname[i], r->xdp ? ":0" : "", ip >> 24,
		 (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, m[0], m[1], m[2], m[3], m[4], m[5],
		 extra ? extra : "");
	netns_enter(&r->ns, i);
	l = gpunic_link_open_spec(spec);
	err = errno;
	netns_enter(&r->ns, -1);
	errno = err;
	return l;
}

static void rig_open(struct rig *r, bool xdp)
{
	memset(r, 0, sizeof(*r));
	r->xdp = xdp;
	netns_setup(&r->ns, mac_ab, kind_mtu(xdp));
	for (int i = 0; i < 2; i++) {
		r->l[i] = open_end(r, i, NULL);
		if (!r->l[i] && errno == EOPNOTSUPP)
			SKIP("xdp link: built without libxdp");
		CHECK(r->l[i]);
	}
}

static void rig_close(struct rig *r)
{
	for (int i = 0; i < 2; i++)
		gpunic_link_close(r->l[i]);
	netns_remove();
}

/* ---------------------------------------------------------------- frames */

struct frame_spec {
	uint32_t dst_ip;
	uint16_t ethertype;
	uint8_t proto;
	uint16_t dport;
	uint16_t frag;
};

static const struct frame_spec roce_to_b = { IP_B, 0x0800, 17, 4791, 0 };

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

/* A frame from A to B: Ethernet, IPv4 (IHL 5), UDP, then the pattern for @seq. */
static void make_frame(uint8_t *f, size_t len, const struct frame_spec *s, uint32_t seq)
{
	test_fill(f, 42, len, seq);
	memcpy(f, mac_ab[1], 6);
	memcpy(f + 6, mac_ab[0], 6);
	put16(f + 12, s->ethertype);
	f[14] = 0x45;
	f[15] = 0;
	put16(f + 16, (uint16_t)(len - 14));
	put16(f + 18, (uint16_t)seq);
	put16(f + 20, s->frag);
	f[22] = 64;
	f[23] = s->proto;
	put16(f + 24, 0);
	put32(f + 26, IP_A);
	put32(f + 30, s->dst_ip);
	put16(f + 34, 49152);
	put16(f + 36, s->dport);
	put16(f + 38, (uint16_t)(len - 34));
	put16(f + 40, 0);
}

/* An ARP request from A asking who has @tpa. */
static void make_arp(uint8_t *f, uint32_t tpa)
{
	static const uint8_t fixed[8] = { 0, 1, 8, 0, 6, 4, 0, 1 };

	memset(f, 0, 60);
	memcpy(f, bcast, 6);
	memcpy(f + 6, mac_ab[0], 6);
	put16(f + 12, 0x0806);
	memcpy(f + 14, fixed, 8);
	memcpy(f + 22, mac_ab[0], 6);
	put32(f + 28, IP_A);
	put32(f + 38, tpa);
}

static void send_ok(struct gpunic_link *l, const uint8_t *f, size_t len)
{
	uint64_t end = test_now_ns() + WAIT_NS;
	int err;

	while ((err = gpunic_link_send(l, f, len)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	CHECK_EQ(err, 0);
}

/* The next frame on @l within the wait; its length, or 0 when none came. */
static size_t recv_wait(struct gpunic_link *l, uint8_t *buf, size_t cap)
{
	uint64_t end = test_now_ns() + WAIT_NS;
	size_t n;
	int err;

	while ((err = gpunic_link_recv(l, buf, cap, &n)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	return err ? 0 : n;
}

/* Nothing more arrives within 100 ms. */
static void expect_quiet(struct gpunic_link *l)
{
	uint64_t end = test_now_ns() + 100000000ull;
	uint8_t buf[64];
	size_t n;

	while (test_now_ns() < end) {
		int err = gpunic_link_recv(l, buf, sizeof(buf), &n);

		if (err != EAGAIN)
			harness_fail(__FILE__, __LINE__, "unexpected frame: %d, %zu bytes, "
				     "ethertype %02x%02x", err, n, buf[12], buf[13]);
		sched_yield();
	}
}

/* Frames of every size cross bit-exact, through send/recv and reserve/commit + peek/release. */
static void frames_cross(bool xdp)
{
	static uint8_t f[GPUNIC_MAX_FRAME_BYTES], g[GPUNIC_MAX_FRAME_BYTES];
	struct gpunic_link *a, *b;
	const uint8_t *p;
	struct rig r;
	uint8_t *room;
	size_t n;

	rig_open(&r, xdp);
	a = r.l[0];
	b = r.l[1];
	CHECK_EQ(a->caps, GPUNIC_LINK_CAP_SHARED_WIRE);
	CHECK_EQ(a->mtu, xdp ? MTU_XDP + 14u : GPUNIC_MAX_FRAME_BYTES);
	const size_t sizes[] = { 60, 61, 1000, a->mtu - 1, a->mtu };

	for (uint32_t k = 0; k < 2 * sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k / 2];

		make_frame(f, len, &roce_to_b, k);
		if (k & 1) {
			CHECK_EQ(gpunic_link_tx_reserve(a, len, &room), 0);
			memcpy(room, f, len);
			CHECK_EQ(gpunic_link_tx_commit(a, len), 0);
			CHECK_EQ(recv_wait(b, g, sizeof(g)), len);
		} else {
			send_ok(a, f, len);
			uint64_t end = test_now_ns() + WAIT_NS;
			int err;

			while ((err = gpunic_link_rx_peek(b, &p, &n)) == EAGAIN &&
			       test_now_ns() < end)
				sched_yield();
			CHECK_EQ(err, 0);
			CHECK_EQ(n, len);
			memcpy(g, p, n);
			gpunic_link_rx_release(b);
		}
		CHECK_MEM(g, f, len);
	}
	/* a burst: none lost, in order */
	for (uint32_t k = 0; k < 200; k++) {
		make_frame(f, 200, &roce_to_b, 1000 + k);
		send_ok(a, f, 200);
	}
	for (uint32_t k = 0; k < 200; k++) {
		CHECK_EQ(recv_wait(b, g, sizeof(g)), 200);
		CHECK(test_check_fill(g, 42, 200, 1000 + k));
	}
	CHECK_EQ(a->stats.tx_frames, 210);
	CHECK_EQ(b->stats.rx_frames, 210);
	CHECK_EQ(b->stats.rx_errors, 0);
	/* bad sends are counted errors and nothing goes out */
	CHECK_EQ(gpunic_link_send(a, f, a->mtu + 1), EMSGSIZE);
	CHECK_EQ(gpunic_link_send(a, f, 10), EINVAL);
	CHECK_EQ(a->stats.tx_errors, 2);
	/* a frame larger than the caller's room is consumed and counted */
	make_frame(f, 500, &roce_to_b, 7);
	send_ok(a, f, 500);
	uint64_t end = test_now_ns() + WAIT_NS;
	int err;

	while ((err = gpunic_link_recv(b, g, 100, &n)) == EAGAIN && test_now_ns() < end)
		sched_yield();
	CHECK_EQ(err, EMSGSIZE);
	CHECK_EQ(b->stats.rx_errors, 1);
	expect_quiet(b);
	rig_close(&r);
}

/* Only RoCEv2 for our address and ARP asking for it get through; the rest stays out. */
static void filter(bool xdp)
{
	static const struct frame_spec noise[] = {
		{ IP_B, 0x0800, 17, 4792, 0 },          /* another UDP port */
		{ IP_B, 0x0800, 6, 4791, 0 },           /* TCP */
		{ IP_B, 0x0800, 17, 4791, 0x2000 },     /* a first fragment */
		{ IP_B, 0x0800, 17, 4791, 0x0010 },     /* a later fragment */
		{ IP_OTHER, 0x0800, 17, 4791, 0 },      /* someone else's RoCEv2 */
		{ IP_B, 0x86dd, 17, 4791, 0 },          /* not IPv4 */
		{ IP_B, 0x88b5, 17, 4791, 0 },          /* not IP at all */
	};
	uint8_t f[256], g[256];
	struct rig r;

	rig_open(&r, xdp);
	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++) {
		make_frame(f, 200, &noise[i], (uint32_t)i);
		send_ok(r.l[0], f, 200);
	}
	make_arp(f, IP_OTHER);
	send_ok(r.l[0], f, 60);
	make_frame(f, 200, &roce_to_b, 99);
	send_ok(r.l[0], f, 200);
	make_arp(f, IP_B);
	send_ok(r.l[0], f, 60);
	/* the first frame through is the RoCEv2 one after all the noise, then our ARP */
	CHECK_EQ(recv_wait(r.l[1], g, sizeof(g)), 200);
	CHECK(test_check_fill(g, 42, 200, 99));
	CHECK_EQ(recv_wait(r.l[1], g, sizeof(g)), 60);
	CHECK_MEM(g, f, 60);
	expect_quiet(r.l[1]);
	CHECK_EQ(r.l[1]->stats.rx_frames, 2);
	rig_close(&r);
}

TEST(packet_frames_cross) { frames_cross(false); }
TEST(xdp_frames_cross) { frames_cross(true); }
TEST(packet_filter) { filter(false); }
TEST(xdp_filter) { filter(true); }

/* ---------------------------------------------------------------- errors */

static char logged[512];

static void log_sink(int level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	snprintf(logged, sizeof(logged), "%s", line);
}

/* @spec fails with @err and says @words (NULL: says nothing needed). */
static void open_fails(const char *spec, int err, const char *words)
{
	logged[0] = '\0';
	gpunic_log_set_sink(log_sink, NULL);
	errno = 0;
	CHECK(!gpunic_link_open_spec(spec));
	gpunic_log_set_sink(NULL, NULL);
	if (errno != err || (words && !strstr(logged, words)))
		harness_fail(__FILE__, __LINE__, "%s: errno %d (want %d), said '%s' (want '%s')",
			     spec, errno, err, logged, words ? words : "");
}

TEST(raw_bad_specs)
{
	static const char *const bad[] = {
		"packet:", "packet:,ip=10.0.0.1", "packet:a/b", "packet:eth0:1",
		"packet:eth0,ip=10.0.0", "packet:eth0,ip=0.0.0.0", "packet:eth0,mac=02:00:00",
		"packet:eth0,skb", "packet:eth0,bogus", "packet:eth0,", "packet:abcdefghijklmnop",
		"xdp:", "xdp:eth0:", "xdp:eth0:x", "xdp:eth0:1024", "xdp:eth0,busy=",
		"xdp:eth0,busy=x", "xdp:eth0:0:1", "xdp:eth0,copyx",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		open_fails(bad[i], EINVAL, NULL);
}

TEST(raw_missing_interface_said)
{
	open_fails("packet:gpunic-none0,ip=10.0.0.1", ENODEV,
		   "packet link: open: no interface 'gpunic-none0' in this network namespace");
#ifdef GPUNIC_HAVE_XDP
	open_fails("xdp:gpunic-none0:0", ENODEV, "xdp link: open: no interface 'gpunic-none0'");
#else
	open_fails("xdp:gpunic-none0:0", EOPNOTSUPP, "xdp link: built without libxdp");
#endif
}

/* Not root: EPERM, and the message says what is needed. Runs as nobody in a child. */
TEST(raw_not_root_said)
{
	struct netns_pair ns;
	char spec[64];
	pid_t pid;
	int st;

	netns_setup(&ns, mac_ab, 1500);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		netns_live = NULL;	/* the parent cleans up */
		netns_enter(&ns, 0);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		snprintf(spec, sizeof(spec), "packet:%s", ns.ifname[0]);
		open_fails(spec, EPERM, "not permitted (needs CAP_NET_RAW: run as root)");
#ifdef GPUNIC_HAVE_XDP
		snprintf(spec, sizeof(spec), "xdp:%s:0", ns.ifname[0]);
		open_fails(spec, EPERM, "needs CAP_NET_ADMIN and CAP_BPF");
#endif
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	netns_remove();
}

/* A queue the interface does not have; a second xdp link on a busy interface. */
TEST(xdp_bad_queue_and_busy_said)
{
	struct gpunic_link *l;
	struct rig r;
	char spec[64];

	rig_open(&r, true);
	netns_enter(&r.ns, 0);
	snprintf(spec, sizeof(spec), "xdp:%s:7", r.ns.ifname[0]);
	open_fails(spec, EBUSY, "already runs an XDP program");
	gpunic_link_close(r.l[0]);
	r.l[0] = NULL;
	open_fails(spec, EINVAL, "queue 7");
	/* the first link's program went with it: the interface is free again */
	snprintf(spec, sizeof(spec), "xdp:%s,skb,copy", r.ns.ifname[0]);
	l = gpunic_link_open_spec(spec);
	CHECK(l);
	gpunic_link_close(l);
	netns_enter(&r.ns, -1);
	rig_close(&r);
}

/* ---------------------------------------------------------------- NICs */

/* fx_setup() over the rig's links (nic_fixture.h opens only its own kinds). */
static void nic_setup(struct fixture *fx, struct rig *r, bool xdp, const struct fx_opts *o)
{
	struct gpunic_link *la, *lb;

	rig_open(r, xdp);
	la = r->l[0];
	lb = r->l[1];
	r->nic_link[0] = la;
	r->nic_link[1] = lb;
	r->l[0] = r->l[1] = NULL;	/* the NICs own them now */
	memset(fx, 0, sizeof(*fx));
	fx->o = *o;
	if (o->impair) {
		struct gpunic_impair_attr ib = *o->impair;

		ib.seed ^= 0x9E3779B97F4A7C15ull;
		la = gpunic_link_impair_open(la, o->impair);
		lb = gpunic_link_impair_open(lb, &ib);
		CHECK(la && lb);
	}
	player_open(&fx->a, la, IP_A, 1, 0, o);
	player_open(&fx->b, lb, IP_B, 2, 0, o);
	fx->a.psn = o->psn_a;
	fx->b.psn = o->psn_b;
	fx->a.qp = player_qp(&fx->a, o);
	fx->b.qp = player_qp(&fx->b, o);
	qp_to_rts(fx->a.qp, &fx->a, &fx->b, fx->b.qp->qp_num, o);
	qp_to_rts(fx->b.qp, &fx->b, &fx->a, fx->a.qp->qp_num, o);
	CHECK_EQ(gpunic_qp_export(fx->a.qp, &fx->a.dq), 0);
	CHECK_EQ(gpunic_qp_export(fx->b.qp, &fx->b.dq), 0);
}

static void nic_teardown(struct fixture *fx, struct rig *r)
{
	fx_teardown(fx);
	rig_close(r);
}

/* Every opcode of @type, both ways, sizes around the PMTU and a 1 MiB message. */
static void matrix(bool xdp, enum gpunic_qp_type type)
{
	static const uint8_t ops[] = { MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
				       MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
				       MLX5_OPCODE_RDMA_READ };
	enum gpunic_mtu mtu = xdp ? GPUNIC_MTU_2048 : GPUNIC_MTU_4096;
	struct fx_opts o = { .type = type, .mtu = mtu, .psn_a = 0xFFFFF0, .psn_b = 0x123,
			     .cqe_scatter = true };
	uint32_t pmtu = gpunic_mtu_bytes(mtu), seed = 1;
	const uint32_t sizes[] = { 0, 1, 32, pmtu - 1, pmtu, pmtu + 1, 1u << 20 };
	unsigned nops = type == GPUNIC_QPT_RC ? 5 : 4;
	struct fixture fx;
	struct rig r;

	nic_setup(&fx, &r, xdp, &o);
	CHECK_EQ(gpunic_link_path_mtu(r.nic_link[0]), mtu);
	for (int dir = 0; dir < 2; dir++)
		for (unsigned op = 0; op < nops; op++)
			for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
				fx_xfer(&fx, dir ? &fx.b : &fx.a, dir ? &fx.a : &fx.b, ops[op],
					sizes[s], seed++);
	nic_teardown(&fx, &r);
}

TEST(packet_rc_matrix) { matrix(false, GPUNIC_QPT_RC); }
TEST(packet_uc_matrix) { matrix(false, GPUNIC_QPT_UC); }
TEST(xdp_rc_matrix) { matrix(true, GPUNIC_QPT_RC); }
TEST(xdp_uc_matrix) { matrix(true, GPUNIC_QPT_UC); }

static uint64_t *u64_at(struct player *p, size_t off)
{
	return (uint64_t *)(void *)(p->buf + off);
}

static void atomic_one(struct fixture *fx, bool cas, uint64_t cmp_add, uint64_t swap,
		       uint64_t want_fetched, uint64_t want_target)
{
	struct gpunic_dev_cqe cqe;
	int64_t r;

	if (cas)
		r = gpunic_dev_post_atomic_cas(&fx->a.dq, GPUNIC_DEV_SEND_SIGNALED,
					       fx_va(&fx->a, 64), fx->a.mr->lkey,
					       fx_va(&fx->b, 4096), fx->b.mr->rkey, cmp_add, swap);
	else
		r = gpunic_dev_post_atomic_fa(&fx->a.dq, GPUNIC_DEV_SEND_SIGNALED,
					      fx_va(&fx->a, 64), fx->a.mr->lkey,
					      fx_va(&fx->b, 4096), fx->b.mr->rkey, cmp_add);
	CHECK(r >= 0);
	CHECK_EQ(gpunic_dev_submit(&fx->a.dq), 0);
	CHECK(fx_wait_cqe(fx, &fx->a, true, &cqe));
	CHECK_EQ(cqe.opcode, MLX5_CQE_REQ);
	CHECK_EQ(cqe.byte_cnt, 8);
	CHECK_EQ(*u64_at(&fx->a, 64), want_fetched);
	CHECK_EQ(__atomic_load_n(u64_at(&fx->b, 4096), __ATOMIC_ACQUIRE), want_target);
}

/* Fetch-and-add and compare-and-swap (hit and miss), exact on both sides. */
static void atomics(bool xdp)
{
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .psn_a = 0xFFFFFE,
			     .access = GPUNIC_ACCESS_REMOTE_WRITE | GPUNIC_ACCESS_REMOTE_READ |
				       GPUNIC_ACCESS_REMOTE_ATOMIC };
	struct fixture fx;
	struct rig r;

	nic_setup(&fx, &r, xdp, &o);
	*u64_at(&fx.b, 4096) = 40;
	atomic_one(&fx, false, 2, 0, 40, 42);
	atomic_one(&fx, false, ~0ull, 0, 42, 41);
	atomic_one(&fx, true, 41, 0xCAFEF00DDEADBEEFull, 41, 0xCAFEF00DDEADBEEFull);
	atomic_one(&fx, true, 41, 7, 0xCAFEF00DDEADBEEFull, 0xCAFEF00DDEADBEEFull);
	nic_teardown(&fx, &r);
}

TEST(packet_rc_atomics) { atomics(false); }
TEST(xdp_rc_atomics) { atomics(true); }

/* RC through drop, reorder, duplicate and corrupt (5% each) on top of the raw wire: every
 * message arrives whole and in order; the corrupted ones die on the ICRC, which a raw link
 * makes the NIC check. */
static void impaired(bool xdp)
{
	static const struct gpunic_impair_attr imp = {
		.seed = 0x5EED,
		.drop_ppm = 50000,
		.reorder_ppm = 50000,
		.duplicate_ppm = 50000,
		.corrupt_ppm = 50000,
	};
	struct fx_opts o = { .type = GPUNIC_QPT_RC, .impair = &imp, .timeout = 10,
			     .retry_cnt = 7, .mtu = GPUNIC_MTU_1024 };
	struct gpunic_nic_counters c;
	struct gpunic_qp_counters q;
	struct fixture fx;
	struct rig r;

	nic_setup(&fx, &r, xdp, &o);
	for (uint32_t i = 0; i < 30; i++) {
		fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_SEND_IMM, 100 + i * 331, i);
		fx_xfer(&fx, &fx.a, &fx.b, MLX5_OPCODE_RDMA_READ, 5000 + i * 1000, 100 + i);
		fx_xfer(&fx, &fx.b, &fx.a, MLX5_OPCODE_RDMA_WRITE_IMM, 3000 + i * 777, 200 + i);
	}
	CHECK_EQ(gpunic_qp_query_counters(fx.a.qp, &q), 0);
	CHECK(q.retransmits > 0);
	CHECK_EQ(gpunic_nic_query_counters(fx.b.nic, &c), 0);
	CHECK(c.drops[GPUNIC_DROP_BAD_ICRC] + c.drops[GPUNIC_DROP_MALFORMED] > 0);
	CHECK_EQ(fx.a.qp->state, GPUNIC_QPS_RTS);
	nic_teardown(&fx, &r);
}

TEST(packet_rc_impaired) { impaired(false); }
TEST(xdp_rc_impaired) { impaired(true); }

/*
 * The other namespace's kernel resolves NIC A's MAC by ARP over the raw link, then sends it a
 * UDP datagram to port 4791 that is no RoCEv2 packet: answered, learned, and a counted drop.
 */
static void kernel_arp(bool xdp)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4791),
				  .sin_addr.s_addr = htonl(IP_A) };
	struct fx_opts o = { .type = GPUNIC_QPT_RC };
	struct gpunic_nic_counters c;
	uint64_t end = fx_now_ns() + 5 * 1000000000ull, rx0;
	struct fixture fx;
	struct rig r;
	char cmd[160];
	int fd;

	nic_setup(&fx, &r, xdp, &o);
	CHECK_EQ(netns_sh("ip -n %s addr add 10.77.0.22/24 dev %s", r.ns.ns[1], r.ns.ifname[1]),
		 0);
	CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &c), 0);
	rx0 = c.drops[GPUNIC_DROP_MALFORMED];
	netns_enter(&r.ns, 1);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	netns_enter(&r.ns, -1);
	CHECK(fd >= 0);
	/* the kernel queues the datagram until ARP resolves; NIC A answers from its engine */
	CHECK_EQ(sendto(fd, "not roce", 8, 0, (struct sockaddr *)&to, sizeof(to)), 8);
	for (;;) {
		pump(&fx);
		CHECK_EQ(gpunic_nic_query_counters(fx.a.nic, &c), 0);
		if (c.arp_replies > 0 && c.drops[GPUNIC_DROP_MALFORMED] > rx0)
			break;
		CHECK(fx_now_ns() < end);
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "ip -n %s neigh show 10.77.0.1 | grep -q 'lladdr 02:00:00:00:00:01'",
		 r.ns.ns[1]);
	CHECK_EQ(netns_sh("%s", cmd), 0);
	nic_teardown(&fx, &r);
}

TEST(packet_kernel_resolves_nic) { kernel_arp(false); }
TEST(xdp_kernel_resolves_nic) { kernel_arp(true); }
