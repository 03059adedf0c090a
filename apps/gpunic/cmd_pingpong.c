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
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "pingpong.h"

/* ---------------------------------------------------------------- the command */

#define PP_DONE "done"
#define PP_CHK_FILL 0x7b

struct pingpong_opts {
	struct pp_net_opts net;
	uint32_t size;
	uint32_t iters;
	uint32_t rx_depth;
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

static int parse_args(int argc, char **argv, struct pingpong_opts *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "sl", required_argument, NULL, 'l' },
		{ "chk", no_argument, NULL, 'c' },
		PP_NET_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	pp_net_init(&o->net, "pingpong", 0);
	o->size = 4096;
	o->iters = 1000;
	o->rx_depth = 500;
	while ((c = getopt_long(argc, argv, ":s:r:n:l:c" PP_NET_SHORTOPTS, longopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 's':
			ok = pp_parse_uint(optarg, 1u << 30, &v) && v;
			o->size = (uint32_t)v;
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
		case 'c':
			o->chk = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			switch (pp_parse_net_opt(c, optarg, &o->net)) {
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
	return pp_finish_args(argc, argv, &o->net);
}

/* The peer's message; what is wrong with it is said here. */
static int parse_dest(const char *msg, struct gpunic_ep_peer *r, uint8_t gid[16])
{
	char gs[64];
	int err = gpunic_pp_msg_parse(msg, r, gid);

	if (err == EPROTO) {
		fprintf(stderr, "gpunic pingpong: malformed peer message '%.*s'\n",
			GPUNIC_PP_MSG_BYTES - 1, msg);
	} else if (err) {
		pp_gid_str(gid, gs, sizeof(gs));
		fprintf(stderr,
			"gpunic pingpong: the peer's GID %s is not an IPv4-mapped RoCEv2 GID "
			"(give the tool the GID index of its ::ffff:IPv4 GID, e.g. -g 1 on rxe)\n",
			gs);
	}
	return err ? EPROTO : 0;
}

static void print_dest(const char *which, uint32_t qpn, uint32_t psn, const uint8_t gid[16])
{
	char gs[64];

	pp_gid_str(gid, gs, sizeof(gs));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", which, 0u, qpn, psn, gs);
	fflush(stdout);
}

/* The client's half of the exchange: write ours, read theirs, write "done". */
static int exchange_client(struct pingpong_opts *o, struct gpunic_ep *e, const char *mine,
			   struct gpunic_ep_peer *r, uint8_t gid[16])
{
	struct gpunic_tcp_wait w = gpunic_ep_tcp_wait(e, 60000);
	char msg[GPUNIC_PP_MSG_BYTES];
	int fd, ret;

	ret = pp_tcp_open(&o->net, e, &fd);
	if (ret)
		return ret;
	ret = gpunic_tcp_write_full(fd, mine, GPUNIC_PP_MSG_BYTES, &w);
	if (!ret)
		ret = gpunic_tcp_read_full(fd, msg, GPUNIC_PP_MSG_BYTES, &w);
	if (!ret)
		ret = gpunic_tcp_write_full(fd, PP_DONE, sizeof(PP_DONE), &w);
	close(fd);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't read/write remote address: %s\n",
			strerror(ret));
		return ret;
	}
	return parse_dest(msg, r, gid);
}

/* The server's half: read theirs, connect the QP, write ours, read "done". */
static int exchange_server(struct pingpong_opts *o, struct gpunic_ep *e, const char *mine,
			   uint32_t my_psn, struct gpunic_ep_peer *r, uint8_t gid[16])
{
	struct gpunic_ep_conn conn = pp_conn(&o->net, my_psn);
	struct gpunic_tcp_wait w;
	char msg[GPUNIC_PP_MSG_BYTES];
	size_t got;
	int fd = -1, ret;

	ret = pp_tcp_open(&o->net, e, &fd);
	if (ret)
		return ret;
	w = gpunic_ep_tcp_wait(e, 60000);
	ret = gpunic_tcp_read_full(fd, msg, GPUNIC_PP_MSG_BYTES, &w);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't read remote address: %s\n",
			strerror(ret));
		close(fd);
		return ret;
	}
	ret = parse_dest(msg, r, gid);
	if (!ret)
		ret = gpunic_ep_connect(e, r, &conn);
	if (ret) {
		fprintf(stderr, "gpunic pingpong: couldn't connect to remote QP\n");
		close(fd);
		return ret;
	}
	w = gpunic_ep_tcp_wait(e, 60000);
	ret = gpunic_tcp_write_full(fd, mine, GPUNIC_PP_MSG_BYTES, &w);
	if (!ret)
		ret = gpunic_tcp_read_some(fd, msg, sizeof(PP_DONE), &w, &got);
	close(fd);
	if (ret || got != sizeof(PP_DONE) || memcmp(msg, PP_DONE, sizeof(PP_DONE))) {
		fprintf(stderr, "gpunic pingpong: couldn't send/recv local address\n");
		return ret ? ret : EPROTO;
	}
	return 0;
}

static int post_recvs(struct gpunic_ep *e, uint32_t size, uint32_t n, uint32_t *posted)
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

static int post_send(struct gpunic_ep *e, uint32_t size)
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

static int run_loop(struct pingpong_opts *o, struct gpunic_ep *e, uint32_t *routs)
{
	struct gpunic_dev_cqe cqe;
	struct timeval start, end;
	uint32_t scnt = 0, rcnt = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned pending = PP_RECV;
	int ret;

	if (o->net.server) {
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
			ret = gpunic_ep_progress(e);
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
				"gpunic pingpong: failed status: %s error CQE: %s (syndrome 0x%02x, "
				"vendor 0x%02x)\n",
				done == PP_SEND ? "send" : "receive", gpunic_syndrome_str(cqe.syndrome),
				cqe.syndrome, cqe.vendor_syndrome);
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
	struct gpunic_ep e = { 0 };
	struct gpunic_ep_peer r;
	struct gpunic_ep_conn conn;
	uint8_t gid[16], rgid[16];
	char mine[GPUNIC_PP_MSG_BYTES];
	uint32_t my_psn, routs = 0;
	int ret;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret;
	ret = pp_open(&e, &o.net, o.size, GPUNIC_ACCESS_LOCAL_WRITE, 16, o.rx_depth);
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
	conn = pp_conn(&o.net, my_psn);
	/* the NIC's address: a udp link's own, else --ip */
	gpunic_gid_from_ipv4(e.addr.ip, gid);
	gpunic_pp_msg_format(e.qp->qp_num, my_psn, gid, mine);
	print_dest("local address: ", e.qp->qp_num, my_psn, gid);
	if (o.net.server) {
		ret = exchange_client(&o, &e, mine, &r, rgid);
		if (!ret)
			ret = gpunic_ep_connect(&e, &r, &conn);
	} else {
		ret = exchange_server(&o, &e, mine, my_psn, &r, rgid);
	}
	if (ret)
		goto out;
	print_dest("remote address:", r.qpn, r.psn, rgid);
	ret = run_loop(&o, &e, &routs);
out:
	if (ret)
		gpunic_ep_dump(&e);
	gpunic_ep_close(&e);
	return ret ? 1 : 0;
}
