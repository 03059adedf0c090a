// SPDX-License-Identifier: MIT
/*
 * What the commands share on the command line (cli.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpunic/endpoint.h"
#include "gpunic/log.h"
#include "gpunic/parse.h"
#include "loopback.h"

int cli_parse_ip(const char *s, uint32_t *ip)
{
	uint32_t v;

	if (gpunic_parse_ipv4(s, &v) || !v)
		return EINVAL;
	*ip = v;
	return 0;
}

int cli_parse_oob_bind(const char *cmd, const char *arg, const char **bind_addr)
{
	uint32_t ip;

	if (gpunic_parse_ipv4(arg, &ip))
		return cli_bad_value(cmd, "--oob-bind", arg,
				     "an IPv4 address of this host: 127.0.0.1 (the default), or "
				     "0.0.0.0 for every address");
	*bind_addr = arg;
	return 1;
}

int cli_bad_value(const char *cmd, const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "gpunic %s: invalid value '%s' for %s: must be %s (try 'gpunic %s --help')\n",
		cmd, val, opt, want, cmd);
	return 2;
}

int cli_not_applicable(const char *cmd, const char *opt, const char *why)
{
	fprintf(stderr, "gpunic %s: %s does not apply: %s\n", cmd, opt, why);
	return 2;
}

/* -v and --quiet (CLI_COMMON_LONGOPTS). */
static void common_opt(int c)
{
	int level;

	if (c == CLI_OPT_QUIET) {
		gpunic_log_set_level(GPUNIC_LOG_ERR);
		return;
	}
	/* from the default (warning) the first -v goes to info: notice says little */
	level = gpunic_log_level();
	gpunic_log_set_level(level < GPUNIC_LOG_INFO ? GPUNIC_LOG_INFO : level + 1);
}

int cli_parse_seconds(const char *s, int min_ms, int max_ms, int *ms)
{
	uint64_t v;

	if (gpunic_parse_fixed(s, 3, (uint64_t)max_ms, &v) || v < (uint64_t)min_ms)
		return EINVAL;
	*ms = (int)v;
	return 0;
}

int cli_parse_us(const char *s, uint64_t *ns)
{
	return gpunic_parse_fixed(s, 3, 1000000000000ull, ns) ? EINVAL : 0;
}

int cli_num(const char *cmd, const char *opt, const char *arg, uint64_t min, uint64_t max,
	    uint64_t *v)
{
	char want[48];

	if (!gpunic_parse_uint(arg, min, max, v))
		return 0;
	snprintf(want, sizeof(want), "%" PRIu64 "..%" PRIu64, min, max);
	return cli_bad_value(cmd, opt, arg, want);
}

int cli_parse_mtu(const char *s, enum gpunic_mtu *mtu)
{
	uint64_t v;

	if (gpunic_parse_uint(s, 256, 4096, &v))
		return EINVAL;
	for (int m = GPUNIC_MTU_256; m <= GPUNIC_MTU_4096; m++) {
		if (gpunic_mtu_bytes((enum gpunic_mtu)m) == v) {
			*mtu = (enum gpunic_mtu)m;
			return 0;
		}
	}
	return EINVAL;
}

int cli_getopt_next(struct cli_getopt *g, int argc, char **argv)
{
	int c;

	if (!g->started) {
		opterr = 0;	/* our own messages name the command and the offending word */
		optind = 1;
		g->started = true;
		g->verbose = 0;
		g->exit = -1;
	}
	while ((c = getopt_long(argc, argv, g->shortopts, g->longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			g->usage(stdout);
			g->exit = 0;
			return 0;
		case '?':
		case ':':
			g->exit = cli_bad_option(g->cmd, c, argv[optind - 1]);
			return 0;
		case 'v':
			g->verbose++;
			common_opt(c);
			continue;
		case CLI_OPT_QUIET:
			common_opt(c);
			continue;
		default:
			return c;
		}
	}
	return 0;
}

void cli_usage_exit(FILE *out, const char *ok, const char *failed, const char *more)
{
	fprintf(out,
		"\n"
		"Exit status:\n"
		"  0  %s\n"
		"  1  %s\n"
		"  2  usage error: an unknown option, an invalid value, a missing argument\n"
		"%s",
		ok, failed, more ? more : "");
}

void cli_print_rx_errors(FILE *out, const struct gpunic_link *link,
			 const struct gpunic_nic_counters *nc)
{
	uint64_t malformed = nc->drops[GPUNIC_DROP_MALFORMED];

	fprintf(out, " receive errors: %llu frames the link threw away (runt, oversized or "
		"unreadable), %llu malformed", (unsigned long long)(link ? link->stats.rx_errors : 0),
		(unsigned long long)malformed);
	for (int i = 0; i < GPUNIC_WIRE_ERR_MAX; i++)
		if (nc->wire_errs[i])
			fprintf(out, " %s=%llu", gpunic_wire_err_name((enum gpunic_wire_err)i),
				(unsigned long long)nc->wire_errs[i]);
	fputc('\n', out);
}

void cli_json_rx_errors(FILE *out, const struct gpunic_link *link,
			const struct gpunic_nic_counters *nc)
{
	bool first = true;

	fprintf(out, "{\"link\": %llu, \"malformed\": %llu, \"wire\": {",
		(unsigned long long)(link ? link->stats.rx_errors : 0),
		(unsigned long long)nc->drops[GPUNIC_DROP_MALFORMED]);
	for (int i = 0; i < GPUNIC_WIRE_ERR_MAX; i++) {
		if (!nc->wire_errs[i])
			continue;
		fprintf(out, "%s\"%s\": %llu", first ? "" : ", ",
			gpunic_wire_err_name((enum gpunic_wire_err)i),
			(unsigned long long)nc->wire_errs[i]);
		first = false;
	}
	fputs("}}", out);
}

int cli_bad_option(const char *cmd, int c, const char *opt)
{
	if (c == ':')
		fprintf(stderr, "gpunic %s: option '%s' needs a value (try 'gpunic %s --help')\n",
			cmd, opt, cmd);
	else
		fprintf(stderr, "gpunic %s: unknown option '%s' (try 'gpunic %s --help')\n", cmd,
			opt, cmd);
	return 2;
}

int cli_extra_arg(const char *cmd, const char *arg)
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

/* The name and the valid values of the --peer-* options, for their usage errors. */
static void opt_name(int c, const char **name, const char **want)
{
	static const char *const names[][2] = {
		[CLI_OPT_PEER_QPN - CLI_OPT_PEER_QPN] = { "--peer-qpn", "2..0xffffff" },
		[CLI_OPT_PEER_PSN - CLI_OPT_PEER_QPN] = { "--peer-psn", "0..0xffffff" },
		[CLI_OPT_PEER_IP - CLI_OPT_PEER_QPN] = { "--peer-ip", "a nonzero A.B.C.D" },
		[CLI_OPT_PEER_MAC - CLI_OPT_PEER_QPN] = { "--peer-mac", "xx:xx:xx:xx:xx:xx" },
		[CLI_OPT_PEER_UDP_PORT - CLI_OPT_PEER_QPN] = { "--peer-udp-port", "1..65535" },
		[CLI_OPT_RKEY - CLI_OPT_PEER_QPN] = { "--rkey", "0..0xffffffff" },
		[CLI_OPT_PEER_VA - CLI_OPT_PEER_QPN] = { "--peer-va", "0..0xffffffffffffffff" },
		[CLI_OPT_PEER_SLOTS - CLI_OPT_PEER_QPN] = { "--peer-slots",
							    "a power of two, 1..524288" },
	};

	*name = names[c - CLI_OPT_PEER_QPN][0];
	*want = names[c - CLI_OPT_PEER_QPN][1];
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
			return cli_bad_value(cmd, "--link", arg,
					     "shm:NAME,a|b[,create], udp:IP[:PORT], "
					     "dgram:LIP:LPORT,RIP:RPORT, packet:IFNAME or xdp:IFNAME");
		n->link = arg;
		return 1;
	case CLI_OPT_IP:
		return cli_parse_ip(arg, &n->ip) ? cli_bad_value(cmd, "--ip", arg, "a nonzero A.B.C.D") :
						   1;
	case CLI_OPT_OOB_PORT:
		if (gpunic_parse_uint(arg, 1, 65535, &v))
			return cli_bad_value(cmd, "--oob-port", arg, "1..65535");
		n->oob_port = (uint16_t)v;
		return 1;
	case CLI_OPT_OOB_BIND:
		return cli_parse_oob_bind(cmd, arg, &n->oob_bind);
	case CLI_OPT_OOB_TIMEOUT:
		/* --oob-timeout-s and --oob-timeout, the old spellings, mean the same */
		if (cli_parse_seconds(arg, 1, CLI_OOB_TIMEOUT_MAX_MS, &n->oob_timeout_ms))
			return cli_bad_value(cmd, "--timeout", arg, "0.001..3600 seconds");
		return 1;
	case CLI_OPT_PEER_QPN:
		/* 0 and 1 are the special QPs, never a peer's */
		rc = gpunic_parse_uint(arg, 2, 0xffffff, &v);
		n->peer.qpn = (uint32_t)v;
		break;
	case CLI_OPT_PEER_PSN:
		rc = gpunic_parse_uint(arg, 0, 0xffffff, &v);
		n->peer.psn = (uint32_t)v;
		break;
	case CLI_OPT_PEER_IP:
		if (cli_parse_ip(arg, &n->peer.ip))
			rc = EINVAL;
		break;
	case CLI_OPT_PEER_MAC:
		if (gpunic_parse_mac(arg, n->peer.mac))
			rc = EINVAL;
		break;
	case CLI_OPT_PEER_UDP_PORT:
		rc = gpunic_parse_uint(arg, 1, 65535, &v);
		n->peer.udp_port = (uint16_t)v;
		break;
	case CLI_OPT_RKEY:
		rc = gpunic_parse_uint(arg, 0, UINT32_MAX, &v);
		n->peer.rkey = (uint32_t)v;
		break;
	case CLI_OPT_PEER_VA:
		rc = gpunic_parse_uint(arg, 0, UINT64_MAX, &v);
		n->peer.va = v;
		break;
	case CLI_OPT_PEER_SLOTS:
		/* the ring's length must fit gpunic_qp_info's 32 bits */
		rc = gpunic_parse_uint(arg, 1, UINT32_MAX / LB_SLOT_BYTES, &v);
		if (!rc && (v & (v - 1)))
			rc = EINVAL;
		n->peer.len = (uint32_t)(v * LB_SLOT_BYTES);
		break;
	case CLI_OPT_PSN:
		if (gpunic_parse_uint(arg, 0, 0xffffff, &v))
			return cli_bad_value(cmd, "--psn", arg, "0..0xffffff");
		n->psn = (uint32_t)v;
		n->psn_given = true;
		return 1;
	default:
		return -1;
	}
	if (rc) {
		const char *name, *want;

		opt_name(c, &name, &want);
		return cli_bad_value(cmd, name, arg, want);
	}
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

int cli_check_host(const char *cmd, const char *host)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct in_addr a;
	int rc;

	/* digits and dots are an address (in any form the resolver takes, 127.1 too), good or
	 * not: no name server is asked about 300.1.1.1 */
	if (host[0] && strspn(host, "0123456789.") == strlen(host)) {
		if (inet_aton(host, &a))
			return 0;
		fprintf(stderr, "gpunic %s: cannot resolve host '%s': not an IPv4 address (try "
			"'gpunic %s --help')\n", cmd, host, cmd);
		return 2;
	}
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (!rc) {
		freeaddrinfo(ai);
		return 0;
	}
	if (rc == EAI_AGAIN)
		return 0;
	fprintf(stderr, "gpunic %s: cannot resolve host '%s': %s (try 'gpunic %s --help')\n", cmd,
		host, gai_strerror(rc), cmd);
	return 2;
}

void cli_escape(char *out, size_t len, const void *in, size_t n)
{
	const uint8_t *b = in;
	size_t o = 0;

	if (!len)
		return;
	for (size_t i = 0; i < n; i++) {
		bool plain = b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\'' && b[i] != '\\';

		/* room for this byte, and for "..." and the NUL after it */
		if (o + (plain ? 1 : 4) + 4 > len) {
			snprintf(out + o, len - o, "...");
			return;
		}
		if (plain)
			out[o++] = (char)b[i];
		else
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", b[i]);
	}
	out[o] = '\0';
}
