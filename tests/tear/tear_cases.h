/* SPDX-License-Identifier: MIT */
/*
 * The torn-line suite's executor bodies, one source for a GPU kernel (tear_kernels.cu) and its
 * CPU twin (host threads, test_tear_twin.c): the BlueFlame writer that plays the data path.
 *
 * The writer posts @nmsg one-block SEND_WITH_IMM WQEs (WQE i: immediate i, tear_bf_len(i)
 * inline bytes of tear_pat(i, .)), built by gpunic_dev_wqe_write_send() itself on a shadow of the
 * QP whose ring and BlueFlame line are scratch lines, so the seal is the library's (sealed on a
 * GPU executor's queue pair; on a CPU executor's, marked to be stored ctrl chunk last). It then
 * stores the line into the real BlueFlame line (and, in record-first mode, the ring copy) 16 bytes
 * at a time in a random order, with a random pause after each store, while the softnic polls.
 * BlueFlame line i % 64 held WQE i - 64 before, so a reader meets lines torn across two WQEs (the
 * old lap's chunks beside the new ones) and stale lines (the old lap's ctrl chunk still there).
 *
 * Modes:
 *  - lazy record (default): the ring copy is written whole first, as gpunic_dev_priv_store_bb
 *    does, and the doorbell record follows every 8 WQEs once they are whole: the softnic can take
 *    a WQE only from its BlueFlame line until then.
 *  - ctrl last (TEAR_BF_CTRL_LAST): see enum tear_bf_flags.
 *  - record first (TEAR_BF_RECORD_FIRST): the record covers WQE i before any of its bytes land
 *    and the ring copy is stored chunk by chunk too, in one random order with the line: what the
 *    GPU fast path allows (it stores the record with no fence), so the softnic's ring path
 *    (req_ring_first) meets torn and stale ring copies as well. Only from the ring's second lap
 *    on, where every slot already holds a sealed WQE: a slot whose old bytes 9-10 lack the seal
 *    mark is taken by its ctrl alone (tests/tear/README.md, finding 1).
 *
 * Forced sightings: every @force_every-th WQE (ds 4, so every chunk counts) is stopped half
 * written: its ctrl chunk (new index, new seal) is in the line, and a chunk that differs from what
 * the line held is not. Two requests to the host frame it: "arm" (hold_req = 2i + 1) before the
 * first store of WQE i, when the host samples the QP's bf_torn, and "torn" (2i + 2) once the line
 * is half written, when the host waits for bf_torn to move past the sample before it acks. In
 * between nothing else can move bf_torn (every earlier line is whole, line i holds the old lap's
 * index), so each ack is a sighting of that torn line, read again. The record covers WQE i at
 * "torn" (in lazy mode too: the softnic polls the page of a QP that went quiet only after its
 * record moves, and the whole ring copy then lets it go on once it has read the line torn). So
 * bf_torn >= holds > 0 does not depend on timing, only on the softnic doing its work at all.
 *
 * Every wait has a deadline (budget_ns, far above anything a loaded 2-core machine needs) and
 * looks at ctl->stop: a writer never hangs a test, it reports why it gave up.
 */
#ifndef TEAR_CASES_H
#define TEAR_CASES_H

#include <gpunic/gpunic_dev.h>
#include <gpunic/loop_dev.h>

#if !GPUNIC_DEV_ON_GPU
#include <sched.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TEAR_GUARD 0xA5u
/* Largest inline payload of a one-block SEND (gpunic_dev_inline_one_bb_max(SEND)). */
#define TEAR_BF_MAX_LEN 44u
/* Stores of one WQE: 4 chunks of the BlueFlame line, and up to 4 of the ring copy. */
#define TEAR_BF_STORES 8u
#define TEAR_BF_CTRL_RELEASE 8u

/* Byte @i of message @seed: every message, and every chunk of it, differs from the others. */
GPUNIC_DEV_FN uint8_t tear_pat(uint32_t seed, uint32_t i)
{
	return (uint8_t)(gpunic_dev_mix32(seed * 0x9e3779b9u + i * 0x85ebca77u + 0x165667b1u) >>
			 11);
}

GPUNIC_DEV_FN uint64_t tear_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Is WQE @i one the writer stops half written? */
GPUNIC_DEV_FN int tear_bf_forced(uint32_t i, uint32_t force_every)
{
	return force_every && i % force_every == force_every / 2;
}

/* Inline bytes of WQE @i: 0..44 (ds 1..4, so laps mix WQEs of different sizes); a forced one
 * has ds 4, every chunk of its line checked. */
GPUNIC_DEV_FN uint32_t tear_bf_len(uint32_t i, uint32_t force_every)
{
	if (tear_bf_forced(i, force_every))
		return 29 + i % 16;
	return (i * 7 + 3) % (TEAR_BF_MAX_LEN + 1);
}

/* What the writer reports (tear_ctl.first_err). */
enum tear_err {
	TEAR_E_NONE = 0,
	TEAR_E_STOPPED,      /* the host raised stop */
	TEAR_E_ROOM,         /* no send completion came within the budget */
	TEAR_E_HOLD,         /* the host never acked a held line */
	TEAR_E_SCQE,         /* an error send completion (detail: syndrome << 8 | opcode) */
	TEAR_E_BUILD,        /* gpunic_dev_send_wqe_ds refused the request (detail: ds) */
	TEAR_E_SEAL,         /* the library's line: unsealed for a random order, its seal or
			      * index wrong, or its ring copy different (detail: sealed << 32 |
			      * index) */
	TEAR_E_DRAIN,        /* the last completions did not come */
};

GPUNIC_DEV_FN const char *tear_err_name(uint32_t e)
{
	switch (e) {
	case TEAR_E_NONE:
		return "none";
	case TEAR_E_STOPPED:
		return "stopped by the host";
	case TEAR_E_ROOM:
		return "no room: send completions stopped";
	case TEAR_E_HOLD:
		return "held line never acked";
	case TEAR_E_SCQE:
		return "error send completion";
	case TEAR_E_BUILD:
		return "WQE size refused";
	case TEAR_E_SEAL:
		return "library line not sealed for a random order, or not itself";
	case TEAR_E_DRAIN:
		return "last completions missing";
	default:
		return "?";
	}
}

/* Shared by the writer and the host while the writer runs: mapped host memory for a GPU. */
struct tear_ctl {
	uint32_t stop;          /* host -> writer: give up now */
	uint32_t hold_req;      /* writer -> host: 1 + index of the WQE held half written */
	uint32_t hold_ack;      /* host -> writer: hold_req, once bf_torn moved past it */
	uint32_t done;          /* writer -> host: finished (the fields below are final) */
	uint32_t written;       /* WQEs stored whole so far (progress, for diagnostics) */
	uint32_t errors;
	uint32_t first_err;     /* enum tear_err */
	uint32_t holds;         /* held lines the host acked */
	uint64_t first_detail;
	uint32_t scqes;         /* send completions polled */
	uint32_t completed;     /* state->sq_completed at the end */
	uint32_t skipped_holds; /* forced WQEs with no chunk that differs from the line: not held */
	uint32_t credit;        /* host -> writer: WQEs the peer has receives for (UC drops the
				 * rest), so WQE i waits for i < credit */
};

enum tear_bf_flags {
	TEAR_BF_RECORD_FIRST = 1u << 0,
	/* Chunks 1-3 of the line in a random order with pauses, the ctrl chunk last (its bytes
	 * 8-15, then 0-7 with the index, each by a release store): what gpunic's CPU data path
	 * writes (GPUNIC_DEV_BF_ORDERED lines, which the softnic trusts once their ctrl chunk,
	 * read first, names the WQE). No line is held half written: a reader never sees the new
	 * index before the rest. */
	TEAR_BF_CTRL_LAST = 1u << 1,
};

struct tear_bf_args {
	struct gpunic_dev_qp qp;   /* as exported: the executor's addresses */
	struct tear_ctl *ctl;      /* the executor's address of the control block */
	uint32_t nmsg;
	uint32_t window;           /* WQEs not yet completed, at most (< 64 BlueFlame lines) */
	uint32_t signal_every;     /* signalled WQEs: every this many, and the last */
	uint32_t force_every;      /* 0: no forced sightings */
	uint32_t flags;            /* enum tear_bf_flags */
	uint32_t pause_max_ns;     /* random pause after each store: 0..this */
	uint64_t seed;
	uint64_t budget_ns;        /* deadline of any one wait */
};

/* One WQE's stores, built by tear_bf_begin. */
struct tear_bf_plan {
	union gpunic_dev_bb line;  /* the sealed line, as the library built it */
	uint8_t *ring_dst;         /* its ring slot and BlueFlame line */
	uint8_t *bf_dst;
	uint32_t nstores;
	uint32_t hold_at;          /* wait for a sighting before store hold_at; >= nstores: never */
	uint32_t record_at_hold;   /* store the record covering the WQE at the hold */
	/* bit 2: the ring copy (else the line); bits 0-1: chunk; TEAR_BF_CTRL_RELEASE: the
	 * line's ctrl chunk, bytes 8-15 then 0-7, release stores */
	uint8_t order[TEAR_BF_STORES];
	uint32_t pause[TEAR_BF_STORES];
};

/* The writer's own state (one thread: GPU lane 0, or the twin's thread). */
struct tear_bf_writer {
	uint64_t rng;
	uint32_t i;
	uint32_t errors;
	uint32_t first_err;
	uint64_t first_detail;
	uint32_t holds;
	uint32_t skipped_holds;
	uint32_t scqes;
	uint32_t pad;
};

GPUNIC_DEV_FN void tear_bf_fail(struct tear_bf_writer *w, uint32_t err, uint64_t detail)
{
	if (!w->errors++) {
		w->first_err = err;
		w->first_detail = detail;
	}
}

GPUNIC_DEV_FN int tear_bf_stopped(const struct tear_bf_args *a)
{
	return gpunic_dev_load_relaxed_u32(&a->ctl->stop) != 0;
}

/* Take the send completions waiting; an error CQE ends the run. */
GPUNIC_DEV_FN void tear_bf_reap(const struct tear_bf_args *a, struct gpunic_dev_qp *qp,
				struct tear_bf_writer *w)
{
	struct gpunic_dev_cqe cqe;

	(void)a;
	while (gpunic_dev_poll_scq(qp, &cqe)) {
		w->scqes++;
		if (cqe.opcode != MLX5_CQE_REQ)
			tear_bf_fail(w, TEAR_E_SCQE, (uint64_t)cqe.syndrome << 8 | cqe.opcode);
	}
}

/* Wait until fewer than @limit WQEs are outstanding. Return: 0, or 1 when the run must end. */
GPUNIC_DEV_FN int tear_bf_wait_room(const struct tear_bf_args *a, struct gpunic_dev_qp *qp,
				    struct tear_bf_writer *w, uint32_t limit, uint32_t err)
{
	uint64_t end = gpunic_dev_clock_ns() + a->budget_ns;
	uint32_t spins = 0;

	for (;;) {
		tear_bf_reap(a, qp, w);
		if (w->errors)
			return 1;
		if (w->i - gpunic_dev_load_acquire_u32(&qp->state->sq_completed) < limit &&
		    (limit == 1 ||
		     (int32_t)(gpunic_dev_load_acquire_u32(&a->ctl->credit) - w->i) > 0))
			return 0;
		if (tear_bf_stopped(a)) {
			tear_bf_fail(w, TEAR_E_STOPPED, w->i);
			return 1;
		}
		if (gpunic_dev_clock_ns() > end) {
			tear_bf_fail(w, err, w->i);
			return 1;
		}
		gpunic_dev_spin_wait(&spins);
	}
}

/* Swap-shuffle @n stores in place. */
GPUNIC_DEV_FN void tear_shuffle(uint8_t *v, uint32_t n, uint64_t *rng)
{
	uint32_t k, j;
	uint8_t t;

	for (k = n; k > 1; k--) {
		j = (uint32_t)(tear_rand(rng) % k);
		t = v[k - 1];
		v[k - 1] = v[j];
		v[j] = t;
	}
}

/*
 * Plan the next WQE: wait for room, build it with the library, pick the store order, the
 * pauses and the hold. @scratch_ring and @scratch_bf: 64-byte, 16-byte aligned lines.
 * Return: 0 with @p filled, 1 when the run ends (all posted and completed, or an error).
 */
GPUNIC_DEV_FN int tear_bf_begin(const struct tear_bf_args *a, struct gpunic_dev_qp *qp,
				struct tear_bf_writer *w, struct tear_bf_plan *p,
				uint8_t *scratch_ring, uint8_t *scratch_bf)
{
	struct gpunic_dev_qp shadow = *qp;
	struct gpunic_dev_send_wr wr;
	struct gpunic_dev_sge sge;
	uint8_t msg[TEAR_BF_MAX_LEN];
	uint8_t pre[TEAR_BF_STORES], post[TEAR_BF_STORES];
	uint32_t i = w->i, len, k, ds, npre = 0, npost = 0, diff = 0, hold_chunk = 0;
	int record_first = (a->flags & TEAR_BF_RECORD_FIRST) && i >= qp->sq_wqebb_cnt;
	int ctrl_last = (a->flags & TEAR_BF_CTRL_LAST) != 0;
	int forced = !ctrl_last && tear_bf_forced(i, a->force_every);
	int sds, sealed;

	if (w->errors)
		return 1;
	if (i == a->nmsg) {
		/* every WQE stored: wait for the last (signalled) one to complete */
		tear_bf_wait_room(a, qp, w, 1, TEAR_E_DRAIN);
		return 1;
	}
	if (tear_bf_wait_room(a, qp, w, a->window, TEAR_E_ROOM))
		return 1;

	/* The WQE, built by the library on a shadow whose ring and BlueFlame page are scratch. */
	len = tear_bf_len(i, a->force_every);
	for (k = 0; k < len; k++)
		msg[k] = tear_pat(i, k);
	sge.addr = (uint64_t)(uintptr_t)msg;
	sge.length = len;
	sge.lkey = 0;
	wr.opcode = MLX5_OPCODE_SEND_IMM;
	wr.flags = GPUNIC_DEV_SEND_INLINE;
	if (i % a->signal_every == a->signal_every - 1 || i + 1 == a->nmsg)
		wr.flags |= GPUNIC_DEV_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.imm = i;
	wr.remote_addr = 0;
	wr.rkey = 0;
	wr.reserved = 0;
	wr.sg_list = &sge;
	wr.compare_add = 0;
	wr.swap = 0;
	shadow.sq_buf = scratch_ring;
	shadow.sq_wqebb_cnt = 1;
	shadow.bf = scratch_bf;
	shadow.bf_lines = 1;
	shadow.handler_mode = GPUNIC_HANDLER_GPU_BF;
	sds = gpunic_dev_send_wqe_ds(&shadow, &wr);
	if (sds < 1 || sds > 4) {
		tear_bf_fail(w, TEAR_E_BUILD, (uint64_t)(int64_t)sds);
		return 1;
	}
	ds = (uint32_t)sds;
	for (k = 0; k < 8; k++) {
		((uint64_t *)(void *)scratch_ring)[k] = 0;
		((uint64_t *)(void *)scratch_bf)[k] = 0;
	}
	gpunic_dev_wqe_write_send(&shadow, i, &wr, ds);
	for (k = 0; k < 8; k++)
		p->line.q[k] = ((const uint64_t *)(const void *)scratch_bf)[k];
	/* The library's ring copy (its first ds chunks) must be its line. */
	for (k = 0; k < 2 * ds; k++)
		if (((const uint64_t *)(const void *)scratch_ring)[k] != p->line.q[k])
			diff = 1;
	/* The library seals a line for a page read across PCIe (a GPU executor's); a CPU
	 * executor's line it marks as stored ctrl chunk last instead (GPUNIC_DEV_BF_ORDERED),
	 * which only the ctrl-last mode may store. The line must be the one it says it is. */
	sealed = (gpunic_dev_wqe_seal_field(p->line.w) & GPUNIC_DEV_SEAL_MARK) != 0;
	if (diff || (sealed ? !gpunic_dev_wqe_seal_ok(p->line.w) : !ctrl_last) ||
	    gpunic_dev_ctrl_idx(p->line.w) != (i & 0xffff)) {
		tear_bf_fail(w, TEAR_E_SEAL, (uint64_t)sealed << 32 | i);
		return 1;
	}
	p->ring_dst = gpunic_dev_sq_seg(qp, i, 0);
	p->bf_dst = gpunic_dev_bf_line(qp, i);

	/* Forced: the chunk left out until the host saw the line torn must differ from the
	 * line's present content (the WQE 64 before, or zeros), else the half-written line is
	 * whole as far as the seal goes. */
	if (forced) {
		for (k = 1; k < ds && !hold_chunk; k++) {
			uint64_t lo, hi;

			gpunic_dev_load16_relaxed(p->bf_dst + 16 * k, &lo, &hi);
			if (lo != p->line.q[2 * k] || hi != p->line.q[2 * k + 1])
				hold_chunk = k;
		}
		if (!hold_chunk) {
			w->skipped_holds++;
			forced = 0;
		}
	}

	/* Stores: the line's 4 chunks, and in record-first mode the ring copy's ds chunks. */
	if (forced) {
		pre[npre++] = 0;               /* the new ctrl chunk: index and seal */
		post[npost++] = (uint8_t)hold_chunk;
		if (record_first)
			post[npost++] = 4;     /* the ring copy's ctrl: it stays the old lap's */
		for (k = 1; k < 4; k++) {
			if (k == hold_chunk)
				continue;
			if (tear_rand(&w->rng) & 1)
				pre[npre++] = (uint8_t)k;
			else
				post[npost++] = (uint8_t)k;
		}
		if (record_first)
			for (k = 1; k < ds; k++)
				post[npost++] = (uint8_t)(4 + k);
		tear_shuffle(pre, npre, &w->rng);
		tear_shuffle(post, npost, &w->rng);
		for (k = 0; k < npre; k++)
			p->order[k] = pre[k];
		for (k = 0; k < npost; k++)
			p->order[npre + k] = post[k];
		p->nstores = npre + npost;
		p->hold_at = npre;
		p->record_at_hold = !record_first;
	} else {
		for (k = ctrl_last ? 1 : 0; k < 4; k++)
			p->order[npre++] = (uint8_t)k;
		if (record_first)
			for (k = 0; k < ds; k++)
				p->order[npre++] = (uint8_t)(4 + k);
		tear_shuffle(p->order, npre, &w->rng);
		if (ctrl_last)
			p->order[npre++] = TEAR_BF_CTRL_RELEASE;
		p->nstores = npre;
		p->hold_at = TEAR_BF_STORES;
		p->record_at_hold = 0;
	}
	for (k = 0; k < p->nstores; k++)
		p->pause[k] = a->pause_max_ns ?
				      (uint32_t)(tear_rand(&w->rng) % (a->pause_max_ns + 1)) : 0;

	/* The data path's own bookkeeping: the WQE is reserved (gpunic_dev_poll_scq checks a
	 * completion against it). */
	gpunic_dev_store_relaxed_u32(&qp->state->sq_reserved, i + 1);
	if (record_first) {
		/* The record covers the WQE before any of its bytes land. */
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR],
					     gpunic_dev_htobe32((i + 1) & 0xffff));
	} else {
		/* Lazy record: the ring copy whole, as the library writes it, before the line. */
		for (k = 0; k < ds; k++)
			gpunic_dev_store16_relaxed(p->ring_dst + 16 * k, p->line.q[2 * k],
						   p->line.q[2 * k + 1]);
		gpunic_dev_to_nic_barrier();
	}
	return 0;
}

/* Store @k of the plan (its chunk, to the ring copy or the line). */
GPUNIC_DEV_FN void tear_bf_store(const struct tear_bf_plan *p, uint32_t k)
{
	uint32_t s = p->order[k], j = s & 3;
	uint8_t *dst = (s & 4 ? p->ring_dst : p->bf_dst) + 16 * j;

	if (s == TEAR_BF_CTRL_RELEASE) {
		/* as gpunic_dev_priv_store_bb stores an unsealed line's ctrl chunk */
		gpunic_dev_store_release_u64((uint64_t *)(void *)(p->bf_dst + 8), p->line.q[1]);
		gpunic_dev_store_release_u64((uint64_t *)(void *)p->bf_dst, p->line.q[0]);
		return;
	}
	gpunic_dev_store16_relaxed(dst, p->line.q[2 * j], p->line.q[2 * j + 1]);
}

/* Which chunk store @k writes (the GPU lane that stores it). */
GPUNIC_DEV_FN uint32_t tear_bf_store_chunk(const struct tear_bf_plan *p, uint32_t k)
{
	return p->order[k] & 3u;
}

/* Raise hold request @req and wait for the host's ack. Return: 0, or 1 on failure. */
GPUNIC_DEV_FN int tear_bf_request(const struct tear_bf_args *a, struct tear_bf_writer *w,
				  uint32_t req)
{
	uint64_t end = gpunic_dev_clock_ns() + a->budget_ns;
	uint32_t spins = 0;

	/* the chunks (and record) stored so far are in memory before the request */
	gpunic_dev_to_nic_barrier();
	gpunic_dev_store_release_u32(&a->ctl->hold_req, req);
	while (gpunic_dev_load_acquire_u32(&a->ctl->hold_ack) != req) {
		if (tear_bf_stopped(a)) {
			tear_bf_fail(w, TEAR_E_STOPPED, w->i);
			return 1;
		}
		if (gpunic_dev_clock_ns() > end) {
			tear_bf_fail(w, TEAR_E_HOLD, (uint64_t)req);
			return 1;
		}
#if GPUNIC_DEV_ON_GPU
		__nanosleep(500);
#endif
		gpunic_dev_spin_wait(&spins);
	}
	return 0;
}

/*
 * Before store @k of a held WQE: "arm" before its first store, "torn" before store hold_at
 * (the record first when the plan says so). Call before every store; nothing happens for a
 * WQE that is not held. Return: 0, or 1 on failure.
 */
GPUNIC_DEV_FN int tear_bf_hold_step(const struct tear_bf_args *a, struct gpunic_dev_qp *qp,
				    struct tear_bf_writer *w, const struct tear_bf_plan *p,
				    uint32_t k)
{
	if (p->hold_at >= p->nstores)
		return 0;
	if (k == 0)
		return tear_bf_request(a, w, 2 * w->i + 1);
	if (k != p->hold_at)
		return 0;
	if (p->record_at_hold)
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR],
					     gpunic_dev_htobe32((w->i + 1) & 0xffff));
	if (tear_bf_request(a, w, 2 * w->i + 2))
		return 1;
	w->holds++;
	return 0;
}

/* The WQE is whole: the lazy record moves every 8 WQEs and at the last. */
GPUNIC_DEV_FN void tear_bf_end(const struct tear_bf_args *a, struct gpunic_dev_qp *qp,
			       struct tear_bf_writer *w)
{
	uint32_t i = w->i;
	int record_first = (a->flags & TEAR_BF_RECORD_FIRST) && i >= qp->sq_wqebb_cnt;

	/* (a held WQE moved the record to i + 1 already: stores of it never go backwards) */
	if (!record_first && ((i + 1) % 8 == 0 || i + 1 == a->nmsg))
		gpunic_dev_store_relaxed_u32(&qp->dbrec[MLX5_SND_DBR],
					     gpunic_dev_htobe32((i + 1) & 0xffff));
	w->i = i + 1;
	gpunic_dev_store_relaxed_u32(&a->ctl->written, w->i);
}

/* Report and raise done (the last thing the writer does). */
GPUNIC_DEV_FN void tear_bf_finish(const struct tear_bf_args *a, const struct gpunic_dev_qp *qp,
				  const struct tear_bf_writer *w)
{
	struct tear_ctl *c = a->ctl;

	gpunic_dev_store_relaxed_u32(&c->errors, w->errors);
	gpunic_dev_store_relaxed_u32(&c->first_err, w->first_err);
	gpunic_dev_store_relaxed_u32((uint32_t *)&c->first_detail, (uint32_t)w->first_detail);
	gpunic_dev_store_relaxed_u32((uint32_t *)&c->first_detail + 1,
				     (uint32_t)(w->first_detail >> 32));
	gpunic_dev_store_relaxed_u32(&c->holds, w->holds);
	gpunic_dev_store_relaxed_u32(&c->skipped_holds, w->skipped_holds);
	gpunic_dev_store_relaxed_u32(&c->scqes, w->scqes);
	gpunic_dev_store_relaxed_u32(&c->completed,
				     gpunic_dev_load_acquire_u32(&qp->state->sq_completed));
	gpunic_dev_store_release_u32(&c->done, 1);
}

GPUNIC_DEV_FN void tear_bf_writer_init(const struct tear_bf_args *a, struct tear_bf_writer *w)
{
	w->rng = a->seed | 1;
	w->i = 0;
	w->errors = 0;
	w->first_err = 0;
	w->first_detail = 0;
	w->holds = 0;
	w->skipped_holds = 0;
	w->scqes = 0;
	w->pad = 0;
}

#if !GPUNIC_DEV_ON_GPU
/* A host writer's random pause of @ns: a spin on the clock, now and then (@ns a multiple of
 * 16) a yield, so that on a loaded 2-core machine the reader's thread runs while a line is half
 * written too. */
static inline void tear_host_pause(uint32_t ns)
{
	uint64_t until;

	if (!ns)
		return;
	if (ns % 16 == 0) {
		sched_yield();
		return;
	}
	until = gpunic_dev_clock_ns() + ns;
	while (gpunic_dev_clock_ns() < until)
		;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* TEAR_CASES_H */
