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

void pp_net_init(struct pp_net_opts *net, const char *cmd, unsigned timeout_s)
{
	memset(net, 0, sizeof(*net));
	net->cmd = cmd;
	snprintf(net->who, sizeof(net->who), "gpunic %s", cmd);
	net->port = 18515;
	net->timeout_s = timeout_s;
	net->type = GPUNIC_QPT_RC;
	net->mtu = GPUNIC_MTU_1024;
}

bool pp_parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return !errno && end != s && !*end && *s != '-' && *v <= max;
}

static bool parse_mtu(const char *s, enum gpunic_mtu *mtu)
{
	unsigned long v;

	if (!pp_parse_uint(s, 4096, &v))
		return false;
	for (int m = GPUNIC_MTU_256; m <= GPUNIC_MTU_4096; m++)
		if (gpunic_mtu_bytes((enum gpunic_mtu)m) == v) {
			*mtu = (enum gpunic_mtu)m;
			return true;
		}
	return false;
}

int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net)
{
	unsigned long v;

	switch (c) {
	case 'p':
		if (!pp_parse_uint(arg, 65535, &v) || !v)
			return 0;
		net->port = (uint16_t)v;
		return 1;
	case 'm':
		return parse_mtu(arg, &net->mtu);
	case 'g':	/* gpunic has the one GID ::ffff:<--ip> */
		return pp_parse_uint(arg, 255, &v);
	case 't':
		if (!pp_parse_uint(arg, 86400, &v))
			return 0;
		net->timeout_s = (unsigned)v;
		return 1;
	case PP_OPT_RC:
		net->type = GPUNIC_QPT_RC;
		return 1;
	case PP_OPT_UC:
		net->type = GPUNIC_QPT_UC;
		return 1;
	case PP_OPT_LINK:
		net->link = arg;
		return 1;
	case PP_OPT_IP:
		return !gpunic_parse_ipv4(arg, &net->ip) && net->ip;
	case PP_OPT_MAC:
		net->have_mac = true;
		return !gpunic_parse_mac(arg, net->mac);
	case PP_OPT_PEER_MAC:
		net->have_peer_mac = true;
		return !gpunic_parse_mac(arg, net->peer_mac);
	case PP_OPT_BIND:
		net->bind_addr = arg;
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

int pp_finish_args(int argc, char **argv, struct pp_net_opts *net)
{
	if (optind == argc - 1) {
		net->server = argv[optind];
	} else if (optind < argc) {
		fprintf(stderr, "%s: one server host at most\n", net->who);
		return 2;
	}
	if (!net->link || !net->ip) {
		fprintf(stderr, "%s: --link and --ip are required\n", net->who);
		return 2;
	}
	return 0;
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
		.deadline_ns = net->timeout_s ? gpunic_ep_deadline((int)net->timeout_s * 1000) : 0,
		.type = net->type,
		.buf_len = buf_len,
		.access = access,
		.max_send_wr = max_send_wr,
		.max_recv_wr = max_recv_wr,
	};

	return gpunic_ep_open(e, &a);
}

int pp_tcp_open(const struct pp_net_opts *net, struct gpunic_ep *e, int *fd)
{
	struct gpunic_tcp_wait w;
	int lfd, err;

	if (net->server) {
		w = gpunic_ep_tcp_wait(e, 30000);
		err = gpunic_tcp_connect(net->server, net->port, &w, fd);
		if (err)
			fprintf(stderr, "%s: couldn't connect to %s:%u: %s\n", net->who, net->server,
				net->port, strerror(err));
		return err;
	}
	err = gpunic_tcp_listen(net->bind_addr, net->port, &lfd);
	if (err) {
		fprintf(stderr, "%s: couldn't listen to port %u: %s\n", net->who, net->port,
			strerror(err));
		return err;
	}
	w = gpunic_ep_tcp_wait(e, 0);
	err = gpunic_tcp_accept(lfd, &w, fd);
	close(lfd);
	if (err)
		fprintf(stderr, "%s: accept: %s\n", net->who, strerror(err));
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
