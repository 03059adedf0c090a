// SPDX-License-Identifier: MIT
/*
 * Usage errors of the loopback commands (cli.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpunic/endpoint.h"
#include "loopback.h"

int cli_parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v;

	if (gpunic_parse_ipv4(s, &v) || !v)
		return EINVAL;
	*ip = v;
	return 0;
}

int lb_bad_value(const char *cmd, const char *opt, const char *val)
{
	fprintf(stderr, "gpunic %s: invalid value '%s' for %s (try 'gpunic %s --help')\n", cmd, val,
		opt, cmd);
	return 2;
}

int lb_bad_option(const char *cmd, int c, const char *opt)
{
	if (c == ':')
		fprintf(stderr, "gpunic %s: option '%s' needs a value (try 'gpunic %s --help')\n",
			cmd, opt, cmd);
	else
		fprintf(stderr, "gpunic %s: unknown option '%s' (try 'gpunic %s --help')\n", cmd,
			opt, cmd);
	return 2;
}

int lb_extra_arg(const char *cmd, const char *arg)
{
	fprintf(stderr, "gpunic %s: unexpected argument '%s' (try 'gpunic %s --help')\n", cmd, arg,
		cmd);
	return 2;
}

void cli_net_usage(FILE *out, bool ring)
{
	fprintf(out,
		"Static peer (no out-of-band exchange: a peer configured by hand, like an FPGA):\n"
		"  --peer-qpn N         the peer's QP number; with --peer-ip, replaces the exchange\n"
		"  --peer-ip A.B.C.D    the peer's address\n"
		"  --peer-psn N         the first PSN the peer sends (default 0)\n"
		"  --peer-mac MAC       the peer's MAC (default 02:00:<peer-ip>)\n"
		"  --peer-udp-port N    the peer's RoCEv2 port (default 4791)\n"
		"%s"
		"  --psn N              this end's first PSN (default random)\n"
		"At start this end prints (on stderr) what the peer is to be configured with:\n"
		"its QP number, PSN and address%s.\n",
		ring ? "  --rkey N             the rkey of the peer's receive ring (write-imm)\n"
		       "  --peer-va N          the ring's address (write-imm)\n"
		       "  --peer-slots N       the ring's slots (default 1024)\n" : "",
		ring ? "" : ", and its ring's address, rkey and slots");
}

/* A number in [min, max], decimal or 0x hex (QP numbers, keys and addresses are read in hex). */
static int parse_num(const char *arg, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;

	if (!arg || !*arg || *arg == '-' || *arg == '+' || *arg == ' ')
		return EINVAL;
	errno = 0;
	*v = strtoull(arg, &end, 0);
	if (errno || *end || *v < min || *v > max)
		return EINVAL;
	return 0;
}

static const char *opt_name(int c)
{
	static const char *const names[] = {
		[CLI_OPT_PEER_QPN - CLI_OPT_PEER_QPN] = "--peer-qpn",
		[CLI_OPT_PEER_PSN - CLI_OPT_PEER_QPN] = "--peer-psn",
		[CLI_OPT_PEER_IP - CLI_OPT_PEER_QPN] = "--peer-ip",
		[CLI_OPT_PEER_MAC - CLI_OPT_PEER_QPN] = "--peer-mac",
		[CLI_OPT_PEER_UDP_PORT - CLI_OPT_PEER_QPN] = "--peer-udp-port",
		[CLI_OPT_RKEY - CLI_OPT_PEER_QPN] = "--rkey",
		[CLI_OPT_PEER_VA - CLI_OPT_PEER_QPN] = "--peer-va",
		[CLI_OPT_PEER_SLOTS - CLI_OPT_PEER_QPN] = "--peer-slots",
	};

	return names[c - CLI_OPT_PEER_QPN];
}

int cli_parse_net_opt(const char *cmd, int c, const char *arg, struct cli_net *n)
{
	uint64_t v = 0;
	int rc = 0;

	switch (c) {
	case CLI_OPT_LINK:
		/* a spec of no known kind is a usage error (exit 2); the rest is checked when
		 * the link opens */
		if (!gpunic_link_spec_known(arg))
			return lb_bad_value(cmd, "--link", arg);
		n->link = arg;
		return 1;
	case CLI_OPT_IP:
		return cli_parse_ip(arg, &n->ip) ? lb_bad_value(cmd, "--ip", arg) : 1;
	case CLI_OPT_OOB_PORT:
		if (lb_parse_u64(arg, 1, 65535, &v))
			return lb_bad_value(cmd, "--oob-port", arg);
		n->oob_port = (uint16_t)v;
		return 1;
	case CLI_OPT_OOB_BIND: {
		uint32_t ip;

		if (cli_parse_ip(arg, &ip))
			return lb_bad_value(cmd, "--oob-bind", arg);
		n->oob_bind = arg;
		return 1;
	}
	case CLI_OPT_OOB_TIMEOUT:
		if (lb_parse_u64(arg, 1, 3600, &v))
			return lb_bad_value(cmd, "--oob-timeout-s", arg);
		n->oob_timeout_ms = (int)v * 1000;
		return 1;
	case CLI_OPT_PEER_QPN:
		/* 0 and 1 are the special QPs, never a peer's */
		rc = parse_num(arg, 2, 0xffffff, &v);
		n->peer.qpn = (uint32_t)v;
		break;
	case CLI_OPT_PEER_PSN:
		rc = parse_num(arg, 0, 0xffffff, &v);
		n->peer.psn = (uint32_t)v;
		break;
	case CLI_OPT_PEER_IP:
		if (cli_parse_ip(arg, &n->peer.ip))
			return lb_bad_value(cmd, "--peer-ip", arg);
		break;
	case CLI_OPT_PEER_MAC:
		if (gpunic_parse_mac(arg, n->peer.mac))
			return lb_bad_value(cmd, "--peer-mac", arg);
		break;
	case CLI_OPT_PEER_UDP_PORT:
		rc = parse_num(arg, 1, 65535, &v);
		n->peer.udp_port = (uint16_t)v;
		break;
	case CLI_OPT_RKEY:
		rc = parse_num(arg, 0, UINT32_MAX, &v);
		n->peer.rkey = (uint32_t)v;
		break;
	case CLI_OPT_PEER_VA:
		rc = parse_num(arg, 0, UINT64_MAX, &v);
		n->peer.va = v;
		break;
	case CLI_OPT_PEER_SLOTS:
		/* the ring's length must fit gpunic_qp_info's 32 bits */
		rc = parse_num(arg, 1, UINT32_MAX / LB_SLOT_BYTES, &v);
		if (!rc && (v & (v - 1)))
			rc = EINVAL;
		n->peer.len = (uint32_t)(v * LB_SLOT_BYTES);
		break;
	case CLI_OPT_PSN:
		if (parse_num(arg, 0, 0xffffff, &v))
			return lb_bad_value(cmd, "--psn", arg);
		n->psn = (uint32_t)v;
		n->psn_given = true;
		return 1;
	default:
		return -1;
	}
	if (rc)
		return lb_bad_value(cmd, opt_name(c), arg);
	n->peer_given |= 1u << (c - CLI_OPT_PEER_QPN);
	return 1;
}

static bool given(const struct cli_net *n, enum cli_opt o)
{
	return n->peer_given & 1u << (o - CLI_OPT_PEER_QPN);
}

int cli_finish_net(const char *cmd, struct cli_net *n, bool ring)
{
	if (!n->peer_given)
		return 0;
	if (!given(n, CLI_OPT_PEER_QPN) || !given(n, CLI_OPT_PEER_IP)) {
		fprintf(stderr, "gpunic %s: a static peer needs --peer-qpn and --peer-ip "
				"(try 'gpunic %s --help')\n", cmd, cmd);
		return 2;
	}
	if (ring && (!given(n, CLI_OPT_RKEY) || !given(n, CLI_OPT_PEER_VA))) {
		fprintf(stderr, "gpunic %s: --mode write-imm to a static peer needs its ring's "
				"--rkey and --peer-va (try 'gpunic %s --help')\n", cmd, cmd);
		return 2;
	}
	if (!given(n, CLI_OPT_PEER_MAC))
		gpunic_mac_from_ipv4(n->peer.ip, n->peer.mac);
	if (!given(n, CLI_OPT_PEER_SLOTS))
		n->peer.len = LB_DEFAULT_SLOTS * LB_SLOT_BYTES;
	n->peer_static = true;
	return 0;
}

void cli_print_local(FILE *out, const char *cmd, const struct gpunic_qp_info *me)
{
	char ip[16];

	gpunic_ipv4_str(me->ip, ip);
	fprintf(out, "gpunic %s: this end: qpn 0x%x psn 0x%x ip %s mac %02x:%02x:%02x:%02x:%02x:%02x "
		"udp-port %u", cmd, me->qpn, me->psn, ip, me->mac[0], me->mac[1], me->mac[2],
		me->mac[3], me->mac[4], me->mac[5], me->udp_port ? me->udp_port : 4791);
	if (me->len)
		fprintf(out, " va 0x%" PRIx64 " rkey 0x%x slots %u", me->va, me->rkey,
			me->len / LB_SLOT_BYTES);
	fputc('\n', out);
	fflush(out);
}
