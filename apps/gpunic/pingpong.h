/* SPDX-License-Identifier: MIT */
/*
 * What `gpunic pingpong` and `gpunic immtest` share: one gpunic endpoint (a NIC on a link, one
 * QP, one registered buffer) that talks to a real RoCE stack such as rdma-core's example tools in
 * an rxe guest, and the out-of-band pieces those tools use.
 *
 *  - The link is wrapped by a small learning layer: it notes the MAC of every frame the peer's
 *    IPv4 address sends (ARP or IPv4), and on a shared wire it can ask for that MAC with an ARP
 *    request (pp_end_resolve), so no static neighbour entry is needed on our side. The softnic
 *    itself answers ARP for its own address.
 *  - The engine runs inline, in the caller's thread (run-to-completion, as the sensor does), with
 *    a back-off (spin, yield, then short sleeps) when idle so that a TCG guest on the same
 *    2-core machine keeps its CPU.
 *  - GIDs are RoCEv2 ::ffff:IPv4 GIDs; the text form is rdma-core's "wire GID": the 16 bytes as
 *    32 hex digits in network order (pingpong.c gid_to_wire_gid).
 *
 * Functions return 0 or a positive errno value and report what failed on stderr, prefixed
 * "gpunic <command>: ".
 */
#ifndef GPUNIC_APP_PINGPONG_H
#define GPUNIC_APP_PINGPONG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpunic/gpunic_dev.h"
#include "gpunic/verbs.h"

#define PP_GID_HEX 32

/* Where and how the endpoint attaches: the options both commands take. */
struct pp_net_opts {
	const char *cmd;          /* "pingpong", "immtest": prefix of messages */
	const char *link;         /* gpunic_link_open_spec() text */
	uint32_t ip;              /* ours, host byte order */
	uint8_t mac[6];
	bool have_mac;            /* else 02:00:<ip> */
	uint8_t peer_mac[6];
	bool have_peer_mac;       /* else learned from the wire / ARP */
	const char *capture;      /* pcap of every frame, or NULL */
	unsigned timeout_s;       /* whole run; 0 = none */
};

struct pp_learn;

struct pp_end {
	const struct pp_net_opts *o;
	struct gpunic_nic *nic;
	struct pp_learn *learn;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	uint8_t *buf;
	size_t buf_len;
	struct gpunic_mr *mr;
	uint64_t deadline_ns;     /* 0 = none */
	unsigned idle;
};

/* The peer, as its out-of-band message describes it. */
struct pp_remote {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint32_t ip;              /* from the ::ffff:IPv4 GID */
};

struct pp_qp_caps {
	enum gpunic_qp_type type;
	size_t buf_len;           /* registered buffer, page aligned, zeroed */
	unsigned access;          /* MR and QP remote rights (GPUNIC_ACCESS_*) */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
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
	{ "rc", no_argument, NULL, PP_OPT_RC },                         \
	{ "uc", no_argument, NULL, PP_OPT_UC },                         \
	{ "link", required_argument, NULL, PP_OPT_LINK },               \
	{ "ip", required_argument, NULL, PP_OPT_IP },                   \
	{ "mac", required_argument, NULL, PP_OPT_MAC },                 \
	{ "peer-mac", required_argument, NULL, PP_OPT_PEER_MAC },       \
	{ "bind", required_argument, NULL, PP_OPT_BIND },               \
	{ "capture", required_argument, NULL, PP_OPT_CAPTURE }

/* One of the options above. Return: 1 parsed, 0 a bad value, -1 not one of them. */
int pp_parse_net_opt(int c, const char *arg, struct pp_net_opts *net, enum gpunic_qp_type *type,
		     const char **bind_addr);
/* Say what is wrong with option @c (missing value, unknown, or @bad_value). Return: 2. */
int pp_usage_error(const char *cmd, int c, bool bad_value, char **argv);
/* After the options: the optional server host, and the options every run needs. Return 0 or 2. */
int pp_finish_args(const char *cmd, int argc, char **argv, const char **server,
		   const struct pp_net_opts *net);

uint64_t pp_now_ns(void);
bool pp_parse_ip(const char *s, uint32_t *ip);
bool pp_parse_mac(const char *s, uint8_t mac[6]);
bool pp_parse_uint(const char *s, unsigned long max, unsigned long *v);

void pp_gid_from_ip(uint32_t ip, uint8_t gid[16]);
/* rdma-core's wire GID: 32 hex digits, NUL-terminated. */
void pp_gid_to_wire(const uint8_t gid[16], char out[PP_GID_HEX + 1]);
bool pp_gid_from_wire(const char *s, uint8_t gid[16]);
/* The IPv4 address of a ::ffff:a.b.c.d GID. */
bool pp_gid_ipv4(const uint8_t gid[16], uint32_t *ip);
/* inet_ntop form of a GID (at least 46 bytes). */
void pp_gid_str(const uint8_t gid[16], char *out, size_t len);

/* Open the NIC, PD, CQs, QP (in INIT) and the buffer; starts the deadline. */
int pp_end_open(struct pp_end *e, const struct pp_net_opts *o, const struct pp_qp_caps *caps);
/* Learn the peer's MAC (unless given), then RTR and RTS, then export the data path. RC QPs get
 * rdma-core's pingpong timers: timeout 14, retry 7, RNR retry 7, min RNR timer 12. */
int pp_end_connect(struct pp_end *e, const struct pp_remote *r, enum gpunic_mtu mtu,
		   uint32_t my_psn);
void pp_end_close(struct pp_end *e);
/* One engine round with back-off; ETIMEDOUT once the deadline has passed. */
int pp_end_progress(struct pp_end *e);
/* Run the engine until a CQE arrives on the send (@send) or receive CQ. */
int pp_end_wait_cqe(struct pp_end *e, bool send, struct gpunic_dev_cqe *cqe);
/* Print the NIC's and the QP's counters (drops by reason) to stderr. */
void pp_end_dump(struct pp_end *e);
/* Milliseconds left before the deadline (at least 1), or @dflt without one. */
int pp_end_ms_left(const struct pp_end *e, int dflt);

/*
 * TCP, bounded by @timeout_ms each. While they wait, @e's engine keeps running (when @e is not
 * NULL), so that the NIC answers ARP and RC retransmissions during the exchange.
 */
int pp_tcp_listen(const char *bind_addr, uint16_t port, int *lfd);
int pp_tcp_accept(struct pp_end *e, int lfd, int timeout_ms, int *fd);
/* Connect, retrying refused attempts until @timeout_ms passes. */
int pp_tcp_connect(struct pp_end *e, const char *host, uint16_t port, int timeout_ms, int *fd);
/* Exactly @len bytes; EPIPE when the peer closes first. */
int pp_read_full(struct pp_end *e, int fd, void *buf, size_t len, int timeout_ms);
/* Up to @len bytes, stopping at EOF; *got says how many. */
int pp_read_some(struct pp_end *e, int fd, void *buf, size_t len, int timeout_ms, size_t *got);
int pp_write_full(int fd, const void *buf, size_t len);

#endif
