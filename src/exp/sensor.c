// SPDX-License-Identifier: MIT
/*
 * The sensor: the FPGA/HSB emulator. It sends each message (WRITE_WITH_IMM into the forwarder's
 * ring, or SEND), drives its NIC inline, and accounts every reply: verified, corrupt, lost,
 * duplicated, reordered, stale (another run's). With RPC each message is a request and each
 * reply a response, checked whole against the function's CPU reference.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exp_loc.h"
#include "gpunic/hoptrace.h"
#include "timing.h"

struct lb_sensor {
	struct gpunic_nic *nic;
	struct gpunic_pd *pd;
	struct gpunic_cq *scq;
	struct gpunic_cq *rcq;
	struct gpunic_qp *qp;
	struct gpunic_dev_qp dq;
	struct gpunic_ep_addr addr;
	enum gpunic_mtu mtu;
	enum lb_mode mode;
	uint32_t size;
	uint32_t psn;
	bool engine_thread;	/* the NIC runs on a thread of its own, and this thread never polls it */
	struct gpunic_nic *also;	/* another NIC this thread drives (lb_sensor_drive_also) */

	uint8_t *sbuf;		/* staging for sends too large to go inline */
	struct gpunic_mr *smr;
	uint32_t sslots;
	uint32_t sslot_bytes;
	uint8_t *rbuf;		/* echo receives, one slot per receive WQE */
	struct gpunic_mr *rmr;
	uint32_t rslots;
	uint32_t rslot_bytes;

	uint64_t ring_va;	/* the forwarder's receive ring (WRITE_WITH_IMM) */
	uint32_t ring_rkey;
	uint32_t ring_slots;
	bool connected;

	uint64_t nsend;		/* sends over the QP's life: the signalling cadence */
	uint64_t *send_ts;	/* per sequence number of the current run */
	uint64_t *rpc_ts;	/* RPC: the ptp_timestamp each request carried */
	size_t send_ts_cap;
	atomic_uint_least64_t prog_sent;
	atomic_uint_least64_t prog_recv;
	uint8_t msg[LB_MSG_MAX];
};

static int sensor_post_recv(struct lb_sensor *s, uint32_t slot)
{
	struct gpunic_dev_sge sge = {
		.addr = (uint64_t)(uintptr_t)(s->rbuf + (size_t)slot * s->rslot_bytes),
		.length = s->rslot_bytes,
		.lkey = s->rmr->lkey,
	};
	int64_t r = gpunic_dev_post_recv(&s->dq, &sge, 1);

	return r < 0 ? (int)-r : 0;
}

/*
 * Give back the receive of @slot that just completed. With one receive WQE per slot, posted in
 * order and given back in order, the WQE the producer comes to next is that slot's own: it goes
 * back as it was (gpunic_dev_recv_repost), nothing rewritten, and sensor_service() stores the
 * doorbell record once for every reply its poll took.
 */
static int sensor_repost_recv(struct lb_sensor *s, uint32_t slot)
{
	if (s->dq.rq_wqe_cnt != s->rslots)
		return sensor_post_recv(s, slot);
	return -gpunic_dev_recv_repost(&s->dq, 1);
}

int lb_sensor_open(struct lb_sensor **out, struct gpunic_link *link,
		   const struct gpunic_ep_addr *addr, enum lb_mode mode, uint32_t size)
{
	struct gpunic_qp_init_attr ia = {
		.qp_type = GPUNIC_QPT_UC,
		.max_send_wr = SENSOR_SQ_WR,
		.max_recv_wr = SENSOR_RQ_WR,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = MAX_INLINE,
		.cqe_scatter = true,
		.handler_mode = GPUNIC_HANDLER_AUTO,
	};
	struct lb_sensor *s;
	int err;

	*out = NULL;
	if (size < LB_MSG_MIN || size > LB_MSG_MAX) {
		LB_ERR("message size %u outside %u..%u\n", size, LB_MSG_MIN, LB_MSG_MAX);
		gpunic_link_close(link);
		return EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		gpunic_link_close(link);
		return ENOMEM;
	}
	s->addr = *addr;
	s->mode = mode;
	s->size = size;
	s->mtu = gpunic_link_path_mtu(link);
	atomic_init(&s->prog_sent, 0);
	atomic_init(&s->prog_recv, 0);
	s->nic = lb_nic_open(link, addr, GPUNIC_EXECUTOR_CPU, NULL, 0);
	if (!s->nic) {
		free(s);
		return EIO;
	}
	err = ENOMEM;
	s->pd = gpunic_pd_alloc(s->nic);
	s->scq = gpunic_cq_create(s->nic, SENSOR_SQ_WR);
	s->rcq = gpunic_cq_create(s->nic, 2 * SENSOR_RQ_WR);
	if (!s->pd || !s->scq || !s->rcq) {
		LB_ERR("sensor: PD/CQ: %s\n", strerror(errno));
		goto fail;
	}
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	s->qp = gpunic_qp_create(s->pd, &ia);
	if (!s->qp) {
		err = errno;
		LB_ERR("sensor: QP: %s\n", strerror(err));
		goto fail;
	}
	err = gpunic_ep_qp_init("gpunic", s->qp, 0);
	if (err)
		goto fail;
	err = gpunic_qp_export(s->qp, &s->dq);
	if (!err && gpunic_dev_qp_check(&s->dq))
		err = EINVAL;
	if (err) {
		LB_ERR("sensor: QP export: %s\n", strerror(err));
		goto fail;
	}
	s->psn = gpunic_ep_pick_psn(s->qp->qp_num);

	s->sslots = s->dq.sq_wqebb_cnt;
	s->sslot_bytes = (size + 63) & ~63u;
	s->rslots = SENSOR_RQ_WR;
	s->rslot_bytes = s->sslot_bytes;
	s->sbuf = lb_zalloc((size_t)s->sslots * s->sslot_bytes);
	s->rbuf = lb_zalloc((size_t)s->rslots * s->rslot_bytes);
	if (!s->sbuf || !s->rbuf) {
		err = ENOMEM;
		goto fail;
	}
	s->smr = gpunic_mr_reg(s->pd, s->sbuf, (size_t)s->sslots * s->sslot_bytes,
			       GPUNIC_ACCESS_LOCAL_WRITE);
	s->rmr = gpunic_mr_reg(s->pd, s->rbuf, (size_t)s->rslots * s->rslot_bytes,
			       GPUNIC_ACCESS_LOCAL_WRITE);
	if (!s->smr || !s->rmr) {
		err = errno;
		LB_ERR("sensor: MR: %s\n", strerror(err));
		goto fail;
	}
	for (uint32_t i = 0; i < s->rslots; i++) {
		err = sensor_post_recv(s, i);
		if (err) {
			LB_ERR("sensor: posting receive %u: %s\n", i, strerror(err));
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	lb_sensor_close(s);
	return err;
}

void lb_sensor_info(const struct lb_sensor *s, struct gpunic_qp_info *info)
{
	lb_fill_info(info, s->qp, &s->addr, s->psn);
}

void lb_sensor_set_psn(struct lb_sensor *s, uint32_t psn)
{
	s->psn = psn & GPUNIC_PSN_MASK;
}

int lb_sensor_connect(struct lb_sensor *s, const struct gpunic_qp_info *remote)
{
	int err;

	if (s->mode == LB_MODE_WRITE_IMM) {
		if (!remote->rkey || remote->len < LB_SLOT_BYTES || !remote->va) {
			LB_ERR("sensor: the forwarder advertised no receive ring (va 0x%llx, "
			       "len %u, rkey 0x%x) for WRITE_WITH_IMM\n",
			       (unsigned long long)remote->va, remote->len, remote->rkey);
			return EPROTO;
		}
		s->ring_va = remote->va;
		s->ring_rkey = remote->rkey;
		s->ring_slots = remote->len / LB_SLOT_BYTES;
	}
	err = lb_qp_connect(s->qp, &s->addr, s->psn, s->mtu, remote);
	if (!err)
		s->connected = true;
	return err;
}

void lb_sensor_close(struct lb_sensor *s)
{
	if (!s)
		return;
	if (s->nic)
		gpunic_nic_close(s->nic);
	free(s->sbuf);
	free(s->rbuf);
	free(s->send_ts);
	free(s->rpc_ts);
	free(s);
}

void lb_sensor_progress(const struct lb_sensor *s, uint64_t *sent, uint64_t *received)
{
	*sent = atomic_load_explicit(&s->prog_sent, memory_order_relaxed);
	*received = atomic_load_explicit(&s->prog_recv, memory_order_relaxed);
}

int lb_sensor_counters(struct lb_sensor *s, struct gpunic_nic_counters *nic)
{
	return gpunic_nic_query_counters(s->nic, nic);
}

int lb_sensor_start_engine(struct lb_sensor *s, int cpu)
{
	int err = gpunic_nic_start(s->nic, cpu);

	if (err)
		LB_ERR("sensor: starting its NIC's engine thread: %s\n", strerror(err));
	else
		s->engine_thread = true;
	return err;
}

void lb_sensor_drive_also(struct lb_sensor *s, struct gpunic_nic *nic)
{
	s->also = nic;
}

/* Drive the NIC from this thread unless it has one of its own, and the other NIC it was given
 * first (what it transmits, this one then receives). Return: work done. */
static int sensor_nic_poll(struct lb_sensor *s)
{
	int work = s->also ? gpunic_nic_poll(s->also, SENSOR_NIC_BUDGET) : 0;

	return work + (s->engine_thread ? 0 : gpunic_nic_poll(s->nic, SENSOR_NIC_BUDGET));
}

/* State of one run, kept together for the helpers below. */
struct run_state {
	const struct lb_run_cfg *cfg;
	struct stats_rec *rec;
	struct lb_run_result *res;
	uint64_t sent;		/* sequence numbers 0..sent-1 went out */
	uint64_t last_event;	/* last send or reply: the drain times out from here */
	bool awaiting;		/* closed loop: waiting for the reply to sent - 1 */
	uint64_t await_since;	/* closed loop: when the awaited message went */
	/* the schedule: message k is due at base_ts + (k - base_k) * interval */
	uint64_t base_ts, base_k;
	uint64_t first_ts, last_ts;	/* the run's first and latest send */
	/* RPC: the clock's reading for the requests being sent, and its first of the run (a
	 * reply that echoes an older one is another run's) */
	uint64_t rpc_ts, rpc_start;
};

static void sensor_reap_sends(struct lb_sensor *s, struct run_state *st)
{
	struct gpunic_dev_cqe cqe;

	while (gpunic_dev_poll_scq(&s->dq, &cqe))
		if (gpunic_dev_cqe_is_error(&cqe))
			st->res->send_errors++;
}

/* Is request @seq of this run one of the bad ones (lb_run_cfg.rpc_fault)? */
static enum lb_rpc_fault sensor_rpc_fault(const struct lb_run_cfg *cfg, uint64_t seq)
{
	uint32_t every = cfg->rpc_fault_every ? cfg->rpc_fault_every : 1;

	return cfg->rpc_fault && seq % every == every - 1 ? cfg->rpc_fault : LB_RPC_FAULT_NONE;
}

/*
 * RPC: check the response @data of @len bytes against what its request must get. The
 * request_id names the request; an echoed timestamp older than the run is another run's
 * (stale). @now: the send's clock at the reply; @rpc_now: the request clock's.
 */
static void sensor_rpc_reply(struct lb_sensor *s, struct run_state *st, const uint8_t *data,
			     uint32_t len, uint64_t now, uint64_t rpc_now)
{
	const struct lb_run_cfg *cfg = st->cfg;
	struct lb_run_result *res = st->res;
	struct gpunic_rpc_response r;
	enum gpunic_rpc_check chk;
	uint8_t want[LB_MSG_MAX];
	uint32_t want_len;
	uint64_t seq, dup;
	int32_t status;

	if (len < GPUNIC_RPC_HEADER_BYTES) {
		res->rpc_checks[GPUNIC_RPC_CHECK_SHORT]++;
		res->corrupt_unmatched++;
		return;
	}
	memcpy(&r, data, sizeof(r));
	seq = r.request_id;
	if (r.ptp_timestamp < st->rpc_start && (seq >= st->sent || r.ptp_timestamp != s->rpc_ts[seq])) {
		res->stale++;
		return;
	}
	if (seq >= st->sent) {
		res->rpc_checks[GPUNIC_RPC_CHECK_REQUEST_ID]++;
		res->corrupt_unmatched++;
		return;
	}
	status = lb_rpc_expect(cfg->rpc_fn, sensor_rpc_fault(cfg, seq), s->size, seq,
			       LB_SLOT_BYTES, want, sizeof(want), &want_len);
	chk = gpunic_rpc_response_check(data, len, (uint32_t)seq, s->rpc_ts[seq], status, want,
					want_len);
	/* bytes past the results are no part of any answer */
	if (chk == GPUNIC_RPC_CHECK_OK && len != GPUNIC_RPC_HEADER_BYTES + r.result_len)
		chk = GPUNIC_RPC_CHECK_LENGTH;
	res->rpc_checks[chk]++;
	dup = st->rec->counts.dup;
	stats_rec_add(st->rec, seq, now - s->send_ts[seq],
		      chk == GPUNIC_RPC_CHECK_OK ? STATS_SAMPLE_VERIFIED : STATS_SAMPLE_CORRUPT);
	if (chk == GPUNIC_RPC_CHECK_OK && st->rec->counts.dup == dup) {
		res->verified++;
		/* a clock that stepped back gives no round trip */
		if (cfg->rpc_ts_rec && rpc_now >= r.ptp_timestamp)
			stats_rec_add(cfg->rpc_ts_rec, seq, rpc_now - r.ptp_timestamp,
				      STATS_SAMPLE_VERIFIED);
	}
	if (st->awaiting && seq + 1 == st->sent)
		st->awaiting = false;
}

static void sensor_reply(struct lb_sensor *s, struct run_state *st,
			 const struct gpunic_dev_cqe *cqe, uint64_t now, uint64_t rpc_now)
{
	const struct lb_run_cfg *cfg = st->cfg;
	uint32_t slot = cqe->wqe_idx % s->rslots;
	const uint8_t *data = cqe->data_in_cqe ? cqe->data :
						 s->rbuf + (size_t)slot * s->rslot_bytes;
	uint64_t word, ts, seq, dup;
	enum lb_verdict v;
	int err;

	if (gpunic_dev_cqe_is_error(cqe)) {
		st->res->rx_errors++;
	} else if (cqe->opcode != MLX5_CQE_RESP_SEND) {
		st->res->corrupt_unmatched++;
	} else if (cfg->rpc_fn) {
		sensor_rpc_reply(s, st, data, cqe->byte_cnt, now, rpc_now);
	} else {
		v = lb_msg_check(data, cqe->byte_cnt, s->size, cfg->expect_add_one, &word, &ts);
		seq = word & LB_SEQ_MASK;
		if (cqe->byte_cnt < LB_MSG_MIN) {
			st->res->corrupt_unmatched++;
		} else if ((word >> LB_SEQ_BITS) != (cfg->epoch & 0xffff)) {
			st->res->stale++;
		} else if (seq >= st->sent) {
			st->res->corrupt_unmatched++;
		} else {
			dup = st->rec->counts.dup;
			if (v == LB_MSG_OK && ts == s->send_ts[seq]) {
				stats_rec_add(st->rec, seq, now - s->send_ts[seq],
					      STATS_SAMPLE_VERIFIED);
				if (st->rec->counts.dup == dup)
					st->res->verified++;
			} else {
				stats_rec_add(st->rec, seq, now - s->send_ts[seq],
					      STATS_SAMPLE_CORRUPT);
			}
			if (st->awaiting && seq + 1 == st->sent)
				st->awaiting = false;
		}
	}
	st->last_event = now;
	err = sensor_repost_recv(s, slot);
	if (err)
		st->res->rx_errors++;
	atomic_store_explicit(&s->prog_recv, st->rec->counts.received, memory_order_relaxed);
}

/*
 * Move the NIC, take replies and send completions. Return: work done.
 * Driving its NIC inline, the sensor stamps every reply its poll delivered with one clock
 * reading taken at the first: all of them were in before it (one reading instead of one per
 * reply, at rates where a poll brings several). With an engine thread beside it a reply can
 * land while earlier ones are handled, so each gets its own reading, never an early one.
 */
static int sensor_service(struct lb_sensor *s, struct run_state *st)
{
	struct gpunic_dev_cqe cqe;
	int work = sensor_nic_poll(s);
	uint64_t now = 0, rpc_now = 0;

	while (gpunic_dev_poll_rcq(&s->dq, &cqe)) {
		hop_mark(HOP_TAKE);
		if (!now || s->engine_thread) {
			now = timing_now_ns();
			/* the request clock after the reply's stamp: the round trip excludes it */
			if (st->cfg->rpc_fn)
				rpc_now = lb_rpc_clock_ns(st->cfg->rpc_clock);
		}
		sensor_reply(s, st, &cqe, now, rpc_now);
		work++;
	}
	gpunic_dev_recv_publish(&s->dq, 1);
	sensor_reap_sends(s, st);
	return work;
}

/*
 * Send message @seq of this run, stamped @ts. Return: 0 (sent), EAGAIN (the send queue is
 * full: nothing was touched) or an errno.
 */
static int sensor_send(struct lb_sensor *s, struct run_state *st, uint64_t seq, uint64_t ts)
{
	struct gpunic_dev_sge sge;
	struct gpunic_dev_send_wr wr = { 0 };
	const struct lb_run_cfg *cfg = st->cfg;
	uint32_t sslot = (uint32_t)(s->nsend % s->sslots);
	enum lb_rpc_fault fault = sensor_rpc_fault(cfg, seq);
	/* an RPC request is at most the message size: fixed-size arguments make it shorter */
	uint32_t len = cfg->rpc_fn ? lb_rpc_fill(s->msg, sizeof(s->msg), cfg->rpc_fn, fault,
						s->size, seq, st->rpc_ts) :
				     s->size;
	bool inl = len <= s->dq.max_inline;
	uint8_t *buf = inl ? s->msg : s->sbuf + (size_t)sslot * s->sslot_bytes;
	uint32_t rslot;
	int64_t r;
	int bbs;

	wr.num_sge = 1;
	wr.sg_list = &sge;
	sge.addr = (uint64_t)(uintptr_t)buf;
	sge.length = len;
	sge.lkey = inl ? 0 : s->smr->lkey;
	if (inl)
		wr.flags |= GPUNIC_DEV_SEND_INLINE;
	if ((s->nsend & (FWD_SIGNAL_EVERY - 1)) == FWD_SIGNAL_EVERY - 1)
		wr.flags |= GPUNIC_DEV_SEND_SIGNALED;
	if (s->mode == LB_MODE_WRITE_IMM) {
		rslot = (uint32_t)(seq % s->ring_slots);
		wr.opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
		wr.remote_addr = s->ring_va + (uint64_t)rslot * LB_SLOT_BYTES;
		wr.rkey = s->ring_rkey;
		wr.imm = rslot;
	} else {
		wr.opcode = MLX5_OPCODE_SEND;
	}
	bbs = gpunic_dev_send_wqe_bbs(&s->dq, &wr);
	if (bbs < 0)
		return EINVAL;
	/* Room first: the staging slot must not change under a WQE the NIC may still read. */
	if (gpunic_dev_sq_free(&s->dq) < (uint32_t)bbs)
		return EAGAIN;

	s->send_ts[seq] = ts;
	hop_mark(HOP_SEND);
	if (cfg->rpc_fn) {
		s->rpc_ts[seq] = st->rpc_ts;
		st->res->rpc_faults_sent += fault != LB_RPC_FAULT_NONE;
		if (!inl)
			memcpy(buf, s->msg, len);
	} else {
		lb_msg_fill(buf, s->size, lb_word(st->cfg->epoch, seq), ts);
	}
	r = gpunic_dev_post_send(&s->dq, &wr);
	if (r < 0)
		return (int)-r;
	s->nsend++;
	return 0;
}

/* When the next message is due: now, never (closed loop, awaiting), or on the schedule. */
static uint64_t sensor_due(const struct run_state *st, uint64_t now)
{
	if (st->cfg->closed_loop)
		return st->awaiting ? UINT64_MAX : now;
	return st->base_ts + (st->sent - st->base_k) * st->cfg->interval_ns;
}

/*
 * Send the messages due by @now, at most SENSOR_SEND_BATCH, behind one doorbell. Paced at a
 * latency's interval that is one message; a throughput step that fell behind sends the ones
 * it owes together, and the sensor_service() that follows transmits them in one NIC poll
 * (a poll per message held the sensor's thread, which bounds the loopback's rate).
 * @now is a clock reading taken just before, and every message of the batch is stamped with
 * it: they leave behind one doorbell, and a reading per message cost the thread a clock
 * (~40 ns on the H200 host's VM clock, the report's clock_cost_ns) per message. A later
 * message of a batch therefore has the posts before it counted in its round trip: its
 * latency can come out longer than it was, never shorter.
 * Return: 0 (at least one sent), EAGAIN (the send queue was full: nothing sent) or an errno.
 */
static int sensor_send_due(struct lb_sensor *s, struct run_state *st, uint64_t now,
			   uint64_t limit)
{
	const struct lb_run_cfg *cfg = st->cfg;
	uint64_t due = sensor_due(st, now), ts = now;
	unsigned int n;
	int err = 0;

	for (n = 0; n < SENSOR_SEND_BATCH && st->sent < limit && now >= due; n++) {
		err = sensor_send(s, st, st->sent, ts);
		if (err)
			break;
		if (!cfg->closed_loop && cfg->interval_ns && ts - due >= cfg->interval_ns) {
			st->res->late_sends++;
			if (ts - due > st->res->max_late_ns)
				st->res->max_late_ns = ts - due;
			if (cfg->rephase) {
				st->base_ts = ts;
				st->base_k = st->sent;
			}
		}
		if (!st->sent)
			st->first_ts = ts;
		st->last_ts = ts;
		st->sent++;
		st->awaiting = true;
		st->await_since = ts;
		st->last_event = ts;
		due = sensor_due(st, now);
	}
	if (n) {
		/* The sensor_service() that follows transmits the batch: its NIC poll takes frames
		 * in, then sends what was posted. */
		gpunic_dev_submit(&s->dq);
		atomic_store_explicit(&s->prog_sent, st->sent, memory_order_relaxed);
	}
	return n && err == EAGAIN ? 0 : err;
}

/*
 * How many of the rounds that follow a clock reading at @now may skip the next: while the next
 * message is not due for SENSOR_QUIET_MARGIN_NS, a round that brings nothing reads no clock.
 * A reading costs ~40 ns on the H200 host's VM clock (the report's clock_cost_ns), and a
 * round that spends it is that much longer a wait for the reply it may have just missed.
 * (A closed loop awaiting its reply has nothing due: only the reply's long timeout.)
 */
static unsigned int sensor_quiet_rounds(const struct run_state *st, uint64_t now)
{
	uint64_t due = sensor_due(st, now);

	return due > now && due - now > SENSOR_QUIET_MARGIN_NS ? SENSOR_QUIET_ROUNDS : 0;
}

static bool stop_requested(const struct lb_run_cfg *cfg)
{
	return cfg->stop && atomic_load_explicit(cfg->stop, memory_order_relaxed);
}

int lb_sensor_run(struct lb_sensor *s, const struct lb_run_cfg *cfg, struct stats_rec *rec,
		  struct lb_run_result *res)
{
	struct run_state st = { .cfg = cfg, .rec = rec, .res = res };
	uint64_t limit, start, now, prev;
	bool busy = true;	/* a round since the last clock reading sent or moved something */
	unsigned int quiet = 0;	/* rounds to go before the clock is read again */
	int err;

	memset(res, 0, sizeof(*res));
	stats_rec_reset(rec);
	hop_trace_role(HOP_ROLE_SENSOR);
	if (!s->connected)
		return ENOTCONN;
	if (cfg->count > rec->cap || (!cfg->count && !cfg->duration_ns)) {
		LB_ERR("sensor: run of %llu messages with a recorder for %zu\n",
		       (unsigned long long)cfg->count, rec->cap);
		return EINVAL;
	}
	if (cfg->rpc_fn && (!cfg->rpc_clock || !lb_rpc_request_len(cfg->rpc_fn, s->size))) {
		LB_ERR("sensor: RPC requests to %s need %s, and messages of %u bytes do not hold "
		       "one\n", lb_rpc_fn_name(cfg->rpc_fn),
		       cfg->rpc_clock ? "their arguments after a 24-byte header" : "a clock",
		       s->size);
		return EINVAL;
	}
	limit = cfg->count ? cfg->count : rec->cap;
	if (s->send_ts_cap < limit) {
		uint64_t *p = realloc(s->send_ts, limit * sizeof(*p));
		uint64_t *q = p ? realloc(s->rpc_ts, limit * sizeof(*q)) : NULL;

		if (p)
			s->send_ts = p;
		if (q)
			s->rpc_ts = q;
		if (!p || !q)
			return ENOMEM;
		memset(p, 0, limit * sizeof(*p));
		memset(q, 0, limit * sizeof(*q));
		s->send_ts_cap = limit;
	}
	if (cfg->rpc_ts_rec)
		stats_rec_reset(cfg->rpc_ts_rec);
	atomic_store_explicit(&s->prog_sent, 0, memory_order_relaxed);
	atomic_store_explicit(&s->prog_recv, 0, memory_order_relaxed);

	if (cfg->rpc_fn)
		st.rpc_start = lb_rpc_clock_ns(cfg->rpc_clock);
	start = timing_now_ns();
	st.base_ts = start;
	st.last_event = start;
	prev = start;
	while (st.sent < limit) {
		/* Nothing is due for a while and nothing came in: poll again without reading the
		 * clock. */
		if (!busy && quiet) {
			quiet--;
			if (sensor_service(s, &st))
				busy = true;
			else
				timing_cpu_relax();
			continue;
		}
		now = timing_now_ns();
		/* the rounds since the last reading took this long; idle if none did anything */
		if (!busy)
			res->idle_ns += now - prev;
		prev = now;
		busy = false;
		if (stop_requested(cfg)) {
			res->stopped = true;
			break;
		}
		if (cfg->duration_ns && now - start >= cfg->duration_ns)
			break;
		/* Closed loop and the reply is late: UC will not resend it, so count it lost and
		 * go on. */
		if (cfg->closed_loop && st.awaiting && now - st.await_since >= cfg->timeout_ns)
			st.awaiting = false;
		if (now >= sensor_due(&st, now)) {
			busy = true;
			if (cfg->rpc_fn) {
				/* the request's clock first, then the stamp the round trip starts
				 * from: a slow clock's reading stays outside it */
				st.rpc_ts = lb_rpc_clock_ns(cfg->rpc_clock);
				now = timing_now_ns();
			}
			err = sensor_send_due(s, &st, now, limit);
			if (err == EAGAIN) {
				sensor_service(s, &st);
				continue;
			}
			if (err) {
				LB_ERR("sensor: posting message %llu: %s\n",
				       (unsigned long long)st.sent, strerror(err));
				return err;
			}
		}
		if (sensor_service(s, &st))
			busy = true;
		else
			timing_cpu_relax();
		quiet = sensor_quiet_rounds(&st, now);
	}
	res->loop_ns = timing_now_ns() - start;
	res->rec_full = !cfg->count && st.sent == limit;

	/* Drain: every reply is in, or none came for a whole timeout. */
	while (rec->counts.received < st.sent) {
		if (sensor_service(s, &st))
			continue;
		now = timing_now_ns();
		if (now - st.last_event >= cfg->timeout_ns)
			break;
		timing_cpu_relax();
	}
	res->wall_ns = timing_now_ns() - (st.first_ts ? st.first_ts : start);
	res->sent = st.sent;
	res->send_ns = st.last_ts - st.first_ts;

	err = stats_rec_finish(rec, st.sent);
	if (!err && cfg->rpc_ts_rec)
		err = stats_rec_finish(cfg->rpc_ts_rec, st.sent);
	if (err)
		return err;
	/* Garbage that no message can be blamed for counts as corruption too, so that it is
	 * never hidden. */
	rec->counts.corrupt += res->corrupt_unmatched;
	res->counts = rec->counts;
	return 0;
}

