/* SPDX-License-Identifier: MIT */
/*
 * What the loopback commands (sensor, loop, bench) share on the command line: the usage errors,
 * which print what is wrong and where help is and return the exit status 2.
 */
#ifndef GPUNIC_APP_CLI_H
#define GPUNIC_APP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/verbs.h"

/* A nonzero dotted-quad IPv4 address. Return: 0 or EINVAL. */
int cli_parse_ip(const char *s, uint32_t *ip);
int lb_bad_value(const char *cmd, const char *opt, const char *val);
int lb_bad_option(const char *cmd, int c, const char *opt);	/* c == ':': value missing */
int lb_extra_arg(const char *cmd, const char *arg);

/*
 * Where `gpunic sensor` and `gpunic loop` attach and whom they talk to: one option table for
 * both. A static peer (--peer-qpn and --peer-ip given) replaces the out-of-band exchange, for a
 * peer that speaks none (an FPGA configured by hand); this end then prints its own parameters
 * for the peer's configuration.
 */
struct cli_net {
	const char *link;
	uint32_t ip;
	uint16_t oob_port;
	const char *oob_bind;		/* the loop's listening address (--oob-bind) */
	int oob_timeout_ms;
	bool peer_static;		/* the fields below describe the peer */
	struct gpunic_qp_info peer;	/* len: its ring's bytes (slots * LB_SLOT_BYTES) */
	unsigned peer_given;		/* enum cli_opt bits of the --peer-* options seen */
	bool psn_given;
	uint32_t psn;			/* --psn: this end's first PSN */
};

enum cli_opt {
	CLI_OPT_LINK = 300,
	CLI_OPT_IP,
	CLI_OPT_OOB_PORT,
	CLI_OPT_OOB_TIMEOUT,
	CLI_OPT_PEER_QPN,
	CLI_OPT_PEER_PSN,
	CLI_OPT_PEER_IP,
	CLI_OPT_PEER_MAC,
	CLI_OPT_PEER_UDP_PORT,
	CLI_OPT_RKEY,
	CLI_OPT_PEER_VA,
	CLI_OPT_PEER_SLOTS,
	CLI_OPT_PSN,
	CLI_OPT_OOB_BIND,
};

#define CLI_NET_LONGOPTS                                                          \
	{ "link", required_argument, NULL, CLI_OPT_LINK },                        \
	{ "ip", required_argument, NULL, CLI_OPT_IP },                            \
	{ "oob-port", required_argument, NULL, CLI_OPT_OOB_PORT },                \
	{ "oob-timeout-s", required_argument, NULL, CLI_OPT_OOB_TIMEOUT },        \
	{ "peer-qpn", required_argument, NULL, CLI_OPT_PEER_QPN },                \
	{ "peer-psn", required_argument, NULL, CLI_OPT_PEER_PSN },                \
	{ "peer-ip", required_argument, NULL, CLI_OPT_PEER_IP },                  \
	{ "peer-mac", required_argument, NULL, CLI_OPT_PEER_MAC },                \
	{ "peer-udp-port", required_argument, NULL, CLI_OPT_PEER_UDP_PORT },      \
	{ "rkey", required_argument, NULL, CLI_OPT_RKEY },                        \
	{ "peer-va", required_argument, NULL, CLI_OPT_PEER_VA },                  \
	{ "peer-slots", required_argument, NULL, CLI_OPT_PEER_SLOTS },            \
	{ "psn", required_argument, NULL, CLI_OPT_PSN },                          \
	{ "oob-bind", required_argument, NULL, CLI_OPT_OOB_BIND }

/* The help text of the static peer options (@ring: the sensor's, which writes into a ring). */
void cli_net_usage(FILE *out, bool ring);
/* One of CLI_NET_LONGOPTS. Return: 1 parsed, -1 not one of them, else the exit status of a
 * usage error (2). */
int cli_parse_net_opt(const char *cmd, int c, const char *arg, struct cli_net *n);
/* After the options: a static peer's options are whole (@ring: it needs --rkey and --peer-va).
 * Return: 0 or 2. */
int cli_finish_net(const char *cmd, struct cli_net *n, bool ring);
/* This end's parameters, for a static peer's configuration: one line. */
void cli_print_local(FILE *out, const char *cmd, const struct gpunic_qp_info *me);

#endif
