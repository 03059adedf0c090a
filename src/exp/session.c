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

/* The exchange waits in slices of at most this long, so that lb_stop_flag ends a long wait
 * promptly. */
#define OOB_SLICE_MS 500

static int slice_ms(uint64_t deadline)
{
	uint64_t left = (deadline - timing_now_ns()) / 1000000ull;

	return left < OOB_SLICE_MS ? (int)left + 1 : OOB_SLICE_MS;
}

/* Call @one with a slice of what is left of @timeout_ms (<= 0: no end) until it returns other
 * than ETIMEDOUT (the wait goes on), the time is up (ETIMEDOUT) or a signal came (EINTR). */
static int in_slices(int timeout_ms, int (*one)(void *arg, int slice), void *arg)
{
	uint64_t deadline = timeout_ms > 0 ?
				    timing_now_ns() + (uint64_t)timeout_ms * 1000000ull : UINT64_MAX;
	int err;

	for (;;) {
		if (atomic_load(&lb_stop_flag))
			return EINTR;
		if (timing_now_ns() >= deadline)
			return ETIMEDOUT;
		err = one(arg, slice_ms(deadline));
		if (err != ETIMEDOUT)
			return err;
	}
}

/* ---------------------------------------------------------------- the sensor's side */

struct sensor_try {
	const char *host;
	uint16_t port;
	const struct gpunic_oob_tag *tag;
	const struct gpunic_qp_info *local;
	struct gpunic_qp_info *remote;
};

/* One try of a step as the client: connect, send @local under @tag, take the answer under the
 * same tag; a loop that closed or reset is tried again while there is time (it may have been
 * restarted, or its answer lost). */
static int sensor_try(void *arg, int slice)
{
	struct sensor_try *t = arg;
	int err = gpunic_oob_exchange_tagged(t->host, t->port, slice, t->tag, t->local, t->remote);

	return err == ECONNRESET || err == EPIPE ? ETIMEDOUT : err;
}

static int sensor_step(const char *host, uint16_t port, int timeout_ms,
		       const struct gpunic_oob_tag *tag, const struct gpunic_qp_info *local,
		       struct gpunic_qp_info *remote)
{
	struct sensor_try t = { host, port, tag, local, remote };

	return in_slices(timeout_ms, sensor_try, &t);
}

int lb_session_sensor_start(const char *who, struct lb_sensor *s, const char *host,
			    uint16_t port, int timeout_ms, const struct gpunic_qp_info *peer,
			    uint64_t *session)
{
	struct gpunic_oob_tag tag = { GPUNIC_OOB_HELLO, gpunic_oob_new_session() };
	struct gpunic_qp_info local, remote, ready;
	int err;

	*session = tag.session;
	if (peer)
		return lb_sensor_connect(s, peer);
	lb_sensor_info(s, &local);
	/* the loop may not listen yet: say at once what this waits for */
	fprintf(stderr, "%s: waiting for the loop at %s:%u ...\n", who, host, port);
	err = sensor_step(host, port, timeout_ms, &tag, &local, &remote);
	if (err) {
		fprintf(stderr, "%s: QP exchange with the loop at %s:%u: %s\n", who, host, port,
			err == EINTR ? "interrupted" :
			err == ETIMEDOUT ? "no loop answered (start `gpunic loop` first)" :
			err == EPROTO ? "the answer was not the loop's to our hello" :
			strerror(err));
		return err;
	}
	err = lb_sensor_connect(s, &remote);
	if (err)
		return err;
	/* the loop answers this once its QP is ready to receive */
	tag.kind = GPUNIC_OOB_READY;
	err = sensor_step(host, port, timeout_ms, &tag, &local, &ready);
	if (err)
		fprintf(stderr, "%s: waiting for the loop to be ready: %s\n", who,
			err == ETIMEDOUT ? "no answer" : strerror(err));
	return err;
}

int lb_session_sensor_bye(struct lb_sensor *s, const char *host, uint16_t port,
			  uint64_t session, int timeout_ms, uint64_t sent)
{
	struct gpunic_oob_tag tag = { GPUNIC_OOB_BYE, session };
	struct gpunic_qp_info bye, remote;

	lb_sensor_info(s, &bye);
	bye.va = sent;
	return sensor_step(host, port, timeout_ms, &tag, &bye, &remote);
}

/* ---------------------------------------------------------------- the loop's side */

int lb_session_loop_listen(const char *who, const char *bind_addr, uint16_t port, int *lfd)
{
	int err = gpunic_oob_listen(bind_addr, port, lfd);

	if (err)
		fprintf(stderr, "%s: listening on TCP %s:%u: %s\n", who,
			bind_addr ? bind_addr : "0.0.0.0", port, strerror(err));
	return err;
}

enum verdict { TAKE, REPEAT, REFUSE };

/*
 * What the loop does with a well-formed message @r while it waits for step @want of session
 * @ls: take it (the step it waits for, from its sensor), answer it again (an earlier step of
 * its own session asked again: the sensor missed our answer and retried), or refuse it and say
 * why in @why. Before a hello nothing but a hello is taken.
 */
static enum verdict judge(const struct lb_loop_session *ls, uint32_t want,
			  const struct gpunic_oob_request *r, const char **why)
{
	if (!ls->done) {
		*why = "no hello yet (a late message of an earlier session?)";
		return r->tag.kind == GPUNIC_OOB_HELLO ? TAKE : REFUSE;
	}
	if (r->tag.session != ls->session) {
		*why = "another session";
		return REFUSE;
	}
	if (r->info.qpn != ls->sensor.qpn || r->info.ip != ls->sensor.ip) {
		*why = r->info.qpn != ls->sensor.qpn ? "the session's number from another QP" :
						       "the sensor's QP from another address";
		return REFUSE;
	}
	if (r->tag.kind == want)
		return TAKE;
	if (r->tag.kind <= ls->done)
		return REPEAT;
	*why = "out of order";
	return REFUSE;
}

/* "a hello", "an end-of-run": a message of @kind, for the log */
static const char *kind_phrase(uint32_t kind)
{
	switch (kind) {
	case GPUNIC_OOB_HELLO:
		return "a hello";
	case GPUNIC_OOB_READY:
		return "a ready";
	default:
		return "an end-of-run";
	}
}

static void report_refused(const char *who, const struct lb_loop_session *ls,
			   const struct gpunic_oob_request *r, const char *why)
{
	char from[16], want[16];

	gpunic_ipv4_str(r->info.ip, from);
	gpunic_ipv4_str(ls->sensor.ip, want);
	fprintf(stderr, "%s: ignored %s message from QP 0x%x at %s: %s", who,
		kind_phrase(r->tag.kind), r->info.qpn, from, why);
	if (ls->done)
		fprintf(stderr, " (the sensor is QP 0x%x at %s)", ls->sensor.qpn, want);
	fprintf(stderr, "; it was answered nothing\n");
}

struct loop_try {
	const char *who;
	uint16_t port;
	int lfd;
	struct lb_loop_session *ls;
	uint32_t want;
	struct gpunic_qp_info *got;
};

/* One connection on the loop's port within @slice: step @want of its session taken (0, *got
 * set), ETIMEDOUT when the wait goes on (nobody came; a client answered again, refused or
 * dropped), or the listener's error. */
static int loop_try(void *arg, int slice)
{
	struct loop_try *t = arg;
	struct lb_loop_session *ls = t->ls;
	const char *who = t->who, *why = "";
	struct gpunic_oob_request r;
	uint16_t port = t->port;
	int err = gpunic_oob_accept(t->lfd, slice, &r);

	if (err == ECONNABORTED) {
		ls->abandoned++;
		fprintf(stderr, "%s: TCP port %u: dropped %s message whose sender had given up "
			"already\n", who, port, kind_phrase(r.tag.kind));
		return ETIMEDOUT;
	}
	/* one bad client (garbage, a scanner, a peer that hung up) was answered nothing: the
	 * peer we wait for may still come */
	if (err == EPROTO || err == ECONNRESET || err == EPIPE) {
		ls->dropped++;
		fprintf(stderr, "%s: TCP port %u: dropped a connection that sent no valid message "
			"(%s)\n", who, port, strerror(err));
		return ETIMEDOUT;
	}
	if (err)
		return err;
	switch (judge(ls, t->want, &r, &why)) {
	case REFUSE:
		ls->refused++;
		report_refused(who, ls, &r, why);
		gpunic_oob_drop(&r);
		return ETIMEDOUT;
	case REPEAT:
		ls->repeated++;
		fprintf(stderr, "%s: the sensor asked for its %s again (our answer did not reach "
			"it): answered again\n", who, gpunic_oob_kind_name(r.tag.kind));
		gpunic_oob_answer(&r, &ls->local);
		return ETIMEDOUT;
	case TAKE:
		break;
	}
	*t->got = r.info;
	/* a step the sensor did not hear answered is not taken: it asks again */
	err = gpunic_oob_answer(&r, &ls->local);
	if (err) {
		fprintf(stderr, "%s: answering the sensor's %s: %s\n", who,
			gpunic_oob_kind_name(r.tag.kind), strerror(err));
		return ETIMEDOUT;
	}
	if (!ls->done) {
		ls->session = r.tag.session;
		ls->sensor = r.info;
	}
	ls->done = t->want;
	return 0;
}

/* Serve the port until step @want of the session is taken, @timeout_ms passes or a signal
 * comes. Return: 0, ETIMEDOUT, EINTR, or the listener's error. */
static int loop_step(const char *who, uint16_t port, int lfd, int timeout_ms,
		     struct lb_loop_session *ls, uint32_t want, struct gpunic_qp_info *got)
{
	struct loop_try t = { who, port, lfd, ls, want, got };

	return in_slices(timeout_ms, loop_try, &t);
}

int lb_session_loop_start(const char *who, struct lb_fwd *f, uint16_t port, int lfd,
			  int timeout_ms, const struct gpunic_qp_info *peer,
			  struct lb_loop_session *ls)
{
	struct gpunic_qp_info sensor, ready;
	int err;

	memset(ls, 0, sizeof(*ls));
	lb_fwd_info(f, &ls->local);
	if (peer) {
		ls->sensor = *peer;
		return lb_fwd_connect(f, peer);
	}
	err = loop_step(who, port, lfd, timeout_ms, ls, GPUNIC_OOB_HELLO, &sensor);
	if (err) {
		if (err == EINTR)
			fprintf(stderr, "%s: interrupted while waiting for the sensor\n", who);
		else
			fprintf(stderr, "%s: waiting for the sensor on TCP port %u: %s\n", who, port,
				strerror(err));
		return err;
	}
	err = lb_fwd_connect(f, &ls->sensor);
	if (err)
		return err;
	/* from now on only the sensor's session hears from us */
	err = loop_step(who, port, lfd, timeout_ms, ls, GPUNIC_OOB_READY, &ready);
	if (err)
		fprintf(stderr, "%s: telling the sensor we are ready: %s\n", who,
			err == ETIMEDOUT ? "it did not ask" : strerror(err));
	return err;
}

int lb_session_loop_bye(const char *who, uint16_t port, int lfd, int slice_ms,
			struct lb_loop_session *ls, uint64_t *sent)
{
	struct gpunic_qp_info bye;
	int err = loop_step(who, port, lfd, slice_ms, ls, GPUNIC_OOB_BYE, &bye);

	if (!err) {
		*sent = bye.va;
		return 0;
	}
	if (err != ETIMEDOUT && err != EINTR)
		fprintf(stderr, "%s: listening on TCP port %u: %s\n", who, port, strerror(err));
	return err;
}
