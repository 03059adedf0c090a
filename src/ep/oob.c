// SPDX-License-Identifier: MIT
/*
 * Out-of-band exchange of what two sides need to connect a QP (and one buffer), over TCP. The
 * message has a fixed layout in network byte order with a magic and a version, says which step
 * of a session it is (its kind) and which session (a number the connecting side draws), and
 * what arrives is checked before anyone uses it: the peer is not trusted to send sane numbers.
 * The client writes first and then reads an answer that must carry its own kind and session;
 * the server reads, checks, and only then answers (gpunic_oob_accept, gpunic_oob_answer); a
 * server that is not listening yet is retried until the deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpunic/endpoint.h"
#include "gpunic/wire.h"

#define OOB_MAGIC 0x47504E51u	/* "GPNQ" */
/* 2: the kind and the session (docs/INTEROP.md); version 1 had neither */
#define OOB_VERSION 2u

/* magic, version, kind, session, qpn, psn, ip, mac[6], udp_port, va, rkey, len */
enum {
	OOB_OFF_MAGIC = 0,
	OOB_OFF_VERSION = 4,
	OOB_OFF_KIND = 8,
	OOB_OFF_SESSION = 12,
	OOB_OFF_QPN = 20,
	OOB_OFF_PSN = 24,
	OOB_OFF_IP = 28,
	OOB_OFF_MAC = 32,
	OOB_OFF_PORT = 38,
	OOB_OFF_VA = 40,
	OOB_OFF_RKEY = 48,
	OOB_OFF_LEN = 52,
};
_Static_assert(OOB_OFF_LEN + 4 == GPUNIC_OOB_MSG_BYTES, "the message's size");

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void oob_encode(const struct gpunic_oob_tag *tag, const struct gpunic_qp_info *in,
		       uint8_t *m)
{
	uint16_t port = htons(in->udp_port);

	put32(m + OOB_OFF_MAGIC, OOB_MAGIC);
	put32(m + OOB_OFF_VERSION, OOB_VERSION);
	put32(m + OOB_OFF_KIND, tag->kind);
	put64(m + OOB_OFF_SESSION, tag->session);
	put32(m + OOB_OFF_QPN, in->qpn);
	put32(m + OOB_OFF_PSN, in->psn);
	put32(m + OOB_OFF_IP, in->ip);
	memcpy(m + OOB_OFF_MAC, in->mac, 6);
	memcpy(m + OOB_OFF_PORT, &port, 2);
	put64(m + OOB_OFF_VA, in->va);
	put32(m + OOB_OFF_RKEY, in->rkey);
	put32(m + OOB_OFF_LEN, in->len);
}

static int oob_decode(const uint8_t *m, struct gpunic_oob_tag *tag, struct gpunic_qp_info *out)
{
	uint16_t port;

	if (get32(m + OOB_OFF_MAGIC) != OOB_MAGIC || get32(m + OOB_OFF_VERSION) != OOB_VERSION)
		return EPROTO;
	tag->kind = get32(m + OOB_OFF_KIND);
	tag->session = get64(m + OOB_OFF_SESSION);
	out->qpn = get32(m + OOB_OFF_QPN);
	out->psn = get32(m + OOB_OFF_PSN);
	out->ip = get32(m + OOB_OFF_IP);
	memcpy(out->mac, m + OOB_OFF_MAC, 6);
	memcpy(&port, m + OOB_OFF_PORT, 2);
	out->udp_port = ntohs(port);
	out->va = get64(m + OOB_OFF_VA);
	out->rkey = get32(m + OOB_OFF_RKEY);
	out->len = get32(m + OOB_OFF_LEN);
	if (tag->kind < GPUNIC_OOB_HELLO || tag->kind > GPUNIC_OOB_BYE)
		return EPROTO;
	/* QPNs and PSNs are 24-bit on the wire; QPN 0 and 1 are never ours to connect */
	if (out->qpn > 0xFFFFFFu || out->qpn < 2 || out->psn > GPUNIC_PSN_MASK || !out->ip ||
	    (out->len && out->va > UINT64_MAX - out->len))
		return EPROTO;
	return 0;
}

const char *gpunic_oob_kind_name(uint32_t kind)
{
	switch (kind) {
	case GPUNIC_OOB_HELLO:
		return "hello";
	case GPUNIC_OOB_READY:
		return "ready";
	case GPUNIC_OOB_BYE:
		return "end-of-run";
	default:
		return "unknown";
	}
}

uint64_t gpunic_oob_new_session(void)
{
	uint64_t s = 0;

	/* unpredictable where the kernel can say so; unique per process and call in any case */
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
		s = gpunic_ep_now_ns() ^ (uint64_t)getpid() << 40;
	return s ? s : 1;
}

/*
 * A client the server accepted has this long, from the accept, to send its message, whatever
 * was left of the window that found it: the loop listens in 200-500 ms slices, and a peer behind
 * a slow path or on a loaded host takes seconds (tests/ep/oob_relay_test.sh). A silent client
 * holds the port no longer than this.
 */
#define OOB_PEER_MS 5000
/*
 * A client waits this long for the answer, from its connect: the server reads one client at a
 * time, up to OOB_PEER_MS each, and two more connections may wait in its listen queue ahead of
 * ours (tests/cli/oob_attack_test.sh, bye_behind_silent). A client that gave up sooner and
 * connected again went to the back of the queue, while the server still read the message it
 * had given up on.
 */
#define OOB_ANSWER_MS (3 * OOB_PEER_MS)

/*
 * After the client's message: has it gone already? A client that gave up on us (its own time
 * ran out while its connection waited in the listen queue) closed its side, so its FIN is
 * behind the message; a message whose sender has gone is not acted on, or a late hello would
 * be taken for the session it abandoned. More bytes than one message is not gpunic's client.
 */
static int oob_client_still_there(int fd)
{
	uint8_t b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0)
		return ECONNABORTED;
	if (n > 0)
		return EPROTO;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
}

int gpunic_oob_accept(int lfd, int timeout_ms, struct gpunic_oob_request *req)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	uint8_t in[GPUNIC_OOB_MSG_BYTES];
	int fd, err;

	if (!req || timeout_ms <= 0)
		return EINVAL;
	memset(req, 0, sizeof(*req));
	req->fd = -1;
	err = gpunic_tcp_accept(lfd, &w, &fd);
	if (err)
		return err;
	gpunic_tcp_addrs(fd, NULL, &req->peer_ip);
	/* the peer's time runs from the accept, not from what was left of the window */
	w.deadline_ns = gpunic_ep_deadline(timeout_ms > OOB_PEER_MS ? timeout_ms : OOB_PEER_MS);
	err = gpunic_tcp_read_full(fd, in, sizeof(in), &w);
	if (!err)
		err = oob_decode(in, &req->tag, &req->info);
	if (!err)
		err = oob_client_still_there(fd);
	if (err) {
		close(fd);
		return err == EPIPE ? ECONNRESET : err;
	}
	req->fd = fd;
	req->deadline_ns = w.deadline_ns;
	return 0;
}

int gpunic_oob_answer(struct gpunic_oob_request *req, const struct gpunic_qp_info *local)
{
	struct gpunic_tcp_wait w = { .deadline_ns = req->deadline_ns };
	uint8_t out[GPUNIC_OOB_MSG_BYTES];
	int err;

	if (req->fd < 0 || !local)
		return EINVAL;
	oob_encode(&req->tag, local, out);
	err = gpunic_tcp_write_full(req->fd, out, sizeof(out), &w);
	gpunic_oob_drop(req);
	return err == EPIPE ? ECONNRESET : err;
}

void gpunic_oob_drop(struct gpunic_oob_request *req)
{
	if (req->fd >= 0)
		close(req->fd);
	req->fd = -1;
}

int gpunic_oob_listen(const char *bind_addr, uint16_t port, int *lfd)
{
	if (!port)
		return EINVAL;
	return gpunic_tcp_listen(bind_addr, port, lfd);
}

int gpunic_oob_serve_peer(int lfd, int timeout_ms, const struct gpunic_qp_info *local,
			  struct gpunic_qp_info *remote, const struct gpunic_qp_info *expect)
{
	struct gpunic_oob_request req;
	int err;

	if (!local || !remote || timeout_ms <= 0)
		return EINVAL;
	err = gpunic_oob_accept(lfd, timeout_ms, &req);
	*remote = req.info;
	if (err)
		return err;
	/* well formed, but not the peer already connected: it learns nothing either */
	if (expect && (req.info.qpn != expect->qpn || req.info.ip != expect->ip)) {
		gpunic_oob_drop(&req);
		return EACCES;
	}
	return gpunic_oob_answer(&req, local);
}

int gpunic_oob_serve(int lfd, int timeout_ms, const struct gpunic_qp_info *local,
		     struct gpunic_qp_info *remote)
{
	return gpunic_oob_serve_peer(lfd, timeout_ms, local, remote, NULL);
}

int gpunic_oob_exchange_tagged(const char *host, uint16_t port, int timeout_ms,
			       const struct gpunic_oob_tag *tag, const struct gpunic_qp_info *local,
			       struct gpunic_qp_info *remote)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	uint8_t out[GPUNIC_OOB_MSG_BYTES], in[GPUNIC_OOB_MSG_BYTES];
	struct gpunic_oob_tag got;
	int fd = -1, err;

	if (!host || !tag || !local || !remote || !port || timeout_ms <= 0)
		return EINVAL;
	err = gpunic_tcp_connect(host, port, &w, &fd);
	if (err == ECONNREFUSED)
		err = ETIMEDOUT;
	if (err)
		return err;
	gpunic_tcp_addrs(fd, NULL, NULL);
	/* the server's time runs from the connect, as its own from the accept */
	w.deadline_ns = gpunic_ep_deadline(timeout_ms > OOB_ANSWER_MS ? timeout_ms : OOB_ANSWER_MS);
	oob_encode(tag, local, out);
	err = gpunic_tcp_write_full(fd, out, sizeof(out), &w);
	if (!err)
		err = gpunic_tcp_read_full(fd, in, sizeof(in), &w);
	if (!err)
		err = oob_decode(in, &got, remote);
	/* an answer to another step or another session is no answer to ours */
	if (!err && (got.kind != tag->kind || got.session != tag->session))
		err = EPROTO;
	close(fd);
	return err == EPIPE ? ECONNRESET : err;
}

int gpunic_oob_exchange(const char *host, uint16_t port, int timeout_ms,
			const struct gpunic_qp_info *local, struct gpunic_qp_info *remote)
{
	struct gpunic_oob_tag tag = { GPUNIC_OOB_HELLO, gpunic_oob_new_session() };
	int lfd, err;

	if (!local || !remote || !port || timeout_ms <= 0)
		return EINVAL;
	if (host)
		return gpunic_oob_exchange_tagged(host, port, timeout_ms, &tag, local, remote);
	err = gpunic_oob_listen(NULL, port, &lfd);
	if (err)
		return err;
	err = gpunic_oob_serve(lfd, timeout_ms, local, remote);
	close(lfd);
	return err;
}
