// SPDX-License-Identifier: MIT
/*
 * The endpoint: link spec -> NIC -> PD, CQs, QP, buffer -> connected QP. The pieces are public on
 * their own too (gpunic_ep_link_open, gpunic_ep_qp_init, gpunic_ep_qp_connect), for programs that
 * place their queues and buffers themselves (the loopback experiment, gpunic perf).
 *
 * struct gpunic_ep runs its NIC inline, in the caller's thread (run-to-completion, as the
 * sensor), with a back-off when idle so that a TCG guest on the same 2-core machine keeps its
 * CPU; it wraps the link in the learning link so that the peer's MAC comes from the wire.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpunic/endpoint.h"

#define EP_ARP_EVERY_NS 200000000ull
#define EP_ARP_GIVE_UP_NS 10000000000ull

static void ep_err(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ep_err(const char *who, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who ? who : "gpunic");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---------------------------------------------------------------- links and QPs */

/* A udp link whose port is taken: which port, and who holds it where that can be seen. */
static void udp_in_use_error(const char *who, const char *spec)
{
	uint32_t ip = 0;
	uint16_t port = GPUNIC_ROCE_UDP_PORT;
	char quad[16], holder[128];

	if (gpunic_parse_ipv4_port(spec + 4, &ip, &port)) {
		ep_err(who, "link '%s': %s", spec, strerror(EADDRINUSE));
		return;
	}
	gpunic_ipv4_str(ip, quad);
	if (gpunic_ep_udp_holder(ip, port, holder, sizeof(holder)))
		ep_err(who, "link '%s': UDP %s:%u is in use by another socket", spec, quad, port);
	else
		ep_err(who, "link '%s': UDP %s:%u is in use by %s", spec, quad, port, holder);
}

static void link_open_error(const char *who, const char *spec, int err)
{
	if (err == EADDRINUSE && strncmp(spec, "udp:", 4) == 0)
		udp_in_use_error(who, spec);
	else if (err == EEXIST)
		ep_err(who, "link '%s': the shm cable exists already (another run, or a stale one: "
		       "remove /dev/shm/%.*s)", spec, (int)strcspn(spec + 4 + (spec[4] == '/'), ","),
		       spec + 4 + (spec[4] == '/'));
	else if (strncmp(spec, "shm:", 4) == 0 && !strstr(spec, ",create") && err == ENOENT)
		ep_err(who, "link '%s': no such cable (start the side that creates it first)", spec);
	else if (err == EINVAL)
		ep_err(who, "link '%s': not a valid link (shm:NAME,a|b[,create], udp:IP[:PORT], "
		       "dgram:LOCALIP:PORT,REMOTEIP:PORT, packet:IFNAME[,ip=IP], "
		       "xdp:IFNAME[:QUEUE][,ip=IP])", spec);
	else
		ep_err(who, "link '%s': %s", spec, strerror(err));
}

/* Can a UDP socket bind @ip:@port (host order) now? */
static bool udp_port_free(uint32_t ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(ip) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

int gpunic_ep_loopback_aside(uint32_t *ip, uint16_t port)
{
	for (uint32_t a = 0x7f000002u; a < 0x7f0000ffu; a++) {
		if (a == *ip || !udp_port_free(a, port))
			continue;
		*ip = a;
		return 0;
	}
	return EADDRINUSE;
}

void gpunic_ep_addr_of(struct gpunic_ep_addr *a, const struct gpunic_link *link, uint32_t ip)
{
	uint16_t port = 0;

	memset(a, 0, sizeof(*a));
	/* a link that bound an address (a kernel socket) is the NIC's address and source port;
	 * on the others the NIC listens on RoCEv2's port, and says so to a peer (the exchange's
	 * port field, docs/INTEROP.md) rather than 0 */
	a->udp_port = GPUNIC_ROCE_UDP_PORT;
	if (!gpunic_link_bound_addr(link, &ip, &port)) {
		a->udp_port = port;
		a->src_udp_port = port;
	}
	a->ip = ip;
	gpunic_mac_from_ipv4(ip, a->mac);
}

int gpunic_ep_link_open(const char *who, const char *spec, uint32_t ip, const uint8_t *mac,
			int wait_ms, struct gpunic_link **link, struct gpunic_ep_addr *addr)
{
	memset(addr, 0, sizeof(*addr));
	*link = gpunic_link_open_spec_wait(spec, wait_ms);
	if (!*link) {
		int err = errno;

		link_open_error(who, spec, err);
		return err;
	}
	gpunic_ep_addr_of(addr, *link, ip);
	if (mac)
		memcpy(addr->mac, mac, 6);
	return 0;
}

void gpunic_ep_nic_attr(struct gpunic_nic_attr *na, const struct gpunic_ep_addr *a)
{
	na->ip = a->ip;
	na->udp_port = a->udp_port;
	memcpy(na->mac, a->mac, 6);
}

int gpunic_ep_qp_init(const char *who, struct gpunic_qp *qp, unsigned access)
{
	struct gpunic_qp_attr at = { .qp_state = GPUNIC_QPS_INIT, .qp_access_flags = access };
	int err = gpunic_qp_modify(qp, &at, GPUNIC_QP_STATE | GPUNIC_QP_ACCESS_FLAGS);

	if (err)
		ep_err(who, "QP to INIT: %s (%s)", strerror(err), gpunic_qp_last_error(qp));
	return err;
}

int gpunic_ep_qp_connect(const char *who, struct gpunic_qp *qp, const struct gpunic_ep_addr *me,
			 const struct gpunic_ep_peer *peer, const struct gpunic_ep_conn *c)
{
	struct gpunic_qp_attr at = { 0 };
	unsigned mask;
	int err;

	at.qp_state = GPUNIC_QPS_RTR;
	at.path_mtu = c->mtu;
	at.dest_qp_num = peer->qpn;
	at.rq_psn = peer->psn;
	at.remote_ip = peer->ip;
	memcpy(at.remote_mac, peer->mac, 6);
	at.remote_udp_port = peer->udp_port;
	at.src_udp_port = me->src_udp_port;
	at.max_dest_rd_atomic = c->max_dest_rd_atomic;
	at.min_rnr_timer = c->min_rnr_timer;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_PATH_MTU | GPUNIC_QP_DEST_QPN | GPUNIC_QP_RQ_PSN |
	       GPUNIC_QP_AV;
	if (c->rc)
		mask |= GPUNIC_QP_MAX_DEST_RD_ATOMIC | GPUNIC_QP_MIN_RNR_TIMER;
	err = gpunic_qp_modify(qp, &at, mask);
	if (err) {
		ep_err(who, "QP to RTR: %s (%s)", strerror(err), gpunic_qp_last_error(qp));
		return err;
	}
	at.qp_state = GPUNIC_QPS_RTS;
	at.sq_psn = c->sq_psn;
	at.timeout = c->timeout;
	at.retry_cnt = c->retry_cnt;
	at.rnr_retry = c->rnr_retry;
	at.max_rd_atomic = c->max_rd_atomic;
	mask = GPUNIC_QP_STATE | GPUNIC_QP_SQ_PSN;
	if (c->rc)
		mask |= GPUNIC_QP_TIMEOUT | GPUNIC_QP_RETRY_CNT | GPUNIC_QP_RNR_RETRY |
			GPUNIC_QP_MAX_QP_RD_ATOMIC;
	err = gpunic_qp_modify(qp, &at, mask);
	if (err)
		ep_err(who, "QP to RTS: %s (%s)", strerror(err), gpunic_qp_last_error(qp));
	return err;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

uint32_t gpunic_ep_pick_psn(uint32_t salt)
{
	return (uint32_t)(mix64(gpunic_ep_now_ns() ^ (uint64_t)getpid() << 32 ^ salt) & 0xffffff);
}

/* ---------------------------------------------------------------- the endpoint */

static int ep_alloc_buf(struct gpunic_ep *e, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);

	e->buf_len = len;
	if (posix_memalign((void **)&e->buf, page > 0 ? (size_t)page : 4096, len ? len : 1))
		return ENOMEM;
	memset(e->buf, 0, len);
	return 0;
}

static int ep_open_nic(struct gpunic_ep *e)
{
	const struct gpunic_ep_attr *a = &e->attr;
	struct gpunic_nic_attr na = { .executor = GPUNIC_EXECUTOR_CPU };
	struct gpunic_link *inner;
	int err;

	err = gpunic_ep_link_open(a->who, a->link, a->ip, a->mac, 0, &inner, &e->addr);
	if (err)
		return err;
	e->link = gpunic_link_learn_open(inner);
	e->wire = inner;
	if (!e->link) {
		gpunic_link_close(inner);
		return ENOMEM;
	}
	na.link = e->link;
	gpunic_ep_nic_attr(&na, &e->addr);
	e->nic = gpunic_nic_open(&na);
	if (!e->nic) {
		err = errno;
		ep_err(a->who, "cannot open the NIC on %s: %s", a->link, strerror(err));
		return err;
	}
	if (a->capture) {
		err = gpunic_nic_capture(e->nic, a->capture);
		if (err)
			ep_err(a->who, "cannot capture to %s: %s", a->capture, strerror(err));
	}
	return err;
}

static int ep_open_qp(struct gpunic_ep *e)
{
	const struct gpunic_ep_attr *a = &e->attr;
	struct gpunic_qp_init_attr ia = {
		.qp_type = a->type,
		.max_send_wr = a->max_send_wr,
		.max_recv_wr = a->max_recv_wr,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.handler_mode = GPUNIC_HANDLER_AUTO,
	};
	int err;

	e->pd = gpunic_pd_alloc(e->nic);
	e->scq = gpunic_cq_create(e->nic, a->max_send_wr + 1);
	e->rcq = gpunic_cq_create(e->nic, a->max_recv_wr + 1);
	if (!e->pd || !e->scq || !e->rcq) {
		err = errno;
		ep_err(a->who, "cannot create the PD and CQs: %s", strerror(err));
		return err;
	}
	e->mr = gpunic_mr_reg(e->pd, e->buf, e->buf_len, a->access | GPUNIC_ACCESS_LOCAL_WRITE);
	if (!e->mr) {
		err = errno;
		ep_err(a->who, "cannot register the buffer: %s", strerror(err));
		return err;
	}
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = gpunic_qp_create(e->pd, &ia);
	if (!e->qp) {
		err = errno;
		ep_err(a->who, "cannot create the QP: %s", strerror(err));
		return err;
	}
	err = gpunic_ep_qp_init(a->who, e->qp, a->access & ~(unsigned)GPUNIC_ACCESS_LOCAL_WRITE);
	if (err)
		return err;
	/* receives may be posted from INIT on, as with ibverbs */
	err = gpunic_qp_export(e->qp, &e->dq);
	if (!err && gpunic_dev_qp_check(&e->dq))
		err = EINVAL;
	if (err)
		ep_err(a->who, "cannot export the QP: %s", strerror(err));
	return err;
}

int gpunic_ep_open(struct gpunic_ep *e, const struct gpunic_ep_attr *a)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->attr = *a;
	err = ep_open_nic(e);
	if (!err)
		err = ep_alloc_buf(e, a->buf_len);
	if (!err)
		err = ep_open_qp(e);
	return err;
}

int gpunic_ep_progress(struct gpunic_ep *e)
{
	struct timespec nap = { 0, 20000 };

	if (gpunic_nic_poll(e->nic, 64) > 0) {
		e->idle = 0;
		return 0;
	}
	if (e->attr.deadline_ns && gpunic_ep_now_ns() > e->attr.deadline_ns)
		return ETIMEDOUT;
	e->idle++;
	if (e->idle > 400)
		nanosleep(&nap, NULL);
	else if (e->idle > 200)
		sched_yield();
	return 0;
}

/* The peer's MAC: learned already, or asked for with ARP (every 200 ms, 10 s at most). */
static int ep_resolve(struct gpunic_ep *e, uint32_t ip, uint8_t mac[6])
{
	uint64_t next = 0, end = gpunic_ep_now_ns() + EP_ARP_GIVE_UP_NS;
	int err;

	gpunic_link_learn_watch(e->link, ip);
	while (gpunic_link_learn_mac(e->link, mac)) {
		uint64_t now = gpunic_ep_now_ns();

		if (now > end) {
			ep_err(e->attr.who, "no ARP reply from the peer (10 s); give --peer-mac");
			return EHOSTUNREACH;
		}
		if (now >= next) {
			gpunic_link_learn_arp_request(e->link, e->addr.mac, e->addr.ip, ip);
			next = now + EP_ARP_EVERY_NS;
		}
		err = gpunic_ep_progress(e);
		if (err) {
			ep_err(e->attr.who, "waiting for the peer's ARP reply: %s", strerror(err));
			return err;
		}
	}
	return 0;
}

int gpunic_ep_connect(struct gpunic_ep *e, const struct gpunic_ep_peer *peer,
		      const struct gpunic_ep_conn *c)
{
	static const uint8_t zero[6];
	struct gpunic_ep_peer p = *peer;
	int err;

	if (e->attr.peer_mac)
		memcpy(p.mac, e->attr.peer_mac, 6);
	else if (!(e->link->caps & GPUNIC_LINK_CAP_SHARED_WIRE) && !memcmp(p.mac, zero, 6))
		/* the kernel builds L2: the MAC is the capture's, by the rule as the link's own
		 * received frames have it */
		gpunic_mac_from_ipv4(p.ip, p.mac);
	else if (!memcmp(p.mac, zero, 6) && (err = ep_resolve(e, p.ip, p.mac)))
		return err;
	return gpunic_ep_qp_connect(e->attr.who, e->qp, &e->addr, &p, c);
}

int gpunic_ep_wait_cqe(struct gpunic_ep *e, bool send, struct gpunic_dev_cqe *cqe)
{
	int err;

	for (;;) {
		if (send ? gpunic_dev_poll_scq(&e->dq, cqe) : gpunic_dev_poll_rcq(&e->dq, cqe))
			return 0;
		err = gpunic_ep_progress(e);
		if (err)
			return err;
	}
}

struct gpunic_tcp_wait gpunic_ep_tcp_wait(const struct gpunic_ep *e, int timeout_ms)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms), .nic = e->nic };

	if (e->attr.deadline_ns && (!w.deadline_ns || e->attr.deadline_ns < w.deadline_ns))
		w.deadline_ns = e->attr.deadline_ns;
	return w;
}

void gpunic_ep_dump(const struct gpunic_ep *e)
{
	struct gpunic_nic_counters nc;
	struct gpunic_qp_counters qc;

	if (!e->nic || gpunic_nic_query_counters(e->nic, &nc))
		return;
	fprintf(stderr, "%s: nic rx %" PRIu64 " tx %" PRIu64 " arp replies %" PRIu64, e->attr.who,
		nc.rx_frames, nc.tx_frames, nc.arp_replies);
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

void gpunic_ep_close(struct gpunic_ep *e)
{
	if (e->nic) {
		/* let the last frames (an RC ACK, a final send) leave before the NIC goes */
		for (int i = 0; i < 64; i++)
			gpunic_nic_poll(e->nic, 64);
		gpunic_nic_close(e->nic);
	} else {
		gpunic_link_close(e->link);
	}
	free(e->buf);
	memset(e, 0, sizeof(*e));
}
