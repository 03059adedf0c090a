/* SPDX-License-Identifier: MIT */
/*
 * The loopback forwarder's per-message work, one source for the persistent GPU kernel and the
 * CPU executor thread (built like gpunic_dev.h, whose functions it calls).
 *
 * A sensor sends each message either as RDMA WRITE_WITH_IMM into a slot of the receive ring
 * (immediate = slot index, HSB style; a zero-length receive WQE is consumed) or as a SEND (data
 * in the receive WQE's slot, or in the CQE when it is at most 32 bytes and the QP scatters to
 * the CQE). The forwarder sends every message back as a SEND: inline when it fits in the WQE,
 * else from the slot by SGE. It reposts the receive, and asks for a send completion only every
 * signal_every messages, which is what keeps the send queue from filling.
 *
 * With an RPC table (ctx.rpc, docs/RPC.md) every message is a request: the dispatch step of
 * gpunic/rpc_dev.h answers it, and the response goes back in its place (inline when it fits,
 * else from the slot), or nothing goes back when the table's flags drop the request; its
 * receive is reposted either way. A response may be longer than its request.
 */
#ifndef GPUNIC_LOOP_DEV_H
#define GPUNIC_LOOP_DEV_H

#include <stdbool.h>
#include <time.h>

#include <gpunic/gpunic_dev.h>
#include <gpunic/rpc_dev.h>
#include <gpunic/rpc_handlers.h>
#include "gpunic/warp_dev.h"

/* The CPU executor's points of the hop trace (gpunic/hoptrace.h); a GPU stamps none. */
#if defined(__CUDACC__)
#define GPUNIC_LOOP_MARK(kind) ((void)0)
#else
#include "gpunic/hoptrace.h"
#define GPUNIC_LOOP_MARK(kind) hop_mark(kind)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Per-message work the forwarder does before sending the message back. */
enum gpunic_loop_work {
	GPUNIC_LOOP_WORK_NONE = 0,     /* echo as received */
	GPUNIC_LOOP_WORK_ADD_ONE = 1,  /* add 1 to every byte (the CUDA-Q validation's work) */
};

/* Largest message the forwarder echoes; a slot is at least this large. */
#define GPUNIC_LOOP_MAX_MSG 4096u

struct gpunic_loop_ctx {
	struct gpunic_dev_qp *qp;   /* the forwarder's UC QP, exported */
	uint8_t *ring;              /* receive ring as the executor addresses it */
	uint64_t ring_iova;         /* the same ring as WQEs address it (lkey's MR) */
	uint32_t ring_lkey;
	uint32_t slot_bytes;        /* bytes per slot, >= the largest message */
	uint32_t slots;             /* ring slots = receive WQEs kept posted */
	uint32_t work;              /* enum gpunic_loop_work */
	uint32_t signal_every;      /* request a send CQE every this many sends (power of two) */
	uint32_t recv_with_buffers; /* 1: receive WQEs point at slots (SEND mode); 0: zero-length */
	/* Written by the executor, read by the host after it stops. */
	uint64_t echoed;            /* messages sent back */
	uint64_t errors;            /* error CQEs or malformed completions, each skipped */
	uint64_t send_errors;       /* echoes that could not be posted */
	uint32_t last_syndrome;     /* syndrome of the last error CQE */
	uint32_t profile;           /* 1: add up the time of each stage below (costs clock reads) */
	uint32_t expect_slot;       /* WRITE_WITH_IMM: the slot the next message fills */
	uint64_t spec_hits;         /* GPU: messages whose slot was read with their CQE */
	/* Stage times in ns, summed over the echoed messages (profile only): where the time of one
	 * message goes inside the forwarder, from the CQE seen to the receive reposted. */
	uint64_t t_cqe_ns;          /* rest of the CQE read after its owner byte was seen */
	uint64_t t_stage_ns;        /* message bytes read into the executor's memory, work done */
	uint64_t t_send_ns;         /* send WQE written, doorbell rung */
	uint64_t t_recv_ns;         /* receive WQE reposted */
	uint64_t idle_polls;        /* polls that found the receive CQ empty */
	uint64_t t_idle_ns;         /* time spent in them */
	/* The fast path (gpunic_loop_fast_step, GPU): */
	uint64_t fast_msgs;         /* messages that went through it */
	uint64_t fast_batches;      /* coalesced reads that found at least one message */
	uint64_t slow_msgs;         /* completions it handed to the thread-scope path */
	uint64_t torn_lines;        /* CQE lines whose check failed: read again */
	uint64_t pair_misses;       /* WRITE_WITH_IMM: slot read with the CQE did not match it */
	uint64_t t_fast_read_ns;    /* profile: the read that found a batch, and its checks */
	uint64_t t_fast_build_ns;   /* profile: from there to the batch's WQE stores issued */
	uint64_t t_fast_store_ns;   /* profile: of which, the WQE stores' issue */
	uint64_t t_fast_hand_ns;    /* profile: from there to the batch handed over, counters moved */
	/* GPU: reads of the receive CQ in flight while idle (1 or 2; 0: the default), the second
	 * issued poll_stagger_ns after the first (0: half a read's round trip, timed at start) */
	uint32_t polls_in_flight;
	uint32_t poll_stagger_ns;
	/* GPU, always counted: stretches of idle polls with no message among them, and their
	 * time (one clock reading per stretch): the idle poll's period, profile or not */
	uint64_t idle_span_polls;
	uint64_t idle_span_ns;
	/* RPC (NULL: plain echoes): the function table as the executor addresses it (a GPU's copy
	 * in device memory, its handlers bound there); every message is dispatched through it. */
	const struct gpunic_rpc_table *rpc;
	/* GPU: where requests are dispatched, slot_bytes for each of the fast path's eight groups
	 * (shared memory, set by the kernel); the CPU dispatches in the ring slot itself */
	uint8_t *rpc_scratch;
	/* Written by the executor: every request by how it ended (gpunic/rpc.h) */
	struct gpunic_rpc_counters rpc_counts;
};

/* Bytes of a message staged in the executor's own memory before it is sent back inline. */
#define GPUNIC_LOOP_STAGE_BYTES 256u

/*
 * Copy @len (<= GPUNIC_LOOP_STAGE_BYTES) bytes of a ring slot into @dst. On the GPU the ring is
 * host-pinned memory across PCIe: every load is issued before the first store, 16 bytes at a
 * time, so the copy costs one round trip instead of one per load. Slots are 64-byte aligned and
 * a multiple of 64 bytes long, so reading up to the next 16-byte (GPU) or 32-byte (CPU) boundary
 * stays in the slot; @dst holds GPUNIC_LOOP_STAGE_BYTES.
 */
GPUNIC_DEV_FN void gpunic_loop_stage(uint8_t *dst, const uint8_t *src, uint32_t len)
{
#if GPUNIC_DEV_ON_GPU
	const ulonglong2 *s = (const ulonglong2 *)src;
	ulonglong2 *d = (ulonglong2 *)dst;
	ulonglong2 v[GPUNIC_LOOP_STAGE_BYTES / 16];
	uint32_t n = (len + 15) / 16, i;

#pragma unroll
	for (i = 0; i < GPUNIC_LOOP_STAGE_BYTES / 16; i++)
		if (i < n)
			v[i] = s[i];
#pragma unroll
	for (i = 0; i < GPUNIC_LOOP_STAGE_BYTES / 16; i++)
		if (i < n)
			d[i] = v[i];
#else
	/* fixed 32-byte moves, rounded up inside the slot and @dst (a memcpy of variable length
	 * is a call), the first one whatever @len: most messages need no other */
	uint32_t i;

	memcpy(dst, src, 32);
	for (i = 32; i < len; i += 32)
		memcpy(dst + i, src + i, 32);
#endif
}

/* The first byte of ring slot @slot (< c->slots). */
GPUNIC_DEV_FN uint8_t *gpunic_loop_slot(const struct gpunic_loop_ctx *c, uint32_t slot)
{
	return c->ring + (size_t)slot * c->slot_bytes;
}

/*
 * Are the receive WQEs of the ring unchanging? Receive WQE i always describes slot i % slots
 * (or is zero-length), so with exactly one WQE per slot a consumed WQE still holds the right
 * bytes: it is handed back by moving the producer, with nothing written (gpunic_dev_recv_repost).
 */
GPUNIC_DEV_FN bool gpunic_loop_repost_same(const struct gpunic_loop_ctx *c)
{
	return c->qp->rq_wqe_cnt == c->slots;
}

/* Write the receive WQE for slot @slot (zero-length, or pointing at the slot); @publish: also
 * update the receive doorbell record now, else the next gpunic_dev_submit_all() does. */
GPUNIC_DEV_FN int64_t gpunic_loop_repost(struct gpunic_loop_ctx *c, uint32_t slot, bool publish)
{
	struct gpunic_dev_sge sge;
	const struct gpunic_dev_sge *sg = (const struct gpunic_dev_sge *)0;
	uint32_t n = 0;

	if (c->recv_with_buffers) {
		sge.addr = c->ring_iova + (uint64_t)slot * c->slot_bytes;
		sge.length = c->slot_bytes;
		sge.lkey = c->ring_lkey;
		sg = &sge;
		n = 1;
	}
	return publish ? gpunic_dev_post_recv(c->qp, sg, n) :
			 gpunic_dev_post_recv_deferred(c->qp, sg, n);
}

/* Post the receive WQE for slot @slot and tell the NIC. */
GPUNIC_DEV_FN int64_t gpunic_loop_post_recv(struct gpunic_loop_ctx *c, uint32_t slot)
{
	return gpunic_loop_repost(c, slot, true);
}

/* Fill the receive queue once, before the sensor starts. Return: 0 or a negative errno. */
GPUNIC_DEV_FN int gpunic_loop_prime(struct gpunic_loop_ctx *c)
{
	for (uint32_t i = 0; i < c->slots; i++) {
		int64_t r = gpunic_loop_post_recv(c, i);

		if (r < 0)
			return (int)r;
	}
	return 0;
}

/* Take send completions so the send queue never fills (a signalled CQE frees what precedes it). */
GPUNIC_DEV_FN void gpunic_loop_reap_sends(struct gpunic_loop_ctx *c)
{
	struct gpunic_dev_cqe cqe;

	while (gpunic_dev_poll_scq(c->qp, &cqe)) {
		if (gpunic_dev_cqe_is_error(&cqe)) {
			c->send_errors++;
			c->last_syndrome = cqe.syndrome;
		}
	}
}

/* Reaping rounds a send waits for queue space before it gives up (the NIC stopped completing
 * sends: the forwarder must still get back to its stop flag). */
#define GPUNIC_LOOP_SEND_RETRIES (1u << 20)

/*
 * With nothing else to do, take one send completion once half the send queue is in use, so the
 * queue rarely fills: a full queue makes the next echo wait for a burst of completions.
 */
GPUNIC_DEV_FN void gpunic_loop_reap_idle(struct gpunic_loop_ctx *c)
{
	struct gpunic_dev_cqe cqe;

	if (gpunic_dev_sq_free(c->qp) >= c->qp->sq_wqebb_cnt / 2)
		return;
	if (gpunic_dev_poll_scq(c->qp, &cqe) && gpunic_dev_cqe_is_error(&cqe)) {
		c->send_errors++;
		c->last_syndrome = cqe.syndrome;
	}
}

/*
 * Send @len bytes of @data back. Small messages go inline (the WQE carries them, so the NIC
 * reads nothing else); larger ones by SGE from the slot, where @data already is.
 * Return: the WQE counter, or a negative errno (-ENOMEM: no send queue space came back).
 */
GPUNIC_DEV_FN int64_t gpunic_loop_send_back(struct gpunic_loop_ctx *c, const uint8_t *data,
					    uint32_t len, uint32_t slot)
{
	uint8_t flags = 0;
	uint32_t tries;
	int64_t r = -ENOMEM;

	if ((c->echoed & (c->signal_every - 1)) == c->signal_every - 1)
		flags |= GPUNIC_DEV_SEND_SIGNALED;
	for (tries = 0; tries < GPUNIC_LOOP_SEND_RETRIES; tries++) {
		if (len <= c->qp->max_inline)
			r = gpunic_dev_post_send_inline(c->qp, MLX5_OPCODE_SEND, flags, data, len, 0,
							0, 0);
		else
			r = gpunic_dev_post_send_sge(c->qp, MLX5_OPCODE_SEND, flags,
						     c->ring_iova + (uint64_t)slot * c->slot_bytes,
						     len, c->ring_lkey, 0, 0, 0);
		if (r != -ENOMEM)
			return r;
		gpunic_loop_reap_sends(c);
	}
	return r;
}

/* One received message on its way back: what the receive half hands the send half. */
struct gpunic_loop_msg {
	uint8_t data[GPUNIC_LOOP_STAGE_BYTES];  /* the bytes to send inline (staged, work done) */
	uint32_t len;
	uint32_t slot;       /* ring slot holding the message (sent from there when not inline) */
	uint32_t rwqe;       /* receive WQE to repost */
	uint8_t inl;         /* 1: data[] holds the message */
	uint8_t send;        /* 0: a skipped completion: only repost its receive WQE */
	uint16_t pad;
} __attribute__((aligned(16)));

/*
 * Is this step timing its stages? On a CPU @profile says, a constant in each of the two copies
 * gpunic_loop_step() makes, so the unprofiled one has no checks; c->profile, read at each,
 * costs a load and a branch there, as the stores between them make gcc read it again
 * (tests/hotpath). A GPU reads c->profile at each, as it always has.
 */
#if GPUNIC_DEV_ON_GPU
#define GPUNIC_LOOP_PROFILING(c, profile) ((c)->profile)
#else
#define GPUNIC_LOOP_PROFILING(c, profile) (profile)
#endif

/*
 * RPC, the thread-scope path: answer the request of @len bytes that arrived in @slot_ptr (or,
 * when @have is not NULL, whose bytes are already in the executor's memory at @have: the CQE's
 * payload, a slot read with its CQE) and set @m to send the response, or nothing when the table
 * drops the request. A CPU dispatches in the slot itself; a GPU on a copy in its scratch (the
 * slot is across PCIe and a handler may read its arguments more than once), then puts the
 * response in m->data when it goes back inline, else in the slot.
 */
GPUNIC_DEV_FN void gpunic_loop_rpc_answer(struct gpunic_loop_ctx *c, struct gpunic_loop_msg *m,
					  uint8_t *slot_ptr, const uint8_t *have, uint32_t len)
{
	uint32_t rlen, reason;
#if GPUNIC_DEV_ON_GPU
	uint8_t *buf = c->rpc_scratch;
	uint32_t off, n;

	if (have) {
		gpunic_rpc_copy(buf, have, len);
	} else {
		/* a staging read (one round trip) per GPUNIC_LOOP_STAGE_BYTES */
		for (off = 0; off < len; off += n) {
			n = len - off < GPUNIC_LOOP_STAGE_BYTES ? len - off : GPUNIC_LOOP_STAGE_BYTES;
			gpunic_loop_stage(buf + off, slot_ptr + off, n);
		}
	}
#else
	uint8_t *buf = slot_ptr;

	if (have)
		memcpy(buf, have, len);  /* scattered into the CQE: the slot never got it */
#endif
	rlen = gpunic_rpc_dispatch_reason(c->rpc, buf, len, c->slot_bytes, buf, c->slot_bytes,
					  &reason);
	gpunic_rpc_count(&c->rpc_counts, reason, rlen);
	m->send = rlen != 0;
	m->len = rlen;
	m->inl = 0;
#if GPUNIC_DEV_ON_GPU
	if (rlen <= c->qp->max_inline && rlen <= GPUNIC_LOOP_STAGE_BYTES) {
		gpunic_rpc_copy(m->data, buf, rlen);
		m->inl = 1;
	} else {
		gpunic_rpc_copy(slot_ptr, buf, rlen);
	}
#endif
}

/*
 * The receive half: take at most one completion, read the message (staged into @m when it goes
 * back inline) and do the work on it, or with @rpc answer it as a request
 * (gpunic_loop_rpc_answer). @profile: c->profile (GPUNIC_LOOP_PROFILING); @rpc: c->rpc != NULL,
 * a constant in each copy the callers make.
 * Return: 1 with @m filled (with @rpc, m->send 0 for a dropped request), 0 if the receive CQ
 * was empty, -1 if a completion was skipped as an error (counted; @m then only asks
 * gpunic_loop_give() to repost its receive WQE, so that one thread alone posts receives).
 */
GPUNIC_DEV_FN int gpunic_loop_take_as(struct gpunic_loop_ctx *c, struct gpunic_loop_msg *m,
				       bool profile, bool rpc)
{
	struct gpunic_dev_cqe cqe;
	struct gpunic_dev_prefetch pf = { 0, 0, 0 };
	uint8_t *slot_ptr;
	uint32_t slot, len, i, spec_len = 0;
	uint64_t t0 = 0, t1 = 0;

#if GPUNIC_DEV_ON_GPU
	/* HSB senders fill the ring's slots in turn: read the slot the next message should name
	 * together with its CQE, saving the round trip of reading it after the immediate is known.
	 * A message that names another slot is simply read again. A CPU stages the slot after the
	 * CQE (tests/hotpath: 30 instructions less a message) and asks for that slot's line while
	 * it polls (below). */
	if (!c->recv_with_buffers && c->slot_bytes >= GPUNIC_DEV_PREFETCH_MAX) {
		spec_len = GPUNIC_DEV_PREFETCH_MAX;
		pf.src = gpunic_loop_slot(c, c->expect_slot);
		pf.dst = m->data;
		pf.len = spec_len;
	}
#endif
	if (GPUNIC_LOOP_PROFILING(c, profile))
		t0 = gpunic_dev_clock_ns();
	if (!gpunic_dev_poll_rcq_batched(c->qp, &cqe, &pf)) {
#if !GPUNIC_DEV_ON_GPU
		/* the line of the slot the next WRITE_WITH_IMM should fill, asked for while the
		 * CQ is empty: it then crosses from the engine's core beside its CQE, not after
		 * it (the executor's stretch 173-195 ns -> 65-105 on the H200 host in most builds:
		 * docs/BENCHMARKS.md, "Where a round trip's time goes") */
		if (!c->recv_with_buffers)
			__builtin_prefetch(gpunic_loop_slot(c, c->expect_slot), 0, 3);
#endif
		if (GPUNIC_LOOP_PROFILING(c, profile)) {
			c->idle_polls++;
			c->t_idle_ns += gpunic_dev_clock_ns() - t0;
		}
		return 0;
	}
	GPUNIC_LOOP_MARK(HOP_TAKE);
	if (GPUNIC_LOOP_PROFILING(c, profile)) {
		t1 = gpunic_dev_clock_ns();
		c->t_cqe_ns += t1 - t0;
	}
	/* Receives complete in order: the consumed WQE belongs to slot wqe_idx % slots. */
	m->rwqe = cqe.wqe_idx % c->slots;
	if (gpunic_dev_cqe_is_error(&cqe) || cqe.byte_cnt > c->slot_bytes ||
	    (cqe.opcode == MLX5_CQE_RESP_WR_IMM && cqe.imm >= c->slots)) {
		c->errors++;
		c->last_syndrome = cqe.syndrome;
		m->send = 0;
		return -1;
	}
	m->send = 1;
	len = cqe.byte_cnt;
	slot = cqe.opcode == MLX5_CQE_RESP_WR_IMM ? cqe.imm : m->rwqe;
	slot_ptr = gpunic_loop_slot(c, slot);
	/* A message that goes back inline is read once, into the executor's own memory; a larger
	 * one is sent from the slot by SGE. */
	m->inl = len <= c->qp->max_inline && len <= GPUNIC_LOOP_STAGE_BYTES;
	if (rpc) {
		bool spec_hit = spec_len && cqe.opcode == MLX5_CQE_RESP_WR_IMM &&
				slot == c->expect_slot && len <= spec_len;

		gpunic_loop_rpc_answer(c, m, slot_ptr,
				       cqe.data_in_cqe ? cqe.data : spec_hit ? m->data : NULL, len);
	} else if (m->inl) {
		if (cqe.data_in_cqe) {
			gpunic_dev_priv_copy_cqe_data(m->data, cqe.data, len);
		} else if (spec_len && cqe.opcode == MLX5_CQE_RESP_WR_IMM &&
			   slot == c->expect_slot && len <= spec_len) {
			c->spec_hits++;
		} else {
			gpunic_loop_stage(m->data, slot_ptr, len);
		}
	}
	if (cqe.opcode == MLX5_CQE_RESP_WR_IMM)
		c->expect_slot = slot + 1 < c->slots ? slot + 1 : 0;
	if (!rpc && c->work == GPUNIC_LOOP_WORK_ADD_ONE) {
		uint8_t *p = m->inl ? m->data : slot_ptr;

		for (i = 0; i < len; i++)
			p[i] = (uint8_t)(p[i] + 1);
	}
	if (!rpc)
		m->len = len;
	m->slot = slot;
	if (GPUNIC_LOOP_PROFILING(c, profile))
		c->t_stage_ns += gpunic_dev_clock_ns() - t1;
	return 1;
}

/* gpunic_loop_take_as() for plain echoes. */
GPUNIC_DEV_FN int gpunic_loop_take(struct gpunic_loop_ctx *c, struct gpunic_loop_msg *m,
				    bool profile)
{
	return gpunic_loop_take_as(c, m, profile, false);
}

/*
 * The send half: give the receive WQE back and send the message, behind one fence.
 * Return: 1, or -1 for a skipped completion or a send that could not be posted (counted in
 * send_errors).
 */
GPUNIC_DEV_FN int gpunic_loop_give_nosubmit(struct gpunic_loop_ctx *c,
					     const struct gpunic_loop_msg *m, bool profile);

GPUNIC_DEV_FN int gpunic_loop_give(struct gpunic_loop_ctx *c, const struct gpunic_loop_msg *m)
{
	int r = gpunic_loop_give_nosubmit(c, m, c->profile != 0);

	gpunic_dev_submit_all(c->qp);
	return r;
}

/* gpunic_loop_give() without handing anything to the NIC: the caller submits once for a batch. */
GPUNIC_DEV_FN int gpunic_loop_give_nosubmit(struct gpunic_loop_ctx *c,
					     const struct gpunic_loop_msg *m, bool profile)
{
	uint64_t t0 = 0, t1 = 0;

	if (GPUNIC_LOOP_PROFILING(c, profile))
		t0 = gpunic_dev_clock_ns();
	/* The receive WQE goes back first, unpublished: gpunic_dev_submit_all() then covers it
	 * and the echo together (the ring has many more slots than messages in flight, so the
	 * slot is not reused before its echo left). An unchanging ring moves its producer only. */
	if (gpunic_loop_repost_same(c))
		gpunic_dev_recv_repost(c->qp, 1);
	else
		gpunic_loop_repost(c, m->rwqe, false);
	if (GPUNIC_LOOP_PROFILING(c, profile)) {
		t1 = gpunic_dev_clock_ns();
		c->t_recv_ns += t1 - t0;
	}
	if (!m->send)
		return -1;
	if (gpunic_loop_send_back(c, m->inl ? m->data : gpunic_loop_slot(c, m->slot),
				  m->len, m->slot) < 0) {
		c->send_errors++;
		return -1;
	}
	GPUNIC_LOOP_MARK(HOP_POST);
	c->echoed++;
	if (GPUNIC_LOOP_PROFILING(c, profile))
		c->t_send_ns += gpunic_dev_clock_ns() - t1;
	return 1;
}

/* Messages one step takes before it hands their echoes to the NIC together. */
#define GPUNIC_LOOP_BATCH 8u

/*
 * Handle the messages waiting now, up to GPUNIC_LOOP_BATCH: take each (gpunic_loop_take), give
 * each back (gpunic_loop_give_nosubmit), then hand every echo and repost to the NIC at once:
 * one doorbell (or none in GPU_BF mode) per batch. On one thread; the GPU kernel runs
 * gpunic_loop_fast_step() instead, which does the same with one warp and coalesced accesses.
 * Return: messages echoed (>= 1), 0 if the receive CQ was empty, -1 if every completion taken
 * was skipped as an error (counted).
 */
GPUNIC_DEV_FN int gpunic_loop_step_as(struct gpunic_loop_ctx *c, bool profile, bool rpc)
{
	struct gpunic_loop_msg m;
	uint32_t i;
	int r, echoed = 0, taken = 0;

	for (i = 0; i < GPUNIC_LOOP_BATCH; i++) {
		r = gpunic_loop_take_as(c, &m, profile, rpc);
		if (r == 0)
			break;
		taken++;
		if (gpunic_loop_give_nosubmit(c, &m, profile) > 0)
			echoed++;
		/* the send queue must keep room for the rest of the batch */
		if (gpunic_dev_sq_free(c->qp) < c->qp->sq_wqebb_cnt / 4)
			break;
	}
	if (!taken)
		return 0;
	gpunic_dev_submit_all(c->qp);
	return echoed ? echoed : -1;
}

GPUNIC_DEV_FN int gpunic_loop_step(struct gpunic_loop_ctx *c)
{
#if GPUNIC_DEV_ON_GPU
	return c->rpc ? gpunic_loop_step_as(c, c->profile != 0, true) :
			gpunic_loop_step_as(c, c->profile != 0, false);
#else
	/* a copy for each, so that the one without profiling (or RPC) has no checks left */
	if (c->rpc)
		return c->profile ? gpunic_loop_step_as(c, true, true) :
				    gpunic_loop_step_as(c, false, true);
	return c->profile ? gpunic_loop_step_as(c, true, false) :
			    gpunic_loop_step_as(c, false, false);
#endif
}

#if defined(__CUDACC__)
/* ---------------------------------------------------------------- the GPU fast path */

/*
 * One warp, one PCIe round trip per batch of messages (docs/ARCHITECTURE.md, "the fast path").
 *
 * Read: the 32 lanes read 8 consecutive receive CQEs in one coalesced access, lane 4g+j
 * holding 16-byte chunk j of CQE g (SEND mode: the message is scattered into the CQE). In
 * WRITE_WITH_IMM mode lanes 0-15 read 4 CQEs and lanes 16-31 the first 64 bytes of the 4 slots
 * those messages are expected in, in the same access. A CQE counts only when its owner bit is
 * this lap's and its line check holds (else it is read again: torn or stale); an expected slot
 * only when the CQE names it and the payload check the NIC put in the CQE holds for it.
 *
 * Write: lanes 4g..4g+3 build the echo of message g as one 64-byte inline SEND WQE straight
 * from the chunks they hold (shuffles, no memory), seal it, and store it to the send queue
 * and, in GPU_BF mode, to its BlueFlame line: one coalesced store each, no fence, no doorbell.
 * GPU_DB and CPU_PROXY publish the batch behind one system fence with the record and the
 * doorbell or mailbox. Receives are handed back by moving the producer (the ring's WQEs never
 * change), the CQ consumer record every eighth of the ring: posted stores, no fence.
 *
 * Anything else (an error CQE, a message too long for one block, a slot the pair check does
 * not prove) goes to the thread-scope path, gpunic_loop_take/give, on lane 0.
 */

/* Message word @i of @len bytes: the bytes past the end are zero, and add-one applied. */
static __device__ __forceinline__ uint32_t gpunic_loop_msg_word(uint32_t w, uint32_t i, uint32_t len,
							 uint32_t work)
{
	/* selects, no branches: the lanes of a group hold different words, and a branch on the
	 * word's place would split the warp between the poll and the answer's stores */
	uint32_t inc = ((w & 0x7f7f7f7fu) + 0x01010101u) ^ (w & 0x80808080u);

	return gpunic_dev_word_clip(work == GPUNIC_LOOP_WORK_ADD_ONE ? inc : w, i, len);
}

/* Lowest group index whose bit (at lane 4g of @mask) is clear: how many lead groups are set.
 * Bit arithmetic, not a loop: it sits between the poll's answer and the echo's stores. */
static __device__ __forceinline__ uint32_t gpunic_loop_lead_groups(uint32_t mask, uint32_t ngroups)
{
	uint64_t clear = (uint64_t)(~mask & 0x11111111u) | (1ull << (4 * ngroups));

	return (uint32_t)(__ffsll((long long)clear) - 1) / 4;
}

/*
 * What the fast path reads on every step, held in registers by the kernel's loop. The context
 * and the QP sit in device memory, but every poll is an asm load with a memory clobber, after
 * which the compiler fetches each field again: chains of dependent loads (context, QP, state,
 * address) before the next poll can be issued and again before the answer can be built. Loaded
 * once; only this warp moves the counters below, so their copies stay right until lane 0 runs
 * the thread-scope path or reaps send completions (then gpunic_loop_fast_sync() reloads them).
 * Every step still stores what it moved, so the host and the thread-scope path see it.
 */
struct gpunic_loop_fast {
	struct gpunic_dev_qp qp;	/* a copy: the data-path helpers take it as the QP */
	const uint8_t *ring;
	const struct gpunic_rpc_table *rpc;	/* RPC: the table, and the scratch (ctx) */
	uint8_t *scratch;
	uint32_t cq_publish_mask, slot_bytes, slot_mask, work, signal_mask, rq_batch;
	bool pairs, same, profile;
	/* Messages the next poll looks for: one after a poll that found nothing (a narrower read
	 * across PCIe comes back sooner), every group after one that found work (a backlog is
	 * taken a batch per read). */
	uint32_t width;
	/* the moving parts, mirrored */
	uint32_t ci, pi, done, expect, rq_head, rq_tail, rq_published;
	uint64_t echoed, fast_msgs, fast_batches;
};

/* One poll of the receive CQ in flight: the lane's 16 bytes, which messages it covers, when it
 * went (profile). Issued by gpunic_loop_fast_issue(), looked at by gpunic_loop_fast_take():
 * between the two the warp may do anything that does not need the data, such as issue
 * another poll. */
struct gpunic_loop_poll {
	uint64_t lo, hi, t0;
	uint32_t width;
	uint32_t ci, expect;	/* the counters it was issued with: what makes it stale */
};

/* Reload the counters from memory (all lanes, after a __syncwarp: lane 0 wrote them). */
static __device__ __forceinline__ void gpunic_loop_fast_sync(const struct gpunic_loop_ctx *c,
							     struct gpunic_loop_fast *f)
{
	const volatile struct gpunic_dev_qp_state *st = c->qp->state;
	const volatile struct gpunic_loop_ctx *vc = c;

	f->ci = st->rcq_ci;
	f->pi = st->sq_reserved;
	f->done = st->sq_completed;
	f->rq_head = st->rq_head;
	f->rq_tail = st->rq_tail;
	f->rq_published = st->rq_published;
	f->expect = vc->expect_slot;
	f->echoed = vc->echoed;
	f->fast_msgs = vc->fast_msgs;
	f->fast_batches = vc->fast_batches;
}

/* Fill @f from the context and its QP (all lanes, once, before the loop). */
static __device__ __forceinline__ void gpunic_loop_fast_load(const struct gpunic_loop_ctx *c,
							     struct gpunic_loop_fast *f)
{
	const struct gpunic_dev_qp *qp = c->qp;

	f->qp = *qp;
	f->cq_publish_mask = gpunic_dev_rcq_publish_mask(qp);
	f->ring = c->ring;
	f->rpc = c->rpc;
	f->scratch = c->rpc_scratch;
	f->slot_bytes = c->slot_bytes;
	f->slot_mask = c->slots - 1;
	f->work = c->work;
	f->signal_mask = c->signal_every - 1;
	f->rq_batch = qp->rq_wqe_cnt >= 16 ? qp->rq_wqe_cnt / 8 : 1;
	f->pairs = !c->recv_with_buffers;
	f->same = gpunic_loop_repost_same(c);
	f->profile = c->profile != 0;
	f->width = 1;
	gpunic_loop_fast_sync(c, f);
}

/*
 * With nothing waiting (all lanes): lane 0 takes a send completion when half the send queue is
 * in use, and the warp's count of completed sends follows. Without this the count would lag
 * until the queue looked full, and the reap that then takes every completion at once (one read
 * across PCIe each) would hold up the next message for tens of microseconds.
 */
static __device__ __forceinline__ void gpunic_loop_fast_idle(struct gpunic_loop_ctx *c,
							     struct gpunic_loop_fast *f)
{
	uint32_t done = 0, cnt = f->qp.sq_wqebb_cnt;

	/* the common case decided from registers: nothing is read between two polls */
	if (cnt - (f->pi - f->done) >= cnt / 2)
		return;
	if ((threadIdx.x & 31) == 0) {
		gpunic_loop_reap_idle(c);
		done = ((const volatile struct gpunic_dev_qp_state *)c->qp->state)->sq_completed;
	}
	f->done = __shfl_sync(0xffffffffu, done, 0);
}

/*
 * The send queue looks too full for the batch (all lanes): take the send completions waiting
 * with one coalesced read of the next eight send CQEs. Lane 0's reap takes them one at a time,
 * each a read across PCIe and another for the completed WQE's size, tens of microseconds per
 * full queue while the receive ring drains under load (docs/bench-history/2026-12-02.md,
 * "Where a throughput step is held"). Only the newest
 * good CQE's WQE counter is used: every WQE before it is done, and its own first block (the
 * fast path's echoes are one block; a larger WQE's rest comes back with the next completion).
 * Return (all lanes): true if it took completions; false leaves them to lane 0's reap (none
 * waiting, an error or a torn line among them, CQs without line checks).
 */
static __device__ __noinline__ bool gpunic_loop_fast_reap(struct gpunic_loop_ctx *c,
							   const struct gpunic_dev_cq scq)
{
	const uint32_t full = 0xffffffffu;
	uint32_t lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3;
	struct gpunic_dev_qp_state *st = c->qp->state;
	uint32_t ci = ((const volatile struct gpunic_dev_qp_state *)st)->scq_ci;
	uint32_t w[4], own, n, bad, last, counter, done, delta, k;
	uint64_t lo, hi;
	bool whole;

	if (!(scq.flags & GPUNIC_DEV_CQ_LINE_CHECK))
		return false;
	gpunic_dev_load16_relaxed(gpunic_dev_cqe_at(&scq, ci + g) + 16 * j, &lo, &hi);
	for (k = 0; k < 4; k++)
		w[k] = gpunic_warp_word(lo, hi, k);
	own = gpunic_warp_cqe_own(hi, lane);
	whole = gpunic_warp_cqe_whole(w, lane, ci + g);
	n = gpunic_loop_lead_groups(__ballot_sync(full, gpunic_dev_cqe_owned(&scq, (uint8_t)own,
									     ci + g) && whole), 8);
	bad = __ballot_sync(full, g < n && (own >> 4) != MLX5_CQE_REQ);
	/* word 15 of the newest good CQE: its WQE counter, big-endian, in bytes 60-61 */
	last = __shfl_sync(full, w[3], (n ? 4 * n - 4 : 0) | 3);
	if (!n || bad)
		return false;
	if (lane == 0) {
		counter = (last & 0xff) << 8 | (last >> 8 & 0xff);
		done = st->sq_completed;
		delta = (counter - done) & 0xffff;
		/* a counter outside completed..reserved frees nothing, as in the one-at-a-time reap */
		if (delta < st->sq_reserved - done)
			gpunic_dev_store_release_exec_u32(&st->sq_completed, done + delta + 1);
		for (k = 0; k < n; k++)
			gpunic_dev_priv_cq_consume(&scq, &ci, 0);
		st->scq_ci = ci;
	}
	return true;
}

/*
 * Lane 0, after the batch's WQEs were stored: hand the batch to the NIC and store every counter
 * that moved (posted stores, nothing read back). @nfast messages were taken, @nsend WQEs
 * stored (the same for echoes; RPC: fewer when requests were dropped or answered by the
 * thread-scope path, none at all possibly, and then nothing is handed over).
 */
static __device__ __forceinline__ void gpunic_loop_fast_publish(struct gpunic_loop_ctx *c,
								const struct gpunic_loop_fast *f,
								uint32_t nfast, uint32_t nsend,
								uint64_t ctrl8, bool rpc)
{
	struct gpunic_dev_qp *qp = c->qp;
	struct gpunic_dev_qp_state *st = qp->state;
	uint32_t end = f->pi + nsend, head = f->rq_head + nfast, k, ci = f->ci;

	if (!rpc || nsend)
		gpunic_warp_hand_over(st, &f->qp, end, ctrl8);
	/* receives: consumed and handed back by moving the producer (the ring never changes) */
	st->rq_tail = f->rq_tail + nfast;
	gpunic_dev_store_relaxed_u32(&st->rq_head, head);
	if (head - f->rq_published >= f->rq_batch)
		gpunic_dev_recv_publish(qp, f->rq_batch);
	for (k = 0; k < nfast; k++)
		gpunic_dev_priv_cq_consume(&f->qp.rcq, &ci, f->cq_publish_mask);
	st->rcq_ci = ci;
	c->echoed = f->echoed + nsend;
	c->fast_msgs = f->fast_msgs + nfast;
	c->fast_batches = f->fast_batches + 1;
	if (f->pairs)
		c->expect_slot = (f->expect + nfast) & f->slot_mask;
}

/* A poll that took nothing: the next reads one message's lines (the narrow poll), and the
 * profile counts it idle. Return: 0, as the step does. */
static __device__ __forceinline__ int gpunic_loop_fast_none(struct gpunic_loop_ctx *c,
							    struct gpunic_loop_fast *f,
							    uint32_t lane, uint64_t t0)
{
	f->width = 1;
	if (f->profile && lane == 0) {
		c->idle_polls++;
		c->t_idle_ns += gpunic_dev_clock_ns() - t0;
	}
	return 0;
}

/*
 * 1. One coalesced access (all lanes): the CQEs, and in pairs mode the slots they should name,
 *    of the first f->width messages. Nothing waits for it here: the data is first used in
 *    gpunic_loop_fast_take(), so a second poll can be issued before the first is back.
 */
static __device__ __forceinline__ void gpunic_loop_fast_issue(const struct gpunic_loop_fast *f,
							      struct gpunic_loop_poll *p)
{
	uint32_t lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3;
	uint32_t ngroups = f->pairs ? 4 : 8;
	bool cqe_lane = !f->pairs || g < 4, active = (g & (ngroups - 1)) < f->width;
	const uint8_t *addr;

	p->t0 = f->profile ? gpunic_dev_clock_ns() : 0;
	p->width = f->width;
	p->ci = f->ci;
	p->expect = f->expect;
	if (cqe_lane)
		addr = gpunic_dev_cqe_at(&f->qp.rcq, f->ci + g) + 16 * j;
	else
		addr = f->ring + (size_t)((f->expect + g - 4) & f->slot_mask) * f->slot_bytes +
		       16 * j;
	p->lo = p->hi = 0;
	if (active)
		gpunic_dev_load16_relaxed(addr, &p->lo, &p->hi);
}

/*
 * Whether poll @p saw any CQE of this lap (all lanes; waits for its data): what decides, when
 * two warps poll, whether this one must take the state over to look further.
 */
static __device__ __forceinline__ bool gpunic_loop_fast_seen(const struct gpunic_loop_fast *f,
							     const struct gpunic_loop_poll *p)
{
	uint32_t lane = threadIdx.x & 31, g = lane >> 2, ngroups = f->pairs ? 4 : 8;
	bool cqe_lane = !f->pairs || g < 4, active = (g & (ngroups - 1)) < p->width;
	uint32_t own = gpunic_warp_cqe_own(p->hi, lane);

	return __ballot_sync(0xffffffffu, cqe_lane && active &&
					      gpunic_dev_cqe_owned(&f->qp.rcq, own, p->ci + g)) != 0;
}

/*
 * The answer of a message as one 64-byte inline SEND WQE with counter @idx, chunk @j on this
 * lane (all lanes): @len bytes, whose words 4(j-1)..4(j-1)+2 are @cur and word 4j-5 @prev3
 * (lanes j > 1), past-the-end bytes zero. The ctrl segment goes on lane j = 0, the inline
 * header and the data on the others (selects: every lane computes both).
 */
static __device__ __forceinline__ void gpunic_loop_fast_wqe(const struct gpunic_loop_fast *f,
							    uint32_t j, uint32_t idx, uint32_t len,
							    bool signal, const uint32_t *cur,
							    uint32_t prev3, uint64_t *wlo,
							    uint64_t *whi)
{
	uint32_t o[4], ctrl2, ds = 1 + gpunic_dev_inline_units(len);

	o[0] = j == 0 ? gpunic_dev_htobe32(((idx & 0xffff) << 8) | MLX5_OPCODE_SEND) :
	       j == 1 ? gpunic_dev_htobe32(len | (uint32_t)MLX5_INLINE_SEG) : prev3;
	o[1] = j == 0 ? gpunic_dev_htobe32((f->qp.qpn << 8) | ds | GPUNIC_DEV_CTRL_SEALED_DS) :
			cur[0];
	o[2] = j == 0 ? (uint32_t)(signal ? MLX5_WQE_CTRL_CQ_UPDATE : 0) << 24 : cur[1];
	o[3] = j == 0 ? 0 : cur[2];
	ctrl2 = gpunic_warp_seal(o, j, ds, idx, 4);
	o[2] = j == 0 ? ctrl2 : o[2];
	*wlo = (uint64_t)o[1] << 32 | o[0];
	*whi = (uint64_t)o[3] << 32 | o[2];
}

/* Largest answer one 64-byte inline SEND carries: 64 less the ctrl segment and the inline
 * header. The fast path's echoes are no longer, and RPC responses that are go otherwise. */
#define GPUNIC_LOOP_FAST_INLINE_MAX 44u

/*
 * RPC, the fast path's answers to its lead @nfast messages (all lanes; @len: this lane group's
 * CQE byte count, @lo/@hi: the lane's 16 bytes of the poll). Each request is copied from the
 * lanes that hold it into its group's scratch, one 16-byte store a lane; lane 0 of the group
 * dispatches it there, the response in its place; the group's lanes read the response back
 * and build it into one inline SEND (gpunic_loop_fast_wqe) when it fits. The answered
 * messages' WQEs take consecutive counters from @pi in message order (*@idx: this group's).
 * Return (all lanes), as masks of groups (bit 4g): *@inl_mask those whose WQE was built,
 * *@big_mask those whose response is too long for one block (gpunic_loop_fast_rpc_big sends
 * them); a dropped request is in neither.
 */
static __device__ __forceinline__ void gpunic_loop_fast_rpc(struct gpunic_loop_ctx *c,
							    const struct gpunic_loop_fast *f,
							    uint32_t nfast, uint32_t len,
							    uint64_t lo, uint64_t hi, uint32_t pi,
							    uint32_t *idx, uint64_t *wlo,
							    uint64_t *whi, uint32_t *inl_mask,
							    uint32_t *big_mask)
{
	const uint32_t full = 0xffffffffu;
	uint32_t lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3, base = lane & ~3u;
	/* the message whose chunk j this lane holds: the slot lanes' in pairs mode (group g + 4
	 * holds message g's slot), else the CQE's scattered payload (chunks 0 and 1) */
	uint32_t mg = f->pairs ? g - 4 : g, rl = 0, reason, rank, m, k, cur[4], prev3;
	bool holds = f->pairs ? g >= 4 && mg < nfast : g < nfast && j < 2, fits;
	const uint32_t *w;
	uint8_t *buf;

	if (holds)
		*(ulonglong2 *)(f->scratch + (size_t)mg * f->slot_bytes + 16 * j) =
			make_ulonglong2(lo, hi);
	__syncwarp(full);
	if (j == 0 && g < nfast) {
		buf = f->scratch + (size_t)g * f->slot_bytes;
		rl = gpunic_rpc_dispatch_reason(f->rpc, buf, len, f->slot_bytes, buf,
						f->slot_bytes, &reason);
		gpunic_rpc_count_atomic(&c->rpc_counts, reason, rl);
	}
	__syncwarp(full);
	rl = __shfl_sync(full, rl, base);
	fits = rl && rl <= GPUNIC_LOOP_FAST_INLINE_MAX && rl <= f->qp.max_inline;
	*inl_mask = __ballot_sync(full, j == 0 && g < nfast && fits);
	*big_mask = __ballot_sync(full, j == 0 && g < nfast && rl && !fits);
	rank = __popc(*inl_mask & ((1u << base) - 1));
	*idx = pi + rank;
	/* every group reads its scratch, in bounds: the scratch has eight */
	w = (const uint32_t *)(f->scratch + (size_t)g * f->slot_bytes);
	m = j ? j - 1 : 0;
	for (k = 0; k < 4; k++)
		cur[k] = gpunic_loop_msg_word(w[4 * m + k], 4 * m + k, rl, GPUNIC_LOOP_WORK_NONE);
	m = 4 * (j > 1 ? j - 2 : 0) + 3;
	prev3 = j > 1 ? gpunic_loop_msg_word(w[m], m, rl, GPUNIC_LOOP_WORK_NONE) : 0;
	gpunic_loop_fast_wqe(f, j, *idx, rl,
			     (((uint32_t)f->echoed + rank) & f->signal_mask) == f->signal_mask, cur,
			     prev3, wlo, whi);
}

/*
 * RPC, after the batch was handed over (all lanes): lane 0 sends the responses of the groups
 * in @big_mask (bit 4g) through the thread-scope path, inline from the scratch where the QP
 * takes them inline, else from the request's ring slot, where they are copied first (@expect0,
 * @rq_tail0: the counters the batch started from, which name the slots). Then every lane
 * reloads the counters that moved.
 */
static __device__ __noinline__ void gpunic_loop_fast_rpc_big(struct gpunic_loop_ctx *c,
							      struct gpunic_loop_fast *f,
							      uint32_t big_mask, uint32_t expect0,
							      uint32_t rq_tail0)
{
	const uint8_t *buf;
	uint32_t g, slot, len;
	uint8_t *slot_ptr;

	if ((threadIdx.x & 31) == 0) {
		for (; big_mask; big_mask &= big_mask - 1) {
			g = (uint32_t)(__ffs((int)big_mask) - 1) / 4;
			buf = f->scratch + (size_t)g * f->slot_bytes;
			len = GPUNIC_RPC_HEADER_BYTES +
			      ((const struct gpunic_rpc_response *)buf)->result_len;
			slot = f->pairs ? (expect0 + g) & f->slot_mask : (rq_tail0 + g) % c->slots;
			slot_ptr = gpunic_loop_slot(c, slot);
			if (len > c->qp->max_inline) {
				gpunic_rpc_copy(slot_ptr, buf, len);
				buf = slot_ptr;
			}
			if (gpunic_loop_send_back(c, buf, len, slot) < 0)
				c->send_errors++;
			else
				c->echoed++;
		}
		gpunic_dev_submit_all(c->qp);
	}
	__syncwarp(0xffffffffu);
	gpunic_loop_fast_sync(c, f);
}

/*
 * Steps 2-6 on the data of poll @p, which must have been issued with the counters @f holds now
 * (a poll issued before a step that moved them is stale: issue again). @rpc: the messages are
 * requests (c->rpc), answered by gpunic_loop_fast_rpc; a constant in each copy the kernel
 * makes, so that the echoes' copy has none of it.
 * Return (on every lane): messages taken (> 0: echoed, or with @rpc answered or dropped), 0 if
 * nothing waited, -1 if a completion went to the thread-scope path.
 */
static __device__ __forceinline__ int gpunic_loop_fast_take_as(struct gpunic_loop_ctx *c,
							       struct gpunic_loop_fast *f,
							       const struct gpunic_loop_poll *p,
							       bool rpc)
{
	const uint32_t full = 0xffffffffu;
	uint32_t lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3, base = lane & ~3u;
	uint32_t ngroups = f->pairs ? 4 : 8, ci = f->ci, pi = f->pi;
	bool cqe_lane = !f->pairs || g < 4, active = (g & (ngroups - 1)) < p->width;
	uint64_t lo = p->lo, hi = p->hi, lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0, wlo = 0, whi = 0;
	uint64_t t0 = p->t0, t1 = 0, t2 = 0, ts = 0;
	uint32_t w[4], own, ok_mask, own_mask, n, nfast, nsend, k, opcode, len, imm;
	uint32_t sl, sp, sw, src, elig_mask, idx = pi + g;
	uint32_t inl_mask = 0, big_mask = 0, expect0, rq_tail0;
	bool ok, elig;
	int r;

	for (k = 0; k < 4; k++)
		w[k] = gpunic_warp_word(lo, hi, k);

	/* 2. Which CQEs are this lap's, then which of those are whole. */
	/* Every shuffle runs on all 32 lanes, outside any condition: a __shfl_sync that some lanes
	 * skip (a short-circuited &&, say) is undefined and can hang the warp. */
	own = gpunic_warp_cqe_own(hi, lane);
	own_mask = __ballot_sync(full, cqe_lane && active &&
					       gpunic_dev_cqe_owned(&f->qp.rcq, own, ci + g));
	if (!own_mask)
		/* nothing new: the next poll goes out without the line checks in front of it */
		return gpunic_loop_fast_none(c, f, lane, t0);
	/* the message chunks lane 4g+j will need for the echo, moved now: they depend on the read
	 * alone, so they overlap the checks instead of following them (an RPC answer is built
	 * from its response instead) */
	if (!rpc) {
		src = (f->pairs ? 16 + 4 * g : 4 * g) & 31;
		lo1 = __shfl_sync(full, lo, (src + (j ? j - 1 : 0)) & 31);
		hi1 = __shfl_sync(full, hi, (src + (j ? j - 1 : 0)) & 31);
		lo2 = __shfl_sync(full, lo, (src + (j > 1 ? j - 2 : 0)) & 31);
		hi2 = __shfl_sync(full, hi, (src + (j > 1 ? j - 2 : 0)) & 31);
	}
	ok = gpunic_warp_cqe_whole(w, lane, ci + g);	/* warp-wide: outside the && */
	ok = ok && (own_mask >> lane & 1);
	ok_mask = __ballot_sync(full, ok);
	n = gpunic_loop_lead_groups(ok_mask, ngroups);
	if (!n) {
		/* owned but not whole: torn or stale, read again */
		if ((own_mask & 1) && lane == 0)
			c->torn_lines++;
		return gpunic_loop_fast_none(c, f, lane, t0);
	}
	f->width = ngroups;
	if (f->profile)
		t1 = gpunic_dev_clock_ns();

	/* 3. What the answers need. */
	opcode = own >> 4;
	len = gpunic_dev_be32toh(__shfl_sync(full, w[3], base | 2));
	imm = gpunic_dev_be32toh(__shfl_sync(full, w[1], base | 2));
	/* The echo of message g as one 64-byte inline SEND, chunk j on lane 4g+j, built before
	 * the batch is decided: it needs only the length and the chunks, so the two chains of
	 * shuffles and arithmetic overlap (a completion the fast path cannot take wastes it). */
	if (!rpc) {
		uint32_t m, cur[4], prev3;

		m = j ? j - 1 : 0;
		for (k = 0; k < 4; k++)
			cur[k] = gpunic_loop_msg_word(gpunic_warp_word(lo1, hi1, k), 4 * m + k, len,
						      f->work);
		prev3 = gpunic_loop_msg_word(gpunic_warp_word(lo2, hi2, 3), 4 * (j > 1 ? j - 2 : 0) + 3,
					     len, f->work);
		prev3 = j > 1 ? prev3 : 0;
		gpunic_loop_fast_wqe(f, j, idx, len,
				     (((uint32_t)f->echoed + g) & f->signal_mask) == f->signal_mask,
				     cur, prev3, &wlo, &whi);
	}

	/* 4. Which of them the fast path can echo: an echo must fit one inline block; an RPC
	 * request only the 64 bytes read with its CQE (its response is sized apart,
	 * gpunic_loop_fast_rpc). */
	if (f->pairs) {
		/* A slot lane (group g + 4) checks the slot against the payload check of the CQE
		 * of group g, with that CQE's length and check word fetched straight from its lanes
		 * (computed by every lane, so that the shuffles stay warp-wide: f->pairs is the same
		 * on all of them); one ballot then holds both halves of each pair. */
		sl = gpunic_dev_be32toh(__shfl_sync(full, w[3], (lane & 12) | 2));
		sw = __shfl_sync(full, w[1], lane & 12);
		sp = gpunic_warp_group_sum(gpunic_dev_payload_check_part(w, j, sl > 64 ? 64 : sl,
									 ci + (g & 3)));
		if (!rpc)
			elig = opcode == MLX5_CQE_RESP_WR_IMM &&
			       imm == ((f->expect + g) & f->slot_mask) && len <= 44 &&
			       len <= f->qp.max_inline && len <= f->slot_bytes;
		else
			elig = opcode == MLX5_CQE_RESP_WR_IMM &&
			       imm == ((f->expect + g) & f->slot_mask) && len <= 64 &&
			       len <= f->slot_bytes;
		elig = cqe_lane ? elig && len && g < n && f->same : sp == sw;
		elig_mask = __ballot_sync(full, elig);
		elig_mask &= elig_mask >> 16;
	} else {
		elig = opcode == MLX5_CQE_RESP_SEND && (own & MLX5_INLINE_SCATTER_32) &&
		       len <= GPUNIC_DEV_CQE_INLINE_MAX;
		if (!rpc)
			elig = elig && len <= f->qp.max_inline;
		elig_mask = __ballot_sync(full, elig && len && g < n && f->same);
	}
	nfast = gpunic_loop_lead_groups(elig_mask, n);
	if (!nfast) {
		if (f->pairs && (own_mask & 1) && opcode == MLX5_CQE_RESP_WR_IMM && lane == 0)
			c->pair_misses++;
		r = 0;
		if (lane == 0) {
			struct gpunic_loop_msg m;

			r = gpunic_loop_take_as(c, &m, f->profile, rpc);
			if (r)
				r = gpunic_loop_give(c, &m);
			c->slow_msgs++;
		}
		r = __shfl_sync(full, r, 0);
		__syncwarp(full);
		gpunic_loop_fast_sync(c, f);
		return r < 0 ? -1 : r;
	}

	/* Room in the send queue for the batch (completions reaped when short; the mirrored count
	 * of completed sends only lags, which errs on the side of reaping). */
	if (f->qp.sq_wqebb_cnt - (pi - f->done) < nfast) {
		if (!gpunic_loop_fast_reap(c, f->qp.scq) && lane == 0)
			gpunic_loop_reap_sends(c);
		__syncwarp(full);
		gpunic_loop_fast_sync(c, f);
		if (f->qp.sq_wqebb_cnt - (pi - f->done) < nfast)
			nfast = f->qp.sq_wqebb_cnt - (pi - f->done);
		if (!nfast)
			return 0;
	}
	nsend = nfast;
	expect0 = f->expect;
	rq_tail0 = f->rq_tail;
	if (rpc) {
		gpunic_loop_fast_rpc(c, f, nfast, len, lo, hi, pi, &idx, &wlo, &whi, &inl_mask,
				     &big_mask);
		nsend = __popc(inl_mask);
	}

	/* 5. The batch's WQEs, built above, to the send queue (and BlueFlame lines). */
	if (f->profile)
		ts = gpunic_dev_clock_ns();
	if (rpc ? (inl_mask >> base & 1) != 0 : g < nfast) {
		gpunic_dev_store16_relaxed(gpunic_dev_sq_seg(&f->qp, idx, j), wlo, whi);
		if (f->qp.handler_mode == GPUNIC_HANDLER_GPU_BF)
			gpunic_dev_store16_relaxed(gpunic_dev_bf_line(&f->qp, idx) + 16 * j, wlo,
						   whi);
	}
	if (f->profile)
		t2 = gpunic_dev_clock_ns();
	/* the last WQE's ctrl bytes 0-7: the doorbell value */
	lo = __shfl_sync(full, wlo, rpc ? (inl_mask ? 31 - __clz((int)inl_mask) : 0) :
				    4 * (nfast - 1));
	/* GPU_DB and CPU_PROXY: every lane's chunks reach the NIC before the record and the
	 * doorbell (each lane's own fence, then the warp barrier lane 0 waits on). GPU_BF needs
	 * neither: the NIC takes a sealed WQE when it is whole, whatever arrives first. */
	if (f->qp.handler_mode != GPUNIC_HANDLER_GPU_BF)
		gpunic_dev_to_nic_barrier();
	__syncwarp(full);

	/* 6. Hand the batch to the NIC; receives and the CQ move on. */
	if (lane == 0) {
		gpunic_loop_fast_publish(c, f, nfast, nsend, lo, rpc);
		if (f->profile) {
			uint64_t t3 = gpunic_dev_clock_ns();

			c->t_fast_read_ns += t1 - t0;
			c->t_fast_build_ns += t2 - t1;
			c->t_fast_store_ns += t2 - ts;
			c->t_fast_hand_ns += t3 - t2;
			c->t_send_ns += t3 - t0;
		}
	}
	f->pi = pi + nsend;
	f->ci = ci + nfast;
	f->rq_head += nfast;
	f->rq_tail += nfast;
	if (f->rq_head - f->rq_published >= f->rq_batch)
		f->rq_published = f->rq_head;
	f->echoed += nsend;
	f->fast_msgs += nfast;
	f->fast_batches++;
	if (f->pairs)
		f->expect = (f->expect + nfast) & f->slot_mask;
	__syncwarp(full);
	if (rpc && big_mask)
		gpunic_loop_fast_rpc_big(c, f, big_mask, expect0, rq_tail0);
	return (int)nfast;
}

/* gpunic_loop_fast_take_as() for plain echoes. */
static __device__ __forceinline__ int gpunic_loop_fast_take(struct gpunic_loop_ctx *c,
							    struct gpunic_loop_fast *f,
							    const struct gpunic_loop_poll *p)
{
	return gpunic_loop_fast_take_as(c, f, p, false);
}

/*
 * One step of the fast path with one poll in flight; all 32 lanes of a warp call it with the
 * same @f (@rpc: as gpunic_loop_fast_take_as). Return: as gpunic_loop_fast_take_as().
 */
static __device__ __forceinline__ int gpunic_loop_fast_step_as(struct gpunic_loop_ctx *c,
							       struct gpunic_loop_fast *f, bool rpc)
{
	struct gpunic_loop_poll p;

	gpunic_loop_fast_issue(f, &p);
	return gpunic_loop_fast_take_as(c, f, &p, rpc);
}

static __device__ __forceinline__ int gpunic_loop_fast_step(struct gpunic_loop_ctx *c,
							    struct gpunic_loop_fast *f)
{
	return gpunic_loop_fast_step_as(c, f, false);
}
#endif /* __CUDACC__ */

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_LOOP_DEV_H */
