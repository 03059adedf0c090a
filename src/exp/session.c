// SPDX-License-Identifier: MIT
/*
 * The sensor <-> loop exchange (loopback.h), both halves, and how a run ends early (SIGINT,
 * SIGTERM): the exchange waits in slices that notice it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exp_loc.h"
#include "timing.h"

atomic_bool lb_stop_flag;

static void on_stop_signal(int sig)
{
	(void)sig;
	atomic_store(&lb_stop_flag, true);
}

int lb_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
		return errno;
	return 0;
}

#define OOB_SLICE_MS 500

/* A well-formed message from someone other than the connected sensor, answered nothing: say
 * which of the two did not match (a right QPN from another address is another host's sensor,
 * or a spoof, not a stale one of ours). */
static void report_stranger(const char *who, const char *what, const struct gpunic_qp_info *got,
			    const struct gpunic_qp_info *sensor)
{
	char from[16], want[16];

	gpunic_ipv4_str(got->ip, from);
	gpunic_ipv4_str(sensor->ip, want);
	fprintf(stderr, "%s: ignored %s message from QP 0x%x at %s: %s (the sensor is QP 0x%x at "
		"%s); it was answered nothing\n", who, what, got->qpn, from,
		got->qpn != sensor->qpn ? "another QP" : "the sensor's QP from another address",
		sensor->qpn, want);
}

/* Once the sensor is connected, the exchanges that follow answer only it (gpunic_oob_serve_peer):
 * a message from anyone else is reported as @what and the wait goes on. */
struct only_sensor {
	const char *who, *what;
	const struct gpunic_qp_info *sensor;
};

/* Slices of at most half a second, so that lb_stop_flag ends a long wait promptly: a client
 * connects (@host), a server serves on its listening socket @lfd. */
static int exchange_sliced(const char *host, uint16_t port, int lfd, int timeout_ms,
			   const struct gpunic_qp_info *local, struct gpunic_qp_info *remote,
			   const struct only_sensor *only)
{
	uint64_t deadline = timing_now_ns() + (uint64_t)timeout_ms * 1000000ull, now;
	int err, slice;

	for (;;) {
		if (atomic_load(&lb_stop_flag))
			return EINTR;
		now = timing_now_ns();
		if (now >= deadline)
			return ETIMEDOUT;
		slice = (deadline - now) / 1000000ull < OOB_SLICE_MS ?
				(int)((deadline - now) / 1000000ull) + 1 : OOB_SLICE_MS;
		err = host ? gpunic_oob_exchange(host, port, slice, local, remote) :
			     gpunic_oob_serve_peer(lfd, slice, local, remote,
						   only ? only->sensor : NULL);
		/* a server that closed its port with our connection pending resets it: try again
		 * while there is time */
		if (host && (err == ECONNRESET || err == EPIPE))
			continue;
		/* serving, one bad client (garbage, a scanner, a peer that hung up) was answered
		 * nothing and dropped: the peer we wait for may still come */
		if (!host && (err == EPROTO || err == ECONNRESET || err == EPIPE)) {
			fprintf(stderr, "gpunic: TCP port %u: dropped a connection that sent no valid "
				"message (%s)\n", port, strerror(err));
			continue;
		}
		if (only && err == EACCES) {
			report_stranger(only->who, only->what, remote, only->sensor);
			continue;
		}
		if (err != ETIMEDOUT)
			return err;
	}
}

int lb_oob_exchange(const char *host, uint16_t port, int timeout_ms,
		    const struct gpunic_qp_info *local, struct gpunic_qp_info *remote)
{
	int lfd, err;

	if (host)
		return exchange_sliced(host, port, -1, timeout_ms, local, remote, NULL);
	err = gpunic_oob_listen(NULL, port, &lfd);
	if (err)
		return err;
	err = exchange_sliced(NULL, port, lfd, timeout_ms, local, remote, NULL);
	close(lfd);
	return err;
}

#define BYE_TIMEOUT_MS 2000

int lb_session_sensor_start(const char *who, struct lb_sensor *s, const char *host,
			    uint16_t port, int timeout_ms, const struct gpunic_qp_info *peer)
{
	struct gpunic_qp_info local, remote, ready;
	int err;

	if (peer)
		return lb_sensor_connect(s, peer);
	lb_sensor_info(s, &local);
	err = lb_oob_exchange(host, port, timeout_ms, &local, &remote);
	if (err) {
		fprintf(stderr, "%s: QP exchange with the loop at %s:%u: %s\n", who, host, port,
			err == EINTR ? "interrupted" :
			err == ETIMEDOUT ? "no loop answered (start `gpunic loop` first)" :
			strerror(err));
		return err;
	}
	err = lb_sensor_connect(s, &remote);
	if (err)
		return err;
	/* the loop answers this once its QP is ready to receive */
	err = lb_oob_exchange(host, port, timeout_ms, &local, &ready);
	if (err)
		fprintf(stderr, "%s: waiting for the loop to be ready: %s\n", who, strerror(err));
	return err;
}

int lb_session_sensor_bye(struct lb_sensor *s, const char *host, uint16_t port, uint64_t sent)
{
	struct gpunic_qp_info bye, remote;

	lb_sensor_info(s, &bye);
	bye.va = sent;
	return lb_oob_exchange(host, port, BYE_TIMEOUT_MS, &bye, &remote);
}

int lb_session_loop_listen(const char *who, const char *bind_addr, uint16_t port, int *lfd)
{
	int err = gpunic_oob_listen(bind_addr, port, lfd);

	if (err)
		fprintf(stderr, "%s: listening on TCP %s:%u: %s\n", who,
			bind_addr ? bind_addr : "0.0.0.0", port, strerror(err));
	return err;
}

int lb_session_loop_start(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			  int timeout_ms, const struct gpunic_qp_info *peer,
			  struct gpunic_qp_info *sensor)
{
	struct gpunic_qp_info local, ready;
	int err;

	if (peer) {
		*sensor = *peer;
		return lb_fwd_connect(f, peer);
	}
	lb_fwd_info(f, &local);
	err = exchange_sliced(NULL, port, lfd, timeout_ms, &local, sensor, NULL);
	if (err) {
		if (err == EINTR)
			fprintf(stderr, "%s: interrupted while waiting for the sensor\n", who);
		else
			fprintf(stderr, "%s: waiting for the sensor on TCP port %u: %s\n", who, port,
				strerror(err));
		return err;
	}
	err = lb_fwd_connect(f, sensor);
	if (err)
		return err;
	/* from now on only the sensor connected above hears from us */
	err = exchange_sliced(NULL, port, lfd, timeout_ms, &local, &ready,
			      &(struct only_sensor){ who, "a ready", sensor });
	if (err)
		fprintf(stderr, "%s: telling the sensor we are ready: %s\n", who, strerror(err));
	return err;
}

int lb_session_loop_bye(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			int slice_ms, const struct gpunic_qp_info *sensor, uint64_t *sent)
{
	struct gpunic_qp_info local, bye;
	int err;

	lb_fwd_info(f, &local);
	err = exchange_sliced(NULL, port, lfd, slice_ms, &local, &bye,
			      &(struct only_sensor){ who, "an end-of-run", sensor });
	if (!err) {
		*sent = bye.va;
		return 0;
	}
	if (err != ETIMEDOUT && err != EINTR && err != ECONNRESET && err != EPROTO)
		fprintf(stderr, "%s: listening on TCP port %u: %s\n", who, port, strerror(err));
	return err;
}
