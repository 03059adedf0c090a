// SPDX-License-Identifier: MIT
/*
 * gpunic pingpong: gpunic's side of rdma-core's ibv_uc_pingpong / ibv_rc_pingpong.
 *
 * Same flags where they make sense, same out-of-band exchange, same traffic, same summary, so
 * that either role can face the rdma-core tool on a real RoCE stack (an rxe guest on the dgram
 * link, a ConnectX over the udp link):
 *  - exchange over TCP (port -p, 18515): the client writes "%04x:%06x:%06x:%s" (LID, QPN, PSN,
 *    wire GID; 52 bytes with the NUL), the server reads it, brings its QP to RTS, writes its own,
 *    and the client ends with "done" (5 bytes with the NUL). LID is 0 on RoCE; our GID is
 *    ::ffff:<--ip>, and the peer's GID must be an IPv4-mapped one (the tools' -g 1 on rxe).
 *  - every receive WQE points at the one buffer of -s bytes, which is also what is sent; the
 *    client sends first, then each side alternates: a send is posted when the previous send and
 *    the previous receive have both completed, -n times each way.
 *  - --chk: the client sets byte 0 of every page to 0 (rdma-core writes i / page_size %
 *    sizeof(char)) over a buffer of 0x7b; the tools check those bytes on the server. gpunic checks
 *    every received message in full against that pattern, on both roles.
 *  - the summary: "N bytes in X seconds = Y Mbit/sec", "N iters in X seconds = Y usec/iter".
 *
 * The helpers of pingpong.h (the endpoint, the learning link, TCP) live here too; `gpunic
 * immtest` uses them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pingpong.h"

/* ---------------------------------------------------------------- small parsers */

uint64_t pp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool pp_parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*ip = ntohl(a.s_addr);
	return *ip != 0;
}

bool pp_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xff)
			return false;
		mac[i] = (uint8_t)v[i];
	}
	return true;
}

bool pp_parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return !errno && end != s && !*end && *s != '-' && *v <= max;
}

/* ---------------------------------------------------------------- GIDs */

void pp_gid_from_ip(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	gid[12] = (uint8_t)(ip >> 24);
	gid[13] = (uint8_t)(ip >> 16);
	gid[14] = (uint8_t)(ip >> 8);
	gid[15] = (uint8_t)ip;
}

void pp_gid_to_wire(const uint8_t gid[16], char out[PP_GID_HEX + 1])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", gid[i]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool pp_gid_from_wire(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 16; i++) {
		int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		gid[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

bool pp_gid_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)))
		return false;
	*ip = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 | (uint32_t)gid[14] << 8 | gid[15];
	return *ip != 0;
}

void pp_gid_str(const uint8_t gid[16], char *out, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* ---------------------------------------------------------------- the learning link */

enum {
	ETH_HDR = 14,
	ETYPE_IPV4 = 0x0800,
	ETYPE_ARP = 0x0806,
	ARP_LEN = 28,
	ARP_FRAME = 60,	/* minimum Ethernet frame without FCS */
};

struct pp_learn {
	struct gpunic_link link;	/* first: the NIC sees this one */
	struct gpunic_link *inner;
	uint32_t peer_ip;
	uint8_t peer_mac[6];
	bool known;
};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Note the MAC behind the peer's IPv4 address: an ARP frame it sent, or an IPv4 frame from it. */
static void learn_note(struct pp_learn *w, const uint8_t *f, size_t len)
{
	unsigned type;

	if (!w->peer_ip || len < ETH_HDR)
		return;
	type = (unsigned)f[12] << 8 | f[13];
	if (type == ETYPE_ARP && len >= ETH_HDR + ARP_LEN && rd32(f + ETH_HDR + 14) == w->peer_ip) {
		memcpy(w->peer_mac, f + ETH_HDR + 8, 6);
		w->known = true;
	} else if (type == ETYPE_IPV4 && len >= ETH_HDR + 20 &&
		   rd32(f + ETH_HDR + 12) == w->peer_ip) {
		memcpy(w->peer_mac, f + 6, 6);
		w->known = true;
	}
}

static int learn_send(struct gpunic_link *link, const uint8_t *frame, size_t len)
{
	struct pp_learn *w = (struct pp_learn *)link;
	int ret = gpunic_link_send(w->inner, frame, len);

	if (!ret) {
		link->stats.tx_frames++;
		link->stats.tx_bytes += len;
	}
	return ret;
}

static int learn_recv(struct gpunic_link *link, uint8_t *buf, size_t cap, size_t *len)
{
	struct pp_learn *w = (struct pp_learn *)link;
	int ret = gpunic_link_recv(w->inner, buf, cap, len);

	if (ret)
		return ret;
	link->stats.rx_frames++;
	link->stats.rx_bytes += *len;
	learn_note(w, buf, *len);
	return 0;
}

static void learn_close(struct gpunic_link *link)
{
	struct pp_learn *w = (struct pp_learn *)link;

	gpunic_link_close(w->inner);
	free(w);
}

static const struct gpunic_link_ops learn_ops = {
	.name = "learn",
	.send = learn_send,
	.recv = learn_recv,
	.close = learn_close,
};

static struct pp_learn *learn_open(struct gpunic_link *inner)
{
	struct pp_learn *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->link.ops = &learn_ops;
	w->link.caps = inner->caps;
	w->link.mtu = inner->mtu;
	w->inner = inner;
	return w;
}

/* A broadcast "who has @tip, tell @sip" (RFC 826), straight onto the wire. */
static int learn_arp_request(struct pp_learn *w, const uint8_t smac[6], uint32_t sip, uint32_t tip)
{
	uint8_t f[ARP_FRAME] = { 0 };
	uint8_t *a = f + ETH_HDR;

	memset(f, 0xff, 6);
	memcpy(f + 6, smac, 6);
	f[12] = ETYPE_ARP >> 8;
	f[13] = ETYPE_ARP & 0xff;
	a[1] = 1;		/* Ethernet */
	a[2] = ETYPE_IPV4 >> 8;
	a[3] = ETYPE_IPV4 & 0xff;
	a[4] = 6;
	a[5] = 4;
	a[7] = 1;		/* request */
	memcpy(a + 8, smac, 6);
	wr32(a + 14, sip);
	wr32(a + 24, tip);
	return gpunic_link_send(w->inner, f, sizeof(f));
}

/* ---------------------------------------------------------------- the endpoint */

static void pp_err(const struct pp_end *e, const char *fmt, const char *what, int err)
{
	fprintf(stderr, "gpunic %s: ", e->o->cmd);
	fprintf(stderr, fmt, what);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

int pp_end_open(struct pp_end *e, const struct pp_net_opts *o, const struct pp_qp_caps *caps)
{
	struct gpunic_nic_attr na = { .ip = o->ip, .executor = GPUNIC_EXECUTOR_CPU };
	struct gpunic_qp_init_attr ia = {
		.qp_type = caps->type,
		.max_send_wr = caps->max_send_wr,
		.max_recv_wr = caps->max_recv_wr,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = 0,
		.handler_mode = GPUNIC_HANDLER_AUTO,
	};
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_INIT };
	struct gpunic_link *inner;
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	memset(e, 0, sizeof(*e));
	e->o = o;
	if (o->timeout_s)
		e->deadline_ns = pp_now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
	inner = gpunic_link_open_spec(o->link);
	if (!inner) {
		ret = errno;
		pp_err(e, "cannot open link %s", o->link, ret);
		return ret;
	}
	e->learn = learn_open(inner);
	if (!e->learn) {
		gpunic_link_close(inner);
		return ENOMEM;
	}
	na.link = &e->learn->link;
	if (o->have_mac) {
		memcpy(na.mac, o->mac, 6);
	} else {
		na.mac[0] = 0x02;
		wr32(na.mac + 2, o->ip);
	}
	e->nic = gpunic_nic_open(&na);
	if (!e->nic) {
		ret = errno;
		gpunic_link_close(&e->learn->link);
		e->learn = NULL;
		pp_err(e, "cannot open the NIC on %s", o->link, ret);
		return ret;
	}
	if (o->capture) {
		ret = gpunic_nic_capture(e->nic, o->capture);
		if (ret) {
			pp_err(e, "cannot capture to %s", o->capture, ret);
			return ret;
		}
	}
	e->buf_len = caps->buf_len;
	if (posix_memalign((void **)&e->buf, page > 0 ? (size_t)page : 4096, e->buf_len ?
			   e->buf_len : 1))
		return ENOMEM;
	memset(e->buf, 0, e->buf_len);
	e->pd = gpunic_pd_alloc(e->nic);
	e->scq = gpunic_cq_create(e->nic, caps->max_send_wr + 1);
	e->rcq = gpunic_cq_create(e->nic, caps->max_recv_wr + 1);
	if (!e->pd || !e->scq || !e->rcq) {
		ret = errno;
		pp_err(e, "cannot create the %s", "PD and CQs", ret);
		return ret;
	}
	e->mr = gpunic_mr_reg(e->pd, e->buf, e->buf_len, caps->access | GPUNIC_ACCESS_LOCAL_WRITE);
	if (!e->mr) {
		ret = errno;
		pp_err(e, "cannot register the %s", "buffer", ret);
		return ret;
	}
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = gpunic_qp_create(e->pd, &ia);
	if (!e->qp) {
		ret = errno;
		pp_err(e, "cannot create the %s", "QP", ret);
		return ret;
	}
	at.qp_access_flags = caps->access & ~(unsigned)GPUNIC_ACCESS_LOCAL_WRITE;
	ret = gpunic_qp_modify(e->qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS);
	if (ret) {
		pp_err(e, "QP to INIT: %s", gpunic_qp_last_error(e->qp), ret);
		return ret;
	}
	/* Receives may be posted from INIT on, as with ibverbs. */
	ret = gpunic_qp_export(e->qp, &e->dq);
	if (!ret && gpunic_dev_qp_check(&e->dq))
		ret = EINVAL;
	if (ret)
		pp_err(e, "cannot export the %s", "QP", ret);
	return ret;
}

int pp_end_ms_left(const struct pp_end *e, int dflt)
{
	uint64_t now = pp_now_ns();

	if (!e->deadline_ns)
		return dflt;
	if (now >= e->deadline_ns)
		return 1;
	return (int)((e->deadline_ns - now) / 1000000ull) + 1;
}

int pp_end_progress(struct pp_end *e)
{
	struct timespec nap = { 0, 20000 };

	if (gpunic_nic_poll(e->nic, 64) > 0) {
		e->idle = 0;
		return 0;
	}
	if (e->deadline_ns && pp_now_ns() > e->deadline_ns)
		return ETIMEDOUT;
	e->idle++;
	if (e->idle > 400)
		nanosleep(&nap, NULL);
	else if (e->idle > 200)
		sched_yield();
	return 0;
}

/* The peer's MAC: given, learned already, or asked for with ARP (every 200 ms, 10 s at most). */
static int pp_end_resolve(struct pp_end *e, uint32_t ip, uint8_t mac[6])
{
	uint64_t next = 0, end = pp_now_ns() + 10000000000ull;
	uint8_t smac[6] = { 0x02, 0 };
	int ret;

	if (e->o->have_peer_mac) {
		memcpy(mac, e->o->peer_mac, 6);
		return 0;
	}
	if (!(e->learn->inner->caps & GPUNIC_LINK_CAP_SHARED_WIRE)) {
		memset(mac, 0, 6);	/* the kernel builds L2 */
		return 0;
	}
	if (e->learn->peer_ip != ip) {
		e->learn->peer_ip = ip;
		e->learn->known = false;
	}
	if (e->o->have_mac)
		memcpy(smac, e->o->mac, 6);
	else
		wr32(smac + 2, e->o->ip);
	while (!e->learn->known) {
		uint64_t now = pp_now_ns();

		if (now > end) {
			pp_err(e, "no ARP reply from the peer (%s); give --peer-mac", "10 s",
			       0);
			return EHOSTUNREACH;
		}
		if (now >= next) {
			learn_arp_request(e->learn, smac, e->o->ip, ip);
			next = now + 200000000ull;
		}
		ret = pp_end_progress(e);
		if (ret) {
			pp_err(e, "waiting for the peer's %s", "ARP reply", ret);
			return ret;
		}
	}
	memcpy(mac, e->learn->peer_mac, 6);
	return 0;
}

int pp_end_connect(struct pp_end *e, const struct pp_remote *r, enum gpunic_mtu mtu,
		   uint32_t my_psn)
{
	struct gpunic_qp_attr at = { 0 };
	bool rc = e->qp->qp_type == GPUNIC_QPT_RC;
	unsigned mask;
	int ret;

	ret = pp_end_resolve(e, r->ip, at.remote_mac);
	if (ret)
		return ret;
	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = mtu;
	at.dest_qp_num = r->qpn;
	at.rq_psn = r->psn;
	at.remote_ip = r->ip;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	ret = gpunic_qp_modify(e->qp, &at, mask);
	if (ret) {
		pp_err(e, "QP to RTR: %s", gpunic_qp_last_error(e->qp), ret);
		return ret;
	}
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = my_psn;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	ret = gpunic_qp_modify(e->qp, &at, mask);
	if (ret)
		pp_err(e, "QP to RTS: %s", gpunic_qp_last_error(e->qp), ret);
	return ret;
}

int pp_end_wait_cqe(struct pp_end *e, bool send, struct gpunic_dev_cqe *cqe)
{
	int ret;

	for (;;) {
		if (send ? gpunic_dev_poll_scq(&e->dq, cqe) : gpunic_dev_poll_rcq(&e->dq, cqe))
			return 0;
		ret = pp_end_progress(e);
		if (ret)
			return ret;
	}
}

void pp_end_dump(struct pp_end *e)
{
	struct gpunic_nic_counters nc;
	struct gpunic_qp_counters qc;

	if (!e->nic || gpunic_nic_query_counters(e->nic, &nc))
		return;
	fprintf(stderr, "gpunic %s: nic rx %" PRIu64 " tx %" PRIu64 " arp replies %" PRIu64,
		e->o->cmd, nc.rx_frames, nc.tx_frames, nc.arp_replies);
	for (int i = 0; i < GPUNIC_DROP_MAX; i++)
		if (nc.drops[i])
			fprintf(stderr, " drop:%s=%" PRIu64, gpunic_drop_reason_name(i),
				nc.drops[i]);
	for (int i = 0; i < GPUNIC_WIRE_ERR_MAX; i++)
		if (nc.wire_errs[i])
			fprintf(stderr, " wire:%s=%" PRIu64, gpunic_wire_err_name(i),
				nc.wire_errs[i]);
	if (e->qp && !gpunic_qp_query_counters(e->qp, &qc))
		fprintf(stderr,
			" | qp %s tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
			" acks %" PRIu64 "/%" PRIu64 " naks %" PRIu64 "/%" PRIu64
			" rnr %" PRIu64 "/%" PRIu64,
			gpunic_qp_state_name(e->qp->state), qc.tx_packets, qc.rx_packets,
			qc.retransmits, qc.timeouts, qc.acks_sent, qc.acks_received, qc.naks_sent,
			qc.naks_received, qc.rnr_naks_sent, qc.rnr_naks_received);
	fputc('\n', stderr);
}

void pp_end_close(struct pp_end *e)
{
	if (e->nic) {
		/* Let the last frames (an RC ACK, a final send) leave before the NIC goes. */
		for (int i = 0; i < 64; i++)
			gpunic_nic_poll(e->nic, 64);
		gpunic_nic_close(e->nic);
	} else if (e->learn) {
		gpunic_link_close(&e->learn->link);
	}
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* ---------------------------------------------------------------- TCP */

int pp_tcp_listen(const char *bind_addr, uint16_t port, int *lfd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, one = 1, ret;

	if (!bind_addr)
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1)
		return EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		ret = errno;
		close(fd);
		return ret;
	}
	*lfd = fd;
	return 0;
}

/* Wait for @events on @fd, running @e's engine meanwhile (1 ms slices). */
static int wait_fd(struct pp_end *e, int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t end = pp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
	int n;

	for (;;) {
		n = poll(&p, 1, e ? 1 : timeout_ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return errno;
		if (e)
			while (gpunic_nic_poll(e->nic, 64) > 0)
				;
		if (timeout_ms >= 0 && pp_now_ns() >= end)
			return ETIMEDOUT;
	}
}

int pp_tcp_accept(struct pp_end *e, int lfd, int timeout_ms, int *fd)
{
	int ret = wait_fd(e, lfd, POLLIN, timeout_ms), c;

	if (ret)
		return ret;
	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return errno;
	*fd = c;
	return 0;
}

int pp_tcp_connect(struct pp_end *e, const char *host, uint16_t port, int timeout_ms, int *fd)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	uint64_t end = pp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char service[8];
	int ret = ECONNREFUSED, s;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res))
		return EHOSTUNREACH;
	for (;;) {
		for (t = res; t; t = t->ai_next) {
			s = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
			if (s < 0) {
				ret = errno;
				continue;
			}
			if (!connect(s, t->ai_addr, t->ai_addrlen)) {
				freeaddrinfo(res);
				*fd = s;
				return 0;
			}
			ret = errno;
			close(s);
		}
		if (pp_now_ns() >= end)
			break;
		for (int i = 0; i < 100; i++) {
			if (e)
				gpunic_nic_poll(e->nic, 64);
			usleep(1000);
		}
	}
	freeaddrinfo(res);
	return ret;
}

int pp_read_some(struct pp_end *e, int fd, void *buf, size_t len, int timeout_ms, size_t *got)
{
	uint64_t end = pp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	size_t off = 0;
	ssize_t n;
	int ret;

	while (off < len) {
		uint64_t now = pp_now_ns();

		if (now >= end) {
			*got = off;
			return ETIMEDOUT;
		}
		ret = wait_fd(e, fd, POLLIN, (int)((end - now) / 1000000ull) + 1);
		if (ret)
			continue;
		n = read(fd, (uint8_t *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*got = off;
			return errno;
		}
		if (!n)
			break;
		off += (size_t)n;
	}
	*got = off;
	return 0;
}

int pp_read_full(struct pp_end *e, int fd, void *buf, size_t len, int timeout_ms)
{
	size_t got;
	int ret = pp_read_some(e, fd, buf, len, timeout_ms, &got);

	if (ret)
		return ret;
	return got == len ? 0 : EPIPE;
}

int pp_write_full(int fd, const void *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send(fd, (const uint8_t *)buf + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		off += (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------------- the command */

#define PP_MSG_LEN (sizeof("0000:000000:000000:") - 1 + PP_GID_HEX + 1)
#define PP_DONE "done"
#define PP_CHK_FILL 0x7b

struct pingpong_opts {
	struct pp_net_opts net;
	const char *server;
	const char *bind_addr;
	uint16_t port;
	uint32_t size;
	uint32_t iters;
	uint32_t rx_depth;
	enum gpunic_mtu mtu;
	enum gpunic_qp_type type;
	bool chk;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic pingpong --link SPEC --ip A.B.C.D [options]          (server)\n"
		"       gpunic pingpong --link SPEC --ip A.B.C.D [options] HOST     (client)\n"
		"\n"
		"gpunic's side of rdma-core's ibv_rc_pingpong / ibv_uc_pingpong: same out-of-band\n"
		"exchange (TCP, LID:QPN:PSN:GID), same traffic, same summary. Our GID is\n"
		"::ffff:<--ip>; run the rdma-core tool with the GID index of its RoCEv2 IPv4 GID.\n"
		"\n"
		"  -p, --port=PORT        listen on / connect to TCP PORT (default 18515)\n"
		"  -s, --size=SIZE        size of message to exchange (default 4096)\n"
		"  -m, --mtu=SIZE         path MTU: 256, 512, 1024, 2048, 4096 (default 1024)\n"
		"  -r, --rx-depth=DEP     receives posted at a time (default 500)\n"
		"  -n, --iters=ITERS      number of exchanges (default 1000)\n"
		"  -l, --sl=SL            service level (accepted, not used on RoCE)\n"
		"  -g, --gid-idx=IDX      accepted: gpunic has the one GID ::ffff:<--ip>\n"
		"  -c, --chk              validate every received buffer\n"
		"      --rc | --uc        transport (default RC)\n"
		"      --link=SPEC        udp:IP[:PORT], dgram:LIP:LPORT,RIP:RPORT, shm:NAME,a|b\n"
		"      --ip=A.B.C.D       gpunic's IPv4 address\n"
		"      --mac=MAC          gpunic's MAC (default 02:00:<ip>)\n"
		"      --peer-mac=MAC     the peer's MAC (default: learned, ARP on a shared wire)\n"
		"      --bind=A.B.C.D     the server's TCP listen address (default any)\n"
		"      --capture=FILE     pcap of every frame the NIC sends and receives\n"
		"  -t, --timeout=SEC      give up after SEC seconds (default 0: never)\n"
		"  -h, --help             show this help\n"
		"\n"
		"Exit status: 0 done, 1 failed (or --chk found bad data), 2 bad usage.\n");
}

static int parse_mtu(unsigned long v, enum gpunic_mtu *mtu)
{
	for (int m = GPUNIC_MTU_256; m <= GPUNIC_MTU_4096; m++)
		if (gpunic_mtu_bytes((enum gpunic_mtu)m) == v) {
			*mtu = (enum gpunic_mtu)m;
			return 0;
		}
	return EINVAL;
}

int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net, enum gpunic_qp_type *type,
		     const char **bind_addr)
{
	switch (c) {
	case PP_OPT_RC:
		*type = GPUNIC_QPT_RC;
		return 1;
	case PP_OPT_UC:
		*type = GPUNIC_QPT_UC;
		return 1;
	case PP_OPT_LINK:
		net->link = arg;
		return 1;
	case PP_OPT_IP:
		return pp_parse_ip(arg, &net->ip);
	case PP_OPT_MAC:
		net->have_mac = true;
		return pp_parse_mac(arg, net->mac);
	case PP_OPT_PEER_MAC:
		net->have_peer_mac = true;
		return pp_parse_mac(arg, net->peer_mac);
	case PP_OPT_BIND:
		*bind_addr = arg;
		return 1;
	case PP_OPT_CAPTURE:
		net->capture = arg;
		return 1;
	default:
		return -1;
	}
}

int pp_usage_error(const char *cmd, int c, bool bad_value, char **argv)
{
	if (bad_value)
		fprintf(stderr, "gpunic %s: bad value '%s' for %s\n", cmd, optarg, argv[optind - 1]);
	else if (c == ':')
		fprintf(stderr, "gpunic %s: %s needs a value\n", cmd, argv[optind - 1]);
	else
		fprintf(stderr, "gpunic %s: unknown option %s\n", cmd, argv[optind - 1]);
	return 2;
}

int pp_finish_args(const char *cmd, int argc, char **argv, const char **server,
		   const struct pp_net_opts *net)
{
	if (optind == argc - 1) {
		*server = argv[optind];
	} else if (optind < argc) {
		fprintf(stderr, "gpunic %s: one server host at most\n", cmd);
		return 2;
	}
	if (!net->link || !net->ip) {
		fprintf(stderr, "gpunic %s: --link and --ip are required\n", cmd);
		return 2;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct pingpong_opts *o)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "sl", required_argument, NULL, 'l' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "chk", no_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		PP_NET_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->net.cmd = "pingpong";
	o->port = 18515;
	o->size = 4096;
	o->iters = 1000;
	o->rx_depth = 500;
	o->mtu = GPUNIC_MTU_1024;
	o->type = GPUNIC_QPT_RC;
	while ((c = getopt_long(argc, argv, ":p:s:m:r:n:l:g:ct:h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'p':
			ok = pp_parse_uint(optarg, 65535, &v) && v;
			o->port = (uint16_t)v;
			break;
		case 's':
			ok = pp_parse_uint(optarg, 1u << 30, &v) && v;
			o->size = (uint32_t)v;
			break;
		case 'm':
			ok = pp_parse_uint(optarg, 4096, &v) && !parse_mtu(v, &o->mtu);
			break;
		case 'r':
			ok = pp_parse_uint(optarg, 4096, &v) && v >= 2;
			o->rx_depth = (uint32_t)v;
			break;
		case 'n':
			ok = pp_parse_uint(optarg, 1u << 30, &v) && v;
			o->iters = (uint32_t)v;
			break;
		case 'l':
			ok = pp_parse_uint(optarg, 15, &v);
			break;
		case 'g':
			ok = pp_parse_uint(optarg, 255, &v);
			break;
		case 'c':
			o->chk = true;
			break;
		case 't':
			ok = pp_parse_uint(optarg, 86400, &v);
			o->net.timeout_s = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			switch (pp_parse_net_opt(c, optarg, &o->net, &o->type, &o->bind_addr)) {
			case 1:
				break;
			case 0:
				ok = false;
				break;
			default:
				return pp_usage_error("pingpong", c, false, argv);
			}
		}
		if (!ok)
			return pp_usage_error("pingpong", c, true, argv);
	}
	return pp_finish_args("pingpong", argc, argv, &o->server, &o->net);
}

static void format_dest(char msg[PP_MSG_LEN], uint32_t qpn, uint32_t psn, const uint8_t gid[16])
{
	char wgid[PP_GID_HEX + 1];

	pp_gid_to_wire(gid, wgid);
	snprintf(msg, PP_MSG_LEN, "%04x:%06x:%06x:%s", 0u, qpn, psn, wgid);
}

static int parse_dest(const char *cmd, char msg[PP_MSG_LEN], struct pp_remote *r)
{
	unsigned lid, qpn, psn;
	char wgid[PP_GID_HEX + 1], gs[64];

	msg[PP_MSG_LEN - 1] = '\0';
	if (sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, wgid) != 4 ||
	    strlen(wgid) != PP_GID_HEX || !pp_gid_from_wire(wgid, r->gid)) {
		fprintf(stderr, "gpunic %s: malformed peer message '%s'\n", cmd, msg);
		return EPROTO;
	}
	r->qpn = qpn & 0xffffff;
	r->psn = psn & 0xffffff;
	if (!pp_gid_ipv4(r->gid, &r->ip)) {
		pp_gid_str(r->gid, gs, sizeof(gs));
		fprintf(stderr,
			"gpunic %s: the peer's GID %s is not an IPv4-mapped RoCEv2 GID "
			"(give the tool the GID index of its ::ffff:IPv4 GID, e.g. -g 1 on rxe)\n",
			cmd, gs);
		return EPROTO;
	}
	return 0;
}

static void print_dest(const char *which, uint32_t qpn, uint32_t psn, const uint8_t gid[16])
{
	char gs[64];

	pp_gid_str(gid, gs, sizeof(gs));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", which, 0u, qpn, psn, gs);
	fflush(stdout);
}

/* The client's half of the exchange: write ours, read theirs, write "done". */
static int exchange_client(struct pingpong_opts *o, struct pp_end *e, const char *mine,
			   struct pp_remote *r)
{
	char msg[PP_MSG_LEN];
	int fd, ret;

	ret = pp_tcp_connect(e, o->server, o->port, pp_end_ms_left(e, 30000), &fd);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't connect to %s:%u: %s\n", o->server,
			o->port, strerror(ret));
		return ret;
	}
	ret = pp_write_full(fd, mine, PP_MSG_LEN);
	if (!ret)
		ret = pp_read_full(e, fd, msg, PP_MSG_LEN, pp_end_ms_left(e, 60000));
	if (!ret)
		ret = pp_write_full(fd, PP_DONE, sizeof(PP_DONE));
	close(fd);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't read/write remote address: %s\n",
			strerror(ret));
		return ret;
	}
	return parse_dest("pingpong", msg, r);
}

/* The server's half: read theirs, connect the QP, write ours, read "done". */
static int exchange_server(struct pingpong_opts *o, struct pp_end *e, const char *mine,
			   uint32_t my_psn, struct pp_remote *r)
{
	char msg[PP_MSG_LEN];
	size_t got;
	int lfd, fd = -1, ret;

	ret = pp_tcp_listen(o->bind_addr, o->port, &lfd);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't listen to port %u: %s\n", o->port,
			strerror(ret));
		return ret;
	}
	ret = pp_tcp_accept(e, lfd, pp_end_ms_left(e, -1), &fd);
	close(lfd);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: accept: %s\n", strerror(ret));
		return ret;
	}
	ret = pp_read_full(e, fd, msg, PP_MSG_LEN, pp_end_ms_left(e, 60000));
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't read remote address: %s\n",
			strerror(ret));
		close(fd);
		return ret;
	}
	ret = parse_dest("pingpong", msg, r);
	if (!ret)
		ret = pp_end_connect(e, r, o->mtu, my_psn);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't connect to remote QP\n");
		close(fd);
		return ret;
	}
	ret = pp_write_full(fd, mine, PP_MSG_LEN);
	if (!ret)
		ret = pp_read_some(e, fd, msg, sizeof(PP_DONE), pp_end_ms_left(e, 60000), &got);
	close(fd);
	if (ret || got != sizeof(PP_DONE) || memcmp(msg, PP_DONE, sizeof(PP_DONE))) {
		fprintf(stderr, "gpunic pingpong: couldn't send/recv local address\n");
		return ret ? ret : EPROTO;
	}
	return 0;
}

static int post_recvs(struct pp_end *e, uint32_t size, uint32_t n, uint32_t *posted)
{
	struct gpunic_dev_sge sge = {
		.addr = (uint64_t)(uintptr_t)e->buf, .length = size, .lkey = e->mr->lkey,
	};

	for (uint32_t i = 0; i < n; i++) {
		if (gpunic_dev_post_recv(&e->dq, &sge, 1) < 0)
			return ENOMEM;
		(*posted)++;
	}
	return 0;
}

static int post_send(struct pp_end *e, uint32_t size)
{
	int64_t r = gpunic_dev_post_send_sge(&e->dq, MLX5_OPCODE_SEND, GPUNIC_DEV_SEND_SIGNALED,
					     (uint64_t)(uintptr_t)e->buf, size, e->mr->lkey, 0, 0,
					     0);

	if (r < 0 || gpunic_dev_submit(&e->dq))
		return r < 0 ? (int)-r : EIO;
	return 0;
}

/* rdma-core's pattern: 0x7b, with byte 0 of every page set to page / page % sizeof(char). */
static void chk_fill(uint8_t *buf, uint32_t size, long page)
{
	memset(buf, PP_CHK_FILL, size);
	for (uint32_t i = 0; i < size; i += (uint32_t)page)
		buf[i] = (uint8_t)(i / page % sizeof(char));
}

static bool chk_verify(const uint8_t *buf, uint32_t size, long page, uint32_t iter)
{
	for (uint32_t i = 0; i < size; i++) {
		uint8_t want = i % page ? PP_CHK_FILL : (uint8_t)(i / page % sizeof(char));

		if (buf[i] != want) {
			fprintf(stderr,
				"gpunic pingpong: invalid data in page %ld: receive %u, byte %u is "
				"0x%02x, expected 0x%02x\n",
				(long)(i / page), iter, i, buf[i], want);
			return false;
		}
	}
	return true;
}

enum { PP_RECV = 1, PP_SEND = 2 };

static int run_loop(struct pingpong_opts *o, struct pp_end *e, uint32_t *routs)
{
	struct gpunic_dev_cqe cqe;
	struct timeval start, end;
	uint32_t scnt = 0, rcnt = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned pending = PP_RECV;
	int ret;

	if (o->server) {
		if (o->chk)
			chk_fill(e->buf, o->size, page);
		ret = post_send(e, o->size);
		if (ret) {
			fprintf(stderr, "gpunic pingpong: couldn't post send\n");
			return ret;
		}
		pending |= PP_SEND;
	}
	gettimeofday(&start, NULL);
	while (rcnt < o->iters || scnt < o->iters) {
		unsigned done = 0;

		if (gpunic_dev_poll_scq(&e->dq, &cqe)) {
			done = PP_SEND;
		} else if (gpunic_dev_poll_rcq(&e->dq, &cqe)) {
			done = PP_RECV;
		} else {
			ret = pp_end_progress(e);
			if (ret) {
				fprintf(stderr,
					"gpunic pingpong: timed out after %u sends, %u receives\n",
					scnt, rcnt);
				return ret;
			}
			continue;
		}
		if (gpunic_dev_cqe_is_error(&cqe)) {
			fprintf(stderr,
				"gpunic pingpong: failed status: %s error CQE, syndrome 0x%02x "
				"vendor 0x%02x\n",
				done == PP_SEND ? "send" : "receive", cqe.syndrome,
				cqe.vendor_syndrome);
			return EIO;
		}
		if (done == PP_SEND) {
			scnt++;
		} else {
			if (cqe.opcode != MLX5_CQE_RESP_SEND || cqe.byte_cnt != o->size) {
				fprintf(stderr,
					"gpunic pingpong: receive %u: CQE opcode %u, %u bytes "
					"(expected a SEND of %u)\n",
					rcnt, cqe.opcode, cqe.byte_cnt, o->size);
				return EPROTO;
			}
			if (o->chk && !chk_verify(e->buf, o->size, page, rcnt))
				return EPROTO;
			if (--*routs <= 1) {
				ret = post_recvs(e, o->size, o->rx_depth - *routs, routs);
				if (ret) {
					fprintf(stderr,
						"gpunic pingpong: couldn't post receive (%u)\n",
						*routs);
					return ret;
				}
			}
			rcnt++;
		}
		pending &= ~done;
		if (scnt < o->iters && !pending) {
			ret = post_send(e, o->size);
			if (ret) {
				fprintf(stderr, "gpunic pingpong: couldn't post send\n");
				return ret;
			}
			pending = PP_RECV | PP_SEND;
		}
	}
	gettimeofday(&end, NULL);
	{
		double usec = (double)(end.tv_sec - start.tv_sec) * 1e6 +
			      (double)(end.tv_usec - start.tv_usec);
		long long bytes = (long long)o->size * o->iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
		       bytes * 8. / usec);
		printf("%u iters in %.2f seconds = %.2f usec/iter\n", o->iters, usec / 1e6,
		       usec / o->iters);
	}
	return 0;
}

int cmd_pingpong(int argc, char **argv)
{
	struct pingpong_opts o;
	struct pp_qp_caps caps;
	struct pp_end e = { 0 };
	struct pp_remote r;
	uint8_t gid[16];
	char mine[PP_MSG_LEN];
	uint32_t my_psn, routs = 0;
	int ret;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret;
	caps = (struct pp_qp_caps){
		.type = o.type,
		.buf_len = o.size,
		.access = GPUNIC_ACCESS_LOCAL_WRITE,
		.max_send_wr = 16,
		.max_recv_wr = o.rx_depth,
	};
	ret = pp_end_open(&e, &o.net, &caps);
	if (ret)
		goto out;
	/* The tools start from a buffer of 0x7b. */
	memset(e.buf, PP_CHK_FILL, o.size);
	ret = post_recvs(&e, o.size, o.rx_depth, &routs);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't post receive (%u)\n", routs);
		goto out;
	}
	srand48((long)getpid() * (long)time(NULL));
	my_psn = (uint32_t)lrand48() & 0xffffff;
	pp_gid_from_ip(o.net.ip, gid);
	format_dest(mine, e.qp->qp_num, my_psn, gid);
	print_dest("local address: ", e.qp->qp_num, my_psn, gid);
	if (o.server) {
		ret = exchange_client(&o, &e, mine, &r);
		if (!ret)
			ret = pp_end_connect(&e, &r, o.mtu, my_psn);
	} else {
		ret = exchange_server(&o, &e, mine, my_psn, &r);
	}
	if (ret)
		goto out;
	print_dest("remote address:", r.qpn, r.psn, r.gid);
	ret = run_loop(&o, &e, &routs);
out:
	if (ret)
		pp_end_dump(&e);
	pp_end_close(&e);
	return ret ? 1 : 0;
}
