/* SPDX-License-Identifier: MIT */
/*
 * What the commands share on the command line: the usage errors, which print what is wrong and
 * where help is and return the exit status 2; the options every command takes (-v, --quiet);
 * timeouts in seconds; the "Exit status:" block that ends every --help; and, for sensor and
 * loop, where they attach and whom they talk to.
 */
#ifndef GPUNIC_APP_CLI_H
#define GPUNIC_APP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpunic/link.h"
#include "gpunic/verbs.h"

/* A nonzero dotted-quad IPv4 address. Return: 0 or EINVAL. */
int cli_parse_ip(const char *s, uint32_t *ip);
/* "invalid value 'VAL' for OPT: must be WANT": every value a command rejects says what it
 * takes (@want: "1..65535", "256, 512, 1024, 2048 or 4096"). Return: 2. */
int cli_bad_value(const char *cmd, const char *opt, const char *val, const char *want);
/* An option that cannot apply to gpunic, and why. Return: 2. */
int cli_not_applicable(const char *cmd, const char *opt, const char *why);
/* An option the command does not know (@c '?'), or one without its value (@c ':'), as
 * getopt_long() found it. Return: 2. */
int cli_bad_option(const char *cmd, int c, const char *opt);
/* An operand the command does not take. Return: 2. */
int cli_extra_arg(const char *cmd, const char *arg);

/*
 * Numbers on the command line follow the library's one rule (gpunic/parse.h): decimal or 0x
 * hexadecimal, no leading 0, no sign; times decimal with up to 3 decimals.
 *
 * cli_num(): the value of @opt within [@min, @max], or the usage error that names the range
 * ("must be 1..65535"). Return: 0 or 2.
 */
int cli_num(const char *cmd, const char *opt, const char *arg, uint64_t min, uint64_t max,
	    uint64_t *v);
/* A path MTU in bytes (256, 512, 1024, 2048 or 4096). Return: 0 or EINVAL. */
int cli_parse_mtu(const char *s, enum gpunic_mtu *mtu);

/*
 * The option loop every command runs, what they all do said once: getopt_long() started over
 * with no messages of its own, --help/-h answered (usage on stdout, exit 0), -v and --quiet
 * applied, and an unknown option or a missing value refused with the command's name (exit 2).
 * Every other option is the command's:
 *
 *	struct cli_getopt g = { .cmd = "loop", .shortopts = ":hv", .longopts = longopts,
 *				.usage = usage };
 *	while ((c = cli_getopt_next(&g, argc, argv)))
 *		switch (c) { ... a bad value returns 2 ... }
 *	if (g.exit >= 0)
 *		return g.exit;
 *
 * @shortopts starts with ':' (getopt's missing-value report) and holds "hv".
 */
struct cli_getopt {
	const char *cmd;
	const char *shortopts;
	const struct option *longopts;
	void (*usage)(FILE *out);
	bool started;
	unsigned verbose;	/* -v seen this many times */
	int exit;		/* after the loop: -1 go on, else the command's exit status */
};

/* The next option for the command itself, or 0 when the options are over: the operands start
 * at optind, or g->exit says how the command ends. */
int cli_getopt_next(struct cli_getopt *g, int argc, char **argv);

/*
 * The options every command takes (cli_getopt_next applies them). -v raises the library's log
 * level a step (at least to info: the first -v shows what GPUNIC_LOG_LEVEL=info would, -vv
 * debug); --quiet (no short form: -q means something else to perftest users) leaves only
 * errors.
 */
#define CLI_OPT_QUIET 299
#define CLI_COMMON_LONGOPTS                                                       \
	{ "verbose", no_argument, NULL, 'v' },                                    \
	{ "quiet", no_argument, NULL, CLI_OPT_QUIET }
/* Their help lines. */
#define CLI_COMMON_USAGE                                                          \
	"  -v, --verbose        more library messages on stderr (again: debug)\n"   \
	"      --quiet          library errors only\n"

/*
 * Seconds with up to 3 decimals ("60", "0.5") into milliseconds within [min_ms, max_ms]: every
 * timeout is `--timeout SECONDS`. Return: 0 or EINVAL.
 */
int cli_parse_seconds(const char *s, int min_ms, int max_ms, int *ms);
/* Microseconds with up to 3 decimals ("2.5") into nanoseconds, up to 1000 seconds
 * (--interval-us). Return: 0 or EINVAL. */
int cli_parse_us(const char *s, uint64_t *ns);

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
