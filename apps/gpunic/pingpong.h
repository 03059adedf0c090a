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

#include "gpunic/endpoint.h"

/* Where and how the endpoint attaches: the options both commands take. */
struct pp_net_opts {
	const char *cmd;          /* "pingpong", "immtest": prefix of messages */
	char who[32];             /* "gpunic <cmd>" */
	const char *link;         /* gpunic_link_open_spec() text */
	uint32_t ip;              /* ours, host byte order */
	uint8_t mac[6];
	bool have_mac;            /* else 02:00:<ip> */
	uint8_t peer_mac[6];
	bool have_peer_mac;       /* else learned from the wire / ARP */
	const char *capture;      /* pcap of every frame, or NULL */
	const char *bind_addr;    /* the server's TCP listen address, NULL: any */
	const char *server;       /* the client's server host; NULL: we serve */
	uint16_t port;            /* TCP port of the exchange */
	unsigned timeout_s;       /* whole run; 0 = none */
	enum gpunic_qp_type type;
	enum gpunic_mtu mtu;
};

/* Long options both RoCE test tools take, and the values getopt_long returns for them. */
enum pp_net_opt {
	PP_OPT_RC = 256,
	PP_OPT_UC,
	PP_OPT_LINK,
	PP_OPT_IP,
	PP_OPT_MAC,
	PP_OPT_PEER_MAC,
	PP_OPT_BIND,
	PP_OPT_CAPTURE,
};
#define PP_NET_LONGOPTS                                                 \
	{ "port", required_argument, NULL, 'p' },                       \
	{ "mtu", required_argument, NULL, 'm' },                        \
	{ "gid-idx", required_argument, NULL, 'g' },                    \
	{ "timeout", required_argument, NULL, 't' },                    \
	{ "help", no_argument, NULL, 'h' },                             \
	{ "rc", no_argument, NULL, PP_OPT_RC },                         \
	{ "uc", no_argument, NULL, PP_OPT_UC },                         \
	{ "link", required_argument, NULL, PP_OPT_LINK },               \
	{ "ip", required_argument, NULL, PP_OPT_IP },                   \
	{ "mac", required_argument, NULL, PP_OPT_MAC },                 \
	{ "peer-mac", required_argument, NULL, PP_OPT_PEER_MAC },       \
	{ "bind", required_argument, NULL, PP_OPT_BIND },               \
	{ "capture", required_argument, NULL, PP_OPT_CAPTURE }
/* The short options of the table above, for getopt_long's optstring. */
#define PP_NET_SHORTOPTS "p:m:g:t:h"

/* Defaults: RC, MTU 1024, port 18515, @timeout_s. */
void pp_net_init(struct pp_net_opts *net, const char *cmd, unsigned timeout_s);
/* One of the options above. Return: 1 parsed, 0 a bad value, -1 not one of them. */
int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net);
/* Say what is wrong with option @c (missing value, unknown, or @bad_value). Return: 2. */
int pp_usage_error(const char *cmd, int c, bool bad_value, char **argv);
/* After the options: the optional server host, and the options every run needs. Return 0 or 2. */
int pp_finish_args(int argc, char **argv, struct pp_net_opts *net);
bool pp_parse_uint(const char *s, unsigned long max, unsigned long *v);

/* Open the endpoint the options describe, with a buffer of @buf_len and @access rights. */
int pp_open(struct gpunic_ep *e, const struct pp_net_opts *net, size_t buf_len, unsigned access,
	    uint32_t max_send_wr, uint32_t max_recv_wr);
/* The exchange's TCP connection: connect to the server, or listen and take one client. */
int pp_tcp_open(const struct pp_net_opts *net, struct gpunic_ep *e, int *fd);
/* The connection parameters rdma-core's pingpong uses (RC: timeout 14, retry 7, RNR retry 7,
 * min RNR timer 12, one read each way). */
struct gpunic_ep_conn pp_conn(const struct pp_net_opts *net, uint32_t my_psn);
/* The inet_ntop form of a GID (at least 46 bytes). */
void pp_gid_str(const uint8_t gid[16], char *out, size_t len);

#endif
