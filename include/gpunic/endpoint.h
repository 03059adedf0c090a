/* SPDX-License-Identifier: MIT */
/*
 * gpunic endpoints: from a link spec to a connected QP with its registered buffer, and what two
 * sides say to each other out of band before that.
 *
 *   addresses  one IPv4 parser, the "02:00 + IPv4" MAC every endpoint uses unless told
 *              otherwise, RoCEv2 ::ffff:IPv4 GIDs
 *   links      gpunic_ep_link_open(): a link spec and the address the NIC takes on it (a link
 *              that bound one, like udp, gives its own address and the port it sends from)
 *   QPs        INIT, and RTR + RTS to a peer described by struct gpunic_ep_peer
 *   TCP        listen, accept, connect, read and write bounded by a deadline; while they wait,
 *              a NIC given to them keeps running (ARP, RC retransmissions)
 *   endpoint   struct gpunic_ep: link, NIC (engine run inline by the caller), PD, two CQs, one
 *              QP, one registered buffer, and the peer's MAC learned from the wire or by ARP
 *   exchanges  gpunic's own (gpunic_oob_exchange, verbs.h), rdma-core pingpong's (below) and
 *              perftest's (perftest.h)
 *
 * Functions return 0 or a positive errno value (the control path's rule: docs/DESIGN.md,
 * "Errors"). Those that take @who report what failed on
 * stderr as "<who>: <what>" (the CLI passes "gpunic perf", "gpunic pingpong"...); the others
 * report nothing.
 */
#ifndef GPUNIC_ENDPOINT_H
#define GPUNIC_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpunic/gpunic_dev.h"
#include "gpunic/link.h"
#include "gpunic/verbs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- addresses */

/* CLOCK_MONOTONIC in ns: the clock of every deadline below. */
uint64_t gpunic_ep_now_ns(void);
/* now + @timeout_ms, or 0 (no deadline) when @timeout_ms <= 0. */
uint64_t gpunic_ep_deadline(int timeout_ms);
/* Milliseconds left before @deadline_ns (at least 1 while it has not passed, 0 after), or @dflt
 * when @deadline_ns is 0. */
int gpunic_ep_ms_left(uint64_t deadline_ns, int dflt);

/* A dotted-quad IPv4 address, host byte order. Return: 0 or EINVAL. */
int gpunic_parse_ipv4(const char *s, uint32_t *ip);
/* "a.b.c.d[:port]"; *port is left alone without one. Return: 0 or EINVAL (port 0 too). */
int gpunic_parse_ipv4_port(const char *s, uint32_t *ip, uint16_t *port);
/* "xx:xx:xx:xx:xx:xx". Return: 0 or EINVAL. */
int gpunic_parse_mac(const char *s, uint8_t mac[6]);
/* "a.b.c.d" of @ip into @out (16 bytes). */
void gpunic_ipv4_str(uint32_t ip, char out[16]);

/* gpunic_mac_from_ipv4(), the "02:00 + IPv4" MAC rule, is link.h's: the links apply it too. */
/* RoCEv2 GIDs: ::ffff:a.b.c.d. */
void gpunic_gid_from_ipv4(uint32_t ip, uint8_t gid[16]);
/* Return: 0, or EPROTO when @gid is not IPv4-mapped (or maps 0.0.0.0). */
int gpunic_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip);

/* ---------------------------------------------------------------- links and QPs */

/* Where this side is, as the NIC and a peer see it. Host byte order. */
struct gpunic_ep_addr {
	uint32_t ip;
	uint8_t mac[6];
	uint16_t udp_port;	/* the RoCEv2 port the NIC listens on: 4791, or the one a udp
				 * link bound (never 0: a peer is told it) */
	/* The UDP source port every frame must carry: a link that sends through a bound kernel
	 * socket (udp) sends from that port and refuses others; 0: any (rdma_get_udp_sport). */
	uint16_t src_udp_port;
};

/*
 * gpunic_ep_link_open - open a link from its spec and say where the NIC stands on it
 * @spec: gpunic_link_open_spec_wait() text
 * @ip: the NIC's address on links that carry any (shm, dgram); a link that bound an address
 *      (gpunic_link_bound_addr) gives its own, and its port
 * @mac: NULL for gpunic_mac_from_ipv4(the address)
 * @wait_ms: how long the joining end of a shm cable waits for the other side to create it
 */
int gpunic_ep_link_open(const char *who, const char *spec, uint32_t ip, const uint8_t *mac,
			int wait_ms, struct gpunic_link **link, struct gpunic_ep_addr *addr);

/* Another loopback address than *@ip, from 127.0.0.2 up, whose UDP @port is free: where a
 * second endpoint on the host of the first stands (each 127/8 address is local on Linux, and
 * frames keep @port, 4791, as RoCEv2 peers and capture readers expect). Return: 0 with *@ip
 * set, or EADDRINUSE when none is free. */
int gpunic_ep_loopback_aside(uint32_t *ip, uint16_t port);
/* Who holds UDP @ip:@port (host order): the process with a socket bound to it, or to every
 * address, as "pid N (name)" in @out (@len bytes). Return: 0, or ENOENT when none this process
 * may see (another user's, without privileges). */
int gpunic_ep_udp_holder(uint32_t ip, uint16_t port, char *out, size_t len);

/* Where a NIC on @link stands: the address and port the link bound (udp), else @ip; the MAC
 * of gpunic_mac_from_ipv4(). */
void gpunic_ep_addr_of(struct gpunic_ep_addr *a, const struct gpunic_link *link, uint32_t ip);

/* gpunic_nic_attr's address fields from @a. */
void gpunic_ep_nic_attr(struct gpunic_nic_attr *na, const struct gpunic_ep_addr *a);

/* The peer a QP connects to, as an out-of-band exchange (or the command line) describes it. */
struct gpunic_ep_peer {
	uint32_t qpn;
	uint32_t psn;		/* the first PSN it sends */
	uint32_t ip;
	uint8_t mac[6];		/* zero: learned from the wire or by ARP, or, on a link whose
				 * kernel builds L2 (udp; only a capture shows it), 02:00 + ip */
	uint16_t udp_port;	/* 0: 4791 */
};

/* How: the path MTU, our first PSN and, for RC, the timers and read depths. */
struct gpunic_ep_conn {
	enum gpunic_mtu mtu;
	uint32_t sq_psn;
	bool rc;		/* set the RC attributes below */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
};

/* INIT with @access (remote rights); receives may be posted from here on. */
int gpunic_ep_qp_init(const char *who, struct gpunic_qp *qp, unsigned access);
/* RTR then RTS towards @peer, sending from @me (its src_udp_port). */
int gpunic_ep_qp_connect(const char *who, struct gpunic_qp *qp, const struct gpunic_ep_addr *me,
			 const struct gpunic_ep_peer *peer, const struct gpunic_ep_conn *c);
/* A random 24-bit first PSN, different per process and per @salt. */
uint32_t gpunic_ep_pick_psn(uint32_t salt);

/* ---------------------------------------------------------------- TCP */

/* How long a call may wait (0: no deadline), and a NIC to run while it does (NULL: none). */
struct gpunic_tcp_wait {
	uint64_t deadline_ns;
	struct gpunic_nic *nic;
};

/* IPv4 only, as RoCEv2 here. @bind_addr NULL: every address. */
int gpunic_tcp_listen(const char *bind_addr, uint16_t port, int *lfd);
int gpunic_tcp_accept(int lfd, const struct gpunic_tcp_wait *w, int *fd);
/* Connect, retrying a refused or unreachable server until the deadline (it may start later).
 * Return: 0, EHOSTUNREACH when @host does not resolve, or the last connect error. */
int gpunic_tcp_connect(const char *host, uint16_t port, const struct gpunic_tcp_wait *w, int *fd);
/* Up to @len bytes, stopping early at EOF; *got says how many. */
int gpunic_tcp_read_some(int fd, void *buf, size_t len, const struct gpunic_tcp_wait *w,
			 size_t *got);
/* Exactly @len bytes; EPIPE when the peer closes first, ETIMEDOUT at the deadline. */
int gpunic_tcp_read_full(int fd, void *buf, size_t len, const struct gpunic_tcp_wait *w);
int gpunic_tcp_write_full(int fd, const void *buf, size_t len, const struct gpunic_tcp_wait *w);
/* TCP_NODELAY, and the connection's two IPv4 addresses (left alone when not IPv4). */
void gpunic_tcp_addrs(int fd, uint32_t *local_ip, uint32_t *peer_ip);

/* ---------------------------------------------------------------- the endpoint */

struct gpunic_ep_attr {
	const char *who;	/* prefix of error messages */
	const char *link;	/* gpunic_link_open_spec() text */
	uint32_t ip;		/* ours on links that carry any address */
	const uint8_t *mac;	/* NULL: 02:00:<ip> */
	const uint8_t *peer_mac;	/* NULL: learned from the wire or asked for with ARP */
	const char *capture;	/* pcap of every frame, or NULL */
	uint64_t deadline_ns;	/* of the whole run; 0: none */
	enum gpunic_qp_type type;
	size_t buf_len;		/* registered buffer, page aligned, zeroed */
	unsigned access;	/* MR and QP remote rights (GPUNIC_ACCESS_*) */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
};

struct gpunic_ep {
	struct gpunic_ep_attr attr;
	struct gpunic_ep_addr addr;
	struct gpunic_link *link;	/* the learning wrapper the NIC runs on */
	struct gpunic_link *wire;	/* the link it wraps, whose counters (rx_errors: runts
					 * and the like) are the wire's */
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	uint8_t *buf;
	size_t buf_len;
	struct gpunic_mr *mr;
	unsigned idle;
};

/* Open the link, NIC, PD, CQs, QP (in INIT) and the buffer. On failure gpunic_ep_close() still
 * frees what was opened. */
int gpunic_ep_open(struct gpunic_ep *e, const struct gpunic_ep_attr *a);
/* Learn the peer's MAC unless @peer has one (or the link's kernel builds L2), then RTR, RTS,
 * and export the data path into e->dq. */
int gpunic_ep_connect(struct gpunic_ep *e, const struct gpunic_ep_peer *peer,
		      const struct gpunic_ep_conn *c);
/* Let the last frames leave, then close everything. */
void gpunic_ep_close(struct gpunic_ep *e);
/* One engine round with back-off (spin, yield, short sleeps) so that a guest on the same
 * cores keeps its CPU; ETIMEDOUT once the deadline has passed. */
int gpunic_ep_progress(struct gpunic_ep *e);
/* Run the engine until a CQE arrives on the send (@send) or the receive CQ. */
int gpunic_ep_wait_cqe(struct gpunic_ep *e, bool send, struct gpunic_dev_cqe *cqe);
/* The NIC's and the QP's counters (drops by reason) on stderr, one line. */
void gpunic_ep_dump(const struct gpunic_ep *e);
/* The TCP wait of this endpoint: its deadline (at most @timeout_ms from now), its NIC. */
struct gpunic_tcp_wait gpunic_ep_tcp_wait(const struct gpunic_ep *e, int timeout_ms);

/* ---------------------------------------------------------------- gpunic's exchange */

/*
 * Every message of gpunic's exchange (GPUNIC_OOB_MSG_BYTES, docs/INTEROP.md) says which step of
 * a session it is and which session: a number the connecting side draws once
 * (gpunic_oob_new_session) and sends with each step. A server answers under the client's own
 * tag, and the client takes no answer under another, so a late or retried message is never
 * taken for another step, nor one session's for another's.
 */
#define GPUNIC_OOB_MSG_BYTES 56

enum gpunic_oob_kind {
	GPUNIC_OOB_HELLO = 1,	/* QP information both ways: gpunic_oob_exchange's, a session's first */
	GPUNIC_OOB_READY = 2,	/* the server's QP is connected, its receives posted */
	GPUNIC_OOB_BYE = 3,	/* the client is done (the loop: va = messages sent) */
};

struct gpunic_oob_tag {
	uint32_t kind;		/* enum gpunic_oob_kind */
	uint64_t session;
};

/* "hello", "ready", "end-of-run"; "unknown" for anything else. */
const char *gpunic_oob_kind_name(uint32_t kind);
/* A fresh session number: random, never 0. */
uint64_t gpunic_oob_new_session(void);
/* One step of a session as the client: send @local under @tag, and take the answer only when it
 * carries the same tag (else EPROTO). Once connected, it waits 15 s for the answer (or
 * @timeout_ms, when longer): a server reads one client at a time, and others may be ahead of
 * us. Return: as gpunic_oob_exchange(). */
int gpunic_oob_exchange_tagged(const char *host, uint16_t port, int timeout_ms,
			       const struct gpunic_oob_tag *tag, const struct gpunic_qp_info *local,
			       struct gpunic_qp_info *remote);

/*
 * The server side of gpunic_oob_exchange() (verbs.h) in two steps, so that one listening socket
 * serves a long wait taken in slices: a client never meets a closed port between two slices,
 * nor a connection reset when the socket closes with it pending.
 */
int gpunic_oob_listen(const char *bind_addr, uint16_t port, int *lfd);	/* NULL: every address */

/* A client's message, read and checked, its connection still open for the answer. */
struct gpunic_oob_request {
	int fd;			/* -1 once answered or dropped */
	uint64_t deadline_ns;	/* of the answer */
	uint32_t peer_ip;	/* the TCP connection's (host order) */
	struct gpunic_oob_tag tag;
	struct gpunic_qp_info info;
};
/*
 * Take one client on @lfd within @timeout_ms and read its message; nothing is answered yet: the
 * caller answers (gpunic_oob_answer) or drops it (gpunic_oob_drop), as its session's state says.
 * The client has 5 s from the accept (or @timeout_ms, when longer) to send it. Return: 0 with
 * @req open; ETIMEDOUT when nobody came or the client sent too little; EPROTO for anything but
 * one well-formed message (@req's tag and info say what was decoded); ECONNABORTED when the
 * client had already given up and closed (a message whose sender has gone is not acted on);
 * ECONNRESET when it hung up before a whole message; another errno from the socket.
 */
int gpunic_oob_accept(int lfd, int timeout_ms, struct gpunic_oob_request *req);
/* Answer @req with @local under the client's own tag, and close it. */
int gpunic_oob_answer(struct gpunic_oob_request *req, const struct gpunic_qp_info *local);
/* Close @req unanswered: the client learns nothing. */
void gpunic_oob_drop(struct gpunic_oob_request *req);

/* Take one client on @lfd within @timeout_ms: read its gpunic_qp_info, and answer with ours
 * under its tag only when it is well formed (a stray connection learns nothing). */
int gpunic_oob_serve(int lfd, int timeout_ms, const struct gpunic_qp_info *local,
		     struct gpunic_qp_info *remote);
/* gpunic_oob_serve() for a peer already known (@expect: its QPN and IP; NULL: any): a
 * well-formed message from another QP or address gets no answer either, and EACCES with
 * @remote saying who it was. Later exchanges of a connection (the loop's "ready" and
 * end-of-run) use it, so that no one but the connected peer learns the QP and memory key. */
int gpunic_oob_serve_peer(int lfd, int timeout_ms, const struct gpunic_qp_info *local,
			  struct gpunic_qp_info *remote, const struct gpunic_qp_info *expect);

/* ---------------------------------------------------------------- rdma-core pingpong's exchange */

/*
 * What ibv_rc_pingpong / ibv_uc_pingpong write: "%04x:%06x:%06x:%s" (LID, QPN, PSN, the GID as
 * 32 hex digits in network order: rdma-core's wire GID), 52 bytes with the NUL.
 */
#define GPUNIC_PP_MSG_BYTES 52
#define GPUNIC_PP_GID_HEX 32

void gpunic_pp_gid_to_wire(const uint8_t gid[16], char out[GPUNIC_PP_GID_HEX + 1]);
/* Return: 0 or EPROTO. */
int gpunic_pp_gid_from_wire(const char *s, uint8_t gid[16]);
void gpunic_pp_msg_format(uint32_t qpn, uint32_t psn, const uint8_t gid[16],
			  char msg[GPUNIC_PP_MSG_BYTES]);
/* Return: 0; EPROTO when @msg does not parse; EAFNOSUPPORT when its GID (in @gid) is not
 * IPv4-mapped. */
int gpunic_pp_msg_parse(const char msg[GPUNIC_PP_MSG_BYTES], struct gpunic_ep_peer *peer,
			uint8_t gid[16]);

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_ENDPOINT_H */
