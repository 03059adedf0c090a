/* SPDX-License-Identifier: MIT */
/*
 * What `gpunic pingpong` and `gpunic immtest` share: the options that say where the endpoint
 * attaches (one table for both), and the TCP connection of their exchange. The endpoint itself
 * (link, NIC, QP, the peer's MAC learned from the wire) is libgpunic's struct gpunic_ep.
 *
 * Functions return 0 or a positive errno value and report what failed on stderr, prefixed
 * "gpunic <command>: ".
 */
#ifndef GPUNIC_APP_PINGPONG_H
#define GPUNIC_APP_PINGPONG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "gpunic/endpoint.h"

/* Where and how the endpoint attaches: the options both commands take. */
struct pp_net_opts {
	const char *cmd;          /* "pingpong", "immtest": prefix of messages */
	char who[32];             /* "gpunic <cmd>" */
	const char *link;         /* gpunic_link_open_spec() text */
	char udp_link[32];        /* "udp:<ip>", where link points when --link was not given */
	bool addr_from_oob;       /* no --link, no --ip: the out-of-band connection's address
				   * (pingpong, as perf); else they are needed */
	uint32_t ip;              /* ours, host byte order */
	uint8_t mac[6];
	bool have_mac;            /* else 02:00:<ip> */
	uint8_t peer_mac[6];
	bool have_peer_mac;       /* else learned from the wire / ARP */
	const char *capture;      /* pcap of every frame, or NULL */
	const char *oob_bind;     /* the server's TCP listen address (default 127.0.0.1) */
	const char *server;       /* the client's server host; NULL: we serve */
	uint16_t port;            /* TCP port of the exchange */
	int timeout_ms;           /* whole run; 0 = none */
	bool timeout_given;       /* else a server's wait for its client has no end, and the
				   * run's time starts when the client comes */
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;
	/* rdma-core's -d, -i, -g: accepted, and said what they mean here once the run starts */
	const char *ib_dev;
	long ib_port;             /* 0: not given */
	long gid_idx;             /* -1: not given */
};

/*
 * Long options both RoCE test tools take, and the values getopt_long returns for them. The
 * short letters are rdma-core's (libibverbs/examples: -p -d -i -g -m); a timeout is
 * --timeout SECONDS, as in every gpunic command (-t is rdma-core's CQE timestamps).
 */
enum pp_net_opt {
	PP_OPT_RC = 256,
	PP_OPT_UC,
	PP_OPT_LINK,
	PP_OPT_IP,
	PP_OPT_MAC,
	PP_OPT_PEER_MAC,
	PP_OPT_BIND,
	PP_OPT_CAPTURE,
	PP_OPT_TIMEOUT,
	PP_OPT_UD,
};
#define PP_NET_LONGOPTS                                                 \
	{ "port", required_argument, NULL, 'p' },                       \
	{ "ib-dev", required_argument, NULL, 'd' },                     \
	{ "ib-port", required_argument, NULL, 'i' },                    \
	{ "gid-idx", required_argument, NULL, 'g' },                    \
	{ "mtu", required_argument, NULL, 'm' },                        \
	{ "timeout", required_argument, NULL, PP_OPT_TIMEOUT },         \
	{ "help", no_argument, NULL, 'h' },                             \
	{ "rc", no_argument, NULL, PP_OPT_RC },                         \
	{ "uc", no_argument, NULL, PP_OPT_UC },                         \
	{ "ud", no_argument, NULL, PP_OPT_UD },                         \
	{ "link", required_argument, NULL, PP_OPT_LINK },               \
	{ "ip", required_argument, NULL, PP_OPT_IP },                   \
	{ "mac", required_argument, NULL, PP_OPT_MAC },                 \
	{ "peer-mac", required_argument, NULL, PP_OPT_PEER_MAC },       \
	{ "oob-bind", required_argument, NULL, PP_OPT_BIND },           \
	{ "bind", required_argument, NULL, PP_OPT_BIND },               \
	{ "capture", required_argument, NULL, PP_OPT_CAPTURE },         \
	CLI_COMMON_LONGOPTS
/* The short options of the table above, for getopt_long's optstring. */
#define PP_NET_SHORTOPTS "p:d:i:g:m:hv"
/* Their help lines (both commands print them). */
#define PP_NET_USAGE                                                                           \
	"  -p, --port=PORT        listen on / connect to TCP PORT (default 18515)\n"              \
	"  -d, --ib-dev=DEV       accepted and reported: gpunic's device is the softnic on\n"     \
	"                         --link, not an RDMA device\n"                                   \
	"  -i, --ib-port=PORT     accepted and reported: the softnic has the one port\n"          \
	"  -g, --gid-idx=IDX      accepted and reported: gpunic has the one GID ::ffff:<--ip>\n"  \
	"  -m, --mtu=SIZE         path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)\n"        \
	"      --rc | --uc        transport (default RC; UD is not supported)\n"                  \
	"      --link=SPEC        udp:IP[:PORT], dgram:LIP:LPORT,RIP:RPORT, shm:NAME,a|b\n"       \
	"      --ip=A.B.C.D       gpunic's IPv4 address\n"                                        \
	"      --mac=MAC          gpunic's MAC (default 02:00:<ip>)\n"                            \
	"      --peer-mac=MAC     the peer's MAC (default: learned, ARP on a shared wire)\n"      \
	"      --oob-bind=A.B.C.D the server's TCP listen address (default 127.0.0.1: only\n"     \
	"                         this host; 0.0.0.0 for a client on another host; --bind is\n"  \
	"                         the old name)\n"                                                \
	"      --capture=FILE     pcap of every frame the NIC sends and receives\n"               \
	"      --timeout=SEC      give up after SEC seconds, decimals allowed (default %s);\n"    \
	"                         a server without it waits for its client until one\n"         \
	"                         comes, and counts from there\n"                                \
	"  -v, --verbose          more library messages on stderr (again: debug)\n"              \
	"      --quiet            library errors only\n"                                         \
	"  -h, --help             show this help\n"

/* Defaults: RC, MTU 1024, port 18515, the listener on 127.0.0.1, @timeout_ms (0: none). */
void pp_net_init(struct pp_net_opts *net, const char *cmd, int timeout_ms);
/* One of the options above. Return: 1 parsed, -1 not one of them, else 2 (a usage error, said
 * on stderr with the values the option takes). */
int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net);
/* After the options: the optional server host, and the options every run needs: an address
 * (--ip alone is a udp link on it; a shm or dgram --link needs --ip too). Return 0 or 2. */
int pp_finish_args(int argc, char **argv, struct pp_net_opts *net);
/* What -d, -i and -g mean here, on stdout, once: a user who typed them reads it. */
void pp_report_compat(const struct pp_net_opts *net);

/* Open the endpoint the options describe, with a buffer of @buf_len and @access rights. */
int pp_open(struct gpunic_ep *e, const struct pp_net_opts *net, size_t buf_len, unsigned access,
	    uint32_t max_send_wr, uint32_t max_recv_wr);
/* The exchange's TCP connection: connect to the server, or listen and take one client. */
int pp_tcp_open(const struct pp_net_opts *net, struct gpunic_ep *e, int *fd);
/* The server's half in parts, for a server that takes clients until one speaks its exchange:
 * listen on --oob-bind:-p (and say so); take the next client, waiting until the endpoint's
 * deadline when --timeout was given, else until one comes (as rdma-core's and perftest's
 * servers do; the run's time then starts with the client). */
int pp_tcp_listen(const struct pp_net_opts *net, int *lfd);
int pp_tcp_accept(const struct pp_net_opts *net, struct gpunic_ep *e, int lfd, int *fd);
/* The connection parameters rdma-core's pingpong uses (RC: timeout 14, retry 7, RNR retry 7,
 * min RNR timer 12, one read each way). */
struct gpunic_ep_conn pp_conn(const struct pp_net_opts *net, uint32_t my_psn);
/* The inet_ntop form of a GID (at least 46 bytes). */
void pp_gid_str(const uint8_t gid[16], char *out, size_t len);

#endif
