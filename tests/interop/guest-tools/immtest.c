// SPDX-License-Identifier: MIT
/*
 * immtest: immediate data both ways between two RoCE endpoints, built against libibverbs for the
 * rxe guest (the harness compiles it on the host with Debian's libibverbs-dev). Its counterpart
 * on gpunic's side is `gpunic immtest`; two copies of this program also work together.
 *
 *   immtest [-p PORT] [-c rc|uc] [-d DEV] [-g GIDX] [-m MTU] [-t SEC] [HOST]
 *
 * Protocol (TCP, PORT 18515; the server is the one without HOST):
 *  1. each side writes "IMMT <qpn> <psn> <wire gid> <va> <rkey>\n" (hex fields, fixed widths:
 *     6, 6, 32, 16, 8 digits) and reads the other's; both bring their QP to RTS (sq_psn 0xfffffe:
 *     every message crosses the 24-bit PSN wrap), then swap "R\n" (both are at RTR).
 *  2. the client sends the message set (below) in direction 1; the server checks every receive
 *     completion and answers "ok\n" or "bad <reason>\n".
 *  3. the server sends the set in direction 2; the client checks and answers.
 * The message set, k = 0..4, immediate 0xc0de0000 | dir << 8 | k:
 *   0 SEND_WITH_IMM 5 bytes          (SEND_ONLY_WITH_IMMEDIATE, pad 3)
 *   1 SEND_WITH_IMM 2101 bytes       (FIRST, MIDDLE, LAST_WITH_IMMEDIATE at path MTU 1024)
 *   2 WRITE_WITH_IMM 7 bytes         (RDMA_WRITE_ONLY_WITH_IMMEDIATE) to va + 64 KiB
 *   3 WRITE_WITH_IMM 2101 bytes      (FIRST, MIDDLE, LAST_WITH_IMMEDIATE) to va + 68 KiB
 *   4 WRITE_WITH_IMM 0 bytes         (RDMA_WRITE_ONLY_WITH_IMMEDIATE, no payload) to va + 72 KiB
 * Byte i of message k in direction dir is (k * 37 + dir * 101 + i + (i >> 8) * 3) & 0xff. The
 * receiver posts 8 receives of 4 KiB (slot j at j * 4 KiB); completion j must be message j: its
 * opcode, length, immediate and bytes (in the receive slot for a SEND, at the WRITE's target
 * otherwise) are checked, and that the bytes after a WRITE's end were not touched.
 *
 * Prints one line per message and "immtest: PASS" or "immtest: FAIL"; exit status 0 or 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define SLOT 4096u
#define NSLOTS 8u
#define WRITE_OFF (16u * SLOT)
#define SEND_OFF (8u * SLOT)
#define BUF_LEN (24u * SLOT)
#define NMSG 5
#define START_PSN 0xfffffeu
#define GUARD 0xeeu

struct msg {
	bool write;
	uint32_t len;
};

static const struct msg msgs[NMSG] = {
	{ false, 5 }, { false, 2101 }, { true, 7 }, { true, 2101 }, { true, 0 },
};

static int tmo_ms = 60000;

static uint8_t pat(int k, int dir, uint32_t i)
{
	return (uint8_t)(k * 37 + dir * 101 + i + (i >> 8) * 3);
}

static uint32_t imm_of(int k, int dir)
{
	return 0xc0de0000u | (uint32_t)dir << 8 | (uint32_t)k;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- TCP */

static int tcp_open(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[8];
	int fd = -1, one = 1;
	double end = now_s() + tmo_ms / 1000.0;

	snprintf(service, sizeof(service), "%d", port);
	if (!host) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		int lfd = socket(AF_INET, SOCK_STREAM, 0);
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
			perror("immtest: listen");
			return -1;
		}
		if (poll(&p, 1, tmo_ms) == 1)
			fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0)
			fprintf(stderr, "immtest: no client within the timeout\n");
		return fd;
	}
	if (getaddrinfo(host, service, &hints, &res)) {
		fprintf(stderr, "immtest: cannot resolve %s\n", host);
		return -1;
	}
	while (now_s() < end) {
		fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(200000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "immtest: cannot connect to %s:%d\n", host, port);
	return fd;
}

/* One line ending in '\n' (without it), at most @cap - 1 bytes. */
static int read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (n + 1 < cap) {
		if (poll(&p, 1, tmo_ms) != 1 || read(fd, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static int write_str(int fd, const char *s)
{
	size_t len = strlen(s);

	return write(fd, s, len) == (ssize_t)len ? 0 : -1;
}

/* ---------------------------------------------------------------- verbs */

struct ctx {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int port;
	int gidx;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	enum ibv_qp_type type;
};

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double end = now_s() + tmo_ms / 1000.0;
	unsigned idle = 0;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (now_s() > end)
			return -1;
		if (++idle > 1000)
			usleep(100);
	}
	return n == 1 ? 0 : -1;
}

static int ctx_open(struct ctx *c, const char *devname)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr a = { 0 };
	int i;

	if (!list)
		return -1;
	for (i = 0; list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (!list[i]) {
		fprintf(stderr, "immtest: no device %s\n", devname ? devname : "");
		return -1;
	}
	c->dev = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!c->dev || ibv_query_gid(c->dev, c->port, c->gidx, &c->gid))
		return -1;
	c->buf = aligned_alloc(4096, BUF_LEN);
	if (!c->buf)
		return -1;
	memset(c->buf, 0, BUF_LEN);
	c->pd = ibv_alloc_pd(c->dev);
	c->scq = c->pd ? ibv_create_cq(c->dev, 16, NULL, NULL, 0) : NULL;
	c->rcq = c->scq ? ibv_create_cq(c->dev, 16, NULL, NULL, 0) : NULL;
	c->mr = c->rcq ? ibv_reg_mr(c->pd, c->buf, BUF_LEN,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!c->mr)
		return -1;
	qia.send_cq = c->scq;
	qia.recv_cq = c->rcq;
	qia.qp_type = c->type;
	qia.cap.max_send_wr = 16;
	qia.cap.max_recv_wr = 16;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	c->qp = ibv_create_qp(c->pd, &qia);
	if (!c->qp)
		return -1;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = c->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

static int ctx_connect(struct ctx *c, uint32_t qpn, uint32_t psn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = { 0 };
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = qpn;
	a.rq_psn = psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = c->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = c->port;
	if (c->type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(c->qp, &a, mask)) {
		perror("immtest: QP to RTR");
		return -1;
	}
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = START_PSN;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (c->type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(c->qp, &a, mask)) {
		perror("immtest: QP to RTS");
		return -1;
	}
	return 0;
}

static int post_recvs(struct ctx *c)
{
	for (uint32_t j = 0; j < NSLOTS; j++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(c->buf + j * SLOT), .length = SLOT, .lkey = c->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->qp, &wr, &bad))
			return -1;
	}
	return 0;
}

static int send_set(struct ctx *c, int dir, uint64_t rva, uint32_t rkey, char *why, size_t wl)
{
	struct ibv_wc wc;

	for (int k = 0; k < NMSG; k++) {
		uint8_t *src = c->buf + SEND_OFF + (uint32_t)k * SLOT;
		struct ibv_sge sge = { .addr = (uintptr_t)src, .length = msgs[k].len,
				       .lkey = c->mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;

		for (uint32_t i = 0; i < msgs[k].len; i++)
			src[i] = pat(k, dir, i);
		wr.wr_id = (uint64_t)k;
		wr.sg_list = &sge;
		wr.num_sge = msgs[k].len ? 1 : 0;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htonl(imm_of(k, dir));
		wr.opcode = msgs[k].write ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM;
		if (msgs[k].write) {
			wr.wr.rdma.remote_addr = rva + WRITE_OFF + (uint64_t)(k - 2) * SLOT;
			wr.wr.rdma.rkey = rkey;
		}
		if (ibv_post_send(c->qp, &wr, &bad)) {
			snprintf(why, wl, "post_send %d failed", k);
			return -1;
		}
	}
	for (int k = 0; k < NMSG; k++) {
		if (wait_wc(c->scq, &wc) || wc.status != IBV_WC_SUCCESS) {
			snprintf(why, wl, "send completion %d: %s", k,
				 wc.status ? ibv_wc_status_str(wc.status) : "timeout");
			return -1;
		}
	}
	return 0;
}

static int check_set(struct ctx *c, int dir, char *why, size_t wl)
{
	struct ibv_wc wc;

	for (int k = 0; k < NMSG; k++) {
		const uint8_t *data;
		uint32_t len = msgs[k].len;
		enum ibv_wc_opcode want = msgs[k].write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;

		if (wait_wc(c->rcq, &wc)) {
			snprintf(why, wl, "msg %d: no receive completion", k);
			return -1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			snprintf(why, wl, "msg %d: status %s", k, ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.wr_id != (uint64_t)k || wc.opcode != want ||
		    !(wc.wc_flags & IBV_WC_WITH_IMM) || wc.byte_len != len ||
		    ntohl(wc.imm_data) != imm_of(k, dir)) {
			snprintf(why, wl,
				 "msg %d: wr_id %llu opcode %d flags 0x%x len %u imm 0x%08x (want "
				 "opcode %d len %u imm 0x%08x)",
				 k, (unsigned long long)wc.wr_id, wc.opcode, wc.wc_flags,
				 wc.byte_len, ntohl(wc.imm_data), want, len, imm_of(k, dir));
			return -1;
		}
		data = msgs[k].write ? c->buf + WRITE_OFF + (uint32_t)(k - 2) * SLOT :
				       c->buf + (uint32_t)k * SLOT;
		for (uint32_t i = 0; i < len; i++)
			if (data[i] != pat(k, dir, i)) {
				snprintf(why, wl, "msg %d: byte %u is 0x%02x, want 0x%02x", k, i,
					 data[i], pat(k, dir, i));
				return -1;
			}
		if (msgs[k].write && data[len] != GUARD) {
			snprintf(why, wl, "msg %d: byte %u past the WRITE changed", k, len);
			return -1;
		}
		printf("immtest: dir %d msg %d %s len %u imm 0x%08x ok\n", dir, k,
		       msgs[k].write ? "WRITE_WITH_IMM" : "SEND_WITH_IMM", len, imm_of(k, dir));
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: immtest [-p PORT] [-c rc|uc] [-d DEV] [-g GIDX] [-m MTU] [-t SEC] "
		"[HOST]\n");
}

int main(int argc, char **argv)
{
	struct ctx c = { .port = 1, .gidx = 1, .mtu = IBV_MTU_1024, .type = IBV_QPT_RC };
	const char *devname = NULL, *host = NULL;
	char line[160], wgid[33], why[200] = "";
	unsigned long long rva;
	unsigned rqpn, rpsn, rkey;
	union ibv_gid rgid;
	int tcp_port = 18515, opt, fd, ok = 0, me;

	while ((opt = getopt(argc, argv, "p:c:d:g:m:t:")) != -1) {
		switch (opt) {
		case 'p':
			tcp_port = atoi(optarg);
			break;
		case 'c':
			c.type = !strcmp(optarg, "uc") ? IBV_QPT_UC : IBV_QPT_RC;
			break;
		case 'd':
			devname = optarg;
			break;
		case 'g':
			c.gidx = atoi(optarg);
			break;
		case 'm':
			c.mtu = atoi(optarg) == 4096 ? IBV_MTU_4096 : atoi(optarg) == 2048 ?
				IBV_MTU_2048 : atoi(optarg) == 512 ? IBV_MTU_512 :
				atoi(optarg) == 256 ? IBV_MTU_256 : IBV_MTU_1024;
			break;
		case 't':
			tmo_ms = atoi(optarg) * 1000;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind < argc)
		host = argv[optind];
	if (ctx_open(&c, devname)) {
		fprintf(stderr, "immtest: cannot set up the device\n");
		return 1;
	}
	memset(c.buf + WRITE_OFF, GUARD, BUF_LEN - WRITE_OFF);
	if (post_recvs(&c)) {
		fprintf(stderr, "immtest: cannot post receives\n");
		return 1;
	}
	fd = tcp_open(host, tcp_port);
	if (fd < 0)
		return 1;
	for (int i = 0; i < 16; i++)
		snprintf(wgid + 2 * i, 3, "%02x", c.gid.raw[i]);
	snprintf(line, sizeof(line), "IMMT %06x %06x %s %016llx %08x\n", c.qp->qp_num, START_PSN,
		 wgid, (unsigned long long)(uintptr_t)c.buf, c.mr->rkey);
	printf("immtest: %s %s, local  %s", host ? "client" : "server",
	       c.type == IBV_QPT_UC ? "UC" : "RC", line);
	if (write_str(fd, line) || read_line(fd, line, sizeof(line)) ||
	    sscanf(line, "IMMT %x %x %32s %llx %x", &rqpn, &rpsn, wgid, &rva, &rkey) != 5 ||
	    strlen(wgid) != 32) {
		fprintf(stderr, "immtest: bad exchange '%s'\n", line);
		return 1;
	}
	printf("immtest: remote %s\n", line);
	for (int i = 0; i < 16; i++) {
		unsigned b;

		sscanf(wgid + 2 * i, "%2x", &b);
		rgid.raw[i] = (uint8_t)b;
	}
	if (ctx_connect(&c, rqpn, rpsn, &rgid) || write_str(fd, "R\n") ||
	    read_line(fd, line, sizeof(line)) || strcmp(line, "R")) {
		fprintf(stderr, "immtest: cannot connect the QP\n");
		return 1;
	}
	/* Direction 1: client -> server; 2: server -> client. */
	me = host ? 1 : 2;
	for (int dir = 1; dir <= 2; dir++) {
		if (dir == me) {
			if (send_set(&c, dir, rva, rkey, why, sizeof(why))) {
				printf("immtest: dir %d send: %s\n", dir, why);
				break;
			}
			if (read_line(fd, line, sizeof(line))) {
				printf("immtest: dir %d: no verdict from the peer\n", dir);
				break;
			}
			printf("immtest: dir %d peer verdict: %s\n", dir, line);
			if (strcmp(line, "ok"))
				break;
		} else {
			if (check_set(&c, dir, why, sizeof(why))) {
				printf("immtest: dir %d receive: %s\n", dir, why);
				snprintf(line, sizeof(line), "bad %s\n", why);
				write_str(fd, line);
				break;
			}
			write_str(fd, "ok\n");
		}
		ok += 1;
	}
	close(fd);
	printf("immtest: %s\n", ok == 2 ? "PASS" : "FAIL");
	return ok == 2 ? 0 : 1;
}
