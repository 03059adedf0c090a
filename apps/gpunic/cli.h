/* SPDX-License-Identifier: MIT */
/*
 * What the commands share on the command line: the usage errors, which print what is wrong and
 * where help is and return the exit status 2; the options every command takes (-v, --quiet);
 * timeouts in seconds; the "Exit status:" block that ends every --help; and, for sensor and
 * loop, where they attach and whom they talk to.
 */
#ifndef GPUNIC_APP_CLI_H
#define GPUNIC_APP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/link.h"
#include "gpunic/verbs.h"

/* A nonzero dotted-quad IPv4 address. Return: 0 or EINVAL. */
int cli_parse_ip(const char *s, uint32_t *ip);
int lb_bad_value(const char *cmd, const char *opt, const char *val);
/* "invalid value 'VAL' for OPT: must be WANT": every value a command rejects says what it
 * takes (@want: "1..65535", "256, 512, 1024, 2048 or 4096"). Return: 2. */
int cli_bad_value(const char *cmd, const char *opt, const char *val, const char *want);
/* An option that cannot apply to gpunic, and why. Return: 2. */
int cli_not_applicable(const char *cmd, const char *opt, const char *why);
int lb_bad_option(const char *cmd, int c, const char *opt);	/* c == ':': value missing */
int lb_extra_arg(const char *cmd, const char *arg);

/*
 * The options every command takes. -v raises the library's log level a step (at least to info:
 * the first -v shows what GPUNIC_LOG_LEVEL=info would, -vv debug); --quiet (no short form:
 * -q means something else to perftest users) leaves only errors.
 */
#define CLI_OPT_QUIET 299
#define CLI_COMMON_LONGOPTS                                                       \
	{ "verbose", no_argument, NULL, 'v' },                                    \
	{ "quiet", no_argument, NULL, CLI_OPT_QUIET }
/* Their help lines. */
#define CLI_COMMON_USAGE                                                          \
	"  -v, --verbose        more library messages on stderr (again: debug)\n"   \
	"      --quiet          library errors only\n"
/* One of CLI_COMMON_LONGOPTS. Return: 1 handled, -1 not one of them. */
int cli_parse_common_opt(int c);

/*
 * Seconds with up to 3 decimals ("60", "0.5") into milliseconds within [min_ms, max_ms]: every
 * timeout is `--timeout SECONDS`. Return: 0 or EINVAL.
 */
int cli_parse_seconds(const char *s, int min_ms, int max_ms, int *ms);

/*
 * The block that ends every --help: "Exit status:" and one line per code. @ok and @failed say
 * what 0 and 1 mean for the command; @more (NULL: none) lists its other codes, one
 * "  N  text\n" line each. 2 is always a usage error.
 */
void cli_usage_exit(FILE *out, const char *ok, const char *failed, const char *more);

/*
 * What the receiving side of a link threw away before or while parsing: the link's own
 * rx_errors (runts, oversized or unreadable datagrams) and the NIC's malformed frames by
 * reason. One line of text (" receive errors: ...", a newline included), or a JSON object.
 */
void cli_print_rx_errors(FILE *out, const struct gpunic_link *link,
			 const struct gpunic_nic_counters *nc);
void cli_json_rx_errors(FILE *out, const struct gpunic_link *link,
			const struct gpunic_nic_counters *nc);

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

/* The longest out-of-band wait --timeout takes (an hour). */
#define CLI_OOB_TIMEOUT_MAX_MS 3600000

#define CLI_NET_LONGOPTS                                                          \
	{ "link", required_argument, NULL, CLI_OPT_LINK },                        \
	{ "ip", required_argument, NULL, CLI_OPT_IP },                            \
	{ "oob-port", required_argument, NULL, CLI_OPT_OOB_PORT },                \
	{ "timeout", required_argument, NULL, CLI_OPT_OOB_TIMEOUT },              \
	{ "oob-timeout", required_argument, NULL, CLI_OPT_OOB_TIMEOUT },          \
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

/*
 * --oob-bind ADDR: where an out-of-band listener (loop, pingpong and immtest servers) listens.
 * Every listener defaults to 127.0.0.1: the exchange hands out a QP and, for the loop, a
 * memory key (docs/SECURITY.md). 0.0.0.0 listens on every address. Return: 1, or 2 after a
 * usage error.
 */
int cli_parse_oob_bind(const char *cmd, const char *arg, const char **bind_addr);

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
/* @host, a server a client will connect to, must resolve to an IPv4 address: a name that does
 * not (or no address at all, "300.1.1.1") is a usage error, said on stderr. A resolver that does
 * not answer now is not: the connect says what became of it. Return: 0 or 2. */
int cli_check_host(const char *cmd, const char *host);
/* @n bytes a peer sent, fit to print in quotes: printable ASCII as it is, anything else (quotes,
 * backslashes, control bytes, NULs) as \xNN; cut short, with "...", where @out (@len bytes)
 * cannot hold more. */
void cli_escape(char *out, size_t len, const void *in, size_t n);

#endif
