// SPDX-License-Identifier: MIT
/* The endpoint library's pieces on their own: parsers, the MAC and GID rules, rdma-core
 * pingpong's message, TCP bounded by a deadline, the learning link and a link's bound address. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpunic/endpoint.h"
#include "gpunic/perftest.h"
#include "harness.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

TEST(parse_ipv4)
{
	static const char *bad[] = { "", "1.2.3", "1.2.3.4.5", "256.1.1.1", " 1.2.3.4", "1.2.3.4 ",
				     "+1.2.3.4", "1.2.3.-4", "a.b.c.d", "1.2.3.4x", "0x1.2.3.4" };
	uint32_t ip = 7;
	uint16_t port = 9;

	CHECK_EQ(gpunic_parse_ipv4("192.168.0.101", &ip), 0);
	CHECK_EQ(ip, IP4(192, 168, 0, 101));
	CHECK_EQ(gpunic_parse_ipv4("0.0.0.0", &ip), 0);
	CHECK_EQ(ip, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ip = 7;
		CHECK_EQ(gpunic_parse_ipv4(bad[i], &ip), EINVAL);
		CHECK_EQ(ip, 7);
	}
	CHECK_EQ(gpunic_parse_ipv4(NULL, &ip), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.2", &ip, &port), 0);
	CHECK_EQ(ip, IP4(10, 0, 0, 2));
	CHECK_EQ(port, 9);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.3:4792", &ip, &port), 0);
	CHECK_EQ(ip, IP4(10, 0, 0, 3));
	CHECK_EQ(port, 4792);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.3:0", &ip, &port), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.3:65536", &ip, &port), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.3:", &ip, &port), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0.3:-1", &ip, &port), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("10.0.0:1", &ip, &port), EINVAL);
	CHECK_EQ(gpunic_parse_ipv4_port("1234567890123456:1", &ip, &port), EINVAL);
}

TEST(parse_mac_and_rules)
{
	uint8_t mac[6], gid[16];
	static const uint8_t want_mac[6] = { 0x02, 0x00, 192, 168, 0, 2 };
	static const uint8_t want_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
					      192, 168, 0, 2 };
	uint32_t ip = 0;
	char s[16];

	CHECK_EQ(gpunic_parse_mac("02:00:c0:A8:00:02", mac), 0);
	CHECK_MEM(mac, want_mac, 6);
	CHECK_EQ(gpunic_parse_mac("02:00:c0:a8:00", mac), EINVAL);
	CHECK_EQ(gpunic_parse_mac("02:00:c0:a8:00:100", mac), EINVAL);
	CHECK_EQ(gpunic_parse_mac("02:00:c0:a8:00:02:", mac), EINVAL);
	memset(mac, 0, 6);
	gpunic_mac_from_ipv4(IP4(192, 168, 0, 2), mac);
	CHECK_MEM(mac, want_mac, 6);
	gpunic_gid_from_ipv4(IP4(192, 168, 0, 2), gid);
	CHECK_MEM(gid, want_gid, 16);
	CHECK_EQ(gpunic_gid_to_ipv4(gid, &ip), 0);
	CHECK_EQ(ip, IP4(192, 168, 0, 2));
	gid[9] = 1;	/* not IPv4-mapped */
	CHECK_EQ(gpunic_gid_to_ipv4(gid, &ip), EPROTO);
	gpunic_gid_from_ipv4(0, gid);
	CHECK_EQ(gpunic_gid_to_ipv4(gid, &ip), EPROTO);
	gpunic_ipv4_str(IP4(10, 255, 0, 1), s);
	CHECK(strcmp(s, "10.255.0.1") == 0);
}

TEST(pingpong_message)
{
	char msg[GPUNIC_PP_MSG_BYTES];
	struct gpunic_ep_peer p;
	uint8_t gid[16], back[16];

	gpunic_gid_from_ipv4(IP4(10, 0, 0, 2), gid);
	gpunic_pp_msg_format(0x1234, 0xabcdef, gid, msg);
	/* ibv_rc_pingpong's exact text: LID:QPN:PSN:wire GID, 52 bytes with the NUL */
	CHECK(strcmp(msg, "0000:001234:abcdef:00000000000000000000ffff0a000002") == 0);
	CHECK_EQ(strlen(msg) + 1, GPUNIC_PP_MSG_BYTES);
	CHECK_EQ(gpunic_pp_msg_parse(msg, &p, back), 0);
	CHECK_EQ(p.qpn, 0x1234);
	CHECK_EQ(p.psn, 0xabcdef);
	CHECK_EQ(p.ip, IP4(10, 0, 0, 2));
	CHECK_MEM(back, gid, 16);
	/* a fe80:: GID parses but is no RoCEv2 IPv4 address */
	memcpy(msg, "0000:001234:abcdef:fe800000000000000000000000000001", GPUNIC_PP_MSG_BYTES);
	CHECK_EQ(gpunic_pp_msg_parse(msg, &p, back), EAFNOSUPPORT);
	CHECK_EQ(back[0], 0xfe);
	/* short, non-hex and unterminated messages are refused, never read past */
	memcpy(msg, "0000:001234:abcdef:00000000000000000000ffff0a0000", 50);
	msg[50] = '\0';
	CHECK_EQ(gpunic_pp_msg_parse(msg, &p, back), EPROTO);
	memcpy(msg, "0000:001234:abcdef:00000000000000000000ffff0a0000zz", GPUNIC_PP_MSG_BYTES);
	CHECK_EQ(gpunic_pp_msg_parse(msg, &p, back), EPROTO);
	memset(msg, 'a', sizeof(msg));
	CHECK_EQ(gpunic_pp_msg_parse(msg, &p, back), EPROTO);
}

TEST(tcp_read_eof_and_deadline)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(200) };
	int sv[2];
	char buf[8];
	size_t got = 99;
	uint64_t t0;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	/* nothing comes: the deadline ends the wait */
	t0 = gpunic_ep_now_ns();
	CHECK_EQ(gpunic_tcp_read_full(sv[0], buf, 4, &w), ETIMEDOUT);
	CHECK(gpunic_ep_now_ns() - t0 >= 150000000ull);
	/* three bytes, then EOF: read_some says 3, read_full says the peer closed */
	CHECK_EQ(gpunic_tcp_write_full(sv[1], "abc", 3, NULL), 0);
	close(sv[1]);
	w.deadline_ns = gpunic_ep_deadline(1000);
	CHECK_EQ(gpunic_tcp_read_some(sv[0], buf, sizeof(buf), &w, &got), 0);
	CHECK_EQ(got, 3);
	CHECK_MEM(buf, "abc", 3);
	CHECK_EQ(gpunic_tcp_read_full(sv[0], buf, 1, &w), EPIPE);
	close(sv[0]);
}

static void *serve_once(void *arg)
{
	int *lfd = arg, fd = -1;
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(5000) };
	char buf[5];

	if (gpunic_tcp_accept(*lfd, &w, &fd) == 0 && gpunic_tcp_read_full(fd, buf, 5, &w) == 0)
		gpunic_tcp_write_full(fd, buf, 5, &w);
	if (fd >= 0)
		close(fd);
	return NULL;
}

TEST(tcp_connect_accept)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(5000) };
	pthread_t t;
	uint32_t lip = 0, pip = 0;
	int lfd, fd;
	char buf[5];

	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &lfd), 0);
	{
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);

		CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
		CHECK_EQ(pthread_create(&t, NULL, serve_once, &lfd), 0);
		CHECK_EQ(gpunic_tcp_connect("127.0.0.1", ntohs(a.sin_port), &w, &fd), 0);
	}
	gpunic_tcp_addrs(fd, &lip, &pip);
	CHECK_EQ(lip, IP4(127, 0, 0, 1));
	CHECK_EQ(pip, IP4(127, 0, 0, 1));
	CHECK_EQ(gpunic_tcp_write_full(fd, "hello", 5, &w), 0);
	CHECK_EQ(gpunic_tcp_read_full(fd, buf, 5, &w), 0);
	CHECK_MEM(buf, "hello", 5);
	pthread_join(t, NULL);
	close(fd);
	close(lfd);
	CHECK_EQ(gpunic_tcp_listen("not-an-ip", 0, &lfd), EINVAL);
	CHECK_EQ(gpunic_tcp_connect("no-such-host.invalid", 1, &w, &fd), EHOSTUNREACH);
}

TEST(tcp_connect_refused_until_deadline)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(150) };
	uint64_t t0 = gpunic_ep_now_ns();
	int lfd, fd = -1;
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	uint16_t port;

	/* a port nobody listens on: bind one, note it, close it */
	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &lfd), 0);
	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(lfd);
	CHECK_EQ(gpunic_tcp_connect("127.0.0.1", port, &w, &fd), ECONNREFUSED);
	CHECK(gpunic_ep_now_ns() - t0 >= 100000000ull);
	CHECK_EQ(fd, -1);
}

/* The loop's side of gpunic's exchange, on a thread: serve one client, keep what it said. */
struct oob_serve_arg {
	int lfd;
	int err;
	struct gpunic_qp_info local, remote;
	const struct gpunic_qp_info *expect;	/* gpunic_oob_serve_peer's, or NULL */
};

static void *oob_serve_once(void *arg)
{
	struct oob_serve_arg *a = arg;

	a->err = gpunic_oob_serve_peer(a->lfd, 5000, &a->local, &a->remote, a->expect);
	return NULL;
}

static uint16_t listen_port(int lfd)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	return ntohs(a.sin_port);
}

/*
 * The listener reads first and answers only a well-formed message: a stray client sending
 * garbage (or nothing) gets not one byte of our QPN, VA or rkey; a real peer gets them.
 */
TEST(oob_serve_answers_only_a_peer)
{
	struct oob_serve_arg a = { .local = { .qpn = 0x123, .psn = 7, .ip = IP4(10, 0, 0, 1),
					      .va = 0x7000, .rkey = 0xbeef, .len = 4096 } };
	struct gpunic_qp_info me = { .qpn = 0x456, .psn = 9, .ip = IP4(10, 0, 0, 2) }, got;
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(5000) };
	struct gpunic_tcp_wait quiet = { .deadline_ns = 0 };	/* no NIC to keep polling */
	uint8_t junk[256], buf[256];
	size_t n = 0;
	pthread_t t;
	uint16_t port;
	int fd, err;

	CHECK_EQ(gpunic_oob_listen("127.0.0.1", 0, &a.lfd), EINVAL);
	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &a.lfd), 0);
	port = listen_port(a.lfd);
	/* a client that says nothing hears nothing (the listener waits for its message) ... */
	memset(junk, 0xA5, sizeof(junk));
	CHECK_EQ(pthread_create(&t, NULL, oob_serve_once, &a), 0);
	CHECK_EQ(gpunic_tcp_connect("127.0.0.1", port, &w, &fd), 0);
	quiet.deadline_ns = gpunic_ep_deadline(300);
	err = gpunic_tcp_read_some(fd, buf, sizeof(buf), &quiet, &n);
	CHECK_EQ(err, ETIMEDOUT);
	CHECK_EQ(n, 0);
	/* ... and one that sends garbage is refused, still with nothing written back */
	CHECK_EQ(gpunic_tcp_write_full(fd, junk, sizeof(junk), &w), 0);
	pthread_join(t, NULL);
	CHECK_EQ(a.err, EPROTO);
	close(fd);
	/* a real peer: both sides get the other's message */
	CHECK_EQ(pthread_create(&t, NULL, oob_serve_once, &a), 0);
	CHECK_EQ(gpunic_oob_exchange("127.0.0.1", port, 5000, &me, &got), 0);
	pthread_join(t, NULL);
	CHECK_EQ(a.err, 0);
	CHECK_EQ(a.remote.qpn, me.qpn);
	CHECK_EQ(got.qpn, a.local.qpn);
	CHECK_EQ(got.rkey, a.local.rkey);
	CHECK_EQ(got.va, a.local.va);
	close(a.lfd);
}

/* Once a peer is connected, a well-formed message from another QP, or from its QPN at another
 * address, is answered nothing: only that peer learns the QPN, VA and rkey again. */
TEST(oob_serve_peer_answers_only_the_connected_peer)
{
	struct gpunic_qp_info peer = { .qpn = 0x456, .psn = 9, .ip = IP4(10, 0, 0, 2) };
	struct oob_serve_arg a = { .local = { .qpn = 0x123, .psn = 7, .ip = IP4(10, 0, 0, 1),
					      .va = 0x7000, .rkey = 0xbeef, .len = 4096 },
				   .expect = &peer };
	struct gpunic_qp_info other = peer, got;
	pthread_t t;
	uint16_t port;

	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &a.lfd), 0);
	port = listen_port(a.lfd);
	for (int i = 0; i < 2; i++) {
		/* another QP, then the peer's QPN from another host */
		other.qpn = i == 0 ? 0x999 : peer.qpn;
		other.ip = i == 0 ? peer.ip : IP4(10, 0, 0, 9);
		memset(&got, 0, sizeof(got));
		CHECK_EQ(pthread_create(&t, NULL, oob_serve_once, &a), 0);
		CHECK(gpunic_oob_exchange("127.0.0.1", port, 3000, &other, &got) != 0);
		pthread_join(t, NULL);
		CHECK_EQ(a.err, EACCES);
		CHECK_EQ(a.remote.qpn, other.qpn);	/* who it was, for the log */
		CHECK_EQ(got.rkey, 0);
	}
	CHECK_EQ(pthread_create(&t, NULL, oob_serve_once, &a), 0);
	CHECK_EQ(gpunic_oob_exchange("127.0.0.1", port, 3000, &peer, &got), 0);
	pthread_join(t, NULL);
	CHECK_EQ(a.err, 0);
	CHECK_EQ(got.rkey, a.local.rkey);
	close(a.lfd);
}

/* gpunic's message of version 2 as a foreign client writes it (docs/INTEROP.md). */
static void oob_msg(uint8_t m[GPUNIC_OOB_MSG_BYTES], uint32_t kind, uint64_t session,
		    uint32_t qpn, uint32_t ip)
{
	uint32_t w[14] = { 0x47504E51u, 2, kind, (uint32_t)(session >> 32), (uint32_t)session,
			   qpn, 1, ip };

	for (int i = 0; i < 14; i++)
		w[i] = htonl(w[i]);
	memcpy(m, w, GPUNIC_OOB_MSG_BYTES);
}

/*
 * A client that gave up and closed while its connection waited in the listen queue: its message
 * is still there when the server gets to it, but is not acted on (a hello of an abandoned
 * attempt was taken for the session, and the sensor's next one for the step after).
 */
TEST(oob_accept_drops_a_message_whose_sender_left)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(5000) };
	struct gpunic_oob_request req;
	uint8_t m[GPUNIC_OOB_MSG_BYTES];
	int lfd, fd;

	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &lfd), 0);
	oob_msg(m, GPUNIC_OOB_HELLO, 0x1234, 0x456, IP4(10, 0, 0, 2));
	/* one that waits for the answer is served ... */
	CHECK_EQ(gpunic_tcp_connect("127.0.0.1", listen_port(lfd), &w, &fd), 0);
	CHECK_EQ(gpunic_tcp_write_full(fd, m, sizeof(m), &w), 0);
	CHECK_EQ(gpunic_oob_accept(lfd, 2000, &req), 0);
	CHECK_EQ(req.tag.kind, GPUNIC_OOB_HELLO);
	CHECK_EQ(req.tag.session, 0x1234);
	CHECK_EQ(req.info.qpn, 0x456);
	gpunic_oob_drop(&req);
	close(fd);
	/* ... one that wrote the same and left is not */
	CHECK_EQ(gpunic_tcp_connect("127.0.0.1", listen_port(lfd), &w, &fd), 0);
	CHECK_EQ(gpunic_tcp_write_full(fd, m, sizeof(m), &w), 0);
	close(fd);
	CHECK_EQ(gpunic_oob_accept(lfd, 2000, &req), ECONNABORTED);
	CHECK_EQ(req.tag.kind, GPUNIC_OOB_HELLO);
	CHECK_EQ(req.fd, -1);
	/* more than one message is not gpunic's client either */
	CHECK_EQ(gpunic_tcp_connect("127.0.0.1", listen_port(lfd), &w, &fd), 0);
	CHECK_EQ(gpunic_tcp_write_full(fd, m, sizeof(m), &w), 0);
	CHECK_EQ(gpunic_tcp_write_full(fd, m, 1, &w), 0);
	CHECK_EQ(gpunic_oob_accept(lfd, 2000, &req), EPROTO);
	close(fd);
	close(lfd);
}

/* A server thread that answers under another step's kind. */
struct oob_wrong_kind_arg {
	int lfd;
	int err;
	struct gpunic_qp_info local;
};

static void *oob_answer_wrong_kind(void *arg)
{
	struct oob_wrong_kind_arg *a = arg;
	struct gpunic_oob_request req;

	a->err = gpunic_oob_accept(a->lfd, 5000, &req);
	if (!a->err) {
		req.tag.kind = GPUNIC_OOB_READY;
		a->err = gpunic_oob_answer(&req, &a->local);
	}
	return NULL;
}

/* A client takes an answer only under its own tag: an answer to another step is none. */
TEST(oob_exchange_takes_only_its_own_step)
{
	struct oob_wrong_kind_arg a = { .local = { .qpn = 0x123, .psn = 7, .ip = IP4(10, 0, 0, 1) } };
	struct gpunic_qp_info me = { .qpn = 0x456, .psn = 9, .ip = IP4(10, 0, 0, 2) }, got;
	struct gpunic_oob_tag hello = { GPUNIC_OOB_HELLO, 77 };
	pthread_t t;

	CHECK_EQ(gpunic_tcp_listen("127.0.0.1", 0, &a.lfd), 0);
	CHECK_EQ(pthread_create(&t, NULL, oob_answer_wrong_kind, &a), 0);
	CHECK_EQ(gpunic_oob_exchange_tagged("127.0.0.1", listen_port(a.lfd), 3000, &hello, &me,
					    &got),
		 EPROTO);
	pthread_join(t, NULL);
	CHECK_EQ(a.err, 0);
	CHECK(gpunic_oob_new_session() != gpunic_oob_new_session());
	close(a.lfd);
}

TEST(link_bound_addr)
{
	struct gpunic_udp_link_attr ua = { .local_ip = IP4(127, 0, 0, 71), .local_port = 4793 };
	struct gpunic_impair_attr ia = { .seed = 1 };
	struct gpunic_link *udp = gpunic_link_udp_open(&ua), *imp, *shm, *learn;
	struct gpunic_ep_addr addr;
	uint32_t ip = 0;
	uint16_t port = 0;
	char spec[64];

	CHECK(udp != NULL);
	CHECK_EQ(gpunic_link_bound_addr(udp, &ip, &port), 0);
	CHECK_EQ(ip, IP4(127, 0, 0, 71));
	CHECK_EQ(port, 4793);
	/* wrappers report their inner link's */
	imp = gpunic_link_impair_open(udp, &ia);
	CHECK(imp != NULL);
	learn = gpunic_link_learn_open(imp);
	CHECK(learn != NULL);
	ip = 0;
	port = 0;
	CHECK_EQ(gpunic_link_bound_addr(learn, &ip, &port), 0);
	CHECK_EQ(ip, IP4(127, 0, 0, 71));
	CHECK_EQ(port, 4793);
	gpunic_link_close(learn);
	/* a shm cable carries any address */
	snprintf(spec, sizeof(spec), "shm:/gpunic-ep-bound-%d,a,create", (int)getpid());
	shm = gpunic_link_open_spec(spec);
	CHECK(shm != NULL);
	CHECK_EQ(gpunic_link_bound_addr(shm, &ip, &port), ENOENT);
	gpunic_link_close(shm);
	/* gpunic_ep_link_open: a udp link's address and source port win over the default */
	CHECK_EQ(gpunic_ep_link_open("test", "udp:127.0.0.72:4794", IP4(10, 0, 0, 1), NULL, 0, &udp,
				     &addr), 0);
	CHECK_EQ(addr.ip, IP4(127, 0, 0, 72));
	CHECK_EQ(addr.udp_port, 4794);
	CHECK_EQ(addr.src_udp_port, 4794);
	CHECK_EQ(addr.mac[0], 0x02);
	CHECK_EQ(addr.mac[5], 72);
	gpunic_link_close(udp);
	CHECK_EQ(gpunic_ep_link_open("test", "udp:nonsense", 0, NULL, 0, &udp, &addr), EINVAL);
}

/* An IPv4 frame from @sip, and an ARP reply from @sip, each teach the learning link the MAC. */
TEST(learn_link)
{
	static const uint8_t peer[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
	static const uint8_t mine[6] = { 0x02, 0, 10, 0, 0, 1 };
	struct gpunic_link *a, *b, *learn;
	char spec_a[64], spec_b[64];
	uint8_t f[64] = { 0 }, buf[2048], mac[6];
	size_t len;
	int err;

	snprintf(spec_a, sizeof(spec_a), "shm:/gpunic-ep-learn-%d,a,create", (int)getpid());
	snprintf(spec_b, sizeof(spec_b), "shm:/gpunic-ep-learn-%d,b", (int)getpid());
	a = gpunic_link_open_spec(spec_a);
	b = gpunic_link_open_spec(spec_b);
	CHECK(a && b);
	learn = gpunic_link_learn_open(b);
	CHECK(learn != NULL);
	CHECK_EQ(gpunic_link_learn_mac(a, mac), EINVAL);	/* not a learning link */
	gpunic_link_learn_watch(learn, IP4(10, 0, 0, 2));
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), EAGAIN);
	/* an IPv4 frame from another address teaches nothing */
	memcpy(f + 6, peer, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[26] = 10;
	f[29] = 3;
	CHECK_EQ(gpunic_link_send(a, f, sizeof(f)), 0);
	CHECK_EQ(gpunic_link_recv(learn, buf, sizeof(buf), &len), 0);
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), EAGAIN);
	f[29] = 2;
	CHECK_EQ(gpunic_link_send(a, f, sizeof(f)), 0);
	CHECK_EQ(gpunic_link_recv(learn, buf, sizeof(buf), &len), 0);
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), 0);
	CHECK_MEM(mac, peer, 6);
	CHECK_EQ(learn->stats.rx_frames, 2);
	/* watching another address forgets; the ARP request goes out as RFC 826 says */
	gpunic_link_learn_watch(learn, IP4(10, 0, 0, 9));
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), EAGAIN);
	CHECK_EQ(gpunic_link_learn_arp_request(learn, mine, IP4(10, 0, 0, 1), IP4(10, 0, 0, 9)), 0);
	do
		err = gpunic_link_recv(a, buf, sizeof(buf), &len);
	while (err == EAGAIN);
	CHECK_EQ(err, 0);
	CHECK_EQ(len, 60);
	CHECK(buf[0] == 0xff && buf[5] == 0xff);
	CHECK(buf[12] == 0x08 && buf[13] == 0x06 && buf[21] == 1);
	CHECK_MEM(buf + 22, mine, 6);
	CHECK(buf[38] == 10 && buf[41] == 9);
	/* the peer's ARP reply teaches it */
	memcpy(buf + 6, peer, 6);
	buf[21] = 2;
	memcpy(buf + 22, peer, 6);
	buf[28] = 10;
	buf[29] = 0;
	buf[30] = 0;
	buf[31] = 9;
	CHECK_EQ(gpunic_link_send(a, buf, 60), 0);
	CHECK_EQ(gpunic_link_recv(learn, buf, sizeof(buf), &len), 0);
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), 0);
	CHECK_MEM(mac, peer, 6);
	/* a runt frame teaches nothing and breaks nothing */
	gpunic_link_learn_watch(learn, IP4(10, 0, 0, 5));
	CHECK_EQ(gpunic_link_send(a, f, 14), 0);
	CHECK_EQ(gpunic_link_recv(learn, buf, sizeof(buf), &len), 0);
	CHECK_EQ(gpunic_link_learn_mac(learn, mac), EAGAIN);
	gpunic_link_close(learn);
	gpunic_link_close(a);
}
