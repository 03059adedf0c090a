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
	uint32_t last_syndrome;     /* syndrome of the last error CQE */
	uint32_t pad;
};

/* Post the receive WQE for slot @slot (zero-length, or pointing at the slot). */
GPUNIC_DEV_FN int64_t gpunic_loop_post_recv(struct gpunic_loop_ctx *c, uint32_t slot)
{
	struct gpunic_dev_sge sge;

	if (!c->recv_with_buffers)
		return gpunic_dev_post_recv(c->qp, (const struct gpunic_dev_sge *)0, 0);
	sge.addr = c->ring_iova + (uint64_t)slot * c->slot_bytes;
	sge.length = c->slot_bytes;
	sge.lkey = c->ring_lkey;
	return gpunic_dev_post_recv(c->qp, &sge, 1);
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
			c->errors++;
			c->last_syndrome = cqe.syndrome;
		}
	}
}

/* Reaping rounds a send waits for queue space before it gives up (the NIC stopped completing
 * sends: the forwarder must still get back to its stop flag). */
#define GPUNIC_LOOP_SEND_RETRIES (1u << 20)

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

/*
 * Handle at most one received message. Return: 1 if a message was echoed, 0 if the receive CQ
 * was empty, -1 if a completion was skipped as an error (counted).
 */
GPUNIC_DEV_FN int gpunic_loop_step(struct gpunic_loop_ctx *c)
{
	struct gpunic_dev_cqe cqe;
	uint8_t tmp[GPUNIC_DEV_CQE_INLINE_MAX];
	const uint8_t *data;
	uint8_t *slot_ptr;
	uint32_t slot, len, i;

	if (!gpunic_dev_poll_rcq(c->qp, &cqe))
		return 0;
	/* Receives complete in order: the consumed WQE belongs to slot wqe_idx % slots. */
	slot = cqe.wqe_idx % c->slots;
	if (gpunic_dev_cqe_is_error(&cqe) || cqe.byte_cnt > c->slot_bytes ||
	    (cqe.opcode == MLX5_CQE_RESP_WR_IMM && cqe.imm >= c->slots)) {
		c->errors++;
		c->last_syndrome = cqe.syndrome;
		gpunic_loop_post_recv(c, slot);
		return -1;
	}
	len = cqe.byte_cnt;
	if (cqe.opcode == MLX5_CQE_RESP_WR_IMM)
		slot = cqe.imm; /* HSB: the immediate names the ring slot the WRITE filled */
	slot_ptr = c->ring + (size_t)slot * c->slot_bytes;
	data = cqe.data_in_cqe ? cqe.data : slot_ptr;
	if (c->work == GPUNIC_LOOP_WORK_ADD_ONE) {
		if (cqe.data_in_cqe) {
			for (i = 0; i < len; i++)
				tmp[i] = (uint8_t)(cqe.data[i] + 1);
			data = tmp;
		} else {
			for (i = 0; i < len; i++)
				slot_ptr[i] = (uint8_t)(slot_ptr[i] + 1);
		}
	}
	if (gpunic_loop_send_back(c, data, len, slot) < 0) {
		c->errors++;
		gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
		return -1;
	}
	gpunic_dev_submit(c->qp);
	c->echoed++;
	/* Repost after the send is submitted: the echo leaves first, the receive is off the
	 * critical path (the ring has many more slots than messages in flight). */
	gpunic_loop_post_recv(c, cqe.wqe_idx % c->slots);
	return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* GPUNIC_LOOP_DEV_H */
