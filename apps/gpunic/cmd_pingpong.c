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
 *  - -c/--chk: the client sets byte 0 of every page to 0 (rdma-core writes i / page_size %
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
#include "gpunic/parse.h"
#include "pingpong.h"

/* ---------------------------------------------------------------- the command */

#define PP_DONE "done"
#define PP_CHK_FILL 0x7b
/* A client has this long from its accept to send its message (rdma-core's writes at once): a
 * silent one is dropped and the next served. */
#define PP_CLIENT_MS 5000
/* What is wrong with a peer's message, its bytes escaped. */
#define PP_WHY_BYTES 320

struct pingpong_opts {
	struct pp_net_opts net;
	uint32_t size;
	uint32_t iters;
	uint32_t rx_depth;
	bool chk;
	bool new_send;          /* -N: accepted, said once */
	long sl;                /* -l; -1: not given */
	bool psn_given;
	uint32_t psn;
};

/* --psn: no short letter (rdma-core has none), a value beside pingpong.h's PP_OPT_* */
#define PP_OPT_PSN 320

/* rdma-core's -s, -r and -n as gpunic takes them */
#define PP_MAX_SIZE (1u << 30)
#define PP_MAX_RX_DEPTH 4096u
#define PP_MAX_ITERS (1u << 30)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpunic pingpong [--link SPEC] [--ip A.B.C.D] [options]          (server)\n"
		"       gpunic pingpong [--link SPEC] [--ip A.B.C.D] [options] HOST     (client)\n"
		"\n"
		"gpunic's side of rdma-core's ibv_rc_pingpong / ibv_uc_pingpong: same flags,\n"
		"same out-of-band exchange (TCP, LID:QPN:PSN:GID), same traffic, same summary.\n"
		"Our GID is ::ffff:<--ip>; run the rdma-core tool with the GID index of its\n"
		"RoCEv2 IPv4 GID. The server's TCP listener is on 127.0.0.1 unless --oob-bind\n"
		"says otherwise. Without --link and --ip the link is udp on the out-of-band\n"
		"connection's address (a client on its server's host takes another loopback\n"
		"address: both ends need UDP port 4791); --ip alone is a udp link on it; a shm\n"
		"or dgram --link needs --ip.\n"
		"\n"
		"  -s, --size=SIZE        size of message to exchange, 1..%u (default 4096)\n"
		"  -r, --rx-depth=DEP     receives posted at a time, 2..%u (default 500)\n"
		"  -n, --iters=ITERS      number of exchanges, 1..%u (default 1000)\n"
		"  -l, --sl=SL            service level 0..15: accepted and reported (gpunic's\n"
		"                         links carry no VLAN priority)\n"
		"  -c, --chk              validate every received buffer, in full, both roles\n"
		"  -N, --new_send         accepted and reported: gpunic writes mlx5 WQEs itself,\n"
		"                         the same with either verbs send API\n"
		"      --psn=N            this end's first PSN, 0..0xffffff (default random)\n"
		PP_NET_USAGE
		"\n"
		"rdma-core flags that cannot apply here are refused with the reason (exit 2):\n"
		"  -e/--events (no completion channel: the NIC runs in this process's polling\n"
		"  loop), -t/--ts (gpunic's CQEs carry no timestamp), -o/--odp, -O/--iodp,\n"
		"  -P/--prefetch (no on-demand paging: the buffer is registered up front),\n"
		"  -j/--dm (no device memory), --ud (RC and UC only).\n",
		PP_MAX_SIZE, PP_MAX_RX_DEPTH, PP_MAX_ITERS, "0: never");
	cli_usage_exit(out, "every exchange done (and, with -c, every buffer as sent)",
		       "it failed: no peer within --timeout, a bad peer message, an error\n"
		       "     completion, or -c found bad data",
		       NULL);
}

/* The rdma-core flags gpunic cannot honour, each with why. Return: 2. */
static int refuse(int c)
{
	static const struct {
		int c;
		const char *opt, *why;
	} no[] = {
		{ 'e', "-e/--events",
		  "gpunic's CQs have no completion channel: the softnic runs in this process's "
		  "polling loop, so nothing would wake a sleeping process" },
		{ 't', "-t/--ts",
		  "gpunic's CQEs carry no completion timestamp (for a timeout use --timeout "
		  "SECONDS)" },
		{ 'o', "-o/--odp",
		  "gpunic registers the buffer up front and the softnic reads it in place: there "
		  "is no on-demand paging" },
		{ 'O', "-O/--iodp", "gpunic has no implicit on-demand paging MR" },
		{ 'P', "-P/--prefetch", "gpunic has no on-demand paging to prefetch for" },
		{ 'j', "-j/--dm", "the softnic has no device memory (MEMIC) to place the buffer in" },
	};

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (no[i].c == c)
			return cli_not_applicable("pingpong", no[i].opt, no[i].why);
	return 2;
}

/* pingpong's own options. Return: 1 parsed, 2 a usage error, -1 not one of them. */
static int parse_own_opt(int c, const char *arg, struct pingpong_opts *o)
{
	uint64_t v;

	switch (c) {
	case 's':
		if (cli_num("pingpong", "--size", arg, 1, PP_MAX_SIZE, &v))
			return 2;
		o->size = (uint32_t)v;
		return 1;
	case 'r':
		if (cli_num("pingpong", "--rx-depth", arg, 2, PP_MAX_RX_DEPTH, &v))
			return 2;
		o->rx_depth = (uint32_t)v;
		return 1;
	case 'n':
		if (cli_num("pingpong", "--iters", arg, 1, PP_MAX_ITERS, &v))
			return 2;
		o->iters = (uint32_t)v;
		return 1;
	case 'l':
		if (cli_num("pingpong", "--sl", arg, 0, 15, &v))
			return 2;
		o->sl = (long)v;
		return 1;
	case 'c':
		o->chk = true;
		return 1;
	case 'N':
		o->new_send = true;
		return 1;
	case PP_OPT_PSN:
		if (gpunic_parse_uint(arg, 0, 0xffffff, &v))
			return cli_bad_value("pingpong", "--psn", arg, "0..0xffffff");
		o->psn = (uint32_t)v;
		o->psn_given = true;
		return 1;
	case 'e': case 't': case 'o': case 'O': case 'P': case 'j':
		return refuse(c);
	default:
		return -1;
	}
}

/* Return: -1 to run, otherwise the exit status. */
static int parse_args(int argc, char **argv, struct pingpong_opts *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "sl", required_argument, NULL, 'l' },
		{ "chk", no_argument, NULL, 'c' },
		{ "new_send", no_argument, NULL, 'N' },
		{ "events", no_argument, NULL, 'e' },
		{ "ts", no_argument, NULL, 't' },
		{ "odp", no_argument, NULL, 'o' },
		{ "iodp", no_argument, NULL, 'O' },
		{ "prefetch", no_argument, NULL, 'P' },
		{ "dm", no_argument, NULL, 'j' },
		{ "psn", required_argument, NULL, PP_OPT_PSN },
		PP_NET_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_getopt g = { .cmd = "pingpong",
				.shortopts = ":s:r:n:l:cNetoOPj" PP_NET_SHORTOPTS,
				.longopts = longopts, .usage = usage };
	int c, rc;

	memset(o, 0, sizeof(*o));
	pp_net_init(&o->net, "pingpong", 0);
	o->net.addr_from_oob = true;
	o->size = 4096;
	o->iters = 1000;
	o->rx_depth = 500;
	o->sl = -1;
	while ((c = cli_getopt_next(&g, argc, argv))) {
		rc = parse_own_opt(c, optarg, o);
		if (rc == -1)
			rc = pp_parse_net_opt(c, optarg, &o->net);
		if (rc != 1)
			return rc == -1 ? cli_bad_option("pingpong", '?', argv[optind - 1]) : rc;
	}
	if (g.exit >= 0)
		return g.exit;
	rc = pp_finish_args(argc, argv, &o->net);
	return rc ? rc : -1;
}

/* What the accepted-but-unused rdma-core flags mean here, once. */
static void report_compat(const struct pingpong_opts *o)
{
	pp_report_compat(&o->net);
	if (o->sl >= 0)
		printf("gpunic pingpong: -l %ld: gpunic's links carry no VLAN priority; the service "
		       "level is not used\n", o->sl);
	if (o->new_send)
		printf("gpunic pingpong: -N: gpunic writes the mlx5 send WQE itself; the traffic is "
		       "the same as without it\n");
	fflush(stdout);
}

/* The peer's message. Return: 0, or EPROTO with what is wrong with it in @why (@n bytes; the
 * peer's bytes escaped). */
static int parse_dest(const char *msg, struct gpunic_ep_peer *r, uint8_t gid[16], char *why,
		      size_t n)
{
	char gs[64], text[4 * GPUNIC_PP_MSG_BYTES + 8];
	int err = gpunic_pp_msg_parse(msg, r, gid);

	if (err == EPROTO) {
		cli_escape(text, sizeof(text), msg, strnlen(msg, GPUNIC_PP_MSG_BYTES));
		snprintf(why, n, "not rdma-core pingpong's message: '%s'", text);
	} else if (err) {
		pp_gid_str(gid, gs, sizeof(gs));
		snprintf(why, n,
			 "its GID %s is not an IPv4-mapped RoCEv2 GID (give the tool the GID index "
			 "of its ::ffff:IPv4 GID, e.g. -g 1 on rxe)", gs);
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

/* The client's half of the exchange on @fd (connected here when -1): write ours, read theirs,
 * write "done". */
static int exchange_client(struct pingpong_opts *o, struct gpunic_ep *e, int fd, const char *mine,
			   struct gpunic_ep_peer *r, uint8_t gid[16])
{
	struct gpunic_tcp_wait w = gpunic_ep_tcp_wait(e, 60000);
	char msg[GPUNIC_PP_MSG_BYTES], why[PP_WHY_BYTES];
	int ret;

	ret = fd < 0 ? pp_tcp_open(&o->net, e, &fd) : 0;
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
	ret = parse_dest(msg, r, gid, why, sizeof(why));
	if (ret)
		fprintf(stderr, "gpunic pingpong: the server's message: %s\n", why);
	return ret;
}

/*
 * The server's wait for a client that speaks the exchange: one that sends nothing within
 * PP_CLIENT_MS, closes first, or sends anything but rdma-core's message is dropped with a line
 * saying so, and the next one is served, as loop and perf do. Return: 0 with @fd open and the
 * client's message parsed, or the listener's error (no client within --timeout).
 */
static int take_client(struct pingpong_opts *o, struct gpunic_ep *e, int *fd,
		       struct gpunic_ep_peer *r, uint8_t gid[16])
{
	char msg[GPUNIC_PP_MSG_BYTES], why[PP_WHY_BYTES], from[16];
	struct gpunic_tcp_wait w;
	uint32_t ip = 0;
	int lfd = -1, ret;

	ret = pp_tcp_listen(&o->net, &lfd);
	while (!ret) {
		ret = pp_tcp_accept(&o->net, e, lfd, fd);
		if (ret)
			break;
		gpunic_tcp_addrs(*fd, NULL, &ip);
		w = gpunic_ep_tcp_wait(e, PP_CLIENT_MS);
		ret = gpunic_tcp_read_full(*fd, msg, GPUNIC_PP_MSG_BYTES, &w);
		if (ret)
			snprintf(why, sizeof(why), "%s", ret == ETIMEDOUT ? "it sent nothing" :
				 ret == EPIPE ? "it closed before a whole message" : strerror(ret));
		else
			ret = parse_dest(msg, r, gid, why, sizeof(why));
		if (!ret)
			break;
		gpunic_ipv4_str(ip, from);
		fprintf(stderr, "gpunic pingpong: dropped a connection from %s: %s; still waiting\n",
			from, why);
		close(*fd);
		ret = 0;
	}
	if (lfd >= 0)
		close(lfd);
	return ret;
}

/* The server's half: read theirs (on @fd with @r and @gid already read, when not -1), connect
 * the QP, write ours, read "done". */
static int exchange_server(struct pingpong_opts *o, struct gpunic_ep *e, int fd, const char *mine,
			   uint32_t my_psn, struct gpunic_ep_peer *r, uint8_t gid[16])
{
	struct gpunic_ep_conn conn = pp_conn(&o->net, my_psn);
	struct gpunic_tcp_wait w;
	char msg[GPUNIC_PP_MSG_BYTES];
	size_t got;
	int ret;

	ret = fd < 0 ? take_client(o, e, &fd, r, gid) : 0;
	if (ret)
		return ret;
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

/* The end-of-run line of what the receiving side threw away. */
static void print_rx_errors(const struct gpunic_ep *e)
{
	struct gpunic_nic_counters nc;

	if (e->nic && !gpunic_nic_query_counters(e->nic, &nc))
		cli_print_rx_errors(stdout, e->wire, &nc);
	fflush(stdout);
}

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

/*
 * Neither --link nor --ip, as perf: a udp link on the address the out-of-band connection uses,
 * which then comes first (the client connects, the server takes its client and reads its
 * message). A client on its server's host takes another loopback address: both ends need
 * RoCEv2's port, and rdma-core's message carries no other.
 */
static int address_from_connection(struct pingpong_opts *o, struct gpunic_ep *e, int *fd,
				   struct gpunic_ep_peer *r, uint8_t gid[16])
{
	uint32_t local = 0, peer = 0;
	char quad[16];
	int ret = o->net.server ? pp_tcp_open(&o->net, e, fd) : take_client(o, e, fd, r, gid);

	if (ret)
		return ret;
	gpunic_tcp_addrs(*fd, &local, &peer);
	if (o->net.server && local == peer && (local >> 24) == 127 &&
	    gpunic_ep_loopback_aside(&local, GPUNIC_ROCE_UDP_PORT)) {
		fprintf(stderr, "gpunic pingpong: no loopback address with UDP port 4791 free beside "
				"the server's: give --link and --ip\n");
		return EADDRINUSE;
	}
	gpunic_ipv4_str(local, quad);
	snprintf(o->net.udp_link, sizeof(o->net.udp_link), "udp:%s", quad);
	o->net.link = o->net.udp_link;
	o->net.ip = local;
	fprintf(stderr, "gpunic pingpong: link %s (the out-of-band connection's address; --link "
			"and --ip choose another)\n", o->net.link);
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
	int ret, fd = -1;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	report_compat(&o);
	if (!o.net.link) {
		ret = address_from_connection(&o, &e, &fd, &r, rgid);
		if (ret)
			goto out;
	}
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
	my_psn = o.psn_given ? o.psn : (uint32_t)lrand48() & 0xffffff;
	conn = pp_conn(&o.net, my_psn);
	/* the NIC's address: a udp link's own, else --ip */
	gpunic_gid_from_ipv4(e.addr.ip, gid);
	gpunic_pp_msg_format(e.qp->qp_num, my_psn, gid, mine);
	print_dest("local address: ", e.qp->qp_num, my_psn, gid);
	if (o.net.server) {
		ret = exchange_client(&o, &e, fd, mine, &r, rgid);
		if (!ret)
			ret = gpunic_ep_connect(&e, &r, &conn);
	} else {
		ret = exchange_server(&o, &e, fd, mine, my_psn, &r, rgid);
	}
	fd = -1;	/* closed by the exchange */
	if (ret)
		goto out;
	print_dest("remote address:", r.qpn, r.psn, rgid);
	ret = run_loop(&o, &e, &routs);
	print_rx_errors(&e);
out:
	if (fd >= 0)
		close(fd);
	if (ret)
		gpunic_ep_dump(&e);
	gpunic_ep_close(&e);
	return ret ? 1 : 0;
}
