// SPDX-License-Identifier: MIT
/*
 * The options and the TCP connection `gpunic pingpong` and `gpunic immtest` share (pingpong.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pingpong.h"

void pp_net_init(struct pp_net_opts *net, const char *cmd, int timeout_ms)
{
	memset(net, 0, sizeof(*net));
	net->cmd = cmd;
	snprintf(net->who, sizeof(net->who), "gpunic %s", cmd);
	net->port = 18515;
	net->timeout_ms = timeout_ms;
	net->type = GPUNIC_QPT_RC;
	net->mtu = GPUNIC_MTU_1024;
	/* the exchange hands out our QP: only this host unless told otherwise (SECURITY.md) */
	net->oob_bind = "127.0.0.1";
	net->gid_idx = -1;
}

/* Options that set a number, an address or a name. Return: 1 parsed, 2 bad value, -1 other. */
static int parse_value_opt(int c, const char *arg, struct pp_net_opts *net)
{
	const char *cmd = net->cmd;
	uint64_t v;

	switch (c) {
	case 'p':
		if (cli_num(cmd, "--port", arg, 1, 65535, &v))
			return 2;
		net->port = (uint16_t)v;
		return 1;
	case 'd':
		net->ib_dev = arg;
		return 1;
	case 'i':
		/* rdma-core counts ports from 1 */
		if (cli_num(cmd, "--ib-port", arg, 1, 255, &v))
			return 2;
		net->ib_port = (long)v;
		return 1;
	case 'g':
		if (cli_num(cmd, "--gid-idx", arg, 0, 255, &v))
			return 2;
		net->gid_idx = (long)v;
		return 1;
	case 'm':
		if (cli_parse_mtu(arg, &net->mtu))
			return cli_bad_value(cmd, "--mtu", arg, "256, 512, 1024, 2048 or 4096");
		return 1;
	case PP_OPT_TIMEOUT:
		if (cli_parse_seconds(arg, 0, 86400000, &net->timeout_ms))
			return cli_bad_value(cmd, "--timeout", arg,
					     "0..86400 seconds, up to 3 decimals (0: never)");
		net->timeout_given = true;
		return 1;
	case PP_OPT_IP:
		if (gpunic_parse_ipv4(arg, &net->ip) || !net->ip)
			return cli_bad_value(cmd, "--ip", arg, "a nonzero A.B.C.D");
		return 1;
	case PP_OPT_MAC:
		net->have_mac = true;
		if (gpunic_parse_mac(arg, net->mac))
			return cli_bad_value(cmd, "--mac", arg, "xx:xx:xx:xx:xx:xx");
		return 1;
	case PP_OPT_PEER_MAC:
		net->have_peer_mac = true;
		if (gpunic_parse_mac(arg, net->peer_mac))
			return cli_bad_value(cmd, "--peer-mac", arg, "xx:xx:xx:xx:xx:xx");
		return 1;
	case PP_OPT_BIND:
		return cli_parse_oob_bind(cmd, arg, &net->oob_bind);
	default:
		return -1;
	}
}

int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net)
{
	int rc = parse_value_opt(c, arg, net);

	if (rc != -1)
		return rc;
	switch (c) {
	case PP_OPT_RC:
		net->type = GPUNIC_QPT_RC;
		return 1;
	case PP_OPT_UC:
		net->type = GPUNIC_QPT_UC;
		return 1;
	case PP_OPT_UD:
		return cli_not_applicable(net->cmd, "--ud",
					  "gpunic's QPs are RC and UC (ibv_ud_pingpong has no "
					  "counterpart here)");
	case PP_OPT_LINK:
		if (!gpunic_link_spec_known(arg))
			return cli_bad_value(net->cmd, "--link", arg,
					     "udp:IP[:PORT], dgram:LIP:LPORT,RIP:RPORT, "
					     "shm:NAME,a|b[,create], packet:IFNAME or xdp:IFNAME");
		net->link = arg;
		return 1;
	case PP_OPT_CAPTURE:
		net->capture = arg;
		return 1;
	default:
		return -1;
	}
}

int pp_finish_args(int argc, char **argv, struct pp_net_opts *net)
{
	if (optind == argc - 1) {
		net->server = argv[optind];
		if (cli_check_host(net->cmd, net->server))
			return 2;
	} else if (optind < argc) {
		fprintf(stderr, "%s: one server host at most (try 'gpunic %s --help')\n", net->who,
			net->cmd);
		return 2;
	}
	if (!net->link && net->ip) {
		char quad[16];

		gpunic_ipv4_str(net->ip, quad);
		snprintf(net->udp_link, sizeof(net->udp_link), "udp:%s", quad);
		net->link = net->udp_link;
	}
	if (!net->link && !net->addr_from_oob) {
		fprintf(stderr, "%s: --link or --ip is required (try 'gpunic %s --help')\n",
			net->who, net->cmd);
		return 2;
	}
	/* a udp link binds its own address; the others carry the one --ip gives */
	if (net->link && !net->ip && strncmp(net->link, "udp:", 4)) {
		fprintf(stderr, "%s: --link %s needs --ip, this end's address on it (try 'gpunic "
			"%s --help')\n", net->who, net->link, net->cmd);
		return 2;
	}
	return 0;
}

void pp_report_compat(const struct pp_net_opts *net)
{
	if (net->ib_dev)
		printf("%s: -d %s: gpunic has no RDMA device; its device is the softnic on %s\n",
		       net->who, net->ib_dev, net->link);
	if (net->ib_port)
		printf("%s: -i %ld: the softnic has one port; -i is not used\n", net->who,
		       net->ib_port);
	if (net->gid_idx >= 0)
		printf("%s: -g %ld: gpunic's one GID, ::ffff:<--ip>, answers every index\n",
		       net->who, net->gid_idx);
	fflush(stdout);
}

int pp_open(struct gpunic_ep *e, const struct pp_net_opts *net, size_t buf_len, unsigned access,
	    uint32_t max_send_wr, uint32_t max_recv_wr)
{
	struct gpunic_ep_attr a = {
		.who = net->who,
		.link = net->link,
		.ip = net->ip,
		.mac = net->have_mac ? net->mac : NULL,
		.peer_mac = net->have_peer_mac ? net->peer_mac : NULL,
		.capture = net->capture,
		.deadline_ns = net->timeout_ms ? gpunic_ep_deadline(net->timeout_ms) : 0,
		.type = net->type,
		.buf_len = buf_len,
		.access = access,
		.max_send_wr = max_send_wr,
		.max_recv_wr = max_recv_wr,
	};

	return gpunic_ep_open(e, &a);
}

int pp_tcp_listen(const struct pp_net_opts *net, int *lfd)
{
	int err = gpunic_tcp_listen(net->oob_bind, net->port, lfd);

	if (err)
		fprintf(stderr, "%s: couldn't listen on TCP %s:%u: %s\n", net->who, net->oob_bind,
			net->port, strerror(err));
	else if (net->timeout_given && net->timeout_ms)
		fprintf(stderr, "%s: waiting for a client on %s:%u (up to %.3f s) ...\n", net->who,
			net->oob_bind, net->port, net->timeout_ms / 1000.0);
	else
		fprintf(stderr, "%s: waiting for a client on %s:%u (until one comes) ...\n",
			net->who, net->oob_bind, net->port);
	return err;
}

int pp_tcp_accept(const struct pp_net_opts *net, struct gpunic_ep *e, int lfd, int *fd)
{
	struct gpunic_tcp_wait w = gpunic_ep_tcp_wait(e, 0);
	int err;

	if (!net->timeout_given)
		w.deadline_ns = 0;
	err = gpunic_tcp_accept(lfd, &w, fd);
	if (err)
		fprintf(stderr, "%s: accept: %s\n", net->who,
			err == ETIMEDOUT ? "no client within --timeout" : strerror(err));
	else if (!net->timeout_given && net->timeout_ms)
		e->attr.deadline_ns = gpunic_ep_deadline(net->timeout_ms);
	return err;
}

int pp_tcp_open(const struct pp_net_opts *net, struct gpunic_ep *e, int *fd)
{
	struct gpunic_tcp_wait w;
	int lfd, err;

	if (net->server) {
		/* the server may not listen yet: say at once what this waits for */
		fprintf(stderr, "%s: waiting for the server at %s:%u ...\n", net->who, net->server,
			net->port);
		w = gpunic_ep_tcp_wait(e, 30000);
		err = gpunic_tcp_connect(net->server, net->port, &w, fd);
		if (err)
			fprintf(stderr, "%s: couldn't connect to %s:%u: %s\n", net->who, net->server,
				net->port, strerror(err));
		return err;
	}
	err = pp_tcp_listen(net, &lfd);
	if (err)
		return err;
	err = pp_tcp_accept(net, e, lfd, fd);
	close(lfd);
	return err;
}

struct gpunic_ep_conn pp_conn(const struct pp_net_opts *net, uint32_t my_psn)
{
	struct gpunic_ep_conn c = {
		.mtu = net->mtu,
		.sq_psn = my_psn,
		.rc = net->type == GPUNIC_QPT_RC,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 12,
		.max_rd_atomic = 1,
		.max_dest_rd_atomic = 1,
	};

	return c;
}

void pp_gid_str(const uint8_t gid[16], char *out, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, out, (socklen_t)len))
		snprintf(out, len, "?");
}
