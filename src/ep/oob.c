// SPDX-License-Identifier: MIT
/*
 * Out-of-band exchange of what two sides need to connect a QP (and one buffer), over TCP. The
 * message has a fixed layout in network byte order with a magic and a version, and what arrives
 * is checked before anyone uses it: the peer is not trusted to send sane numbers. The client
 * writes first and then reads; the server reads, checks, and only then answers (oob_swap); a
 * server that is not listening yet is retried until the deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "gpunic/endpoint.h"
#include "gpunic/wire.h"

#define OOB_MAGIC 0x47504E51u	/* "GPNQ" */
#define OOB_VERSION 1u

/* magic, version, qpn, psn, ip, mac[6], udp_port, va, rkey, len */
enum {
	OOB_OFF_MAGIC = 0,
	OOB_OFF_VERSION = 4,
	OOB_OFF_QPN = 8,
	OOB_OFF_PSN = 12,
	OOB_OFF_IP = 16,
	OOB_OFF_MAC = 20,
	OOB_OFF_PORT = 26,
	OOB_OFF_VA = 28,
	OOB_OFF_RKEY = 36,
	OOB_OFF_LEN = 40,
	OOB_MSG_BYTES = 44,
};

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

static void oob_encode(const struct gpunic_qp_info *in, uint8_t *m)
{
	uint16_t port = htons(in->udp_port);

	put32(m + OOB_OFF_MAGIC, OOB_MAGIC);
	put32(m + OOB_OFF_VERSION, OOB_VERSION);
	put32(m + OOB_OFF_QPN, in->qpn);
	put32(m + OOB_OFF_PSN, in->psn);
	put32(m + OOB_OFF_IP, in->ip);
	memcpy(m + OOB_OFF_MAC, in->mac, 6);
	memcpy(m + OOB_OFF_PORT, &port, 2);
	put32(m + OOB_OFF_VA, (uint32_t)(in->va >> 32));
	put32(m + OOB_OFF_VA + 4, (uint32_t)in->va);
	put32(m + OOB_OFF_RKEY, in->rkey);
	put32(m + OOB_OFF_LEN, in->len);
}

static int oob_decode(const uint8_t *m, struct gpunic_qp_info *out)
{
	uint16_t port;

	if (get32(m + OOB_OFF_MAGIC) != OOB_MAGIC || get32(m + OOB_OFF_VERSION) != OOB_VERSION)
		return EPROTO;
	out->qpn = get32(m + OOB_OFF_QPN);
	out->psn = get32(m + OOB_OFF_PSN);
	out->ip = get32(m + OOB_OFF_IP);
	memcpy(out->mac, m + OOB_OFF_MAC, 6);
	memcpy(&port, m + OOB_OFF_PORT, 2);
	out->udp_port = ntohs(port);
	out->va = (uint64_t)get32(m + OOB_OFF_VA) << 32 | get32(m + OOB_OFF_VA + 4);
	out->rkey = get32(m + OOB_OFF_RKEY);
	out->len = get32(m + OOB_OFF_LEN);
	/* QPNs and PSNs are 24-bit on the wire; QPN 0 and 1 are never ours to connect */
	if (out->qpn > 0xFFFFFFu || out->qpn < 2 || out->psn > GPUNIC_PSN_MASK || !out->ip ||
	    (out->len && out->va > UINT64_MAX - out->len))
		return EPROTO;
	return 0;
}

/*
 * A connected peer has this long, from the accept (or our connect), for its half of the swap,
 * whatever was left of the window that found it: the loop listens in 200-500 ms slices, and a
 * peer behind a slow path or on a loaded host takes seconds (tests/ep/oob_relay_test.sh). A
 * silent client holds the port no longer than this.
 */
#define OOB_PEER_MS 5000

/*
 * Swap messages over the connected @fd (closed here), timed from now. The side that connected
 * writes first; the side that accepted (@serving) reads first and answers only a well-formed
 * message, so a stray or hostile connection learns nothing of our QP and memory key, and a
 * peer whose bytes come too late never holds our message while we never saw its own: either
 * both sides complete the exchange or the one that connected sees it fail and tries again.
 */
static int oob_swap(int fd, int timeout_ms, bool serving, const struct gpunic_qp_info *local,
		    struct gpunic_qp_info *remote, const struct gpunic_qp_info *expect)
{
	uint8_t out[OOB_MSG_BYTES], in[OOB_MSG_BYTES];
	int ms = timeout_ms > OOB_PEER_MS ? timeout_ms : OOB_PEER_MS;
	struct gpunic_tcp_wait wait = { .deadline_ns = gpunic_ep_deadline(ms) }, *w = &wait;
	int err;

	gpunic_tcp_addrs(fd, NULL, NULL);
	oob_encode(local, out);
	if (serving) {
		err = gpunic_tcp_read_full(fd, in, sizeof(in), w);
		if (!err)
			err = oob_decode(in, remote);
		/* well formed, but not the peer already connected: it learns nothing either */
		if (!err && expect && (remote->qpn != expect->qpn || remote->ip != expect->ip))
			err = EACCES;
		if (!err)
			err = gpunic_tcp_write_full(fd, out, sizeof(out), w);
	} else {
		err = gpunic_tcp_write_full(fd, out, sizeof(out), w);
		if (!err)
			err = gpunic_tcp_read_full(fd, in, sizeof(in), w);
		if (!err)
			err = oob_decode(in, remote);
	}
	close(fd);
	if (err == EPIPE)
		err = ECONNRESET;
	return err;
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
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	int fd, err;

	if (!local || !remote || timeout_ms <= 0)
		return EINVAL;
	err = gpunic_tcp_accept(lfd, &w, &fd);
	return err ? err : oob_swap(fd, timeout_ms, true, local, remote, expect);
}

int gpunic_oob_serve(int lfd, int timeout_ms, const struct gpunic_qp_info *local,
		     struct gpunic_qp_info *remote)
{
	return gpunic_oob_serve_peer(lfd, timeout_ms, local, remote, NULL);
}

int gpunic_oob_exchange(const char *host, uint16_t port, int timeout_ms,
			const struct gpunic_qp_info *local, struct gpunic_qp_info *remote)
{
	struct gpunic_tcp_wait w = { .deadline_ns = gpunic_ep_deadline(timeout_ms) };
	int fd = -1, lfd, err;

	if (!local || !remote || !port || timeout_ms <= 0)
		return EINVAL;
	if (!host) {
		err = gpunic_oob_listen(NULL, port, &lfd);
		if (err)
			return err;
		err = gpunic_oob_serve(lfd, timeout_ms, local, remote);
		close(lfd);
		return err;
	}
	err = gpunic_tcp_connect(host, port, &w, &fd);
	if (err == ECONNREFUSED)
		err = ETIMEDOUT;
	return err ? err : oob_swap(fd, timeout_ms, false, local, remote, NULL);
}
