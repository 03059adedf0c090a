// SPDX-License-Identifier: MIT
/*
 * looppeer: the other end of gpunic's loopback experiment, built against libibverbs for the rxe
 * guest (the harness compiles it on the host with Debian's libibverbs-dev).
 *
 *   looppeer [-p PORT] [-d DEV] [-g GIDX] [-n COUNT] [-s SIZE] [-w WINDOW] [-t SEC] HOST
 *       the sensor: drives `gpunic loop` listening on HOST:PORT
 *   looppeer --echo [-p PORT] [-d DEV] [-g GIDX] [-S SLOTS] [-t SEC]
 *       the loop: listens on PORT (default 18515) for `gpunic sensor`
 *
 * Out of band: gpunic's 56-byte message (docs/INTEROP.md, "Driving `gpunic loop` from another
 * RoCE stack"), three exchanges on a new TCP connection each, each message naming its step and
 * the sensor's session: QP information ("hello"), "ready" (the loop's QP is connected and its
 * receives are posted), "bye" (the sensor's QPN and IP, va = messages sent). An answer carries
 * the request's step and session. A failed exchange (the loop listens in slices; a guestfwd
 * relay accepts the connection before the host side does) is retried until the timeout.
 *
 * Sensor: a UC QP; message i (SIZE bytes, default 32) goes as RDMA WRITE_WITH_IMM into ring slot
 * i % slots (VA + slot * 4096, immediate htonl(slot)), at most WINDOW in flight; each echo comes
 * back as a SEND into a posted receive. The message is gpunic's (src/exp/msg.c): bytes
 * 0-7 the sequence word (little endian), 8-15 a timestamp, then a pattern of both (splitmix64).
 * Every echo is checked byte for byte; the result line counts ok, lost, corrupt, duplicate
 * echoes. Prints "looppeer: PASS" (exit 0) only when every message came back intact.
 *
 * Echo: a UC QP and a ring of SLOTS x 4096 bytes (its VA, rkey and length go in the first
 * message); zero-length receives; each WRITE_WITH_IMM's slot (the immediate) goes back as a SEND
 * of the bytes written. Ends at the sensor's "bye" (after echoing what is still arriving) and
 * passes when it echoed as many messages as the sensor says it sent.
 *
 * rxe takes the peer's MAC from the kernel's neighbour table when the QP goes to RTR; gpunic's
 * loop and sensor use MAC 02:00:<IPv4> (not the suite's other commands' MAC), so the entry is set
 * from the peer's message (SIOCSARP) and deleted at the end.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define OOB_MAGIC 0x47504E51u
#define OOB_VERSION 2u
#define OOB_BYTES 56
#define OOB_HELLO 1u
#define OOB_READY 2u
#define OOB_BYE 3u
#define SLOT 4096u
#define MSG_MIN 16u
#define RQ_DEPTH 512u
#define SQ_DEPTH 256u
#define EPOCH 0x1e
#define SEQ_BITS 48

struct info {
	uint32_t kind;		/* the step: OOB_HELLO, OOB_READY, OOB_BYE */
	uint64_t session;	/* the sensor's, in every message of its session */
	uint32_t qpn, psn, ip;
	uint8_t mac[6];
	uint16_t udp;
	uint64_t va;
	uint32_t rkey, len;
};

static int tmo_ms = 60000;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- message (loopback.c's) */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

static uint8_t msg_byte(uint64_t word, uint64_t ts, uint32_t i)
{
	uint32_t k;

	if (i < 8)
		return (uint8_t)(word >> (8 * i));
	if (i < 16)
		return (uint8_t)(ts >> (8 * (i - 8)));
	k = i - MSG_MIN;
	return (uint8_t)(mix64(word * 0x9E3779B97F4A7C15ull ^ ts ^ ((uint64_t)(k >> 3) << 40)) >>
			 (8 * (k & 7)));
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ---------------------------------------------------------------- out of band */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void encode(const struct info *in, uint8_t *m)
{
	memset(m, 0, OOB_BYTES);
	put32(m, OOB_MAGIC);
	put32(m + 4, OOB_VERSION);
	put32(m + 8, in->kind);
	put32(m + 12, (uint32_t)(in->session >> 32));
	put32(m + 16, (uint32_t)in->session);
	put32(m + 20, in->qpn);
	put32(m + 24, in->psn);
	put32(m + 28, in->ip);
	memcpy(m + 32, in->mac, 6);
	m[38] = (uint8_t)(in->udp >> 8);
	m[39] = (uint8_t)in->udp;
	put32(m + 40, (uint32_t)(in->va >> 32));
	put32(m + 44, (uint32_t)in->va);
	put32(m + 48, in->rkey);
	put32(m + 52, in->len);
}

static int decode(const uint8_t *m, struct info *out)
{
	if (get32(m) != OOB_MAGIC || get32(m + 4) != OOB_VERSION)
		return -1;
	out->kind = get32(m + 8);
	out->session = (uint64_t)get32(m + 12) << 32 | get32(m + 16);
	out->qpn = get32(m + 20);
	out->psn = get32(m + 24);
	out->ip = get32(m + 28);
	memcpy(out->mac, m + 32, 6);
	out->udp = (uint16_t)(m[38] << 8 | m[39]);
	out->va = (uint64_t)get32(m + 40) << 32 | get32(m + 44);
	out->rkey = get32(m + 48);
	out->len = get32(m + 52);
	return 0;
}

static int io_all(int fd, uint8_t *buf, size_t len, bool wr, double end)
{
	size_t n = 0;

	while (n < len) {
		struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		int ms = (int)((end - now_s()) * 1000);
		ssize_t r;

		if (ms <= 0 || poll(&p, 1, ms) != 1)
			return -1;
		r = wr ? write(fd, buf + n, len - n) : read(fd, buf + n, len - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
	}
	return 0;
}

/* The client's side of one exchange on connected @fd (closed here): the answer must carry our
 * step and session. */
static int swap_on(int fd, const struct info *local, struct info *remote, double end)
{
	uint8_t out[OOB_BYTES], in[OOB_BYTES];
	int one = 1, err;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	encode(local, out);
	err = io_all(fd, out, sizeof(out), true, end) || io_all(fd, in, sizeof(in), false, end) ||
	      decode(in, remote) || remote->kind != local->kind ||
	      remote->session != local->session;
	close(fd);
	return err ? -1 : 0;
}

/* The sensor's side of one exchange: connect to @host:@port, retried until @ms ms passed. */
static int exchange_client(const char *host, int port, int ms, const struct info *local,
			   struct info *remote)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	double end = now_s() + ms / 1000.0;
	char service[8];
	int fd;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res)) {
		fprintf(stderr, "looppeer: cannot resolve %s\n", host);
		return -1;
	}
	while (now_s() < end) {
		fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen)) {
			/* a relay with nobody behind it closes without a word: try again */
			double e = now_s() + 3.0 < end ? now_s() + 3.0 : end;

			if (!swap_on(fd, local, remote, e)) {
				freeaddrinfo(res);
				return 0;
			}
		} else if (fd >= 0) {
			close(fd);
		}
		usleep(100000);
	}
	freeaddrinfo(res);
	return -1;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4)) {
		perror("looppeer: listen");
		close(fd);
		return -1;
	}
	return fd;
}

/* The loop's side of one exchange on listening @lfd: wait up to @ms ms for a connection whose
 * message is step @want; the answer carries its step and session. */
static int exchange_server(int lfd, int ms, uint32_t want, const struct info *local,
			   struct info *remote)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	uint8_t in[OOB_BYTES], out[OOB_BYTES];
	struct info ans = *local;
	double end;
	int fd, one = 1, err;

	if (poll(&p, 1, ms) != 1)
		return -1;
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	end = now_s() + 5.0;
	err = io_all(fd, in, sizeof(in), false, end) || decode(in, remote) || remote->kind != want;
	if (!err) {
		ans.kind = remote->kind;
		ans.session = remote->session;
		encode(&ans, out);
		err = io_all(fd, out, sizeof(out), true, end);
	}
	close(fd);
	return err ? -1 : 0;
}

/* ---------------------------------------------------------------- neighbour entry */

static char ndev[IFNAMSIZ];

static int arp_set(uint32_t ip, const uint8_t *mac, bool del)
{
	struct arpreq r;
	struct sockaddr_in *sin = (struct sockaddr_in *)&r.arp_pa;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), err;

	if (fd < 0 || !ndev[0])
		return -1;
	memset(&r, 0, sizeof(r));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(ip);
	r.arp_ha.sa_family = ARPHRD_ETHER;
	if (mac)
		memcpy(r.arp_ha.sa_data, mac, 6);
	r.arp_flags = ATF_COM | ATF_PERM;
	memcpy(r.arp_dev, ndev, sizeof(r.arp_dev));
	err = ioctl(fd, del ? SIOCDARP : SIOCSARP, &r);
	if (err && !del)
		perror("looppeer: SIOCSARP");
	close(fd);
	return err;
}

/* ---------------------------------------------------------------- verbs */

struct ctx {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	int port, gidx;
	union ibv_gid gid;
	struct info me;
};

static int read_file(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	return 0;
}

static int ctx_open(struct ctx *c, const char *devname, size_t buf_len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr a = { 0 };
	char path[256], mac[32];
	unsigned m[6];
	int i;

	if (!list)
		return -1;
	for (i = 0; list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (!list[i]) {
		fprintf(stderr, "looppeer: no device %s\n", devname ? devname : "");
		return -1;
	}
	c->dev = ibv_open_device(list[i]);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d",
		 ibv_get_device_name(list[i]), c->port, c->gidx);
	ibv_free_device_list(list);
	if (!c->dev || ibv_query_gid(c->dev, (uint8_t)c->port, c->gidx, &c->gid))
		return -1;
	/* GID index 1 is ::ffff:IPv4; the MAC is its netdev's */
	c->me.ip = get32(c->gid.raw + 12);
	if (read_file(path, ndev, sizeof(ndev))) {
		fprintf(stderr, "looppeer: cannot read %s\n", path);
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ndev);
	if (read_file(path, mac, sizeof(mac)) ||
	    sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
		fprintf(stderr, "looppeer: no MAC for %s\n", ndev);
		return -1;
	}
	for (i = 0; i < 6; i++)
		c->me.mac[i] = (uint8_t)m[i];
	c->me.udp = 4791;
	c->buf_len = buf_len;
	c->buf = aligned_alloc(4096, buf_len);
	if (!c->buf)
		return -1;
	memset(c->buf, 0, buf_len);
	c->pd = ibv_alloc_pd(c->dev);
	c->scq = c->pd ? ibv_create_cq(c->dev, SQ_DEPTH * 2, NULL, NULL, 0) : NULL;
	c->rcq = c->scq ? ibv_create_cq(c->dev, RQ_DEPTH * 2, NULL, NULL, 0) : NULL;
	c->mr = c->rcq ? ibv_reg_mr(c->pd, c->buf, buf_len,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!c->mr)
		return -1;
	qia.send_cq = c->scq;
	qia.recv_cq = c->rcq;
	qia.qp_type = IBV_QPT_UC;
	qia.cap.max_send_wr = SQ_DEPTH;
	qia.cap.max_recv_wr = RQ_DEPTH;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	c->qp = ibv_create_qp(c->pd, &qia);
	if (!c->qp)
		return -1;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)c->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS))
		return -1;
	c->me.qpn = c->qp->qp_num;
	c->me.psn = (uint32_t)(now_ns() ^ c->qp->qp_num) & 0xffffff;
	return 0;
}

static int ctx_connect(struct ctx *c, const struct info *peer)
{
	struct ibv_qp_attr a = { 0 };

	if (arp_set(peer->ip, peer->mac, false))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	put32(a.ah_attr.grh.dgid.raw + 12, peer->ip);
	a.ah_attr.grh.sgid_index = (uint8_t)c->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = (uint8_t)c->port;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)) {
		perror("looppeer: QP to RTR");
		return -1;
	}
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->me.psn;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		perror("looppeer: QP to RTS");
		return -1;
	}
	return 0;
}

static int post_recv(struct ctx *c, uint64_t id, uint8_t *addr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0 }, *bad;

	return ibv_post_recv(c->qp, &wr, &bad);
}

/* Reap send completions; return -1 on an error completion. */
static int reap_sends(struct ctx *c, uint32_t *inflight)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(c->scq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "looppeer: send completion: %s\n",
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
			(*inflight)--;
		}
	return n < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- sensor */

static int run_sensor(struct ctx *c, const char *host, int port, uint64_t count, uint32_t size,
		      uint32_t window)
{
	struct info loop, ready, bye;
	uint8_t *sbuf = c->buf, *rbuf = c->buf + SQ_DEPTH * SLOT;
	uint64_t *ts = calloc(count, sizeof(*ts));
	uint8_t *seen = calloc(count, 1);
	uint64_t sent = 0, ok = 0, corrupt = 0, dup = 0, stray = 0, outstanding = 0;
	uint32_t sinflight = 0, slots, first_bad = UINT32_MAX;
	double t0, last, rtt_sum = 0;
	int rc = 1;

	if (!ts || !seen)
		return 1;
	c->me.session = (uint64_t)now_ns() << 16 ^ (uint64_t)getpid() ^ c->me.qpn;
	c->me.kind = OOB_HELLO;
	if (exchange_client(host, port, tmo_ms, &c->me, &loop)) {
		fprintf(stderr, "looppeer: no QP exchange with %s:%d\n", host, port);
		return 1;
	}
	slots = loop.len / SLOT;
	printf("looppeer: sensor QP 0x%06x psn 0x%06x; loop QP 0x%06x psn 0x%06x ip %u.%u.%u.%u "
	       "mac %02x:%02x:%02x:%02x:%02x:%02x ring 0x%llx rkey 0x%x %u slots\n",
	       c->me.qpn, c->me.psn, loop.qpn, loop.psn, loop.ip >> 24, loop.ip >> 16 & 255,
	       loop.ip >> 8 & 255, loop.ip & 255, loop.mac[0], loop.mac[1], loop.mac[2],
	       loop.mac[3], loop.mac[4], loop.mac[5], (unsigned long long)loop.va, loop.rkey,
	       slots);
	if (slots == 0) {
		fprintf(stderr, "looppeer: the loop's ring is empty\n");
		return 1;
	}
	for (uint32_t j = 0; j < RQ_DEPTH; j++)
		if (post_recv(c, j, rbuf + (size_t)j * SLOT, SLOT)) {
			fprintf(stderr, "looppeer: cannot post receives\n");
			return 1;
		}
	if (ctx_connect(c, &loop))
		return 1;
	c->me.kind = OOB_READY;
	if (exchange_client(host, port, tmo_ms, &c->me, &ready)) {
		fprintf(stderr, "looppeer: the loop never said ready\n");
		goto bye;
	}
	t0 = last = now_s();
	while (now_s() - last < 3.0) {
		struct ibv_wc wc[16];
		int n;

		if (reap_sends(c, &sinflight))
			break;
		while (sent < count && outstanding < window && sinflight < SQ_DEPTH) {
			uint32_t slot = (uint32_t)(sent % slots), sidx = (uint32_t)(sent % SQ_DEPTH);
			uint64_t word = (uint64_t)EPOCH << SEQ_BITS | sent;
			uint8_t *m = sbuf + (size_t)sidx * SLOT;
			struct ibv_sge sge = { .addr = (uintptr_t)m, .length = size,
					       .lkey = c->mr->lkey };
			struct ibv_send_wr wr = { 0 }, *bad;

			ts[sent] = now_ns();
			for (uint32_t i = 0; i < size; i++)
				m[i] = msg_byte(word, ts[sent], i);
			wr.wr_id = sent;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.imm_data = htonl(slot);
			wr.wr.rdma.remote_addr = loop.va + (uint64_t)slot * SLOT;
			wr.wr.rdma.rkey = loop.rkey;
			if (ibv_post_send(c->qp, &wr, &bad)) {
				fprintf(stderr, "looppeer: post_send %llu failed\n",
					(unsigned long long)sent);
				goto bye;
			}
			sent++;
			outstanding++;
			sinflight++;
			last = now_s();
		}
		n = ibv_poll_cq(c->rcq, 16, wc);
		if (n < 0)
			break;
		for (int k = 0; k < n; k++) {
			uint8_t *m = rbuf + (size_t)wc[k].wr_id * SLOT;
			uint64_t word, seq, t;
			bool good = true;

			last = now_s();
			if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV ||
			    wc[k].byte_len < MSG_MIN) {
				fprintf(stderr, "looppeer: receive: status %s opcode %d len %u\n",
					ibv_wc_status_str(wc[k].status), wc[k].opcode,
					wc[k].byte_len);
				stray++;
			} else {
				word = le64(m);
				t = le64(m + 8);
				seq = word & ((1ull << SEQ_BITS) - 1);
				if (word >> SEQ_BITS != EPOCH || seq >= sent) {
					stray++;
				} else if (seen[seq]) {
					dup++;
				} else {
					seen[seq] = 1;
					outstanding--;
					if (wc[k].byte_len != size || t != ts[seq])
						good = false;
					for (uint32_t i = 0; good && i < size; i++)
						good = m[i] == msg_byte(word, ts[seq], i);
					if (good) {
						ok++;
						rtt_sum += (now_ns() - ts[seq]) / 1e3;
					} else {
						corrupt++;
						if (first_bad == UINT32_MAX)
							first_bad = (uint32_t)seq;
					}
				}
			}
			if (post_recv(c, wc[k].wr_id, m, SLOT)) {
				fprintf(stderr, "looppeer: cannot repost a receive\n");
				goto bye;
			}
		}
		if (sent == count && outstanding == 0)
			break;
		if (!n)
			usleep(20);
	}
	printf("looppeer: sent %llu, echoed intact %llu, lost %llu, corrupt %llu, duplicate %llu, "
	       "stray %llu, %u-byte WRITE_WITH_IMM, window %u, %.3f s, mean rtt %.1f us\n",
	       (unsigned long long)sent, (unsigned long long)ok,
	       (unsigned long long)(sent - ok - corrupt), (unsigned long long)corrupt,
	       (unsigned long long)dup, (unsigned long long)stray, size, window, now_s() - t0,
	       ok ? rtt_sum / (double)ok : 0.0);
	if (first_bad != UINT32_MAX)
		printf("looppeer: first corrupt echo: message %u\n", first_bad);
	rc = sent == count && ok == count && !dup && !stray ? 0 : 1;
bye:
	bye = c->me;
	bye.kind = OOB_BYE;
	bye.va = sent;
	if (exchange_client(host, port, 5000, &bye, &ready))
		fprintf(stderr, "looppeer: the loop did not take the end-of-run message\n");
	arp_set(loop.ip, NULL, true);
	printf("looppeer: %s\n", rc ? "FAIL" : "PASS");
	return rc;
}

/* ---------------------------------------------------------------- echo */

static int run_echo(struct ctx *c, int port, uint32_t slots)
{
	struct info sensor, ready, bye;
	uint64_t echoed = 0, bad = 0, said = 0;
	uint32_t sinflight = 0;
	bool done = false;
	double end, last;
	int lfd = listen_on(port), rc = 1;

	if (lfd < 0)
		return 1;
	c->me.va = (uintptr_t)c->buf;
	c->me.rkey = c->mr->rkey;
	c->me.len = slots * SLOT;
	if (exchange_server(lfd, tmo_ms, OOB_HELLO, &c->me, &sensor)) {
		fprintf(stderr, "looppeer: no sensor within the timeout\n");
		return 1;
	}
	printf("looppeer: echo QP 0x%06x psn 0x%06x ring %u slots; sensor QP 0x%06x psn 0x%06x "
	       "ip %u.%u.%u.%u\n", c->me.qpn, c->me.psn, slots, sensor.qpn, sensor.psn,
	       sensor.ip >> 24, sensor.ip >> 16 & 255, sensor.ip >> 8 & 255, sensor.ip & 255);
	for (uint32_t j = 0; j < RQ_DEPTH; j++)
		if (post_recv(c, j, NULL, 0)) {
			fprintf(stderr, "looppeer: cannot post receives\n");
			return 1;
		}
	if (ctx_connect(c, &sensor))
		return 1;
	if (exchange_server(lfd, tmo_ms, OOB_READY, &c->me, &ready)) {
		fprintf(stderr, "looppeer: the sensor never asked if we are ready\n");
		goto out;
	}
	end = now_s() + tmo_ms / 1000.0;
	last = now_s();
	while (now_s() < end) {
		struct ibv_wc wc[16];
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int n;

		if (reap_sends(c, &sinflight))
			break;
		if (!done && poll(&p, 1, 0) == 1 && !exchange_server(lfd, 1000, OOB_BYE, &c->me, &bye)) {
			if (bye.session == sensor.session && bye.qpn == sensor.qpn &&
			    bye.ip == sensor.ip) {
				done = true;
				said = bye.va;
				last = now_s();
			}
		}
		/* after "bye": echo what is still arriving, until 0.5 s of silence */
		if (done && (echoed + bad >= said || now_s() - last > 0.5))
			break;
		n = ibv_poll_cq(c->rcq, 16, wc);
		if (n < 0)
			break;
		for (int k = 0; k < n; k++) {
			uint32_t slot = ntohl(wc[k].imm_data), len = wc[k].byte_len;
			struct ibv_sge sge = { .lkey = c->mr->lkey };
			struct ibv_send_wr wr = { 0 }, *badwr;

			last = now_s();
			if (wc[k].status != IBV_WC_SUCCESS ||
			    wc[k].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
			    !(wc[k].wc_flags & IBV_WC_WITH_IMM) || slot >= slots || len > SLOT) {
				fprintf(stderr, "looppeer: receive: status %s opcode %d imm %u "
						"len %u\n", ibv_wc_status_str(wc[k].status),
					wc[k].opcode, slot, len);
				bad++;
			} else {
				while (sinflight >= SQ_DEPTH)
					if (reap_sends(c, &sinflight))
						goto out;
				sge.addr = (uintptr_t)(c->buf + (size_t)slot * SLOT);
				sge.length = len;
				wr.wr_id = slot;
				wr.sg_list = &sge;
				wr.num_sge = len ? 1 : 0;
				wr.opcode = IBV_WR_SEND;
				wr.send_flags = IBV_SEND_SIGNALED;
				if (ibv_post_send(c->qp, &wr, &badwr)) {
					fprintf(stderr, "looppeer: post_send failed\n");
					goto out;
				}
				sinflight++;
				echoed++;
			}
			if (post_recv(c, wc[k].wr_id, NULL, 0)) {
				fprintf(stderr, "looppeer: cannot repost a receive\n");
				goto out;
			}
		}
		if (!n)
			usleep(20);
	}
	/* let the last echoes leave */
	for (int i = 0; i < 1000 && sinflight; i++) {
		if (reap_sends(c, &sinflight))
			break;
		usleep(1000);
	}
	printf("looppeer: echoed %llu, bad %llu, the sensor %s %llu\n",
	       (unsigned long long)echoed, (unsigned long long)bad,
	       done ? "said it sent" : "never said how many it sent; expected",
	       (unsigned long long)said);
	rc = done && !bad && echoed == said && said > 0 ? 0 : 1;
out:
	close(lfd);
	arp_set(sensor.ip, NULL, true);
	printf("looppeer: %s\n", rc ? "FAIL" : "PASS");
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: looppeer [-p PORT] [-d DEV] [-g GIDX] [-n COUNT] [-s SIZE] [-w WINDOW] "
		"[-t SEC] HOST\n"
		"       looppeer --echo [-p PORT] [-d DEV] [-g GIDX] [-S SLOTS] [-t SEC]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "echo", no_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctx c = { .port = 1, .gidx = 1 };
	const char *devname = NULL;
	uint64_t count = 1000;
	uint32_t size = 32, window = 16, slots = 64;
	bool echo = false;
	int port = 18515, opt;

	while ((opt = getopt_long(argc, argv, "p:d:g:n:s:w:S:t:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			echo = true;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			devname = optarg;
			break;
		case 'g':
			c.gidx = atoi(optarg);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 0);
			break;
		case 's':
			size = (uint32_t)atoi(optarg);
			break;
		case 'w':
			window = (uint32_t)atoi(optarg);
			break;
		case 'S':
			slots = (uint32_t)atoi(optarg);
			break;
		case 't':
			tmo_ms = atoi(optarg) * 1000;
			break;
		default:
			usage();
			return 2;
		}
	}
	if ((!echo && optind != argc - 1) || (echo && optind != argc) || count == 0 ||
	    size < MSG_MIN || size > SLOT || window == 0 || window > RQ_DEPTH / 2 || slots == 0) {
		usage();
		return 2;
	}
	if (ctx_open(&c, devname, (size_t)(echo ? slots : SQ_DEPTH + RQ_DEPTH) * SLOT)) {
		fprintf(stderr, "looppeer: cannot set up the device\n");
		return 1;
	}
	return echo ? run_echo(&c, port, slots) : run_sensor(&c, argv[optind], port, count, size,
							      window);
}
