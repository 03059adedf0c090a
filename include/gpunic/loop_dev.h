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
 */
#ifndef GPUNIC_LOOP_DEV_H
#define GPUNIC_LOOP_DEV_H

#include <stdbool.h>
#include <time.h>

#include <gpunic/gpunic_dev.h>

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
	uint32_t expect_slot;       /* WRITE_WITH_IMM: the slot the next message should fill */
	uint64_t spec_hits;         /* messages whose slot was read together with their CQE */
	/* Stage times in ns, summed over the echoed messages (profile only): where the time of one
	 * message goes inside the forwarder, from the CQE seen to the receive reposted. */
	uint64_t t_cqe_ns;          /* rest of the CQE read after its owner byte was seen */
	uint64_t t_stage_ns;        /* message bytes read into the executor's memory, work done */
	uint64_t t_send_ns;         /* send WQE written, doorbell rung */
	uint64_t t_recv_ns;         /* receive WQE reposted */
	uint64_t idle_polls;        /* polls that found the receive CQ empty */
	uint64_t t_idle_ns;         /* time spent in them */
};

/* A clock for the stage profile: the GPU's global timer, or the host's monotonic clock. */
GPUNIC_DEV_FN uint64_t gpunic_loop_clock_ns(void)
{
#if GPUNIC_DEV_ON_GPU
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Bytes of a message staged in the executor's own memory before it is sent back inline. */
#define GPUNIC_LOOP_STAGE_BYTES 256u

/*
 * Copy @len (<= GPUNIC_LOOP_STAGE_BYTES) bytes of a ring slot into @dst. On the GPU the ring is
 * host-pinned memory across PCIe: every load is issued before the first store, 16 bytes at a
 * time, so the copy costs one round trip instead of one per load. Slots are 64-byte aligned and
 * a multiple of 64 bytes long, so reading up to the next 16-byte boundary stays in the slot.
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
	memcpy(dst, src, len);
#endif
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
 * The receive half: take at most one completion, read the message (staged into @m when it goes
 * back inline) and do the work on it.
 * Return: 1 with @m filled, 0 if the receive CQ was empty, -1 if a completion was skipped as
 * an error (counted; @m then only asks gpunic_loop_give() to repost its receive WQE, so that
 * one thread alone posts receives).
 */
GPUNIC_DEV_FN int gpunic_loop_take(struct gpunic_loop_ctx *c, struct gpunic_loop_msg *m)
{
	struct gpunic_dev_cqe cqe;
	struct gpunic_dev_prefetch pf = { 0, 0, 0 };
	uint8_t *slot_ptr;
	uint32_t slot, len, i, spec_len = 0;
	uint64_t t0 = 0, t1 = 0;

	/* HSB senders fill the ring's slots in turn: read the slot the next message should name
	 * together with its CQE, saving the round trip of reading it after the immediate is known.
	 * A message that names another slot is simply read again. */
	if (!c->recv_with_buffers && c->slot_bytes >= GPUNIC_DEV_PREFETCH_MAX) {
		spec_len = GPUNIC_DEV_PREFETCH_MAX;
		pf.src = c->ring + (size_t)c->expect_slot * c->slot_bytes;
		pf.dst = m->data;
		pf.len = spec_len;
	}
	if (c->profile)
		t0 = gpunic_loop_clock_ns();
	if (!gpunic_dev_poll_rcq_batched(c->qp, &cqe, &pf)) {
		if (c->profile) {
			c->idle_polls++;
			c->t_idle_ns += gpunic_loop_clock_ns() - t0;
		}
		return 0;
	}
	if (c->profile) {
		t1 = gpunic_loop_clock_ns();
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
	slot_ptr = c->ring + (size_t)slot * c->slot_bytes;
	/* A message that goes back inline is read once, into the executor's own memory; a larger
	 * one is sent from the slot by SGE. */
	m->inl = len <= c->qp->max_inline && len <= GPUNIC_LOOP_STAGE_BYTES;
	if (m->inl) {
		if (cqe.data_in_cqe) {
			for (i = 0; i < len; i++)
				m->data[i] = cqe.data[i];
		} else if (spec_len && cqe.opcode == MLX5_CQE_RESP_WR_IMM &&
			   slot == c->expect_slot && len <= spec_len) {
			c->spec_hits++;
		} else {
			gpunic_loop_stage(m->data, slot_ptr, len);
		}
	}
	if (cqe.opcode == MLX5_CQE_RESP_WR_IMM)
		c->expect_slot = slot + 1 < c->slots ? slot + 1 : 0;
	if (c->work == GPUNIC_LOOP_WORK_ADD_ONE) {
		uint8_t *p = m->inl ? m->data : slot_ptr;

		for (i = 0; i < len; i++)
			p[i] = (uint8_t)(p[i] + 1);
	}
	m->len = len;
	m->slot = slot;
	if (c->profile)
		c->t_stage_ns += gpunic_loop_clock_ns() - t1;
	return 1;
}

/*
 * The send half: give the receive WQE back and send the message, behind one fence.
 * Return: 1, or -1 for a skipped completion or a send that could not be posted (counted in
 * send_errors).
 */
GPUNIC_DEV_FN int gpunic_loop_give(struct gpunic_loop_ctx *c, const struct gpunic_loop_msg *m)
{
	uint64_t t0 = 0, t1 = 0;

	if (c->profile)
		t0 = gpunic_loop_clock_ns();
	/* The receive WQE goes back first, unpublished: the one fence of gpunic_dev_submit_all()
	 * then covers it and the echo together (the ring has many more slots than messages in
	 * flight, so the slot is not reused before its echo left). */
	gpunic_loop_repost(c, m->rwqe, false);
	if (c->profile) {
		t1 = gpunic_loop_clock_ns();
		c->t_recv_ns += t1 - t0;
	}
	if (!m->send) {
		gpunic_dev_submit_all(c->qp);
		return -1;
	}
	if (gpunic_loop_send_back(c, m->inl ? m->data : c->ring + (size_t)m->slot * c->slot_bytes,
				  m->len, m->slot) < 0) {
		c->send_errors++;
		gpunic_dev_submit_all(c->qp);
		return -1;
	}
	gpunic_dev_submit_all(c->qp);
	c->echoed++;
	if (c->profile)
		c->t_send_ns += gpunic_loop_clock_ns() - t1;
	return 1;
}

/*
 * Handle at most one received message: gpunic_loop_take() then gpunic_loop_give() on one
 * thread (a GPU forwarder may run the halves on two warps instead).
 * Return: 1 if a message was echoed, 0 if the receive CQ was empty, -1 if a completion or a
 * send was skipped as an error (counted).
 */
GPUNIC_DEV_FN int gpunic_loop_step(struct gpunic_loop_ctx *c)
{
	struct gpunic_loop_msg m;
	int r = gpunic_loop_take(c, &m);

	return r == 0 ? 0 : gpunic_loop_give(c, &m);
}

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_LOOP_DEV_H */
