/* SPDX-License-Identifier: MIT */
/*
 * The latency tests' fast path on a GPU (`gpunic perf send_lat` and `write_lat`): the
 * forwarder's discipline (docs/ARCHITECTURE.md, "the fast path") for a ping-pong. One warp runs
 * the test; what a message needs stays in registers, and across PCIe go:
 *  - one coalesced read per poll: lanes 0-3 the receive CQE (send_lat) or the 16 bytes that
 *    hold the iteration byte (write_lat), lanes 4-7 the send CQE while a send is outstanding;
 *    a torn or stale CQE fails its check word and is read again, never acted on;
 *  - one coalesced store of the next WQE, built with selects (the ctrl segment on lane 0, the
 *    rest fixed once per run) and sealed while the answer before it is on its way (GPU_BF: to
 *    its BlueFlame lines, one or two, with no fence and no doorbell);
 *  - counters and doorbell records as posted stores: no acquire or release on state that only
 *    this warp touches.
 * The same tests through the thread-scope API on one GPU thread took 1.7 us to take an answer
 * and 3.5 us to post on an H200 (docs/bench-history/2026-12-01.md, "last hour"): scalar code
 * runs slowly on one GPU thread, each acquire empties its L1, and one thread's four loads of a
 * line often see it half written. The CPU executor runs the thread-scope loops (perf_dev.h), which cost it 0.2 us.
 */
#ifndef GPUNIC_PERF_LAT_DEV_H
#define GPUNIC_PERF_LAT_DEV_H

#ifdef __CUDACC__
#include "gpunic/perf_dev.h"
#include "gpunic/warp_dev.h"

/* What the warp keeps in registers; every lane holds the same, but for the WQE's words. */
struct gpunic_perf_warp {
	struct gpunic_dev_qp qp;	/* a copy: the data-path helpers take it as the QP */
	uint32_t rci, sci;		/* receive and send CQ consumer counters */
	uint32_t pi, done;		/* send producer; end of the completed sends */
	uint32_t rq_head, rq_tail;
	uint64_t posted, reaped;
	uint32_t ds, nbb;		/* 16-byte units and basic blocks of every WQE */
	uint32_t opcode;
	uint32_t tw[4];			/* this lane's chunk of the WQE past the ctrl segment */
	uint32_t mark_lane, mark_word, mark_shift;	/* write_lat: the iteration byte sent */
	const uint8_t *seen_line;	/* write_lat: the 16 bytes of rbuf that hold the one
					 * received, at word seen_word, bit seen_shift */
	uint32_t seen_word, seen_shift;
	uint32_t size;			/* the message's bytes */
	uint32_t repost_below;		/* receives are handed back while fewer than this came */
	bool write;
};

/* Can the warp run this test? The thread-scope loop runs anything it cannot. */
GPUNIC_DEV_FN bool gpunic_perf_warp_fits(const struct gpunic_perf_ctx *c)
{
	const struct gpunic_dev_qp *qp = c->qp;
	bool write = c->test == GPUNIC_PERF_WRITE_LAT;
	uint32_t ds = 1 + (write ? 1 : 0) + gpunic_dev_inline_units(c->size);

	if (c->test != GPUNIC_PERF_SEND_LAT && !write)
		return false;
	if (!(qp->rcq.flags & qp->scq.flags & GPUNIC_DEV_CQ_LINE_CHECK) || !c->size ||
	    c->size > qp->max_inline || ds > GPUNIC_DEV_BF_MAX_DS)
		return false;
	if (qp->handler_mode != GPUNIC_HANDLER_GPU_BF && qp->handler_mode != GPUNIC_HANDLER_GPU_DB &&
	    qp->handler_mode != GPUNIC_HANDLER_CPU_PROXY)
		return false;
	/* send_lat hands receives back by moving the producer: the ring's WQEs must describe
	 * their slots already (gpunic_perf_post_recv), or no repost may be due */
	return write || c->iters <= c->rx_depth || gpunic_perf_rq_rewritten(c);
}

/* Fill @w (every lane, once): the QP, its counters and this lane's words of the WQE. */
GPUNIC_DEV_FN void gpunic_perf_warp_load(const struct gpunic_perf_ctx *c,
					 struct gpunic_perf_warp *w, uint32_t lane)
{
	const struct gpunic_dev_qp_state *st = c->qp->state;
	struct gpunic_dev_qp shadow;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	ulonglong2 ring[8];	/* two blocks, 16-byte aligned as the WQE writer's stores need */
	uint32_t k, at;

	w->write = c->test == GPUNIC_PERF_WRITE_LAT;
	w->opcode = w->write ? MLX5_OPCODE_RDMA_WRITE : MLX5_OPCODE_SEND;
	w->ds = 1 + (w->write ? 1 : 0) + gpunic_dev_inline_units(c->size);
	w->nbb = gpunic_dev_ds_to_bbs(w->ds);
	/* The WQE the thread path posts (slot 0, as perftest), laid out once by the library's
	 * writer on a shadow QP whose ring is @ring, with no BlueFlame copy: the remote address
	 * (WRITE), the inline header, the message. Built before the QP is copied into @w, with
	 * fewer registers live. Lane 0's words are the ctrl segment, which every post replaces. */
	gpunic_perf_op_wr(c, (uint8_t)w->opcode, 0, &wr, &sge);
	shadow = *c->qp;
	shadow.sq_buf = (uint8_t *)ring;
	shadow.sq_wqebb_cnt = 2;
	shadow.handler_mode = GPUNIC_HANDLER_GPU_DB;
	for (k = 0; k < 8; k++)
		ring[k] = make_ulonglong2(0, 0);
	gpunic_dev_wqe_write_send(&shadow, 0, &wr, w->ds);
	w->qp = *c->qp;
	w->rci = st->rcq_ci;
	w->sci = st->scq_ci;
	w->pi = st->sq_reserved;
	w->done = st->sq_completed;
	w->rq_head = st->rq_head;
	w->rq_tail = st->rq_tail;
	w->posted = 0;
	w->reaped = 0;
	w->size = c->size;
	/* as perftest: exactly iters receives per run, none left over for the next size */
	w->repost_below = c->iters > c->rx_depth ? c->iters - c->rx_depth : 0;
	for (k = 0; k < 4; k++)
		memcpy(&w->tw[k], (const uint8_t *)ring + 16 * (lane & 7) + 4 * k, 4);
	/* write_lat's iteration byte, the message's last, changes on every post; the message
	 * follows the inline header, after the ctrl (and remote address) segment */
	at = 16 * (w->write ? 2 : 1) + 4 + c->size - 1;
	w->mark_lane = at / 16;
	w->mark_word = (at % 16) / 4;
	w->mark_shift = 8 * (at % 4);
	at = (uint32_t)((uintptr_t)(c->rbuf + c->size - 1) & 15);
	w->seen_line = c->rbuf + c->size - 1 - at;
	w->seen_word = at / 4;
	w->seen_shift = 8 * (at % 4);
}

/* Lane 0: store the counters the thread-scope path and the host read back. */
GPUNIC_DEV_FN void gpunic_perf_warp_save(struct gpunic_perf_ctx *c,
					 const struct gpunic_perf_warp *w)
{
	struct gpunic_dev_qp_state *st = c->qp->state;

	st->rcq_ci = w->rci;
	st->scq_ci = w->sci;
	st->sq_completed = w->done;
	st->rq_head = w->rq_head;
	st->rq_tail = w->rq_tail;
	st->rq_published = w->rq_head;
}

/* The next WQE: this lane's 16 bytes of it once built. */
struct gpunic_perf_next {
	bool due;		/* still to be built */
	uint64_t lo, hi;
};

/*
 * Build the WQE of the warp's next message, number posted + 1 (write_lat marks it in the last
 * byte): this lane's 16 bytes in @lo and @hi, for gpunic_perf_warp_post. Nothing in it waits for the answer before it (the
 * message is the run's, the slot the send queue's next), so the first poll for that answer
 * builds it while its read is in flight (gpunic_perf_warp_poll): between an answer and the
 * next post there are then only the stores, and the polls keep their time.
 */
static __device__ __forceinline__ void gpunic_perf_warp_build(const struct gpunic_perf_warp *w,
							      uint32_t lane, uint64_t *lo, uint64_t *hi)
{
	uint32_t idx = w->pi, lanes = 4 * w->nbb, seq = (uint32_t)w->posted + 1, o[4], k, ctrl2;

	for (k = 0; k < 4; k++)
		o[k] = w->tw[k];
	/* write_lat's byte: a select per word, no indexing (which would put o in memory) */
	for (k = 0; k < 4; k++) {
		uint32_t m = (o[k] & ~(0xffu << w->mark_shift)) | (seq & 0xffu) << w->mark_shift;

		o[k] = w->write && lane == w->mark_lane && k == w->mark_word ? m : o[k];
	}
	/* the ctrl segment on lane 0 (selects: every lane computes it) */
	o[0] = lane == 0 ? gpunic_dev_htobe32(((idx & 0xffff) << 8) | w->opcode) : o[0];
	o[1] = lane == 0 ? gpunic_dev_htobe32((w->qp.qpn << 8) | w->ds |
					      GPUNIC_DEV_CTRL_SEALED_DS) : o[1];
	o[2] = lane == 0 ? (uint32_t)MLX5_WQE_CTRL_CQ_UPDATE << 24 : o[2];
	o[3] = lane == 0 ? 0 : o[3];
	ctrl2 = gpunic_warp_seal(o, lane & (lanes - 1), w->ds, idx, lanes);
	o[2] = lane == 0 ? ctrl2 : o[2];
	*lo = (uint64_t)o[1] << 32 | o[0];
	*hi = (uint64_t)o[3] << 32 | o[2];
}

/*
 * Post the WQE gpunic_perf_warp_build made (@lo, @hi) and hand it to the NIC. The caller made
 * sure the send queue has room; the slot is the one it was built for (only a post moves it).
 * The WQE (one or two blocks) is sealed: in GPU_BF mode it goes to its BlueFlame lines too,
 * and the NIC takes it whole whatever part arrives first, with no fence; else the record (and
 * doorbell) follow a fence.
 */
static __device__ __forceinline__ void gpunic_perf_warp_post(struct gpunic_perf_ctx *c,
							     struct gpunic_perf_warp *w,
							     uint32_t lane, uint64_t lo, uint64_t hi)
{
	uint32_t idx = w->pi, end = idx + w->nbb, lanes = 4 * w->nbb;
	bool bf = w->qp.handler_mode == GPUNIC_HANDLER_GPU_BF;

	if (lane < lanes) {
		gpunic_dev_store16_relaxed(gpunic_dev_sq_seg(&w->qp, idx, lane), lo, hi);
		if (bf)
			gpunic_dev_store16_relaxed(gpunic_dev_bf_line(&w->qp, idx + lane / 4) +
							   16 * (lane & 3), lo, hi);
	}
	/* without a BlueFlame copy the WQE reaches the NIC before the record: each lane's own
	 * fence, then the warp barrier lane 0 waits on */
	if (!bf)
		gpunic_dev_to_nic_barrier();
	__syncwarp(0xffffffffu);
	if (lane == 0)
		gpunic_warp_hand_over(c->qp->state, &w->qp, end, lo);
	w->pi = end;
	w->posted++;
}

/* What one poll found (the same on every lane). */
struct gpunic_perf_warp_poll {
	bool recv;		/* send_lat: a whole receive CQE */
	bool send;		/* a whole send CQE */
	uint32_t byte;		/* write_lat: the iteration byte */
	uint32_t r_own, r_len, s_own, s_counter;
	uint32_t torn_r, torn_s;
};

/*
 * One poll: a coalesced read of the receive CQE (or of the iteration byte's 16 bytes) and, while
 * a send is outstanding, of the send CQE, each line checked whole by its four lanes. Lanes 0-3
 * (group 0) and 4-7 (group 1) keep their 16 bytes in @lo / @hi for a caller that needs the
 * whole line (an error CQE). A due @next is built while the read is in flight.
 */
static __device__ __forceinline__ void gpunic_perf_warp_poll(const struct gpunic_perf_warp *w,
							     uint32_t lane,
							     struct gpunic_perf_warp_poll *p,
							     uint64_t *lo, uint64_t *hi,
							     struct gpunic_perf_next *next)
{
	const uint32_t full = 0xffffffffu;
	uint32_t g = lane >> 2, j = lane & 3, v[4], k, ci, own;
	bool active, owned, whole, line = true;
	/* a copy, selected by value: selecting its address would keep the QP in memory */
	struct gpunic_dev_cq cq = g == 0 ? w->qp.rcq : w->qp.scq;
	const uint8_t *addr;
	uint32_t whole_mask, owned_mask;

	ci = g == 0 ? w->rci : w->sci;
	if (g == 0 && w->write) {
		addr = w->seen_line;
		active = j == 0;
		line = false;
	} else {
		addr = gpunic_dev_cqe_at(&cq, ci) + 16 * j;
		active = g == 0 || (g == 1 && w->posted != w->reaped);
	}
	active = active && g < 2;
	*lo = 0;
	*hi = 0;
	if (active)
		gpunic_dev_load16_relaxed(addr, lo, hi);
	if (next->due) {
		gpunic_perf_warp_build(w, lane, &next->lo, &next->hi);
		next->due = false;
	}
	for (k = 0; k < 4; k++)
		v[k] = gpunic_warp_word(*lo, *hi, k);
	own = gpunic_warp_cqe_own(*hi, lane);
	whole = gpunic_warp_cqe_whole(v, lane, ci);
	owned = active && line && gpunic_dev_cqe_owned(&cq, (uint8_t)own, ci);
	whole = owned && whole;
	owned_mask = __ballot_sync(full, owned);
	whole_mask = __ballot_sync(full, whole);
	p->recv = !w->write && (whole_mask & 1);
	p->send = (whole_mask >> 4) & 1;
	p->torn_r = (owned_mask & ~whole_mask) & 1;
	p->torn_s = ((owned_mask & ~whole_mask) >> 4) & 1;
	p->r_own = __shfl_sync(full, own, 0);
	p->r_len = gpunic_dev_be32toh(__shfl_sync(full, v[3], 2));
	p->s_own = __shfl_sync(full, own, 4);
	p->s_counter = gpunic_dev_be16toh((uint16_t)__shfl_sync(full, (uint32_t)(*hi >> 32), 7));
	own = 0;
	for (k = 0; k < 4; k++)
		own = k == w->seen_word ? v[k] : own;
	p->byte = __shfl_sync(full, own >> w->seen_shift, 0) & 0xff;
}

/* Group @g's whole line, on every lane (an error CQE, to decode as the thread path does). */
static __device__ __forceinline__ void gpunic_perf_warp_line(uint64_t lo, uint64_t hi, uint32_t g,
							     union gpunic_dev_cqe_copy *cc)
{
	uint32_t k;

	for (k = 0; k < 4; k++) {
		cc->q[2 * k] = __shfl_sync(0xffffffffu, lo, 4 * g + k);
		cc->q[2 * k + 1] = __shfl_sync(0xffffffffu, hi, 4 * g + k);
	}
}

/* A completion the test cannot take, group @g's: lane 0 fails the run with its syndrome (an
 * error CQE) or -EIO, as the thread path does. */
static __device__ __forceinline__ void gpunic_perf_warp_fail(struct gpunic_perf_ctx *c,
							     uint32_t lane, uint64_t lo, uint64_t hi,
							     uint32_t g)
{
	union gpunic_dev_cqe_copy cc;
	struct gpunic_dev_cqe cqe;

	gpunic_perf_warp_line(lo, hi, g, &cc);
	if (lane == 0) {
		gpunic_dev_cqe_decode(&cc, &cqe);
		if (!gpunic_perf_cqe_failed(c, &cqe))
			c->err = -EIO;
	}
}

/*
 * Take what a poll found on the send CQ: a completion hands its WQE's blocks back. Return
 * (every lane): 0, or -1 for an error CQE (lane 0 set ctx->err, as the thread path does).
 */
static __device__ __forceinline__ int gpunic_perf_warp_reap(struct gpunic_perf_ctx *c,
							    struct gpunic_perf_warp *w,
							    uint32_t lane,
							    const struct gpunic_perf_warp_poll *p,
							    uint64_t lo, uint64_t hi)
{
	uint32_t delta, sci = w->sci;

	if ((p->s_own >> 4) != MLX5_CQE_REQ) {
		gpunic_perf_warp_fail(c, lane, lo, hi, 1);
		return -1;
	}
	if (lane == 0)
		gpunic_dev_priv_cq_consume(&w->qp.scq, &sci, 0);
	w->sci++;
	/* as gpunic_dev_priv_sq_complete, with every WQE the same size */
	delta = (p->s_counter - (w->done & 0xffff)) & 0xffff;
	if (delta < w->pi - w->done)
		w->done += delta + w->nbb;
	w->reaped++;
	return 0;
}

/* What gpunic_perf_warp_wait() waits for. */
enum gpunic_perf_want {
	GPUNIC_PERF_WANT_ANSWER,	/* a receive completion (send_lat), byte @seq (write_lat) */
	GPUNIC_PERF_WANT_ROOM,		/* room in the send queue for one more WQE */
	GPUNIC_PERF_WANT_DRAINED,	/* no send outstanding (the end of the run) */
};

/*
 * Poll until @want holds or the host stops the run, taking send completions on the way.
 * Return (every lane): 0, or -1 (ctx->err says why). @pp: what the last poll found, @plo and
 * @phi this lane's 16 bytes of it, @empty how many polls before it found nothing; @next is
 * built, if due, under the first poll.
 */
static __device__ __forceinline__ int gpunic_perf_warp_wait(struct gpunic_perf_ctx *c,
							    struct gpunic_perf_warp *w,
							    uint32_t lane, enum gpunic_perf_want want,
							    uint32_t seq,
							    struct gpunic_perf_warp_poll *pp,
							    uint64_t *plo, uint64_t *phi,
							    uint32_t *empty,
							    struct gpunic_perf_next *next)
{
	uint32_t spins = 0;
	int stop;

	for (;;) {
		gpunic_perf_warp_poll(w, lane, pp, plo, phi, next);
		if (lane == 0 && (pp->torn_r | pp->torn_s)) {
			c->qp->state->rcq_torn += pp->torn_r;
			c->qp->state->scq_torn += pp->torn_s;
		}
		if (pp->send && gpunic_perf_warp_reap(c, w, lane, pp, *plo, *phi))
			return -1;
		if (want == GPUNIC_PERF_WANT_ANSWER &&
		    (w->write ? pp->byte == (seq & 0xff) : pp->recv))
			break;
		if (want == GPUNIC_PERF_WANT_ROOM &&
		    w->qp.sq_wqebb_cnt - (w->pi - w->done) >= w->nbb)
			break;
		if (want == GPUNIC_PERF_WANT_DRAINED && w->posted == w->reaped)
			break;
		/* every 1024th turn looks at the host's stop flag (gpunic_perf_wait_turn) */
		stop = 0;
		if ((spins & 1023u) == 1023u)
			stop = gpunic_perf_stopped(c);
		if (__shfl_sync(0xffffffffu, stop, 0)) {
			if (lane == 0)
				c->err = -ETIMEDOUT;
			return -1;
		}
		spins++;
	}
	*empty = spins;
	return 0;
}

/*
 * Take send_lat's receive completion: its length checked, the CQ and the receive ring moved
 * on, the receive handed back while more are due. Return (every lane): 0 or -1 (ctx->err).
 */
static __device__ __forceinline__ int gpunic_perf_warp_recv(struct gpunic_perf_ctx *c,
							    struct gpunic_perf_warp *w,
							    uint32_t lane,
							    const struct gpunic_perf_warp_poll *p,
							    uint64_t lo, uint64_t hi, uint64_t rcnt)
{
	uint32_t rci = w->rci, op = p->r_own >> 4;

	/* as the thread path: an error CQE fails the run with its syndrome, a wrong length
	 * with -EIO */
	if (op == MLX5_CQE_RESP_ERR || op == MLX5_CQE_REQ_ERR || p->r_len != w->size) {
		gpunic_perf_warp_fail(c, lane, lo, hi, 0);
		return -1;
	}
	w->rci++;
	w->rq_tail++;
	if (rcnt < w->repost_below)
		w->rq_head++;
	if (lane == 0) {
		gpunic_dev_priv_cq_consume(&w->qp.rcq, &rci, 0);
		if (rcnt < w->repost_below)
			gpunic_dev_store_relaxed_u32(&w->qp.dbrec[MLX5_RCV_DBR],
						     gpunic_dev_htobe32(w->rq_head & 0xffff));
	}
	return 0;
}

/*
 * gpunic_perf_lat_warp - send_lat or write_lat on all 32 lanes of a warp (lane 0 is the
 * executor's thread 0), as gpunic_perf_lat_send / gpunic_perf_lat_write do it on one thread:
 * the same order of receives and sends, the same timestamps and checks.
 */
static __device__ void gpunic_perf_lat_warp(struct gpunic_perf_ctx *c, uint32_t lane)
{
	struct gpunic_perf_warp w;
	struct gpunic_perf_warp_poll p;
	/* the stage profile in registers, added to the context at the end: lane 0's stores
	 * to it would sit between an answer and the next post */
	struct gpunic_perf_lat_profile prof = { 0, 0, 0, 0, 0, 0, 0 };
	uint64_t scnt = 0, rcnt = 0, n = c->iters, t0 = 0, t1, lo, hi;
	struct gpunic_perf_next next;
	uint32_t torn0 = 0, empty = 0;
	const bool timed = c->profile != 0;	/* in a register: c is reloaded after each poll */

	gpunic_perf_warp_load(c, &w, lane);
	if (lane == 0) {
		torn0 = gpunic_perf_torn_now(c);
		/* receives primed with their WQEs written: one release for them, then the
		 * producer moves with plain stores */
		gpunic_dev_recv_publish(c->qp, 1);
	}
	__syncwarp(0xffffffffu);
	while (scnt < n || rcnt < n) {
		next.due = scnt < n;
		if (rcnt < n && !(scnt < 1 && c->client)) {
			rcnt++;
			if (gpunic_perf_warp_wait(c, &w, lane, GPUNIC_PERF_WANT_ANSWER,
						  (uint32_t)rcnt, &p, &lo, &hi, &empty, &next))
				break;
			t0 = timed ? gpunic_dev_clock_ns() : 0;
			prof.answers++;
			prof.empty_polls += empty;
			if (!w.write && gpunic_perf_warp_recv(c, &w, lane, &p, lo, hi, rcnt - 1))
				break;
			prof.take_ns += timed ? gpunic_dev_clock_ns() - t0 : 0;
		}
		if (scnt < n) {
			if (w.qp.sq_wqebb_cnt - (w.pi - w.done) < w.nbb &&
			    gpunic_perf_warp_wait(c, &w, lane, GPUNIC_PERF_WANT_ROOM, 0, &p, &lo,
						  &hi, &empty, &next))
				break;
			/* no poll before this post built it (the client's first) */
			if (next.due)
				gpunic_perf_warp_build(&w, lane, &next.lo, &next.hi);
			t0 = gpunic_dev_clock_ns();
			if (lane == 0)
				c->t_post[scnt] = t0;
			scnt++;
			gpunic_perf_warp_post(c, &w, lane, next.lo, next.hi);
			t1 = timed ? gpunic_dev_clock_ns() : t0;
			prof.post_ns += t1 - t0;
			prof.posts++;
			if (lane == 0)
				gpunic_perf_lat_progress(c, scnt);
		}
	}
	if (scnt == n && rcnt == n) {
		if (lane == 0)
			c->t_post[n] = gpunic_dev_clock_ns();
		next.due = false;
		gpunic_perf_warp_wait(c, &w, lane, GPUNIC_PERF_WANT_DRAINED, 0, &p, &lo, &hi,
				      &empty, &next);
	}
	if (lane == 0) {
		gpunic_perf_warp_save(c, &w);
		c->prof.answers += prof.answers;
		c->prof.empty_polls += prof.empty_polls;
		c->prof.take_ns += prof.take_ns;
		c->prof.post_ns += prof.post_ns;
		c->prof.posts += prof.posts;
		c->prof.torn = gpunic_perf_torn_now(c) - torn0;
	}
	__syncwarp(0xffffffffu);
}

/* The tests a warp runs (gpunic_perf_exec_warp); the launch gives them one. */
GPUNIC_DEV_FN bool gpunic_perf_test_on_warp(uint32_t test)
{
	return test == GPUNIC_PERF_SEND_LAT || test == GPUNIC_PERF_WRITE_LAT;
}

/*
 * gpunic_perf_exec_warp - gpunic_perf_exec() of a latency test on the 32 lanes of one warp, lane
 * 0 being thread 0: the warp's fast path when the test fits it, else lane 0 alone runs the
 * thread-scope loop while the other lanes wait.
 */
static __device__ void gpunic_perf_exec_warp(struct gpunic_perf_ctx *c, uint32_t lane)
{
	const uint32_t full = 0xffffffffu;
	int run = 0, fast = 0;

	if (lane == 0) {
		run = gpunic_perf_exec_begin(c, 0);
		fast = run && gpunic_perf_warp_fits(c);
	}
	run = __shfl_sync(full, run, 0);
	fast = __shfl_sync(full, fast, 0);
	/* lane 0's prime is in memory for the others */
	__syncwarp(full);
	if (fast)
		gpunic_perf_lat_warp(c, lane);
	else if (run && lane == 0)
		gpunic_perf_exec_run(c, 0);
	__syncwarp(full);
	if (lane == 0)
		gpunic_perf_exec_end(c, 0);
}
#endif /* __CUDACC__ */

#endif /* GPUNIC_PERF_LAT_DEV_H */
